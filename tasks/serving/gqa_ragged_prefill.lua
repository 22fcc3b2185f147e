-- Causal GQA prefill over packed (ragged) queries and packed keys, with a
-- cached prefix per sequence (FlashInfer's BatchPrefillWithRaggedKVCache,
-- FlashInfer-Bench's gqa_ragged_prefill_causal); _prefill.lua defines every
-- field but the shapes.
local F = include "_prefill.lua"

-- Llama-3.1-8B (32 query heads, 8 KV heads of 128; FlashInfer-Bench's
-- gqa_ragged_prefill_causal_h32_kv8_d128) prefilling 8192 tokens over 16
-- sequences with prefixes of up to 1024 cached tokens, Qwen3-32B (64 and 8
-- heads) on 4 sequences with prefixes of up to 2048, a chunked prefill
-- (Llama-3.1-70B's heads: 512 new tokens over 32 sequences with prefixes of
-- up to 4096, as a serving engine mixes prefill chunks into decode
-- batches), and a small odd shape (3 query heads per KV head, D = 64).
F.define(_ENV, {
  name = "gqa_ragged_prefill_bf16",
  kind = "ragged",
  variants = {
    { B = 16, TQ = 8192, P = 1024, Hq = 32, Hk = 8, D = 128, name = "llama3.1-8b_b16_t8192",
      tags = { "main", "prefill", "ragged", "Llama-3.1-8B" } },
    { B = 4, TQ = 8192, P = 2048, Hq = 64, Hk = 8, D = 128, name = "qwen3-32b_b4_t8192",
      tags = { "main", "prefill", "ragged", "Qwen3-32B" } },
    { B = 32, TQ = 512, P = 4096, Hq = 64, Hk = 8, D = 128, name = "llama3.1-70b_chunked_b32_t512",
      tags = { "chunked", "decode", "ragged", "Llama-3.1-70B" } },
    { B = 5, TQ = 300, P = 37, Hq = 12, Hk = 4, D = 64, name = "5x300x12x4x64_p37",
      tags = { "odd", "small", "ragged" } },
  },
})
