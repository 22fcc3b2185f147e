-- worker_test.lua: klab.sys, klab.worker, klab.proc.serve and klab.proc.supervisor.
-- Job modules live in tests/lua/jobs/; the worker finds them through LUA_PATH,
-- which the tests pass in the worker's environment.

local sys = require "klab.sys"
local worker = require "klab.worker"
local supervisor = require "klab.proc.supervisor"
local build = require "klab.build"
local cjson = require "cjson"

local T = {}

-- The directory that holds jobs/ (this file's), made absolute.
local HERE = (debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$")) or "."
if HERE:sub(1, 1) ~= "/" then HERE = (os.getenv("PWD") or ".") .. "/" .. HERE end

-- The worker's environment: where the job modules are, and (in the
-- sanitizer build) SIGSEGV left to the kernel so that a crash is a crash.
local function job_env(t)
  local env = { LUA_PATH = HERE .. "/?.lua;;" }
  if build.sanitized then
    local a = os.getenv("ASAN_OPTIONS")
    env.ASAN_OPTIONS = (a and a ~= "" and (a .. ":") or "") .. "handle_segv=0"
  end
  return env
end

local function new_sup(t, deadline)
  return supervisor.new { env = job_env(t), deadline = deadline or 30 }
end

local function helper_child(t)
  local dir = t.klab:match("^(.*)/[^/]*$") or "."
  local path = dir .. "/tests/helper_child"
  local f = io.open(path)
  if not f then return nil end
  f:close()
  return path
end

local function gone(pid)
  local ok, _, code = sys.kill(pid, 0)
  return not ok and code == "ENOTFOUND"
end

function T.sys_basics(t)
  local pid = sys.getpid()
  t.ok(math.type(pid) == "integer" and pid > 1, "getpid")
  t.ok(sys.getppid() > 0, "getppid")
  local a = sys.now()
  sys.sleep(0.05)
  local dt = sys.now() - a
  t.ok(dt >= 0.045 and dt < 0.5, "sleep(0.05) took " .. dt)
  t.near(sys.time(), os.time(), 2, "wall clock")
  t.ok(type(sys.hostname()) == "string" and #sys.hostname() > 0, "hostname")
  t.eq(sys.exe(), t.klab, "exe")
  t.eq(sys.signal_name(11), "SEGV")
  t.eq(sys.signal_name(9), "KILL")
  t.eq(sys.signal_number("SIGSEGV"), 11)
  t.eq(sys.signal_number("TERM"), 15)
  t.eq(sys.signal_number("NOPE"), nil)
  t.eq(sys.kill(pid, 0), true, "signal 0 to myself")
  t.raises(function() sys.kill(pid, "NOPE") end, "unknown signal")
  t.raises(function() sys.kill(0, "KILL") end, "refused")
  t.raises(function() sys.sleep(-1) end, "seconds")
end

function T.worker_raw_protocol(t)
  -- The default argv is this klab binary with --worker (klab.proc.serve).
  local w <close> = assert(worker.spawn { env = job_env(t) })
  t.ok(w:alive(), "alive")
  t.match(tostring(w), "^klab%.Worker %(pid %d+%)$")
  local job = cjson.encode { module = "jobs.basic", fn = "add", args = { a = 2, b = 3 } }
  local reply, info = w:call(job, 20)
  t.ok(reply, "reply")
  local r = cjson.decode(reply)
  t.eq(r.ok, true)
  t.eq(r.result, 5)
  t.ok(type(info) == "table" and info.elapsed >= 0 and info.output_tail == "", "info")
  -- A malformed job is the worker's error reply, not a failure of the process.
  reply = w:call("this is not json", 20)
  r = cjson.decode(reply)
  t.eq(r.ok, false)
  t.match(r.error, "malformed job")
  t.ok(w:alive(), "still alive")
  local pid = w:pid()
  t.eq(w:free(), true, "first free")
  t.eq(w:free(), false, "second free")
  t.eq(tostring(w), "klab.Worker (freed)")
  t.raises(function() w:pid() end, "freed worker")
  t.ok(gone(pid), "freed worker killed and reaped")
end

function T.worker_raw_failures(t)
  local w = assert(worker.spawn { env = job_env(t) })
  local pid = w:pid()
  local job = cjson.encode { module = "jobs.bad", fn = "sleep" }
  local t0 = sys.now()
  local reply, msg, code, detail = w:call(job, 0.3)
  local dt = sys.now() - t0
  t.eq(reply, nil)
  t.eq(code, "ETIMEOUT")
  t.match(msg, "did not reply within")
  t.eq(detail.outcome, "timeout")
  t.ok(dt >= 0.3 and dt < 1.3, "timeout reported after " .. dt .. " s")
  t.ok(detail.elapsed >= 0.3 and detail.elapsed <= dt, "elapsed")
  t.eq(w:alive(), false)
  t.ok(gone(pid), "killed and reaped")
  t.raises(function() w:call(job, 1) end, "dead")
  w:free()

  -- A program that is not there.
  local nw, err, ecode = worker.spawn { argv = { "/nonexistent/klab" } }
  t.eq(nw, nil)
  t.eq(ecode, "ENOTFOUND")
  t.match(err, "nonexistent")
  t.raises(function() worker.spawn { argv = {} } end, "empty")
  t.raises(function() worker.spawn { env = { A = true } } end, "env")

  -- A malformed frame, from the C helper child (when it was built).
  local helper = helper_child(t)
  if not helper then t.skip("helper_child not built") end
  w = assert(worker.spawn { argv = { helper } })
  t.eq(w:call("echo:hi", 5), "hi")
  reply, msg, code, detail = w:call("garbage", 5)
  t.eq(code, "EPROTO")
  t.eq(detail.outcome, "protocol")
  t.ok(detail.elapsed < 2, "protocol error reported at once")
  w:free()
end

function T.finishes_and_reuses_worker(t)
  local sup <close> = new_sup(t)
  local r = sup:run { module = "jobs.basic", fn = "add", args = { a = 2, b = 40 } }
  t.eq(r.status, "finished")
  t.eq(r.result, 42)
  local pid = r.worker_pid
  t.ok(pid and pid ~= sys.getpid(), "ran in another process")
  r = sup:run { module = "jobs.basic", fn = "pid" }
  t.eq(r.result, pid, "the job ran in the reported worker")
  r = sup:run { module = "jobs.basic", fn = "echo", args = { list = { 1, 2, 3 }, s = "x", nested = { ok = true } } }
  t.eq(r.status, "finished")
  t.eq(#r.result.list, 3)
  t.eq(r.result.s, "x")
  t.eq(r.result.nested.ok, true)
  r = sup:run { module = "jobs.basic", fn = "chatty", args = { n = 7 } }
  t.eq(r.result, 7)
  t.match(r.output_tail, "hello from the job")
  t.match(r.output_tail, "a warning on stderr")
  r = sup:run { module = "jobs.basic", fn = "read_stdin" }
  t.eq(r.status, "finished", "reading stdin does not eat the protocol")
  t.eq(r.result, "")
  r = sup:run { module = "jobs.basic", fn = "big", args = { n = 5 * 1024 * 1024 } }
  t.eq(r.status, "finished")
  t.eq(r.result and #r.result, 5 * 1024 * 1024, "5 MiB result")
  t.eq(r.worker_pid, pid, "one worker for every job")
  t.eq(sup.restarts, 0)
  t.eq(sup.jobs, 6)
  t.eq(sup:pid(), pid)
  sup:close()
  t.ok(gone(pid), "close kills the worker")
  t.eq(sup:pid(), nil)
end

function T.errors_keep_the_worker(t)
  local sup <close> = new_sup(t)
  local pid = sup:run({ module = "jobs.basic", fn = "pid" }).result
  local r = sup:run { module = "jobs.basic", fn = "fail", args = { msg = "bad input 17" } }
  t.eq(r.status, "error")
  t.match(r.error, "bad input 17")
  t.match(r.traceback, "jobs/basic%.lua")
  r = sup:run { module = "jobs.basic", fn = "nested" }
  t.match(r.error, "deep failure")
  t.match(r.traceback, "inner")
  r = sup:run { module = "jobs.basic", fn = "fail_object" }
  t.eq(r.error, "custom error object")
  r = sup:run { module = "jobs.nosuchmodule", fn = "x" }
  t.eq(r.status, "error")
  t.match(r.error, "jobs.nosuchmodule")
  r = sup:run { module = "jobs.basic", fn = "nosuchfn" }
  t.match(r.error, "has no function 'nosuchfn'")
  r = sup:run { module = "jobs.basic", fn = "unencodable" }
  t.eq(r.status, "error")
  t.match(r.error, "JSON")
  r = sup:run { fn = "x" }
  t.match(r.error, "module")
  r = sup:run { module = "jobs.basic", fn = "pid" }
  t.eq(r.result, pid, "errors do not replace the worker")
  t.eq(sup.restarts, 0)
  -- Misuse raises.
  t.raises(function() sup:run("add") end, "table")
  t.raises(function() sup:run { module = "jobs.basic", fn = "echo", args = { f = print } } end, "JSON")
  t.raises(function() sup:run({ module = "m", fn = "f" }, { deadline = -1 }) end, "deadline")
end

-- Each kind of death: reported once, and a new worker serves the next job.
local function expect_death(t, sup, job, deadline, status)
  local before = sup:run { module = "jobs.basic", fn = "pid" }
  t.eq(before.status, "finished")
  local restarts = sup.restarts
  local t0 = sys.now()
  local r = sup:run(job, { deadline = deadline })
  local dt = sys.now() - t0
  t.eq(r.status, status, job.fn)
  t.eq(r.worker_pid, before.result, "the failure names the worker")
  t.ok(gone(before.result), "the failed worker is gone")
  local after = sup:run { module = "jobs.basic", fn = "pid" }
  t.eq(after.status, "finished", "carries on after " .. job.fn)
  t.ok(after.result ~= before.result, "a new worker after " .. job.fn)
  t.eq(sup.restarts, restarts + 1, "restart counted")
  return r, dt
end

function T.timeouts(t)
  local sup <close> = new_sup(t)
  local r, dt = expect_death(t, sup, { module = "jobs.bad", fn = "spin" }, 0.5, "timeout")
  t.ok(dt >= 0.5 and dt < 1.5, "spin reported after " .. dt .. " s")
  t.eq(r.code, "ETIMEOUT")
  r, dt = expect_death(t, sup, { module = "jobs.bad", fn = "sleep" }, 0.5, "timeout")
  t.ok(dt >= 0.5 and dt < 1.5, "sleep reported after " .. dt .. " s")
  -- 4 MiB on stderr, then a hang: drained, deadline kept, last 64 KiB kept.
  r, dt = expect_death(t, sup, { module = "jobs.bad", fn = "spew_then_hang" }, 1.0, "timeout")
  t.ok(dt >= 1.0 and dt < 2.0, "spew reported after " .. dt .. " s")
  t.eq(#r.output_tail, 65536, "output tail is capped")
  t.match(r.output_tail, "LAST%-LINE\n$")
end

-- A stage's own limit stops a hang before the job's deadline and is named;
-- stages announced by a job that finishes are reported too; outside a
-- worker serve.stage does nothing.
function T.stage_limits(t)
  local sup <close> = new_sup(t)
  local r, dt = expect_death(t, sup, { module = "jobs.bad", fn = "stage_then_sleep", args = { limit = 0.3 } }, 30,
    "timeout")
  t.ok(dt >= 0.3 and dt < 5, "stopped after " .. dt .. " s by a 0.3 s stage limit (deadline 30 s)")
  t.eq(r.stage, "correctness")
  t.eq(r.stage_seconds, 0.3)
  t.eq(r.stage_expired, true)
  t.match(r.error, "stage 'correctness'")
  -- The job's deadline still comes first when it is the earlier.
  r = expect_death(t, sup, { module = "jobs.bad", fn = "stage_then_sleep", args = { limit = 30 } }, 0.3, "timeout")
  t.eq(r.stage, "correctness")
  t.eq(r.stage_expired, false)
  local ok = sup:run({ module = "jobs.basic", fn = "staged" })
  t.eq(ok.status, "finished")
  t.eq(ok.result.a, true)
  t.eq(ok.result.b, true)
  t.eq(ok.stage, "correctness")
  t.eq(require("klab.proc.serve").stage("here", 1), false, "no stage notice outside a worker")
  t.raises(function() worker.stage("two\nlines", 1) end, "one%-line name")
end

function T.crash(t)
  local sup <close> = new_sup(t)
  local r = expect_death(t, sup, { module = "jobs.bad", fn = "segv" }, 20, "crashed")
  t.eq(r.signal, 11)
  t.eq(r.signal_name, "SEGV")
  t.eq(r.code, "ECHILD")
  t.match(r.error, "SIGSEGV")
  t.ok(r.elapsed < 10, "crash reported at once")
end

function T.exit_status(t)
  local sup <close> = new_sup(t)
  local r = expect_death(t, sup, { module = "jobs.bad", fn = "exit" }, 20, "exited")
  t.eq(r.exit_code, 3)
  r = expect_death(t, sup, { module = "jobs.bad", fn = "exit", args = { code = 0 } }, 20, "exited")
  t.eq(r.exit_code, 0, "exit 0 before replying is still a failure")
end

function T.many_jobs_then_a_new_worker(t)
  local sup <close> = new_sup(t)
  local pids = {}
  for i = 1, 20 do
    local r = sup:run { module = "jobs.basic", fn = "add", args = { a = i, b = i } }
    t.eq(r.result, 2 * i)
    pids[r.worker_pid] = true
  end
  local first = next(pids)
  t.eq(next(pids, first), nil, "one worker served 20 jobs")
  t.eq(sup:run({ module = "jobs.bad", fn = "exit", args = { code = 9 } }).exit_code, 9)
  local second = {}
  for i = 1, 5 do
    local r = sup:run { module = "jobs.basic", fn = "pid" }
    second[r.result] = true
  end
  local p2 = next(second)
  t.eq(next(second, p2), nil, "one new worker after the failure")
  t.ok(p2 ~= first, "and it is a new process")
  t.eq(sup.restarts, 1)
end

function T.job_path_field(t)
  -- Without LUA_PATH in the environment, the job can carry package.path.
  local sup <close> = supervisor.new { deadline = 20 }
  local r = sup:run { module = "jobs.basic", fn = "add", args = { a = 1, b = 1 },
    path = HERE .. "/?.lua" }
  t.eq(r.status, "finished")
  t.eq(r.result, 2)
end

function T.protocol_from_supervisor(t)
  -- The C helper answers JSON jobs with text that is not a reply.
  local helper = helper_child(t)
  if not helper then t.skip("helper_child not built") end
  local sup <close> = supervisor.new { argv = { helper }, deadline = 5 }
  local r = sup:run { module = "m", fn = "f" }
  t.eq(r.status, "protocol")
  t.match(r.error, "malformed reply")
  t.ok(gone(r.worker_pid), "the untrusted worker was killed")
end

-- Runs last (sorted by name): every worker of every test above was reaped.
function T.zz_no_children_left(t)
  local pid = sys.getpid()
  local f = io.open("/proc/" .. pid .. "/task/" .. pid .. "/children")
  if not f then t.skip("no /proc/PID/task/TID/children on this kernel") end
  local sup = new_sup(t)
  local r = sup:run { module = "jobs.basic", fn = "pid" }
  t.eq(r.status, "finished")
  t.eq(sup:run({ module = "jobs.bad", fn = "segv" }).status, "crashed")
  t.eq(sup:run({ module = "jobs.basic", fn = "pid" }).status, "finished")
  sup:close()
  local children = f:read("a")
  f:close()
  t.eq(children, "", "child processes left")
end

return T
