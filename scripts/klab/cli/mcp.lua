-- klab mcp: klab's tools for coding agents, over the Model Context Protocol
-- on standard input and output (klab.agent.mcp, klab.agent.tools).
--
--   klab mcp [--root DIR] [--tasks DIR]... [--arch sm_XY] [--deadline S] [--max-message BYTES]
local M = {}

M.summary = "serve klab's tools (tasks, compile, run, profile, evaluate) to coding agents over MCP (stdio)"

local USAGE = [[
usage: klab mcp [options]

Serves the Model Context Protocol on standard input and output (JSON-RPC
2.0, one message per line), so that a coding agent can use klab as its
judge. An agent's MCP configuration starts it as a command; docs/agents.md
shows one. Tools, each with a JSON schema of its arguments:

  list_tasks     the tasks: name, family, shape, FLOPs, tags
  describe_task  one task: the text a model reads, buffers (dtype, shape,
                 layout), tolerances, targets, default plan, variants
  compile        a candidate's registers, spills, shared memory, census of
                 PTX instruction families, compiler log and errors
  run            the candidate once on the task's smallest variant:
                 correct or not, with the worst element (GPU)
  profile        the compact profile of the instruction stage (GPU)
  evaluate       a full evaluation, the record `klab eval --json` prints (GPU)

A candidate is a folder inside the workspace (kernel.cu or kernel.ptx and
optionally plan.lua), named by its path relative to the workspace, and is
held to the rules `klab eval` applies to a folder. A path that leaves the
workspace, a link out of it or a candidate the rules refuse is a tool
error with a one-line reason, as is a GPU tool on a machine without one.
Nothing the client sends ends the server; it ends when its input ends.

Options:
  --root DIR        the workspace: candidates are read only inside it
                    (default: the current folder)
  --tasks DIR       look for tasks in DIR first (repeatable); then in the
                    folders of $KLAB_TASKS (dir1:dir2), then in tasks/
  --arch sm_XY      default compile target (default: sm_90a)
  --deadline S      kill an evaluation's worker after S seconds (default 180)
  --max-message N   the longest message read, in bytes (default 1048576);
                    a longer line is refused with an error and skipped
  -h, --help        print this help

Here 0 means the client closed the connection; 2 a mistake in the command
line (a --root that is no folder).

]]

local command = require "klab.command"
local EXIT = command.EXIT
USAGE = USAGE .. command.EXIT_TEXT

local OPTIONS = { ["--root"] = "value", ["--tasks"] = "list", ["--arch"] = "value", ["--deadline"] = "seconds",
  ["--max-message"] = "count" }

local function parse(args)
  local o, err = command.options(args, OPTIONS)
  if o and #o.positional > 0 then return nil, "unknown argument '" .. o.positional[1] .. "'" end
  return o, err
end

function M.main(args)
  local o, code = command.parsed("mcp", USAGE, parse(args or {}))
  if not o then return code end
  if o.arch then
    local ok, why = require("klab.jit").check_arch(o.arch)
    if not ok then return command.fail("mcp", "--arch: " .. tostring(why), EXIT.usage) end
  end
  require("klab.task").use_path(o.tasks)
  local tools = require "klab.agent.tools"
  local ctx, why = tools.context { root = o.root or ".", arch = o.arch, deadline = o.deadline }
  if not ctx then return command.fail("mcp", "--root: " .. why, EXIT.usage) end
  -- Standard output carries messages only: anything else klab would print
  -- while it serves goes to standard error.
  local out = io.stdout
  local saved_print, saved_write = print, io.write
  print = function(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    io.stderr:write(table.concat(parts, "\t"), "\n")
  end
  io.write = function(...) return io.stderr:write(...) end
  local ok, ended = pcall(require("klab.agent.mcp").serve, { input = io.stdin, output = out, log = io.stderr,
    ctx = ctx, max_message = o.max_message })
  print, io.write = saved_print, saved_write
  ctx:close()
  if not ok then error(ended, 0) end
  io.stderr:write("klab mcp: ", ended, "\n")
  return EXIT.ok
end

return M
