-- klab.eval.gpu: the worker's loop over the stages of an evaluation that
-- run on the GPU, inside a worker process (or, for `klab replay` and
-- profiling runs, in the caller's own process through klab.eval.run_local).
--
--   gpu.run(job)       -> result: runs job.stages (load, correctness,
--                         instructions, timing; or load, replay; or
--                         baseline) in order, each through the stage
--                         registry (klab.eval.stages)
--   gpu.describe()     -> {gpu_name=, driver_version=, arch=} | {none = why}
--
-- The job (klab.eval.prepare builds it): {task = spec, seed =, trials = {...},
-- candidate = {cubin_path=, launches=, tensormaps=, workspace=}, reference =
-- {cubin_path=, full=, sampled=, derive=, derived=, sample=}, timing=bool,
-- stages = {...}, opts = {...}}. Every outcome is a result table, never an
-- error: {verdict=, reason=, stage=, stages={...}, device=, env=, unfit=};
-- unfit asks the supervisor to replace the worker (a sticky CUDA error
-- poisons the process). The worker keeps the context, the judge kernels
-- and its tasks' state across jobs (klab.eval.worker_state,
-- klab.eval.inputs). Nothing here names a task family.

local sys = require "klab.sys"
local profile = require "klab.eval.profile"
local serve = require "klab.proc.serve"
local stages = require "klab.eval.stages"
local verdicts = require "klab.eval.verdict"
local state = require "klab.eval.worker_state"

local M = {}

M.describe = state.describe

-- Workers that share a GPU (KLAB_GPU_LOCK names it) take turns on the
-- stages that need the device to themselves: the profiler's counters and
-- the timed runs (the correctness runs too, when they are timed). The lock
-- waits outside the stage's own limit.
local function device_lock(name, job)
  local key = os.getenv("KLAB_GPU_LOCK")
  local row = stages.get(name)
  local exclusive = row.exclusive or (row.exclusive_if and job[row.exclusive_if] ~= nil)
  if not exclusive or not key or key == "" then return nil end
  local dir = os.getenv("TMPDIR")
  if not dir or dir == "" then dir = "/tmp" end
  -- One slot per device in one lock file; the kernel lets go when the
  -- holder dies, however it dies.
  return require("klab.fs").lock(dir .. "/klab-gpu.lock", key, "pid " .. sys.getpid(), true)
end

function M.run(job)
  local t0 = sys.now()
  local res = { stages = {}, worker_pid = sys.getpid() }
  local run = { job = job, res = res }
  -- Image paths name modules within one job only (device.task_module).
  state.S.module_paths = {}
  local opts = job.opts or {}
  local list = job.stages or stages.worker()
  -- A name the registry does not hold, or a stage before one it needs,
  -- never runs.
  stages.check_order(list)
  for _, name in ipairs(list) do
    if name == "timing" and job.timing == false then break end
    local lock <close> = device_lock(name, job)
    serve.stage(name, stages.limit(name, opts) or 0)
    local s0 = sys.now()
    stages.run(name, "worker", run)
    -- Every stage that ran says how long it took, one that ended in a
    -- verdict too (a stage's own figure, where it keeps one, stands).
    local st = res.stages[name]
    if type(st) == "table" and st.seconds == nil then st.seconds = sys.now() - s0 end
    if res.verdict then
      res.stage = name
      break
    end
  end
  local ps, tm = res.stages.instructions, res.stages.timing
  if ps and tm and tm.candidate and tm.candidate.median then
    profile.summarize(ps, { duration_us = tm.candidate.median, source = tm.method })
  end
  -- A CUDA error that poisons the context (an illegal address seen by any
  -- call, not only a launch) leaves this worker unfit for the next job.
  local S = state.S
  if S.ctx and res.verdict and not verdicts.passed(res.verdict) then
    local sticky = S.ctx:sticky()
    if sticky then res.unfit = true end
  end
  -- A finding of the instruction stage (kept while timing ran) stands
  -- unless a later stage found something that ranks higher.
  local f = run.finding
  if f and (not res.verdict or verdicts.rank(f.verdict) < verdicts.rank(res.verdict)) then
    res.verdict, res.reason, res.stage = f.verdict, f.reason, f.stage
  end
  -- A module is unloaded after use; the worker keeps the rest.
  if run.c and not res.unfit then require("klab.eval.loaded").unload(run.c) end
  -- The worker's own seconds: the stages and what lies between them.
  res.worker_seconds = sys.now() - t0
  return res
end

return M
