-- The sanitizer stage (klab.eval.stages; only when the evaluation asks for
-- it, `klab eval --sanitize`): compute-sanitizer memcheck, as PTXBench runs
-- it before timing, around a worker of its own that loads the candidate
-- and runs its planned launches twice (klab.eval.sanitizer runs the tool).
-- Errors found stop the evaluation before the GPU stages; a missing tool
-- is said in the stage and the evaluation goes on.

local verdicts = require "klab.eval.verdict"

local M = {}

-- run.job: the worker's job (the plan stage made it); run.env: the
-- environment of the session's workers. False stops the evaluation.
function M.run(run)
  local san = require("klab.eval.sanitizer").run(run.job, run.env)
  run.result.stages.sanitizer = san
  if san.status == "ok" and (san.errors or 0) > 0 then
    verdicts.give(run.result, "runtime_error", { kind = "sanitizer", errors = san.errors,
      first = (san.first or {})[1] })
    return false
  end
  return true
end

return M
