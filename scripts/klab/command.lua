-- klab.command: what every `klab COMMAND` and every experiment script does
-- with its command line and its exit status, so that they all answer alike.
--
--   local o, code = command.parsed("eval", USAGE, parse(args))
--   if not o then return code end
--   ...
--   return command.fail("eval", "no such task", command.EXIT.usage)
--
-- Exit statuses (one table for every command and experiment script;
-- docs/rules.md):
--   0  done (for eval and replay: the candidate passed, or was correct
--      with its target instructions not seen running)
--   1  the candidate failed (a failing verdict); for commands that judge no
--      candidate, what was asked could not be done
--   2  a mistake in what was asked: bad options, unknown command or task,
--      a missing file, a store that cannot be read
--   3  could not run: no GPU or driver, profiling unavailable when asked
--      for, a model server that nothing could reach; the verdict is unknown
-- (A script killed by a signal ends as the shell reports it: 128 + signal.)
local M = {}

M.EXIT = { ok = 0, failed = 1, usage = 2, could_not_run = 3 }

local errors = require "klab.errors"

-- The table as --help texts print it (klab --help, each command, and each
-- experiment script).
M.EXIT_TEXT = errors.EXIT_TEXT

-- The kind of error (klab.errors) that ends with each status.
local KIND_OF = { [0] = "done", [1] = "failed", [2] = "mistake", [3] = "unavailable" }

-- A user's mistake or a condition that ends a command with a given exit
-- status: a klab.errors object, printed by klab as its one line (no
-- traceback unless --verbose or KLAB_DEBUG=1) and turned into the exit
-- status. message should name the user's file and the way out.
function M.error_object(message, exit)
  return errors.new(KIND_OF[exit or M.EXIT.usage] or "failed", message)
end

-- Raises error_object(message, exit).
function M.raise(message, exit) error(M.error_object(message, exit), 0) end

M.verbose = errors.verbose
M.is_error = errors.is

-- A text as a terminal shows it (klab.report.escape.terminal).
local function shown(s) return require("klab.report.escape").terminal(s) end

-- o, err as a command's parser returns them. A bad command line prints
-- one line, "klab NAME: err; 'klab NAME --help' shows the options", on
-- stderr and gives nil, 2; --help (o.help) prints the usage on stdout and
-- gives nil, 0; else o.
function M.parsed(name, usage, o, err)
  if not o then return nil, M.usage_error(name, err) end
  if o.help then
    io.write(usage)
    return nil, M.EXIT.ok
  end
  return o
end

-- The one line of a bad command line (as parsed prints it); returns 2.
function M.usage_error(name, err)
  io.stderr:write("klab ", name, ": ", shown(err), "; 'klab ", name, " --help' shows the options\n")
  return M.EXIT.usage
end

-- Prints "klab NAME: msg" on stderr, as one line whose control characters
-- are shown escaped (a name in it may come from a store or a task folder);
-- returns code (default 1), the exit status.
function M.fail(name, msg, code)
  io.stderr:write("klab ", name, ": ", shown(msg), "\n")
  return code or M.EXIT.failed
end

-- A positive, finite number of seconds from a command-line string, or nil,
-- why. ("inf", "1e999" and "nan" are refused: a deadline must end.)
function M.seconds(s, what)
  local n = tonumber(s)
  if not n or n ~= n or n <= 0 or n == math.huge then
    return nil, ("%s needs a positive, finite number of seconds, not '%s'"):format(what, tostring(s))
  end
  return n
end

-- A whole number of at least least from a command-line string, or nil, why.
function M.count(s, what, least)
  local n = math.tointeger(tonumber(s))
  if not n or n < least then
    return nil, ("%s needs a whole number of at least %d, not '%s'"):format(what, least, tostring(s))
  end
  return n
end

-- What each kind of option does with its value (v) in o under key k.
local KINDS = {
  flag = true,
  value = function(v, o, k) o[k] = v end,
  list = function(v, o, k)
    o[k] = o[k] or {}
    o[k][#o[k] + 1] = v
  end,
  seconds = function(v, o, k, flag)
    local n, why = M.seconds(v, flag)
    if not n then return why end
    o[k] = n
  end,
  count = function(v, o, k, flag)
    local n, why = M.count(v, flag, 1)
    if not n then return why end
    o[k] = n
  end,
  count0 = function(v, o, k, flag)
    local n, why = M.count(v, flag, 0)
    if not n then return why end
    o[k] = n
  end,
  ratio = function(v, o, k, flag)
    local n = tonumber(v)
    if not n or n ~= n or n < 0 or n == math.huge then
      return ("%s needs a number of at least 0, not '%s'"):format(flag, tostring(v))
    end
    o[k] = n
  end,
}

-- Every command's argument parser. spec: {["--name"] = kind}, a kind
-- being "flag" (o.name = true), "value" (the next argument, or the text
-- after --name=), "list" (repeatable; the values in order), "seconds" (a
-- positive, finite number), "count" (a whole number >= 1), "count0"
-- (>= 0), "ratio" (a finite number >= 0), or function(v, o, key, flag) that stores v itself and returns
-- nil or why it is refused; ["-x"] = "--name" is an alias. Keys are the names
-- with dashes as underscores (--no-timing: o.no_timing). -h and --help are
-- always known; "--" ends the options; "-" is an argument. A value given
-- as the next argument may not start with "--" (a forgotten value would
-- swallow the next option); --name=--x gives one that does. Returns o
-- (o.positional: the other arguments, in order) | nil, why.
-- An option kind for --seed N: an evaluation's seed, as klab.eval.seed reads it.
function M.seed_option(v, o)
  local s, why = require("klab.eval.seed").parse(v)
  if not s then return "--seed: " .. why end
  o.seed = v
end

-- An option kind for --proof P: how much output the distributions' trials compare, and whether the correctness runs are timed.
function M.proof_option(v, o)
  if v ~= "sampled" and v ~= "full" then return "--proof needs 'sampled' or 'full', not '" .. v .. "'" end
  o.proof = v
end

function M.options(args, spec)
  local o = { positional = {} }
  local i, rest = 1, false
  while i <= #args do
    local a = args[i]
    if rest or a == "-" or a:sub(1, 1) ~= "-" then
      o.positional[#o.positional + 1] = a
    elseif a == "--" then
      rest = true
    elseif a == "-h" or a == "--help" then
      o.help = true
    else
      local flag, inline = a:match("^(%-%-[%w][%w-]*)=(.*)$")
      flag = flag or a
      local kind = spec[flag]
      if type(kind) == "string" and kind:sub(1, 1) == "-" then flag, kind = kind, spec[kind] end
      if kind == nil then
        local flags = { "--help" }
        for f in pairs(spec) do if f:sub(1, 2) == "--" then flags[#flags + 1] = f end end
        table.sort(flags)
        return nil, "unknown option " .. a .. errors.did_you_mean(flag, flags)
      end
      local key = flag:gsub("^%-+", ""):gsub("%-", "_")
      if kind == "flag" then
        if inline then return nil, "option " .. flag .. " takes no value" end
        o[key] = true
      else
        local v = inline
        if not v then
          i = i + 1
          v = args[i]
          if v and v:sub(1, 2) == "--" then v = nil end
        end
        if v == nil or v == "" then return nil, "option " .. flag .. " needs a value" end
        local store = type(kind) == "function" and kind or KINDS[kind]
        local why = store(v, o, key, flag)
        if why then return nil, why end
      end
    end
    i = i + 1
  end
  return o
end

-- The line for a task or candidate lookup's message (klab.task.hint).
function M.task_hint(msg) return require("klab.task").hint(msg) end

-- s quoted for a POSIX shell: safe whatever it holds.
function M.shell_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

return M
