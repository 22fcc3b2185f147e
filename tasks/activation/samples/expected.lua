-- Sample solutions and the verdict each must get (each names a folder next
-- to this file; samples run on the task's first "main" variant).
-- Memory-bound tasks have no target instruction family, so a correct sample
-- passes.
return {
  { name = "naive_gelu_tanh", task = "gelu_tanh_bf16", verdict = "passed",
    why = "one thread per element, fp32 arithmetic with tanhf, one rounding to bf16: correct and plain" },
  { name = "cute_relu", task = "relu_f32", verdict = "passed",
    why = "CuTe: X and Y as global tensors, a 256-element tile per block (local_tile), one element per thread" },
  { name = "cute_dsl_relu", task = "relu_f32", verdict = "passed",
    why = "CuTe DSL: X and Y as flat tensors, one element per thread, the last block's extra threads idle" },
}
