-- klab.proc.serve: the main loop of a worker process (`klab --worker`).
--
-- The supervisor (klab.proc.supervisor over klab.worker) writes job frames to our
-- stdin and reads one result frame per job from fd 3. A job is JSON:
--   {"module": "name", "fn": "name", "args": ..., "path": "dir/?.lua;..."?}
-- The loop requires the module, calls module[fn](args) under xpcall and
-- replies {"ok": true, "result": ...} or {"ok": false, "error": message,
-- "traceback": ...}. `path`, when given, is put in front of package.path.
-- At the end of stdin it returns 0. A job that exits the process, crashes
-- or hangs is the supervisor's business: it sees the death or the deadline.

local worker = require "klab.worker"
local json = require "klab.json"

local M = {}

-- True while this process is a worker's main loop: only then is fd 3 the
-- result channel that stage notices go to.
local serving = false

-- Announces a stage of the current job to the supervisor: from now on the
-- job must also finish within seconds (none when nil or <= 0), and a
-- timeout or death names this stage. Outside a worker (a job run in the
-- caller's own process, as `klab replay` does) it does nothing and
-- returns false.
function M.stage(name, seconds)
  if not serving then return false end
  return worker.stage(name, seconds)
end

local function failure(msg, tb)
  return { ok = false, error = msg, traceback = tb }
end

-- The error message of any error value (respects __tostring).
local function message(e)
  if type(e) == "string" then return e end
  local ok, s = pcall(tostring, e)
  return ok and s or ("(error object is a " .. type(e) .. " value)")
end

-- Runs one decoded job; returns the reply table.
local function run_job(job)
  if type(job) ~= "table" or type(job.module) ~= "string" or type(job.fn) ~= "string" then
    return failure("bad job: it needs string fields 'module' and 'fn'")
  end
  if job.path ~= nil then
    if type(job.path) ~= "string" then return failure("bad job: 'path' must be a string") end
    if not package.path:find(job.path, 1, true) then
      package.path = job.path .. ";" .. package.path
    end
  end
  local args = job.args
  if args == json.null then args = nil end
  local tb
  local function handler(e)
    tb = debug.traceback(message(e), 2)
    return e
  end
  local ok, res = xpcall(function()
    local mod = require(job.module)
    local fn = type(mod) == "table" and mod[job.fn]
    if type(fn) ~= "function" then
      error(string.format("module '%s' has no function '%s'", job.module, job.fn), 0)
    end
    return fn(args)
  end, handler)
  if not ok then return failure(message(res), tb) end
  return { ok = true, result = res }
end

-- The reply to one job frame, as JSON text.
function M.handle(payload)
  -- Sizes, counts and byte offsets arrive as integers; a result's NaN and
  -- infinities travel as JSON's explicit literals and come back as numbers.
  local ok, job = pcall(json.decode, payload, { integers = true })
  local reply = ok and run_job(job) or failure("malformed job (not JSON): " .. message(job))
  local eok, text = pcall(json.encode, reply, { nonfinite = true })
  if eok then return text end
  return json.encode(failure("the result cannot be sent as JSON: " .. message(text)))
end

function M.run(argv)
  -- stdin carries the protocol: a job that reads io.stdin must not eat frames.
  io.input("/dev/null")
  serving = true
  while true do
    local payload, err = worker.read_job()
    if payload == nil then
      if err then
        io.stderr:write("klab worker: ", err, "\n")
        return 1
      end
      return 0
    end
    local reply = M.handle(payload)
    -- What the job printed belongs to this job's output, before its reply.
    io.stdout:flush()
    io.stderr:flush()
    local ok, werr = worker.write_result(reply)
    if not ok then
      io.stderr:write("klab worker: cannot send the result: ", tostring(werr), "\n")
      return 1
    end
  end
end

return M
