-- Known-bad kernels of the composed (fused) tasks and the verdict klab must
-- give each one (each names a folder next to this file; they run on the
-- task's "small" variant).
return {
  { name = "no_bias", task = "gemm_multiply_leakyrelu", verdict = "incorrect",
    why = "the chain without the linear layer's bias: wrong wherever the bias matters" },
  { name = "bf16_operands", task = "gemm_multiply_leakyrelu", verdict = "incorrect",
    why = "X and W rounded to bf16 before the product: sums off by about 1e-2, beyond the fp32 tolerance" },
}
