-- klab.eval.baselines.shipped: a baseline kernel the task ships (its
-- baseline = {source = "baseline.cu", plan = [[...]]}), for operations no
-- library offers. Compiled and planned by the caller like the reference, run
-- here like a candidate, and recorded as a shipped baseline in every result.
-- baseline.prologue (a library baseline's table: a composed task's cuBLASLt
-- product) runs first, into the kernel's workspace; its info is recorded
-- as info.prologue.
--
--   check(task) -> true | nil, message, field: its prologue's check, without a GPU
--   prepare(W, task, io, opts) -> runner | nil, reason

local M = {}

M.title = "shipped kernel"

-- The task as its prologue's library sees it.
local function prologue_view(task, p) return { name = task.name, dims = task.dims, buffers = task.buffers, baseline = p } end

function M.check(task)
  local p = task.baseline.prologue
  if not p then return true end
  local lib, why = require("klab.eval.baselines").get(p.lib)
  if not lib then return nil, why, "baseline.prologue" end
  if not lib.check then return true end
  local ok, err = lib.check(prologue_view(task, p))
  if not ok then return nil, err, "baseline.prologue" end
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
  -- A library call before the kernel (a composed task's cuBLASLt product,
  -- written into the kernel's workspace buffer named by prologue.c).
  local pre
  if b.prologue then
    local p = b.prologue
    local into = ws[p.c]
    if not into then return nil, "the task's baseline kernel has no workspace '" .. tostring(p.c) .. "' for its " ..
      tostring(p.lib) .. " step" end
    local lib, why = require("klab.eval.baselines").get(p.lib)
    if not lib then return nil, why end
    local view = { buf = into, off = 0, ptr = into:ptr(), bytes = k.workspace[p.c].bytes, name = p.c }
    local perr
    pre, perr = lib.prepare(W, prologue_view(task, p), { inputs = io.inputs, outputs = { [p.c] = view } }, opts)
    if not pre then return nil, perr end
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
    if pre then pre.run(inputs) end
    local ok, lerr = W.launch_plan(m.funcs, k, b, tm)
    if not ok then error(lerr) end
    return pre and -1 or #k.launches
  end
  runner.info = { lib = "shipped", kind = "shipped baseline kernel", source = b.source, name = b.name,
    prologue = pre and pre.info or nil }
  return runner
end

return M
