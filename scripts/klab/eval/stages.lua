-- klab.eval.stages: the stages of an evaluation, in order, each with its
-- contract: where it runs, what it does, the verdicts it may give and its
-- time limit. klab.eval runs them (the caller's stages in the calling
-- process, the worker's in a worker process through klab.eval.gpu); no other
-- module runs a stage of its own, and a stage that gives a verdict outside
-- its contract is a bug the runner reports.
--
--   stages.LIST                 {name=, where="caller"|"worker", does=, verdicts={...}, limit=}
--   stages.get(name)            -> the entry, or nil
--   stages.worker()             -> the names of the worker's stages, in order
--   stages.limit(name, opts)    -> seconds (nil: only the job's deadline); opts = {stage_deadlines=, budget_s=}
--   stages.allows(name, verdict)-> true when the stage may give that verdict
--   stages.unknown(name)        -> nil, or why name is not a stage with a limit of its own
--
-- Every worker stage may also give unknown (it could not run: no GPU, no
-- profiling rights) and, through the worker dying or hanging, runtime_error
-- or timeout; those are part of every worker contract.

local M = {}

M.LIST = {
  { name = "build", where = "caller",
    does = "compiles the candidate (NVRTC for CUDA C++, ptxas for PTX) for the exact target with limits, keeps the "
      .. "log, registers, spills and shared memory, takes the PTX census, refuses forbidden constructs; also "
      .. "compiles the task's reference and shipped baseline kernels",
    verdicts = { "compile_error", "unknown" } },
  { name = "plan", where = "caller",
    does = "runs the launch plan in the sandbox and checks it against the task and the kernels the code defines; "
      .. "runs the reference's plans",
    verdicts = { "plan_error", "unknown" } },
  { name = "load", where = "worker",
    does = "loads the cubin, checks every launch against the kernels' real parameters and the device's limits",
    verdicts = { "load_error", "plan_error" } },
  { name = "correctness", where = "worker", limit = 60,
    does = "runs the candidate on fresh seeded inputs from every distribution of the task, outputs poisoned and "
      .. "guarded, inputs checksummed, the first set twice for determinism; compares with the reference",
    verdicts = { "guard_violation", "input_modified", "incorrect", "nondeterministic" } },
  { name = "instructions", where = "worker", limit = 120,
    does = "one profiled run: which target instruction families executed, the FLOPs that executed by path "
      .. "(tensor cores and SIMT pipes) against the task's FLOPs",
    verdicts = { "target_not_executed", "insufficient_work" } },
  { name = "timing", where = "worker",
    does = "times candidate and baseline interleaved, L2 flushed before every sample, only the planned launches "
      .. "(CUPTI activity); every sample on fresh inputs at shifted addresses with module globals restored and "
      .. "outputs poisoned; every timed output checked on sampled units, a few in full; a median below the "
      .. "physical floor is refused",
    verdicts = { "unexpected_launches", "incorrect", "below_floor" } },
  { name = "record", where = "caller",
    does = "the verdict (passed when nothing else was found) and one row in the store with every measurement",
    verdicts = { "passed" } },
  -- Not part of an evaluation: `klab replay` runs the candidate a number of
  -- times after load, with no profiler and no timer of klab's own; the
  -- baseline check judges the task's baseline itself (no candidate).
  { name = "replay", where = "worker", optional = true,
    does = "runs the planned launches N times on the first input set and checks the last output",
    verdicts = { "incorrect", "passed" } },
  { name = "baseline", where = "worker", optional = true,
    does = "runs the task's baseline on the first input set, compares it with the reference and times it alone",
    verdicts = { "incorrect", "passed" } },
}

-- Timing's limit grows with its budget (the baseline is timed in the same
-- stage); the others are fixed.
M.TIMING_LIMIT = { extra = 60, per_budget = 4 }

local BY = {}
for _, s in ipairs(M.LIST) do
  BY[s.name] = s
  local allowed = {}
  for _, v in ipairs(s.verdicts) do allowed[v] = true end
  -- Any worker stage can fail, hang or find nothing to measure; and a
  -- launch whose arguments do not fit the kernel's parameters is refused
  -- at its first launch (klab.gpu checks it there), whichever stage that
  -- is: a plan_error.
  if s.where == "worker" then
    allowed.unknown, allowed.runtime_error, allowed.timeout, allowed.plan_error = true, true, true, true
  end
  s.allowed = allowed
end

function M.get(name) return BY[name] end

function M.worker()
  local out = {}
  for _, s in ipairs(M.LIST) do
    if s.where == "worker" and not s.optional then out[#out + 1] = s.name end
  end
  return out
end

-- The stages that run the candidate's code, and so have limits of their own.
function M.timed()
  return { "correctness", "instructions", "timing" }
end

function M.limit(name, opts)
  opts = opts or {}
  local own = (opts.stage_deadlines or {})[name]
  if own ~= nil then return own end
  if name == "timing" then return M.TIMING_LIMIT.extra + M.TIMING_LIMIT.per_budget * (opts.budget_s or 10) end
  local s = BY[name]
  return s and s.limit
end

function M.allows(name, verdict)
  local s = BY[name]
  return s ~= nil and s.allowed[verdict] == true
end

function M.unknown(name)
  for _, s in ipairs(M.timed()) do if s == name then return nil end end
  return "unknown stage '" .. tostring(name) .. "' (" .. table.concat(M.timed(), ", ") .. ")"
end

return M
