-- klab.experiment.options: an experiment script's key=value options, the
-- model options every script takes, and its --help, generated from the
-- declarations.
--
--   options.options(decl, args [, name]) -> values     options.help(decl [, name]) -> text
--   options.with_model_options(decl) -> decl  options.models_from(o [, name]) -> {model, ...}
-- (name: who the messages name, "judge" for klab judge; default the script)
--   options.MODEL_OPTION_LIST, options.MODEL_OPTIONS
--
-- A mistake (an unknown key, a bad value, no model) raises a klab.errors
-- mistake whose one line names the script and the option; --help raises a
-- "done" error that carries the help text.

local errors = require "klab.errors"
local shard_mod = require "klab.experiment.shard"
local model_mod = require "klab.experiment.model"
local providers = require "klab.experiment.providers"

local M = {}


-- An experiment script declares its options as a list of {name, default,
-- description} (the order of --help), optionally with about = "what the
-- script does"; a plain table {name = default} (no descriptions) is read
-- too. Returns the list form.
local function declared(decl)
  if decl[1] ~= nil or next(decl) == nil or decl.about then
    local list = { about = decl.about }
    for i, d in ipairs(decl) do list[i] = d end
    return list
  end
  local names = {}
  for k in pairs(decl) do names[#names + 1] = k end
  table.sort(names)
  local list = {}
  for _, k in ipairs(names) do list[#list + 1] = { k, decl[k], "" } end
  return list
end

local function script_name()
  local a = rawget(_G, "arg")
  return type(a) == "table" and type(a[0]) == "string" and a[0] or "the script"
end

local function show_default(v)
  local s = type(v) == "table" and table.concat(v, ",") or tostring(v)
  return s == "" and '""' or s
end

-- The --help text of a declaration (the list form).
function M.help(decl, name)
  decl = declared(decl)
  name = name or script_name()
  local out = { ("usage: klab %s [key=value ...]"):format(name), "" }
  if decl.about then out[#out + 1] = decl.about out[#out + 1] = "" end
  out[#out + 1] = "Options (key=value; a list is comma-separated, a flag takes true or false):"
  local w = 0
  for _, d in ipairs(decl) do
    if not d.section then w = math.max(w, #d[1] + 1 + #show_default(d[2])) end
  end
  w = math.min(w, 36)
  for _, d in ipairs(decl) do
    if d.section then
      out[#out + 1] = ""
      out[#out + 1] = d.section
    else
      local left = d[1] .. "=" .. show_default(d[2])
      local text = d[3] or ""
      if #left > w and text ~= "" then
        out[#out + 1] = "  " .. left
        out[#out + 1] = "  " .. (" "):rep(w) .. "  " .. text
      else
        out[#out + 1] = ("  %-" .. w .. "s  %s"):format(left, text)
      end
    end
  end
  out[#out + 1] = ""
  out[#out + 1] = "Every experiment script also takes shard=I/N: run only shard I of N of the sweep's trajectories"
  out[#out + 1] = "(docs/slurm.md); a db= path may name {index} and {count}. And phase=generate|full|auto"
  out[#out + 1] = "(default auto: generate where no GPU is visible): generate asks each trajectory's first turn,"
  out[#out + 1] = "builds and plan-checks the candidates and stores them for 'klab judge' on a GPU machine, sending"
  out[#out + 1] = "repair turns only for what was judged here (compile and plan errors); full judges every turn."
  out[#out + 1] = ""
  out[#out + 1] = errors.EXIT_TEXT
  return table.concat(out, "\n")
end

-- options(decl, args) -> table of values. Parses "key=value" arguments by
-- the type of each default (numbers, booleans, strings; a list default
-- takes a comma-separated list). --help (or -h) ends the script with the
-- help on standard output and status 0; an unknown key, a bad value or an
-- argument that is not key=value ends it with one line that names the
-- script, the option and the known ones, and status 2 (a klab.errors
-- mistake). Every script also takes shard=I/N (o.shard;
-- experiment.new uses it), and a db option's {index} and {count} are
-- filled from the shard.
-- phase=generate|full|auto, which every script takes too (the sweep's phase:
-- klab.experiment's spec.phase when the script sets none).
M.PHASES = { generate = true, full = true, auto = true }

local function take_phase(args)
  local rest = {}
  M.command_line_phase = nil
  for _, a in ipairs(args or {}) do
    local v = type(a) == "string" and a:match("^phase=(.*)$")
    if v then
      if not M.PHASES[v] then
        errors.raise("mistake", ("%s: option phase must be generate, full or auto, got '%s'"):format(script_name(), v))
      end
      M.command_line_phase = v
    else
      rest[#rest + 1] = a
    end
  end
  return rest
end

function M.options(decl, args, name)
  args = take_phase(shard_mod.take(args))
  decl = declared(decl)
  name = name or script_name()
  local defaults, keys = {}, {}
  for _, d in ipairs(decl) do
    if not d.section then
      defaults[d[1]] = d[2]
      keys[#keys + 1] = d[1]
    end
  end
  table.sort(keys)
  local function bad(msg)
    errors.raise("mistake", ("%s: %s; 'klab %s --help' describes the options"):format(name, msg, name))
  end
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for _, a in ipairs(args or {}) do
    a = tostring(a)
    if a == "--help" or a == "-h" then errors.raise("done", M.help(decl, name)) end
    local k, v = a:match("^([%w_%.%-]+)=(.*)$")
    if not k then bad(("expected key=value, got '%s'"):format(a)) end
    local d = defaults[k]
    if d == nil then
      bad(("unknown option '%s'%s (known: %s)"):format(k, errors.did_you_mean(k, keys), table.concat(keys, ", ")))
    end
    if type(d) == "number" then
      local n = tonumber(v)
      if not n or n ~= n then bad(("option %s needs a number, got '%s'"):format(k, v)) end
      if math.type(d) == "integer" then
        n = math.tointeger(n)
        if not n then bad(("option %s needs an integer, got '%s'"):format(k, v)) end
      end
      o[k] = n
    elseif type(d) == "boolean" then
      if v == "true" or v == "1" or v == "yes" then o[k] = true
      elseif v == "false" or v == "0" or v == "no" then o[k] = false
      else bad(("option %s needs true or false, got '%s'"):format(k, v)) end
    elseif type(d) == "table" then
      local list = {}
      for x in v:gmatch("[^,]+") do list[#list + 1] = x end
      o[k] = list
    else
      o[k] = v
    end
  end
  o.shard = shard_mod.command_line
  if type(o.db) == "string" then o.db = shard_mod.path(o.db, shard_mod.resolve(nil)) end
  return o
end

-- The model options an experiment script takes on its command line, and the
-- model they describe. Empty strings and negative numbers mean "not set"
-- (the server's default). models= is a comma-separated list of model names
-- that share the other settings.
M.MODEL_OPTION_LIST = {
  { section = "Model options (models_from):" },
  { "models", { "" }, "model names, comma-separated; each gets the settings below (required)" },
  { "provider", providers.NAMES[1], providers.describe() },
  { "base_url", "", "the server's URL, e.g. https://HOST/v1 (default: the provider's)" },
  { "api_key_env", "", "the environment variable that holds the API key (never the key itself)" },
  { "temperature", -1.0, "sampling temperature (negative: the server's default)" },
  { "top_p", -1.0, "nucleus sampling (negative: the server's default)" },
  { "max_tokens", 0, "the reply's token limit (0 or less: not sent, the server's default)" },
  { "reasoning_effort", "", "reasoning effort for models that take one (low, medium, high)" },
  { "seed", -1, "sampling seed (negative: none); replica r sends (seed + 1000003*(r-1)) mod 2^31" },
  { "concurrency", 4, "requests in flight per model" },
  { "timeout", 600.0, "seconds one request may take" },
  { "price_in", -1.0, "USD per million input tokens, for the cost column (negative: unknown)" },
  { "price_out", -1.0, "USD per million output tokens (negative: unknown)" },
}
M.MODEL_OPTIONS = {}
for _, d in ipairs(M.MODEL_OPTION_LIST) do
  if not d.section then M.MODEL_OPTIONS[d[1]] = d[2] end
end

-- decl plus the model options: a declaration list gets them appended (as
-- their own section of --help); a plain defaults table gets them merged
-- into a plain table (its own values win).
function M.with_model_options(decl)
  if decl[1] == nil and not decl.about and next(decl) ~= nil then
    local o = {}
    for k, v in pairs(M.MODEL_OPTIONS) do o[k] = v end
    for k, v in pairs(decl) do o[k] = v end
    return o
  end
  local list = declared(decl)
  local mine = {}
  for _, d in ipairs(list) do if not d.section then mine[d[1]] = true end end
  for _, d in ipairs(M.MODEL_OPTION_LIST) do
    if d.section or not mine[d[1]] then list[#list + 1] = d end
  end
  return list
end

function M.models_from(o, name)
  local script_name = name and function() return name end or script_name
  local list = {}
  for _, name in ipairs(o.models) do
    if name == "" then
      errors.raise("mistake", ("%s: set the model: models=NAME[,NAME...] (and base_url=, api_key_env=); 'klab %s "
        .. "--help' describes the options"):format(script_name(), script_name()))
    end
    local spec = { provider = o.provider, model = name, concurrency = math.tointeger(o.concurrency) or 4,
                   timeout = o.timeout, max_tokens = o.max_tokens > 0 and math.tointeger(o.max_tokens) or nil }
    if o.base_url ~= "" then spec.base_url = o.base_url end
    if o.api_key_env ~= "" then spec.api_key_env = o.api_key_env end
    if o.temperature >= 0 then spec.temperature = o.temperature end
    if o.top_p >= 0 then spec.top_p = o.top_p end
    if o.reasoning_effort ~= "" then spec.reasoning_effort = o.reasoning_effort end
    if o.seed >= 0 then spec.seed = math.tointeger(o.seed) end
    if o.price_in >= 0 or o.price_out >= 0 then
      spec.prices = { input = math.max(o.price_in, 0), output = math.max(o.price_out, 0) }
    end
    local ok, m = pcall(model_mod.new, spec)
    if not ok then
      local msg = tostring(m):gsub("^[^:\n]+%.lua:%d+: ", "")
      if providers.unknown(spec.provider) then msg = msg .. errors.did_you_mean(spec.provider, providers.NAMES) end
      errors.raise("mistake", ("%s: model %s: %s; 'klab %s --help' describes the options"):format(script_name(), name,
        msg, script_name()))
    end
    list[#list + 1] = m
  end
  return list
end


return M
