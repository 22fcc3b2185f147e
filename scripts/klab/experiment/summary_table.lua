-- klab.experiment.summary_table: the experiment's summary as plain text,
-- one row per trajectory with each turn's verdict as its short code.
--
--   summary_table.format(rows) -> text (rows as klab.experiment's Exp:rows gives them)
--   summary_table.cells(cells) -> text (cells as Exp:cells gives them: PTXBench's cells)
--   summary_table.SHORT        verdict name -> short code

local verdicts = require "klab.eval.verdict"
local term = require("klab.report.escape").terminal

local M = {}

-- head and lines (lists of cells) as aligned text columns, a rule under the head.
local function columns(head, lines)
  local width = {}
  for i, h in ipairs(head) do width[i] = #h end
  for _, l in ipairs(lines) do
    for i, c in ipairs(l) do width[i] = math.max(width[i], #c) end
  end
  local function fmt(cells)
    local out = {}
    for i, c in ipairs(cells) do out[i] = c .. (" "):rep(width[i] - #c) end
    return (table.concat(out, "  "):gsub("%s+$", ""))
  end
  local out = { fmt(head) }
  local rule = {}
  for i in ipairs(head) do rule[i] = ("-"):rep(width[i]) end
  out[#out + 1] = fmt(rule)
  for _, l in ipairs(lines) do out[#out + 1] = fmt(l) end
  return out
end

-- The short code of each verdict (klab.eval.verdict defines them).
M.SHORT = verdicts.SHORT

local function speed(x) return x and ("%.3fx"):format(x) or "-" end

-- The summary table (a string): task, model, tag, the language (for a study in
-- other languages than cuda alone), replica, turns, the verdict of each turn,
-- the best speedup, the selected turn, and why the trajectory stopped; then a legend.
function M.format(rows)
  local languages = false
  for _, r in ipairs(rows) do if require("klab.experiment.languages").other(r.language) then languages = true end end
  local head = { "task", "model", "tag", "rep", "turns", "verdicts per turn", "best", "selected", "stop" }
  if languages then table.insert(head, 4, "language") end
  local lines, used = {}, {}
  for _, r in ipairs(rows) do
    local vs = {}
    for i, v in ipairs(r.verdicts) do
      vs[i] = M.SHORT[v] or v
      used[v] = true
    end
    -- Names come from a store: shown with their control characters escaped.
    lines[#lines + 1] = { term(r.task), term(r.model), term(r.tag), tostring(r.replica), tostring(#r.verdicts), table.concat(vs, " "),
      speed(r.best_speedup), r.selected_turn and ("t" .. r.selected_turn .. " " .. speed(r.selected_speedup)) or "-",
      term(r.state == "done" and (r.stop_reason or "done") or "running") }
    if languages then table.insert(lines[#lines], 4, term(r.language)) end
  end
  local out = columns(head, lines)
  local legend = {}
  local names = {}
  for v in pairs(used) do names[#names + 1] = v end
  table.sort(names, function(a, b)
    local ra = verdicts.valid(a) and verdicts.rank(a) or 0
    local rb = verdicts.valid(b) and verdicts.rank(b) or 0
    if ra ~= rb then return ra < rb end
    return a < b
  end)
  for _, v in ipairs(names) do legend[#legend + 1] = (M.SHORT[v] or v) .. " " .. v end
  if #legend > 0 then out[#out + 1] = "verdicts: " .. table.concat(legend, ", ") end
  return table.concat(out, "\n")
end

-- PTXBench's cells as the report's table writes them (klab.report.tables:
-- "correct/n / verified/n / best", "not measured" where no trajectory has a
-- result), a row per model and task, with the trajectories left out of n.
function M.cells(cells)
  local tables = require "klab.report.tables"
  local lines = {}
  for _, c in ipairs(cells) do
    lines[#lines + 1] = { term(c.model), term(c.task), tables.ptxbench_cell(c), tables.left_out(c) }
  end
  return table.concat(columns({ "model", "task", "correct / verified / best", "left out" }, lines), "\n")
end

return M
