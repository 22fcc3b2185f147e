-- klab.report.figures.failure_mix: the verdicts of the turns per turn, one
-- figure per model and architecture (a figure file: see
-- klab.report.figures).

local gnuplot = require "klab.report.gnuplot"
local q, num, tic = gnuplot.quote, gnuplot.num, gnuplot.tic

local M = {}

-- mix(dir, name, {title, row = a metrics.failure_mix row}): per turn a
-- stacked bar of verdict shares (percent), with the number of turns above.
local function draw(dir, name, spec)
  local row = spec.row
  if not row or #row.verdicts == 0 then return gnuplot.render_empty(dir, name, spec.title, "no turns") end
  local rows, tics, labels = {}, {}, {}
  for n, cell in ipairs(row.turns) do
    local r = { tostring(n) }
    for _, v in ipairs(row.verdicts) do r[#r + 1] = num(cell.total > 0 and (cell.shares[v] or 0) * 100 or 0) end
    rows[#rows + 1] = r
    tics[#tics + 1] = tic(tostring(n)) .. " " .. (n - 1)
    labels[#labels + 1] = ("set label %d %s at %d, 103 center"):format(n + 10, q("n=" .. cell.total), n - 1)
  end
  local plots = {}
  for i, v in ipairs(row.verdicts) do
    plots[#plots + 1] = ("$mix using %d lc rgb %s title %s"):format(i + 1, q(gnuplot.VERDICT_COLORS[v] or "#333333"), q(v))
  end
  local body = {
    gnuplot.COMMON,
    "set title " .. q(spec.title) .. " offset 0,0.5",
    "set style data histogram",
    "set style histogram rowstacked",
    "set style fill solid 0.9 border lc rgb '#FFFFFF'",
    "set boxwidth 0.75",
    "set xtics (" .. table.concat(tics, ", ") .. ")",
    "set xlabel 'Turn'",
    "set ylabel 'Turns by verdict (%)'",
    "set yrange [0:108]",
    "set key outside right top vertical reverse Left",
    table.concat(labels, "\n"),
    "plot " .. table.concat(plots, ", \\\n     "),
  }
  return gnuplot.render(dir, name, { data = gnuplot.datablock("mix", rows), body = table.concat(body, "\n"),
    w = math.max(6, 3.5 + 0.4 * #row.turns), h = 3.75 })
end

function M.instances(s)
  local a, out = s.a, {}
  for _, r in ipairs(s.by_arch(s.d.failure_mix)) do
    local nr = 0
    for _, n in pairs(r.all.not_result) do nr = nr + n end
    out[#out + 1] = {
      name = "failure_mix_" .. s.sa .. "_" .. gnuplot.slug(r.model), title = ("Verdicts per turn: %s on %s"):format(r.model, a),
      caption = ("Verdicts of the turns of %s on %s, per turn (n: turns with a result at that turn%s)."):format(r.model,
        a, nr > 0 and ("; %d turns with no result are left out"):format(nr) or ""),
      why = #r.verdicts == 0 and ("no turn of %s on %s has a result"):format(r.model, a) or nil,
      draw = function(dir, name)
        return draw(dir, name, { title = ("Verdicts per turn: %s on %s"):format(r.model, a), row = r })
      end,
    }
  end
  return out
end

return M
