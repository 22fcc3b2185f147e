-- klab.report.figures.fast_p: fast_p against the threshold p, per
-- architecture (a figure file: see klab.report.figures).

local gnuplot = require "klab.report.gnuplot"
local q, num = gnuplot.quote, gnuplot.num

local M = {}

-- fast_p(dir, name, {title, plain = metrics.fast_p rows, verified = rows
-- with verified = true}) : two panels (all correct | target instructions
-- verified), one line per model with its Wilson band.
local function draw(dir, name, spec)
  local plain, ver = spec.plain or {}, spec.verified or {}
  if #plain == 0 then return gnuplot.render_empty(dir, name, spec.title, "no trajectories") end
  local data, plots = {}, { {}, {} }
  local pmax = 0
  for k, set in ipairs { plain, ver } do
    for i, row in ipairs(set) do
      -- fast_p drops at each threshold where a best speedup stops being
      -- above p: drawn as steps (a vertical segment at each threshold).
      local rows = {}
      local prev
      for _, pt in ipairs(row.points) do
        local cur = { num(pt.value * 100), num((pt.lo or pt.value) * 100), num((pt.hi or pt.value) * 100) }
        if prev and (prev[1] ~= cur[1] or prev[2] ~= cur[2] or prev[3] ~= cur[3]) then
          rows[#rows + 1] = { num(pt.p), prev[1], prev[2], prev[3] }
        end
        rows[#rows + 1] = { num(pt.p), cur[1], cur[2], cur[3] }
        prev = cur
        pmax = math.max(pmax, pt.p)
      end
      local dn = ("f%d_%d"):format(k, i)
      data[#data + 1] = gnuplot.datablock(dn, rows)
      local color = gnuplot.PALETTE[(i - 1) % #gnuplot.PALETTE + 1]
      table.insert(plots[k], ("$%s using 1:3:4 with filledcurves fc rgb %s fs transparent solid 0.15 noborder notitle"):format(dn, q(color)))
      table.insert(plots[k], ("$%s using 1:2 with lines lw 2 lc rgb %s title %s"):format(dn, q(color), q(row.model)))
    end
  end
  local any = false
  for _, row in ipairs(plain) do
    for _, pt in ipairs(row.points) do if pt.value > 0 then any = true end end
  end
  local body = {
    gnuplot.COMMON,
    any and "" or "set label 1 'no correct timed turns' at graph 0.5, 0.5 center",
    ("set multiplot layout 1,2 title %s"):format(q(spec.title)),
    "set xlabel 'Speedup threshold p (× library)'",
    "set ylabel 'Trajectories correct with speedup > p (%)'",
    ("set xrange [0:%s]"):format(num(pmax)),
    "set yrange [0:105]",
    "set key top right",
    "set title 'All correct kernels'",
    "plot " .. table.concat(plots[1], ", \\\n     "),
    "set title 'Target instructions verified'",
    "plot " .. (#plots[2] > 0 and table.concat(plots[2], ", \\\n     ") or "NaN notitle"),
    "unset multiplot",
  }
  return gnuplot.render(dir, name, { data = table.concat(data, "\n"), body = table.concat(body, "\n"), w = 9, h = 3.6 })
end

function M.instances(s)
  local a, L = s.a, s.limit
  return { {
    name = "fast_p_" .. s.sa, title = ("fast_p on %s"):format(a),
    caption = ("fast_p on %s (turn limit %d): share of trajectories with a correct turn faster than p × the library, "
      .. "left all correct turns, right those whose target instructions were seen executing; bands: 95%% Wilson "
      .. "intervals."):format(a, L),
    why = s.none or s.untimed,
    draw = function(dir, name)
      return draw(dir, name, { title = ("fast_p on %s, turn limit %d"):format(a, L), plain = s.by_arch(s.d.fast_p),
        verified = s.by_arch(s.d.fast_p_verified) })
    end,
  } }
end

return M
