-- klab.eval.baselines.shipped: a baseline kernel the task ships (its
-- baseline = {source = "baseline.cu", plan = [[...]]}), for operations no
-- library offers. Compiled and planned by the caller like the reference, run
-- here like a candidate, and recorded as a shipped baseline in every result.
--
--   prepare(W, task, io, opts) -> runner | nil, reason

local M = {}

function M.prepare(W, task, io, opts)
  local b = task.baseline
  local k = b.kernel
  if not k then return nil, "the task's baseline kernel was not prepared" end
  local m, err = W.task_module(k.cubin_path, { k })
  if not m then return nil, "the task's baseline kernel " .. tostring(err) end
  local ws = {}
  for name, w in pairs(k.workspace or {}) do
    local buf, aerr = W.ctx:alloc(math.max(w.bytes, 1))
    if not buf then return nil, aerr end
    ws[name] = buf
  end
  local function binder(inputs)
    return function(name, kind)
      if kind == "workspace" then return ws[name] and ws[name]:ptr() end
      local g = inputs[name] or io.outputs[name]
      return g and g.ptr
    end
  end
  local bind = binder(io.inputs)
  local tmaps, terr = W.encode_tmaps(k.tensormaps, bind)
  if not tmaps then return nil, terr end
  local runner = { workspace = ws }
  -- One run on the inputs given (each timed sample has its own), or on the
  -- ones it was prepared with.
  runner.run = function(inputs)
    local b, tm = bind, tmaps
    if inputs then
      b = binder(inputs)
      tm = assert(W.encode_tmaps(k.tensormaps, b))
    end
    local ok, lerr = W.launch_plan(m.funcs, k, b, tm)
    if not ok then error(lerr) end
    return #k.launches
  end
  runner.info = { lib = "shipped", kind = "shipped baseline kernel", source = b.source, name = b.name }
  return runner
end

return M
