-- klab.report.at_k: Fast@k and best-of-k, what a study gains by sampling a
-- model k times per task (its replicas) and keeping the best.
--
--   local at_k = require "klab.report.at_k"
--   at_k.curves(trajs, {limit, p = 1, verified, B, seed, level}) -> rows
--   at_k.fast_at_k(n, c, k), at_k.best_of_k(speedups, k)  (one task's estimates)
--
-- One task's n trajectories (those that count at the turn limit) are the
-- draws; a trajectory's result is its best speedup within the limit (nil
-- when it has no correct timed turn):
--
--   Fast@k: the chance that at least one of k trajectories drawn without
--   replacement has a best speedup above p (p = 1: faster than the
--   library), 1 - C(n-c, k)/C(n, k) with c such trajectories: the unbiased
--   pass@k estimator applied to fast_p.
--   Best-of-k: the expected best speedup of k trajectories drawn without
--   replacement, a trajectory with no correct timed turn counting as 0:
--   sum over the speedups sorted ascending s_1..s_n of s_i C(i-1, k-1)/C(n, k).
--
-- Per arch and model (or condition), the mean over its tasks at each k up
-- to the smallest n among them, with a percentile-bootstrap interval whose
-- resampling unit is the task.

local metrics = require "klab.report.metrics"

local M = {}

-- C(a, b) / C(n, b) as a product, without overflow: prod_{j=0}^{b-1} (a-j)/(n-j).
local function ratio(a, n, b)
  if b > a then return 0 end
  local r = 1
  for j = 0, b - 1 do r = r * (a - j) / (n - j) end
  return r
end

function M.fast_at_k(n, c, k)
  if k > n or n == 0 then return nil end
  return 1 - ratio(n - c, n, k)
end

-- The expected best of k drawn from s, sorted ascending.
local function best_sorted(s, k)
  local n = #s
  if k > n or n == 0 then return nil end
  -- P(the largest of the k drawn is the i-th smallest) = C(i-1, k-1)/C(n, k).
  local e = 0
  for i = k, n do
    if s[i] > 0 then e = e + s[i] * (k / n) * ratio(i - 1, n - 1, k - 1) end
  end
  return e
end

-- speedups: the n trajectories' results, 0 for none.
function M.best_of_k(speedups, k)
  local s = {}
  for i, v in ipairs(speedups) do s[i] = v end
  table.sort(s)
  return best_sorted(s, k)
end

-- rows: one per arch x model with at least one task: {arch, model, tasks
-- (count), kmax, p, verified, points = {{k, fast, fast_ci = {lo, hi},
-- best, best_ci}}}.
function M.curves(trajs, opts)
  opts = opts or {}
  local L, p, verified = opts.limit, opts.p or 1, opts.verified
  local rows = {}
  for _, g in ipairs(metrics.group(trajs, { "arch", "model" })) do
    local per_task, kmax = {}, math.huge
    for _, tg in ipairs(metrics.group(g.items, { "task" })) do
      local items = metrics.decided(tg.items, L)
      if #items > 0 then
        local sp, c = {}, 0
        for i, tr in ipairs(items) do
          sp[i] = metrics.best(tr, L, verified) or 0
          if sp[i] > p then c = c + 1 end
        end
        per_task[#per_task + 1] = { n = #items, c = c, sp = sp }
        kmax = math.min(kmax, #items)
      end
    end
    if #per_task > 0 then
      -- Each task's estimates at every k, once (its results sorted once);
      -- the bootstrap averages them.
      for _, t in ipairs(per_task) do
        t.fast, t.best = {}, {}
        table.sort(t.sp)
        for k = 1, kmax do
          t.fast[k] = M.fast_at_k(t.n, t.c, k)
          t.best[k] = best_sorted(t.sp, k)
        end
      end
      local function stat(sample)
        local out = { n = 2 * kmax }
        for k = 1, kmax do
          local f, b = 0, 0
          for _, t in ipairs(sample) do f, b = f + t.fast[k], b + t.best[k] end
          out[k], out[kmax + k] = f / #sample, b / #sample
        end
        return out
      end
      local point = stat(per_task)
      local ci = metrics.bootstrap(per_task, stat, { B = opts.B, seed = opts.seed, level = opts.level,
        key = ("at_k\0%s\0%s\0%s\0%s"):format(g.arch, g.model, tostring(p), verified and "v" or "") })
      local pts = {}
      for k = 1, kmax do
        pts[k] = { k = k, fast = point[k], fast_ci = ci[k], best = point[kmax + k], best_ci = ci[kmax + k] }
      end
      rows[#rows + 1] = { arch = g.arch, model = g.model, tasks = #per_task, kmax = kmax, p = p,
        verified = verified and true or false, points = pts }
    end
  end
  return rows
end

return M
