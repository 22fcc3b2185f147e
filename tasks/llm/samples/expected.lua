-- Sample solutions of the LLM-serving tasks and the verdict each must get
-- (each names a folder next to this file; the task's default plan runs it
-- on the task's first main shape). Memory-bound tasks have no target
-- instruction family, so a correct sample passes.
return {
  { name = "naive", task = "fused_add_rmsnorm_bf16", verdict = "passed",
    why = "a block per token: the sum written once, its squares summed in fp32, then normalized" },
  { name = "naive_rope", task = "rope_neox_bf16", verdict = "passed",
    why = "a thread per (head, pair), NeoX rotate-half, the cache read at the token's position" },
  { name = "naive_swiglu", task = "swiglu_bf16", verdict = "passed",
    why = "a thread per element, silu as a / (1 + exp(-a)) in fp32" },
}
