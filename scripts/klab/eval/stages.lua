-- klab.eval.stages: the stage registry. One row per stage of an evaluation,
-- in order: where it runs, its code (a module with run(run), loaded and
-- called only through this registry), the stages it needs before it, its
-- limit, whether it needs the device to itself, the measurements it
-- records (each with its unit and what it means), what it does (the line
-- --help and docs/verdicts.md print), and the verdicts it may give.
-- klab.eval runs the caller's stages (build, plan, the sanitizer when
-- asked, record) and klab.eval.gpu the worker's, each through stages.run; a
-- stage that gives a verdict its row does not list is a bug the runner
-- reports. A new stage is one file (eval/stage/NAME.lua, with run(run),
-- and measurements(st, put) when it records any) and one row.
--
--   stages.LIST                 the rows: {name=, where="caller"|"worker", code=, needs={...}, limit=, exclusive=, exclusive_if=,
--                               measures={{name=, unit=, means=}, ...}, does=, verdicts={...}, optional=, asked=}
--   stages.get(name)            -> the row, or nil
--   stages.code(name)           -> the stage's module (its run(run)); raises for a name that is no stage
--   stages.run(name, where, run)-> what the stage's run(run) returns; raises for a name that is no stage of `where`
--   stages.run_caller(run)      -> true when the worker's stages should run: build and plan, in order
--   stages.check_order(names)   raises unless each stage comes after the stages of its side it needs
--   stages.check(name, result, before) raises when the stage gave a verdict its row does not list
--   stages.worker()             -> the names of the worker's stages of an evaluation, in order
--   stages.timed()              -> the stages that run the candidate's code (their own limits)
--   stages.limit(name, opts)    -> seconds (nil: only the job's deadline); opts = {stage_deadlines=, budget_s=}
--   stages.allows(name, verdict)-> true when the stage may give that verdict
--   stages.unknown(name)        -> nil, or why name is not a stage with a limit of its own
--   stages.measurement(name)    -> the declaration of a measurement name {name=, unit=, means=, stage=}, or nil
--   stages.declared(name)       -> name, when a stage declares it (a reader's names); raises when none does
--   stages.measurements()       -> every declaration, in the rows' order
--   stages.text()               -> the stages as --help lists them
--   stages.markdown()           -> the measurements as a Markdown table (docs/store.md holds it)
--
-- A measurement named NAME_* is a family: every name that begins with
-- NAME_ (ptx_wgmma, inst_tma, ...), one per instruction family or path.
--
-- Every worker stage may also give unknown (it could not run: no GPU, no
-- profiling rights), runtime_error or timeout (the worker dying or
-- hanging), and plan_error (a launch refused for its arguments at its first
-- launch, whichever stage that is): those are part of every worker row.

local M = {}

local function us(name, means) return { name = name, unit = "us", means = means } end
local function pct(name, means) return { name = name, unit = "%", means = means } end

M.LIST = {
  { name = "build", where = "caller", code = "klab.eval.stage.build", needs = {},
    does = "compiles the candidate (NVRTC for CUDA C++, ptxas for PTX and for Triton's) for the exact target with limits, keeps the "
      .. "log, registers, spills and shared memory, takes the PTX census, refuses forbidden constructs; also "
      .. "compiles the task's reference and shipped baseline kernels",
    measures = {
      { name = "registers", unit = "count", means = "registers per thread of the candidate's first kernel" },
      { name = "ptx_*", unit = "count", means = "the PTX census: instructions of each family in the candidate's "
        .. "PTX (present in source)" },
      { name = "sass_static_*", unit = "count", means = "the static SASS census: instructions of each target family "
        .. "in the machine code (present in machine code)" },
    },
    -- plan_error: a Triton candidate's plan is read first (its launch is compiled in).
    verdicts = { "compile_error", "plan_error", "unknown" } },
  { name = "plan", where = "caller", code = "klab.eval.stage.plan", needs = { "build" },
    does = "runs the launch plan in the sandbox and checks it against the task and the kernels the code defines; "
      .. "runs the reference's plans",
    verdicts = { "plan_error", "unknown" } },
  { name = "sanitizer", where = "caller", code = "klab.eval.stage.sanitizer", needs = { "plan" }, asked = "sanitize",
    does = "with --sanitize only: compute-sanitizer memcheck around a worker of its own that loads the candidate "
      .. "and runs its planned launches twice",
    verdicts = { "runtime_error" } },
  { name = "load", where = "worker", code = "klab.eval.stage.load", needs = { "plan" },
    does = "loads the cubin, checks every launch against the kernels' real parameters and the device's limits",
    measures = {
      { name = "device_memory_bytes", unit = "B", means = "the candidate's own device memory: its module globals, "
        .. "its plan's workspace and the task's scratch buffers" },
    },
    verdicts = { "load_error", "plan_error" } },
  -- exclusive_if: the device to itself when the job's field of that name is
  -- set (its runs are timed: another worker's kernels would slow them).
  { name = "correctness", where = "worker", code = "klab.eval.stage.correctness", needs = { "load" }, limit = 60,
    exclusive_if = "correctness_stop",
    does = "runs the candidate on fresh inputs from every distribution of the task (drawn from the evaluation's "
      .. "seed), outputs poisoned and guarded, inputs checksummed, the first plain set twice for determinism; "
      .. "compares with the reference: every element of the plain trials, sampled units of the distributions unless "
      .. "the proof is full; unless the proof is full, times every run (L2 flushed, CUPTI) and decides the hopeless "
      .. "rule from them against the worker's kept baseline",
    verdicts = { "guard_violation", "input_modified", "incorrect", "nondeterministic" } },
  { name = "instructions", where = "worker", code = "klab.eval.stage.instructions", needs = { "load" }, limit = 120,
    exclusive = true,
    does = "one profiled run: which target instruction families executed, the FLOPs that executed by path and "
      .. "operand type (tensor cores and SIMT pipes) against the task's FLOPs",
    measures = {
      { name = "flops_*", unit = "FLOP", means = "FLOPs that executed by path: hgmma, hmma, utc (tensor cores), other" },
      { name = "tensor_flop_frac", unit = "fraction", means = "the share of the executed FLOPs on tensor cores" },
      { name = "inst_*", unit = "count", means = "instructions of each target family that executed" },
      { name = "verified_instructions", unit = "bool", means = "1 when the target instructions were seen executing" },
      pct("sm_pct", "SM throughput, percent of peak"),
      pct("mem_pct", "memory throughput, percent of peak"),
      pct("dram_pct", "DRAM throughput, percent of peak"),
      pct("occupancy_pct", "achieved occupancy, percent of the SM's warp slots"),
      pct("tensor_pipe_pct", "tensor pipe active, percent of peak"),
      { name = "dram_bytes", unit = "B", means = "bytes read and written in DRAM" },
      { name = "dram_ratio", unit = "x", means = "DRAM bytes over the task's minimum bytes" },
      { name = "waves", unit = "count", means = "waves of blocks over the SMs" },
    },
    verdicts = { "target_not_executed", "insufficient_work" } },
  { name = "timing", where = "worker", code = "klab.eval.stage.timing", needs = { "load" }, exclusive = true,
    does = "times candidate and baseline interleaved, L2 flushed and persisting lines reset before every sample, "
      .. "only the planned launches (CUPTI activity); every sample on fresh inputs at shifted addresses with module "
      .. "globals restored and outputs poisoned; every timed output checked on sampled units, a few in full; a "
      .. "median below the physical floor is refused; measures nothing when the correctness runs decided the "
      .. "hopeless rule",
    measures = {
      us("median_us", "the candidate's median time"),
      us("mean_us", "the candidate's mean time"),
      us("min_us", "the candidate's fastest sample"),
      us("p10_us", "the candidate's 10th percentile"),
      us("p90_us", "the candidate's 90th percentile"),
      us("ci_low_us", "the low end of the median's confidence interval"),
      us("ci_high_us", "the high end of the median's confidence interval"),
      { name = "samples", unit = "count", means = "the candidate's timed samples" },
      { name = "tflops", unit = "TFLOP/s", means = "the task's FLOPs over the candidate's median" },
      us("baseline_median_us", "the baseline's median time, timed interleaved with the candidate"),
      { name = "speedup", unit = "x", means = "the baseline's median over the candidate's" },
      { name = "speedup_tf32", unit = "x", means = "the baseline's TF32 mode's median over the candidate's "
        .. "(fp32 tasks)" },
      us("floor_us", "the physical floor: the task's FLOPs at the peak of its path or its bytes at DRAM bandwidth"),
    },
    verdicts = { "unexpected_launches", "incorrect", "below_floor" } },
  { name = "record", where = "caller", code = "klab.eval.stage.record", needs = { "build" },
    does = "the verdict (passed when nothing else was found) and one row in the store with every measurement",
    verdicts = { "passed" } },
  -- Not part of an evaluation: `klab replay` (and the sanitizer's job) runs
  -- the candidate a number of times after load, with no profiler and no
  -- timer of klab's own; the baseline check judges the task's baseline
  -- itself (no candidate).
  { name = "replay", where = "worker", code = "klab.eval.stage.replay", needs = { "load" }, optional = true,
    does = "runs the planned launches N times on the first input set and checks the last output",
    verdicts = { "incorrect", "passed" } },
  { name = "baseline", where = "worker", code = "klab.eval.stage.baseline", needs = { "plan" }, optional = true,
    exclusive = true,
    does = "runs the task's baseline on the first input set, compares it with the reference and times it alone",
    verdicts = { "incorrect", "passed" } },
}

-- Timing's limit grows with its budget (the baseline is timed in the same
-- stage); the others are fixed.
M.TIMING_LIMIT = { extra = 60, per_budget = 4 }

local BY, DECLARED, FAMILIES, ALL = {}, {}, {}, {}
for _, s in ipairs(M.LIST) do
  BY[s.name] = s
  local allowed = {}
  for _, v in ipairs(s.verdicts) do allowed[v] = true end
  if s.where == "worker" then
    allowed.unknown, allowed.runtime_error, allowed.timeout, allowed.plan_error = true, true, true, true
  end
  s.allowed = allowed
  for _, m in ipairs(s.measures or {}) do
    m.stage = s.name
    local prefix = m.name:match("^(.+_)%*$")
    -- One name, one declaration: a second one is a mistake in this file.
    if DECLARED[m.name] then error("klab.eval.stages: measurement " .. m.name .. " declared twice") end
    DECLARED[m.name] = m
    ALL[#ALL + 1] = m
    if prefix then FAMILIES[#FAMILIES + 1] = { prefix = prefix, decl = m } end
  end
end

function M.get(name) return BY[name] end

function M.code(name)
  local s = BY[name]
  if not s then error("klab.eval.stages: no stage " .. tostring(name), 2) end
  local mod = require(s.code)
  if type(mod) ~= "table" or type(mod.run) ~= "function" then
    error(("klab.eval.stages: %s (the %s stage's code) has no run(run)"):format(s.code, name), 2)
  end
  return mod
end

-- The one way a stage runs: a name the registry does not hold, or one of
-- the other side (a worker's stage asked of the caller), never runs.
function M.run(name, where, run)
  local s = BY[name]
  if not s or s.where ~= where then
    error(("klab.eval.stages: no %s stage %s"):format(tostring(where), tostring(name)), 2)
  end
  return M.code(name).run(run)
end

function M.check_order(names)
  local seen = {}
  for _, name in ipairs(names) do
    local s = BY[name]
    if not s then error("klab.eval.stages: no stage " .. tostring(name), 2) end
    -- A stage of the other side ran before this list (the caller's before
    -- the worker's job exists).
    for _, need in ipairs(s.needs) do
      if BY[need].where == s.where and not seen[need] then
        error(("klab.eval.stages: the %s stage needs the %s stage before it"):format(name, need), 2)
      end
    end
    seen[name] = true
  end
end

function M.check(name, result)
  if result.verdict and not M.allows(name, result.verdict) then
    error(("klab.eval: the %s stage gave verdict %s, which its contract does not list"):format(name,
      tostring(result.verdict)), 2)
  end
end

-- The caller's stages that prepare the worker's job, in order: those
-- before the first worker row that run whenever asked or not.
local function caller()
  local out = {}
  for _, s in ipairs(M.LIST) do
    if s.where == "worker" then break end
    if not s.asked then out[#out + 1] = s.name end
  end
  return out
end

function M.run_caller(run)
  for _, name in ipairs(caller()) do
    local ok = M.run(name, "caller", run)
    M.check(name, run.result)
    if not ok then return false end
  end
  return true
end

-- The caller's stages an evaluation runs only when its options ask for
-- them (the sanitizer: opts.sanitize), in order, after the caller's others.
function M.asked(opts)
  local out = {}
  for _, s in ipairs(M.LIST) do
    if s.where == "caller" and s.asked and opts[s.asked] then out[#out + 1] = s.name end
  end
  return out
end

function M.measurement(name)
  if type(name) ~= "string" or name:find("*", 1, true) then return nil end
  if DECLARED[name] then return DECLARED[name] end
  for _, f in ipairs(FAMILIES) do
    if #name > #f.prefix and name:sub(1, #f.prefix) == f.prefix then return f.decl end
  end
  return nil
end

-- A measurement name a reader of the store names (the report): the name
-- itself when a stage declares it; an error when none does.
function M.declared(name)
  if not M.measurement(name) then
    error("klab.eval.stages: no stage declares the measurement " .. tostring(name), 2)
  end
  return name
end

function M.measurements() return table.move(ALL, 1, #ALL, 1, {}) end

-- The measurements as docs/store.md shows them (a test holds the page to it).
function M.markdown()
  local out = { "| measurement | unit | stage | what it is |", "|---|---|---|---|" }
  for _, m in ipairs(M.measurements()) do
    out[#out + 1] = ("| `%s` | %s | %s | %s |"):format(m.name, m.unit, m.stage, m.means)
  end
  return table.concat(out, "\n")
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
