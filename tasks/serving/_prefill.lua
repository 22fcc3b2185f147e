-- What the two prefill attention tasks share (gqa_ragged_prefill.lua,
-- gqa_paged_prefill.lua): causal grouped-query attention of a batch of
-- sequences whose queries are packed without padding (FlashInfer's ragged
-- layout, qo_indptr; FlashInfer-Bench's gqa_ragged_prefill_causal and
-- gqa_paged_prefill_causal), each sequence's keys being a cached prefix
-- followed by its own new tokens, in one packed array (ragged) or in pages
-- of 16 tokens through a page table (paged, as gqa_paged_decode_bf16).
-- bf16 in and out, fp32 accumulation, with the log-sum-exp.
local F = {}

-- The key/value layouts: buffers, description text, the kernel's
-- arguments, the reference's layout code and its derive.
local KV = {
  ragged = {
    dims = { "B", "TQ", "P", "Hq", "Hk", "D" },
    buffers = {
      k = { role = "input", dtype = "bf16", shape = { "TQ + B*P", "Hk", "D" } },
      v = { role = "input", dtype = "bf16", shape = { "TQ + B*P", "Hk", "D" } },
      kv_indptr = { role = "input", dtype = "i32", shape = { "B + 1" } },
    },
    text = [[
k and v are bf16 [TQ + B*P, Hk, D]: sequence b's keys (and values) are
rows kv_indptr[b] .. kv_indptr[b+1]-1, kv_indptr int32 [B + 1] with
kv_indptr[0] = 0 (rows past kv_indptr[B] belong to no sequence); its
kvlen_b = kv_indptr[b+1] - kv_indptr[b] keys: a cached prefix of
kvlen_b - qlen_b <= P tokens, then the sequence's own qlen_b new tokens.
Key j of sequence b is k[kv_indptr[b] + j].]],
    sig = "const __nv_bfloat16 *k, const __nv_bfloat16 *v, const int *qo_indptr, const int *kv_indptr",
    args = [[buffer("q"), buffer("k"), buffer("v"), buffer("qo_indptr"), buffer("kv_indptr")]],
    more_sig = "",
    more_args = "",
    layout = 0,
    ref_args = [[buffer("q"), buffer("k"), buffer("v"), u64(0), u64(0), u64(0), buffer("qo_indptr"), buffer("kv_indptr"),
           u64(0), u64(0)]],
    derived = { "qo_indptr", "kv_indptr" },
    derive = [[
return { launches = { { kernel = "make_ragged_offsets", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("qo_indptr"), buffer("kv_indptr"), buffer("kv_indptr"), u64(0), u64(0), u64(0), u32(1),
           u32(B), u32(TQ), u32(P) } } } }
]],
    kv_bytes = function(d) return d.TQ * d.Hk * d.D * 2 * 2 + 4 * (d.B + 1) end,
  },
  paged = {
    dims = { "B", "TQ", "P", "Hq", "Hk", "D", "PS", "MAXP", "NP" },
    buffers = {
      k_cache = { role = "input", dtype = "bf16", shape = { "NP", "PS", "Hk", "D" } },
      v_cache = { role = "input", dtype = "bf16", shape = { "NP", "PS", "Hk", "D" } },
      block_table = { role = "input", dtype = "i32", shape = { "B", "MAXP" } },
      seq_lens = { role = "input", dtype = "i32", shape = { "B" } },
    },
    text = [[
k_cache and v_cache are bf16 [NP, PS, Hk, D] (NP=${NP} pages of PS=${PS}
tokens; row-major, D contiguous). Sequence b has kvlen_b = seq_lens[b]
keys (int32 [B]): a cached prefix of kvlen_b - qlen_b <= P tokens, then
its own qlen_b new tokens; its key j is in page block_table[b, j / PS],
slot j % PS, where block_table is int32 [B, MAXP], MAXP=${MAXP} (row-major; pages in no
particular order and sometimes shared between sequences; entries past the
sequence's last page are valid page numbers that belong to it no more;
MAXP*PS >= TQ + P).]],
    sig = "const __nv_bfloat16 *k_cache, const __nv_bfloat16 *v_cache, const int *qo_indptr,\n"
      .. "      const int *block_table, const int *seq_lens",
    args = [[buffer("q"), buffer("k_cache"), buffer("v_cache"), buffer("qo_indptr"), buffer("block_table"), buffer("seq_lens")]],
    more_sig = ", unsigned PS, unsigned MAXP",
    more_args = ", u32(PS), u32(MAXP)",
    layout = 2,
    ref_args = [[buffer("q"), buffer("k_cache"), buffer("v_cache"), u64(0), u64(0), u64(0), buffer("qo_indptr"), u64(0),
           buffer("block_table"), buffer("seq_lens")]],
    derived = { "qo_indptr", "seq_lens", "block_table" },
    derive = [[
assert(MAXP * PS >= TQ + P, "MAXP*PS must hold the longest sequence, TQ + P tokens")
return { launches = { { kernel = "make_ragged_offsets", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("qo_indptr"), buffer("seq_lens"), u64(0), buffer("seq_lens"), buffer("block_table"), u64(B * MAXP),
           u32(NP), u32(B), u32(TQ), u32(P) } } } }
]],
    kv_bytes = function(d) return d.TQ * d.Hk * d.D * 2 * 2 + 4 * d.B * (d.MAXP + 1) end,
  },
}

-- Sets every field of the task in env. t: { name, kind = "ragged" |
-- "paged", variants }.
function F.define(env, t)
  local kv = KV[t.kind]
  local kernel = "gqa_" .. t.kind .. "_prefill"
  env.name = t.name
  env.family = "serving"
  env.kernel = kernel
  env.tags = { "serving", "attention", t.kind, "prefill", "causal", "bf16", "flashinfer-bench" }
  env.description = ([[
Write a CUDA kernel named `%s`: causal grouped-query attention of a
batch of B sequences whose query tokens are packed without padding (Hq
query heads share Hk KV heads: query head h reads KV head h / (Hq / Hk)).
q is bf16 [TQ, Hq, D] (row-major, D contiguous). Sequence b owns query
tokens qo_indptr[b] .. qo_indptr[b+1]-1 (qo_indptr int32 [B + 1],
qo_indptr[0] = 0, qo_indptr[B] = TQ; qlen_b = qo_indptr[b+1] - qo_indptr[b]
may be 0, and lengths are uneven: one sequence may hold nearly every token).
%s
Causal mask, bottom-right aligned: query i of sequence b (token
qo_indptr[b] + i) sees keys j <= kvlen_b - qlen_b + i only. For every query
token t of sequence b and query head h, over the keys it sees:
  s_j = (q[t, h] . k_j) / sqrt(D),  lse[t, h] = log(sum_j exp(s_j))  (natural log),
  out[t, h] = sum_j exp(s_j - lse[t, h]) v_j.
Write out as bf16 [TQ, Hq, D] (round to nearest even) and lse as fp32
[TQ, Hq]. Inputs must not be modified. Here B=${B}, TQ=${TQ}, P=${P},
Hq=${Hq}, Hk=${Hk}, D=${D}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const __nv_bfloat16 *q, %s,
      __nv_bfloat16 *out, float *lse, unsigned B, unsigned TQ, unsigned Hq, unsigned Hk, unsigned D%s,
      float scale)
with scale = 1/sqrt(D), launched with a grid of (TQ, Hq, 1) blocks of 128
threads (block (x, y): query token x, query head y) and no dynamic shared
memory. Send your own plan to change any of this.]]):format(kernel, kv.text, kernel, kv.sig, kv.more_sig)

  env.dims = kv.dims
  env.zero_dims = { "P" }
  env.variants = t.variants
  env.buffers = {
    q = { role = "input", dtype = "bf16", shape = { "TQ", "Hq", "D" } },
    qo_indptr = { role = "input", dtype = "i32", shape = { "B + 1" } },
    out = { role = "output", dtype = "bf16", shape = { "TQ", "Hq", "D" } },
    lse = { role = "output", dtype = "f32", shape = { "TQ", "Hq" } },
  }
  for k, b in pairs(kv.buffers) do env.buffers[k] = b end

  -- The offsets, lengths and page table are drawn as large integers and
  -- folded by derive (reference.cu's make_ragged_offsets): the query cut
  -- points uniform on [0, TQ] and sorted (uneven lengths, some empty), the
  -- prefixes uniform on [0, P], pages at random from the pool.
  local N01 = { dist = "normal", mean = 0, std = 1 }
  local BIG = { dist = "int", lo = 0, hi = 1 << 30 }
  env.inputs = { q = N01, qo_indptr = BIG }
  for k, b in pairs(kv.buffers) do env.inputs[k] = b.dtype == "bf16" and N01 or BIG end

  -- Two seeds of N(0, 1), PTXBench's spiky mix on q and K, one sequence
  -- holding nearly every query (cut points drawn in [0, 3]: the others get
  -- at most three queries, most none), and no prefix (kvlen = qlen: the
  -- square causal mask).
  local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
  local kname = t.kind == "ragged" and "k" or "k_cache"
  local pre = t.kind == "ragged" and "kv_indptr" or "seq_lens"
  env.trials = 2
  env.distributions = {
    { name = "randn" },
    { name = "spiky_qk", inputs = { q = SPIKY, [kname] = SPIKY } },
    { name = "one_long", inputs = { qo_indptr = { dist = "int", lo = 0, hi = 3 } } },
    { name = "no_prefix", inputs = { [pre] = { dist = "const", value = 0 } } },
  }

  -- As klab's attention tasks: bf16 out within PTXBench's 1e-2, the fp32
  -- LSE within 1e-3.
  env.tolerance = {
    bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 },
    f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
  }

  -- The reference (reference.cu's attn_rows_ref, layout 0 or 2, bf16): a
  -- block per (token, head) unit, fp64, two passes over the keys the query
  -- sees. A timed run's check recomputes 256 units.
  env.reference = {
    source = "reference.cu", accumulate = "f64", units = { out = "D", lse = 1 }, sample = 256,
    derived = kv.derived,
    derive = kv.derive,
    plan = ([[
assert(D <= 256 and Hq %% Hk == 0, "the reference keeps D <= 256 sums in shared memory")
local units = nsample > 0 and nsample or TQ * Hq
return { launches = { { kernel = "attn_rows_ref", grid = { units, 1, 1 }, block = { 256, 1, 1 },
  args = { %s, buffer("positions"), u64(nsample), buffer("out"), buffer("lse"),
           u32(%d), u32(2), u32(B), u32(Hq), u32(Hk), u32(D), u32(1), u32(dims.PS or 1), u32(dims.MAXP or 1), u32(1) } } } }
]]):format(kv.ref_args, kv.layout),
  }

  -- No library call of klab's takes ragged or paged queries: the task ships
  -- a kernel (baseline.cu), a flash-attention loop on the SIMT pipes (16
  -- query rows of a head per block, 32-key tiles in shared memory, online
  -- softmax in fp32).
  env.baseline = {
    source = "baseline.cu", name = "SIMT flash prefill",
    plan = ([[
assert(D == 64 or D == 128 or D == 256, "the shipped prefill kernel has D = 64, 128 and 256")
return { launches = { { kernel = "flash_bf16_d" .. D, grid = { cdiv(TQ, 16), Hq, B }, block = { 128, 1, 1 },
  shared = 4 * (16 * D + 32 * (D + 1) + 32 * D),
  args = { %s, buffer("out"), buffer("lse"), u32(%d), u32(Hq), u32(Hk), u32(1), u32(dims.PS or 1),
           u32(dims.MAXP or 1), u32(1), f32(1 / math.sqrt(D)) } } } }
]]):format(kv.ref_args, kv.layout),
    floor_note = "the shipped kernel computes scores and products on the SIMT pipes in fp32 (no tensor cores) "
      .. "and launches a block per 16 rows of every sequence's longest possible span; not measured on a GPU yet",
  }

  -- Counts for the least work any draw can cost: no prefix and TQ split
  -- evenly (the causal sum of qlen^2 / 2 is smallest then), two products
  -- of 2 * D per visible key and query head; q, out, lse and TQ rows of k
  -- and v read or written once.
  env.flops = function(d) return 2 * d.D * d.Hq * d.TQ * d.TQ // d.B end
  env.bytes = function(d) return d.TQ * d.Hq * d.D * 2 * 2 + 4 * d.TQ * d.Hq + 4 * (d.B + 1) + kv.kv_bytes(d) end
  env.precision = "bf16"
  env.targets = {}

  env.plan = ([[
-- Default plan: one block of 128 threads per (query token, query head).
return { launches = { { kernel = "%s", grid = { TQ, Hq, 1 }, block = { 128, 1, 1 }, shared = 0,
  args = { %s, buffer("out"), buffer("lse"), u32(B), u32(TQ), u32(Hq), u32(Hk), u32(D)%s,
           f32(1 / math.sqrt(D)) } } } }
]]):format(kernel, kv.args, kv.more_args)
end

return F
