-- klab.report.gnuplot: how the report's figures (klab.report.figures, one
-- file each) are drawn: by gnuplot, in PNG (pngcairo), SVG (svg) and PDF
-- (pdfcairo), with the pieces they share.
--
--   local gnuplot = require "klab.report.gnuplot"
--   gnuplot.probe()                      -> {gnuplot = path|nil, formats = {"png", "svg", "pdf"}, missing = {...}, why}
--   gnuplot.render(dir, name, {data=, body=, w=, h=}) -> files written (relative to dir), or nil, why
--   gnuplot.render_empty(dir, name, title, message)  a figure with nothing to draw
--   gnuplot.start(), gnuplot.finish()    draw the figures rendered in between together
--   gnuplot.paged(dir, name, spec, per_task_in, fixed_in, draw) -> a wide figure as pages of tasks
--   gnuplot.COMMON, gnuplot.empty_body(title, message), gnuplot.datablock(name, rows),
--   gnuplot.num(x), gnuplot.quote(s), gnuplot.tic(s), gnuplot.slug(label), gnuplot.PALETTE,
--   gnuplot.VERDICT_COLORS                the pieces a figure's script is made of
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
M.tic = tic

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

local function write_file(path, s)
  assert(require("klab.fs").write(path, s))
end
M.write_file = write_file

-- Overwrites the creation and modification dates of a PDF with a fixed
-- date of the same length.
function M.fix_pdf_dates(path)
  local s = require("klab.fs").read(path)
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

-- The settings every figure starts from.
local COMMON = table.concat({
  "set border 3 lw 1",
  "set tics nomirror out scale 0.6",
  "set grid ytics lc rgb '#DDDDDD' lw 1 dt 1",
  "set key noenhanced",
}, "\n")
M.COMMON = COMMON

-- A figure with nothing to draw: its title and a message in the middle.
function M.empty_body(title, message)
  return table.concat({
    COMMON,
    "set title " .. q(title),
    "unset border", "unset tics", "unset grid", "unset key",
    "set label 1 " .. q(message) .. " at graph 0.5, 0.5 center",
    "set xrange [0:1]", "set yrange [0:1]",
    "plot 2 notitle",
  }, "\n")
end

-- render() of a figure with nothing to draw.
function M.render_empty(dir, name, title, message) return M.render(dir, name, { body = M.empty_body(title, message) }) end

-- A gnuplot data block $name of rows (lists of fields).
function M.datablock(name, rows)
  local out = { "$" .. name .. " << EOD" }
  for _, r in ipairs(rows) do out[#out + 1] = table.concat(r, " ") end
  if #rows == 0 then out[#out + 1] = "NaN NaN" end
  out[#out + 1] = "EOD"
  return table.concat(out, "\n")
end


-- ---- pages -------------------------------------------------------------------

-- The widest figure drawn, in inches (at 200 px per inch, well inside the
-- renderer's 32,767 px): a figure with more tasks than fit is drawn as
-- pages of consecutive tasks (NAME_p1, NAME_p2, ...), each readable.
M.MAX_WIDTH_IN = 40

-- draw(dir, name, spec) draws spec.tasks; a figure takes per_task_in inches
-- a task and fixed_in inches besides.
function M.paged(dir, name, spec, per_task_in, fixed_in, draw)
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

return M
