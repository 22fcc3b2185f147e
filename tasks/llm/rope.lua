-- Rotary position embedding on queries and keys, GPT-NeoX convention
-- (rotate-half: element i pairs with i + D/2), the way vLLM's and
-- FlashInfer's rotary kernels take it: per-token positions index a cos/sin
-- cache of [max_position, D] (the first D/2 columns cos, the last D/2
-- sin). Full rotary dimension (rotary_dim = D). bf16 Q and K in, bf16 out,
-- an fp32 cache and fp32 arithmetic.
local F = include "_family.lua"

name = "rope_neox_bf16"
family = "llm"
kernel = "rope"
tags = { "llm", "rope", "bf16", "memory-bound" }

description = [[
Write a CUDA kernel named `rope`: rotary position embedding on queries and
keys, GPT-NeoX convention (rotate-half). Q is bf16 [T, Hq, D] and K bf16
[T, Hk, D] (row-major, D contiguous; __nv_bfloat16 bit patterns), pos is
int32 [T] (each token's position, 0 <= pos < P), cos_sin is fp32 [P, D]: row
p holds cos in columns 0..D/2-1 and sin in columns D/2..D-1. For every token
t, head h of Q (and of K) and i < D/2, with c = cos_sin[pos[t], i],
s = cos_sin[pos[t], D/2 + i], x = the head's row:
  out[i]       = x[i] * c - x[i + D/2] * s,
  out[i + D/2] = x[i + D/2] * c + x[i] * s,
written to Qo [T, Hq, D] and Ko [T, Hk, D] (bf16, round to nearest even), fp32
arithmetic. Q and K must not be modified. Here T=${T}, Hq=${Hq}, Hk=${Hk},
D=${D}, P=${P}.
With the default launch plan the kernel is
  extern "C" __global__ void rope(const int *pos, const __nv_bfloat16 *Q,
      const __nv_bfloat16 *K, const float *cos_sin, __nv_bfloat16 *Qo, __nv_bfloat16 *Ko, unsigned T,
      unsigned Hq, unsigned Hk, unsigned D)
launched with one block of 128 threads per token (grid (T, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]

dims = { "T", "Hq", "Hk", "D", "P" }
-- Llama-3-8B's attention (32 query heads, 8 key heads of 128) on 32768
-- tokens and a 32-head MHA on 16384 (Q and K read and written: 640 and 512
-- MiB, over 100 us on an H200), and a small odd shape; every variant has
-- a 4096-position cache (2 MiB at D = 128, L2-resident), so the names leave
-- P out.
variants = {
  { T = 32768, Hq = 32, Hk = 8, D = 128, P = 4096, name = "32768x32x8x128", tags = { "main" } },
  { T = 16384, Hq = 32, Hk = 32, D = 128, P = 4096, name = "16384x32x32x128", tags = { "main" } },
  { T = 999, Hq = 6, Hk = 2, D = 72, P = 4096, name = "999x6x2x72", tags = { "odd", "small" } },
}

buffers = {
  pos = { role = "input", dtype = "i32", shape = { "T" } },
  Q = { role = "input", dtype = "bf16", shape = { "T", "Hq", "D" } },
  K = { role = "input", dtype = "bf16", shape = { "T", "Hk", "D" } },
  cos_sin = { role = "input", dtype = "f32", shape = { "P", "D" } },
  Qo = { role = "output", dtype = "bf16", shape = { "T", "Hq", "D" } },
  Ko = { role = "output", dtype = "bf16", shape = { "T", "Hk", "D" } },
}

-- Positions drawn at random in [0, P) (every variant has P = 4096): a batch
-- of sequences has no order a kernel could assume, and a kernel that uses
-- the token index as the position is wrong. The cache is drawn too, not
-- computed: cos and sin values in [-1, 1] exercise the same arithmetic,
-- and a kernel that recomputes cos/sin from the position with frequencies
-- of its own, instead of reading the cache, is wrong.
inputs = {
  pos = { dist = "int", lo = 0, hi = 4095 },
  Q = { dist = "normal", mean = 0, std = 1 },
  K = { dist = "normal", mean = 0, std = 1 },
  cos_sin = { dist = "uniform", lo = -1, hi = 1 },
}

-- KernelBench-Verified's scales multiply Q, K and the cache (not the
-- integer positions): every output is a product of the two, so it scales
-- with scale^2 (tol_scale 9 and 1e-4). Then PTXBench's spiky mix on Q and K.
trials = 2
distributions = F.distributions(9, 1e-4, {
  { name = "spiky", inputs = { Q = F.SPIKY, K = F.SPIKY } },
})

-- bf16 outputs: see _family.lua. Each output is a two-term sum that can
-- cancel; products rounded to bf16 before the sum (vLLM's bf16 arithmetic)
-- stay within atol for inputs of a few units.
tolerance = { bf16 = F.BF16 }

-- The reference (reference.cu): a block per token, fp64 arithmetic. A unit
-- is a token: Hq*D elements of Qo and Hk*D of Ko.
reference = {
  source = "reference.cu", accumulate = "f64", units = { Qo = "Hq*D", Ko = "Hk*D" },
  plan = [[
assert(P >= 4096, "pos is drawn in [0, 4096): the cache needs P >= 4096 rows")
local tokens = nsample > 0 and nsample or T
return { launches = { { kernel = "rope_ref", grid = { tokens, 1, 1 }, block = { 128, 1, 1 },
  args = { buffer("pos"), buffer("Q"), buffer("K"), buffer("cos_sin"), buffer("positions"), u64(nsample),
           buffer("Qo"), buffer("Ko"), u32(Hq), u32(Hk), u32(D) } } } }
]],
}

-- No library in klab has a rotary embedding (a cuDNN pointwise graph
-- cannot gather cache rows by position): the task ships a kernel
-- (baseline.cu), a block per token, four pairs per thread with 8- and
-- 16-byte accesses.
baseline = {
  source = "baseline.cu", name = "block-per-token NeoX RoPE",
  plan = [[
return { launches = { { kernel = "rope_baseline", grid = { T, 1, 1 }, block = { 128, 1, 1 },
  args = { buffer("pos"), buffer("Q"), buffer("K"), buffer("cos_sin"), buffer("Qo"), buffer("Ko"),
           u32(Hq), u32(Hk), u32(D) } } } }
]],
}

-- Two products and a sum per output element (a convention).
flops = function(d) return 3 * d.T * (d.Hq + d.Hk) * d.D end
precision = "f32"
targets = F.targets

plan = [[
-- Default plan: one block of 128 threads per token.
return { launches = { { kernel = "rope", grid = { T, 1, 1 }, block = { 128, 1, 1 }, shared = 0,
  args = { buffer("pos"), buffer("Q"), buffer("K"), buffer("cos_sin"), buffer("Qo"), buffer("Ko"),
           u32(T), u32(Hq), u32(Hk), u32(D) } } } }
]]
