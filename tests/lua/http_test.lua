-- http_test.lua: klab.http against the scripted model server
-- (tests/server/model_server.py) on 127.0.0.1. Each test starts its own
-- server and stops it however the test ends; every wait is bounded.

local http = require "klab.http"
local sys = require "klab.sys"
local cjson = require "cjson"

local T = {}

local function have_python()
  local ok = os.execute("command -v python3 >/dev/null 2>&1")
  return ok == true
end

-- "R" running, "Z" exited (not yet reaped), nil gone.
local function proc_state(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s:match("%) (%a)")
end

local Server = {}
Server.__index = Server

local function start_server(t, idle)
  if not have_python() then t.skip("python3 is not installed") end
  local path = t.root .. "/tests/server/model_server.py"
  local p = io.popen("exec python3 '" .. path .. "' --idle " .. (idle or 60), "r")
  local l1, l2 = p:read("l"), p:read("l")
  local port = l1 and tonumber(l1:match("^PORT (%d+)$"))
  local pid = l2 and tonumber(l2:match("^PID (%d+)$"))
  if not port or not pid then
    p:close()
    error("the model server did not start: " .. tostring(l1))
  end
  return setmetatable({ pipe = p, port = port, pid = pid,
                        base = "http://127.0.0.1:" .. port }, Server)
end

-- Asks the server to stop, waits (at most 3 s) for it to exit, kills it
-- otherwise; reaps it. Returns true when it stopped by itself.
function Server:stop()
  if not self.pipe then return self.graceful end
  pcall(http.post, self.base .. "/_shutdown", nil, "", { timeout = 2, connect_timeout = 1 })
  local t0 = sys.now()
  local st = proc_state(self.pid)
  while st and st ~= "Z" and sys.now() - t0 < 3 do
    sys.sleep(0.02)
    st = proc_state(self.pid)
  end
  self.graceful = (st == nil or st == "Z")
  if not self.graceful then sys.kill(self.pid, "KILL") end
  self.pipe:close()
  self.pipe = nil
  return self.graceful
end

Server.__close = Server.stop
Server.__gc = Server.stop

function Server:script(actions)
  local r = assert(http.post(self.base .. "/_script", nil, cjson.encode(actions), { timeout = 5 }))
  assert(r.status == 200, "script refused: " .. r.body)
end

function Server:log()
  local r = assert(http.get(self.base .. "/_log", nil, { timeout = 5 }))
  assert(r.status == 200)
  return cjson.decode(r.body), r.body
end

-- Runs fn(t, srv) with a fresh server that is stopped whatever happens.
local function with_server(fn)
  return function(t)
    local srv <close> = start_server(t)
    fn(t, srv)
  end
end

local function chat_body(text)
  return cjson.encode { model = "test-model", messages = { { role = "user", content = text } } }
end

-- Polls c until every id in ids has a response (or `limit` seconds pass);
-- returns id -> response.
local function collect(c, ids, limit)
  local want, got, n = {}, {}, 0
  for _, id in ipairs(ids) do want[id] = true end
  local t0 = sys.now()
  while n < #ids and sys.now() - t0 < (limit or 20) do
    for _, r in ipairs(assert(c:poll(0.2))) do
      if want[r.id] and not got[r.id] then n = n + 1 end
      got[r.id] = r
    end
  end
  return got
end

-- Submits one spec on a fresh client and waits for its response.
local function one(spec, limit)
  local c <close> = assert(http.client())
  local id = assert(c:submit(spec))
  return collect(c, { id }, limit)[id]
end

local FAST_RETRY = { attempts = 3, base = 0.01, max = 0.05 }

T.openai_anthropic_and_default = with_server(function(t, srv)
  srv:script { { reply = "hello from openai", reasoning_tokens = 7 }, { reply = "hello from anthropic" } }
  local body = chat_body("write a kernel")
  local r = one { url = srv.base .. "/v1/chat/completions", body = body }
  t.eq(r.status, 200)
  t.eq(r.error, nil)
  t.eq(r.headers["content-type"], "application/json")
  t.eq(#r.attempts, 1)
  t.eq(r.attempts[1].status, 200)
  t.ok(r.attempts[1].latency >= 0 and r.attempts[1].latency < 5, "latency")
  local j = cjson.decode(r.body)
  t.eq(j.choices[1].message.content, "hello from openai")
  t.eq(j.usage.completion_tokens_details.reasoning_tokens, 7)
  t.ok(j.usage.prompt_tokens > 0 and j.usage.completion_tokens > 0, "usage")

  local a = one { url = srv.base .. "/v1/messages", body = chat_body("again"),
                  headers = { ["anthropic-version"] = "2023-06-01" } }
  t.eq(a.status, 200)
  local m = cjson.decode(a.body)
  t.eq(m.content[1].type, "text")
  t.eq(m.content[1].text, "hello from anthropic")
  t.eq(m.stop_reason, "end_turn")
  t.ok(m.usage.input_tokens > 0 and m.usage.output_tokens > 0, "usage")

  -- No script left: the default reply carries a kernel in a cuda block.
  local d = one { url = srv.base .. "/v1/messages", body = chat_body("default") }
  t.match(cjson.decode(d.body).content[1].text, "```cuda\n.*__global__")

  local log = srv:log()
  t.eq(#log, 3)
  t.eq(log[1].path, "/v1/chat/completions")
  t.eq(log[1].method, "POST")
  t.eq(log[1].body, body, "the body arrives untouched")
  t.eq(log[1].headers["Content-Type"], "application/json", "default content type")
  t.eq(log[2].path, "/v1/messages")
  t.eq(log[2].headers["anthropic-version"], "2023-06-01")
  t.eq(next(log[1].secrets), nil, "no key sent")
end)

T.retry_after_429_honoured = with_server(function(t, srv)
  srv:script { { status = 429, retry_after = 1 } }
  local r = one { url = srv.base .. "/v1/chat/completions", body = chat_body("x"), retry = FAST_RETRY }
  t.eq(r.status, 200)
  t.eq(#r.attempts, 2)
  t.eq(r.attempts[1].status, 429)
  t.eq(r.attempts[1].retry_after, 1)
  t.ok(r.attempts[1].wait >= 1, "waited as asked")
  t.ok(r.attempts[2].at >= 1, "second attempt after Retry-After: " .. r.attempts[2].at)
  t.ok(r.elapsed >= 1 and r.elapsed < 5, "elapsed " .. r.elapsed)
  t.ok(cjson.decode(r.body).choices, "the final reply is the success")

  -- Not retried when 429 retries are off: the 429 itself comes back.
  srv:script { { status = 429, retry_after = 1 } }
  local n = one { url = srv.base .. "/v1/messages", body = chat_body("x"),
                  retry = { attempts = 3, base = 0.01, on_429 = false } }
  t.eq(n.status, 429)
  t.eq(#n.attempts, 1)
  t.eq(n.headers["retry-after"], "1")
  t.eq(cjson.decode(n.body).error.type, "rate_limit_error")
  t.eq(n.error, nil, "a 429 is a reply, not a transport error")
end)

T.retry_500 = with_server(function(t, srv)
  srv:script { { status = 500 }, { status = 500 } }
  local r = one { url = srv.base .. "/v1/chat/completions", body = chat_body("x"), retry = FAST_RETRY }
  t.eq(r.status, 200)
  t.eq(#r.attempts, 3)
  t.eq(r.attempts[1].status, 500)
  t.eq(r.attempts[2].status, 500)
  t.eq(r.attempts[3].status, 200)
  t.ok(r.attempts[2].at >= r.attempts[1].at and r.attempts[3].at >= r.attempts[2].at, "in order")

  -- Attempts used up: the last 500 is the response.
  srv:script { { status = 500 }, { status = 500 } }
  local f = one { url = srv.base .. "/v1/chat/completions", body = chat_body("x"),
                  retry = { attempts = 2, base = 0.01 } }
  t.eq(f.status, 500)
  t.eq(#f.attempts, 2)
  t.eq(cjson.decode(f.body).error.type, "server_error")
  t.eq(#srv:log(), 5)
end)

T.dropped_connection = with_server(function(t, srv)
  srv:script { { drop = true } }
  local r = one { url = srv.base .. "/v1/messages", body = chat_body("x"), retry = FAST_RETRY }
  t.eq(r.status, 200)
  t.eq(#r.attempts, 2)
  t.eq(r.attempts[1].status, nil)
  t.eq(r.attempts[1].curl_code, 52) -- CURLE_GOT_NOTHING
  t.ok(type(r.attempts[1].error) == "string" and #r.attempts[1].error > 0, "error recorded")
  t.eq(r.attempts[2].status, 200)

  srv:script { { drop = true } }
  local f = one { url = srv.base .. "/v1/messages", body = chat_body("x"),
                  retry = { attempts = 3, base = 0.01, on_connect = false } }
  t.eq(f.status, nil)
  t.eq(f.code, "EIO")
  t.ok(f.error and #f.error > 0, "error")
  t.eq(#f.attempts, 1)
end)

T.malformed_json_returned_untouched = with_server(function(t, srv)
  srv:script { { malformed = true } }
  local r = one { url = srv.base .. "/v1/chat/completions", body = chat_body("x"), retry = FAST_RETRY }
  t.eq(r.status, 200)
  t.eq(r.error, nil)
  t.eq(#r.attempts, 1, "a 200 is never retried")
  t.eq(r.body, '{"choices": [{"message": {"content": "unterminated')
  t.ok(not pcall(cjson.decode, r.body), "really not JSON")
end)

T.truncated_body = with_server(function(t, srv)
  srv:script { { truncated = true } }
  local r = one { url = srv.base .. "/v1/chat/completions", body = chat_body("x") }
  t.eq(r.code, "EIO")
  t.eq(r.curl_code, 18) -- CURLE_PARTIAL_FILE
  t.ok(r.error and #r.error > 0, "error recorded")
  t.eq(#r.attempts, 1)
  t.eq(r.attempts[1].curl_code, 18)
  t.eq(r.attempts[1].status, 200, "headers had arrived")

  -- Retried like any transport error, the next attempt succeeds.
  srv:script { { truncated = true } }
  local s = one { url = srv.base .. "/v1/chat/completions", body = chat_body("x"), retry = FAST_RETRY }
  t.eq(s.error, nil)
  t.eq(s.status, 200)
  t.eq(#s.attempts, 2)
  t.eq(s.attempts[1].curl_code, 18)
  t.ok(cjson.decode(s.body).choices, "complete reply")

  -- The blocking form reports it as a failure with the response attached.
  srv:script { { truncated = true } }
  local v, msg, code, detail = http.post(srv.base .. "/v1/messages", nil, chat_body("x"))
  t.eq(v, nil)
  t.eq(code, "EIO")
  t.eq(msg, detail.error)
  t.eq(detail.curl_code, 18)
end)

T.many_in_flight = with_server(function(t, srv)
  local N, DELAY = 8, 0.5
  local script = {}
  for i = 1, N do script[i] = { delay = DELAY, reply = "reply " .. i } end
  srv:script(script)
  local c <close> = assert(http.client())
  local ids = {}
  local t0 = sys.now()
  for i = 1, N do
    ids[i] = assert(c:submit { url = srv.base .. "/v1/chat/completions", body = chat_body("q" .. i) })
  end
  t.eq(c:pending(), N)
  local a = sys.now()
  local early = c:poll(0)
  t.ok(sys.now() - a < 0.1, "poll(0) does not block")
  t.eq(#early, 0)
  local got = collect(c, ids, 10)
  local took = sys.now() - t0
  local texts, n = {}, 0
  for _, id in ipairs(ids) do
    local r = got[id]
    if t.ok(r, "response " .. id) then
      t.eq(r.status, 200)
      texts[cjson.decode(r.body).choices[1].message.content] = true
      n = n + 1
    end
  end
  t.eq(n, N)
  for i = 1, N do t.ok(texts["reply " .. i], "reply " .. i) end
  t.ok(took >= DELAY, "took " .. took)
  t.ok(took < N * DELAY / 2, string.format("%d requests of %.1f s in %.2f s: concurrent", N, DELAY, took))
  t.eq(c:pending(), 0)
end)

-- The key travels only from the environment: a child klab gets it as an
-- environment variable, sends it both ways (Bearer and x-api-key), fails
-- with it, and prints everything it got back.
T.api_key_from_environment = with_server(function(t, srv)
  math.randomseed(os.time(), sys.getpid())
  local key = string.format("sk-klabtest-%08x%08x", math.random(0, 0x7fffffff), math.random(0, 0x7fffffff))
  local dir = t.tmpdir()
  local child = dir .. "/child.lua"
  local f = assert(io.open(child, "w"))
  f:write([[
local http = require "klab.http"
local cjson = require "cjson"
local base = arg[1]
local out = {}
local key = { env = "KLAB_HTTP_TEST_KEY", prefix = "Bearer " }
out.openai = http.post(base .. "/v1/chat/completions", { Authorization = key }, "{}",
  { retry = { attempts = 3, base = 0.01 } })
out.anthropic = http.post(base .. "/v1/messages", { ["x-api-key"] = { env = "KLAB_HTTP_TEST_KEY" } }, "{}")
local v, msg, code, detail = http.post("http://127.0.0.1:1/v1/messages", { Authorization = key }, "{}",
  { retry = { attempts = 2, base = 0.01 } })
out.refused = { msg = msg, code = code, detail = detail }
local ok, err = pcall(http.post, base .. "/v1/messages", { Authorization = { env = "KLAB_NO_SUCH_VAR_4711" } }, "{}")
out.missing = err
ok, err = pcall(http.post, "http://127.0.0.1:1/", { Authorization = "Bearer " .. os.getenv("KLAB_HTTP_TEST_KEY") })
out.plain = err
io.write(cjson.encode(out))
]])
  f:close()
  srv:script { { status = 500 } }
  local code, out, err = t.sh("KLAB_HTTP_TEST_KEY=" .. key .. " '" .. t.klab .. "' '" .. child .. "' " .. srv.base)
  os.remove(child)
  os.remove(dir)
  t.eq(code, 0, "child: " .. err)
  t.ok(not out:find(key, 1, true), "the key is in no response, error or message")
  t.ok(not err:find(key, 1, true), "nor on stderr")
  local res = cjson.decode(out)
  t.eq(res.openai.status, 200)
  t.eq(#res.openai.attempts, 2, "retried with the key")
  t.eq(res.anthropic.status, 200)
  t.eq(res.refused.code, "EIO")
  t.ok(type(res.refused.msg) == "string" and #res.refused.msg > 0, "refused message")
  t.eq(#res.refused.detail.attempts, 2)
  t.match(res.missing, "KLAB_NO_SUCH_VAR_4711")
  t.match(res.plain, "Authorization.*environment")

  local _, hash = t.sh("printf '%s' '" .. key .. "' | sha256sum")
  hash = hash:match("^(%x+)")
  local log, raw = srv:log()
  t.ok(not raw:find(key, 1, true), "the server keeps no key")
  t.eq(#log, 3)
  for i = 1, 2 do
    t.eq(log[i].headers.Authorization, "<redacted>")
    t.eq(log[i].secrets.authorization, hash, "the right key was sent (attempt " .. i .. ")")
  end
  t.eq(log[3].headers["x-api-key"], "<redacted>")
  t.eq(log[3].secrets["x-api-key"], hash)
  t.eq(log[3].secrets.authorization, nil)
end)

T.client_handle_and_misuse = function(t)
  local c = assert(http.client())
  t.match(tostring(c), "^klab.HttpClient %(0 pending%)")
  t.raises(function() c:submit {} end, "url")
  t.raises(function() c:submit { url = "ftp://127.0.0.1/" } end, "http")
  t.raises(function() c:submit { url = "http://127.0.0.1:1/", method = "PUT" } end, "method")
  t.raises(function() c:submit { url = "http://127.0.0.1:1/", method = "GET", body = "x" } end, "body")
  t.raises(function() c:submit { url = "http://127.0.0.1:1/", headers = { ["x-api-key"] = "sk-plain" } } end,
    "environment")
  t.raises(function() c:submit { url = "http://127.0.0.1:1/", headers = { ["X-A"] = "a\r\nb: c" } } end,
    "line break")
  t.raises(function() c:submit { url = "http://127.0.0.1:1/", headers = { ["bad name"] = "x" } } end,
    "malformed")
  local ok, e = pcall(c.submit, c, { url = "http://127.0.0.1:1/",
                                     headers = { Authorization = { env = "KLAB_SURELY_UNSET_VAR_91", prefix = "Bearer " } } })
  t.ok(not ok and e:find("KLAB_SURELY_UNSET_VAR_91", 1, true), "names the variable: " .. tostring(e))
  t.raises(function() c:submit { url = "http://127.0.0.1:1/", retry = { attempts = 0 } } end, "attempts")
  t.eq(c:pending(), 0)
  -- A request left pending is abandoned by free.
  t.ok(c:submit { url = "http://127.0.0.1:1/", timeout = 5 })
  t.eq(c:pending(), 1)
  t.eq(c:free(), true)
  t.eq(c:free(), false)
  t.eq(tostring(c), "klab.HttpClient (freed)")
  t.raises(function() c:poll(0) end, "freed")
  t.raises(function() c:pending() end, "freed")
  do
    local d <close> = assert(http.client())
    t.eq(#d:poll(0), 0, "nothing pending: an empty list")
  end
  t.ok(http.is_secret("AUTHORIZATION") and http.is_secret("x-api-key") and not http.is_secret("accept"))
  t.match(http.curl_version(), "^%d+%.%d+")
end

T.server_stops_when_asked = function(t)
  local srv = start_server(t)
  local ok, err = pcall(function()
    local r = assert(http.get(srv.base .. "/_health", nil, { timeout = 5 }))
    t.eq(r.status, 200)
  end)
  t.ok(srv:stop(), "stopped through /_shutdown")
  t.eq(proc_state(srv.pid), nil, "no process left")
  assert(ok, err)
  local r, _, code = http.get(srv.base .. "/_health", nil, { timeout = 2, connect_timeout = 1 })
  t.eq(r, nil)
  t.eq(code, "EIO", "nothing listens any more")
end

T.server_exits_when_idle = function(t)
  local srv = start_server(t, 0.5)
  local t0 = sys.now()
  local st = proc_state(srv.pid)
  while st and st ~= "Z" and sys.now() - t0 < 5 do
    sys.sleep(0.05)
    st = proc_state(srv.pid)
  end
  local took = sys.now() - t0
  local exited = st == nil or st == "Z"
  if not exited then sys.kill(srv.pid, "KILL") end
  srv.pipe:close()
  srv.pipe = nil
  t.ok(exited, "exited by itself")
  t.ok(took >= 0.4, "not before the idle time: " .. took)
end

return T
