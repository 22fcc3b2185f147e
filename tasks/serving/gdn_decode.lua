-- One decode step of the gated delta net (Qwen3-Next's linear attention
-- layers: a gated delta-rule recurrence over a per-head state matrix), as
-- FlashInfer-Bench's gdn_decode_qk*_v*_d128_k_last and PTXBench's
-- gdn-problems pose it: the state k-last, [B, HV, V, K], fp32.
name = "gdn_decode_bf16"
family = "serving"
kernel = "gdn_decode"
tags = { "serving", "gdn", "linear-attention", "decode", "bf16", "memory-bound", "flashinfer-bench" }

description = [[
Write a CUDA kernel named `gdn_decode`: one decode step of the gated delta
rule (gated delta net), one token per sequence. q and k are bf16
[B, HQ, K], v is bf16 [B, HV, V] (HV value heads; value head h reads query
and key head h / (HV / HQ)). state is fp32 [B, HV, V, K] (k-last: row i of
head h's V x K matrix is state[b, h, i, 0..K-1], K contiguous). A_log and
dt_bias are fp32 [HV], a and b bf16 [B, HV]. For every sequence and value
head:
  g = exp(-exp(A_log[h]) * softplus(a[b, h] + dt_bias[h])),  softplus(x) = log(1 + exp(x)),
  beta = 1 / (1 + exp(-b[b, h])),
  S = g * state[b, h]                                   (V x K),
  new_state[b, h] = S + beta * (v[b, h] - S k) k^T       (k = k[b, h / (HV/HQ)], a K-vector),
  out[b, h] = scale * new_state[b, h] q                  (q likewise; a V-vector),
with scale = 1/sqrt(K). Write out as bf16 [B, HV, V] (round to nearest
even) and new_state as fp32 [B, HV, V, K]. Inputs must not be modified.
Here B=${B}, HQ=${HQ}, HV=${HV}, K=${K}, V=${V}.
With the default launch plan the kernel is
  extern "C" __global__ void gdn_decode(const __nv_bfloat16 *q, const __nv_bfloat16 *k,
      const __nv_bfloat16 *v, const float *state, const float *A_log, const __nv_bfloat16 *a,
      const float *dt_bias, const __nv_bfloat16 *b, __nv_bfloat16 *out, float *new_state, unsigned B,
      unsigned HQ, unsigned HV, unsigned K, unsigned V, float scale)
launched with a grid of (HV, B, 1) blocks of 128 threads (block (x, y): value
head x of sequence y) and no dynamic shared memory. Send your own plan to
change any of this.]]

dims = { "B", "HQ", "HV", "K", "V" }

-- Qwen3-Next-80B-A3B's linear attention (16 query/key heads, 32 value
-- heads, K = V = 128) under 4-way tensor parallelism (FlashInfer-Bench's
-- and PTXBench's qk4_v8) at decode batches of 256 and 32, under 2-way
-- (qk8_v16) at 256, and a small odd shape with K != V (a kernel that
-- confuses the state's two axes reads the wrong rows there).
variants = {
  { B = 256, HQ = 4, HV = 8, K = 128, V = 128, name = "qwen3-next_tp4_b256",
    tags = { "main", "decode", "Qwen3-Next-80B-A3B", "gdn_decode_qk4_v8_d128_k_last" } },
  { B = 32, HQ = 4, HV = 8, K = 128, V = 128, name = "qwen3-next_tp4_b32",
    tags = { "decode", "Qwen3-Next-80B-A3B", "gdn_decode_qk4_v8_d128_k_last" } },
  { B = 256, HQ = 8, HV = 16, K = 128, V = 128, name = "qwen3-next_tp2_b256",
    tags = { "main", "decode", "Qwen3-Next-80B-A3B", "gdn_decode_qk8_v16_d128_k_last" } },
  { B = 7, HQ = 2, HV = 6, K = 64, V = 96, name = "7x2x6_k64_v96", tags = { "odd", "small" } },
}

local BH = { "B", "HV" }
buffers = {
  q = { role = "input", dtype = "bf16", shape = { "B", "HQ", "K" } },
  k = { role = "input", dtype = "bf16", shape = { "B", "HQ", "K" } },
  v = { role = "input", dtype = "bf16", shape = { "B", "HV", "V" } },
  state = { role = "input", dtype = "f32", shape = { "B", "HV", "V", "K" } },
  A_log = { role = "input", dtype = "f32", shape = { "HV" } },
  a = { role = "input", dtype = "bf16", shape = BH },
  dt_bias = { role = "input", dtype = "f32", shape = { "HV" } },
  b = { role = "input", dtype = "bf16", shape = BH },
  out = { role = "output", dtype = "bf16", shape = { "B", "HV", "V" } },
  new_state = { role = "output", dtype = "f32", shape = { "B", "HV", "V", "K" } },
}

-- q and k N(0, 1/128) (the model l2-normalizes them: about unit norm at
-- K = 128, so the delta rule's k k^T step is well conditioned), v and the
-- state N(0, 1), A_log uniform on [0, 2.5] (Qwen3-Next's initialization
-- spans log 1 .. log 16), a, dt_bias and b N(0, 1): gates g spread over
-- (0, 1), beta over (0, 1).
local QK = { dist = "normal", mean = 0, std = 0.0884 }
local N01 = { dist = "normal", mean = 0, std = 1 }
inputs = {
  q = QK, k = QK, v = N01, state = N01, a = N01, dt_bias = N01, b = N01,
  A_log = { dist = "uniform", lo = 0, hi = 2.5 },
}

-- Two seeds, then a state that has grown large (x 3 on every float input
-- would change q and k's norm too, so only the state: N(0, 10²)), and
-- gates near 1 (A_log very negative: g = exp(-tiny), the state kept
-- almost whole, the delta term alone changing it).
trials = 2
distributions = {
  { name = "randn" },
  { name = "big_state", inputs = { state = { dist = "normal", mean = 0, std = 10 } } },
  { name = "no_decay", inputs = { A_log = { dist = "uniform", lo = -12, hi = -8 } } },
}

-- new_state: fp32 throughout; its entries are S + beta * delta * k_j with
-- S k a sum of K fp32 products (error about 2^-24 * sqrt(K) of the sum's
-- terms), so 1e-4 absolute and relative is tens of times the rounding of
-- any summation order, and a missing gate, beta or delta term misses by
-- O(1). out: bf16 of values about 0.1 (scale * a unit-norm q against
-- N(0, 1) rows), so atol 1e-3 (a kernel writing zeros fails nearly every
-- element) and the bf16 rounding's rtol 1e-2.
tolerance = {
  f32 = { atol = 1e-4, rtol = 1e-4, matched = 1.0 },
  bf16 = { atol = 1e-3, rtol = 1e-2, matched = 1.0 },
}

-- The reference (reference.cu's gdn_decode_ref): a thread per state row
-- unit (b, h, i), fp64; a unit is K elements of new_state and one of out.
reference = {
  source = "reference.cu", accumulate = "f64", units = { out = 1, new_state = "K" }, sample = 4096,
  plan = [[
local total = B * HV * V
local units = nsample > 0 and nsample or total
return { launches = { { kernel = "gdn_decode_ref", grid = { cdiv(units, 128), 1, 1 }, block = { 128, 1, 1 },
  args = { buffer("q"), buffer("k"), buffer("v"), buffer("state"), buffer("A_log"), buffer("a"), buffer("dt_bias"),
           buffer("b"), buffer("positions"), u64(nsample), u64(total), buffer("out"), buffer("new_state"),
           u32(HQ), u32(HV), u32(K), u32(V), f64(1 / math.sqrt(K)) } } } }
]],
}

-- No library has the gated delta rule: the task ships a kernel
-- (baseline.cu), a block per (value head, sequence) and a warp per state
-- row, its lanes over K (the state read and written once, coalesced).
baseline = {
  source = "baseline.cu", name = "warp-per-row gated delta decode",
  plan = [[
assert(K <= 256 and HV % HQ == 0, "the shipped kernel keeps K <= 256 of q and k in shared memory")
return { launches = { { kernel = "gdn_decode_baseline", grid = { HV, B, 1 }, block = { 256, 1, 1 },
  args = { buffer("q"), buffer("k"), buffer("v"), buffer("state"), buffer("A_log"), buffer("a"), buffer("dt_bias"),
           buffer("b"), buffer("out"), buffer("new_state"), u32(HQ), u32(HV), u32(K), u32(V),
           f32(1 / math.sqrt(K)) } } } }
]],
  floor_note = "memory-bound (the fp32 state read and written once); not measured on a GPU yet",
}

-- Per state entry: the decay, the dot with k, the update and the dot with
-- q (about 6 operations, a convention); bytes: the inputs and outputs.
flops = function(d) return 6 * d.B * d.HV * d.V * d.K end
precision = "f32"
targets = {}

plan = [[
-- Default plan: one block of 128 threads per (value head, sequence).
return { launches = { { kernel = "gdn_decode", grid = { HV, B, 1 }, block = { 128, 1, 1 }, shared = 0,
  args = { buffer("q"), buffer("k"), buffer("v"), buffer("state"), buffer("A_log"), buffer("a"), buffer("dt_bias"),
           buffer("b"), buffer("out"), buffer("new_state"), u32(B), u32(HQ), u32(HV), u32(K), u32(V),
           f32(1 / math.sqrt(K)) } } } }
]]
