-- klab.eval.baselines.cudnn: cuDNN baselines (klab.dnn), timed exactly like
-- candidates: scaled-dot-product attention (op = "sdpa_fwd" | "sdpa_bwd")
-- and any graph a task describes (op = "graph").
--
--   check(task) -> true | nil, message, field: a graph (op = "graph")
--       described without a GPU (klab.dnn.graph_describe), for `klab tasks --check`
--   prepare(W, task, io, opts) -> runner | nil, reason
--       runner = {run = function() enqueue one call; return -1 end,
--                 mode = "fused"|"composite", plan = <klab.dnn Plan>,
--                 info = {lib="cudnn", version=, version_code=, path=, how=,
--                         route=, engine=, workspace_bytes=, refused=}}
--       W is the worker's toolkit (klab.eval.gpu); io = {inputs = name ->
--       buffer, outputs = name -> the baseline's own output buffers};
--       runner.run(inputs) makes one call on those inputs, or on io.inputs. A case
--       cuDNN cannot run is nil, "cuDNN <version> (<path>) cannot run
--       <case>: <cuDNN's message>", never another library.
--       opts.cudnn_route = "auto"|"fused"|"composite" overrides the task's.
--
-- The task's baseline table: {lib = "cudnn", op = "sdpa_fwd"|"sdpa_bwd",
-- causal = bool, route = "auto"}.

local M = {}

M.title = "cuDNN"

function M.check(task)
  if task.baseline.op ~= "graph" then return true end
  local ok, d, err = pcall(require("klab.dnn").graph_describe, require("klab.task").plain(task.baseline.spec))
  if not ok then d, err = nil, d end
  if not d then return nil, "the cuDNN graph does not describe: " .. tostring(err), "baseline.spec" end
  return true
end

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

-- A cuDNN graph the task describes (baseline.op = "graph", spec = the
-- graph per variant, klab.dnn.graph_plan's description): its real tensors
-- are named after the task's buffers. modes: {"default"} or, for fp32
-- tasks, {"fp32", "tf32"}: strict FP32 engines timed with the candidate,
-- TF32 ones beside it.
local function graph(W, task, io, opts, dnn)
  local b = task.baseline
  if type(b.spec) ~= "table" then return nil, "cuDNN graph baseline: the task gives no graph (baseline.spec)" end
  local MATH = { default = "any", fp32 = "fp32", strict = "fp32", tf32 = "tf32" }
  local function addresses(inputs)
    local a = {}
    for name, t in pairs(b.spec.tensors or {}) do
      if not t.virtual and t.value == nil then
        local g = inputs[name] or io.outputs[name]
        if not g then error("cuDNN graph baseline: no buffer for tensor " .. name) end
        a[name] = g.ptr
      end
    end
    return a
  end
  local runner = { modes = {} }
  for _, mode in ipairs(b.modes or { "default" }) do
    local desc = {}
    for k, x in pairs(b.spec) do desc[k] = x end
    desc.math = MATH[mode] or "any"
    local plan, err = dnn.graph_plan(W.ctx, desc)
    if not plan then
      local why = string.format("%s cannot run %s's graph (%s): %s", lib_label(), task.name, mode, tostring(err))
      -- The first mode is the baseline; a mode timed beside it that this
      -- cuDNN has no engine for (a TF32 engine for a grouped transposed
      -- convolution) is said as such, and the baseline stands.
      if not runner.run then return nil, why end
      runner.modes[mode] = { error = why }
      goto next_mode
    end
    local info = plan:info()
    local path, how = dnn.library()
    local entry = { plan = plan, info = { lib = "cudnn", kind = "library", op = "graph", mode = mode,
      version = info.version, version_code = info.version_code, path = path, how = how, engine = info.engine,
      workspace_bytes = info.workspace_bytes and info.workspace_bytes[1], notes = info.notes and info.notes[1],
      refused = info.refused } }
    local fixed = addresses(io.inputs)
    local function run(inputs)
      local rok, rerr = plan:run(inputs and addresses(inputs) or fixed)
      if not rok then error("cuDNN: " .. tostring(rerr)) end
      return -1
    end
    if not runner.run then
      runner.run, runner.plan, runner.mode, runner.info = run, plan, mode, entry.info
    else
      -- Modes after the first are timed beside the candidate, by themselves.
      local r = require("klab.timing").measure(W.ctx, { run = run, budget_s = opts.baseline_budget_s or 0.3,
        min_samples = 10, max_samples = 200 })
      runner.modes[mode] = { median_us = r and r.candidate.median, engine = info.engine }
    end
    ::next_mode::
  end
  return runner
end

function M.prepare(W, task, io, opts)
  opts = opts or {}
  local ok, dnn = pcall(require, "klab.dnn")
  if not ok then return nil, "klab.dnn is not available: " .. tostring(dnn) end
  local v, code_or_err = dnn.version()
  if not v then return nil, "cuDNN cannot be loaded: " .. tostring(code_or_err) end
  if (task.baseline or {}).op == "graph" then return graph(W, task, io, opts, dnn) end
  local b = task.baseline or {}
  local d = task.dims
  local bwd = b.op == "sdpa_bwd"
  local causal = b.causal == true or d.causal == 1
  local route = opts.cudnn_route or b.route or "auto"
  local plan, err = dnn.sdpa_plan(W.ctx, {
    direction = bwd and "bwd" or "fwd", B = d.B, H = d.H, S = d.S, D = d.D, causal = causal,
    route = route })
  if not plan then
    return nil, string.format("%s cannot run %s (route %s): %s", lib_label(), case_name(task), route, tostring(err))
  end
  local o = io.outputs
  local function args_of(i)
    if bwd then
      return { Q = i.Q.ptr, K = i.K.ptr, V = i.V.ptr, O = i.O.ptr, LSE = i.LSE.ptr, dO = i.dO.ptr,
               dQ = o.dQ.ptr, dK = o.dK.ptr, dV = o.dV.ptr }
    end
    return { Q = i.Q.ptr, K = i.K.ptr, V = i.V.ptr, O = o.O.ptr, LSE = o.LSE.ptr }
  end
  local info = plan:info()
  local path, how = dnn.library()
  local runner = {
    plan = plan, mode = info.route,
    info = { lib = "cudnn", kind = "library", version = info.version, version_code = info.version_code, path = path, how = how,
             route = info.route, engine = info.engines[1], workspace_bytes = info.workspace_bytes[1],
             scratch_bytes = info.scratch_bytes, heuristic_count = info.heuristic_count, refused = info.refused },
  }
  runner.run = function(inputs)
    local rok, rerr = plan:run(args_of(inputs or io.inputs))
    if not rok then error("cuDNN: " .. tostring(rerr)) end
    return -1
  end
  return runner
end

return M
