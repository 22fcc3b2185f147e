-- klab replay: run one candidate in this process, outside klab's profiler.
local M = {}

M.summary = "run a candidate N times with no profiler of klab's own (for ncu, compute-sanitizer)"

local USAGE = [[
usage: klab replay TASK CANDIDATE [--runs N] [--seed N] [--arch sm_XY] [--plan FILE] [--tasks DIR]... [--json]

Builds the candidate, runs its plan, prepares the task's first input set and
runs the planned launches N times (default 1) in this process, with neither
CUPTI nor klab's timer attached, then checks the last run's output. Use it
to let NVIDIA's tools look at exactly what klab evaluates:

  ncu --clock-control none --metrics gpu__time_duration.sum \
      build/klab replay gemm_bf16/8192x7168x5120 tasks/gemm/samples/wgmma_tma --runs 5
  compute-sanitizer --tool memcheck build/klab replay TASK CANDIDATE

--seed N replays an evaluation's inputs: the first trial's contents come from
the seed, as `klab eval --json` shows it (default: a new seed).

--plan FILE runs CANDIDATE (a .cu or .ptx file) with the launch plan in FILE
instead of the task's default plan. --tasks DIR looks for TASK in DIR first
(repeatable), before the folders of $KLAB_TASKS and the repository's tasks/.

Exit status 0 means the last run's output was correct; a failing verdict is
1, and a verdict unknown (no GPU) is 3.

]]

local command = require "klab.command"
local EXIT = command.EXIT
USAGE = USAGE .. command.EXIT_TEXT

local OPTIONS = { ["--json"] = "flag", ["--runs"] = "count", ["--arch"] = "value", ["--plan"] = "value",
  ["--tasks"] = "list", ["--seed"] = command.seed_option }

local function parse(args)
  local o, err = command.options(args, OPTIONS)
  if not o or o.help then return o, err end
  if #o.positional ~= 2 then return nil, "expected TASK and CANDIDATE" end
  o.runs = o.runs or 1
  o.task, o.candidate = o.positional[1], o.positional[2]
  return o
end

function M.main(args)
  local o, code = command.parsed("replay", USAGE, parse(args))
  if not o then return code end
  if o.arch then
    local ok, why = require("klab.jit").check_arch(o.arch)
    if not ok then return command.fail("replay", "--arch: " .. tostring(why), EXIT.usage) end
  end
  require("klab.task").use_path(o.tasks)
  local cand = o.candidate
  if o.plan then
    local cm = require "klab.eval.candidate"
    local c, cerr = cm.load(cand)
    local plan, perr = require("klab.fs").read(o.plan, cm.MAX_BYTES)
    if not c or not plan then return command.fail("replay", tostring(cerr or perr), EXIT.usage) end
    cand = assert(cm.new { code = c.code, lang = c.lang, plan = plan, name = c.name, source = c.source,
      file = c.file, plan_file = o.plan })
  end
  local r, err = require("klab.eval").replay(o.task, cand, { runs = o.runs, arch = o.arch, seed = o.seed })
  -- replay answers nil only when the task or the candidate cannot be found.
  if not r then return command.fail("replay", command.task_hint(err), EXIT.usage) end
  if o.json then
    print(require("klab.json").encode(r, { nonfinite = true }))
  else
    print(require("klab.report.escape").terminal(string.format("%s on %s: %s: %s%s", r.name, r.task, r.verdict,
      r.reason or "", r.run_seconds and string.format(" (%d runs in %.3f s)", r.runs, r.run_seconds) or "")))
  end
  return require("klab.cli.eval").status(r)
end

return M
