-- klab.eval.correctness_timing: the correctness stage's runs timed, and the
-- hopeless rule decided from them (docs/timing.md, "Decided from the
-- correctness runs"). Each run of a correctness trial is a run of the
-- candidate on fresh inputs: timed as a timed sample is (klab.timing's
-- session: persisting L2 lines reset, the L2 flushed, its own launches
-- checked and timed by CUPTI), its durations are asked about against the
-- baseline's median the worker keeps for the task variant and the card,
-- with a stopping rule of the registry (host/measure/stop.h:
-- hopeless_from_correctness). When the rule decides, the timing stage does
-- not run and the result reads "< 0.5x" with the measured ratio and its
-- bound. Nothing a candidate does gains from it: looking slow here only
-- earns a "< 0.5x".
--
--   ct.choose(opts, proof, timed) -> the rules an evaluation's options choose, as its job carries them
--                                    ({{rule = "hopeless_from_correctness", params = {threshold = 0.5}}}), or
--                                    nil: its correctness runs are not timed (the full proof, no timing)
--   ct.rules(job)                 -> the job's rules in klab.timing's form ({{"hopeless_from_correctness",
--                                    threshold = 0.5}}), or nil
--   ct.kept(now)                  -> a store of baseline measurements by key (now: the clock, sys.now by
--                                    default): kept:get(key, clock_mhz) -> entry | nil, why ("first",
--                                    "age", "clock"); kept:put(key, entry)
--   ct.decide(rules, samples, entry [, confidence]) -> {decided = rule name | nil, stop=, speedup=,
--                                    speedup_upper=, speedup_ci=}
--   ct.start(run)                 -> a timer (to-be-closed): timer:run(set) -> true | nil, reason, code,
--                                    detail, whose ("judge": klab's own step failed)
--   ct.finish(run, timer, sets, runner) -> the record (stages.correctness.timed) after the trials passed, or
--                                    nil when no rule was chosen; runner() -> the task's baseline | nil, why

local timing = require "klab.timing"
local sys = require "klab.sys"
local loaded = require "klab.eval.loaded"
local S = require("klab.eval.worker_state").S

local M = {}

-- A kept baseline is measured again when older than this (seconds), or
-- when a run's SM clock reading differs from the one it was measured at.
M.MAX_AGE_S = 600
-- The baseline's samples when it is measured (more than the candidate's
-- few runs: its interval's upper end is what the bound divides).
M.BASELINE_SAMPLES = 20
M.BASELINE_BUDGET_S = 1
M.RULE = "hopeless_from_correctness"

-- The rules an evaluation chose (job.correctness_stop, made by the plan
-- stage with M.choose), in klab.timing's form ({{"name", param = value}}),
-- or nil when its correctness runs are not timed. The job carries them as
-- {rule =, params = {...}} (plain data, as a result records a rule).
function M.rules(job)
  local list = job.correctness_stop
  if not list then return nil end
  local out = {}
  for i, c in ipairs(list) do
    local r = { c.rule }
    for k, v in pairs(c.params or {}) do r[k] = v end
    out[i] = r
  end
  return out
end

-- The choice from an evaluation's options, as the job carries it: the full
-- proof keeps the old pipeline (nothing timed, the timing stage always
-- runs); no timing stage, nothing to decide; else
-- timing_opts.correctness_stop when given (klab.timing's form; an empty
-- list: none), else the rule at the hopeless threshold (0: none).
function M.choose(opts, proof, timed)
  if proof == "full" or not timed then return nil end
  local t = opts.timing_opts or {}
  local rules = t.correctness_stop
  if rules == nil then
    local threshold = t.hopeless or 0.5
    if threshold <= 0 then return nil end
    rules = { { M.RULE, threshold = threshold } }
  end
  if type(rules) ~= "table" then error("timing_opts.correctness_stop must be a list of rules", 3) end
  local out = {}
  for i, r in ipairs(rules) do
    if type(r) ~= "table" or type(r[1]) ~= "string" then
      error(("timing_opts.correctness_stop[%d] must be {\"rule name\", parameter = value, ...}"):format(i), 3)
    end
    local params = {}
    for k, v in pairs(r) do if k ~= 1 then params[k] = v end end
    out[i] = { rule = r[1], params = params }
  end
  return #out > 0 and out or nil
end

-- ---- the kept baselines ----------------------------------------------------

local Kept = {}
Kept.__index = Kept

-- now: the clock (seconds; sys.now unless a test's).
function M.kept(now)
  return setmetatable({ now = now or sys.now, by = {} }, Kept)
end

-- The entry of key when it may still serve a run whose clock reading is
-- clock_mhz (nil: unknown); else nil and why it must be measured.
function Kept:get(key, clock_mhz)
  local e = self.by[key]
  if not e then return nil, "first" end
  if self.now() - e.at > M.MAX_AGE_S then return nil, "age" end
  if clock_mhz and e.clock_mhz and clock_mhz ~= e.clock_mhz then return nil, "clock" end
  return e
end

-- entry = {samples = {...}, clock_mhz=, method=, ...}; stamped now.
function Kept:put(key, entry)
  entry.at = self.now()
  self.by[key] = entry
  return entry
end

-- ---- the decision -----------------------------------------------------------

-- The rules asked once about the candidate's run durations (samples, µs)
-- against the kept baseline's (entry.samples).
function M.decide(rules, samples, entry, confidence)
  local d = timing.decide({ stop = rules, confidence = confidence }, samples, entry.samples)
  return { decided = d.stop_reason, stop = d.stop, speedup = d.speedup, speedup_upper = d.speedup_upper,
    speedup_ci = d.speedup_ci }
end

-- ---- on the GPU ---------------------------------------------------------------

local Timer = {}
Timer.__index = Timer

local function close(self)
  local s = self.session
  self.session = nil
  if s then return s:close() end
end
Timer.__close = close

function M.start(run)
  local rules = M.rules(run.job)
  local self = setmetatable({ rules = rules, runs = 0, run_ctx = run }, Timer)
  if not rules then return self end
  if #run.c.launches == 0 then
    self.void = "the plan makes no launch"
    return self
  end
  local s, err = timing.session(S.ctx, { judge = S.judge, max_samples = #run.job.trials + 2 })
  if not s then self.void = "no session: " .. tostring(err) else self.session = s end
  return self
end

-- One run of the candidate on set, timed when the timer holds a session;
-- the result as loaded.run and a wait give it, with whose fault a failure
-- is ("judge" when one of klab's own steps before the run failed).
function Timer:run(set)
  local run = self.run_ctx
  if not self.session then
    local ok, err, code, detail = loaded.run(run, set)
    if ok then ok, err, code, detail = S.ctx:sync() end
    return ok, err, code, detail
  end
  local entered, failed
  local us, err, code = self.session:run(function()
    entered = true
    local ok, e, c, d = loaded.run(run, set)
    if not ok then
      failed = { e, c, d }
      return nil, tostring(e), c
    end
    return #run.c.launches
  end)
  if us then
    self.runs = self.runs + 1
    return true
  end
  if failed then return nil, failed[1], failed[2], failed[3] end
  if code == "EREJECT" or code == "EPROTO" then
    -- The run happened and was waited for; its records prove nothing (the
    -- timing stage, which is not skipped now, judges its launches).
    self.void = tostring(err)
    close(self)
    return true
  end
  if entered then return nil, err, code, { sticky = S.ctx:sticky() } end
  return nil, err, code, nil, "judge"
end

-- The card a worker measures on: its GPU's identity.
local function card()
  return S.env and S.env.gpu_uuid or (S.props and S.props.uuid_str) or "gpu"
end

-- The baseline timed as the candidate's runs were (flush, CUPTI), over the
-- evaluation's input sets in turn: the kept entry, or nil, why.
local function measure_baseline(base, sets)
  local cur = sets[1]
  -- A raise in the baseline's run is klab's: no decision, and the timing
  -- stage, which then runs, meets it again and says so.
  local ok, r, err = pcall(timing.measure, S.ctx, { run = function() return base.run(cur.bufs) end,
    before = function(_, sample)
      cur = sets[(sample - 1) % #sets + 1]
      return false
    end,
    judge = S.judge, stop = {}, max_samples = M.BASELINE_SAMPLES, budget_s = M.BASELINE_BUDGET_S })
  if not ok then return nil, "the baseline's timing: " .. tostring(r) end
  if not r then return nil, "the baseline's timing: " .. tostring(err) end
  return { samples = r.candidate.samples, median_us = r.candidate.median, n = r.candidate.n, method = r.method,
    clock_mhz = r.clock_after_mhz }
end

-- After every trial passed: the session's result, the kept baseline (timed
-- again when needed; runner() gives the task's baseline, the timing
-- stage's), and the rules' decision, as the record st.timed.
function M.finish(run, timer, sets, runner)
  if not timer.rules then return nil end
  local rec = { rules = timer.rules, not_decided = timer.void }
  local r = close(timer)
  if r then
    rec.method, rec.runs, rec.clock_mhz, rec.flush_bytes = r.method, r.candidate.n, r.clock_after_mhz, r.flush_bytes
    rec.samples = r.candidate.samples
    rec.median_us, rec.min_us = r.candidate.median, r.candidate.min
  end
  if rec.not_decided then return rec end
  -- CUPTI's durations on both sides, or no decision: an event pair holds
  -- each launch's overhead, more for a plan of many launches.
  if rec.method ~= "cupti" then
    rec.not_decided = "the runs were timed with " .. tostring(rec.method) .. " (" .. tostring(r and r.fallback) .. ")"
    return rec
  end
  local base, berr = runner()
  if not base or not base.run then
    rec.not_decided = "no baseline: " .. tostring(berr)
    return rec
  end
  -- Only the sets the worker still holds: one freed since (an input a
  -- kernel modified, or device memory made room) has no buffers left.
  local live = {}
  for _, set in ipairs(sets) do
    if run.ts.inputs[set.key] == set then live[#live + 1] = set end
  end
  S.kept_baselines = S.kept_baselines or M.kept()
  -- The task variant, the card, and which baseline runs (a library's call,
  -- or the faster kernel the task ships beside it).
  local key = table.concat({ run.job.task.name, card(), tostring(base.choice and base.choice.chosen or "library") }, "\0")
  local entry, why = S.kept_baselines:get(key, rec.clock_mhz)
  if not entry then
    local e, merr
    if #live == 0 then merr = "no input set is held for the baseline's runs" else e, merr = measure_baseline(base, live) end
    if not e then
      rec.not_decided = merr
      return rec
    end
    entry = S.kept_baselines:put(key, e)
    rec.baseline_measured = why
  end
  rec.baseline = { median_us = entry.median_us, n = entry.n, clock_mhz = entry.clock_mhz,
    age_s = S.kept_baselines.now() - entry.at, method = entry.method }
  if entry.method ~= "cupti" then
    rec.not_decided = "the baseline was timed with " .. tostring(entry.method)
    return rec
  end
  local d = M.decide(timer.rules, rec.samples, entry)
  rec.decided, rec.stop, rec.speedup, rec.speedup_upper, rec.speedup_ci = d.decided, d.stop, d.speedup,
    d.speedup_upper, d.speedup_ci
  rec.baseline_info, rec.baseline_mode, rec.baseline_choice = base.info, base.mode, base.choice
  return rec
end

return M
