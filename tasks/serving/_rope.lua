-- What the two partial-rotary RoPE tasks share (rope_neox_partial.lua,
-- rope_gptj_partial.lua): FlashInfer's apply_rope_with_cos_sin_cache
-- (FlashInfer-Bench's rope definitions, e.g. rope_with_cos_sin_cache_
-- neox_style_d128_rd64): bf16 Q [T, Hq, D] and K [T, Hk, D], int64
-- positions, an fp32 cos/sin cache of [P, R] rows, and a rotary dimension R
-- that may be less than the head dimension D (the first R elements of a
-- head rotate, the rest are copied). Written out of place (Qo, Ko), since a
-- task's inputs must stay unmodified.
local F = {}

local LAYOUT = {
  neox = [[
NeoX layout (rotate-half): pair i (0 <= i < R/2) of a head's row x is
(x[i], x[i + R/2]).]],
  gptj = [[
GPT-J layout (interleaved): pair i (0 <= i < R/2) of a head's row x is
(x[2i], x[2i + 1]).]],
}

-- Sets every field of the task in env. style: "neox" or "gptj";
-- variants: the file's own (real models' attention shapes).
function F.define(env, style, variants)
  local gptj = style == "gptj" and 1 or 0
  env.name = "rope_" .. style .. "_partial_bf16"
  env.family = "serving"
  env.kernel = "rope_" .. style
  env.tags = { "serving", "rope", "bf16", "memory-bound", "flashinfer-bench" }
  env.description = ([[
Write a CUDA kernel named `rope_%s`: rotary position embedding of queries
and keys with a cos/sin cache and a partial rotary dimension. Q is bf16
[T, Hq, D] and K bf16 [T, Hk, D] (row-major, D contiguous; __nv_bfloat16 bit
patterns), pos is int64 [T] (each token's position, 0 <= pos < P), cos_sin
is fp32 [P, R]: row p holds cos in columns 0..R/2-1 and sin in columns
R/2..R-1. Only the first R elements of each head rotate (R <= D, R even);
elements R..D-1 are copied unchanged.
%s
For every token t, head h of Q (and of K) and pair i with elements (a, b),
c = cos_sin[pos[t], i] and s = cos_sin[pos[t], R/2 + i]:
  a' = a * c - b * s,   b' = b * c + a * s,
written to the same places of Qo [T, Hq, D] and Ko [T, Hk, D] (bf16, round to
nearest even), fp32 arithmetic. Q, K, pos and cos_sin must not be modified.
Here T=${T}, Hq=${Hq}, Hk=${Hk}, D=${D}, R=${R}, P=${P}.
With the default launch plan the kernel is
  extern "C" __global__ void rope_%s(const long long *pos, const __nv_bfloat16 *Q,
      const __nv_bfloat16 *K, const float *cos_sin, __nv_bfloat16 *Qo, __nv_bfloat16 *Ko, unsigned T,
      unsigned Hq, unsigned Hk, unsigned D, unsigned R)
launched with one block of 128 threads per token (grid (T, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]):format(style, LAYOUT[style], style)

  env.dims = { "T", "Hq", "Hk", "D", "R", "P" }
  env.variants = variants
  env.buffers = {
    pos = { role = "input", dtype = "i64", shape = { "T" } },
    Q = { role = "input", dtype = "bf16", shape = { "T", "Hq", "D" } },
    K = { role = "input", dtype = "bf16", shape = { "T", "Hk", "D" } },
    cos_sin = { role = "input", dtype = "f32", shape = { "P", "R" } },
    Qo = { role = "output", dtype = "bf16", shape = { "T", "Hq", "D" } },
    Ko = { role = "output", dtype = "bf16", shape = { "T", "Hk", "D" } },
  }

  -- Positions drawn at random in [0, 8192) (every variant has P = 8192): a
  -- batch of sequences has no order to assume, and a kernel that uses the
  -- token index, or reads the int64 positions as int32, is wrong. The cache
  -- is drawn, not computed, so a kernel must read it.
  env.inputs = {
    pos = { dist = "int", lo = 0, hi = 8191 },
    Q = { dist = "normal", mean = 0, std = 1 },
    K = { dist = "normal", mean = 0, std = 1 },
    cos_sin = { dist = "uniform", lo = -1, hi = 1 },
  }

  -- KernelBench-Verified's scales multiply Q, K and the cache: a rotated
  -- output is a product of two and scales with scale^2 (tol_scale 9 and
  -- 1e-4; the copied elements scale once and are exact). Then PTXBench's
  -- spiky mix on Q and K.
  local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
  env.trials = 2
  env.distributions = {
    { name = "randn" },
    { name = "x3", scale = 3, tol_scale = 9 },
    { name = "x0.01", scale = 0.01, tol_scale = 1e-4 },
    { name = "neg", scale = -1 },
    { name = "spiky", inputs = { Q = SPIKY, K = SPIKY } },
  }

  -- bf16 outputs: PTXBench's rule (atol = rtol = 1e-2, every element), as
  -- for rope_neox_bf16 (tasks/llm/_family.lua says why).
  env.tolerance = { bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 } }

  -- The reference (reference.cu): a block per token, fp64. A unit is a
  -- token: Hq*D elements of Qo and Hk*D of Ko.
  env.reference = {
    source = "reference.cu", accumulate = "f64", units = { Qo = "Hq*D", Ko = "Hk*D" },
    plan = ([[
assert(P >= 8192, "pos is drawn in [0, 8192): the cache needs P >= 8192 rows")
local tokens = nsample > 0 and nsample or T
return { launches = { { kernel = "rope_partial_ref", grid = { tokens, 1, 1 }, block = { 128, 1, 1 },
  args = { buffer("pos"), buffer("Q"), buffer("K"), buffer("cos_sin"), buffer("positions"), u64(nsample),
           buffer("Qo"), buffer("Ko"), u32(Hq), u32(Hk), u32(D), u32(R), u32(%d) } } } }
]]):format(gptj),
  }

  -- No library in klab has a rotary embedding (a cuDNN pointwise graph
  -- cannot gather cache rows by position): the task ships a kernel
  -- (baseline.cu), a block per token with 16-byte accesses.
  env.baseline = {
    source = "baseline.cu", name = "block-per-token partial RoPE",
    plan = ([[
return { launches = { { kernel = "rope_partial_baseline", grid = { T, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("pos"), buffer("Q"), buffer("K"), buffer("cos_sin"), buffer("Qo"), buffer("Ko"),
           u32(Hq), u32(Hk), u32(D), u32(R), u32(%d) } } } }
]]):format(gptj),
  }

  -- Two products and a sum per rotated element (a convention; copies count 0).
  env.flops = function(d) return 3 * d.T * (d.Hq + d.Hk) * d.R end
  -- Bytes: Q and K read, Qo and Ko written, the positions, and at most one
  -- cache row per token (a decode batch reads a few rows of a large cache,
  -- so the whole cache would put the physical floor above what it costs).
  env.bytes = function(d) return 4 * d.T * (d.Hq + d.Hk) * d.D + 8 * d.T + 4 * math.min(d.T, d.P) * d.R end
  env.precision = "f32"
  env.targets = {}
  env.plan = ([[
-- Default plan: one block of 128 threads per token.
return { launches = { { kernel = "rope_%s", grid = { T, 1, 1 }, block = { 128, 1, 1 }, shared = 0,
  args = { buffer("pos"), buffer("Q"), buffer("K"), buffer("cos_sin"), buffer("Qo"), buffer("Ko"),
           u32(T), u32(Hq), u32(Hk), u32(D), u32(R) } } } }
]]):format(style)
end

return F
