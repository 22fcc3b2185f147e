-- tests/gpu/run_candidate.lua: the evaluation's load and instruction stages
-- (and, with opts.time, its timing stage) on one candidate, in this
-- process, for the GPU checks that compare klab's profile with ncu's and
-- the profile tests. The inputs are the evaluation's first input set, so
-- ncu wrapped around `klab replay` sees the same data.
--
--   local run_candidate = dofile("tests/gpu/run_candidate.lua")
--   run_candidate(task, cand, {arch=, time=, budget_s=, sass_executed=})
--     -> stage, extra {arch=, launches=, timing=} | nil, msg, code
return function(task, cand, opts)
  opts = opts or {}
  local okg, why = require("klab.gpu").available()
  if not okg then return nil, why, "ENODRIVER" end
  local stages = { "load", "instructions" }
  if opts.time then stages[#stages + 1] = "timing" end
  local r, err = require("klab.eval").run_local(task, cand, { arch = opts.arch, stages = stages, timing = opts.time,
    sass_executed = opts.sass_executed, timing_opts = { budget_s = opts.budget_s or 3 }, profile = true })
  if not r then return nil, err, "EINVAL" end
  local st = r.stages.instructions
  if not st then return nil, tostring(r.verdict) .. ": " .. tostring(r.reason), "ESTAGE" end
  local extra = { arch = r.arch, launches = r.stages.plan and r.stages.plan.launches }
  local tm = r.stages.timing
  if tm and tm.candidate then
    extra.timing = { median_us = tm.candidate.median, method = tm.method, n = tm.candidate.n }
  end
  return st, extra
end
