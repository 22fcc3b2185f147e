-- klab.eval: the evaluation pipeline. Every path that judges a candidate
-- comes here: `klab eval`, `klab replay`, experiments, profiling runs and
-- the GPU checks.
--
--   local eval = require "klab.eval"
--   local s <close> = eval.session{db = "results.db", deadline = 120}
--   local r = s:evaluate(task, candidate, {arch = "sm_90a", timing = true})
--   local ticket = s:submit(task, candidate, opts)  -- many at once, on the session's pool:
--   s:poll(timeout_s) -> {{ticket=, result=}, ...}  s:wait(ticket [, timeout_s])  s:pending()
--   eval.evaluate(task, candidate, opts)     -- a one-off session
--   eval.replay(task, candidate, {runs = n}) -- in this process, no profiler (for ncu, compute-sanitizer)
--   eval.run_local(task, candidate, {stages = {...}}) -- chosen worker stages in this process
--
-- task is a name ("gemm_bf16/8192x7168x5120") or a descriptor from
-- klab.task; candidate a path (folder or file) or a table from
-- klab.eval.candidate. The stages and their contracts are klab.eval.stages:
-- build and plan run here (klab.eval.prepare), the GPU stages in a worker
-- process (klab.eval.gpu) that this session keeps alive across evaluations
-- and replaces when it hangs, crashes or is left unfit by a sticky CUDA
-- error, and record here. The supervisor never calls CUDA.
--
-- The result: {task=, candidate=<hash>, name=, arch=, verdict=, reason=,
-- stages={build=, plan=, load=, correctness=, instructions=, timing=},
-- device=, env=, klab_version=, cached=}. Each stage of the candidate's code
-- has a limit of its own inside the deadline (opts or session
-- stage_deadlines = {correctness=, instructions=, timing=} seconds;
-- defaults in klab.eval.stages): a kernel that hangs costs that stage's
-- limit, and the timeout's reason names the stage.
--
-- The store (opts.db or the session's db) records every result under a key
-- of what was measured: the candidate, task, target, options, and the
-- machine (GPU model and driver; "no GPU" when there is none) and klab
-- version. A finished result answers again only for that same key and only
-- when it is a measurement: an `unknown` result (a stage could not run) is
-- evaluated again, and replaced in the store, every time.

local candidate_mod = require "klab.eval.candidate"
local pool_mod = require "klab.eval.pool"
local task_mod = require "klab.task"
local verdicts = require "klab.eval.verdict"
local stages = require "klab.eval.stages"
local prepare = require "klab.eval.prepare"
local json = require "klab.json"
local sys = require "klab.sys"
local seed_mod = require "klab.eval.seed"

local M = {}

local KLAB_VERSION = require("klab.build").version

local Session = {}
Session.__index = Session

-- opts: db, deadline, arch, stage_deadlines, env, and the pool's gpus
-- ("all" by default: one worker per visible GPU), per_gpu (workers sharing
-- a GPU; they take turns on its exclusive stages), cpu (workers that run the
-- caller's stages in parallel; 0: in this process).
function M.session(opts)
  opts = opts or {}
  local s = setmetatable({ opts = opts, deadline = opts.deadline or 180, items = {}, next_ticket = 1 }, Session)
  s.pool = pool_mod.new { gpus = opts.gpus, per_gpu = opts.per_gpu, cpu = opts.cpu, deadline = s.deadline,
    env = opts.env }
  if opts.db then
    if type(opts.db) == "string" then
      local db, why = require("klab.store.records").open(opts.db)
      if not db then require("klab.errors").raise("mistake", why) end
      s.db = db
      s.own_db = true
    else
      s.db = opts.db
    end
    require("klab.store.records").define_verdicts(s.db)
  end
  return s
end

function Session:close()
  if self.pool then self.pool:close() end
  if self.own_db and self.db then self.db:close() end
  self.pool, self.db = nil, nil
end
Session.__close = Session.close
Session.__gc = Session.close

-- Resolves names to a task and a candidate.
local function resolve(t, c)
  if type(t) == "string" then
    if not task_mod.is_name(t) then return nil, task_mod.not_a_name(t) end
    local ok, tt = pcall(task_mod.get, t)
    if not ok then return nil, (tostring(tt):gsub("^[%w_/%.]+:%d+: ", "")) end
    t = tt
  end
  if type(c) == "string" and c ~= "" then
    local cc, err = candidate_mod.load(c)
    if not cc then return nil, err end
    c = cc
  end
  return t, c
end

-- The machine the workers measure on, asked once per session (a cheap job:
-- a worker starts CUDA, which the evaluation needs anyway): {gpu_name=,
-- driver_version=, arch=, gpus = the devices the workers see} or {none = why}.
-- machine(true): the same when the answer has come, else nil (never waits;
-- the question is sent on the first call, and builds run meanwhile).
function Session:machine(no_wait)
  if self._machine then return self._machine end
  local d
  if no_wait then
    self.pool:probe_start()
    d = self.pool:devices_known()
    if not d then return nil end
  else
    d = self.pool:devices()
  end
  local m = d.gpu_name and { gpu_name = d.gpu_name, driver_version = d.driver_version, arch = d.arch, gpus = d.count } or
    { none = tostring(d.none or "no device") }
  self._machine = m
  return m
end

-- The store key of an evaluation: everything its result depends on.
local function key_of(t, c, arch, opts, machine)
  -- Custom trials change what "correct" means: they are part of the key.
  local trials = opts.trials and json.encode(opts.trials) or nil
  local where = machine.gpu_name and (machine.gpu_name .. " / driver " .. tostring(machine.driver_version)) or "no GPU"
  -- A seed asked for is a replay of that evaluation, not any result.
  local seed = opts.seed ~= nil and seed_mod.format(assert(seed_mod.parse(opts.seed))) or nil
  return require("klab.store").hash("klab.eval.2", c.hash, t.name, arch, tostring(opts.timing ~= false),
    tostring(opts.replica or 0), trials, where, KLAB_VERSION, seed)
end

-- The options of one evaluation, with its seed: the one asked for, else a
-- new one from the operating system. nil, why for a seed that is no number.
local function with_seed(opts)
  local s
  if opts.seed ~= nil then
    local why
    s, why = seed_mod.parse(opts.seed)
    if not s then return nil, "seed: " .. why end
  else
    s = seed_mod.new()
  end
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.seed = seed_mod.format(s)
  return o
end

local function check_stage_deadlines(sd)
  if sd == nil then return nil end
  if type(sd) ~= "table" then error("stage_deadlines must be a table {stage = seconds}", 3) end
  for k, v in pairs(sd) do
    local why = stages.unknown(k)
    if why then error("stage_deadlines: " .. why, 3) end
    if type(v) ~= "number" or not (v > 0) or v == math.huge then
      error("stage_deadlines." .. k .. " must be a positive number of seconds (finite)", 3)
    end
  end
  return sd
end

-- A stage that gave a verdict its contract does not list is a bug in klab.
local function check_contract(stage, r)
  if r.verdict and not stages.allows(stage, r.verdict) then
    error(string.format("klab.eval: the %s stage gave verdict %s, which its contract does not list", stage,
      tostring(r.verdict)), 2)
  end
end

-- ---- the worker's stages, through the pool --------------------------------

-- Why an evaluation's GPU stages run once more, alone on their device with
-- the same seed, before anything is recorded (nil: they do not), given its
-- result g, its pool handle h and whether this was already the second run:
--   "neighbour"  a sticky CUDA error, or a job that raised (the judge's
--                own calls failed: "the evaluation itself failed"), while
--                another job ran on the same device may be that job's
--                fault (a fault in one context disturbs the others);
--   "crashed"    the worker died by a signal: a candidate is device code,
--                whose faults are CUDA errors, so such a death is klab's,
--                the driver's or CUPTI's until it happens again;
--   "judge"      one of klab's own steps failed (its inputs, reference,
--                checks, flush or baseline: the result's judge_fault), or
--                the job raised: never the candidate's doing, so it is
--                tried once more before it stands as unknown.
-- What the second run gives is the candidate's own.
function M.rerun_reason(g, h, again)
  if again then return nil end
  if h.shared and (g.unfit or (g.worker and g.worker.status == "error")) then return "neighbour" end
  if g.worker and g.worker.status == "crashed" then return "crashed" end
  if g.judge_fault then return "judge" end
  return nil
end

-- The worker's result from a supervisor's report; a dead worker becomes a
-- verdict (died_before: this is the second run of one whose worker died).
local function gpu_result(pool, h, deadline, died_before)
  local rep = h.report
  if rep.status == "finished" then
    local r = rep.result
    if r.unfit then pool:retire(h.slot) end
    r.device_index = h.device
    return r
  end
  local r = { stages = {}, worker = { status = rep.status, pid = rep.worker_pid, output_tail = rep.output_tail,
    stage = rep.stage, stage_seconds = rep.stage_seconds, stage_expired = rep.stage_expired }, stage = rep.stage }
  if rep.status == "timeout" then
    if rep.stage_expired then
      verdicts.give(r, "timeout", { kind = "stage", stage = rep.stage, seconds = rep.stage_seconds })
    else
      verdicts.give(r, "timeout", { kind = "deadline", seconds = deadline, stage = rep.stage })
    end
  elseif rep.status == "crashed" then
    verdicts.give(r, "runtime_error", { kind = "crashed", signal = rep.signal_name or rep.signal, stage = rep.stage,
      again = died_before })
  elseif rep.status == "exited" then
    verdicts.give(r, "runtime_error", { kind = "exited", code = rep.exit_code, stage = rep.stage })
  else
    -- A job that raised may have left its context in any state: the next
    -- job gets a new worker.
    pool:retire(h.slot)
    local detail = { kind = "worker", message = verdicts.first_line(rep.error) }
    r.judge_fault = { detail = detail, trace = rep.traceback }
    verdicts.give(r, "unknown", detail)
  end
  return r
end

-- ---- record ------------------------------------------------------------------

local function finite(v) return type(v) == "number" and v == v and math.abs(v) ~= math.huge end

-- The measurements of a result, as store rows {name = {value=, unit=}}.
local function measurements(result)
  local meas = {}
  local function put(name, value, unit)
    if finite(value) then meas[name] = { value = value, unit = unit } end
  end
  local tm = result.stages.timing
  if tm and tm.candidate then
    local c = tm.candidate
    put("median_us", c.median, "us"); put("mean_us", c.mean, "us"); put("min_us", c.min, "us")
    put("p10_us", c.p10, "us"); put("p90_us", c.p90, "us")
    put("ci_low_us", c.ci_low, "us"); put("ci_high_us", c.ci_high, "us")
    put("samples", c.n, "count"); put("tflops", c.tflops, "TFLOP/s")
    if tm.baseline then
      put("baseline_median_us", tm.baseline.median, "us")
      put("speedup", tm.speedup, "x")
    end
    put("speedup_tf32", tm.speedup_tf32, "x")
    -- The physical floor, for the speed-of-light fraction (floor / median).
    if tm.floor and (tm.floor.us or 0) > 0 then put("floor_us", tm.floor.us, "us") end
  end
  local ps = result.stages.instructions
  if ps and ps.status == "ok" then
    local fl, p = ps.flops or {}, ps.profile or {}
    put("flops_hgmma", fl.hgmma, "FLOP"); put("flops_hmma", fl.hmma, "FLOP"); put("flops_utc", fl.utc, "FLOP")
    put("flops_other", fl.other, "FLOP"); put("tensor_flop_frac", fl.frac and fl.frac.tensor, "fraction")
    for name, f in pairs(ps.families or {}) do put("inst_" .. (name:gsub("%.", "_")), f.count, "count") end
    put("verified_instructions", ps.verified and 1 or 0, "bool")
    put("sm_pct", p.sm_pct, "%"); put("mem_pct", p.mem_pct, "%"); put("dram_pct", p.dram_pct, "%")
    put("occupancy_pct", p.occupancy_pct, "%"); put("tensor_pipe_pct", p.tensor_pct, "%")
    put("dram_bytes", p.dram_bytes, "B"); put("dram_ratio", p.dram_ratio, "x"); put("waves", p.waves, "count")
  end
  -- The PTX census ("present in source") and the static SASS census
  -- ("present in machine code") travel with every evaluation.
  local b = result.stages.build
  for name, n in pairs(b and b.sass and b.sass.families or {}) do
    put("sass_static_" .. (name:gsub("%.", "_")), n, "count")
  end
  for fam, n in pairs(b and b.census or {}) do
    if fam ~= "instructions" then put("ptx_" .. (fam:gsub("[%.:]", "_")), n, "count") end
  end
  if b and b.kernels and b.kernels[1] then put("registers", b.kernels[1].registers, "count") end
  local mem = result.stages.load and result.stages.load.memory
  if mem then put("device_memory_bytes", mem.total, "B") end
  return meas
end

-- The record stage: the candidate (stored once, here) and one evaluation row.
function Session:_record(run, key)
  local db, result, c = self.db, run.result, run.cand
  if not db then return end
  local cand, cand_hash = db:put_candidate { language = c.lang, code = c.code, plan = c.plan, source = c.source }
  local compile = require("klab.store.records").put_compile(db, cand, cand_hash, run.arch, result.stages.build)
  local env
  if result.env then
    -- One environment row per worker: the device and libraries it ran with.
    self.envs = self.envs or {}
    local pid = result.worker_pid or 0
    env = self.envs[pid]
    if not env then
      local e = {}
      for k, v in pairs(result.env) do e[k] = v end
      e.extra = { worker_pid = pid }
      env = db:put_environment(e)
      self.envs[pid] = env
    end
  end
  local tm = result.stages.timing
  -- A result the canonical encoder refuses is a bug in klab; it is kept
  -- visible in the row rather than stopping a sweep.
  local ok, detail = pcall(json.encode, result, { nonfinite = true })
  if not ok then detail = json.encode { verdict = result.verdict, reason = result.reason, detail_error = detail } end
  db:record_evaluation {
    key = key, candidate = cand, task = run.task.name, arch = run.arch, verdict = result.verdict,
    reason = result.reason, env = env, timing_method = tm and tm.method, detail = detail,
    measurements = measurements(result), replace = true, compile = compile,
  }
end

-- A stored result answers again when it is a measurement (not unknown) of
-- the same thing on the same kind of machine (the key says so).
local function reusable(prev)
  return type(prev) == "table" and prev.verdict ~= nil and prev.verdict ~= "unknown" and
    verdicts.valid(prev.verdict)
end

-- ---- the pipeline ----------------------------------------------------------------

local function new_run(t, c, arch, opts)
  return { task = t, cand = c, arch = arch, opts = opts, seed = opts.seed,
    result = { task = t.name, candidate = c.hash, name = c.name, arch = arch, seed = opts.seed, stages = {},
               klab_version = KLAB_VERSION } }
end

-- build and plan; true when the worker's stages should run.
local function caller_stages(run)
  for _, name in ipairs { "build", "plan" } do
    local ok = prepare[name](run)
    check_contract(name, run.result)
    if not ok then return false end
  end
  return true
end

local function merge(result, g)
  for k, v in pairs(g.stages or {}) do result.stages[k] = v end
  result.device, result.worker_pid, result.env = g.device, g.worker_pid, g.env
  result.worker_seconds = g.worker_seconds
  result.worker = g.worker
  result.rerun_alone = g.rerun_alone
  result.verdict, result.reason = g.verdict, g.reason
end

-- ---- submitting, advancing, collecting --------------------------------------

-- Queues an evaluation; returns its ticket (or nil, why when the task or
-- candidate cannot be found). A stored result that may answer again is
-- ready at once.
function Session:submit(t, c, opts)
  opts = opts or {}
  t, c = resolve(t, c)
  if not t then return nil, c end
  local key_opts = opts
  local serr
  opts, serr = with_seed(opts)
  if not opts then return nil, serr end
  local arch = opts.arch or self.opts.arch or "sm_90a"
  local item = { ticket = self.next_ticket, opts = opts, t0 = sys.now() }
  self.next_ticket = self.next_ticket + 1
  self.items[item.ticket] = item
  item.stage_deadlines = check_stage_deadlines(opts.stage_deadlines or self.opts.stage_deadlines)
  item.run = new_run(t, c, arch, opts)
  item.state = "build"
  -- The store key names the machine: asked for now, answered while the
  -- build runs; the stored answer, when there is one, is looked up then.
  if self.db then
    item.keying = { t = t, c = c, arch = arch, opts = key_opts }
    self:_key(item)
  end
  return item.ticket
end

-- Gives item its store key once the machine is known (wait: waits for it),
-- and answers it from the store when a stored result may answer again.
-- Returns false while the key must wait.
function Session:_key(item, wait)
  local k = item.keying
  if not k then return true end
  local m = self:machine(not wait)
  if not m then return false end
  item.keying = nil
  item.key = key_of(k.t, k.c, k.arch, k.opts, m)
  if item.opts.force or item.state == "done" then return true end
  local done = self.db:evaluation_done(item.key)
  if done and done.detail then
    local ok, prev = pcall(json.decode, done.detail)
    if ok and reusable(prev) then
      prev.cached = true
      if item.handle then
        -- A build on a CPU worker: the item ends when it lands.
        item.answer = prev
      else
        prepare.cleanup(item.run)
        item.result, item.state, item.run = prev, "done", nil
      end
    end
  end
  return true
end

-- The caller's stages of an item: on a CPU worker when the pool has them
-- (the task and candidate travel as data; the worker compiles and plans and
-- sends the job back), else here.
function Session:_remote(item)
  return self.pool:has("cpu") and item.run.task.file ~= nil and not item.build_here
end

function Session:_build(item)
  local run = item.run
  if self:_remote(item) then
    local c = run.cand
    item.handle = self.pool:submit("cpu", { module = "klab.eval.prepare", fn = "remote", args = {
      task_file = run.task.file, task = run.task.name, arch = run.arch, opts = prepare.remote_opts(item.opts),
      cand = { code = c.code, lang = c.lang, plan = c.plan, name = c.name, source = c.source } } })
    item.state = "building"
    return
  end
  if caller_stages(run) then
    item.state = "ready"
  else
    self:_finish(item)
  end
end

-- The worker's stages: sanitizer first when asked, then a GPU worker
-- (preferring one that already holds the task's inputs and references).
function Session:_dispatch(item)
  local run = item.run
  run.job.opts.stage_deadlines = item.stage_deadlines
  run.job.stages = stages.worker()
  if item.opts.sanitize and not self:_sanitize(run) then return self:_finish(item) end
  item.handle = self.pool:submit("gpu", { module = "klab.eval.gpu", fn = "run", args = run.job },
    { deadline = item.opts.deadline or self.deadline, affinity = run.task.name })
  item.state = "running"
end

-- The record stage: the verdict when nothing else was found, the census, the
-- row in the store.
function Session:_finish(item)
  -- The store may answer instead (its key waited for the machine).
  self:_key(item, true)
  if item.state == "done" then return end
  local run = item.run
  local result = run.result
  prepare.cleanup(run)
  prepare.finish(run)
  if result.verdict == nil then verdicts.give(result, "passed", { kind = "evaluated" }) end
  result.seconds = sys.now() - item.t0
  -- What waits for a GPU is not a result: nothing to record.
  if item.key and not result.awaiting then self:_record(run, item.key) end
  item.result, item.state, item.run = result, "done", nil
end

-- The items in the order they were submitted.
function Session:_ordered()
  local list = {}
  for _, item in pairs(self.items) do list[#list + 1] = item end
  table.sort(list, function(a, b) return a.ticket < b.ticket end)
  return list
end

-- A finished job of the pool back on its item.
function Session:_landed(item, h)
  item.handle = nil
  if h.kind == "cpu" then
    local rep = h.report
    if item.answer then
      -- The store answered while the build ran: its files go.
      if rep.status == "finished" and rep.result.job then prepare.cleanup({ job = rep.result.job }) end
      item.result, item.state, item.run, item.answer = item.answer, "done", nil, nil
    elseif rep.status == "finished" then
      item.run.result, item.run.job = rep.result.result, rep.result.job
      if rep.result.job then
        prepare.census_start(item.run)
        item.state = "ready"
      else
        self:_finish(item)
      end
    else
      -- The CPU worker failed (a candidate cannot crash it: the compiler
      -- runs in a child of its own): build here instead.
      item.build_here, item.state = true, "build"
    end
  else
    local g = gpu_result(self.pool, h, item.opts.deadline or self.deadline, item.alone and item.alone.why == "crashed")
    local why = M.rerun_reason(g, h, item.alone ~= nil)
    if why then
      item.alone = { verdict = g.verdict, reason = g.reason, why = why }
      item.handle = self.pool:submit("gpu", h.job, { deadline = h.deadline, affinity = h.affinity, alone = h.device })
      return
    end
    if item.alone then
      g.rerun_alone = item.alone
      -- klab's own step failed again, alone: the reason says so.
      local jf = g.judge_fault
      if jf and g.verdict == "unknown" and item.alone.why == "judge" then
        jf.detail.again = true
        verdicts.give(g, "unknown", jf.detail)
      end
    end
    merge(item.run.result, g)
    if g.stage then check_contract(g.stage, item.run.result) end
    self:_finish(item)
  end
end

-- Moves items along in submission order, waiting up to timeout_s for a
-- worker when nothing could move. Builds go to the CPU workers as fast as
-- they take them; without CPU workers one build at a time runs here, and
-- only while fewer jobs wait for a GPU than there are GPU workers, so that a
-- GPU is never kept waiting by a long list of builds ahead of it.
function Session:_advance(timeout_s)
  local moved = false
  for _, item in ipairs(self:_ordered()) do
    if item.keying then self:_key(item) end
    if item.state == "build" then
      if self:_remote(item) or (not moved and self.pool:queued("gpu") < self.pool:slots("gpu")) then
        self:_build(item)
        moved = true
      end
    end
    -- The GPU stages wait for the key: the store may answer instead.
    if item.state == "ready" and self:_key(item, true) and item.state == "ready" then
      if item.opts.build_only then
        -- Built and plan-checked: the GPU stages are for later (klab judge).
        verdicts.give(item.run.result, "unknown", { kind = "awaiting" })
        item.run.result.awaiting = true
        self:_finish(item)
      else
        self:_dispatch(item)
      end
      moved = true
    end
  end
  self:_collect(moved and 0 or timeout_s)
end

-- Polls the pool and hands every finished job to its item; a job that is
-- no item's (a baseline check's) keeps its report on its handle.
function Session:_collect(timeout_s)
  local by_handle = {}
  for _, item in pairs(self.items) do
    if item.handle then by_handle[item.handle] = item end
  end
  for _, h in ipairs(self.pool:poll(timeout_s)) do
    local item = by_handle[h]
    if item then self:_landed(item, h) end
  end
end

-- The items that are done (each {ticket=, result=}), taken out of the
-- session; waits up to timeout_s for one when none is.
function Session:poll(timeout_s)
  local out = {}
  local function take()
    for ticket, item in pairs(self.items) do
      if item.state == "done" then
        out[#out + 1] = { ticket = ticket, result = item.result }
        self.items[ticket] = nil
      end
    end
  end
  take()
  if #out == 0 then
    self:_advance(timeout_s or 0)
    take()
  end
  table.sort(out, function(a, b) return a.ticket < b.ticket end)
  return out
end

-- Waits for one ticket (at most timeout_s seconds when given: then nil
-- while it is still under way); the others go on meanwhile and stay to be
-- polled.
function Session:wait(ticket, timeout_s)
  local item = self.items[ticket]
  if not item then error("klab.eval: no evaluation with ticket " .. tostring(ticket), 2) end
  local t0 = sys.now()
  while item.state ~= "done" do
    local left = timeout_s and (timeout_s - (sys.now() - t0)) or 1.0
    if left <= 0 then return nil end
    self:_advance(math.min(left, 1.0))
  end
  self.items[ticket] = nil
  return item.result
end

function Session:pending()
  local n = 0
  for _ in pairs(self.items) do n = n + 1 end
  return n
end

function Session:evaluate(t, c, opts)
  local ticket, err = self:submit(t, c, opts)
  if not ticket then return nil, err end
  return self:wait(ticket)
end

-- compute-sanitizer memcheck, twice, as PTXBench does before timing
-- (klab.eval.sanitizer). False stops the evaluation.
function Session:_sanitize(run)
  local san = require("klab.eval.sanitizer").run(run.job, self.opts.env)
  run.result.stages.sanitizer = san
  if san.status == "ok" and (san.errors or 0) > 0 then
    verdicts.give(run.result, "runtime_error", { kind = "sanitizer", errors = san.errors,
      first = (san.first or {})[1] })
    return false
  end
  return true
end

-- Chosen worker stages in this process: the caller's stages, then
-- klab.eval.gpu.run with opts.stages (default: the worker's stages) and
-- opts.runs. Calls CUDA here, so never from a supervisor that will fork
-- workers.
function M.run_local(t, c, opts)
  opts = opts or {}
  local err
  if c == nil then
    t, err = resolve(t, "")
    if t == nil then return nil, err end
  else
    t, c = resolve(t, c)
    if not t then return nil, c end
  end
  local arch = opts.arch
  if not arch then
    local gpu = require "klab.gpu"
    local props = gpu.available() and gpu.device(0)
    arch = props and props.arch or "sm_90a"
  end
  local serr
  opts, serr = with_seed(opts)
  if not opts then return nil, serr end
  local run = new_run(t, c or { name = "baseline" }, arch, opts)
  run.cand = c
  local result = run.result
  local t0 = sys.now()
  if caller_stages(run) then
    run.job.stages = opts.stages or stages.worker()
    run.job.opts.runs = opts.runs
    run.job.opts.sass_executed = opts.sass_executed
    run.job.opts.budget_s = run.job.opts.budget_s or opts.budget_s
    run.job.opts.methods = opts.methods
    local g = require("klab.eval.gpu").run(run.job)
    merge(result, g)
    result.runs, result.run_seconds = g.runs, g.seconds
  end
  prepare.cleanup(run)
  prepare.finish(run)
  result.seconds = sys.now() - t0
  return result
end

-- Checks a task's baseline against its reference and times it alone
-- (opts.budget_s), in this session's worker: {verdict = "passed" |
-- "incorrect" | "unknown", reason=, stages = {baseline = {info=, check=,
-- timing=}}}.
function Session:check_baseline(t, opts)
  opts = opts or {}
  if type(t) == "string" then
    local tt, err = resolve(t)
    if not tt then return nil, err end
    t = tt
  end
  local arch = opts.arch or self.opts.arch or "sm_90a"
  local serr
  opts, serr = with_seed(opts)
  if not opts then return nil, serr end
  local run = new_run(t, { name = "baseline" }, arch, opts)
  run.cand = nil
  if caller_stages(run) then
    run.job.stages = { "baseline" }
    run.job.opts.budget_s = opts.budget_s or 0
    local h = self.pool:submit("gpu", { module = "klab.eval.gpu", fn = "run", args = run.job },
      { deadline = opts.deadline or self.deadline, affinity = t.name })
    -- Evaluations submitted before go on meanwhile and land on their items.
    while not h.report do self:_collect(1.0) end
    merge(run.result, gpu_result(self.pool, h, opts.deadline or self.deadline))
  end
  prepare.cleanup(run)
  return run.result
end

-- Runs a candidate in this process, `runs` times, with no profiler and no
-- timer of klab's own: for ncu or compute-sanitizer wrapped around klab.
function M.replay(t, c, opts)
  opts = opts or {}
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.stages, o.runs, o.timing = { "load", "replay" }, opts.runs or 1, false
  return M.run_local(t, c, o)
end

function M.evaluate(t, c, opts)
  local s <close> = M.session(opts)
  return s:evaluate(t, c, opts)
end

-- The stages with limits of their own, for the command line.
M.STAGES = stages.timed()
M.unknown_stage = stages.unknown
M.verdicts = verdicts
return M
