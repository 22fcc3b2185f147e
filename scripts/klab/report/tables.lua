-- klab.report.tables: the paper tables from klab.report.metrics results, in Markdown,
-- LaTeX (booktabs) and HTML.
--
--   local tables = require "klab.report.tables"
--   local list = tables.ptxbench(metrics.success(trajs), "sm_90a")   -- one table per turn limit
--   local t = tables.kbv(metrics.kbv(trajs))
--   tables.markdown(t), tables.latex(t), tables.html(t)   -> strings
--
-- A table is {id, caption, head = {...}, align = {"l"|"r", ...},
-- rows = {{cell, ...}, ...}, notes = {...}}; cells are strings.
-- Numbers: speedups with 3 decimals, shares in percent with 1 decimal,
-- 95% intervals in brackets (Wilson for rates, bootstrap for speedups: docs/report.md).

local M = {}

local function speed(x) return x and ("%.3f"):format(x) or "-" end
local function pct(x) return x and ("%.1f%%"):format(x * 100) or "-" end
local function ci_pct(ci) return (ci and ci[1]) and ("[%.1f, %.1f]"):format(ci[1] * 100, ci[2] * 100) or "" end
local function ci_speed(ci) return (ci and ci[1]) and ("[%.3f, %.3f]"):format(ci[1], ci[2]) or "" end
local function with_ci(v, ci) local c = ci_pct(ci) return c == "" and pct(v) or pct(v) .. " " .. c end
M.speed, M.pct, M.ci_pct, M.ci_speed = speed, pct, ci_pct, ci_speed

local function sorted_keys(set)
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- ---- builders ----------------------------------------------------------

-- The note for trajectories left out of the rates, or nil when none was.
function M.left_out_note(not_measured, unfinished)
  if (not_measured or 0) + (unfinished or 0) == 0 then return nil end
  return ("Left out of n: %d trajector%s with no result (a turn's verdict unknown or request_error, none passed) and "
    .. "%d unfinished; they are not failures."):format(not_measured, not_measured == 1 and "y" or "ies", unfinished)
end

-- ptxbench_cell(success_row, common) -> PTXBench's cell for one model and
-- task at one turn limit: "not measured" when no trajectory counts (none
-- has a result within the limit, or none finished), "correct / verified /
-- best" when the row's n is `common`, else "correct/n / verified/n / best".
-- The report's tables and the console's (klab.experiment.summary_table) both
-- say it this way.
function M.ptxbench_cell(r, common)
  if r.n == 0 then return "not measured" end
  if r.n == common then return ("%d / %d / %s"):format(r.correct, r.verified, speed(r.best)) end
  return ("%d/%d / %d/%d / %s"):format(r.correct, r.n, r.verified, r.n, speed(r.best))
end

-- left_out(success_row) -> "2 not measured, 1 unfinished", or "-" when no
-- trajectory of the row was left out of its n.
function M.left_out(r)
  local left = {}
  if (r.not_measured or 0) > 0 then left[#left + 1] = r.not_measured .. " not measured" end
  if (r.unfinished or 0) > 0 then left[#left + 1] = r.unfinished .. " unfinished" end
  return #left > 0 and table.concat(left, ", ") or "-"
end

-- ptxbench(success_rows, arch) -> list of tables, one per turn limit: a row
-- per model, a column per task, cells "correct / verified / best" (counts of
-- trajectories; best speedup of a correct turn, "-" when none). A cell whose
-- number of trajectories differs from the table's usual one shows "c/n / v/n";
-- a cell with no trajectory that counts (none measured or finished) shows
-- "not measured". Trajectories left out are named in a note.
function M.ptxbench(rows, arch)
  local limits, models, tasks = {}, {}, {}
  local cell = {}
  for _, r in ipairs(rows) do
    if r.arch == arch then
      limits[r.limit], models[r.model], tasks[r.task] = true, true, true
      cell[r.limit .. "\0" .. r.model .. "\0" .. r.task] = r
    end
  end
  local out = {}
  local ls = {}
  for l in pairs(limits) do ls[#ls + 1] = l end
  table.sort(ls)
  local ms, ts = sorted_keys(models), sorted_keys(tasks)
  for _, L in ipairs(ls) do
    local counts, common, best_n = {}, nil, 0
    local nm, uf = 0, 0
    for _, m in ipairs(ms) do
      for _, t in ipairs(ts) do
        local r = cell[L .. "\0" .. m .. "\0" .. t]
        if r then
          -- The caption's n is what most cells that hold trajectories hold:
          -- an empty cell ("not measured") does not count.
          if r.n > 0 then counts[r.n] = (counts[r.n] or 0) + 1 end
          nm, uf = nm + (r.not_measured or 0), uf + (r.unfinished or 0)
        end
      end
    end
    for n, k in pairs(counts) do
      if k > best_n or (k == best_n and n < common) then common, best_n = n, k end
    end
    local t = {
      id = ("ptxbench_%s_t%d"):format(arch, L),
      caption = common and ("Correct / verified / best speedup on %s, turn limit %d (n = %d trajectories per cell; "
        .. "a cell with another n says it)"):format(arch, L, common)
        or ("Correct / verified / best speedup on %s, turn limit %d (no cell holds a trajectory with a result)"):format(
          arch, L),
      head = { "Model" }, align = { "l" }, rows = {},
      notes = { "correct: trajectories with at least one correct turn within the limit; verified: trajectories with "
        .. "at least one correct turn whose target instructions were seen executing; best: the largest speedup over "
        .. "the library among the correct turns (- when none was timed)." },
    }
    local lo = M.left_out_note(nm, uf)
    if lo then t.notes[#t.notes + 1] = lo end
    for _, task in ipairs(ts) do t.head[#t.head + 1] = task t.align[#t.align + 1] = "r" end
    for _, m in ipairs(ms) do
      local line = { m }
      for _, task in ipairs(ts) do
        local r = cell[L .. "\0" .. m .. "\0" .. task]
        line[#line + 1] = r and M.ptxbench_cell(r, common) or ""
      end
      t.rows[#t.rows + 1] = line
    end
    out[#out + 1] = t
  end
  return out
end

-- kbv(kbv_rows) -> table: a row per arch x model: problems, geometric mean
-- speedup over correct problems [CI], correctness [CI], Fast@1 [CI], and
-- the speed-of-light column when any problem has a physical floor.
function M.kbv(rows)
  local t = {
    id = "kbv",
    caption = "Speedup / correctness / Fast@1 (best of the trajectories of each task; 95% intervals: bootstrap over tasks for the speedup, Wilson for the rates)",
    head = { "Arch", "Model", "Problems", "Speedup", "Correctness", "Fast@1" },
    align = { "l", "l", "r", "r", "r", "r" }, rows = {},
    notes = { "Speedup: geometric mean over correct problems of the best speedup over the library; Correctness: "
      .. "correct problems / problems; Fast@1: problems with best speedup > 1 / problems. A problem is a task; "
      .. "its trajectories are its N samples." },
  }
  local sol = false
  for _, r in ipairs(rows) do if (r.sol_n or 0) > 0 then sol = true end end
  if sol then
    t.head[#t.head + 1], t.align[#t.align + 1] = "SOL", "r"
    t.notes[#t.notes + 1] = "SOL: geometric mean over the timed problems of the best turn's speed-of-light fraction, "
      .. "the physical floor the timing rules use (FLOPs at the peak of the path it ran, bytes at DRAM bandwidth) "
      .. "over its median time (1 = at the floor)."
  end
  for _, r in ipairs(rows) do
    local line = { r.arch, r.model, tostring(r.problems),
      r.speedup and (speed(r.speedup) .. " " .. (r.speedup_ci and ci_speed(r.speedup_ci)
        or r.timed == 1 and "(one task: no interval)" or "")):gsub("%s+$", "") or "-",
      with_ci(r.correctness, r.correctness_ci), with_ci(r.fast1, r.fast1_ci) }
    if sol then line[#line + 1] = r.sol and speed(r.sol) or "-" end
    t.rows[#t.rows + 1] = line
  end
  return t
end

-- success(success_rows) -> table: every arch x model x task x limit with its
-- rates and intervals and best speedups.
function M.success(rows)
  local t = {
    id = "success",
    caption = "Trajectories with a correct (verified) turn within each turn limit, 95% Wilson intervals",
    head = { "Arch", "Model", "Task", "Turns", "n", "Correct", "Verified", "Best", "Best verified", "Left out" },
    align = { "l", "l", "l", "r", "r", "r", "r", "r", "r", "r" }, rows = {},
    notes = { "n: trajectories that count at the turn limit; left out: those with no result within it (not measured) "
      .. "or unfinished, which are not failures." },
  }
  for _, r in ipairs(rows) do
    t.rows[#t.rows + 1] = { r.arch, r.model, r.task, tostring(r.limit), tostring(r.n),
      with_ci(r.correct_rate, r.correct_ci), with_ci(r.verified_rate, r.verified_ci), speed(r.best), speed(r.best_verified),
      M.left_out(r) }
  end
  return t
end

-- at_k(rows) -> table: klab.report.at_k curves, a row per arch x model x k.
function M.at_k(rows)
  local t = {
    id = "at_k",
    caption = "Fast@k and best-of-k: k trajectories of each task, the mean over tasks, 95% bootstrap intervals over tasks",
    head = { "Arch", "Model", "Tasks", "k", "Fast@k", "Best-of-k" }, align = { "l", "l", "r", "r", "r", "r" }, rows = {},
    notes = { "Fast@k: the chance that at least one of k trajectories drawn from a task's is correct and faster than "
      .. "p × the library, 1 - C(n-c, k)/C(n, k) with c of its n trajectories so; best-of-k: the expected best "
      .. "speedup of k drawn trajectories, one with no correct timed turn counting as 0. k goes up to the fewest "
      .. "trajectories any task of the row has." },
  }
  if rows[1] and rows[1].p ~= 1 then t.caption = t.caption .. (" (p = %g)"):format(rows[1].p) end
  for _, r in ipairs(rows) do
    for _, pt in ipairs(r.points) do
      local bc = ci_speed(pt.best_ci)
      t.rows[#t.rows + 1] = { r.arch, r.model, tostring(r.tasks), tostring(pt.k), with_ci(pt.fast, pt.fast_ci),
        speed(pt.best) .. (bc ~= "" and (" " .. bc) or "") }
    end
  end
  return t
end

-- fast_p(plain_rows, verified_rows) -> table: a row per arch x model x
-- {all, verified}, a column per threshold p (the rows' points).
function M.fast_p(plain, verified)
  local t = {
    id = "fast_p", caption = "fast_p: trajectories correct with speedup > p, 95% Wilson intervals",
    head = { "Arch", "Model", "Instructions", "n" }, align = { "l", "l", "l", "r" }, rows = {},
  }
  local first = plain[1] or verified[1]
  if first then
    for _, pt in ipairs(first.points) do
      t.head[#t.head + 1] = ("p = %g"):format(pt.p)
      t.align[#t.align + 1] = "r"
    end
    t.caption = t.caption .. (" (turn limit %d)"):format(first.limit)
  end
  local all = {}
  for _, r in ipairs(plain) do all[#all + 1] = r end
  for _, r in ipairs(verified) do all[#all + 1] = r end
  table.sort(all, function(a, b)
    if a.arch ~= b.arch then return a.arch < b.arch end
    if a.model ~= b.model then return a.model < b.model end
    return (a.verified and 1 or 0) < (b.verified and 1 or 0)
  end)
  for _, r in ipairs(all) do
    local line = { r.arch, r.model, r.verified and "verified" or "any", tostring(r.n) }
    for _, pt in ipairs(r.points) do line[#line + 1] = with_ci(pt.value, { pt.lo, pt.hi }) end
    t.rows[#t.rows + 1] = line
  end
  return t
end

-- mix(failure_mix_rows) -> table: per arch x model x verdict, the number of
-- turns and their share [CI] over the turns with a result within the limit;
-- then the turns with no result (unknown, request_error), counted apart
-- with no share.
function M.mix(rows)
  local t = {
    id = "failure_mix", caption = "Verdicts of all turns within the turn limit, 95% bootstrap intervals over tasks",
    head = { "Arch", "Model", "Verdict", "Turns", "Share" }, align = { "l", "l", "l", "r", "r" }, rows = {},
  }
  local any = false
  for _, r in ipairs(rows) do
    for _, v in ipairs(r.verdicts) do
      t.rows[#t.rows + 1] = { r.arch, r.model, v, tostring(r.all.counts[v]) .. " / " .. r.all.total,
        with_ci(r.all.shares[v], r.all.ci[v]) }
    end
    for _, v in ipairs(sorted_keys(r.all.not_result or {})) do
      any = true
      t.rows[#t.rows + 1] = { r.arch, r.model, v .. " (no result)", tostring(r.all.not_result[v]), "not counted" }
    end
  end
  if any then
    t.notes = { "Shares are over the turns with a result; unknown (a stage could not run, e.g. no GPU) and "
      .. "request_error (the model server did not answer) are not results and are counted apart." }
  end
  return t
end

-- pdetect(pdetect_table) -> table: rows p, columns n, cells 1 - (1 - p)^n.
function M.pdetect(pt)
  local t = {
    id = "pdetect", caption = "Chance that n trials catch a failure of rate p: 1 - (1 - p)^n",
    head = { "p \\ n" }, align = { "l" }, rows = {},
  }
  for _, n in ipairs(pt.ns) do t.head[#t.head + 1] = tostring(n) t.align[#t.align + 1] = "r" end
  for i, p in ipairs(pt.ps) do
    local line = { ("%g"):format(p) }
    for j in ipairs(pt.ns) do line[#line + 1] = ("%.3f"):format(pt.values[i][j]) end
    t.rows[#t.rows + 1] = line
  end
  return t
end

-- cost(cost.table_rows rows) -> table: requests, tokens, dollars and latency
-- per condition, and the dollars per correct and per verified trajectory.
function M.cost(rows)
  local t = {
    id = "cost", caption = "Cost per condition: requests, tokens, dollars, latency",
    head = { "Arch", "Model", "Requests", "Sent", "Tokens in", "Tokens out", "USD", "Latency median", "Latency mean",
      "USD / correct", "USD / verified" },
    align = { "l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "r" }, rows = {},
    notes = { "Requests: turns that asked the model (answered by the server, the response cache or reply files); "
      .. "Sent: those the server answered in this store's runs; USD from the spec's prices (- when no price was "
      .. "given); latency in ms over the turns a server answered (now or, through the response cache, before; - when "
      .. "none was: replies read from files take no server time); per correct / verified: USD over the trajectories "
      .. "with a correct (verified) turn within the largest turn limit." },
  }
  local function usd(v) return v and ("%.4f"):format(v) or "-" end
  local function ms(v) return v and ("%.0f"):format(v) or "-" end
  for _, r in ipairs(rows) do
    t.rows[#t.rows + 1] = { r.arch, r.model, tostring(r.requests), tostring(r.network), ("%.0f"):format(r.input_tokens),
      ("%.0f"):format(r.output_tokens), usd(r.cost_usd), ms(r.latency_median_ms), ms(r.latency_mean_ms),
      usd(r.per_correct), usd(r.per_verified) }
  end
  return t
end

-- compare(conditions.compare rows) -> table: the first condition against
-- each other one, on the tasks both ran.
function M.compare(rows)
  local t = {
    id = "compare", caption = "Conditions compared (the first against each other one, on the tasks both ran)",
    head = { "Arch", "A", "B", "Tasks", "Correct A", "Correct B", "A - B", "Speedup A / B" },
    align = { "l", "l", "l", "r", "r", "r", "r", "r" }, rows = {},
    notes = { "Correct: trajectories with a correct turn within the largest turn limit, with their counts; A - B: the "
      .. "difference of the two rates with its 95% interval (Newcombe's method from the two Wilson intervals); "
      .. "Speedup A / B: the geometric mean, over the tasks where both have a timed correct turn (their number in "
      .. "parentheses), of A's best speedup over B's, with a 95% bootstrap interval over those tasks." },
  }
  for _, r in ipairs(rows) do
    local function diff(d, ci)
      if not d then return "-" end
      local s = ("%+.1f pts"):format(d * 100)
      return ci and (s .. (" [%+.1f, %+.1f]"):format(ci[1] * 100, ci[2] * 100)) or s
    end
    t.rows[#t.rows + 1] = { r.arch, r.a, r.b, tostring(r.tasks), pct(r.rate_a) .. (" (n=%d)"):format(r.n_a),
      pct(r.rate_b) .. (" (n=%d)"):format(r.n_b), diff(r.diff, r.diff_ci),
      r.ratio and ((speed(r.ratio) .. " " .. ci_speed(r.ratio_ci) .. (" (%d)"):format(r.ratio_tasks)):gsub("  ", " ")) or "-" }
  end
  return t
end

-- ---- renderers --------------------------------------------------------------

local escape = require "klab.report.escape"
local md_cell = escape.markdown

function M.markdown(t)
  local out = { "**" .. md_cell(t.caption) .. "**", "" }
  local head, rule = {}, {}
  for i, h in ipairs(t.head) do
    head[i] = md_cell(h)
    rule[i] = (t.align[i] == "r") and "---:" or ":---"
  end
  out[#out + 1] = "| " .. table.concat(head, " | ") .. " |"
  out[#out + 1] = "|" .. table.concat(rule, "|") .. "|"
  for _, r in ipairs(t.rows) do
    local cells = {}
    for i = 1, #t.head do cells[i] = md_cell(r[i] or "") end
    out[#out + 1] = "| " .. table.concat(cells, " | ") .. " |"
  end
  if #t.rows == 0 then out[#out + 1] = "" out[#out + 1] = "(no data)" end
  for _, n in ipairs(t.notes or {}) do out[#out + 1] = "" out[#out + 1] = md_cell(n) end
  return table.concat(out, "\n") .. "\n"
end

local tex = escape.latex
M.tex_escape = tex

-- LaTeX with booktabs (\usepackage{booktabs}).
function M.latex(t)
  local out = {
    "% " .. t.id .. ": written by klab report",
    "\\begin{table}[t]", "\\centering", "\\small",
    "\\caption{" .. tex(t.caption) .. "}",
    "\\label{tab:" .. t.id:gsub("[^%w]", "-") .. "}",
    "\\begin{tabular}{" .. table.concat(t.align) .. "}",
    "\\toprule",
  }
  local head = {}
  for i, h in ipairs(t.head) do head[i] = tex(h) end
  out[#out + 1] = table.concat(head, " & ") .. " \\\\"
  out[#out + 1] = "\\midrule"
  for _, r in ipairs(t.rows) do
    local cells = {}
    for i = 1, #t.head do cells[i] = tex(r[i] or "") end
    out[#out + 1] = table.concat(cells, " & ") .. " \\\\"
  end
  out[#out + 1] = "\\bottomrule"
  out[#out + 1] = "\\end{tabular}"
  for _, n in ipairs(t.notes or {}) do
    out[#out + 1] = "\\par\\smallskip\\footnotesize " .. tex(n)
  end
  out[#out + 1] = "\\end{table}"
  return table.concat(out, "\n") .. "\n"
end

local html = escape.html
M.html_escape = html

function M.html(t)
  -- The caption is a paragraph above the table, as wide as the page (a
  -- <caption> is as narrow as its table); the table scrolls in its own box
  -- when it is wider than the page, so its numbers need not wrap.
  local out = { ('<p class="caption" id="%s-caption">%s</p>'):format(html(t.id), html(t.caption)),
    ('<div class="scroll"><table id="%s" aria-labelledby="%s-caption">'):format(html(t.id), html(t.id)), "<thead><tr>" }
  for i, h in ipairs(t.head) do
    out[#out + 1] = ('<th class="%s">%s</th>'):format(t.align[i] == "r" and "r" or "l", html(h))
  end
  out[#out + 1] = "</tr></thead>"
  out[#out + 1] = "<tbody>"
  for _, r in ipairs(t.rows) do
    local cells = {}
    for i = 1, #t.head do cells[i] = ('<td class="%s">%s</td>'):format(t.align[i] == "r" and "r" or "l", html(r[i] or "")) end
    out[#out + 1] = "<tr>" .. table.concat(cells) .. "</tr>"
  end
  if #t.rows == 0 then out[#out + 1] = ('<tr><td colspan="%d">(no data)</td></tr>'):format(#t.head) end
  out[#out + 1] = "</tbody></table></div>"
  for _, n in ipairs(t.notes or {}) do out[#out + 1] = '<p class="note">' .. html(n) .. "</p>" end
  return table.concat(out, "\n") .. "\n"
end

return M
