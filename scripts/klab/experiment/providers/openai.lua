-- klab.experiment.providers.openai: OpenAI-compatible chat completions (api.openai.com,
-- hosted gateways, vLLM, SGLang, llama.cpp's server, Ollama's /v1).
--
--   openai.url(model)              -> base_url .. "/chat/completions"
--   openai.headers(model)          -> header table for klab.http (the key as {env=, prefix=})
--   openai.body(model, messages)   -> request body table
--   openai.parse(status, body)     -> {text=, reasoning=, finish=, usage={input=, output=, reasoning=}}
--                                     or nil, message
--   openai.tool_format             chat completions' tool calling (`tools`, the assistant's
--                                  `tool_calls`, `role: "tool"` results), for klab.agent.wire
--
-- base_url includes the version prefix ("https://api.openai.com/v1",
-- "http://127.0.0.1:8000/v1"). max_tokens is sent as "max_tokens" unless the
-- model sets max_tokens_field = "max_completion_tokens" (OpenAI's reasoning
-- models want that one). model.extra is merged into the body last, for a
-- server's own options (for example vLLM's top_k).

local json = require "klab.json"

local M = {}

M.about = "chat completions: vLLM, SGLang, llama.cpp, gateways"
M.base_url = "https://api.openai.com/v1"

function M.url(m)
  return (m.base_url:gsub("/+$", "")) .. "/chat/completions"
end

function M.headers(m)
  local h = { ["Content-Type"] = "application/json" }
  if m.api_key_env then h.Authorization = { env = m.api_key_env, prefix = "Bearer " } end
  return h
end

function M.body(m, messages)
  local msgs = {}
  for i, x in ipairs(messages) do msgs[i] = { role = x.role, content = x.content } end
  local b = { model = m.model, messages = msgs }
  b.temperature = m.temperature
  b.top_p = m.top_p
  if m.max_tokens then b[m.max_tokens_field or "max_tokens"] = m.max_tokens end
  b.reasoning_effort = m.reasoning_effort
  b.seed = m.seed
  if m.stop and #m.stop > 0 then b.stop = m.stop end
  for k, v in pairs(m.extra or {}) do b[k] = v end
  return b
end

local function str(v) return type(v) == "string" and v or nil end
-- A usage figure as it came (numbers made integers where they are), for
-- klab.experiment.model to check: odd ones are kept as text, never raised on.
local function num(v)
  if v == nil or v == json.null then return nil end
  return math.type(v) and (math.tointeger(v) or v) or v
end
M.num = num

-- The message of an error body ({"error": {"message": ...}} or {"error": "..."}).
local function error_text(doc, raw)
  if type(doc) == "table" then
    local e = doc.error
    if type(e) == "table" and str(e.message) then return e.message end
    if str(e) then return e end
    if str(doc.message) then return doc.message end
    if str(doc.detail) then return doc.detail end
  end
  raw = tostring(raw or ""):gsub("%s+", " ")
  return #raw > 200 and (raw:sub(1, 200) .. "...") or raw
end

M.error_text = error_text

function M.parse(status, body)
  local ok, doc = pcall(json.decode, body or "")
  if status and (status < 200 or status >= 300) then
    return nil, ("HTTP %d: %s"):format(status, error_text(ok and doc or nil, body))
  end
  if not ok or type(doc) ~= "table" then
    return nil, ("malformed JSON in the response body (%d bytes): %s"):format(#(body or ""),
      ok and "not an object" or tostring(doc):gsub("^.-: ", ""))
  end
  if doc.error and doc.error ~= json.null then return nil, "the server answered with an error: " .. error_text(doc) end
  local choice = type(doc.choices) == "table" and doc.choices[1]
  if type(choice) ~= "table" or type(choice.message) ~= "table" then
    return nil, "the response has no choices[1].message"
  end
  local msg = choice.message
  local u = type(doc.usage) == "table" and doc.usage or {}
  local details = type(u.completion_tokens_details) == "table" and u.completion_tokens_details or {}
  return {
    text = str(msg.content) or "",
    reasoning = str(msg.reasoning_content) or str(msg.reasoning),
    finish = str(choice.finish_reason),
    usage = { input = num(u.prompt_tokens), output = num(u.completion_tokens), reasoning = num(details.reasoning_tokens) },
    model = str(doc.model),
  }
end

-- ---- Tool calling (klab.agent.wire: its neutral conversation to this form and back) ----

local tf = {}

-- An assistant message with its tool calls.
function tf.asked(x)
  local calls = {}
  for i, c in ipairs(x.tool_calls) do
    calls[i] = { id = c.id, type = "function",
      ["function"] = { name = c.name, arguments = c.arguments and json.encode(c.arguments) or "" } }
  end
  return { role = "assistant", content = x.content ~= "" and x.content or json.null, tool_calls = calls }
end

-- A tool result, appended to out.
function tf.answered(out, x)
  out[#out + 1] = { role = "tool", tool_call_id = x.tool_call_id, content = x.content }
end

function tf.tools(tools)
  local out = {}
  for i, t in ipairs(tools) do
    out[i] = { type = "function", ["function"] = { name = t.name, description = t.description, parameters = t.schema } }
  end
  return out
end

-- The calls of a decoded response, as sent: {id=, name=, arguments= (JSON text)}.
function tf.calls(doc)
  local choice = type(doc) == "table" and type(doc.choices) == "table" and doc.choices[1]
  local msg = type(choice) == "table" and choice.message
  local list = type(msg) == "table" and msg.tool_calls
  local out = {}
  if type(list) ~= "table" then return out end
  for _, c in ipairs(list) do
    local f = type(c) == "table" and c["function"]
    if type(f) == "table" then out[#out + 1] = { id = c.id, name = f.name, arguments = f.arguments } end
  end
  return out
end

M.tool_format = tf

return M
