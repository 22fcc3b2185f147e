-- klab.experiment.spec: an experiment's spec checked whole before anything
-- is written: every field name (a typo gets "did you mean"), the models,
-- the request mode, the selection policy, the phase, and the prompt (its
-- templates, every tag's knowledge packs, the feedback template), so that
-- a mistake is one line naming the user's script and what is wrong, with
-- exit status 2, and no store is made.
--
--   spec.check(s, where, groups [, stored]) -> models (model.new results), policy (raises klab.errors mistakes)
--   spec.FIELDS          the field names a spec may have

local errors = require "klab.errors"
local model_mod = require "klab.experiment.model"
local policy = require "klab.experiment.policy"
local providers = require "klab.experiment.providers"
local prompt = require "klab.experiment.prompt"
local languages = require "klab.experiment.languages"

local M = {}

M.FIELDS = { "name", "db", "models", "tasks", "tags", "replicas", "turns", "target_speedup", "mode", "responses_dir",
  "arch", "eval", "select", "prompt", "feedback", "history", "on_turn", "progress", "log", "concurrency", "drain_s",
  "session", "pool", "shard", "http", "phase", "languages" }
local PROMPT_FIELDS = { "system", "user", "vars", "root" }
local FEEDBACK_FIELDS = { "template", "compile_log", "profile", "profile_after", "log_lines" }
local POOL_FIELDS = { "gpus", "per_gpu", "cpu" }

local function keys_of(t, known, what, fail)
  local set = {}
  for _, k in ipairs(known) do set[k] = true end
  local names = {}
  for k in pairs(t) do names[#names + 1] = tostring(k) end
  table.sort(names)
  for _, k in ipairs(names) do
    if not set[k] then
      fail(("unknown %s '%s'%s (known: %s)"):format(what, k, errors.did_you_mean(k, known), table.concat(known, ", ")))
    end
  end
end

-- A message of a library function (model.new, policy.resolve, prompt.*)
-- without its source position.
local function clean(msg) return (tostring(msg):gsub("^[^:\n]+%.lua:%d+: ", "")) end

local function count(v, name, fail)
  if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
    fail(("%s must be a whole number of at least 1, got %s"):format(name, tostring(v)))
  end
end

-- stored: s was rebuilt from a store (klab.experiment.stored): its prompts
-- are the texts stored with it, so no template or pack file is read.
function M.check(s, where, groups, stored)
  local function fail(msg)
    errors.raise("mistake", ("%sexperiment %s: %s"):format(where or "", tostring(s.name), msg))
  end
  keys_of(s, M.FIELDS, "field", fail)
  count(s.replicas, "replicas", fail)
  count(s.turns, "turns", fail)
  if s.mode ~= nil and not model_mod.MODES[s.mode] then
    local modes = {}
    for k in pairs(model_mod.MODES) do modes[#modes + 1] = k end
    table.sort(modes)
    fail(("mode must be one of %s, got '%s'%s"):format(table.concat(modes, ", "), tostring(s.mode),
      errors.did_you_mean(s.mode, modes)))
  end
  if s.history ~= nil and s.history ~= "full" and s.history ~= "last" then
    fail(("history must be full or last, got '%s'"):format(tostring(s.history)))
  end
  if type(s.prompt) == "table" then keys_of(s.prompt, PROMPT_FIELDS, "prompt field", fail) end
  if type(s.feedback) == "table" then keys_of(s.feedback, FEEDBACK_FIELDS, "feedback field", fail) end
  if type(s.pool) == "table" then keys_of(s.pool, POOL_FIELDS, "pool field", fail) end
  if s.languages ~= nil then
    local why = languages.check(s.languages)
    if why then fail(why) end
  end
  local models = {}
  for i, m in ipairs(s.models or {}) do
    if getmetatable(m) then
      models[i] = m
    else
      local ok, mm = pcall(model_mod.new, m)
      if not ok then
        local msg = clean(mm)
        if type(m) == "table" and m.provider and providers.unknown(m.provider) then
          msg = msg .. errors.did_you_mean(m.provider, providers.NAMES)
        end
        local field = msg:match("unknown field '([^']+)'")
        if field then
          local known = {}
          for k in pairs(model_mod.FIELDS) do known[#known + 1] = k end
          table.sort(known)
          msg = msg .. errors.did_you_mean(field, known)
        end
        fail(("model %d (%s): %s"):format(i, type(m) == "table" and tostring(m.name or m.model) or "?", msg))
      end
      models[i] = mm
    end
  end
  local pok, pol = pcall(policy.resolve, s.select)
  if not pok then
    fail(clean(pol) .. (type(s.select) == "string" and errors.did_you_mean(s.select, policy.NAMES) or ""))
  end
  -- The prompt of every task group and tag, rendered now: a missing
  -- template, pack or variable is said before the first request.
  if stored then return models, pol end
  local p = type(s.prompt) == "table" and s.prompt or {}
  local tags = s.tags or { "none" }
  local langs = s.languages or { languages.DEFAULT }
  for _, tag in ipairs(tags) do
    for _, g in ipairs(groups or {}) do
      -- The languages of a sweep are its conditions only when their prompts
      -- differ: a template of one's own must say which language to write.
      local seen = {}
      for _, language in ipairs(langs) do
        local ok, msgs = pcall(prompt.messages, { group = g, tag = tag, language = language, arch = s.arch or "sm_90a",
          system = p.system, user = p.user, vars = p.vars, root = p.root })
        if not ok then
          fail(("tag %s%s: %s"):format(tostring(tag), #langs > 1 and (", language " .. language) or "", clean(msgs)))
        end
        local text = require("klab.json").encode(msgs)
        if seen[text] then
          fail(("languages %s and %s get the same prompt: the system or user template must include "
            .. "${language_rules} (prompts/languages/NAME.md)"):format(seen[text], language))
        end
        seen[text] = language
      end
    end
  end
  local fb = type(s.feedback) == "table" and s.feedback or {}
  if fb.template ~= false then
    local ok, err = pcall(prompt.read, fb.template or "feedback.md", p.root)
    if not ok then fail("feedback: " .. clean(err)) end
  end
  return models, pol
end

return M
