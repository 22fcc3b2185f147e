-- RoPE, NeoX layout (rotate-half), with a partial rotary dimension, int64
-- positions and a cos/sin cache; _rope.lua defines every field but the
-- shapes.
local F = include "_rope.lua"

-- MiniMax-M2's attention (48 query heads, 8 key heads of 128, 64 of them
-- rotary: FlashInfer-Bench's rope_with_cos_sin_cache_neox_style_d128_rd64)
-- on a prefill of 16384 tokens (470 MiB read and written) and a decode
-- batch of 128; Llama-3.1-70B's (64 and 8 heads, full rotary) on 16384
-- tokens; Qwen3-32B's (64 and 8 heads of 128, full rotary) on a decode
-- batch of 64; and a small odd shape with R = D/2 not a multiple of 16.
F.define(_ENV, "neox", {
  { T = 16384, Hq = 48, Hk = 8, D = 128, R = 64, P = 8192, name = "minimax-m2_t16384",
    tags = { "main", "prefill", "MiniMax-M2" } },
  { T = 128, Hq = 48, Hk = 8, D = 128, R = 64, P = 8192, name = "minimax-m2_t128", tags = { "decode", "MiniMax-M2" } },
  { T = 16384, Hq = 64, Hk = 8, D = 128, R = 128, P = 8192, name = "llama3.1-70b_t16384",
    tags = { "main", "prefill", "Llama-3.1-70B" } },
  { T = 64, Hq = 64, Hk = 8, D = 128, R = 128, P = 8192, name = "qwen3-32b_t64", tags = { "decode", "Qwen3-32B" } },
  { T = 999, Hq = 6, Hk = 2, D = 80, R = 40, P = 8192, name = "999x6x2x80_r40", tags = { "odd", "small" } },
})
