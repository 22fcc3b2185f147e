-- klab.report.figures.at_k: Fast@k and best-of-k against k, per
-- architecture (a figure file: see klab.report.figures).

local gnuplot = require "klab.report.gnuplot"
local q, num = gnuplot.quote, gnuplot.num

local M = {}

-- at_k(dir, name, {title, rows = at_k.curves rows}): left Fast@k (the
-- chance that one of k trajectories of a task is faster than p x the
-- library), right best-of-k (the expected best speedup of k), against k,
-- one line per model with its bootstrap band over tasks.
local function draw(dir, name, spec)
  local rows = spec.rows or {}
  if #rows == 0 then return gnuplot.render_empty(dir, name, spec.title, "no trajectories") end
  local data, plots = {}, { {}, {} }
  local kmax, top = 1, 1
  for i, row in ipairs(rows) do
    local color = q(gnuplot.PALETTE[(i - 1) % #gnuplot.PALETTE + 1])
    for panel, f in ipairs { "fast", "best" } do
      local d = {}
      local scale = panel == 1 and 100 or 1
      for _, pt in ipairs(row.points) do
        local ci = pt[f .. "_ci"] or {}
        d[#d + 1] = { num(pt.k), num(pt[f] * scale), num((ci[1] or pt[f]) * scale), num((ci[2] or pt[f]) * scale) }
        kmax = math.max(kmax, pt.k)
        if panel == 2 then top = math.max(top, ci[2] or pt[f]) end
      end
      local dn = ("k%d_%d"):format(panel, i)
      data[#data + 1] = gnuplot.datablock(dn, d)
      table.insert(plots[panel], ("$%s using 1:3:4 with filledcurves fc rgb %s fs transparent solid 0.15 noborder notitle")
        :format(dn, color))
      table.insert(plots[panel], ("$%s using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb %s title %s"):format(dn, color,
        q(("%s (%d tasks)"):format(row.model, row.tasks))))
    end
  end
  table.insert(plots[2], "1 with lines dt 2 lw 1 lc rgb '#555555' title 'library (1×)'")
  local body = {
    gnuplot.COMMON,
    ("set multiplot layout 1,2 title %s"):format(q(spec.title)),
    "set xlabel 'k (trajectories per task)'",
    ("set xrange [0.8:%s]"):format(num(kmax + 0.2)),
    kmax <= 20 and "set xtics 1" or "",
    "set key top left",
    "set ylabel " .. q(("Tasks with one of k faster than %g× (%%)"):format(rows[1].p)),
    "set yrange [0:105]",
    "set title 'Fast@k'",
    "plot " .. table.concat(plots[1], ", \\\n     "),
    "set ylabel 'Expected best speedup of k (× library)'",
    ("set yrange [0:%s]"):format(num(math.ceil(top * 1.15 * 10) / 10)),
    "set title 'Best-of-k'",
    "plot " .. table.concat(plots[2], ", \\\n     "),
    "unset multiplot",
  }
  return gnuplot.render(dir, name, { data = table.concat(data, "\n"), body = table.concat(body, "\n"), w = 9, h = 3.6 })
end

function M.instances(s)
  local a, L = s.a, s.limit
  local ak = s.by_arch(s.d.at_k)
  local kmax = 0
  for _, r in ipairs(ak) do kmax = math.max(kmax, r.kmax) end
  return { {
    name = "at_k_" .. s.sa, title = ("Fast@k and best-of-k on %s"):format(a),
    caption = ("Left: the chance that at least one of k trajectories of a task is correct and faster than the library "
      .. "(Fast@k, the unbiased pass@k estimator on fast_1), right: the expected best speedup of k trajectories (none "
      .. "correct: 0), the mean over tasks on %s, turn limit %d; bands: 95%% bootstrap intervals over tasks."):format(a, L),
    why = s.none or s.untimed
      or (kmax < 2 and ("every task on %s has one trajectory: k = 1 only (see fast_p and the KBV table)"):format(a)) or nil,
    draw = function(dir, name)
      return draw(dir, name, { title = ("Fast@k and best-of-k on %s, turn limit %d"):format(a, L), rows = ak })
    end,
  } }
end

return M
