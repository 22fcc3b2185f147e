-- libs_test.lua: klab.dnn's graph builder (graph_describe, graph_plan) and
-- the host side of tests/gpu/libs_check.lua.
--
-- Without a GPU: descriptions of every kind are described by the loaded
-- cuDNN; the binding's argument checks raise with messages that name the
-- field; a description cuDNN refuses is nil, msg, "EUNSUPPORTED"; a plan
-- without a driver is ENODRIVER. The GPU check's own pieces are checked
-- here so that a failure there is the library's, not the check's: its
-- encoders and tensor packing, its reference functions on known answers,
-- every case's inputs and reference on its small shape, and its run
-- without a GPU (every case described, none failed).
-- With a GPU: a ReLU graph planned, run and compared, and the plan's misuse.

local dnn = require "klab.dnn"
local gpu = require "klab.gpu"

local T = {}

local function need_cudnn(t)
  local v, code = dnn.version()
  if not v then t.skip("no cuDNN: " .. tostring(code)) end
  return code
end

local function relu_desc(n)
  return { tensors = { x = { dims = { 1, n } }, y = { dims = { 1, n } } },
           ops = { { op = "pointwise", mode = "RELU_FWD", inputs = { x = "x" }, outputs = { y = "y" } } } }
end

local function check_module(t)
  return dofile(t.root .. "/tests/gpu/libs_check.lua")
end

-- ---- describe ----

function T.describe_fields(t)
  local code = need_cudnn(t)
  local g = assert(dnn.graph_describe {
    tensors = { x = { dtype = "bf16", dims = { 8, 64, 56, 56 }, layout = "nhwc" },
                w = { dtype = "bf16", dims = { 128, 64, 3, 3 }, layout = "nhwc" },
                acc = { dims = { 8, 128, 56, 56 }, layout = "nhwc", virtual = true },
                y = { dtype = "bf16" } },
    ops = { { op = "conv_fwd", inputs = { "x", "w" }, outputs = { "acc" }, padding = 1 },
            { op = "pointwise", mode = "relu_fwd", inputs = { "acc" }, outputs = { "y" } } },
  })
  t.eq(g.nops, 2)
  t.eq(g.ntensors, 4)
  t.eq(g.ops[1], "conv_fwd")
  t.eq(g.ops[2], "pointwise RELU_FWD")
  t.eq(g.version_code, code)
  t.match(g.version, "^9%.%d+%.%d+$")
  if code >= 91900 then
    t.eq(g.graph, true, tostring(g.graph_error))
    t.ok((g.engines or 0) > 0, "engines " .. tostring(g.engines) .. " " .. tostring(g.engines_error))
  end
  -- Resolved tensors: channels-last strides, inferred output, sizes.
  t.eq(table.concat(g.tensors.x.strides, ","), "200704,1,3584,64")
  t.eq(g.tensors.x.bytes, 8 * 64 * 56 * 56 * 2)
  t.eq(table.concat(g.tensors.y.dims, ","), "8,128,56,56")
  t.eq(table.concat(g.tensors.y.strides, ","), table.concat(g.tensors.acc.strides, ","))
  t.eq(g.tensors.acc.virtual, true)
  t.eq(g.tensors.acc.bytes, 0)
end

function T.describe_scalars_and_knobs(t)
  need_cudnn(t)
  local g = assert(dnn.graph_describe {
    tensors = { x = { dims = { 4, 8, 16 } }, s = { value = 0.5 }, y = { dims = { 4, 8, 16 } } },
    ops = { { op = "pointwise", mode = "MUL", inputs = { x = "x", b = "s" }, outputs = { y = "y" } } },
    compute = "f32", plans = 2, engine = 0, math = "fp32",
  })
  t.eq(table.concat(g.tensors.s.dims, ","), "1,1,1", "a scalar takes the operand's rank")
  t.eq(g.tensors.s.value, 0.5)
  t.eq(g.tensors.s.bytes, 0)
end

function T.describe_refused_by_cudnn(t)
  need_cudnn(t)
  -- cuDNN 9.19 refuses an AVG reduction when the operation is finalized;
  -- a later one may take it. Either way the answer is well formed.
  local g, err, code = dnn.graph_describe {
    tensors = { x = { dims = { 8, 64 } }, y = { dims = { 8, 1 } } },
    ops = { { op = "reduction", mode = "AVG", inputs = { x = "x" }, outputs = { y = "y" } } },
  }
  if g then
    t.eq(g.ops[1], "reduction AVG")
  else
    t.eq(code, "EUNSUPPORTED")
    t.match(err, "op 0 %(reduction AVG%)")
    t.match(err, "CUDNN_STATUS_")
  end
end

function T.describe_misuse_raises(t)
  local ok_t = { x = { dims = { 2, 8 } }, y = { dims = { 2, 8 } } }
  local function op(o) return { tensors = ok_t, ops = { o } } end
  local relu = { op = "pointwise", mode = "RELU_FWD", inputs = { x = "x" }, outputs = { y = "y" } }
  local function with(k, v)
    local o = {}
    for a, b in pairs(relu) do o[a] = b end
    o[k] = v
    return op(o)
  end
  t.raises(function() dnn.graph_describe() end)
  t.raises(function() dnn.graph_describe { ops = {} } end, "needs tensors")
  t.raises(function() dnn.graph_describe { tensors = ok_t } end, "needs ops")
  t.raises(function() dnn.graph_describe { tensors = { x = { dims = { 2 } } }, ops = { {} } } end, "needs op")
  t.raises(function() dnn.graph_describe(with("op", "softmax")) end, "unknown op 'softmax'")
  t.raises(function() dnn.graph_describe(with("mode", "LEAKY_RELU")) end, "no mode 'LEAKY_RELU'")
  t.raises(function() dnn.graph_describe(with("mode", nil)) end, "needs a mode")
  t.raises(function() dnn.graph_describe(with("inputs", { x = "nope" })) end, "names no described tensor %('nope'%)")
  t.raises(function() dnn.graph_describe(with("inputs", { w = "x" })) end, "has no role 'w'")
  t.raises(function() dnn.graph_describe(with("inputs", { y = "x" })) end, "'y' belongs in outputs")
  t.raises(function() dnn.graph_describe(with("outputs", { "y", "x" })) end, "too many outputs")
  t.raises(function() dnn.graph_describe(with("compute", "fp64")) end, "compute must be")
  t.raises(function() dnn.graph_describe(with("padding", -1)) end, "padding must be an integer >= 0")
  t.raises(function() dnn.graph_describe(with("stride", { 1, 2, 3, 4 })) end, "stride needs 1 to 3 entries")
  t.raises(function() dnn.graph_describe(with("phase", "eval")) end, "inference or training")
  t.raises(function() dnn.graph_describe { tensors = { x = { dtype = "fp8", dims = { 2 } } }, ops = { relu } } end,
    "tensor 'x': dtype must be")
  t.raises(function() dnn.graph_describe { tensors = { x = { dims = 2 } }, ops = { relu } } end, "dims must be a list")
  t.raises(function() dnn.graph_describe { tensors = { x = { dims = { 2, 0 } } }, ops = { relu } } end,
    "dims%[2%] must be an integer >= 1")
  t.raises(function()
    dnn.graph_describe { tensors = { x = { dims = { 2, 8 }, strides = { 1 } }, y = { dims = { 2, 8 } } }, ops = { relu } }
  end, "strides must be a list as long as dims")
  t.raises(function() dnn.graph_describe { tensors = { x = { dims = { 2, 8 }, layout = "nchw" } }, ops = { relu } } end,
    "layout must be row or nhwc")
  t.raises(function() dnn.graph_describe { tensors = { x = { dims = { 2, 8 }, value = "one" } }, ops = { relu } } end,
    "value must be a number")
  t.raises(function() dnn.graph_describe { tensors = { [1] = { dims = { 2 } } }, ops = { relu } } end, "keyed by name")
  t.raises(function() dnn.graph_describe { tensors = ok_t, ops = { relu }, math = "fast" } end, "any, fp32 or tf32")
  t.raises(function() dnn.graph_describe { tensors = ok_t, ops = { relu }, plans = 0 } end, "plans must be between")
  -- What the C checks find, raised with their messages.
  t.raises(function()
    dnn.graph_describe { tensors = { x = { dims = { 2, 8 } }, b = { dims = { 3, 8 } }, y = { dims = { 2, 8 } } },
      ops = { { op = "pointwise", mode = "ADD", inputs = { x = "x", b = "b" }, outputs = { y = "y" } } } }
  end, "do not broadcast")
  t.raises(function()
    dnn.graph_describe { tensors = { x = { dims = { 2, 8 } }, y = { dims = { 2, 8 } }, z = { dims = { 2, 8 } } }, ops = { relu } }
  end, "'z' is not used")
  t.raises(function()
    dnn.graph_describe { tensors = { x = { dims = { 1, 8, 16, 16 } }, w = { dims = { 16, 8, 3, 3 } }, y = { dims = { 1, 16, 16, 16 } } },
      ops = { { op = "conv_fwd", inputs = { x = "x", w = "w" }, outputs = { y = "y" } } } }
  end, "give 14")
end

function T.plan_without_a_driver(t)
  need_cudnn(t)
  if gpu.available() then t.skip("a GPU is present") end
  local p, err, code = dnn.graph_plan(nil, relu_desc(64))
  t.eq(p, nil)
  t.eq(code, "ENODRIVER", tostring(err))
  t.raises(function() dnn.graph_plan(42, relu_desc(64)) end, "klab.gpu.Context")
  t.raises(function() dnn.graph_plan(nil, { tensors = {} }) end, "needs ops")
end

-- ---- on a GPU ----

function T.gpu_relu_plan(t)
  need_cudnn(t)
  local ok, why = gpu.available()
  if not ok then t.skip("no GPU: " .. tostring(why)) end
  local ctx = assert(gpu.context(0))
  local n = 1024
  local plan, err = dnn.graph_plan(ctx, relu_desc(n))
  if not t.ok(plan, tostring(err)) then return end
  local info = plan:info()
  t.ok(info.engine >= 0 and info.plans == 1 and #info.engines == 1, "engine " .. tostring(info.engine))
  t.ok(info.heuristic_count >= 1, "heuristic count")
  t.eq(info.tensors.x.bytes, n * 4)
  t.match(tostring(plan), "GraphPlan %(1 ops, engine")
  local parts, want = {}, {}
  for i = 1, n do
    local x = (i % 17) - 8
    parts[i] = string.pack("<f", x)
    want[i] = math.max(x, 0)
  end
  local bx, by = assert(ctx:alloc(n * 4)), assert(ctx:alloc(n * 4))
  assert(bx:upload(table.concat(parts)))
  assert(by:fill(0xff))
  t.ok(plan:run { x = bx, y = by })
  assert(ctx:sync())
  local out, bad = by:download(), 0
  for i = 1, n do
    if string.unpack("<f", out, 4 * i - 3) ~= want[i] then bad = bad + 1 end
  end
  t.eq(bad, 0, "ReLU outputs wrong")
  t.raises(function() plan:run { x = bx } end, "'y' needs an address")
  t.raises(function() plan:run { x = bx, y = by, z = by } end, "'z' is not a tensor")
  t.raises(function() plan:run({ x = bx, y = by }, 2) end, "plan index")
  local small = assert(ctx:alloc(16))
  t.raises(function() plan:run { x = small, y = by } end, "do not fit")
  t.eq(plan:free(), true)
  t.eq(plan:free(), false)
  t.match(tostring(plan), "freed")
  t.raises(function() plan:info() end, "freed")
end

-- ---- the GPU check's host side ----

function T.check_encoders_and_packing(t)
  local lc = check_module(t)
  t.eq(lc.rounded("bf16", 1.00390625), 1.0, "bf16 rounds to nearest even")
  t.eq(lc.rounded("bf16", 1.01171875), 1.015625)
  t.eq(lc.rounded("f16", 1 / 3), 0.333251953125)
  t.eq(lc.rounded("f16", 65519), 65504.0)
  t.eq(lc.rounded("f16", 2 ^ -24), 2 ^ -24)
  t.eq(lc.rounded("f32", 0.1), string.unpack("<f", string.pack("<f", 0.1)))
  -- NHWC packing: logical [1,2,2,3] (N,C,H,W) stored channels-last.
  local td = { dtype = "f32", dims = { 1, 2, 2, 3 }, strides = { 12, 1, 6, 2 }, bytes = 48 }
  local vals = {}
  for i = 1, 12 do vals[i] = i + 0.0 end
  local s = lc.pack(td, vals)
  t.eq(#s, 48)
  t.eq(string.unpack("<f", s, 1), 1.0)     -- n0 c0 h0 w0
  t.eq(string.unpack("<f", s, 5), 7.0)     -- n0 c1 h0 w0 is next in memory
  t.eq(string.unpack("<f", s, 9), 2.0)     -- n0 c0 h0 w1
  local back = lc.unpack(td, s)
  t.eq(table.concat(back, ","), table.concat(vals, ","))
  local b16 = { dtype = "bf16", dims = { 3 }, strides = { 1 }, bytes = 6 }
  t.eq(table.concat(lc.unpack(b16, lc.pack(b16, { 1, -2, 0.5 })), ","), "1.0,-2.0,0.5")
end

function T.check_references(t)
  local lc = check_module(t)
  t.near(lc.erf(0.5), 0.5204998778130465, 1e-15)
  t.near(lc.erf(-2), -0.9953222650189527, 1e-15)
  t.near(lc.erf(3.5), 0.9999992569016276, 1e-15)
  t.near(lc.gelu(1), 0.8413447460685429, 1e-15)
  t.near(lc.gelu_tanh(1), 0.8411919906082768, 1e-15)
  t.near(lc.tanh(0.5), 0.46211715726000974, 1e-15)
  t.near(lc.UNARY.SOFTPLUS_FWD(0), math.log(2), 1e-15)
  t.near(lc.UNARY.SWISH_FWD(2), 2 / (1 + math.exp(-2)), 1e-15)
  t.eq(lc.UNARY.ELU_FWD(-1, 0.5), 0.5 * (math.exp(-1) - 1))
  -- matmul [1,2,2]x[1,2,3]
  t.eq(table.concat(lc.matmul({ 1, 2, 2 }, { 1, 2, 3 }, { 1, 2, 3, 4 }, { 5, 6, 7, 8, 9, 10 }), ","), "21,24,27,47,54,61")
  -- A 2x2 image, one channel, 2x2 filter of ones, padding 1: each output
  -- sums the window inside the image.
  local y = lc.conv2d({ 1, 1, 2, 2 }, { 1, 1, 2, 2 }, { 1, 1, 3, 3 }, { 1, 2, 3, 4 }, { 1, 1, 1, 1 }, 1, 1, 1)
  t.eq(table.concat(y, ","), "1,3,2,4,10,6,3,7,4")
  -- Its data gradient with dy = ones is the number of windows covering each pixel.
  local dx = lc.conv2d_dgrad({ 1, 1, 2, 2 }, { 1, 1, 2, 2 }, { 1, 1, 3, 3 }, { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, { 1, 1, 1, 1 }, 1, 1, 1)
  t.eq(table.concat(dx, ","), "4,4,4,4")
  -- Depthwise: 2 channels, 2 filters of one channel each.
  y = lc.conv2d({ 1, 2, 1, 1 }, { 2, 1, 1, 1 }, { 1, 2, 1, 1 }, { 3, 5 }, { 2, 10 }, 0, 1, 1)
  t.eq(table.concat(y, ","), "6,50")
  local x = { 1, 2, 3, 4 }
  t.eq(table.concat(lc.pool2d({ 1, 1, 2, 2 }, { 1, 1, 1, 1 }, x, "max", 3, 2, 1), ","), "4")
  t.eq(table.concat(lc.pool2d({ 1, 1, 2, 2 }, { 1, 1, 1, 1 }, x, "avg_include", 3, 2, 1), ","), tostring(10 / 9))
  t.eq(table.concat(lc.pool2d({ 1, 1, 2, 2 }, { 1, 1, 1, 1 }, x, "avg_exclude", 3, 2, 1), ","), "2.5")
  local yn, mean, inv = lc.group_norm({ 1, 4, 1, 1 }, { 1, 2, 3, 4 }, 1, { 1, 1, 1, 1 }, nil, 0)
  t.eq(mean[1], 2.5)
  t.near(inv[1], 1 / math.sqrt(1.25), 1e-15)
  local s = 0
  for _, v in ipairs(yn) do s = s + v * v end
  t.near(s / 4, 1, 1e-12, "unit variance")
  yn = lc.group_norm({ 1, 2, 1, 1 }, { 3, 4 }, 1, { 1, 1 }, nil, 0, true)
  t.near(yn[2], 4 / math.sqrt(12.5), 1e-15, "RMS")
  local r = lc.reduce({ 2, 3 }, { 2, 1 }, { 1, 2, 3, 4, 5, 6 }, 0, function(a, b) return a + b end)
  t.eq(table.concat(r, ","), "6,15")
  r = lc.reduce({ 2, 3 }, { 1, 3 }, { 1, 2, 3, 4, 5, 6 }, 0, function(a, b) return a + b end)
  t.eq(table.concat(r, ","), "5,7,9")
  local g = lc.gemm_ref({ M = 1, N = 2, K = 2, epilogue = "relu_bias" }, { A = { 1, 2 }, B = { 1, 1, -3, 0 }, bias = { 1, 1 } })
  t.eq(table.concat(g, ","), "4,0")
  g = lc.gemm_ref({ M = 1, N = 2, K = 2, b_layout = "kn" }, { A = { 1, 2 }, B = { 1, 1, -3, 0 } })
  t.eq(table.concat(g, ","), "-5,1")
  local worst, bad = lc.compare({ 1, 2.5, 0 / 0 }, { 1, 2, 3 }, { atol = 0.1, rtol = 0 })
  t.eq(bad, 2)
  t.eq(worst, math.huge)
end

-- Every case's graph describes on both shapes (a probe may be refused),
-- and its host inputs and reference come out whole and finite.
function T.check_cases_host_side(t)
  need_cudnn(t)
  local lc = check_module(t)
  local blas = require "klab.blas"
  local n = 0
  for _, case in ipairs(lc.cases()) do
    n = n + 1
    if case.lib == "blas" then
      local info = assert(blas.describe(case.spec))
      local host = lc.host_blas(case, info)
      t.eq(#host.want, case.spec.M * case.spec.N * (case.spec.batch or 1), case.name)
      for _, v in ipairs(host.want) do
        if v ~= v then t.ok(false, case.name .. ": NaN in the reference") break end
      end
      t.ok(blas.describe(case.big_spec), case.name .. " (big)")
    else
      local d, err, code = dnn.graph_describe(case.graph(case.small))
      if d then
        local host = lc.host_cudnn(case, d.tensors)
        t.ok(#host.outs >= 1, case.name .. ": outputs")
        for _, name in ipairs(host.outs) do
          local want = host.want[name]
          local count = 1
          for _, x in ipairs(d.tensors[name].dims) do count = count * x end
          if t.ok(want, case.name .. ": reference for " .. name) then
            t.eq(#want, count, case.name .. " " .. name)
            for _, v in ipairs(want) do
              if v ~= v or v == math.huge or v == -math.huge then
                t.ok(false, case.name .. ": non-finite reference value")
                break
              end
            end
          end
        end
        for _, name in ipairs(host.ins) do t.ok(case.laws[name], case.name .. ": a law for " .. name) end
        t.ok(dnn.graph_describe(case.graph(case.big)), case.name .. " (big shape)")
      else
        t.ok(case.probe and code == "EUNSUPPORTED", case.name .. ": " .. tostring(err))
      end
    end
  end
  t.ok(n >= 60, "cases " .. n)
end

function T.check_runs_without_a_gpu(t)
  need_cudnn(t)
  if gpu.available() then t.skip("a GPU is present: the check would run for real") end
  local lc = check_module(t)
  local lines = {}
  local rows, passed, failed, skipped = lc.run { print = function(l) lines[#lines + 1] = l end, progress = false }
  t.eq(failed, 0)
  t.eq(passed, 0)
  t.eq(skipped, #rows)
  t.eq(lines[#lines], string.format("0 passed, 0 failed, %d skipped", #rows))
  t.match(lines[1], "^case")
end

return T
