-- klab.report.figures: the figures of a report section, each one file of
-- this folder, registered once in NAMES below (the order they are drawn and
-- listed in). A figure with nothing to show is left out with the reason,
-- and one the renderer refuses is left out with its message; the rest are
-- drawn (klab.report.gnuplot draws them, several at a time).
--
--   local figs, omitted = require("klab.report.figures").draw(dir, d)
--     d = {trajs, counted (decided at the limit), limit, fast_p, fast_p_verified,
--          success, failure_mix, best_by_turn, candidates, at_k, note (files -> files)}:
--          the section's metrics (klab.report.metrics); a figure that needs another
--          computes it from d.trajs or d.counted
--     figs = {{name, caption, files}}, omitted = {{name, title, why}}
--
-- A figure file has instances(s) -> a list of {name=, title=, caption=, why=,
-- draw = function(dir, name) -> files (relative to dir) or nil, why}, for
-- one architecture: s = {a = the architecture, sa = its slug, limit = the
-- turn limit, d = the section's metrics, models =, tasks = (sorted, on a),
-- candidates = d.candidates on a, by_arch = function(rows) -> the rows on a,
-- none = why nothing on a can be drawn (no trajectory has a result) or nil,
-- untimed = why nothing timed can be drawn or nil}. why set: the figure is
-- left out for that reason.

local gnuplot = require "klab.report.gnuplot"

local M = {}

M.NAMES = { "fast_p", "correct", "failure_mix", "best_by_turn", "speedups", "sol", "at_k" }

local function sorted_set(list, field)
  local seen, out = {}, {}
  for _, x in ipairs(list) do
    local v = x[field]
    if v ~= nil and not seen[v] then seen[v] = true out[#out + 1] = v end
  end
  table.sort(out, function(a, b) return tostring(a) < tostring(b) end)
  return out
end

local function on_arch(rows, a)
  local out = {}
  for _, r in ipairs(rows) do if r.arch == a then out[#out + 1] = r end end
  return out
end

-- What every figure of architecture a is told.
local function situation(d, a)
  local at, ac = on_arch(d.trajs, a), on_arch(d.counted, a)
  -- Every correct timed candidate: without one, nothing timed has anything to draw.
  local pts = on_arch(d.candidates, a)
  return {
    a = a, sa = gnuplot.slug(a), limit = d.limit, d = d, models = sorted_set(at, "model"), tasks = sorted_set(at, "task"),
    candidates = pts, by_arch = function(rows) return on_arch(rows, a) end,
    none = #ac == 0 and "no trajectory on " .. a .. " has a result (every one is unmeasured or unfinished)" or nil,
    untimed = #pts == 0 and ("no correct timed candidate on %s"):format(a) or nil,
  }
end

function M.draw(dir, d)
  local figs, omitted = {}, {}
  -- gnuplot draws them all at the end, several at a time.
  gnuplot.start()
  for _, a in ipairs(sorted_set(d.trajs, "arch")) do
    local s = situation(d, a)
    for _, fig_name in ipairs(M.NAMES) do
      for _, f in ipairs(require("klab.report.figures." .. fig_name).instances(s)) do
        if f.why then
          omitted[#omitted + 1] = { name = f.name, title = f.title, why = f.why }
        else
          -- A figure the renderer refuses is left out and named; the rest
          -- of the report is still written.
          local files, ferr = f.draw(dir, f.name)
          if files then
            figs[#figs + 1] = { name = f.name, title = f.title, caption = f.caption, files = files }
          else
            omitted[#omitted + 1] = { name = f.name, title = f.title, why = tostring(ferr) }
          end
        end
      end
    end
  end

  -- A figure one of whose scripts gnuplot refused is left out and named
  -- (its script stays, to be run again); the rest are written.
  local failed = gnuplot.finish()
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
