-- `klab prompt`: the messages an experiment would send, printed before a
-- token is paid for, built by the experiment's own function; and
-- `klab tasks --json` carrying each task's description and default plan.
local cjson = require "cjson"
local prompt = require "klab.experiment.prompt"

local T = {}

local q = require("klab.command").shell_quote

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

function T.prompt_prints_what_an_experiment_sends(t)
  local root = t.tmpdir()
  t.eq((t.sh(("cp -r %s/prompts/. %s"):format(q(t.root), q(root)))), 0)
  write(root .. "/packs/tma.md", "TMA NOTES: use cp.async.bulk.tensor.\n")
  write(root .. "/mine.md", "Task ${task_name} for ${arch}:\n${task}\n${knowledge}\n")
  local cmd = ("cd %s && %s prompt softmax_bf16/1000x1023 --tag tma --template mine.md --root %s --arch sm_100a --json")
    :format(q(t.root), q(t.klab), q(root))
  local code, out, err = t.sh(cmd)
  t.eq(code, 0, err)
  local got = cjson.decode(out)
  local want = prompt.messages { group = { name = "softmax_bf16/1000x1023", workloads = { "softmax_bf16/1000x1023" } },
    tag = "tma", arch = "sm_100a", user = "mine.md", root = root }
  t.eq(#got, 2)
  for i = 1, 2 do
    t.eq(got[i].role, want[i].role)
    t.eq(got[i].content, want[i].content, "message " .. i .. " is the experiment's")
  end
  t.match(got[2].content, "^Task softmax_bf16/1000x1023 for sm_100a:")
  t.match(got[2].content, "TMA NOTES", "the tag's knowledge pack is attached")
  t.match(got[2].content, "void softmax%(const __nv_bfloat16 %*X")
  -- As text: each message under its role.
  code, out = t.sh(("cd %s && %s prompt softmax_bf16/1000x1023"):format(q(t.root), q(t.klab)))
  t.eq(code, 0)
  t.match(out, "^=== system ===\n")
  t.match(out, "\n=== user ===\nWrite a CUDA kernel named `softmax`")
  -- Mistakes are one line and exit 2.
  code, _, err = t.sh(("cd %s && %s prompt softmax_bf16/1000x1023 --template nope.md"):format(q(t.root), q(t.klab)))
  t.eq(code, 2)
  t.match(err, "^klab prompt: .*no template nope%.md")
  -- A template written in one's own folder, named as docs/experiments.md's step 2 would: the
  -- message says where names are read and the way out, and the absolute path works.
  local d = t.tmpdir()
  local f = assert(io.open(d .. "/mine.md", "w"))
  f:write("MINE ${task_name}\n")
  f:close()
  code, _, err = t.sh(("cd %s && %s prompt softmax_bf16/1000x1023 --template mine.md"):format(q(d), q(t.klab)))
  t.eq(code, 2)
  t.match(err, "^klab prompt: no template mine%.md %(looked in [^;]*/prompts; a template's name is read in the "
    .. "prompts folder: put it there, set prompt%.root %(klab prompt %-%-root DIR%) to a copy of that folder that "
    .. "holds it, or give its absolute path%)\n$")
  code, out = t.sh(("cd %s && %s prompt softmax_bf16/1000x1023 --template %s"):format(q(d), q(t.klab), q(d .. "/mine.md")))
  t.eq(code, 0)
  t.match(out, "\n=== user ===\nMINE softmax_bf16/1000x1023\n$")
  -- A base name with several variants, as a user types it: the line names no library function.
  code, _, err = t.sh(("cd %s && %s eval softmax_bf16 %s"):format(q(d), q(t.klab), q(t.root .. "/tasks/softmax/samples/naive")))
  t.eq(code, 2)
  t.match(err, "^klab eval: 'softmax_bf16' has %d+ variants; name one %(e%.g%. 'softmax_bf16/[%dx]+'%)\n$")
  code, _, err = t.sh(("cd %s && %s prompt nosuch_task"):format(q(t.root), q(t.klab)))
  t.eq(code, 2)
  t.match(err, "no task named 'nosuch_task'")
  code, out = t.sh(("%s prompt --help"):format(q(t.klab)))
  t.eq(code, 0)
  t.match(out, "usage: klab prompt TASK")
  code, out = t.sh(("%s --help"):format(q(t.klab)))
  t.match(out, "\n  prompt +print the messages a model would be sent")
end

-- --language: the variant a study of that language sends (an experiment's
-- languages), made by the same function; a name klab does not know is 2.
function T.prompt_language(t)
  local group = { name = "softmax_bf16/1000x1023", workloads = { "softmax_bf16/1000x1023" } }
  local code, out, err = t.sh(("cd %s && %s prompt softmax_bf16/1000x1023 --language triton --json"):format(q(t.root),
    q(t.klab)))
  t.eq(code, 0, err)
  local got = cjson.decode(out)
  local want = prompt.messages { group = group, tag = "none", language = "triton" }
  t.eq(got[1].content, want[1].content, "the Triton study's system message")
  t.match(got[1].content, "in one ```python block")
  t.ok(got[1].content ~= prompt.messages { group = group, tag = "none" }[1].content, "not the CUDA C++ one")
  code, _, err = t.sh(("cd %s && %s prompt softmax_bf16/1000x1023 --language trition"):format(q(t.root), q(t.klab)))
  t.eq(code, 2)
  t.match(err, "^klab prompt: unknown language 'trition' %(did you mean 'triton'%?%) %(known: cuda, cute, triton%)\n$")
  code, out = t.sh(("%s prompt --help"):format(q(t.klab)))
  t.match(out, "%-%-language L +the language the kernel is asked in")
end

function T.tasks_json_carries_description_and_plan(t)
  local code, out, err = t.sh(("cd %s && %s tasks --json --family softmax"):format(q(t.root), q(t.klab)))
  t.eq(code, 0, err)
  local list = cjson.decode(out)
  t.ok(#list > 0)
  local task = require("klab.task").get(list[1].name)
  t.eq(list[1].description, task.description)
  t.eq(list[1].plan, task.plan)
  t.match(list[1].plan, "launches")
end

return T
