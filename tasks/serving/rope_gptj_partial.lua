-- RoPE, GPT-J layout (interleaved pairs), with a partial rotary dimension,
-- int64 positions and a cos/sin cache; _rope.lua defines every field but
-- the shapes.
local F = include "_rope.lua"

-- GPT-J-6B's attention (16 heads of 256, 64 of them rotary) on a prefill of
-- 16384 tokens (512 MiB read and written) and a decode batch of 64;
-- Llama-3.1-8B's (32 query and 8 key heads of 128) in the interleaved
-- layout of Meta's own checkpoints, full rotary, on 32768 tokens; and a
-- small odd shape with R = D/2 not a multiple of 16.
F.define(_ENV, "gptj", {
  { T = 16384, Hq = 16, Hk = 16, D = 256, R = 64, P = 8192, name = "gpt-j-6b_t16384",
    tags = { "main", "prefill", "GPT-J-6B" } },
  { T = 64, Hq = 16, Hk = 16, D = 256, R = 64, P = 8192, name = "gpt-j-6b_t64", tags = { "decode", "GPT-J-6B" } },
  { T = 32768, Hq = 32, Hk = 8, D = 128, R = 128, P = 8192, name = "llama3.1-8b_t32768",
    tags = { "main", "prefill", "Llama-3.1-8B" } },
  { T = 999, Hq = 6, Hk = 2, D = 80, R = 40, P = 8192, name = "999x6x2x80_r40", tags = { "odd", "small" } },
})
