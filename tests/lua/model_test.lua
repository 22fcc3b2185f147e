-- model_test.lua: klab.experiment.model, its providers and the response cache, against
-- the scripted model server (tests/server/model_server.py) on 127.0.0.1.
-- Each server test starts its own server and stops it however the test ends.

local model = require "klab.experiment.model"
local store = require "klab.store"
local cjson = require "cjson"

local T = {}

-- ---- helpers -------------------------------------------------------------------

local function tmpdb(t)
  local dir = t.tmpdir()
  return assert(store.open(dir .. "/m.db")), dir
end

-- The scripted model server (tests/server/model_server.lua).
local function with_server(t, fn) return dofile(t.root .. "/tests/server/model_server.lua").with(t, fn) end

local function oa(s, extra)
  local spec = { provider = "openai", model = "test-oa", base_url = s.base .. "/v1",
                 retry = { attempts = 3, base = 0.05, max = 0.2, budget = 20 }, timeout = 10, connect_timeout = 5 }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return model.new(spec)
end

local MSGS = { { role = "system", content = "be brief" }, { role = "user", content = "write a kernel" } }

-- ---- canonical requests ---------------------------------------------------------------

T.json_is_canonical = function(t)
  t.eq(model.json { b = 1.0, a = { 1, 2, 0.1 }, c = "x\n\"\1", d = {} }, '{"a":[1,2,0.1],"b":1,"c":"x\\n\\"\\u0001","d":[]}')
  local a = model.json { z = { y = 1, x = { 3, 2 } }, a = true }
  local b = model.json { a = true, z = { x = { 3, 2 }, y = 1 } }
  t.eq(a, b, "key order does not matter")
  t.raises(function() model.json { x = 0 / 0 } end, "cannot encode")
  t.eq(model.json { 0.1 + 0.2 }, "[0.30000000000000004]", "shortest round-trip form")
end

T.request_hash_covers_what_is_sent = function(t)
  local m = model.new { provider = "openai", model = "m", base_url = "https://a/v1", api_key_env = "SOME_KEY", temperature = 0.5 }
  local r1 = model.request(m, MSGS, { sample = 1, turn = 1 })
  t.eq(r1.url, "https://a/v1/chat/completions")
  t.eq(type(r1.headers.Authorization), "table", "the key is a reference to the environment")
  t.eq(r1.headers.Authorization.env, "SOME_KEY")
  t.ok(not r1.canonical:find("SOME_KEY"), "no key material in the canonical request")
  t.ok(not r1.canonical:lower():find("authorization"), "no header in the canonical request")
  local m2 = model.new { provider = "openai", model = "m", base_url = "http://b:9/v1", temperature = 0.5 }
  t.eq(model.request(m2, MSGS, { sample = 1, turn = 1 }).hash, r1.hash, "base_url and the key variable are not part of it")
  t.ok(model.request(m, MSGS, { sample = 2, turn = 1 }).hash ~= r1.hash, "the sample index is")
  t.ok(model.request(m, MSGS, { sample = 1, turn = 2 }).hash ~= r1.hash, "the turn is")
  local m3 = model.new { provider = "openai", model = "m", temperature = 0.6 }
  t.ok(model.request(m3, MSGS, { sample = 1, turn = 1 }).hash ~= r1.hash, "sampling parameters are")
  t.eq(r1.hash, store.hash("klab.request.1", r1.canonical))
end

T.model_spec_is_checked = function(t)
  t.raises(function() model.new { provider = "nope", model = "x" } end, "provider")
  t.raises(function() model.new { provider = "openai" } end, "model")
  t.raises(function() model.new { provider = "openai", model = "x", temprature = 1 } end, "unknown field 'temprature'")
  t.raises(function() model.new { provider = "openai", model = "x", api_key_env = "sk-abc def" } end, "environment variable")
end

-- Every provider is one file of klab.experiment.providers, and what the
-- model, the spec check and the model options know of providers comes from
-- that registry.
T.providers_come_from_their_registry = function(t)
  local providers = require "klab.experiment.providers"
  t.ok(#providers.NAMES >= 2, "the providers are registered")
  for _, name in ipairs(providers.NAMES) do
    local p = providers.get(name)
    for _, f in ipairs { "url", "headers", "body", "parse" } do t.eq(type(p[f]), "function", name .. "." .. f) end
    t.eq(type(p.about), "string", name .. ".about")
    t.eq(model.new { provider = name, model = "x" }.base_url, p.base_url, name .. "'s default base_url")
    t.match(providers.describe(), name .. " %(" .. p.about:gsub("%p", "%%%0") .. "%)")
    for k, ty in pairs(p.fields or {}) do t.eq(model.FIELDS[k], ty, name .. "'s field " .. k) end
  end
  t.eq(providers.get("nope"), nil)
  t.eq(providers.unknown("openai"), nil)
  t.eq(providers.unknown("nope"), "provider must be 'openai' or 'anthropic', got nope")
  t.raises(function() model.new { provider = "nope", model = "x" } end, "provider must be 'openai' or 'anthropic', got nope")
  local options = require "klab.experiment.options"
  local line
  for _, d in ipairs(options.MODEL_OPTION_LIST) do if d[1] == "provider" then line = d end end
  t.eq(line[3], providers.describe())
  t.eq(line[2], providers.NAMES[1])
  t.ok(require("klab.experiment.stored").MODEL_COMPARED[15] == "anthropic_version", "a provider's field is compared")
end

T.openai_body_and_parse = function(t)
  local oai = require "klab.experiment.providers.openai"
  local m = model.new { provider = "openai", model = "gpt", temperature = 0.7, top_p = 0.9, max_tokens = 100,
    reasoning_effort = "high", seed = 7, stop = { "END" }, extra = { top_k = 20 } }
  local b = oai.body(m, MSGS)
  t.eq(b.model, "gpt") t.eq(b.temperature, 0.7) t.eq(b.top_p, 0.9) t.eq(b.max_tokens, 100)
  t.eq(b.reasoning_effort, "high") t.eq(b.seed, 7) t.eq(b.stop[1], "END") t.eq(b.top_k, 20) t.eq(#b.messages, 2)
  local m2 = model.new { provider = "openai", model = "o", max_tokens = 5, max_tokens_field = "max_completion_tokens" }
  t.eq(oai.body(m2, MSGS).max_completion_tokens, 5)
  local ok = oai.parse(200, cjson.encode { choices = { { message = { content = "hi" }, finish_reason = "stop" } },
    usage = { prompt_tokens = 10, completion_tokens = 7, completion_tokens_details = { reasoning_tokens = 3 } } })
  t.eq(ok.text, "hi") t.eq(ok.usage.input, 10) t.eq(ok.usage.output, 7) t.eq(ok.usage.reasoning, 3)
  t.eq(math.type(ok.usage.input), "integer")
  local bad, why = oai.parse(200, '{"choices": [{"message": {"content": "unter')
  t.eq(bad, nil) t.match(why, "^malformed JSON")
  local _, why2 = oai.parse(429, '{"error": {"message": "slow down"}}')
  t.eq(why2, "HTTP 429: slow down")
  local _, why3 = oai.parse(200, '{"choices": []}')
  t.match(why3, "no choices")
end

T.anthropic_body_and_parse = function(t)
  local an = require "klab.experiment.providers.anthropic"
  local m = model.new { provider = "anthropic", model = "claude", base_url = "https://h", temperature = 1, stop = "STOP",
    reasoning_effort = "medium", max_tokens = 20000, api_key_env = "AK" }
  t.eq(an.url(m), "https://h/v1/messages")
  t.eq(an.headers(m)["x-api-key"].env, "AK")
  t.eq(an.headers(m)["anthropic-version"], "2023-06-01")
  local b = an.body(m, MSGS)
  t.eq(b.system, "be brief") t.eq(#b.messages, 1) t.eq(b.messages[1].role, "user")
  t.eq(b.stop_sequences[1], "STOP") t.eq(b.thinking.budget_tokens, 8192) t.eq(b.max_tokens, 20000)
  t.eq(b.seed, nil, "no seed in this API")
  local r = an.parse(200, cjson.encode { content = { { type = "thinking", thinking = "hmm" }, { type = "text", text = "ok" } },
    usage = { input_tokens = 5, output_tokens = 9 }, stop_reason = "end_turn" })
  t.eq(r.text, "ok") t.eq(r.reasoning, "hmm") t.eq(r.usage.input, 5) t.eq(r.usage.output, 9) t.eq(r.finish, "end_turn")
  local _, why = an.parse(500, cjson.encode { type = "error", error = { type = "api_error", message = "Internal" } })
  t.eq(why, "HTTP 500: Internal")
end

-- ---- against the server -------------------------------------------------------------

T.openai_call_records_usage_latency_cost = function(t)
  with_server(t, function(s)
    s:script { { reply = "hello", reasoning_tokens = 12, delay = 0.1 } }
    local db = tmpdb(t)
    local c <close> = model.caller { db = db, mode = "live", experiment = "e1" }
    local m = oa(s, { prices = { input = 2.0, output = 10.0 } })
    local o = c:call(m, MSGS, { key = { sample = 1 } })
    t.ok(o.ok, tostring(o.error))
    t.eq(o.text, "hello")
    t.eq(o.usage.reasoning, 12)
    t.ok(o.usage.input > 0 and o.usage.output >= 12, "prompt and completion tokens")
    t.ok(o.latency_ms >= 100, "latency includes the server's delay: " .. tostring(o.latency_ms))
    t.near(o.cost, (o.usage.input * 2 + o.usage.output * 10) / 1e6, 1e-12)
    t.eq(#o.attempts, 1)
    local row = db:cache_get(o.hash)
    t.eq(row.status, 200) t.eq(row.input_tokens, o.usage.input) t.eq(row.output_tokens, o.usage.output)
    t.near(row.cost_usd, o.cost, 1e-12)
    t.ok(row.latency_ms >= 100)
    local resp = cjson.decode(row.response)
    t.eq(resp.text, "hello") t.eq(resp.usage.reasoning, 12) t.eq(#resp.attempts, 1)
    t.ok(not row.response:lower():find("authorization"), "no headers stored")
    local req = cjson.decode(row.request)
    t.eq(req.model, "test-oa") t.eq(req.body.messages[2].content, "write a kernel")
    local log = s:log()
    t.eq(#log, 1) t.eq(log[1].path, "/v1/chat/completions")
  end)
end

T.anthropic_call_through_server = function(t)
  with_server(t, function(s)
    s:script { { reply = "```cuda\n__global__ void k(){}\n```", thinking = "let me think" } }
    local db = tmpdb(t)
    local c <close> = model.caller { db = db, mode = "live" }
    local m = model.new { provider = "anthropic", model = "test-an", base_url = s.base, max_tokens = 100, retry = { attempts = 1 } }
    local o = c:call(m, MSGS, {})
    t.ok(o.ok, tostring(o.error))
    t.match(o.text, "__global__") t.eq(o.reasoning, "let me think") t.eq(o.finish, "end_turn")
    local log = s:log()
    t.eq(log[1].path, "/v1/messages")
    t.eq(log[1].headers["anthropic-version"], "2023-06-01")
    local body = cjson.decode(log[1].body)
    t.eq(body.system, "be brief") t.eq(body.max_tokens, 100)
  end)
end

T.faults_are_retried_or_recorded = function(t)
  with_server(t, function(s)
    local db = tmpdb(t)
    local c <close> = model.caller { db = db, mode = "live" }
    local m = oa(s)
    -- 429 with Retry-After, then a reply: one call, two attempts, waited >= 1 s
    s:script { { status = 429, retry_after = 1 }, { reply = "after 429" } }
    local o = c:call(m, MSGS, { key = { n = 1 } })
    t.ok(o.ok) t.eq(o.text, "after 429") t.eq(#o.attempts, 2) t.eq(o.attempts[1].status, 429)
    t.ok(o.latency_ms >= 950, "Retry-After was honoured: " .. o.latency_ms)
    -- a dropped connection, 500, a truncated body: each retried. (The drop
    -- comes first, on a fresh connection: libcurl itself silently resends a
    -- request whose reused keep-alive connection was closed before any reply.)
    s:script { { drop = true }, { status = 500 }, { truncated = true }, { reply = "third time" } }
    local c2 <close> = model.caller { db = db, mode = "live" }
    o = c2:call(oa(s, { retry = { attempts = 4, base = 0.02, max = 0.05 } }), MSGS, { key = { n = 2 } })
    t.ok(o.ok, tostring(o.error)) t.eq(o.text, "third time") t.eq(#o.attempts, 4)
    t.ok(o.attempts[1].error ~= nil, "the drop is a transport error")
    t.eq(o.attempts[2].status, 500)
    t.ok(o.attempts[3].error ~= nil, "the truncated body is a transport error")
    -- malformed JSON: not retried, a failed call with a clear error, stored
    s:script { { malformed = true } }
    o = c:call(m, MSGS, { key = { n = 3 } })
    t.eq(o.ok, false) t.match(o.error, "^malformed JSON in the response body")
    local row = db:cache_get(o.hash)
    t.match(row.error, "malformed JSON") t.eq(row.status, 200)
    -- retries used up: the last failure is the outcome
    s:script { { status = 500 }, { status = 500 } }
    o = c:call(oa(s, { retry = { attempts = 2, base = 0.01, max = 0.02 } }), MSGS, { key = { n = 4 } })
    t.eq(o.ok, false) t.match(o.error, "^HTTP 500") t.eq(#o.attempts, 2)
    -- a truncated body with no retry left: a transport error
    s:script { { truncated = true } }
    o = c:call(oa(s, { retry = { attempts = 1 } }), MSGS, { key = { n = 5 } })
    t.eq(o.ok, false) t.match(o.error, "^transport error after 1 attempt")
    t.eq(#s:log(), 2 + 4 + 1 + 2 + 1, "every attempt reached the server once")
  end)
end

T.requests_run_concurrently = function(t)
  with_server(t, function(s)
    s:script { { delay = 0.6, reply = "a" }, { delay = 0.6, reply = "b" }, { delay = 0.6, reply = "c" }, { delay = 0.6, reply = "d" } }
    local db = tmpdb(t)
    local c <close> = model.caller { db = db, mode = "live" }
    local m = oa(s, { concurrency = 4 })
    local sys = require "klab.sys"
    local t0 = sys.now()
    for i = 1, 4 do c:submit(m, MSGS, { key = { sample = i } }) end
    t.eq(c:pending(), 4)
    local got, polls = {}, 0
    while #got < 4 and sys.now() - t0 < 10 do
      polls = polls + 1
      for _, o in ipairs(c:poll(0.05)) do got[#got + 1] = o end
    end
    local dt = sys.now() - t0
    t.eq(#got, 4)
    t.ok(dt < 1.8, ("four 0.6 s requests in flight together took %.2f s"):format(dt))
    t.ok(polls > 3, "poll returned while requests were in flight (the caller can do GPU work meanwhile)")
    -- per-model concurrency 1: serialized
    s:script { { delay = 0.3, reply = "a" }, { delay = 0.3, reply = "b" }, { delay = 0.3, reply = "c" } }
    local m1 = oa(s, { concurrency = 1, name = "serial" })
    t0 = sys.now()
    for i = 1, 3 do c:submit(m1, MSGS, { key = { serial = i } }) end
    got = {}
    while #got < 3 and sys.now() - t0 < 10 do
      for _, o in ipairs(c:poll(0.05)) do got[#got + 1] = o end
    end
    t.ok(sys.now() - t0 >= 0.85, "concurrency = 1 sends one request at a time")
  end)
end

T.modes_live_record_missing_replay = function(t)
  with_server(t, function(s)
    local db = tmpdb(t)
    local m = oa(s)
    s:script { { reply = "first" }, { reply = "second" }, { malformed = true }, { reply = "fixed" } }
    local live <close> = model.caller { db = db, mode = "live", experiment = "modes" }
    local o1 = live:call(m, MSGS, { key = { sample = 1 } })
    t.eq(o1.text, "first")
    local rec <close> = model.caller { db = db, mode = "record-missing", experiment = "modes" }
    local o2 = rec:call(m, MSGS, { key = { sample = 1 } })
    t.eq(o2.text, "first") t.eq(o2.source, "cache") t.eq(#s:log(), 1, "a cached success is not sent again")
    local o3 = live:call(m, MSGS, { key = { sample = 1 } })
    t.eq(o3.text, "second", "live mode always sends") t.eq(#s:log(), 2)
    -- a cached failure: record-missing sends again, replay gives the failure back
    local f1 = live:call(m, MSGS, { key = { sample = 2 } })
    t.eq(f1.ok, false)
    local rp <close> = model.caller { db = db, mode = "replay", experiment = "modes" }
    local f2 = rp:call(m, MSGS, { key = { sample = 2 } })
    t.eq(f2.ok, false) t.eq(f2.error, f1.error) t.eq(f2.source, "cache")
    local f3 = rec:call(m, MSGS, { key = { sample = 2 } })
    t.eq(f3.ok, true) t.eq(f3.text, "fixed")
    -- replay: answers from the store, never opens a connection
    local r1 = rp:call(m, MSGS, { key = { sample = 1 } })
    t.eq(r1.text, "second") t.eq(r1.usage.input, o3.usage.input) t.near(r1.latency_ms, o3.latency_ms, 1e-6)
    t.eq(rp.http, nil, "replay never made an HTTP client")
    local n = #s:log()
    local ok, err = pcall(rp.submit, rp, m, MSGS, { key = { sample = 99 } })
    t.eq(ok, false)
    local want = model.request(m, MSGS, { sample = 99 }).hash
    t.match(tostring(err), "^replay: no stored response for request " .. want:sub(1, 12) .. " of model test%-oa "
      .. "%(experiment modes%): not in the store %(and no responses_dir= to look in%); run with mode=record%-missing")
    t.eq(err.exit, 2, "a replay miss ends the script with status 2")
    t.eq(#s:log(), n, "a replay miss sends nothing")
  end)
end

T.replay_from_response_files = function(t)
  local db, dir = tmpdb(t)
  os.execute("mkdir -p '" .. dir .. "/resp/mm/task_a/none/r2'")
  local f = assert(io.open(dir .. "/resp/mm/task_a/none/r2/turn3.md", "w"))
  f:write("<!-- written by the klab team as sample data, not model output -->\nthe reply\n")
  f:close()
  local m = model.new { provider = "openai", model = "mm", base_url = "http://127.0.0.1:9/v1" }
  local c <close> = model.caller { db = db, mode = "replay", responses_dir = dir .. "/resp", experiment = "files" }
  local loc = { model = "mm", task = "task_a", tag = "none", replica = 2, turn = 3 }
  local o = c:call(m, MSGS, { key = { turn = 3 }, locator = loc })
  t.eq(o.text, "the reply\n", "the label line is not part of the reply") t.eq(o.source, "files")
  t.ok(db:cache_get(o.hash) ~= nil, "stored in the cache")
  local o2 = c:call(m, MSGS, { key = { turn = 3 }, locator = loc })
  t.eq(o2.source, "cache")
  -- A miss names the task, tag, replica and turn, the file looked for, and the way out.
  t.raises(function() c:submit(m, MSGS, { key = { turn = 4 }, locator = { model = "mm", task = "task_a", tag = "none", replica = 2, turn = 4 } }) end,
    "^replay: no stored response for task task_a, tag none, replica 2, turn 4 of model mm %(experiment files%): "
    .. "not in the store and no file " .. dir:gsub("%p", "%%%0") .. "/resp/mm/task_a/none/r2/turn4%.md; "
    .. "run with mode=record%-missing to ask the model for the missing ones$")
end

T.missing_key_variable_is_named = function(t)
  with_server(t, function(s)
    local db = tmpdb(t)
    local c <close> = model.caller { db = db, mode = "live" }
    local m = oa(s, { api_key_env = "KLAB_TEST_SURELY_UNSET_VAR" })
    local ok, err = pcall(c.submit, c, m, MSGS, {})
    t.eq(ok, false)
    t.match(tostring(err), "KLAB_TEST_SURELY_UNSET_VAR")
  end)
end

-- ---- the caller's store opens through the store's owner ----------------------

-- A path given as db is opened by klab.store.records.open, with its checks
-- and its one-line messages (a folder is named as one), and the caller
-- closes what it opened.
T.caller_opens_its_store_through_the_owner = function(t)
  local dir = t.tmpdir()
  local ok, err = pcall(model.caller, { db = dir, mode = "replay" })
  t.ok(not ok, "a folder is no store")
  t.match(tostring(err), "model%.caller: " .. dir:gsub("%p", "%%%0") .. " is a folder, not a store file")
  local c = model.caller { db = dir .. "/m.db", mode = "replay" }
  t.eq(c.db:first("SELECT count(*) AS n FROM verdicts").n >= 0, true, "a store, made with klab's schema")
  c:close()
end

return T
