-- What the convolution task files share: 2D convolutions in NHWC
-- (channels-last), cross-correlation as deep-learning frameworks compute
-- it, zero padding. Three operations, each in bf16 and fp32:
--
--   conv2d     y[n,oh,ow,k] = sum_{r,s,c} x[n, oh*U-P+r, ow*U-P+s, c] * w[k,r,s,c]
--   dwconv2d   depthwise (groups = C): y[n,oh,ow,c] = sum_{r,s} x[n, oh*U-P+r, ow*U-P+s, c] * w[c,r,s]
--   convt2d    transposed (the data gradient of conv2d, cuDNN's
--              conv_bwd_data): y[n,h,w,c] = sum over (i, j, r, s) with
--              h = i*U-P+r, w = j*U-P+s of sum_k x[n,i,j,k] * w[k,r,s,c]
--
-- x values outside the image are zero. Dimensions: N images of H x W, C
-- input channels, K output channels (for convt2d: C is its output's
-- channels, K its input's), an R x S filter, padding P on every side,
-- stride U; OH = (H + 2P - R)/U + 1 and OW = (W + 2P - S)/U + 1 (rounded
-- down). Filters are [K, R, S, C] (cuDNN's NHWC filter layout, KRSC);
-- depthwise filters [C, R, S]. Task files take this with
-- `local cv = include "_family.lua"`.
local F = {}

F.dims = { "N", "H", "W", "C", "K", "R", "S", "P", "U" }
F.dw_dims = { "N", "H", "W", "C", "R", "S", "P", "U" }

-- Shape expressions of the forward output's spatial extents.
local OH, OW = "(H+2*P-R)//U+1", "(W+2*P-S)//U+1"
local function out_hw(d) return (d.H + 2 * d.P - d.R) // d.U + 1, (d.W + 2 * d.P - d.S) // d.U + 1 end

-- Variants are named n<N>_<H>x<W>_c<C>[_k<K>]_<R>x<S>_p<P>_u<U>.
function F.variant(v, tags)
  v.tags = tags
  v.name = string.format("n%d_%dx%d_c%d%s_%dx%d_p%d_u%d", v.N, v.H, v.W, v.C, v.K and ("_k" .. v.K) or "",
    v.R, v.S, v.P, v.U)
  return v
end

-- Buffers. conv2d and dwconv2d read an image x and write y at the output
-- size; convt2d reads x at the output size of the forward convolution and
-- writes y at the image size.
function F.conv_buffers(dt)
  return {
    x = { role = "input", dtype = dt, shape = { "N", "H", "W", "C" } },
    w = { role = "input", dtype = dt, shape = { "K", "R", "S", "C" } },
    y = { role = "output", dtype = dt, shape = { "N", OH, OW, "K" } },
  }
end

function F.dw_buffers(dt)
  return {
    x = { role = "input", dtype = dt, shape = { "N", "H", "W", "C" } },
    w = { role = "input", dtype = dt, shape = { "C", "R", "S" } },
    y = { role = "output", dtype = dt, shape = { "N", OH, OW, "C" } },
  }
end

function F.convt_buffers(dt)
  return {
    x = { role = "input", dtype = dt, shape = { "N", OH, OW, "K" } },
    w = { role = "input", dtype = dt, shape = { "K", "R", "S", "C" } },
    y = { role = "output", dtype = dt, shape = { "N", "H", "W", "C" } },
  }
end

F.inputs = {
  x = { dist = "normal", mean = 0, std = 1 },
  w = { dist = "normal", mean = 0, std = 1 },
}

-- KernelBench-Verified's hidden suite (x1, x3, x0.01, x-1 on x and w) and
-- PTXBench's spiky mix N(0,1) + N(0,100)·Bern(0.001) on both. y is a sum
-- of products of one x and one w, so y and every accumulation error scale
-- with the product of the two scales: atol is scaled by scale^2
-- (tol_scale); rtol needs no scaling. (x-1 leaves y unchanged: both signs
-- flip.)
F.trials = 2
local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
F.distributions = {
  { name = "randn" },
  { name = "x3", scale = 3, tol_scale = 9 },
  { name = "x0.01", scale = 0.01, tol_scale = 1e-4 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { x = SPIKY, w = SPIKY } },
}

-- bf16 outputs, as the GEMM tasks: one bf16 ulp is at most 2^-7 ≈ 7.8e-3
-- of the value, so a result that an fp32 sum in another order pushes across
-- a rounding boundary still passes rtol = 1e-2; near zero, atol = 1e-2
-- covers fp32 accumulation-order differences (u·n/√6 ≈ 6e-5 for a
-- sequential sum of n = C·R·S = 2304 products of N(0,1) values) with a wide
-- margin, while a kernel that accumulates in bf16 misses by whole units.
F.bf16_tolerance = { bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 } }

-- The trusted reference (reference.cu): every output element (a unit) is
-- its taps summed in fp64 in a fixed order from the values the kernel
-- sees, written as fp32. The units of a timed run's check (nsample > 0,
-- 8192 of them, each up to C·R·S multiply-adds) take a thread each; all of
-- y (nsample == 0) takes conv_ref_tiles where it applies (groups 1), the
-- same sums staged through shared memory in 64 x 64 tiles (make gpu-check
-- compares the two bit for bit).
local REFERENCE_PLAN = [[
local DT = { f32 = 0, bf16 = 2 }
local kernel, groups, tiled = %q, %s, %s
local OH, OW = (H + 2 * P - R) // U + 1, (W + 2 * P - S) // U + 1
local Kout = dims.K or C
local total = nsample > 0 and nsample or buffers.y.numel
if nsample == 0 and tiled then
  local pixels = tiled == 1 and N * H * W or N * OH * OW
  local outc = tiled == 1 and C or Kout
  return { launches = { { kernel = "conv_ref_tiles", grid = { cdiv(pixels, 64), cdiv(outc, 64), 1 },
    block = { 256, 1, 1 },
    args = { buffer("x"), i32(DT[buffers.x.dtype]), buffer("w"), i32(DT[buffers.w.dtype]), buffer("y"),
             u32(N), u32(H), u32(W), u32(C), u32(Kout), u32(R), u32(S), u32(P), u32(U), u32(OH), u32(OW),
             u32(tiled) } } } }
end
return { launches = { { kernel = kernel, grid = { cdiv(total, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), i32(DT[buffers.x.dtype]), buffer("w"), i32(DT[buffers.w.dtype]), buffer("positions"),
           u64(total), buffer("y"), u32(N), u32(H), u32(W), u32(C), u32(Kout), u32(R), u32(S), u32(P), u32(U),
           u32(OH), u32(OW), u32(groups) } } } }
]]

-- tiled: 0 (conv2d) or 1 (transposed) when conv_ref_tiles computes all of
-- y; nil for the depthwise convolution (groups C), whose units stay a
-- thread each.
local function reference(kernel, groups, tiled)
  return { source = "reference.cu", accumulate = "f64", units = { y = 1 },
    plan = REFERENCE_PLAN:format(kernel, groups, tostring(tiled)) }
end
F.conv_reference = reference("conv_fwd_ref", "1", 0)
F.dw_reference = reference("conv_fwd_ref", "C", nil)
F.convt_reference = reference("conv_bwd_data_ref", "1", 1)

-- The library baseline: a cuDNN graph of one convolution operation on
-- NHWC tensors named after the task's buffers (cuDNN's dimensions are in
-- N, C, H, W order; layout "nhwc" gives the channels-last strides, and the
-- filter [K, C/groups, R, S] in "nhwc" is stored K, R, S, C/groups: a
-- depthwise filter [C, 1, R, S] is [C, R, S]), fp32 compute. modes: bf16
-- tasks let the heuristic choose ("default"); fp32 tasks time strict FP32
-- engines with the candidate and TF32 ones beside it.
local function nhwc(dt, d) return { dtype = dt, dims = d, layout = "nhwc" } end

-- dims(d) -> cuDNN's dimensions of x, w and y for the variant d; op: the
-- operation, its roles bound to the task's buffers.
local function graph_baseline(dt, modes, dims, op)
  return { lib = "cudnn", op = "graph", modes = modes, spec = function(d)
    local xd, wd, yd = dims(d)
    local o = { padding = d.P, stride = d.U }
    for k, v in pairs(op) do o[k] = v end
    return { tensors = { x = nhwc(dt, xd), w = nhwc(dt, wd), y = nhwc(dt, yd) }, ops = { o }, compute = "f32" }
  end }
end

local FWD = { op = "conv_fwd", inputs = { x = "x", w = "w" }, outputs = { y = "y" } }

function F.conv_baseline(dt, modes)
  return graph_baseline(dt, modes, function(d)
    local oh, ow = out_hw(d)
    return { d.N, d.C, d.H, d.W }, { d.K, d.C, d.R, d.S }, { d.N, d.K, oh, ow }
  end, FWD)
end

function F.dw_baseline(dt, modes)
  return graph_baseline(dt, modes, function(d)
    local oh, ow = out_hw(d)
    return { d.N, d.C, d.H, d.W }, { d.C, 1, d.R, d.S }, { d.N, d.C, oh, ow }
  end, FWD)
end

-- convt2d is cuDNN's data gradient: its dy is the task's x (at the forward
-- output size, K channels), its dx the task's y.
function F.convt_baseline(dt, modes)
  return graph_baseline(dt, modes, function(d)
    local oh, ow = out_hw(d)
    return { d.N, d.K, oh, ow }, { d.K, d.C, d.R, d.S }, { d.N, d.C, d.H, d.W }
  end, { op = "conv_bwd_data", inputs = { dy = "x", w = "w" }, outputs = { dx = "y" } })
end

-- FLOPs: two per multiply-add of the direct convolution, taps that fall on
-- the padding included (the usual convention). No work rule: Winograd and
-- FFT convolutions compute the same result with fewer multiplications and
-- are fair play.
F.conv_flops = function(d)
  local oh, ow = out_hw(d)
  return 2 * d.N * oh * ow * d.K * d.C * d.R * d.S
end
F.dw_flops = function(d)
  local oh, ow = out_hw(d)
  return 2 * d.N * oh * ow * d.C * d.R * d.S
end

-- Tensor-core targets for the bf16 convolutions (implicit GEMMs), as for
-- the bf16 GEMM. The depthwise and fp32 tasks target nothing (below).
F.tensor_targets = {
  sm_90a = { "wgmma", "tma" },
  sm_100a = { "tcgen05.mma", "tcgen05.tmem", "tma" },
}

-- Text for a model: the definitions and layouts every description repeats.
F.geometry = [[
Here N=${N}, H=${H}, W=${W}, C=${C}, the filter is R x S = ${R} x ${S}, the
zero padding P=${P} on every side and the stride U=${U};
OH = (H + 2P - R)/U + 1 and OW = (W + 2P - S)/U + 1, rounded down.]]

F.own_plan = "Send your own plan to change any of this (tensor maps, clusters,\n" ..
  "dynamic shared memory, several launches)."

-- Default plans. A GEMM-like tile (128 output pixels x 64 output channels
-- per block of 256 threads) for conv2d and convt2d; one thread per output
-- element for the depthwise convolution.
function F.tile_plan(kernel, pixels, channels)
  return ([[
-- Default plan: one launch of `%s`, a block of 256 threads per tile of 128
-- output pixels by 64 output channels.
local OH, OW = (H + 2 * P - R) // U + 1, (W + 2 * P - S) // U + 1
return { launches = { { kernel = "%s", grid = { cdiv(%s, 128), cdiv(%s, 64), 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("x"), buffer("w"), buffer("y"), u32(N), u32(H), u32(W), u32(C), u32(K), u32(R), u32(S),
           u32(P), u32(U) } } } }
]]):format(kernel, kernel, pixels, channels)
end

F.dw_plan = [[
-- Default plan: one launch of `dwconv2d`, one thread per output element,
-- 256 per block.
local OH, OW = (H + 2 * P - R) // U + 1, (W + 2 * P - S) // U + 1
return { launches = { { kernel = "dwconv2d", grid = { cdiv(N * OH * OW * C, 256), 1, 1 }, block = { 256, 1, 1 },
  shared = 0,
  args = { buffer("x"), buffer("w"), buffer("y"), u32(N), u32(H), u32(W), u32(C), u32(R), u32(S), u32(P),
           u32(U) } } } }
]]

-- The descriptions. what: the types in words; ctype: the C element type.

-- The default signature of conv2d and conv_transpose2d and their tile
-- grid, in words.
local function tile_text(kernel, ctype, pixels, pixel_order, channels)
  return ([[
With the default launch plan the kernel is
  extern "C" __global__ void %s(const %s *x, const %s *w, %s *y,
      unsigned N, unsigned H, unsigned W, unsigned C, unsigned K,
      unsigned R, unsigned S, unsigned P, unsigned U)
launched with a grid of (ceil(%s/128), ceil(%s/64), 1) blocks of 256
threads and no dynamic shared memory: block (x, y) owns output pixels
128*x .. 128*x+127 (pixels counted as %s) and channels
64*y .. 64*y+63.
]]):format(kernel, ctype, ctype, ctype, pixels, channels, pixel_order) .. F.own_plan
end

function F.conv_description(what, ctype)
  return ([[
Write a CUDA kernel named `conv2d` that computes a 2D convolution in NHWC:
  y[n,oh,ow,k] = sum_{r<R, s<S, c<C} x[n, oh*U-P+r, ow*U-P+s, c] * w[k,r,s,c]
for an image batch x[N,H,W,C] (C channels), filters w[K,R,S,C] and the
output y[N,OH,OW,K] (K=${K} channels), all row-major,
%s.
Values of x outside the image are zero (cross-correlation: the filter is
not flipped).
]]):format(what) .. F.geometry .. "\n" .. tile_text("conv2d", ctype, "N*OH*OW", "(n*OH + oh)*OW + ow", "K")
end

function F.dw_description(what, ctype)
  return ([[
Write a CUDA kernel named `dwconv2d` that computes a depthwise 2D
convolution (groups = C: each channel convolved with its own filter) in NHWC:
  y[n,oh,ow,c] = sum_{r<R, s<S} x[n, oh*U-P+r, ow*U-P+s, c] * w[c,r,s]
for an image batch x[N,H,W,C], filters w[C,R,S] and the output y[N,OH,OW,C],
all row-major, %s.
Values of x outside the image are zero.
]] .. F.geometry .. [[

With the default launch plan the kernel is
  extern "C" __global__ void dwconv2d(const %s *x, const %s *w, %s *y,
      unsigned N, unsigned H, unsigned W, unsigned C, unsigned R,
      unsigned S, unsigned P, unsigned U)
launched with one thread per element of y, ceil(N*OH*OW*C/256) blocks of
256 threads and no dynamic shared memory.
]] .. F.own_plan):format(what, ctype, ctype, ctype)
end

function F.convt_description(what, ctype)
  return ([[
Write a CUDA kernel named `conv_transpose2d` that computes a transposed 2D
convolution in NHWC: the data gradient of the convolution of an image
y[N,H,W,C] with filters w[K,R,S,C] (cuDNN's backward-data convolution,
PyTorch's conv_transpose2d with the matching output size). With x[N,OH,OW,K]
as its input,
  y[n,h,w,c] = sum over i<OH, j<OW, r<R, s<S with h = i*U-P+r, w = j*U-P+s
               of sum_{k<K} x[n,i,j,k] * w[k,r,s,c],
all row-major, %s.
y has C channels, x has K=${K}.
]]):format(what) .. F.geometry .. "\n" ..
    tile_text("conv_transpose2d", ctype, "N*H*W", "(n*H + h)*W + w", "C")
end

F.BF16_TEXT = "in bf16 (__nv_bfloat16 bit patterns), accumulating in fp32 and\n" ..
  "writing y in bf16 (round to nearest even)"
F.F32_TEXT = "in fp32, as accurate as fp32 sums of products (TF32 inputs\n" ..
  "are not)"

return F
