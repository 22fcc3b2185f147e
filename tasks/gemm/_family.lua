-- What every GEMM task file shares: C = A·Bᵀ with A[M,K], B[N,K], C[M,N],
-- row-major. Task files take it with `local gemm = include "_family.lua"`.
local F = {}

F.dims = { "M", "N", "K" }

-- The PTXBench GEMM (gemm_n7168_k5120, M=8192, "captured from Qwen3 14B
-- qkv_proj") plus shapes that stress other paths: large square,
-- tall-skinny, small M (decode-like) and odd sizes (not multiples of 16/64).
F.variants = {
  { M = 8192, N = 7168, K = 5120, tags = { "ptxbench" } },
  { M = 4096, N = 4096, K = 4096, tags = { "square" } },
  { M = 8192, N = 8192, K = 8192, tags = { "square" } },
  { M = 65536, N = 256, K = 1024, tags = { "tall_skinny" } },
  { M = 16384, N = 128, K = 7168, tags = { "tall_skinny" } },
  { M = 1, N = 7168, K = 5120, tags = { "small" } },
  { M = 16, N = 7168, K = 5120, tags = { "small" } },
  { M = 128, N = 4096, K = 4096, tags = { "small" } },
  { M = 8191, N = 7169, K = 5120, tags = { "odd" } },
  { M = 1000, N = 1000, K = 1000, tags = { "odd" } },
  { M = 4097, N = 4095, K = 4099, tags = { "odd" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}

F.inputs = {
  A = { dist = "normal", mean = 0, std = 1 },
  B = { dist = "normal", mean = 0, std = 1 },
}

-- KernelBench-Verified's hidden suite (x1, x3, x0.01, x-1 on float inputs)
-- plus PTXBench's spiky mix N(0,1) + N(0,100)·Bern(0.001) (variance 100,
-- so spike_std = 10). C scales with the product of the input scales, and so
-- does every accumulation error, so atol is scaled by scale^2 (tol_scale);
-- rtol needs no scaling.
F.trials = 3
F.distributions = {
  { name = "randn" },
  { name = "x3", scale = 3, tol_scale = 9 },
  { name = "x0.01", scale = 0.01, tol_scale = 1e-4 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { A = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 },
                               B = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
}

-- The trusted reference (reference.cu): C in fp32 from fp64 sums of the
-- very values the kernel sees (inputs as stored, scales as stored). A unit is
-- one element of C; a timed run's check recomputes 8192 of them.
local REFERENCE_PLAN = [[
-- The reference: all of C (nsample == 0) or the units listed in positions.
local DT = { f32 = 0, f16 = 1, bf16 = 2, fp8e4m3 = 3, fp8e5m2 = 4 }
local da, db = DT[buffers.A.dtype], DT[buffers.B.dtype]
local sa, sb = %s, %s
if nsample == 0 then
  return { launches = { { kernel = "gemm_ref", grid = { cdiv(N, 64), cdiv(M, 64), 1 }, block = { 16, 16, 1 },
    args = { buffer("A"), i32(da), buffer("B"), i32(db), sa, sb, buffer("C"), u32(M), u32(N), u32(K) } } } }
end
return { launches = { { kernel = "gemm_ref_units", grid = { cdiv(nsample, 4), 1, 1 }, block = { 128, 1, 1 },
  args = { buffer("A"), i32(da), buffer("B"), i32(db), sa, sb, buffer("positions"), u64(nsample), buffer("C"),
           u32(N), u32(K) } } } }
]]

function F.reference(scaled)
  local sa = scaled and 'buffer("scale_a")' or "u64(0)"
  local sb = scaled and 'buffer("scale_b")' or "u64(0)"
  return { source = "reference.cu", accumulate = "f64", units = { C = 1 }, plan = REFERENCE_PLAN:format(sa, sb) }
end

-- The library baseline: cuBLASLt's matmul on the same operands (C = A·Bᵀ,
-- row-major), the best of its heuristic's algorithms; modes name the compute
-- types timed (fp32 tasks: strict FP32 first, then TF32 beside it).
function F.baseline(modes, extra)
  local b = { lib = "cublaslt", op = "matmul", layout = "nt", a = "A", b = "B", c = "C", modes = modes or { "default" } }
  for k, v in pairs(extra or {}) do b[k] = v end
  return b
end

F.flops = function(d) return 2 * d.M * d.N * d.K end

-- The work rule: a GEMM kernel must execute at least 90% of 2*M*N*K as
-- arithmetic (tensor cores or SIMT pipes); less means it skipped work.
F.work = 0.9

-- Tensor-core targets for the types tensor cores take.
F.targets = {
  sm_90a = { "wgmma", "tma" },
  sm_100a = { "tcgen05.mma", "tcgen05.tmem", "tma" },
}

-- The text for a model. what: the types in words; ctype: the C element
-- type of A, B and C in the default signature.
function F.describe(what, ctype)
  return ([[
Write a CUDA kernel named `gemm` that computes C = A·Bᵀ for row-major matrices
A[M,K] and B[N,K] %s. Here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void gemm(const %s *A, const %s *B, %s *C,
                                  unsigned M, unsigned N, unsigned K)
launched with a grid of (ceil(N/128), ceil(M/128), 1) blocks of 256 threads
and no dynamic shared memory: block (x, y) owns the 128x128 tile of C at rows
128*y and columns 128*x. Send your own plan to change any of this (tensor
maps, clusters, dynamic shared memory, several launches).]]):format(what, ctype, ctype, ctype)
end

-- The default plan: one launch of `gemm`, 256 threads per 128x128 tile of C;
-- extra arguments (fp8's scales) go between C and the dimensions.
function F.plan(extra_args)
  return ([[
-- Default plan: one launch of `gemm`, a block of 256 threads per 128x128 tile of C.
local M, N, K = dims.M, dims.N, dims.K
return {
  launches = {
    { kernel = "gemm",
      grid = { (N + 127) // 128, (M + 127) // 128, 1 },
      block = { 256, 1, 1 },
      shared = 0,
      args = { { buffer = "A" }, { buffer = "B" }, { buffer = "C" },%s
               { u32 = M }, { u32 = N }, { u32 = K } } },
  },
}
]]):format(extra_args or "")
end

function F.operands(in_dtype, out_dtype)
  return {
    A = { role = "input", dtype = in_dtype, shape = { "M", "K" } },
    B = { role = "input", dtype = in_dtype, shape = { "N", "K" } },
    C = { role = "output", dtype = out_dtype, shape = { "M", "N" } },
  }
end

-- Sets the fields of a plain GEMM task in env (the task file's _ENV):
-- every field but the tolerance, which each task file states with its
-- reasons. t = {name =, dtype = "bf16"|"f16"|"f32" (A, B and C), words =
-- (what the description says of the types), ctype = (C's type in the
-- kernel's signature), modes = (the baseline's, default the library's),
-- targets = (default the family's)}.
local SIZE = { bf16 = 2, f16 = 2, f32 = 4 }
function F.define(env, t)
  local size = SIZE[t.dtype]
  env.name, env.family, env.kernel = t.name, "gemm", "gemm"
  env.tags = { "gemm", t.dtype }
  env.description = F.describe(t.words, t.ctype)
  env.dims, env.variants, env.buffers = F.dims, F.variants, F.operands(t.dtype, t.dtype)
  env.inputs, env.trials, env.distributions = F.inputs, F.trials, F.distributions
  env.reference, env.baseline = F.reference(), F.baseline(t.modes)
  env.flops, env.work = F.flops, F.work
  env.bytes = function(d) return size * (d.M * d.K + d.N * d.K + d.M * d.N) end
  env.targets = t.targets or F.targets
  env.plan = F.plan()
end

return F
