-- klab.eval.gpu: the stages of an evaluation that run on the GPU, inside a
-- worker process (or, for `klab replay` and profiling runs, in the caller's
-- own process through klab.eval.run_local).
--
--   gpu.run(job)       -> result: runs job.stages (load, correctness,
--                         instructions, timing; or load, replay) in order
--   gpu.describe()     -> {gpu_name=, driver_version=, arch=} | {none = why}
--
-- The job (klab.eval.prepare builds it): {task = spec, trials = {...},
-- candidate = {cubin_path=, launches=, tensormaps=, workspace=}, reference =
-- {cubin_path=, full=, sampled=, derive=, derived=, sample=}, timing=bool,
-- stages = {...}, opts = {...}}. Every outcome is a result table, never an
-- error: {verdict=, reason=, stage=, stages={...}, device=, env=, unfit=};
-- unfit asks the supervisor to replace the worker (a sticky CUDA error
-- poisons the process).
--
-- The worker keeps the context, the judge kernels, the task's reference
-- module, generated inputs, references and the baseline across jobs, so a
-- healthy worker pays for them once per task. Nothing here names a task
-- family: the reference is the task's own kernels and plans, the baseline a
-- klab.eval.baselines.<lib> module or the task's own kernel.

local gpu = require "klab.gpu"
local jit = require "klab.jit"
local judge_mod = require "klab.judge"
local timing = require "klab.timing"
local sys = require "klab.sys"
local profile = require "klab.eval.profile"
local serve = require "klab.proc.serve"
local stages = require "klab.eval.stages"
local verdicts = require "klab.eval.verdict"
local peaks = require "klab.eval.peaks"
local json = require "klab.json"
local seed_mod = require "klab.eval.seed"

local M = {}

local POISON = 0xFFFFFFFF -- NaN in every float type, and an unlikely integer
local GUARD_PATTERN = 0xA5C3E10F
local GUARD_BYTES = 64 * 1024 -- multiple of 256: the user region stays aligned

-- Worker-lifetime state: the context, the judge, the device, and per task
-- its buffers, references and baseline.
local S = { ctx = nil, judge = nil, props = nil, tasks = {}, modules = {} }

local function now() return sys.now() end

local function ensure_gpu()
  if S.ctx then return true end
  local ok, why = gpu.available()
  if not ok then return nil, why end
  local props, err = gpu.device(0)
  if not props then return nil, err end
  local ctx, cerr = gpu.context(0)
  if not ctx then return nil, cerr end
  local res, jerr = jit.compile { source = judge_mod.source(), lang = "cuda", arch = props.arch, name = "judge.cu" }
  if not res then return nil, "cannot compile the judge kernels: " .. tostring(jerr) end
  local j, oerr = judge_mod.open(ctx, res.cubin)
  if not j then return nil, "cannot load the judge kernels: " .. tostring(oerr) end
  S.ctx, S.judge, S.props = ctx, j, props
  -- Where the numbers come from, recorded with every result.
  local libs = {}
  for name, v in pairs(jit.versions()) do libs[name] = v.ok and (v.version .. " " .. (v.path or "")) or false end
  local build = require "klab.build"
  S.env = {
    host = sys.hostname(), gpu_name = props.name, gpu_uuid = props.uuid_str, arch = props.arch,
    driver_version = tostring(gpu.driver_version()), cuda_version = build.cuda_toolkit,
    sm_clock_mhz = props.clock_khz // 1000, mem_clock_mhz = props.mem_clock_khz // 1000, libs = libs,
  }
  return true
end

function M.describe()
  local ok, why = gpu.available()
  if not ok then return { none = tostring(why), count = 0 } end
  local props, err = gpu.device(0)
  if not props then return { none = tostring(err), count = 0 } end
  return { gpu_name = props.name, driver_version = tostring(gpu.driver_version()), arch = props.arch,
           count = gpu.count() or 1 }
end

-- ---- buffers -----------------------------------------------------------------

-- A guarded allocation: GUARD_BYTES of pattern before and after `bytes`.
-- {name=, buf=, off=, ptr=, bytes=}; region() gives {buf, off} for the
-- bindings that take one (cuBLASLt operands).
local function galloc(name, bytes)
  local total = bytes + 2 * GUARD_BYTES
  local buf, err, code = S.ctx:alloc(total)
  if not buf then return nil, err, code end
  local g = { name = name, buf = buf, off = GUARD_BYTES, bytes = bytes, ptr = buf:ptr() + GUARD_BYTES }
  assert(S.judge:pattern(buf:ptr(), GUARD_BYTES, GUARD_PATTERN))
  assert(S.judge:pattern(g.ptr + bytes, GUARD_BYTES, GUARD_PATTERN))
  return g
end

local function region(g) return { g.buf, g.off } end
M.region = region

-- nil when both guards are intact, else a one-line reason.
local function guard_check(g)
  local bad, first = S.judge:pattern_check(g.ptr - GUARD_BYTES, GUARD_BYTES, GUARD_PATTERN)
  if bad == nil then return "cannot check guards: " .. tostring(first) end
  if bad > 0 then
    return string.format("wrote %d byte(s) before the start of buffer %s (at byte %d before it)", bad, g.name,
      GUARD_BYTES - first)
  end
  bad, first = S.judge:pattern_check(g.ptr + g.bytes, GUARD_BYTES, GUARD_PATTERN)
  if bad == nil then return "cannot check guards: " .. tostring(first) end
  if bad > 0 then
    return string.format("wrote %d byte(s) past the end of buffer %s (%d bytes long; first stray byte at offset %d)",
      bad, g.name, g.bytes, g.bytes + first)
  end
  return nil
end

local function reguard(g)
  S.judge:pattern(g.ptr - GUARD_BYTES, GUARD_BYTES, GUARD_PATTERN)
  S.judge:pattern(g.ptr + g.bytes, GUARD_BYTES, GUARD_PATTERN)
end

local function poison(list)
  for _, g in pairs(list) do S.judge:pattern(g.ptr, g.bytes, POISON) end
end

local function free_all(list)
  for _, g in pairs(list or {}) do
    if g.buf then g.buf:free() else g:free() end
  end
end

local function fill_input(g, b, trial)
  local init = (trial.inputs and trial.inputs[b.name]) or b.init or {}
  local dist = init.dist or "normal"
  -- Per-tensor constants (fp8 scales) keep their value in every trial.
  local scale = (dist == "const" or dist == "int") and 1.0 or (trial.scale or 1.0)
  local seed = seed_mod.derive(assert(seed_mod.parse(trial.seed)), "input", b.index)
  return S.judge:fill(g.ptr, b.count, b.dtype, dist, seed, init.a, init.b, scale)
end

-- ---- running a plan ------------------------------------------------------------

-- Tensor maps of a plan over the bound buffers.
local function encode_tmaps(spec, bind)
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
local function launch_plan(funcs, plan, bind, tmaps)
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
local function task_module(path, plans)
  local f = io.open(path, "rb")
  if not f then return nil, "cannot read " .. tostring(path) end
  local cubin = f:read("a")
  f:close()
  local key = require("klab.store").hash("klab.module.1", cubin)
  local m = S.modules[key]
  if not m then
    local mod, err = S.ctx:load(cubin)
    if not mod then return nil, "cannot load: " .. tostring(err) end
    m = { mod = mod, funcs = {} }
    S.modules[key] = m
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
local function plan_workspace(ts, key, plan)
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

-- ---- the task's reference -----------------------------------------------------

-- Runs one of the reference's plans: inputs from set (its bufs: name ->
-- buffer view with .ptr), outputs into outs (name -> fp32 Buffer),
-- positions (a Buffer) in a sampled run.
local function run_reference(ts, which, set, outs, positions)
  local ref = ts.job_ref
  local plan = ref[which]
  local m, err = task_module(ref.cubin_path, { plan })
  if not m then return nil, "the task's reference " .. err end
  local ws, werr = plan_workspace(ts, "ref_" .. which, plan)
  if not ws then return nil, werr end
  local function bind(name, kind)
    if kind == "workspace" then return ws[name] and ws[name]:ptr() end
    if name == "positions" then return positions and positions:ptr() or 0 end
    local o = outs and outs[name]
    if o then return o:ptr() end
    local g = set.bufs[name]
    return g and g.ptr
  end
  local tmaps, terr = encode_tmaps(plan.tensormaps, bind)
  if not tmaps then return nil, terr end
  local ok, lerr = launch_plan(m.funcs, plan, bind, tmaps)
  if not ok then return nil, "the task's reference: " .. tostring(lerr) end
  return true
end

-- The full reference of an input set: {output name = fp32 Buffer}.
local function reference_full(task, ts, set)
  local refs = {}
  for _, b in ipairs(task.buffers) do
    if b.role == "output" then
      local buf, err = S.ctx:alloc(4 * b.count)
      if not buf then
        free_all(refs)
        return nil, err
      end
      refs[b.name] = buf
    end
  end
  local ok, err = run_reference(ts, "full", set, refs)
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

local function drop_set(ts, set)
  free_all(set.bufs)
  free_all(set.refs)
  ts.inputs[set.key] = nil
end

local function task_state(job)
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
    for _, set in pairs(ts.inputs) do drop_set(ts, set) end
    ts.seed = job.seed
  end
  task.buffer_by_name = {}
  for _, b in ipairs(task.buffers) do task.buffer_by_name[b.name] = b end
  ts.job_ref = job.reference
  return ts
end

-- Input set for trial: guarded inputs filled for the trial, derived inputs,
-- checksums, and the full reference. Kept per trial (its seed and laws).
local function input_set(task, ts, trial)
  local key = json.encode { trial.seed, trial.scale or 1, trial.inputs or false }
  local set = ts.inputs[key]
  if set then return set end
  set = { bufs = {}, sums = {}, trial = trial, key = key }
  for _, b in ipairs(task.buffers) do
    if b.role == "input" then
      local g, err = galloc(b.name, b.bytes)
      if not g then
        free_all(set.bufs)
        return nil, err
      end
      set.bufs[b.name] = g
      local ok, ferr = fill_input(g, b, trial)
      if not ok then
        free_all(set.bufs)
        return nil, ferr
      end
    end
  end
  if ts.job_ref.derive then
    local ok, derr = run_reference(ts, "derive", set)
    if ok then ok, derr = S.ctx:sync() end
    if not ok then
      free_all(set.bufs)
      return nil, derr
    end
  end
  for name, g in pairs(set.bufs) do set.sums[name] = S.judge:checksum(g.ptr, g.bytes) end
  local refs, rerr = reference_full(task, ts, set)
  if not refs then
    free_all(set.bufs)
    return nil, rerr
  end
  set.refs = refs
  set.ref_sums = {}
  for name, ref in pairs(refs) do set.ref_sums[name] = S.judge:checksum(ref, ref:size()) end
  ts.inputs[key] = set
  return set
end

-- The cached state of a task is only as good as the last candidate left
-- it: a kernel that wrote far outside its buffers may have hit another
-- task's inputs, references or guards. Before each evaluation, input sets
-- and references whose checksums changed are dropped (made again on use),
-- and every guard is written afresh.
local function revalidate(ts)
  for _, set in pairs(ts.inputs) do
    local intact = true
    for name, g in pairs(set.bufs) do
      if guard_check(g) or S.judge:checksum(g.ptr, g.bytes) ~= set.sums[name] then intact = false end
    end
    for name, ref in pairs(set.refs or {}) do
      if S.judge:checksum(ref, ref:size()) ~= set.ref_sums[name] then intact = false end
    end
    if not intact then
      drop_set(ts, set)
      ts.revalidated = (ts.revalidated or 0) + 1
    end
  end
  for _, g in pairs(ts.outs or {}) do reguard(g) end
  for _, g in pairs(ts.base_outs or {}) do reguard(g) end
end

-- The candidate's outputs (and scratch), and the baseline's own outputs:
-- a baseline never writes where the candidate's output is checked.
local function outputs(task, ts, which)
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
local function workspace(c)
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

-- ---- verdicts ---------------------------------------------------------------------

local function verdict(res, v, reason)
  res.verdict, res.reason = v, reason
  return res
end

-- A launch the driver refused before running (arguments that do not match
-- the kernel's parameters) is the plan's fault; anything else is the
-- kernel's. A sticky error leaves the worker unfit for the next candidate.
local function runtime_failure(res, err, code, detail)
  if detail and detail.sticky then res.unfit = true end
  if code == "EINVAL" then return verdict(res, "plan_error", err) end
  return verdict(res, "runtime_error", tostring(err))
end

-- Where an output's worst element is, for the reason text.
local function locate(task, outname, idx)
  local b = task.buffer_by_name[outname]
  if b.rows and b.cols and idx then
    local row, col = idx // b.cols, idx % b.cols
    return string.format("row %d, col %d, tile (%d,%d) of 128x128", row, col, row // 128, col // 128), row, col
  end
  return "element " .. tostring(idx)
end

-- Compares every output with the set's reference; nil, err when the
-- comparison itself failed, false, reason when an output is wrong.
local function compare_outputs(task, set, outs, res, trial_label)
  for _, b in ipairs(task.buffers) do
    if b.role == "output" then
      local tol = task.tolerance[b.name]
      -- Scaled inputs scale every error with them (tol_scale); rtol needs no change.
      local atol = tol.atol * (set.trial.tol_scale or 1)
      local cmp, err = S.judge:compare(outs[b.name].ptr, b.dtype, set.refs[b.name], b.count, atol, tol.rtol)
      if not cmp then return nil, err end
      local matched = (cmp.total - cmp.failed) / cmp.total
      local where, row, col = locate(task, b.name, cmp.max_abs_at)
      cmp.matched = matched
      cmp.where, cmp.row, cmp.col = where, row, col
      if res then res.outputs[b.name] = cmp end
      if matched < (tol.matched or 1.0) then
        local what
        if cmp.nan + cmp.inf == cmp.total then
          what = string.format("output %s was never written (every element still holds the poison NaN)", b.name)
        else
          what = string.format("%d of %d elements of %s differ (%d NaN, %d Inf; max abs err %.4g at %s)",
            cmp.failed, cmp.total, b.name, cmp.nan, cmp.inf, cmp.max_abs, where)
        end
        return false, string.format("%s on %s; matched %.4f%% < %.4f%% required (atol %g, rtol %g)", what,
          trial_label, 100 * matched, 100 * (tol.matched or 1.0), atol, tol.rtol)
      end
    end
  end
  return true
end

-- ---- stage: load -----------------------------------------------------------------

-- The GPU, the device's description, and the task's state.
local function attach(run)
  local ok, why = ensure_gpu()
  if not ok then return verdict(run.res, "unknown", "GPU stages skipped: " .. tostring(why)) end
  run.res.device = { name = S.props.name, arch = S.props.arch, sm_count = S.props.sm_count }
  run.res.env = S.env
  run.ts = task_state(run.job)
  revalidate(run.ts)
  return nil
end

-- Module globals (the cubin's __device__ variables, klab.jit.globals) keep
-- their contents from launch to launch, so a kernel could bank results there
-- and replay them. Right after loading, every writable global is located
-- (cuModuleGetGlobal) and copied; before every run (correctness,
-- instructions, timing, replay) they are restored to those load-time
-- contents, outside any timed span. Neighbouring variables are copied as one
-- range. A global the driver does not expose cannot be restored: the module
-- is refused rather than judged with state that could carry over.
local function snapshot_globals(c, globals)
  c.globals = {}
  local spans = {}
  for _, g in ipairs(globals or {}) do
    if g.bytes > 0 then
      local p, bytes = c.mod:global(g.name)
      if not p then
        return nil, string.format("cannot locate the module global %s (%d bytes) to restore it before every run",
          g.name, g.bytes)
      end
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
    if not snap then return nil, err end
    S.judge:convert(m.lo, "u8", snap, "u8", bytes)
    c.globals[#c.globals + 1] = { base = m.lo, bytes = bytes, snap = snap }
  end
  return true
end

local function restore_globals(c)
  for _, g in ipairs(c.globals or {}) do S.judge:convert(g.snap, "u8", g.base, "u8", g.bytes) end
end

-- Loads the candidate's module and checks the launches against the kernels
-- and the device.
local function stage_load(run)
  local res, job = run.res, run.job
  if attach(run) then return res end
  local task = job.task
  local f = io.open(job.candidate.cubin_path, "rb")
  if not f then return verdict(res, "load_error", "cannot read the compiled cubin") end
  local cubin = f:read("a")
  f:close()
  local t0 = now()
  local mod, lerr, _, _, ldetail = S.ctx:load(cubin)
  if not mod then
    if ldetail and ldetail.sticky then res.unfit = true end
    return verdict(res, "load_error", "the driver refused the module: " .. tostring(lerr))
  end
  local cj = job.candidate
  local c = { launches = cj.launches, tensormaps = cj.tensormaps, workspace = cj.workspace, funcs = {}, mod = mod,
    cubin = cubin }
  run.c = c
  local st = { kernels = {} }
  res.stages.load = st
  for _, l in ipairs(c.launches) do
    if not c.funcs[l.kernel] then
      local fn, ferr = mod:func(l.kernel)
      if not fn then
        return verdict(res, "plan_error", "the plan launches kernel '" .. l.kernel ..
          "', which the module lacks: " .. tostring(ferr))
      end
      c.funcs[l.kernel] = fn
      local attrs = fn:attributes()
      st.kernels[l.kernel] = attrs
      local threads = l.block[1] * (l.block[2] or 1) * (l.block[3] or 1)
      if threads > attrs.max_threads then
        return verdict(res, "plan_error", string.format(
          "kernel %s launched with %d threads per block, but it can take at most %d (registers: %d)",
          l.kernel, threads, attrs.max_threads, attrs.registers))
      end
    end
    local static = st.kernels[l.kernel].static_smem or 0
    if (l.shared or 0) + static > S.props.smem_per_block_optin then
      return verdict(res, "plan_error", string.format(
        "kernel %s asks for %d bytes of dynamic shared memory; with its %d static bytes that exceeds the device's %d",
        l.kernel, l.shared, static, S.props.smem_per_block_optin))
    end
  end
  local outs, oerr = outputs(task, run.ts, "candidate")
  if not outs then return runtime_failure(res, "cannot allocate outputs: " .. tostring(oerr)) end
  local ws, werr = workspace(c)
  if not ws then return runtime_failure(res, "cannot allocate workspace: " .. tostring(werr)) end
  run.outs, run.ws = outs, ws
  local gok, gerr = snapshot_globals(c, job.candidate.globals)
  if not gok then return verdict(res, "load_error", gerr) end
  -- The candidate's own device memory: its module globals, its plan's
  -- workspace and the task's scratch buffers.
  local mem = { globals = 0, workspace = 0, scratch = 0 }
  for _, g in ipairs(c.globals) do mem.globals = mem.globals + g.bytes end
  for _, w in pairs(ws) do mem.workspace = mem.workspace + w.bytes end
  for _, b in ipairs(task.buffers) do
    if b.role == "scratch" then mem.scratch = mem.scratch + b.bytes end
  end
  mem.total = mem.globals + mem.workspace + mem.scratch
  st.memory = mem
  st.seconds = now() - t0
  return nil
end

-- The candidate's launches against input set `set`.
local function run_candidate(run, set)
  local c = run.c
  local function bind(name, kind)
    if kind == "workspace" then return run.ws[name] and run.ws[name].ptr end
    local g = set.bufs[name] or run.outs[name] or run.ws[name]
    return g and g.ptr
  end
  local tmaps, terr = encode_tmaps(c.tensormaps, bind)
  if not tmaps then return nil, terr end
  return launch_plan(c.funcs, c, bind, tmaps)
end

-- Everything the candidate writes, poisoned before a run.
local function written(run)
  local all = {}
  for _, g in pairs(run.outs) do all[#all + 1] = g end
  for _, g in pairs(run.ws) do all[#all + 1] = g end
  return all
end

-- Before every run of the candidate: module globals back to their
-- load-time contents, outputs, scratch and workspace poisoned.
local function fresh_state(run, all)
  restore_globals(run.c)
  poison(all)
end

-- ---- stage: correctness -----------------------------------------------------------

-- Fresh inputs per trial, poison, guards, input checksums, comparison, and
-- the same inputs twice.
local function stage_correctness(run)
  local res, job, task, ts = run.res, run.job, run.job.task, run.ts
  local st = { trials = {}, outputs = {} }
  res.stages.correctness = st
  local t0 = now()
  local all = written(run)
  for i, trial in ipairs(job.trials) do
    local label = trial.label or ("trial " .. i)
    local set, serr = input_set(task, ts, trial)
    if not set then return runtime_failure(res, "cannot prepare inputs: " .. tostring(serr)) end
    set.trial = trial
    if i == 1 then run.first_set = set end
    fresh_state(run, all)
    local ok, err, code, detail = run_candidate(run, set)
    if ok then ok, err, code, detail = S.ctx:sync() end
    if not ok then return runtime_failure(res, err, code, detail) end
    for _, g in ipairs(all) do
      local why = guard_check(g)
      if why then return verdict(res, "guard_violation", why .. " on " .. label) end
    end
    for name, g in pairs(set.bufs) do
      local why = guard_check(g)
      if why then return verdict(res, "guard_violation", why .. " on " .. label) end
      if S.judge:checksum(g.ptr, g.bytes) ~= set.sums[name] then
        drop_set(ts, set) -- made again for the next candidate
        return verdict(res, "input_modified", "input " .. name .. " was changed by the kernel on " .. label)
      end
    end
    local good, why = compare_outputs(task, set, run.outs, st, label)
    if good == nil then return runtime_failure(res, why) end
    st.trials[#st.trials + 1] = { label = label, passed = good }
    if not good then return verdict(res, "incorrect", why) end
    if i == 1 then
      -- The same inputs again must give the same bits.
      local keep = {}
      for name, g in pairs(run.outs) do
        if task.buffer_by_name[name].role == "output" then
          local copy = S.ctx:alloc(g.bytes)
          S.judge:convert(g.ptr, "u8", copy, "u8", g.bytes)
          keep[name] = copy
        end
      end
      fresh_state(run, all)
      ok, err, code, detail = run_candidate(run, set)
      if ok then ok, err, code, detail = S.ctx:sync() end
      if not ok then return runtime_failure(res, err, code, detail) end
      for name, copy in pairs(keep) do
        local n, first = S.judge:bitdiff(run.outs[name].ptr, copy, run.outs[name].bytes)
        copy:free()
        if n and n > 0 then
          return verdict(res, "nondeterministic", string.format(
            "two runs on the same inputs gave different bits in %s (%d bytes differ, first at byte %d)", name, n, first))
        end
      end
    end
  end
  for _, g in ipairs(all) do reguard(g) end
  st.seconds = now() - t0
  return nil
end

-- The first input set (correctness made it; a run without correctness makes it).
local function first_set(run)
  if run.first_set then return run.first_set end
  local set, err = input_set(run.job.task, run.ts, run.job.trials[1])
  if set then
    set.trial = run.job.trials[1]
    run.first_set = set
  end
  return set, err
end

-- ---- stage: instructions ------------------------------------------------------------

-- One profiled run, never timed; never raises. A finding (a target family
-- that did not run) is kept for the end: timing still runs, so the result
-- has its time too.
local function stage_instructions(run)
  local res, job = run.res, run.job
  local set, serr = first_set(run)
  if not set then return runtime_failure(res, "cannot prepare inputs: " .. tostring(serr)) end
  local all = written(run)
  local opts = job.opts or {}
  local ps = profile.stage(S.ctx, function() return run_candidate(run, set) end, job.task, S.props.arch, {
    prepare = function() fresh_state(run, all); return true end,
    launches = run.c.launches, kernels = res.stages.load.kernels, funcs = run.c.funcs, device = S.props,
    -- The supervisor takes the static census while this runs; the listing
    -- is needed here only to join executed counts to opcodes.
    cubin = opts.sass_executed and run.c.cubin or nil, sass_executed = opts.sass_executed,
    full = opts.profile,
  })
  res.stages.instructions = ps
  if ps.sticky then
    res.unfit = true
    return verdict(res, "runtime_error", "the kernel failed in the profiled run: " .. tostring(ps.reason))
  end
  if ps.verdict then run.finding = { verdict = ps.verdict, reason = ps.verdict_reason, stage = "instructions" } end
  return nil
end

-- ---- stage: timing -------------------------------------------------------------------

-- The task's baseline as a runner, made once per task and worker, and
-- checked once against the reference on the first input set: {run =
-- function() enqueue one call end, info = {...}, modes = {...}, check = {...}}.
local function baseline(run, opts)
  local job, ts, task = run.job, run.ts, run.job.task
  if ts.baseline then return ts.baseline end
  local b = task.baseline
  if b.error then return nil, b.error end
  local set, serr = first_set(run)
  if not set then return nil, serr end
  local outs, oerr = outputs(task, ts, "baseline")
  if not outs then return nil, oerr end
  local lib = b.kind == "shipped" and "shipped" or b.lib
  local ok, mod = pcall(require, "klab.eval.baselines." .. tostring(lib))
  if not ok then return nil, "no baseline library '" .. tostring(lib) .. "': " .. tostring(mod) end
  local W = { ctx = S.ctx, judge = S.judge, props = S.props, region = region, launch_plan = launch_plan,
    encode_tmaps = encode_tmaps, task_module = task_module }
  local runner, err = mod.prepare(W, task, { inputs = set.bufs, outputs = outs }, opts)
  if not runner then return nil, err end
  -- Does the library compute what the task asks? Once, on the first set.
  poison(outs)
  local rok, rerr = pcall(runner.run, set.bufs)
  if rok then rok, rerr = S.ctx:sync() end
  if not rok then return nil, "the baseline failed: " .. tostring(rerr) end
  local check = { outputs = {} }
  local good, why = compare_outputs(task, set, outs, check, "the baseline's run on " .. (set.trial.label or "trial 1"))
  check.passed, check.reason = good == true, why
  runner.check = check
  ts.baseline = runner
  return runner
end

-- ---- timed runs: held to the proof of correctness runs ---------------------

-- Every timed sample (candidate's and baseline's) runs on fresh input
-- contents at an address it has not had just before: inputs live in SLOTS
-- buffers each, used in turn, at one of SHIFTS offsets SHIFT bytes apart.
-- Inputs a task's reference derives (attention backward's O and LSE), and
-- the inputs the derivation reads, must stay consistent with each other:
-- they are copied from one of the prepared input sets (references and all)
-- instead of drawn fresh; every other input is drawn fresh from the task's
-- base law with a new seed. Before each candidate sample its module globals
-- are restored and its outputs, scratch and workspace poisoned; after it,
-- `sample` units of every output are recomputed by the reference from that
-- sample's own inputs and compared. A few samples, drawn among the first,
-- run on a whole prepared set (copied to the sample's shifted addresses)
-- and are compared in full with that set's reference: a kernel keeps no
-- state from run to run, so contents it met before give it nothing, and the
-- full comparison costs a compare, not a second reference.
local SLOTS, SHIFTS, SHIFT = 2, 8, 256
local FULL_CHECKS = 2

-- The input names the derive plan touches (its buffer arguments) and the
-- inputs it derives.
local function derived_inputs(job)
  local set = {}
  local ref = job.reference or {}
  for _, name in ipairs(ref.derived or {}) do set[name] = true end
  for _, l in ipairs(ref.derive and ref.derive.launches or {}) do
    for _, a in ipairs(l.args) do
      if a.kind == "buffer" then set[a.name] = true end
    end
  end
  return set
end

local function timing_slots(task, ts)
  if ts.slots then return ts.slots end
  local slots = {}
  for _, b in ipairs(task.buffers) do
    if b.role == "input" then
      slots[b.name] = {}
      for k = 1, SLOTS do
        local g, err = galloc(b.name .. " (timing slot " .. k .. ")", b.bytes + SHIFT * (SHIFTS - 1))
        if not g then
          for _, list in pairs(slots) do free_all(list) end
          return nil, err
        end
        slots[b.name][k] = g
      end
    end
  end
  ts.slots = slots
  return slots
end

-- Buffers the checks of timed runs use, made once per task: positions,
-- the sampled reference and the gathered candidate output.
local function check_buffers(task, ts, n)
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

-- The sample's inputs: target 1 (the candidate) or 2 (the baseline), at
-- counter k (both targets count together). whole: every input copied from
-- the prepared set (a sample checked in full).
local function fresh_inputs(task, ts, sets, dependent, k, draw, whole, seed)
  local io = {}
  local set = sets[(k % #sets) + 1]
  for _, b in ipairs(task.buffers) do
    if b.role == "input" then
      local g = ts.slots[b.name][(k % SLOTS) + 1]
      local shift = SHIFT * draw(SHIFTS)
      local v = { name = b.name, buf = g.buf, off = g.off + shift, ptr = g.ptr + shift, bytes = b.bytes }
      if whole or dependent[b.name] then
        S.judge:convert(set.bufs[b.name].ptr, "u8", v.ptr, "u8", b.bytes)
      else
        local init = b.init or {}
        local dist = init.dist or "normal"
        local ok, err = S.judge:fill(v.ptr, b.count, b.dtype, dist, seed_mod.derive(seed, "timed input " .. b.index, k),
          init.a, init.b, 1.0)
        if not ok then return nil, err end
      end
      io[b.name] = v
    end
  end
  return io, set
end

-- Compares the candidate's outputs of one timed sample with the reference:
-- `n` units drawn after the run and recomputed from that sample's own
-- inputs, or, for a sample run on a whole prepared set (full), every
-- element against that set's reference. nil, reason when an output is
-- wrong; error() when the check itself cannot run.
local function check_sample(run, io, cb, full, draw, label)
  local task, ts = run.job.task, run.ts
  local view = { bufs = io }
  local n = cb.n
  if full then
    local good, why = compare_outputs(task, full, run.outs, nil, label)
    if good == nil then error(why) end
    return good, why
  else
    -- Drawn on the device, after the run.
    local ok, err = S.judge:positions(cb.positions, n, task.total_units, draw(1 << 62))
    if ok then ok, err = run_reference(ts, "sampled", view, cb.ref, cb.positions) end
    if ok then ok, err = S.ctx:sync() end
    if not ok then error(err) end
  end
  for _, b in ipairs(task.buffers) do
    if b.role == "output" then
      local unit = task.units[b.name]
      local tol = task.tolerance[b.name]
      assert(S.judge:gather(run.outs[b.name].ptr, b.dtype, cb.positions, n, unit, cb.got[b.name]))
      local got, want, count = cb.got[b.name], cb.ref[b.name], n * unit
      local cmp, err = S.judge:compare(got, b.dtype, want, count, tol.atol, tol.rtol)
      if not cmp then error(err) end
      local matched = (cmp.total - cmp.failed) / cmp.total
      if matched < (tol.matched or 1.0) then
        local at = cmp.max_abs_at
        if at then
          local slot, e = at // unit, at % unit
          local p = string.unpack("<I8", cb.positions:download(8, 8 * slot))
          at = p * unit + e
        end
        local where = locate(task, b.name, at)
        return nil, string.format("%s: %d of %d sampled elements of %s differ (%d NaN, %d Inf; max abs err %.4g at "
          .. "%s); atol %g, rtol %g", label, cmp.failed, cmp.total, b.name, cmp.nan, cmp.inf, cmp.max_abs, where,
          tol.atol, tol.rtol)
      end
    end
  end
  return true
end

local function stage_timing(run)
  local res, job, task, ts = run.res, run.job, run.job.task, run.ts
  local opts = job.opts or {}
  local t0 = now()
  local base, berr = baseline(run, opts)
  -- The prepared input sets (correctness made them): derived inputs rotate
  -- among them.
  local sets = {}
  for i = 1, math.min(3, #job.trials) do
    local set, serr = input_set(task, ts, job.trials[i])
    if not set then return runtime_failure(res, "cannot prepare inputs: " .. tostring(serr)) end
    sets[i] = set
  end
  local slots, slerr = timing_slots(task, ts)
  if not slots then return runtime_failure(res, "cannot allocate timing inputs: " .. tostring(slerr)) end
  local n = math.min(job.reference.sample or 8192, task.total_units)
  local cb, cberr = check_buffers(task, ts, n)
  if not cb then return runtime_failure(res, "cannot allocate check buffers: " .. tostring(cberr)) end
  local dependent = derived_inputs(job)
  -- Shifts, checked positions and the fully checked runs: drawn from the
  -- evaluation's seed, like every timed input.
  local seed = assert(seed_mod.parse(job.seed))
  local draw = seed_mod.rng(seed_mod.derive(seed, "timing"))
  local all = written(run)
  local counter = 0
  local cur = {}
  local checks = { sampled = 0, full = 0, units = n, seconds = 0, failure = nil }
  -- Which samples get a full check: drawn among the first ones, which
  -- every measurement takes.
  local full_at = {}
  local min_samples = opts.min_samples or 10
  for _ = 1, math.min(FULL_CHECKS, min_samples) do full_at[draw(min_samples) + 1] = true end

  local function candidate_bind(io)
    return function(name, kind)
      if kind == "workspace" then return run.ws[name] and run.ws[name].ptr end
      local g = io[name] or run.outs[name] or run.ws[name]
      return g and g.ptr
    end
  end
  -- Sets up the next sample of target 1 (candidate) or 2 (baseline).
  local function next_sample(target, sample)
    local whole = target == 1 and full_at[sample] == true
    local io, set = fresh_inputs(task, ts, sets, dependent, counter, draw, whole, seed)
    if not io then error(set) end
    counter = counter + 1
    local c = { io = io, full = whole and set or nil }
    if target == 1 then
      c.bind = candidate_bind(io)
      local tmaps, terr = encode_tmaps(run.c.tensormaps, c.bind)
      if not tmaps then error(terr) end
      c.tmaps = tmaps
      fresh_state(run, all)
    end
    cur[target] = c
  end
  next_sample(1)
  if base then next_sample(2) end

  local function cand_run()
    local c = cur[1]
    local ok, err = launch_plan(run.c.funcs, run.c, c.bind, c.tmaps)
    if not ok then error(err) end
    return #run.c.launches
  end
  local spec = {
    run = cand_run, flops = task.flops,
    peak_tflops = peaks.tflops(S.props.arch, task.precision),
    budget_s = opts.budget_s or 10, min_samples = min_samples, max_samples = opts.max_samples or 500,
    target_ci = opts.target_ci or 0.005,
    -- Only to measure what the reset of persisting L2 lines does (tests/gpu/check.lua).
    keep_persisting_l2 = opts.keep_persisting_l2,
    before = function(target, sample)
      next_sample(target, sample)
      return target == 1
    end,
    check = function(target, sample)
      if target ~= 1 then return true end
      local c0 = now()
      local full = cur[1].full
      local label = "timed run " .. sample .. (full and " (checked in full)" or "")
      local ok, why = check_sample(run, cur[1].io, cb, full, draw, label)
      checks.seconds = checks.seconds + (now() - c0)
      if full then checks.full = checks.full + 1 else checks.sampled = checks.sampled + 1 end
      if not ok and not checks.failure then checks.failure = why end
      return ok == true
    end,
  }
  if base and base.run then
    spec.baseline = { flops = task.flops, run = function() return base.run(cur[2].io) end }
  end
  local r, err, code, partial = timing.measure(S.ctx, spec)
  local st = { seconds = now() - t0, checks = checks }
  res.stages.timing = st
  if not r then
    if code == "EREJECT" and partial and partial.unexpected then
      st.result = partial
      return verdict(res, "unexpected_launches", "timing saw launches the plan did not make: " ..
        tostring(partial.unexpected.why))
    end
    return verdict(res, "unknown", "timing failed: " .. tostring(err))
  end
  st.method, st.stop_reason = r.method, r.stop_reason
  -- The L2 flush, and what kept persisting lines from outliving it.
  st.flush_bytes, st.l2 = r.flush_bytes, r.l2
  st.fallback = r.fallback
  st.candidate = r.candidate
  st.candidate.samples = nil
  st.clock_before_mhz, st.clock_after_mhz = r.clock_before_mhz, r.clock_after_mhz
  if r.candidate.check_failures and r.candidate.check_failures > 0 then
    return verdict(res, "incorrect", string.format("the output of %s was wrong (every timed run gets fresh "
      .. "inputs and its output is checked)", tostring(checks.failure or ("timed run " ..
      tostring(r.candidate.first_failed_sample)))))
  end
  if r.baseline then
    st.baseline = r.baseline
    st.baseline.samples = nil
    st.speedup = r.speedup
    st.baseline_info = base.info
    st.baseline_mode = base.mode
    st.baseline_check = base.check
    -- Other modes (TF32 for fp32 tasks), from their own timing.
    st.baseline_modes = {}
    for mode, m in pairs(base.modes or {}) do
      st.baseline_modes[mode] = { median_us = m.median_us, algo = m.algo,
        speedup = m.median_us and m.median_us / r.candidate.median }
    end
    if base.modes and base.modes.tf32 then
      st.baseline_tf32_median = base.modes.tf32.median_us
      st.speedup_tf32 = base.modes.tf32.median_us / r.candidate.median
    end
  else
    st.baseline_error = berr
  end
  -- The physical floor: no kernel does the task's FLOPs faster than the
  -- device's peak for the path it used, nor moves the task's bytes faster
  -- than DRAM (L2 is flushed before every sample). Below it, the time is
  -- not a speedup.
  local floor = run.floor or {}
  local ps = res.stages.instructions
  local path = ps and ps.status == "ok" and ps.flops and ps.flops.frac and
    ((ps.flops.frac.tensor or 0) >= 0.5 and "tensor" or "simt") or nil
  local tflops = peaks.tflops(S.props.arch, task.precision, path)
  local bw = peaks.dram_bytes_per_s(S.props)
  floor.compute_us = tflops and task.flops and task.flops / (tflops * 1e6) or nil
  floor.memory_us = bw and task.bytes and task.bytes / bw * 1e6 or nil
  floor.path, floor.tflops, floor.dram_bytes_per_s = path or "any", tflops, bw
  floor.us = math.max(floor.compute_us or 0, floor.memory_us or 0)
  st.floor = floor
  -- A margin for clocks above the datasheet's: 10%.
  if floor.us > 0 and r.candidate.median < 0.9 * floor.us then
    return verdict(res, "below_floor", string.format("median %.2f us is below the physical floor of %.2f us "
      .. "(%s: %.4g FLOPs at %s TFLOP/s take %.2f us; %.4g bytes at %.0f GB/s take %.2f us): not a speedup",
      r.candidate.median, floor.us, floor.path, task.flops or 0, tostring(tflops), floor.compute_us or 0,
      task.bytes or 0, (bw or 0) / 1e9, floor.memory_us or 0))
  end
  return nil
end

-- ---- stage: baseline (the baseline check) -----------------------------------------

-- The task's baseline alone: made, checked against the reference on the
-- first input set, and timed by itself when the job's budget_s > 0.
local function stage_baseline(run)
  local res, job = run.res, run.job
  if attach(run) then return res end
  local opts = job.opts or {}
  local st = {}
  res.stages.baseline = st
  local base, err = baseline(run, opts)
  if not base then return verdict(res, "unknown", "the baseline could not run: " .. tostring(err)) end
  st.info, st.check, st.mode = base.info, base.check, base.mode
  if (opts.budget_s or 0) > 0 then
    -- One measurement per method asked for ("auto": CUPTI when possible;
    -- "events": an event pair around each call, as PyTorch is timed); the
    -- first is st.timing.
    st.timings = {}
    for _, method in ipairs(opts.methods or { opts.method or "auto" }) do
      local r, terr = timing.measure(S.ctx, { run = base.run, flops = job.task.flops, budget_s = opts.budget_s,
        min_samples = opts.min_samples or 10, max_samples = opts.max_samples or 200, method = method })
      if r then
        r.candidate.samples = nil
        r.candidate.method = r.method
        st.timings[method] = r.candidate
        if not st.timing then st.timing, st.method = r.candidate, r.method end
      else
        st.timings[method] = { error = tostring(terr) }
        st.timing_error = st.timing_error or tostring(terr)
      end
    end
  end
  if not base.check.passed then return verdict(res, "incorrect", base.check.reason) end
  return verdict(res, "passed", "the baseline matches the reference")
end

-- ---- stage: replay (klab replay) ---------------------------------------------------

-- Runs the candidate `runs` times on the first input set, with no profiler
-- and no timing of its own, so that an outside tool (ncu, compute-sanitizer)
-- sees exactly the planned launches; checks the last run.
local function stage_replay(run)
  local res, job = run.res, run.job
  local set, serr = first_set(run)
  if not set then return runtime_failure(res, "cannot prepare inputs: " .. tostring(serr)) end
  local all = written(run)
  local t0 = now()
  local runs = (job.opts or {}).runs or 1
  for _ = 1, runs do
    fresh_state(run, all)
    local ok, err, code, detail = run_candidate(run, set)
    if ok then ok, err, code, detail = S.ctx:sync() end
    if not ok then return runtime_failure(res, err, code, detail) end
  end
  res.seconds, res.runs = now() - t0, runs
  local st = { outputs = {} }
  res.stages.replay = st
  local good, why = compare_outputs(job.task, set, run.outs, st, "the last replayed run")
  if good == nil then return runtime_failure(res, why) end
  if good then return verdict(res, "passed", "the last replayed run was correct") end
  return verdict(res, "incorrect", why)
end

-- ---- the job ------------------------------------------------------------------------

local STAGE_FN = {
  load = stage_load, correctness = stage_correctness, instructions = stage_instructions, timing = stage_timing,
  replay = stage_replay, baseline = stage_baseline,
}

-- Workers that share a GPU (KLAB_GPU_LOCK names it) take turns on the
-- stages that need the device to themselves: the profiler's counters and
-- the timed runs. The lock waits outside the stage's own limit.
local EXCLUSIVE = { instructions = true, timing = true, baseline = true }

local function device_lock(name)
  local key = os.getenv("KLAB_GPU_LOCK")
  if not EXCLUSIVE[name] or not key or key == "" then return nil end
  local dir = os.getenv("TMPDIR")
  if not dir or dir == "" then dir = "/tmp" end
  -- One slot per device in one lock file; the kernel lets go when the
  -- holder dies, however it dies.
  return require("klab.fs").lock(dir .. "/klab-gpu.lock", key, "pid " .. sys.getpid(), true)
end

function M.run(job)
  local res = { stages = {}, worker_pid = sys.getpid() }
  local run = { job = job, res = res }
  local opts = job.opts or {}
  for _, name in ipairs(job.stages or stages.worker()) do
    if name == "timing" and job.timing == false then break end
    local fn = STAGE_FN[name]
    if not fn then error("klab.eval.gpu: no stage " .. tostring(name)) end
    local lock <close> = device_lock(name)
    serve.stage(name, stages.limit(name, opts) or 0)
    fn(run)
    if res.verdict then
      res.stage = name
      break
    end
  end
  local ps, tm = res.stages.instructions, res.stages.timing
  if ps and tm and tm.candidate and tm.candidate.median then
    profile.summarize(ps, { duration_us = tm.candidate.median, source = tm.method })
  end
  -- A CUDA error that poisons the context (an illegal address seen by any
  -- call, not only a launch) leaves this worker unfit for the next job.
  if S.ctx and res.verdict and res.verdict ~= "passed" then
    local sticky = S.ctx:sticky()
    if sticky then res.unfit = true end
  end
  -- A finding of the instruction stage (kept while timing ran) stands
  -- unless a later stage found something that ranks higher.
  local f = run.finding
  if f and (not res.verdict or verdicts.rank(f.verdict) < verdicts.rank(res.verdict)) then
    res.verdict, res.reason, res.stage = f.verdict, f.reason, f.stage
  end
  -- A module is unloaded after use; the worker keeps the rest.
  if run.c and not res.unfit then
    free_all(run.c.ws)
    for _, g in ipairs(run.c.globals or {}) do g.snap:free() end
    run.c.mod:free()
  end
  return res
end

return M
