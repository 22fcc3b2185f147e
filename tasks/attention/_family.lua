-- What the attention task files share (tasks/attention/*.lua include it).
--
-- Scaled dot-product attention, bf16 in and out, fp32 accumulation, with
-- Q, K, V, O, dO, dQ, dK, dV in [B, H, S, D] row-major (BHSD: D contiguous)
-- and the log-sum-exp LSE in fp32 [B, H, S] (natural log). Scores are
-- S_ij = q_i . k_j / sqrt(D). The causal mask is top-left aligned: key j is
-- visible to query i iff j <= i. docs/attention.md explains every choice.
local F = {}

-- The primary shape (PTXBench's mha_with_lse_d128 / mha_bwd_d128), the
-- other head dimensions, a short and a long sequence. The long one keeps
-- the primary's 16384 tokens per batch (B*S), as FlashAttention's
-- benchmarks do, so that its reference and its memory stay within reach.
local SHAPES = {
  { B = 4, H = 48, S = 4096, D = 128, tags = { "primary" } },
  { B = 4, H = 48, S = 4096, D = 64, tags = { "head_dim" } },
  { B = 4, H = 48, S = 4096, D = 96, tags = { "head_dim" } },
  { B = 4, H = 48, S = 1024, D = 128, tags = { "short" } },
  { B = 1, H = 48, S = 16384, D = 128, tags = { "long" } },
}

-- Variants named BxHxSxD; causal files carry the dimension causal = 1,
-- which is how a launch plan tells the two apart (dims.causal).
function F.variants(causal)
  local out = {}
  for _, s in ipairs(SHAPES) do
    local v = { B = s.B, H = s.H, S = s.S, D = s.D, tags = s.tags,
                name = string.format("%dx%dx%dx%d", s.B, s.H, s.S, s.D) }
    if causal then v.causal = 1 end
    out[#out + 1] = v
  end
  return out
end

function F.dims(causal)
  if causal then return { "B", "H", "S", "D", "causal" } end
  return { "B", "H", "S", "D" }
end

-- FLOPs by the usual convention: two matmuls of 2*S*S*D per (batch, head),
-- halved under the causal mask; the backward counts 2.5 forwards (five
-- matmuls instead of two).
function F.fwd_flops(causal)
  return function(d)
    local f = 4 * d.B * d.H * d.S * d.S * d.D
    return causal and f // 2 or f
  end
end

function F.bwd_flops(causal)
  local fwd = F.fwd_flops(causal)
  return function(d) return fwd(d) * 5 // 2 end
end

local BHSD = { "B", "H", "S", "D" }
local BHS = { "B", "H", "S" }

F.fwd_buffers = {
  Q = { role = "input", dtype = "bf16", shape = BHSD },
  K = { role = "input", dtype = "bf16", shape = BHSD },
  V = { role = "input", dtype = "bf16", shape = BHSD },
  O = { role = "output", dtype = "bf16", shape = BHSD },
  LSE = { role = "output", dtype = "f32", shape = BHS },
}

-- O and LSE are inputs computed by klab's reference forward on the same
-- Q, K, V (their distributions below are overwritten). Dsum and dQacc are
-- scratch a candidate may use (poisoned before every run): row sums of
-- dO*O, and an fp32 dQ accumulator.
F.bwd_buffers = {
  Q = { role = "input", dtype = "bf16", shape = BHSD },
  K = { role = "input", dtype = "bf16", shape = BHSD },
  V = { role = "input", dtype = "bf16", shape = BHSD },
  O = { role = "input", dtype = "bf16", shape = BHSD },
  dO = { role = "input", dtype = "bf16", shape = BHSD },
  LSE = { role = "input", dtype = "f32", shape = BHS },
  dQ = { role = "output", dtype = "bf16", shape = BHSD },
  dK = { role = "output", dtype = "bf16", shape = BHSD },
  dV = { role = "output", dtype = "bf16", shape = BHSD },
  Dsum = { role = "scratch", dtype = "f32", shape = BHS },
  dQacc = { role = "scratch", dtype = "f32", shape = BHSD },
}

local N01 = { dist = "normal", mean = 0, std = 1 }
F.fwd_inputs = { Q = N01, K = N01, V = N01 }
F.bwd_inputs = { Q = N01, K = N01, V = N01, O = N01, dO = N01, LSE = N01 }

-- Two seeds of N(0,1), then PTXBench's spiky mix on Q and K (peaked score
-- rows); four input sets in all.
F.trials = 2
local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
F.distributions = {
  { name = "randn" },
  { name = "spiky_qk", inputs = { Q = SPIKY, K = SPIKY } },
}

-- bf16 outputs: PTXBench's rule (atol = rtol = 1e-2, every element). LSE
-- is fp32 and feeds the backward's exp(S - LSE): 1e-3 keeps P within 0.1%.
F.fwd_tolerance = {
  bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 },
  f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
}
-- The gradients are looser than the forward: dS = P∘(dP − D) is formed and
-- rounded to bf16 before the dQ and dK matmuls, and P to bf16 before dV, in
-- every fast backward (cuDNN's included). On the H200, cuDNN 9.14's own
-- backward was up to 0.019 from klab's fp32 reference (dV, causal,
-- 4x48x1024x128) under 1e-2 on O(1) gradients, which would fail the library
-- itself. rtol = 2e-2 admits that; atol stays 1e-2, because long
-- non-causal rows have gradients near 1/sqrt(S) = 0.016 and a looser atol
-- would let a kernel that writes zeros there pass. Instead one element in
-- ten thousand may lie outside (matched = 0.9999): cuDNN's outliers on
-- 4x48x1024x128 causal were near-zero gradients 0.012 to 0.019 off, while
-- an unwritten, zeroed or wrong gradient misses on most elements.
F.bwd_tolerance = {
  bf16 = { atol = 1e-2, rtol = 2e-2, matched = 0.9999 },
}

-- The trusted reference (reference.cu): fp32 throughout, precise exp/log,
-- no tensor cores or atomics. A unit is one row (b, h, s) of every output: D
-- elements of O, dQ, dK, dV and one of LSE; a timed run's check recomputes
-- 256 rows (each costs S*D work, so far fewer than a GEMM's 8192 elements).
local REF_COMMON = [[
assert(D % 4 == 0 and D <= 128, "the reference attention kernels need D % 4 == 0 and D <= 128")
local BH, L, PL = B * H, D + 4, 68
local KP = L > PL and L or PL   -- the forward's K tile, which P replaces
local causal = dims.causal or 0
local scale = 1 / math.sqrt(D)
]]

F.fwd_reference = {
  source = "reference.cu", accumulate = "f32", units = { O = "D", LSE = 1 }, sample = 256,
  plan = REF_COMMON .. [[
if nsample == 0 then
  return { launches = { { kernel = "attn_ref_fwd", grid = { cdiv(S, 64), BH, 1 }, block = { 256, 1, 1 },
    shared = 4 * (2 * 64 * L + 64 * KP),
    args = { buffer("Q"), buffer("K"), buffer("V"), buffer("O"), u64(0), buffer("LSE"),
             u32(S), u32(D), f32(scale), u32(causal) } } } }
end
return { launches = { { kernel = "attn_ref_fwd_rows", grid = { nsample, 1, 1 }, block = { 128, 1, 1 },
  shared = 4 * (S + D + 4),
  args = { buffer("Q"), buffer("K"), buffer("V"), buffer("positions"), u64(nsample), buffer("O"), buffer("LSE"),
           u32(S), u32(D), f32(scale), u32(causal) } } } }
]],
}

-- The backward's O and LSE inputs come from the reference forward on the same
-- Q, K, V (derive), so every input set is self-consistent; Dsum =
-- rowsum(dO * O) of the bf16 O a kernel sees goes to the reference's own
-- workspace.
F.bwd_reference = {
  source = "reference.cu", accumulate = "f32", units = { dQ = "D", dK = "D", dV = "D" }, sample = 256,
  derived = { "O", "LSE" },
  derive = REF_COMMON .. [[
return { launches = { { kernel = "attn_ref_fwd", grid = { cdiv(S, 64), BH, 1 }, block = { 256, 1, 1 },
  shared = 4 * (2 * 64 * L + 64 * KP),
  args = { buffer("Q"), buffer("K"), buffer("V"), u64(0), buffer("O"), buffer("LSE"),
           u32(S), u32(D), f32(scale), u32(causal) } } } }
]],
  plan = REF_COMMON .. [[
local rows = BH * S
local ws = { dsum = { bytes = 4 * rows } }
local prep = { kernel = "attn_ref_bwd_prep", grid = { cdiv(rows, 8), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("O"), buffer("dO"), workspace("dsum"), u64(rows), u32(D) } }
if nsample == 0 then
  local g = { cdiv(S, 64), BH, 1 }
  return { workspace = ws, launches = { prep,
    { kernel = "attn_ref_bwd_dq", grid = g, block = { 256, 1, 1 }, shared = 4 * (4 * 64 * L + 64 * PL),
      args = { buffer("Q"), buffer("K"), buffer("V"), buffer("dO"), buffer("LSE"), workspace("dsum"), buffer("dQ"),
               u32(S), u32(D), f32(scale), u32(causal) } },
    { kernel = "attn_ref_bwd_dkdv", grid = g, block = { 256, 1, 1 }, shared = 4 * (4 * 64 * L + 2 * 64 * PL + 128),
      args = { buffer("Q"), buffer("K"), buffer("V"), buffer("dO"), buffer("LSE"), workspace("dsum"), buffer("dK"),
               buffer("dV"), u32(S), u32(D), f32(scale), u32(causal) } } } }
end
return { workspace = ws, launches = { prep,
  { kernel = "attn_ref_bwd_rows", grid = { nsample, 1, 1 }, block = { 128, 1, 1 }, shared = 4 * (2 * S + 3 * D),
    args = { buffer("Q"), buffer("K"), buffer("V"), buffer("dO"), buffer("LSE"), workspace("dsum"),
             buffer("positions"), u64(nsample), buffer("dQ"), buffer("dK"), buffer("dV"),
             u32(S), u32(D), f32(scale), u32(causal) } } } }
]],
}

F.targets = {
  sm_90a = { "wgmma", "tma" },
  sm_100a = { "tcgen05.mma", "tcgen05.tmem", "tma" },
}

local MASK_TEXT = {
  [false] = "No mask: every query attends to every key.",
  [true] = "Causal mask (top-left aligned): query i attends to keys j <= i only.",
}

function F.fwd_description(causal)
  return [[
Write a CUDA kernel named `attention_fwd`: scaled dot-product attention
forward with log-sum-exp, bf16 in and out, fp32 accumulation.
Q, K, V are bf16 [B, H, S, D] row-major (D contiguous), B=${B}, H=${H},
S=${S}, D=${D}. For each (batch, head) and query row i:
  s_ij = (q_i . k_j) / sqrt(D),  LSE_i = log(sum_j exp(s_ij))  (natural log),
  O_i = sum_j exp(s_ij - LSE_i) v_j.
]] .. MASK_TEXT[causal] .. [[

Write O as bf16 [B, H, S, D] (round to nearest even) and LSE as fp32 [B, H, S].
With the default launch plan the kernel is
  extern "C" __global__ void attention_fwd(const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
      const __nv_bfloat16 *V, __nv_bfloat16 *O, float *LSE, unsigned BH, unsigned S,
      unsigned D, float scale, unsigned causal)
launched with a grid of (ceil(S/64), B*H, 1) blocks of 128 threads and no
dynamic shared memory: block (x, y) owns query rows 64*x.. of (batch, head) y.
Send your own plan to change any of this (dims.causal is 1 for causal tasks).]]
end

function F.bwd_description(causal)
  return [[
Write the backward pass of scaled dot-product attention, bf16 in and out,
fp32 accumulation: kernels `attention_bwd_prep` and `attention_bwd`.
Inputs Q, K, V, O, dO are bf16 [B, H, S, D] row-major (D contiguous) and LSE
is fp32 [B, H, S], B=${B}, H=${H}, S=${S}, D=${D}; O and LSE are the forward's
results on the same Q, K, V: s_ij = (q_i . k_j) / sqrt(D),
P_ij = exp(s_ij - LSE_i), O = P V.
]] .. MASK_TEXT[causal] .. [[

Compute dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dO * O)),
dQ = dS K / sqrt(D), dK = dS^T Q / sqrt(D), written as bf16 [B, H, S, D].
Scratch buffers you may use (their contents are garbage on entry): Dsum, fp32
[B, H, S], and dQacc, fp32 [B, H, S, D]. With the default launch plan
  extern "C" __global__ void attention_bwd_prep(const __nv_bfloat16 *O, const __nv_bfloat16 *dO,
      float *Dsum, float *dQacc, unsigned BH, unsigned S, unsigned D)
runs first with a grid of (ceil(S/64), B*H, 1) blocks of 128 threads, then
  extern "C" __global__ void attention_bwd(const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
      const __nv_bfloat16 *V, const __nv_bfloat16 *O, const __nv_bfloat16 *dO, const float *LSE,
      __nv_bfloat16 *dQ, __nv_bfloat16 *dK, __nv_bfloat16 *dV, float *Dsum, float *dQacc, unsigned BH,
      unsigned S, unsigned D, float scale, unsigned causal)
with the same grid. Send your own plan to change any of this (dims.causal is
1 for causal tasks).]]
end

F.fwd_plan = [[
-- Default plan: one launch of attention_fwd, 128 threads per 64 query rows
-- of one (batch, head).
local causal = dims.causal or 0
return {
  launches = {
    { kernel = "attention_fwd",
      grid = { cdiv(S, 64), B * H, 1 }, block = { 128, 1, 1 }, shared = 0,
      args = { { buffer = "Q" }, { buffer = "K" }, { buffer = "V" }, { buffer = "O" }, { buffer = "LSE" },
               { u32 = B * H }, { u32 = S }, { u32 = D }, { f32 = 1 / math.sqrt(D) }, { u32 = causal } } },
  },
}
]]

F.bwd_plan = [[
-- Default plan: a preprocess pass (rowsum(dO * O) into Dsum, dQacc cleared),
-- then the main pass; 128 threads per 64 rows of one (batch, head).
local causal = dims.causal or 0
local grid = { cdiv(S, 64), B * H, 1 }
return {
  launches = {
    { kernel = "attention_bwd_prep", grid = grid, block = { 128, 1, 1 }, shared = 0,
      args = { { buffer = "O" }, { buffer = "dO" }, { buffer = "Dsum" }, { buffer = "dQacc" },
               { u32 = B * H }, { u32 = S }, { u32 = D } } },
    { kernel = "attention_bwd", grid = grid, block = { 128, 1, 1 }, shared = 0,
      args = { { buffer = "Q" }, { buffer = "K" }, { buffer = "V" }, { buffer = "O" }, { buffer = "dO" },
               { buffer = "LSE" }, { buffer = "dQ" }, { buffer = "dK" }, { buffer = "dV" },
               { buffer = "Dsum" }, { buffer = "dQacc" },
               { u32 = B * H }, { u32 = S }, { u32 = D }, { f32 = 1 / math.sqrt(D) }, { u32 = causal } } },
  },
}
]]

-- Sets every field of an attention task in env (the task file's _ENV).
-- t = {name =, pass = "fwd"|"bwd", causal = bool}; the baseline is cuDNN's
-- SDPA for the same pass and mask.
function F.define(env, t)
  local pass, causal = t.pass, t.causal
  env.name, env.family, env.kernel = t.name, "attention", "attention_" .. pass
  env.tags = { "attention", "bf16", pass }
  if causal then env.tags[4] = "causal" end
  env.description = F[pass .. "_description"](causal)
  env.dims, env.variants = F.dims(causal), F.variants(causal)
  env.buffers, env.inputs = F[pass .. "_buffers"], F[pass .. "_inputs"]
  env.trials, env.distributions = F.trials, F.distributions
  env.tolerance = F[pass .. "_tolerance"]
  env.reference = F[pass .. "_reference"]
  env.baseline = { lib = "cudnn", op = "sdpa_" .. pass, causal = causal, route = "auto" }
  env.flops = F[pass .. "_flops"](causal)
  env.targets = F.targets
  env.plan = F[pass .. "_plan"]
end

return F
