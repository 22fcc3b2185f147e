-- Sample solutions of the serving tasks and the verdict each must get
-- (each names a folder next to this file; the task's default plan runs it).
-- Memory-bound tasks have no target instruction family, so a correct
-- sample passes.
return {
  { name = "naive_sampling", task = "top_k_sampling_f32", verdict = "passed",
    why = "a block per row, thresholds by bisection over whole grains, the draw by chunked running sums, in fp32" },
  { name = "naive_sampling", task = "top_p_sampling_f32", verdict = "passed",
    why = "the same kernel file's top-p entry" },
  { name = "naive_sampling", task = "top_k_top_p_sampling_f32", verdict = "passed",
    why = "the same kernel file's top-k-then-top-p entry: top_p times the mass top-k keeps, never a division" },
  { name = "naive_rope", task = "rope_neox_partial_bf16", verdict = "passed",
    why = "a thread per (head, pair) or copied element, pairs (i, i + R/2), the cache read at the token's int64 position" },
  { name = "naive_rope", task = "rope_gptj_partial_bf16", verdict = "passed",
    why = "the same kernel file's GPT-J entry: pairs (2i, 2i + 1)" },
  { name = "naive_gqa_decode", task = "gqa_paged_decode_bf16", verdict = "passed",
    why = "a block per (head, sequence): scores through the page table up to the sequence's length, two passes, fp32" },
  { name = "naive_moe_route", task = "moe_route_sigmoid_grouped_f32", verdict = "passed",
    why = "a thread per token selecting serially in fp32 (groups, then experts), one block numbering each expert's rows" },
  { name = "naive_moe_route", task = "moe_route_softmax_f32", verdict = "passed",
    why = "the same kernel file's softmax entry" },
  { name = "naive_gemm_fp8_blockscale", task = "gemm_fp8_1d2d", verdict = "target_not_executed",
    why = "a thread per element of C, fp32 sums of each 128-value block scaled and added: correct, no tensor cores" },
  { name = "naive_gemm_fp8_blockscale", task = "gemm_fp8_1d1d", verdict = "target_not_executed",
    why = "the same kernel file's 1D1D entry" },
  { name = "naive_attention", task = "gqa_ragged_prefill_bf16", verdict = "passed",
    why = "a block per (token, head): its sequence by binary search, the keys it sees (bottom-right causal), two passes, fp32" },
  { name = "naive_attention", task = "gqa_paged_prefill_bf16", verdict = "passed",
    why = "the same kernel file's paged entry: keys through the page table" },
  { name = "naive_moe_gemm", task = "moe_grouped_gemm_bf16", verdict = "target_not_executed",
    why = "a thread per element of Y, the row's expert by binary search, an fp32 dot product: correct, no tensor cores" },
  { name = "naive_attention", task = "mha_fwd_d256_bf16", verdict = "target_not_executed",
    why = "the same kernel file's dense entry: the default plan's 64 rows one after another, fp32, no tensor cores" },
}
