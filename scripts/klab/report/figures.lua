-- klab.report.figures: paper figures from klab.report.metrics results, drawn by gnuplot
-- in PNG (pngcairo), SVG (svg) and PDF (pdfcairo).
--
--   local figures = require "klab.report.figures"
--   figures.probe()                      -> {gnuplot = path|nil, formats = {"png", "svg", "pdf"}, missing = {...}, why}
--   figures.fast_p(dir, name, spec)      -> files written (relative to dir)
--   figures.bars(dir, name, spec)  figures.mix(dir, name, spec)
--   figures.best_by_turn(dir, name, spec)  figures.speedups(dir, name, spec)
--   figures.sol(dir, name, spec)  figures.at_k(dir, name, spec)
--
-- Each figure is one self-contained gnuplot script (data inline) kept at
-- DIR/figures/src/NAME.gp; running `gnuplot figures/src/NAME.gp` in DIR
-- draws DIR/figures/NAME.{png,svg,pdf} again. Output is deterministic:
-- fixed sizes and fonts, data in sorted order, numbers in fixed formats, no
-- dates (cairo 1.16 writes the time into a PDF's /CreationDate and ignores
-- SOURCE_DATE_EPOCH; the date is overwritten with a fixed one of the same
-- length, so the PDF's cross-reference offsets stay valid).

local M = {}

M.FONT = "DejaVu Sans"
-- Terminal lines per format: one drawing, three sizes of the same aspect.
M.TERMS = {
  png = { term = "pngcairo", probe = "pngcairo", size = function(w, h) return ("%d,%d"):format(math.floor(w * 200 + 0.5), math.floor(h * 200 + 0.5)) end, font = 20 },
  svg = { term = "svg", probe = "svg", size = function(w, h) return ("%d,%d"):format(math.floor(w * 100 + 0.5), math.floor(h * 100 + 0.5)) end, font = 10,
          extra = " background rgb 'white'" },
  pdf = { term = "pdfcairo", probe = "pdfcairo", size = function(w, h) return ("%gin,%gin"):format(w, h) end, font = 9 },
}
M.FORMATS = { "png", "svg", "pdf" }

-- Okabe-Ito, colour-blind safe, then extra; series take them in sorted order.
M.PALETTE = { "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
  "#882255", "#44AA99", "#999933", "#AA4499" }

-- Each verdict's colour, from the one verdict list.
M.VERDICT_COLORS = {}
for _, v in ipairs(require("klab.eval.verdict").LIST) do M.VERDICT_COLORS[v.name] = v.color end

-- A gnuplot string literal, and a tic label (also a format string).
local escape = require "klab.report.escape"
local q = escape.gnuplot
local tic = escape.gnuplot_tic
M.quote = q

local function num(x)
  if x == nil or x ~= x then return "NaN" end
  if x == math.huge or x == -math.huge then return "NaN" end
  return ("%.6g"):format(x)
end
M.num = num

-- A file name part from a label: lower case, [a-z0-9._-], runs of anything
-- else become "-"; a long one is cut to 48 characters and told apart by a
-- hash of the whole label (a file name has at most 255 bytes).
function M.slug(label)
  label = tostring(label)
  local s = label:lower():gsub("[^%w%._]+", "-"):gsub("^%-+", ""):gsub("%-+$", "")
  if s == "" then s = "x" end
  if #s > 60 then
    s = ("%s-%08x"):format(s:sub(1, 48), require("klab.report.stats").fnv1a(label) & 0xffffffff)
  end
  return s
end

local probed
-- probe() -> {gnuplot = true|false, formats = {...available...}, missing = {...}, why = string|nil}.
-- Checks that gnuplot runs and which of the three terminals it has.
function M.probe()
  if probed then return probed end
  local res = require("klab.spawn").run { argv = { "gnuplot", "-e", "set term" }, stderr = "stdout", timeout = 30 }
  local out = res and res.stdout or ""
  local ok = res and res.ok
  local r = { formats = {}, missing = {} }
  if not ok or not out:find("Available terminal types", 1, true) then
    r.gnuplot = false
    r.why = "gnuplot was not found (install gnuplot-nox): figures are not drawn"
    for _, f in ipairs(M.FORMATS) do r.missing[#r.missing + 1] = f end
  else
    r.gnuplot = true
    for _, f in ipairs(M.FORMATS) do
      if out:find("\n%s*" .. M.TERMS[f].probe .. "%s") then r.formats[#r.formats + 1] = f
      else r.missing[#r.missing + 1] = f end
    end
    if #r.missing > 0 then
      r.why = "this gnuplot lacks the terminal(s) for " .. table.concat(r.missing, ", ") .. ": those formats are not drawn"
    end
  end
  probed = r
  return r
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function write_file(path, s)
  assert(require("klab.fs").write(path, s))
end
M.write_file = write_file

-- Overwrites the creation and modification dates of a PDF with a fixed
-- date of the same length.
function M.fix_pdf_dates(path)
  local s = read_file(path)
  if not s then return false end
  local fixed = s:gsub("(/CreationDate%s*%(D:)(%d+)", function(a, d) return a .. ("2000010100000000000000"):sub(1, #d) end)
  fixed = fixed:gsub("(/ModDate%s*%(D:)(%d+)", function(a, d) return a .. ("2000010100000000000000"):sub(1, #d) end)
  if fixed ~= s then write_file(path, fixed) end
  return true
end

local batch -- the scripts waiting for M.finish, or nil: drawn at once

-- What a finished gnuplot run leaves: nil when it drew (the PDFs' dates
-- then fixed), else why not.
local function finished(job, res, err)
  if not (res and res.ok) then
    local msg = res and res.stdout or tostring(err)
    return ("gnuplot failed on %s: %s"):format(job.src, (msg:gsub("%s+$", "")))
  end
  for _, rel in ipairs(job.outs) do
    if rel:sub(-4) == ".pdf" then M.fix_pdf_dates(job.dir .. "/" .. rel) end
  end
  return nil
end

local function draw_now(job)
  local res, err = require("klab.spawn").run { argv = { "gnuplot", job.src }, cwd = job.dir, stderr = "stdout",
    timeout = 300 }
  return finished(job, res, err)
end

-- render(dir, name, body, {w = inches, h = inches}) -> list of files
-- (relative to dir), or nil, why. body is gnuplot commands that draw one
-- figure (data blocks may be defined in spec.data, written once before).
function M.render(dir, name, fig)
  local pr = M.probe()
  local w, h = fig.w or 6, fig.h or 3.75
  local lines = {
    "# " .. name .. ": drawn by klab report; run `gnuplot figures/src/" .. name .. ".gp` in the report directory.",
    "reset",
    fig.data or "",
  }
  local outs = {}
  -- Without gnuplot here the source still draws every format, for a
  -- machine that has it (the first line says how).
  local drawn = {}
  for _, f in ipairs(pr.formats) do drawn[f] = true end
  for _, f in ipairs(#pr.formats > 0 and pr.formats or M.FORMATS) do
    local t = M.TERMS[f]
    local rel = "figures/" .. name .. "." .. f
    lines[#lines + 1] = ("set terminal %s size %s font %s noenhanced%s"):format(t.term, t.size(w, h),
      q(M.FONT .. "," .. t.font), t.extra or "")
    lines[#lines + 1] = "set output " .. q(rel)
    lines[#lines + 1] = fig.body
    lines[#lines + 1] = "unset output"
    lines[#lines + 1] = "reset"
    if drawn[f] then outs[#outs + 1] = rel end
  end
  local src = "figures/src/" .. name .. ".gp"
  write_file(dir .. "/" .. src, table.concat(lines, "\n") .. "\n")
  local files = { src }
  if not pr.gnuplot or #outs == 0 then return files, pr.why end
  for _, rel in ipairs(outs) do files[#files + 1] = rel end
  local job = { dir = dir, src = src, outs = outs }
  if batch then
    -- Drawn by M.finish, with the others.
    batch[#batch + 1] = job
    return files
  end
  local why = draw_now(job)
  if why then return nil, why end
  return files
end

-- Figures drawn together: between M.start() and M.finish(), render writes
-- each script and returns its files at once, and finish runs gnuplot on
-- them, several at a time (the figures of a study take tens of seconds
-- one after another). finish() -> {[src] = why} for the scripts gnuplot
-- refused (their images are not there); the caller leaves those out.
function M.start() batch = {} end

function M.finish()
  local jobs = batch or {}
  batch = nil
  local failed, running, next_job = {}, {}, 1
  local width = math.max(1, math.min(8, require("klab.sys").cpu_count()))
  local spawn = require "klab.spawn"
  local function collect(r)
    local res, err = r.p:wait()
    r.p:free()
    failed[r.job.src] = finished(r.job, res, err)
  end
  while next_job <= #jobs or #running > 0 do
    while #running < width and next_job <= #jobs do
      local job = jobs[next_job]
      next_job = next_job + 1
      local p, err = spawn.start { argv = { "gnuplot", job.src }, cwd = job.dir, stderr = "stdout", timeout = 300 }
      if p then running[#running + 1] = { p = p, job = job }
      else failed[job.src] = ("gnuplot did not start on %s: %s"):format(job.src, tostring(err)) end
    end
    -- In the order started: the output does not depend on which ends first.
    if #running > 0 then collect(table.remove(running, 1)) end
  end
  return failed
end

-- ---- shared pieces ------------------------------------------------------

local COMMON = table.concat({
  "set border 3 lw 1",
  "set tics nomirror out scale 0.6",
  "set grid ytics lc rgb '#DDDDDD' lw 1 dt 1",
  "set key noenhanced",
}, "\n")

local function empty_body(title, message)
  return table.concat({
    COMMON,
    "set title " .. q(title),
    "unset border", "unset tics", "unset grid", "unset key",
    "set label 1 " .. q(message) .. " at graph 0.5, 0.5 center",
    "set xrange [0:1]", "set yrange [0:1]",
    "plot 2 notitle",
  }, "\n")
end

local function datablock(name, rows)
  local out = { "$" .. name .. " << EOD" }
  for _, r in ipairs(rows) do out[#out + 1] = table.concat(r, " ") end
  if #rows == 0 then out[#out + 1] = "NaN NaN" end
  out[#out + 1] = "EOD"
  return table.concat(out, "\n")
end

-- ---- fast_p --------------------------------------------------------------

-- fast_p(dir, name, {title, plain = metrics.fast_p rows, verified = rows
-- with verified = true}) : two panels (all correct | target instructions
-- verified), one line per model with its Wilson band.
function M.fast_p(dir, name, spec)
  local plain, ver = spec.plain or {}, spec.verified or {}
  if #plain == 0 then return M.render(dir, name, { body = empty_body(spec.title, "no trajectories") }) end
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
      data[#data + 1] = datablock(dn, rows)
      local color = M.PALETTE[(i - 1) % #M.PALETTE + 1]
      table.insert(plots[k], ("$%s using 1:3:4 with filledcurves fc rgb %s fs transparent solid 0.15 noborder notitle"):format(dn, q(color)))
      table.insert(plots[k], ("$%s using 1:2 with lines lw 2 lc rgb %s title %s"):format(dn, q(color), q(row.model)))
    end
  end
  local any = false
  for _, row in ipairs(plain) do
    for _, pt in ipairs(row.points) do if pt.value > 0 then any = true end end
  end
  local body = {
    COMMON,
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
  return M.render(dir, name, { data = table.concat(data, "\n"), body = table.concat(body, "\n"), w = 9, h = 3.6 })
end

-- ---- Fast@k and best-of-k ----------------------------------------------------

-- at_k(dir, name, {title, rows = at_k.curves rows}): left Fast@k (the
-- chance that one of k trajectories of a task is faster than p x the
-- library), right best-of-k (the expected best speedup of k), against k,
-- one line per model with its bootstrap band over tasks.
function M.at_k(dir, name, spec)
  local rows = spec.rows or {}
  if #rows == 0 then return M.render(dir, name, { body = empty_body(spec.title, "no trajectories") }) end
  local data, plots = {}, { {}, {} }
  local kmax, top = 1, 1
  for i, row in ipairs(rows) do
    local color = q(M.PALETTE[(i - 1) % #M.PALETTE + 1])
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
      data[#data + 1] = datablock(dn, d)
      table.insert(plots[panel], ("$%s using 1:3:4 with filledcurves fc rgb %s fs transparent solid 0.15 noborder notitle")
        :format(dn, color))
      table.insert(plots[panel], ("$%s using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb %s title %s"):format(dn, color,
        q(("%s (%d tasks)"):format(row.model, row.tasks))))
    end
  end
  table.insert(plots[2], "1 with lines dt 2 lw 1 lc rgb '#555555' title 'library (1×)'")
  local body = {
    COMMON,
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
  return M.render(dir, name, { data = table.concat(data, "\n"), body = table.concat(body, "\n"), w = 9, h = 3.6 })
end

-- ---- correct and verified bars ----------------------------------------------

-- bars(dir, name, {title, models = {...}, tasks = {...}, cell = function(model, task)
-- -> {correct = rate, correct_ci = {lo, hi}, verified = rate, verified_ci}}):
-- per task, per model a solid bar (correct) and a hatched bar (verified),
-- in percent, with Wilson error bars.
local function bars_page(dir, name, spec)
  local models, tasks = spec.models, spec.tasks
  if #models == 0 or #tasks == 0 then return M.render(dir, name, { body = empty_body(spec.title, "no trajectories") }) end
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
  if not any then return M.render(dir, name, { body = empty_body(spec.title, "no trajectories") }) end
  local tics = {}
  for ti, task in ipairs(tasks) do tics[#tics + 1] = tic(task) .. " " .. (ti - 1) end
  local plots = {}
  for mi, m in ipairs(models) do
    local color = q(M.PALETTE[(mi - 1) % #M.PALETTE + 1])
    local base = 1 + (mi - 1) * 6
    plots[#plots + 1] = ("$bars using %d:%d:%d lc rgb %s fs solid 0.85 border lc rgb %s title %s"):format(base + 1, base + 2,
      base + 3, color, color, q(m .. ": correct"))
    plots[#plots + 1] = ("$bars using %d:%d:%d lc rgb %s fs pattern 5 border lc rgb %s title %s"):format(base + 4, base + 5,
      base + 6, color, color, q(m .. ": verified"))
  end
  local w = math.max(6, 1.2 + #tasks * (0.35 + 0.3 * #models))
  local body = {
    COMMON,
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
  return M.render(dir, name, { data = datablock("bars", rows), body = table.concat(body, "\n"), w = w + 2, h = 3.75 })
end

-- ---- failure mix ----------------------------------------------------------

-- mix(dir, name, {title, row = a metrics.failure_mix row}): per turn a
-- stacked bar of verdict shares (percent), with the number of turns above.
function M.mix(dir, name, spec)
  local row = spec.row
  if not row or #row.verdicts == 0 then return M.render(dir, name, { body = empty_body(spec.title, "no turns") }) end
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
    plots[#plots + 1] = ("$mix using %d lc rgb %s title %s"):format(i + 1, q(M.VERDICT_COLORS[v] or "#333333"), q(v))
  end
  local body = {
    COMMON,
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
  return M.render(dir, name, { data = datablock("mix", rows), body = table.concat(body, "\n"),
    w = math.max(6, 3.5 + 0.4 * #row.turns), h = 3.75 })
end

-- ---- best speedup against the turn ---------------------------------------------

-- best_by_turn(dir, name, {title, rows = metrics.best_by_turn rows}): one
-- line per model, mean best speedup so far with its bootstrap interval and
-- the number of trajectories it averages.
function M.best_by_turn(dir, name, spec)
  local rows = spec.rows or {}
  if #rows == 0 then return M.render(dir, name, { body = empty_body(spec.title, "no trajectories") }) end
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
    data[#data + 1] = datablock(dn, d)
    local color = q(M.PALETTE[(i - 1) % #M.PALETTE + 1])
    plots[#plots + 1] = ("$%s using 1:2:3:4 with yerrorbars lc rgb %s pt 7 ps 0.6 notitle"):format(dn, color)
    plots[#plots + 1] = ("$%s using 1:2 with lines lw 2 lc rgb %s title %s"):format(dn, color, q(row.model))
    -- How many trajectories each point averages.
    plots[#plots + 1] = ("$%s using 1:4:5 with labels offset 0,0.7 font ',8' tc rgb %s notitle"):format(dn, color)
  end
  plots[#plots + 1] = "1 with lines dt 2 lw 1 lc rgb '#555555' title 'library (1×)'"
  local body = {
    COMMON,
    "set title " .. q(spec.title),
    "set xlabel 'Turn limit'",
    "set ylabel 'Mean best speedup so far (× library)'",
    ("set xrange [0.5:%s]"):format(num(limit + 0.5)),
    ("set yrange [0:%s]"):format(num(math.ceil(top * 1.15 * 10) / 10)),
    "set xtics 1",
    "set key outside right top vertical",
    "plot " .. table.concat(plots, ", \\\n     "),
  }
  return M.render(dir, name, { data = table.concat(data, "\n"), body = table.concat(body, "\n"), w = 7, h = 3.75 })
end

-- ---- every candidate's speedup ----------------------------------------------------

-- speedups(dir, name, {title, models, tasks, points = metrics.candidates rows,
-- seed, sol}): per task, each correct timed candidate as a dot (log scale),
-- models side by side with a deterministic jitter, verified ones filled.
-- With sol, the dots are the candidates' speed-of-light fractions (the
-- physical floor over the median, linear scale, the floor at 1) and those
-- without one are left out.
local function speedups_page(dir, name, spec)
  local field = spec.sol and "sol" or "speedup"
  local pts = {}
  for _, p in ipairs(spec.points or {}) do if p[field] then pts[#pts + 1] = p end end
  if #pts == 0 then return M.render(dir, name, { body = empty_body(spec.title, "no correct timed candidates") }) end
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
    local color = q(M.PALETTE[(mi - 1) % #M.PALETTE + 1])
    for _, kind in ipairs { "v", "u" } do
      local d = per[mi .. kind]
      if d then
        local dn = "s" .. mi .. kind
        data[#data + 1] = datablock(dn, d)
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
    COMMON,
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
  return M.render(dir, name, { data = table.concat(data, "\n"), body = table.concat(body, "\n"),
    w = math.max(6, 3 + 1.0 * #spec.tasks), h = 3.75 })
end

-- ---- pages -------------------------------------------------------------------

-- The widest figure drawn, in inches (at 200 px per inch, well inside the
-- renderer's 32,767 px): a figure with more tasks than fit is drawn as
-- pages of consecutive tasks (NAME_p1, NAME_p2, ...), each readable.
M.MAX_WIDTH_IN = 40

local function paged(dir, name, spec, per_task_in, fixed_in, draw)
  local tasks = spec.tasks or {}
  local per_page = math.max(1, math.floor((M.MAX_WIDTH_IN - fixed_in) / per_task_in))
  if #tasks <= per_page then return draw(dir, name, spec) end
  local files, pages = {}, math.ceil(#tasks / per_page)
  for k = 1, pages do
    local sub = {}
    for key, v in pairs(spec) do sub[key] = v end
    sub.tasks = {}
    for i = (k - 1) * per_page + 1, math.min(#tasks, k * per_page) do sub.tasks[#sub.tasks + 1] = tasks[i] end
    sub.title = ("%s (tasks %d to %d of %d)"):format(spec.title, (k - 1) * per_page + 1, (k - 1) * per_page + #sub.tasks,
      #tasks)
    local f, err = draw(dir, ("%s_p%d"):format(name, k), sub)
    if not f then return nil, err end
    for _, x in ipairs(f) do files[#files + 1] = x end
  end
  return files
end

function M.bars(dir, name, spec)
  return paged(dir, name, spec, 0.35 + 0.3 * math.max(1, #(spec.models or {})), 3.2, bars_page)
end

function M.speedups(dir, name, spec)
  return paged(dir, name, spec, 1.0, 3, speedups_page)
end

-- sol(dir, name, spec): speedups' spec, the speed-of-light fractions.
function M.sol(dir, name, spec)
  local s = {}
  for k, v in pairs(spec) do s[k] = v end
  s.sol = true
  return paged(dir, name, s, 1.0, 3, speedups_page)
end

return M
