-- klab.experiment.stored: an experiment's stored config read as data.
-- A store is something researchers share; its config says what a study
-- was, never what the judging machine should do with its secrets, files or
-- budget. So the spec klab judge rebuilds from it keeps only what is data
-- (task and tag names, the languages, the arch, the policy's name, the target, the
-- history, the evaluation's conditions, the models' names), each checked
-- against limits before anything is built from it; the feedback template
-- is the text stored when the study ran, never a path opened now. What the
-- models are asked with (endpoint, the key's variable, sampling), the
-- counts and the mode come from the user: with --continue they are compared
-- with the stored ones, and a difference stops klab before it asks anything.
--
--   stored.experiment(db, name, fields, new) -> the experiment rebuilt (klab.experiment.from_store)
--   stored.spec(db, name, row) -> spec for experiment.new, facts {feedback_text=, config=, where=}
--   stored.compare(facts, user) -> nil | "field: the store says X, you gave Y" (user: {models=, turns=, replicas=, mode=})
--   stored.show(facts)          -> one line describing the stored condition
--   stored.LIMITS               the largest count klab takes from a store

local errors = require "klab.errors"
local json = require "klab.json"
local model_mod = require "klab.experiment.model"
local task_mod = require "klab.task"

local M = {}

-- Past these a store is refused: a study that big is a mistake or an
-- attack (replicas = 1e9 would build a billion trajectories).
M.LIMITS = { models = 64, tasks = 10000, workloads = 1000, tags = 1000, replicas = 10000, turns = 1000,
  trajectories = 1000000, name = 200, template = 1024 * 1024, trials = 1000, runs = 100000 }

-- The evaluation options that make a condition of a study (taken from the
-- store, checked); every other one (deadlines, budgets, the seed) comes
-- from klab judge's command line.
local EVAL_CONDITIONS = { timing = "boolean", profile = "boolean", sanitize = "boolean", sass_executed = "boolean",
  trials = "count", runs = "count", stages = "names", methods = "names" }
local EVAL_USER_GIVES = { deadline = true, stage_deadlines = true, budget_s = true, seed = true }

-- The model fields that make a condition and say where a request goes:
-- compared with what the user gave before anything is asked; a provider's
-- own fields (klab.experiment.providers) are compared too.
M.MODEL_COMPARED = { "provider", "model", "base_url", "api_key_env", "allow_insecure_http", "temperature", "top_p",
  "max_tokens", "max_tokens_field", "reasoning_effort", "thinking_budget", "seed", "stop", "extra" }
do
  local own = {}
  for k in pairs(require("klab.experiment.providers").FIELDS) do own[#own + 1] = k end
  table.sort(own)
  table.move(own, 1, #own, #M.MODEL_COMPARED + 1, M.MODEL_COMPARED)
end

local function count_ok(v, most) return math.type(v) == "integer" and v >= 1 and v <= most end

local function name_ok(v) return type(v) == "string" and v ~= "" and #v <= M.LIMITS.name and not v:find("%c") end

function M.spec(db, name, row)
  local where = db:path() or "the store"
  local function bad(fmt, ...)
    errors.raise("mistake", ("%s: experiment %s: %s; klab takes no count, path or endpoint from a store beyond "
      .. "its limits (run the experiment's script instead)"):format(where, tostring(name), fmt:format(...)))
  end
  local records = require "klab.store.records"
  local c = records.decode(db, "experiments", "config", row.config, row.id, { integers = true }) or {}
  if type(c) ~= "table" then bad("its config is not a table") end
  local function list(field, most)
    local v = c[field]
    if v == nil then return nil end
    if type(v) ~= "table" then bad("%s is not a list", field) end
    local n = 0
    for _ in pairs(v) do
      n = n + 1
      if n > most then bad("%s holds more than %d entries", field, most) end
    end
    if n ~= #v then bad("%s is not a list", field) end
    return v
  end
  for _, k in ipairs { "replicas", "turns" } do
    if c[k] ~= nil and not count_ok(c[k], M.LIMITS[k]) then
      bad("%s = %s, not a whole number from 1 to %d", k, tostring(c[k]), M.LIMITS[k])
    end
  end
  local models = list("models", M.LIMITS.models)
  if not models or #models == 0 then
    errors.raise("mistake", ("%s: experiment %s has no stored models (it was made by an older klab); run its script "
      .. "again on this store instead"):format(where, tostring(name)))
  end
  local tags = list("tags", M.LIMITS.tags) or { "none" }
  for _, tag in ipairs(tags) do
    if not name_ok(tag) then bad("a tag is not a name of at most %d characters", M.LIMITS.name) end
  end
  -- The study's languages, names klab knows (nil: the default alone).
  local langs = list("languages", #require("klab.experiment.languages").names())
  if langs then
    local why = require("klab.experiment.languages").check(langs)
    if why then bad("%s", why) end
  end
  -- Task names go through the task resolver as the command line's do
  -- (klab.experiment.group: a name, never a path).
  local tasks = {}
  for i, g in ipairs(list("tasks", M.LIMITS.tasks) or {}) do
    if type(g) ~= "table" or not name_ok(g.name) then bad("task %d has no name", i) end
    if type(g.workloads) ~= "table" or #g.workloads == 0 or #g.workloads > M.LIMITS.workloads then
      bad("task %s has no list of at most %d workloads", g.name, M.LIMITS.workloads)
    end
    local gate = g.gate
    if gate ~= nil and not count_ok(gate, M.LIMITS.workloads) and type(gate) ~= "table" then
      bad("task %s: its gate is neither a count nor a list of workloads", g.name)
    end
    tasks[i] = { name = g.name, workloads = g.workloads, gate = gate }
  end
  local ms = {}
  for i, m in ipairs(models) do
    if type(m) ~= "table" or not name_ok(m.name) then bad("model %d has no name", i) end
    -- Judging asks no model: the name (its trajectories' key) and what it
    -- was; nothing that would send a request anywhere.
    local ok, mm = pcall(model_mod.new, { name = m.name, provider = m.provider, model = m.model })
    if not ok then bad("model %s: %s", m.name, tostring(mm):gsub("^[^:\n]+%.lua:%d+: ", "")) end
    ms[i] = mm
  end
  local n = #ms * math.max(#tasks, 1) * #tags * #(langs or { 1 }) * (c.replicas or 1)
  if n > M.LIMITS.trajectories then
    bad("its sweep would be %d trajectories, more than %d", n, M.LIMITS.trajectories)
  end
  local eval = {}
  if c.eval ~= nil and type(c.eval) ~= "table" then bad("eval is not a table") end
  for k, v in pairs(c.eval or {}) do
    local kind = EVAL_CONDITIONS[k]
    if kind == "boolean" and type(v) == "boolean" then eval[k] = v
    elseif kind == "count" and count_ok(v, M.LIMITS[k]) then eval[k] = v
    elseif kind == "names" and type(v) == "table" and #v <= 64 then
      for _, x in ipairs(v) do if not name_ok(x) then bad("eval.%s holds something that is not a name", k) end end
      eval[k] = v
    elseif not EVAL_USER_GIVES[k] then
      bad("eval.%s = %s is not an evaluation setting klab takes from a store", tostring(k), json.encode(v))
    end
  end
  if c.arch ~= nil and not (type(c.arch) == "string" and c.arch:match("^sm_%w+$")) then bad("arch is not sm_NN") end
  if c.target_speedup ~= nil and type(c.target_speedup) ~= "number" then bad("target_speedup is not a number") end
  if c.select ~= nil and not name_ok(c.select) then bad("select is not a policy's name") end
  local fb = type(c.feedback) == "table" and c.feedback or {}
  local feedback = { compile_log = fb.compile_log ~= false, profile = fb.profile == true,
    profile_after = count_ok(fb.profile_after, M.LIMITS.turns) and fb.profile_after or 0,
    log_lines = count_ok(fb.log_lines, 100000) and fb.log_lines or nil }
  -- The feedback template as it was sent; a store from before templates
  -- were stored uses this machine's own default (named by klab, not the
  -- store), and one whose study had none has none.
  local text = c.feedback_text
  if text ~= nil and (type(text) ~= "string" or #text > M.LIMITS.template) then
    bad("feedback_text is not a template of at most %d bytes", M.LIMITS.template)
  end
  if fb.template == false then text = false end
  local spec = { name = name, models = ms, tasks = tasks, tags = tags, languages = langs, replicas = c.replicas,
    turns = c.turns,
    target_speedup = c.target_speedup, arch = c.arch, select = c.select, history = c.history, eval = eval,
    feedback = feedback }
  return spec, { feedback_text = text, config = c, where = where }
end

-- The feedback template of a rebuilt study: its name and its text. The
-- text stored with the study; a store from before texts were stored gets
-- this machine's own default, never a file the store names.
function M.template(facts)
  local text = facts.feedback_text
  return text ~= false and "feedback.md" or false, text
end

-- The stored condition in one line (what klab judge shows before it asks).
function M.show(facts)
  local c = facts.config
  local parts = {}
  for _, m in ipairs(c.models or {}) do
    parts[#parts + 1] = ("model %s (%s %s at %s%s)"):format(tostring(m.name), tostring(m.provider),
      tostring(m.model), tostring(m.base_url or "the provider's URL"),
      m.api_key_env and (", key from $" .. tostring(m.api_key_env)) or "")
  end
  parts[#parts + 1] = ("replicas %s, turns %s, mode %s"):format(tostring(c.replicas or 1), tostring(c.turns or 1),
    tostring(c.mode or "record-missing"))
  return table.concat(parts, "; ")
end

local function text_of(v) return v == nil and "none" or json.encode(v) end

-- The first difference between the stored condition and what the user
-- gave for continuing it, as "field: the store says X, the command line Y".
function M.compare(facts, user)
  local c = facts.config
  local mine = {}
  for _, m in ipairs(user.models or {}) do mine[m.name] = m end
  for _, m in ipairs(c.models or {}) do
    local u = mine[m.name]
    if not u then
      return ("model %s: the store has it, the command line does not (models=%s)"):format(tostring(m.name),
        tostring(m.name))
    end
    mine[m.name] = nil
    for _, k in ipairs(M.MODEL_COMPARED) do
      local a, b = text_of(m[k]), text_of(u[k])
      if a ~= b then return ("model %s: %s: the store says %s, the command line %s"):format(m.name, k, a, b) end
    end
  end
  local extra = next(mine)
  if extra then return ("model %s: the command line names it, the store's experiment has no such model"):format(extra) end
  for _, k in ipairs { "replicas", "turns", "mode" } do
    local stored = c[k]
    if stored == nil then stored = k == "mode" and "record-missing" or 1 end
    if text_of(stored) ~= text_of(user[k]) then
      return ("%s: the store says %s, the command line %s"):format(k, text_of(stored), text_of(user[k]))
    end
  end
  if c.responses_dir ~= nil then
    return "responses_dir: the store names a folder of replies, and klab reads no folder a store names"
  end
  return nil
end

-- The experiment name holds in db, rebuilt from its stored config as data;
-- fields are set over it (a session, progress). fields.user = {models=,
-- turns=, replicas=, mode=}, what the user gave to continue the study with:
-- compared with the stored condition first (a difference is a mistake
-- naming the field), then used for every request. new is
-- klab.experiment's constructor for a spec rebuilt from a store.
function M.experiment(db, name, fields, new)
  local records = require "klab.store.records"
  local row = records.experiment(db, name)
  if not row then
    local names = records.experiment_names(db)
    errors.raise("mistake", ("%s holds no experiment named %s%s (it holds: %s)"):format(db:path() or "the store",
      tostring(name), errors.did_you_mean(name, names), #names > 0 and table.concat(names, ", ") or "none"))
  end
  local spec, facts = M.spec(db, name, row)
  spec.db = db
  fields = fields or {}
  local user = fields.user
  if user then
    local models = {}
    for i, m in ipairs(user.models or {}) do models[i] = getmetatable(m) and m or model_mod.new(m) end
    user.models = models
    local diff = M.compare(facts, user)
    if diff then
      errors.raise("mistake", ("%s: experiment %s was run with another condition: %s; give what the study was run "
        .. "with (it is: %s), or run the experiment's script"):format(facts.where, name, diff, M.show(facts)))
    end
    spec.models, spec.mode = user.models, user.mode
  end
  for k, v in pairs(fields) do if k ~= "user" then spec[k] = v end end
  local e = new(spec, facts)
  e.continuable = user ~= nil
  return e
end

return M
