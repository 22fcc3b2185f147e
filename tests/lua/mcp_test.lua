-- mcp_test.lua: `klab mcp` against a small MCP client written for this
-- test. The client writes its messages to a file, starts `build/klab mcp`
-- with that file as standard input (klab.spawn, no shell), and reads the
-- answers back by id. Offline: compile works, run/profile/evaluate answer
-- the no-GPU tool error (on a GPU machine they answer a record instead).
-- The attacks: paths out of the workspace, links out, candidates the rules
-- refuse, includes of host files, malformed and huge messages, and a client
-- that hangs up in the middle of a message.

local json = require "klab.json"
local spawn = require "klab.spawn"
local sys = require "klab.sys"
local fs = require "klab.fs"

local T = {}

local SOFTMAX = "softmax_bf16/1000x1023"

local function write(path, text) assert(fs.write(path, text)) end

-- A workspace with a good candidate, and beside it (outside) a folder the
-- agent must not reach.
local function workspace(t)
  local top = t.tmpdir()
  local ws = top .. "/ws"
  assert(sys.mkdir(ws .. "/good"))
  write(ws .. "/good/kernel.cu", assert(fs.read(t.root .. "/tasks/softmax/samples/naive/kernel.cu")))
  assert(sys.mkdir(top .. "/outside"))
  write(top .. "/outside/kernel.cu", assert(fs.read(t.root .. "/tasks/softmax/samples/naive/kernel.cu")))
  write(top .. "/outside/secret.txt", "the host's secret 7c1d9e\n")
  return ws, top
end

-- The client: sends lines (tables are encoded, strings sent as they are;
-- tail: text after the last newline) and returns the server's replies by
-- id ("null" for id null, in order), every reply in order, the process
-- result.
local function session(t, ws, lines, tail, extra_args)
  local dir = t.tmpdir()
  local parts = {}
  for i, l in ipairs(lines) do parts[i] = type(l) == "table" and json.encode(l) or l end
  local input = dir .. "/input"
  write(input, table.concat(parts, "\n") .. "\n" .. (tail or ""))
  local argv = { t.klab, "mcp", "--root", ws }
  for _, a in ipairs(extra_args or {}) do argv[#argv + 1] = a end
  local r = assert(spawn.run { argv = argv, stdin = input, cwd = dir, timeout = 120 })
  local by_id, all = { null = {} }, {}
  for l in r.stdout:gmatch("([^\n]*)\n") do
    local ok, msg = pcall(json.decode, l, { integers = true })
    t.ok(ok, "every line on stdout is a JSON message: " .. l:sub(1, 200))
    if ok then
      all[#all + 1] = msg
      if msg.id == json.null then table.insert(by_id.null, msg) else by_id[msg.id] = msg end
    end
  end
  t.eq(r.stdout:sub(-1), "\n", "the last message ends with its newline")
  return by_id, all, r
end

local function req(id, method, params) return { jsonrpc = "2.0", id = id, method = method, params = params } end
local function call(id, name, arguments) return req(id, "tools/call", { name = name, arguments = arguments }) end

-- The data of a tool's result (isError false) or its one-line error.
local function data(t, reply, what)
  t.ok(reply and reply.result, what .. ": a result")
  local r = reply and reply.result or {}
  t.eq(r.isError, false, what .. ": not a tool error: " .. tostring(r.content and r.content[1].text):sub(1, 300))
  return json.decode(r.content and r.content[1].text or "null")
end

local function tool_error(t, reply, what)
  t.ok(reply and reply.result, what .. ": a result")
  local r = reply and reply.result or {}
  t.eq(r.isError, true, what .. ": a tool error")
  local text = r.content and r.content[1] and r.content[1].text or ""
  t.ok(not text:find("\n"), what .. ": one line")
  t.ok(not text:find("traceback") and not text:find("%.lua:%d"), what .. ": no traceback or klab file: " .. text)
  return text
end

function T.handshake_and_tools_list(t)
  local ws = workspace(t)
  local by, all, r = session(t, ws, {
    req(1, "initialize", { protocolVersion = "2025-06-18", capabilities = json.null, clientInfo = { name = "test", version = "1" } }),
    { jsonrpc = "2.0", method = "notifications/initialized" },
    req(2, "tools/list"),
    req("s3", "ping"),
    req(4, "initialize", { protocolVersion = "1999-01-01" }),
  })
  t.eq(r.status, "exited")
  t.eq(r.code, 0, "the client closing the connection ends the server with 0")
  t.eq(#all, 4, "four requests, four answers: the notification gets none")
  local init = by[1].result
  t.eq(init.protocolVersion, "2025-06-18")
  t.eq(init.serverInfo.name, "klab")
  t.eq(init.capabilities.tools.listChanged, false)
  t.eq(by[4].result.protocolVersion, require("klab.agent.mcp").VERSIONS[1], "an unknown revision gets the newest")
  t.ok(by.s3.result and next(by.s3.result) == nil, "ping answers an empty result")
  local names = {}
  for _, tool in ipairs(by[2].result.tools) do
    names[#names + 1] = tool.name
    t.eq(tool.inputSchema.type, "object", tool.name .. "'s schema is an object")
    t.ok(next(tool.inputSchema.properties) ~= nil, tool.name .. "'s schema names its arguments")
    t.ok(#tool.description > 20, tool.name .. " is described")
  end
  t.eq(table.concat(names, ","), "list_tasks,describe_task,compile,run,profile,evaluate")
  t.ok(r.stdout:find('"result":{}', 1, true), "ping's result is the object {}")
  t.ok(r.stdout:find('"properties":{', 1, true), "schemas' properties are objects")
end

function T.task_tools(t)
  local ws = workspace(t)
  local by = session(t, ws, {
    call(1, "list_tasks", {}),
    call(2, "list_tasks", { family = "softmax" }),
    call(3, "describe_task", { task = "softmax_bf16" }),
    call(4, "describe_task", { task = SOFTMAX }),
    call(5, "describe_task", { task = "no_such_task" }),
    call(6, "describe_task", { task = "../../etc/passwd" }),
  })
  local all = data(t, by[1], "list_tasks")
  t.ok(all.count > 100 and all.count == #all.tasks, "every task listed: " .. tostring(all.count))
  local soft = data(t, by[2], "list_tasks family=softmax")
  t.ok(soft.count > 0 and soft.count < all.count, "the family filter")
  for _, x in ipairs(soft.tasks) do t.eq(x.family, "softmax") end
  local d = data(t, by[3], "describe_task base name")
  t.eq(d.base, "softmax_bf16")
  t.ok(#d.variants > 1, "the variants are named")
  local smallest = data(t, by[4], "describe_task variant")
  t.ok(d.bytes <= smallest.bytes, "a base name gives its smallest variant")
  t.eq(smallest.name, SOFTMAX)
  t.ok(smallest.buffers[1].layout == "row" and #smallest.buffers[1].shape > 0, "buffers with shape and layout")
  t.match(smallest.model_text, "Buffers")
  t.match(tool_error(t, by[5], "an unknown task"), "no task named 'no_such_task'")
  t.match(tool_error(t, by[6], "a path for a task"), "is not a task name")
end

function T.compile_offline(t)
  local ws = workspace(t)
  assert(sys.mkdir(ws .. "/broken"))
  write(ws .. "/broken/kernel.cu", "__global__ void k(float *x) { x[0] = undeclared_name; }\n")
  local by = session(t, ws, {
    call(1, "compile", { candidate = "good" }),
    call(2, "compile", { candidate = "./good/", arch = "sm_100a" }),
    call(3, "compile", { candidate = "broken" }),
    call(4, "compile", { candidate = "good", arch = "sm_1" }),
  })
  local c = data(t, by[1], "compile")
  t.eq(c.ok, true)
  t.eq(c.arch, "sm_90a")
  t.eq(c.kernels[1].name, "softmax")
  t.ok(c.kernels[1].registers > 0 and c.kernels[1].spill_stores == 0, "registers and spills")
  t.ok(c.census.instructions > 0, "the census")
  t.eq(c.file, "good/kernel.cu", "the file named inside the workspace, not by its host path")
  t.eq(c.cubin, nil, "no cubin bytes")
  t.eq(data(t, by[2], "compile sm_100a").arch, "sm_100a")
  local b = data(t, by[3], "a compile error is an answer")
  t.eq(b.ok, false)
  t.match(b.log or b.error, "undeclared_name")
  t.match(tool_error(t, by[4], "a bad target"), "^arch: ")
end

function T.gpu_tools(t)
  local ws = workspace(t)
  local by = session(t, ws, {
    call(1, "run", { task = "softmax_bf16", candidate = "good" }),
    call(2, "profile", { task = SOFTMAX, candidate = "good" }),
    call(3, "evaluate", { task = SOFTMAX, candidate = "good", timing = false }),
    call(4, "evaluate", { task = "softmax_bf16", candidate = "good" }),
  })
  t.match(tool_error(t, by[4], "evaluate on a base of several variants"), "variants; name one")
  if require("klab.gpu").available() then
    t.eq(data(t, by[1], "run").correct, true)
    t.ok(data(t, by[2], "profile").profile_text, "the profile's text")
    t.eq(data(t, by[3], "evaluate").verdict, "passed")
  else
    for id, name in ipairs { "run", "profile", "evaluate" } do
      t.match(tool_error(t, by[id], name .. " without a GPU"), "^no GPU here %(.*%): run, profile and evaluate need one")
    end
  end
end

function T.attacks_on_the_workspace(t)
  local ws, top = workspace(t)
  -- A link to a folder outside, a candidate whose kernel is a link out, a
  -- link to a host file, both languages in one folder, a kernel over the
  -- size cap, and kernels that include host files.
  assert(sys.mkdir(ws .. "/linked_file"))
  local function link(target, at) t.eq(os.execute("ln -s '" .. target .. "' '" .. at .. "'"), true, "ln -s") end
  link(top .. "/outside", ws .. "/out_link")
  link(top .. "/outside/kernel.cu", ws .. "/linked_file/kernel.cu")
  link("/etc/passwd", ws .. "/passwd.cu")
  link(top .. "/outside/nothing_here", ws .. "/dangling")
  assert(sys.mkdir(ws .. "/both"))
  write(ws .. "/both/kernel.cu", "__global__ void k() {}\n")
  write(ws .. "/both/kernel.ptx", ".version 8.0\n")
  assert(sys.mkdir(ws .. "/huge"))
  write(ws .. "/huge/kernel.cu", string.rep("// padding\n", 400 * 1024))
  assert(sys.mkdir(ws .. "/includes"))
  write(ws .. "/includes/kernel.cu", '#include "../../outside/secret.txt"\n#include "/etc/passwd"\n__global__ void k() {}\n')
  local by, _, r = session(t, ws, {
    call(1, "compile", { candidate = "../outside" }),
    call(2, "compile", { candidate = top .. "/outside" }),
    call(3, "compile", { candidate = "good/../../outside" }),
    call(4, "compile", { candidate = "out_link" }),
    call(5, "compile", { candidate = "linked_file" }),
    call(6, "compile", { candidate = "passwd.cu" }),
    call(7, "compile", { candidate = "dangling" }),
    call(8, "compile", { candidate = "both" }),
    call(9, "compile", { candidate = "huge" }),
    call(10, "compile", { candidate = "includes" }),
    call(11, "evaluate", { task = SOFTMAX, candidate = "../outside" }),
    call(12, "run", { task = SOFTMAX, candidate = "out_link" }),
    call(13, "compile", { candidate = "/etc" }),
  })
  for _, id in ipairs { 1, 2, 3, 11, 13 } do
    t.match(tool_error(t, by[id], "path escape " .. id), "outside the workspace")
  end
  for _, id in ipairs { 4, 6, 7, 12 } do
    t.match(tool_error(t, by[id], "link out " .. id), "no file or folder inside the workspace")
  end
  t.eq(tool_error(t, by[4], "link"):match(": (.*)$"), tool_error(t, by[7], "dangling"):match(": (.*)$"),
    "a link out and a link to nothing read alike (no oracle of host files)")
  t.match(tool_error(t, by[5], "a kernel that links out"), "leaves the candidate folder")
  t.match(tool_error(t, by[8], "both languages"), "both kernel.cu and kernel.ptx")
  t.match(tool_error(t, by[9], "over the size cap"), "huge/kernel.cu")
  local inc = data(t, by[10], "includes of host files")
  t.eq(inc.ok, false, "a kernel that includes host files does not compile")
  t.ok(not r.stdout:find("7c1d9e", 1, true), "the outside file's text is in no answer")
  t.ok(not r.stdout:find("root:x:0", 1, true) and not r.stdout:find("root:", 1, true), "nor /etc/passwd's")
  for id, reply in pairs(by) do
    -- (2 echoes the absolute path the agent sent.)
    if id ~= 2 and id ~= "null" then
      t.ok(not json.encode(reply):find(top, 1, true), "answer " .. id .. " does not name the workspace's host path")
    end
  end
end

function T.malformed_messages(t)
  local ws = workspace(t)
  local by, all, r = session(t, ws, {
    "{not json",
    "[1, 2]",
    '"just a string"',
    '{"id": 7, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": 8, "method": "resources/list"}',
    '{"jsonrpc": "2.0", "id": 9.5, "method": "ping"}',
    "",
    "   ",
    req(10, "tools/call", { name = "no_such_tool", arguments = {} }),
    req(11, "tools/call", "not an object"),
    call(12, "compile", {}),
    call(13, "compile", { candidate = "good", colour = "red" }),
    call(14, "compile", { candidate = 42 }),
    call(15, "compile", { "good" }),
    call(16, "run", { task = SOFTMAX, candidate = "good", arch = string.rep("x", 100) }),
    '{"jsonrpc": "2.0", "id": 17, "result": {}}',
    req(18, "ping"),
  })
  t.eq(r.code, 0)
  local nulls = by.null
  t.eq(#nulls, 4, "four messages whose id cannot be read get an error with id null")
  t.eq(nulls[1].error.code, -32700, "not JSON: parse error")
  t.eq(nulls[2].error.code, -32600, "a batch")
  t.eq(nulls[3].error.code, -32600, "not an object")
  t.eq(nulls[4].error.code, -32600, "a float id")
  t.eq(by[7].error.code, -32600, "no jsonrpc member")
  t.eq(by[8].error.code, -32601, "an unknown method")
  t.eq(by[10].error.code, -32602, "an unknown tool")
  t.match(by[10].error.message, "no_such_tool")
  t.eq(by[11].error.code, -32602, "params that are not an object")
  t.match(tool_error(t, by[12], "a missing argument"), "missing argument 'candidate'")
  t.match(tool_error(t, by[13], "an unknown argument"), "unknown argument 'colour'")
  t.match(tool_error(t, by[14], "a number for a path"), "'candidate' must be a string")
  t.match(tool_error(t, by[15], "an array for the arguments"), "must be a JSON object")
  t.match(tool_error(t, by[16], "a string past its maxLength"), "longer than 32")
  t.eq(by[17], nil, "a response from the client gets no answer")
  t.ok(by[18].result, "after all that the server still answers")
  t.eq(#all, 14, "every request answered once, notifications and responses not at all")
end

function T.huge_message_and_hangup(t)
  local ws = workspace(t)
  local huge = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' .. string.rep("a", 200000) .. '"}}'
  local by, _, r = session(t, ws, { huge, req(2, "ping"), call(3, "compile", { candidate = "good" }) },
    '{"jsonrpc":"2.0","id":4,"method":"tools/li', { "--max-message", "65536" })
  t.eq(by[1], nil, "the huge message is not answered as a request")
  t.eq(by.null[1].error.code, -32600)
  t.match(by.null[1].error.message, "^message of %d+ bytes refused: at most 65536")
  t.ok(by[2].result, "the line after it is read whole")
  t.eq(data(t, by[3], "compile after the huge line").ok, true)
  t.eq(by[4], nil, "the message cut off by the hang-up is not answered")
  t.eq(r.status, "exited")
  t.eq(r.code, 0, "a client that hangs up mid-message ends the server cleanly")
  t.match(r.stderr, "closed the connection in the middle of a message")
end

function T.command_line(t)
  local r = assert(spawn.run { argv = { t.klab, "mcp", "--help" } })
  t.eq(r.code, 0)
  for _, name in ipairs { "list_tasks", "describe_task", "compile", "run", "profile", "evaluate", "--root",
    "--max-message", "docs/agents.md" } do
    t.ok(r.stdout:find(name, 1, true), "--help names " .. name)
  end
  r = assert(spawn.run { argv = { t.klab, "mcp", "--root", "/no/such/folder" } })
  t.eq(r.code, 2)
  t.match(r.stderr, "^klab mcp: %-%-root: the workspace /no/such/folder")
  r = assert(spawn.run { argv = { t.klab, "mcp", "--root", "/" } })
  t.eq(r.code, 2, "the whole host is no workspace")
  r = assert(spawn.run { argv = { t.klab, "mcp", "extra" } })
  t.eq(r.code, 2)
end

return T
