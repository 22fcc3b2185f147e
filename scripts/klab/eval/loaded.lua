-- klab.eval.loaded: the candidate a worker loaded, and a run of it: its
-- module, functions, plan, workspace, and the load-time contents of its
-- module globals, restored before every run.
--
--   loaded.snapshot_globals(c, globals) -> true | nil, load_error detail
--   loaded.run(run, set)                -> true | nil, reason, code, detail: the planned launches on set
--   loaded.written(run)                 -> every buffer the candidate writes
--   loaded.fresh(run, all)              globals restored, outputs, scratch and workspace poisoned
--   loaded.unload(c)                    frees what the candidate holds

local device = require "klab.eval.device"
local S = require("klab.eval.worker_state").S

local M = {}

-- Module globals (the cubin's __device__ variables, klab.jit.globals) keep
-- their contents from launch to launch, so a kernel could bank results there
-- and replay them. Right after loading, every writable global is located
-- (cuModuleGetGlobal) and copied; before every run (correctness,
-- instructions, timing, replay) they are restored to those load-time
-- contents, outside any timed span. Neighbouring variables are copied as one
-- range. A global the driver does not expose cannot be restored: the module
-- is refused rather than judged with state that could carry over.
function M.snapshot_globals(c, globals)
  c.globals = {}
  local spans = {}
  for _, g in ipairs(globals or {}) do
    if g.bytes > 0 then
      local p, bytes = c.mod:global(g.name)
      if not p then return nil, { kind = "global", name = g.name, bytes = g.bytes } end
      spans[#spans + 1] = { lo = p, hi = p + bytes }
    end
  end
  table.sort(spans, function(x, y) return x.lo < y.lo end)
  local merged = {}
  for _, s in ipairs(spans) do
    local last = merged[#merged]
    if last and s.lo <= last.hi + 256 then
      if s.hi > last.hi then last.hi = s.hi end
    else
      merged[#merged + 1] = { lo = s.lo, hi = s.hi }
    end
  end
  for _, m in ipairs(merged) do
    local bytes = m.hi - m.lo
    local snap, err = S.ctx:alloc(bytes)
    if not snap then error("cannot keep the module globals: " .. tostring(err), 0) end
    S.judge:convert(m.lo, "u8", snap, "u8", bytes)
    c.globals[#c.globals + 1] = { base = m.lo, bytes = bytes, snap = snap }
  end
  return true
end

local function restore_globals(c)
  for _, g in ipairs(c.globals or {}) do S.judge:convert(g.snap, "u8", g.base, "u8", g.bytes) end
end

-- The candidate's launches against input set `set`.
function M.run(run, set)
  local c = run.c
  local function bind(name, kind)
    if kind == "workspace" then return run.ws[name] and run.ws[name].ptr end
    local g = set.bufs[name] or run.outs[name] or run.ws[name]
    return g and g.ptr
  end
  local tmaps, terr = device.encode_tmaps(c.tensormaps, bind)
  if not tmaps then return nil, terr end
  return device.launch_plan(c.funcs, c, bind, tmaps)
end

function M.written(run)
  local all = {}
  for _, g in pairs(run.outs) do all[#all + 1] = g end
  for _, g in pairs(run.ws) do all[#all + 1] = g end
  return all
end

function M.fresh(run, all)
  restore_globals(run.c)
  device.poison(all)
end

function M.unload(c)
  device.free_all(c.ws)
  for _, g in ipairs(c.globals or {}) do g.snap:free() end
  c.mod:free()
end

return M
