-- tests/gpu/libs_check.lua: the library bindings behind the task library's
-- baselines (klab.dnn's graphs, klab.blas's GEMM variants), checked on a GPU.
--
--   build/klab tests/gpu/libs_check.lua [--quick]   (exit 1 when a check fails)
--   local lc = dofile("tests/gpu/libs_check.lua")
--   lc.cases()            -> the list of cases (see below)
--   lc.run{quick=, print=} -> rows, passed, failed, skipped
--
-- For every case: a plan on a small shape runs on seeded random inputs and
-- is compared with a reference computed here in plain Lua; then a plan on
-- a big shape (one the H200 needs >= 50 us for) is timed with klab.timing
-- (cuDNN) or plan:time (cuBLASLt). The table shows the engine (cuDNN's
-- global index and numerical notes, or cuBLASLt's algorithm, tile and
-- stages), the median time and the worst error. One case failing does not
-- stop the others. A "probe" case asks whether cuDNN has the pattern at
-- all (GroupNorm, a one-graph softmax, an AVG reduction): a refusal is a
-- skip that says what cuDNN answered, not a failure. A "known" case is a
-- library defect measured on an H200 that the task library works around:
-- wrong results are a skip that says so, right ones a pass (the defect
-- is gone). Without a GPU every
-- case is only described (graph_describe / blas.describe): a description
-- the library refuses fails, the rest skip.
--
-- The last line is "N passed, N failed, N skipped".

local M = {}

-- ---- host numbers ------------------------------------------------------------

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end

local function bf16_bits(x)
  local u = string.unpack("<I4", string.pack("<f", x))
  if (u & 0x7fffffff) > 0x7f800000 then return ((u >> 16) | 0x40) & 0xffff end
  u = u + 0x7fff + ((u >> 16) & 1)
  return (u >> 16) & 0xffff
end

local function bf16_value(h) return (string.unpack("<f", string.pack("<I4", h << 16))) end

local function f16_bits(x)
  local u = string.unpack("<I4", string.pack("<f", x))
  local sign = (u >> 16) & 0x8000
  local a = u & 0x7fffffff
  if a >= 0x7f800000 then return sign | 0x7c00 | (a > 0x7f800000 and 0x200 or 0) end
  if a >= 0x477ff000 then return sign | 0x7c00 end
  if a < 0x38800000 then
    local v = (string.unpack("<f", string.pack("<I4", a))) * 16777216
    local r = math.floor(v + 0.5)
    if r - v == 0.5 and r % 2 == 1 then r = r - 1 end
    return sign | math.tointeger(r)
  end
  local r = a + 0xfff + ((a >> 13) & 1)
  return sign | (((r - 0x38000000) >> 13) & 0xffff)
end

local function f16_value(h)
  local sign = (h & 0x8000) ~= 0 and -1 or 1
  local e, m = (h >> 10) & 0x1f, h & 0x3ff
  if e == 0 then return sign * m * 2.0 ^ -24 end
  if e == 31 then return m == 0 and sign * math.huge or 0 / 0 end
  return sign * (1 + m / 1024) * 2.0 ^ (e - 15)
end

local ELEM = { f32 = 4, bf16 = 2, f16 = 2, i32 = 4, i64 = 8 }

local ENC = {
  f32 = function(x) return string.pack("<f", x) end,
  bf16 = function(x) return string.pack("<I2", bf16_bits(x)) end,
  f16 = function(x) return string.pack("<I2", f16_bits(x)) end,
  i32 = function(x) return string.pack("<i4", math.floor(x)) end,
  i64 = function(x) return string.pack("<i8", math.floor(x)) end,
}

local DEC = {
  f32 = function(s, i) return (string.unpack("<f", s, 4 * i + 1)) end,
  bf16 = function(s, i) return bf16_value(string.unpack("<I2", s, 2 * i + 1)) end,
  f16 = function(s, i) return f16_value(string.unpack("<I2", s, 2 * i + 1)) end,
  i32 = function(s, i) return (string.unpack("<i4", s, 4 * i + 1)) end,
  i64 = function(s, i) return (string.unpack("<i8", s, 8 * i + 1)) end,
}

-- The value the device sees for x stored as dtype.
local function rounded(dtype, x)
  if dtype == "f32" then return f32(x) end
  if dtype == "bf16" then return bf16_value(bf16_bits(x)) end
  if dtype == "f16" then return f16_value(f16_bits(x)) end
  return x
end
M.rounded = rounded

-- A seeded generator: the same inputs on every machine.
local function generator(seed)
  local s = seed
  return function(lo, hi)
    s = (s * 6364136223846793005 + 1442695040888963407) & 0xffffffffffffffff
    local u = ((s >> 11) & 0x1fffffffffffff) / 9007199254740992.0
    return lo + (hi - lo) * u
  end
end

local function numel(dims)
  local n = 1
  for _, d in ipairs(dims) do n = n * d end
  return n
end

-- Calls fn(lin, idx) for every index of dims in row-major order (lin
-- 1-based, idx the 0-based coordinates; fn must not keep idx).
local function walk(dims, fn)
  local nd, idx = #dims, {}
  for k = 1, nd do idx[k] = 0 end
  for lin = 1, numel(dims) do
    fn(lin, idx)
    for k = nd, 1, -1 do
      idx[k] = idx[k] + 1
      if idx[k] < dims[k] then break end
      idx[k] = 0
    end
  end
end

-- The element offset of idx in tensor t (its strides).
local function offset(t, idx)
  local off = 0
  for k = 1, #t.dims do off = off + idx[k] * t.strides[k] end
  return off
end

-- Logical (row-major over dims) values to the bytes of tensor t
-- {dtype=, dims=, strides=, bytes=}, and back.
local function pack(t, values)
  local enc, esz = ENC[t.dtype], ELEM[t.dtype]
  local parts, zero = {}, enc(0)
  for i = 1, t.bytes // esz do parts[i] = zero end
  walk(t.dims, function(lin, idx) parts[offset(t, idx) + 1] = enc(values[lin]) end)
  return table.concat(parts)
end

local function unpack_values(t, s)
  local dec, out = DEC[t.dtype], {}
  walk(t.dims, function(lin, idx) out[lin] = dec(s, offset(t, idx)) end)
  return out
end
M.pack, M.unpack = pack, unpack_values

-- ---- reference functions -------------------------------------------------------

local function tanh(x)
  if x > 20 then return 1 elseif x < -20 then return -1 end
  local e = math.exp(2 * x)
  return (e - 1) / (e + 1)
end

-- erf by its Maclaurin series for |x| < 3 and the continued fraction of
-- erfc beyond: far below fp32's resolution.
local function erf(x)
  local a = math.abs(x)
  local r
  if a < 3 then
    local term, sum, n = a, a, 0
    repeat
      n = n + 1
      term = -term * a * a / n
      local add = term / (2 * n + 1)
      sum = sum + add
    until math.abs(add) < 1e-17 * math.abs(sum) or n > 200
    r = 2 / math.sqrt(math.pi) * sum
  else
    local f = 0
    for k = 60, 1, -1 do f = k / 2 / (a + f) end
    r = 1 - math.exp(-a * a) / math.sqrt(math.pi) / (a + f)
  end
  return x < 0 and -r or r
end

local function sigmoid(x) return 1 / (1 + math.exp(-x)) end
local function gelu(x) return 0.5 * x * (1 + erf(x / math.sqrt(2))) end
local function gelu_tanh(x) return 0.5 * x * (1 + tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ^ 3))) end
M.erf, M.gelu, M.gelu_tanh, M.tanh = erf, gelu, gelu_tanh, tanh

local UNARY = {
  RELU_FWD = function(x) return x > 0 and x or 0 end,
  GELU_FWD = gelu,
  GELU_APPROX_TANH_FWD = gelu_tanh,
  SWISH_FWD = function(x, beta) return x * sigmoid((beta or 1) * x) end,
  SIGMOID_FWD = sigmoid,
  TANH_FWD = tanh,
  SOFTPLUS_FWD = function(x, beta) beta = beta or 1; return math.log(1 + math.exp(beta * x)) / beta end,
  ELU_FWD = function(x, alpha) return x > 0 and x or (alpha or 1) * (math.exp(x) - 1) end,
  EXP = math.exp, LOG = math.log, SQRT = math.sqrt,
  RSQRT = function(x) return 1 / math.sqrt(x) end,
  NEG = function(x) return -x end, ABS = math.abs, IDENTITY = function(x) return x end,
}
M.UNARY = UNARY

local BINARY = {
  ADD = function(a, b) return a + b end, SUB = function(a, b) return a - b end,
  MUL = function(a, b) return a * b end, DIV = function(a, b) return a / b end,
  MAX = math.max, MIN = math.min, POW = function(a, b) return a ^ b end,
}

-- The row-major index (1-based) in a tensor of dims sub, which has extent
-- 1 where it broadcasts (or is reduced), of the coordinates idx.
local function sub_index(sub, idx)
  local i = 0
  for k = 1, #sub do i = i * sub[k] + (sub[k] == 1 and 0 or idx[k]) end
  return i + 1
end

-- out[i] = fn(x[i], b[broadcast i]) over dims (b has extent 1 or the same).
local function broadcast2(dims, bdims, x, b, fn)
  local out = {}
  walk(dims, function(lin, idx) out[lin] = fn(x[lin], b[sub_index(bdims, idx)]) end)
  return out
end

-- y = reduce over the dimensions where ydims is 1.
local function reduce(dims, ydims, x, init, fn)
  local y = {}
  for i = 1, numel(ydims) do y[i] = init end
  walk(dims, function(lin, idx)
    local yi = sub_index(ydims, idx)
    y[yi] = fn(y[yi], x[lin])
  end)
  return y
end
M.reduce = reduce

-- c[b] = a[b or 0] · b[b or 0] for a [Ba,M,K], b [Bb,K,N] (batch 1 broadcasts).
local function matmul(ad, bd, a, b)
  local B = math.max(ad[1], bd[1])
  local Mm, K, N = ad[2], ad[3], bd[3]
  local c = {}
  for bt = 0, B - 1 do
    local oa = (ad[1] == 1 and 0 or bt) * Mm * K
    local ob = (bd[1] == 1 and 0 or bt) * K * N
    for m = 0, Mm - 1 do
      for n = 0, N - 1 do
        local s = 0
        for k = 0, K - 1 do s = s + a[oa + m * K + k + 1] * b[ob + k * N + n + 1] end
        c[bt * Mm * N + m * N + n + 1] = s
      end
    end
  end
  return c
end
M.matmul = matmul

-- Calls fn(xi, wi, yi) (1-based) for every product of the convolution of
-- x [N,C,H,W] with w [K,C/G,R,S] into y [N,K,OH,OW] (cross-correlation,
-- the input padded with zeros): y[yi] gets x[xi]·w[wi].
local function conv_walk(xd, wd, yd, pad, stride, dil, fn)
  local N, C, H, W = xd[1], xd[2], xd[3], xd[4]
  local K, Cg, R, S = wd[1], wd[2], wd[3], wd[4]
  local OH, OW = yd[3], yd[4]
  local Kg = K // (C // Cg)
  for n = 0, N - 1 do
    for k = 0, K - 1 do
      local g = k // Kg
      for oh = 0, OH - 1 do
        for ow = 0, OW - 1 do
          local yi = ((n * K + k) * OH + oh) * OW + ow + 1
          for c = 0, Cg - 1 do
            for r = 0, R - 1 do
              local ih = oh * stride - pad + r * dil
              if ih >= 0 and ih < H then
                for q = 0, S - 1 do
                  local iw = ow * stride - pad + q * dil
                  if iw >= 0 and iw < W then
                    fn(((n * C + g * Cg + c) * H + ih) * W + iw + 1, ((k * Cg + c) * R + r) * S + q + 1, yi)
                  end
                end
              end
            end
          end
        end
      end
    end
  end
end

local function conv2d(xd, wd, yd, x, w, pad, stride, dil)
  local y = {}
  for i = 1, numel(yd) do y[i] = 0 end
  conv_walk(xd, wd, yd, pad, stride, dil, function(xi, wi, yi) y[yi] = y[yi] + x[xi] * w[wi] end)
  return y
end
M.conv2d = conv2d

-- The data gradient dx [N,C,H,W] of conv2d for dy [N,K,OH,OW]: the
-- transposed convolution.
local function conv2d_dgrad(dxd, wd, dyd, dy, w, pad, stride, dil)
  local dx = {}
  for i = 1, numel(dxd) do dx[i] = 0 end
  conv_walk(dxd, wd, dyd, pad, stride, dil, function(xi, wi, yi) dx[xi] = dx[xi] + dy[yi] * w[wi] end)
  return dx
end
M.conv2d_dgrad = conv2d_dgrad

-- 2D pooling of x [N,C,H,W] into y [N,C,OH,OW]: "max", "avg_include"
-- (divides by the window) or "avg_exclude" (by the window's elements inside).
local function pool2d(xd, yd, x, how, win, stride, pad)
  local N, C, H, W = xd[1], xd[2], xd[3], xd[4]
  local OH, OW = yd[3], yd[4]
  local y = {}
  for n = 0, N - 1 do
    for c = 0, C - 1 do
      for oh = 0, OH - 1 do
        for ow = 0, OW - 1 do
          local acc, cnt = how == "max" and -math.huge or 0, 0
          for r = 0, win - 1 do
            local ih = oh * stride - pad + r
            for q = 0, win - 1 do
              local iw = ow * stride - pad + q
              if ih >= 0 and ih < H and iw >= 0 and iw < W then
                local v = x[((n * C + c) * H + ih) * W + iw + 1]
                if how == "max" then acc = math.max(acc, v) else acc = acc + v end
                cnt = cnt + 1
              end
            end
          end
          if how == "avg_include" then acc = acc / (win * win) elseif how == "avg_exclude" then acc = acc / cnt end
          y[((n * C + c) * OH + oh) * OW + ow + 1] = acc
        end
      end
    end
  end
  return y
end
M.pool2d = pool2d

-- Normalization of x [N, C, H, W] over groups of channels per sample:
-- groups = 1 is LayerNorm over C·H·W, groups = C InstanceNorm. rms skips
-- the mean. scale and bias per channel (bias may be nil). Returns y and
-- the per (n, group) mean and 1/sqrt(var + eps).
local function group_norm(xd, x, groups, scale, bias, eps, rms)
  local N, C = xd[1], xd[2]
  local HW = numel(xd) // (N * C)
  local Cg = C // groups
  local y, means, invs = {}, {}, {}
  for n = 0, N - 1 do
    for g = 0, groups - 1 do
      local base, cnt, s = n * C * HW + g * Cg * HW, Cg * HW, 0
      for i = 1, cnt do s = s + x[base + i] end
      local mean = rms and 0 or s / cnt
      local v = 0
      for i = 1, cnt do v = v + (x[base + i] - mean) ^ 2 end
      local inv = 1 / math.sqrt(v / cnt + eps)
      means[n * groups + g + 1], invs[n * groups + g + 1] = mean, inv
      for i = 0, cnt - 1 do
        local c = g * Cg + i // HW
        y[base + i + 1] = (x[base + i + 1] - mean) * inv * scale[c + 1] + (bias and bias[c + 1] or 0)
      end
    end
  end
  return y, means, invs
end
M.group_norm = group_norm

-- ---- cases ---------------------------------------------------------------------

local F32 = { atol = 1e-5, rtol = 1e-5 }
local F32_MATH = { atol = 1e-4, rtol = 1e-4 }    -- transcendentals: a few ulp, and approximations
local F32_SUM = { atol = 1e-3, rtol = 1e-4 }     -- fp32 sums of a few hundred terms
local BF16 = { atol = 3e-2, rtol = 1.6e-2 }      -- bf16 outputs: 8-bit mantissa, one rounding or two
local TF32 = { atol = 3e-2, rtol = 1e-2 }        -- TF32 inputs: 11-bit mantissa products

local function shape_of(s) return s end

local function unary(mode, dtype, law, tol, param)
  return {
    name = "pointwise " .. mode .. " " .. dtype .. (param and (" param=" .. param) or ""), lib = "cudnn",
    small = { 4, 37 }, big = { 8192, 8192 },
    graph = function(s)
      return { tensors = { x = { dtype = dtype, dims = s }, y = { dtype = dtype, dims = s } },
               ops = { { op = "pointwise", mode = mode, param = param, inputs = { x = "x" }, outputs = { y = "y" } } } }
    end,
    laws = { x = law or { -4, 4 } },
    ref = function(_, v)
      local y = {}
      for i, x in ipairs(v.x) do y[i] = UNARY[mode](x, param) end
      return { y = y }
    end,
    tol = tol or F32_MATH,
  }
end

local function binary(mode, blaw, xlaw)
  return {
    name = "pointwise " .. mode .. " f32, b broadcast over rows", lib = "cudnn",
    small = { 4, 37 }, big = { 8192, 8192 },
    graph = function(s)
      return { tensors = { x = { dims = s }, b = { dims = { 1, s[2] } }, y = { dims = s } },
               ops = { { op = "pointwise", mode = mode, inputs = { x = "x", b = "b" }, outputs = { y = "y" } } } }
    end,
    laws = { x = xlaw or { -4, 4 }, b = blaw or { -4, 4 } },
    ref = function(s, v) return { y = broadcast2(s, { 1, s[2] }, v.x, v.b, BINARY[mode]) } end,
    tol = mode == "POW" and F32_MATH or F32,
  }
end

local function reduction(mode, law, init, fn, middle)
  return {
    name = "reduction " .. mode .. " f32 over the " .. (middle and "middle" or "last") .. " dimension",
    -- cuDNN 9.14 on an H200 has no engine for AVG, MUL, or any reduction
    -- over the middle dimension (the reduce tasks ship that baseline).
    lib = "cudnn", probe = mode == "AVG" or mode == "MUL" or middle,
    small = middle and { 3, 40, 5 } or { 6, 64 }, big = middle and { 64, 1024, 1024 } or { 8192, 8192 },
    graph = function(s)
      local ydims = middle and { s[1], 1, s[3] } or { s[1], 1 }
      return { tensors = { x = { dims = s }, y = { dims = ydims } },
               ops = { { op = "reduction", mode = mode, inputs = { x = "x" }, outputs = { y = "y" } } } }
    end,
    laws = { x = law or { -4, 4 } },
    ref = function(s, v)
      local ydims = middle and { s[1], 1, s[3] } or { s[1], 1 }
      local y = reduce(s, ydims, v.x, init, fn)
      if mode == "AVG" then
        local n = middle and s[2] or s[2]
        for i = 1, #y do y[i] = y[i] / n end
      end
      return { y = y }
    end,
    tol = F32_SUM,
  }
end

local function add(a, b) return a + b end

-- NHWC 4-D tensor spec.
local function nhwc(dtype, dims) return { dtype = dtype, dims = dims, layout = "nhwc" } end

local function conv_case(name, dtype, small, big, opts)
  -- shape = {N, C, H, W, K, R}; groups = C / Cg
  local function dims(s)
    local N, C, H, W, K, R = s[1], s[2], s[3], s[4], s[5], s[6]
    local g = opts.depthwise and C or 1
    local span = opts.dil * (R - 1) + 1
    local OH = (H + 2 * opts.pad - span) // opts.stride + 1
    local OW = (W + 2 * opts.pad - span) // opts.stride + 1
    return { N, C, H, W }, { K, C // g, R, R }, { N, K, OH, OW }
  end
  return {
    name = name, lib = "cudnn", small = small, big = big, math = opts.math,
    graph = function(s)
      local xd, wd, yd = dims(s)
      local ocd = opts.dtype_out or dtype
      if opts.dgrad then
        return { tensors = { dy = nhwc(dtype, yd), w = nhwc(dtype, wd), dx = nhwc(ocd, xd) }, math = opts.math,
                 ops = { { op = "conv_bwd_data", inputs = { dy = "dy", w = "w" }, outputs = { dx = "dx" },
                           padding = opts.pad, stride = opts.stride, dilation = opts.dil } } }
      end
      local g = { tensors = { x = nhwc(dtype, xd), w = nhwc(dtype, wd) }, math = opts.math,
                  ops = { { op = "conv_fwd", inputs = { x = "x", w = "w" }, outputs = { y = opts.bias and "acc" or "y" },
                            padding = opts.pad, stride = opts.stride, dilation = opts.dil } } }
      if opts.bias then
        g.tensors.acc = { dims = yd, layout = "nhwc", virtual = true }
        g.tensors.z = { virtual = true }
        g.tensors.bias = nhwc(dtype, { 1, yd[2], 1, 1 })
        g.ops[2] = { op = "pointwise", mode = "ADD", inputs = { x = "acc", b = "bias" }, outputs = { y = "z" } }
        g.ops[3] = { op = "pointwise", mode = "RELU_FWD", inputs = { x = "z" }, outputs = { y = "y" } }
      end
      g.tensors.y = nhwc(ocd, yd)
      return g
    end,
    laws = opts.dgrad and { dy = { -1, 1 }, w = { -1, 1 } } or { x = { -1, 1 }, w = { -1, 1 }, bias = { -1, 1 } },
    ref = function(s, v)
      local xd, wd, yd = dims(s)
      if opts.dgrad then return { dx = conv2d_dgrad(xd, wd, yd, v.dy, v.w, opts.pad, opts.stride, opts.dil) } end
      local y = conv2d(xd, wd, yd, v.x, v.w, opts.pad, opts.stride, opts.dil)
      if opts.bias then
        y = broadcast2(yd, { 1, yd[2], 1, 1 }, y, v.bias, function(a, b) return math.max(a + b, 0) end)
      end
      return { y = y }
    end,
    tol = opts.tol or (dtype == "bf16" and BF16 or F32_SUM),
  }
end

local function pool_case(mode, how, dtype, win, stride, pad)
  local function ydims(s)
    return { s[1], s[2], (s[3] + 2 * pad - win) // stride + 1, (s[4] + 2 * pad - win) // stride + 1 }
  end
  return {
    name = string.format("resample %s %s %dx%d/%d pad %d NHWC", mode, dtype, win, win, stride, pad), lib = "cudnn",
    small = { 2, 3, 9, 11 }, big = { 64, 128, 112, 112 },
    graph = function(s)
      return { tensors = { x = nhwc(dtype, s), y = nhwc(dtype, ydims(s)) },
               ops = { { op = "resample_fwd", mode = mode, inputs = { x = "x" }, outputs = { y = "y" },
                         window = win, stride = stride, padding = pad } } }
    end,
    laws = { x = { -4, 4 } },
    ref = function(s, v) return { y = pool2d(s, ydims(s), v.x, how, win, stride, pad) } end,
    tol = dtype == "bf16" and BF16 or F32,
  }
end

-- The row-major C[b] = epilogue(op(A[b])·op(B[b]) + bias) of a klab.blas
-- spec (layouts, batch and strides as klab.blas takes them; C's
-- elements between members are left nil).
local function gemm_ref(spec, v)
  local M_, N, K, B = spec.M, spec.N, spec.K, spec.batch or 1
  local al, bl = spec.a_layout or "mk", spec.b_layout or "nk"
  local sa, sb = spec.stride_a or M_ * K, spec.stride_b or N * K
  local sc = spec.stride_c or M_ * N
  local e = spec.epilogue or "none"
  local C = {}
  for b = 0, B - 1 do
    for m = 0, M_ - 1 do
      for n = 0, N - 1 do
        local s = 0
        for k = 0, K - 1 do
          local a = al == "mk" and v.A[b * sa + m * K + k + 1] or v.A[b * sa + k * M_ + m + 1]
          local x = bl == "nk" and v.B[b * sb + n * K + k + 1] or v.B[b * sb + k * N + n + 1]
          s = s + a * x
        end
        if e:find("bias") then s = s + v.bias[n + 1] end
        if e:find("relu") then s = math.max(s, 0) end
        if e:find("gelu") then s = gelu_tanh(s) end   -- cuBLASLt's GELU is the tanh form
        C[b * sc + m * N + n + 1] = s
      end
    end
  end
  return C
end
M.gemm_ref = gemm_ref

local function gemm_case(name, spec, big, tol, probe)
  local small = {}
  for k, x in pairs(spec) do small[k] = x end
  local bigspec = {}
  for k, x in pairs(spec) do bigspec[k] = x end
  for k, x in pairs(big) do bigspec[k] = x end
  return { name = "cuBLASLt " .. name, lib = "blas", spec = small, big_spec = bigspec, tol = tol, probe = probe }
end

function M.cases()
  local c = {}
  local function add_case(x) c[#c + 1] = x end
  -- Activations and pointwise maths.
  for _, m in ipairs { "RELU_FWD", "GELU_FWD", "GELU_APPROX_TANH_FWD", "SWISH_FWD", "SIGMOID_FWD", "TANH_FWD",
                       "SOFTPLUS_FWD", "ELU_FWD", "EXP", "NEG", "ABS", "IDENTITY" } do
    add_case(unary(m, "f32"))
  end
  add_case(unary("LOG", "f32", { 0.1, 4 }))
  add_case(unary("SQRT", "f32", { 0, 4 }))
  add_case(unary("RSQRT", "f32", { 0.1, 4 }))
  add_case(unary("ELU_FWD", "f32", nil, nil, 0.5))
  add_case(unary("RELU_FWD", "bf16", nil, BF16))
  add_case(unary("GELU_FWD", "bf16", nil, BF16))
  for _, m in ipairs { "ADD", "SUB", "MUL", "MAX", "MIN" } do add_case(binary(m)) end
  add_case(binary("DIV", { 0.5, 2 }))
  add_case(binary("POW", { -2, 2 }, { 0.1, 2 }))
  add_case({
    -- cuDNN 9.14 on an H200: no engine (no task uses it).
    name = "pointwise CMP_GT + BINARY_SELECT f32 (max by selection)", lib = "cudnn", probe = true,
    small = { 4, 37 }, big = { 8192, 8192 },
    graph = function(s)
      return { tensors = { x = { dims = s }, b = { dims = s }, m = { dtype = "bool", virtual = true }, y = { dims = s } },
               ops = { { op = "pointwise", mode = "CMP_GT", compute = "bool", inputs = { x = "x", b = "b" }, outputs = { y = "m" } },
                       { op = "pointwise", mode = "BINARY_SELECT", inputs = { x = "x", b = "b", t = "m" }, outputs = { y = "y" } } } }
    end,
    laws = { x = { -4, 4 }, b = { -4, 4 } },
    ref = function(_, v)
      local y = {}
      for i = 1, #v.x do y[i] = v.x[i] > v.b[i] and v.x[i] or v.b[i] end
      return { y = y }
    end,
    tol = F32,
  })
  add_case({
    name = "pointwise MUL by a by-value scalar f32", lib = "cudnn",
    small = { 4, 37 }, big = { 8192, 8192 },
    graph = function(s)
      return { tensors = { x = { dims = s }, s = { value = 0.375 }, y = { dims = s } },
               ops = { { op = "pointwise", mode = "MUL", inputs = { x = "x", b = "s" }, outputs = { y = "y" } } } }
    end,
    laws = { x = { -4, 4 } },
    ref = function(_, v)
      local y = {}
      for i = 1, #v.x do y[i] = v.x[i] * 0.375 end
      return { y = y }
    end,
    tol = F32,
  })
  -- Reductions.
  add_case(reduction("ADD", nil, 0, add))
  add_case(reduction("MAX", nil, -math.huge, math.max))
  add_case(reduction("MIN", nil, math.huge, math.min))
  add_case(reduction("AMAX", nil, 0, function(a, x) return math.max(a, math.abs(x)) end))
  add_case(reduction("MUL", { 0.95, 1.05 }, 1, function(a, x) return a * x end))
  add_case(reduction("ADD", nil, 0, add, true))
  add_case(reduction("AVG", nil, 0, add))
  add_case({
    -- cuDNN 9.14 on an H200: no engine; the scale goes first instead.
    name = "mean f32: reduction ADD then MUL by 1/n", lib = "cudnn", probe = true,
    small = { 6, 64 }, big = { 8192, 8192 },
    graph = function(s)
      return { tensors = { x = { dims = s }, sum = { dims = { s[1], 1 }, virtual = true },
                           inv_n = { value = 1 / s[2] }, y = { dims = { s[1], 1 } } },
               ops = { { op = "reduction", mode = "ADD", inputs = { x = "x" }, outputs = { y = "sum" } },
                       { op = "pointwise", mode = "MUL", inputs = { x = "sum", b = "inv_n" }, outputs = { y = "y" } } } }
    end,
    laws = { x = { -4, 4 } },
    ref = function(s, v)
      local y = reduce(s, { s[1], 1 }, v.x, 0, add)
      for i = 1, #y do y[i] = y[i] / s[2] end
      return { y = y }
    end,
    tol = F32_SUM,
  })
  add_case({
    -- The mean_last task's baseline.
    name = "mean f32: MUL by 1/n then reduction ADD", lib = "cudnn",
    small = { 6, 64 }, big = { 8192, 8192 },
    graph = function(s)
      return { tensors = { x = { dims = s }, scaled = { dims = s, virtual = true },
                           inv_n = { value = 1 / s[2] }, y = { dims = { s[1], 1 } } },
               ops = { { op = "pointwise", mode = "MUL", inputs = { x = "x", b = "inv_n" }, outputs = { y = "scaled" } },
                       { op = "reduction", mode = "ADD", inputs = { x = "scaled" }, outputs = { y = "y" } } } }
    end,
    laws = { x = { -4, 4 } },
    ref = function(s, v)
      local y = reduce(s, { s[1], 1 }, v.x, 0, add)
      for i = 1, #y do y[i] = y[i] / s[2] end
      return { y = y }
    end,
    tol = F32_SUM,
  })
  add_case({
    name = "softmax f32 as one graph (max, sub, exp, sum, div)", lib = "cudnn", probe = true,
    small = { 6, 64 }, big = { 8192, 8192 },
    graph = function(s)
      local r = { s[1], 1 }
      return { tensors = { x = { dims = s }, mx = { dims = r, virtual = true }, d = { virtual = true },
                           e = { virtual = true }, sum = { dims = r, virtual = true }, y = { dims = s } },
               ops = { { op = "reduction", mode = "MAX", inputs = { x = "x" }, outputs = { y = "mx" } },
                       { op = "pointwise", mode = "SUB", inputs = { x = "x", b = "mx" }, outputs = { y = "d" } },
                       { op = "pointwise", mode = "EXP", inputs = { x = "d" }, outputs = { y = "e" } },
                       { op = "reduction", mode = "ADD", inputs = { x = "e" }, outputs = { y = "sum" } },
                       { op = "pointwise", mode = "DIV", inputs = { x = "e", b = "sum" }, outputs = { y = "y" } } } }
    end,
    laws = { x = { -4, 4 } },
    ref = function(s, v)
      local mx = reduce(s, { s[1], 1 }, v.x, -math.huge, math.max)
      local e = broadcast2(s, { s[1], 1 }, v.x, mx, function(a, b) return math.exp(a - b) end)
      local sum = reduce(s, { s[1], 1 }, e, 0, add)
      return { y = broadcast2(s, { s[1], 1 }, e, sum, function(a, b) return a / b end) }
    end,
    tol = F32_MATH,
  })
  -- Matmuls.
  local function mm(name, dt_in, dt_out, math_, tol)
    return {
      name = name, lib = "cudnn", small = { 2, 24, 40, 16 }, big = { 16, 2048, 2048, 2048 }, math = math_,
      graph = function(s)
        return { tensors = { a = { dtype = dt_in, dims = { s[1], s[2], s[3] } }, b = { dtype = dt_in, dims = { s[1], s[3], s[4] } },
                             c = { dtype = dt_out, dims = { s[1], s[2], s[4] } } }, math = math_,
                 ops = { { op = "matmul", inputs = { a = "a", b = "b" }, outputs = { c = "c" } } } }
      end,
      laws = { a = { -1, 1 }, b = { -1, 1 } },
      ref = function(s, v) return { c = matmul({ s[1], s[2], s[3] }, { s[1], s[3], s[4] }, v.a, v.b) } end,
      tol = tol,
    }
  end
  add_case(mm("matmul batched bf16 -> f32", "bf16", "f32", nil, F32_SUM))
  add_case(mm("matmul batched f32, math=fp32 (strict)", "f32", "f32", "fp32", F32_SUM))
  c[#c].known = "cuDNN 9.14's engine 0 for a batched fp32 matmul, noted neither tensor_core nor down_convert, " ..
    "is off by about 1e-3 on an H200 (no task uses a cuDNN fp32 matmul: the matmul tasks use cuBLASLt)"
  add_case(mm("matmul batched f32, math=tf32", "f32", "f32", "tf32", TF32))
  for _, act in ipairs { "RELU_FWD", "GELU_FWD" } do
    add_case({
      name = "matmul + bias + " .. act .. " bf16", lib = "cudnn", small = { 1, 24, 40, 16 }, big = { 1, 8192, 4096, 8192 },
      graph = function(s)
        return { tensors = { a = { dtype = "bf16", dims = { s[1], s[2], s[3] } }, b = { dtype = "bf16", dims = { s[1], s[3], s[4] } },
                             bias = { dtype = "bf16", dims = { 1, 1, s[4] } }, acc = { dims = { s[1], s[2], s[4] }, virtual = true },
                             z = { virtual = true }, y = { dtype = "bf16", dims = { s[1], s[2], s[4] } } },
                 ops = { { op = "matmul", inputs = { a = "a", b = "b" }, outputs = { c = "acc" } },
                         { op = "pointwise", mode = "ADD", inputs = { x = "acc", b = "bias" }, outputs = { y = "z" } },
                         { op = "pointwise", mode = act, inputs = { x = "z" }, outputs = { y = "y" } } } }
      end,
      laws = { a = { -1, 1 }, b = { -1, 1 }, bias = { -1, 1 } },
      ref = function(s, v)
        local cc = matmul({ s[1], s[2], s[3] }, { s[1], s[3], s[4] }, v.a, v.b)
        return { y = broadcast2({ s[1], s[2], s[4] }, { 1, 1, s[4] }, cc, v.bias, function(a, b) return UNARY[act](a + b) end) }
      end,
      tol = BF16,
    })
  end
  -- cuDNN 9.14 on an H200 lists only tensor-core engines for it.
  add_case(mm("matmul matrix-vector f32 (N = 1), math=fp32", "f32", "f32", "fp32", F32_SUM))
  c[#c].probe = true
  c[#c].small, c[#c].big = { 1, 40, 64, 1 }, { 1, 16384, 16384, 1 }
  -- Convolutions: {N, C, H, W, K, R}.
  add_case(conv_case("conv_fwd 3x3 NHWC bf16", "bf16", { 2, 8, 9, 9, 6, 3 }, { 64, 128, 56, 56, 128, 3 },
    { pad = 1, stride = 1, dil = 1 }))
  add_case(conv_case("conv_fwd 3x3 NHWC f32, math=fp32 (strict)", "f32", { 2, 8, 9, 9, 6, 3 }, { 16, 128, 56, 56, 128, 3 },
    { pad = 1, stride = 1, dil = 1, math = "fp32" }))
  add_case(conv_case("conv_fwd 3x3 NHWC f32, math=tf32", "f32", { 2, 8, 9, 9, 6, 3 }, { 32, 128, 56, 56, 128, 3 },
    { pad = 1, stride = 1, dil = 1, math = "tf32", tol = TF32 }))
  add_case(conv_case("conv_fwd 3x3 stride 2 dilation 2 NHWC bf16", "bf16", { 2, 8, 13, 13, 6, 3 }, { 64, 128, 112, 112, 128, 3 },
    { pad = 2, stride = 2, dil = 2 }))
  add_case(conv_case("conv_fwd depthwise 3x3 NHWC bf16", "bf16", { 2, 8, 9, 9, 8, 3 }, { 64, 512, 56, 56, 512, 3 },
    { pad = 1, stride = 1, dil = 1, depthwise = true }))
  add_case(conv_case("conv_fwd depthwise 3x3 NHWC f32", "f32", { 2, 8, 9, 9, 8, 3 }, { 64, 512, 56, 56, 512, 3 },
    { pad = 1, stride = 1, dil = 1, depthwise = true }))
  add_case(conv_case("conv_bwd_data (transposed conv) 3x3/2 NHWC bf16", "bf16", { 2, 6, 10, 10, 8, 3 },
    { 64, 128, 112, 112, 256, 3 }, { pad = 1, stride = 2, dil = 1, dgrad = true }))
  add_case(conv_case("conv_fwd + bias + ReLU NHWC bf16", "bf16", { 2, 8, 9, 9, 6, 3 }, { 64, 128, 56, 56, 128, 3 },
    { pad = 1, stride = 1, dil = 1, bias = true }))
  -- Pooling.
  add_case(pool_case("MAXPOOL", "max", "f32", 3, 2, 1))
  add_case(pool_case("AVGPOOL_INCLUDE_PADDING", "avg_include", "f32", 3, 2, 1))
  add_case(pool_case("AVGPOOL_EXCLUDE_PADDING", "avg_exclude", "f32", 3, 2, 1))
  add_case(pool_case("MAXPOOL", "max", "bf16", 2, 2, 0))
  c[#c].known = "cuDNN 9.14's bf16 resample gives wrong maxima on an H200 (the bf16 pooling tasks ship their baseline)"
  -- Normalizations: LayerNorm and RMSNorm over C of [rows, C, 1, 1].
  local function ln_case(mode, dtype, rms)
    return {
      name = "norm_fwd " .. mode .. " " .. dtype .. " inference", lib = "cudnn",
      small = { 6, 40 }, big = { 32768, 4096 },
      graph = function(s)
        local g = { tensors = { x = { dtype = dtype, dims = { s[1], s[2], 1, 1 } }, y = { dtype = dtype, dims = { s[1], s[2], 1, 1 } },
                                scale = { dims = { 1, s[2], 1, 1 } }, eps = { value = 1e-5 } },
                    ops = { { op = "norm_fwd", mode = mode, phase = "inference",
                              inputs = { x = "x", scale = "scale", epsilon = "eps" }, outputs = { y = "y" } } } }
        if not rms then
          g.tensors.bias = { dims = { 1, s[2], 1, 1 } }
          g.ops[1].inputs.bias = "bias"
        end
        return g
      end,
      laws = { x = { -3, 5 }, scale = { 0.5, 1.5 }, bias = { -1, 1 } },
      ref = function(s, v)
        return { y = (group_norm({ s[1], s[2], 1, 1 }, v.x, 1, v.scale, v.bias, 1e-5, rms)) }
      end,
      tol = dtype == "bf16" and BF16 or F32_MATH,
    }
  end
  add_case(ln_case("LAYER_NORM", "f32"))
  add_case(ln_case("LAYER_NORM", "bf16"))
  add_case(ln_case("RMS_NORM", "bf16", true))
  add_case(ln_case("RMS_NORM", "f32", true))
  add_case({
    -- cuDNN 9.14 on an H200: no engine (the batchnorm task's baseline is a
    -- pointwise graph).
    name = "norm_fwd BATCH_NORM f32 inference NHWC, given mean, inv_var", lib = "cudnn", probe = true,
    small = { 2, 6, 5, 7 }, big = { 64, 256, 56, 56 },
    graph = function(s)
      local cd = { 1, s[2], 1, 1 }
      return { tensors = { x = nhwc("f32", s), y = nhwc("f32", s), scale = nhwc("f32", cd), bias = nhwc("f32", cd),
                           mean = nhwc("f32", cd), inv_variance = nhwc("f32", cd) },
               ops = { { op = "norm_fwd", mode = "BATCH_NORM", phase = "inference",
                         inputs = { x = "x", scale = "scale", bias = "bias", mean = "mean", inv_variance = "inv_variance" },
                         outputs = { y = "y" } } } }
    end,
    laws = { x = { -3, 3 }, scale = { 0.5, 1.5 }, bias = { -1, 1 }, mean = { -1, 1 }, inv_variance = { 0.5, 2 } },
    ref = function(s, v)
      local cd = { 1, s[2], 1, 1 }
      local t = broadcast2(s, cd, v.x, v.mean, function(a, b) return a - b end)
      t = broadcast2(s, cd, t, v.inv_variance, function(a, b) return a * b end)
      t = broadcast2(s, cd, t, v.scale, function(a, b) return a * b end)
      return { y = broadcast2(s, cd, t, v.bias, add) }
    end,
    tol = F32_MATH,   -- cuDNN may fold scale·inv_variance and bias − mean·that first
  })
  add_case({
    name = "norm_fwd GROUP_NORM f32 training (8 groups)", lib = "cudnn", probe = true,
    small = { 2, 16, 3, 5 }, big = { 64, 256, 56, 56 },
    graph = function(s)
      local cd, sd = { 1, s[2], 1, 1 }, { s[1], 8, 1, 1 }
      return { tensors = { x = nhwc("f32", s), y = nhwc("f32", s), scale = nhwc("f32", cd), bias = nhwc("f32", cd),
                           eps = { value = 1e-5 }, mean = nhwc("f32", sd), inv_variance = nhwc("f32", sd) },
               ops = { { op = "norm_fwd", mode = "GROUP_NORM", phase = "training",
                         inputs = { x = "x", scale = "scale", bias = "bias", epsilon = "eps" },
                         outputs = { y = "y", mean = "mean", inv_variance = "inv_variance" } } } }
    end,
    laws = { x = { -3, 5 }, scale = { 0.5, 1.5 }, bias = { -1, 1 } },
    ref = function(s, v)
      local y, mean, inv = group_norm(s, v.x, 8, v.scale, v.bias, 1e-5)
      return { y = y, mean = mean, inv_variance = inv }
    end,
    tol = F32_MATH,
  })
  -- cuBLASLt.
  add_case(gemm_case("bf16 C = A.B^T", { dtype = "bf16", M = 24, N = 40, K = 32 }, { M = 8192, N = 8192, K = 8192 }, BF16))
  add_case(gemm_case("bf16 batched (8)", { dtype = "bf16", M = 24, N = 40, K = 32, batch = 3 },
    { M = 2048, N = 2048, K = 2048, batch = 8 }, BF16))
  add_case(gemm_case("bf16 A [K,M], B [K,N] (C = A^T.B)", { dtype = "bf16", M = 24, N = 40, K = 32, a_layout = "km", b_layout = "kn" },
    { M = 8192, N = 8192, K = 8192 }, BF16))
  add_case(gemm_case("f32 matrix-vector (N = 1), strict", { dtype = "f32", compute = "f32", M = 40, N = 1, K = 64 },
    { M = 16384, N = 1, K = 16384 }, F32_SUM))
  add_case(gemm_case("f32 vector-matrix (M = 1), strict, B [K,N]", { dtype = "f32", compute = "f32", M = 1, N = 40, K = 64, b_layout = "kn" },
    { M = 1, N = 16384, K = 16384 }, F32_SUM))
  for _, e in ipairs { "bias", "relu_bias", "gelu_bias" } do
    add_case(gemm_case("bf16 epilogue " .. e, { dtype = "bf16", M = 24, N = 40, K = 32, epilogue = e },
      { M = 8192, N = 8192, K = 4096 }, BF16))
  end
  -- cuBLASLt 13.0 refuses an fp32 bias for a bf16 output on an H200
  -- (its heuristic answers INVALID_VALUE): a probe.
  add_case(gemm_case("bf16 epilogue relu_bias, fp32 bias", { dtype = "bf16", M = 24, N = 40, K = 32, epilogue = "relu_bias",
    bias_dtype = "f32" }, { M = 8192, N = 8192, K = 4096 }, BF16, true))
  -- An odd shape (linear_gelu_bf16's small variant): every algorithm of
  -- the heuristic's list must be right, split-K ones included.
  add_case(gemm_case("bf16 epilogue gelu_bias, odd shape", { dtype = "bf16", M = 123, N = 457, K = 789, epilogue = "gelu_bias" },
    { M = 8192, N = 4096, K = 4096 }, BF16))
  add_case(gemm_case("f32 strict", { dtype = "f32", compute = "f32", M = 24, N = 40, K = 32 }, { M = 4096, N = 4096, K = 4096 }, F32_SUM))
  add_case(gemm_case("f32 TF32", { dtype = "f32", compute = "tf32", M = 24, N = 40, K = 32 }, { M = 8192, N = 8192, K = 8192 }, TF32))
  add_case(gemm_case("f32 strict, epilogue gelu_bias", { dtype = "f32", compute = "f32", M = 24, N = 40, K = 32, epilogue = "gelu_bias" },
    { M = 4096, N = 4096, K = 4096 }, F32_MATH))
  add_case(gemm_case("f16 batched, A [K,M]", { dtype = "f16", M = 24, N = 40, K = 32, batch = 2, a_layout = "km" },
    { M = 2048, N = 2048, K = 2048, batch = 8 }, BF16))
  return c
end

-- ---- host side of a case (no GPU needed) ----------------------------------------

-- The real tensors a cuDNN description writes (outputs) and reads (inputs).
local function roles(desc)
  local written = {}
  for _, op in ipairs(desc.ops) do
    for _, name in pairs(op.outputs or {}) do written[name] = true end
  end
  local ins, outs = {}, {}
  for name, t in pairs(desc.tensors) do
    if not t.virtual and t.value == nil then
      if written[name] then outs[#outs + 1] = name else ins[#ins + 1] = name end
    end
  end
  table.sort(ins)
  table.sort(outs)
  return ins, outs
end
M.roles = roles

-- Seeded inputs for a cuDNN case on its small shape, given the resolved
-- tensors (graph_describe's or plan:info()'s), and the reference outputs:
-- {values = {name = logical list}, want = {name = list}, ins =, outs =}.
function M.host_cudnn(case, tensors)
  local desc = case.graph(case.small)
  local ins, outs = roles(desc)
  local rand = generator(0x5eed)
  local values = {}
  for _, name in ipairs(ins) do
    local t = tensors[name]
    local law = case.laws[name] or { -1, 1 }
    local v = {}
    for i = 1, numel(t.dims) do v[i] = rounded(t.dtype, rand(law[1], law[2])) end
    values[name] = v
  end
  return { values = values, want = case.ref(shape_of(case.small), values), ins = ins, outs = outs }
end

-- The same for a cuBLASLt case: A, B (and bias) over their whole buffers.
function M.host_blas(case, info)
  local spec = case.spec
  local rand = generator(0xb1a5)
  local dt = spec.dtype
  local out_dt = dt == "e4m3" and "bf16" or dt
  local esz = ELEM[dt]
  local values = { A = {}, B = {} }
  for i = 1, info.a_bytes // esz do values.A[i] = rounded(dt, rand(-1, 1)) end
  for i = 1, info.b_bytes // esz do values.B[i] = rounded(dt, rand(-1, 1)) end
  if (info.bias_bytes or 0) > 0 then
    local bdt = info.bias_dtype or out_dt
    values.bias = {}
    for i = 1, spec.N do values.bias[i] = rounded(bdt, rand(-1, 1)) end
  end
  return { values = values, want = gemm_ref(spec, values), out_dtype = out_dt }
end

-- Compares got with want under tol: worst |error|, elements out of
-- tolerance (NaN counts), and the first one.
local function compare(got, want, tol)
  local worst, bad, first = 0, 0, nil
  for i = 1, #want do
    local g, w = got[i], want[i]
    local e = math.abs(g - w)
    if e ~= e or g ~= g then e = math.huge end
    if e > worst then worst = e end
    if not (e <= tol.atol + tol.rtol * math.abs(w)) then
      bad = bad + 1
      first = first or string.format("element %d: got %.6g, want %.6g", i, g, w)
    end
  end
  if #got ~= #want then bad, first = bad + 1, string.format("%d values, want %d", #got, #want) end
  return worst, bad, first
end
M.compare = compare

-- ---- running -------------------------------------------------------------------

local function fmt_us(us) return us and string.format("%.1f", us) or "-" end

-- Allocates every real tensor of a plan: inputs filled from values (or
-- with a constant byte), outputs poisoned. Returns args, buffers.
local function alloc_tensors(ctx, tensors, ins, outs, values, made)
  local args, bufs = {}, {}
  local function alloc(name)
    local buf = assert(ctx:alloc(math.max(tensors[name].bytes, 16)))
    made[#made + 1] = buf
    bufs[name], args[name] = buf, buf
    return buf
  end
  for _, name in ipairs(ins) do
    local b = alloc(name)
    if values then assert(b:upload(pack(tensors[name], values[name]))) else assert(b:fill(0x3c)) end
  end
  for _, name in ipairs(outs) do assert(alloc(name):fill(0xff)) end
  return args, bufs
end

local function time_run(opts, ctx, run)
  local timing = require "klab.timing"
  local r, err = timing.measure(ctx, { run = run, budget_s = opts.quick and 0.3 or 1, min_samples = 10,
    max_samples = opts.quick and 50 or 200 })
  if not r then error("timing: " .. tostring(err), 0) end
  return r.candidate.median
end

local function run_cudnn(case, ctx, opts, made)
  local dnn = require "klab.dnn"
  local row = { engine = "-", time = "-", err = "-" }
  local plan, perr, code = dnn.graph_plan(ctx, case.graph(case.small))
  if not plan then
    if case.probe and code == "EUNSUPPORTED" then return "skip", row, "cuDNN refuses it: " .. tostring(perr) end
    return "FAIL", row, "plan (small): " .. tostring(perr)
  end
  made[#made + 1] = plan
  local info = plan:info()
  local host = M.host_cudnn(case, info.tensors)
  local args, bufs = alloc_tensors(ctx, info.tensors, host.ins, host.outs, host.values, made)
  local ok, rerr = plan:run(args)
  if ok then ok, rerr = ctx:sync() end
  if not ok then return "FAIL", row, "run (small): " .. tostring(rerr) end
  local worst, bad, first = 0, 0, nil
  for _, name in ipairs(host.outs) do
    local got = unpack_values(info.tensors[name], bufs[name]:download())
    local w, b, f = compare(got, host.want[name], case.tol)
    worst, bad = math.max(worst, w), bad + b
    first = first or (f and (name .. " " .. f))
  end
  row.err = string.format("%.3g", worst)
  if bad > 0 then
    local why = string.format("%d outputs out of tolerance (engine %d%s); %s", bad, info.engine,
      info.notes[1] ~= "" and (" " .. info.notes[1]) or "", first)
    if case.known then return "skip", row, "known defect: " .. case.known .. ": " .. why end
    return "FAIL", row, why
  end
  -- The big shape, timed.
  local big, berr, bcode = dnn.graph_plan(ctx, case.graph(case.big))
  if not big then
    if case.probe and bcode == "EUNSUPPORTED" then return "skip", row, "big shape refused: " .. tostring(berr) end
    return "FAIL", row, "plan (big): " .. tostring(berr)
  end
  made[#made + 1] = big
  local binfo = big:info()
  row.engine = string.format("%d%s", binfo.engine, binfo.notes[1] ~= "" and (" " .. binfo.notes[1]) or "")
  local bargs = alloc_tensors(ctx, binfo.tensors, host.ins, host.outs, nil, made)
  local us = time_run(opts, ctx, function()
    local rok, e = big:run(bargs)
    if not rok then error("run (big): " .. tostring(e), 0) end
    return -1
  end)
  row.time = fmt_us(us)
  return "pass", row, string.format("cuDNN %s, small-shape engine %d, big %s", binfo.version, info.engine,
    table.concat(case.big, "x"))
end

local function run_blas(case, ctx, opts, made)
  local blas = require "klab.blas"
  local row = { engine = "-", time = "-", err = "-" }
  local plan, perr = blas.gemm_plan(ctx, case.spec)
  if not plan then
    if case.probe then return "skip", row, "cuBLASLt refuses it: " .. tostring(perr) end
    return "FAIL", row, "plan (small): " .. tostring(perr)
  end
  made[#made + 1] = plan
  local info = plan:info()
  local host = M.host_blas(case, info)
  local dt = case.spec.dtype
  local function upload(list, dtype, bytes)
    local buf = assert(ctx:alloc(math.max(bytes, 16)))
    made[#made + 1] = buf
    local parts = {}
    for i, x in ipairs(list) do parts[i] = ENC[dtype](x) end
    assert(buf:upload(table.concat(parts)))
    return buf
  end
  local bA = upload(host.values.A, dt, info.a_bytes)
  local bB = upload(host.values.B, dt, info.b_bytes)
  local bC = assert(ctx:alloc(info.c_bytes))
  made[#made + 1] = bC
  local ropts = {}
  if host.values.bias then ropts.bias = upload(host.values.bias, info.bias_dtype, info.bias_bytes) end
  local worst, bad, first = 0, 0, nil
  for i = 1, #plan:algos() do
    assert(bC:fill(0xff))
    ropts.algo = i
    local ok, rerr = plan:run(bA, bB, bC, ropts)
    if ok then ok, rerr = ctx:sync() end
    if not ok then return "FAIL", row, string.format("run algo %d: %s", i, tostring(rerr)) end
    local s, got = bC:download(), {}
    for j = 1, #host.want do got[j] = DEC[host.out_dtype](s, j - 1) end
    local w, b, f = compare(got, host.want, case.tol)
    worst, bad = math.max(worst, w), bad + b
    if f and not first then
      local a = plan:algos()[i]
      first = string.format("algo %d (id %d, tile %s, split-K %d, reduction scheme %d): %d out; %s", i, a.algo_id,
        a.tile, a.splitk, a.reduction_scheme, b, f)
    end
  end
  row.err = string.format("%.3g", worst)
  if bad > 0 then return "FAIL", row, string.format("%d outputs out of tolerance; %s", bad, first) end
  local big, berr = blas.gemm_plan(ctx, (function() local s = {}; for k, v in pairs(case.big_spec) do s[k] = v end; s.algos = 4; return s end)())
  if not big then return "FAIL", row, "plan (big): " .. tostring(berr) end
  made[#made + 1] = big
  local bi = big:info()
  local function buf(bytes, byte)
    local b = assert(ctx:alloc(math.max(bytes, 16)))
    made[#made + 1] = b
    assert(b:fill(byte))
    return b
  end
  local topts = { budget_s = opts.quick and 0.3 or 1, min_samples = 10, max_samples = opts.quick and 50 or 200 }
  if (bi.bias_bytes or 0) > 0 then topts.bias = buf(bi.bias_bytes, 0x3c) end
  local r, terr = big:time(buf(bi.a_bytes, 0x3c), buf(bi.b_bytes, 0x3c), buf(bi.c_bytes, 0), topts)
  if not r then return "FAIL", row, "time (big): " .. tostring(terr) end
  row.engine = string.format("algo %d %s %s", r.best.algo_id, r.best.tile, r.best.stages)
  row.time = fmt_us(r.best.median_us)
  return "pass", row, string.format("first choice %s us (algo %d), %.1f TFLOP/s best, big M=%d N=%d K=%d%s",
    fmt_us(r.first.median_us), r.first.algo_id, r.best.tflops, bi.M, bi.N, bi.K,
    bi.batch > 1 and (" batch " .. bi.batch) or "")
end

-- Without a GPU: the descriptions only.
local function describe_case(case)
  if case.lib == "blas" then
    local blas = require "klab.blas"
    for _, spec in ipairs { case.spec, case.big_spec } do
      local d, err = blas.describe(spec)
      if not d then return "FAIL", "describe: " .. tostring(err) end
    end
    return "skip", "no GPU; descriptors and layouts created by cuBLASLt"
  end
  local dnn = require "klab.dnn"
  local notes = {}
  for _, shape in ipairs { case.small, case.big } do
    local d, err, code = dnn.graph_describe(case.graph(shape))
    if not d then
      if case.probe and code == "EUNSUPPORTED" then return "skip", "no GPU; cuDNN refuses it: " .. tostring(err) end
      return "FAIL", "describe: " .. tostring(err)
    end
    notes[#notes + 1] = d.graph and ("graph ok, " .. tostring(d.engines or "?") .. " engines")
      or ("graph not finalized without a handle: " .. tostring(d.graph_error))
  end
  return "skip", "no GPU; described (" .. table.concat(notes, "; ") .. ")"
end

function M.run(opts)
  opts = opts or {}
  local out = opts.print or print
  local gpu = require "klab.gpu"
  local have_gpu, why = gpu.available()
  local ctx
  if have_gpu then
    local cerr
    ctx, cerr = gpu.context(0)
    if not ctx then have_gpu, why = false, cerr end
  end
  local rows, passed, failed, skipped = {}, 0, 0, 0
  for _, case in ipairs(M.cases()) do
    local status, row, detail
    local made = {}
    local ok, e = pcall(function()
      if have_gpu then
        status, row, detail = (case.lib == "blas" and run_blas or run_cudnn)(case, ctx, opts, made)
      else
        status, detail = describe_case(case)
        row = { engine = "-", time = "-", err = "-" }
      end
    end)
    if not ok then status, row, detail = "FAIL", row or { engine = "-", time = "-", err = "-" }, tostring(e) end
    if have_gpu then pcall(function() ctx:sync() end) end
    for i = #made, 1, -1 do pcall(function() made[i]:free() end) end
    if status == "pass" then passed = passed + 1 elseif status == "FAIL" then failed = failed + 1 else skipped = skipped + 1 end
    rows[#rows + 1] = { name = case.name, status = status, engine = row.engine, time = row.time, err = row.err,
                        detail = detail or "" }
    if opts.progress ~= false then
      io.stderr:write(string.format("[libs] %-58s %-4s %s\n", case.name, status, detail or ""))
    end
  end
  out(string.format("%-58s %-4s %-30s %9s %9s  %s", "case", "", "engine (big shape)", "time us", "max err", "detail"))
  for _, r in ipairs(rows) do
    out(string.format("%-58s %-4s %-30s %9s %9s  %s", r.name, r.status, r.engine, r.time, r.err, r.detail))
  end
  if not have_gpu then out("no GPU here (" .. tostring(why) .. "): every case was only described") end
  out(string.format("%d passed, %d failed, %d skipped", passed, failed, skipped))
  return rows, passed, failed, skipped
end

-- Standalone: klab tests/gpu/libs_check.lua [--quick]
local script = arg and arg[0] or ""
if script:find("libs_check%.lua$") then
  local quick = false
  for _, a in ipairs(arg) do if a == "--quick" then quick = true end end
  local _, _, failed = M.run { quick = quick }
  os.exit(failed == 0 and 0 or 1)
end

return M
