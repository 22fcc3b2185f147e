-- What the pooling task files share: 2D max and average pooling in NHWC
-- (channels-last), a 3x3 window, stride 2 and padding 1 on every side (the
-- ResNet stem's max pooling; for the average, PyTorch's default
-- count_include_pad=True: every window is divided by 9, padding counted as
-- zeros):
--
--   maxpool2d  y[n,oh,ow,c] = max over the window's elements inside the image
--   avgpool2d  y[n,oh,ow,c] = (sum over the window's elements inside the image) / 9
--
-- with the window of output (oh, ow) at rows 2*oh-1 .. 2*oh+1 and columns
-- 2*ow-1 .. 2*ow+1 of x[N,H,W,C]; OH = (H - 1)/2 + 1 and OW = (W - 1)/2 + 1
-- rounded down. Task files take this with `local pool = include "_family.lua"`.
local F = {}

-- The window: a constant of the family, not a dimension (dimensions must be
-- positive and the interesting pad of the 2x2 window would be 0).
local WIN, STRIDE, PAD = 3, 2, 1
local OH = string.format("(H+%d-%d)//%d+1", 2 * PAD, WIN, STRIDE)
local OW = string.format("(W+%d-%d)//%d+1", 2 * PAD, WIN, STRIDE)
local function out_hw(d) return (d.H + 2 * PAD - WIN) // STRIDE + 1, (d.W + 2 * PAD - WIN) // STRIDE + 1 end

F.dims = { "N", "H", "W", "C" }

-- The main shapes read 392 MiB and write 98 (about 130 us at an H200's
-- 4 TB/s; the fp32 tasks halve N to move as many bytes): a
-- ResNet-stem-like map with 256 channels and a 224x224 one with 128; then a
-- small odd one (15x17: the last window of each row and column hangs over
-- the bottom/right edge).
function F.variants(dt)
  local n = dt == "f32" and 2 or 1
  return {
    { N = 64 // n, H = 112, W = 112, C = 256, tags = { "main" } },
    { N = 32 // n, H = 224, W = 224, C = 128, tags = { "main" } },
    { N = 3, H = 15, W = 17, C = 24, tags = { "odd", "small" } },
  }
end

function F.buffers(dt)
  return {
    x = { role = "input", dtype = dt, shape = { "N", "H", "W", "C" } },
    y = { role = "output", dtype = dt, shape = { "N", OH, OW, "C" } },
  }
end

F.inputs = { x = { dist = "normal", mean = 0, std = 1 } }

-- KernelBench-Verified's hidden suite (x1, x3, x0.01, x-1) and PTXBench's
-- spiky mix; y scales with x (tol_scale = scale). And all-negative inputs,
-- which break a max pooling that starts from 0 or pads with zeros (the
-- padding of a max pool is -inf: it never wins) wherever a window is
-- negative, and on every window at the top and left edges.
F.trials = 2
F.distributions = {
  { name = "randn" },
  { name = "x3", scale = 3, tol_scale = 3 },
  { name = "x0.01", scale = 0.01, tol_scale = 0.01 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { x = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
  { name = "negative", inputs = { x = { dist = "uniform", lo = -2, hi = -0.25 } } },
}

-- The trusted reference (reference.cu): one thread per output element (a
-- unit), the window's maximum or its sum / 9 in fp64, written as fp32.
local REFERENCE_PLAN = [[
local DT = { f32 = 0, bf16 = 2 }
local OH, OW = (H + %d - %d) // %d + 1, (W + %d - %d) // %d + 1
local total = nsample > 0 and nsample or buffers.y.numel
return { launches = { { kernel = "pool_ref", grid = { cdiv(total, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), i32(DT[buffers.x.dtype]), buffer("positions"), u64(total), buffer("y"), u32(H), u32(W),
           u32(C), u32(OH), u32(OW), u32(%d), u32(%d), u32(%d), i32(%d) } } } }
]]

function F.reference(avg)
  return { source = "reference.cu", accumulate = "f64", units = { y = 1 },
    plan = REFERENCE_PLAN:format(2 * PAD, WIN, STRIDE, 2 * PAD, WIN, STRIDE, WIN, STRIDE, PAD, avg and 1 or 0) }
end

-- The library baseline: a cuDNN graph of one resample operation on NHWC
-- tensors named after the task's buffers (cuDNN's dimensions in N, C, H, W
-- order, layout "nhwc"), fp32 compute. MAXPOOL pads with -inf;
-- AVGPOOL_INCLUDE_PADDING pads with zeros and divides by the window's size.
-- One mode: pooling multiplies nothing, so there is no TF32 variant to time.
local F32_PLAN = [[
local OH, OW = (H + %d - %d) // %d + 1, (W + %d - %d) // %d + 1
local V = C %% 4 == 0 and 4 or 1
local total = N * OH * OW * (C // V)
return { launches = { { kernel = "pool2d_f32_baseline", grid = { cdiv(total, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), buffer("y"), u32(H), u32(W), u32(C), u32(OH), u32(OW), u64(total), u32(V), i32(%d) } } } }
]]
function F.baseline(dt, mode)
  local avg = mode == "AVGPOOL_INCLUDE_PADDING"
  return { lib = "cudnn", op = "graph", modes = { "default" },
    -- cuDNN's fp32 resample moves about half of what DRAM can: a plain
    -- kernel of the family is timed beside it, and the faster one is the
    -- baseline.
    shipped = { source = "baseline.cu", name = "thread per 4 channels, float4 " .. (avg and "average" or "max") .. " pooling",
      plan = F32_PLAN:format(2 * PAD, WIN, STRIDE, 2 * PAD, WIN, STRIDE, avg and 1 or 0) },
    spec = function(d)
    local oh, ow = out_hw(d)
    return {
      tensors = { x = { dtype = dt, dims = { d.N, d.C, d.H, d.W }, layout = "nhwc" },
                  y = { dtype = dt, dims = { d.N, d.C, oh, ow }, layout = "nhwc" } },
      ops = { { op = "resample_fwd", mode = mode, inputs = { x = "x" }, outputs = { y = "y" }, window = WIN,
                stride = STRIDE, padding = PAD } },
      compute = "f32",
    }
  end }
end

-- The bf16 tasks' baseline: a kernel shipped with the family (baseline.cu),
-- recorded as such in every result. cuDNN 9.14's bf16 resample engines were
-- measured on an H200 to fault (illegal address) on the main shapes and to
-- give wrong values on the small one, while its fp32 engines are right.
local SHIPPED_PLAN = [[
local OH, OW = (H + %d - %d) // %d + 1, (W + %d - %d) // %d + 1
local V = C %% 8 == 0 and 8 or 2
local total = N * OH * OW * (C // V)
return { launches = { { kernel = "pool2d_bf16_baseline", grid = { cdiv(total, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), buffer("y"), u32(H), u32(W), u32(C // 2), u32(OH), u32(OW), u64(total), i32(%d), u32(V) } } } }
]]

function F.shipped_baseline(avg)
  return { source = "baseline.cu", name = "thread per 8 channels, 16-byte " .. (avg and "average" or "max") .. " pooling",
    plan = SHIPPED_PLAN:format(2 * PAD, WIN, STRIDE, 2 * PAD, WIN, STRIDE, avg and 1 or 0) }
end

-- One comparison (max) or addition (average) per window element, by
-- convention; no work rule (not multiply-adds).
F.flops = function(d)
  local oh, ow = out_hw(d)
  return d.N * oh * ow * d.C * WIN * WIN
end

-- Memory-bound: no instruction family to verify.
F.targets = {}

-- The text for a model. op: "max" or "average"; rule: how an output is
-- formed; types: the element types in words; ctype: the C element type.
function F.description(kernel, op, rule, types, ctype)
  return ([[
Write a CUDA kernel named `%s` that computes 2D %s pooling of
x[N,H,W,C] into y[N,OH,OW,C] (NHWC, row-major),
%s.
The window is 3x3 with stride 2 and padding 1 on every side: output
(oh, ow) covers rows 2*oh-1 .. 2*oh+1 and columns 2*ow-1 .. 2*ow+1 of x,
and OH = (H-1)/2 + 1, OW = (W-1)/2 + 1 (rounded down). %s
Here N=${N}, H=${H}, W=${W}, C=${C}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const %s *x, %s *y, unsigned N,
      unsigned H, unsigned W, unsigned C)
launched with one thread per element of y, ceil(N*OH*OW*C/256) blocks of
256 threads and no dynamic shared memory. Send your own plan to change any
of this.]]):format(kernel, op, types, rule, kernel, ctype, ctype)
end

F.MAX_RULE = "Each output is the\nmaximum of its window's elements inside the image (the padding never wins)."
F.AVG_RULE = "Each output is the\nsum of its window's elements inside the image divided by 9: the padding\n" ..
  "counts as zeros (PyTorch's avg_pool2d with count_include_pad=True)."

function F.plan(kernel)
  return ([[
-- Default plan: one launch of `%s`, one thread per output element, 256 per block.
local OH, OW = (H + %d - %d) // %d + 1, (W + %d - %d) // %d + 1
return { launches = { { kernel = "%s", grid = { cdiv(N * OH * OW * C, 256), 1, 1 }, block = { 256, 1, 1 },
  shared = 0, args = { buffer("x"), buffer("y"), u32(N), u32(H), u32(W), u32(C) } } } }
]]):format(kernel, 2 * PAD, WIN, STRIDE, 2 * PAD, WIN, STRIDE, kernel)
end

-- Sets the fields of a pooling task in env (the task file's _ENV): every
-- field but the tolerance, which each task file states. t = {name =,
-- op = "max"|"avg", dtype = "f32"|"bf16"}. fp32 tasks are timed against
-- cuDNN's resample; bf16 ones against the shipped kernel (cuDNN's bf16
-- resample faults).
local TYPES = {
  f32 = { max = "fp32 in and out", avg = "fp32 in and out", ctype = "float" },
  bf16 = { max = "bf16 in and out (__nv_bfloat16 bit patterns)",
    avg = "bf16 in and out (__nv_bfloat16 bit patterns), summing in fp32", ctype = "__nv_bfloat16" },
}
local MODES = { max = "MAXPOOL", avg = "AVGPOOL_INCLUDE_PADDING" }
function F.define(env, t)
  local op, dt = t.op, t.dtype
  local avg = op == "avg"
  local kernel = op .. "pool2d"
  env.name, env.family, env.kernel = t.name, "pool", kernel
  env.tags = { "pool", kernel:sub(1, -3), dt, "memory-bound" }
  env.description = F.description(kernel, avg and "average" or "max", avg and F.AVG_RULE or F.MAX_RULE,
    TYPES[dt][op], TYPES[dt].ctype)
  env.dims, env.variants, env.buffers = F.dims, F.variants(dt), F.buffers(dt)
  env.inputs, env.trials, env.distributions = F.inputs, F.trials, F.distributions
  env.reference = F.reference(avg)
  env.baseline = dt == "f32" and F.baseline("f32", MODES[op]) or F.shipped_baseline(avg)
  env.flops, env.targets, env.plan = F.flops, F.targets, F.plan(kernel)
end

return F
