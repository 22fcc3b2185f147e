-- Causal GQA prefill over packed (ragged) queries with the keys in a paged
-- cache of 16-token pages, each sequence's new tokens after its cached
-- prefix (FlashInfer's BatchPrefillWithPagedKVCache, FlashInfer-Bench's
-- gqa_paged_prefill_causal; the page table as gqa_paged_decode_bf16's);
-- _prefill.lua defines every field but the shapes.
local F = include "_prefill.lua"

-- The ragged task's shapes with the keys in a pool of 16384 pages of 16
-- tokens (MAXP pages per sequence hold its longest possible span, TQ + P
-- tokens), and a small odd shape whose pool of 64 pages is shared by its
-- sequences (pages drawn at random, so sometimes the same page twice).
F.define(_ENV, {
  name = "gqa_paged_prefill_bf16",
  kind = "paged",
  variants = {
    { B = 16, TQ = 8192, P = 1024, Hq = 32, Hk = 8, D = 128, PS = 16, MAXP = 576, NP = 16384,
      name = "llama3.1-8b_b16_t8192", tags = { "main", "prefill", "paged", "Llama-3.1-8B" } },
    { B = 4, TQ = 8192, P = 2048, Hq = 64, Hk = 8, D = 128, PS = 16, MAXP = 640, NP = 16384,
      name = "qwen3-32b_b4_t8192", tags = { "main", "prefill", "paged", "Qwen3-32B" } },
    { B = 32, TQ = 512, P = 4096, Hq = 64, Hk = 8, D = 128, PS = 16, MAXP = 288, NP = 16384,
      name = "llama3.1-70b_chunked_b32_t512", tags = { "chunked", "decode", "paged", "Llama-3.1-70B" } },
    { B = 5, TQ = 300, P = 37, Hq = 12, Hk = 4, D = 64, PS = 16, MAXP = 22, NP = 64, name = "5x300x12x4x64_p37",
      tags = { "odd", "small", "paged" } },
  },
})
