-- klab.experiment.policy: selection policies, as Lua functions.
--
--   policy.first_correct(entries [, ctx])    -> entry or nil, why
--   policy.fastest_correct(entries [, ctx])  -> entry or nil, why
--   policy.fastest_verified(entries [, ctx]) -> entry or nil, why
--   policy.paired_gate{gate = 2 | {workloads}, min_speedup = 1.0, top = 3, pick = policy.fastest_correct}
--                                            -> a policy (table) with eval_set = "gate"
--   policy.resolve(p)   -> {select = fn, eval_set = "full"|"gate", name =} for a name, function or table
--   policy.NAMES        -> the built-in names ("first_correct", ...)
--
-- A policy is any function(entries, ctx) that returns one of the entries
-- (or nil and a reason). entries are turns, in trajectory then turn order:
--   {trajectory=, model=, task=, tag=, replica=, turn=, verdict=, reason=, speedup=, candidate=,
--    verified=, workloads={{name=, verdict=, speedup=, ...}}}
-- where speedup is the smallest over the workloads (present when every
-- workload passed and was timed) and verified is true when every workload's
-- instruction stage says the target instructions executed, false when one
-- says they did not, nil when unknown. ctx is {evaluate = function(entry,
-- set) -> summary, group =, target =}; evaluate runs the entry's candidate on
-- the task group's "full" (or "gate") workloads and returns {verdict=,
-- speedup=, workloads=} (evaluations are stored, so this is resumable).
-- Policies are used per trajectory (over its turns) and per group of
-- trajectories (best-of-N over replicas; experiment:select).

local verdicts = require "klab.eval.verdict"

local M = {}

local function passed(e) return verdicts.passed(e.verdict) end

function M.first_correct(entries)
  for _, e in ipairs(entries) do
    if passed(e) then return e end
  end
  return nil, "no correct turn"
end

local function fastest(entries, ok)
  local best
  for _, e in ipairs(entries) do
    if ok(e) then
      local s = e.speedup or -math.huge
      if not best or s > (best.speedup or -math.huge) then best = e end
    end
  end
  return best
end

function M.fastest_correct(entries)
  local e = fastest(entries, passed)
  if not e then return nil, "no correct turn" end
  return e
end

function M.fastest_verified(entries)
  local e = fastest(entries, function(x) return passed(x) and x.verified == true end)
  if not e then return nil, "no correct turn with verified target instructions" end
  return e
end

-- The contest paper's protocol: turns are evaluated on a few representative
-- workloads (the gate, with the baseline timed in the same run); the best
-- gate survivors, fastest first, get the full set, and the first that passes
-- every workload there is selected, with its full-set speedup.
function M.paired_gate(opts)
  opts = opts or {}
  local min = opts.min_speedup
  local top = opts.top or 3
  local pick = opts.pick
  local function select(entries, ctx)
    local survivors = {}
    for _, e in ipairs(entries) do
      if passed(e) and (not min or (e.speedup or 0) >= min) then survivors[#survivors + 1] = e end
    end
    if #survivors == 0 then
      return nil, min and ("no turn passed the gate at %gx"):format(min) or "no turn passed the gate"
    end
    if pick then
      local first = pick(survivors, ctx)
      if first then
        for i, e in ipairs(survivors) do
          if e == first then table.remove(survivors, i) break end
        end
        table.insert(survivors, 1, first)
      end
    else
      table.sort(survivors, function(a, b)
        if (a.speedup or 0) ~= (b.speedup or 0) then return (a.speedup or 0) > (b.speedup or 0) end
        return (a.turn or 0) < (b.turn or 0)
      end)
    end
    local why = "no gate survivor passed the full set"
    for i = 1, math.min(top, #survivors) do
      local e = survivors[i]
      local full = ctx.evaluate(e, "full")
      if verdicts.passed(full.verdict) then
        local out = {}
        for k, v in pairs(e) do out[k] = v end
        out.gate_speedup, out.speedup, out.full = e.speedup, full.speedup, full
        return out
      end
      why = ("the best gate survivor (turn %d) failed the full set: %s"):format(e.turn or 0, tostring(full.reason))
    end
    return nil, why
  end
  return { select = select, eval_set = "gate", name = "paired_gate", gate = opts.gate }
end

M.NAMES = { "first_correct", "fastest_correct", "fastest_verified", "paired_gate" }

function M.resolve(p)
  if p == nil then p = "fastest_correct" end
  if type(p) == "string" then
    if p == "paired_gate" then return M.paired_gate {} end
    local fn = M[p]
    if type(fn) ~= "function" or p == "resolve" or p == "paired_gate" then
      error("policy: unknown policy '" .. p .. "' (known: " .. table.concat(M.NAMES, ", ") .. ")", 2)
    end
    return { select = fn, eval_set = "full", name = p }
  end
  if type(p) == "function" then return { select = p, eval_set = "full", name = "user" } end
  if type(p) == "table" and type(p.select) == "function" then
    return { select = p.select, eval_set = p.eval_set or "full", name = p.name or "user", gate = p.gate }
  end
  error("policy: a policy is a name, a function or a table with select", 2)
end

return M
