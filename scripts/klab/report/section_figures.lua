-- klab.report.section_figures: the figures of one report section, per
-- architecture, from the section's metrics. A figure with nothing to show
-- is left out with the reason, and one the renderer refuses is left out
-- with its message; the rest are drawn.
--
--   local figs, omitted = require("klab.report.section_figures").draw(dir, d)
--     d = {trajs, counted (decided at the limit), limit, fast_p, fast_p_verified,
--          success, failure_mix, best_by_turn, candidates, at_k, note (files -> files)}
--     figs = {{name, caption, files}}, omitted = {{name, title, why}}

local figures = require "klab.report.figures"

local M = {}

local function sorted_set(list, field)
  local seen, out = {}, {}
  for _, x in ipairs(list) do
    local v = x[field]
    if v ~= nil and not seen[v] then seen[v] = true out[#out + 1] = v end
  end
  table.sort(out, function(a, b) return tostring(a) < tostring(b) end)
  return out
end

function M.draw(dir, d)
  local L = d.limit
  local figs, omitted = {}, {}
  -- gnuplot draws them all at the end, several at a time.
  figures.start()
  local archs = sorted_set(d.trajs, "arch")
  local function by_arch(rows, a)
    local out = {}
    for _, r in ipairs(rows) do if r.arch == a then out[#out + 1] = r end end
    return out
  end
  for _, a in ipairs(archs) do
    local at = by_arch(d.trajs, a)
    local ac = by_arch(d.counted, a)
    local models, tasks = sorted_set(at, "model"), sorted_set(at, "task")
    local sa = figures.slug(a)
    local none = #ac == 0 and "no trajectory on " .. a .. " has a result (every one is unmeasured or unfinished)"
    local function fig(name, title, caption, why, draw)
      if why then
        omitted[#omitted + 1] = { name = name, title = title, why = why }
        return
      end
      -- A figure the renderer refuses is left out and named; the rest of
      -- the report is still written.
      local files, ferr = draw()
      if not files then
        omitted[#omitted + 1] = { name = name, title = title, why = tostring(ferr) }
        return
      end
      figs[#figs + 1] = { name = name, title = title, caption = caption, files = files }
    end
    -- Every correct timed candidate: without one, fast_p has nothing to draw.
    local pts = by_arch(d.candidates, a)
    local untimed = #pts == 0 and ("no correct timed candidate on %s"):format(a) or nil
    fig("fast_p_" .. sa, ("fast_p on %s"):format(a), ("fast_p on %s (turn limit %d): share of trajectories with a correct "
      .. "turn faster than p × the library, left all correct turns, right those whose target instructions were seen "
      .. "executing; bands: 95%% Wilson intervals."):format(a, L), none or untimed, function()
        return figures.fast_p(dir, "fast_p_" .. sa, { title = ("fast_p on %s, turn limit %d"):format(a, L),
          plain = by_arch(d.fast_p, a), verified = by_arch(d.fast_p_verified, a) })
      end)
    local cell = {}
    for _, r in ipairs(d.success) do
      -- A group's largest limit (a group with fewer turns stops below L).
      local k = r.model .. "\0" .. r.task
      if r.arch == a and r.limit <= L and r.n > 0 and (not cell[k] or cell[k].limit < r.limit) then cell[k] = r end
    end
    -- A task none of whose trajectories has a result has no bar: named, so
    -- that an empty place is not read as 0%.
    local unmeasured = {}
    for _, t in ipairs(tasks) do
      local any = false
      for _, m in ipairs(models) do any = any or cell[m .. "\0" .. t] ~= nil end
      if not any then unmeasured[#unmeasured + 1] = t end
    end
    fig("correct_" .. sa, ("Correct and verified on %s"):format(a), ("Trajectories with a correct turn (solid) and a "
      .. "correct turn with verified target instructions (hatched) per task on %s, turn limit %d; error bars: 95%% "
      .. "Wilson intervals.%s"):format(a, L, #unmeasured > 0 and (" Not measured (no bar): %s."):format(
        table.concat(unmeasured, ", ")) or ""), none, function()
        return figures.bars(dir, "correct_" .. sa, { title = ("Correct and verified on %s, turn limit %d"):format(a, L),
          models = models, tasks = tasks, cell = function(m, t)
            local r = cell[m .. "\0" .. t]
            return r and { correct = r.correct_rate, correct_ci = r.correct_ci, verified = r.verified_rate,
              verified_ci = r.verified_ci }
          end })
      end)
    for _, r in ipairs(by_arch(d.failure_mix, a)) do
      local name = "failure_mix_" .. sa .. "_" .. figures.slug(r.model)
      local nr = 0
      for _, n in pairs(r.all.not_result) do nr = nr + n end
      fig(name, ("Verdicts per turn: %s on %s"):format(r.model, a), ("Verdicts of the turns of %s on %s, per turn (n: "
        .. "turns with a result at that turn%s)."):format(r.model, a,
          nr > 0 and ("; %d turns with no result are left out"):format(nr) or ""),
        #r.verdicts == 0 and ("no turn of %s on %s has a result"):format(r.model, a) or nil, function()
          return figures.mix(dir, name, { title = ("Verdicts per turn: %s on %s"):format(r.model, a), row = r })
        end)
    end
    fig("best_by_turn_" .. sa, ("Best speedup so far on %s"):format(a), ("Mean best speedup within the first n turns "
      .. "on %s, over the trajectories that have a correct timed turn by then (the number beside each point); error "
      .. "bars: 95%% bootstrap intervals over tasks; dashed: the library."):format(a), none or untimed, function()
        return figures.best_by_turn(dir, "best_by_turn_" .. sa, { title = ("Best speedup so far on %s"):format(a),
          rows = by_arch(d.best_by_turn, a) })
      end)
    fig("speedups_" .. sa, ("Every correct candidate on %s"):format(a), ("Speedup over the library of every correct "
      .. "timed candidate per task on %s (log scale; filled: target instructions verified; dots spread sideways by "
      .. "model)."):format(a), none or untimed, function()
        return figures.speedups(dir, "speedups_" .. sa, { title = ("Every correct candidate on %s"):format(a),
          models = models, tasks = tasks, points = pts })
      end)
    local with_sol = 0
    for _, p in ipairs(pts) do if p.sol then with_sol = with_sol + 1 end end
    fig("sol_" .. sa, ("Speed of light on %s"):format(a), ("Fraction of the speed of light of every correct timed "
      .. "candidate per task on %s: the physical floor of the timing rules (the task's FLOPs at the peak of the path "
      .. "it ran, its bytes at DRAM bandwidth) over its median; 1 is the floor (filled: target instructions "
      .. "verified)."):format(a), none or untimed or (with_sol == 0 and ("no timed result on %s has a physical floor "
      .. "recorded"):format(a)) or nil, function()
        return figures.sol(dir, "sol_" .. sa, { title = ("Speed of light on %s"):format(a), models = models,
          tasks = tasks, points = pts })
      end)
    local ak = by_arch(d.at_k, a)
    local kmax = 0
    for _, r in ipairs(ak) do kmax = math.max(kmax, r.kmax) end
    fig("at_k_" .. sa, ("Fast@k and best-of-k on %s"):format(a), ("Left: the chance that at least one of k "
      .. "trajectories of a task is correct and faster than the library (Fast@k, the unbiased pass@k estimator on "
      .. "fast_1), right: the expected best speedup of k trajectories (none correct: 0), the mean over tasks on %s, "
      .. "turn limit %d; bands: 95%% bootstrap intervals over tasks."):format(a, L),
      none or untimed or (kmax < 2 and ("every task on %s has one trajectory: k = 1 only (see fast_p and the KBV table)"):format(a))
        or nil, function()
        return figures.at_k(dir, "at_k_" .. sa, { title = ("Fast@k and best-of-k on %s, turn limit %d"):format(a, L),
          rows = ak })
      end)
  end

  -- A figure one of whose scripts gnuplot refused is left out and named
  -- (its script stays, to be run again); the rest are written.
  local failed = figures.finish()
  local kept = {}
  for _, f in ipairs(figs) do
    local why
    for _, file in ipairs(f.files) do why = why or failed[file] end
    if why then
      omitted[#omitted + 1] = { name = f.name, title = f.title, why = why }
    else
      f.title = nil
      f.files = d.note(f.files)
      kept[#kept + 1] = f
    end
  end
  return kept, omitted
end

return M
