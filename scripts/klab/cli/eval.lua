-- klab eval: evaluate one candidate on one task.
--
--   klab eval TASK CANDIDATE [--arch sm_90a] [--json] [--db FILE] [options]
local M = {}

M.summary = "evaluate a candidate kernel on a task: verdict, errors, timing against the library"

local USAGE = [[
usage: klab eval TASK CANDIDATE [options]

TASK is a task name as `klab tasks` lists it (gemm_bf16/8192x7168x5120), or
the name of a task with a single variant; a task file outside tasks/ is
found with --tasks DIR (TASK is a name, never a path). CANDIDATE is a folder holding the device
code (kernel.cu or kernel.ptx) and optionally plan.lua, or a .cu/.ptx file
(the task's default plan is used); a Triton or CuTe DSL kernel.py with its plan.lua
(docs/languages.md).

The build and the plan check run here; the GPU stages (correctness trials,
timing against the library baseline) run in a worker process. Without a GPU
the verdict is "unknown" and says why, after the build and the plan passed.

Options:
  --tasks DIR       look for TASK in DIR first (repeatable); then in the
                    folders of $KLAB_TASKS (dir1:dir2), then in tasks/
  --arch sm_XY      compile target (default: sm_90a)
  --db FILE         record the result in this SQLite store (created if new);
                    a finished evaluation is answered from it
  --force           evaluate again even when the store has the answer
  --no-timing       stop after correctness
  --sanitize        first run the candidate twice under compute-sanitizer
                    memcheck (when installed), reported as its own stage
  --budget S        timing budget in seconds (default 10)
  --hopeless X      time a candidate only until its speedup is below X with
                    95% confidence (at least 6 samples of each; default
                    0.5; 0: every candidate to the 0.5% interval); such a
                    result reads "< X" and counts as a result (docs/timing.md)
  --proof P         "sampled" (default): the distributions' trials compare
                    8,192 units drawn after the run (their reference computed
                    for them alone), and the correctness runs are timed: a
                    candidate they decide below X is not timed again;
                    "full": every element, every candidate timed
                    (docs/timing.md)
  --deadline S      kill the worker after S seconds (default 180)
  --stage-deadline STAGE=S
                    a stage's own limit, within the deadline (repeatable;
                    STAGE: ${STAGE_LIMITS}); a timeout names its stage
  --seed N          the evaluation's seed (0x and hex digits, or decimal), as
                    an earlier result shows it: the same trials, timed
                    inputs and checked positions again (default: a new seed
                    from the operating system for every evaluation)
  --json            print the result as one JSON object (its seed included)
  -h, --help        print this help

]]

local command = require "klab.command"
local EXIT = command.EXIT
do
  local stages = require "klab.eval.stages"
  local parts = {}
  for _, name in ipairs(stages.timed()) do
    local limit = name == "timing" and ("%d + %d x the budget"):format(stages.TIMING_LIMIT.extra,
      stages.TIMING_LIMIT.per_budget) or tostring(stages.limit(name))
    parts[#parts + 1] = ("%s (default %s)"):format(name, limit)
  end
  -- Wrapped to the option column.
  local text, line = {}, ""
  for i, p in ipairs(parts) do
    local piece = p .. (i < #parts and "," or "")
    if #line + #piece + 1 > 44 and line ~= "" then
      text[#text + 1] = line
      line = piece
    else
      line = line == "" and piece or (line .. " " .. piece)
    end
  end
  text[#text + 1] = line
  USAGE = USAGE:gsub("%${STAGE_LIMITS}", (table.concat(text, "\n                    "):gsub("%%", "%%%%")))
end
USAGE = USAGE .. "Stages, in order:\n" .. require("klab.eval.stages").text() .. "\n\n" .. command.EXIT_TEXT

local function fail(msg, code) return command.fail("eval", msg, code) end

local OPTIONS = {
  ["--proof"] = command.proof_option,
  ["--json"] = "flag", ["--no-timing"] = "flag", ["--force"] = "flag", ["--sanitize"] = "flag",
  ["--tasks"] = "list", ["--arch"] = "value", ["--db"] = "value", ["--budget"] = "seconds", ["--hopeless"] = "ratio", ["--deadline"] = "seconds",
  ["--seed"] = command.seed_option,
  ["--stage-deadline"] = function(v, o)
    local name, secs = v:match("^([%w_]+)=(.+)$")
    secs = secs and command.seconds(secs, "--stage-deadline")
    if not name or not secs then
      return "--stage-deadline needs STAGE=S with a positive, finite number of seconds, not '" .. v .. "'"
    end
    local why = require("klab.eval").unknown_stage(name)
    if why then return "--stage-deadline: " .. why end
    o.stage_deadlines = o.stage_deadlines or {}
    o.stage_deadlines[name] = secs
  end,
}

local function parse(args) return command.options(args, OPTIONS) end

local stages = require "klab.eval.stages"

local function fmt_us(v) return v and string.format("%.2f us", v) or "-" end

-- The result as `klab eval` prints it.
local function human(r)
  local out = {}
  -- Each line is one line: the names and reasons in it are shown escaped.
  local function say(...) out[#out + 1] = require("klab.report.escape").terminal(string.format(...)) end
  say("task       %s", r.task)
  say("candidate  %s  (%s)", r.name or "?", (r.candidate or ""):sub(1, 16))
  say("arch       %s%s", r.arch, r.device and ("  on " .. r.device.name) or "")
  if r.seed then say("seed       %s", r.seed) end
  local b = r.stages.build
  if b and b.ok then
    for _, k in ipairs(b.kernels or {}) do
      say("kernel     %s: %d registers, %d B spills, %d B static smem, %d B stack", k.name, k.registers,
        k.spill_stores + k.spill_loads, k.shared_static, k.local_bytes)
    end
  end
  local c = r.stages.correctness
  if c and c.trials then say("trials     %d passed", #c.trials) end
  local t = r.stages.timing
  if t and t.candidate then
    say("time       median %s (p10 %s, p90 %s, %d samples, %s)", fmt_us(t.candidate.median), fmt_us(t.candidate.p10),
      fmt_us(t.candidate.p90), t.candidate.n or 0, t.method or "?")
    if t.candidate.tflops then say("           %.1f TFLOP/s", t.candidate.tflops) end
    local lib = require("klab.eval.baselines").title((t.baseline_info or {}).lib or "baseline")
    if t.baseline then
      local interval = ""
      if t.hopeless and t.speedup_upper then
        interval = (" (%.3fx measured, at most %.3fx with 95%% confidence, %s)"):format(t.speedup, t.speedup_upper,
          t.measured == false and "decided from the correctness runs" or "timed until decided")
      elseif t.speedup_ci then
        interval = (" (%.3fx, 95%% interval [%.3f, %.3f])"):format(t.speedup, t.speedup_ci[1], t.speedup_ci[2])
      end
      say("baseline   %s median %s; speedup %s%s", lib, fmt_us(t.baseline.median), stages.speedup_text(t) or "?", interval)
    elseif t.baseline_error then
      say("baseline   none: %s", t.baseline_error)
    end
    if t.speedup_tf32 then say("           speedup over %s TF32: %.3fx", lib, t.speedup_tf32) end
  end
  if r.baseline_error and not (t and t.baseline_error) then
    say("baseline   broken: %s", r.baseline_error)
  end
  if r.shipped_baseline_error then say("baseline   the shipped kernel beside the library's is broken: %s",
    r.shipped_baseline_error) end
  local ch = t and t.baseline_choice
  if ch then
    say("           faster of two: %s (library %s, shipped kernel %s)", ch.chosen, fmt_us(ch.library and ch.library.median_us),
      fmt_us(ch.shipped and ch.shipped.median_us))
  end
  local sz = r.stages.sanitizer
  if sz then
    say("sanitizer  %s", sz.status == "ok" and (sz.errors .. " memcheck error(s)") or ("unknown: " .. tostring(sz.reason)))
  end
  local ps = r.stages.instructions
  if ps and ps.text then say("profile    %s", ps.text) end
  say("verdict    %s: %s", r.verdict, r.reason or "")
  -- Where klab's own step failed, and how it got there: for the one who
  -- asks (--verbose), never in the reason a model is shown.
  local jf = r.judge_fault
  if jf and jf.trace and command.verbose() then say("klab trace %s", jf.trace) end
  if r.cached then say("(answered from the store)") end
  return table.concat(out, "\n")
end
M.human = human

-- The exit status of a result: 0 for a correct candidate, 3 when nothing
-- could be measured (unknown), 1 for any failing verdict; 2 when the task
-- itself is broken (its reference or a shipped baseline kernel does not
-- build or plan), a mistake in the inputs.
function M.status(r)
  if r.task_error or r.baseline_error or r.shipped_baseline_error then return EXIT.usage end
  local verdicts = require "klab.eval.verdict"
  if verdicts.correct(r.verdict) then return EXIT.ok end
  if not verdicts.measured(r.verdict) then return EXIT.could_not_run end
  return EXIT.failed
end

function M.main(args)
  local o, code = command.parsed("eval", USAGE, parse(args))
  if not o then return code end
  if #o.positional ~= 2 then return command.usage_error("eval", "expected TASK and CANDIDATE") end
  if o.arch then
    local ok, why = require("klab.jit").check_arch(o.arch)
    if not ok then return fail("--arch: " .. tostring(why), EXIT.usage) end
  end
  local db
  if o.db then
    local derr
    db, derr = require("klab.store.records").open(o.db)
    if not db then return fail(derr, EXIT.usage) end
  end
  require("klab.task").use_path(o.tasks)
  local eval = require "klab.eval"
  local s = eval.session { db = db, deadline = o.deadline }
  local r, rerr = s:evaluate(o.positional[1], o.positional[2], {
    arch = o.arch, timing = not o.no_timing, force = o.force, timing_opts = { budget_s = o.budget, hopeless = o.hopeless },
    sanitize = o.sanitize, seed = o.seed, proof = o.proof,
    deadline = o.deadline, stage_deadlines = o.stage_deadlines,
  })
  s:close()
  if db then db:close() end
  -- evaluate answers nil only when the task or the candidate named on the
  -- command line cannot be found or read.
  if not r then return fail(command.task_hint(rerr), EXIT.usage) end
  if o.json then
    print(require("klab.json").encode(r, { nonfinite = true }))
  else
    print(human(r))
  end
  return M.status(r)
end

return M
