-- klab.agent.wire: a conversation with tools in each provider's own
-- tool-calling format, which the provider's file declares as its
-- `tool_format` (klab.experiment.providers):
--   tools(tools)       -> the body's `tools` field
--   asked(x)           -> an assistant message x, with its tool calls, in the provider's form
--   answered(out, x)   appends a tool result x to out, in the provider's form
--   calls(doc)         -> the tool calls of a decoded response: {{id=, name=, arguments=}, ...}
--                         (arguments as the model sent them: JSON text or an object)
--   system_apart       (optional) true when the system prompt is not a message (the body has it)
--
--   wire.for_model(m, tools) -> {body = function(m, messages), parse = function(status, body)}
--       what klab.experiment.model sends and reads for a tool-calling request
--       (its meta.wire); tools = {{name=, description=, schema=}, ...}
--
-- A conversation is kept in one neutral form, stored as it is and turned
-- into either format when sent:
--   {role = "system" | "user", content = text}
--   {role = "assistant", content = text, tool_calls = {{id=, name=, arguments = table | nil,
--     arguments_error = why | nil}, ...}}
--   {role = "tool", tool_call_id =, name =, content = text, is_error = bool}
-- parse gives the provider's answer ({text=, reasoning=, finish=, usage=})
-- and tool_calls in the same form. Arguments that are not a JSON object
-- are kept as arguments_error (answered as a tool error, never raised on).

local json = require "klab.json"
local redact = require("klab.redact").text

local M = {}

local function providers(name) return require("klab.experiment.providers").get(name) end

-- The arguments of a call from the text a model wrote: a table, or nil, why.
local function arguments_of(text)
  if type(text) == "table" then return text end
  if text == nil or text == json.null or text == "" then return {} end
  if type(text) ~= "string" then return nil, "the arguments are not a JSON object" end
  local ok, v = pcall(json.decode, redact(text))
  if not ok or type(v) ~= "table" or rawget(v, 1) ~= nil then return nil, "the arguments are not a JSON object" end
  return v
end

local function call_of(id, name, args)
  local a, why = arguments_of(args)
  return { id = type(id) == "string" and id or "", name = type(name) == "string" and name or "", arguments = a,
    arguments_error = why }
end

-- The neutral conversation in format f.
local function converted(messages, f)
  local out = {}
  for _, x in ipairs(messages) do
    if x.role == "assistant" and x.tool_calls and #x.tool_calls > 0 then out[#out + 1] = f.asked(x)
    elseif x.role == "tool" then f.answered(out, x)
    else out[#out + 1] = { role = x.role, content = x.content } end
  end
  return out
end

function M.for_model(m, tools)
  local p = providers(m.provider)
  local f = p and p.tool_format
  if not f then error("klab.agent.wire: no tool-calling format for provider " .. tostring(m.provider), 2) end
  local wire = {}
  function wire.body(model, messages)
    -- The provider's body (model, sampling, limits, extra), then the
    -- conversation in its tool-calling form and the tools.
    local b = p.body(model, messages)
    local msgs = converted(messages, f)
    if f.system_apart then
      local rest = {}
      for _, x in ipairs(msgs) do if x.role ~= "system" then rest[#rest + 1] = x end end
      msgs = rest
    end
    b.messages = msgs
    b.tools = f.tools(tools)
    return b
  end
  function wire.parse(status, body)
    local r, why = p.parse(status, body)
    if not r then return nil, why end
    local ok, doc = pcall(json.decode, body or "")
    local calls = {}
    for i, c in ipairs(f.calls(ok and doc or nil)) do calls[i] = call_of(c.id, c.name, c.arguments) end
    r.tool_calls = calls
    return r
  end
  return wire
end

return M
