-- A mistyped name is answered with the name it is near, wherever klab looks
-- one up: a command, an option, a task, a variant, a family, a task file's
-- field (and a condition variable: report_test). One helper makes every
-- suggestion: klab.errors.did_you_mean.
local T = {}

local q = require("klab.command").shell_quote

function T.a_near_name_is_suggested_everywhere(t)
  local function klab(args)
    return t.sh(("cd %s && %s %s"):format(q(t.root), q(t.klab), args))
  end
  for _, case in ipairs {
    { "taks", "'taks' is neither a command nor a script file %(did you mean 'tasks'%?%)" },
    { "tasks --taks x", "unknown option %-%-taks %(did you mean '%-%-tasks'%?%)" },
    { "prompt sofmax_bf16", "no task named 'sofmax_bf16' under [^\n]* %(did you mean 'softmax_bf16'%?%)" },
    { "prompt softmax_bf16/1000x1032", "has no variant '1000x1032' %(did you mean '1000x1023'%?%)" },
    { "tasks --family sofmax", "no task has family 'sofmax' %(did you mean 'softmax'%?%)" },
  } do
    local code, _, err = klab(case[1])
    t.eq(code, 2, case[1])
    t.match(err, case[2], case[1])
  end
  -- A task file's field.
  local dir = t.tmpdir()
  t.eq((t.sh(("mkdir -p %s && cp %s/tasks/softmax/*.lua %s/"):format(q(dir .. "/sm"), q(t.root),
    q(dir .. "/sm")))), 0)
  local path = dir .. "/sm/softmax.lua"
  local s = assert(t.read(path))
  local n
  s, n = s:gsub("\ntolerance = ", "\ntolerence = ", 1)
  t.eq(n, 1)
  local f = assert(io.open(path, "w"))
  f:write(s)
  f:close()
  local code, _, err = t.sh(("%s tasks --root %s"):format(q(t.klab), q(dir)))
  t.eq(code, 1)
  t.match(err, "unknown field 'tolerence' %(did you mean 'tolerance'%?%)")
  -- Nothing near: no suggestion.
  code, _, err = klab("tasks --zzzzzz")
  t.eq(code, 2)
  t.ok(not err:find("did you mean", 1, true), err)
end

return T
