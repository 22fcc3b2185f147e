-- Paged grouped-query attention, decode: one query token per sequence
-- attending to the sequence's KV cache, which lives in pages of 16 tokens
-- reached through a page table (vLLM's block tables, FlashInfer's paged KV
-- cache in the NHD layout, FlashInfer-Bench's gqa_paged_decode), with
-- per-sequence lengths. bf16 in and out, fp32 accumulation, and the
-- log-sum-exp of every head's scores.
name = "gqa_paged_decode_bf16"
family = "serving"
kernel = "gqa_paged_decode"
tags = { "serving", "attention", "paged", "decode", "bf16", "memory-bound", "flashinfer-bench" }

description = [[
Write a CUDA kernel named `gqa_paged_decode`: attention of one query token
per sequence over its paged KV cache, grouped-query (Hq query heads share
Hk KV heads: query head h reads KV head h / (Hq / Hk)). q is bf16
[B, Hq, D]. k_cache and v_cache are bf16 [NP, PS, Hk, D] (NP pages of
PS=${PS} tokens; row-major, D contiguous). Sequence b has seq_lens[b] tokens
(int32, 1 <= seq_lens[b] <= MAXP*PS, not a multiple of PS in general);
its token j is in page block_table[b, j / PS], slot j % PS, where
block_table is int32 [B, MAXP] (row-major; pages in no particular order,
entries past the sequence's last page are valid page numbers that belong to
it no more). For every sequence b and query head h, over its tokens j only:
  s_j = (q[b, h] . k_j) / sqrt(D),  lse[b, h] = log(sum_j exp(s_j))  (natural log),
  out[b, h] = sum_j exp(s_j - lse[b, h]) v_j.
Write out as bf16 [B, Hq, D] (round to nearest even) and lse as fp32 [B, Hq].
Inputs must not be modified. Here B=${B}, Hq=${Hq}, Hk=${Hk}, D=${D},
PS=${PS}, MAXP=${MAXP}, NP=${NP}.
With the default launch plan the kernel is
  extern "C" __global__ void gqa_paged_decode(const __nv_bfloat16 *q, const __nv_bfloat16 *k_cache,
      const __nv_bfloat16 *v_cache, const int *block_table, const int *seq_lens, __nv_bfloat16 *out,
      float *lse, unsigned B, unsigned Hq, unsigned Hk, unsigned D, unsigned PS, unsigned MAXP, float scale)
with scale = 1/sqrt(D), launched with a grid of (Hq, B, 1) blocks of 128
threads (block (x, y): query head x of sequence y) and no dynamic shared
memory. Send your own plan to change any of this.]]

dims = { "B", "Hq", "Hk", "D", "PS", "MAXP", "NP" }

-- Real models' attention with 16-token pages (vLLM's default block size):
-- Llama-3.1-70B (64 query heads, 8 KV heads of 128: 8 query heads per KV
-- head) decoding 64 sequences of up to 4096 tokens, Qwen3-32B (the same
-- heads) on 8 long sequences of up to 32768, Llama-3.1-8B (32 and 8 heads)
-- on a batch of 256 of up to 1024, and a small odd shape (D = 64, sequences
-- of at most 7 pages). Each draws its lengths per sequence, so every
-- variant is ragged; the pool holds 16384 pages (256 MiB of K and as much
-- of V at 8 heads of 128), and the main variants read about 512 MiB of it
-- on average.
variants = {
  { B = 64, Hq = 64, Hk = 8, D = 128, PS = 16, MAXP = 256, NP = 16384, name = "llama3.1-70b_b64_l4096",
    tags = { "main", "decode", "ragged", "Llama-3.1-70B" } },
  { B = 8, Hq = 64, Hk = 8, D = 128, PS = 16, MAXP = 2048, NP = 16384, name = "qwen3-32b_b8_l32768",
    tags = { "main", "decode", "ragged", "long", "Qwen3-32B" } },
  { B = 256, Hq = 32, Hk = 8, D = 128, PS = 16, MAXP = 64, NP = 16384, name = "llama3.1-8b_b256_l1024",
    tags = { "decode", "ragged", "Llama-3.1-8B" } },
  { B = 5, Hq = 16, Hk = 2, D = 64, PS = 16, MAXP = 7, NP = 64, name = "5x16x2x64_l112",
    tags = { "odd", "small", "ragged" } },
}

buffers = {
  q = { role = "input", dtype = "bf16", shape = { "B", "Hq", "D" } },
  k_cache = { role = "input", dtype = "bf16", shape = { "NP", "PS", "Hk", "D" } },
  v_cache = { role = "input", dtype = "bf16", shape = { "NP", "PS", "Hk", "D" } },
  block_table = { role = "input", dtype = "i32", shape = { "B", "MAXP" } },
  seq_lens = { role = "input", dtype = "i32", shape = { "B" } },
  out = { role = "output", dtype = "bf16", shape = { "B", "Hq", "D" } },
  lse = { role = "output", dtype = "f32", shape = { "B", "Hq" } },
}

-- Lengths drawn per sequence in [1, MAXP*PS] (15 in 16 are not a multiple
-- of the page), pages drawn at random from the pool (out of order, and
-- sometimes shared by two sequences, as prefix caching shares them): a
-- kernel that reads the whole last page, or the table's every entry, or
-- assumes contiguous pages, is wrong. A law cannot name a dimension, so
-- both are drawn as large integers and derive (reference.cu) folds them:
-- block_table mod NP, seq_lens mod MAXP*PS, plus 1.
local N01 = { dist = "normal", mean = 0, std = 1 }
inputs = {
  q = N01, k_cache = N01, v_cache = N01,
  block_table = { dist = "int", lo = 0, hi = 1 << 30 },
  seq_lens = { dist = "int", lo = 0, hi = 1 << 30 },
}

-- Two seeds of N(0, 1), PTXBench's spiky mix on q and K (peaked score
-- rows), and short sequences (1 to 40 tokens: one to three pages, the last
-- one partial).
local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
trials = 2
distributions = {
  { name = "randn" },
  { name = "spiky_qk", inputs = { q = SPIKY, k_cache = SPIKY } },
  { name = "short", inputs = { seq_lens = { dist = "int", lo = 0, hi = 39 } } },
}

-- As klab's attention tasks: bf16 out within PTXBench's 1e-2, the fp32 LSE
-- within 1e-3.
tolerance = {
  bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 },
  f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
}

-- The reference (reference.cu's attn_rows_ref in its decode layout, 3;
-- element type 2, bf16): a block per (sequence, head) unit, fp64, two
-- passes over the sequence's tokens. A unit is D elements of out and
-- one of lse; a timed run's check recomputes 256 units (each up to a whole
-- sequence's K and V).
reference = {
  source = "reference.cu", accumulate = "f64", units = { out = "D", lse = 1 }, sample = 256,
  derived = { "block_table", "seq_lens" },
  derive = [[
return { launches = { { kernel = "gqa_make_tables", grid = { cdiv(B * MAXP, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("block_table"), buffer("seq_lens"), u32(B), u32(MAXP), u32(NP), u32(MAXP * PS) } } } }
]],
  plan = [[
assert(D <= 256, "the reference keeps D <= 256 sums in shared memory")
local units = nsample > 0 and nsample or B * Hq
return { launches = { { kernel = "attn_rows_ref", grid = { units, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("q"), buffer("k_cache"), buffer("v_cache"), u64(0), u64(0), u64(0), u64(0), u64(0),
           buffer("block_table"), buffer("seq_lens"), buffer("positions"), u64(nsample), buffer("out"), buffer("lse"),
           u32(3), u32(2), u32(B), u32(Hq), u32(Hk), u32(D), u32(1), u32(PS), u32(MAXP), u32(0) } } } }
]],
}

-- cuDNN's SDPA has paged K/V in its frontend, but klab's cuDNN graph
-- description has no page-table tensors: the task ships a kernel
-- (baseline.cu), split-KV decoding (512 tokens per split, the G query heads
-- of a KV head in one block, 32-token tiles gathered into shared memory)
-- and a combine kernel.
baseline = {
  source = "baseline.cu", name = "split-KV paged decode",
  plan = [[
local G = Hq // Hk
assert(D % 8 == 0 and G * D <= 16 * 128, "the shipped decode needs D % 8 == 0 and G * D <= 2048")
local chunk = 512
local NS = cdiv(MAXP * PS, chunk)
local heads = B * Hq
local shared = 4 * (G * D + 32 * (D + 1) + 32 * D + G * 32 + 3 * G)
return {
  workspace = { m = { bytes = 4 * heads * NS }, l = { bytes = 4 * heads * NS }, acc = { bytes = 4 * heads * NS * D } },
  launches = {
    { kernel = "gqa_decode_split", grid = { NS, Hk, B }, block = { 128, 1, 1 }, shared = shared,
      args = { buffer("q"), buffer("k_cache"), buffer("v_cache"), buffer("block_table"), buffer("seq_lens"),
               workspace("m"), workspace("l"), workspace("acc"), u32(Hq), u32(Hk), u32(D), u32(PS), u32(MAXP),
               u32(chunk), u32(NS), f32(1 / math.sqrt(D)) } },
    { kernel = "gqa_decode_combine", grid = { heads, 1, 1 }, block = { D, 1, 1 },
      args = { workspace("m"), workspace("l"), workspace("acc"), buffer("out"), buffer("lse"), u32(D), u32(NS) } },
  } }
]],
  floor_note = "the shipped split-KV kernel computes the scores from shared memory in fp32 (no tensor cores); "
    .. "not measured on a GPU yet",
}

-- Counts for a quarter of the largest cache (half the mean length), a
-- lower bound for the drawn lengths, so that the physical floor stays
-- below what any draw costs: two products of 2 * D per token and query
-- head, and the K and V rows of those tokens read once.
local function tokens(d) return d.B * d.MAXP * d.PS // 4 end
flops = function(d) return 4 * tokens(d) * d.Hq * d.D end
bytes = function(d)
  return tokens(d) * d.Hk * d.D * 2 * 2 + 2 * d.B * d.Hq * d.D * 2 + 4 * d.B * d.Hq + 4 * d.B * (d.MAXP + 1)
end
precision = "bf16"
targets = {}

plan = [[
-- Default plan: one block of 128 threads per (query head, sequence).
return { launches = { { kernel = "gqa_paged_decode", grid = { Hq, B, 1 }, block = { 128, 1, 1 }, shared = 0,
  args = { buffer("q"), buffer("k_cache"), buffer("v_cache"), buffer("block_table"), buffer("seq_lens"),
           buffer("out"), buffer("lse"), u32(B), u32(Hq), u32(Hk), u32(D), u32(PS), u32(MAXP),
           f32(1 / math.sqrt(D)) } } } }
]]
