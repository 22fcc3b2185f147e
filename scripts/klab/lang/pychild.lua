-- klab.lang.pychild: what the front ends of the Python languages (Triton,
-- CuTe DSL) share: their pinned environment, the confined child that turns
-- a kernel.py into PTX (host/lang/pychild.h), klab's ptxas on that PTX, and
-- the build that runs the plan first.
--
--   pychild.venv(folder, title, version, package)
--       -> the environment <language folder>/FOLDER | nil, reason
--   pychild.compile(lang, title, o, request [, check])
--       -> jit result, the driver's answer, the child's outcome
--          | nil, message, code [, partial]
--       o: {code=, name=, arch=, cache=}; request: the driver's REQUEST (a
--       table); check(answer) -> nil | message, code: the language's own
--       refusals before ptxas. An error of the child is its one line,
--       without the candidate's prints (its log).
--   pychild.build(run, front) -> lang.compile's returns
--       front: {title=, plan_hint=, shape(task, value, meta), compile(o),
--       meta(res)}: the plan runs first (what the language compiles may
--       depend on it), completed by front.shape; then front.compile; then
--       run.complete_plan is left for the plan stage, completing with
--       front.meta(res).

local fs = require "klab.fs"
local jit = require "klab.jit"
local json = require "klab.json"
local versions = require "klab.lang.versions"

local M = {}

function M.venv(folder, title, version, package)
  local dir = versions.dir()
  local venv = dir and (dir .. "/" .. folder)
  if not venv or not fs.type(venv .. "/bin/python3") then
    return nil, string.format("%s %s is not installed%s (make deps installs %s from PyPI)", title, version,
      venv and (" in " .. venv) or "", package)
  end
  return venv
end

local function first_line(s)
  return (s or ""):match("[^\n]+")
end

function M.compile(lang, title, o, request, check)
  local out, err, code = require("klab.pychild").ptx { lang = lang, venv = o.venv, source = o.code, name = o.name,
    request = json.encode(request) }
  if not out then return nil, err, code end
  local ok, answer = pcall(json.decode, out.answer)
  if not ok or type(answer) ~= "table" then
    local msg = first_line(out.log:match("(%w*Error[^\n]*)%s*$")) or ("the " .. title
      .. " compiler exited with status " .. tostring(out.exit_code) .. " without a result")
    return nil, o.name .. ": " .. msg, "ECOMPILE"
  end
  if answer.error then
    local msg = tostring(answer.error)
    if msg:find("MemoryError", 1, true) then
      msg = ("%s: the %s compiler exceeded its %d GiB memory limit"):format(o.name, title, out.limits.memory >> 30)
    end
    return nil, msg, "ECOMPILE"
  end
  if check then
    local why, wcode = check(answer)
    if why then return nil, o.name .. ": " .. why, wcode or "ECOMPILE" end
  end
  if type(answer.ptx) ~= "string" or type(answer.name) ~= "string" then
    return nil, o.name .. ": the " .. title .. " compiler's answer has no PTX", "ECOMPILE"
  end
  local res, jerr, jcode, partial = jit.compile { source = answer.ptx, lang = "ptx", arch = o.arch, name = o.name,
    cache = o.cache }
  if not res then return nil, jerr, jcode, partial end
  return res, answer, out
end

function M.build(run, front)
  local c, task = run.cand, run.task
  local name = c.file or c.name
  if not c.plan then
    return nil, name .. ": a " .. front.title .. " candidate brings its plan.lua (" .. front.plan_hint .. ")", "EPLAN"
  end
  local plan_mod = require "klab.eval.plan"
  local raw
  local plan, perr = plan_mod.run(task, c.plan, { arch = run.arch, name = c.plan_file,
    complete = function(v) raw = v; return front.shape(task, v, nil) end })
  if not plan then return nil, perr, "EPLAN" end
  local res, err, code, partial = front.compile { code = c.code, name = name, arch = run.arch, task = task,
    plan = plan, plan_value = raw, cache = run.opts.cache }
  if res then
    local meta = front.meta(res)
    run.complete_plan = function(v) return front.shape(task, v, meta) end
  end
  return res, err, code, partial
end

return M
