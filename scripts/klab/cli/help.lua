-- klab --help: what the binary does, its options and its commands.
local M = {}

-- The commands' names, sorted.
local function names()
  local list = {}
  for name in pairs(package.preload) do
    local cmd = name:match("^klab%.cli%.([%w_]+)$")
    if cmd and cmd ~= "help" and cmd ~= "version" then list[#list + 1] = cmd end
  end
  table.sort(list)
  return list
end

local function commands()
  local list = names()
  local out = {}
  for _, cmd in ipairs(list) do
    local ok, mod = pcall(require, "klab.cli." .. cmd)
    local summary = ok and type(mod) == "table" and mod.summary or ""
    out[#out + 1] = string.format("  %-10s %s", cmd, summary)
  end
  return table.concat(out, "\n")
end

-- `klab WORD` where WORD is neither a command nor a file: one line, with
-- the command it is near (klab taks: did you mean 'tasks'?); exit 2.
function M.unknown_command(args)
  local word = tostring(args and args[1])
  io.stderr:write(("klab: '%s' is neither a command nor a script file%s; 'klab --help' lists the commands\n"):format(
    word, require("klab.errors").did_you_mean(word, names())))
  return require("klab.command").EXIT.usage
end

function M.main()
  io.write(([==[
klab: a judge for GPU kernels written by language models, scripted in Lua 5.4.

usage: klab [options] [script [args...]]
       klab COMMAND [args...]

Options:
  -e CHUNK       run the Lua chunk CHUNK
  -l MOD         require MOD and set the global of the same name
  -v, --version  print klab's version, the CUDA libraries found and whether
                 a CUDA driver and GPU are present
  -h, --help     print this help
  --verbose      print the traceback of an error (also: KLAB_DEBUG=1)
  -              run the script on standard input
  --             stop handling options

A script receives its arguments in the table arg (arg[0] is the script) and
as the chunk's varargs (...), as with the stand-alone lua; an integer it
returns is its exit status.

Commands (klab COMMAND --help for each):
%s

Environment:
  CUDA_HOME      CUDA toolkit used for ptxas, headers and libraries
                 (default: the one klab was built with)
  KLAB_SCRIPTS   read klab's Lua library from this directory instead of the
                 copy embedded in the binary (for development)
  KLAB_CACHE_DIR compile cache (default: $XDG_CACHE_HOME/klab/jit or ~/.cache/klab/jit)
  KLAB_DEBUG=1   print the traceback of an error (as --verbose)
  LUA_PATH, LUA_CPATH  as for lua

%s]==]):format(commands(), require("klab.command").EXIT_TEXT))
  return 0
end

return M
