-- The replay stage (klab.eval.stages; `klab replay` and the sanitizer's
-- job, not part of an evaluation): the planned launches N times on the first
-- input set, with no profiler and no timer of klab's own, so that a tool
-- wrapped around the worker sees exactly them; the last run is checked.

local verdicts = require "klab.eval.verdict"
local device = require "klab.eval.device"
local inputs = require "klab.eval.inputs"
local loaded = require "klab.eval.loaded"
local sys = require "klab.sys"

local S = require("klab.eval.worker_state").S
local M = {}


-- Runs the candidate `runs` times on the first input set, with no profiler
-- and no timing of its own, so that an outside tool (ncu, compute-sanitizer)
-- sees exactly the planned launches; checks the last run.
function M.run(run)
  local res, job = run.res, run.job
  local set, serr = inputs.first_set(run)
  if not set then return device.judge_failed(res, "prepare inputs", serr) end
  local all = loaded.written(run)
  local t0 = sys.now()
  local runs = (job.opts or {}).runs or 1
  for _ = 1, runs do
    loaded.fresh(run, all)
    local ok, err, code, detail = loaded.run(run, set)
    if ok then ok, err, code, detail = S.ctx:sync() end
    if not ok then return device.fault(res, err, code, detail) end
  end
  res.seconds, res.runs = sys.now() - t0, runs
  local st = { outputs = {} }
  res.stages.replay = st
  local good, why = inputs.compare_outputs(job.task, set, run.outs, st, "the last replayed run")
  if good == nil then return device.judge_failed(res, "compare the outputs with the reference", why) end
  if good then return verdicts.give(res, "passed", { kind = "replay" }) end
  return verdicts.give(res, "incorrect", why)
end


return M
