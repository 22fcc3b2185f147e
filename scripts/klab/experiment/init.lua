-- klab.experiment: sweeps of models x tasks x languages x prompt tags x replicas, with
-- multi-turn trajectories, early stop, best-of-N, selection policies,
-- concurrency between model calls and GPU evaluation, and resume.
--
--   local experiment = require "klab.experiment"
--   local exp = experiment.new{
--     name = "sweep1", db = "results/sweep1.db",
--     models = {model.new{...}, ...},
--     tasks = {"gemm_bf16/8192x7168x5120", {name = "gemm_small", workloads = {...}, gate = {...}}},
--     tags = {"hopper-no-hint", "hopper+cluster_multicast"}, replicas = 4, turns = 8, target_speedup = 1.2,
--   }
--   local summary = exp:run()
--   print(exp:table())
--
-- Spec fields (defaults in brackets): name (required), db (a path or an open
-- store), models (model specs or model.new results), tasks, languages
-- [{"cuda"}] (klab.experiment.languages: each a condition of the sweep, with
-- its prompt variant and its code block), tags [{"none"}],
-- replicas [1], turns [1], target_speedup [none: no early stop], mode
-- ["record-missing"], responses_dir, arch ["sm_90a"], eval (options for
-- eval:evaluate, e.g. {timing = true, trials = ..., deadline = ...}),
-- select [policy.fastest_correct] (per trajectory), prompt ({system=, user=,
-- vars=, root=}), feedback ({template = "feedback.md", compile_log = true,
-- profile = false, profile_after = 0, log_lines = 40}), history ["full" or
-- "last"], on_turn (function(turn, trajectory), called after each turn is
-- stored; raising from it stops the run), progress ["auto", "bar", "plain",
-- false], log (a path to append to, or function(line)), concurrency [total
-- requests in flight; each model has its own cap too], drain_s [10], session
-- (an open eval session to use), pool ({gpus=, per_gpu=, cpu=} for the
-- session klab opens: klab.eval.session's; default every GPU, one worker
-- each, and CPU workers for the builds), shard ({index=, count=} or "I/N": run
-- only that shard of the trajectories; false: all of them; default: the
-- command line's shard=I/N, else the Slurm array task's; see
-- klab.experiment.shard). A string db may name {index} and {count}.
-- phase ["auto": "generate" where no GPU is visible, else "full"; default
-- the command line's phase=]: generate asks each trajectory's first turn,
-- builds and plan-checks its candidate, and stores it awaiting judgement
-- (its GPU stages wait for klab judge); repair turns are sent only after
-- what was judged here (no code, compile and plan errors), never after a
-- turn nobody could judge. exp:judge() runs the GPU stages of the turns
-- that await them.
--
-- Resume: every trajectory and turn is stored as it finishes (one
-- transaction per turn). Running the same experiment again skips finished
-- trajectories, continues unfinished ones after their last stored turn (the
-- conversation is rebuilt from the stored replies and feedback), and never
-- stores a turn twice (UNIQUE(trajectory_id, turn)). On an error (a hook, a
-- replay miss, an interrupt) requests already in flight are waited for
-- (drain_s) and their responses kept in the cache before the error goes on.
--
-- The tables (created by the store, documented in docs/experiments.md):
-- experiments, trajectories, turns.

local json = require "klab.json"
local model_mod = require "klab.experiment.model"
local prompt = require "klab.experiment.prompt"
local extract = require "klab.experiment.extract"
local policy = require "klab.experiment.policy"
local progress = require "klab.progress"
local verdicts = require "klab.eval.verdict"
local candidate_mod = require "klab.eval.candidate"
local task_mod = require "klab.task"
local store_mod = require "klab.store"
local shard_mod = require "klab.experiment.shard"
local errors = require "klab.errors"
local records = require "klab.store.records"
local workloads_mod = require "klab.experiment.workloads"
local summary_table = require "klab.experiment.summary_table"
-- A line for the terminal, its names (from specs and stores) shown escaped.
local term = require("klab.report.escape").terminal
local judge_mod = require "klab.experiment.judge"
local spec_mod = require "klab.experiment.spec"
local results_mod = require "klab.experiment.results"
local languages_mod = require "klab.experiment.languages"
local other_language = languages_mod.other

local M = {}

-- The store owns the tables (host/store/tables.c describes them; docs/store.md
-- and docs/experiments.md describe them); the verdicts a turn may record are
-- klab.eval.verdict's, written into the store before the first turn.
function M.ensure_schema(db)
  records.define_verdicts(db)
end

-- ---- command-line options (klab.experiment.options) ----------------------

local options_mod = require "klab.experiment.options"
M.help, M.options, M.models_from = options_mod.help, options_mod.options, options_mod.models_from
M.with_model_options = options_mod.with_model_options
M.MODEL_OPTION_LIST, M.MODEL_OPTIONS = options_mod.MODEL_OPTION_LIST, options_mod.MODEL_OPTIONS

-- ---- task groups ---------------------------------------------------------

-- A task entry: "base/variant" (one workload), "base" (every variant), or
-- {name=, workloads={...}} | {name=, base=, tags={...}} (the variants of
-- base that carry one of the tags), with an optional gate={...} (or a count).
function M.group(entry)
  if type(entry) == "string" and not task_mod.is_name(entry) then error(task_mod.not_a_name(entry), 3) end
  if type(entry) == "string" then
    if entry:find("/", 1, true) then return { name = entry, workloads = { entry } } end
    entry = { name = entry, base = entry }
  end
  if type(entry) ~= "table" then error("experiment: a task is a name or a table", 3) end
  -- Every workload, base and gate is a task name, resolved on the task
  -- path as the command line's are: never a path to a file.
  local function named(w)
    if not task_mod.is_name(w) then error(task_mod.not_a_name(w), 4) end
    return w
  end
  local g = { name = entry.name, gate = entry.gate, workloads = {} }
  if type(entry.gate) == "table" then for _, w in ipairs(entry.gate) do named(w) end end
  if entry.workloads then
    for i, w in ipairs(entry.workloads) do g.workloads[i] = named(w) end
  elseif entry.base then
    named(entry.base)
    local d = task_mod.load(entry.base)
    for _, t in ipairs(d.tasks) do
      local keep = not entry.tags
      for _, want in ipairs(entry.tags or {}) do
        for _, have in ipairs(task_mod.plain(t.tags)) do if have == want then keep = true end end
      end
      if keep then g.workloads[#g.workloads + 1] = t.name end
    end
  end
  if not g.name then g.name = g.workloads[1] end
  if #g.workloads == 0 then error("experiment: task " .. tostring(g.name) .. " has no workloads", 3) end
  return g
end

local function gate_of(g, pol)
  local gate = g.gate or pol.gate or 2
  if type(gate) == "number" then
    local out = {}
    for i = 1, math.min(gate, #g.workloads) do out[i] = g.workloads[i] end
    return out
  end
  return gate
end

-- A copy of t holding only what JSON can hold (no functions).
local function plain(t)
  if type(t) ~= "table" then return (type(t) == "function" or type(t) == "userdata") and nil or t end
  local out = {}
  for k, v in pairs(t) do out[k] = plain(v) end
  return out
end

-- ---- the experiment ----------------------------------------------------------

local Exp = {}
Exp.__index = Exp

-- Raises when a signal asked the sweep to stop: one line, and the exit
-- status the shell would show for the signal (128 + its number).
function Exp:_check_signal()
  local sys = require "klab.sys"
  local sig = sys.trapped()
  if sig then
    errors.raise("signal", ("experiment %s: stopped by SIG%s"):format(self.name, sig),
      { signal = sig, status = 128 + (sys.signal_number(tostring(sig)) or 0) })
  end
end


-- The store at path, opened for writing, its folder made when missing. A
-- path that cannot be a store is a mistake: one line that starts with who.
local function open_store(path, who)
  local db, why = records.open(path, { make_folder = true })
  if not db then errors.raise("mistake", ("%s: db=%s: %s"):format(who, path, why)) end
  return db
end

-- stored: for an experiment rebuilt from a store (klab.experiment.stored's
-- facts), whose mistakes name the store, whose prompts are never read from
-- files, and which never makes a trajectory the store does not hold.
local function new(spec, stored)
  if type(spec) ~= "table" then error("experiment.new expects a table", 2) end
  if type(spec.name) ~= "string" or spec.name == "" then error("experiment.new: field 'name' is required", 2) end
  local e = setmetatable({ spec = spec, name = spec.name, stored = stored }, Exp)
  e.groups = {}
  -- A task name that names nothing is the user's mistake: said before any
  -- request is sent, at the line of the script that made the experiment.
  local where = stored and (stored.where .. ": ") or ""
  for level = 2, stored and 1 or 6 do
    local caller = debug.getinfo(level, "Sl")
    if not caller then break end
    if caller.what ~= "C" and caller.currentline and caller.currentline > 0
        and not caller.short_src:find("klab/experiment/", 1, true) then
      where = ("%s:%d: "):format(caller.short_src, caller.currentline)
      break
    end
  end
  local function bad_task(name, why)
    errors.raise("mistake", ("%sexperiment %s: task %s: %s"):format(where, spec.name, tostring(name),
      task_mod.hint(tostring(why):gsub("^[^:\n]+%.lua:%d+: ", ""))))
  end
  for i, t in ipairs(spec.tasks or {}) do
    local ok, g = pcall(M.group, t)
    if not ok then bad_task(type(t) == "table" and t.name or t, g) end
    for _, w in ipairs(g.workloads) do
      local wok, why = pcall(task_mod.get, w)
      if not wok then bad_task(w, why) end
    end
    e.groups[i] = g
  end
  if #e.groups == 0 then error("experiment.new: at least one task is required", 2) end
  -- Everything else, before the store is opened.
  local pol
  e.models, pol = spec_mod.check(spec, where, e.groups, stored ~= nil)
  if #e.models == 0 then error("experiment.new: at least one model is required", 2) end
  e.tags = spec.tags or { "none" }
  e.languages = spec.languages or { languages_mod.DEFAULT }
  e.replicas = spec.replicas or 1
  e.turns = spec.turns or 1
  e.target = spec.target_speedup
  e.mode = spec.mode or "record-missing"
  e.arch = spec.arch or "sm_90a"
  e.policy = pol
  e.feedback = spec.feedback or {}
  e.prompt = spec.prompt or {}
  e.history = spec.history or "full"
  e.shard = shard_mod.resolve(spec.shard)
  e.phase = spec.phase or options_mod.command_line_phase or "auto"
  if not options_mod.PHASES[e.phase] then
    errors.raise("mistake", ("experiment %s: phase must be generate, full or auto, got '%s'"):format(spec.name,
      tostring(e.phase)))
  end
  -- Check mode (klab slurm checks a script's options before it submits):
  -- the spec is good, nothing is written.
  if os.getenv("KLAB_EXPERIMENT_CHECK") == "1" then
    if type(spec.db) == "string" then shard_mod.path(spec.db, e.shard) end
    errors.raise("done", ("experiment %s: the spec is good (check mode: nothing written)"):format(spec.name))
  end
  if type(spec.db) == "string" then
    e.db = open_store(shard_mod.path(spec.db, e.shard), "experiment " .. spec.name)
    e.own_db = true
  else
    e.db = spec.db
  end
  if not e.db then error("experiment.new: a store (db) is required", 2) end
  M.ensure_schema(e.db)
  return e
end

-- (A tail call: the caller of M.new is the caller new sees at level 2.)
function M.new(spec) return new(spec) end

function Exp:close()
  if self.own_db and self.db then self.db:close() end
  self.db = nil
end
Exp.__close = Exp.close

function Exp:_log(fmt, ...)
  -- What a server echoed or a compiler quoted never carries a key into the log.
  local line = require("klab.redact").text(fmt:format(...))
  local l = self.spec.log
  if type(l) == "function" then l(line)
  elseif type(l) == "string" then
    require("klab.fs").append(l, os.date("!%Y-%m-%dT%H:%M:%SZ ") .. line .. "\n")
  end
end

function Exp:_config()
  local models, groups = require("klab.experiment.sweep").stored(self)
  return model_mod.json {
    models = models, tasks = groups, tags = self.tags, replicas = self.replicas, turns = self.turns,
    target_speedup = self.target, arch = self.arch, select = self.policy.name, history = self.history,
    languages = self:_other_languages() and self.languages or nil,
    mode = self.mode, responses_dir = self.spec.responses_dir, prompt = plain(self.prompt),
    feedback = plain(self.feedback), eval = plain(self.spec.eval), templates = self:_templates(),
    feedback_text = self:_feedback_text(),
    klab = require("klab.build_text").with_this((records.experiment(self.db, self.name) or {}).config),
  }
end

-- The feedback template's text as sent (stored with the config: judging
-- elsewhere opens no file a store names); false when there is none.
function Exp:_feedback_text()
  if self.stored then return self.stored.feedback_text end
  if self.feedback.template == false then return false end
  local ok, text = pcall(prompt.read, self.feedback.template or "feedback.md", self.prompt.root)
  return ok and text or nil
end

-- The texts a condition's prompts are made of, by hash: the system and user
-- templates, the feedback template and every tag's knowledge packs.
function Exp:_templates()
  local root = self.prompt.root
  local function h(name)
    local ok, text = pcall(prompt.read, name, root)
    return ok and store_mod.hash("klab.template.1", text) or nil
  end
  local out = { system = self.prompt.system ~= false and h(self.prompt.system or "system.md") or nil,
    user = h(self.prompt.user or "task.md"),
    feedback = self.feedback.template ~= false and h(self.feedback.template or "feedback.md") or nil, packs = {} }
  for _, tag in ipairs(self.tags) do
    local ok, text = pcall(prompt.pack, tag, root)
    out.packs[tag] = ok and store_mod.hash("klab.template.1", text) or nil
  end
  -- The languages' variants, for a study in other languages than the
  -- default alone (one in cuda alone has the config it always had).
  if self:_other_languages() then
    out.languages = {}
    for _, l in ipairs(self.languages) do out.languages[l] = h(prompt.language_file(l)) end
  end
  return out
end

-- Whether the study asks for kernels in other languages than the default
-- alone (languages.others).
function Exp:_other_languages() return languages_mod.others(self.languages) end

-- The experiment name holds in db, rebuilt from its stored config as data
-- (klab.experiment.stored.experiment says how, and what fields may hold).
function M.from_store(db, name, fields)
  return require("klab.experiment.stored").experiment(db, name, fields, new)
end

function Exp:_experiment_id()
  local db = self.db
  -- A rebuilt experiment keeps the config the study was run with.
  if self.stored then return records.experiment(db, self.name).id end
  return records.save_experiment(db, self.name, self:_config())
end

-- Every trajectory of the sweep in its fixed order: {m, g, tag, r, key, language}.
function Exp:_sweep() return require("klab.experiment.sweep").list(self) end

-- The trajectories of the sweep (of its shard), in order, loaded or created.
function Exp:_trajectories()
  local db = self.db
  local list = {}
  for p, s in ipairs(self:_sweep()) do
    if p % 4096 == 0 then self:_check_signal() end
    local m, g, tag, r, key, language = s[1], s[2], s[3], s[4], s[5], s[6]
    local mine = shard_mod.keeps(self.shard, p - 1)
    local row = mine and records.trajectory(db, key) or nil
    -- A rebuilt experiment makes no trajectory (that would read prompt
    -- files): it goes on from the first messages the store holds.
    if row or (mine and not self.stored) then
      local messages
      if row then
        messages = row.state ~= "done" and (records.trajectory_messages(db, row.id) or {}) or nil
      else
        messages = prompt.messages { group = g, tag = tag, language = language, arch = self.arch,
          system = self.prompt.system,
          user = self.prompt.user, vars = self.prompt.vars, root = self.prompt.root }
        row = records.add_trajectory(db, { experiment_id = self.exp_id, key = key, model = m.name,
          task = g.name, tag = tag, replica = r, language = language, messages = model_mod.json(messages) })
      end
      local t = { row = row, id = row.id, key = key, model = m, group = g, tag = tag, replica = r, language = language,
                  initial = messages, done = row.state == "done", turns = {} }
      -- A finished trajectory needs no replies or feedback: its turns' light
      -- columns only (a reopened store of a big study stays small).
      for _, tr in ipairs(t.done and records.turn_summaries(db, row.id) or records.turns(db, row.id)) do
        t.turns[#t.turns + 1] = tr
      end
      list[#list + 1] = t
    end
  end
  return list
end

-- The conversation for the next turn of t.
function Exp:_messages(t)
  local msgs = {}
  for i, x in ipairs(t.initial) do msgs[i] = x end
  local exchanges = {}
  for _, tr in ipairs(t.turns) do
    if tr.reply then exchanges[#exchanges + 1] = tr end
  end
  local from = 1
  if self.history == "last" then from = math.max(1, #exchanges) end
  for i = from, #exchanges do
    local tr = exchanges[i]
    msgs[#msgs + 1] = { role = "assistant", content = tr.reply }
    msgs[#msgs + 1] = { role = "user", content = tr.feedback or "" }
  end
  return msgs
end


-- Keeps a model outcome that arrived while something else was being done.
function Exp:_keep_outcome(o)
  self.otail = self.otail + 1
  self.outcomes[self.otail] = o
end

-- Evaluates candidate c on the workloads (klab.experiment.workloads).
function Exp:_evaluate(c, names, opts) return workloads_mod.evaluate(self, c, names, opts) end

function Exp:_eval_opts(turn)
  local o = {}
  for k, v in pairs(self.spec.eval or {}) do o[k] = v end
  o.arch = o.arch or self.arch
  if self.feedback.profile and turn > (self.feedback.profile_after or 0) then o.profile = true end
  if self.generating then o.build_only = true end
  return o
end

function Exp:_workloads(g)
  if self.policy.eval_set == "gate" then return gate_of(g, self.policy) end
  return g.workloads
end

local function targets_of(g, arch)
  local ok, t = pcall(task_mod.get, g.workloads[1])
  if ok and t.targets and t.targets[arch] then return task_mod.plain(t.targets[arch]) end
  return nil
end

-- Runs one turn from a model outcome: extraction, evaluation, feedback.
function Exp:_turn(t, o, n)
  local rec = {
    trajectory_id = t.id, turn = n, request_hash = o.hash, source = o.source,
    input_tokens = o.usage and o.usage.input, output_tokens = o.usage and o.usage.output,
    reasoning_tokens = o.usage and o.usage.reasoning, latency_ms = o.latency_ms, cost_usd = o.cost,
  }
  local fb_turn
  if not o.ok then
    verdicts.give(rec, "request_error", { message = tostring(o.error) })
  else
    rec.reply = o.text or ""
    local c, why = languages_mod.candidate(rec.reply, t.language)
    if not c then
      local v = extract.verdict(why)
      rec.verdict, rec.reason = v.verdict, v.reason
      fb_turn = { verdict = v.verdict, reason = v.reason, turn = n }
    else
      local cand = assert(candidate_mod.new { code = c.code, lang = c.lang, plan = c.plan,
        name = ("%s-t%d"):format(t.group.name:gsub("[^%w_]", "_"), n), source = "model:" .. o.hash })
      rec.candidate, rec.language = cand.hash, cand.lang
      self.db:put_candidate { language = cand.lang, code = cand.code, plan = cand.plan, source = cand.source }
      local res = self:_evaluate(cand, self:_workloads(t.group), self:_eval_opts(n))
      self:_judged(rec, res, t, n)
      -- Built and plan-checked, its GPU stages still to come: no feedback
      -- yet, and no next turn until klab judge has run them.
      if res.awaiting then
        rec.awaiting, rec.feedback = 1, nil
        return rec
      end
      fb_turn = res
    end
    rec.feedback = self:_feedback(fb_turn, n)
  end
  return rec
end

-- A turn's record from its evaluation (res, as workloads.evaluate gives it).
function Exp:_judged(rec, res, t, n)
  rec.verdict, rec.reason, rec.speedup = res.verdict, res.reason, res.speedup
  rec.verified = res.verified == nil and nil or (res.verified and 1 or 0)
  rec.workloads = model_mod.json(res.workloads)
  res.turn = n
  res.targets = targets_of(t.group, self.arch)
end

-- The feedback the model gets after turn n.
function Exp:_feedback(fb_turn, n)
  local template, text = self.feedback.template == nil and "feedback.md" or self.feedback.template, nil
  if self.stored then template, text = require("klab.experiment.stored").template(self.stored) end
  return prompt.feedback(fb_turn, {
    turn = n, turns = self.turns, target = self.target, profile = self.feedback.profile,
    profile_after = self.feedback.profile_after, compile_log = self.feedback.compile_log,
    log_lines = self.feedback.log_lines, template = template or nil, template_text = text or nil,
    root = self.prompt.root,
  })
end

local entry_of = results_mod.entry

-- A policy's ctx: evaluate an entry's candidate on the full set or the gate.
function Exp:_ctx(group)
  return {
    group = group, target = self.target,
    evaluate = function(e, set)
      local row = e.candidate and records.candidate(self.db, e.candidate)
      if not row then return verdicts.make("unknown", { kind = "not_stored" }) end
      local c = assert(candidate_mod.new { code = row.code, lang = row.language, plan = row.plan, name = "selected" })
      local ws = set == "gate" and gate_of(group, self.policy) or group.workloads
      if not self.session then
        self.session = require("klab.eval").session { db = self.db }
        self.own_select_session = true
      end
      return self:_evaluate(c, ws, self:_eval_opts(e.turn or 1))
    end,
  }
end

function Exp:_finish_trajectory(t, reason)
  local entries = {}
  for _, tr in ipairs(t.turns) do entries[#entries + 1] = entry_of(t, tr) end
  local sel, why = self.policy.select(entries, self:_ctx(t.group))
  local best, best_turn
  for _, tr in ipairs(t.turns) do
    if verdicts.passed(tr.verdict) and tr.speedup and (not best or tr.speedup > best) then best, best_turn = tr.speedup, tr.turn end
  end
  records.finish_trajectory(self.db, t.id, { stop_reason = reason, best_speedup = best, best_turn = best_turn,
    selected_turn = sel and sel.turn or nil, selected_speedup = sel and sel.speedup or nil,
    selection = sel and self.policy.name or (self.policy.name .. ": " .. tostring(why)) })
  t.done = true
end

local awaiting = judge_mod.awaiting

-- Whether t is finished after its stored turns, and why.
function Exp:_stop_reason(t)
  local last = t.turns[#t.turns]
  if last and last.awaiting == 1 then return nil end
  if last and self.target and verdicts.passed(last.verdict)
      and (self.target <= 0 or (last.speedup and last.speedup >= self.target)) then
    return "target_met"
  end
  if #t.turns >= self.turns then return "max_turns" end
  return nil
end

function Exp:_store_turn(t, rec)
  local db = self.db
  db:transaction(function() t.turns[#t.turns + 1] = records.add_turn(db, rec) end)
  self:_count(nil, rec.verdict)
  -- Selection may evaluate (paired_gate): its own transaction. A crash in
  -- between is repaired by the next run (a stored last turn that ends the
  -- trajectory finishes it).
  local stop = self:_stop_reason(t)
  if stop then db:transaction(function() self:_finish_trajectory(t, stop) end) end
end

-- verdict -> turns of the experiment: counted in the store once, then kept
-- as turns are stored and judged (a GROUP BY over every turn after each new
-- one would grow with the store).
function Exp:_counts()
  if not self.counts then self.counts = records.verdict_counts(self.db, self.exp_id) end
  local out = {}
  for k, v in pairs(self.counts) do if v > 0 then out[k] = v end end
  return out
end

-- A stored turn's verdict went from old (nil: a new turn) to new.
function Exp:_count(old, new)
  if not self.counts then return end
  if old then self.counts[old] = (self.counts[old] or 0) - 1 end
  if new then self.counts[new] = (self.counts[new] or 0) + 1 end
end

-- The reason of a request_error turn without its verdict name.
local function request_problem(reason)
  return tostring(reason or "?")
end

-- One run of an experiment per store at a time: an exclusive lock on the
-- experiment's slot of <store>.lock (klab.fs.lock). The kernel releases it
-- when the holder exits in any way, kill -9 included, so no stale lock is
-- left to clear. A store that cannot have a lock file next to it (in memory,
-- a read-only folder) runs without one, said in the log.
function Exp:_lock()
  local path = self.db:path()
  if not path or path == "" or path == ":memory:" then return nil end
  local sys = require "klab.sys"
  local note = ("pid %d on %s since %s"):format(sys.getpid(), sys.hostname(), os.date("!%Y-%m-%dT%H:%M:%SZ"))
  local lock, msg, code, holder = require("klab.fs").lock(path .. ".lock", "klab.experiment:" .. self.name, note)
  if lock then return lock end
  if code == "EBUSY" then
    errors.raise("failed", ("experiment %s is running elsewhere on this store (%s)%s; wait for it to finish or stop "
      .. "it, then run again to continue"):format(self.name, path, holder ~= "" and (": " .. holder) or ""))
  end
  self:_log("running without the experiment lock: %s", tostring(msg))
  return nil
end

-- Runs the sweep. SIGINT or SIGTERM stops it: requests in flight are waited
-- for (drain_s) and stored, and run raises "stopped by SIGINT" (klab exits
-- non-zero); a second signal ends the process at once. Another run of the
-- same experiment on the same store makes this one stop at the start.
function Exp:run()
  local lock = self:_lock()
  local sys = require "klab.sys"
  sys.trap("INT", "TERM")
  local ok, res = xpcall(self._run, function(e)
    if type(e) == "string" and not e:find("\n", 1, true) then return debug.traceback(e, 2) end
    return e
  end, self)
  sys.untrap()
  if lock then lock:free() end
  if not ok then error(res, 0) end
  return res
end

function Exp:_run()
  local db = self.db
  local spec = self.spec
  self.exp_id = db:transaction(function() return self:_experiment_id() end)
  local trajs = db:transaction(function() return self:_trajectories() end)
  if self.shard then self:_log("shard %s: %d trajectories of the sweep", shard_mod.text(self.shard), #trajs) end
  -- Trajectories whose last turn ended them but were not marked (a crash between) are finished now.
  for _, t in ipairs(trajs) do
    if not t.done then
      local stop = self:_stop_reason(t)
      if stop then db:transaction(function() self:_finish_trajectory(t, stop) end) end
    end
  end
  local own_session = not spec.session
  local pool = spec.pool or {}
  self.session = spec.session or require("klab.eval").session { db = db, deadline = spec.eval and spec.eval.deadline,
    gpus = pool.gpus, per_gpu = pool.per_gpu, cpu = pool.cpu or require("klab.eval.pool").default_cpu() }
  local phase = self:_phase()
  self.generating = phase == "generate"
  self:_log("phase %s", phase)
  -- Judging first: turns a generate phase left are judged before their
  -- trajectories go on.
  if not self.generating then self:_judge_turns(trajs, false) end
  -- The turns this run will have stored (total) and has (done), kept as
  -- turns land: nothing per turn walks every trajectory.
  local total, done = 0, 0
  local function planned(t)
    return (t.done or (self.generating and awaiting(t))) and #t.turns or self.turns
  end
  for _, t in ipairs(trajs) do
    done = done + #t.turns
    total = total + planned(t)
  end
  local done0 = done
  local label = self.name .. (self.shard and (" shard " .. shard_mod.text(self.shard)) or "") .. ": turns"
  local bar = progress.new { total = total, label = label, mode = spec.progress == nil and "auto" or spec.progress }
  bar:update { done = done0, start_done = done0, counts = self:_counts(), force = true }

  self.caller = model_mod.caller { db = db, mode = self.mode, experiment = self.name, responses_dir = spec.responses_dir,
    concurrency = spec.concurrency, http = spec.http, log = function(line) self:_log("%s", line) end }
  self.outcomes, self.otail = {}, 0
  local waiting = {}   -- ticket -> trajectory
  local stored = 0
  local ran = {}       -- the turns stored by this run: {model, verdict, reason}
  -- The trajectories whose next turn is to be asked, and how many are still
  -- going (asked or to be asked).
  -- (Queues with a head and a tail: # of a table whose front was cleared
  -- is not its length.)
  local ready, rhead, rtail, active = {}, 1, 0, 0
  for _, t in ipairs(trajs) do
    if not t.done and not awaiting(t) then
      rtail = rtail + 1
      ready[rtail] = t
      active = active + 1
    end
  end
  local ohead = 1   -- self.outcomes[ohead .. self.otail] are still to handle

  local function loop()
    while true do
      self:_check_signal()
      while rhead <= rtail do
        local t = ready[rhead]
        ready[rhead], rhead = nil, rhead + 1
        local n = #t.turns + 1
        local ticket = self.caller:submit(model_mod.for_replica(t.model, t.replica), self:_messages(t), {
          key = { tag = t.tag, sample = t.replica, turn = n, language = other_language(t.language) },
          locator = { model = t.model.name, task = t.group.name, tag = t.tag, replica = t.replica, turn = n,
            language = other_language(t.language) },
        })
        t.waiting = ticket
        waiting[ticket] = t
      end
      for _, o in ipairs(self.caller:poll(ohead <= self.otail and 0 or 0.2)) do self:_keep_outcome(o) end
      if ohead <= self.otail then
        local o = self.outcomes[ohead]
        self.outcomes[ohead], ohead = nil, ohead + 1
        local t = waiting[o.ticket]
        waiting[o.ticket] = nil
        if t then
          local n = #t.turns + 1
          local before = planned(t)
          local rec = self:_turn(t, o, n)
          self:_store_turn(t, rec)
          t.waiting = nil
          stored, done = stored + 1, done + 1
          total = total - before + planned(t)
          if t.done or awaiting(t) then
            active = active - 1
          else
            rtail = rtail + 1
            ready[rtail] = t
          end
          ran[#ran + 1] = { model = t.model, verdict = rec.verdict, reason = rec.reason, awaiting = rec.awaiting == 1 }
          self:_log("turn %s %s %s r%d t%d: %s", t.model.name, t.group.name, t.tag, t.replica, n, rec.reason or rec.verdict)
          -- A failing server shows its reason while the sweep runs, not only in the store.
          local note = verdicts.request_failed(rec.verdict) and (t.model.name .. ": " .. request_problem(rec.reason)) or nil
          bar:update { total = total, done = done, counts = self:_counts(), note = note }
          if spec.on_turn then spec.on_turn(entry_of(t, t.turns[#t.turns]), t) end
        end
      elseif active == 0 then
        break
      end
    end
  end

  local ok, err = xpcall(loop, function(e)
    if type(e) == "string" and errors.verbose() and not e:find("\n", 1, true) then return debug.traceback(e, 2) end
    return e
  end)
  if not ok then
    -- Keep what the model already answered: wait for requests in flight.
    local inflight = self.caller.ninflight
    local pok, got = pcall(function() return self.caller:drain(spec.drain_s or 10) end)
    if not pok then self:_log("drain failed") end
    if errors.is(err, "signal") then
      err.message = ("%s; %d of %d replies in flight were waited for and stored; run it again to continue"):format(
        err.message, pok and #got or 0, inflight)
      self:_log("%s", err.message)
    end
    if own_session then self.session:close() end
    self.caller:close()
    self.caller, self.session = nil, nil
    bar:finish()
    error(err, 0)
  end
  local dn = done
  bar:update { total = total, done = done, counts = self:_counts() }
  bar:finish()
  local stats = self.caller.stats
  if own_session then self.session:close() end
  self.caller:close()
  self.caller, self.session = nil, nil
  local outcome, why = self:_outcome(ran)
  local waiting_n = 0
  for _, t in ipairs(trajs) do if awaiting(t) then waiting_n = waiting_n + 1 end end
  if waiting_n > 0 then
    io.stderr:write(term(("%s: %d turn%s await%s judgement on a GPU machine: klab judge %s --experiment %s"):format(
      self.name, waiting_n, waiting_n == 1 and "" or "s", waiting_n == 1 and "s" or "", db:path() or "DB", self.name)), "\n")
  end
  return { trajectories = #trajs, turns = dn, new_turns = stored, counts = self:_counts(), requests = stats,
           outcome = outcome, status = errors.KINDS[outcome], why = why, shard = self.shard, phase = phase,
           awaiting = waiting_n }
end

-- The phase of this run: the spec's, or for "auto" generate where the
-- session sees no GPU (a session that cannot say is taken to have one).
function Exp:_phase()
  if self.phase ~= "auto" then return self.phase end
  local m = self.session.machine and self.session:machine()
  return (m and m.none) and "generate" or "full"
end

-- The judging of stored turns (klab.experiment.judge).
function Exp:_judge_turns(trajs, again, bar) return judge_mod.turns(self, trajs, again, bar) end
function Exp:judge(opts) return judge_mod.judge(self, opts) end

-- What a run came to, from the turns it stored: a klab.errors kind ("done"
-- when something was measured or nothing was left to do, "unavailable"
-- when every turn of this run failed to reach its model or could not be
-- measured) and, for "unavailable", why. Failed requests are also printed on
-- stderr, one line per model and reason, whatever the status.
function Exp:_outcome(ran)
  local fails, order = {}, {}
  local measured = 0
  for _, r in ipairs(ran) do
    if verdicts.request_failed(r.verdict) then
      local k = r.model.name .. "\0" .. request_problem(r.reason)
      if not fails[k] then
        fails[k] = { model = r.model, why = request_problem(r.reason), n = 0 }
        order[#order + 1] = k
      end
      fails[k].n = fails[k].n + 1
    elseif not verdicts.undecided(r.verdict) or r.awaiting then
      measured = measured + 1
    end
  end
  local lines = {}
  for _, k in ipairs(order) do
    local f = fails[k]
    lines[#lines + 1] = ("%s: %d request%s to model %s (%s) failed: %s"):format(self.name, f.n, f.n == 1 and "" or "s",
      f.model.name, f.model.base_url or f.model.provider or "?", f.why)
  end
  for _, l in ipairs(lines) do io.stderr:write(term(l), "\n") end
  if #ran == 0 or measured > 0 then return "done" end
  if #lines > 0 then
    return "unavailable", ("nothing was evaluated: %s"):format(lines[1]:gsub("^[^:]*: ", ""))
  end
  local why = "nothing was measured: every turn's verdict is unknown (" .. tostring(ran[1].reason) .. ")"
  io.stderr:write(term(self.name .. ": " .. why), "\n")
  return "unavailable", why
end

-- ---- reading results (klab.experiment.results) ----------------------------------

M.SHORT = summary_table.SHORT
M.format_table, M.format_cells = summary_table.format, summary_table.cells
function Exp:rows() return results_mod.rows(self) end
function Exp:table() return M.format_table(self:rows()) end
function Exp:cells() return results_mod.cells(self) end
function Exp:select(pol, by) return results_mod.select(self, pol, by) end
function Exp:_group(name) return M.group(name) end

return M
