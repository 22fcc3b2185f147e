-- agent_study_test.lua: tool-calling studies (klab.agent.study) end to end
-- against the scripted model server (tests/server/model_server.py), whose
-- replies carry tool calls in each provider's format. Offline: compile
-- answers, run and profile answer the no-GPU tool error, and a submission
-- is stored awaiting `klab judge` (generate phase). On a GPU machine the
-- phase is forced to generate too, so the test reads the same.

local json = require "klab.json"
local store = require "klab.store"
local study = require "klab.agent.study"
local wire = require "klab.agent.wire"

local T = {}

local function with_server(t, fn) return dofile(t.root .. "/tests/server/model_server.lua").with(t, fn) end

local TASK = "gemm_bf16/123x457x789"

-- The shipped naive GEMM sample, as a model would send it.
local function sample(file)
  local root = debug.getinfo(1, "S").source:sub(2):match("^(.*)/tests/lua/[^/]*$") or "."
  local f = assert(io.open(root .. "/tasks/gemm/samples/naive/" .. file, "rb"))
  local text = f:read("a")
  f:close()
  return text
end
local CODE, PLAN = sample("kernel.cu"), sample("plan.lua")
local BROKEN = CODE:gsub("float acc = 0%.0f;", "float acc = 0.0f")
assert(BROKEN ~= CODE, "the broken copy differs")

local function model(s, provider)
  local m = { name = provider == "openai" and "oa" or "an", provider = provider, model = "test-" .. provider,
    base_url = provider == "openai" and (s.base .. "/v1") or s.base, max_tokens = 1000,
    retry = { attempts = 2, base = 0.05, max = 0.2, budget = 30 }, timeout = 10, connect_timeout = 5 }
  return m
end

local function calls(...) return { tool_calls = { ... } } end
local function call(name, arguments) return { name = name, arguments = arguments } end

-- The conversation a trajectory holds in the store.
local function conversation(db, name)
  local row = db:first([[SELECT t.id, t.messages, t.state, t.stop_reason FROM trajectories t
      JOIN experiments e ON e.id = t.experiment_id WHERE e.name = ?]], name)
  return json.decode(row.messages), row
end

local function tool_results(msgs)
  local out = {}
  for _, m in ipairs(msgs) do if m.role == "tool" then out[#out + 1] = m end end
  return out
end

-- The model works: compiles broken then good code, tries to run (no GPU),
-- sends bad arguments, submits; the submission awaits judgement.
local function script_a_session(s)
  s:script {
    calls(call("compile", { code = BROKEN }), call("compile", { code = CODE, plan = PLAN })),
    calls(call("run", { code = CODE, plan = PLAN })),
    calls(call("compile", { code = CODE, colour = "red" }), { name = "compile", arguments_text = "{not json" },
      call("read_file", { path = "/etc/passwd" })),
    calls(call("submit", { code = CODE, plan = PLAN })),
  }
end

local function run_study(t, s, db, name, provider, extra)
  local spec = { name = name, db = db, models = { model(s, provider) }, tasks = { TASK }, phase = "generate",
    budgets = { tool_calls = 12, submissions = 2 } }
  for k, v in pairs(extra or {}) do spec[k] = v end
  local st <close> = study.new(spec)
  return st:run()
end

function T.openai_tool_calls_end_to_end_then_replay(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/study.db"))
    script_a_session(s)
    local sum = run_study(t, s, db, "tools-oa", "openai")
    t.eq(sum.requests, 4, "four model steps")
    t.eq(sum.tool_calls, 7)
    t.eq(sum.submissions, 1)
    t.eq(sum.phase, "generate")
    local msgs, row = conversation(db, "tools-oa")
    t.eq(row.state, "done")
    t.eq(row.stop_reason, "awaiting_judgement")
    t.eq(msgs[1].role, "system")
    t.match(msgs[2].content, "You work with tools", "the tools template")
    local res = tool_results(msgs)
    t.eq(#res, 7, "every call answered")
    local broken = json.decode(res[1].content)
    t.eq(broken.ok, false, "broken code: a compile error is an answer")
    t.ok(not res[1].is_error)
    local good = json.decode(res[2].content)
    t.eq(good.ok, true)
    t.eq(good.kernels[1].name, "gemm")
    t.ok(good.kernels[1].registers > 0, "registers")
    t.eq(good.compile_ms, nil, "nothing that changes from run to run")
    if not require("klab.gpu").available() then
      t.eq(res[3].is_error, true)
      t.match(res[3].content, "^no GPU here")
    end
    t.match(res[4].content, "unknown argument 'colour'")
    t.match(res[5].content, "not a JSON object")
    t.match(res[6].content, "^no tool 'read_file'")
    t.eq(res[4].is_error and res[5].is_error and res[6].is_error, true)
    local sub = json.decode(res[7].content)
    t.eq(sub.status, "awaiting_judgement")
    t.eq(sub.submissions_left, 1)
    -- token counts on every assistant message
    local assistants = 0
    for _, m in ipairs(msgs) do
      if m.role == "assistant" then
        assistants = assistants + 1
        t.ok(m.usage.input > 0 and m.usage.output > 0, "tokens of step " .. assistants)
        t.eq(#m.request_hash, 64)
      end
    end
    t.eq(assistants, 4)
    -- the submission is the trajectory's turn, awaiting judgement
    local turns = db:query("SELECT * FROM turns WHERE trajectory_id = ?", row.id)
    t.eq(#turns, 1)
    t.eq(turns[1].awaiting, 1)
    t.eq(turns[1].verdict, "unknown")
    t.ok(turns[1].candidate and db:first("SELECT hash FROM candidates WHERE hash = ?", turns[1].candidate),
      "the candidate is stored")
    t.ok(turns[1].input_tokens > 0, "the turn carries the tokens spent on it")
    -- the wire: tools offered, tool results sent back in OpenAI's format
    local log = s:log()
    t.eq(#log, 4)
    local first = json.decode(log[1].body)
    t.eq(#first.tools, 4)
    t.eq(first.tools[1].type, "function")
    t.eq(first.tools[1]["function"].parameters.type, "object")
    local second = json.decode(log[2].body)
    local back = second.messages[#second.messages]
    t.eq(back.role, "tool")
    t.eq(back.tool_call_id, "call_1_1")
    local asked = second.messages[#second.messages - 2]
    t.eq(asked.role, "assistant")
    t.eq(asked.tool_calls[1]["function"].name, "compile")
    t.eq(type(asked.tool_calls[1]["function"].arguments), "string", "arguments go back as JSON text")
    local cfg = json.decode(db:first("SELECT config FROM experiments WHERE name = 'tools-oa'").config)
    t.eq(cfg.policy, "tools")
    t.eq(cfg.budgets.tool_calls, 12)
    t.eq(cfg.budgets.submissions, 2)
    -- Replay: the same study under another name, from the store only.
    local rsum = run_study(t, s, db, "tools-oa-replay", "openai", { mode = "replay" })
    t.eq(#s:log(), 4, "the replay sent nothing")
    t.eq(rsum.requests, 4)
    t.eq(rsum.submissions, 1)
    local rmsgs = conversation(db, "tools-oa-replay")
    t.eq(#rmsgs, #msgs)
    for i, m in ipairs(msgs) do
      t.eq(rmsgs[i].content, m.content, "message " .. i .. " replayed")
      t.eq(rmsgs[i].request_hash, m.request_hash)
    end
  end)
end

function T.anthropic_tool_use_blocks(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/study.db"))
    s:script {
      { reply = "Let me compile first.", tool_calls = { call("compile", { code = CODE, plan = PLAN }),
        call("profile", { code = CODE }) } },
      { reply = "Done." },
    }
    local sum = run_study(t, s, db, "tools-an", "anthropic")
    t.eq(sum.requests, 2)
    local msgs, row = conversation(db, "tools-an")
    t.eq(row.stop_reason, "model_stopped", "a reply without a tool call ends the trajectory")
    local log = s:log()
    local first = json.decode(log[1].body)
    t.eq(first.tools[1].name, "compile")
    t.eq(first.tools[1].input_schema.type, "object")
    t.ok(first.system, "the system message at the top")
    local second = json.decode(log[2].body)
    local asked, back = second.messages[#second.messages - 1], second.messages[#second.messages]
    t.eq(asked.role, "assistant")
    t.eq(asked.content[1].type, "text")
    t.eq(asked.content[2].type, "tool_use")
    t.eq(asked.content[2].input.code, CODE)
    t.eq(back.role, "user")
    t.eq(#back.content, 2, "both results in one user message")
    t.eq(back.content[1].type, "tool_result")
    t.eq(back.content[1].tool_use_id, "toolu_1_0")
    t.eq(#tool_results(msgs), 2)
  end)
end

function T.budgets_refuse_with_a_message(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/study.db"))
    local c = call("compile", { code = CODE })
    s:script { calls(c, c, c), calls(c), calls(c) }
    local sum = run_study(t, s, db, "tight", "openai", { budgets = { tool_calls = 2, submissions = 1 } })
    local msgs, row = conversation(db, "tight")
    local res = tool_results(msgs)
    t.eq(#res, 4)
    t.eq(res[2].is_error, nil)
    t.eq(res[3].is_error, true)
    t.match(res[3].content, "^budget: 2 of 2 tool calls used; this call did not run")
    t.match(res[4].content, "^budget: 2 of 2 tool calls")
    t.eq(sum.requests, 2, "told once, refused again: the trajectory ends")
    t.eq(row.stop_reason, "budget: refused")
    t.eq(#s:log(), 2)
    -- a limit on tokens ends a trajectory before its next request
    s:script { calls(c), calls(c) }
    local few = run_study(t, s, db, "few-tokens", "openai", { budgets = { tokens = 1 } })
    local _, row2 = conversation(db, "few-tokens")
    t.eq(row2.stop_reason, "budget: tokens")
    t.eq(few.requests, 1, "one request, then the budget")
    t.eq(#s:log(), 2, "(the same first request as tight's: answered from the response cache)")
    t.raises(function() study.new { name = "x", db = db, models = { model(s, "openai") }, tasks = { TASK },
      budgets = { tool_call = 3 } } end, "unknown limit 'tool_call' %(did you mean 'tool_calls'%?%)")
  end)
end

function T.a_second_submission_that_fails_to_compile_is_a_turn(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/study.db"))
    s:script { calls(call("submit", { code = BROKEN })), calls(call("submit", { code = BROKEN })) }
    run_study(t, s, db, "subs", "openai")
    local _, row = conversation(db, "subs")
    local turns = db:query("SELECT verdict FROM turns WHERE trajectory_id = ? ORDER BY turn", row.id)
    t.eq(#turns, 2)
    t.eq(turns[1].verdict, "compile_error", "judged here: no GPU needed to refuse it")
    t.eq(row.stop_reason, "max_submissions")
  end)
end

-- klab judge takes the study's submissions (offline: they wait on), refuses
-- --continue (a tool-calling trajectory has no repair turns), and klab
-- report --by policy sets the study beside a turn-based one.
function T.judge_and_report_by_policy(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db = dir .. "/both.db"
    local m = { provider = "openai", model = "m", base_url = s.base .. "/v1", retry = { attempts = 1 } }
    s:script { calls(call("submit", { code = CODE, plan = PLAN })) }
    local st = study.new { name = "agentic", db = db, models = { m }, tasks = { TASK }, phase = "generate" }
    st:run()
    st:close()
    s:script { { reply = "```cuda\n" .. CODE .. "```\n```lua\n" .. PLAN .. "```\n" } }
    local exp = require("klab.experiment").new { name = "classic", db = db, models = { m }, tasks = { TASK },
      phase = "generate", progress = false }
    exp:run()
    exp:close()
    local sq = require("klab.command").shell_quote
    local code, out, err = t.sh(sq(t.klab) .. " judge " .. sq(db) .. " --experiment agentic")
    if not require("klab.gpu").available() then
      t.eq(code, 3, "no GPU: the submission waits on")
      t.match(err, "nothing could be judged here")
    end
    code, out, err = t.sh(sq(t.klab) .. " judge " .. sq(db) .. " --experiment agentic --continue models=m base_url="
      .. sq(s.base .. "/v1") .. " turns=3 replicas=1")
    t.eq(code, 2)
    t.match(err, "is a tool%-calling study: klab judge stores its submissions' verdicts; %-%-continue asks repair turns")
    code, out, err = t.sh(sq(t.klab) .. " report " .. sq(db) .. " --by policy --out " .. sq(dir .. "/report"))
    t.eq(code, 0, err)
    local cost = t.read(dir .. "/report/tables/cost.md") or ""
    t.match(cost, "Condition \\%(policy\\%)")
    t.match(cost, "| tools | 1 |")
    t.match(cost, "| turns | 1 |")
  end)
end

-- experiments/tools_study.lua: the study from the command line.
function T.the_experiment_script(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    s:script { calls(call("compile", { code = CODE })), { reply = "I am done." } }
    local sq = require("klab.command").shell_quote
    local code, out, err = t.sh("cd " .. sq(t.root) .. " && " .. sq(t.klab) .. " experiments/tools_study.lua db="
      .. sq(dir .. "/s.db") .. " models=m base_url=" .. sq(s.base .. "/v1") .. " phase=generate submissions=2")
    t.eq(code, 0, err)
    t.match(out, "^tools_study: 1 trajectories, 2 model requests, 1 tool calls, 0 submissions %(generate phase%)")
    local db <close> = assert(store.open(dir .. "/s.db"))
    t.eq(json.decode(db:first("SELECT config FROM experiments").config).budgets.submissions, 2)
  end)
end

-- On a GPU: a study in the full phase whose model compiles, runs, profiles
-- and submits the shipped wgmma/TMA sample reaches passed on a GEMM task.
function T.gpu_study_reaches_passed_on_gemm(t)
  t.need_gpu()
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/gpu.db"))
    local sample = t.root .. "/tasks/gemm/samples/wgmma_tma/"
    local args = { code = assert(t.read(sample .. "kernel.cu")), plan = assert(t.read(sample .. "plan.lua")) }
    s:script { calls(call("compile", args), call("run", args), call("profile", args)), calls(call("submit", args)),
      { reply = "Submitted." } }
    local sum = run_study(t, s, db, "gpu", "openai", { tasks = { "gemm_bf16/128x4096x4096" }, phase = "full",
      target_speedup = 0 })
    t.eq(sum.phase, "full")
    local msgs, row = conversation(db, "gpu")
    local res = tool_results(msgs)
    t.eq(json.decode(res[1].content).ok, true, "compiled")
    local ran = json.decode(res[2].content)
    t.eq(ran.correct, true, "run: correct: " .. res[2].content:sub(1, 300))
    t.ok(json.decode(res[3].content).profile_text, "profile: " .. res[3].content:sub(1, 300))
    local sub = json.decode(res[4].content)
    t.eq(sub.verdict, "passed", "submit: " .. res[4].content:sub(1, 400))
    t.ok(sub.speedup and sub.speedup > 0, "a speedup")
    t.eq(row.stop_reason, "target_met")
    local turn = db:first("SELECT verdict, speedup FROM turns WHERE trajectory_id = ?", row.id)
    t.eq(turn.verdict, "passed")
    for i = 2, 4 do t.ok((res[i].gpu_s or 0) > 0, "GPU seconds of call " .. i) end
    io.stderr:write(("    gpu study: run %s, submit %s, speedup %.3f, GPU seconds %.1f / %.1f / %.1f\n"):format(
      ran.verdict, sub.verdict, sub.speedup or 0, res[2].gpu_s, res[3].gpu_s, res[4].gpu_s))
  end)
end

function T.wire_reads_odd_tool_calls(t)
  local w = wire.for_model({ provider = "openai", model = "m", base_url = "http://x/v1" }, {})
  local r = w.parse(200, json.encode { choices = { { message = { content = json.null, tool_calls = {
    { id = "a", type = "function", ["function"] = { name = "compile", arguments = "[1,2]" } },
    { id = "b", type = "function", ["function"] = { name = "run", arguments = '{"code":"x"}' } },
    "not a call" } } } } })
  t.eq(#r.tool_calls, 2)
  t.match(r.tool_calls[1].arguments_error, "not a JSON object")
  t.eq(r.tool_calls[2].arguments.code, "x")
  t.eq(r.text, "")
end

-- The wire names no provider: a provider's own file declares its
-- tool-calling format (tool_format), and the wire uses whatever is there.
function T.wire_uses_the_providers_own_format(t)
  local name = "klab.experiment.providers.openai"
  local real = require(name)
  local seen = {}
  local fake = setmetatable({ tool_format = {
    tools = function(tools) seen.tools = #tools; return { "offered" } end,
    asked = function(x) return { role = "assistant", said = x.content } end,
    answered = function(out, x) out[#out + 1] = { role = "answer", to = x.tool_call_id } end,
    calls = function(doc) return { { id = doc.which, name = "compile", arguments = '{"code":"y"}' } } end,
    system_apart = true,
  } }, { __index = real })
  package.loaded[name] = fake
  local ok, err = pcall(function()
    local w = wire.for_model({ provider = "openai", model = "m", base_url = "http://x/v1" }, { { name = "compile" } })
    local b = w.body({ model = "m" }, { { role = "system", content = "s" }, { role = "user", content = "u" },
      { role = "assistant", content = "a", tool_calls = { { id = "1", name = "compile" } } },
      { role = "tool", tool_call_id = "1", name = "compile", content = "r" } })
    t.eq(seen.tools, 1)
    t.eq(b.tools[1], "offered")
    t.eq(#b.messages, 3, "the system prompt left out (system_apart)")
    t.eq(b.messages[2].said, "a")
    t.eq(b.messages[3].to, "1")
    local r = w.parse(200, json.encode { which = "z", choices = { { message = { content = "t" } } } })
    t.eq(r.tool_calls[1].id, "z")
    t.eq(r.tool_calls[1].arguments.code, "y", "the wire still turns the arguments' text into a table")
  end)
  package.loaded[name] = real
  if not ok then error(err, 0) end
end

return T
