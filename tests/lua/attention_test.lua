-- attention_test.lua: the attention tasks (tasks/attention), their samples
-- and known-bad kernels, klab's reference kernels and klab.dnn (cuDNN),
-- without a GPU. The gpu_* tests run the reference and cuDNN on a small
-- shape and skip when there is no GPU; tests/gpu/attention_check.lua does
-- the full evaluation on the GPU machine.

local task = require "klab.task"
local plan = require "klab.eval.plan"
local jit = require "klab.jit"
local candidate = require "klab.eval.candidate"
local gpu = require "klab.gpu"

local T = {}

local function tasks_root(t) return t.root .. "/tasks" end

local function attn_tasks(t)
  local all, errs = task.list(tasks_root(t))
  local out = {}
  for _, x in ipairs(all) do
    if x.family == "attention" then out[#out + 1] = x end
  end
  return out, errs
end

local function get(t, name) return task.get(name, { root = tasks_root(t) }) end

local SAMPLES = { "naive_fwd", "naive_bwd", "mma_fwd" }

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- ---- task definitions ------------------------------------------------------

function T.every_attention_task_loads(t)
  local list, errs = attn_tasks(t)
  for _, e in ipairs(errs) do t.ok(not e:find("attention"), "load error: " .. e) end
  t.eq(#list, 20, "4 files x 5 shapes")
  local names = {}
  for _, x in ipairs(list) do names[x.name] = x end
  for _, base in ipairs { "attn_fwd", "attn_fwd_causal", "attn_bwd", "attn_bwd_causal" } do
    for _, v in ipairs { "4x48x4096x128", "4x48x4096x64", "4x48x4096x96", "4x48x1024x128", "1x48x16384x128" } do
      t.ok(names[base .. "/" .. v], "missing task " .. base .. "/" .. v)
    end
  end
  local primary = names["attn_fwd/4x48x4096x128"]
  t.eq(primary.dims.B, 4)
  t.eq(primary.dims.H, 48)
  t.eq(primary.dims.S, 4096)
  t.eq(primary.dims.D, 128)
  t.ok(primary.description:find("S=4096", 1, true), "description expands the dimensions")
end

function T.causal_is_a_dimension_and_in_reference_and_baseline(t)
  for _, name in ipairs { "attn_fwd_causal/4x48x1024x128", "attn_bwd_causal/1x48x16384x128" } do
    local x = get(t, name)
    t.eq(x.dims.causal, 1, name .. " dims.causal")
    t.ok(x.reference.plan:find("dims.causal", 1, true), "the reference plan reads dims.causal")
    t.eq(x.baseline.causal, true)
    t.eq(x.baseline.lib, "cudnn")
  end
  for _, name in ipairs { "attn_fwd/4x48x1024x128", "attn_bwd/4x48x4096x64" } do
    local x = get(t, name)
    t.eq(x.dims.causal, nil, name .. " has no causal dimension")
    t.eq(x.baseline.causal, false)
  end
  local fwd, bwd = get(t, "attn_fwd/4x48x1024x128"), get(t, "attn_bwd/4x48x1024x128")
  t.eq(fwd.reference.source, "reference.cu")
  t.eq(fwd.units.O, 128)
  t.eq(fwd.units.LSE, 1)
  t.eq(bwd.units.dQ, 128)
  t.eq(bwd.reference.derived[1], "O")
  t.eq(fwd.baseline.op, "sdpa_fwd")
  t.eq(get(t, "attn_bwd_causal/4x48x1024x128").baseline.op, "sdpa_bwd")
end

function T.flop_counts_follow_the_convention(t)
  for _, x in ipairs((attn_tasks(t))) do
    local d = x.dims
    local fwd = 4 * d.B * d.H * d.S * d.S * d.D
    if d.causal == 1 then fwd = fwd // 2 end
    local want = x.name:find("^attn_bwd") and fwd * 5 // 2 or fwd
    t.eq(x.flops, want, x.name)
    t.eq(math.type(x.flops), "integer", x.name .. " flops is an integer")
  end
  -- The primary forward: 4*4*48*4096^2*128 = 1.649e12; causal half; backward 2.5x.
  t.eq(get(t, "attn_fwd/4x48x4096x128").flops, 1649267441664)
  t.eq(get(t, "attn_fwd_causal/4x48x4096x128").flops, 824633720832)
  t.eq(get(t, "attn_bwd/4x48x4096x128").flops, 4123168604160)
  t.eq(get(t, "attn_bwd_causal/4x48x4096x128").flops, 2061584302080)
end

function T.buffer_sizes_and_roles(t)
  local f = get(t, "attn_fwd/4x48x4096x128")
  local big = 4 * 48 * 4096 * 128
  for _, n in ipairs { "Q", "K", "V" } do
    t.eq(f.buffers[n].role, "input")
    t.eq(f.buffers[n].bytes, 2 * big, n)
  end
  t.eq(f.buffers.O.role, "output")
  t.eq(f.buffers.O.dtype, "bf16")
  t.eq(f.buffers.O.bytes, 2 * big)
  t.eq(f.buffers.LSE.dtype, "f32")
  t.eq(f.buffers.LSE.bytes, 4 * 4 * 48 * 4096)
  t.eq(#f.buffer_order, 5)
  t.eq(f.bytes, 4 * 2 * big + 4 * 4 * 48 * 4096, "default bytes: inputs and outputs")

  local b = get(t, "attn_bwd_causal/1x48x16384x128")
  local n = 48 * 16384 * 128
  for _, x in ipairs { "Q", "K", "V", "O", "dO" } do
    t.eq(b.buffers[x].role, "input", x)
    t.eq(b.buffers[x].bytes, 2 * n, x)
  end
  t.eq(b.buffers.LSE.role, "input")
  t.eq(b.buffers.LSE.bytes, 4 * 48 * 16384)
  for _, x in ipairs { "dQ", "dK", "dV" } do
    t.eq(b.buffers[x].role, "output", x)
    t.eq(b.buffers[x].dtype, "bf16", x)
  end
  t.eq(b.buffers.Dsum.role, "scratch")
  t.eq(b.buffers.Dsum.bytes, 4 * 48 * 16384)
  t.eq(b.buffers.dQacc.role, "scratch")
  t.eq(b.buffers.dQacc.bytes, 4 * n)
  -- tolerances: bf16 outputs and the fp32 LSE
  t.eq(f.tolerance.bf16.atol, 1e-2)
  t.eq(f.tolerance.f32.atol, 1e-3)
  t.eq(f.tolerance.f32.matched, 1.0)
  t.eq(b.tolerance.bf16.rtol, 2e-2)
end

function T.inputs_and_distributions(t)
  local b = get(t, "attn_bwd/4x48x1024x128")
  for _, x in ipairs { "Q", "K", "V", "O", "dO", "LSE" } do t.ok(b.inputs[x], "input law for " .. x) end
  t.eq(b.trials, 2)
  t.eq(#b.distributions, 2)
  t.eq(b.distributions[2].inputs.Q.dist, "spiky")
end

-- ---- plans -------------------------------------------------------------------

local function sample_dir(t, kind, name) return t.root .. "/tasks/attention/" .. kind .. "/" .. name end

function T.default_plans_validate(t)
  for _, x in ipairs((attn_tasks(t))) do
    local p, err = plan.run(x, nil, { arch = "sm_90a" })
    t.ok(p, x.name .. ": " .. tostring(err))
    if p then
      local bwd = x.name:find("^attn_bwd") ~= nil
      t.eq(#p.launches, bwd and 2 or 1, x.name .. " launches")
      local last = p.launches[#p.launches].args
      t.eq(last[#last].value, x.dims.causal or 0, x.name .. ": the causal flag")
    end
  end
end

local function plan_of(t, kind, name)
  return read(sample_dir(t, kind, name) .. "/plan.lua")
end

function T.sample_plans_validate_on_every_task(t)
  for _, x in ipairs((attn_tasks(t))) do
    local bwd = x.name:find("^attn_bwd") ~= nil
    for _, s in ipairs(SAMPLES) do
      if (s == "naive_bwd") == bwd then
        local p, err = plan.run(x, plan_of(t, "samples", s), { arch = "sm_90a" })
        t.ok(p, s .. " on " .. x.name .. ": " .. tostring(err))
        if p and s == "naive_bwd" then
          t.ok(#p.launches > 1, "the naive backward has more than one launch")
          t.eq(p.launches[1].args[3].name, "Dsum", "the preprocess writes the task's scratch")
        end
        if p and s == "mma_fwd" then
          t.eq(p.launches[1].kernel, "attention_fwd_d" .. x.dims.D)
          t.eq(p.launches[1].shared, 2 * (128 * (x.dims.D + 8) + x.dims.D * 72))
          t.eq(p.launches[1].raise_shared, x.dims.D == 128, "53 KB for D=128 needs the opt-in")
        end
      end
    end
  end
end

function T.bad_plans_validate(t)
  local expected = require("klab.task").returned(t.root .. "/tasks/attention/bad/expected.lua")
  t.eq(#expected, 4)
  for _, e in ipairs(expected) do
    local x = get(t, e.task .. "/4x48x1024x128")
    local p, err = plan.run(x, plan_of(t, "bad", e.name), { arch = "sm_90a" })
    t.ok(p, e.name .. ": " .. tostring(err))
    t.ok(require("klab.eval.verdict") and e.verdict ~= "passed", e.name .. " expects a failing verdict")
  end
end

function T.mma_plan_refuses_odd_shapes(t)
  local x = get(t, "attn_fwd/4x48x1024x128")
  -- A copy of the task with D = 80 (not an entry point) is refused with a reason.
  local fake = { dims = { B = 1, H = 1, S = 1024, D = 80 }, buffers = x.buffers, buffer_order = x.buffer_order }
  local p, err = plan.run(fake, plan_of(t, "samples", "mma_fwd"), { arch = "sm_90a" })
  t.eq(p, nil)
  t.match(tostring(err), "D = 64, 96 or 128")
end

-- ---- compiling ----------------------------------------------------------------

function T.samples_and_bad_kernels_compile_for_sm90a(t)
  local dirs = {}
  for _, s in ipairs(SAMPLES) do dirs[#dirs + 1] = sample_dir(t, "samples", s) end
  for _, e in ipairs(require("klab.task").returned(t.root .. "/tasks/attention/bad/expected.lua")) do
    dirs[#dirs + 1] = sample_dir(t, "bad", e.name)
  end
  for _, d in ipairs(dirs) do
    local c, cerr = candidate.load(d)
    t.ok(c, tostring(cerr))
    local res, err = jit.compile { source = c.code, lang = c.lang, arch = "sm_90a", name = d:match("[^/]+$") .. ".cu" }
    t.ok(res, d .. ": " .. tostring(err))
    if res and d:find("mma_fwd") then
      local census = res.census or {}
      local found = false
      for k, v in pairs(census) do
        if tostring(k):find("mma") and (tonumber(v) or 0) > 0 then found = true end
      end
      if next(census) then t.ok(found, "mma_fwd uses mma.sync (PTX census)") end
      for _, k in ipairs(res.kernels) do t.eq(k.spill_stores or 0, 0, k.name .. " spills") end
    end
  end
end

-- ---- cuDNN without a GPU -------------------------------------------------------

function T.cudnn_loads_and_reports_its_version(t)
  local dnn = require "klab.dnn"
  local v, code = dnn.version()
  if not v then t.skip("no cuDNN on this machine: " .. tostring(code)) end
  t.match(v, "^9%.%d+%.%d+$")
  t.ok(code >= 90000, "cudnnGetVersion " .. tostring(code))
  local path, how = dnn.library()
  t.ok(path and path:find("libcudnn", 1, true), tostring(path))
  t.ok(how == "env" or how == "CUDA_HOME" or how == "soname", tostring(how))
end

function T.cudnn_descriptors_finalize_without_a_gpu(t)
  local dnn = require "klab.dnn"
  local v, code = dnn.version()
  if not v then t.skip("no cuDNN: " .. tostring(code)) end
  local spec = { direction = "fwd", B = 4, H = 48, S = 4096, D = 128 }
  local g = assert(dnn.describe(spec, "composite"))
  t.eq(g.route, "composite")
  t.eq(g.nops, 10)
  t.eq(g.ops[1], "matmul Q.Kt")
  t.eq(g.ops[10], "matmul P.V")
  spec.causal = true
  g = assert(dnn.describe(spec, "composite"))
  t.eq(g.nops, 14, "the mask adds GEN_INDEX x2, CMP_GE, BINARY_SELECT")
  local r, err, ecode = dnn.describe(spec, "fused")
  t.eq(r, nil)
  t.eq(ecode, "EUNSUPPORTED")
  t.match(err, "causal")
  spec.direction = "bwd"
  g = assert(dnn.describe(spec, "composite"))
  t.eq(g.nops, 22)
  t.eq(g.ops[#g.ops], "pointwise IDENTITY(dQ)")
  spec.causal = false
  g = assert(dnn.describe(spec, "composite"))
  t.eq(g.nops, 18)
  if code >= 91700 then
    g = assert(dnn.describe(spec, "fused"))
    t.eq(g.ops[1], "sdpa_bwd")
  end
  if code >= 91301 then
    spec.direction = "fwd"
    g = assert(dnn.describe(spec, "fused"))
    t.eq(g.ops[1], "sdpa_fwd")
    t.eq(g.tensors, 6)
  end
  for _, D in ipairs { 64, 96 } do
    t.ok(dnn.describe({ direction = "bwd", B = 4, H = 48, S = 4096, D = D, causal = true }, "composite"), "D=" .. D)
  end
end

function T.cudnn_spec_misuse_raises(t)
  local dnn = require "klab.dnn"
  t.raises(function() dnn.describe({ B = 1, H = 1, S = 64, D = 64 }) end, "direction")
  t.raises(function() dnn.describe({ direction = "sideways", B = 1, H = 1, S = 64, D = 64 }) end, "fwd or bwd")
  t.raises(function() dnn.describe({ direction = "fwd", B = 1, H = 1, S = 64, D = 60 }) end, "multiple of 8")
  t.raises(function() dnn.describe({ direction = "fwd", B = 0, H = 1, S = 64, D = 64 }) end, "B >= 1")
  t.raises(function() dnn.describe({ direction = "fwd", B = 1, H = 1, S = 64, D = 64, route = "magic" }) end, "route")
end

function T.cudnn_plan_without_a_driver_fails_cleanly(t)
  if gpu.available() then t.skip("a GPU is present") end
  local dnn = require "klab.dnn"
  local ctx, cerr, ccode = gpu.context(0)
  t.eq(ctx, nil)
  t.eq(ccode, "ENODRIVER", tostring(cerr))
  local p, err, code = dnn.sdpa_plan(nil, { direction = "fwd", B = 1, H = 1, S = 64, D = 64 })
  t.eq(p, nil)
  t.eq(code, "ENODRIVER", tostring(err))
  t.raises(function() dnn.sdpa_plan(42, { direction = "fwd", B = 1, H = 1, S = 64, D = 64 }) end)
end

-- ---- with a GPU: cuDNN against the task's reference ---------------------------

function T.gpu_cudnn_matches_the_reference(t)
  t.need_gpu()
  local dnn = require "klab.dnn"
  if not dnn.version() then t.skip("no cuDNN") end
  local s <close> = require("klab.eval").session { deadline = 300 }
  for _, name in ipairs { "attn_fwd", "attn_fwd_causal", "attn_bwd", "attn_bwd_causal" } do
    local r = assert(s:check_baseline(name .. "/4x48x1024x128"))
    t.eq(r.verdict, "passed", name .. ": " .. tostring(r.reason))
  end
end

return T
