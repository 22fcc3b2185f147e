-- klab.eval.gpu: the GPU side of an evaluation, run inside a worker process.
--
-- The supervisor (klab.eval) compiles the candidate, runs its plan in the
-- sandbox and sends one job: the task's plain description, the cubin's path,
-- the normalized launches and the options. This module loads the cubin,
-- checks the launches against the kernels' real parameters, runs the
-- correctness trials and times candidate and baseline interleaved. It keeps
-- the context, the judge kernels, generated inputs, reference outputs and
-- baseline timings across jobs, so a healthy worker pays for them once per
-- task.
--
-- Every outcome is a result table, never an error: {verdict=, reason=,
-- stages={...}, unfit=bool}. unfit asks the supervisor to replace the
-- worker (a sticky CUDA error poisons the process).

local gpu = require "klab.gpu"
local jit = require "klab.jit"
local judge_mod = require "klab.judge"
local timing = require "klab.timing"
local sys = require "klab.sys"
local profile = require "klab.eval.profile"
local serve = require "klab.proc.serve"

local M = {}

local POISON = 0xFFFFFFFF -- NaN in every float type, and an unlikely integer
local GUARD_PATTERN = 0xA5C3E10F
local GUARD_BYTES = 64 * 1024 -- multiple of 256: the user region stays aligned
local DEFAULT_TRIALS = {
  { seed = 1, dist = "normal" }, { seed = 2, dist = "normal" }, { seed = 3, dist = "normal" },
  -- KernelBench-Verified's hidden distributions: x1, x3, x0.01, x-1.
  { seed = 11, dist = "normal", scale = 1.0, label = "D1 x1" },
  { seed = 12, dist = "normal", scale = 3.0, label = "D2 x3" },
  { seed = 13, dist = "normal", scale = 0.01, label = "D3 x0.01" },
  { seed = 14, dist = "normal", scale = -1.0, label = "D4 x-1" },
}

-- Worker-lifetime state.
local S = { ctx = nil, judge = nil, props = nil, tasks = {} }

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

-- A guarded allocation: GUARD_BYTES of pattern before and after `bytes`.
local function galloc(name, bytes)
  local total = bytes + 2 * GUARD_BYTES
  local buf, err, code = S.ctx:alloc(total)
  if not buf then return nil, err, code end
  local g = { name = name, buf = buf, bytes = bytes, ptr = buf:ptr() + GUARD_BYTES }
  assert(S.judge:pattern(buf:ptr(), GUARD_BYTES, GUARD_PATTERN))
  assert(S.judge:pattern(g.ptr + bytes, GUARD_BYTES, GUARD_PATTERN))
  return g
end

-- nil when both guards are intact, else a one-line reason.
local function guard_check(g)
  local bad, first = S.judge:pattern_check(g.buf:ptr(), GUARD_BYTES, GUARD_PATTERN)
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

-- The user region of a guarded allocation, for bindings that take a
-- {buffer, offset} region (cuBLASLt operands).
local function region(g) return { g.buf, GUARD_BYTES } end

local function reguard(g)
  S.judge:pattern(g.buf:ptr(), GUARD_BYTES, GUARD_PATTERN)
  S.judge:pattern(g.ptr + g.bytes, GUARD_BYTES, GUARD_PATTERN)
end

local function fill_input(g, b, trial)
  local init = (trial.inputs and trial.inputs[b.name]) or b.init or {}
  local dist = init.dist or "normal"
  local a, bb = init.a, init.b
  -- Per-tensor constants (fp8 scales) keep their value in every trial.
  local scale = (dist == "const" or dist == "int") and 1.0 or (trial.scale or 1.0)
  local seed = trial.seed * 1000003 + b.index
  return S.judge:fill(g.ptr, b.count, b.dtype, dist, seed, a, bb, scale)
end

-- Per task: outputs, workspace, input sets and references, made on demand.
local function task_state(task)
  local ts = S.tasks[task.name]
  if ts then return ts end
  ts = { inputs = {}, outputs = {}, refs = {}, checks = {}, baseline = nil }
  S.tasks[task.name] = ts
  return ts
end

-- The fp32 reference for one output, from the task's reference operator.
-- Families other than GEMM bring their own reference and baseline as Lua
-- modules: klab.eval.refs.<op> with compute(S, task, set) -> {output = fp32
-- buffer} and optionally derive(S, task, set) for inputs computed from other
-- inputs (attention backward's O and LSE); klab.eval.baselines.<lib> with
-- prepare(S, task, ts, opts) -> runner (see baseline below). S is this
-- worker's state: ctx, judge, props.
local function ref_module(task)
  local op = task.reference.op
  if op == "gemm" then return nil end
  local ok, mod = pcall(require, "klab.eval.refs." .. op)
  if not ok then error("no reference for operator '" .. tostring(op) .. "': " .. tostring(mod)) end
  return mod
end

local function reference(task, set)
  local r = task.reference
  local mod = ref_module(task)
  if mod then return mod.compute(S, task, set) end
  local out = {}
  local A, B = set.bufs[r.A], set.bufs[r.B]
  local bo = task.buffer_by_name[r.C]
  local ref, err = S.ctx:alloc(4 * bo.count)
  if not ref then return nil, err end
  local scale = (r.scale_a or 1.0) * (r.scale_b or 1.0)
  local ok, gerr = S.judge:gemm_ref(A.ptr, task.buffer_by_name[r.A].dtype, B.ptr, task.buffer_by_name[r.B].dtype,
    ref, task.dims.M, task.dims.N, task.dims.K, scale)
  if not ok then return nil, gerr end
  out[r.C] = ref
  return out
end

-- Input set i: guarded inputs filled for trial i, their checksums, and the reference.
local function input_set(task, ts, i, trial)
  local set = ts.inputs[i]
  if set then return set end
  set = { bufs = {}, sums = {}, trial = trial }
  for _, b in ipairs(task.buffers) do
    if b.role == "input" then
      local g, err = galloc(b.name, b.bytes)
      if not g then return nil, err end
      local ok, ferr = fill_input(g, b, trial)
      if not ok then return nil, ferr end
      set.bufs[b.name] = g
    end
  end
  local mod = ref_module(task)
  if mod and mod.derive then
    local ok, derr = mod.derive(S, task, set)
    if not ok then return nil, derr end
  end
  for name, g in pairs(set.bufs) do set.sums[name] = S.judge:checksum(g.ptr, g.bytes) end
  local refs, rerr = reference(task, set)
  if not refs then return nil, rerr end
  set.refs = refs
  set.ref_sums = {}
  for name, ref in pairs(refs) do set.ref_sums[name] = S.judge:checksum(ref, ref:size()) end
  ts.inputs[i] = set
  return set
end

local function outputs(task, ts, workspace)
  if not ts.outs then
    ts.outs = {}
    for _, b in ipairs(task.buffers) do
      if b.role == "output" or b.role == "scratch" then
        local g, err = galloc(b.name, b.bytes)
        if not g then return nil, err end
        ts.outs[b.name] = g
      end
    end
  end
  -- Workspace is per candidate: sizes come from the plan.
  local ws = {}
  for name, w in pairs(workspace or {}) do
    local g, err = galloc("workspace " .. name, w.bytes)
    if not g then return nil, err end
    ws[name] = g
  end
  return ts.outs, ws
end

local function poison(list)
  for _, g in pairs(list) do S.judge:pattern(g.ptr, g.bytes, POISON) end
end

-- Launch arguments for one launch, against input set `set`.
local function launch_args(l, set, outs, ws, tmaps)
  local args = {}
  for i, a in ipairs(l.args) do
    if a.kind == "buffer" then
      local g = set.bufs[a.name] or outs[a.name]
      args[i] = { "u64", g.ptr }
    elseif a.kind == "workspace" then
      args[i] = { "u64", ws[a.name].ptr }
    elseif a.kind == "tensormap" then
      args[i] = { "bytes", tmaps[a.name] }
    else
      args[i] = { a.type, a.value }
    end
  end
  return args
end

local function encode_tmaps(spec, set, outs, ws)
  local out = {}
  for name, t in pairs(spec or {}) do
    local g = set.bufs[t.buffer] or outs[t.buffer] or ws[t.buffer]
    if not g then return nil, "tensor map " .. name .. " names unknown buffer " .. tostring(t.buffer) end
    local s, err = judge_mod.tensormap(g.ptr, {
      dtype = t.dtype, dims = t.dims, box = t.box, strides = t.strides, swizzle = t.swizzle or "none",
      l2 = (t.l2promotion and t.l2promotion ~= "none") and t.l2promotion or "none",
      oob = tostring(t.oob_fill or ""):find("nan") and "nan" or "zero" })
    if not s then return nil, "tensor map " .. name .. ": " .. tostring(err) end
    out[name] = s
  end
  return out
end

-- Runs the planned launches once; nil, reason, detail on failure.
local function run_once(c, set, outs, ws)
  local tm, terr = encode_tmaps(c.tensormaps, set, outs, ws)
  if not tm then return nil, terr end
  for _, l in ipairs(c.launches) do
    local ok, err, code, detail = S.ctx:launch(c.funcs[l.kernel], {
      grid = l.grid, block = l.block, cluster = l.cluster, shared = l.shared,
      args = launch_args(l, set, outs, ws, tm) })
    if not ok then return nil, "launch of " .. l.kernel .. " failed: " .. tostring(err), code, detail end
  end
  return true
end

-- Waits for the GPU. A kernel that never finishes blocks here; the
-- supervisor's deadline then kills this worker (the only way to stop it)
-- and records the timeout.
local function sync()
  return S.ctx:sync()
end

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

-- The element count and position of the worst error, for the reason text.
local function locate(task, outname, idx)
  local b = task.buffer_by_name[outname]
  if b.rows and b.cols and idx then
    local row, col = idx // b.cols, idx % b.cols
    return string.format("row %d, col %d, tile (%d,%d) of 128x128", row, col, row // 128, col // 128), row, col
  end
  return "element " .. tostring(idx)
end

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
      res.stages.correctness.outputs[b.name] = cmp
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

-- The cached state of a task is only as good as the last candidate left
-- it: a kernel that wrote far outside its buffers may have hit another
-- task's inputs, references or guards. Before each evaluation, input sets
-- and references whose checksums changed are dropped (made again on use),
-- and every guard is written afresh.
local function revalidate(ts)
  for i, set in pairs(ts.inputs) do
    local intact = true
    for name, g in pairs(set.bufs) do
      if guard_check(g) or S.judge:checksum(g.ptr, g.bytes) ~= set.sums[name] then intact = false end
    end
    for name, ref in pairs(set.refs or {}) do
      if S.judge:checksum(ref, ref:size()) ~= set.ref_sums[name] then intact = false end
    end
    if not intact then
      for _, g in pairs(set.bufs) do g.buf:free() end
      for _, ref in pairs(set.refs or {}) do ref:free() end
      ts.inputs[i] = nil
      ts.revalidated = (ts.revalidated or 0) + 1
    end
  end
  for _, g in pairs(ts.outs or {}) do reguard(g) end
end

-- Correctness: fresh inputs per trial, poison, guards, input checksums,
-- comparison, and the same inputs twice.
local function correctness(task, c, ts, res)
  local st = { trials = {}, outputs = {} }
  res.stages.correctness = st
  local t0 = now()
  revalidate(ts)
  local outs, ws = outputs(task, ts, c.workspace)
  if not outs then return runtime_failure(res, "cannot allocate outputs: " .. tostring(ws)) end
  local all = {}
  for k, g in pairs(outs) do all[#all + 1] = g end
  for k, g in pairs(ws) do all[#all + 1] = g end
  local trials = c.trials or DEFAULT_TRIALS
  for i, trial in ipairs(trials) do
    local label = trial.label or ("trial " .. i .. " (seed " .. trial.seed .. ")")
    local set, serr = input_set(task, ts, i, trial)
    if set then set.trial = trial end
    if not set then return runtime_failure(res, "cannot prepare inputs: " .. tostring(serr)) end
    poison(outs)
    poison(ws)
    local ok, err, code, detail = run_once(c, set, outs, ws)
    if ok then ok, err, code, detail = sync() end
    if not ok then return runtime_failure(res, err, code, detail) end
    for _, g in ipairs(all) do
      local why = guard_check(g)
      if why then return verdict(res, "guard_violation", why .. " on " .. label) end
    end
    for name, g in pairs(set.bufs) do
      local why = guard_check(g)
      if why then return verdict(res, "guard_violation", why .. " on " .. label) end
      if S.judge:checksum(g.ptr, g.bytes) ~= set.sums[name] then
        -- Made again for the next candidate.
        for _, gg in pairs(set.bufs) do gg.buf:free() end
        for _, ref in pairs(set.refs) do ref:free() end
        ts.inputs[i] = nil
        return verdict(res, "input_modified", "input " .. name .. " was changed by the kernel on " .. label)
      end
    end
    local good, why = compare_outputs(task, set, outs, res, label)
    if good == nil then return runtime_failure(res, why) end
    st.trials[#st.trials + 1] = { label = label, passed = good }
    if not good then return verdict(res, "incorrect", why) end
    if i == 1 then
      -- The same inputs again must give the same bits.
      local keep = {}
      for name, g in pairs(outs) do
        if task.buffer_by_name[name].role == "output" then
          local copy = S.ctx:alloc(g.bytes)
          S.judge:convert(g.ptr, "u8", copy, "u8", g.bytes)
          keep[name] = copy
        end
      end
      poison(outs)
      ok, err, code, detail = run_once(c, set, outs, ws)
      if ok then ok, err, code, detail = sync() end
      if not ok then return runtime_failure(res, err, code, detail) end
      for name, copy in pairs(keep) do
        local n, first = S.judge:bitdiff(outs[name].ptr, copy, outs[name].bytes)
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

-- The library baseline as a runner: {run = function() enqueue one run;
-- return -1 end, median_us = (its own best timing), info = {...},
-- modes = {mode = {median_us=, ...}}}. Made once per task and worker.
local function cublaslt_baseline(task, ts, opts)
  local b = task.baseline
  local blas = require "klab.blas"
  local set = ts.inputs[1]
  local r = task.reference
  local rA, rB, rC = region(set.bufs[r.A]), region(set.bufs[r.B]), region(ts.outs[r.C])
  local runner = { modes = {} }
  for _, mode in ipairs(b.modes or { "f32" }) do
    local plan, err = blas.gemm_plan(S.ctx, { dtype = b.dtype, compute = mode, M = task.dims.M, N = task.dims.N,
      K = task.dims.K, algos = opts.algos or 8 })
    if not plan then return nil, "cuBLASLt: " .. tostring(err) end
    -- Each of the heuristic's algorithms gets a short run; the best is then
    -- timed interleaved with the candidate like any other sample.
    local runopts = { budget_s = opts.baseline_budget_s or 0.5, min_samples = 10, max_samples = 200 }
    if b.dtype == "e4m3" then
      runopts.scale_a = region(set.bufs[b.scale_a])
      runopts.scale_b = region(set.bufs[b.scale_b])
    end
    local t, terr = plan:time(rA, rB, rC, runopts)
    if not t then return nil, "cuBLASLt timing: " .. tostring(terr) end
    runner.modes[mode] = { median_us = t.best.median_us, algo = t.best_index, algos = #t.algos,
      first_choice_median_us = t.first.median_us, plan = plan }
    if not runner.run then
      -- The first mode listed (strict FP32 for fp32 tasks) is the one
      -- interleaved with the candidate; the others are reported beside it.
      local ro = { algo = t.best_index, scale_a = runopts.scale_a, scale_b = runopts.scale_b }
      runner.run = function()
        local ok, rerr = plan:run(rA, rB, rC, ro)
        if not ok then error(rerr) end
        return -1
      end
      runner.median_us, runner.mode = t.best.median_us, mode
      runner.info = { lib = "cublaslt", algo = t.best_index, first_choice_median_us = t.first.median_us }
    end
  end
  return runner
end

local function baseline(task, ts, opts)
  if ts.baseline then return ts.baseline end
  local b = task.baseline
  if not b then return nil, "no library baseline for this task" end
  local runner, err
  if b.lib == "cublaslt" then
    runner, err = cublaslt_baseline(task, ts, opts)
  else
    local ok, mod = pcall(require, "klab.eval.baselines." .. tostring(b.lib))
    if not ok then return nil, "no baseline library '" .. tostring(b.lib) .. "': " .. tostring(mod) end
    runner, err = mod.prepare(S, task, ts, opts)
  end
  if not runner then return nil, err end
  ts.baseline = runner
  return runner
end

local function timed(task, c, ts, res, opts)
  local t0 = now()
  local base, berr = baseline(task, ts, opts)
  local outs, ws = outputs(task, ts, c.workspace)
  local nsets = #(c.trials or DEFAULT_TRIALS)
  local cur = 1
  local tmaps = {}
  for i = 1, math.min(3, nsets) do
    tmaps[i] = assert(encode_tmaps(c.tensormaps, ts.inputs[i], outs, ws))
  end
  local rot = math.min(3, nsets)
  local function cand_run()
    for _, l in ipairs(c.launches) do
      local ok, err, code = S.ctx:launch(c.funcs[l.kernel], { grid = l.grid, block = l.block, cluster = l.cluster,
        shared = l.shared, args = launch_args(l, ts.inputs[cur], outs, ws, tmaps[cur]) })
      if not ok then error(err) end
    end
    return #c.launches
  end
  local spec = {
    run = cand_run, flops = task.flops, peak_tflops = opts.peak_tflops,
    budget_s = opts.budget_s or 10, min_samples = opts.min_samples or 10, max_samples = opts.max_samples or 500,
    target_ci = opts.target_ci or 0.005,
    -- Rotate input sets (no kernel can key a cache on one set of pointers);
    -- check about one timed run in eight.
    before = function(target, sample)
      if target == 1 then cur = (sample % rot) + 1 end
      return target == 1 and (sample % 8 == 3)
    end,
    check = function(target, sample)
      if target ~= 1 then return true end
      local scratch = { stages = { correctness = { outputs = {} } } }
      local good = compare_outputs(task, ts.inputs[cur], outs, scratch, "timed run " .. sample)
      return good == true
    end,
  }
  if base and base.run then spec.baseline = { flops = task.flops, run = base.run } end
  local r, err, code, partial = timing.measure(S.ctx, spec)
  local st = { seconds = now() - t0 }
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
  st.fallback = r.fallback
  st.candidate = r.candidate
  st.candidate.samples = nil
  st.clock_before_mhz, st.clock_after_mhz = r.clock_before_mhz, r.clock_after_mhz
  if r.candidate.check_failures and r.candidate.check_failures > 0 then
    return verdict(res, "incorrect", string.format("the output of timed run %d was wrong (fresh inputs rotated " ..
      "during timing; a kernel that stops working after its first calls fails here)",
      r.candidate.first_failed_sample or 0))
  end
  if r.baseline then
    st.baseline = r.baseline
    st.baseline.samples = nil
    st.speedup = r.speedup
    st.baseline_info = base.info
    st.baseline_mode = base.mode
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
  return nil
end

-- JSON has one number type: sizes, dimensions and addresses come back as
-- floats. Integral values become integers again (byte offsets must be).
local function integers(v)
  if type(v) == "number" then return math.tointeger(v) or v end
  if type(v) ~= "table" then return v end
  for k, x in pairs(v) do v[k] = integers(x) end
  return v
end

-- JSON cannot carry NaN or infinities (an error that is infinite because
-- the output held NaN, a confidence bound with too few samples): they travel
-- as the strings "nan", "inf" and "-inf".
local function finite(v)
  if type(v) == "number" then
    if v ~= v then return "nan" end
    if v == math.huge then return "inf" end
    if v == -math.huge then return "-inf" end
    return v
  end
  if type(v) ~= "table" then return v end
  for k, x in pairs(v) do v[k] = finite(x) end
  return v
end

-- The job. args = {task=, cubin_path=, launches=, tensormaps=, workspace=,
-- trials=, timing=bool, opts={...}}.
function M.evaluate(args)
  return finite(M._evaluate(integers(args)))
end

-- Loads the module and checks the launches against the kernels and the
-- device. Returns the candidate table, or nil after setting the verdict.
local function load_candidate(args, res)
  local ok, why = ensure_gpu()
  if not ok then return nil, verdict(res, "unknown", "GPU stages skipped: " .. tostring(why)) end
  res.device = { name = S.props.name, arch = S.props.arch, sm_count = S.props.sm_count }
  res.env = S.env
  local task = args.task
  task.buffer_by_name = {}
  for i, b in ipairs(task.buffers) do
    b.index = i
    task.buffer_by_name[b.name] = b
  end
  local f = io.open(args.cubin_path, "rb")
  if not f then return nil, verdict(res, "load_error", "cannot read the compiled cubin") end
  local cubin = f:read("a")
  f:close()
  local t0 = now()
  local mod, lerr, lcode, llog, ldetail = S.ctx:load(cubin)
  if not mod then
    if ldetail and ldetail.sticky then res.unfit = true end
    return nil, verdict(res, "load_error", "the driver refused the module: " .. tostring(lerr))
  end
  local c = { launches = args.launches, tensormaps = args.tensormaps, workspace = args.workspace,
    trials = args.trials, funcs = {}, mod = mod, cubin = cubin }
  res.stages.load = { seconds = now() - t0, kernels = {} }
  for _, l in ipairs(c.launches) do
    if not c.funcs[l.kernel] then
      local fn, ferr = mod:func(l.kernel)
      if not fn then
        mod:free()
        return nil, verdict(res, "plan_error", "the plan launches kernel '" .. l.kernel ..
          "', which the module lacks: " .. tostring(ferr))
      end
      c.funcs[l.kernel] = fn
      local attrs = fn:attributes()
      res.stages.load.kernels[l.kernel] = attrs
      local threads = l.block[1] * (l.block[2] or 1) * (l.block[3] or 1)
      if threads > attrs.max_threads then
        mod:free()
        return nil, verdict(res, "plan_error", string.format(
          "kernel %s launched with %d threads per block, but it can take at most %d (registers: %d)",
          l.kernel, threads, attrs.max_threads, attrs.registers))
      end
    end
    local static = res.stages.load.kernels[l.kernel].static_smem or 0
    if (l.shared or 0) + static > S.props.smem_per_block_optin then
      mod:free()
      return nil, verdict(res, "plan_error", string.format(
        "kernel %s asks for %d bytes of dynamic shared memory; with its %d static bytes that exceeds the device's %d",
        l.kernel, l.shared, static, S.props.smem_per_block_optin))
    end
  end
  return c
end

-- Runs the candidate `runs` times on the first input set, with no profiler
-- and no timing of its own, so that an outside tool (ncu, compute-sanitizer)
-- sees exactly the planned launches. Reports whether the last run was right.
function M.replay(args, runs)
  args = integers(args)
  local res = { stages = {} }
  local c = load_candidate(args, res)
  if not c then return finite(res) end
  local task = args.task
  local ts = task_state(task)
  revalidate(ts)
  local trial = (c.trials or DEFAULT_TRIALS)[1]
  local set, serr = input_set(task, ts, 1, trial)
  if not set then return finite(verdict(res, "runtime_error", "cannot prepare inputs: " .. tostring(serr))) end
  set.trial = trial
  local outs, ws = outputs(task, ts, c.workspace)
  local t0 = now()
  for _ = 1, runs or 1 do
    poison(outs)
    local ok, err, code, detail = run_once(c, set, outs, ws)
    if ok then ok, err, code, detail = sync() end
    if not ok then return finite(runtime_failure(res, err, code, detail)) end
  end
  res.seconds = now() - t0
  res.runs = runs or 1
  res.stages.correctness = { outputs = {} }
  local good, why = compare_outputs(task, set, outs, res, "the last replayed run")
  if good then verdict(res, "passed", "the last replayed run was correct") else verdict(res, "incorrect", why) end
  c.mod:free()
  return finite(res)
end

-- Each stage of the candidate's own code has a limit of its own, so that
-- a kernel that hangs is stopped by the stage it hangs in rather than by
-- the whole job's deadline, and the timeout says which stage. Loading
-- (CUDA start, judge kernels, inputs) has none beyond the job's deadline.
-- Timing's grows with its budget (the baseline is timed in the same stage).
M.STAGE_LIMITS = { correctness = 60, instructions = 120, timing_extra = 60, timing_per_budget = 4 }

local function stage_limit(name, opts)
  local own = (opts.stage_deadlines or {})[name]
  if own ~= nil then return own end
  local L = M.STAGE_LIMITS
  if name == "timing" then return L.timing_extra + L.timing_per_budget * (opts.budget_s or 10) end
  return L[name]
end

local function enter(name, opts)
  serve.stage(name, stage_limit(name, opts) or 0)
end

function M._evaluate(args)
  local res = { stages = {}, worker_pid = sys.getpid() }
  local opts = args.opts or {}
  serve.stage("load", 0)
  local c = load_candidate(args, res)
  if not c then return res end
  local task = args.task
  local mod = c.mod
  local ts = task_state(task)
  enter("correctness", opts)
  local out = correctness(task, c, ts, res)
  -- The instruction stage: its own profiled run, never timed; never raises.
  if out == nil and args.profile ~= false then
    enter("instructions", opts)
    local outs, ws = outputs(task, ts, c.workspace)
    local set = ts.inputs[1]
    local ps = profile.stage(S.ctx, function() return run_once(c, set, outs, ws) end, task, S.props.arch, {
      prepare = function() poison(outs); poison(ws); return true end,
      launches = c.launches, kernels = res.stages.load.kernels, funcs = c.funcs, device = S.props,
      -- The supervisor takes the static census while this runs; the
      -- listing is needed here only to join executed counts to opcodes.
      cubin = (args.opts or {}).sass_executed and c.cubin or nil, sass_executed = (args.opts or {}).sass_executed,
    })
    res.stages.profile = ps
    if ps.sticky then
      res.unfit = true
      out = verdict(res, "runtime_error", "the kernel failed in the profiled run: " .. tostring(ps.reason))
    end
  end
  if out == nil and args.timing ~= false then
    enter("timing", opts)
    out = timed(task, c, ts, res, opts)
  end
  local ps, tm = res.stages.profile, res.stages.timing
  if ps and tm and tm.candidate and tm.candidate.median then
    profile.summarize(ps, { duration_us = tm.candidate.median, source = tm.method })
  end
  if out == nil then
    if ps and ps.verdict then
      verdict(res, ps.verdict, ps.verdict_reason)
    else
      verdict(res, "passed", "correct on every trial")
    end
  end
  -- A module is unloaded after use; the worker keeps the rest.
  if not res.unfit then mod:free() end
  return res
end

return M
