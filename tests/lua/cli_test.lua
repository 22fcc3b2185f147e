-- cli_test.lua: what every klab command line shares: the exit-code table
-- (klab.command.EXIT) in every --help, one line for a user's mistake with
-- the traceback only under --verbose or KLAB_DEBUG=1, an unknown command,
-- a script's exit status, and the test runners' grouped skip lines.

local command = require "klab.command"
local sq = command.shell_quote

local T = {}

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function lines(s)
  local out = {}
  for l in s:gmatch("[^\n]+") do out[#out + 1] = l end
  return out
end

function T.exit_table_in_every_help(t)
  t.eq(command.EXIT.ok, 0) t.eq(command.EXIT.failed, 1) t.eq(command.EXIT.usage, 2) t.eq(command.EXIT.could_not_run, 3)
  local code, out = t.sh(sq(t.klab) .. " --help")
  t.eq(code, 0)
  t.ok(out:find(command.EXIT_TEXT, 1, true), "klab --help")
  for _, cmd in ipairs { "batch", "compile", "eval", "export", "merge", "replay", "report", "slurm", "tasks" } do
    code, out = t.sh(sq(t.klab) .. " " .. cmd .. " --help")
    t.eq(code, 0, cmd)
    t.ok(out:find(command.EXIT_TEXT, 1, true), "klab " .. cmd .. " --help shows the exit-code table")
  end
  for _, script in ipairs { "ptxbench_sweep", "kbv_best_of_5", "repair_loop", "quickstart" } do
    code, out = t.sh("cd " .. sq(t.root) .. " && " .. sq(t.klab) .. " experiments/" .. script .. ".lua --help")
    t.eq(code, 0, script)
    t.ok(out:find(command.EXIT_TEXT, 1, true), script .. ".lua --help shows the exit-code table")
  end
end

-- The one option parser every command uses.
function T.options_parser(t)
  local spec = { ["--json"] = "flag", ["--db"] = "value", ["--tasks"] = "list", ["--budget"] = "seconds",
    ["--runs"] = "count", ["--cpu"] = "count0", ["--output"] = "value", ["-o"] = "--output", ["--no-timing"] = "flag",
    ["--mode"] = function(v, o) if v ~= "a" then return "--mode must be a" end o.mode = v end }
  local o = assert(command.options({ "x", "--json", "--db", "s.db", "--tasks=a", "--tasks", "b", "--budget", "0.5",
    "--runs=3", "--cpu", "0", "-o", "out", "--no-timing", "--mode", "a", "-", "--", "--json", "y" }, spec))
  t.eq(o.json, true) t.eq(o.db, "s.db") t.eq(table.concat(o.tasks, ","), "a,b") t.eq(o.budget, 0.5)
  t.eq(o.runs, 3) t.eq(o.cpu, 0) t.eq(o.output, "out") t.eq(o.no_timing, true) t.eq(o.mode, "a")
  t.eq(table.concat(o.positional, " "), "x - --json y", "'-' is an argument; '--' ends the options")
  t.eq(assert(command.options({ "--db=--odd" }, spec)).db, "--odd", "--name= gives any value")
  t.eq(assert(command.options({ "-h" }, spec)).help, true)
  local function bad(args, pattern)
    local r, err = command.options(args, spec)
    t.eq(r, nil, table.concat(args, " "))
    t.match(err or "", pattern)
  end
  bad({ "--bogus" }, "^unknown option %-%-bogus$")
  bad({ "--db" }, "option %-%-db needs a value")
  bad({ "--db", "--json" }, "option %-%-db needs a value")
  bad({ "--db=" }, "option %-%-db needs a value")
  bad({ "--json=1" }, "option %-%-json takes no value")
  bad({ "--budget", "inf" }, "%-%-budget needs a positive, finite number of seconds")
  bad({ "--runs", "0" }, "%-%-runs needs a whole number of at least 1")
  bad({ "--cpu", "-1" }, "%-%-cpu needs a whole number of at least 0")
  bad({ "--mode", "b" }, "^%-%-mode must be a$")
end

function T.unknown_command_and_missing_script(t)
  local code, out, err = t.sh(sq(t.klab) .. " frobnicate")
  t.eq(code, 2)
  t.eq(out, "")
  t.eq(err, "klab: 'frobnicate' is neither a command nor a script file; 'klab --help' lists the commands\n")
  code, _, err = t.sh(sq(t.klab) .. " /nonexistent/myexp.lua")
  t.eq(code, 2)
  t.match(err, "^klab: cannot open /nonexistent/myexp%.lua")
  t.eq(#lines(err), 1)
  code, _, err = t.sh(sq(t.klab) .. " --frobnicate")
  t.eq(code, 2)
  t.match(err, "unknown option '%-%-frobnicate'")
end

-- klab batch: a folder of candidates or a JSONL list; a bad line names the
-- file and line; without a GPU nothing is measured (exit 3), and every
-- candidate still gets its line, in the order given.
function T.batch_lists_and_errors(t)
  local dir = t.tmpdir()
  local code, out, err = t.sh("cd " .. sq(t.root) .. " && " .. sq(t.klab) ..
    " batch softmax_bf16/1000x1023 tasks/softmax/bad --cpu 1")
  local rows = {}
  for l in out:gmatch("[^\n]+") do rows[#rows + 1] = l:match("^(%S+)") end
  t.eq(table.concat(rows, ","), "candidate,log_of_softmax,max_misses_half,modifies_input,no_max_shift,writes_past_end",
    "a header, then one line per candidate")
  t.match(err, "5 candidates in [%d.]+ s")
  t.eq(code, 0, "candidates judged (plan errors) is a batch that ran")
  -- A .cu file is a candidate too; without a GPU nothing is measured.
  local only = dir .. "/only"
  require("klab.sys").mkdir(only)
  write(only .. "/naive.cu", assert(require("klab.fs").read(t.root .. "/tasks/softmax/samples/naive/kernel.cu")))
  code, out = t.sh(sq(t.klab) .. " batch softmax_bf16/1000x1023 " .. sq(only) .. " --cpu 1")
  t.match(out, "\nnaive%.cu ")
  if out:find("unknown", 1, true) then
    t.eq(code, 3, "nothing measured: could not run")
    t.match(out, "naive%.cu +softmax_bf16/1000x1023 +not evaluated %(unknown%)")
  end
  -- An unknown task is a mistake, said before anything runs.
  code, out, err = t.sh(sq(t.klab) .. " batch no_such_task " .. sq(only) .. " --cpu 1")
  t.eq(code, 2)
  t.match(err, "^klab batch: no task named 'no_such_task'")
  t.eq(out, "", "nothing was evaluated")
  write(dir .. "/unknown.jsonl", '{"task": "softmax_bf16/1000x1023", "candidate": "' .. t.root ..
    '/tasks/softmax/samples/naive"}\n{"task": "nope/1x1", "candidate": "x"}\n')
  code, _, err = t.sh(sq(t.klab) .. " batch " .. sq(dir .. "/unknown.jsonl"))
  t.eq(code, 2)
  t.match(err, "unknown%.jsonl:2: no task named 'nope'")
  write(dir .. "/list.jsonl", '{"task": "softmax_bf16/1000x1023", "candidate": "' .. t.root ..
    '/tasks/softmax/samples/naive"}\n\n{"task": 5}\n')
  code, out, err = t.sh(sq(t.klab) .. " batch " .. sq(dir .. "/list.jsonl"))
  t.eq(code, 2)
  t.match(err, "list%.jsonl:3: expected")
  code, _, err = t.sh(sq(t.klab) .. " batch softmax_bf16/1000x1023 " .. sq(dir .. "/none"))
  t.eq(code, 2)
  t.match(err, "none")
  write(dir .. "/garbage.db", "not a database\n")
  code, _, err = t.sh(sq(t.klab) .. " batch softmax_bf16/1000x1023 " .. sq(only) .. " --db " .. sq(dir .. "/garbage.db"))
  t.eq(code, 2)
  t.match(err, "garbage%.db is not a klab store")
  code, _, err = t.sh(sq(t.klab) .. " batch softmax_bf16/1000x1023 " .. sq(dir) .. " --per-gpu 0")
  t.eq(code, 2)
  t.match(err, "%-%-per%-gpu needs a whole number")
end

-- A script's error: one line; the traceback with --verbose or KLAB_DEBUG=1.
function T.tracebacks_only_when_asked(t)
  local d = t.tmpdir()
  write(d .. "/broken.lua", "local function f(x) return x.y end\nreturn f(nil)\n")
  local code, _, err = t.sh(sq(t.klab) .. " " .. sq(d .. "/broken.lua"))
  t.eq(code, 1)
  t.match(err, "^klab: [^\n]*broken%.lua:1: attempt to index a nil value")
  t.ok(not err:find("stack traceback", 1, true), "no traceback by default: " .. err)
  t.match(err, "KLAB_DEBUG=1", "says how to see it")
  for _, how in ipairs { "KLAB_DEBUG=1 " .. sq(t.klab), sq(t.klab) .. " --verbose" } do
    code, _, err = t.sh(how .. " " .. sq(d .. "/broken.lua"))
    t.eq(code, 1)
    t.match(err, "stack traceback:", how)
  end
  -- A user's mistake raised as a klab.command error object: its line and its status.
  write(d .. "/mistake.lua", 'require("klab.command").raise("mistake.lua: give n=NUMBER", 2)\n')
  code, _, err = t.sh(sq(t.klab) .. " " .. sq(d .. "/mistake.lua"))
  t.eq(code, 2)
  t.eq(err, "mistake.lua: give n=NUMBER\n")
  code, _, err = t.sh("KLAB_DEBUG=1 " .. sq(t.klab) .. " " .. sq(d .. "/mistake.lua"))
  t.eq(code, 2)
  t.match(err, "^mistake%.lua: give n=NUMBER\nstack traceback:")
  -- A script's status is the integer it returns; a chunk that does not compile is 2.
  write(d .. "/three.lua", "return 3\n")
  code = t.sh(sq(t.klab) .. " " .. sq(d .. "/three.lua"))
  t.eq(code, 3)
  write(d .. "/syntax.lua", "return (\n")
  code, _, err = t.sh(sq(t.klab) .. " " .. sq(d .. "/syntax.lua"))
  t.eq(code, 2)
  t.match(err, "syntax%.lua:2:")
end

function T.seconds_refuse_what_never_ends(t)
  for _, s in ipairs { "inf", "1e999", "-1", "0", "nan", "x" } do
    local n, why = command.seconds(s, "--deadline")
    t.eq(n, nil, s)
    t.match(why, "^%-%-deadline needs a positive, finite number of seconds, not '")
  end
  t.eq(command.seconds("2.5", "--deadline"), 2.5)
end

-- The Lua runner reports skips once per reason, with the names on a line of their own.
function T.runner_groups_skips(t)
  local d = t.tmpdir()
  write(d .. "/three_test.lua", [[
return {
  a = function(t) t.skip("no widget: none here") end,
  b = function(t) t.skip("no widget: none here") end,
  c = function(t) t.skip("other reason") end,
  d = function(t) t.ok(true) end,
}
]])
  local code, out, err = t.sh(sq(t.klab) .. " " .. sq(t.root .. "/tests/lua/run.lua") .. " " .. sq(d .. "/three_test.lua"))
  t.eq(code, 0, err)
  t.match(out, "lua: 1 passed, 0 failed, 3 skipped")
  t.eq(err, "skip 2 tests: no widget: none here\n  tests: three_test.lua a, three_test.lua b\n"
    .. "skip 1 test: other reason\n  tests: three_test.lua c\n")
end

-- tests/run.sh sums the skip lines of every suite and build by reason, and
-- keeps each suite's output in BUILD/test-logs/.
function T.run_sh_groups_skips(t)
  local d = t.tmpdir()
  for _, b in ipairs { "b1", "b2" } do
    assert(require("klab.sys").mkdir(d .. "/" .. b .. "/tests"))
    write(d .. "/" .. b .. "/klab", "#!/bin/sh\n"
      .. "echo 'skip 34 tests: no GPU: no driver' >&2\necho '  tests: x_test.lua a, x_test.lua b' >&2\n"
      .. "echo 'lua: 5 passed, 0 failed, 34 skipped'\n")
    write(d .. "/" .. b .. "/tests/test_fake", "#!/bin/sh\necho 'skip tests/c/test_fake.c:9: no GPU: one case (AddressSanitizer build)' >&2\n"
      .. "echo 'ctest test_fake: 3 passed, 0 failed, 1 skipped'\n")
    os.execute("chmod +x " .. sq(d .. "/" .. b .. "/klab") .. " " .. sq(d .. "/" .. b .. "/tests/test_fake"))
  end
  local code, out = t.sh("sh " .. sq(t.root .. "/tests/run.sh") .. " " .. sq(d .. "/b1") .. " " .. sq(d .. "/b2"))
  t.eq(code, 0, out)
  t.match(out, "\nskip 68 tests: no GPU: no driver\n")
  t.match(out, "\nskip 2 tests: tests/c/test_fake%.c:9: no GPU: one case %(AddressSanitizer build%)\n")
  t.eq(select(2, out:gsub("AddressSanitizer", "")), 1, "a skip is not shown again as a sanitizer report")
  t.ok(not out:find("x_test.lua a", 1, true), "the names stay in the logs")
  t.match(out, "16 passed, 0 failed, 70 skipped\n$")
  local f = io.open(d .. "/b1/test-logs/lua.log")
  t.ok(f and f:read("a"):find("x_test.lua a", 1, true), "the names are in b1/test-logs/lua.log")
  if f then f:close() end
end

-- ---- experiment scripts ------------------------------------------------------

local SCRIPTS = { "ptxbench_sweep", "kbv_best_of_5", "repair_loop" }

local function script(t, name, args, env)
  return t.sh("cd " .. sq(t.root) .. " && " .. (env or "") .. sq(t.klab) .. " experiments/" .. name .. ".lua " .. (args or ""))
end

-- --help is generated from the declared options: every option with its
-- default and its description, then the exit-code table.
function T.experiment_scripts_have_help(t)
  local experiment = require "klab.experiment"
  for _, name in ipairs(SCRIPTS) do
    local code, out, err = script(t, name, "--help")
    t.eq(code, 0, name .. ": " .. err)
    t.eq(err, "", name .. ": no traceback, nothing on stderr")
    t.match(out, "^usage: klab experiments/" .. name .. "%.lua %[key=value %.%.%.%]\n")
    t.match(out, "\n  db=results/" .. name .. "%.db +the store %(created with its folder; run again to resume%)\n", name)
    for _, d in ipairs(experiment.MODEL_OPTION_LIST) do
      if not d.section then t.match(out, "\n  " .. d[1] .. "=", name .. " " .. d[1]) end
    end
    -- Every option has a description: on its line, or on the next when the default is long.
    local ls = lines(out)
    local n = 0
    for i, l in ipairs(ls) do
      if l:match("^  [%w_]+=") then
        n = n + 1
        t.ok(l:match("^  [%w_]+=%S*%s%s+%S") or (ls[i + 1] or ""):match("^%s%s%s%s+%S"), name .. ": described: " .. l)
      end
    end
    t.ok(n >= 20, name .. ": its options and the model's")
  end
end

function T.experiment_scripts_refuse_unknown_options_in_one_line(t)
  for _, name in ipairs(SCRIPTS) do
    local code, out, err = script(t, name, "bogus=1")
    t.eq(code, 2, name)
    t.eq(out, "")
    t.eq(#lines(err), 1, name .. ": one line: " .. err)
    t.match(err, "^experiments/" .. name .. "%.lua: unknown option 'bogus' %(known: [^)]*db, [^)]*%); 'klab experiments/"
      .. name .. "%.lua %-%-help' describes the options\n$", name)
  end
  local code, _, err = script(t, "ptxbench_sweep", "replicas=two")
  t.eq(code, 2)
  t.match(err, "option replicas needs a number, got 'two'")
  code, _, err = script(t, "ptxbench_sweep", "justaword")
  t.eq(code, 2)
  t.match(err, "expected key=value, got 'justaword'")
  -- The plain defaults table of older scripts still works.
  local o = require("klab.experiment").options({ n = 4, s = "a" }, { "n=5" })
  t.eq(o.n, 5) t.eq(o.s, "a")
end

-- A task that does not exist is named, with the script's line, before any request is sent.
function T.unknown_task_in_an_experiment_is_one_line(t)
  local d = t.tmpdir()
  write(d .. "/myexp.lua", 'local experiment = require "klab.experiment"\n'
    .. 'local exp = experiment.new { name = "x", db = arg[1] .. "/x.db", progress = false,\n'
    .. '  models = { { name = "m", provider = "openai", model = "m", base_url = "http://127.0.0.1:9/v1" } },\n'
    .. '  tasks = { "nope/1" } }\nreturn exp:run().status\n')
  local code, out, err = t.sh("cd " .. sq(t.root) .. " && " .. sq(t.klab) .. " " .. sq(d .. "/myexp.lua") .. " " .. sq(d))
  t.eq(code, 2)
  t.eq(out, "")
  t.match(err, "^[^\n]*myexp%.lua:2: experiment x: task nope/1: no task named 'nope' under tasks %('klab tasks' lists "
    .. "the tasks%)\n$")
end

-- A replay that lacks a response: one line naming the task, tag, replica,
-- turn and the file looked for, the way out, and status 2.
function T.replay_miss_is_one_line(t)
  local d = t.tmpdir()
  local code, out, err = script(t, "ptxbench_sweep", "models=klab-sample mode=replay responses_dir=experiments/responses/quickstart "
    .. "tags=none replicas=1 turns=1 tasks=gemm_bf16/128x4096x4096 db=" .. sq(d .. "/r.db"))
  t.eq(code, 2, out .. err)
  local l = lines(err)
  t.eq(l[#l], "replay: no stored response for task gemm_bf16/128x4096x4096, tag none, replica 1, turn 1 of model "
    .. "klab-sample (experiment ptxbench_sweep): not in the store and no file "
    .. "experiments/responses/quickstart/klab-sample/gemm_bf16/128x4096x4096/none/r1/turn1.md; run with "
    .. "mode=record-missing to ask the model for the missing ones")
  t.ok(not err:find("traceback", 1, true) and not err:find("%.lua:%d+:"), "no traceback, no internal position")
end

-- Trajectories with no result: the console's PTXBench cells say "not
-- measured" as the report's table does, not "n 2, correct 0, verified 0".
function T.console_cells_say_not_measured_as_the_report_does(t)
  local d = t.tmpdir()
  local db = d .. "/s.db"
  local code, out, err = script(t, "ptxbench_sweep", "models=m base_url=http://127.0.0.1:9/v1 tags=none replicas=2 "
    .. "turns=1 tasks=gemm_bf16/128x4096x4096 db=" .. sq(db))
  t.eq(code, 3, err)
  local l = lines(out)
  t.match(l[#l - 2], "^model +task +correct / verified / best +left out$")
  t.match(l[#l], "^m +gemm_bf16/128x4096x4096 +not measured +2 not measured$")
  t.ok(not out:find("0 / 0", 1, true) and not out:find(" 0 +0 ", 1), "no count of 0 for what was not measured")
  code, _, err = t.sh(sq(t.klab) .. " report " .. sq(db) .. " --out " .. sq(d .. "/r"))
  t.eq(code, 0, err)
  t.match(t.read(d .. "/r/tables/ptxbench_sm_90a.md"), "| m | not measured |")
end

-- A model server nobody can reach: the reason on the console, status 3.
function T.unreachable_server_is_reported_and_exits_3(t)
  local d = t.tmpdir()
  local code, out, err = script(t, "ptxbench_sweep", "models=m base_url=http://127.0.0.1:9/v1 tags=none replicas=1 "
    .. "turns=1 tasks=gemm_bf16/128x4096x4096 db=" .. sq(d .. "/sub/s.db"))
  t.eq(code, 3, "nothing could be evaluated: " .. err)
  t.match(err, "ptxbench_sweep: 1 request to model m %(http://127%.0%.0%.1:9/v1%) failed: [^\n]*Failed to connect to "
    .. "127%.0%.0%.1 port 9")
  t.match(out, "E request_error")
  t.ok(io.open(d .. "/sub/s.db") ~= nil, "the store's folder was made")
end

-- The quickstart's compile step shows progress (an empty cache takes a
-- while) and its table lines up whatever the paths' lengths.
function T.quickstart_compile_progress_and_alignment(t)
  local d = t.tmpdir()
  local deep = d .. "/a/rather/long/folder/of/kernels/for/the/table"
  assert(require("klab.sys").mkdir(deep))
  local src = assert(io.open(t.root .. "/tasks/samples/vector_add.ptx")):read("a")
  write(deep .. "/vector_add.ptx", src)
  local code, out, err = script(t, "quickstart", "sweep=false arch=sm_90a,sm_100a files=" .. sq(deep .. "/vector_add.ptx")
    .. ",tasks/samples/vector_add.cu", "KLAB_CACHE_DIR=" .. sq(d .. "/cache") .. " ")
  t.eq(code, 0, err)
  t.match(err, "compile 0/4")
  t.match(err, "compile 4/4")
  local col
  for _, l in ipairs(lines(out)) do
    local at = l:find("  sm_") or l:find("  arch  ")
    if at and (l:find("vector_add") or l:find("^file")) then
      col = col or at
      t.eq(at, col, "the arch column starts at the same place: " .. l)
    end
  end
  t.ok(col and col > #deep, "the file column is as wide as the longest path")
end

-- klab eval's text for a result whose baseline was the faster of two (a
-- kernel the task ships beside the library's), and for one whose kernel
-- beside the library's is broken (exit 2: the task is the mistake).
function T.eval_prints_the_baseline_choice(t)
  local ev = require "klab.cli.eval"
  local r = { task = "sum_last_f32/16384x16384", name = "k", candidate = "abc", arch = "sm_90a", verdict = "passed",
    reason = "ok", stages = { timing = { candidate = { median = 250, p10 = 249, p90 = 251, n = 40 }, method = "cupti",
      baseline = { median = 240 }, speedup = 0.96, baseline_info = { lib = "shipped" },
      baseline_choice = { chosen = "shipped", library = { median_us = 760.5 }, shipped = { median_us = 240.25 } } } } }
  local text = ev.human(r)
  t.match(text, "baseline   shipped kernel median 240%.00 us")
  t.match(text, "faster of two: shipped %(library 760%.50 us, shipped kernel 240%.25 us%)")
  t.eq(ev.status(r), 0)
  r.shipped_baseline_error = "baseline.cu:3: error: expected ';'"
  t.match(ev.human(r), "the shipped kernel beside the library's is broken: baseline%.cu:3")
  t.eq(ev.status(r), command.EXIT.usage)
end

return T
