-- klab.report.figures.best_by_turn: the mean best speedup within the first n
-- turns, per architecture (a figure file: see klab.report.figures).

local gnuplot = require "klab.report.gnuplot"
local q, num = gnuplot.quote, gnuplot.num

local M = {}

-- best_by_turn(dir, name, {title, rows = metrics.best_by_turn rows}): one
-- line per model, mean best speedup so far with its bootstrap interval and
-- the number of trajectories it averages.
local function draw(dir, name, spec)
  local rows = spec.rows or {}
  if #rows == 0 then return gnuplot.render_empty(dir, name, spec.title, "no trajectories") end
  local data, plots = {}, {}
  local limit, top = 1, 1
  for i, row in ipairs(rows) do
    local d = {}
    for _, pt in ipairs(row.points) do
      local dx = (i - (#rows + 1) / 2) * 0.06
      d[#d + 1] = { num(pt.turn + dx), num(pt.mean), num(pt.lo or pt.mean), num(pt.hi or pt.mean),
        pt.mean and ('"n=' .. tostring(pt.n or 0) .. '"') or '""' }
      limit = math.max(limit, pt.turn)
      top = math.max(top, pt.hi or pt.mean or 0)
    end
    local dn = "b" .. i
    data[#data + 1] = gnuplot.datablock(dn, d)
    local color = q(gnuplot.PALETTE[(i - 1) % #gnuplot.PALETTE + 1])
    plots[#plots + 1] = ("$%s using 1:2:3:4 with yerrorbars lc rgb %s pt 7 ps 0.6 notitle"):format(dn, color)
    plots[#plots + 1] = ("$%s using 1:2 with lines lw 2 lc rgb %s title %s"):format(dn, color, q(row.model))
    -- How many trajectories each point averages.
    plots[#plots + 1] = ("$%s using 1:4:5 with labels offset 0,0.7 font ',8' tc rgb %s notitle"):format(dn, color)
  end
  plots[#plots + 1] = "1 with lines dt 2 lw 1 lc rgb '#555555' title 'library (1×)'"
  local body = {
    gnuplot.COMMON,
    "set title " .. q(spec.title),
    "set xlabel 'Turn limit'",
    "set ylabel 'Mean best speedup so far (× library)'",
    ("set xrange [0.5:%s]"):format(num(limit + 0.5)),
    ("set yrange [0:%s]"):format(num(math.ceil(top * 1.15 * 10) / 10)),
    "set xtics 1",
    "set key outside right top vertical",
    "plot " .. table.concat(plots, ", \\\n     "),
  }
  return gnuplot.render(dir, name, { data = table.concat(data, "\n"), body = table.concat(body, "\n"), w = 7, h = 3.75 })
end

function M.instances(s)
  local a = s.a
  return { {
    name = "best_by_turn_" .. s.sa, title = ("Best speedup so far on %s"):format(a),
    caption = ("Mean best speedup within the first n turns on %s, over the trajectories that have a correct timed turn "
      .. "by then (the number beside each point); error bars: 95%% bootstrap intervals over tasks; dashed: the "
      .. "library."):format(a),
    why = s.none or s.untimed,
    draw = function(dir, name)
      return draw(dir, name, { title = ("Best speedup so far on %s"):format(a), rows = s.by_arch(s.d.best_by_turn) })
    end,
  } }
end

return M
