-- What the matmul task files share: matrix products that cuBLASLt has as
-- one call, C = act(A·Bᵀ + bias) with A[..., M, K], B[..., N, K] and
-- C[..., M, N] row-major (both operands K-major, as a linear layer's x·Wᵀ),
-- batched, as a matrix-vector product, tall and skinny, or with a bias and
-- an activation fused. Task files take it with `local mm = include "_family.lua"`.
local F = {}

-- KernelBench-Verified's hidden suite (x1, x3, x0.01, x-1 on every float
-- input, the bias included) and PTXBench's spiky mix N(0,1) + N(0,100)·Bern(0.001)
-- on both operands. C scales with the product of the two operand scales, and
-- so does every accumulation error: atol is scaled by scale^2 (tol_scale);
-- rtol needs no scaling. (A bias scaled by s moves C by s, less than s^2
-- for x3 and more for x0.01, but it is added once, exactly, in fp32: its
-- error is one rounding, far below either atol.)
F.trials = 3

function F.distributions(a, b)
  local spiky = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
  return {
    { name = "randn" },
    { name = "x3", scale = 3, tol_scale = 9 },
    { name = "x0.01", scale = 0.01, tol_scale = 1e-4 },
    { name = "neg", scale = -1 },
    { name = "spiky", inputs = { [a] = spiky, [b] = spiky } },
  }
end

-- Every float input N(0, 1), drawn in fp32/fp64 and rounded to the buffer's
-- dtype; the reference sees exactly the rounded values.
function F.inputs(names)
  local t = {}
  for _, n in ipairs(names) do t[n] = { dist = "normal", mean = 0, std = 1 } end
  return t
end

-- bf16 outputs, as the GEMM tasks: bf16 has 8 significant bits, so one
-- ulp is at most 2^-7 ≈ 7.8e-3 of the value and a result that an fp32 sum
-- in another order pushes across a rounding boundary still passes
-- rtol = 1e-2. Near zero rtol cannot help; atol = 1e-2 covers fp32
-- accumulation-order differences (about u·K/√6 ≈ 1e-4 for a sequential sum
-- at K=4096 on N(0,1) inputs) with a wide margin, while a kernel that
-- accumulates in bf16 misses by whole units. Every element must match.
F.bf16_tolerance = { bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 } }

-- A fused bias and activation may round twice: the accumulator to bf16
-- before the epilogue, then the epilogue's result. Two ulps are at most
-- 2^-6 ≈ 1.6e-2 of the value, so rtol is that; a kernel that accumulates
-- in bf16 still misses by whole units, and one that drops the bias by the
-- bias.
F.linear_tolerance = { bf16 = { atol = 1e-2, rtol = 1.6e-2, matched = 1.0 } }

-- cuBLASLt's GELU is coarser than its sums. On an H200 (CUDA 13.0) the
-- heuristic's one algorithm with GELU_BIAS at 123x457x789 (algorithm id 16,
-- also chosen at 123x457x64 and 1024x1024x789) gave the once-rounded
-- reference's bf16 value for 79% of the outputs and was more than two ulps
-- off for 6%, while the same algorithm with the bias alone matched 99.99%:
-- the error is its GELU's. Where GELU's value lies between 0.25 and 1.2,
-- that put outputs up to 0.0208 off (4.4% of the value), beyond atol 1e-2
-- and rtol 1.6e-2: the baseline failed its own task's check on 23 of 140
-- seeded input sets at 123x457x789. atol is 3e-2, the largest such error
-- (over those sets and 46 of the two other shapes) with half as much
-- again; no output of them was beyond it. Past |y| = 3e-2 / 1.6e-2 ≈ 1.9
-- rtol decides, as in the linear tolerance, so a kernel that accumulates
-- in bf16 or drops the bias still fails; GELU's erf form (4.7e-4 from the
-- tanh form) passed before and still does.
F.linear_gelu_tolerance = { bf16 = { atol = 3e-2, rtol = 1.6e-2, matched = 1.0 } }

-- The trusted reference (reference.cu): C in fp32 from fp64 sums of the
-- very values the kernel sees, the bias added and the activation applied in
-- fp64. A unit is one element of C (u = (b*M + m)*N + n); a timed run's
-- check recomputes 8192 of them. o names the operand buffers (a, b, c,
-- bias or nil), the activation (act: "none", "relu", "gelu") and the
-- dimension expressions of the product as the plan computes them (batch,
-- M, N, K: Lua expressions over the task's dimensions, e.g. "1" or "BATCH"),
-- and the operands' layouts (a_layout "mk" or "km", b_layout "nk" or "kn",
-- as klab.blas names them; default mk and nk, C = A·Bᵀ).
local REFERENCE_PLAN = [[
local DT = { f32 = 0, f16 = 1, bf16 = 2 }
local ACT = { none = 0, relu = 1, gelu = 2 }
local a, b, c, bias, act = %q, %q, %q, %s, ACT[%q]
local batch, m, n, k = %s, %s, %s, %s
local a_km, b_kn = %d, %d
local da, db = DT[buffers[a].dtype], DT[buffers[b].dtype]
local bias_arg, dbias = u64(0), 0
if bias then bias_arg, dbias = buffer(bias), DT[buffers[bias].dtype] end
if nsample == 0 then
  return { launches = { { kernel = "mm_ref", grid = { cdiv(n, 64), cdiv(m, 64), batch }, block = { 16, 16, 1 },
    args = { buffer(a), i32(da), buffer(b), i32(db), bias_arg, i32(dbias), i32(act), buffer(c), i32(0),
             u32(m), u32(n), u32(k), i32(a_km), i32(b_kn) } } } }
end
return { launches = { { kernel = "mm_ref_units", grid = { cdiv(nsample, 4), 1, 1 }, block = { 128, 1, 1 },
  args = { buffer(a), i32(da), buffer(b), i32(db), bias_arg, i32(dbias), i32(act), buffer("positions"),
           u64(nsample), buffer(c), i32(0), u32(m), u32(n), u32(k), i32(a_km), i32(b_kn) } } } }
]]

function F.reference(o)
  local bias = o.bias and string.format("%q", o.bias) or "nil"
  return { source = "reference.cu", accumulate = "f64", units = { [o.c] = 1 },
    plan = REFERENCE_PLAN:format(o.a, o.b, o.c, bias, o.act or "none", o.batch or "1", o.M or "M", o.N or "N",
      o.K or "K", o.a_layout == "km" and 1 or 0, o.b_layout == "kn" and 1 or 0) }
end

-- The library baseline: cuBLASLt's matmul on the same operands, the best of
-- its heuristic's algorithms. spec is klab.blas.gemm_plan's description per
-- variant (batch, epilogue, bias; M, N, K default to the task's); modes
-- name the compute types timed (fp32 tasks: strict FP32 first, then TF32
-- beside it).
function F.baseline(o)
  return { lib = "cublaslt", op = "matmul", a = o.a or "A", b = o.b or "B", c = o.c or "C",
    modes = o.modes or { "default" }, spec = o.spec }
end

-- The work rule: every FLOP of these tasks is a multiply-add of the
-- product, so a kernel must execute at least 90% of them as arithmetic
-- (tensor cores or SIMT pipes); less means it skipped work.
F.work = 0.9

F.flops = function(d) return 2 * (d.BATCH or 1) * d.M * d.N * d.K end

-- Tensor-core targets, as for the bf16 GEMM.
F.targets = {
  sm_90a = { "wgmma", "tma" },
  sm_100a = { "tcgen05.mma", "tcgen05.tmem", "tma" },
}

-- The default plan of a GEMM-like kernel: one launch, a block of 256
-- threads per 128x128 tile of C, grid.z over the batch. args: the
-- argument list as Lua source.
function F.tile_plan(kernel, batch, args)
  return ([[
-- Default plan: one launch of `%s`, a block of 256 threads per 128x128 tile of C.
return {
  launches = {
    { kernel = "%s",
      grid = { cdiv(N, 128), cdiv(M, 128), %s },
      block = { 256, 1, 1 },
      shared = 0,
      args = { %s } },
  },
}
]]):format(kernel, kernel, batch, args)
end

-- The sentence every description ends with.
F.own_plan = "Send your own plan to change any of this (tensor maps, clusters,\n" ..
  "dynamic shared memory, several launches)."

-- Matrix-vector products (y = A·x, the GEMV form of C = A·Bᵀ with N = 1):
-- what the bf16 and fp32 task files share.
F.gemv_dims = { "M", "K" }

function F.gemv_buffers(dtype)
  return {
    A = { role = "input", dtype = dtype, shape = { "M", "K" } },
    x = { role = "input", dtype = dtype, shape = { "K" } },
    y = { role = "output", dtype = dtype, shape = { "M" } },
  }
end

-- x is cuBLASLt's B with N = 1 (a [1, K] matrix), y its C ([M, 1]).
F.gemv_reference = F.reference { a = "A", b = "x", c = "y", N = "1" }
function F.gemv_baseline(modes)
  return F.baseline { a = "A", b = "x", c = "y", modes = modes,
    spec = function(d) return { M = d.M, N = 1, K = d.K } end }
end
F.gemv_flops = function(d) return 2 * d.M * d.K end

function F.gemv_description(what, ctype)
  return ([[
Write a CUDA kernel named `gemv` that computes the matrix-vector product
y = A·x (y[m] = sum_k A[m,k]·x[k]) for a row-major matrix A[M,K] and vectors
x[K], y[M] %s. Here M=${M}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void gemv(const %s *A, const %s *x, %s *y,
                                  unsigned M, unsigned K)
launched with a grid of ceil(M/8) blocks of 256 threads and no dynamic
shared memory: block i owns rows 8*i .. 8*i+7 of y. Send your own plan to
change any of this.]]):format(what, ctype, ctype, ctype)
end

F.gemv_plan = [[
-- Default plan: one launch of `gemv`, a block of 256 threads per 8 rows of A.
return { launches = { { kernel = "gemv", grid = { cdiv(M, 8), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("A"), buffer("x"), buffer("y"), u32(M), u32(K) } } } }
]]

-- Linear layers with a fused epilogue (bias and activation): a square-ish
-- layer and Llama-3-8B's MLP up-projection (275 and 481 GFLOP, half a
-- millisecond and more for cuBLASLt on an H200), then a small odd shape.
F.linear_variants = {
  { M = 8192, N = 4096, K = 4096, tags = { "main" } },
  { M = 4096, N = 14336, K = 4096, tags = { "main", "mlp" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}

-- The bias is bf16 like C (cuBLASLt's default bias type for a bf16 C).
F.linear_buffers = {
  A = { role = "input", dtype = "bf16", shape = { "M", "K" } },
  B = { role = "input", dtype = "bf16", shape = { "N", "K" } },
  bias = { role = "input", dtype = "bf16", shape = { "N" } },
  C = { role = "output", dtype = "bf16", shape = { "M", "N" } },
}

-- The linear layers' text for a model. formula: C's elements in words and
-- symbols, the bias and the activation included.
function F.linear_description(kernel, formula)
  return ([[
Write a CUDA kernel named `%s` that computes %s
for row-major A[M,K], B[N,K] and a bias vector bias[N] in bf16 (__nv_bfloat16
bit patterns), accumulating in fp32, adding the bias and applying the
activation in fp32, and writing C[M,N] in bf16 (round to nearest even).
Here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const __nv_bfloat16 *A, const __nv_bfloat16 *B,
      const __nv_bfloat16 *bias, __nv_bfloat16 *C, unsigned M, unsigned N, unsigned K)
launched with a grid of (ceil(N/128), ceil(M/128), 1) blocks of 256 threads
and no dynamic shared memory: block (x, y) owns the 128x128 tile of C at rows
128*y and columns 128*x.
]]):format(kernel, formula, kernel) .. F.own_plan
end

-- A linear layer's reference, baseline (cuBLASLt's <act>_bias epilogue)
-- and default plan.
function F.linear_reference(act)
  return F.reference { a = "A", b = "B", c = "C", bias = "bias", act = act }
end

function F.linear_baseline(act)
  return F.baseline { spec = function(d)
    return { M = d.M, N = d.N, K = d.K, epilogue = act .. "_bias", bias = "bias" }
  end }
end

function F.linear_plan(kernel)
  return F.tile_plan(kernel, "1", 'buffer("A"), buffer("B"), buffer("bias"), buffer("C"), u32(M), u32(N), u32(K)')
end

-- The description of a batched product (bmm.lua, bmm_nn.lua): what =
-- the products and their operands in words (the lines after the first),
-- ctype = the CUDA type of A, B and C.
function F.batched_description(kernel, what, ctype)
  return ([[
Write a CUDA kernel named `%s` that computes BATCH independent products
%s
Here BATCH=${BATCH}, M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const %s *A, const %s *B, %s *C,
      unsigned BATCH, unsigned M, unsigned N, unsigned K)
launched with a grid of (ceil(N/128), ceil(M/128), BATCH) blocks of 256
threads and no dynamic shared memory: block (x, y, z) owns the 128x128 tile of
C[z] at rows 128*y and columns 128*x.
]]):format(kernel, what, kernel, ctype, ctype, ctype) .. F.own_plan
end

-- ---- KernelBench's layouts ----------------------------------------------------

-- C = op(A)·op(B) in fp32 with the operands stored as KernelBench's
-- matmul problems store them (1, 2, 6 to 11 and 13: A·B; 16: Aᵀ·B; 18:
-- Aᵀ·Bᵀ; 17, A·Bᵀ, is gemm_f32). a and b: the layouts as klab.blas names
-- them.
F.LAYOUTS = {
  nn = { a = "mk", b = "kn", A = { "M", "K" }, B = { "K", "N" }, formula = "C = A·B: C[m,n] = sum_k A[m,k]·B[k,n]",
    decl = "A[M,K] and B[K,N]" },
  tn = { a = "km", b = "kn", A = { "K", "M" }, B = { "K", "N" }, formula = "C = Aᵀ·B: C[m,n] = sum_k A[k,m]·B[k,n]",
    decl = "A[K,M] and B[K,N]" },
  tt = { a = "km", b = "nk", A = { "K", "M" }, B = { "N", "K" }, formula = "C = Aᵀ·Bᵀ: C[m,n] = sum_k A[k,m]·B[n,k]",
    decl = "A[K,M] and B[N,K]" },
}

-- A square product at 4096 (strict FP32 near 3 ms on an H200), KernelBench's
-- current shape for problems 2, 16 and 18 (M = 2048, N = 4096, K = 8192),
-- and the small odd one. matmul_nn_f32 adds the shapes of its other problems.
F.layout_variants = {
  { M = 4096, N = 4096, K = 4096, tags = { "main" } },
  { M = 2048, N = 4096, K = 8192, tags = { "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}

-- What the fp32 products with KernelBench's operands share: A, B and C in
-- fp32 with the shapes and layouts given (o.A, o.B: shapes; o.a, o.b:
-- klab.blas layouts; o.M, o.N, o.K: the product's sizes as dimension
-- names), their inputs, the reference, cuBLASLt in strict FP32 and TF32
-- beside it, and the targets (as gemm_f32: tensor cores reach fp32 accuracy
-- only through split-TF32 schemes, so only TMA is a target).
local function fp32_product(env, o)
  env.buffers = {
    A = { role = "input", dtype = "f32", shape = o.A },
    B = { role = "input", dtype = "f32", shape = o.B },
    C = { role = "output", dtype = "f32", shape = { o.M, o.N } },
  }
  env.inputs, env.trials, env.distributions = F.inputs { "A", "B" }, F.trials, F.distributions("A", "B")
  env.reference = F.reference { a = "A", b = "B", c = "C", M = o.M, N = o.N, K = o.K, a_layout = o.a, b_layout = o.b }
  env.baseline = F.baseline { modes = { "fp32", "tf32" },
    spec = function(d) return { M = d[o.M], N = d[o.N], K = d[o.K], a_layout = o.a, b_layout = o.b } end }
  env.work = F.work
  env.targets = { sm_90a = { "tma" }, sm_100a = { "tma" } }
end

-- Sets every field of a layout task in env but its tolerance. t.layout:
-- "nn", "tn" or "tt"; the task is matmul_<layout>_f32.
function F.define_layout(env, t)
  local L = F.LAYOUTS[t.layout]
  local kernel = "matmul_" .. t.layout
  env.name, env.family, env.kernel = kernel .. "_f32", "matmul", kernel
  env.tags = { "matmul", "f32", "layout", t.layout }
  env.description = ([[
Write a CUDA kernel named `%s` that computes %s
for row-major %s in fp32, writing C[M,N] in fp32, as accurate as an
fp32 dot product (TF32 tensor cores alone are not). Here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const float *A, const float *B, float *C,
      unsigned M, unsigned N, unsigned K)
launched with a grid of (ceil(N/128), ceil(M/128), 1) blocks of 256 threads
and no dynamic shared memory: block (x, y) owns the 128x128 tile of C at rows
128*y.., columns 128*x... %s]]):format(kernel, L.formula, L.decl, kernel, F.own_plan)
  env.dims, env.variants = { "M", "N", "K" }, F.layout_variants
  fp32_product(env, { A = L.A, B = L.B, a = L.a, b = L.b, M = "M", N = "N", K = "K" })
  env.flops = F.flops
  env.plan = F.tile_plan(kernel, "1", 'buffer("A"), buffer("B"), buffer("C"), u32(M), u32(N), u32(K)')
end

-- ---- triangular products ------------------------------------------------------

-- C = A·B for square triangular A[N,N] and B[N,N] (both upper, or both
-- lower: KernelBench's problems 14 and 15), so C is triangular the same
-- way. The inputs are drawn whole and cut to their triangle by the
-- reference's derive step; the baseline is cuBLASLt's full product (what
-- PyTorch runs), which a candidate may beat by skipping the zeros.
local TRI_DERIVE = [[
local grid = { math.min(cdiv(N * N, 256), 65536), 1, 1 }
return { launches = {
  { kernel = "tri_mask", grid = grid, block = { 256, 1, 1 }, args = { buffer("A"), u32(N), i32(%d) } },
  { kernel = "tri_mask", grid = grid, block = { 256, 1, 1 }, args = { buffer("B"), u32(N), i32(%d) } } } }
]]

-- Sets every field of a triangular product in env but its tolerance.
-- t.upper: true for upper triangles.
function F.define_triangular(env, t)
  local which = t.upper and "upper" or "lower"
  local kernel = "matmul_" .. (t.upper and "triu" or "tril")
  env.name, env.family, env.kernel = kernel .. "_f32", "matmul", kernel
  env.tags = { "matmul", "f32", "triangular", which }
  env.description = ([[
Write a CUDA kernel named `%s` that computes C = A·B,
C[m,n] = sum_k A[m,k]·B[k,n], for row-major square matrices A[N,N] and
B[N,N] in fp32 that are both %s triangular (the entries %s the
diagonal are 0), writing C[N,N] in fp32 (%s triangular too), as accurate
as an fp32 dot product (TF32 tensor cores alone are not). Here N=${N}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const float *A, const float *B, float *C, unsigned N)
launched with a grid of (ceil(N/128), ceil(N/128), 1) blocks of 256 threads
and no dynamic shared memory: block (x, y) owns the 128x128 tile of C at rows
128*y.., columns 128*x... %s]]):format(kernel, which, t.upper and "below" or "above", which, kernel, F.own_plan)
  env.dims = { "N" }
  -- 4096 (KernelBench's own size; strict FP32 near 3 ms on an H200) and an
  -- odd one.
  env.variants = { { N = 4096, tags = { "main", "kernelbench" } }, { N = 1001, tags = { "odd", "small" } } }
  fp32_product(env, { A = { "N", "N" }, B = { "N", "N" }, a = "mk", b = "kn", M = "N", N = "N", K = "N" })
  local mask = t.upper and 1 or 0
  env.reference.derived, env.reference.derive = { "A", "B" }, TRI_DERIVE:format(mask, mask)
  -- The multiply-adds a triangular product needs: about N^3/3 (a sixth of
  -- the full product's 2 N^3).
  env.flops = function(d) return d.N * (d.N + 1) * (d.N + 2) // 3 end
  env.plan = ([[
-- Default plan: one launch of `%s`, a block of 256 threads per 128x128 tile of C.
return { launches = { { kernel = "%s", grid = { cdiv(N, 128), cdiv(N, 128), 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("A"), buffer("B"), buffer("C"), u32(N) } } } }
]]):format(kernel, kernel)
end

return F
