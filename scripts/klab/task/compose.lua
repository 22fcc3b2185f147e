-- klab.task.compose: a task written as a chain of the library's operations
-- (KernelBench Level 2's fused chains): a linear layer or a convolution
-- followed by pointwise operations, row reductions, softmax, pooling or
-- GroupNorm.
--
--   compose = { ops.linear{}, ops.sub{ 2.0 }, ops.scale{ 1.5 }, ops.relu{} }
--   compose = { ops.conv2d{ kernel = 3 }, ops.relu{}, ops.add_vec{ name = "bias" } }
--
-- A task file that sets `compose` names its task, its variants (M, N, K
-- after a linear layer; N, C, (D,) H, W, K after a convolution) and its
-- tags; everything else follows from the chain (docs/tasks.md, "Composed
-- tasks"). After a linear layer:
--   buffers      X[M,K], W[N,K] (a linear layer's weight, as torch stores
--                it), bias[N] unless linear{ bias = false }, one [N] input per
--                add_vec / sub_vec / mul_vec, Y[M, width] in fp32
--   reference    the matmul family's mm_ref with its sums written in fp64,
--                then tasks/fused/chain.cu's program in fp64 (intermediates
--                never rounded), written as fp32; a unit is one row of Y
--   baseline     cuBLASLt's fp32 product (its bias epilogue), then
--                chain.cu's chain_baseline for the rest in fp32: the
--                library call PyTorch makes, with the ops after it in one
--                kernel instead of eager's one kernel per op
--   tolerance    from the output type and the chain (M.tolerance's reason)
--   FLOPs        the product's 2·M·N·K plus each op's count per element
--   description  the chain in words, and the default plan
-- After a convolution: klab.task.compose_conv's fields (torch's NCHW
-- layouts, cuDNN's convolution then chain.cu's kernels).
--
--   compose.SANDBOX                the `ops` constructors task files see
--   compose.expand(file, fields)   -> the task file's fields, completed; the
--                                  descriptor's compose field ({ops, tolerance, baseline, sources})
--   compose.sources(file, which, max_bytes, composed)
--                                  the reference's or baseline's code (read
--                                  from the library's tasks/)
-- Problems raise schema.fail naming the file and compose[i].

local schema = require("klab.task.schema")
local fail = schema.fail

local M = {}

-- What a task file sees as `ops`: each constructor records its name and
-- its arguments; expand checks them.
M.SANDBOX = [[
local ops = setmetatable({}, { __index = function(_, name)
  return function(args)
    local t = { op = name }
    if type(args) == "table" then for k, v in next, args do t[k] = v end
    elseif args ~= nil then t[1] = args end
    return t
  end
end })
return ops
]]

-- chain.cu's codes (ACT_* of tasks/activation/reference.cu below 100).
local ACT = { relu = 0, gelu_tanh = 1, gelu = 2, silu = 3, sigmoid = 4, tanh = 5, softplus = 6, elu = 7,
  leaky_relu = 8, hardsigmoid = 10, softsign = 11, selu = 12, scale = 13, mish = 14 }
local CH = { add = 100, div = 101, min = 102, max = 103, clamp = 104, vec_add = 105, vec_mul = 106, residual = 107,
  mat_add = 108, mat_mul = 109, mish_gate = 110, chan_add = 111, chan_mul = 112, hardswish = 113, add_x = 130, plane_max = 131, plane_avg = 132, sum = 120, mean = 121, row_max = 122, row_min = 123, logsumexp = 124, center = 125, softmax = 126,
  maxpool = 127, avgpool = 128, groupnorm = 129 }

-- The codes by name, for the test that holds them equal to the CUDA enums.
-- The reductions across a convolution's channels, as chain.cu's
-- CH_ACROSS_* codes.
local ACROSS = { channel_sum = 0, channel_mean = 1, channel_max = 2, channel_min = 3, channel_logsumexp = 4 }
M.CODES = { act = ACT, chain = CH, across = ACROSS }

-- Each op: its code and parameters (a, b) from its arguments, its formula,
-- FLOPs per element it reads, and what it does to the row's width. kind:
-- "point" (x -> f(x)), "vector" (a new [N] input), "row" (reads the row).
local function num(file, i, op, v, name, default)
  if v == nil then v = default end
  if type(v) ~= "number" then fail(file, ("compose[%d].%s"):format(i, name), ("%s needs a number, got %s"):format(op,
    tostring(v))) end
  return v
end

local POINT = {
  relu = { f = "max(x, 0)", flops = 1 },
  gelu = { f = "0.5·x·(1 + erf(x/√2))  (GELU, torch's default erf form)", flops = 5 },
  gelu_tanh = { f = "0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (GELU, tanh form)", flops = 9 },
  sigmoid = { f = "1/(1 + exp(-x))", flops = 4 },
  tanh = { f = "tanh(x)", flops = 1 },
  silu = { f = "x·sigmoid(x)  (Swish)", flops = 4, a = 1 },
  mish = { f = "x·tanh(log(1 + exp(x)))  (Mish)", flops = 6 },
  softplus = { f = "log(1 + exp(x))", flops = 3, a = 1 },
  elu = { f = "x for x > 0, else exp(x) - 1  (ELU)", flops = 4, a = 1 },
  selu = { f = "SELU (torch's constants)", flops = 5 },
  hardsigmoid = { f = "min(max(x/6 + 1/2, 0), 1)", flops = 4 },
  softsign = { f = "x/(1 + |x|)", flops = 3 },
}

-- One op of the chain, checked: {code, a, b, text, flops, kind, width (a
-- function of the width before), vector (its buffer's name)}.
local function op_of(file, i, o)
  local name = o.op
  local where = ("compose[%d]"):format(i)
  if POINT[name] then
    local p = POINT[name]
    return { code = ACT[name], a = p.a or 0, b = 0, text = name .. ": x = " .. p.f, flops = p.flops, kind = "point" }
  end
  if name == "leaky_relu" then
    local s = num(file, i, name, o[1] or o.slope, "slope", 0.01)
    return { code = ACT.leaky_relu, a = s, b = 0, text = ("leaky_relu: x = x for x > 0, else %.9g·x"):format(s),
      flops = 2, kind = "point" }
  elseif name == "scale" or name == "mul" then
    local s = num(file, i, name, o[1], "1")
    return { code = ACT.scale, a = s, b = 0, text = ("scale: x = %.9g·x"):format(s), flops = 1, kind = "point" }
  elseif name == "div" then
    local s = num(file, i, name, o[1], "1")
    if s == 0 then fail(file, where .. "[1]", "div by 0") end
    return { code = CH.div, a = s, b = 0, text = ("div: x = x / %.9g"):format(s), flops = 1, kind = "point" }
  elseif name == "add" or name == "sub" then
    local s = num(file, i, name, o[1], "1")
    return { code = CH.add, a = name == "sub" and -s or s, b = 0,
      text = ("%s: x = x %s %.9g"):format(name, name == "sub" and "-" or "+", s), flops = 1, kind = "point" }
  elseif name == "min" or name == "max" then
    local s = num(file, i, name, o[1], "1")
    return { code = CH[name], a = s, b = 0, text = ("%s: x = %s(x, %.9g)  (torch.%s with a constant)"):format(name,
      name, s, name), flops = 1, kind = "point" }
  elseif name == "clamp" or name == "hardtanh" then
    local lo = num(file, i, name, o[1] or o.min, "min", name == "hardtanh" and -1 or nil)
    local hi = num(file, i, name, o[2] or o.max, "max", name == "hardtanh" and 1 or nil)
    if not (lo <= hi) then fail(file, where, name .. " needs min <= max") end
    return { code = CH.clamp, a = lo, b = hi, text = ("%s: x = min(max(x, %.9g), %.9g)"):format(name, lo, hi),
      flops = 2, kind = "point" }
  elseif name == "residual" then
    return { code = CH.residual, a = 0, b = 0, text = "residual: x = x + the product's own value (y0 + bias) at the " ..
      "same place", flops = 1, kind = "point", full_width = true }
  elseif name == "hardswish" then
    return { code = CH.hardswish, a = 0, b = 0, text = "hardswish: x = x·min(max(x + 3, 0), 6)/6", flops = 5,
      kind = "point" }
  elseif name == "mish_gate" then
    return { code = CH.mish_gate, a = 0, b = 0, text = "mish_gate: x = x·mish(x) = x·x·tanh(log(1 + exp(x)))",
      flops = 7, kind = "point" }
  elseif name == "add_vec" or name == "sub_vec" or name == "mul_vec" or name == "add_mat" or name == "mul_mat" then
    local mat = name:sub(-3) == "mat"
    -- sub_vec: x - v[j], the vector added with the sign b = 1 (chain.cu).
    local subtract = name == "sub_vec"
    local add = name:sub(1, 3) == "add" or subtract
    local buf = o.name or (mat and "y" or subtract and "subtract" or add and "add_value" or "multiply_weight")
    if type(buf) ~= "string" or not buf:match("^[%a_][%w_]*$") then fail(file, where .. ".name", "must be an identifier") end
    local code = mat and (add and CH.mat_add or CH.mat_mul) or (add and CH.vec_add or CH.vec_mul)
    local text = mat and ("%s: x = x %s %s[i,j]  (%s[M,N], a second input of the layer's output shape)")
      or ("%s: x = x %s %s[j]  (%s[N], one value per column j)")
    return { code = code, b = subtract and 1 or 0, vector = buf, shape = mat and { "M", "N" } or { "N" },
      text = text:format(name, subtract and "-" or add and "+" or "·", buf, buf), flops = 1, kind = "point",
      full_width = true }
  elseif name == "add_x" then
    return { code = CH.add_x, a = 0, b = 0, text = "add_x: the row's one value v becomes the row v + X[i,k] for " ..
      "k < K (the layer's own input added back, torch's broadcast of [M,1] and [M,K])", flops = 1, kind = "row",
      width = function(w) return "K" end, needs_one = true }
  elseif name == "sum" or name == "mean" or name == "row_max" or name == "row_min" or name == "logsumexp" then
    local what = { sum = "the row's sum", mean = "the row's mean", row_max = "the row's maximum",
      row_min = "the row's minimum", logsumexp = "log(sum over the row of exp(x))" }
    return { code = CH[name], a = 0, b = 0, text = ("%s: the row becomes one value, %s (dim 1, keepdim)"):format(name,
      what[name]), flops = name == "logsumexp" and 3 or 1, kind = "row", width = function() return "1" end }
  elseif ACROSS[name] then
    local what = { channel_sum = "sum", channel_mean = "mean", channel_max = "maximum", channel_min = "minimum",
      channel_logsumexp = "log of the sum of exp" }
    local torch = { channel_sum = "torch.sum", channel_mean = "torch.mean", channel_max = "torch.max",
      channel_min = "torch.min", channel_logsumexp = "torch.logsumexp" }
    return { across = ACROSS[name], a = 0, b = 0, kind = "channel", flops = name == "channel_logsumexp" and 3 or 1,
      text = ("%s: each place of the plane becomes the %s over the K channels of its image (%s over dim 1, " ..
        "keepdim); from here on a row is the one plane left per image n (row n of y)"):format(name, what[name],
        torch[name]) }
  elseif name == "center" then
    return { code = CH.center, a = 0, b = 0, text = "center: x = x - the row's mean", flops = 2, kind = "row" }
  elseif name == "softmax" then
    return { code = CH.softmax, a = 0, b = 0, text = "softmax: x = exp(x - max) / sum over the row of exp(x - max)",
      flops = 5, kind = "row" }
  elseif name == "maxpool" or name == "avgpool" then
    local k = math.tointeger(o[1] or o.kernel)
    if not k or k < 1 then fail(file, where .. "[1]", name .. " needs its window, a positive integer") end
    return { code = CH[name], a = k, b = 0, text = ("%s: windows of %d along the row, stride %d, the tail dropped " ..
      "(torch's %s1d)"):format(name, k, k, name == "maxpool" and "MaxPool" or "AvgPool"), flops = 1, kind = "row",
      width = function(w) return "(" .. w .. ")//" .. k end, divides = k }
  elseif name == "maxpool2d" or name == "avgpool2d" or name == "maxpool3d" or name == "avgpool3d" then
    local k = math.tointeger(o[1] or o.kernel)
    if not k or k < 1 then fail(file, where .. "[1]", name .. " needs its window, a positive integer") end
    local nd = tonumber(name:sub(-2, -2))
    local max = name:sub(1, 3) == "max"
    local win = nd == 3 and ("%d x %d x %d"):format(k, k, k) or ("%d x %d"):format(k, k)
    return { code = max and CH.plane_max or CH.plane_avg, a = k, b = 0, kind = "row", pool = { nd = nd, k = k },
      text = ("%s: windows of %s over the channel's plane, stride %d, the tails dropped (torch's %s(%d))"):format(
        name, win, k, (max and "MaxPool" or "AvgPool") .. nd .. "d", k), flops = 1 }
  elseif name == "groupnorm" then
    local g = math.tointeger(o[1] or o.groups)
    if not g or g < 1 then fail(file, where .. "[1]", "groupnorm needs its number of groups, a positive integer") end
    local eps = num(file, i, name, o.eps, "eps", 1e-5)
    return { code = CH.groupnorm, a = g, b = eps, text = ("groupnorm: the row cut into %d groups of consecutive " ..
      "columns, each set to (x - mean)/sqrt(var + %.9g) (biased variance; weight 1, bias 0)"):format(g, eps),
      flops = 5, kind = "row", groups = g, full_width = true }
  end
  fail(file, where, ("unknown operation '%s' (known: %s)"):format(tostring(name),
    "linear, relu, gelu, gelu_tanh, sigmoid, tanh, silu, mish, softplus, elu, selu, hardsigmoid, softsign, " ..
    "leaky_relu, scale, mul, div, add, sub, min, max, clamp, hardtanh, hardswish, mish_gate, residual, add_vec, sub_vec, mul_vec, " ..
    "add_mat, mul_mat, sum, mean, row_max, row_min, logsumexp, center, softmax, maxpool, avgpool, groupnorm, add_x, " ..
    "maxpool2d, avgpool2d, maxpool3d, avgpool3d, channel_sum, channel_mean, channel_max, channel_min, " ..
    "channel_logsumexp; " ..
    "first: linear, conv2d, conv3d, conv_transpose2d, conv_transpose3d"))
end

M.MAX_OPS = 8

-- The convolutions a chain may start with (torch's nn.Conv2d, nn.Conv3d,
-- nn.ConvTranspose2d, nn.ConvTranspose3d): nd spatial axes, transposed or
-- not. Their constants are the op's (as the module's constructor takes
-- them); the sizes are the variant's: N, C, (D,) H, W and K channels out.
local CONV = { conv2d = { nd = 2 }, conv3d = { nd = 3 }, conv_transpose2d = { nd = 2, transposed = true },
  conv_transpose3d = { nd = 3, transposed = true } }
M.CONV = CONV

-- The ops whose meaning needs a linear layer's row (a column index j, the
-- product's input X or a 1-D window along the row).
local LINEAR_ONLY = { residual = true, add_mat = true, mul_mat = true, add_x = true, maxpool = true, avgpool = true }

-- A convolution's geometry from ops.conv2d{ kernel =, stride =, padding =,
-- output_padding =, bias = }: {nd, transposed, k, s, p, op, bias, axes =
-- {input name, output extent expression}..., plane = expression}.
local function conv_of(file, o)
  local kind = CONV[o.op]
  local g = { nd = kind.nd, transposed = kind.transposed == true, name = o.op }
  local function int(key, default, least)
    local v = o[key]
    if v == nil then v = default end
    if math.type(v) ~= "integer" or v < least then
      fail(file, "compose[1]." .. key, ("%s needs %s, an integer of at least %d"):format(o.op, key, least))
    end
    return v
  end
  g.k, g.s, g.p = int("kernel", nil, 1), int("stride", 1, 1), int("padding", 0, 0)
  g.op = int("output_padding", 0, 0)
  if g.op > 0 and not g.transposed then fail(file, "compose[1].output_padding", "only a transposed convolution has one") end
  if g.op >= g.s and g.op > 0 then fail(file, "compose[1].output_padding", "must be below the stride (torch's rule)") end
  local bias = o.bias
  if bias == nil then bias = true end
  if type(bias) ~= "boolean" then fail(file, "compose[1].bias", "must be true or false") end
  g.bias = bias
  for k in pairs(o) do
    if not ({ op = true, kernel = true, stride = true, padding = true, output_padding = true, bias = true })[k] then
      fail(file, "compose[1]." .. tostring(k), "unknown argument of " .. o.op ..
        " (kernel, stride, padding, output_padding, bias)")
    end
  end
  g.axes = {}
  local names = g.nd == 3 and { "D", "H", "W" } or { "H", "W" }
  local outs = {}
  -- n + c with the constant's sign, nothing for 0.
  local function plus(c) return c == 0 and "" or c > 0 and "+" .. c or tostring(c) end
  for i, n in ipairs(names) do
    local e
    if g.transposed then
      e = g.s == 1 and n .. plus(g.k + g.op - 1 - 2 * g.p) or ("(%s-1)*%d%s"):format(n, g.s, plus(g.k + g.op - 2 * g.p))
    else
      e = g.s == 1 and n .. plus(2 * g.p - g.k + 1) or ("(%s%s)//%d+1"):format(n, plus(2 * g.p - g.k), g.s)
    end
    g.axes[i] = { n, e }
    outs[i] = "(" .. e .. ")"
  end
  g.plane = table.concat(outs, "*")
  return g
end

local function lua_width(w) return (w:gsub("//", " // ")) end

-- The chain, checked: {bias = bool, steps = {op...}, width = expression of
-- the output row's width, vectors = {name...}, names = {op names}, conv =
-- the convolution's geometry or nil}.
local function chain_of(file, list)
  if type(list) ~= "table" or #list < 2 then
    fail(file, "compose", "needs a list of operations: a linear layer or a convolution, then at least one more")
  end
  local first = list[1]
  if type(first) ~= "table" or (first.op ~= "linear" and not CONV[first.op]) then
    fail(file, "compose[1]", "must be ops.linear{} or a convolution (ops.conv2d{}, ops.conv3d{}, " ..
      "ops.conv_transpose2d{}, ops.conv_transpose3d{})")
  end
  local ch = { steps = {}, vectors = {}, shapes = {} }
  if first.op == "linear" then
    local bias = first.bias
    if bias == nil then bias = true end
    if type(bias) ~= "boolean" then fail(file, "compose[1].bias", "must be true or false") end
    ch.bias, ch.width, ch.names = bias, "N", { bias and "linear" or "linear_nobias" }
    ch.taken = { X = true, W = true, Y = true, bias = bias }
  else
    ch.conv = conv_of(file, first)
    ch.bias, ch.width, ch.names = ch.conv.bias, ch.conv.plane, { first.op }
    -- The plane's extents, as expressions (nil once a reduction made it one value).
    ch.dims = {}
    for i, a in ipairs(ch.conv.axes) do ch.dims[i] = a[2] end
    ch.taken = { x = true, w = true, y = true, conv_bias = true }
  end
  ch.full = ch.width
  if #list - 1 > M.MAX_OPS then
    fail(file, "compose", ("at most %d operations after the %s, got %d"):format(M.MAX_OPS,
      ch.conv and "convolution" or "linear layer", #list - 1))
  end
  local seen = {}
  for i = 2, #list do
    local o = list[i]
    if type(o) ~= "table" or type(o.op) ~= "string" then fail(file, ("compose[%d]"):format(i), "must be an ops.NAME{} value") end
    if ch.conv and LINEAR_ONLY[o.op] then
      fail(file, ("compose[%d]"):format(i), o.op .. " does not follow a convolution (it reads a linear layer's row; " ..
        "a convolution's row is one channel's plane)")
    end
    local s = op_of(file, i, o)
    if ch.conv and s.groups and s.groups ~= 1 then
      fail(file, ("compose[%d]"):format(i), "after a convolution, groupnorm takes 1 group (InstanceNorm over a " ..
        "channel's plane); groups across channels are not composable yet")
    end
    if ch.conv and (s.code == CH.vec_add or s.code == CH.vec_mul) then
      -- After a convolution a vector holds one value per output channel
      -- (torch's parameter of shape [K, 1, 1]).
      s.code = s.code == CH.vec_add and CH.chan_add or CH.chan_mul
      s.shape, s.full_width = { "K" }, false
      s.text = ("%s: x = x %s %s[k]  (%s[K], one value per output channel k: torch's parameter of shape [K, 1, 1])")
        :format(o.op, o.op == "sub_vec" and "-" or o.op == "mul_vec" and "·" or "+", s.vector, s.vector)
    end
    if s.full_width and ch.width ~= ch.full then
      fail(file, ("compose[%d]"):format(i), o.op .. " needs the full row (" .. ch.full .. " values); an earlier op narrowed it")
    end
    if s.needs_one and ch.width ~= "1" then
      fail(file, ("compose[%d]"):format(i), o.op .. " needs a row of one value (after a reduction)")
    end
    if s.across then
      if not ch.conv then
        fail(file, ("compose[%d]"):format(i), o.op .. " reduces across a convolution's channels: the chain must " ..
          "start with a convolution")
      end
      if ch.across then fail(file, ("compose[%d]"):format(i), "at most one reduction across channels") end
      -- The steps before it run on every channel's plane, those after it on
      -- the one plane left per image.
      ch.across = { how = s.across, at = #ch.steps + 1, width = ch.width }
    elseif ch.across and s.vector then
      fail(file, ("compose[%d]"):format(i), o.op .. " reads one value per channel: after " ..
        ch.names[ch.across.at + 1] .. " one channel is left")
    end
    if s.code == CH.add_x then ch.add_x = true end
    if s.vector then
      -- A second op on the same input (x + y, then x · y) reads the same buffer.
      local known = seen[s.vector]
      if (known and #ch.shapes[s.vector] ~= #s.shape) or ch.taken[s.vector] then
        fail(file, ("compose[%d].name"):format(i), "buffer '" .. s.vector .. "' is taken")
      end
      if not known then
        if #ch.vectors == 2 then fail(file, ("compose[%d]"):format(i), "at most two vector or matrix inputs") end
        ch.vectors[#ch.vectors + 1] = s.vector
        ch.shapes[s.vector] = s.shape
        seen[s.vector] = #ch.vectors - 1
      end
      s.a = seen[s.vector]
    end
    s.width_before = ch.width
    if s.pool then
      if not (ch.conv and ch.dims and s.pool.nd == ch.conv.nd) then
        fail(file, ("compose[%d]"):format(i), o.op .. " needs the plane of a " .. s.pool.nd .. "-D convolution before it")
      end
      -- chain.cu reads the plane's last two extents from b (2^21 each, the
      -- dimensionality above them); they differ per variant, so b is an
      -- expression of the plan's dimensions.
      local n = #ch.dims
      s.b_expr = ("%d * 4398046511104 + (%s) * 2097152 + (%s)"):format(s.pool.nd, lua_width(ch.dims[n - 1]),
        lua_width(ch.dims[n]))
      local pooled, outs = {}, {}
      for d, e in ipairs(ch.dims) do
        pooled[d] = ("(%s)//%d"):format(e, s.pool.k)
        outs[d] = "(" .. pooled[d] .. ")"
      end
      ch.dims = pooled
      ch.width = table.concat(outs, "*")
    elseif s.width then
      ch.width = s.width(ch.width)
      ch.dims = nil
    end
    ch.steps[#ch.steps + 1] = s
    ch.names[#ch.names + 1] = o.op
  end
  return ch
end

-- The tolerance and why. Every op computes its value from one or two
-- inputs in fp32; their slopes are at most about 1.2 (GELU, Mish, SiLU) or
-- a stated constant, and a reduction's rounding grows with the square root
-- of the row, so an honest fp32 kernel lands within about 1e-5 of the fp64
-- reference, where TF32 inputs (about 1e-3 relative) do not.
function M.tolerance(ch)
  local last = ch.steps[#ch.steps]
  if last.code == CH.softmax then
    return { f32 = { atol = 1e-7, rtol = 1e-3, matched = 1.0 } },
      "softmax's outputs are about 1/N: atol = 1e-7 keeps a uniform or zero row from passing; rtol = 1e-3 " ..
      "(KernelBench-Verified's fp32 tolerance) is a hundred times the error of an honest fp32 chain"
  end
  return { f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 } },
    ("fp32 output after %d operations: atol = rtol = 1e-3 (KernelBench-Verified's fp32 tolerance), a hundred " ..
     "times the error of an honest fp32 chain (each op's slope is at most about 1.2 or its stated constant), " ..
     "below the error of a TF32 product"):format(#ch.steps)
end

-- The program's arguments for chain.cu (8 slots of code, a, b) as plan text.
local function program_args(ch, steps)
  steps = steps or ch.steps
  local parts = { ("i32(%d)"):format(#steps) }
  for i = 1, M.MAX_OPS do
    local s = steps[i]
    parts[#parts + 1] = s and ("i32(%d), f64(%.17g), f64(%s)"):format(s.code, s.a, s.b_expr or ("%.17g"):format(s.b))
      or "i32(0), f64(0), f64(0)"
  end
  return table.concat(parts, ", ")
end

local function vector_args(ch)
  local v = {}
  for i = 1, 2 do
    local name = ch.vectors[i]
    v[i] = name and ('buffer("%s"), i32(0)'):format(name) or "u64(0), i32(0)"
  end
  return table.concat(v, ", ")
end

-- The reference: the product's sums in fp64 (every row, or the sampled
-- rows' elements), then the chain in fp64, one block per row.
local REFERENCE_PLAN = [[
local bias = %s
local wout = %s
local ustride = %s
local rows = nsample > 0 and nsample or M
local ws = { T = { bytes = 8 * rows * N }, U = { bytes = 8 * rows * ustride } }
local launches = {}
if nsample > 0 then
  ws.P = { bytes = 8 * rows * N }
  launches[1] = { kernel = "chain_row_units", grid = { math.min(cdiv(rows * N, 256), 65536), 1, 1 },
    block = { 256, 1, 1 }, args = { buffer("positions"), u64(rows), u32(N), workspace("P") } }
  launches[2] = { kernel = "mm_ref_units", grid = { cdiv(rows * N, 4), 1, 1 }, block = { 128, 1, 1 },
    args = { buffer("X"), i32(0), buffer("W"), i32(0), bias, i32(0), i32(0), workspace("P"), u64(rows * N),
             workspace("T"), i32(5), u32(M), u32(N), u32(K), i32(0), i32(0) } }
else
  launches[1] = { kernel = "mm_ref", grid = { cdiv(N, 64), cdiv(M, 64), 1 }, block = { 16, 16, 1 },
    args = { buffer("X"), i32(0), buffer("W"), i32(0), bias, i32(0), i32(0), workspace("T"), i32(5),
             u32(M), u32(N), u32(K), i32(0), i32(0) } }
end
launches[#launches + 1] = { kernel = "chain_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { workspace("T"), workspace("U"), u32(ustride), u32(N), buffer("Y"), u32(wout), buffer("positions"),
           buffer("X"), u32(K), %s, %s } }
return { workspace = ws, launches = launches }
]]

-- The baseline's chain after cuBLASLt's product (into the workspace T).
local BASELINE_PLAN = [[
local wout = %s
return { workspace = { T = { bytes = 4 * M * N } }, launches = { { kernel = "chain_baseline", grid = { M, 1, 1 },
  block = { 256, 1, 1 }, shared = 4 * %s,
  args = { workspace("T"), u32(N), buffer("Y"), u32(wout), buffer("X"), u32(K), %s, %s } } } }
]]


-- The chain's FLOPs after its first step: each op's count per element it
-- reads, over rows of w values (K: add_x's width).
local function chain_flops(steps, rows, w, K)
  local n = 0
  for _, s in ipairs(steps) do
    n = n + s.flops * rows * w
    if s.width then w = s.divides and w // s.divides or s.code == CH.add_x and K or 1 end
  end
  return n
end

local linear_fields

-- The inputs after the first step's operands, in out: its bias (bias_name
-- [width], ~ N(0, 0.1²)) and the chain's vectors (~ N(0, 1), as
-- KernelBench's torch.randn parameters); and the suite: two trials of the
-- base draw (named base), of x3 (the input x drawn three times as wide,
-- atol three times as wide) and of the spiky mix on x.
local function params_and_suite(out, ch, bias_name, width, base, x, x3)
  if ch.bias then
    out.buffers[bias_name] = { role = "input", dtype = "f32", shape = { width } }
    out.inputs[bias_name] = { dist = "normal", mean = 0, std = 0.1 }
  end
  for _, v in ipairs(ch.vectors) do
    out.buffers[v] = { role = "input", dtype = "f32", shape = ch.shapes[v] }
    out.inputs[v] = { dist = "normal", mean = 0, std = 1 }
  end
  out.distributions = {
    { name = base },
    { name = "x3", inputs = { [x] = x3 }, tol_scale = 3 },
    { name = "spiky", inputs = { [x] = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
  }
end

function M.expand(file, f)
  for _, k in ipairs { "dims", "buffers", "inputs", "reference", "baseline", "tolerance", "flops", "bytes", "plan",
                       "targets", "distributions", "trials", "description", "work" } do
    if f[k] ~= nil then fail(file, k, "is set by compose (a composed task gives its name, variants and tags)") end
  end
  local ch = chain_of(file, f.compose)
  local out = {}
  for k, v in pairs(f) do out[k] = v end
  out.compose = nil
  local kernel = f.kernel or "fused"
  out.kernel = kernel
  out.family = f.family or "fused"
  local tags = { "fused", "f32", "composed" }
  for _, t in ipairs(type(f.tags) == "table" and f.tags or {}) do tags[#tags + 1] = t end
  out.tags = tags
  out.trials = 2
  local tol, why = M.tolerance(ch)
  out.tolerance = tol
  local lines = {}
  for i, s in ipairs(ch.steps) do lines[i] = ("  %d. %s"):format(i + 1, s.text) end
  local info
  if ch.conv then
    info = require("klab.task.compose_conv").fields(out, ch, f, kernel, table.concat(lines, "\n"), {
      lua_width = lua_width, vector_args = vector_args, program_args = program_args,
      params_and_suite = params_and_suite })
  else
    info = linear_fields(file, out, ch, f, kernel, table.concat(lines, "\n"))
  end
  info.ops, info.tolerance = ch.names, why
  return out, info
end

-- The fields of a chain that starts with a linear layer.
linear_fields = function(file, out, ch, f, kernel, lines)
  out.dims = { "M", "N", "K" }
  out.buffers = {
    X = { role = "input", dtype = "f32", shape = { "M", "K" } },
    W = { role = "input", dtype = "f32", shape = { "N", "K" } },
    Y = { role = "output", dtype = "f32", shape = { "M", ch.width } },
  }
  -- X ~ N(0, 1); W ~ N(0, 0.01²), so that a product over K = 8192 has a
  -- standard deviation near 1 (as nn.Linear's initialisation keeps it
  -- near 0.6) and the ops after it see values where they bend; the biases
  -- and vectors ~ N(0, 1), as KernelBench's torch.randn parameters.
  out.inputs = { X = { dist = "normal", mean = 0, std = 1 }, W = { dist = "normal", mean = 0, std = 0.01 } }
  params_and_suite(out, ch, "bias", "N", "randn", "X", { dist = "normal", mean = 0, std = 3 })
  local bias_arg = ch.bias and 'buffer("bias")' or "u64(0)"
  local wl = lua_width(ch.width)
  local ustride = ch.add_x and "math.max(N, K)" or "N"
  out.reference = { source = "chain.cu", accumulate = "f64", units = { Y = ch.width }, sample = 16,
    plan = REFERENCE_PLAN:format(bias_arg, wl, ustride, vector_args(ch), program_args(ch)) }
  out.baseline = { source = "chain.cu", name = "cuBLASLt's fp32 product, then the chain in one fp32 kernel",
    plan = BASELINE_PLAN:format(wl, ustride, vector_args(ch), program_args(ch)),
    prologue = { lib = "cublaslt", op = "matmul", a = "X", b = "W", c = "T", modes = { "fp32" },
      spec = ch.bias and { epilogue = "bias", bias = "bias", bias_dtype = "f32" } or { epilogue = "none" } } }
  local steps = ch.steps
  out.flops = function(d) return 2 * d.M * d.N * d.K + chain_flops(steps, d.M, d.N, d.K) end
  out.targets = { sm_90a = { "tma" }, sm_100a = { "tma" } }
  out.work = 0.9
  for _, s in ipairs(steps) do
    if s.groups then
      for _, v in ipairs(type(f.variants) == "table" and f.variants or {}) do
        if type(v) == "table" and math.type(v.N) == "integer" and v.N % s.groups ~= 0 then
          fail(file, "variants", ("N = %d is not a multiple of groupnorm's %d groups"):format(v.N, s.groups))
        end
      end
    end
  end
  local args = { 'buffer("X")', 'buffer("W")' }
  local decl = { "const float *X", "const float *W" }
  if ch.bias then args[#args + 1], decl[#decl + 1] = 'buffer("bias")', "const float *bias" end
  for _, v in ipairs(ch.vectors) do args[#args + 1], decl[#decl + 1] = ('buffer("%s")'):format(v), "const float *" .. v end
  args[#args + 1], decl[#decl + 1] = 'buffer("Y")', "float *Y"
  out.plan = ([[
-- Default plan: one launch of `%s`, a block of 256 threads per 128 rows of Y.
return { launches = { { kernel = "%s", grid = { cdiv(M, 128), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { %s, u32(M), u32(N), u32(K) } } } }
]]):format(kernel, kernel, table.concat(args, ", "))
  out.description = ([[
Write a CUDA kernel named `%s` that computes, in one pass, a linear layer
followed by a chain of operations, in fp32 (as accurate as fp32 allows: no
narrower intermediate; TF32 tensor cores alone are not):
  1. x = X·Wᵀ%s: x[m,n] = sum_k X[m,k]·W[n,k]%s, for row-major X[M,K] and
     W[N,K] (a linear layer's weight, as torch's nn.Linear stores it)
%s
and writes Y[M, %s] (row-major) in fp32. Here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(%s,
      unsigned M, unsigned N, unsigned K)
launched with a grid of ceil(M/128) blocks of 256 threads and no dynamic
shared memory: block i owns rows 128*i .. 128*i+127 of Y. Send your own plan
to change any of this (tiles over N, several launches, workspace).]]):format(kernel,
    ch.bias and " + bias" or "", ch.bias and " + bias[n]" or "", lines, ch.width, kernel,
    table.concat(decl, ", "))
  return { sources = "linear", baseline = "sequence: cuBLASLt matmul (" ..
    (ch.bias and "bias epilogue" or "no epilogue") .. "), then chain_baseline (tasks/fused/chain.cu) for the rest" }
end

-- The sources a composed task compiles, from the library's own tasks/.
local SOURCES = {
  reference = { "activation/reference.cu", "matmul/reference.cu", "fused/chain.cu" },
  baseline = { "activation/reference.cu", "fused/chain.cu" },
  conv_reference = { "activation/reference.cu", "conv/reference.cu", "fused/chain.cu" },
}

-- which: "reference" or "baseline"; composed: expand's info (a chain after a
-- convolution compiles the convolution family's reference).
function M.sources(file, which, max_bytes, composed)
  if composed and composed.sources == "conv" and which == "reference" then which = "conv_reference" end
  local fs = require("klab.fs")
  local root = require("klab.task.search").default_root()
  local parts = {}
  for _, rel in ipairs(SOURCES[which]) do
    local path = root .. "/" .. rel
    local text, err = fs.read(path, max_bytes)
    if not text then fail(file, "compose", "cannot read the library's " .. path .. ": " .. tostring(err)) end
    parts[#parts + 1] = ("#line 1 \"%s\"\n%s"):format(path, text)
  end
  return table.concat(parts, "\n"), root .. "/fused/chain.cu"
end

return M
