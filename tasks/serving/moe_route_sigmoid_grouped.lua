-- MoE routing, DeepSeek-V3's way: sigmoid scores, a selection bias, grouped
-- top-k (the best TG of G expert groups, each scored by its two best keys),
-- weights renormalized and scaled by 2.5; then the permutation to experts.
-- _moe.lua defines every field but these.
local F = include "_moe.lua"

F.define(_ENV, {
  name = "moe_route_sigmoid_grouped_f32",
  kernel = "moe_route_grouped",
  scoring = "sigmoid",
  scale = 2.5,
  what = [[
  s_e = 1 / (1 + exp(-logits[t, e])) and key_e = s_e + bias[e] (fp32);
  the E experts form G groups of E/G consecutive experts; a group's score
  is the sum of its two largest keys (the larger plus the smaller); only
  the TG groups of largest score are eligible; the K eligible experts of
  largest key are chosen, in decreasing key order; the weight of chosen
  expert k is s_k / (sum of the K chosen s) * 2.5 (the bias selects, the
  scores weigh).]],
  -- DeepSeek-V3's router (256 experts in 8 groups, 4 groups eligible, 8
  -- experts per token) on a prefill of 16384 tokens and a decode batch of
  -- 64, and a small odd shape (64 experts in 8 groups, 3 eligible, 6 per
  -- token).
  variants = {
    { T = 16384, E = 256, K = 8, G = 8, TG = 4, name = "deepseek-v3_t16384", tags = { "main", "prefill", "DeepSeek-V3" } },
    { T = 64, E = 256, K = 8, G = 8, TG = 4, name = "deepseek-v3_t64", tags = { "decode", "DeepSeek-V3" } },
    { T = 37, E = 64, K = 6, G = 8, TG = 3, name = "37x64_k6_g8", tags = { "odd", "small" } },
  },
})
