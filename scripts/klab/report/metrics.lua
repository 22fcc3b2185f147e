-- klab.report.metrics: the numbers of a paper, computed from the result store.
--
-- Every function is deterministic: inputs are sorted, the bootstrap uses
-- its own seeded generator (splitmix64), never math.random. Definitions are
-- in docs/report.md; each function below repeats its own.
--
--   local metrics = require "klab.report.metrics"
--   local trajs = metrics.load(db [, {experiment = name}])
--   metrics.success(trajs, {limits = {1, 4, 8}})     -- correct / verified per model x task x arch
--   metrics.fast_p(trajs, {ps = {...}, verified = true})
--   metrics.kbv(trajs)                               -- geomean speedup, correctness, Fast@1
--   metrics.failure_mix(trajs)                       -- verdict shares per turn
--   metrics.best_by_turn(trajs)                      -- best speedup so far against the turn
--   metrics.pdetect(p, n)                            -- 1 - (1 - p)^n
--
-- A trajectory (as load returns it):
--   {id, experiment, model, task, tag, replica, arch, state, max_turns,
--    turns = {{turn, verdict, reason, speedup, verified = true|false|nil,
--              candidate, sol}, ...}}            (turns sorted by turn)
-- A turn is *correct* when its verdict counts as correct in the verdict list
-- (passed, and target_not_executed: correct code whose target instructions
-- did not run); *verified* when it is correct and its target instructions
-- were seen executing (turns.verified = 1). Unknown (NULL) is not verified.
--
-- What is not a result is not counted as one (docs/rules.md): a turn whose
-- verdict is in NOT_RESULT (unknown: a stage could not run, for example no
-- GPU; request_error: the model server never answered) is neither a success
-- nor a failure, and an unfinished trajectory (state running: the run
-- stopped before its last turn) has not failed. metrics.decided(trajs, L)
-- splits trajectories into those that count at turn limit L and the rest;
-- success does it per limit, the other rates take decided trajectories.

local M = {}
local verdicts = require "klab.eval.verdict"

M.DEFAULT_LIMITS = { 1, 4, 8 }

-- Turn verdicts that are not a result: nothing was measured.
M.NOT_RESULT = {}
for _, name in ipairs(verdicts.NAMES) do
  if not verdicts.measured(name) then M.NOT_RESULT[name] = true end
end
M.DEFAULT_SEED = require("klab.report.stats").DEFAULT_SEED
M.DEFAULT_B = require("klab.report.stats").DEFAULT_B
M.DEFAULT_LEVEL = require("klab.report.stats").DEFAULT_LEVEL

-- The statistics (klab.report.stats), under the names they always had here.
local stats = require "klab.report.stats"
for _, k in ipairs { "rng", "fnv1a", "geomean", "mean", "normal_quantile", "wilson", "bootstrap" } do M[k] = stats[k] end

-- ---- loading ------------------------------------------------------------

local records = require "klab.store.records"
local has_table = records.has_table
M.has_table = has_table

-- The measurements `names` of each evaluation of a candidate, in order.
local function per_evaluation(db, candidate, arch, names)
  local per, order = {}, {}
  for _, r in ipairs(records.candidate_measurements(db, candidate, arch, names)) do
    if not per[r.ev] then per[r.ev] = {} order[#order + 1] = r.ev end
    per[r.ev][r.name] = r.value
  end
  local out = {}
  for i, ev in ipairs(order) do out[i] = per[ev] end
  return out
end

-- A passed turn's speed-of-light fraction: the physical floor the timing
-- rules use (the task's FLOPs at the peak of the path it ran or its bytes
-- at DRAM bandwidth) over its median, the geometric mean over its
-- evaluations. The measurements are the timing stage's, named as the stage
-- registry declares them (klab.eval.stages raises for a name it does not).
local stages = require "klab.eval.stages"
local FLOOR, MEDIAN = stages.declared("floor_us"), stages.declared("median_us")
local function sol_of_turn(db, candidate, arch)
  if not candidate then return nil end
  local fr = {}
  for _, p in ipairs(per_evaluation(db, candidate, arch, { FLOOR, MEDIAN })) do
    if p[FLOOR] and p[MEDIAN] and p[MEDIAN] > 0 then fr[#fr + 1] = p[FLOOR] / p[MEDIAN] end
  end
  return M.geomean(fr)
end

-- A trajectory's architecture (a report_trajectories row): its
-- experiment's config.arch, else its evaluations', else "unknown".
function M.arch_of(db, r)
  if r.arch then return r.arch end
  local a = records.trajectory_archs(db, r.id)
  return a[1] and a[1].arch or "unknown"
end

-- load(db [, {experiment = name}]) -> list of trajectories (above), sorted
-- by arch, model, task, tag, replica, experiment. The architecture of a
-- trajectory is its experiment's config.arch; when the config has none,
-- the arch of the evaluations of its turns' candidates (turns.candidate =
-- candidates.hash -> evaluations.candidate_id), else "unknown". A store
-- without the experiment tables gives an empty list.
function M.load(db, opts)
  opts = opts or {}
  if not has_table(db, "trajectories") or not has_table(db, "turns") or not has_table(db, "experiments") then
    return {}
  end
  local rows = records.report_trajectories(db, opts.experiment)
  local by_id = {}
  for _, r in ipairs(rows) do
    r.turns = {}
    by_id[r.id] = r
  end
  local turns = records.turn_outcomes(db)
  for _, tu in ipairs(turns) do
    local tr = by_id[tu.trajectory_id]
    if tr then
      if tu.verified ~= nil then tu.verified = tu.verified == 1 end
      tu.trajectory_id = nil
      tr.turns[#tr.turns + 1] = tu
    end
  end
  for _, r in ipairs(rows) do
    r.arch = M.arch_of(db, r)
    r.max_turns = math.tointeger(r.max_turns) or r.max_turns
    for _, tu in ipairs(r.turns) do
      if verdicts.passed(tu.verdict) then
        local a = r.arch ~= "unknown" and r.arch or nil
        tu.sol = sol_of_turn(db, tu.candidate, a)
      end
    end
  end
  table.sort(rows, function(a, b)
    for _, f in ipairs { "arch", "model", "task", "tag", "replica", "experiment", "id" } do
      if a[f] ~= b[f] then return a[f] < b[f] end
    end
    return false
  end)
  return rows
end

-- ---- per trajectory -------------------------------------------------------

local function qualifies(tu, limit, verified)
  return tu.turn <= limit and verdicts.correct(tu.verdict) and (not verified or tu.verified == true)
end

-- correct(tr, limit [, verified]): whether the trajectory has at least one
-- correct turn (verified: correct and verified) among its first `limit`.
function M.correct(tr, limit, verified)
  for _, tu in ipairs(tr.turns) do
    if qualifies(tu, limit, verified) then return true end
  end
  return false
end

-- best(tr, limit [, verified]): the largest speedup among the qualifying
-- turns (as for correct) that have one; nil when there is none.
function M.best(tr, limit, verified)
  local b
  for _, tu in ipairs(tr.turns) do
    if qualifies(tu, limit, verified) and tu.speedup and (not b or tu.speedup > b) then b = tu.speedup end
  end
  return b
end

-- The turn that gives best (first one on ties), for the memory numbers.
local function best_turn(tr, limit, verified)
  local b
  for _, tu in ipairs(tr.turns) do
    if qualifies(tu, limit, verified) and tu.speedup and (not b or tu.speedup > b.speedup) then b = tu end
  end
  return b
end

-- undecided(tr, limit) -> nil when the trajectory counts at this turn
-- limit, else why not: "not measured" when it has no correct turn within
-- the limit and one of those turns is not a result (NOT_RESULT), or
-- "unfinished" when it has no correct turn, was not finished (state is not
-- done) and has fewer turns than the limit.
function M.undecided(tr, limit)
  if M.correct(tr, limit) then return nil end
  local last = 0
  for _, tu in ipairs(tr.turns) do
    if tu.turn <= limit then
      if M.NOT_RESULT[tu.verdict] then return "not measured" end
      last = math.max(last, tu.turn)
    end
  end
  if tr.state ~= nil and tr.state ~= "done" and last < limit then return "unfinished" end
  return nil
end

-- decided(trajs, limit) -> the trajectories that count at this limit (in
-- order), and {["not measured"] = n, unfinished = n} for the rest.
function M.decided(trajs, limit)
  local out, left = {}, { ["not measured"] = 0, unfinished = 0 }
  for _, tr in ipairs(trajs) do
    local why = M.undecided(tr, limit)
    if why then left[why] = left[why] + 1 else out[#out + 1] = tr end
  end
  return out, left
end

-- ---- grouping --------------------------------------------------------------

-- group(trajs, fields) -> list of {key = "a\0b", <field> = value..., items = {...}}
-- in the sorted order of the field values.
function M.group(trajs, fields)
  local map, list = {}, {}
  for _, tr in ipairs(trajs) do
    local parts = {}
    for i, f in ipairs(fields) do parts[i] = tostring(tr[f]) end
    local k = table.concat(parts, "\0")
    local g = map[k]
    if not g then
      g = { key = k, items = {} }
      for _, f in ipairs(fields) do g[f] = tr[f] end
      map[k] = g
      list[#list + 1] = g
    end
    g.items[#g.items + 1] = tr
  end
  table.sort(list, function(a, b)
    for _, f in ipairs(fields) do
      local x, y = tostring(a[f]), tostring(b[f])
      if x ~= y then return x < y end
    end
    return false
  end)
  return list
end

-- The largest number of turns any trajectory may have (the experiment's
-- turns setting, else the most turns stored).
function M.max_turns(trajs)
  local m = 0
  for _, tr in ipairs(trajs) do
    m = math.max(m, tonumber(tr.max_turns) or 0, #tr.turns)
    for _, tu in ipairs(tr.turns) do m = math.max(m, tu.turn) end
  end
  return m
end

-- The turn limits to report: those of `limits` (default 1, 4, 8) that do
-- not exceed max_turns, plus max_turns itself when it is not among them.
function M.limits(trajs, limits)
  local mt = M.max_turns(trajs)
  local out, seen = {}, {}
  for _, l in ipairs(limits or M.DEFAULT_LIMITS) do
    if l <= mt and not seen[l] then out[#out + 1] = l seen[l] = true end
  end
  if mt > 0 and not seen[mt] then out[#out + 1] = mt end
  table.sort(out)
  return out
end

local function boot_opts(opts, key)
  return { B = opts.B, seed = opts.seed, level = opts.level, key = key }
end

-- ---- 1. correct and verified rates, best speedup ---------------------------

-- success(trajs, {limits, B, seed, level}) -> rows, one per arch x model x
-- task x limit (M.limits over that group's trajectories): {arch, model,
-- task, limit, n (trajectories that count at the limit: decided), correct
-- (those with >= 1 correct turn within the limit), verified (>= 1 correct
-- and verified turn), not_measured, unfinished (trajectories left out, as
-- decided says), correct_rate, verified_rate, correct_ci = {lo, hi},
-- verified_ci (Wilson intervals over the counted trajectories; rates and
-- intervals nil when none counts), best (best_speedup of the group),
-- best_verified}.
function M.success(trajs, opts)
  opts = opts or {}
  local rows = {}
  for _, g in ipairs(M.group(trajs, { "arch", "model", "task" })) do
    for _, L in ipairs(M.limits(g.items, opts.limits)) do
      local items, left = M.decided(g.items, L)
      local n, c, v = #items, 0, 0
      local cf, vf = {}, {}
      for _, tr in ipairs(items) do
        cf[tr] = M.correct(tr, L) and 1 or 0
        vf[tr] = M.correct(tr, L, true) and 1 or 0
        c, v = c + cf[tr], v + vf[tr]
      end
      local ci = { M.wilson(c, n, opts.level), M.wilson(v, n, opts.level) }
      rows[#rows + 1] = {
        arch = g.arch, model = g.model, task = g.task, limit = L, n = n, correct = c, verified = v,
        not_measured = left["not measured"], unfinished = left.unfinished,
        correct_rate = n > 0 and c / n or nil, verified_rate = n > 0 and v / n or nil, correct_ci = ci[1],
        verified_ci = ci[2], best = M.best_speedup(g.items, L), best_verified = M.best_speedup(g.items, L, true),
      }
    end
  end
  return rows
end

-- best_speedup(trajs, limit [, verified]): the largest speedup of any
-- correct (verified) turn within the limit in any of the trajectories; nil
-- when none has one. (A maximum, not an estimate: no interval.)
function M.best_speedup(trajs, limit, verified)
  local b
  for _, tr in ipairs(trajs) do
    local x = M.best(tr, limit, verified)
    if x and (not b or x > b) then b = x end
  end
  return b
end

-- ---- 2. fast_p -----------------------------------------------------------

-- The default thresholds: 0 to pmax in steps of `step` (0.05), where pmax
-- is the largest best speedup rounded up to a quarter, at least 1.5.
function M.thresholds(trajs, limit, step)
  step = step or 0.05
  local top = 0
  for _, tr in ipairs(trajs) do top = math.max(top, M.best(tr, limit) or 0) end
  local pmax = math.max(3, math.ceil(top * 4) / 4)
  local ps = {}
  local n = math.floor(pmax / step + 0.5)
  for i = 0, n do ps[#ps + 1] = i * step end
  return ps
end

-- breakpoints(trajs, limit [, ps]) -> ps plus, for every trajectory's best
-- speedup (plain and verified) within ps's range, the first multiple of
-- 0.001 at or above it, sorted and without repeats: where a fast_p curve
-- drops, to a thousandth (a figure cannot show finer), and at most a few
-- thousand thresholds however many trajectories there are.
function M.breakpoints(trajs, limit, ps)
  ps = ps or M.thresholds(trajs, limit)
  local top = ps[#ps] or 0
  local seen, out = {}, {}
  local function add(x)
    if x and x <= top and not seen[x] then seen[x] = true out[#out + 1] = x end
  end
  local function add_best(b)
    if b then add(math.min(top, math.ceil(b * 1000 - 1e-9) / 1000)) end
  end
  for _, p in ipairs(ps) do add(p) end
  for _, tr in ipairs(trajs) do
    add_best(M.best(tr, limit))
    add_best(M.best(tr, limit, true))
  end
  table.sort(out)
  return out
end

-- fast_p(trajs, {ps, limit, verified, by, B, seed, level}) -> rows, one per
-- group of `by` (default {"arch", "model"}): {arch, model, n, verified,
-- limit, points = {{p, value, lo, hi}, ...}}. value is the share of the
-- group's trajectories (pooled over tasks) that have a correct (verified)
-- turn within the limit whose speedup is above p (strictly). A correct turn
-- with no measured speedup counts for no p. limit: the largest turn limit.
function M.fast_p(trajs, opts)
  opts = opts or {}
  local limit = opts.limit or M.max_turns(trajs)
  local ps = opts.ps or M.thresholds(trajs, limit)
  local by = opts.by or { "arch", "model" }
  local verified = opts.verified and true or false
  local rows = {}
  for _, g in ipairs(M.group(trajs, by)) do
    -- Thresholds in ascending order, and each trajectory's best once.
    local asc = {}
    for j = 1, #ps do asc[j] = j end
    table.sort(asc, function(a, b) return ps[a] < ps[b] end)
    local best_of = {}
    for _, tr in ipairs(g.items) do best_of[tr] = M.best(tr, limit, verified) or -math.huge end
    local function curve(sample)
      local bests = {}
      for i, tr in ipairs(sample) do bests[i] = best_of[tr] end
      table.sort(bests)
      local out, i, n = {}, 1, #bests
      for _, j in ipairs(asc) do
        while i <= n and not (bests[i] > ps[j]) do i = i + 1 end
        out[j] = (n - i + 1) / n
      end
      return out
    end
    local vals = curve(g.items)
    local n = #g.items
    local row = { n = n, verified = verified, limit = limit, points = {} }
    for _, f in ipairs(by) do row[f] = g[f] end
    -- Each point is a proportion of the group's trajectories: its Wilson interval.
    for j, p in ipairs(ps) do
      local ci = M.wilson(math.floor(vals[j] * n + 0.5), n, opts.level) or {}
      row.points[j] = { p = p, value = vals[j], lo = ci[1], hi = ci[2] }
    end
    rows[#rows + 1] = row
  end
  return rows
end

-- ---- 3. KernelBench-Verified: geomean speedup, correctness, Fast@1 ---------

-- The best-of-N summary of a list of strata (one per task, each a list of
-- trajectories): a problem (task) is correct when any of its trajectories
-- has a correct turn within the limit; its speedup is the best over them.
local function kbv_stat(strata, limit, verified, cache)
  local problems, correct, fast1 = #strata, 0, 0
  local speeds, sols = {}, {}
  for _, st in ipairs(strata) do
    local ok, best, bturn = false, nil, nil
    for _, tr in ipairs(st) do
      local c = cache[tr]
      if not c then
        c = { correct = M.correct(tr, limit, verified), bt = best_turn(tr, limit, verified) or false }
        cache[tr] = c
      end
      if c.correct then ok = true end
      local bt = c.bt
      if bt and (not best or bt.speedup > best) then best, bturn = bt.speedup, bt end
    end
    if ok then correct = correct + 1 end
    if best then
      speeds[#speeds + 1] = best
      if best > 1 then fast1 = fast1 + 1 end
      if bturn.sol then sols[#sols + 1] = bturn.sol end
    end
  end
  return {
    problems = problems, correct = correct, correctness = problems > 0 and correct / problems or nil,
    speedup = M.geomean(speeds), fast1 = problems > 0 and fast1 / problems or nil, timed = #speeds,
    sol = M.geomean(sols), sol_n = #sols,
  }
end

-- kbv(trajs, {limit, verified, by, B, seed, level}) -> rows, one per group
-- of `by` (default {"arch", "model"}): {arch, model, limit, problems (tasks),
-- correct, correctness (correct / problems), speedup (geometric mean of the
-- best speedup over the correct problems that have one), fast1 (share of
-- all problems whose best speedup is above 1), timed (problems with a
-- speedup), sol (geometric mean of the best turns' speed-of-light
-- fractions where they have one; nil if nowhere), sol_n, and speedup_ci (a bootstrap that resamples the tasks, each with its
-- trajectories; nil with fewer than two tasks that have a speedup), correctness_ci, fast1_ci
-- (Wilson intervals over the problems)}.
function M.kbv(trajs, opts)
  opts = opts or {}
  local limit = opts.limit or M.max_turns(trajs)
  local by = opts.by or { "arch", "model" }
  local rows = {}
  for _, g in ipairs(M.group(trajs, by)) do
    local strata = {}
    for _, tg in ipairs(M.group(g.items, { "task" })) do strata[#strata + 1] = tg.items end
    local cache = {}
    local row = kbv_stat(strata, limit, opts.verified, cache)
    -- The speedup's interval resamples the problems (tasks), each with all
    -- its trajectories: tasks are the unit a study generalises over. One
    -- task has no interval.
    -- A task's best speedup does not change with the resample (a task
    -- comes with all its trajectories): each task's once, by index.
    local bests, timed = {}, 0
    for i, st in ipairs(strata) do
      bests[i] = kbv_stat({ st }, limit, opts.verified, cache).speedup or false
      if bests[i] then timed = timed + 1 end
    end
    local idx = {}
    for i = 1, #strata do idx[i] = i end
    -- An interval needs two tasks with a speedup: over one, every
    -- resample gives the same value and the "interval" is a point.
    local ci = timed > 1 and M.bootstrap(idx, function(s)
      local sum, n = 0, 0
      for _, i in ipairs(s) do
        local b = bests[i]
        if b then sum, n = sum + math.log(b), n + 1 end
      end
      return { n > 0 and math.exp(sum / n) or nil, n = 1 }
    end, boot_opts(opts, "kbv\0" .. g.key)) or {}
    -- Correctness and Fast@1 are proportions of the problems: Wilson
    -- intervals; the speedup's is the bootstrap's.
    row.speedup_ci = ci[1]
    row.correctness_ci = M.wilson(row.correct, row.problems, opts.level)
    row.fast1_ci = row.fast1 and M.wilson(math.floor(row.fast1 * row.problems + 0.5), row.problems, opts.level)
    row.limit = limit
    for _, f in ipairs(by) do row[f] = g[f] end
    rows[#rows + 1] = row
  end
  return rows
end

-- ---- 4. failure mix per turn ------------------------------------------------

-- failure_mix(trajs, {limit, by, B, seed, level}) -> rows, one per group of
-- `by` (default {"arch", "model"}): {arch, model, verdicts = {names, in
-- verdict precedence, then by name}, turns = {[n] = {total, counts =
-- {verdict = count}, shares = {verdict = share}, not_result = {verdict =
-- count}}}, all = {total, counts, shares, ci = {verdict = {lo, hi}},
-- not_result}}. Turn n counts the turns numbered n (trajectories that
-- stopped early have none); `all` pools turns 1..limit, with intervals from
-- a bootstrap over tasks. Turns whose verdict is not a result
-- (NOT_RESULT) are counted in not_result only: total, shares and verdicts
-- are over the results.
function M.failure_mix(trajs, opts)
  opts = opts or {}
  local limit = opts.limit or M.max_turns(trajs)
  local by = opts.by or { "arch", "model" }
  local vmod = require("klab.eval.verdict")
  local rows = {}
  for _, g in ipairs(M.group(trajs, by)) do
    local row = { turns = {}, limit = limit, verdicts = {} }
    for _, f in ipairs(by) do row[f] = g[f] end
    local seen = {}
    local all = { total = 0, counts = {}, shares = {}, not_result = {} }
    for n = 1, limit do row.turns[n] = { total = 0, counts = {}, shares = {}, not_result = {} } end
    for _, tr in ipairs(g.items) do
      for _, tu in ipairs(tr.turns) do
        if tu.turn <= limit and M.NOT_RESULT[tu.verdict] then
          local cell = row.turns[tu.turn]
          cell.not_result[tu.verdict] = (cell.not_result[tu.verdict] or 0) + 1
          all.not_result[tu.verdict] = (all.not_result[tu.verdict] or 0) + 1
        elseif tu.turn <= limit then
          local cell = row.turns[tu.turn]
          cell.total = cell.total + 1
          cell.counts[tu.verdict] = (cell.counts[tu.verdict] or 0) + 1
          all.total = all.total + 1
          all.counts[tu.verdict] = (all.counts[tu.verdict] or 0) + 1
          if not seen[tu.verdict] then seen[tu.verdict] = true row.verdicts[#row.verdicts + 1] = tu.verdict end
        end
      end
    end
    table.sort(row.verdicts, function(a, b)
      local ra = vmod.valid(a) and vmod.rank(a) or 0
      local rb = vmod.valid(b) and vmod.rank(b) or 0
      if ra ~= rb then return ra < rb end
      return a < b
    end)
    for n = 1, limit do
      local cell = row.turns[n]
      for v, c in pairs(cell.counts) do cell.shares[v] = c / cell.total end
    end
    for v, c in pairs(all.counts) do all.shares[v] = c / all.total end
    local names = row.verdicts
    -- Each trajectory's counts once, by verdict index ([k + 1]: its total),
    -- so that a resample only adds them up.
    local index, k = {}, #names
    for i, v in ipairs(names) do index[v] = i end
    -- The resampling unit is the task (its trajectories' turns together):
    -- the turns of one task are not independent draws.
    local per_task, of_task = {}, {}
    for _, tr in ipairs(g.items) do
      local c = of_task[tr.task]
      if not c then
        c = {}
        for i = 1, k + 1 do c[i] = 0 end
        of_task[tr.task] = c
        per_task[#per_task + 1] = c
      end
      for _, tu in ipairs(tr.turns) do
        if tu.turn <= limit and not M.NOT_RESULT[tu.verdict] then
          c[index[tu.verdict]], c[k + 1] = c[index[tu.verdict]] + 1, c[k + 1] + 1
        end
      end
    end
    local ci = M.bootstrap(per_task, function(s)
      local acc = {}
      for i = 1, k + 1 do acc[i] = 0 end
      for _, c in ipairs(s) do
        for i = 1, k + 1 do acc[i] = acc[i] + c[i] end
      end
      local total, out = acc[k + 1], { n = k }
      for i = 1, k do out[i] = total > 0 and acc[i] / total or nil end
      return out
    end, boot_opts(opts, "mix\0" .. g.key))
    all.ci = {}
    for i, v in ipairs(names) do all.ci[v] = ci[i] end
    row.all = all
    rows[#rows + 1] = row
  end
  return rows
end

-- ---- 5. best speedup against the turn -----------------------------------------

-- best_by_turn(trajs, {limit, verified, by, B, seed, level}) -> rows, one
-- per group of `by` (default {"arch", "model"}): {arch, model, n, points =
-- {{turn, mean, lo, hi, max, n}}}. For turn limit t: mean is the mean of the
-- best speedup within the first t turns over the group's trajectories that
-- have a correct timed turn by then (n of them; a trajectory without one
-- has no speedup to average, not a speedup of 0), with a bootstrap interval
-- over the tasks (the resampling unit: a task's trajectories go together);
-- mean is nil when none has. max is best_speedup of the group (nil when none).
function M.best_by_turn(trajs, opts)
  opts = opts or {}
  local limit = opts.limit or M.max_turns(trajs)
  local by = opts.by or { "arch", "model" }
  local rows = {}
  for _, g in ipairs(M.group(trajs, by)) do
    -- Per task, per turn limit: the sum of its trajectories' best speedups
    -- so far and how many have one (from a trajectory's first timed correct
    -- turn on; none: nothing).
    local per_task, of_task = {}, {}
    for _, tr in ipairs(g.items) do
      local s = of_task[tr.task]
      if not s then
        s = { sum = {}, cnt = {} }
        for n = 1, limit do s.sum[n], s.cnt[n] = 0, 0 end
        of_task[tr.task] = s
        per_task[#per_task + 1] = s
      end
      local first = false
      for n = 1, limit do
        local b = M.best(tr, n, opts.verified)
        if b then first = true end
        if first then s.sum[n], s.cnt[n] = s.sum[n] + b, s.cnt[n] + 1 end
      end
    end
    local function means(sample)
      local out, cnt = { n = limit }, {}
      for n = 1, limit do out[n], cnt[n] = 0, 0 end
      for _, s in ipairs(sample) do
        local sum, c = s.sum, s.cnt
        for n = 1, limit do out[n], cnt[n] = out[n] + sum[n], cnt[n] + c[n] end
      end
      for n = 1, limit do out[n] = cnt[n] > 0 and out[n] / cnt[n] or nil end
      return out, cnt
    end
    local m, counts = means(per_task)
    local ci = M.bootstrap(per_task, means, boot_opts(opts, "bbt\0" .. g.key))
    local row = { n = #g.items, points = {} }
    for _, f in ipairs(by) do row[f] = g[f] end
    for n = 1, limit do
      local c = ci[n] or {}
      row.points[n] = { turn = n, mean = m[n], lo = m[n] and c[1], hi = m[n] and c[2], n = counts[n],
        max = M.best_speedup(g.items, n, opts.verified) }
    end
    rows[#rows + 1] = row
  end
  return rows
end

-- ---- 6. detection probability ---------------------------------------------------

-- pdetect(p, n): the chance that n independent trials catch a failure that
-- shows with probability p in each: 1 - (1 - p)^n.
function M.pdetect(p, n)
  if type(p) ~= "number" or p < 0 or p > 1 then error("metrics.pdetect: p must be in [0, 1]", 2) end
  if math.type(n) ~= "integer" or n < 0 then error("metrics.pdetect: n must be a non-negative integer", 2) end
  return 1 - (1 - p) ^ n
end

-- pdetect_table(ps, ns) -> {ps = ps, ns = ns, values = {[i][j] = pdetect(ps[i], ns[j])}}.
function M.pdetect_table(ps, ns)
  ps = ps or { 0.001, 0.01, 0.05, 0.1, 0.25, 0.5 }
  ns = ns or { 1, 3, 5, 10, 30, 100 }
  local v = {}
  for i, p in ipairs(ps) do
    v[i] = {}
    for j, n in ipairs(ns) do v[i][j] = M.pdetect(p, n) end
  end
  return { ps = ps, ns = ns, values = v }
end

-- ---- 7. candidates -------------------------------------------------------------

-- candidates(trajs [, limit]) -> list of {arch, model, task, tag, replica,
-- turn, speedup, sol, verified, candidate} for every correct turn with a speedup,
-- in load order then turn order.
function M.candidates(trajs, limit)
  local out = {}
  for _, tr in ipairs(trajs) do
    for _, tu in ipairs(tr.turns) do
      if verdicts.passed(tu.verdict) and tu.speedup and (not limit or tu.turn <= limit) then
        out[#out + 1] = { arch = tr.arch, model = tr.model, task = tr.task, tag = tr.tag, replica = tr.replica,
          turn = tu.turn, speedup = tu.speedup, sol = tu.sol, verified = tu.verified, candidate = tu.candidate }
      end
    end
  end
  return out
end

return M
