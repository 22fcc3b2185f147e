-- What the two block-scaled fp8 GEMM tasks share (gemm_fp8_1d2d.lua,
-- gemm_fp8_1d1d.lua): DeepGEMM's fp8_gemm_nt (PTXBench's
-- fp8-gemm-nt-problems): C = A·Bᵀ with A[M, K] and B[N, K] in e4m3
-- (K-major, "NT"), a scale per row of A per 128 values of K, and a scale
-- per 128x128 block of B (1D2D, DeepSeek-V3's forward recipe) or per row of
-- B per 128 of K (1D1D); fp32 accumulation, bf16 C[M, N].
local F = {}

local B_SCALES = {
  [1] = { shape = { "cdiv(N, 128)", "K/128" }, text = [[
sfb is fp32 [ceil(N/128), K/128]: one scale per 128x128 block of B, sfb[n/128, k/128]
(1D2D, DeepSeek-V3's recipe)]], index = "sfb[n/128, k/128]" },
  [0] = { shape = { "N", "K/128" }, text = [[
sfb is fp32 [N, K/128]: one scale per row of B per 128 values of K, sfb[n, k/128]
(1D1D)]], index = "sfb[n, k/128]" },
}

-- Sets every field of the task in env. b2d: 1 for 1D2D, 0 for 1D1D.
function F.define(env, name, b2d, variants)
  local bs = B_SCALES[b2d]
  env.name = name
  env.family = "serving"
  env.kernel = name
  env.tags = { "serving", "gemm", "fp8", "blockscale" }
  env.description = ([[
Write a CUDA kernel named `%s`: a block-scaled fp8 GEMM.
A is fp8 e4m3 [M, K] and B fp8 e4m3 [N, K] (row-major, K contiguous;
__nv_fp8_e4m3 bit patterns, one byte each); K is a multiple of 128. sfa is
fp32 [M, K/128]: one scale per row of A per 128 values of K, sfa[m, k/128].
%s. All row-major.
  C[m, n] = sum over k of A[m, k] * sfa[m, k/128] * B[n, k] * %s,
accumulated in fp32 (at least the sum of each 128 values of K, then scaled
and added), written as bf16 C [M, N] (round to nearest even). Inputs must
not be modified. Here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const unsigned char *A, const unsigned char *B,
      const float *sfa, const float *sfb, __nv_bfloat16 *C, unsigned M, unsigned N, unsigned K)
launched with a grid of (ceil(N/16), ceil(M/16), 1) blocks of 16x16 threads
(a thread per element of C) and no dynamic shared memory. Send your own plan
to change any of this (tensor maps, clusters, dynamic shared memory).]]):format(name, bs.text, bs.index, name)

  env.dims = { "M", "N", "K" }
  env.variants = variants
  env.buffers = {
    A = { role = "input", dtype = "fp8e4m3", shape = { "M", "K" } },
    B = { role = "input", dtype = "fp8e4m3", shape = { "N", "K" } },
    sfa = { role = "input", dtype = "f32", shape = { "M", "K/128" } },
    sfb = { role = "input", dtype = "f32", shape = bs.shape },
    C = { role = "output", dtype = "bf16", shape = { "M", "N" } },
  }

  -- A and B N(0, 1) rounded to e4m3; the scales uniform on [0.25, 2], a
  -- different one for every block, so a kernel that ignores them, reads one
  -- for all of K or takes the wrong block is off on most of C.
  env.inputs = {
    A = { dist = "normal", mean = 0, std = 1 },
    B = { dist = "normal", mean = 0, std = 1 },
    sfa = { dist = "uniform", lo = 0.25, hi = 2 },
    sfb = { dist = "uniform", lo = 0.25, hi = 2 },
  }

  -- Then PTXBench's spiky mix on A and B (saturating e4m3 at 448), and
  -- scales spread over [0.01, 4]. No scaled entries: a scale would multiply
  -- the fp8 operands and the block scales alike.
  local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
  env.trials = 2
  env.distributions = {
    { name = "randn" },
    { name = "spiky", inputs = { A = SPIKY, B = SPIKY } },
    { name = "wide_scales", inputs = { sfa = { dist = "uniform", lo = 0.01, hi = 4 },
                                      sfb = { dist = "uniform", lo = 0.01, hi = 4 } } },
  }

  -- As gemm_fp8e4m3 (tasks/gemm/fp8.lua says why): the e4m3 products are
  -- exact in fp32, so the budget is the accumulation (Hopper's fp8 tensor
  -- cores keep fewer bits than fp32 unless the partial sums are promoted,
  -- as the recipe does every 128 values of K) and the bf16 output.
  env.tolerance = { bf16 = { atol = 5e-2, rtol = 2e-2, matched = 1.0 } }

  -- The reference (reference.cu): fp64 sums of the scaled values (the
  -- prelude's GEMM core), a unit an element of C.
  env.reference = {
    source = "reference.cu", accumulate = "f64", units = { C = 1 },
    plan = ([[
if nsample > 0 then
  return { launches = { { kernel = "gemm_bs_ref_units", grid = { cdiv(nsample * 32, 256), 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("A"), buffer("B"), buffer("sfa"), buffer("sfb"), buffer("positions"), u64(nsample), buffer("C"),
             u32(N), u32(K), u32(%d) } } } }
end
return { launches = { { kernel = "gemm_bs_ref", grid = { cdiv(N, 64), cdiv(M, 64), 1 }, block = { 16, 16, 1 },
  args = { buffer("A"), buffer("B"), buffer("sfa"), buffer("sfb"), buffer("C"), u32(M), u32(N), u32(K), u32(%d) } } } }
]]):format(b2d, b2d),
  }

  -- klab's cuBLASLt description has no block-scale modes (cuBLASLt's
  -- VEC128 and BLK128x128 scales): the task ships a kernel (baseline.cu), a
  -- plain SIMT tile kernel, far from the tensor floor.
  env.baseline = {
    source = "baseline.cu", name = "SIMT block-scaled fp8 GEMM",
    plan = ([[
return { launches = { { kernel = "gemm_bs_baseline", grid = { cdiv(N, 64), cdiv(M, 64), 1 }, block = { 256, 1, 1 },
  args = { buffer("A"), buffer("B"), buffer("sfa"), buffer("sfb"), buffer("C"), u32(M), u32(N), u32(K), u32(%d) } } } }
]]):format(b2d),
    floor_note = "the shipped kernel runs on the SIMT pipes, not the fp8 tensor cores; a wgmma kernel "
      .. "(or cuBLASLt's block-scaled matmul, once klab can describe it) is owed; not measured on a GPU yet",
  }

  env.flops = function(d) return 2 * d.M * d.N * d.K end
  env.precision = "fp8e4m3"
  env.tensor_type = "fp8"
  env.work = 0.9
  env.targets = {
    sm_90a = { "wgmma", "tma" },
    sm_100a = { "tcgen05.mma", "tcgen05.tmem", "tma" },
  }
  env.plan = ([[
-- Default plan: a thread per element of C.
return { launches = { { kernel = "%s", grid = { cdiv(N, 16), cdiv(M, 16), 1 }, block = { 16, 16, 1 },
  shared = 0, args = { buffer("A"), buffer("B"), buffer("sfa"), buffer("sfb"), buffer("C"), u32(M), u32(N), u32(K) } } } }
]]):format(name)
end

return F
