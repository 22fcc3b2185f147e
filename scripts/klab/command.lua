-- klab.command: what every `klab COMMAND` does with its command line, so
-- that they all answer alike.
--
--   local o, code = command.parsed("eval", USAGE, parse(args))
--   if not o then return code end
--   ...
--   return command.fail("eval", "no such task", 1)
local M = {}

-- o, err as a command's parser returns them. A bad command line prints
-- "klab NAME: err" and the usage on stderr and gives nil, 2; --help
-- (o.help) prints the usage on stdout and gives nil, 0; else o.
function M.parsed(name, usage, o, err)
  if not o then
    io.stderr:write("klab ", name, ": ", tostring(err), "\n", usage)
    return nil, 2
  end
  if o.help then
    io.write(usage)
    return nil, 0
  end
  return o
end

-- Prints "klab NAME: msg" on stderr; returns code (default 1), the exit
-- status.
function M.fail(name, msg, code)
  io.stderr:write("klab ", name, ": ", tostring(msg), "\n")
  return code or 1
end

-- s quoted for a POSIX shell: safe whatever it holds.
function M.shell_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

return M
