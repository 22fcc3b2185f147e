-- klab replay: run one candidate in this process, outside klab's profiler.
local M = {}

M.summary = "run a candidate N times with no profiler of klab's own (for ncu, compute-sanitizer)"

local USAGE = [[
usage: klab replay TASK CANDIDATE [--runs N] [--arch sm_XY] [--tasks DIR]... [--json]

Builds the candidate, runs its plan, prepares the task's first input set and
runs the planned launches N times (default 1) in this process, with neither
CUPTI nor klab's timer attached, then checks the last run's output. Use it
to let NVIDIA's tools look at exactly what klab evaluates:

  ncu --clock-control none --metrics gpu__time_duration.sum \
      build/klab replay gemm_bf16/8192x7168x5120 tasks/gemm/samples/wgmma_tma --runs 5
  compute-sanitizer --tool memcheck build/klab replay TASK CANDIDATE

--tasks DIR looks for TASK in DIR first (repeatable), before the folders of
$KLAB_TASKS and the repository's tasks/.

Exit status: 0 when the last run was correct, 1 otherwise, 2 for a bad
command line.
]]

function M.main(args)
  local o, pos = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "-h" or a == "--help" then
      io.write(USAGE)
      return 0
    elseif a == "--json" then
      o.json = true
    elseif a == "--runs" or a == "--arch" or a == "--tasks" then
      local v = args[i + 1]
      if not v then
        io.stderr:write("klab replay: option ", a, " needs a value\n")
        return 2
      end
      if a == "--tasks" then
        o.tasks = o.tasks or {}
        o.tasks[#o.tasks + 1] = v
      else
        o[a:sub(3)] = v
      end
      i = i + 1
    elseif a:sub(1, 1) == "-" then
      io.stderr:write("klab replay: unknown option ", a, "\n", USAGE)
      return 2
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  if #pos ~= 2 then
    io.stderr:write("klab replay: expected TASK and CANDIDATE\n", USAGE)
    return 2
  end
  local runs = tonumber(o.runs or 1)
  if not runs or runs < 1 or runs ~= math.floor(runs) then
    io.stderr:write("klab replay: --runs needs a positive integer\n")
    return 2
  end
  require("klab.task").use_path(o.tasks)
  local r, err = require("klab.eval").replay(pos[1], pos[2], { runs = math.tointeger(runs), arch = o.arch })
  if not r then
    io.stderr:write("klab replay: ", tostring(err), "\n")
    return 1
  end
  if o.json then
    print(require("cjson").encode(r))
  else
    print(string.format("%s on %s: %s: %s%s", r.name, r.task, r.verdict, r.reason or "",
      r.seconds and string.format(" (%d runs in %.3f s)", r.runs, r.seconds) or ""))
  end
  return r.verdict == "passed" and 0 or 1
end

return M
