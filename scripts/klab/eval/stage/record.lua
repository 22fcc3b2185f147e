-- The record stage (klab.eval.stages): the verdict when no other stage
-- gave one, and the evaluation's one row in the store: the candidate
-- (stored once), the environment of the worker that measured it, the
-- result, and every measurement the stages declare, each with the unit its
-- declaration gives.
--
--   record.run(run)           run.store = {db=, key=, envs=} (nil: nothing is written)
--   record.rows(result)       -> the measurement rows {name = {value=, unit=}}

local json = require "klab.json"
local stages = require "klab.eval.stages"
local verdicts = require "klab.eval.verdict"

local M = {}

local function finite(v) return type(v) == "number" and v == v and math.abs(v) ~= math.huge end

-- What a stage's measurements(st, put) calls: a name its own row does not
-- declare is a bug in klab, never a row in the store.
local function put_for(stage, meas)
  return function(name, value)
    local d = stages.measurement(name)
    if not d or d.stage ~= stage then
      error(("klab.eval: the %s stage records measurement %s, which its row in klab.eval.stages does not declare")
        :format(stage, tostring(name)), 2)
    end
    if finite(value) then meas[name] = { value = value, unit = d.unit } end
  end
end

function M.rows(result)
  local meas = {}
  for _, s in ipairs(stages.LIST) do
    local st = result.stages[s.name]
    if s.measures and type(st) == "table" then stages.code(s.name).measurements(st, put_for(s.name, meas)) end
  end
  return meas
end

-- One environment row per worker: the device and libraries it ran with
-- (envs: the session's, by worker pid).
local function environment(db, result, envs)
  if not result.env then return nil end
  local pid = result.worker_pid or 0
  if not envs[pid] then
    local e = {}
    for k, v in pairs(result.env) do e[k] = v end
    e.extra = { worker_pid = pid }
    envs[pid] = db:put_environment(e)
  end
  return envs[pid]
end

local function write(store, run)
  local db, result, c = store.db, run.result, run.cand
  local cand, cand_hash = db:put_candidate { language = c.lang, code = c.code, plan = c.plan, source = c.source }
  local compile = require("klab.store.records").put_compile(db, cand, cand_hash, run.arch, result.stages.build)
  local env = environment(db, result, store.envs)
  local tm = result.stages.timing
  -- A result the canonical encoder refuses is a bug in klab; it is kept
  -- visible in the row rather than stopping a sweep.
  local ok, detail = pcall(json.encode, result, { nonfinite = true })
  if not ok then detail = json.encode { verdict = result.verdict, reason = result.reason, detail_error = detail } end
  db:record_evaluation {
    key = store.key, candidate = cand, task = run.task.name, arch = run.arch, verdict = result.verdict,
    reason = result.reason, env = env, timing_method = tm and tm.method, detail = detail,
    measurements = M.rows(result), replace = true, compile = compile,
  }
end

function M.run(run)
  local result = run.result
  if result.verdict == nil then verdicts.give(result, "passed", { kind = "evaluated" }) end
  -- What waits for a GPU is not a result: nothing to record.
  if run.store and not result.awaiting then write(run.store, run) end
  return true
end

return M
