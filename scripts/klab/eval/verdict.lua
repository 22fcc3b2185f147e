-- klab.eval.verdict: the verdicts, defined once: names, precedence, short
-- codes, what each means, which stage gives it, and the one-line reasons;
--
--   verdict.LIST                  {name=, short=, stage=, class=, color=, means=} in order of precedence
--   verdict.NAMES                 the names in that order (first wins)
--   verdict.SHORT                 name -> short code for tables ("P", "I", ...)
--   verdict.rank(name)            -> 1 (highest) .. #NAMES; raises on an unknown name
--   verdict.valid(name)           -> boolean
--   verdict.class(name)           -> "correct" | "failed" | "not_measured"
--   verdict.correct(name)         -> true for passed and target_not_executed
--   verdict.worst(a, b, ...)      -> the name that wins among verdict names or {verdict=} records
--   verdict.make(name, detail)    -> {verdict = name, reason = "name: ..."}; detail as for reason
--   verdict.reason(name, detail)  -> one line for a person or a model, starting "name: "
--   verdict.define(db)            -> writes the list into a store's verdicts table (its constraint)
--   verdict.markdown()            -> the list as a Markdown table (docs/verdicts.md is checked against it)
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

-- The store checks every verdict it records against its verdicts table;
-- this fills it from the list above (idempotent).
function M.define(db)
  local have = {}
  local records = require "klab.store.records"
  for _, r in ipairs(records.verdict_rows(db)) do have[r.name] = r end
  local stale = false
  for i, v in ipairs(M.LIST) do
    local r = have[v.name]
    if not (r and r.rank == i and r.short == v.short and r.stage == v.stage and r.class == v.class
        and r.means == v.means) then
      stale = true
    end
  end
  if not stale then return true end
  db:transaction(function()
    for i, v in ipairs(M.LIST) do
      records.put_verdict(db, v, i)
    end
  end)
  return true
end

function M.markdown()
  local out = { "| verdict | code | stage | counts as | meaning |", "|---|---|---|---|---|" }
  for _, v in ipairs(M.LIST) do
    out[#out + 1] = ("| `%s` | %s | %s | %s | %s |"):format(v.name, v.short, v.stage, v.class:gsub("_", " "), v.means)
  end
  return table.concat(out, "\n") .. "\n"
end

-- ---- formatting helpers ----------------------------------------------

local function num(x)
  if x ~= x then return "NaN" end
  if x == math.huge then return "Inf" end
  if x == -math.huge then return "-Inf" end
  if math.type(x) == "integer" then return tostring(x) end
  return (("%.4g"):format(x))
end

local function one_line(s)
  s = tostring(s):gsub("[\r\n]+", " "):gsub("%s+", " "):gsub("^%s+", ""):gsub("%s+$", "")
  if #s > 300 then s = s:sub(1, 297) .. "..." end
  return s
end

-- ---- reasons ---------------------------------------------------------

local function detail_of(d, fields)
  if d == nil then return nil end
  if type(d) ~= "table" then return one_line(d) end
  return nil, d
end

local R = {}

R.extraction_error = function(d)
  local s, t = detail_of(d)
  if s then return s end
  return one_line(t and (t.msg or t.what) or "no device code found in the reply")
end

R.compile_error = function(d)
  local s, t = detail_of(d)
  if s then return s end
  local first = t.first
  if not first and t.log then
    for line in tostring(t.log):gmatch("[^\n]+") do
      if line:find("error") then first = line break end
    end
  end
  local n = t.errors
  local head = n and (("%d error%s"):format(n, n == 1 and "" or "s")) or "the compiler rejected the code"
  return head .. (first and ("; first: " .. one_line(first)) or "")
end

R.load_error = function(d)
  local s, t = detail_of(d)
  if s then return s end
  return one_line(t.msg or "the module could not be loaded")
end

R.plan_error = function(d)
  local s, t = detail_of(d)
  if s then return s end
  return one_line(t.msg or "the launch plan was rejected")
end

R.runtime_error = function(d)
  local s, t = detail_of(d)
  if s then return s end
  local parts = { t.error or "a CUDA error" }
  if t.stage then parts[#parts + 1] = "during " .. t.stage end
  if t.trial then parts[#parts + 1] = "trial " .. t.trial end
  if t.launch then parts[#parts + 1] = ("(launch %d%s)"):format(t.launch, t.kernel and (", kernel " .. t.kernel) or "") end
  return one_line(table.concat(parts, " "))
end

R.timeout = function(d)
  local s, t = detail_of(d)
  if s then return s end
  return one_line(("%s stage did not finish within %s s%s"):format(t.stage or "the", num(t.seconds or 0),
    t.what and (" (" .. t.what .. ")") or ""))
end

R.guard_violation = function(d)
  local s, t = detail_of(d)
  if s then return s end
  local side = t.side == "before" and "before the start" or "past the end"
  local at = t.offset and ((" (first at byte %s%d)"):format(t.side == "before" and "-" or "+", t.offset)) or ""
  local amount = t.bytes and (("%d bytes"):format(t.bytes)) or "bytes"
  return ("%s written %s of %s%s"):format(amount, side, t.buffer or "a buffer", at)
end

R.input_modified = function(d)
  local s, t = detail_of(d)
  if s then return s end
  local n = t.changed and ((" (%d bytes changed)"):format(t.changed)) or ""
  return ("input %s changed during the run%s; inputs are read-only"):format(t.buffer or "?", n)
end

R.incorrect = function(d)
  if type(d) == "table" and d.total then
    return (M.describe(d):gsub("^incorrect: ", ""))
  end
  if type(d) == "table" and d.cmp then
    return (M.describe(d.cmp, d):gsub("^incorrect: ", ""))
  end
  local s = detail_of(d)
  return s or "the output does not match the reference"
end

R.nondeterministic = function(d)
  local s, t = detail_of(d)
  if s then return s end
  return ("two runs on the same inputs differ in %d of %d elements of %s%s"):format(t.differ or 0, t.total or 0,
    t.buffer or "the output", t.max_abs and (" (max abs diff " .. num(t.max_abs) .. ")") or "")
end

R.unexpected_launches = function(d)
  local s, t = detail_of(d)
  if s then return s end
  local names = t.kernels and #t.kernels > 0 and (" (" .. table.concat(t.kernels, ", ") .. ")") or ""
  return ("the plan has %d launch%s but %d kernel%s ran%s"):format(t.expected or 0,
    (t.expected or 0) == 1 and "" or "es", t.got or 0, (t.got or 0) == 1 and "" or "s", names)
end

R.insufficient_work = function(d)
  local s, t = detail_of(d)
  if s then return s end
  return ("the kernel executed %s FLOPs, %s of the task's %s (the task requires %s)"):format(num(t.executed or 0),
    num(t.fraction or 0), num(t.task or 0), num(t.required or 0))
end

R.below_floor = function(d)
  local s, t = detail_of(d)
  if s then return s end
  return ("median %s us is below the physical floor of %s us (%s)"):format(num(t.median_us or 0),
    num(t.floor_us or 0), t.why or "peak throughput")
end

R.request_error = function(d)
  local s, t = detail_of(d)
  if s then return s end
  return one_line(t.error or "the request failed")
end

R.target_not_executed = function(d)
  local s, t = detail_of(d)
  if s then return s end
  local missing = t.missing and #t.missing > 0 and table.concat(t.missing, ", ") or "none of the target families"
  local req = t.required and (" (required: " .. table.concat(t.required, ", ") .. ")") or ""
  return ("on %s no %s instruction executed%s"):format(t.arch or "this GPU", missing, req)
end

R.unknown = function(d)
  local s, t = detail_of(d)
  if s then return s end
  return ("%s stage could not run: %s"):format(t.stage or "a", t.why or "unknown reason")
end

R.passed = function(d)
  local s, t = detail_of(d)
  if s then return s end
  if t.time_ms and t.baseline_ms then
    local sp = t.speedup or (t.baseline_ms / t.time_ms)
    return ("%sx the baseline (%s ms vs %s ms)"):format(num(sp), num(t.time_ms), num(t.baseline_ms))
  end
  return "correct"
end

function M.reason(name, detail)
  M.rank(name)
  local body = R[name](detail)
  return name .. ": " .. body
end

function M.make(name, detail)
  return { verdict = name, reason = M.reason(name, detail) }
end

return M
