-- klab.eval.inputs: a worker's state per task: the input sets of an
-- evaluation (drawn from its seed), their references, the candidate's and
-- the baseline's outputs, and the comparison of an output with its
-- reference.
--
--   inputs.task_state(job)               -> ts (made or found; the worker keeps its two most recent tasks)
--   inputs.revalidate(ts)                drops sets and references a kernel may have touched; rewrites guards
--   inputs.input_set(task, ts, trial [, keep]) -> set {bufs=, sums=, refs=, trial=}, nil, made | nil, why, code
--                                           (made: {reference = seconds} when the set was made by this call)
--                                        (short of device memory: other tasks and sets not in keep are freed first)
--   inputs.drop_set(ts, set), inputs.first_set(run) -> set | nil, why
--   inputs.run_reference(ts, which, set, outs [, positions]) -> true | nil, why
--   inputs.outputs(task, ts, which)      -> the candidate's ("candidate") or the baseline's outputs
--   inputs.workspace(c)                  -> the candidate's workspace (sizes from its plan)
--   inputs.fill(g, b, trial)             draws input b of a trial into g
--   inputs.compare_outputs(task, set, outs, rec, where) -> true | false, incorrect detail | nil, why
--   inputs.locate(task, outname, idx)    -> "row r, col c, tile (i,j) of 128x128", row, col
--   inputs.check_buffers(task, ts, n)    -> the buffers of a sampled check of n units (made once per task)
--   inputs.compare_sampled(run, set, cb, draw, rec, where) -> as compare_outputs, on cb.n units drawn
--                                           after the run, their reference computed from set's inputs alone

local json = require "klab.json"
local judge_mod = require "klab.judge"
local seed_mod = require "klab.eval.seed"
local device = require "klab.eval.device"
local sys = require "klab.sys"
local S = require("klab.eval.worker_state").S

local galloc, free_all, guard_check, reguard = device.galloc, device.free_all, device.guard_check, device.reguard

local M = {}

function M.fill(g, b, trial)
  local init = (trial.inputs and trial.inputs[b.name]) or b.init or {}
  local dist = init.dist or "normal"
  -- Per-tensor constants (fp8 scales) keep their value in every trial.
  local scale = (dist == "const" or dist == "int") and 1.0 or (trial.scale or 1.0)
  local seed = seed_mod.derive(assert(seed_mod.parse(trial.seed)), "input", b.index)
  return S.judge:fill(g.ptr, b.count, b.dtype, dist, seed, init.a, init.b, scale)
end

-- ---- the task's reference -----------------------------------------------------

-- Runs one of the reference's plans: inputs from set (its bufs: name ->
-- buffer view with .ptr), outputs into outs (name -> fp32 Buffer),
-- positions (a Buffer) in a sampled run.
function M.run_reference(ts, which, set, outs, positions)
  local ref = ts.job_ref
  local plan = ref[which]
  local m, err = device.task_module(ref.cubin_path, { plan })
  if not m then return nil, "the task's reference " .. err end
  local ws, werr = device.plan_workspace(ts, "ref_" .. which, plan)
  if not ws then return nil, werr end
  local function bind(name, kind)
    if kind == "workspace" then return ws[name] and ws[name]:ptr() end
    if name == "positions" then return positions and positions:ptr() or 0 end
    local o = outs and outs[name]
    if o then return o:ptr() end
    local g = set.bufs[name]
    return g and g.ptr
  end
  local tmaps, terr = device.encode_tmaps(plan.tensormaps, bind)
  if not tmaps then return nil, terr end
  local ok, lerr = device.launch_plan(m.funcs, plan, bind, tmaps)
  if not ok then return nil, "the task's reference: " .. tostring(lerr) end
  return true
end

-- The full reference of an input set: {output name = fp32 Buffer}.
local function reference_full(task, ts, set)
  local refs = {}
  for _, b in ipairs(task.buffers) do
    if b.role == "output" then
      local buf, err, code = S.ctx:alloc(4 * b.count)
      if not buf then
        free_all(refs)
        return nil, err, code
      end
      refs[b.name] = buf
    end
  end
  local ok, err = M.run_reference(ts, "full", set, refs)
  if ok then ok, err = S.ctx:sync() end
  if not ok then
    free_all(refs)
    return nil, err
  end
  return refs
end

-- ---- task state -------------------------------------------------------------

-- A worker keeps the state of its most recent tasks only: one task's
-- input sets, references, timing slots and baseline can take gigabytes,
-- and a worker that meets a hundred tasks (a task library's check, a sweep
-- over families) would otherwise run out of device memory. The pool sends
-- a task's jobs to the worker that holds its state.
local KEEP_TASKS = 2

local function release_task(ts)
  for _, set in pairs(ts.inputs) do
    free_all(set.bufs)
    free_all(set.refs)
  end
  free_all(ts.outs)
  free_all(ts.base_outs)
  for _, ws in pairs(ts.ws or {}) do free_all(ws) end
  for _, list in pairs(ts.slots or {}) do free_all(list) end
  local cb = ts.checkbufs
  if cb then
    if cb.positions then cb.positions:free() end
    free_all(cb.ref)
    free_all(cb.got)
  end
  ts.inputs, ts.outs, ts.base_outs, ts.ws, ts.slots, ts.checkbufs, ts.baseline = {}, nil, nil, nil, nil, nil, nil
end

function M.drop_set(ts, set)
  free_all(set.bufs)
  free_all(set.refs)
  ts.inputs[set.key] = nil
end

function M.task_state(job)
  local task = job.task
  S.task_clock = (S.task_clock or 0) + 1
  local ts = S.tasks[task.name]
  if not ts then
    ts = { inputs = {}, baseline = nil }
    S.tasks[task.name] = ts
    local names = {}
    for name in pairs(S.tasks) do names[#names + 1] = name end
    if #names > KEEP_TASKS then
      table.sort(names, function(a, b) return (S.tasks[a].used or 0) < (S.tasks[b].used or 0) end)
      for i = 1, #names - KEEP_TASKS do
        if names[i] ~= task.name then
          release_task(S.tasks[names[i]])
          S.tasks[names[i]] = nil
        end
      end
      -- Plans and library handles of the released tasks go with them.
      collectgarbage("collect")
    end
  end
  ts.used = S.task_clock
  -- Input sets belong to one evaluation (its seed made them): an earlier
  -- evaluation's are freed, not kept for a kernel to meet again.
  if ts.seed ~= job.seed then
    for _, set in pairs(ts.inputs) do M.drop_set(ts, set) end
    ts.seed = job.seed
  end
  task.buffer_by_name = {}
  for _, b in ipairs(task.buffers) do task.buffer_by_name[b.name] = b end
  ts.job_ref = job.reference
  return ts
end

-- What is kept only to save time goes when device memory runs short: the
-- states of other tasks, and this task's input sets but those in keep (a
-- seed makes a set again, so a later stage that needs it remakes it).
local function make_room(ts, keep)
  for name, other in pairs(S.tasks) do
    if other ~= ts then
      release_task(other)
      S.tasks[name] = nil
    end
  end
  for _, set in pairs(ts.inputs) do
    if not (keep and keep[set]) then M.drop_set(ts, set) end
  end
  collectgarbage("collect")
end

local make_set

-- Input set for trial: guarded inputs filled for the trial, derived inputs,
-- checksums, and the full reference. Kept per trial (its seed and laws),
-- as long as device memory allows: a set that does not fit beside the
-- kept ones is made again after make_room (keep: sets the caller holds).
function M.input_set(task, ts, trial, keep)
  local key = json.encode { trial.seed, trial.scale or 1, trial.inputs or false }
  local set = ts.inputs[key]
  if set then return set end
  local made, err, code = make_set(task, ts, trial, key)
  if not made and code == "ENOMEM" then
    make_room(ts, keep)
    made, err, code = make_set(task, ts, trial, key)
  end
  return made, err, code
end

function make_set(task, ts, trial, key)
  local set = { bufs = {}, sums = {}, trial = trial, key = key }
  for _, b in ipairs(task.buffers) do
    if b.role == "input" then
      local g, err, code = galloc(b.name, b.bytes)
      if not g then
        free_all(set.bufs)
        return nil, err, code
      end
      set.bufs[b.name] = g
      local ok, ferr = M.fill(g, b, trial)
      if not ok then
        free_all(set.bufs)
        return nil, ferr
      end
    end
  end
  if ts.job_ref.derive then
    local ok, derr = M.run_reference(ts, "derive", set)
    if ok then ok, derr = S.ctx:sync() end
    if not ok then
      free_all(set.bufs)
      return nil, derr
    end
  end
  for name, g in pairs(set.bufs) do set.sums[name] = S.judge:checksum(g.ptr, g.bytes) end
  -- A sampled trial's reference is computed after the run, for the units
  -- its check draws (compare_sampled).
  if trial.sampled then
    set.refs, set.ref_sums = {}, {}
    ts.inputs[key] = set
    return set, nil, { reference = 0 }
  end
  local t0 = sys.now()
  local refs, rerr, rcode = reference_full(task, ts, set)
  if not refs then
    free_all(set.bufs)
    return nil, rerr, rcode
  end
  local made = { reference = sys.now() - t0 }
  set.refs = refs
  set.ref_sums = {}
  for name, ref in pairs(refs) do set.ref_sums[name] = S.judge:checksum(ref, ref:size()) end
  ts.inputs[key] = set
  return set, nil, made
end

-- The cached state of a task is only as good as the last candidate left
-- it: a kernel that wrote far outside its buffers may have hit another
-- task's inputs, references or guards. Before each evaluation, input sets
-- and references whose checksums changed are dropped (made again on use),
-- and every guard is written afresh.
function M.revalidate(ts)
  for _, set in pairs(ts.inputs) do
    local intact = true
    for name, g in pairs(set.bufs) do
      if guard_check(g) or S.judge:checksum(g.ptr, g.bytes) ~= set.sums[name] then intact = false end
    end
    for name, ref in pairs(set.refs or {}) do
      if S.judge:checksum(ref, ref:size()) ~= set.ref_sums[name] then intact = false end
    end
    if not intact then
      M.drop_set(ts, set)
      ts.revalidated = (ts.revalidated or 0) + 1
    end
  end
  for _, g in pairs(ts.outs or {}) do reguard(g) end
  for _, g in pairs(ts.base_outs or {}) do reguard(g) end
end

-- The candidate's outputs (and scratch), and the baseline's own outputs:
-- a baseline never writes where the candidate's output is checked.
function M.outputs(task, ts, which)
  local key = which == "baseline" and "base_outs" or "outs"
  if not ts[key] then
    local outs = {}
    for _, b in ipairs(task.buffers) do
      if b.role == "output" or (b.role == "scratch" and which ~= "baseline") then
        local g, err = galloc(b.name, b.bytes)
        if not g then
          free_all(outs)
          return nil, err
        end
        outs[b.name] = g
      end
    end
    ts[key] = outs
  end
  return ts[key]
end

-- Workspace is per candidate: sizes come from its plan.
function M.workspace(c)
  if c.ws then return c.ws end
  local ws = {}
  for name, w in pairs(c.workspace or {}) do
    local g, err = galloc("workspace " .. name, w.bytes)
    if not g then
      free_all(ws)
      return nil, err
    end
    ws[name] = g
  end
  c.ws = ws
  return ws
end

-- The first input set (correctness made it; a run without correctness makes it).
function M.first_set(run)
  local kept = run.first_set
  if kept and run.ts.inputs[kept.key] == kept then return kept end
  local set, err = M.input_set(run.job.task, run.ts, run.job.trials[1])
  if set then
    set.trial = run.job.trials[1]
    run.first_set = set
  end
  return set, err
end

-- ---- comparison -------------------------------------------------------------------

-- Where an output's worst element is, for a reason.
function M.locate(task, outname, idx)
  local b = task.buffer_by_name[outname]
  if b.rows and b.cols and idx then
    local row, col = idx // b.cols, idx % b.cols
    return string.format("row %d, col %d, tile (%d,%d) of 128x128", row, col, row // 128, col // 128), row, col
  end
  return "element " .. tostring(idx)
end

-- One output's comparison cmp, judged against its tolerance: recorded in
-- rec.outputs, and nil when it holds, else the detail of an incorrect
-- verdict.
local function judged(cmp, name, tol, atol, location, row, col, where, rec)
  local matched = (cmp.total - cmp.failed) / cmp.total
  cmp.matched = matched
  cmp.where, cmp.row, cmp.col = location, row, col
  if rec then rec.outputs[name] = cmp end
  if matched >= (tol.matched or 1.0) then return nil end
  return { kind = "compare", buffer = name, failed = cmp.failed, total = cmp.total, nan = cmp.nan, inf = cmp.inf,
    max_abs = cmp.max_abs, location = location, where = where, matched = matched, required = tol.matched or 1.0,
    atol = atol, rtol = tol.rtol, never_written = cmp.nan + cmp.inf == cmp.total }
end

-- Compares every output with the set's reference: true; false, the detail
-- of an incorrect verdict (where: the run's name, "trial 1"); nil, why when
-- the comparison itself failed. rec.outputs gets each comparison.
function M.compare_outputs(task, set, outs, rec, where)
  for _, b in ipairs(task.buffers) do
    if b.role == "output" then
      local tol = task.tolerance[b.name]
      -- Scaled inputs scale every error with them (tol_scale); rtol needs no change.
      local atol = tol.atol * (set.trial.tol_scale or 1)
      local cmp, err = S.judge:compare(outs[b.name].ptr, b.dtype, set.refs[b.name], b.count, atol, tol.rtol)
      if not cmp then return nil, err end
      local location, row, col = M.locate(task, b.name, cmp.max_abs_at)
      local bad = judged(cmp, b.name, tol, atol, location, row, col, where, rec)
      if bad then return false, bad end
    end
  end
  return true
end

-- Buffers a sampled check uses, made once per task: positions, the
-- sampled reference and the gathered candidate output.
function M.check_buffers(task, ts, n)
  if ts.checkbufs and ts.checkbufs.n == n then return ts.checkbufs end
  local cb = { n = n, ref = {}, got = {} }
  local err
  cb.positions, err = S.ctx:alloc(8 * n)
  if not cb.positions then return nil, err end
  for _, b in ipairs(task.buffers) do
    if b.role == "output" then
      local unit = task.units[b.name]
      local size = judge_mod.dtype_size(b.dtype) or 4
      cb.ref[b.name], err = S.ctx:alloc(4 * n * unit)
      if not cb.ref[b.name] then return nil, err end
      cb.got[b.name], err = S.ctx:alloc(size * n * unit)
      if not cb.got[b.name] then return nil, err end
    end
  end
  ts.checkbufs = cb
  return cb
end

-- The sampled check: cb.n units drawn on the device after the run (draw:
-- the evaluation's generator), their reference computed from the inputs of
-- set alone, the candidate's units gathered and compared. A fault that
-- touches a fraction f of the outputs escapes with probability (1 - f)^n
-- (docs/timing.md). Results and failures as compare_outputs; rec.outputs
-- gets each comparison, marked sampled.
function M.compare_sampled(run, set, cb, draw, rec, where)
  local task, ts = run.job.task, run.ts
  local n = cb.n
  local ok, err = S.judge:positions(cb.positions, n, task.total_units, draw(1 << 62))
  if ok then ok, err = M.run_reference(ts, "sampled", set, cb.ref, cb.positions) end
  if ok then ok, err = S.ctx:sync() end
  if not ok then return nil, err end
  local tol_scale = set.trial and set.trial.tol_scale or 1
  for _, b in ipairs(task.buffers) do
    if b.role == "output" then
      local unit = task.units[b.name]
      local tol = task.tolerance[b.name]
      local atol = tol.atol * tol_scale
      ok, err = S.judge:gather(run.outs[b.name].ptr, b.dtype, cb.positions, n, unit, cb.got[b.name])
      if not ok then return nil, err end
      local cmp, cerr = S.judge:compare(cb.got[b.name], b.dtype, cb.ref[b.name], n * unit, atol, tol.rtol)
      if not cmp then return nil, cerr end
      local at = cmp.max_abs_at
      if at then
        local slot, e = at // unit, at % unit
        local p = string.unpack("<I8", cb.positions:download(8, 8 * slot))
        at = p * unit + e
      end
      local location, row, col = M.locate(task, b.name, at)
      cmp.sampled = true
      local bad = judged(cmp, b.name, tol, atol, location, row, col, where, rec)
      if bad then
        bad.sampled = true
        return false, bad
      end
    end
  end
  return true
end

return M
