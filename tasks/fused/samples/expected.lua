-- Sample solutions of the composed (fused) tasks and the verdict each must
-- get (each names a folder next to this file; samples run on the task's
-- first "main" variant). The fp32 chains after a linear layer target TMA,
-- which these plain kernels do not use; the chains after a convolution
-- target nothing.
return {
  { name = "naive_sub_mul_relu", task = "matmul_subtract_multiply_relu", verdict = "target_not_executed",
    why = "one thread per element of Y, fp32 sums and the chain in fp32: correct, no TMA" },
  { name = "naive_sum_rows", task = "gemm_divide_sum_scaling", verdict = "target_not_executed",
    why = "a block per row, fp32 dot products, a fixed tree for the row's sum: correct, no TMA" },
  { name = "naive_conv_relu_bias", task = "conv2d_relu_biasadd", verdict = "passed",
    why = "a block per output channel plane, fp32 sums of the 3 x 3 taps, then ReLU and the bias: correct" },
  { name = "naive_convt_scale_mean", task = "convtranspose2d_multiply_globalavgpool_globalavgpool_mean",
    verdict = "passed", why = "a block per output channel plane gathering the transposed taps in fp32, a fixed " ..
    "tree for the plane's mean: correct" },
}
