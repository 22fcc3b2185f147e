-- MoE routing with softmax scores and top-k (Qwen3's and Mixtral's routers:
-- the softmax over all experts, the K largest, renormalized over the K);
-- then the permutation to experts. _moe.lua defines every field but these.
local F = include "_moe.lua"

F.define(_ENV, {
  name = "moe_route_softmax_f32",
  kernel = "moe_route_softmax",
  scoring = "softmax",
  scale = 1,
  what = [[
  s_e = exp(logits[t, e] - m) / sum_j exp(logits[t, j] - m) with m the row's
  maximum, and key_e = s_e + bias[e] (fp32); G = TG = 1 here (no groups);
  the K experts of largest key are chosen, in decreasing key order; the
  weight of chosen expert k is s_k / (sum of the K chosen s).]],
  -- Qwen3-235B-A22B's and Qwen3-30B-A3B's router (128 experts, 8 per token)
  -- on a prefill of 16384 tokens and a decode batch of 64, Mixtral-8x7B's
  -- (8 experts, 2 per token) on 4096 tokens, and Qwen1.5-MoE-A2.7B's (60
  -- experts, 4 per token) on an odd 37.
  variants = {
    { T = 16384, E = 128, K = 8, G = 1, TG = 1, name = "qwen3-235b_t16384",
      tags = { "main", "prefill", "Qwen3-235B-A22B", "Qwen3-30B-A3B" } },
    { T = 64, E = 128, K = 8, G = 1, TG = 1, name = "qwen3-235b_t64", tags = { "decode", "Qwen3-235B-A22B" } },
    { T = 4096, E = 8, K = 2, G = 1, TG = 1, name = "mixtral-8x7b_t4096", tags = { "Mixtral-8x7B" } },
    { T = 37, E = 60, K = 4, G = 1, TG = 1, name = "qwen1.5-moe_t37", tags = { "odd", "small", "Qwen1.5-MoE-A2.7B" } },
  },
})
