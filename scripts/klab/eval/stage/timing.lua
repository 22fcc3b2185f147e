-- The timing stage (klab.eval.stages): candidate and baseline timed
-- interleaved, L2 flushed and persisting lines reset before every sample,
-- only the planned launches (CUPTI activity), every sample on fresh inputs
-- at shifted addresses with module globals restored and outputs poisoned,
-- every timed output checked (sampled units, a few runs in full), and a
-- median below the physical floor refused.

local verdicts = require "klab.eval.verdict"
local device = require "klab.eval.device"
local inputs = require "klab.eval.inputs"
local loaded = require "klab.eval.loaded"
local baseline = require "klab.eval.stage.baseline"
local peaks = require "klab.eval.peaks"
local seed_mod = require "klab.eval.seed"
local timing = require "klab.timing"
local sys = require "klab.sys"

local S = require("klab.eval.worker_state").S
local M = {}

-- The default speedup below which a candidate is timed only until its
-- interval says so (0 turns the rule off).
M.HOPELESS = 0.5

-- The stopping rules, by name with their parameters (docs/timing.md,
-- "Stopping rules"): the evaluation's own list (timing_opts.stop), else
-- convergence and, for precision where the verdict needs it, the hopeless
-- rule.
function M.stop_rules(opts, min_samples)
  if opts.stop then return opts.stop end
  local rules = { { "converged", target_ci = opts.target_ci or 0.005, min_samples = min_samples } }
  local hopeless = opts.hopeless or M.HOPELESS
  if hopeless > 0 then rules[2] = { "hopeless", threshold = hopeless } end
  return rules
end


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
        local g, err = device.galloc(b.name .. " (timing slot " .. k .. ")", b.bytes + SHIFT * (SHIFTS - 1))
        if not g then
          for _, list in pairs(slots) do device.free_all(list) end
          return nil, err
        end
        slots[b.name][k] = g
      end
    end
  end
  ts.slots = slots
  return slots
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
-- units drawn after the run and recomputed from that sample's own inputs
-- (inputs.compare_sampled), or, for a sample run on a whole prepared set
-- (full), every element against that set's reference. nil, reason when an
-- output is wrong; error() when the check itself cannot run.
local function check_sample(run, io, cb, full, draw, label)
  local good, why
  if full then
    good, why = inputs.compare_outputs(run.job.task, full, run.outs, nil, label)
  else
    good, why = inputs.compare_sampled(run, { bufs = io }, cb, draw, nil, label)
  end
  if good == nil then error(why) end
  return good, why
end

-- The baseline's side of the timing record (st): its times, the speedup,
-- the other modes' times; or why the baseline did not run (berr).
local function record_baseline(st, r, base, berr)
  if r.baseline then
    st.baseline = r.baseline
    st.baseline.samples = nil
    st.speedup = r.speedup
    st.speedup_ci = r.speedup_ci
    st.speedup_upper = r.speedup_upper
    st.hopeless = r.stop and r.stop.rule == "hopeless" and r.stop.params.threshold or nil
    st.baseline_info = base.info
    st.baseline_mode = base.mode
    st.baseline_check = base.check
    st.baseline_choice = base.choice
    -- Other modes (TF32 for fp32 tasks), from their own timing.
    st.baseline_modes = {}
    for mode, m in pairs(base.modes or {}) do
      st.baseline_modes[mode] = { median_us = m.median_us, algo = m.algo, error = m.error,
        speedup = m.median_us and m.median_us / r.candidate.median }
    end
    if base.modes and base.modes.tf32 and base.modes.tf32.median_us then
      st.baseline_tf32_median = base.modes.tf32.median_us
      st.speedup_tf32 = base.modes.tf32.median_us / r.candidate.median
    end
  else
    st.baseline_error = berr
  end
end

-- The physical floor (klab.eval.peaks), recorded in st: a median below it
-- is not a speedup (below_floor).
local function check_floor(res, st, task, r)
  local ps = res.stages.instructions
  local path = ps and ps.status == "ok" and ps.flops and ps.flops.frac and
    ((ps.flops.frac.tensor or 0) >= 0.5 and "tensor" or "simt") or nil
  local floor = peaks.floor(task, S.props, path)
  local tflops, bw = floor.tflops, floor.dram_bytes_per_s
  st.floor = floor
  -- A margin for clocks above the datasheet's: 10%.
  if floor.us > 0 and r.candidate.median < 0.9 * floor.us then
    return verdicts.give(res, "below_floor", { kind = "floor", median_us = r.candidate.median, floor_us = floor.us,
      path = floor.path, flops = task.flops, tflops = tflops, compute_us = floor.compute_us, bytes = task.bytes,
      gbs = (bw or 0) / 1e9, memory_us = floor.memory_us })
  end
end

-- The record when the correctness runs decided the hopeless rule (d:
-- stages.correctness.timed): no measurement; the runs' statistics, the
-- kept baseline's median, the measured ratio and its bound, as a timing
-- that the hopeless rule ended reads; the floor still applies.
local function from_correctness(res, task, d)
  local c = timing.stats(d.samples)
  c.tflops = (task.flops or 0) > 0 and c.median > 0 and task.flops / (c.median * 1e-6) / 1e12 or nil
  local st = { measured = false, decided_by = d.decided, stop_reason = d.decided, stop = d.stop,
    hopeless = d.stop and d.stop.params and d.stop.params.threshold, method = d.method, candidate = c,
    speedup = d.speedup, speedup_upper = d.speedup_upper, speedup_ci = d.speedup_ci, flush_bytes = d.flush_bytes,
    baseline = { median = d.baseline.median_us, n = d.baseline.n, kept_s = d.baseline.age_s },
    baseline_info = d.baseline_info, baseline_mode = d.baseline_mode, baseline_choice = d.baseline_choice,
    clock_after_mhz = d.clock_mhz, seconds = 0 }
  res.stages.timing = st
  return check_floor(res, st, task, { candidate = c })
end

function M.run(run)
  local res, job, task, ts = run.res, run.job, run.job.task, run.ts
  local decided = res.stages.correctness and res.stages.correctness.timed
  if decided and decided.decided then return from_correctness(res, task, decided) end
  local opts = job.opts or {}
  local t0 = sys.now()
  local base, berr = baseline.runner(run, opts)
  -- The prepared input sets (correctness made them): derived inputs rotate
  -- among them.
  local sets, held = {}, {}
  for _, trial in ipairs(job.trials) do
    if #sets == 3 then break end
    -- A sampled trial's set has no full reference to check against.
    if not trial.sampled then
      local set, serr = inputs.input_set(task, ts, trial, held)
      if not set then return device.judge_failed(res, "prepare inputs", serr) end
      sets[#sets + 1] = set
      held[set] = true
    end
  end
  local slots, slerr = timing_slots(task, ts)
  if not slots then return device.judge_failed(res, "allocate timing inputs", slerr) end
  -- As many units as the sampled reference plan was made for (prepare).
  local n = job.reference.sample
  local cb, cberr = inputs.check_buffers(task, ts, n)
  if not cb then return device.judge_failed(res, "allocate check buffers", cberr) end
  local dependent = derived_inputs(job)
  -- Shifts, checked positions and the fully checked runs: drawn from the
  -- evaluation's seed, like every timed input.
  local seed = assert(seed_mod.parse(job.seed))
  local draw = seed_mod.rng(seed_mod.derive(seed, "timing"))
  local all = loaded.written(run)
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
      local tmaps, terr = device.encode_tmaps(run.c.tensormaps, c.bind)
      if not tmaps then error(terr) end
      c.tmaps = tmaps
      loaded.fresh(run, all)
    end
    cur[target] = c
  end
  next_sample(1)
  if base then next_sample(2) end

  -- Whose work ran last, for a failure met inside the measurement: the
  -- loop runs one target, waits for the whole context, then calls check,
  -- so a fault seen by the run's own wait is that target's, and anything
  -- that fails in klab's hooks (inputs, flush, checks) after a clean wait
  -- is klab's own. "klab", "candidate" or "baseline"; `step` says which of
  -- klab's steps was under way.
  local last, step = "klab", "prepare the timed inputs"
  local function cand_run()
    local c = cur[1]
    last = "candidate"
    local ok, err = device.launch_plan(run.c.funcs, run.c, c.bind, c.tmaps)
    if not ok then error(err, 0) end
    return #run.c.launches
  end
  local spec = {
    run = cand_run, flops = task.flops,
    peak_tflops = peaks.tflops(S.props.arch, task.precision),
    budget_s = opts.budget_s or 10, max_samples = opts.max_samples or 500,
    stop = M.stop_rules(opts, min_samples),
    -- Only to measure what the reset of persisting L2 lines does (tests/gpu/check.lua).
    keep_persisting_l2 = opts.keep_persisting_l2,
    -- After each flush's memset, a clean buffer read through L2 evicts the
    -- lines an L2::evict_last hint kept (docs/timing.md); l2_read = false
    -- only to measure what that read does (tests/gpu/l2_check.lua).
    judge = opts.l2_read ~= false and S.judge or nil,
    before = function(target, sample)
      last, step = "klab", "prepare the timed inputs"
      next_sample(target, sample)
      return target == 1
    end,
    check = function(target, sample)
      if target ~= 1 then return true end
      last, step = "klab", "check a timed output"
      local c0 = sys.now()
      local full = cur[1].full
      local label = "timed run " .. sample .. (full and " (checked in full)" or "")
      local ok, why = check_sample(run, cur[1].io, cb, full, draw, label)
      checks.seconds = checks.seconds + (sys.now() - c0)
      if full then checks.full = checks.full + 1 else checks.sampled = checks.sampled + 1 end
      if not ok and not checks.failure then checks.failure = why end
      return ok == true
    end,
  }
  if base and base.run then
    spec.baseline = { flops = task.flops, run = function()
      last = "baseline"
      return base.run(cur[2].io)
    end }
  end
  local mok, r, err, code, partial = pcall(timing.measure, S.ctx, spec)
  local st = { measured = true, seconds = sys.now() - t0, checks = checks }
  res.stages.timing = st
  if not mok then
    -- A raise while the candidate's launches ran, or met by the wait that
    -- follows them, is the candidate's; one in klab's own steps after that
    -- wait came back clean, or in the baseline's run, is klab's.
    if last == "candidate" then return device.fault(res, r, nil, { sticky = S.ctx:sticky() }) end
    return device.judge_failed(res, last == "baseline" and "the baseline's timed run" or step, r, r)
  end
  if not r then
    if code == "EREJECT" and partial and partial.unexpected then
      st.result = partial
      return verdicts.give(res, "unexpected_launches", { kind = "launches", message = tostring(partial.unexpected.why) })
    end
    if last == "candidate" and S.ctx:sticky() then return device.fault(res, err, code, { sticky = true }) end
    return device.judge_failed(res, last == "baseline" and "the baseline's timed run" or "the timing loop", err)
  end
  -- How sampling ended, and the rule that ended it with its parameters.
  st.method, st.stop_reason, st.stop = r.method, r.stop_reason, r.stop
  -- The L2 flush, and what kept persisting lines from outliving it.
  st.flush_bytes, st.l2 = r.flush_bytes, r.l2
  st.fallback = r.fallback
  st.candidate = r.candidate
  st.candidate.samples = nil
  st.clock_before_mhz, st.clock_after_mhz = r.clock_before_mhz, r.clock_after_mhz
  if r.candidate.check_failures and r.candidate.check_failures > 0 then
    return verdicts.give(res, "incorrect", { kind = "timed", check = checks.failure,
      sample = r.candidate.first_failed_sample })
  end
  record_baseline(st, r, base, berr)
  return check_floor(res, st, task, r)
end

-- The timing stage's measurements (klab.eval.stages declares them), when
-- the candidate was timed.
function M.measurements(st, put)
  local c = st.candidate
  if not c then return end
  put("median_us", c.median); put("mean_us", c.mean); put("min_us", c.min)
  put("p10_us", c.p10); put("p90_us", c.p90)
  put("ci_low_us", c.ci_low); put("ci_high_us", c.ci_high)
  put("samples", c.n); put("tflops", c.tflops)
  if st.baseline then
    put("baseline_median_us", st.baseline.median)
    put("speedup", st.speedup)
  end
  put("speedup_tf32", st.speedup_tf32)
  -- The physical floor, for the speed-of-light fraction (floor / median).
  if st.floor and (st.floor.us or 0) > 0 then put("floor_us", st.floor.us) end
end

return M
