-- Attention samples and the verdict each must get (each names a folder next
-- to this file); the GPU suite's sweep runs them on every variant of their
-- task. naive_fwd, mma_fwd and naive_bwd are judged by
-- tests/gpu/attention_check.lua on the shapes it names instead.
return {
  { name = "triton_fwd", task = "attn_fwd", verdict = "target_not_executed",
    why = "Triton: FlashAttention-2 forward, both products tl.dot, which Triton makes wgmma; no TMA, which a klab "
       .. "Triton kernel cannot reach (tensor descriptors)" },
  { name = "triton_fwd", task = "attn_fwd_causal", verdict = "target_not_executed",
    why = "the same folder under the causal mask (its plan's CAUSAL constexpr): key blocks past the diagonal skipped" },
  { name = "cute_fwd", task = "attn_fwd", verdict = "target_not_executed",
    why = "CuTe: key and value tiles staged in shared memory through CuTe tensors, a warp per query row, online "
       .. "softmax in fp32 on the CUDA cores: correct, no tensor cores" },
  { name = "cute_fwd", task = "attn_fwd_causal", verdict = "target_not_executed",
    why = "the same folder under the causal mask: keys past the block's last row never loaded" },
}
