-- klab.experiment.providers.anthropic: the Anthropic messages API.
--
--   anthropic.url(model)              -> base_url .. "/v1/messages" (or "/messages" when base_url ends in /v1)
--   anthropic.headers(model)          -> header table for klab.http (the key as {env=})
--   anthropic.body(model, messages)   -> request body table
--   anthropic.parse(status, body)     -> {text=, reasoning=, finish=, usage={input=, output=, reasoning=}}
--                                        or nil, message
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

return M
