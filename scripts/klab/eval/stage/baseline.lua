-- The baseline stage (klab.eval.stages; the baseline check, not part of an
-- evaluation), and the task's baseline as a runner the timing stage times
-- beside the candidate.
--
--   baseline.runner(run, opts) -> {run = function(inputs) enqueue one call end, info=, modes=, check=}
--       made once per task and worker, and checked once against the
--       reference on the first input set | nil, why

local verdicts = require "klab.eval.verdict"
local device = require "klab.eval.device"
local inputs = require "klab.eval.inputs"
local load = require "klab.eval.stage.load"
local peaks = require "klab.eval.peaks"
local timing = require "klab.timing"

local S = require("klab.eval.worker_state").S
local M = {}

-- One library's runner for the task (view: the task, or a view of it
-- naming another baseline), checked against the reference on the first
-- input set: the runner with .check, or nil, why.
local function made(lib, view, set, outs, opts, label)
  local mod, why = require("klab.eval.baselines").get(lib)
  if not mod then return nil, why end
  local W = { ctx = S.ctx, judge = S.judge, props = S.props, region = device.region, launch_plan = device.launch_plan,
    encode_tmaps = device.encode_tmaps, task_module = device.task_module }
  local runner, err = mod.prepare(W, view, { inputs = set.bufs, outputs = outs }, opts)
  if not runner then return nil, err end
  -- Does it compute what the task asks? Once, on the first set.
  device.poison(outs)
  local rok, rerr = pcall(runner.run, set.bufs)
  if rok then rok, rerr = S.ctx:sync() end
  if not rok then return nil, "the baseline failed: " .. tostring(rerr) end
  local check = { outputs = {} }
  local good, why = inputs.compare_outputs(view, set, outs, check,
    (label or "the baseline") .. "'s run on " .. (set.trial.label or "trial 1"))
  if good == nil then return nil, why end
  check.passed = good
  check.detail = not good and why or nil
  check.reason = not good and verdicts.reason("incorrect", why) or nil
  runner.check = check
  return runner
end

-- Within this margin the library's baseline is kept, so that timing noise
-- does not flip the choice from one worker to the next.
M.SHIPPED_MARGIN = 0.05

-- The faster of the library's baseline and the kernel the task ships
-- beside it (baseline.shipped), each timed alone once: the chosen runner,
-- with .choice = {chosen = "library" | "shipped", library = {median_us=,
-- info=}, shipped = {median_us=, info=} | {error=}, margin=}. A shipped
-- kernel that does not build, run or match the reference is recorded and
-- not used.
local function faster(task, lib, set, outs, opts)
  local sh = task.baseline.shipped
  local choice = { chosen = "library", margin = M.SHIPPED_MARGIN, library = { info = lib.info } }
  lib.choice = choice
  local alt, aerr
  if sh.kernel then
    local view = setmetatable({ baseline = { kind = "shipped", kernel = sh.kernel, source = sh.source, name = sh.name } },
      { __index = task })
    alt, aerr = made("shipped", view, set, outs, opts, "the shipped baseline kernel")
    if alt and not alt.check.passed then
      choice.shipped = { error = alt.check.reason, detail = alt.check.detail }
      return lib
    end
  else
    aerr = sh.error or "the shipped baseline kernel was not prepared"
  end
  if not alt then
    choice.shipped = { error = tostring(aerr) }
    return lib
  end
  choice.shipped = { info = alt.info }
  local budget = opts.baseline_budget_s or 0.3
  for _, side in ipairs { { lib, choice.library }, { alt, choice.shipped } } do
    local r, terr = timing.measure(S.ctx, { run = function() return side[1].run(set.bufs) end, budget_s = budget,
      min_samples = 10, max_samples = 200 })
    side[2].median_us = r and r.candidate.median
    side[2].error = not r and tostring(terr) or nil
  end
  local lm, am = choice.library.median_us, choice.shipped.median_us
  if not (am and (not lm or am < (1 - M.SHIPPED_MARGIN) * lm)) then return lib end
  choice.chosen = "shipped"
  alt.choice, alt.modes = choice, lib.modes
  return alt
end

-- The task's baseline as a runner, made once per task and worker, and
-- checked once against the reference on the first input set: {run =
-- function() enqueue one call end, info = {...}, modes = {...}, check = {...}}.
function M.runner(run, opts)
  local job, ts, task = run.job, run.ts, run.job.task
  if ts.baseline then return ts.baseline end
  local b = task.baseline
  if b.error then return nil, b.error end
  local set, serr = inputs.first_set(run)
  if not set then return nil, serr end
  local outs, oerr = inputs.outputs(task, ts, "baseline")
  if not outs then return nil, oerr end
  local runner, err = made(require("klab.eval.baselines").of(task), task, set, outs, opts)
  if not runner then return nil, err end
  if b.shipped and runner.check.passed then runner = faster(task, runner, set, outs, opts) end
  ts.baseline = runner
  return runner
end


-- The task's baseline alone: made, checked against the reference on the
-- first input set, and timed by itself when the job's budget_s > 0.
function M.run(run)
  local res, job = run.res, run.job
  if not load.attach(run) then return end
  local opts = job.opts or {}
  local st = {}
  res.stages.baseline = st
  local base, err = M.runner(run, opts)
  if not base then return verdicts.give(res, "unknown", { kind = "baseline", message = tostring(err) }) end
  st.info, st.check, st.mode, st.choice = base.info, base.check, base.mode, base.choice
  if (opts.budget_s or 0) > 0 then
    -- One measurement per method asked for ("auto": CUPTI when possible;
    -- "events": an event pair around each call, as PyTorch is timed); the
    -- first is st.timing.
    st.timings = {}
    -- On this job's inputs: a runner kept from an earlier job holds that
    -- job's buffers, which are gone.
    local set = assert(inputs.first_set(run))
    for _, method in ipairs(opts.methods or { opts.method or "auto" }) do
      local r, terr = timing.measure(S.ctx, { run = function() return base.run(set.bufs) end, flops = job.task.flops,
        budget_s = opts.budget_s,
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
  -- Its fraction of the physical floor (1 = at the speed of light): a
  -- baseline far from it makes any speedup over it cheap. An fp32 task's
  -- baseline is timed in strict FP32 (a TF32 mode only beside it): its
  -- FLOPs are bounded by the SIMT peak, not by TF32's.
  st.floor = peaks.floor(job.task, S.props, job.task.precision == "f32" and "simt" or nil)
  if st.timing and st.timing.median and st.timing.median > 0 and st.floor.us > 0 then
    st.floor_fraction = st.floor.us / st.timing.median
  end
  if not base.check.passed then return verdicts.give(res, "incorrect", base.check.detail) end
  -- A shipped kernel beside the library's that is broken is the task's mistake.
  local sh = base.choice and base.choice.shipped
  if sh and sh.error then
    if sh.detail then return verdicts.give(res, "incorrect", sh.detail) end
    return verdicts.give(res, "unknown", { kind = "baseline", message = "the task's shipped baseline kernel: " .. sh.error })
  end
  return verdicts.give(res, "passed", { kind = "baseline" })
end


return M
