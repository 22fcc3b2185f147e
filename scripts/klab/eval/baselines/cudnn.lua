-- klab.eval.baselines.cudnn: the cuDNN attention baseline (klab.dnn), timed
-- exactly like candidates.
--
--   prepare(W, task, io, opts) -> runner | nil, reason
--       runner = {run = function() enqueue one call; return -1 end,
--                 mode = "fused"|"composite", plan = <klab.dnn Plan>,
--                 info = {lib="cudnn", version=, version_code=, path=, how=,
--                         route=, engine=, workspace_bytes=, refused=}}
--       W is the worker's toolkit (klab.eval.gpu); io = {inputs = name ->
--       buffer, outputs = name -> the baseline's own output buffers}. A case
--       cuDNN cannot run is nil, "cuDNN <version> (<path>) cannot run
--       <case>: <cuDNN's message>", never another library.
--       opts.cudnn_route = "auto"|"fused"|"composite" overrides the task's.
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

function M.prepare(W, task, io, opts)
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
  local plan, err = dnn.sdpa_plan(W.ctx, {
    direction = bwd and "bwd" or "fwd", B = d.B, H = d.H, S = d.S, D = d.D, causal = causal,
    route = route })
  if not plan then
    return nil, string.format("%s cannot run %s (route %s): %s", lib_label(), case_name(task), route, tostring(err))
  end
  local i, o = io.inputs, io.outputs
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
    info = { lib = "cudnn", kind = "library", version = info.version, version_code = info.version_code, path = path, how = how,
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

return M
