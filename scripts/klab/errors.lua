-- klab.errors: the errors klab raises for a person to read, with a kind.
--
--   errors.raise(kind, message [, fields])   raises errors.new(...)
--   errors.new(kind, message [, fields])     -> {kind=, message=, exit=, ...fields}
--   errors.is(e [, kind])                    -> whether e is one (of that kind)
--   errors.verbose()                         -> whether errors should carry their traceback
--   errors.KINDS                             kind -> exit status
--   errors.EXIT_TEXT                         the exit statuses, as every --help prints them
--   errors.did_you_mean(word, names)         -> " (did you mean 'x'?)" for a near name, else ""
--   errors.one_of(words)                     -> "a, b or c", for a message that lists the choices
--
-- Library code raises an error of a kind when the person running klab has
-- to act (a mistake in what was asked, something that could not run), and
-- says in its message what to do; it never decides how klab ends. The
-- command line (klab.command) and the script runner (app/runtime.c, which
-- prints the message as one line, with the traceback only under --verbose or
-- KLAB_DEBUG=1) end the process with the kind's exit status:
--   done         0  nothing went wrong (--help, a finished experiment)
--   failed       1  what was asked was done and failed, or could not be done
--   mistake      2  a mistake in the command line or its inputs (an option,
--                   a task or model name, a file, a store)
--   unavailable  3  could not run: nothing was measured (no GPU, no model
--                   server reachable)
--   signal    128+n stopped by signal n (fields.status), as the shell shows it

local M = {}

M.KINDS = { done = 0, failed = 1, mistake = 2, unavailable = 3 }

M.EXIT_TEXT = [[
Exit status:
  0  done (eval, replay: the candidate passed or target_not_executed)
  1  failed: the candidate's verdict is a failure (eval, replay); for other
     commands what was asked could not be done, and the message says why
  2  a mistake in the command line or its inputs (bad option, unknown
     command or task, missing file, unreadable store, a task whose
     reference or shipped baseline does not build or plan)
  3  could not run (no GPU or driver, profiling unavailable, model server
     unreachable): nothing was measured
]]

local Err = {}
Err.__index = Err
Err.__tostring = function(e) return e.message end

function M.new(kind, message, fields)
  local exit = M.KINDS[kind]
  if kind == "signal" then exit = fields and fields.status end
  if not exit then error("klab.errors: unknown kind '" .. tostring(kind) .. "'", 2) end
  local e = { kind = kind, message = tostring(message), exit = exit }
  for k, v in pairs(fields or {}) do
    if e[k] == nil then e[k] = v end
  end
  return setmetatable(e, Err)
end

function M.raise(kind, message, fields) error(M.new(kind, message, fields), 0) end

-- The edit distance of a and b (insertions, deletions, substitutions and
-- swaps of neighbours), for names a person may mistype.
local function distance(a, b)
  local prev2, prev, cur = nil, {}, {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      if prev2 and i > 1 and j > 1 and a:sub(i, i) == b:sub(j - 1, j - 1) and a:sub(i - 1, i - 1) == b:sub(j, j) then
        cur[j] = math.min(cur[j], prev2[j - 2] + 1)
      end
    end
    prev2, prev = prev, cur
  end
  return prev[#b]
end

function M.one_of(words)
  if #words < 2 then return words[1] or "" end
  return table.concat(words, ", ", 1, #words - 1) .. " or " .. words[#words]
end

function M.did_you_mean(word, names)
  word = tostring(word)
  local best, bd
  for _, n in ipairs(names) do
    local d = distance(word:lower(), tostring(n):lower())
    if not bd or d < bd then best, bd = n, d end
  end
  if best and bd < #word and bd <= math.max(1, math.min(3, #word // 3)) then return (" (did you mean '%s'?)"):format(best) end
  return ""
end

function M.is(e, kind) return getmetatable(e) == Err and (kind == nil or e.kind == kind) end

function M.verbose()
  local d = os.getenv("KLAB_DEBUG")
  return d ~= nil and d ~= "" and d ~= "0"
end

return M
