-- tests/server/model_server.lua: the scripted model server
-- (tests/server/model_server.py) from a Lua test, for model_test.lua and
-- experiment_test.lua:
--
--   local server = dofile(t.root .. "/tests/server/model_server.lua")
--   server.with(t, function(s) ... s.base ... s:script{...} ... s:log() end)
--
-- with() starts a server on 127.0.0.1, runs fn(server) and stops the server
-- however fn ends; it skips the test when python3 or klab.http is missing.
local cjson = require "cjson"

local M = {}

local Server = {}
Server.__index = Server

function M.start(t)
  if not os.execute("command -v python3 >/dev/null 2>&1") then t.skip("python3 is not installed") end
  local ok, http = pcall(require, "klab.http")
  if not ok then t.skip("klab.http is not built: " .. tostring(http)) end
  local p = assert(io.popen("exec python3 '" .. t.root .. "/tests/server/model_server.py' --idle 60", "r"))
  local port = tonumber((p:read("l") or ""):match("^PORT (%d+)"))
  local pid = tonumber((p:read("l") or ""):match("^PID (%d+)"))
  if not port then p:close() error("the model server did not start") end
  return setmetatable({ p = p, port = port, pid = pid, http = http, base = "http://127.0.0.1:" .. port }, Server)
end

-- Queues the server's next answers (see model_server.py for the actions).
function Server:script(actions)
  local r = assert(self.http.post(self.base .. "/_script", nil, cjson.encode(actions)))
  assert(r.status == 200, "script refused: " .. tostring(r.body))
end

-- Every request the server saw, oldest first.
function Server:log()
  local r = assert(self.http.get(self.base .. "/_log"))
  return cjson.decode(r.body)
end

function Server:stop()
  if not self.p then return end
  pcall(self.http.post, self.base .. "/_shutdown", nil, "", { timeout = 2 })
  self.p:close()
  self.p = nil
end

function M.with(t, fn)
  local s = M.start(t)
  local ok, err = xpcall(fn, debug.traceback, s)
  s:stop()
  if not ok then error(err, 0) end
end

return M
