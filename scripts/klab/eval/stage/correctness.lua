-- The correctness stage (klab.eval.stages): fresh inputs per trial (drawn
-- from the evaluation's seed), outputs poisoned, guards, input checksums,
-- the comparison with the reference (every element on the plain trials;
-- on the distributions, units drawn after the run unless the proof is
-- "full"), and the first plain trial's inputs run twice for determinism.
-- Unless the proof is "full", every run is timed like a timed sample and,
-- once every trial passed, the hopeless rule may be decided from those
-- runs (klab.eval.correctness_timing): then the timing stage does not run.

local verdicts = require "klab.eval.verdict"
local device = require "klab.eval.device"
local ct = require "klab.eval.correctness_timing"
local baseline = require "klab.eval.stage.baseline"
local inputs = require "klab.eval.inputs"
local loaded = require "klab.eval.loaded"
local seed_mod = require "klab.eval.seed"
local sys = require "klab.sys"

local S = require("klab.eval.worker_state").S
local M = {}

-- The candidate's run on set (timed when the timer times): nil when it
-- ran, else the verdict it earned (a fault, or klab's own failure).
local function run_on(res, timer, set)
  local ok, err, code, detail, whose = timer:run(set)
  if ok then return nil end
  if whose == "judge" then return device.judge_failed(res, "time a correctness run", err) end
  return device.fault(res, err, code, detail)
end

-- The trial whose inputs run twice: the first plain one (a distribution's
-- trial only when the task has no plain trial). No other set runs twice.
function M.determinism_trial(trials)
  for i, trial in ipairs(trials) do
    if not trial.distribution then return i end
  end
  return 1
end

-- The same inputs again must give the same bits: nil, or the verdict.
local function determinism(run, res, timer, set, all)
  local task = run.job.task
  local keep = {}
  for name, g in pairs(run.outs) do
    if task.buffer_by_name[name].role == "output" then
      local copy = S.ctx:alloc(g.bytes)
      S.judge:convert(g.ptr, "u8", copy, "u8", g.bytes)
      keep[name] = copy
    end
  end
  loaded.fresh(run, all)
  local v = run_on(res, timer, set)
  if v then return v end
  for name, copy in pairs(keep) do
    local n, first = S.judge:bitdiff(run.outs[name].ptr, copy, run.outs[name].bytes)
    copy:free()
    if n and n > 0 then
      return verdicts.give(res, "nondeterministic", { kind = "bits", buffer = name, bytes = n, first = first })
    end
  end
end

function M.run(run)
  local res, job, task, ts = run.res, run.job, run.job.task, run.ts
  -- parts: where the stage's seconds go (inputs and their references when
  -- this evaluation made them, poison, the candidate's runs, guard and
  -- input checks, comparison, the determinism run), for eval_bench.
  local parts = {}
  local st = { trials = {}, outputs = {}, parts = parts }
  res.stages.correctness = st
  local t0 = sys.now()
  local mark = t0
  local function lap(name)
    local t = sys.now()
    parts[name] = (parts[name] or 0) + (t - mark)
    mark = t
  end
  local all = loaded.written(run)
  -- Closed on every way out: the CUPTI session is the process's one.
  local timer <close> = ct.start(run)
  local det, sets = M.determinism_trial(job.trials), {}
  for i, trial in ipairs(job.trials) do
    local label = trial.label or ("trial " .. i)
    local set, serr, made = inputs.input_set(task, ts, trial)
    if not set then return device.judge_failed(res, "prepare inputs", serr) end
    set.trial = trial
    sets[i] = set
    if i == 1 then run.first_set = set end
    lap("inputs")
    if made then
      parts.inputs = parts.inputs - made.reference
      parts.reference = (parts.reference or 0) + made.reference
    end
    loaded.fresh(run, all)
    lap("poison")
    local fault = run_on(res, timer, set)
    if fault then return fault end
    lap("run")
    for _, g in ipairs(all) do
      local d = device.guard_check(g)
      if d then
        d.where = label
        return verdicts.give(res, "guard_violation", d)
      end
    end
    for name, g in pairs(set.bufs) do
      local d = device.guard_check(g)
      if d then
        d.where = label
        return verdicts.give(res, "guard_violation", d)
      end
      if S.judge:checksum(g.ptr, g.bytes) ~= set.sums[name] then
        inputs.drop_set(ts, set) -- made again for the next candidate
        return verdicts.give(res, "input_modified", { kind = "input", buffer = name, where = label })
      end
    end
    lap("checks")
    local good, why
    if trial.sampled then
      -- A range fault (overflow, a sign, an outlier) touches every output:
      -- the units drawn after the run find it (docs/timing.md).
      local cb, cberr = inputs.check_buffers(task, ts, job.reference.sample)
      if not cb then return device.judge_failed(res, "allocate check buffers", cberr) end
      local draw = seed_mod.rng(seed_mod.derive(assert(seed_mod.parse(job.seed)), "sampled trial", i))
      good, why = inputs.compare_sampled(run, set, cb, draw, st, label)
    else
      good, why = inputs.compare_outputs(task, set, run.outs, st, label)
    end
    lap("compare")
    if good == nil then return device.judge_failed(res, "compare the outputs with the reference", why) end
    st.trials[#st.trials + 1] = { label = label, passed = good, sampled = trial.sampled and job.reference.sample or nil }
    if not good then return verdicts.give(res, "incorrect", why) end
    -- A checksum of each output, so that two evaluations with one seed tell
    -- whether their outputs are bit-identical (klab mutate --score: an
    -- equivalent mutant).
    local sums = {}
    for name, g in pairs(run.outs) do
      if task.buffer_by_name[name].role == "output" then
        local sum, serr = S.judge:checksum(g.ptr, g.bytes)
        if not sum then return device.fault(res, serr) end
        sums[name] = ("%016x"):format(sum)
      end
    end
    st.trials[#st.trials].outputs = sums
    if i == det then
      local d = determinism(run, res, timer, set, all)
      if d then return d end
      st.determinism = { trial = label }
      lap("determinism")
    end
  end
  for _, g in ipairs(all) do device.reguard(g) end
  st.timed = ct.finish(run, timer, sets, function() return baseline.runner(run, job.opts or {}) end)
  lap("decide")
  st.seconds = sys.now() - t0
end

return M
