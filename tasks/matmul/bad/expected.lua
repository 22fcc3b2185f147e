-- Known-bad matmul kernels and the verdict klab must give each one (each
-- names a folder next to this file; they run on the task's "small" variant).
return {
  { name = "gemv_tf32", task = "gemv_f32", verdict = "incorrect",
    why = "rounds A and x to TF32 before multiplying (what TF32 tensor cores do): about 4e-4*sqrt(K) off on y, "
       .. "beyond the fp32 tolerance" },
  { name = "linear_no_bias", task = "linear_relu_bf16", verdict = "incorrect",
    why = "relu(A*B^T) without the bias: wrong wherever the bias matters" },
  { name = "bmm_modifies_input", task = "bmm_bf16", verdict = "input_modified",
    why = "correct C, then the last block to finish overwrites the first 256 elements of A's last member" },
}
