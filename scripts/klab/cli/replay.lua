-- klab replay: run one candidate in this process, outside klab's profiler.
local M = {}

M.summary = "run a candidate N times with no profiler of klab's own (for ncu, compute-sanitizer)"

local USAGE = [[
usage: klab replay TASK CANDIDATE [--runs N] [--arch sm_XY] [--plan FILE] [--tasks DIR]... [--json]

Builds the candidate, runs its plan, prepares the task's first input set and
runs the planned launches N times (default 1) in this process, with neither
CUPTI nor klab's timer attached, then checks the last run's output. Use it
to let NVIDIA's tools look at exactly what klab evaluates:

  ncu --clock-control none --metrics gpu__time_duration.sum \
      build/klab replay gemm_bf16/8192x7168x5120 tasks/gemm/samples/wgmma_tma --runs 5
  compute-sanitizer --tool memcheck build/klab replay TASK CANDIDATE

--plan FILE runs CANDIDATE (a .cu or .ptx file) with the launch plan in FILE
instead of the task's default plan. --tasks DIR looks for TASK in DIR first
(repeatable), before the folders of $KLAB_TASKS and the repository's tasks/.

Exit status 0 means the last run's output was correct; a failing verdict is
1, and a verdict unknown (no GPU) is 3.

]]

local command = require "klab.command"
local EXIT = command.EXIT
USAGE = USAGE .. command.EXIT_TEXT

local function parse(args)
  local o, pos = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "-h" or a == "--help" then
      o.help = true
    elseif a == "--json" then
      o.json = true
    elseif a == "--runs" or a == "--arch" or a == "--plan" or a == "--tasks" then
      local v = args[i + 1]
      if not v then return nil, "option " .. a .. " needs a value" end
      if a == "--tasks" then
        o.tasks = o.tasks or {}
        o.tasks[#o.tasks + 1] = v
      else
        o[a:sub(3)] = v
      end
      i = i + 1
    elseif a:sub(1, 1) == "-" then
      return nil, "unknown option " .. a
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  if o.help then return o end
  if #pos ~= 2 then return nil, "expected TASK and CANDIDATE" end
  local runs = tonumber(o.runs or 1)
  if not runs or runs < 1 or runs ~= math.floor(runs) or runs == math.huge then
    return nil, "--runs needs a positive integer"
  end
  o.runs = math.tointeger(runs)
  o.task, o.candidate = pos[1], pos[2]
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
  local r, err = require("klab.eval").replay(o.task, cand, { runs = o.runs, arch = o.arch })
  -- replay answers nil only when the task or the candidate cannot be found.
  if not r then return command.fail("replay", command.task_hint(err), EXIT.usage) end
  if o.json then
    print(require("klab.json").encode(r))
  else
    print(string.format("%s on %s: %s: %s%s", r.name, r.task, r.verdict, r.reason or "",
      r.run_seconds and string.format(" (%d runs in %.3f s)", r.runs, r.run_seconds) or ""))
  end
  return require("klab.cli.eval").status(r)
end

return M
