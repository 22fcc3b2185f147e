-- klab.experiment.model: language models behind a response cache.
--
--   local model = require "klab.experiment.model"
--   local m = model.new{provider = "openai", base_url = "https://api.openai.com/v1", model = "gpt-x",
--                       api_key_env = "OPENAI_API_KEY", temperature = 0.8, max_tokens = 32000,
--                       prices = {input = 1.25, output = 10}, concurrency = 4}
--   local c <close> = model.caller{db = db, mode = "record-missing", experiment = "sweep1"}
--   local ticket = c:submit(m, messages, {key = {sample = 1, turn = 1}})
--   for _, o in ipairs(c:poll(0.5)) do ... o.ticket, o.ok, o.text, o.usage ... end
--   local o = c:call(m, messages, meta)          -- submit and wait for that one
--
-- A model: {name=, provider= (a name of klab.experiment.providers), base_url=, model=, api_key_env=, temperature=,
-- top_p=, max_tokens=, max_tokens_field=, reasoning_effort=, thinking_budget=, seed=, stop=,
-- extra=, prices={input=, output=} (USD per million tokens), concurrency= (default 4),
-- timeout= (s per attempt, default 600), connect_timeout= (default 30),
-- retry={attempts= (default 4), base= (1 s), max= (60 s), budget= (900 s)}, max_reply_bytes= (64 MiB:
-- a larger reply is a failed call whose error gives its size; nothing of it is stored),
-- allow_insecure_http= (false: with api_key_env, a plain http:// base_url to a host other than this
-- machine is refused, since the key would cross the network unencrypted)}. name defaults to
-- model and labels the model in the store and the tables.
--
-- Nothing in a reply can abort a sweep: usage figures that are not token counts (12.5, 1e20, NaN,
-- text) are stored as text in the response (usage_text) with a warning in the log, and count as
-- unknown.
--
-- The API key never becomes a Lua string: the request's header names the
-- environment variable ({env = api_key_env}) and klab.http reads it in C.
--
-- Canonical request: {provider, model, body, key, name} as JSON with sorted keys
-- (model.json; name only when it is not the model id), where body is exactly what is sent and key is the caller's
-- sample key ({sample = replica, turn = n} in experiments, so that replicas
-- of one prompt and a resent request are distinct). base_url is left out,
-- so a cache recorded against one server replays against another. The
-- request hash is store.hash("klab.request.1", canonical).
--
-- Modes:
--   live            every request is sent; the answer replaces the cached one
--   record-missing  a cached success is reused; a miss or a cached failure is sent and stored
--   replay          answered from the store only (no network, klab.http is never loaded);
--                   a cached failure is replayed as that failure; a miss raises an
--                   mistake (klab.errors, exit status 2) whose one line names the
--                   task, tag, replica, turn, the file looked for and mode=record-missing
-- In replay and record-missing, caller{responses_dir=} is a second store: files
-- <dir>/<model>/<task>/<tag>/r<replica>/turn<n>.md answer requests whose meta
-- carries locator = {model=, task=, tag=, replica=, turn=} (the shipped sample
-- responses of experiments/quickstart.lua; with locator.language, a study's
-- language other than cuda, <tag>/<language>/r<replica>/...); leading
-- <!-- ... --> lines are a label, not part of the reply.
--
-- An outcome: {ticket=, hash=, model=, ok=, text=, reasoning=, finish=, usage={input=, output=,
-- reasoning=}, cost=, latency_ms=, attempts={{status=, error=, latency=, at=}...}, status=, error=,
-- source="network"|"cache"|"files", meta=, tool_calls= (when meta.wire, klab.agent.wire, made the
-- request: the calls the model asked for)}. A failed call (transport error after retries, an HTTP
-- error status, a malformed or truncated body) is ok=false with error set: never a raise.
-- Every outcome that came from the network or files is stored (responses table) with its usage,
-- latency, cost and attempts; headers are never stored.

local store_mod = require "klab.store"
local json = require "klab.json"

local M = {}

M.MODES = { live = true, ["record-missing"] = true, replay = true }
local providers = require "klab.experiment.providers"

-- Canonical JSON (klab.json): equal tables give equal text, so equal
-- requests hash alike.
M.json = require("klab.json").encode

-- ---- models ---------------------------------------------------------------

local FIELDS = {
  name = "string", provider = "string", base_url = "string", model = "string", api_key_env = "string",
  temperature = "number", top_p = "number", max_tokens = "number", max_tokens_field = "string",
  reasoning_effort = "string", thinking_budget = "number", seed = "number", stop = "table", extra = "table",
  prices = "table", concurrency = "number", timeout = "number", connect_timeout = "number", retry = "table",
  allow_insecure_http = "boolean", max_reply_bytes = "number",
}
-- A provider's own fields (anthropic_version, ...) come with it.
for k, v in pairs(providers.FIELDS) do FIELDS[k] = v end

M.FIELDS = FIELDS

M.MAX_REPLY_BYTES = 64 * 1024 * 1024

function M.new(spec)
  if type(spec) ~= "table" then error("model.new expects a table", 2) end
  local m = {}
  for k, v in pairs(spec) do
    local want = FIELDS[k]
    if not want then error(("model.new: unknown field '%s'"):format(tostring(k)), 2) end
    if type(v) ~= want and not (k == "stop" and type(v) == "string") then error(("model.new: field '%s' must be a %s, got %s"):format(k, want, type(v)), 2) end
    m[k] = v
  end
  local unknown = providers.unknown(m.provider)
  if unknown then error("model.new: " .. unknown, 2) end
  if not m.model or m.model == "" then error("model.new: field 'model' is required", 2) end
  if not m.base_url then
    m.base_url = providers.get(m.provider).base_url
  end
  if m.api_key_env and not m.api_key_env:match("^[%a_][%w_]*$") then
    error("model.new: api_key_env must name an environment variable", 2)
  end
  if m.api_key_env then
    -- Its value is kept out of everything klab stores, logs or sends back.
    require("klab.redact").add_env(m.api_key_env)
    if m.base_url:lower():match("^http://") and not m.allow_insecure_http
        and not require("klab.http").is_loopback(m.base_url) then
      error(("model.new: base_url %s is plain http:// to another machine and api_key_env is set: the key " ..
        "would cross the network unencrypted. Use https://, or set allow_insecure_http = true"):format(m.base_url), 2)
    end
  end
  if m.max_reply_bytes and not (m.max_reply_bytes >= 1) then error("model.new: max_reply_bytes must be >= 1", 2) end
  if type(m.stop) == "string" then m.stop = { m.stop } end
  m.name = m.name or m.model
  m.concurrency = math.max(1, math.floor(m.concurrency or 4))
  m.timeout = m.timeout or 600
  m.connect_timeout = m.connect_timeout or 30
  local r = m.retry or {}
  m.retry = { attempts = r.attempts or 4, base = r.base or 1, max = r.max or 60, budget = r.budget or 900 }
  return setmetatable(m, { __tostring = function(x) return "klab.experiment.model (" .. x.name .. ")" end })
end

-- The model as replica r of a trajectory asks it: replicas are independent
-- samples, so a model with a seed sends replica r the seed (seed + 1000003
-- * (r - 1)) mod 2^31 (replica 1 the seed itself); the request (and the
-- store's response cache) records it. Without a seed, m itself.
function M.for_replica(m, r)
  if m.seed == nil or (r or 1) == 1 then return m end
  local c = {}
  for k, v in pairs(m) do c[k] = v end
  c.seed = math.tointeger((m.seed + 1000003 * (r - 1)) % 2147483648)
  return setmetatable(c, getmetatable(m))
end

local function provider(m) return providers.get(m.provider) end

-- The request for messages: {canonical=, hash=, url=, headers=, body=}.
-- wire: a tool-calling request's format (klab.agent.wire.for_model), whose
-- body(m, messages) and parse(status, body) replace the provider's.
function M.request(m, messages, key, wire)
  local p = provider(m)
  local body = (wire or p).body(m, messages)
  -- Two models of one sweep that send the same body (one model id served
  -- two ways, told apart by their names) are two conditions, not one
  -- cached answer: a name of its own is part of the request. A model named
  -- after its id keeps the key it always had.
  local canonical = M.json { provider = m.provider, model = m.model, body = body, key = key,
    name = m.name ~= m.model and m.name or nil }
  return {
    canonical = canonical, hash = store_mod.hash("klab.request.1", canonical),
    url = p.url(m), headers = p.headers(m), body = M.json(body),
  }
end

function M.cost(m, usage)
  local pr = m.prices
  if not pr or not usage then return nil end
  local c = 0
  if pr.input and usage.input then c = c + usage.input * pr.input / 1e6 end
  if pr.output and usage.output then c = c + usage.output * pr.output / 1e6 end
  return c
end

-- ---- the caller -------------------------------------------------------------

local Caller = {}
Caller.__index = Caller

-- opts: {db = store handle or path, mode = "record-missing", experiment = name, log = function(line)
-- or nil, responses_dir = path, http = a klab.http client (for tests), concurrency = total cap}
function M.caller(opts)
  opts = opts or {}
  local mode = opts.mode or "record-missing"
  if not M.MODES[mode] then error("model.caller: mode must be live, record-missing or replay, got " .. tostring(mode), 2) end
  local c = setmetatable({
    mode = mode, experiment = opts.experiment or "-", log = opts.log, responses_dir = opts.responses_dir,
    http = opts.http, concurrency = opts.concurrency or math.huge,
    queues = {}, queue_order = {}, nqueued = 0, inflight = {}, ninflight = 0, per_model = {}, ready = {}, next_ticket = 0,
    stats = { network = 0, cache = 0, files = 0, failed = 0 },
  }, Caller)
  if type(opts.db) == "string" then
    -- Opened by the store's owner, with its checks and its one-line messages.
    local db, why = require("klab.store.records").open(opts.db)
    if not db then error("model.caller: " .. why, 2) end
    c.db = db
    c.own_db = true
  else
    c.db = opts.db
  end
  if not c.db then error("model.caller: a store (db) is required", 2) end
  return c
end

function Caller:close()
  if self.own_http and self.http then self.http:free() end
  self.http = nil
  if self.own_db and self.db then self.db:close() end
  self.db = nil
  self.queues, self.queue_order, self.nqueued, self.inflight, self.ready = {}, {}, 0, {}, {}
end
Caller.__close = Caller.close

function Caller:_log(fmt, ...)
  if self.log then self.log(require("klab.redact").text(fmt:format(...))) end
end

local function decode(s)
  if type(s) ~= "string" then return nil end
  local ok, v = pcall(json.decode, s)
  return ok and type(v) == "table" and v or nil
end

local function nonull(v) if v == json.null then return nil end return v end

local function outcome_from_row(row, ticket, m, meta)
  local r = decode(row.response) or {}
  local usage = type(r.usage) == "table" and r.usage or {}
  return {
    ticket = ticket, hash = row.hash, model = m.name, ok = row.error == nil, error = row.error,
    status = row.status, text = nonull(r.text), reasoning = nonull(r.reasoning), finish = nonull(r.finish),
    usage = { input = nonull(usage.input), output = nonull(usage.output), reasoning = nonull(usage.reasoning) },
    tool_calls = nonull(r.tool_calls),
    cost = row.cost_usd, latency_ms = row.latency_ms, attempts = nonull(r.attempts) or {}, source = "cache",
    meta = meta, cached = true,
  }
end

function Caller:_store(o, req, m, raw_body)
  local resp = {
    text = o.text, reasoning = o.reasoning, finish = o.finish, usage = o.usage, usage_text = o.usage_text,
    attempts = o.attempts, source = o.source, body = raw_body, tool_calls = o.tool_calls,
  }
  local ok, err = self.db:cache_put {
    hash = o.hash, request = req.canonical, response = M.json(resp), status = o.status or 0, model = m.name,
    error = o.error, latency_ms = o.latency_ms, input_tokens = o.usage and o.usage.input,
    output_tokens = o.usage and o.usage.output, cost_usd = o.cost,
  }
  if not ok then error("model: cannot store the response to " .. o.hash .. ": " .. tostring(err), 0) end
end

local function safe_part(s)
  return (tostring(s):gsub("[^%w_%.%-/]", "_"):gsub("%.%.+", "_"))
end

-- The file under responses_dir that answers a request with this meta, or
-- nil when there is no responses_dir or no locator.
function Caller:_response_path(meta)
  local loc = meta and meta.locator
  if not self.responses_dir or not loc then return nil end
  -- A language other than the default has a folder of its own under the tag's.
  return ("%s/%s/%s/%s/%sr%s/turn%s.md"):format(self.responses_dir, safe_part(loc.model), safe_part(loc.task),
    safe_part(loc.tag or "none"), loc.language and (safe_part(loc.language) .. "/") or "", tostring(loc.replica or 1),
    tostring(loc.turn or 1))
end

function Caller:_from_files(meta)
  local path = self:_response_path(meta)
  if not path then return nil end
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  -- Leading HTML comments label the file; they are not part of the reply.
  while true do
    local rest = text:match("^%s*<!%-%-.-%-%->[ \t]*\n(.*)$")
    if not rest then break end
    text = rest
  end
  return text, path
end

-- Ends a replay that lacks a response with one line for the user: which
-- request (task, tag, replica, turn), where it was looked for, and the way
-- out. Raised as a klab.errors mistake (exit status 2).
function Caller:_replay_miss(m, req, meta)
  local loc = meta and meta.locator
  local what = loc and ("task %s, tag %s%s, replica %s, turn %s"):format(tostring(loc.task), tostring(loc.tag or "none"),
    loc.language and (", language " .. tostring(loc.language)) or "", tostring(loc.replica or 1), tostring(loc.turn or 1))
    or ("request " .. req.hash:sub(1, 12))
  local path = self:_response_path(meta)
  local where = path and ("not in the store and no file %s"):format(path)
    or "not in the store (and no responses_dir= to look in)"
  require("klab.errors").raise("mistake", ("replay: no stored response for %s of model %s (experiment %s): %s; "
    .. "run with mode=record-missing to ask the model for the missing ones"):format(what, m.name, self.experiment, where))
end

function Caller:submit(m, messages, meta)
  meta = meta or {}
  local req = M.request(m, messages, meta.key, meta.wire)
  self.next_ticket = self.next_ticket + 1
  local ticket = self.next_ticket
  if self.mode ~= "live" then
    local row = self.db:cache_get(req.hash)
    if row and (self.mode == "replay" or row.error == nil) then
      local o = outcome_from_row(row, ticket, m, meta)
      self.stats.cache = self.stats.cache + 1
      self.ready[#self.ready + 1] = o
      return ticket, req.hash
    end
    local text, path = self:_from_files(meta)
    if text then
      local o = {
        ticket = ticket, hash = req.hash, model = m.name, ok = true, status = 200, text = text,
        usage = {}, latency_ms = 0, attempts = {}, source = "files", meta = meta,
      }
      self:_store(o, req, m, nil)
      self.stats.files = self.stats.files + 1
      self:_log("model %s %s: from %s", m.name, req.hash:sub(1, 12), path)
      self.ready[#self.ready + 1] = o
      return ticket, req.hash
    end
    if self.mode == "replay" then self:_replay_miss(m, req, meta) end
  end
  local qq = self.queues[m.name]
  if not qq then
    qq = { items = {}, head = 1, tail = 0 }
    self.queues[m.name] = qq
    self.queue_order[#self.queue_order + 1] = m.name
  end
  -- A queue with a head and a tail: # of a table whose front was cleared
  -- is not its length.
  qq.tail = qq.tail + 1
  qq.items[qq.tail] = { ticket = ticket, m = m, req = req, meta = meta }
  self.nqueued = self.nqueued + 1
  self:_dispatch()
  return ticket, req.hash
end

function Caller:_client()
  if not self.http then
    local ok, http = pcall(require, "klab.http")
    if not ok then error("model: klab.http is not available: " .. tostring(http), 0) end
    local c, err = http.client()
    if not c then error("model: cannot start an HTTP client: " .. tostring(err), 0) end
    self.http, self.own_http = c, true
  end
  return self.http
end

-- Sends what waits, first come first served within each model, while the
-- caller and each model have room. Each model has its own queue, so a model
-- at its cap costs nothing to pass over (one shared queue was scanned whole
-- at every poll).
function Caller:_dispatch()
  local progress = true
  while progress and self.nqueued > 0 and self.ninflight < self.concurrency do
    progress = false
    for _, name in ipairs(self.queue_order) do
      local qq = self.queues[name]
      if qq.head <= qq.tail and self.ninflight < self.concurrency then
        local q = qq.items[qq.head]
        local n = self.per_model[name] or 0
        if n < q.m.concurrency then
          qq.items[qq.head] = nil
          qq.head = qq.head + 1
          if qq.head > qq.tail then qq.items, qq.head, qq.tail = {}, 1, 0 end
          self.nqueued = self.nqueued - 1
          progress = true
          local m = q.m
          local id, err = self:_client():submit {
            url = q.req.url, method = "POST", headers = q.req.headers, body = q.req.body,
            connect_timeout = m.connect_timeout, timeout = m.timeout,
            max_body = math.tointeger(m.max_reply_bytes or M.MAX_REPLY_BYTES) or M.MAX_REPLY_BYTES,
            allow_insecure_http = m.allow_insecure_http,
            retry = { attempts = m.retry.attempts, base = m.retry.base, max = m.retry.max, budget = m.retry.budget },
          }
          if not id then
            -- Refused before sending (a bad URL): a failed call like any other.
            self:_finish(q, { status = 0, error = tostring(err), attempts = {}, elapsed = 0 })
          else
            self.inflight[id] = q
            self.ninflight = self.ninflight + 1
            self.per_model[name] = n + 1
          end
        end
      end
    end
  end
end

local function finite(x) return type(x) == "number" and x == x and x > -math.huge and x < math.huge and x or nil end

local function copy_attempts(list)
  local out = {}
  for i, a in ipairs(list or {}) do
    out[i] = { status = a.status, error = a.error ~= "" and a.error or nil, latency = finite(a.latency),
               at = finite(a.at), retry_after = finite(a.retry_after), wait = finite(a.wait) }
  end
  return out
end

-- A token count, or nil: a non-negative integer (an integral float below
-- 2^53 counts too).
local function count_of(v)
  if math.type(v) == "integer" then return v >= 0 and v or nil end
  if math.type(v) == "float" and v == v and v >= 0 and v < 2 ^ 53 and v == math.floor(v) then
    return math.tointeger(v)
  end
  return nil
end

-- Keeps the usage figures that are counts; the others go to text, said in
-- the log. Returns the text of the odd ones (nil when none).
function Caller:_check_usage(o, m)
  local odd
  for _, k in ipairs { "input", "output", "reasoning" } do
    local v = o.usage[k]
    if v ~= nil then
      local c = count_of(v)
      if c == nil then
        odd = odd or {}
        odd[k] = type(v) == "number" and ("%.17g"):format(v) or tostring(v):sub(1, 200)
        self:_log("model %s %s: warning: usage %s = %s is not a token count; stored as text, counted as unknown",
          m.name, o.hash:sub(1, 12), k, odd[k])
      end
      o.usage[k] = c
    end
  end
  return odd
end

function Caller:_finish(q, r)
  local m = q.m
  local o = {
    ticket = q.ticket, hash = q.req.hash, model = m.name, status = r.status or 0,
    latency_ms = (r.elapsed or 0) * 1000, attempts = copy_attempts(r.attempts), source = "network", meta = q.meta,
  }
  if r.error and r.error ~= "" then
    o.ok, o.error = false, ("transport error after %d attempt%s: %s"):format(#o.attempts,
      #o.attempts == 1 and "" or "s", r.error)
  else
    local pok, parsed, perr = pcall((q.meta.wire or provider(m)).parse, r.status, r.body)
    if not pok then parsed, perr = nil, "the reply could not be read: " .. tostring(parsed) end
    if parsed then
      o.ok, o.text, o.reasoning, o.finish, o.usage = true, parsed.text, parsed.reasoning, parsed.finish, parsed.usage
      o.tool_calls = parsed.tool_calls
    else
      o.ok, o.error = false, perr
    end
  end
  o.usage = type(o.usage) == "table" and o.usage or {}
  -- What a server sent enters klab here: a key it echoed or quoted goes no
  -- further (the store, the log and the HTTP layer redact again).
  local redact = require("klab.redact").text
  if o.error then o.error = redact(o.error) end
  if type(o.text) == "string" then o.text = redact(o.text) end
  if type(o.reasoning) == "string" then o.reasoning = redact(o.reasoning) end
  o.usage_text = self:_check_usage(o, m)
  if o.ok then o.cost = finite(M.cost(m, o.usage)) end
  self:_store(o, q.req, m, r.body)
  self.stats.network = self.stats.network + 1
  if not o.ok then self.stats.failed = self.stats.failed + 1 end
  self:_log("model %s %s: %s in %.0f ms, %d attempt%s%s", m.name, o.hash:sub(1, 12),
    o.ok and ("HTTP " .. tostring(o.status)) or ("failed: " .. o.error), o.latency_ms, #o.attempts,
    #o.attempts == 1 and "" or "s",
    o.ok and (", tokens in %s out %s reasoning %s"):format(tostring(o.usage.input), tostring(o.usage.output),
      tostring(o.usage.reasoning)) or "")
  self.ready[#self.ready + 1] = o
end

function Caller:pending()
  return self.nqueued + self.ninflight + #self.ready
end

-- Outcomes that completed, waiting at most wait_s for one when none is ready.
function Caller:poll(wait_s)
  self:_dispatch()
  if self.ninflight > 0 then
    local list, err = self.http:poll(#self.ready > 0 and 0 or (wait_s or 0))
    if not list then error("model: HTTP poll failed: " .. tostring(err), 0) end
    for _, r in ipairs(list) do
      local q = self.inflight[r.id]
      if q then
        self.inflight[r.id] = nil
        self.ninflight = self.ninflight - 1
        self.per_model[q.m.name] = self.per_model[q.m.name] - 1
        self:_finish(q, r)
      end
    end
    self:_dispatch()
  end
  local out = self.ready
  self.ready = {}
  return out
end

-- Waits for every request in flight and keeps their answers (stored as they
-- arrive); gives up after max_s seconds. Returns the outcomes collected.
function Caller:drain(max_s)
  local sys = require "klab.sys"
  local t_end = sys.now() + (max_s or 30)
  local got = {}
  self.queues, self.queue_order, self.nqueued = {}, {}, 0
  while self.ninflight > 0 and sys.now() < t_end do
    for _, o in ipairs(self:poll(math.min(0.5, math.max(0, t_end - sys.now())))) do got[#got + 1] = o end
  end
  for _, o in ipairs(self:poll(0)) do got[#got + 1] = o end
  return got
end

-- Submits one request and waits for its outcome.
function Caller:call(m, messages, meta)
  local ticket = self:submit(m, messages, meta)
  local others = {}
  while true do
    for _, o in ipairs(self:poll(0.25)) do
      if o.ticket == ticket then
        for _, x in ipairs(others) do self.ready[#self.ready + 1] = x end
        return o
      end
      others[#others + 1] = o
    end
  end
end

return M
