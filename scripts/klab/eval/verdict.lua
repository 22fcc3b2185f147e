-- klab.eval.verdict: the one verdict authority. The list of verdicts
-- (names, precedence, short codes, what each means, which stage gives it,
-- how reports count it) and every verdict's one-line reason, built here from
-- the structured detail its producer hands over: no other module writes a
-- verdict's reason. A leaf: it requires nothing.
--
--   verdict.make(name, detail)    -> {verdict = name, reason = "..."}
--   verdict.give(rec, name, detail) -> rec, its verdict and reason set
--   verdict.reason(name, detail)  -> the reason alone (one line, fit to show a model)
--   verdict.LIST                  {name=, short=, stage=, class=, color=, means=} in order of precedence
--   verdict.NAMES, verdict.SHORT  names in that order; name -> short code ("P", "I", ...)
--   verdict.rank(name)            -> 1 (highest) .. #NAMES; raises on an unknown name
--   verdict.valid(name), verdict.class(name) -> "correct" | "failed" | "not_measured"
--   verdict.correct(name)         -> true for passed and target_not_executed
--   verdict.verified(name, instructions) -> passed, with every target family seen executing
--   verdict.measured(name)        -> false for the verdicts that say nothing was measured
--   verdict.passed(name)          -> correct with nothing against it: what a selection, a target, an export takes
--   verdict.undecided(name)       -> a stage could not run (unknown): nothing decided, never reused
--   verdict.request_failed(name)  -> the request to the model failed
--   verdict.no_candidate(name)    -> the model gave nothing to judge (the request failed, or no code came out)
--   verdict.target_missing(name)  -> correct, but the task's target instructions did not run
--   verdict.not_loaded(name)      -> the code did not build or load: it fails alike on every workload
--   verdict.before_gpu(name)      -> given by the stages that run without a GPU (build, plan)
--   verdict.worst(a, b, ...)      -> the name that wins among verdict names or {verdict=} records
--   verdict.situations(name)      -> the kinds of detail its reasons are built from
--   verdict.markdown()            -> the list as a Markdown table (docs/verdicts.md is checked against it)
--
-- detail is a table: its `kind` says which situation of the verdict it is
-- (the tables below, per verdict), its other fields the figures and names
-- the reason quotes. What comes from elsewhere (a compiler's first error,
-- CUDA's message, a plan's error) travels as detail.message and is quoted as
-- it is, on one line. A reason never starts with the verdict's name: where
-- both are shown, they are shown as "name: reason".
--
-- Precedence follows the stages: a request that failed has no reply, a reply
-- with no code cannot compile, a kernel that does not build cannot load, and
-- so on. Among run-time findings, faults (runtime_error, timeout) hide
-- everything measured after them; memory-safety findings (guard_violation,
-- input_modified) come before numerics, since they taint the outputs;
-- numerics (incorrect, then nondeterministic) come before what the timing and
-- instruction stages find about the measurement itself (unexpected_launches,
-- insufficient_work, below_floor), and those before target_not_executed (a
-- correct kernel that did not use the target instructions); unknown (a stage
-- could not run) only beats passed.
--
-- The comparison rule that makes an output incorrect lives once, on the
-- device (host/driver/kernels/judge.cu, stated in docs/verdicts.md).

local M = {}

-- class: "correct" (counts as a correct result), "failed" (the candidate's
-- fault), "not_measured" (nothing could be said about the candidate).
-- color: the verdict's colour in the report's figures.
M.LIST = {
  { name = "request_error", short = "E", stage = "model", class = "not_measured", color = "#555555",
    means = "the request to the model failed; there is no reply to judge" },
  { name = "extraction_error", short = "X", stage = "extract", class = "failed", color = "#999999",
    means = "the reply holds no usable candidate (no code block, or several without a choice)" },
  { name = "compile_error", short = "C", stage = "build", class = "failed", color = "#D55E00",
    means = "the code did not compile, or was refused before compiling (a forbidden include, a device-side launch)" },
  { name = "load_error", short = "LD", stage = "load", class = "failed", color = "#E69F00",
    means = "the driver refused the compiled module" },
  { name = "plan_error", short = "PL", stage = "plan", class = "failed", color = "#F0E442",
    means = "the launch plan failed in its sandbox or does not fit the kernels' parameters or the device" },
  { name = "runtime_error", short = "R", stage = "correctness", class = "failed", color = "#CC79A7",
    means = "a CUDA fault (illegal address, trap, ...) or a worker that died while running the kernel" },
  { name = "timeout", short = "T", stage = "correctness", class = "failed", color = "#56B4E9",
    means = "a stage that runs the kernel did not finish within its limit; the worker was killed" },
  { name = "guard_violation", short = "G", stage = "correctness", class = "failed", color = "#882255",
    means = "the kernel wrote outside its buffers (into the guard regions around them)" },
  { name = "input_modified", short = "M", stage = "correctness", class = "failed", color = "#AA4499",
    means = "the kernel changed an input buffer" },
  { name = "incorrect", short = "I", stage = "correctness", class = "failed", color = "#0072B2",
    means = "an output differs from the reference beyond the task's tolerance (in a correctness trial or a timed run)" },
  { name = "nondeterministic", short = "N", stage = "correctness", class = "failed", color = "#44AA99",
    means = "two runs on the same inputs gave different bits" },
  { name = "unexpected_launches", short = "U", stage = "timing", class = "failed", color = "#DDCC77",
    means = "the timed runs launched kernels the plan did not make" },
  { name = "insufficient_work", short = "W", stage = "instructions", class = "failed", color = "#661100",
    means = "the arithmetic the kernel executed is below the fraction of the task's FLOPs the task requires" },
  { name = "below_floor", short = "F", stage = "timing", class = "failed", color = "#332288",
    means = "the median time is below what the task's FLOPs or bytes need at the device's peak: not a speedup" },
  { name = "target_not_executed", short = "V", stage = "instructions", class = "correct", color = "#117733",
    means = "correct, but the task's target instruction families did not run: correct, not verified" },
  { name = "unknown", short = "?", stage = "any", class = "not_measured", color = "#CCCCCC",
    means = "a stage could not run (no GPU, no profiling rights): never reused as a result" },
  { name = "passed", short = "P", stage = "record", class = "correct", color = "#009E73",
    means = "correct on every trial and timed run, with the target instructions executed where measured" },
}

M.NAMES, M.SHORT = {}, {}
local RANK, BY = {}, {}
for i, v in ipairs(M.LIST) do
  M.NAMES[i] = v.name
  M.SHORT[v.name] = v.short
  RANK[v.name] = i
  BY[v.name] = v
end

function M.valid(name) return RANK[name] ~= nil end

function M.rank(name)
  local r = RANK[name]
  if not r then error("verdict: unknown verdict '" .. tostring(name) .. "'", 2) end
  return r
end

function M.class(name)
  M.rank(name)
  return BY[name].class
end

function M.correct(name) return BY[name] ~= nil and BY[name].class == "correct" end

function M.worst(...)
  local best
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if type(v) == "table" then v = v.verdict end
    if v ~= nil then
      if M.rank(v) and (best == nil or RANK[v] < RANK[best]) then best = v end
    end
  end
  return best
end


function M.measured(name) return BY[name] ~= nil and BY[name].class ~= "not_measured" end

-- The questions the rest of klab asks of a verdict, answered here from the
-- list, so that no other module compares a verdict's name.
local function stage_in(name, stages) return BY[name] ~= nil and stages[BY[name].stage] == true end
function M.passed(name) return name == "passed" end
function M.undecided(name) return name == "unknown" end
function M.request_failed(name) return stage_in(name, { model = true }) end
function M.no_candidate(name) return stage_in(name, { model = true, extract = true }) end
function M.target_missing(name) return stage_in(name, { instructions = true }) and BY[name].class == "correct" end
function M.not_loaded(name) return stage_in(name, { build = true, load = true }) end
function M.before_gpu(name) return stage_in(name, { build = true, plan = true }) end

-- instructions: the instruction stage's record of the result ({status=,
-- families = {name = {status=}}}), or nil when it did not run.
function M.verified(name, instructions)
  if not M.passed(name) then return false end
  local fams = instructions and instructions.status == "ok" and instructions.families
  if not fams or next(fams) == nil then return false end
  for _, f in pairs(fams) do
    if f.status ~= "executed" then return false end
  end
  return true
end

function M.markdown()
  local out = { "| verdict | code | stage | counts as | meaning |", "|---|---|---|---|---|" }
  for _, v in ipairs(M.LIST) do
    out[#out + 1] = ("| `%s` | %s | %s | %s | %s |"):format(v.name, v.short, v.stage, v.class:gsub("_", " "), v.means)
  end
  return table.concat(out, "\n") .. "\n"
end

-- ---- reasons ------------------------------------------------------------

local function num(x)
  if type(x) ~= "number" then return tostring(x) end
  if x ~= x then return "NaN" end
  if x == math.huge then return "Inf" end
  if x == -math.huge then return "-Inf" end
  if math.type(x) == "integer" then return tostring(x) end
  return (("%.4g"):format(x))
end

-- Text from elsewhere as one line fit for a reason, bounded. What klab's
-- own code adds to an error on its way up (a traceback, the position of
-- the Lua line that raised it) is dropped: a model is shown the reason,
-- and klab's internals are neither its business nor its fault.
local function line(s)
  s = tostring(s == nil and "" or s)
  s = s:gsub("\n?%s*stack traceback:.*$", "")
  s = s:gsub("[^%s:]*scripts/klab/[^%s:]*%.lua:%d+:%s*", "")
  s = s:gsub("[\r\n]+", " "):gsub("%s+", " "):gsub("^%s+", ""):gsub("%s+$", "")
  if #s > 600 then s = s:sub(1, 597) .. "..." end
  return s
end
M.first_line = line

local function plural(n, word, many) return n == 1 and word or (many or (word .. "s")) end

local function list(names)
  if #names <= 1 then return names[1] or "" end
  return table.concat(names, ", ", 1, #names - 1) .. " and " .. names[#names]
end

local function on(where) return where and (" on " .. where) or "" end

-- An output compared with its reference (incorrect): the comparison's
-- figures. d: {buffer=, failed=, total=, nan=, inf=, max_abs=, location=,
-- where=, matched=, required=, atol=, rtol=, never_written=, sampled=}.
local function comparison(d)
  if d.never_written then
    return ("output %s was never written (every element still holds the poison NaN)%s"):format(d.buffer, on(d.where))
  end
  local what = ("%d of %d %selements of %s differ (%d NaN, %d Inf; max abs err %s at %s)"):format(d.failed or 0,
    d.total or 0, d.sampled and "sampled " or "", d.buffer or "the output", d.nan or 0, d.inf or 0,
    ("%.4g"):format(d.max_abs or 0), d.location or "?")
  if d.sampled then
    return ("%s: %s; atol %s, rtol %s"):format(d.where or "a timed run", what, num(d.atol), num(d.rtol))
  end
  return ("%s%s; matched %.4f%% < %.4f%% required (atol %s, rtol %s)"):format(what, on(d.where),
    100 * (d.matched or 0), 100 * (d.required or 1), num(d.atol), num(d.rtol))
end

local function guard(d)
  if d.side == "before" then
    return ("wrote %d byte(s) before the start of buffer %s (at byte %d before it)%s"):format(d.bytes, d.buffer, d.at,
      on(d.where))
  end
  return ("wrote %d byte(s) past the end of buffer %s (%d bytes long; first stray byte at offset %d)%s"):format(d.bytes,
    d.buffer, d.buffer_bytes, d.at, on(d.where))
end

local function during(stage) return stage and (" during " .. stage) or "" end

-- Per verdict, per situation (detail.kind; "message" when a producer quotes
-- what it was told): the reason.
local R = {
  request_error = {
    message = function(d) return line(d.message) end,
  },
  extraction_error = {
    message = function(d) return line(d.message) end,
  },
  compile_error = {
    compiler = function(d) return "compile error: " .. line(d.message) end,
    rejected = function(d) return "rejected: " .. line(d.message) end,
  },
  load_error = {
    unreadable = function() return "cannot read the compiled cubin" end,
    refused = function(d) return "the driver refused the module: " .. line(d.message) end,
    global = function(d)
      return ("cannot locate the module global %s (%d bytes) to restore it before every run"):format(d.name, d.bytes)
    end,
  },
  plan_error = {
    message = function(d) return line(d.message) end,
    undefined_kernel = function(d)
      return ("the plan launches kernel '%s', but the code defines only %s"):format(d.kernel, table.concat(d.defined, ", "))
    end,
    param_bytes = function(d)
      local s = ("launch %d: kernel %s takes %s bytes of parameters"):format(d.index, d.kernel, d.expected or "?")
      if d.packed then s = s .. (", the plan's arguments pack into %d"):format(d.packed) end
      return d.why and (s .. " (" .. d.why .. ")") or s
    end,
    module_lacks = function(d)
      return ("the plan launches kernel '%s', which the module lacks: %s"):format(d.kernel, line(d.message))
    end,
    threads = function(d)
      return ("kernel %s launched with %d threads per block, but it can take at most %d (registers: %d)"):format(d.kernel,
        d.threads, d.max, d.registers)
    end,
    shared = function(d)
      return ("kernel %s asks for %d bytes of dynamic shared memory; with its %d static bytes that exceeds the device's "
        .. "%d"):format(d.kernel, d.dynamic, d.static, d.limit)
    end,
  },
  runtime_error = {
    cuda = function(d) return line(d.message) end,
    profiled = function(d) return "the kernel failed in the profiled run: " .. line(d.message) end,
    crashed = function(d)
      return ("the worker died with %s while running the kernel%s%s"):format(tostring(d.signal), during(d.stage),
        d.again and ", twice (the second time alone, in a fresh worker)" or "")
    end,
    exited = function(d)
      return ("the worker exited with status %s while running the kernel%s"):format(tostring(d.code), during(d.stage))
    end,
    sanitizer = function(d)
      return ("compute-sanitizer memcheck found %d error(s): %s"):format(d.errors, line(d.first or ""))
    end,
  },
  timeout = {
    stage = function(d)
      return ("the %s stage did not finish within its %s s; the kernel was stopped by killing its worker"):format(d.stage,
        num(d.seconds))
    end,
    deadline = function(d)
      return ("the evaluation did not finish within %s s%s; the kernel was stopped by killing its worker"):format(
        num(d.seconds), during(d.stage))
    end,
  },
  guard_violation = { guard = guard },
  input_modified = {
    input = function(d) return ("input %s was changed by the kernel%s"):format(d.buffer, on(d.where)) end,
  },
  incorrect = {
    compare = comparison,
    timed = function(d)
      return ("the output of %s was wrong (every timed run gets fresh inputs and its output is checked)"):format(
        d.check and comparison(d.check) or ("timed run " .. tostring(d.sample)))
    end,
  },
  nondeterministic = {
    bits = function(d)
      return ("two runs on the same inputs gave different bits in %s (%d bytes differ, first at byte %d)"):format(d.buffer,
        d.bytes, d.first)
    end,
  },
  unexpected_launches = {
    launches = function(d) return "timing saw launches the plan did not make: " .. line(d.message) end,
  },
  insufficient_work = {
    work = function(d)
      return ("the kernel executed %.4g FLOPs (tensor cores %.4g, SIMT pipes %.4g), %.1f%% of the task's %.4g; the task "
        .. "requires at least %.0f%%"):format(d.executed, d.tensor or 0, d.simt or 0, 100 * d.executed / d.task, d.task,
        100 * d.required)
    end,
  },
  below_floor = {
    floor = function(d)
      return ("median %.2f us is below the physical floor of %.2f us (%s: %.4g FLOPs at %s TFLOP/s take %.2f us; %.4g "
        .. "bytes at %.0f GB/s take %.2f us): not a speedup"):format(d.median_us, d.floor_us, d.path, d.flops or 0,
        tostring(d.tflops), d.compute_us or 0, d.bytes or 0, d.gbs or 0, d.memory_us or 0)
    end,
  },
  target_not_executed = {
    missing = function(d)
      local extra = d.hmma_frac and ("; %.1f%% of the task's FLOPs went through mma.sync (HMMA) instead"):format(
        100 * d.hmma_frac) or ""
      return ("%s did not execute (0 warp instructions), though the task targets %s on %s%s"):format(list(d.missing),
        #d.missing > 1 and "them" or "it", d.arch or "this architecture", extra)
    end,
    path = function(d)
      return ("%s executed (%d warp %s) but carried only %.1f%% of the task's FLOPs (< %.0f%%); mma.sync (HMMA) %.1f%%, "
        .. "other %.1f%%"):format(d.family, d.count, plural(d.count, "instruction"), 100 * d.frac, 100 * d.min,
        100 * (d.hmma or 0), 100 * (d.other or 0))
    end,
    type = function(d)
      local parts = {}
      for _, r in ipairs(d.ran or {}) do parts[#parts + 1] = ("%s %.1f%%"):format(r[1], 100 * r[2]) end
      return ("the task's tensor-core path is %s, but %s tensor FLOPs were %.1f%% of the task's %.4g (at least %.0f%% "
        .. "required); %s"):format(d.type, d.type, 100 * d.frac, d.task, 100 * d.required,
        #parts > 0 and ("the tensor cores ran " .. table.concat(parts, ", ")) or "no tensor-core FLOPs ran")
    end,
  },
  unknown = {
    message = function(d) return line(d.message) end,
    no_gpu = function(d) return "GPU stages skipped: " .. line(d.message) end,
    baseline = function(d) return "the baseline could not run: " .. line(d.message) end,
    worker = function(d)
      return "the evaluation itself failed: " .. line(d.message) .. (d.again and "; twice, the second time alone" or "")
    end,
    judge = function(d)
      return ("klab's own step failed (%s), not the kernel: %s%s"):format(d.what, line(d.message),
        d.again and "; twice, the second time alone in a fresh worker" or "")
    end,
    start = function(d) return "the evaluation could not start: " .. line(d.message) end,
    not_stored = function() return "the candidate is not in the store" end,
    awaiting = function() return "built and plan-checked; its GPU stages wait for klab judge" end,
  },
  passed = {
    evaluated = function() return "correct on every trial and timed run" end,
    baseline = function() return "the baseline matches the reference" end,
    replay = function() return "the last replayed run was correct" end,
  },
}

-- The test suites name a file in KLAB_REASON_AUDIT: every reason that
-- shows klab's internals (a traceback, a file of klab's) is written there,
-- from whichever process made it, and the test that made it fails.
local AUDIT = os.getenv("KLAB_REASON_AUDIT")
if AUDIT == "" then AUDIT = nil end
local function audit(name, text)
  if not (text:find("stack traceback", 1, true) or text:find("scripts/klab/", 1, true)) then return end
  require("klab.fs").append(AUDIT, name .. ": " .. text:gsub("\n", "\\n") .. "\n")
end

function M.reason(name, detail)
  M.rank(name)
  if type(detail) ~= "table" then
    error(("verdict.reason(%s): detail must be a table {kind = ..., ...}"):format(name), 2)
  end
  local kind = detail.kind or "message"
  local f = R[name][kind]
  if not f then error(("verdict.reason: %s has no situation '%s'"):format(name, tostring(kind)), 2) end
  local text = f(detail)
  if AUDIT then audit(name, text) end
  return text
end

function M.make(name, detail)
  return { verdict = name, reason = M.reason(name, detail) }
end

-- Gives a result record its verdict and reason; returns the record.
function M.give(rec, name, detail)
  rec.verdict, rec.reason = name, M.reason(name, detail)
  return rec
end

-- The situations of a verdict, sorted (its reasons' kinds).
function M.situations(name)
  local out = {}
  for k in pairs(R[name] or {}) do out[#out + 1] = k end
  table.sort(out)
  return out
end

return M
