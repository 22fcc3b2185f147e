-- klab prompt: the exact messages a model would be sent for a task, before
-- a token is paid for.
--
--   klab prompt TASK [--tag T] [--language L] [--template F] [--system F]
--                    [--arch A] [--root DIR] [--tasks DIR]... [--json]
--
-- The messages are built by klab.experiment.prompt.messages, the function
-- an experiment calls for a trajectory's first turn, with the same
-- defaults, so what this prints is what a study with these settings sends.
local M = {}

M.summary = "print the messages a model would be sent for a task (system, user, knowledge packs)"

local USAGE = [[
usage: klab prompt TASK [--tag T] [--language L] [--template F] [--system F]
                        [--arch A] [--root DIR] [--tasks DIR]... [--json]

Prints the messages an experiment sends a model on the first turn of a
trajectory for TASK (a task and variant, gemm_bf16/8192x7168x5120, or a
task of one variant; a task of several variants is a group of them all,
as in an experiment's tasks list): the system message, then the user
message with the task's description and the tag's knowledge packs. Nothing
is sent anywhere. Use it as the first step of a prompt variation.

Options:
  --tag T        the condition's tag: names the knowledge packs attached
                 (prompts/packs/<part>.md for each part of T split at '+';
                 none and no-hint attach nothing); default none
  --language L   the language the kernel is asked in (an experiment's
                 languages): cuda, cute or triton, whose variant
                 prompts/languages/L.md says what to write, in which block,
                 and how it is launched; default cuda
  --template F   the user template (an experiment's prompt.user); default
                 task.md
  --system F     the system template (prompt.system); default system.md
  --arch A       the target architecture the templates name; default sm_90a
  --root DIR     the prompts folder (prompt.root): templates and packs are
                 read from DIR; default $KLAB_PROMPTS, ./prompts or the
                 repository's prompts/
  --tasks DIR    look for tasks in DIR first (repeatable), as klab tasks
  --json         print the messages as a JSON array of {role, content}
  -h, --help     print this help

A task, tag, language, template or pack that does not exist is 2, with the
way out.

]]

local command = require "klab.command"
local EXIT = command.EXIT
USAGE = USAGE .. command.EXIT_TEXT

local OPTIONS = { ["--tag"] = "value", ["--language"] = "value", ["--template"] = "value", ["--system"] = "value", ["--arch"] = "value",
  ["--root"] = "value", ["--tasks"] = "list", ["--json"] = "flag" }

local function parse(args)
  local o, err = command.options(args, OPTIONS)
  if not o or o.help then return o, err end
  if #o.positional ~= 1 then return nil, "expected one TASK" end
  o.task = o.positional[1]
  return o
end

-- A library message as a line for the user (no source position).
local function clean(msg) return (tostring(msg):gsub("^[^:\n]+%.lua:%d+: ", "")) end

function M.main(args)
  local o, code = command.parsed("prompt", USAGE, parse(args or {}))
  if not o then return code end
  local task = require "klab.task"
  task.use_path(o.tasks)
  local gok, group = pcall(require("klab.experiment").group, o.task)
  if gok then
    for _, w in ipairs(group.workloads) do
      local ok, why = pcall(task.get, w)
      if not ok then gok, group = false, why break end
    end
  end
  if not gok then return command.fail("prompt", task.hint(clean(group)), EXIT.usage) end
  local ok, msgs = pcall(require("klab.experiment.prompt").messages, { group = group, tag = o.tag or "none",
    language = o.language, arch = o.arch, system = o.system, user = o.template, root = o.root })
  if not ok then return command.fail("prompt", (clean(msgs):gsub("^prompt: ", "")), EXIT.usage) end
  if o.json then
    io.write(require("klab.json").encode(msgs), "\n")
  else
    for i, m in ipairs(msgs) do
      io.write(i > 1 and "\n" or "", "=== ", m.role, " ===\n", m.content, m.content:sub(-1) == "\n" and "" or "\n")
    end
  end
  return EXIT.ok
end

return M
