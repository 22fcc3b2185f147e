-- Known-bad LLM-serving kernels and the verdict klab must give each one
-- (each names a folder next to this file; the task's default plan runs them
-- on the task's small shape).
return {
  { name = "rope_interleaved", task = "rope_neox_bf16", verdict = "incorrect",
    why = "the GPT-J convention (interleaved pairs x[2i], x[2i+1]) where the task asks for GPT-NeoX's rotate-half "
       .. "(x[i], x[i + D/2])" },
  { name = "add_rmsnorm_in_place", task = "fused_add_rmsnorm_bf16", verdict = "input_modified",
    why = "Y and residual_out right, but the residual input is also overwritten with x + r, in place as in vLLM" },
}
