-- Multi-head latent attention decode, paged (DeepSeek-V2/V3's MLA in its
-- absorbed form, as FlashMLA and FlashInfer's MLA kernels run it and
-- FlashInfer-Bench's mla_paged_decode_h16_ckv512_kpe64 poses it): one query
-- token per sequence; every head attends to the sequence's compressed KV
-- cache (a 512-wide latent per token, which is also the value) and its
-- 64-wide rotary key part. bf16 in and out, fp32 accumulation, with the
-- log-sum-exp.
name = "mla_paged_decode_bf16"
family = "serving"
kernel = "mla_paged_decode"
tags = { "serving", "attention", "mla", "paged", "decode", "bf16", "memory-bound", "flashinfer-bench" }

description = [[
Write a CUDA kernel named `mla_paged_decode`: multi-head latent attention
(DeepSeek's MLA, absorbed form) of one query token per sequence over its
paged compressed KV cache. q_nope is bf16 [B, H, C] and q_pe bf16 [B, H, R]
(the query already multiplied into the latent space, and its rotary part).
ckv_cache is bf16 [NP, PS, C] and kpe_cache bf16 [NP, PS, R] (NP pages of
PS=${PS} tokens; row-major). Sequence b has seq_lens[b] tokens (int32,
1 <= seq_lens[b] <= MAXP*PS, not a multiple of PS in general); its token j
is in page block_table[b, j / PS], slot j % PS, where block_table is int32
[B, MAXP] (row-major; pages in no particular order and sometimes shared,
entries past the sequence's last page are valid page numbers that belong to
it no more). For every sequence b and head h, over its tokens j only:
  s_j = (q_nope[b, h] . ckv_j + q_pe[b, h] . kpe_j) * sm_scale,
  lse[b, h] = log(sum_j exp(s_j))  (natural log),
  out[b, h] = sum_j exp(s_j - lse[b, h]) ckv_j   (the latent is the value),
with sm_scale = 1/sqrt(192) (DeepSeek-V3's query/key head dimension before
absorption, 128 + 64). Write out as bf16 [B, H, C] (round to nearest even)
and lse as fp32 [B, H]. Inputs must not be modified. Here B=${B}, H=${H},
C=${C}, R=${R}, PS=${PS}, MAXP=${MAXP}, NP=${NP}.
With the default launch plan the kernel is
  extern "C" __global__ void mla_paged_decode(const __nv_bfloat16 *q_nope, const __nv_bfloat16 *q_pe,
      const __nv_bfloat16 *ckv_cache, const __nv_bfloat16 *kpe_cache, const int *block_table,
      const int *seq_lens, __nv_bfloat16 *out, float *lse, unsigned B, unsigned H, unsigned C, unsigned R,
      unsigned PS, unsigned MAXP, float sm_scale)
launched with a grid of (H, B, 1) blocks of 128 threads (block (x, y): head
x of sequence y) and no dynamic shared memory. Send your own plan to change
any of this.]]

dims = { "B", "H", "C", "R", "PS", "MAXP", "NP" }

-- DeepSeek-V3 under 8-way tensor parallelism (16 of its 128 heads per GPU;
-- FlashInfer-Bench's h16) in pages of 64 tokens (FlashMLA's), decoding 64
-- sequences of up to 4096 tokens and 16 of up to 32768; all 128 heads (one
-- GPU, data parallel attention) on 32 sequences of up to 2048; and a small
-- odd shape (sequences of at most 3 pages). Lengths are drawn per sequence.
variants = {
  { B = 64, H = 16, C = 512, R = 64, PS = 64, MAXP = 64, NP = 8192, name = "deepseek-v3_tp8_b64_l4096",
    tags = { "main", "decode", "ragged", "DeepSeek-V3" } },
  { B = 16, H = 16, C = 512, R = 64, PS = 64, MAXP = 512, NP = 8192, name = "deepseek-v3_tp8_b16_l32768",
    tags = { "main", "decode", "ragged", "long", "DeepSeek-V3" } },
  { B = 32, H = 128, C = 512, R = 64, PS = 64, MAXP = 32, NP = 4096, name = "deepseek-v3_h128_b32_l2048",
    tags = { "decode", "ragged", "DeepSeek-V3" } },
  { B = 5, H = 16, C = 512, R = 64, PS = 64, MAXP = 3, NP = 16, name = "5x16_l192",
    tags = { "odd", "small", "ragged" } },
}

buffers = {
  q_nope = { role = "input", dtype = "bf16", shape = { "B", "H", "C" } },
  q_pe = { role = "input", dtype = "bf16", shape = { "B", "H", "R" } },
  ckv_cache = { role = "input", dtype = "bf16", shape = { "NP", "PS", "C" } },
  kpe_cache = { role = "input", dtype = "bf16", shape = { "NP", "PS", "R" } },
  block_table = { role = "input", dtype = "i32", shape = { "B", "MAXP" } },
  seq_lens = { role = "input", dtype = "i32", shape = { "B" } },
  out = { role = "output", dtype = "bf16", shape = { "B", "H", "C" } },
  lse = { role = "output", dtype = "f32", shape = { "B", "H" } },
}

-- As gqa_paged_decode_bf16: lengths drawn per sequence in [1, MAXP*PS],
-- pages at random from the pool, both as large integers that derive
-- (reference.cu's gqa_make_tables) folds.
local N01 = { dist = "normal", mean = 0, std = 1 }
inputs = {
  q_nope = N01, q_pe = N01, ckv_cache = N01, kpe_cache = N01,
  block_table = { dist = "int", lo = 0, hi = 1 << 30 },
  seq_lens = { dist = "int", lo = 0, hi = 1 << 30 },
}

-- Two seeds of N(0, 1), PTXBench's spiky mix on the rotary parts (a score
-- carried by q_pe . kpe: a kernel that drops them is far off there too),
-- and short sequences (1 to 40 tokens: within the first page).
local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
trials = 2
distributions = {
  { name = "randn" },
  { name = "spiky_pe", inputs = { q_pe = SPIKY, kpe_cache = SPIKY } },
  { name = "short", inputs = { seq_lens = { dist = "int", lo = 0, hi = 39 } } },
}

-- As klab's attention tasks: bf16 out within PTXBench's 1e-2, the fp32 LSE
-- within 1e-3.
tolerance = {
  bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 },
  f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
}

-- The reference (reference.cu's mla_decode_ref): a block per (sequence,
-- head) unit, fp64, two passes over the sequence's tokens; a unit is C
-- elements of out and one of lse.
reference = {
  source = "reference.cu", accumulate = "f64", units = { out = "C", lse = 1 }, sample = 256,
  derived = { "block_table", "seq_lens" },
  derive = [[
return { launches = { { kernel = "gqa_make_tables", grid = { cdiv(B * MAXP, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("block_table"), buffer("seq_lens"), u32(B), u32(MAXP), u32(NP), u32(MAXP * PS) } } } }
]],
  plan = [[
assert(C <= 1024 and R <= 128, "the reference keeps C <= 1024 sums in shared memory")
local units = nsample > 0 and nsample or B * H
return { launches = { { kernel = "mla_decode_ref", grid = { units, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("q_nope"), buffer("q_pe"), buffer("ckv_cache"), buffer("kpe_cache"), buffer("block_table"),
           buffer("seq_lens"), buffer("positions"), u64(nsample), buffer("out"), buffer("lse"),
           u32(H), u32(C), u32(R), u32(PS), u32(MAXP), f64(1 / math.sqrt(192)) } } } }
]],
}

-- No library has MLA: the task ships a kernel (baseline.cu), split-KV
-- decoding (256 tokens per split, up to 16 heads of a sequence per block
-- sharing each 16-token tile of the cache in shared memory) and
-- gqa_paged_decode's combine kernel.
baseline = {
  source = "baseline.cu", name = "split-KV MLA decode",
  plan = [[
assert(C <= 512, "the shipped MLA decode needs C <= 512")
local chunk = 256
local NS = cdiv(MAXP * PS, chunk)
local heads = B * H
local shared = 4 * (16 * (C + R) + 16 * (C + R + 1) + 16 * 16 + 3 * 16)
return {
  workspace = { m = { bytes = 4 * heads * NS }, l = { bytes = 4 * heads * NS }, acc = { bytes = 4 * heads * NS * C } },
  launches = {
    { kernel = "mla_decode_split", grid = { NS, B, cdiv(H, 16) }, block = { 256, 1, 1 }, shared = shared,
      args = { buffer("q_nope"), buffer("q_pe"), buffer("ckv_cache"), buffer("kpe_cache"), buffer("block_table"),
               buffer("seq_lens"), workspace("m"), workspace("l"), workspace("acc"), u32(H), u32(C), u32(R), u32(PS),
               u32(MAXP), u32(chunk), u32(NS), f32(1 / math.sqrt(192)) } },
    { kernel = "gqa_decode_combine", grid = { heads, 1, 1 }, block = { C, 1, 1 },
      args = { workspace("m"), workspace("l"), workspace("acc"), buffer("out"), buffer("lse"), u32(C), u32(NS) } },
  } }
]],
  floor_note = "the shipped split-KV kernel computes the scores from shared memory in fp32 (no tensor cores) "
    .. "and splits every sequence by the longest possible length; not measured on a GPU yet",
}

-- Counts for a quarter of the largest cache (half the mean length), a
-- lower bound for the drawn lengths (gqa_paged_decode_bf16's convention):
-- per token and head a score of 2 * (C + R) and a product of 2 * C; the
-- cache rows of those tokens read once, shared by the heads.
local function tokens(d) return d.B * d.MAXP * d.PS // 4 end
flops = function(d) return tokens(d) * d.H * 2 * (2 * d.C + d.R) end
bytes = function(d)
  return tokens(d) * (d.C + d.R) * 2 + d.B * d.H * (2 * d.C + d.R) * 2 + 4 * d.B * d.H + 4 * d.B * (d.MAXP + 1)
end
precision = "bf16"
targets = {}

plan = [[
-- Default plan: one block of 128 threads per (head, sequence).
return { launches = { { kernel = "mla_paged_decode", grid = { H, B, 1 }, block = { 128, 1, 1 }, shared = 0,
  args = { buffer("q_nope"), buffer("q_pe"), buffer("ckv_cache"), buffer("kpe_cache"), buffer("block_table"),
           buffer("seq_lens"), buffer("out"), buffer("lse"), u32(B), u32(H), u32(C), u32(R), u32(PS), u32(MAXP),
           f32(1 / math.sqrt(192)) } } } }
]]
