-- klab.report.figures.speedups: every correct timed candidate's speedup per
-- task, per architecture (a figure file: see klab.report.figures). Its
-- page also draws klab.report.figures.sol.

local gnuplot = require "klab.report.gnuplot"
local q, num, tic = gnuplot.quote, gnuplot.num, gnuplot.tic

local M = {}

-- M.page(dir, name, {title, models, tasks, points = metrics.candidates rows,
-- seed, sol}): per task, each correct timed candidate as a dot (log scale),
-- models side by side with a deterministic jitter, verified ones filled.
-- With sol, the dots are the candidates' speed-of-light fractions (the
-- physical floor over the median, linear scale, the floor at 1) and those
-- without one are left out.
function M.page(dir, name, spec)
  local field = spec.sol and "sol" or "speedup"
  local pts = {}
  for _, p in ipairs(spec.points or {}) do if p[field] then pts[#pts + 1] = p end end
  if #pts == 0 then return gnuplot.render_empty(dir, name, spec.title, "no correct timed candidates") end
  local metrics = require("klab.report.metrics")
  local rng = metrics.rng(metrics.DEFAULT_SEED ~ metrics.fnv1a("speedups\0" .. name))
  local tidx, midx = {}, {}
  for i, t in ipairs(spec.tasks) do tidx[t] = i - 1 end
  for i, m in ipairs(spec.models) do midx[m] = i end
  local per = {}
  local lo, hi = math.huge, 0
  for _, p in ipairs(pts) do
    if tidx[p.task] == nil then goto next end
    local mi = midx[p.model]
    local k = mi .. (p.verified and "v" or "u")
    per[k] = per[k] or {}
    local width = 0.8 / #spec.models
    local x = (tidx[p.task] or 0) + (mi - (#spec.models + 1) / 2) * width + (rng:float() - 0.5) * width * 0.6
    table.insert(per[k], { num(x), num(p[field]) })
    lo, hi = math.min(lo, p[field]), math.max(hi, p[field])
    ::next::
  end
  local data, plots = {}, {}
  for mi, m in ipairs(spec.models) do
    local color = q(gnuplot.PALETTE[(mi - 1) % #gnuplot.PALETTE + 1])
    for _, kind in ipairs { "v", "u" } do
      local d = per[mi .. kind]
      if d then
        local dn = "s" .. mi .. kind
        data[#data + 1] = gnuplot.datablock(dn, d)
        plots[#plots + 1] = ("$%s using 1:2 with points pt %d ps 1.4 lc rgb %s title %s"):format(dn, kind == "v" and 7 or 6,
          color, q(m .. (kind == "v" and " (verified)" or " (not verified)")))
      end
    end
  end
  plots[#plots + 1] = spec.sol and "1 with lines dt 2 lw 1 lc rgb '#555555' title 'physical floor'"
    or "1 with lines dt 2 lw 1 lc rgb '#555555' title 'library (1×)'"
  local tics = {}
  for i, t in ipairs(spec.tasks) do tics[#tics + 1] = tic(t) .. " " .. (i - 1) end
  local ymin = 10 ^ math.floor(math.log(math.min(lo, 1) * 0.9, 10))
  local ymax = 10 ^ math.ceil(math.log(math.max(hi, 1) * 1.1, 10))
  local body = {
    gnuplot.COMMON,
    "set title " .. q(spec.title),
    spec.sol and "" or "set logscale y 10",
    spec.sol and ("set yrange [0:%s]"):format(num(math.ceil(math.max(hi, 1) * 11) / 10))
      or ("set yrange [%s:%s]"):format(num(ymin), num(ymax)),
    ("set xrange [-0.6:%s]"):format(num(#spec.tasks - 0.4)),
    "set xtics (" .. table.concat(tics, ", ") .. ")",
    #spec.tasks > 2 and "set xtics rotate by 20 right" or "",
    spec.sol and "set ylabel 'Fraction of the speed of light (floor / median)'"
      or "set ylabel 'Speedup over the library (×, log scale)'",
    "set key outside right top vertical",
    "plot " .. table.concat(plots, ", \\\n     "),
  }
  return gnuplot.render(dir, name, { data = table.concat(data, "\n"), body = table.concat(body, "\n"),
    w = math.max(6, 3 + 1.0 * #spec.tasks), h = 3.75 })
end

function M.instances(s)
  local a = s.a
  return { {
    name = "speedups_" .. s.sa, title = ("Every correct candidate on %s"):format(a),
    caption = ("Speedup over the library of every correct timed candidate per task on %s (log scale; filled: target "
      .. "instructions verified; dots spread sideways by model)."):format(a),
    why = s.none or s.untimed,
    draw = function(dir, name)
      return gnuplot.paged(dir, name, { title = ("Every correct candidate on %s"):format(a), models = s.models,
        tasks = s.tasks, points = s.candidates }, 1.0, 3, M.page)
    end,
  } }
end

return M
