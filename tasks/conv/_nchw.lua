-- What the channels-first convolutions share (conv_nchw_f32.lua,
-- convt_nchw_f32.lua, conv3d_f32.lua, convt3d_f32.lua): PyTorch's
-- nn.Conv2d / nn.Conv3d and nn.ConvTranspose2d / nn.ConvTranspose3d
-- without a bias, in fp32, with a padding, a stride and a dilation per
-- axis and G groups. Dimensions: N images, C input channels of
-- (D x) H x W, K output channels, a (T x) R x S filter, paddings (PD,) PH,
-- PW, strides (UD,) UH, UW, dilations (DD,) DH, DW; the 3-D transposed
-- convolution also has an output padding (AD, AH, AW). The forward
-- convolution's output extent on an axis of n is (n + 2P - Dl(k-1) - 1)/U
-- + 1; the transposed one's is (n - 1)U - 2P + Dl(k-1) + 1 (+ A), and it
-- is cuDNN's data gradient of the forward convolution whose output is its
-- input. The reference is reference.cu's conv_ncdhw_ref (a 2-D task runs
-- it with a depth of 1).
local cv = include "_family.lua"
local F = {}

F.inputs, F.trials, F.distributions = cv.inputs, cv.trials, cv.distributions

-- As conv2d_f32: an fp32 sum of up to a few thousand products in any order
-- is within about u·n/√6 ≈ 6e-5 of the fp64 one on N(0,1) values; atol =
-- 2e-3 and rtol = 1e-4 pass it and fail TF32 inputs (errors near 5e-4·√n).
-- atol scales with the inputs (tol_scale in the distributions).
F.tolerance = { f32 = { atol = 2e-3, rtol = 1e-4, matched = 1.0 } }

-- The spatial axes: (input extent, filter extent, padding, stride,
-- dilation, output padding).
local AXES = {
  D = { "D", "T", "PD", "UD", "DD", "AD" },
  H = { "H", "R", "PH", "UH", "DH", "AH" },
  W = { "W", "S", "PW", "UW", "DW", "AW" },
}

-- The geometry of nd spatial dimensions, forward ("fwd") or transposed
-- ("bwd"): its dimension names, axes and output extent expressions.
local function geometry(nd, kind)
  local axes = nd == 3 and { AXES.D, AXES.H, AXES.W } or { AXES.H, AXES.W }
  local dims = { "N", "C" }
  for _, a in ipairs(axes) do dims[#dims + 1] = a[1] end
  dims[#dims + 1] = "K"
  for i = 2, 5 do
    for _, a in ipairs(axes) do dims[#dims + 1] = a[i] end
  end
  local zero = {}
  for _, a in ipairs(axes) do zero[#zero + 1] = a[3] end
  local padded_out = nd == 3 and kind == "bwd"
  if padded_out then
    for _, a in ipairs(axes) do
      dims[#dims + 1] = a[6]
      zero[#zero + 1] = a[6]
    end
  end
  dims[#dims + 1] = "G"
  local outs = {}
  for i, a in ipairs(axes) do
    local n, k, p, u, dl, op = a[1], a[2], a[3], a[4], a[5], a[6]
    outs[i] = kind == "fwd" and ("(%s+2*%s-%s*(%s-1)-1)//%s+1"):format(n, p, dl, k, u)
      or ("(%s-1)*%s-2*%s+%s*(%s-1)+1%s"):format(n, u, p, dl, k, padded_out and ("+" .. op) or "")
  end
  return { nd = nd, kind = kind, axes = axes, dims = dims, zero = zero, outs = outs, padded_out = padded_out }
end

-- A dimension's value in a variant, its default where the variant has none.
local DEFAULT = { PD = 0, PH = 0, PW = 0, UD = 1, UH = 1, UW = 1, DD = 1, DH = 1, DW = 1, AD = 0, AH = 0, AW = 0, G = 1 }

local function out_extents(geo, d)
  local out = {}
  for i, a in ipairs(geo.axes) do
    local n, k, p, u, dl = d[a[1]], d[a[2]], d[a[3]], d[a[4]], d[a[5]]
    out[i] = geo.kind == "fwd" and (n + 2 * p - dl * (k - 1) - 1) // u + 1
      or (n - 1) * u - 2 * p + dl * (k - 1) + 1 + (geo.padded_out and d[a[6]] or 0)
  end
  return out
end

-- The reference's arguments: the geometry, a 2-D one with a depth of 1.
local function ref_args(geo)
  local names = { "C", "D", "H", "W", "K", "T", "R", "S", "PD", "PH", "PW", "UD", "UH", "UW", "DD", "DH", "DW", "G" }
  local two = { D = 1, T = 1, PD = 0, UD = 1, DD = 1 }
  local out = {}
  for i, n in ipairs(names) do out[i] = ("u32(%s)"):format(geo.nd == 2 and two[n] or n) end
  return table.concat(out, ", ")
end

-- The words of the 2-D forward convolution (conv2d_nchw_f32.lua and, with
-- its bias, conv2d_nchw_bias_f32.lua).
function F.conv2d_description(kernel, bias)
  return ([[
Write a CUDA kernel named `%s` that computes a 2-D convolution
(cross-correlation, as torch.nn.functional.conv2d%s) in fp32:
x[N, C, H, W]%s and w[K, C/G, R, S] in, y[N, K, OH, OW] out, all row-major
(NCHW), with zero padding PH (rows) and PW (columns) on both sides, strides
UH and UW, dilations DH and DW and G groups:
  y[n,k,oh,ow] = %ssum over c < C/G, r < R, s < S of
      x[n, g*(C/G) + c, oh*UH - PH + r*DH, ow*UW - PW + s*DW] * w[k, c, r, s]
where g = k / (K/G) and x outside the image is 0;
OH = (H + 2*PH - DH*(R-1) - 1)/UH + 1 and OW = (W + 2*PW - DW*(S-1) - 1)/UW + 1,
rounded down. Sums in fp32 or better (TF32 tensor cores alone are not
enough).]]):format(kernel, bias and "" or " without a bias", bias and ", bias[K]" or "", bias and "bias[k] + " or "")
end

-- Sets every field of a task in env. t = { nd = 2 | 3, kind = "fwd" |
-- "bwd", name =, kernel =, description = (the operation in words; the
-- sizes and the default plan's signature are added), variants = { {
-- name, dims (defaults above), tags }, ... }, bias = (true: an input
-- bias[K] added to every output of channel k) }.
function F.define(env, t)
  local geo = geometry(t.nd, t.kind)
  env.name, env.family, env.kernel = t.name, "conv", t.kernel
  env.tags = { "conv", "f32", t.nd == 3 and "ncdhw" or "nchw", t.kind == "bwd" and "transposed" or nil }
  env.dims, env.zero_dims = geo.dims, geo.zero
  local here, args = {}, {}
  for _, d in ipairs(geo.dims) do
    here[#here + 1] = d .. "=${" .. d .. "}"
    args[#args + 1] = "unsigned " .. d
  end
  local outs_word = t.nd == 3 and "OD*OH*OW" or "OH*OW"
  env.description = t.description .. "\nHere " .. table.concat(here, ", ") .. ".\n" .. ([[
With the default launch plan the kernel is
  extern "C" __global__ void %s(const float *x, const float *w,%s float *y,
      %s)
launched with one thread per element of y (in y's order): a grid of
(ceil(N*K*%s/256), 1, 1) blocks of 256 threads and no dynamic shared
memory. Send your own plan to change any of this.]]):format(t.kernel, t.bias and " const float *bias," or "",
    table.concat(args, ", "), outs_word)
  env.variants = {}
  for i, v in ipairs(t.variants) do
    local d = { name = v[1], tags = v[3] }
    for _, n in ipairs(geo.dims) do d[n] = v[2][n] or DEFAULT[n] end
    env.variants[i] = d
  end
  local sp = {}
  for _, a in ipairs(geo.axes) do sp[#sp + 1] = a[1] end
  local y = { "N", "K" }
  for _, o in ipairs(geo.outs) do y[#y + 1] = o end
  local x = { "N", "C" }
  for _, n in ipairs(sp) do x[#x + 1] = n end
  local w = t.kind == "fwd" and { "K", "C/G" } or { "C", "K/G" }
  for _, a in ipairs(geo.axes) do w[#w + 1] = a[2] end
  env.buffers = {
    x = { role = "input", dtype = "f32", shape = x },
    w = { role = "input", dtype = "f32", shape = w },
    y = { role = "output", dtype = "f32", shape = y },
  }
  env.inputs, env.trials, env.distributions, env.tolerance = F.inputs, F.trials, F.distributions, F.tolerance
  local bias_arg = t.bias and 'buffer("bias")' or "u64(0)"
  if t.bias then
    env.buffers.bias = { role = "input", dtype = "f32", shape = { "K" } }
    env.inputs = { x = F.inputs.x, w = F.inputs.w, bias = { dist = "normal", mean = 0, std = 1 } }
  end
  local outs_line = t.nd == 3 and ("local OD, OH, OW = %s, %s, %s"):format(geo.outs[1], geo.outs[2], geo.outs[3])
    or ("local OD, OH, OW = 1, %s, %s"):format(geo.outs[1], geo.outs[2])
  env.reference = { source = "reference.cu", accumulate = "f64", units = { y = 1 }, plan = ([[
%s
local total = nsample > 0 and nsample or buffers.y.numel
return { launches = { { kernel = "conv_ncdhw_ref", grid = { cdiv(total, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), buffer("w"), %s, buffer("positions"), u64(total), buffer("y"), i32(%d), %s,
           u32(OD), u32(OH), u32(OW) } } } }
]]):format(outs_line, bias_arg, t.kind == "bwd" and 1 or 0, ref_args(geo)) }
  -- cuDNN's graph on packed tensors (no layout given: row major); the
  -- filter is [K, C/G, ...] for the forward convolution and [C, K/G, ...]
  -- for the transposed one, as torch stores them: the forward convolution
  -- whose data gradient it is maps K channels to C.
  env.baseline = { lib = "cudnn", op = "graph", modes = { "fp32", "tf32" }, spec = function(d)
    local o = out_extents(geo, d)
    local xd, yd = { d.N, d.C }, { d.N, d.K }
    local wd = t.kind == "fwd" and { d.K, d.C // d.G } or { d.C, d.K // d.G }
    local pad, stride, dil = {}, {}, {}
    for i, a in ipairs(geo.axes) do
      xd[#xd + 1], yd[#yd + 1], wd[#wd + 1] = d[a[1]], o[i], d[a[2]]
      pad[i], stride[i], dil[i] = d[a[3]], d[a[4]], d[a[5]]
    end
    local op = t.kind == "fwd" and { op = "conv_fwd", inputs = { x = "x", w = "w" }, outputs = { y = "y" } }
      or { op = "conv_bwd_data", inputs = { dy = "x", w = "w" }, outputs = { dx = "y" } }
    op.padding, op.stride, op.dilation = pad, stride, dil
    local tensors = { x = { dtype = "f32", dims = xd }, w = { dtype = "f32", dims = wd }, y = { dtype = "f32", dims = yd } }
    local ops = { op }
    if t.bias then
      -- The convolution into a virtual tensor, then the bias [1, K, 1, ...] added.
      local bd = { 1, d.K }
      for _ = 1, #geo.axes do bd[#bd + 1] = 1 end
      tensors.acc = { dims = yd, virtual = true }
      tensors.bias = { dtype = "f32", dims = bd }
      op.outputs = t.kind == "fwd" and { y = "acc" } or { dx = "acc" }
      ops[2] = { op = "pointwise", mode = "ADD", inputs = { x = "acc", b = "bias" }, outputs = { y = "y" } }
    end
    return { tensors = tensors, ops = ops, compute = "f32" }
  end }
  -- Two FLOPs per multiply-add of the direct (forward or scattering)
  -- convolution, padding taps included.
  env.flops = function(d)
    local taps, n = 1, d.N
    for i, a in ipairs(geo.axes) do
      taps = taps * d[a[2]]
      n = n * (t.kind == "fwd" and out_extents(geo, d)[i] or d[a[1]])
    end
    return 2 * n * (t.kind == "fwd" and d.K * (d.C // d.G) or d.C * (d.K // d.G)) * taps
  end
  env.targets = {}
  local pargs = {}
  for _, n in ipairs(geo.dims) do pargs[#pargs + 1] = "u32(" .. n .. ")" end
  env.plan = ([[
-- Default plan: one thread per element of y, blocks of 256.
%s
return { launches = { { kernel = "%s", grid = { cdiv(N * K * OD * OH * OW, 256), 1, 1 }, block = { 256, 1, 1 },
  shared = 0, args = { buffer("x"), buffer("w"), %sbuffer("y"), %s } } } }
]]):format(outs_line, t.kernel, t.bias and 'buffer("bias"), ' or "", table.concat(pargs, ", "))
end

return F
