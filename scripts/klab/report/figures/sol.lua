-- klab.report.figures.sol: every correct timed candidate's fraction of the
-- speed of light (the physical floor over its median) per task, per
-- architecture (a figure file: see klab.report.figures); drawn as
-- klab.report.figures.speedups draws speedups.

local gnuplot = require "klab.report.gnuplot"
local speedups = require "klab.report.figures.speedups"

local M = {}

function M.instances(s)
  local a = s.a
  local with_sol = 0
  for _, p in ipairs(s.candidates) do if p.sol then with_sol = with_sol + 1 end end
  return { {
    name = "sol_" .. s.sa, title = ("Speed of light on %s"):format(a),
    caption = ("Fraction of the speed of light of every correct timed candidate per task on %s: the physical floor of "
      .. "the timing rules (the task's FLOPs at the peak of the path it ran, its bytes at DRAM bandwidth) over its "
      .. "median; 1 is the floor (filled: target instructions verified)."):format(a),
    why = s.none or s.untimed or (with_sol == 0 and ("no timed result on %s has a physical floor recorded"):format(a))
      or nil,
    draw = function(dir, name)
      return gnuplot.paged(dir, name, { title = ("Speed of light on %s"):format(a), models = s.models, tasks = s.tasks,
        points = s.candidates, sol = true }, 1.0, 3, speedups.page)
    end,
  } }
end

return M
