-- What the poolings in PyTorch's layout share (maxpool1d.lua, avgpool1d.lua,
-- maxpool2d_nchw.lua, avgpool2d_nchw.lua, maxpool3d.lua, avgpool3d.lua): x
-- [N, C, L] (1-D), [N, C, H, W] (2-D) or [N, C, D, H, W] (3-D), fp32, pooled
-- over the trailing dimensions by a window of K (K x K, K x K x K) at
-- stride S, padding P and dilation DL, as KernelBench's Level 1 problems
-- 41 to 46 set them. The maximum ignores the padding; the average
-- divides by the whole window, padding included (PyTorch's
-- count_include_pad). The reference (reference.cu, poolnc_ref) works in
-- fp64; klab's cuDNN pooling graphs are NHWC 2-D, so the baseline is the
-- kernel shipped in baseline.cu (poolnc_baseline).
local F = {}

-- The output length of n at window k, stride s, padding p, dilation dl.
local function out(n, w)
  return ("(%s+%d-%d)//%d+1"):format(n, 2 * w.P, w.DL * (w.K - 1) + 1, w.S)
end

local DIMS = { [1] = { "N", "C", "L" }, [2] = { "N", "C", "H", "W" }, [3] = { "N", "C", "D", "H", "W" } }

-- 1-D: 64 x 64 channels of 65536 (1 GiB read) and an odd one; 2-D: 16 x 64
-- channels of 512 x 512 (1 GiB read) and an odd one; 3-D: 16 x 32 channels
-- of 64^3 (512 MiB read) and an odd one. Each task adds
-- KernelBench's current shape of its problem (t.kernelbench), tagged
-- kernelbench.
local VARIANTS = {
  [1] = {
    { N = 64, C = 64, L = 65536, tags = { "main" } },
    { N = 3, C = 5, L = 1021, tags = { "odd", "small" } },
  },
  [2] = {
    { N = 16, C = 64, H = 512, W = 512, tags = { "main" } },
    { N = 2, C = 3, H = 37, W = 41, tags = { "odd", "small" } },
  },
  [3] = {
    { N = 16, C = 32, D = 64, H = 64, W = 64, tags = { "main" } },
    { N = 2, C = 3, D = 9, H = 11, W = 13, tags = { "odd", "small" } },
  },
}

-- KernelBench-Verified's scaled inputs (a maximum or an average scales with
-- x: tol_scale) and PTXBench's spiky mix; the maximum also gets inputs
-- negative throughout, where a maximum started at 0 instead of -Inf, or
-- padding taken as zeros, is wrong.
local function distributions(kind)
  local d = {
    { name = "randn" },
    { name = "x3", scale = 3, tol_scale = 3 },
    { name = "x0.01", scale = 0.01, tol_scale = 0.01 },
    { name = "neg", scale = -1 },
    { name = "spiky", inputs = { x = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
  }
  if kind == "max" then d[#d + 1] = { name = "negative", inputs = { x = { dist = "normal", mean = -100, std = 1 } } } end
  return d
end

-- A maximum is exact; an average of at most 27 fp32 values in any order is
-- within a few ulps (1e-6 relative), and rtol = 1e-5 with atol = 1e-6
-- passes it and fails a bf16 average or a window size that leaves the
-- padding out.
F.TOLERANCE = {
  max = { f32 = { atol = 0, rtol = 0, matched = 1.0 } },
  avg = { f32 = { atol = 1e-6, rtol = 1e-5, matched = 1.0 } },
}

-- The pooled sizes in a plan, and the window's three extents.
local function sizes(nd, w)
  if nd == 1 then
    return ("local D, H, W, OD, OH, OW = 1, 1, L, 1, 1, %s\nlocal KD, KH, KW = 1, 1, %d"):format(out("L", w), w.K)
  elseif nd == 2 then
    return ("local D, OD, OH, OW = 1, 1, %s, %s\nlocal KD, KH, KW = 1, %d, %d"):format(out("H", w), out("W", w), w.K, w.K)
  end
  return ("local OD, OH, OW = %s, %s, %s\nlocal KD, KH, KW = %d, %d, %d"):format(out("D", w), out("H", w), out("W", w),
    w.K, w.K, w.K)
end

-- The words and plan arguments of each number of pooled dimensions.
local TEXT = {
  [1] = { shape = "x[N, C, L]", over = "last dimension", outs = "OL", here = "N=${N}, C=${C}, L=${L}",
    args = "unsigned N, unsigned C, unsigned L", plan = "u32(N), u32(C), u32(L)" },
  [2] = { shape = "x[N, C, H, W]", over = "last two dimensions", outs = "OH, OW", here = "N=${N}, C=${C}, H=${H}, W=${W}",
    args = "unsigned N, unsigned C, unsigned H, unsigned W", plan = "u32(N), u32(C), u32(H), u32(W)" },
  [3] = { shape = "x[N, C, D, H, W]", over = "last three dimensions", outs = "OD, OH, OW",
    here = "N=${N}, C=${C}, D=${D}, H=${H}, W=${W}", args = "unsigned N, unsigned C,\n      unsigned D, unsigned H, unsigned W",
    plan = "u32(N), u32(C), u32(D), u32(H), u32(W)" },
}

-- Sets every field of the task in env but its tolerance. t = {kind = "max"
-- | "avg", nd = 1 | 2 | 3, window = {K =, S =, P =, DL =}, kernelbench = the
-- dimensions of KernelBench's current shape, suffix = after the kind and
-- dimensions in the task's and the kernel's name (2-D: "_nchw", beside the
-- NHWC maxpool2d_f32)}.
function F.define(env, t)
  local w, nd, kind = t.window, t.nd, t.kind
  local kernel = ("%spool%dd%s"):format(kind, nd, t.suffix or "")
  env.name, env.family, env.kernel = kernel .. "_f32", "pool", kernel
  env.tags = { "pool", kernel, "f32", nd == 2 and "nchw" or "ncl", "memory-bound" }
  local tx = TEXT[nd]
  local shape_in = tx.shape
  local outs = { "N", "C" }
  for i = 3, #DIMS[nd] do outs[i] = out(DIMS[nd][i], w) end
  env.description = ([[
Write a CUDA kernel named `%s` that %s-pools %s (row-major, fp32,
the last dimension contiguous) over its %s with a window of %s at
stride %d, padding %d and dilation %d%s: each output
element is the %s of the window's elements%s. The output is
y[N, C, %s] (fp32), each pooled size (n + %d - %d) / %d + 1 rounded down.
Here %s.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const float *x, float *y, %s)
launched with one thread per output element (n_out of them): a grid of
(ceil(n_out/256), 1, 1) blocks of 256 threads and no dynamic shared memory. Send your own plan to
change any of this.]]):format(kernel, kind == "max" and "max" or "average", shape_in,
    tx.over, (tostring(w.K) .. " x "):rep(nd - 1) .. w.K,
    w.S, w.P, w.DL, nd > 1 and " on each" or "", kind == "max" and "maximum" or "average",
    kind == "max" and " inside the input (padding never wins)" or ", the padding counted as zeros (divide by the whole window)",
    tx.outs, 2 * w.P, w.DL * (w.K - 1) + 1, w.S, tx.here, kernel, tx.args)
  local kb = { tags = { "kernelbench" } }
  for k, v in pairs(t.kernelbench) do kb[k] = v end
  env.dims, env.variants = DIMS[nd], { VARIANTS[nd][1], kb, VARIANTS[nd][2] }
  env.buffers = {
    x = { role = "input", dtype = "f32", shape = DIMS[nd] },
    y = { role = "output", dtype = "f32", shape = outs },
  }
  env.inputs = { x = { dist = "normal", mean = 0, std = 1 } }
  env.trials, env.distributions = 2, distributions(kind)
  local avg = kind == "avg" and 1 or 0
  env.reference = { source = "reference.cu", accumulate = "f64", units = { y = 1 }, plan = ([[
%s
local total = N * C * OD * OH * OW
local n = nsample > 0 and nsample or total
return { launches = { { kernel = "poolnc_ref", grid = { cdiv(n, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), buffer("positions"), u64(n), buffer("y"), u32(D), u32(H), u32(W), u32(OD), u32(OH), u32(OW),
           u32(KD), u32(KH), u32(KW), u32(%d), u32(%d), u32(%d), i32(%d) } } } }
]]):format(sizes(nd, w), w.S, w.P, w.DL, avg) }
  env.baseline = { source = "baseline.cu", name = "thread per output, the window in fp32", plan = ([[
%s
local total = N * C * OD * OH * OW
return { launches = { { kernel = "poolnc_baseline", grid = { math.min(cdiv(total, 256), 65536), 1, 1 },
  block = { 256, 1, 1 }, args = { buffer("x"), buffer("y"), u64(total), u32(D), u32(H), u32(W), u32(OD), u32(OH),
  u32(OW), u32(KD), u32(KH), u32(KW), u32(%d), u32(%d), u32(%d), i32(%d) } } } }
]]):format(sizes(nd, w), w.S, w.P, w.DL, avg) }
  -- One comparison or add per window element.
  local win = w.K ^ nd
  env.flops = function(d)
    local n = d.N * d.C
    local function o(v) return (v + 2 * w.P - w.DL * (w.K - 1) - 1) // w.S + 1 end
    for i = 3, #DIMS[nd] do n = n * o(d[DIMS[nd][i]]) end
    return n * win
  end
  env.targets = {}
  env.plan = ([[
-- Default plan: one thread per output element, blocks of 256.
%s
local total = N * C * OD * OH * OW
return { launches = { { kernel = "%s", grid = { cdiv(total, 256), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("x"), buffer("y"), %s } } } }
]]):format(sizes(nd, w), kernel, tx.plan)
end

return F
