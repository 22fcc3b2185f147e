-- klab.experiment.providers.anthropic: the Anthropic messages API.
--
--   anthropic.url(model)              -> base_url .. "/v1/messages" (or "/messages" when base_url ends in /v1)
--   anthropic.headers(model)          -> header table for klab.http (the key as {env=})
--   anthropic.body(model, messages)   -> request body table
--   anthropic.parse(status, body)     -> {text=, reasoning=, finish=, usage={input=, output=, reasoning=}}
--                                        or nil, message
--   anthropic.tool_format             the messages API's tool calling (`tools`, `tool_use` and
--                                     `tool_result` blocks), for klab.agent.wire
--
-- System messages go to the top-level "system" field. max_tokens is
-- required by the API (default 8192). Extended thinking: model.thinking_budget
-- (tokens), or reasoning_effort low/medium/high mapped to 2048/8192/24576
-- budget tokens; max_tokens must exceed the budget. seed is not part of this
-- API and is not sent. The usage has no separate count of thinking tokens
-- (they are inside output_tokens), so reasoning is nil.

local json = require "klab.json"
local openai = require "klab.experiment.providers.openai"

local M = {}

M.VERSION = "2023-06-01"
M.about = "the messages API"
M.base_url = "https://api.anthropic.com"
-- The API version a model may pin (the anthropic-version header).
M.fields = { anthropic_version = "string" }
local BUDGET = { low = 2048, medium = 8192, high = 24576 }

function M.url(m)
  local base = m.base_url:gsub("/+$", "")
  if base:match("/v1$") then return base .. "/messages" end
  return base .. "/v1/messages"
end

function M.headers(m)
  local h = { ["Content-Type"] = "application/json", ["anthropic-version"] = m.anthropic_version or M.VERSION }
  if m.api_key_env then h["x-api-key"] = { env = m.api_key_env } end
  return h
end

function M.body(m, messages)
  local system, msgs = {}, {}
  for _, x in ipairs(messages) do
    if x.role == "system" then system[#system + 1] = x.content
    else msgs[#msgs + 1] = { role = x.role, content = x.content } end
  end
  local b = { model = m.model, messages = msgs, max_tokens = m.max_tokens or 8192 }
  if #system > 0 then b.system = table.concat(system, "\n\n") end
  b.temperature = m.temperature
  b.top_p = m.top_p
  if m.stop and #m.stop > 0 then b.stop_sequences = m.stop end
  local budget = m.thinking_budget or BUDGET[m.reasoning_effort or ""]
  if budget then b.thinking = { type = "enabled", budget_tokens = budget } end
  for k, v in pairs(m.extra or {}) do b[k] = v end
  return b
end

local num = openai.num

function M.parse(status, body)
  local ok, doc = pcall(json.decode, body or "")
  if status and (status < 200 or status >= 300) then
    return nil, ("HTTP %d: %s"):format(status, openai.error_text(ok and doc or nil, body))
  end
  if not ok or type(doc) ~= "table" then
    return nil, ("malformed JSON in the response body (%d bytes): %s"):format(#(body or ""),
      ok and "not an object" or tostring(doc):gsub("^.-: ", ""))
  end
  if doc.type == "error" then return nil, "the server answered with an error: " .. openai.error_text(doc) end
  if type(doc.content) ~= "table" then return nil, "the response has no content list" end
  local text, thinking = {}, {}
  for _, blk in ipairs(doc.content) do
    if type(blk) == "table" then
      if blk.type == "text" and type(blk.text) == "string" then text[#text + 1] = blk.text
      elseif blk.type == "thinking" and type(blk.thinking) == "string" then thinking[#thinking + 1] = blk.thinking end
    end
  end
  local u = type(doc.usage) == "table" and doc.usage or {}
  local input = num(u.input_tokens)
  local cc, cr = num(u.cache_creation_input_tokens), num(u.cache_read_input_tokens)
  if math.type(input) and math.type(cc or 0) and math.type(cr or 0) then input = input + (cc or 0) + (cr or 0) end
  return {
    text = table.concat(text, ""),
    reasoning = #thinking > 0 and table.concat(thinking, "\n") or nil,
    finish = type(doc.stop_reason) == "string" and doc.stop_reason or nil,
    usage = { input = input, output = num(u.output_tokens), reasoning = nil },
    model = type(doc.model) == "string" and doc.model or nil,
  }
end

-- ---- Tool calling (klab.agent.wire: its neutral conversation to this form and back) ----

local tf = {}

-- The system prompt travels in the body's own field (M.body sets it),
-- never as a message.
tf.system_apart = true

function tf.asked(x)
  local blocks = {}
  if x.content and x.content ~= "" then blocks[1] = { type = "text", text = x.content } end
  for _, c in ipairs(x.tool_calls) do
    blocks[#blocks + 1] = { type = "tool_use", id = c.id, name = c.name, input = c.arguments or {} }
  end
  return { role = "assistant", content = blocks }
end

-- The results of one turn's calls go back together, in one user message.
function tf.answered(out, x)
  local block = { type = "tool_result", tool_use_id = x.tool_call_id, content = x.content, is_error = x.is_error or nil }
  local last = out[#out]
  if last and last.role == "user" and type(last.content) == "table" and last.content[1].type == "tool_result" then
    last.content[#last.content + 1] = block
  else
    out[#out + 1] = { role = "user", content = { block } }
  end
end

function tf.tools(tools)
  local out = {}
  for i, t in ipairs(tools) do out[i] = { name = t.name, description = t.description, input_schema = t.schema } end
  return out
end

-- The calls of a decoded response, as sent: {id=, name=, arguments= (the input object)}.
function tf.calls(doc)
  local out = {}
  if type(doc) ~= "table" or type(doc.content) ~= "table" then return out end
  for _, b in ipairs(doc.content) do
    if type(b) == "table" and b.type == "tool_use" then out[#out + 1] = { id = b.id, name = b.name, arguments = b.input } end
  end
  return out
end

M.tool_format = tf

return M
