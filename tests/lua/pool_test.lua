-- pool_test.lua: klab.eval.pool without a GPU: CPU workers run side by side,
-- GPU slots get their device and lock, jobs prefer the worker that last ran
-- their affinity, a dead worker costs one job only, and a session with CPU
-- workers judges the same as one without.

local pool_mod = require "klab.eval.pool"
local build = require "klab.build"

local T = {}

local HERE = (debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$")) or "."
if HERE:sub(1, 1) ~= "/" then HERE = (os.getenv("PWD") or ".") .. "/" .. HERE end

local function job_env()
  local env = { LUA_PATH = HERE .. "/?.lua;;" }
  if build.sanitized then
    local a = os.getenv("ASAN_OPTIONS")
    env.ASAN_OPTIONS = (a and a ~= "" and (a .. ":") or "") .. "handle_segv=0"
  end
  return env
end

local function span(s, tag) return { module = "jobs.basic", fn = "span", args = { s = s, tag = tag } } end

-- Polls until every handle has a report (or 30 s pass).
local function drain(t, pool, handles)
  local t0 = require("klab.sys").now()
  while pool:pending() > 0 and require("klab.sys").now() - t0 < 30 do pool:poll(0.5) end
  for i, h in ipairs(handles) do t.ok(h.report ~= nil, "handle " .. i .. " has a report") end
end

function T.cpu_workers_run_side_by_side(t)
  local pool <close> = pool_mod.new { cpu = 2, env = job_env(), deadline = 30 }
  t.eq(pool:slots("cpu"), 2)
  t.ok(pool:has("cpu"))
  local a = pool:submit("cpu", span(0.4, "a"))
  local b = pool:submit("cpu", span(0.4, "b"))
  local c = pool:submit("cpu", span(0, "c"))
  t.eq(pool:queued("cpu"), 3)
  drain(t, pool, { a, b, c })
  local ra, rb, rc = a.report.result, b.report.result, c.report.result
  t.eq(a.report.status, "finished")
  t.ok(ra.pid ~= rb.pid, "two workers")
  -- The two sleeps overlapped: each began before the other ended.
  t.ok(ra.t0 < rb.t1 and rb.t0 < ra.t1, "a and b ran at the same time")
  -- The third waited for a free worker.
  t.ok(rc.t0 >= math.min(ra.t1, rb.t1) - 1e-3, "c started after a worker came free")
  t.ok(rc.pid == ra.pid or rc.pid == rb.pid, "c reused a worker")
end

function T.gpu_slots_get_their_device_and_lock(t)
  local pool <close> = pool_mod.new { gpus = { 0, 1 }, per_gpu = 2, env = job_env(), deadline = 30 }
  -- The probe asks a worker for the devices; without a GPU it answers none,
  -- and the listed ordinals stand.
  t.eq(pool:slots("gpu"), 4)
  local hs = {}
  for i = 1, 4 do hs[i] = pool:submit("gpu", span(0.3, i)) end
  drain(t, pool, hs)
  local seen = {}
  for _, h in ipairs(hs) do
    local r = h.report.result
    t.eq(r.device, tostring(h.device), "the worker sees only its device")
    t.eq(r.lock, "device-" .. h.device, "workers sharing a device share its lock")
    seen[r.device] = (seen[r.device] or 0) + 1
  end
  t.eq(seen["0"], 2)
  t.eq(seen["1"], 2)
end

-- A job submitted to run alone on a device waits until nothing else runs
-- there, and nothing else starts there while it runs; jobs that ran beside
-- another on their device say so (shared), a job alone does not.
function T.a_job_alone_on_its_device(t)
  local pool <close> = pool_mod.new { gpus = { 0, 1 }, per_gpu = 2, env = job_env(), deadline = 30 }
  local a = pool:submit("gpu", span(0.4, "a"))
  local b = pool:submit("gpu", span(0.4, "b"))
  pool:poll(0)
  t.eq(a.device, b.device, "a and b share device " .. tostring(a.device))
  local dev = a.device
  local c = pool:submit("gpu", span(0.3, "c"), { alone = dev })
  local d = pool:submit("gpu", span(0.1, "d"))
  local e = pool:submit("gpu", span(0.1, "e"))
  drain(t, pool, { a, b, c, d, e })
  local ra, rb, rc = a.report.result, b.report.result, c.report.result
  t.ok(a.shared and b.shared, "a and b ran side by side")
  t.eq(c.device, dev)
  t.ok(not c.shared, "c ran alone")
  t.ok(rc.t0 >= math.max(ra.t1, rb.t1) - 1e-3, "c waited for a and b")
  for _, h in ipairs { d, e } do
    local r = h.report.result
    -- Held off c's device while c ran; the other device took them.
    t.ok(h.device ~= dev or r.t0 >= rc.t1 - 1e-3 or r.t1 <= rc.t0 + 1e-3, "no job beside c on its device")
  end
end

function T.affinity_prefers_the_last_worker(t)
  local pool <close> = pool_mod.new { gpus = { 0, 1 }, env = job_env(), deadline = 30 }
  local first = pool:submit("gpu", span(0, "x"), { affinity = "taskB" })
  drain(t, pool, { first })
  local slot = first.slot
  -- Both workers are idle: the job with the same affinity goes where taskB ran.
  local again = pool:submit("gpu", span(0, "y"), { affinity = "taskB" })
  drain(t, pool, { again })
  t.eq(again.slot, slot, "same worker for the same task")
  t.eq(again.report.result.pid, first.report.result.pid)
end

function T.a_dead_worker_costs_one_job(t)
  local pool <close> = pool_mod.new { cpu = 2, env = job_env(), deadline = 30 }
  local bad = pool:submit("cpu", { module = "jobs.bad", fn = "segv" })
  local good = pool:submit("cpu", span(0.2, "g"))
  drain(t, pool, { bad, good })
  t.eq(bad.report.status, "crashed")
  t.eq(good.report.status, "finished")
  -- The slot that lost its worker starts a new one for the next job.
  local after = pool:submit("cpu", span(0, "after"))
  local after2 = pool:submit("cpu", span(0, "after2"))
  drain(t, pool, { after, after2 })
  t.eq(after.report.status, "finished")
  t.eq(after2.report.status, "finished")
end

-- A result may leave its worker unfit: nothing starts on that worker before
-- the caller has seen the result and could retire it.
function T.retire_before_the_next_job(t)
  local pool <close> = pool_mod.new { gpus = { 0 }, env = job_env(), deadline = 30 }
  t.eq(pool:slots("gpu"), 1)
  local first = pool:submit("gpu", span(0.2, "first"))
  local second = pool:submit("gpu", span(0, "second"))
  local sys = require "klab.sys"
  local t0 = sys.now()
  local landed
  while not landed and sys.now() - t0 < 30 do
    for _, h in ipairs(pool:poll(0.5)) do
      if h == first then landed = true end
    end
  end
  t.ok(landed, "the first job finished")
  t.eq(second.slot, nil, "the second has not started on the first's worker")
  pool:retire(first.slot)
  drain(t, pool, { second })
  t.eq(second.report.status, "finished")
  t.ok(second.report.result.pid ~= first.report.result.pid, "the second ran on a new worker")
end

function T.deadline_applies_per_job(t)
  local pool <close> = pool_mod.new { cpu = 1, env = job_env(), deadline = 30 }
  local slow = pool:submit("cpu", { module = "jobs.bad", fn = "sleep" }, { deadline = 0.3 })
  local next_one = pool:submit("cpu", span(0, "n"))
  drain(t, pool, { slow, next_one })
  t.eq(slow.report.status, "timeout")
  t.eq(next_one.report.status, "finished")
end

-- Builds on CPU workers give the same result as builds in this process.
function T.session_builds_on_cpu_workers(t)
  local eval = require "klab.eval"
  local cand = t.root .. "/tasks/softmax/samples/naive"
  local task = "softmax_bf16/16384x16384"
  local function run(cpu)
    local s <close> = eval.session { cpu = cpu, deadline = 60 }
    local tickets = {}
    for i = 1, 2 do tickets[i] = assert(s:submit(task, cand, { timing = false })) end
    local out = {}
    while s:pending() > 0 do
      for _, d in ipairs(s:poll(0.5)) do out[d.ticket] = d.result end
    end
    return out[tickets[1]], out[tickets[2]]
  end
  local a1, a2 = run(0)
  local b1, b2 = run(2)
  for _, r in ipairs { a1, a2, b1, b2 } do
    t.ok(r.stages.build and r.stages.build.ok, "built")
    t.ok(r.stages.plan ~= nil, "planned")
  end
  t.eq(b1.verdict, a1.verdict)
  t.eq(b1.reason, a1.reason)
  t.eq(b1.stages.build.cubin_hash, a1.stages.build.cubin_hash, "the same cubin")
  t.ok(type(b1.stages.build.census) == "table", "the compile's census came back from the CPU worker")
  -- The SASS census is taken by the scheduling process either way.
  t.ok(b1.stages.build.sass ~= nil and a1.stages.build.sass ~= nil, "SASS census recorded")
  t.eq(b1.stages.build.sass.available, a1.stages.build.sass.available)
  t.eq(require("klab.json").encode(b1.stages.build.sass.families or {}),
    require("klab.json").encode(a1.stages.build.sass.families or {}), "the same families")
  t.eq(b2.verdict, a2.verdict)
end

-- A baseline check while an evaluation runs on the same worker: the
-- evaluation's result still lands on its ticket.
function T.baseline_check_keeps_other_results(t)
  local eval = require "klab.eval"
  local s <close> = eval.session { cpu = 0, deadline = 60 }
  local task = "softmax_bf16/1000x1023"
  local ticket = assert(s:submit(task, t.root .. "/tasks/softmax/samples/naive", { timing = false }))
  -- Until the evaluation is on the worker (or done: poll hands a finished
  -- result over once, and the ticket is gone after that).
  local landed
  for _ = 1, 100 do
    for _, d in ipairs(s:poll(0)) do
      if d.ticket == ticket then landed = d.result end
    end
    local item = s.items[ticket]
    if landed or not item or item.state == "running" then break end
  end
  local b = s:check_baseline(task)
  t.ok(b and b.verdict ~= nil, "the baseline check answered")
  local r = landed or s:wait(ticket, 60)
  t.ok(r ~= nil and r.verdict ~= nil, "the evaluation's result was kept")
end

return T
