-- Sample solutions of the composed (fused) tasks and the verdict each must
-- get (each names a folder next to this file; samples run on the task's
-- first "main" variant). The fp32 chains target TMA, which these plain
-- kernels do not use.
return {
  { name = "naive_sub_mul_relu", task = "matmul_subtract_multiply_relu", verdict = "target_not_executed",
    why = "one thread per element of Y, fp32 sums and the chain in fp32: correct, no TMA" },
  { name = "naive_sum_rows", task = "gemm_divide_sum_scaling", verdict = "target_not_executed",
    why = "a block per row, fp32 dot products, a fixed tree for the row's sum: correct, no TMA" },
}
