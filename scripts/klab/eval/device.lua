-- klab.eval.device: the device memory and launches of a worker's stages.
--
--   device.galloc(name, bytes)        -> {name=, buf=, off=, ptr=, bytes=} guarded by GUARD_BYTES each side
--   device.guard_check(g)             -> nil, or the guard_violation detail (klab.eval.verdict)
--   device.reguard(g), device.poison(list), device.free_all(list)
--   device.region(g)                  -> {buf, off} (for the bindings that take one)
--   device.encode_tmaps(spec, bind)   -> tensor maps of a plan | nil, why
--   device.launch_plan(funcs, plan, bind, tmaps) -> true | nil, reason, code, detail
--   device.task_module(path, plans)   -> {mod=, funcs=} (a module a task ships, kept by the worker)
--   device.plan_workspace(ts, key, plan) -> workspace a task plan asks for
--   device.fault(res, err, code, detail) -> res with the verdict of a failed CUDA call (the candidate's)
--   device.judge_failed(res, what, err, trace) -> res with unknown: klab's own step failed, never the candidate's
--
-- Buffers are poisoned with all bits set (NaN in every float type) before a
-- run, and guarded by GUARD_BYTES of a pattern before and after.

local judge_mod = require "klab.judge"
local verdicts = require "klab.eval.verdict"
local S = require("klab.eval.worker_state").S

local M = {}

M.POISON = 0xFFFFFFFF -- NaN in every float type, and an unlikely integer
M.GUARD_PATTERN = 0xA5C3E10F
M.GUARD_BYTES = 64 * 1024 -- multiple of 256: the user region stays aligned
local GUARD_PATTERN, GUARD_BYTES = M.GUARD_PATTERN, M.GUARD_BYTES

function M.galloc(name, bytes)
  local total = bytes + 2 * GUARD_BYTES
  local buf, err, code = S.ctx:alloc(total)
  if not buf then return nil, err, code end
  local g = { name = name, buf = buf, off = GUARD_BYTES, bytes = bytes, ptr = buf:ptr() + GUARD_BYTES }
  assert(S.judge:pattern(buf:ptr(), GUARD_BYTES, GUARD_PATTERN))
  assert(S.judge:pattern(g.ptr + bytes, GUARD_BYTES, GUARD_PATTERN))
  return g
end

function M.region(g) return { g.buf, g.off } end

-- nil when both guards are intact, else the detail of a guard_violation;
-- error() when the guards cannot be read.
function M.guard_check(g)
  local bad, first = S.judge:pattern_check(g.ptr - GUARD_BYTES, GUARD_BYTES, GUARD_PATTERN)
  if bad == nil then error("cannot check guards: " .. tostring(first), 0) end
  if bad > 0 then
    return { kind = "guard", side = "before", bytes = bad, buffer = g.name, at = GUARD_BYTES - first }
  end
  bad, first = S.judge:pattern_check(g.ptr + g.bytes, GUARD_BYTES, GUARD_PATTERN)
  if bad == nil then error("cannot check guards: " .. tostring(first), 0) end
  if bad > 0 then
    return { kind = "guard", side = "after", bytes = bad, buffer = g.name, buffer_bytes = g.bytes, at = g.bytes + first }
  end
  return nil
end

function M.reguard(g)
  S.judge:pattern(g.ptr - GUARD_BYTES, GUARD_BYTES, GUARD_PATTERN)
  S.judge:pattern(g.ptr + g.bytes, GUARD_BYTES, GUARD_PATTERN)
end

function M.poison(list)
  for _, g in pairs(list) do S.judge:pattern(g.ptr, g.bytes, M.POISON) end
end

function M.free_all(list)
  for _, g in pairs(list or {}) do
    if g.buf then g.buf:free() else g:free() end
  end
end

-- A failed CUDA call of the candidate's run: a launch the driver refused
-- before running (arguments that do not match the kernel's parameters) is
-- the plan's fault, anything else the kernel's. A sticky error leaves the
-- worker unfit for the next candidate.
function M.fault(res, err, code, detail)
  if detail and detail.sticky then res.unfit = true end
  if code == "EINVAL" then return verdicts.give(res, "plan_error", { message = tostring(err) }) end
  return verdicts.give(res, "runtime_error", { kind = "cuda", message = tostring(err) })
end

-- The failure of one of klab's own steps (its inputs, reference, checks,
-- copies, flush, baseline): never the candidate's fault. The verdict is
-- unknown, which is never answered from the store; the pipeline runs such
-- an evaluation once more alone (klab.eval.rerun_reason) before it stands.
-- The reason is one line; the traceback, when there is one, is kept in
-- res.judge_fault.trace, which no prompt shows. A context left poisoned
-- retires the worker.
function M.judge_failed(res, what, err, trace)
  local detail = { kind = "judge", what = what, message = verdicts.first_line(err) }
  res.judge_fault = { detail = detail, trace = trace }
  if S.ctx and S.ctx:sticky() then res.unfit = true end
  return verdicts.give(res, "unknown", detail)
end

-- Tensor maps of a plan over the bound buffers.
function M.encode_tmaps(spec, bind)
  local out = {}
  for name, t in pairs(spec or {}) do
    local ptr = bind(t.buffer)
    if not ptr then return nil, "tensor map " .. name .. " names unknown buffer " .. tostring(t.buffer) end
    local s, err = judge_mod.tensormap(ptr, {
      dtype = t.dtype, dims = t.dims, box = t.box, strides = t.strides, swizzle = t.swizzle or "none",
      l2 = (t.l2promotion and t.l2promotion ~= "none") and t.l2promotion or "none",
      oob = tostring(t.oob_fill or ""):find("nan") and "nan" or "zero" })
    if not s then return nil, "tensor map " .. name .. ": " .. tostring(err) end
    out[name] = s
  end
  return out
end

-- The launches of a plan (the candidate's, the reference's, a shipped
-- baseline's), one after the other on klab's stream. funcs: kernel name ->
-- Function; bind(name, kind) -> device address of a buffer ("buffer") or
-- workspace ("workspace"); tmaps from encode_tmaps. nil, reason, code,
-- detail when a launch is refused.
function M.launch_plan(funcs, plan, bind, tmaps)
  for _, l in ipairs(plan.launches) do
    local args = {}
    for i, a in ipairs(l.args) do
      if a.kind == "buffer" or a.kind == "workspace" then
        args[i] = { "u64", bind(a.name, a.kind) or 0 }
      elseif a.kind == "tensormap" then
        args[i] = { "bytes", tmaps[a.name] }
      else
        args[i] = { a.type, a.value }
      end
    end
    local ok, err, code, detail = S.ctx:launch(funcs[l.kernel], { grid = l.grid, block = l.block,
      cluster = l.cluster, shared = l.shared, args = args })
    if not ok then return nil, "launch of " .. l.kernel .. " failed: " .. tostring(err), code, detail end
  end
  return true
end

-- A module the task ships (reference, baseline kernel), loaded once per
-- worker and kept: {mod=, funcs = {name = Function}}.
function M.task_module(path, plans)
  -- A job's image files are klab's own and written once, so a path met
  -- again in the same job is the same module: its read and hash are
  -- skipped (a correctness run asks once per input set). The memo is the
  -- job's only (klab.eval.gpu empties it): a later job's temporary
  -- file may reuse a freed name.
  local m = S.module_paths[path]
  if not m then
    local f = io.open(path, "rb")
    if not f then return nil, "cannot read " .. tostring(path) end
    local cubin = f:read("a")
    f:close()
    local key = require("klab.store").hash("klab.module.1", cubin)
    m = S.modules[key]
    if not m then
      local mod, err = S.ctx:load(cubin)
      if not mod then return nil, "cannot load: " .. tostring(err) end
      m = { mod = mod, funcs = {} }
      S.modules[key] = m
    end
    S.module_paths[path] = m
  end
  for _, p in ipairs(plans) do
    for _, l in ipairs(p.launches) do
      if not m.funcs[l.kernel] then
        local fn, ferr = m.mod:func(l.kernel)
        if not fn then return nil, "no kernel " .. l.kernel .. ": " .. tostring(ferr) end
        m.funcs[l.kernel] = fn
      end
    end
  end
  return m
end

-- Workspace a task plan asks for, made once and kept with the task.
function M.plan_workspace(ts, key, plan)
  ts.ws = ts.ws or {}
  local ws = ts.ws[key]
  if ws then return ws end
  ws = {}
  for name, w in pairs(plan.workspace or {}) do
    local buf, err = S.ctx:alloc(math.max(w.bytes, 1))
    if not buf then return nil, err end
    ws[name] = buf
  end
  ts.ws[key] = ws
  return ws
end

return M
