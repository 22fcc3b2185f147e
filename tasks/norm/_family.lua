-- What the normalization task files share (tasks/norm/*.lua include it):
-- the row normalizations (LayerNorm and RMSNorm over the rows of X[R, C]),
-- their shapes, input laws, reference plan, cuDNN graph and text; and the
-- pieces BatchNorm and GroupNorm take from them.
local F = {}

-- PTXBench's spiky mix: N(0,1) + N(0,100)·Bern(0.001).
F.SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }

-- The base law, then KernelBench-Verified's x3, x0.01 and x-1 (every float
-- input scaled), with atol scaled by t3 and t001; neg_inputs replaces laws
-- in the x-1 entry (a variance must stay positive).
function F.scaled(t3, t001, neg_inputs)
  return {
    { name = "randn" },
    { name = "x3", scale = 3, tol_scale = t3 },
    { name = "x0.01", scale = 0.01, tol_scale = t001 },
    { name = "neg", scale = -1, inputs = neg_inputs },
  }
end

-- Element type codes of klab's prelude (klab_load), for reference plans.
local DT_CODES = "local DT = { f32 = 0, f16 = 1, bf16 = 2 }"

-- ---- row normalizations -------------------------------------------------------

F.row_dims = { "R", "C" }

-- Rows of a transformer's hidden states: 32768 tokens of 4096 and 16384 of
-- 8192 (each 256 MiB of bf16 in and out: well over 50 us on an H200), and
-- a small odd one. The odd shape keeps C a multiple of 8 (rows 16-byte
-- aligned in bf16): cuDNN's norm engines may turn down unaligned rows, and
-- the baseline must run on every variant.
F.row_variants = {
  { R = 32768, C = 4096, tags = { "main" } },
  { R = 16384, C = 8192, tags = { "main" } },
  { R = 1001, C = 1000, tags = { "odd", "small" } },
}

-- Weights near 1 and small biases, as a trained layer has them, but drawn:
-- a kernel that skips either is wrong.
F.row_inputs = {
  X = { dist = "normal", mean = 0, std = 1 },
  weight = { dist = "normal", mean = 1, std = 0.5 },
  bias = { dist = "normal", mean = 0, std = 0.5 },
}

-- KernelBench-Verified's x3, x0.01 and x-1 scale X, weight and bias alike.
-- The normalized row does not change with X's scale (up to eps), so Y
-- scales like weight and bias, by the same factor: tol_scale = scale. At
-- x0.01 the row variance is 1e-4, where LayerNorm's eps = 1e-5 moves the
-- result by 5%: a kernel that drops eps is caught (RMSNorm's 1e-6 moves it
-- by 0.5%, inside the tolerance). Then PTXBench's spiky mix on X,
-- and rows shifted far from zero (`shift`, the task's choice): there
-- E[x^2] - E[x]^2 cancels catastrophically, which is how a one-pass
-- variance fails (a two-pass or Welford variance does not).
function F.row_distributions(shift)
  local d = F.scaled(3, 0.01)
  d[#d + 1] = { name = "spiky", inputs = { X = F.SPIKY } }
  d[#d + 1] = { name = "shifted", inputs = { X = { dist = "normal", mean = shift, std = 1 } } }
  return d
end

-- buffers of a row normalization in dtype (bias only for LayerNorm).
function F.row_buffers(dtype, with_bias)
  local b = {
    X = { role = "input", dtype = dtype, shape = { "R", "C" } },
    weight = { role = "input", dtype = dtype, shape = { "C" } },
    Y = { role = "output", dtype = dtype, shape = { "R", "C" } },
  }
  if with_bias then b.bias = { role = "input", dtype = dtype, shape = { "C" } } end
  return b
end

-- The reference (reference.cu's rownorm_ref): a block per row unit, fp64
-- statistics (two passes: the mean, then the mean squared deviation), Y in
-- fp32. mode 0 is LayerNorm, 1 RMSNorm. A unit is a row of Y.
function F.row_reference(mode, eps, with_bias)
  return {
    source = "reference.cu", accumulate = "f64", units = { Y = "C" },
    plan = DT_CODES .. ([[

local rows = nsample > 0 and nsample or R
return { launches = { { kernel = "rownorm_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), i32(DT[buffers.X.dtype]), buffer("weight"), i32(DT[buffers.weight.dtype]),
           %s, i32(%s), buffer("positions"), u64(nsample), buffer("Y"), u32(C), f32(%g), i32(%d) } } } }
]]):format(with_bias and 'buffer("bias")' or "u64(0)", with_bias and "DT[buffers.bias.dtype]" or "0", eps, mode),
  }
end

-- The library baseline: cuDNN's norm_fwd in inference, over X viewed as
-- [R, C, 1, 1] with weight and bias [1, C, 1, 1] (cuDNN normalizes over the
-- dimensions where the scale is not 1: each row), epsilon by value.
-- docs/baselines.md: LAYER_NORM and RMS_NORM inference list engines
-- without a GPU, in bf16 and f32.
function F.row_graph(mode, dtype, eps, with_bias)
  return function(d)
    local t = {
      X = { dtype = dtype, dims = { d.R, d.C, 1, 1 } },
      weight = { dtype = dtype, dims = { 1, d.C, 1, 1 } },
      Y = { dtype = dtype, dims = { d.R, d.C, 1, 1 } },
      eps = { value = eps },
    }
    local inputs = { x = "X", scale = "weight", epsilon = "eps" }
    if with_bias then
      t.bias = { dtype = dtype, dims = { 1, d.C, 1, 1 } }
      inputs.bias = "bias"
    end
    return { tensors = t, ops = { { op = "norm_fwd", mode = mode, phase = "inference", inputs = inputs,
      outputs = { y = "Y" } } } }
  end
end

-- The text for a model. o: kernel (entry name), op (in words), words
-- (X's type in words), formula (lines), out_words (Y's type in words),
-- signature (the default plan's kernel, in C).
function F.row_description(o)
  return ([[
Write a CUDA kernel named `%s` that applies %s to each row of X[R, C]
(row-major, %s):
%s
Statistics in fp32 or better; Y[R, C] written as %s.
Here R=${R}, C=${C}.
With the default launch plan the kernel is
%s
launched with one block of 256 threads per row (grid (R, 1, 1)), no
dynamic shared memory, and eps as its last argument. Send your own plan to
change any of this.]]):format(o.kernel, o.op, o.words, o.formula, o.out_words, o.signature)
end

-- Default plan of a row normalization: one block of 256 threads per row.
function F.row_plan(kernel, eps, with_bias)
  return ([[
-- Default plan: one block of 256 threads per row; eps as the last argument.
return { launches = { { kernel = "%s", grid = { R, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("weight"), %sbuffer("Y"), u32(R), u32(C), f32(%g) } } } }
]]):format(kernel, with_bias and 'buffer("bias"), ' or "", eps)
end

-- Memory-bound: no target instruction family to verify.
F.targets = {}

return F
