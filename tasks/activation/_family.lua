-- What every activation task file shares (tasks/activation/*.lua include
-- it): Y = f(X) element by element over X[R, C] and Y[R, C] of one type,
-- row-major. The reference (reference.cu) computes f in fp64 from the
-- stored inputs; the baseline is cuDNN's pointwise operation for f, a graph
-- of one operation.
local F = {}

-- Each operation: its code in reference.cu (ACT_*), cuDNN's pointwise mode
-- and parameter (cuDNN's definitions: SWISH_FWD is x·sigmoid(beta·x),
-- SOFTPLUS_FWD is log(1 + exp(beta·x))/beta, ELU_FWD is x for x > 0 and
-- alpha·(exp(x) − 1) otherwise; every parameter here is 1, the usual
-- definition), the formula for a model, a FLOP count per element (a
-- convention: one per arithmetic operation or transcendental in the
-- formula; the bytes are what bound these tasks), how the output's scale
-- follows the input's (tol_x3, tol_x001: the tol_scale of the x3 and x0.01
-- inputs; only where the output is proportional to the input there) and
-- whether the "wide" inputs apply. A kernel is named after its operation,
-- except tanh's: an extern "C" tanh would clash with the C library's.
local OPS = {
  relu = { code = 0, mode = "RELU_FWD", flops = 1, tol_x3 = 3, tol_x001 = 0.01,
    formula = "Y = max(X, 0)" },
  gelu_tanh = { code = 1, mode = "GELU_APPROX_TANH_FWD", flops = 9, tol_x3 = 3, tol_x001 = 0.01, wide = true,
    formula = "Y = 0.5 X (1 + tanh(sqrt(2/pi) (X + 0.044715 X^3)))  (GELU, tanh approximation)" },
  gelu_erf = { code = 2, mode = "GELU_FWD", flops = 5, tol_x3 = 3, tol_x001 = 0.01, wide = true, beside = true,
    formula = "Y = 0.5 X (1 + erf(X / sqrt(2)))  (GELU, exact erf form)" },
  silu = { code = 3, mode = "SWISH_FWD", param = 1.0, flops = 4, tol_x3 = 3, tol_x001 = 0.01, wide = true,
    formula = "Y = X sigmoid(X) = X / (1 + exp(-X))  (SiLU, swish with beta = 1)" },
  sigmoid = { code = 4, mode = "SIGMOID_FWD", flops = 4, tol_x3 = 1, tol_x001 = 1, wide = true,
    formula = "Y = 1 / (1 + exp(-X))" },
  tanh = { code = 5, mode = "TANH_FWD", flops = 1, tol_x3 = 1, tol_x001 = 0.01, wide = true,
    formula = "Y = tanh(X)", kernel = "tanh_act" },
  softplus = { code = 6, mode = "SOFTPLUS_FWD", param = 1.0, flops = 3, tol_x3 = 1, tol_x001 = 1, beside = true,
    formula = "Y = log(1 + exp(X))  (beta = 1, exact for every X: no linear threshold)" },
  elu = { code = 7, mode = "ELU_FWD", param = 1.0, flops = 4, tol_x3 = 3, tol_x001 = 0.01, wide = true,
    formula = "Y = X for X > 0, else alpha (exp(X) - 1) with alpha = 1" },
  -- KernelBench's Level 1 activations that cuDNN has no single pointwise
  -- mode for (klab's graph sets one parameter per mode, and cuDNN's RELU
  -- clips would need three): their baseline is the kernel shipped in
  -- baseline.cu (shipped = true), which is what the task records.
  leaky_relu = { code = 8, param = 0.01, flops = 2, tol_x3 = 3, tol_x001 = 0.01, wide = true, shipped = true,
    formula = "Y = X for X > 0, else 0.01 X  (LeakyReLU, torch's default negative slope)" },
  hardtanh = { code = 9, flops = 2, tol_x3 = 1, tol_x001 = 0.01, wide = true, shipped = true,
    formula = "Y = min(max(X, -1), 1)  (HardTanh)" },
  hardsigmoid = { code = 10, flops = 4, tol_x3 = 1, tol_x001 = 1, wide = true, shipped = true,
    formula = "Y = min(max(X / 6 + 1/2, 0), 1)  (HardSigmoid, torch's definition: 0 below -3, 1 above 3)" },
  softsign = { code = 11, flops = 3, tol_x3 = 1, tol_x001 = 0.01, wide = true, shipped = true,
    formula = "Y = X / (1 + |X|)  (Softsign)" },
  scale = { code = 13, param = 3.14, flops = 1, tol_x3 = 3, tol_x001 = 0.01, wide = true, shipped = true,
    formula = "Y = 3.14 X  (a matrix times a scalar, KernelBench's 3.14)" },
  selu = { code = 12, flops = 5, tol_x3 = 3, tol_x001 = 0.01, wide = true, shipped = true,
    formula = "Y = s X for X > 0, else s a (exp(X) - 1), with s = 1.0507009873554804934 and\n" ..
      "  a = 1.6732632423543772848  (SELU)" },
}

local DT = { f32 = 0, bf16 = 2 }
local CTYPE = { f32 = "float", bf16 = "__nv_bfloat16" }
local WORDS = {
  f32 = "fp32; compute as accurately as fp32 allows (no narrower intermediate)",
  bf16 = "bf16 (__nv_bfloat16 bit patterns); compute in fp32 and round once to\nbf16 (round to nearest even)",
}

F.dims = { "R", "C" }

-- The main shape holds 268M elements (1 GiB of bf16 traffic, 2 GiB of
-- fp32: 250 to 600 us at the H200's ~4 TB/s); the odd one has a total
-- (999·1021 = 1019979) that is not a multiple of 2, 4 or 8, so a
-- vectorised kernel needs its tail.
F.variants = {
  { R = 16384, C = 16384, tags = { "main" } },
  { R = 999, C = 1021, tags = { "odd", "small" } },
}

function F.buffers(dtype)
  return {
    X = { role = "input", dtype = dtype, shape = { "R", "C" } },
    Y = { role = "output", dtype = dtype, shape = { "R", "C" } },
  }
end

F.inputs = { X = { dist = "normal", mean = 0, std = 1 } }

-- KernelBench-Verified's scaled inputs (x3, x0.01, x-1) and PTXBench's
-- spiky mix, two seeds each. Where the output is proportional to the input
-- (the positive end of ReLU, GELU, SiLU and ELU; tanh near zero) atol
-- follows the scale (tol_scale). "wide" inputs, N(0, 30²), exceed 44 on
-- one element in fourteen, where exp(2X) overflows fp32: a tanh written as
-- (e^2X - 1)/(e^2X + 1), or a sigmoid as e^X/(1 + e^X), returns Inf/Inf =
-- NaN there; they also cover the saturated ends of every curve. Softplus
-- does not get them: cuDNN's SOFTPLUS_FWD is defined as log(1 + exp(x))
-- and may itself overflow there.
F.trials = 2
function F.distributions(op)
  local o = OPS[op]
  local list = {
    { name = "randn" },
    { name = "x3", scale = 3, tol_scale = o.tol_x3 },
    { name = "x0.01", scale = 0.01, tol_scale = o.tol_x001 },
    { name = "neg", scale = -1 },
    { name = "spiky", inputs = { X = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
  }
  if o.wide then list[#list + 1] = { name = "wide", inputs = { X = { dist = "normal", mean = 0, std = 30 } } } end
  return list
end

-- bf16 outputs hold 8 significant bits: an fp32 result rounded once to
-- bf16 is within 2^-8 ≈ 0.4% of the exact value, so rtol = 1e-2 passes
-- every honest fp32 computation. atol = 1e-3 only matters where the output is near zero,
-- where fp32 loses at most about 1e-6 (1 + tanh or 1 + erf cancelling at
-- X ≈ -3) while a kernel that does its arithmetic in bf16 loses whole bf16
-- ulps of 1 (0.004 and more) and fails.
F.BF16_TOLERANCE = { atol = 1e-3, rtol = 1e-2, matched = 1.0 }

-- The reference: f in fp64 from the stored input, written as fp32; a unit
-- is one element.
local REFERENCE_PLAN = [[
local n = nsample > 0 and nsample or R * C
return { launches = { { kernel = "act_ref", grid = { math.min(cdiv(n, 256), 65536), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), i32(%d), buffer("positions"), u64(n), buffer("Y"), i32(%d), f64(%.17g) } } } }
]]

function F.reference(op, dtype)
  local o = OPS[op]
  return { source = "reference.cu", accumulate = "f64", units = { Y = 1 },
           plan = REFERENCE_PLAN:format(DT[dtype], o.code, o.param or 1.0) }
end

-- cuDNN's pointwise operation for f on X and Y as they are (fp32 compute
-- inside). fp32 tasks time strict FP32 engines only: no TF32 path exists
-- for a pointwise operation.
-- The shipped baseline (baseline.cu): a grid-stride loop over 16-byte
-- vectors, fp32 arithmetic. It is also timed beside cuDNN's engine for the
-- operations marked beside = true (cuDNN's fp32 GELU and bf16 Softplus
-- reach about two thirds of the DRAM floor on an H200): the faster of the
-- two is the baseline.
local BASELINE_PLAN = [[
local n = R * C
return { launches = { { kernel = "act_baseline", grid = { math.min(cdiv(n, 1024), 65536), 1, 1 },
  block = { 256, 1, 1 }, args = { buffer("X"), buffer("Y"), u64(n), i32(%d), i32(%d), f32(%.9g) } } } }
]]

function F.baseline(op, dtype)
  local o = OPS[op]
  local shipped = { source = "baseline.cu", name = "grid-stride " .. op .. ", 16-byte vectors, fp32 arithmetic",
    plan = BASELINE_PLAN:format(DT[dtype], o.code, o.param or 0) }
  if o.shipped then return shipped end
  return {
    lib = "cudnn", op = "graph", modes = dtype == "f32" and { "fp32" } or { "default" },
    shipped = o.beside and shipped or nil,
    spec = function(d)
      return {
        tensors = { X = { dtype = dtype, dims = { d.R, d.C } }, Y = { dtype = dtype, dims = { d.R, d.C } } },
        ops = { { op = "pointwise", mode = o.mode, param = o.param, inputs = { x = "X" }, outputs = { y = "Y" } } },
      }
    end,
  }
end

function F.flops(op)
  local k = OPS[op].flops
  return function(d) return k * d.R * d.C end
end

function F.bytes(dtype)
  local size = dtype == "f32" and 4 or 2
  return function(d) return 2 * size * d.R * d.C end
end

-- The kernel a candidate writes for op.
function F.kernel(op) return OPS[op].kernel or op end

function F.describe(op, dtype)
  local k = F.kernel(op)
  return ([[
Write a CUDA kernel named `%s` that applies an activation element by element
to X[R, C] (row-major), writing Y[R, C]:
  %s
X and Y are %s.
Here R=${R}, C=${C}: n = R*C elements.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const %s *X, %s *Y, unsigned long long n)
launched with one thread per element: a grid of (ceil(n/256), 1, 1) blocks of
256 threads and no dynamic shared memory. Send your own plan to change any of
this.]]):format(k, OPS[op].formula, WORDS[dtype], k, CTYPE[dtype], CTYPE[dtype])
end

function F.plan(op)
  return ([[
-- Default plan: one thread per element, blocks of 256.
local n = R * C
return { launches = { { kernel = "%s", grid = { cdiv(n, 256), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("Y"), u64(n) } } } }
]]):format(F.kernel(op))
end

-- Sets the fields of an activation task in env (the task file's _ENV):
-- every field but the tolerance, which each task file states with its
-- reasons. t = {name =, op =, dtype =}.
function F.define(env, t)
  local op, dtype = t.op, t.dtype
  env.name, env.family, env.kernel = t.name, "activation", F.kernel(op)
  env.tags = { "activation", dtype, "memory-bound" }
  env.description = F.describe(op, dtype)
  env.dims, env.variants, env.buffers = F.dims, F.variants, F.buffers(dtype)
  env.inputs, env.trials, env.distributions = F.inputs, F.trials, F.distributions(op)
  env.reference, env.baseline = F.reference(op, dtype), F.baseline(op, dtype)
  env.flops, env.bytes = F.flops(op), F.bytes(dtype)
  -- Memory-bound: no target instruction family to verify.
  env.targets = {}
  env.plan = F.plan(op)
end

return F
