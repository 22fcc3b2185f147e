-- klab.agent.wire: a conversation with tools in each provider's own
-- tool-calling format: OpenAI-compatible chat completions (`tools`, the
-- assistant's `tool_calls`, `role: "tool"` results) and Anthropic messages
-- (`tools`, `tool_use` and `tool_result` blocks).
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

-- ---- OpenAI-compatible -------------------------------------------------------

local openai = {}

-- An assistant message with its tool calls, in OpenAI's form.
function openai.asked(x)
  local calls = {}
  for i, c in ipairs(x.tool_calls) do
    calls[i] = { id = c.id, type = "function",
      ["function"] = { name = c.name, arguments = c.arguments and json.encode(c.arguments) or "" } }
  end
  return { role = "assistant", content = x.content ~= "" and x.content or json.null, tool_calls = calls }
end

-- A tool result appended to out, in OpenAI's form.
function openai.answered(out, x)
  out[#out + 1] = { role = "tool", tool_call_id = x.tool_call_id, content = x.content }
end

function openai.tools(tools)
  local out = {}
  for i, t in ipairs(tools) do
    out[i] = { type = "function", ["function"] = { name = t.name, description = t.description, parameters = t.schema } }
  end
  return out
end

function openai.calls(doc)
  local choice = type(doc) == "table" and type(doc.choices) == "table" and doc.choices[1]
  local msg = type(choice) == "table" and choice.message
  local list = type(msg) == "table" and msg.tool_calls
  local out = {}
  if type(list) ~= "table" then return out end
  for _, c in ipairs(list) do
    local f = type(c) == "table" and c["function"]
    if type(f) == "table" then out[#out + 1] = call_of(c.id, f.name, f.arguments) end
  end
  return out
end

-- ---- Anthropic ------------------------------------------------------------------

local anthropic = {}

-- The system prompt travels in the body's own field (the provider's body
-- sets it), never as a message.
anthropic.system_apart = true

function anthropic.asked(x)
  local blocks = {}
  if x.content and x.content ~= "" then blocks[1] = { type = "text", text = x.content } end
  for _, c in ipairs(x.tool_calls) do
    blocks[#blocks + 1] = { type = "tool_use", id = c.id, name = c.name, input = c.arguments or {} }
  end
  return { role = "assistant", content = blocks }
end

-- The results of one turn's calls go back together, in one user message.
function anthropic.answered(out, x)
  local block = { type = "tool_result", tool_use_id = x.tool_call_id, content = x.content, is_error = x.is_error or nil }
  local last = out[#out]
  if last and last.role == "user" and type(last.content) == "table" and last.content[1].type == "tool_result" then
    last.content[#last.content + 1] = block
  else
    out[#out + 1] = { role = "user", content = { block } }
  end
end

function anthropic.tools(tools)
  local out = {}
  for i, t in ipairs(tools) do out[i] = { name = t.name, description = t.description, input_schema = t.schema } end
  return out
end

function anthropic.calls(doc)
  local out = {}
  if type(doc) ~= "table" or type(doc.content) ~= "table" then return out end
  for _, b in ipairs(doc.content) do
    if type(b) == "table" and b.type == "tool_use" then out[#out + 1] = call_of(b.id, b.name, b.input) end
  end
  return out
end

local FORMATS = { openai = openai, anthropic = anthropic }

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
  local f = FORMATS[m.provider]
  if not f then error("klab.agent.wire: no tool-calling format for provider " .. tostring(m.provider), 2) end
  local p = providers(m.provider)
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
    r.tool_calls = f.calls(ok and doc or nil)
    return r
  end
  return wire
end

return M
