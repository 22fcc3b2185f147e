-- klab.report.figures.correct: per task, the trajectories with a correct
-- turn and with verified target instructions, per architecture (a figure
-- file: see klab.report.figures).

local gnuplot = require "klab.report.gnuplot"
local q, num, tic = gnuplot.quote, gnuplot.num, gnuplot.tic

local M = {}

-- bars_page(dir, name, {title, models = {...}, tasks = {...}, cell = function(model, task)
-- -> {correct = rate, correct_ci = {lo, hi}, verified = rate, verified_ci}}):
-- per task, per model a solid bar (correct) and a hatched bar (verified),
-- in percent, with Wilson error bars.
local function bars_page(dir, name, spec)
  local models, tasks = spec.models, spec.tasks
  if #models == 0 or #tasks == 0 then return gnuplot.render_empty(dir, name, spec.title, "no trajectories") end
  local rows, any = {}, false
  for ti, task in ipairs(tasks) do
    local r = { tostring(ti - 1) }
    for _, m in ipairs(models) do
      local c = spec.cell(m, task)
      if c then
        local function add(v, ci)
          r[#r + 1] = num(v * 100)
          r[#r + 1] = num((ci and ci[1] or v) * 100)
          r[#r + 1] = num((ci and ci[2] or v) * 100)
        end
        add(c.correct, c.correct_ci)
        add(c.verified, c.verified_ci)
        any = true
      else
        for _ = 1, 6 do r[#r + 1] = "NaN" end
      end
    end
    rows[#rows + 1] = r
  end
  if not any then return gnuplot.render_empty(dir, name, spec.title, "no trajectories") end
  local tics = {}
  for ti, task in ipairs(tasks) do tics[#tics + 1] = tic(task) .. " " .. (ti - 1) end
  local plots = {}
  for mi, m in ipairs(models) do
    local color = q(gnuplot.PALETTE[(mi - 1) % #gnuplot.PALETTE + 1])
    local base = 1 + (mi - 1) * 6
    plots[#plots + 1] = ("$bars using %d:%d:%d lc rgb %s fs solid 0.85 border lc rgb %s title %s"):format(base + 1, base + 2,
      base + 3, color, color, q(m .. ": correct"))
    plots[#plots + 1] = ("$bars using %d:%d:%d lc rgb %s fs pattern 5 border lc rgb %s title %s"):format(base + 4, base + 5,
      base + 6, color, color, q(m .. ": verified"))
  end
  local w = math.max(6, 1.2 + #tasks * (0.35 + 0.3 * #models))
  local body = {
    gnuplot.COMMON,
    "set title " .. q(spec.title),
    "set style data histogram",
    "set style histogram errorbars gap 1 lw 1",
    "set boxwidth 0.9",
    "set xtics (" .. table.concat(tics, ", ") .. ")",
    #tasks > 2 and "set xtics rotate by 20 right" or "",
    "set ylabel 'Trajectories (%)'",
    "set yrange [0:110]",
    "set key outside right top vertical",
    "plot " .. table.concat(plots, ", \\\n     "),
  }
  return gnuplot.render(dir, name, { data = gnuplot.datablock("bars", rows), body = table.concat(body, "\n"), w = w + 2, h = 3.75 })
end

function M.instances(s)
  local a, L = s.a, s.limit
  local cell = {}
  for _, r in ipairs(s.d.success) do
    -- A group's largest limit (a group with fewer turns stops below L).
    local k = r.model .. "\0" .. r.task
    if r.arch == a and r.limit <= L and r.n > 0 and (not cell[k] or cell[k].limit < r.limit) then cell[k] = r end
  end
  -- A task none of whose trajectories has a result has no bar: named, so
  -- that an empty place is not read as 0%.
  local unmeasured = {}
  for _, t in ipairs(s.tasks) do
    local any = false
    for _, m in ipairs(s.models) do any = any or cell[m .. "\0" .. t] ~= nil end
    if not any then unmeasured[#unmeasured + 1] = t end
  end
  return { {
    name = "correct_" .. s.sa, title = ("Correct and verified on %s"):format(a),
    caption = ("Trajectories with a correct turn (solid) and a correct turn with verified target instructions "
      .. "(hatched) per task on %s, turn limit %d; error bars: 95%% Wilson intervals.%s"):format(a, L,
      #unmeasured > 0 and (" Not measured (no bar): %s."):format(table.concat(unmeasured, ", ")) or ""),
    why = s.none,
    draw = function(dir, name)
      return gnuplot.paged(dir, name, { title = ("Correct and verified on %s, turn limit %d"):format(a, L),
        models = s.models, tasks = s.tasks, cell = function(m, t)
          local r = cell[m .. "\0" .. t]
          return r and { correct = r.correct_rate, correct_ci = r.correct_ci, verified = r.verified_rate,
            verified_ci = r.verified_ci }
        end }, 0.35 + 0.3 * math.max(1, #s.models), 3.2, bars_page)
    end,
  } }
end

return M
