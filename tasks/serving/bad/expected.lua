-- Known-bad serving kernels and the verdict klab must give each one (each
-- names a folder next to this file; the task's default plan runs them).
return {
  { name = "sampling_no_threshold", task = "top_k_sampling_f32", verdict = "incorrect",
    why = "draws from the whole row, ignoring top_k: a different token wherever the draw falls past the top-k mass" },
  { name = "rope_full_rotary", task = "rope_neox_partial_bf16", verdict = "incorrect",
    why = "rotates the whole head (pairs (i, i + D/2)) where only the first R elements rotate" },
  { name = "gqa_decode_whole_pages", task = "gqa_paged_decode_bf16", verdict = "incorrect",
    why = "reads every slot of the last page, past the sequence's length: stale tokens join the softmax" },
  { name = "moe_balanced_capacity", task = "moe_route_softmax_f32", verdict = "incorrect",
    why = "the permutation gives every expert ceil(T*K/E) rows: destinations wrong wherever the loads are uneven, "
       .. "and the assignments past a full expert are never written" },
  { name = "gemm_fp8_one_scale", task = "gemm_fp8_1d2d", verdict = "incorrect",
    why = "one scale pair per row and column (the first block's) for the whole of K, as a per-row scaled GEMM" },
  { name = "prefill_top_left_causal", task = "gqa_ragged_prefill_bf16", verdict = "incorrect",
    why = "the causal mask aligned top-left (query i sees keys j <= i), ignoring the cached prefix: "
       .. "wrong for every query of a sequence with a prefix" },
  { name = "moe_gemm_drops_tail", task = "moe_grouped_gemm_bf16", verdict = "incorrect",
    why = "computes whole 16-row tiles of each expert only: the last count % 16 rows of every expert are never written" },
  { name = "mha_thread_per_column", task = "mha_fwd_d256_bf16", verdict = "incorrect",
    why = "a thread per output column with 128 threads (a D <= 128 kernel): columns 128 .. 255 of O are never written" },
  { name = "mha_fp8_no_v_scale", task = "mha_fwd_fp8", verdict = "incorrect",
    why = "ignores v_scale: every element of O off by that factor (0.5)" },
  { name = "mla_no_rope", task = "mla_paged_decode_bf16", verdict = "incorrect",
    why = "scores with q_nope . ckv only, dropping q_pe . kpe: every score, so every output, is wrong" },
  { name = "gdn_state_v_last", task = "gdn_decode_bf16", verdict = "incorrect",
    why = "reads the state v-last ([K, V]) where it is k-last: every row read is a column of the true state" },
}
