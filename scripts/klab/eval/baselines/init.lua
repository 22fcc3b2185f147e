-- klab.eval.baselines: the baselines a task is timed against, each one file
-- of this folder, registered once in NAMES below. A task names a library's
-- with baseline.lib; a task that ships its own kernel (baseline.source)
-- gets "shipped". Whatever else asks about baselines (the baseline stage,
-- a shipped kernel's library prologue, `klab tasks --check`, klab eval's
-- summary) asks here.
--
--   baselines.NAMES          the names
--   baselines.get(name)      -> the baseline's module | nil, "no baseline library 'x' (...)"
--   baselines.of(task)       -> the name of the task's baseline ("shipped" or baseline.lib)
--   baselines.title(name)    -> how a person calls it ("cuBLASLt"); the name itself when unknown
--   baselines.check(task)    -> true | nil, message, field: the baseline's own check
--                               without a GPU (`klab tasks --check`), where it has one
--
-- A baseline module has:
--   title                      its name for a person
--   prepare(W, task, io, opts) -> runner | nil, reason (in the worker; see cublaslt.lua)
--   check(task)                (optional) -> true | nil, message, field (the task file's field
--                              that is wrong), with no GPU
--
-- A new baseline is one file here and its name in NAMES.

local M = {}

M.NAMES = { "cublaslt", "cudnn", "shipped" }

function M.get(name)
  for _, n in ipairs(M.NAMES) do
    if n == name then return require("klab.eval.baselines." .. n) end
  end
  return nil, ("no baseline library '%s'%s (klab has %s)"):format(tostring(name),
    require("klab.errors").did_you_mean(name, M.NAMES), table.concat(M.NAMES, ", "))
end

function M.of(task)
  local b = task.baseline
  return b.kind == "shipped" and "shipped" or b.lib
end

function M.title(name)
  local b = M.get(name)
  return b and b.title or tostring(name)
end

function M.check(task)
  local b, why = M.get(M.of(task))
  if not b then return nil, why, "baseline.lib" end
  if not b.check then return true end
  return b.check(task)
end

return M
