-- klab.eval.baselines.cudnn: the cuDNN attention baseline (klab.dnn), timed
-- exactly like candidates.
--
--   prepare(S, task, ts, opts) -> runner | nil, reason
--       runner = {run = function() enqueue one call; return -1 end,
--                 mode = "fused"|"composite", plan = <klab.dnn Plan>,
--                 info = {lib="cudnn", version=, version_code=, path=, how=,
--                         route=, engine=, workspace_bytes=, refused=}}
--       The call reads the first input set and writes the task's outputs.
--       A case cuDNN cannot run is nil, "cuDNN <version> (<path>) cannot
--       run <case>: <cuDNN's message>", never another library.
--       opts.cudnn_route = "auto"|"fused"|"composite" overrides the task's.
--   spec(t)        -> the plain task spec a worker sees, from a klab.task
--                     descriptor of the attention family (as klab.eval
--                     builds it), for the jobs below.
--   check(args)    -> worker job: {task = spec(t), compare = true, budget_s = 0,
--                     route = nil, seed = 1}
--       Fills one input set, derives and computes the reference, runs the
--       baseline once and compares every output with the task tolerance;
--       with budget_s > 0 also times it (klab.timing, CUPTI when possible).
--       Returns {ok=, refused=msg | nil, error=msg | nil, info=, outputs =
--       {name = {matched=, failed=, max_abs=, nan=, passed=}}, median_us=,
--       tflops=, method=}.
--   run_case(S, spec, opts) -> the same, in this process (the bench);
--       opts = {compare=true, budget_s=0, route=, seed=1, method="auto",
--               methods={"auto", "events"} (each timed; res.timings[method])}
--
-- The task's baseline table: {lib = "cudnn", op = "sdpa_fwd"|"sdpa_bwd",
-- causal = bool, route = "auto"}.

local M = {}

local function case_name(task)
  local d = task.dims
  local b = task.baseline or {}
  return string.format("%s%s B=%d H=%d S=%d D=%d", b.op or "sdpa", b.causal and " causal" or "", d.B, d.H, d.S, d.D)
end

local function lib_label()
  local dnn = require "klab.dnn"
  local v = dnn.version()
  local path = dnn.library()
  return string.format("cuDNN %s (%s)", tostring(v or "?"), tostring(path or "not loaded"))
end

function M.prepare(S, task, ts, opts)
  opts = opts or {}
  local ok, dnn = pcall(require, "klab.dnn")
  if not ok then return nil, "klab.dnn is not available: " .. tostring(dnn) end
  local v, code_or_err = dnn.version()
  if not v then return nil, "cuDNN cannot be loaded: " .. tostring(code_or_err) end
  local b = task.baseline or {}
  local d = task.dims
  local bwd = b.op == "sdpa_bwd"
  local causal = b.causal == true or d.causal == 1
  local route = opts.cudnn_route or b.route or "auto"
  local plan, err = dnn.sdpa_plan(S.ctx, {
    direction = bwd and "bwd" or "fwd", B = d.B, H = d.H, S = d.S, D = d.D, causal = causal,
    scale = (task.reference and task.reference.scale) or nil, route = route })
  if not plan then
    return nil, string.format("%s cannot run %s (route %s): %s", lib_label(), case_name(task), route, tostring(err))
  end
  local set = ts.inputs[1]
  local outs = ts.outs
  local i, o = set.bufs, outs
  local args
  if bwd then
    args = { Q = i.Q.ptr, K = i.K.ptr, V = i.V.ptr, O = i.O.ptr, LSE = i.LSE.ptr, dO = i.dO.ptr,
             dQ = o.dQ.ptr, dK = o.dK.ptr, dV = o.dV.ptr }
  else
    args = { Q = i.Q.ptr, K = i.K.ptr, V = i.V.ptr, O = o.O.ptr, LSE = o.LSE.ptr }
  end
  local info = plan:info()
  local path, how = dnn.library()
  local runner = {
    plan = plan, mode = info.route,
    info = { lib = "cudnn", version = info.version, version_code = info.version_code, path = path, how = how,
             route = info.route, engine = info.engines[1], workspace_bytes = info.workspace_bytes[1],
             scratch_bytes = info.scratch_bytes, heuristic_count = info.heuristic_count, refused = info.refused },
  }
  runner.run = function()
    local rok, rerr = plan:run(args)
    if not rok then error("cuDNN: " .. tostring(rerr)) end
    return -1
  end
  return runner
end

-- ---- the plain spec of a task (what klab.eval sends a worker) ----------

local function law(init)
  if not init then return nil end
  local dd = init.dist
  if dd == "normal" then return { dist = dd, a = init.mean or 0, b = init.std or 1 } end
  if dd == "uniform" or dd == "int" then return { dist = dd, a = init.lo, b = init.hi } end
  if dd == "spiky" then return { dist = dd, a = init.p or 0.001, b = init.spike_std or 10 } end
  if dd == "const" then return { dist = dd, a = init.value or 0 } end
  return { dist = dd }
end

function M.spec(t)
  local plain = require("klab.task").plain
  local spec = { name = t.name, family = t.family, dims = {}, buffers = {}, tolerance = {}, flops = t.flops }
  for k, x in pairs(t.dims) do spec.dims[k] = x end
  for _, name in ipairs(t.buffer_order) do
    local b = t.buffers[name]
    spec.buffers[#spec.buffers + 1] = { name = name, role = b.role, dtype = b.dtype, count = b.numel,
      bytes = b.bytes, init = law(t.inputs[name]) }
    if b.role == "output" then
      local tol = t.tolerance[b.dtype]
      spec.tolerance[name] = { atol = tol.atol, rtol = tol.rtol, matched = tol.matched }
    end
  end
  spec.reference = plain(t.reference)
  spec.reference.op = spec.reference.op or t.family
  spec.baseline = t.baseline and plain(t.baseline)
  return spec
end

-- ---- one baseline run against the reference -----------------------------

local function integers(x)
  if type(x) == "number" then return math.tointeger(x) or x end
  if type(x) ~= "table" then return x end
  for k, y in pairs(x) do x[k] = integers(y) end
  return x
end

-- Runs spec's baseline once on fresh inputs (seed opts.seed), compares it
-- with the reference, and optionally times it. S = {ctx, judge, props}.
function M.run_case(S, spec, opts)
  opts = opts or {}
  local res = { task = spec.name, outputs = {} }
  local made = {}
  local function alloc(bytes)
    local buf, err = S.ctx:alloc(bytes)
    if buf then made[#made + 1] = buf end
    return buf, err
  end
  local function finish()
    S.ctx:sync()
    for _, x in ipairs(made) do x:free() end
    return res
  end
  local by = {}
  local set, outs = { bufs = {} }, {}
  for idx, b in ipairs(spec.buffers) do
    by[b.name] = b
    local buf, err = alloc(b.bytes)
    if not buf then
      res.error = "cannot allocate " .. b.name .. ": " .. tostring(err)
      return finish()
    end
    local g = { name = b.name, buf = buf, bytes = b.bytes, ptr = buf:ptr() }
    if b.role == "input" then
      local init = b.init or {}
      local ok, ferr = S.judge:fill(g.ptr, b.count, b.dtype, init.dist or "normal", (opts.seed or 1) * 1000003 + idx,
        init.a, init.b, 1.0)
      if not ok then
        res.error = "fill " .. b.name .. ": " .. tostring(ferr)
        return finish()
      end
      set.bufs[b.name] = g
    else
      outs[b.name] = g
    end
  end
  local refmod = require("klab.eval.refs." .. spec.reference.op)
  local refs
  if opts.compare ~= false then
    if refmod.derive then
      local ok, derr = refmod.derive(S, spec, set)
      if not ok then
        res.error = "derive: " .. tostring(derr)
        return finish()
      end
    end
    local rerr
    refs, rerr = refmod.compute(S, spec, set)
    if not refs then
      res.error = "reference: " .. tostring(rerr)
      return finish()
    end
    for _, r in pairs(refs) do made[#made + 1] = r end
  elseif refmod.derive then
    refmod.derive(S, spec, set)
  end
  local runner, why = M.prepare(S, spec, { inputs = { set }, outs = outs }, { cudnn_route = opts.route })
  if not runner then
    res.refused = why
    return finish()
  end
  made[#made + 1] = runner.plan
  res.info = runner.info
  for _, g in pairs(outs) do S.judge:pattern(g.ptr, g.bytes, 0xFFFFFFFF) end
  local ok, rerr = pcall(runner.run)
  if ok then
    local sok, serr = S.ctx:sync()
    if not sok then ok, rerr = false, serr end
  end
  if not ok then
    res.error = tostring(rerr)
    return finish()
  end
  res.ok = true
  if refs then
    for name, ref in pairs(refs) do
      local b = by[name]
      local tol = spec.tolerance[name]
      local cmp, cerr = S.judge:compare(outs[name].ptr, b.dtype, ref, b.count, tol.atol, tol.rtol)
      if not cmp then
        res.error = "compare " .. name .. ": " .. tostring(cerr)
        res.ok = false
        return finish()
      end
      local matched = (cmp.total - cmp.failed) / cmp.total
      res.outputs[name] = { matched = matched, failed = cmp.failed, nan = cmp.nan, max_abs = cmp.max_abs,
        max_abs_at = cmp.max_abs_at, passed = matched >= (tol.matched or 1.0) }
      if not res.outputs[name].passed then res.ok = false end
    end
  end
  if (opts.budget_s or 0) > 0 then
    -- One measurement per method asked for ("auto": CUPTI when possible;
    -- "events": an event pair around each call, as PyTorch is timed); the
    -- first is also res.median_us / res.tflops.
    local timing = require "klab.timing"
    res.timings = {}
    for _, method in ipairs(opts.methods or { opts.method or "auto" }) do
      local okm, tr, terr = pcall(timing.measure, S.ctx, { run = runner.run, flops = spec.flops,
        budget_s = opts.budget_s, min_samples = opts.min_samples or 10, max_samples = opts.max_samples or 200,
        method = method })
      if not okm then tr, terr = nil, tr end
      if tr then
        res.timings[method] = { median_us = tr.candidate.median, tflops = tr.candidate.tflops, method = tr.method,
          samples = tr.candidate.n, p10_us = tr.candidate.p10, p90_us = tr.candidate.p90 }
        if not res.median_us then
          res.median_us, res.tflops, res.method = tr.candidate.median, tr.candidate.tflops, tr.method
          res.samples = tr.candidate.n
        end
      else
        res.timings[method] = { error = tostring(terr) }
        res.timing_error = res.timing_error or tostring(terr)
      end
    end
  end
  return finish()
end

-- Worker-side state for check(): a context and the judge, made once.
local W = nil

local function worker_state()
  if W then return W end
  local gpu = require "klab.gpu"
  local jit = require "klab.jit"
  local judge = require "klab.judge"
  local ok, why = gpu.available()
  if not ok then return nil, why end
  local props, perr = gpu.device(0)
  if not props then return nil, perr end
  local ctx, cerr = gpu.context(0)
  if not ctx then return nil, cerr end
  local res, jerr = jit.compile { source = judge.source(), lang = "cuda", arch = props.arch, name = "judge.cu" }
  if not res then return nil, "cannot compile the judge kernels: " .. tostring(jerr) end
  local j, oerr = judge.open(ctx, res.cubin)
  if not j then return nil, oerr end
  W = { ctx = ctx, judge = j, props = props }
  return W
end

function M.check(args)
  args = integers(args)
  local S, err = worker_state()
  if not S then return { error = "no GPU: " .. tostring(err) } end
  local res = M.run_case(S, args.task, { compare = args.compare, budget_s = args.budget_s, route = args.route,
    seed = args.seed, method = args.method, methods = args.methods })
  -- JSON carries no NaN or infinities.
  for _, o in pairs(res.outputs or {}) do
    if o.max_abs ~= o.max_abs or o.max_abs == math.huge then o.max_abs = tostring(o.max_abs) end
  end
  return res
end

return M
