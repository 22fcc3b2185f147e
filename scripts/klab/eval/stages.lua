-- klab.eval.stages: the stage registry. One row per stage of an evaluation,
-- in order: where it runs, its body, its limit, whether it needs the device
-- to itself, the measurements it records, what it does (the line --help and
-- docs/verdicts.md print), and the verdicts it may give. klab.eval runs the
-- caller's stages (build, plan, record) and klab.eval.gpu the worker's,
-- each calling its row's body; a stage that gives a verdict its row does
-- not list is a bug the runner reports. A new stage is one file
-- (eval/stage/NAME.lua, with run(run)) and one row.
--
--   stages.LIST                 the rows: {name=, where="caller"|"worker", body=, limit=, exclusive=,
--                               measures={...}, does=, verdicts={...}, optional=}
--   stages.get(name)            -> the row, or nil
--   stages.body(name)           -> the stage's module (its run(run)), or nil
--   stages.worker()             -> the names of the worker's stages of an evaluation, in order
--   stages.timed()              -> the stages that run the candidate's code (their own limits)
--   stages.limit(name, opts)    -> seconds (nil: only the job's deadline); opts = {stage_deadlines=, budget_s=}
--   stages.allows(name, verdict)-> true when the stage may give that verdict
--   stages.unknown(name)        -> nil, or why name is not a stage with a limit of its own
--   stages.text()               -> the stages as --help lists them
--
-- Every worker stage may also give unknown (it could not run: no GPU, no
-- profiling rights), runtime_error or timeout (the worker dying or
-- hanging), and plan_error (a launch refused for its arguments at its first
-- launch, whichever stage that is): those are part of every worker row.

local M = {}

M.LIST = {
  { name = "build", where = "caller", body = "klab.eval.prepare",
    does = "compiles the candidate (NVRTC for CUDA C++, ptxas for PTX and for Triton's) for the exact target with limits, keeps the "
      .. "log, registers, spills and shared memory, takes the PTX census, refuses forbidden constructs; also "
      .. "compiles the task's reference and shipped baseline kernels",
    measures = { "registers", "ptx_*", "sass_static_*" },
    -- plan_error: a Triton candidate's plan is read first (its launch is compiled in).
    verdicts = { "compile_error", "plan_error", "unknown" } },
  { name = "plan", where = "caller", body = "klab.eval.prepare",
    does = "runs the launch plan in the sandbox and checks it against the task and the kernels the code defines; "
      .. "runs the reference's plans",
    verdicts = { "plan_error", "unknown" } },
  { name = "load", where = "worker", body = "klab.eval.stage.load",
    does = "loads the cubin, checks every launch against the kernels' real parameters and the device's limits",
    measures = { "device_memory_bytes" },
    verdicts = { "load_error", "plan_error" } },
  { name = "correctness", where = "worker", body = "klab.eval.stage.correctness", limit = 60,
    does = "runs the candidate on fresh inputs from every distribution of the task (drawn from the evaluation's "
      .. "seed), outputs poisoned and guarded, inputs checksummed, the first set twice for determinism; compares "
      .. "with the reference",
    verdicts = { "guard_violation", "input_modified", "incorrect", "nondeterministic" } },
  { name = "instructions", where = "worker", body = "klab.eval.stage.instructions", limit = 120, exclusive = true,
    does = "one profiled run: which target instruction families executed, the FLOPs that executed by path and "
      .. "operand type (tensor cores and SIMT pipes) against the task's FLOPs",
    measures = { "flops_*", "inst_*", "tensor_flop_frac", "verified_instructions", "sm_pct", "mem_pct", "dram_pct" },
    verdicts = { "target_not_executed", "insufficient_work" } },
  { name = "timing", where = "worker", body = "klab.eval.stage.timing", exclusive = true,
    does = "times candidate and baseline interleaved, L2 flushed and persisting lines reset before every sample, "
      .. "only the planned launches (CUPTI activity); every sample on fresh inputs at shifted addresses with module "
      .. "globals restored and outputs poisoned; every timed output checked on sampled units, a few in full; a "
      .. "median below the physical floor is refused",
    measures = { "median_us", "mean_us", "min_us", "p10_us", "p90_us", "ci_low_us", "ci_high_us", "samples", "tflops",
      "baseline_median_us", "speedup", "speedup_tf32" },
    verdicts = { "unexpected_launches", "incorrect", "below_floor" } },
  { name = "record", where = "caller", body = "klab.eval",
    does = "the verdict (passed when nothing else was found) and one row in the store with every measurement",
    verdicts = { "passed" } },
  -- Not part of an evaluation: `klab replay` (and the sanitizer's job) runs
  -- the candidate a number of times after load, with no profiler and no
  -- timer of klab's own; the baseline check judges the task's baseline
  -- itself (no candidate).
  { name = "replay", where = "worker", body = "klab.eval.stage.replay", optional = true,
    does = "runs the planned launches N times on the first input set and checks the last output",
    verdicts = { "incorrect", "passed" } },
  { name = "baseline", where = "worker", body = "klab.eval.stage.baseline", optional = true, exclusive = true,
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
  if s.where == "worker" then
    allowed.unknown, allowed.runtime_error, allowed.timeout, allowed.plan_error = true, true, true, true
  end
  s.allowed = allowed
end

function M.get(name) return BY[name] end

function M.body(name)
  local s = BY[name]
  return s and require(s.body)
end

function M.worker()
  local out = {}
  for _, s in ipairs(M.LIST) do
    if s.where == "worker" and not s.optional then out[#out + 1] = s.name end
  end
  return out
end

-- The stages that run the candidate's code, and so have limits of their own.
function M.timed()
  local out = {}
  for _, s in ipairs(M.LIST) do
    if s.limit or s.name == "timing" then out[#out + 1] = s.name end
  end
  return out
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

-- A timing stage's speedup as text: "1.234x", or "< 0.5x" for one timed
-- only until it was decided to lie below the threshold (docs/timing.md);
-- nil when there is none.
function M.speedup_text(timing)
  if not timing or not timing.speedup then return nil end
  if timing.hopeless then return ("< %gx"):format(timing.hopeless) end
  return ("%.3fx"):format(timing.speedup)
end

-- The stages, as --help and docs/verdicts.md show them: one line each,
-- with its limit and the verdicts it gives.
function M.text()
  local out = {}
  for _, s in ipairs(M.LIST) do
    if not s.optional then
      local limit = s.name == "timing" and (" (limit %d s + %d x the budget)"):format(M.TIMING_LIMIT.extra,
        M.TIMING_LIMIT.per_budget) or (s.limit and (" (limit %d s)"):format(s.limit) or "")
      local text = ("%s%s; gives %s"):format(s.does, limit, table.concat(s.verdicts, ", "))
      -- Wrapped at 78 columns, under the stage's text.
      local line, first = "", true
      for word in text:gmatch("%S+") do
        if #line > 0 and 15 + #line + 1 + #word > 78 then
          out[#out + 1] = (first and ("  %-13s"):format(s.name) or (" "):rep(15)) .. line
          line, first = word, false
        else
          line = #line > 0 and (line .. " " .. word) or word
        end
      end
      out[#out + 1] = (first and ("  %-13s"):format(s.name) or (" "):rep(15)) .. line
    end
  end
  return table.concat(out, "\n")
end

return M
