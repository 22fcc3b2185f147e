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
local timing = require "klab.timing"

local S = require("klab.eval.worker_state").S
local M = {}

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
  local lib = b.kind == "shipped" and "shipped" or b.lib
  local ok, mod = pcall(require, "klab.eval.baselines." .. tostring(lib))
  if not ok then return nil, "no baseline library '" .. tostring(lib) .. "': " .. tostring(mod) end
  local W = { ctx = S.ctx, judge = S.judge, props = S.props, region = device.region, launch_plan = device.launch_plan,
    encode_tmaps = device.encode_tmaps, task_module = device.task_module }
  local runner, err = mod.prepare(W, task, { inputs = set.bufs, outputs = outs }, opts)
  if not runner then return nil, err end
  -- Does the library compute what the task asks? Once, on the first set.
  device.poison(outs)
  local rok, rerr = pcall(runner.run, set.bufs)
  if rok then rok, rerr = S.ctx:sync() end
  if not rok then return nil, "the baseline failed: " .. tostring(rerr) end
  local check = { outputs = {} }
  local good, why = inputs.compare_outputs(task, set, outs, check, "the baseline's run on " .. (set.trial.label or "trial 1"))
  if good == nil then return nil, why end
  check.passed = good
  check.detail = not good and why or nil
  check.reason = not good and verdicts.reason("incorrect", why) or nil
  runner.check = check
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
  if not base.check.passed then return verdicts.give(res, "incorrect", base.check.detail) end
  return verdicts.give(res, "passed", { kind = "baseline" })
end


return M
