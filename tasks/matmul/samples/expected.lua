-- Sample solutions of the matmul tasks and the verdict each must get (each
-- names a folder next to this file; samples run on the task's first "main"
-- variant). The bf16 tasks target wgmma and TMA, which these plain kernels
-- do not use; the GEMV tasks are memory-bound and target nothing.
return {
  { name = "naive_bmm", task = "bmm_bf16", verdict = "target_not_executed",
    why = "one thread per element of C, grid.z over the batch, fp32 sums: correct, no tensor cores" },
  { name = "naive_gemv", task = "gemv_f32", verdict = "passed",
    why = "a warp per row, fp32 sums added in a fixed shuffle tree: correct to fp32 accuracy" },
  { name = "naive_linear_gelu", task = "linear_gelu_bf16", verdict = "target_not_executed",
    why = "one thread per element of C, the bias and the tanh GELU in fp32: correct, no tensor cores" },
  { name = "naive_bmm_nn", task = "bmm_nn_f32", verdict = "target_not_executed",
    why = "one thread per element of C, grid.z over the batch, fp32 sums: correct, no TMA" },
  { name = "naive_mlp_layer", task = "mlp_f32", verdict = "target_not_executed",
    why = "the default plan's one launch per layer, 16 x 16 tiles through shared memory, fp32 sums: correct, no TMA" },
}
