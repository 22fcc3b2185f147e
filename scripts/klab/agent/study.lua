-- klab.agent.study: tool-calling studies. Beside the turn-based loop
-- (klab.experiment: the model writes a kernel, klab judges it, the verdict
-- is the next prompt), the model here works with tools through its
-- provider's own tool-calling API (klab.agent.wire): compile, run (once,
-- on the smallest of the task's workloads), profile, and submit (the full evaluation,
-- which is the trajectory's turn), within budgets.
--
--   local study = require "klab.agent.study"
--   local s <close> = study.new{name=, db=, models=, tasks=, tags = {"none"}, replicas = 1,
--     budgets = {tool_calls = 30, submissions = 3, tokens =, wall_s =, gpu_s =},
--     target_speedup =, mode = "record-missing", responses_dir =, arch = "sm_90a", phase = "auto",
--     prompt = {system = "system.md", user = "tools.md", root =, vars =}, eval = {...}, log =}
--   local summary = s:run()   -> {trajectories=, submissions=, tool_calls=, requests=, counts=, status=}
--
-- The store is the experiment's (docs/experiments.md): an experiments row
-- whose config has policy = "tools" and the budgets; one trajectory per
-- model, task, tag and replica (the same keys as the turn-based loop's);
-- one turn per submission, with its verdict, candidate, the assistant's
-- text, the tool result the model read, and the tokens and cost since the
-- previous submission. The whole conversation (every message, tool call
-- and tool result, each assistant message with its request's hash, token
-- counts and cost) is the trajectory's messages column, written after
-- every step. Every request and response is in the response cache.
--
-- A trajectory ends when the model answers without a tool call
-- ("model_stopped"), a submission meets target_speedup ("target_met"), the
-- submissions are used ("max_submissions"), a limit is reached ("budget:
-- NAME"), or, in the generate phase (no GPU), at its first submission,
-- which waits for `klab judge` ("awaiting_judgement"). A call over its
-- budget is answered with a tool error that says so; the model gets one
-- more request to answer it, and a second refusal ends the trajectory.
-- Running the study again continues unfinished trajectories from their
-- stored conversation; in replay mode the replies come from the store.

local json = require "klab.json"
local sys = require "klab.sys"
local errors = require "klab.errors"
local records = require "klab.store.records"
local verdicts = require "klab.eval.verdict"
local model_mod = require "klab.experiment.model"
local prompt = require "klab.experiment.prompt"
local workloads_mod = require "klab.experiment.workloads"
local budget_mod = require "klab.agent.budget"
local study_tools = require "klab.agent.study_tools"
local tools = require "klab.agent.tools"
local wire_mod = require "klab.agent.wire"

local M = {}

M.POLICY = "tools"

local Study = {}
Study.__index = Study

local function mistake(fmt, ...) errors.raise("mistake", fmt:format(...)) end

function M.new(spec)
  if type(spec) ~= "table" or type(spec.name) ~= "string" or spec.name == "" then
    mistake("tool-calling study: a table with a name is required")
  end
  local s = setmetatable({ spec = spec, name = spec.name }, Study)
  local experiment = require "klab.experiment"
  s.groups = {}
  for i, entry in ipairs(spec.tasks or {}) do
    local ok, g = pcall(experiment.group, entry)
    if not ok then mistake("study %s: task %s: %s", spec.name, tostring(entry), tostring(g):gsub("^[^:]+:%d+: ", "")) end
    s.groups[i] = g
  end
  if #s.groups == 0 then mistake("study %s: at least one task is required", spec.name) end
  s.models = {}
  for i, m in ipairs(spec.models or {}) do
    s.models[i] = getmetatable(m) and m or model_mod.new(m)
  end
  if #s.models == 0 then mistake("study %s: at least one model is required", spec.name) end
  local limits, why = budget_mod.check(spec.budgets)
  if not limits then mistake("study %s: %s", spec.name, why) end
  s.limits = limits
  s.tags = spec.tags or { "none" }
  s.replicas = spec.replicas or 1
  s.arch = spec.arch or "sm_90a"
  s.mode = spec.mode or "record-missing"
  s.target = spec.target_speedup
  s.prompt = spec.prompt or {}
  s.phase = spec.phase or require("klab.experiment.options").command_line_phase or "auto"
  if type(spec.db) == "string" then
    local db, derr = records.open(spec.db, { make_folder = true })
    if not db then mistake("study %s: db=%s: %s", spec.name, spec.db, derr) end
    s.db, s.own_db = db, true
  else
    s.db = spec.db
  end
  if not s.db then mistake("study %s: a store (db) is required", spec.name) end
  records.define_verdicts(s.db)
  return s
end

function Study:close()
  if self.session and self.own_session then self.session:close() end
  if self.caller then self.caller:close() end
  if self.own_db and self.db then self.db:close() end
  self.session, self.caller, self.db = nil, nil, nil
end
Study.__close = Study.close

-- What workloads.evaluate asks of the object it evaluates for.
function Study:_check_signal()
  local sig = sys.trapped()
  if sig then errors.raise("signal", ("study %s: stopped by SIG%s"):format(self.name, sig),
    { signal = sig, status = 128 + (sys.signal_number(tostring(sig)) or 0) }) end
end
function Study:_keep_outcome() end

function Study:_log(fmt, ...)
  local l = self.spec.log
  if not l then return end
  local text = require("klab.redact").text(fmt:format(...))
  if type(l) == "function" then l(text) else require("klab.fs").append(l, text .. "\n") end
end

function Study:_config()
  local models, groups = require("klab.experiment.sweep").stored(self)
  local names = {}
  for i, t in ipairs(study_tools.LIST) do names[i] = t.name end
  return model_mod.json {
    policy = M.POLICY, budgets = self.limits, tools = names, models = models, tasks = groups, tags = self.tags,
    replicas = self.replicas, turns = self.limits.submissions, target_speedup = self.target, arch = self.arch,
    mode = self.mode, prompt = self.prompt, eval = self.spec.eval,
    -- klab judge stores a judged submission's verdict; the model read its
    -- tool result when it submitted (the conversation keeps it).
    feedback = { template = false },
    klab = require("klab.build_text").with_this((records.experiment(self.db, self.name) or {}).config),
  }
end

-- ---- one trajectory -----------------------------------------------------------

-- What was spent so far in a stored conversation.
local function spent_in(messages, turns)
  local s = { tool_calls = 0, submissions = #turns, tokens = 0, wall_s = 0, gpu_s = 0 }
  for _, x in ipairs(messages) do
    if x.role == "assistant" then
      s.tokens = s.tokens + (x.usage and ((x.usage.input or 0) + (x.usage.output or 0)) or 0)
    elseif x.role == "tool" then
      s.tool_calls = s.tool_calls + 1
      s.gpu_s = s.gpu_s + (x.gpu_s or 0)
    end
    s.wall_s = s.wall_s + (x.seconds or 0)
  end
  return s
end

function Study:_eval_opts()
  local o = {}
  for k, v in pairs(self.spec.eval or {}) do o[k] = v end
  o.arch = self.arch
  if self.generating then o.build_only = true end
  return o
end

-- The text of a tool result for the model.
local function text_of(data) return json.encode(data, { nonfinite = true }) end

-- Runs one tool call; returns the tool message (role "tool").
function Study:_tool(t, call, b, state)
  local msg = { role = "tool", tool_call_id = call.id, name = call.name }
  local tool
  for _, x in ipairs(study_tools.LIST) do if x.name == call.name then tool = x end end
  local function fail(why)
    msg.content, msg.is_error = why, true
    return msg
  end
  if not tool then
    local names = {}
    for i, x in ipairs(study_tools.LIST) do names[i] = x.name end
    return fail(("no tool '%s' (tools: %s)"):format(call.name, table.concat(names, ", ")))
  end
  local refused = b:refuse(call.name)
  if refused then
    state.refusals = state.refusals + 1
    return fail(refused)
  end
  b:spend("tool_calls")
  if call.arguments_error then return fail(call.arguments_error) end
  local a, why = require("klab.agent.args").check(tool.schema, call.arguments)
  if not a then return fail(why) end
  local n = b.spent.tool_calls
  local c
  c, why = study_tools.candidate(a, ("%s-c%d"):format(t.group.name:gsub("[^%w_]", "_"), n))
  if not c then return fail(why) end
  local t0 = sys.now()
  if call.name == "compile" then
    local r, cwhy = tools.compile_record(c, self.arch)
    if not r then return fail(cwhy) end
    msg.content = text_of(study_tools.compact_compile(r))
  elseif call.name == "submit" then
    self:_submit(t, c, msg, b, state)
  else
    local ctx = { session = function() return self.session end }
    why = tools.no_gpu(ctx)
    if why then return fail(why) end
    -- The smallest of the trajectory's own workloads.
    local list = {}
    for i, w in ipairs(t.group.workloads) do list[i] = require("klab.task").get(w) end
    local task = tools.smallest(list)
    local r, rwhy = (call.name == "run" and tools.run_record or tools.profile_record)(ctx, task, c, self.arch)
    if not r then return fail(rwhy) end
    r.profile, r.outputs, r.seed = nil, nil, nil
    msg.content = text_of(r)
  end
  if tool.gpu and not self.generating then
    msg.gpu_s = sys.now() - t0
    b:spend("gpu_s", msg.gpu_s)
  end
  return msg
end

-- A submission: the full evaluation on the task's workloads, stored as the
-- trajectory's next turn.
function Study:_submit(t, c, msg, b, state)
  b:spend("submissions")
  self.db:put_candidate { language = c.lang, code = c.code, plan = c.plan, source = "model:" .. state.last_hash }
  local res = workloads_mod.evaluate(self, c, t.group.workloads, self:_eval_opts())
  local n = #t.turns + 1
  local rec = {
    trajectory_id = t.id, turn = n, request_hash = state.last_hash, source = state.last_source,
    verdict = res.verdict, reason = res.reason, speedup = res.speedup,
    verified = res.verified == nil and nil or (res.verified and 1 or 0), candidate = c.hash, language = c.lang,
    workloads = model_mod.json(res.workloads), reply = state.last_text,
    input_tokens = state.since.input, output_tokens = state.since.output, cost_usd = state.since.cost,
    latency_ms = state.since.latency_ms,
  }
  local data
  if res.awaiting then
    rec.awaiting = 1
    data = { submission = n, status = "awaiting_judgement",
      note = "built and plan-checked here; the GPU stages run later on a GPU machine (klab judge)" }
    state.stop = "awaiting_judgement"
  else
    local ws = {}
    for i, w in ipairs(res.workloads or {}) do
      ws[i] = { shape = w.axes, verdict = w.verdict, reason = w.reason, speedup = w.speedup, time_ms = w.time_ms,
        baseline_ms = w.baseline_ms }
    end
    data = { submission = n, verdict = res.verdict, reason = res.reason, speedup = res.speedup, workloads = ws }
    if self.target and verdicts.passed(res.verdict)
        and (self.target <= 0 or (res.speedup and res.speedup >= self.target)) then
      state.stop = "target_met"
    end
  end
  data.submissions_left = self.limits.submissions - b.spent.submissions
  msg.content = text_of(data)
  rec.feedback = msg.content
  self.db:transaction(function() t.turns[#t.turns + 1] = records.add_turn(self.db, rec) end)
  state.since = { input = 0, output = 0, latency_ms = 0 }
  self.counts[rec.verdict] = (self.counts[rec.verdict] or 0) + 1
  if not state.stop and b.spent.submissions >= self.limits.submissions then state.stop = "max_submissions" end
end

function Study:_finish(t, reason)
  local best, best_turn
  for _, tr in ipairs(t.turns) do
    if verdicts.passed(tr.verdict) and tr.speedup and (not best or tr.speedup > best) then best, best_turn = tr.speedup, tr.turn end
  end
  records.finish_trajectory(self.db, t.id, { stop_reason = reason, best_speedup = best, best_turn = best_turn,
    selected_turn = best_turn, selected_speedup = best, selection = best_turn and "fastest_correct" or
      "fastest_correct: no correct submission" })
  self:_log("%s %s %s r%d: %s after %d submission(s)", t.model.name, t.group.name, t.tag, t.replica, reason, #t.turns)
end

function Study:_trajectory(t)
  local messages = t.messages
  local b = budget_mod.new(self.limits, spent_in(messages, t.turns))
  -- since: what the steps since the last submission cost (the next turn's
  -- tokens, dollars when the model has prices, and latency).
  local state = { refusals = 0, since = { input = 0, output = 0, latency_ms = 0 } }
  local wire = wire_mod.for_model(t.model, study_tools.LIST)
  local function save() records.set_trajectory_messages(self.db, t.id, model_mod.json(messages)) end
  while true do
    self:_check_signal()
    local over = b:over()
    if over then return self:_finish(t, "budget: " .. over) end
    local step = 0
    for _, x in ipairs(messages) do if x.role == "assistant" then step = step + 1 end end
    local t0 = sys.now()
    local o = self.caller:call(t.model, messages, { key = { tag = t.tag, sample = t.replica, step = step + 1, policy = M.POLICY },
      wire = wire })
    if not o.ok then
      -- Nothing appended: a run again asks this step again.
      self.failed[#self.failed + 1] = ("%s: %s"):format(t.model.name, tostring(o.error))
      return
    end
    local usage = o.usage or {}
    local a = { role = "assistant", content = o.text or "", tool_calls = o.tool_calls, request_hash = o.hash,
      source = o.source, usage = { input = usage.input, output = usage.output, reasoning = usage.reasoning },
      cost = o.cost, finish = o.finish, seconds = sys.now() - t0 }
    messages[#messages + 1] = a
    b:spend("tokens", (usage.input or 0) + (usage.output or 0))
    b:spend("wall_s", a.seconds)
    state.since.input = state.since.input + (usage.input or 0)
    state.since.output = state.since.output + (usage.output or 0)
    if o.cost then state.since.cost = (state.since.cost or 0) + o.cost end
    state.since.latency_ms = state.since.latency_ms + (o.latency_ms or 0)
    state.last_hash, state.last_source, state.last_text = o.hash, o.source, o.text or ""
    self.requests = self.requests + 1
    if not o.tool_calls or #o.tool_calls == 0 then
      save()
      return self:_finish(t, "model_stopped")
    end
    local refusals_before = state.refusals
    for _, call in ipairs(o.tool_calls) do
      local c0 = sys.now()
      local m = self:_tool(t, call, b, state)
      m.seconds = sys.now() - c0
      b:spend("wall_s", m.seconds)
      messages[#messages + 1] = m
      self.tool_calls = self.tool_calls + 1
      if state.stop then break end
    end
    -- Every call of the reply is answered, those after a stop too (the
    -- providers want an answer to each).
    local answered = {}
    for _, x in ipairs(messages) do if x.role == "tool" then answered[x.tool_call_id] = true end end
    for _, call in ipairs(o.tool_calls) do
      if not answered[call.id] then
        messages[#messages + 1] = { role = "tool", tool_call_id = call.id, name = call.name, is_error = true,
          content = "not run: the trajectory ended (" .. state.stop .. ")" }
      end
    end
    save()
    if state.stop then return self:_finish(t, state.stop) end
    if refusals_before > 0 and state.refusals > refusals_before then return self:_finish(t, "budget: refused") end
  end
end

-- ---- the study --------------------------------------------------------------------

function Study:_trajectories()
  local list = {}
  for _, s in ipairs(require("klab.experiment.sweep").list(self)) do
    local m, g, tag, r, key = s[1], s[2], s[3], s[4], s[5]
    local row = records.trajectory(self.db, key)
    local messages
    if row then
      messages = records.trajectory_messages(self.db, row.id) or {}
    else
      messages = prompt.messages { group = g, tag = tag, arch = self.arch, system = self.prompt.system,
        user = self.prompt.user or "tools.md", vars = self.prompt.vars, root = self.prompt.root }
      row = records.add_trajectory(self.db, { experiment_id = self.exp_id, key = key, model = m.name,
        task = g.name, tag = tag, replica = r, messages = model_mod.json(messages) })
    end
    list[#list + 1] = { id = row.id, row = row, model = model_mod.for_replica(m, r), group = g, tag = tag,
      replica = r, messages = messages, done = row.state == "done", turns = records.turns(self.db, row.id) }
  end
  return list
end

function Study:run()
  local db = self.db
  sys.trap("INT", "TERM")
  local ok, res = pcall(function()
    self.exp_id = db:transaction(function() return records.save_experiment(db, self.name, self:_config()) end)
    local trajs = db:transaction(function() return self:_trajectories() end)
    self.session = self.spec.session
    if not self.session then
      self.session = require("klab.eval").session { db = db, deadline = self.spec.eval and self.spec.eval.deadline,
        cpu = 0 }
      self.own_session = true
    end
    local phase = self.phase
    if phase == "auto" then
      local m = self.session:machine()
      phase = m.none and "generate" or "full"
    end
    self.generating = phase == "generate"
    self.caller = model_mod.caller { db = db, mode = self.mode, experiment = self.name,
      responses_dir = self.spec.responses_dir, http = self.spec.http }
    self.counts, self.failed, self.requests, self.tool_calls = {}, {}, 0, 0
    for _, t in ipairs(trajs) do
      if not t.done then self:_trajectory(t) end
    end
    local submissions = 0
    for _, c in pairs(self.counts) do submissions = submissions + c end
    local status = 0
    if #self.failed > 0 and self.requests == 0 then status = 3 end
    return { trajectories = #trajs, submissions = submissions, tool_calls = self.tool_calls, requests = self.requests,
      failed = self.failed, counts = self.counts, phase = phase, status = status }
  end)
  sys.untrap()
  if not ok then error(res, 0) end
  return res
end

return M
