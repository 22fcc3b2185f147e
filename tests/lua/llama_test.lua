-- klab against a real OpenAI- and Anthropic-compatible server: llama.cpp's
-- llama-server (built from PyPI's llama-cpp-python source package by
-- tests/server/llama_server.sh, cached outside the checkout) on 127.0.0.1,
-- serving a tiny random model the test writes (tests/server/tiny_model.py).
-- A GBNF grammar (--grammar-file) forces each server's replies, so each
-- model gets its own scripted answer with a real candidate. Skipped, with the reason, where PyPI cannot be reached.
local experiment_cmd = require "klab.command"
local model = require "klab.experiment.model"
local store_mod = require "klab.store"

local T = {}

local TASK = "relu_f32/999x1021"
local RELU = [[
extern "C" __global__ void relu(const float *X, float *Y, unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n)
        Y[i] = X[i] > 0.0f ? X[i] : 0.0f;
}
]]
local BROKEN = [[
extern "C" __global__ void relu(const float *X, float *Y, unsigned long long n)
{
    Y[0] = no_such_name;
}
]]
local function reply(code) return "Here is the kernel.\n\n```cuda\n" .. code .. "```\n" end

-- A GBNF grammar whose only sentence is text.
local function grammar(text)
  local esc = text:gsub('[\\"\n\r\t]', { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" })
  return 'root ::= "' .. esc .. '"'
end

local q = experiment_cmd.shell_quote

local function fixture(t, what)
  local code, out, err = t.sh(("sh %s %s"):format(q(t.root .. "/tests/server/llama_server.sh"), what))
  if code == 77 then t.skip("llama-server: " .. (err:match("([^\n]+)\n?$") or err)) end
  t.eq(code, 0, "llama_server.sh " .. what .. ": " .. err)
  return (out:match("([^\n]+)"))
end

local function http_get(url)
  local ok, http = pcall(require, "klab.http")
  if not ok then return nil end
  local r = http.get(url, nil, { timeout = 2 })
  return r and r.status
end

-- Starts llama-server on a free port, its every reply forced by a grammar
-- to be `text`; returns {base=, stop=}. A request's own "grammar" field
-- would do for chat completions, but llama-server's /v1/messages does not
-- pass it on, so each scripted reply gets its own server.
local function start(t, text)
  local bin = fixture(t, "binary")
  local py = fixture(t, "python")
  local dir = t.tmpdir()
  local code, _, err = t.sh(("%s %s %s"):format(q(py), q(t.root .. "/tests/server/tiny_model.py"), q(dir .. "/tiny.gguf")))
  t.eq(code, 0, "tiny_model.py: " .. err)
  local f = assert(io.open(dir .. "/reply.gbnf", "w"))
  f:write(grammar(text), "\n")
  f:close()
  for _ = 1, 5 do
    local port = 20000 + math.random(0, 29999)
    -- One thread: on two cores, two threads made replies vary from 0.04 to 11 s.
    local p = io.popen(("exec %s -m %s --grammar-file %s --host 127.0.0.1 --port %d -t 1 -c 8192 >%s 2>&1 & echo $!")
      :format(q(bin), q(dir .. "/tiny.gguf"), q(dir .. "/reply.gbnf"), port, q(dir .. "/server.log")))
    local pid = tonumber(p:read("l"))
    p:close()
    local base = "http://127.0.0.1:" .. port
    for _ = 1, 100 do
      if http_get(base .. "/health") == 200 then
        return { base = base, log = dir .. "/server.log",
          stop = function() os.execute("kill " .. pid .. " 2>/dev/null") end }
      end
      if not os.execute("kill -0 " .. pid .. " 2>/dev/null") then break end
      os.execute("sleep 0.1")
    end
    os.execute("kill " .. pid .. " 2>/dev/null")
  end
  error("llama-server did not start: " .. tostring(t.read(dir .. "/server.log")))
end

-- Runs fn(server, ...) with one server per reply, stopping them however fn ends.
local function with_servers(t, replies, fn)
  local servers = {}
  local ok, err = xpcall(function()
    for i, text in ipairs(replies) do servers[i] = start(t, text) end
    fn(table.unpack(servers))
  end, debug.traceback)
  for _, s in ipairs(servers) do s.stop() end
  if not ok then error(err, 0) end
end

-- The model calls klab makes, against the real server: the forced reply
-- exactly, its usage, stop sequences, max_tokens, an overflowing context,
-- and Anthropic's messages API.
function T.model_calls_against_llama_server(t)
  with_servers(t, { reply(RELU) }, function(s)
    local db <close> = assert(store_mod.open(t.tmpdir() .. "/calls.db"))
    local c <close> = model.caller { db = db, mode = "live", experiment = "llama" }
    local msgs = { { role = "system", content = "You write CUDA kernels." }, { role = "user", content = "Write relu." } }
    local oa = model.new { name = "tiny", provider = "openai", base_url = s.base .. "/v1", model = "tiny" }
    local o = c:call(oa, msgs, { key = { sample = 1, turn = 1 } })
    t.ok(o.ok, tostring(o.error))
    t.eq(o.text, reply(RELU))
    t.eq(o.finish, "stop")
    t.ok((o.usage.input or 0) > 10 and (o.usage.output or 0) > 100, "usage: " .. require("klab.json").encode(o.usage))
    t.eq(o.source, "network")

    local short = model.new { name = "tiny-short", provider = "openai", base_url = s.base .. "/v1", model = "tiny",
      max_tokens = 5 }
    o = c:call(short, msgs, { key = { sample = 1, turn = 1 } })
    t.ok(o.ok, tostring(o.error))
    t.eq(o.finish, "length")
    t.eq(o.usage.output, 5)
    t.eq(o.text, reply(RELU):sub(1, #o.text))

    local stop = model.new { name = "tiny-stop", provider = "openai", base_url = s.base .. "/v1", model = "tiny",
      stop = { "kernel" } }
    o = c:call(stop, msgs, { key = { sample = 1, turn = 1 } })
    t.ok(o.ok, tostring(o.error))
    t.eq(o.text, "Here is the ")

    -- A prompt longer than the server's context (8192 tokens; one byte is a token here).
    local long = { { role = "user", content = string.rep("y", 10000) } }
    o = c:call(oa, long, { key = { sample = 1, turn = 1 } })
    t.eq(o.ok, false)
    t.match(o.error, "HTTP 400: .*exceeds the available context size")

    local an = model.new { name = "tiny-anthropic", provider = "anthropic", base_url = s.base, model = "tiny" }
    o = c:call(an, msgs, { key = { sample = 1, turn = 1 } })
    t.ok(o.ok, tostring(o.error))
    t.eq(o.text, reply(RELU))
    t.eq(o.finish, "end_turn")
    t.ok((o.usage.output or 0) > 100, "anthropic usage")
  end)
end

-- The experiment script the sweep runs: two models on one server, one whose
-- reply is a correct ReLU and one whose reply does not compile.
local function write_script(path, name, db, provider, bases)
  local models = {}
  for _, m in ipairs { { "tiny-relu", bases[1] }, { "tiny-broken", bases[2] } } do
    models[#models + 1] = ("{ name = %q, provider = %q, base_url = %q, model = 'tiny', concurrency = 1 }")
      :format(m[1], provider, m[2])
  end
  local f = assert(io.open(path, "w"))
  f:write(([[
local experiment = require "klab.experiment"
local exp <close> = experiment.new {
  name = %q, db = %q, models = { %s }, tasks = { %q }, replicas = 2, turns = 2, progress = false,
}
local s = exp:run()
print(exp:table())
print(("requests: network=%%d cache=%%d"):format(s.requests.network, s.requests.cache))
return s.status
]]):format(name, db, table.concat(models, ",\n    "), TASK))
  f:close()
end

-- A two-phase study against the real server, for both wire formats: the
-- sweep asks each trajectory once where its candidate needs a GPU and
-- stores it awaiting judgement; a candidate that does not compile is
-- judged here and gets its repair turn. klab judge then judges the stored
-- candidates (real verdicts on a GPU machine; without one it says so,
-- exit 3, and the turns wait on), and klab report writes the report.
function T.two_phase_study_against_llama_server(t)
  with_servers(t, { reply(RELU), reply(BROKEN) }, function(good, bad)
    for _, provider in ipairs { "openai", "anthropic" } do
      local dir = t.tmpdir()
      local db = dir .. "/study.db"
      local v1 = provider == "openai" and "/v1" or ""
      write_script(dir .. "/study.lua", "study-" .. provider, db, provider, { good.base .. v1, bad.base .. v1 })
      local code, out, err = t.sh(("cd %s && %s %s"):format(q(t.root), q(t.klab), q(dir .. "/study.lua")))
      local gpu = require("klab.gpu").available()
      t.ok(code == 0 or (not gpu and code == 3), provider .. ": exit " .. tostring(code) .. ": " .. out .. err)
      local store <close> = assert(store_mod.open(db))
      local n = function(sql) return store:first(sql).n end
      -- tiny-relu: one request per trajectory; tiny-broken: two each (the
      -- compile error is judged here and fed back).
      t.eq(n("SELECT count(*) AS n FROM responses WHERE status = 200"), gpu and 4 + 4 or 2 + 4,
        provider .. ": requests sent\n" .. out)
      t.eq(n([[SELECT count(*) AS n FROM turns JOIN trajectories ON trajectories.id = turns.trajectory_id
               WHERE trajectories.model = 'tiny-broken' AND turns.verdict = 'compile_error']]), 4, provider)
      if not gpu then
        t.eq(n("SELECT count(*) AS n FROM turns WHERE awaiting = 1"), 2, provider .. ": awaiting judgement")
        t.match(out .. err, "2 turns await judgement on a GPU machine: klab judge ")
      end
      store:close()

      code, out, err = t.sh(("%s judge %s"):format(q(t.klab), q(db)))
      if gpu then
        t.eq(code, 0, out .. err)
      else
        t.eq(code, 3, out .. err)
        t.match(err, "nothing could be judged here")
      end
      local check <close> = assert(store_mod.open(db))
      if gpu then
        t.ok(check:first([[SELECT count(*) AS n FROM turns JOIN trajectories ON trajectories.id = turns.trajectory_id
          WHERE trajectories.model = 'tiny-relu' AND turns.verdict IN ('passed', 'target_not_executed')]]).n >= 2)
      end
      check:close()

      code, out, err = t.sh(("%s report %s --out %s"):format(q(t.klab), q(db), q(dir .. "/report")))
      t.eq(code, 0, out .. err)
      local html = t.read(dir .. "/report/index.html") or ""
      t.ok(html:find("tiny-relu", 1, true) and html:find("tiny-broken", 1, true), provider .. ": both models in the report")
    end
  end)
end

return T
