-- klab.eval.baselines.shipped: a baseline kernel the task ships (its
-- baseline = {source = "baseline.cu", plan = [[...]]}), for operations no
-- library offers. Compiled and planned by the caller like the reference, run
-- here like a candidate, and recorded as a shipped baseline in every result.
-- baseline.prologue (a library baseline's table: a composed task's cuBLASLt
-- product or cuDNN convolution; or a list of them: an MLP's layers) runs
-- first, into the kernel's workspace; its info is recorded as
-- info.prologue (a list for a list).
--
--   check(task) -> true | nil, message, field: its prologue's check, without a GPU
--   prepare(W, task, io, opts) -> runner | nil, reason

local M = {}

M.title = "shipped kernel"

-- The calls of a prologue: one call or a list.
local function steps_of(p)
  return p and (p.lib and { p } or p) or {}
end

-- The task as a prologue step's library sees it: the task's buffers by
-- name, and the kernel's workspaces, which hold fp32 values between steps
-- (ws: name -> anything; without it, as offline, any other name is one).
local function step_view(task, p, ws)
  local by_name = {}
  for key, x in pairs(task.buffers or {}) do by_name[type(key) == "string" and key or x.name] = x end
  for name in pairs(ws or {}) do by_name[name] = by_name[name] or { name = name, dtype = "f32" } end
  if not ws then setmetatable(by_name, { __index = function(_, name) return { name = name, dtype = "f32" } end }) end
  return { name = task.name, dims = task.dims, buffers = task.buffers, buffer_by_name = by_name, baseline = p }
end

function M.check(task)
  local pro = task.baseline.prologue
  local steps = steps_of(pro)
  for i, p in ipairs(steps) do
    local field = pro.lib and "baseline.prologue" or ("baseline.prologue[%d]"):format(i)
    local lib, why = require("klab.eval.baselines").get(p.lib)
    if not lib then return nil, why, field end
    if lib.check then
      local ok, err = lib.check(step_view(task, p))
      if not ok then return nil, err, field end
    end
  end
  return true
end

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
  -- Library calls before the kernel (a composed task's cuBLASLt product or
  -- cuDNN convolution; an MLP's layers), in order: prologue is one call or a
  -- list. A call's c names a workspace buffer of the kernel's; its operands
  -- name the task's inputs or an earlier call's workspace.
  local steps = steps_of(b.prologue)
  local pres = {}
  for i, p in ipairs(steps) do
    local into = ws[p.c]
    if not into then return nil, "the task's baseline kernel has no workspace '" .. tostring(p.c) .. "' for its " ..
      tostring(p.lib) .. " step" end
    local lib, why = require("klab.eval.baselines").get(p.lib)
    if not lib then return nil, why end
    -- The step's operands on the given inputs: those, and the workspaces.
    local function operands(inputs)
      local v = {}
      for name, g in pairs(inputs) do v[name] = g end
      for name, buf in pairs(ws) do
        if name ~= p.c then v[name] = { buf = buf, off = 0, ptr = buf:ptr(), bytes = k.workspace[name].bytes, name = name } end
      end
      return v
    end
    local view = { buf = into, off = 0, ptr = into:ptr(), bytes = k.workspace[p.c].bytes, name = p.c }
    local pre, perr = lib.prepare(W, step_view(task, p, ws), { inputs = operands(io.inputs), outputs = { [p.c] = view } },
      opts)
    if not pre then return nil, #steps > 1 and ("step %d: %s"):format(i, tostring(perr)) or perr end
    pres[i] = { runner = pre, operands = operands }
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
    for _, pre in ipairs(pres) do pre.runner.run(inputs and pre.operands(inputs)) end
    local ok, lerr = W.launch_plan(m.funcs, k, b, tm)
    if not ok then error(lerr) end
    return #pres > 0 and -1 or #k.launches
  end
  local infos = {}
  for i, pre in ipairs(pres) do infos[i] = pre.runner.info end
  runner.info = { lib = "shipped", kind = "shipped baseline kernel", source = b.source, name = b.name,
    prologue = #infos > 1 and infos or infos[1] }
  return runner
end

return M
