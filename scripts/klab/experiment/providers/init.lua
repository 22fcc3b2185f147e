-- klab.experiment.providers: the model providers, each one file of this
-- folder, registered once in NAMES below. Whatever else asks about
-- providers (klab.experiment.model, the spec check, the command-line model
-- options, the stored-study comparison) asks here.
--
--   providers.NAMES            the provider names, in the order help text lists them
--   providers.get(name)        -> the provider's module, or nil for a name not registered
--   providers.FIELDS           model fields a provider adds (name -> Lua type), from every provider
--   providers.describe()       -> one line for --help: each name with its `about`
--   providers.unknown(name)    -> a one-line message for a name that is not registered, or nil
--
-- A provider module has:
--   about             a few words for --help ("chat completions: vLLM, ...")
--   base_url          the URL used when a model sets none
--   fields            (optional) its own model fields, name -> Lua type
--   url(model), headers(model), body(model, messages), parse(status, body)
--                     (see providers/openai.lua for their contracts)
--   tool_format       (optional) its tool-calling format, for tool-calling studies
--                     (klab.agent.wire says what it holds)

local M = {}

M.NAMES = { "openai", "anthropic" }

local BY = {}
for _, name in ipairs(M.NAMES) do BY[name] = "klab.experiment.providers." .. name end

function M.get(name)
  local mod = BY[name or ""]
  return mod and require(mod) or nil
end

M.FIELDS = {}
for _, name in ipairs(M.NAMES) do
  for k, v in pairs(M.get(name).fields or {}) do M.FIELDS[k] = v end
end

function M.describe()
  local parts = {}
  for _, name in ipairs(M.NAMES) do parts[#parts + 1] = ("%s (%s)"):format(name, M.get(name).about) end
  return table.concat(parts, " or ")
end

function M.unknown(name)
  if BY[name or ""] then return nil end
  local quoted = {}
  for i, n in ipairs(M.NAMES) do quoted[i] = "'" .. n .. "'" end
  return ("provider must be %s, got %s"):format(require("klab.errors").one_of(quoted), tostring(name))
end

return M
