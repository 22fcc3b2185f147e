-- klab.agent.mcp: klab's tools (klab.agent.tools) served over the Model
-- Context Protocol: JSON-RPC 2.0 messages, one per line, on standard input
-- and output (the protocol's stdio transport).
--
--   mcp.serve{input=, output=, log=, ctx=, max_message=} -> why it ended
--
-- input and output: file handles (io.stdin, io.stdout); log: where notes
-- go (io.stderr). It answers initialize, ping, tools/list and tools/call;
-- notifications need no answer and get none. It ends when the input ends
-- and returns a line that says how ("the client closed the connection",
-- or "... in the middle of a message").
--
-- Nothing the client sends ends the server. A line that is not JSON is a
-- parse error (-32700), one that is not a request an invalid request
-- (-32600), an unknown method -32601, a call of an unknown tool or with
-- params that are not an object -32602; a line longer than max_message
-- bytes is refused (-32600) and skipped whole. A tool that fails, or whose
-- arguments do not fit its schema, answers a result with isError and a
-- one-line reason. Only messages are written to output.

local json = require "klab.json"
local tools = require "klab.agent.tools"

local M = {}

-- The protocol revisions this server speaks, newest first: a client that
-- asks for one of them gets it, any other gets the newest.
M.VERSIONS = { "2025-06-18", "2025-03-26", "2024-11-05" }

-- The longest message read (bytes): requests name tasks and folders, so a
-- longer line is a mistake or an attack, refused without being kept.
M.MAX_MESSAGE = 1024 * 1024

M.PARSE_ERROR, M.INVALID_REQUEST, M.METHOD_NOT_FOUND, M.INVALID_PARAMS, M.INTERNAL_ERROR =
  -32700, -32600, -32601, -32602, -32603

-- One line of input of at most limit bytes, without its newline: line |
-- nil, "eof" (nothing more) | nil, "partial", n (the input ended after n
-- bytes of an unfinished line) | nil, "long", n (a line of n bytes, more
-- than limit, read to its end and dropped).
function M.read_line(f, limit)
  local parts, n = {}, 0
  while true do
    local c = f:read(1)
    if c == nil then
      if n == 0 then return nil, "eof" end
      return nil, "partial", n
    end
    if c == "\n" then
      if n > limit then return nil, "long", n end
      return table.concat(parts)
    end
    n = n + 1
    if n <= limit then parts[n] = c elseif n == limit + 1 then parts = {} end
  end
end

local function send(out, msg)
  out:write(json.encode(msg), "\n")
  out:flush()
end

local function error_reply(out, id, code, message)
  send(out, { jsonrpc = "2.0", id = id == nil and json.null or id, error = { code = code, message = message } })
end

-- An empty result ({}): the codec writes an empty table as [], which is
-- not the object JSON-RPC's result for ping must be.
local function empty_reply(out, id)
  out:write('{"id":', json.encode(id), ',"jsonrpc":"2.0","result":{}}\n')
  out:flush()
end

local function tool_reply(out, id, text, is_error)
  send(out, { jsonrpc = "2.0", id = id, result = { content = { { type = "text", text = text } }, isError = is_error } })
end

local function initialize(params)
  local want = type(params) == "table" and params.protocolVersion
  local version = M.VERSIONS[1]
  for _, v in ipairs(M.VERSIONS) do if v == want then version = v end end
  return {
    protocolVersion = version,
    capabilities = { tools = { listChanged = false } },
    serverInfo = { name = "klab", version = require("klab.build").version },
    instructions = "klab judges GPU kernels. Write a candidate folder (kernel.cu or kernel.ptx, optionally "
      .. "plan.lua) inside the workspace, then call compile, run, profile or evaluate with its path and a task "
      .. "name from list_tasks; describe_task says what the kernel must compute.",
  }
end

local function list()
  local out = {}
  for i, t in ipairs(tools.LIST) do
    out[i] = { name = t.name, description = t.description, inputSchema = t.schema }
  end
  return { tools = out }
end

-- A tools/call: a result (the data as JSON text, or a tool error), or a
-- JSON-RPC error for a call that names no tool klab has.
local function call(ctx, out, id, params, log)
  if type(params) ~= "table" or type(params.name) ~= "string" then
    return error_reply(out, id, M.INVALID_PARAMS, "tools/call needs params {name, arguments}")
  end
  if not tools.get(params.name) then
    local names = {}
    for i, t in ipairs(tools.LIST) do names[i] = t.name end
    return error_reply(out, id, M.INVALID_PARAMS, ("unknown tool '%s'%s (tools: %s)"):format(params.name,
      require("klab.errors").did_you_mean(params.name, names), table.concat(names, ", ")))
  end
  local ok, data, why = xpcall(tools.call, debug.traceback, ctx, params.name, params.arguments)
  if not ok then
    -- klab's own failure: the agent gets one line, the log the trace.
    log:write("klab mcp: tool ", params.name, " failed: ", tostring(data), "\n")
    return tool_reply(out, id, "klab could not run " .. params.name .. ": "
      .. tostring(data):match("^[^\n]*"):gsub("^[%w_/%.%-]+:%d+: ", ""), true)
  end
  if not data then return tool_reply(out, id, tostring(why), true) end
  local text_ok, text = pcall(json.encode, data, { nonfinite = true })
  if not text_ok then return tool_reply(out, id, "klab could not write the result of " .. params.name, true) end
  return tool_reply(out, id, text, false)
end

-- One message (a decoded value); answers requests, ignores the rest.
local function handle(ctx, out, msg, log)
  if type(msg) ~= "table" then
    return error_reply(out, nil, M.INVALID_REQUEST, "a message must be a JSON object")
  end
  if rawget(msg, 1) ~= nil then
    return error_reply(out, nil, M.INVALID_REQUEST, "batches are not accepted: send one message per line")
  end
  local id = msg.id
  if id ~= nil and id ~= json.null and type(id) ~= "string" and math.type(id) ~= "integer" then
    return error_reply(out, nil, M.INVALID_REQUEST, "id must be a string or an integer")
  end
  if msg.method == nil and (msg.result ~= nil or msg.error ~= nil) then return end -- a response: none asked for
  if msg.jsonrpc ~= "2.0" or type(msg.method) ~= "string" then
    return error_reply(out, id, M.INVALID_REQUEST, 'a request needs "jsonrpc": "2.0" and a method')
  end
  if id == nil then return end -- a notification (initialized, cancelled, ...): nothing to answer
  local m = msg.method
  if m == "initialize" then
    send(out, { jsonrpc = "2.0", id = id, result = initialize(msg.params) })
  elseif m == "ping" then
    empty_reply(out, id)
  elseif m == "tools/list" then
    send(out, { jsonrpc = "2.0", id = id, result = list() })
  elseif m == "tools/call" then
    call(ctx, out, id, msg.params, log)
  else
    error_reply(out, id, M.METHOD_NOT_FOUND, "no method '" .. m:sub(1, 100) .. "' (klab serves initialize, ping, "
      .. "tools/list and tools/call)")
  end
end

function M.serve(opts)
  local input, out, log = opts.input or io.stdin, opts.output or io.stdout, opts.log or io.stderr
  local limit = opts.max_message or M.MAX_MESSAGE
  while true do
    local line, why, n = M.read_line(input, limit)
    if not line then
      if why == "eof" then return "the client closed the connection" end
      if why == "partial" then
        return ("the client closed the connection in the middle of a message (%d bytes without their newline, "
          .. "dropped)"):format(n)
      end
      error_reply(out, nil, M.INVALID_REQUEST, ("message of %d bytes refused: at most %d"):format(n, limit))
    elseif line:find("%S") then
      local ok, msg = pcall(json.decode, line, { integers = true })
      if not ok then
        error_reply(out, nil, M.PARSE_ERROR, "not JSON: " .. tostring(msg):gsub("^JSON: ", ""))
      else
        local hok, herr = xpcall(handle, debug.traceback, opts.ctx, out, msg, log)
        if not hok then
          log:write("klab mcp: ", tostring(herr), "\n")
          local id = type(msg) == "table" and (type(msg.id) == "string" or math.type(msg.id) == "integer") and msg.id
          error_reply(out, id or nil, M.INTERNAL_ERROR, "klab could not answer this message")
        end
      end
    end
  end
end

return M
