-- What the NCHW convolutions share (conv2d_nchw_f32.lua, convt2d_nchw_f32.lua):
-- PyTorch's nn.Conv2d and nn.ConvTranspose2d without a bias, in fp32, with
-- a padding, a stride and a dilation per axis and G groups. Dimensions: N
-- images, C input channels of H x W, K output channels, an R x S filter,
-- paddings PH and PW, strides UH and UW, dilations DH and DW. The forward
-- convolution's output is OH x OW with OH = (H + 2PH - DH(R-1) - 1)/UH + 1;
-- the transposed one's is (H - 1)UH - 2PH + DH(R-1) + 1 (no output
-- padding), and it is cuDNN's data gradient of the forward convolution
-- whose output is its input.
local cv = include "_family.lua"
local F = {}

F.dims = { "N", "C", "H", "W", "K", "R", "S", "PH", "PW", "UH", "UW", "DH", "DW", "G" }
F.zero_dims = { "PH", "PW" }
F.inputs, F.trials, F.distributions = cv.inputs, cv.trials, cv.distributions

-- Shape expressions of the output's extents, and their values.
F.OUT = {
  fwd = { "(H+2*PH-DH*(R-1)-1)//UH+1", "(W+2*PW-DW*(S-1)-1)//UW+1" },
  bwd = { "(H-1)*UH-2*PH+DH*(R-1)+1", "(W-1)*UW-2*PW+DW*(S-1)+1" },
}
function F.out(kind, d)
  if kind == "fwd" then
    return (d.H + 2 * d.PH - d.DH * (d.R - 1) - 1) // d.UH + 1, (d.W + 2 * d.PW - d.DW * (d.S - 1) - 1) // d.UW + 1
  end
  return (d.H - 1) * d.UH - 2 * d.PH + d.DH * (d.R - 1) + 1, (d.W - 1) * d.UW - 2 * d.PW + d.DW * (d.S - 1) + 1
end

-- A variant named name: the dimensions given, padding 0, stride, dilation
-- and groups 1 where not.
function F.variant(name, d, tags)
  d.name, d.tags = name, tags
  for k, x in pairs { PH = 0, PW = 0, UH = 1, UW = 1, DH = 1, DW = 1, G = 1 } do d[k] = d[k] or x end
  return d
end

-- As conv2d_f32: an fp32 sum of up to a few thousand products in any order
-- is within about u·n/√6 ≈ 6e-5 of the fp64 one on N(0,1) values; atol =
-- 2e-3 and rtol = 1e-4 pass it and fail TF32 inputs (errors near 5e-4·√n).
-- atol scales with the inputs (tol_scale in the distributions).
F.tolerance = { f32 = { atol = 2e-3, rtol = 1e-4, matched = 1.0 } }

-- The plan text's output extents and the dimensions' arguments.
local ARGS = "u32(C), u32(H), u32(W), u32(K), u32(R), u32(S), u32(PH), u32(PW), u32(UH), u32(UW), u32(DH), u32(DW), u32(G)"
local function outs_text(kind)
  local o = F.OUT[kind]
  return ("local OH, OW = %s, %s"):format(o[1], o[2])
end

-- The reference (reference.cu): a thread per element of y, its taps in fp64.
function F.reference(kind)
  return { source = "reference.cu", accumulate = "f64", units = { y = 1 }, plan = ([[
%s
local total = nsample > 0 and nsample or buffers.y.numel
return { launches = { { kernel = "%s", grid = { cdiv(total, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), buffer("w"), buffer("positions"), u64(total), buffer("y"), %s, u32(OH), u32(OW) } } } }
]]):format(outs_text(kind), kind == "fwd" and "conv_nchw_ref" or "convt_nchw_ref", ARGS) }
end

-- cuDNN's graph on packed NCHW tensors (no layout given: row major); the
-- filter is [K, C/G, R, S] for the forward convolution and [C, K/G, R, S]
-- for the transposed one, as torch stores them: the forward convolution
-- whose data gradient it is maps K channels to C.
function F.baseline(kind)
  return { lib = "cudnn", op = "graph", modes = { "fp32", "tf32" }, spec = function(d)
    local oh, ow = F.out(kind, d)
    local t = function(dims) return { dtype = "f32", dims = dims } end
    local geom = { padding = { d.PH, d.PW }, stride = { d.UH, d.UW }, dilation = { d.DH, d.DW } }
    local op
    if kind == "fwd" then
      op = { op = "conv_fwd", inputs = { x = "x", w = "w" }, outputs = { y = "y" } }
    else
      op = { op = "conv_bwd_data", inputs = { dy = "x", w = "w" }, outputs = { dx = "y" } }
    end
    for k, v in pairs(geom) do op[k] = v end
    local w = kind == "fwd" and { d.K, d.C // d.G, d.R, d.S } or { d.C, d.K // d.G, d.R, d.S }
    return { tensors = { x = t { d.N, d.C, d.H, d.W }, w = t(w), y = t { d.N, d.K, oh, ow } }, ops = { op },
      compute = "f32" }
  end }
end

-- Two FLOPs per multiply-add of the direct (forward or scattering)
-- convolution, padding taps included.
function F.flops(kind)
  return function(d)
    if kind == "bwd" then return 2 * d.N * d.C * d.H * d.W * (d.K // d.G) * d.R * d.S end
    local oh, ow = F.out(kind, d)
    return 2 * d.N * d.K * oh * ow * (d.C // d.G) * d.R * d.S
  end
end

-- The default plan: one thread per element of y, blocks of 256.
function F.plan(kind, kernel)
  return ([[
-- Default plan: one thread per element of y, blocks of 256.
%s
return { launches = { { kernel = "%s", grid = { cdiv(N * K * OH * OW, 256), 1, 1 }, block = { 256, 1, 1 },
  shared = 0, args = { buffer("x"), buffer("w"), buffer("y"), u32(N), %s } } } }
]]):format(outs_text(kind), kernel, ARGS)
end

-- The sizes line of a description, and the default plan's signature.
F.HERE = "Here N=${N}, C=${C}, H=${H}, W=${W}, K=${K}, R=${R}, S=${S},\nPH=${PH}, PW=${PW}, UH=${UH}, UW=${UW}, DH=${DH}, DW=${DW}, G=${G}."
function F.signature(kernel)
  return ([[
  extern "C" __global__ void %s(const float *x, const float *w, float *y,
      unsigned N, unsigned C, unsigned H, unsigned W, unsigned K, unsigned R, unsigned S,
      unsigned PH, unsigned PW, unsigned UH, unsigned UW, unsigned DH, unsigned DW, unsigned G)
launched with one thread per element of y (in y's order): a grid of
(ceil(N*K*OH*OW/256), 1, 1) blocks of 256 threads and no dynamic shared
memory. Send your own plan to change any of this.]]):format(kernel)
end

return F
