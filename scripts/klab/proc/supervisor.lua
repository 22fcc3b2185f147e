-- klab.proc.supervisor: run Lua jobs in a worker process that may die.
--
--   local sup = require("klab.proc.supervisor").new{argv=?, env=?, rlimits=?, deadline=60}
--   local report = sup:run({module="m", fn="f", args=...}, {deadline=seconds})
--   sup:start(job, {deadline=}) -> true | false, report;  sup:step() -> nil | report
--       the same call in two halves (a pool runs several supervisors at
--       once: klab.worker.wait({sup:handle(), ...}) blocks until one needs a step)
--   sup:finish(timeout_s) -> {exit_code=, output=} | nil: the worker ends at the end
--       of its input; what it printed on the way out (a wrapping tool's summary)
--   sup:close()       (also <close>)
--
-- One worker (klab --worker, running klab.proc.serve) serves job after job; after
-- any failure it is gone and the next job gets a new one (sup.restarts counts
-- them). run never raises for a failing job; it returns a report:
--   status       "finished" | "error" | "timeout" | "crashed" | "exited" | "protocol"
--   result       the job's return value (finished)
--   error        a one-line message (every other status); traceback (error)
--   signal, signal_name   (crashed)      exit_code (exited)
--   elapsed      seconds spent in the call      output_tail   the worker's
--   stdout/stderr during the job (last 64 KiB)  worker_pid    who ran it
--   code         "ETIMEOUT", "ECHILD", "EPROTO", ... (failures of the process)
--   stage        the last stage the job announced (klab.proc.serve.stage), if any;
--   stage_seconds its own limit; stage_expired (timeout) that limit ran out
--   before the job's deadline
-- It raises only for misuse: a job that is not a table or not JSON-encodable.

local worker = require "klab.worker"
local json = require "klab.json"

local M = {}

local Supervisor = {}
Supervisor.__index = Supervisor

function M.new(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("supervisor.new: options must be a table", 2) end
  if opts.deadline ~= nil and (type(opts.deadline) ~= "number" or opts.deadline <= 0) then
    error("supervisor.new: deadline must be a positive number of seconds", 2)
  end
  return setmetatable({
    argv = opts.argv,
    env = opts.env,
    rlimits = opts.rlimits,
    deadline = opts.deadline or 60,
    worker = nil,
    spawned = 0,   -- workers started
    restarts = 0,  -- workers started to replace one that failed or died
    jobs = 0,
  }, Supervisor)
end

-- The live worker, started (or replaced) as needed; nil, msg, code when
-- none can be started.
function Supervisor:_worker()
  local w = self.worker
  if w and w:alive() then return w end
  if w then
    -- It died between jobs: replace it rather than blame the next job.
    w:free()
    self.worker = nil
  end
  local nw, err, code = worker.spawn { argv = self.argv, env = self.env, rlimits = self.rlimits }
  if not nw then return nil, err, code end
  if self.spawned > 0 then self.restarts = self.restarts + 1 end
  self.spawned = self.spawned + 1
  self.worker = nw
  return nw
end

-- Forgets a worker that failed; the next job starts a new one.
function Supervisor:_discard()
  if self.worker then
    self.worker:free()
    self.worker = nil
  end
end

-- The report of a call that ended (w:call's or w:step's results).
function Supervisor:_report(pid, reply, msg, code, detail)
  if reply == nil then
    self:_discard()
    return {
      status = detail.outcome, error = msg, code = code,
      signal = detail.signal, signal_name = detail.signal_name, exit_code = detail.exit_code,
      elapsed = detail.elapsed, output_tail = detail.output_tail, worker_pid = pid,
      stage = detail.stage, stage_seconds = detail.stage_seconds, stage_expired = detail.stage_expired,
    }
  end
  local info = msg
  local dok, res = pcall(json.decode, reply)
  if not dok or type(res) ~= "table" or type(res.ok) ~= "boolean" then
    -- A reply frame that is not ours: the worker cannot be trusted any more.
    self:_discard()
    return {
      status = "protocol", code = "EPROTO",
      error = "worker " .. pid .. " sent a malformed reply: " .. (dok and "not a reply object" or tostring(res)),
      elapsed = info.elapsed, output_tail = info.output_tail, worker_pid = pid,
    }
  end
  local report = { elapsed = info.elapsed, output_tail = info.output_tail, worker_pid = pid, stage = info.stage }
  if res.ok then
    report.status = "finished"
    if res.result ~= json.null then report.result = res.result end
  else
    report.status = "error"
    report.error = type(res.error) == "string" and res.error or tostring(res.error)
    report.traceback = res.traceback
  end
  return report
end

local function encode_job(job, o, default)
  if type(job) ~= "table" then error("supervisor: job must be a table", 3) end
  local deadline = (o and o.deadline) or default
  if type(deadline) ~= "number" or deadline <= 0 then
    error("supervisor: deadline must be a positive number of seconds", 3)
  end
  local eok, payload = pcall(json.encode, job)
  if not eok then error("supervisor: job cannot be encoded as JSON: " .. tostring(payload), 3) end
  return payload, deadline
end

function Supervisor:run(job, o)
  local payload, deadline = encode_job(job, o, self.deadline)
  local w, serr, scode = self:_worker()
  if not w then
    return { status = "error", error = "cannot start a worker: " .. tostring(serr), code = scode }
  end
  local pid = w:pid()
  self.jobs = self.jobs + 1
  return self:_report(pid, w:call(payload, deadline))
end

-- The same in two halves, for a pool of supervisors: start sends the job
-- (false, report when no worker can start), step returns nil while it runs
-- and its report once it ended; worker() is what klab.worker.wait takes.
function Supervisor:start(job, o)
  local payload, deadline = encode_job(job, o, self.deadline)
  local w, serr, scode = self:_worker()
  if not w then
    return false, { status = "error", error = "cannot start a worker: " .. tostring(serr), code = scode }
  end
  local ok, err, code = w:start(payload, deadline)
  if not ok then
    self:_discard()
    return false, { status = "error", error = "cannot send the job: " .. tostring(err), code = code }
  end
  self.jobs = self.jobs + 1
  self.busy_pid = w:pid()
  return true
end

function Supervisor:step()
  local w = self.worker
  if not (w and w:busy()) then return nil end
  local reply, msg, code, detail = w:step()
  if reply == false then return nil end
  return self:_report(self.busy_pid, reply, msg, code, detail)
end

function Supervisor:busy()
  return self.worker ~= nil and self.worker:busy()
end

function Supervisor:handle()
  return self.worker
end

-- The pid of the current worker, or nil when none is running.
function Supervisor:pid()
  return self.worker and self.worker:alive() and self.worker:pid() or nil
end

-- Kills the current worker so that the next job starts a new one: for a
-- worker whose job finished but left it unfit (a sticky CUDA error).
function Supervisor:retire()
  self:_discard()
end

-- Ends the worker the polite way (the end of its input) and waits up to
-- timeout_s for it to exit: {exit_code=, output=} with what it printed on
-- the way out (a wrapping tool's summary), or nil when no worker runs.
function Supervisor:finish(timeout_s)
  local w = self.worker
  if not w then return nil end
  local before = #w:output()
  local code = w:finish(timeout_s or 10)
  local out = w:output()
  self:_discard()
  return { exit_code = code, output = out:sub(math.min(before, #out) + 1), output_tail = out }
end

function Supervisor:close()
  self:_discard()
end

Supervisor.__close = Supervisor.close
Supervisor.__gc = Supervisor.close

return M
