-- klab.task.compose_conv: the fields of a composed task whose chain starts
-- with a convolution (klab.task.compose checks the chain and calls
-- fields). x, w, conv_bias and y in torch's NCHW layouts, a row one output
-- channel's plane, vectors one value per channel; the reference is
-- tasks/conv/reference.cu's fp64 sums then chain.cu's chain_ref, the
-- baseline cuDNN's convolution (a prologue described per variant) then
-- chain_baseline_inplace. A chain that reduces across the channels
-- (channel_*) runs its steps before the reduction on every plane, reduces
-- with chain_across_ref / chain_across_baseline, and runs the steps after
-- it on the one plane left per image.
--
--   compose_conv.fields(out, ch, f, kernel, lines, h) -> the descriptor's
--       compose info; h: compose's plan helpers (lua_width, vector_args,
--       program_args, params_and_suite)
local M = {}

local lua_width, vector_args, program_args, params_and_suite

-- A chain after a convolution. The reference: the convolution's sums in
-- fp64 (every element, or the sampled rows' elements, workspace E) into T,
-- then the chain in fp64, one block per row (one channel's plane).
local CONV_REFERENCE_PLAN = [[
local OD, OH, OW = %s, %s, %s
local P = OD * OH * OW
local wout = %s
local rows = nsample > 0 and nsample or N * K
local ws = { T = { bytes = 8 * rows * P }, U = { bytes = 8 * rows * P } }
local launches, at = {}, buffer("positions")
if nsample > 0 then
  ws.E = { bytes = 8 * rows * P }
  launches[1] = { kernel = "chain_row_units", grid = { math.min(cdiv(rows * P, 256), 65536), 1, 1 },
    block = { 256, 1, 1 }, args = { buffer("positions"), u64(rows), u32(P), workspace("E") } }
  at = workspace("E")
end
launches[#launches + 1] = { kernel = "conv_ncdhw_ref64", grid = { cdiv(rows * P, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), buffer("w"), %s, at, u64(rows * P), workspace("T"), i32(%d), %s } }
launches[#launches + 1] = { kernel = "chain_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { workspace("T"), workspace("U"), u32(P), u32(P), buffer("y"), u32(wout), buffer("positions"), u64(0),
           u32(K), %s, %s } }
return { workspace = ws, launches = launches }
]]

-- The baseline's chain after cuDNN's convolution (into the workspace T):
-- the convolution's bias and the chain, in place, one block per row.
local CONV_BASELINE_PLAN = [[
local P = %s
local wout = %s
return { workspace = { T = { bytes = 4 * N * K * P } }, launches = { { kernel = "chain_baseline_inplace",
  grid = { N * K, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { workspace("T"), u32(P), buffer("y"), u32(wout), u32(K), %s, %s, %s } } } }
]]

-- A chain that reduces across the channels. The reference: the
-- convolution's sums of every plane of the images (or of the sampled
-- images: workspace E) into T; the steps before the reduction in fp64 on
-- each plane (their fp64 rows stay in U, S takes the fp32 copy); the
-- reduction into V, one plane per image; the steps after it on V's planes.
local CONV_ACROSS_REFERENCE_PLAN = [[
local OD, OH, OW = %s, %s, %s
local P = OD * OH * OW
local P1, wout = %s, %s
local images = nsample > 0 and nsample or N
local rows = images * K
local ws = { T = { bytes = 8 * rows * P }, U = { bytes = 8 * rows * P }, S = { bytes = 4 * rows * P1 },
  V = { bytes = 8 * images * P1 }, Q = { bytes = 8 * images * P1 } }
local launches, at = {}, u64(0)
if nsample > 0 then
  ws.E = { bytes = 8 * rows * P }
  launches[1] = { kernel = "chain_image_units", grid = { math.min(cdiv(rows * P, 256), 65536), 1, 1 },
    block = { 256, 1, 1 }, args = { buffer("positions"), u64(images), u32(K), u32(P), workspace("E") } }
  at = workspace("E")
end
launches[#launches + 1] = { kernel = "conv_ncdhw_ref64", grid = { cdiv(rows * P, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), buffer("w"), %s, at, u64(rows * P), workspace("T"), i32(%d), %s } }
launches[#launches + 1] = { kernel = "chain_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { workspace("T"), workspace("U"), u32(P), u32(P), workspace("S"), u32(P1), u64(0), u64(0),
           u32(K), %s, %s } }
launches[#launches + 1] = { kernel = "chain_across_ref", grid = { cdiv(images * P1, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { workspace("U"), u32(P), u32(K), u32(P1), i32(%d), workspace("V"), u64(images) } }
launches[#launches + 1] = { kernel = "chain_ref", grid = { images, 1, 1 }, block = { 256, 1, 1 },
  args = { workspace("V"), workspace("Q"), u32(P1), u32(P1), buffer("y"), u32(wout), u64(0), u64(0),
           u32(1), %s, %s } }
return { workspace = ws, launches = launches }
]]

-- The baseline of such a chain after cuDNN's convolution (into T): the
-- bias and the steps before the reduction in place on every plane (into
-- S), the reduction into V, the steps after it on V's planes.
local CONV_ACROSS_BASELINE_PLAN = [[
local P = %s
local P1, wout = %s, %s
return { workspace = { T = { bytes = 4 * N * K * P }, S = { bytes = 4 * N * K * P1 }, V = { bytes = 4 * N * P1 } },
  launches = {
    { kernel = "chain_baseline_inplace", grid = { N * K, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
      args = { workspace("T"), u32(P), workspace("S"), u32(P1), u32(K), %s, %s, %s } },
    { kernel = "chain_across_baseline", grid = { cdiv(N * P1, 256), 1, 1 }, block = { 256, 1, 1 },
      args = { workspace("S"), u32(P1), u32(K), u32(P1), i32(%d), workspace("V"), u64(N) } },
    { kernel = "chain_baseline_inplace", grid = { N, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
      args = { workspace("V"), u32(P1), buffer("y"), u32(wout), u32(1), u64(0), %s, %s } } } }
]]

-- The steps before and after a reduction across channels.
local function split_at_across(ch)
  local before, after = {}, {}
  for i, s in ipairs(ch.steps) do
    if i < ch.across.at then before[#before + 1] = s elseif i > ch.across.at then after[#after + 1] = s end
  end
  return before, after
end

-- A convolution's output extent on an axis of n.
local function out_extent(g, n)
  if g.transposed then return (n - 1) * g.s - 2 * g.p + g.k + g.op end
  return (n + 2 * g.p - g.k) // g.s + 1
end

-- A chain after a convolution in words: the convolution, the steps
-- (lines), y's shape and the default plan's signature.
local function conv_description(g, ch, kernel, lines, y, decl, dims_decl, here)
  local sp_x, sp_o, outs = {}, {}, {}
  local letters = g.nd == 3 and { "d", "h", "w" } or { "h", "w" }
  for i, a in ipairs(g.axes) do
    sp_x[i] = a[1]
    sp_o[i] = "O" .. a[1]
    outs[i] = ("O%s = %s"):format(a[1], a[2])
  end
  local what = g.transposed and ("transposed %d-D convolution (torch.nn.functional.conv_transpose%dd)"):format(g.nd, g.nd)
    or ("%d-D convolution (cross-correlation, torch.nn.functional.conv%dd)"):format(g.nd, g.nd)
  -- Coordinate o·stride - padding + tap, the trivial terms left out.
  local function at(o, l)
    return (g.s == 1 and o or o .. "·" .. g.s) .. (g.p == 0 and "" or " - " .. g.p) .. " + t" .. l
  end
  local formula
  if g.transposed then
    local place = {}
    for i, l in ipairs(letters) do place[i] = at(l, l) end
    formula = ("every x[n, c, %s] adds x[n, c, %s]·w[c, k, %s] to x'[n, k, %s]\n     (places outside the output " ..
      "dropped)"):format(table.concat(letters, ", "), table.concat(letters, ", "),
      "t" .. table.concat(letters, ", t"), table.concat(place, ", "))
  else
    local place = {}
    for i, l in ipairs(letters) do place[i] = at("o" .. l, l) end
    formula = ("x'[n, k, o%s] = sum over c < C and taps t of x[n, c, %s]·w[k, c, t%s]\n     (x is 0 " ..
      "outside)"):format(table.concat(letters, ", o"), table.concat(place, ", "), table.concat(letters, ", t"))
  end
  local wdesc = g.transposed and "w[C, K, " or "w[K, C, "
  local kk = {}
  for i = 1, g.nd do kk[i] = tostring(g.k) end
  return ([[
Write a CUDA kernel named `%s` that computes, in one pass, a %s
followed by a chain of operations, in fp32 (as accurate as fp32 allows: no
narrower intermediate; TF32 tensor cores alone are not):
  1. the convolution of x[N, C, %s] by %s%s] (torch's layouts, row-major,
     kernel %d, stride %d, zero padding %d%s)%s:
     %s,
     with %s. Each step after it runs on
     one row: the plane of one output channel k of one image n (row n*K + k
     of %s values)
%s
and writes y[%s] (row-major) in fp32. Here %s.
With the default launch plan the kernel is
  extern "C" __global__ void %s(%s,
      %s)
launched with a grid of %s blocks of 256 threads and no dynamic shared
memory: block r owns row r of y. Send your own plan to change any of this.]]):format(kernel, what,
    table.concat(sp_x, ", "), wdesc, table.concat(kk, ", "), g.k, g.s, g.p,
    g.op > 0 and (", output padding %d"):format(g.op) or "",
    ch.bias and " plus conv_bias[k] on\n     every output of channel k" or ", no bias", formula,
    table.concat(outs, ", "), table.concat(sp_o, "*"), lines,
    table.concat(y, ", "), table.concat(here, ", "), kernel, table.concat(decl, ", "), table.concat(dims_decl, ", "),
    ch.across and "N" or "N*K")
end

function M.fields(out, ch, f, kernel, lines, h)
  lua_width, vector_args, program_args, params_and_suite = h.lua_width, h.vector_args, h.program_args,
    h.params_and_suite
  local g = ch.conv
  local sp = {}
  for i, a in ipairs(g.axes) do sp[i] = a[1] end
  out.dims = { "N", "C", table.unpack(sp) }
  out.dims[#out.dims + 1] = "K"
  local x, w, y = { "N", "C" }, g.transposed and { "C", "K" } or { "K", "C" }, { "N", ch.across and "1" or "K" }
  for _, a in ipairs(g.axes) do x[#x + 1], w[#w + 1] = a[1], g.k end
  if ch.dims then
    for _, e in ipairs(ch.dims) do y[#y + 1] = e end
  else
    y[#y + 1] = ch.width
  end
  out.buffers = {
    x = { role = "input", dtype = "f32", shape = x },
    w = { role = "input", dtype = "f32", shape = w },
    y = { role = "output", dtype = "f32", shape = y },
  }
  -- x ~ U(0, 1), as KernelBench's torch.rand; w ~ N(0, 3/fan) for the fan
  -- in of the first variant (C·k^nd taps, a transposed convolution's
  -- divided by stride^nd), so that the convolution's outputs have a
  -- standard deviation near 1 and the ops after it see values where they
  -- bend; the bias ~ N(0, 0.1²) and the vectors ~ N(0, 1) (torch.randn).
  local v1 = type(f.variants) == "table" and f.variants[1] or {}
  local fan = (math.type(v1.C) == "integer" and v1.C or 1) * g.k ^ g.nd / (g.transposed and g.s ^ g.nd or 1)
  out.inputs = { x = { dist = "uniform", lo = 0, hi = 1 }, w = { dist = "normal", mean = 0, std = math.sqrt(3 / fan) } }
  params_and_suite(out, ch, "conv_bias", "K", "rand", "x", { dist = "uniform", lo = 0, hi = 3 })
  local ext = {}
  for i, a in ipairs(g.axes) do ext[i] = lua_width(a[2]) end
  if g.nd == 2 then table.insert(ext, 1, "1") end
  local geo = ("u32(C), u32(%s), u32(H), u32(W), u32(K), u32(%d), u32(%d), u32(%d), u32(%d), u32(%d), u32(%d), " ..
    "u32(%d), u32(%d), u32(%d), u32(1), u32(1), u32(1), u32(1), u32(OD), u32(OH), u32(OW)"):format(
    g.nd == 3 and "D" or "1", g.nd == 3 and g.k or 1, g.k, g.k, g.nd == 3 and g.p or 0, g.p, g.p,
    g.nd == 3 and g.s or 1, g.s, g.s)
  local bias_arg = ch.bias and 'buffer("conv_bias")' or "u64(0)"
  local wl = ch.width == ch.full and "P" or lua_width(ch.width)
  local plane = lua_width(g.plane)
  local ref_plan, base_plan
  if ch.across then
    local before, after = split_at_across(ch)
    local p1 = ch.across.width == ch.full and "P" or lua_width(ch.across.width)
    ref_plan = CONV_ACROSS_REFERENCE_PLAN:format(ext[1], ext[2], ext[3], p1, wl, bias_arg, g.transposed and 1 or 0,
      geo, vector_args(ch), program_args(ch, before), ch.across.how, vector_args(ch), program_args(ch, after))
    base_plan = CONV_ACROSS_BASELINE_PLAN:format(plane, p1, wl, bias_arg, vector_args(ch), program_args(ch, before),
      ch.across.how, vector_args(ch), program_args(ch, after))
  else
    ref_plan = CONV_REFERENCE_PLAN:format(ext[1], ext[2], ext[3], wl, bias_arg, g.transposed and 1 or 0, geo,
      vector_args(ch), program_args(ch))
    base_plan = CONV_BASELINE_PLAN:format(plane, wl, bias_arg, vector_args(ch), program_args(ch))
  end
  -- A unit is a row of y: one channel's plane, or one image's plane after
  -- a reduction across channels (whose sampled check recomputes all K of
  -- its planes, hence fewer).
  out.reference = { source = "chain.cu", accumulate = "f64", units = { y = ch.width }, sample = ch.across and 4 or 16,
    plan = ref_plan }
  out.baseline = { source = "chain.cu", name = ch.across
      and "cuDNN's fp32 convolution, then the chain in fp32 kernels (per plane, across channels, per plane)"
      or "cuDNN's fp32 convolution, then the chain in one fp32 kernel",
    plan = base_plan,
    prologue = { lib = "cudnn", op = "graph", c = "T", modes = { "fp32" }, spec = function(d)
      local xd, yd = { d.N, d.C }, { d.N, d.K }
      local wd = g.transposed and { d.C, d.K } or { d.K, d.C }
      local pad, stride, dil = {}, {}, {}
      for i, a in ipairs(g.axes) do
        xd[#xd + 1], yd[#yd + 1], wd[#wd + 1] = d[a[1]], out_extent(g, d[a[1]]), g.k
        pad[i], stride[i], dil[i] = g.p, g.s, 1
      end
      local op = g.transposed and { op = "conv_bwd_data", inputs = { dy = "x", w = "w" }, outputs = { dx = "T" } }
        or { op = "conv_fwd", inputs = { x = "x", w = "w" }, outputs = { y = "T" } }
      op.padding, op.stride, op.dilation = pad, stride, dil
      return { tensors = { x = { dtype = "f32", dims = xd }, w = { dtype = "f32", dims = wd },
        T = { dtype = "f32", dims = yd } }, ops = { op }, compute = "f32" }
    end } }
  local steps = ch.steps
  -- Two FLOPs per multiply-add of the direct (forward or scattering)
  -- convolution, padding taps included, then the chain's: each op's count
  -- per element it reads (a pooling reads the plane and leaves its windows;
  -- a reduction across channels reads every plane and leaves one per image).
  out.flops = function(d)
    local inner, outer, dims = 1, 1, {}
    for i, a in ipairs(g.axes) do
      dims[i] = out_extent(g, d[a[1]])
      inner, outer = inner * d[a[1]], outer * dims[i]
    end
    local n = math.tointeger(2 * d.N * d.K * d.C * g.k ^ g.nd * (g.transposed and inner or outer))
    local w, planes = outer, d.N * d.K
    for _, s in ipairs(steps) do
      n = n + s.flops * planes * w
      if s.across then
        planes = d.N
      elseif s.pool then
        w = 1
        for i = 1, #dims do
          dims[i] = dims[i] // s.pool.k
          w = w * dims[i]
        end
      elseif s.width then
        w = 1
      end
    end
    return n
  end
  out.targets = {}
  local args = { 'buffer("x")', 'buffer("w")' }
  local decl = { "const float *x", "const float *w" }
  if ch.bias then args[#args + 1], decl[#decl + 1] = 'buffer("conv_bias")', "const float *conv_bias" end
  for _, v in ipairs(ch.vectors) do args[#args + 1], decl[#decl + 1] = ('buffer("%s")'):format(v), "const float *" .. v end
  args[#args + 1], decl[#decl + 1] = 'buffer("y")', "float *y"
  local dims_u, dims_decl, here = {}, {}, {}
  for _, d in ipairs(out.dims) do
    dims_u[#dims_u + 1], dims_decl[#dims_decl + 1], here[#here + 1] = "u32(" .. d .. ")", "unsigned " .. d,
      d .. "=${" .. d .. "}"
  end
  out.plan = ([[
-- Default plan: one launch of `%s`, a block of 256 threads per row of y
-- (%s).
return { launches = { { kernel = "%s", grid = { %s, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { %s, %s } } } }
]]):format(kernel, ch.across and "the one plane of an image left after the reduction across channels"
    or "one output channel's plane of one image", kernel, ch.across and "N" or "N * K", table.concat(args, ", "),
    table.concat(dims_u, ", "))
  out.description = conv_description(g, ch, kernel, lines, y, decl, dims_decl, here)
  if ch.across then
    return { sources = "conv", baseline = "sequence: cuDNN's convolution graph (fp32), then chain_baseline_inplace " ..
      "for the bias and the steps before the reduction across channels, chain_across_baseline, and " ..
      "chain_baseline_inplace for the steps after it (tasks/fused/chain.cu)" }
  end
  return { sources = "conv", baseline = "sequence: cuDNN's convolution graph (fp32), then chain_baseline_inplace " ..
    "(tasks/fused/chain.cu) for the bias and the rest" }
end

return M
