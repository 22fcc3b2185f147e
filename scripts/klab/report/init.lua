-- klab.report: every figure and table of an experiment store, and an
-- index.html that shows them with the experiment's provenance.
--
--   local files = require("klab.report").write(db_or_path, out_dir [, opts])
--
-- db_or_path: an open store or the path of a store file (opened read-only,
-- also in a folder the user cannot write; a missing file, a file that is
-- not a klab store or an experiment the store does not hold gives nil, msg,
-- code with code ENOENT, EINVAL or ENOTFOUND). The report is written into
-- a new folder beside out_dir and then renamed into place, so an
-- interrupted report leaves the previous one whole; an existing out_dir is
-- replaced only when it is empty or a klab report. Returns the sorted list
-- of the files written (each as out_dir .. "/" .. relative path), then a
-- list of warnings (a gnuplot terminal that is missing, results that were
-- not measured, unfinished trajectories, figures left out and why). opts:
-- experiment (one experiment's name; default: each experiment in its own
-- section), limits ({1, 4, 8}), B (bootstrap resamples, 1000), seed, level
-- (0.95), ps (fast_p thresholds shown in the table), formats (the table
-- files written: {md = true, tex = true}, the default M.FORMATS).
--
-- Layout of out_dir (one experiment, or --experiment):
--   index.html                  figures, tables and provenance
--   metrics.json                every number computed (sorted keys)
--   figures/NAME.{png,svg,pdf}  figures/src/NAME.gp (inline data; re-run with gnuplot in out_dir)
--   tables/NAME.{md,tex}           (as opts.formats asks)
-- A store with several experiments gets one section each: EXP/figures/...,
-- EXP/tables/... (EXP: the experiment's name as a file name), and
-- metrics.json holds {experiments = {name = numbers}, provenance = ...}.
-- The same store gives the same bytes: sorted orders, a seeded bootstrap,
-- fixed number formats and no time of writing anywhere.

local metrics = require "klab.report.metrics"
local figures = require "klab.report.figures"
local tables = require "klab.report.tables"
local at_k = require "klab.report.at_k"
local gnuplot = require "klab.report.gnuplot"

local records = require "klab.store.records"
local M = {}

M.SHOW_PS = { 0, 0.5, 0.8, 1, 1.25, 1.5, 2, 3 }
-- The table files written by default: Markdown and LaTeX (booktabs).
M.FORMATS = { md = true, tex = true }

local html = tables.html_escape

local json = require("klab.json").encode

local version = require "klab.build_text"

-- Several stores (a study's shards, or two studies) are read as one: merged
-- into a temporary store (klab.store.merge: rows matched by their keys), which
-- goes when the report is written. An experiment of one name with two
-- configs cannot be read together, and says so.
local function merged_store(paths)
  local tmp, terr = require("klab.fs").mkstemp("klab-report-")
  if not tmp then return nil, "report: " .. tostring(terr), "EINVAL" end
  local db, err = records.open(tmp)
  if not db then return nil, "report: " .. tostring(err), "EINVAL" end
  records.define_verdicts(db)
  local merge = require "klab.store.merge"
  for _, p in ipairs(paths) do
    local ok, why = pcall(merge.merge, db, p)
    if not ok then
      db:close()
      for _, ext in ipairs { "", "-wal", "-shm", ".lock" } do os.remove(tmp .. ext) end
      return nil, ("report: %s cannot be read with the other stores: %s"):format(p, tostring(why)),
        tostring(why):find("no such file", 1, true) and "ENOENT" or "EINVAL"
    end
  end
  return db, nil, nil, true, tmp
end

local function open_store(x)
  if type(x) == "table" and not getmetatable(x) then
    if #x == 1 then x = x[1] else return merged_store(x) end
  end
  if type(x) ~= "string" then return x end
  local db, err, code = require("klab.store.records").open(x, { readonly = true })
  if not db then return nil, "report: " .. err, code end
  return db, nil, nil, true
end
M.open_store = open_store

local function decode(s)
  if type(s) ~= "string" then return nil end
  local ok, v = pcall(require("klab.json").decode, s)
  return ok and v or nil
end

local function mkdirs(dir)
  local sys = require "klab.sys"
  for _, sub in ipairs { "/figures/src", "/tables" } do
    local ok, err = sys.mkdir(dir .. sub)
    if not ok then error("report: cannot create " .. dir .. ": " .. tostring(err), 0) end
  end
end

local function sorted_set(list, field)
  local seen, out = {}, {}
  for _, x in ipairs(list) do
    local v = field and x[field] or x
    if v ~= nil and not seen[v] then seen[v] = true out[#out + 1] = v end
  end
  table.sort(out, function(a, b) return tostring(a) < tostring(b) end)
  return out
end

-- ---- provenance -------------------------------------------------------

-- A setting as text; a whole number read back from JSON (a float) prints
-- as an integer ("2", not "2.0").
local function scalar_text(v)
  if type(v) == "table" then return json(v) end
  if math.type(v) == "float" and math.tointeger(v) then return tostring(math.tointeger(v)) end
  return tostring(v)
end
M.scalar_text = scalar_text

-- provenance(db, trajs) -> {experiments = {...}, environments = {...},
-- prompts = {...}, counts = {...}, dates = {...}, klab_versions = {...}}.
function M.provenance(db, trajs, opts)
  local p = { experiments = {}, environments = {}, prompts = {}, counts = {}, dates = {} }
  local has = records.has_table
  -- The models a server answered (now, or before through the response
  -- cache): the base_url of any other, whose replies all came from reply
  -- files, was never contacted and is no address the results came from.
  local asked = {}
  for _, tr in ipairs(trajs) do
    for _, tu in ipairs(tr.turns) do
      if tu.source == "network" or tu.source == "cache" then asked[tostring(tr.experiment) .. "\0" .. tostring(tr.model_name or tr.model)] = true end
    end
  end
  if has(db, "experiments") then
    for _, e in ipairs(records.experiments(db)) do
      if not opts.experiment or e.name == opts.experiment then
        local c = decode(e.config) or {}
        local models = {}
        for _, m in ipairs(type(c.models) == "table" and c.models or {}) do
          local parts = {}
          for _, k in ipairs { "provider", "model", "temperature", "top_p", "max_tokens", "reasoning_effort",
            "thinking_budget", "seed", "base_url" } do
            if m[k] ~= nil and m[k] ~= require("klab.json").null then parts[#parts + 1] = k .. "=" .. scalar_text(m[k]) end
          end
          local name = tostring(m.name or m.model)
          if m.base_url ~= nil and not asked[e.name .. "\0" .. name] then
            parts[#parts] = parts[#parts] .. " (never contacted: no reply in this store came from it)"
          end
          models[#models + 1] = { name = name, settings = table.concat(parts, ", ") }
        end
        -- The klab builds that made its turns (klab.experiment records them).
        local builds = {}
        for _, b in ipairs(type(c.klab) == "table" and c.klab or {}) do
          if type(b) == "string" then builds[#builds + 1] = b end
        end
        local tasks = {}
        for _, t in ipairs(type(c.tasks) == "table" and c.tasks or {}) do
          tasks[#tasks + 1] = { name = tostring(t.name), workloads = table.concat(t.workloads or {}, ", ") }
        end
        p.experiments[#p.experiments + 1] = {
          name = e.name, created_at = e.created_at, updated_at = e.updated_at, models = models, tasks = tasks,
          tags = table.concat(type(c.tags) == "table" and c.tags or {}, ", "), replicas = c.replicas, turns = c.turns,
          arch = c.arch, select = c.select, history = c.history, target_speedup = c.target_speedup,
          klab = builds,
        }
      end
    end
  end
  -- Prompts: the distinct initial conversations of the trajectories.
  if has(db, "trajectories") then
    local rows = records.prompts(db)
    local by = {}
    for _, r in ipairs(rows) do
      if not opts.experiment or r.experiment == opts.experiment then
        local h = require("klab.store").hash("klab.report.prompt", r.messages)
        if not by[h] then
          by[h] = { hash = h:sub(1, 12), uses = {}, messages = decode(r.messages) or {} }
          p.prompts[#p.prompts + 1] = by[h]
        end
        local u = r.task .. " [" .. r.tag .. "]"
        if by[h].uses[#by[h].uses] ~= u then by[h].uses[#by[h].uses + 1] = u end
      end
    end
  end
  -- Environments: those the evaluations of the trajectories' candidates ran
  -- in, or every environment of the store when that link finds none.
  local ids = {}
  for _, tr in ipairs(trajs) do ids[#ids + 1] = tr.id end
  local envs = has(db, "turns") and records.environments_of(db, ids) or {}
  if #envs == 0 then envs = records.environments(db) end
  local seen = {}
  for _, e in ipairs(envs) do
    local libs = decode(e.libs)
    local lparts = {}
    if type(libs) == "table" then
      local keys = {}
      for k in pairs(libs) do keys[#keys + 1] = k end
      table.sort(keys)
      for _, k in ipairs(keys) do lparts[#lparts + 1] = k .. " " .. scalar_text(libs[k]) end
    end
    local row = {
      gpu = e.gpu_name or "(none)", arch = e.arch or "", driver = e.driver_version or "", cuda = e.cuda_version or "",
      clocks = (e.sm_clock_mhz and (e.sm_clock_mhz .. " / " .. (e.mem_clock_mhz or "?") .. " MHz")) or "",
      host = e.host or "", klab = version.text(e.klab_version, e.klab_gitrev),
      libs = table.concat(lparts, ", "),
    }
    -- Rows that differ only by process (one per worker) are shown once.
    local k = json(row)
    if not seen[k] then
      seen[k] = { count = 0, first = e.created_at, last = e.created_at }
      row.seen = seen[k]
      p.environments[#p.environments + 1] = row
    end
    local s = seen[k]
    s.count = s.count + 1
    if e.created_at and (not s.first or e.created_at < s.first) then s.first = e.created_at end
    if e.created_at and (not s.last or e.created_at > s.last) then s.last = e.created_at end
  end
  for _, row in ipairs(p.environments) do
    row.runs, row.first, row.last = row.seen.count, row.seen.first, row.seen.last
    row.seen = nil
  end
  p.counts.trajectories = #trajs
  local turns = 0
  for _, tr in ipairs(trajs) do turns = turns + #tr.turns end
  p.counts.turns = turns
  p.counts.evaluations = records.count(db, "evaluations")
  p.counts.measured_here, p.counts.measured_elsewhere = records.measured_where(db)
  p.counts.candidates = records.count(db, "candidates")
  if has(db, "turns") then p.dates.first_turn, p.dates.last_turn = records.turn_dates(db, ids) end
  p.dates.first_evaluation, p.dates.last_evaluation = records.evaluation_dates(db)
  p.schema_version = records.schema_version(db)
  p.klab_versions = {}
  -- The builds that made the turns (each experiment's config names them)
  -- and those that ran the GPU stages (the environments).
  local vs = {}
  for _, e in ipairs(p.experiments) do
    for _, b in ipairs(e.klab) do vs[#vs + 1] = b end
  end
  for _, e in ipairs(p.environments) do vs[#vs + 1] = e.klab end
  p.klab_versions = sorted_set(vs)
  return p
end

-- ---- index.html ---------------------------------------------------------

local CSS = [[
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; } h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
p.caption { font-weight: bold; margin: 0.8em 0 0.3em; }
p.caption + .scroll table { margin-top: 0; }
.scroll { overflow-x: auto; max-width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; vertical-align: top; }
th { background: #f4f4f4; white-space: nowrap; } td.r, th.r { text-align: right; white-space: nowrap; } td.l, th.l { text-align: left; }
td.l { min-width: 5em; }
p.note { font-size: 0.85em; color: #555; max-width: 60em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
td, th, figcaption, summary, p, li, h1, h2, h3 { overflow-wrap: anywhere; }
pre { white-space: pre-wrap; background: #f8f8f8; padding: 0.6em; font-size: 0.85em; max-height: 30em; overflow: auto; }
.glance td:first-child { font-weight: bold; white-space: nowrap; }
.warn { color: #a00; }
.notice { border: 2px solid #c60; background: #fff4e5; padding: 0.6em 0.9em; margin: 0.8em 0; max-width: 70em; }
]]

local function kv_table(rows, class)
  local out = { ('<table class="%s"><tbody>'):format(class or "") }
  for _, r in ipairs(rows) do
    out[#out + 1] = ("<tr><td>%s</td><td>%s</td></tr>"):format(html(r[1]), html(r[2] or ""))
  end
  out[#out + 1] = "</tbody></table>"
  return table.concat(out, "\n")
end

local function list_table(head, rows)
  local out = { "<table><thead><tr>" }
  for _, h in ipairs(head) do out[#out + 1] = "<th class=\"l\">" .. html(h) .. "</th>" end
  out[#out + 1] = "</tr></thead><tbody>"
  for _, r in ipairs(rows) do
    local cells = {}
    for i = 1, #head do cells[i] = '<td class="l">' .. html(r[i] == nil and "" or tostring(r[i])) .. "</td>" end
    out[#out + 1] = "<tr>" .. table.concat(cells) .. "</tr>"
  end
  out[#out + 1] = "</tbody></table>"
  return table.concat(out, "\n")
end

-- What the store could not measure: {total = evaluations, unknown =
-- evaluations with verdict unknown, reasons = {{reason =, n =}, ...} (most
-- frequent first), gpu_skipped = whether a reason says the GPU stages were
-- skipped}. A store without evaluations gives total 0.
function M.not_measured(db)
  local out = { total = 0, unknown = 0, reasons = {}, gpu_skipped = false, awaiting = records.awaiting_count(db) }
  if not records.has_table(db, "evaluations") then return out end
  out.total = records.count(db, "evaluations")
  for _, r in ipairs(records.unknown_reasons(db)) do
    local reason = tostring(r.reason or "no reason stored"):gsub("^unknown: ", "")
    out.reasons[#out.reasons + 1] = { reason = reason, n = r.n }
    out.unknown = out.unknown + r.n
    if reason:find("GPU stages skipped", 1, true) then out.gpu_skipped = true end
  end
  return out
end

-- The notice for index.html's first screen and the console, or nil when
-- every evaluation was measured.
local function notice_text(nm)
  if nm.awaiting > 0 and nm.unknown == 0 then
    return "Awaiting judgement", ("%d turn%s %s built and plan-checked where no GPU was; %s GPU stages wait for "
      .. "'klab judge' on a GPU machine. %s not counted as results in the rates below."):format(nm.awaiting,
      nm.awaiting == 1 and "" or "s", nm.awaiting == 1 and "was" or "were", nm.awaiting == 1 and "its" or "their",
      nm.awaiting == 1 and "It is" or "They are")
  end
  if nm.unknown == 0 then return nil end
  local head = nm.gpu_skipped and "GPU stages skipped" or "Not measured"
  local parts = {}
  for i, r in ipairs(nm.reasons) do
    if i > 3 then
      parts[#parts + 1] = ("and %d other reason%s"):format(#nm.reasons - 3, #nm.reasons - 3 == 1 and "" or "s")
      break
    end
    parts[#parts + 1] = (#nm.reasons > 1 and ("%d: "):format(r.n) or "") .. (r.reason:gsub("^GPU stages skipped: ", ""))
  end
  -- A judge run where no GPU was leaves the turns awaiting: say so, with
  -- the way on, rather than let the skipped stages hide it.
  local still = nm.awaiting > 0 and (" %d turn%s still await%s 'klab judge' on a GPU machine."):format(nm.awaiting,
    nm.awaiting == 1 and "" or "s", nm.awaiting == 1 and "s" or "") or ""
  return head, ("%d of %d evaluations in this store have no GPU results (verdict unknown): %s. Their turns are "
    .. "not counted as results in the rates below.%s"):format(nm.unknown, nm.total, table.concat(parts, "; "), still)
end

-- The rows of the "At a glance" table.
local function glance_rows(ctx)
  local p = ctx.prov
  local models, tasks, archs, gpus, drivers = {}, {}, {}, {}, {}
  local conds = {}
  for _, tr in ipairs(ctx.trajs) do
    models[#models + 1] = tr.model_name or tr.model
    if tr.model_name then conds[#conds + 1] = tr.model end
    tasks[#tasks + 1] = tr.task
    archs[#archs + 1] = tr.arch
  end
  for _, e in ipairs(p.environments) do
    if e.gpu ~= "" then gpus[#gpus + 1] = e.gpu end
    if e.driver ~= "" then drivers[#drivers + 1] = e.driver end
  end
  local exps = {}
  for _, e in ipairs(p.experiments) do exps[#exps + 1] = e.name end
  local tags = {}
  for _, tr in ipairs(ctx.trajs) do tags[#tags + 1] = tr.tag end
  -- A blank is never shown as if it were data: say what is missing.
  local missing = ctx.notice and ctx.notice[1] == "GPU stages skipped" and "not measured (GPU stages skipped)"
    or "not recorded"
  local function list(xs, none) local t = table.concat(sorted_set(xs), ", ") return t ~= "" and t or none end
  local glance = {
    { "Store", ctx.store_name },
    { "Experiments", list(exps, "none") },
    { "Models", list(models, "none") },
    #conds > 0 and { "Conditions", list(conds, "none") } or nil,
    { "Tasks", list(tasks, "none") },
    { "Prompt tags", list(tags, "none") },
    { "Architectures", list(archs, "none") },
    { "GPU", list(gpus, missing) },
    { "Driver", list(drivers, missing) },
    { "klab (runs)", list(p.klab_versions, "not recorded") },
    { "klab (this report)", ctx.klab_version },
    { "Trajectories / turns", ("%d / %d"):format(p.counts.trajectories, p.counts.turns) },
    { "Evaluations / candidates", ("%d / %d"):format(p.counts.evaluations, p.counts.candidates) },
    { "Measured by this machine's user / elsewhere", ("%d / %d (a result is this machine's only when its mark "
      .. "proves it)"):format(p.counts.measured_here, p.counts.measured_elsewhere) },
    { "Turns from / to", ("%s / %s"):format(p.dates.first_turn or "-", p.dates.last_turn or "-") },
    { "Evaluations from / to", ("%s / %s"):format(p.dates.first_evaluation or "-", p.dates.last_evaluation or "-") },
    { "Intervals", ("%g%%: Wilson for rates; percentile bootstrap, %d resamples, seed %d, over tasks for speedups "
      .. "(best-so-far too), Fast@k and verdict shares"):format(ctx.level * 100, ctx.B, ctx.seed) },
  }
  -- The Conditions row is there only with --by.
  local packed = {}
  for i = 1, 17 do if glance[i] then packed[#packed + 1] = glance[i] end end
  return packed
end

-- Per section: its figures (every page of a paged one), the figures left
-- out and why, its tables.
local function sections_html(add, ctx)
  local several = #ctx.sections > 1
  if several then
    local links = {}
    for _, sec in ipairs(ctx.sections) do
      links[#links + 1] = ('<a href="#%s">%s</a>'):format(html(sec.anchor), html(sec.name))
    end
    add('<p class="note">One section per experiment: ' .. table.concat(links, " · ") .. ".</p>")
  end
  for _, sec in ipairs(ctx.sections) do
    local h = several and "h3" or "h2"
    if several then
      add(('<h2 id="%s">Experiment %s</h2>'):format(html(sec.anchor), html(sec.name)))
      add('<p class="note">' .. html(("%d trajectories, turn limits %s."):format(#sec.trajs, table.concat(sec.limits, ", ")))
        .. "</p>")
    else
      add('<p class="note">' .. html(("Turn limits %s."):format(table.concat(sec.limits, ", "))) .. "</p>")
    end
    for _, w in ipairs(sec.warnings) do add('<p class="warn">' .. html(w) .. "</p>") end
    add(("<%s>Figures</%s>"):format(h, h))
    for _, f in ipairs(sec.figures) do
      add("<figure>")
      local links = {}
      for _, rel in ipairs(f.files) do
        local ext = rel:match("%.(%w+)$")
        if ext ~= "png" then links[#links + 1] = ('<a href="%s">%s</a>'):format(html(sec.prefix .. rel), ext:upper()) end
      end
      -- Every page of a paged figure.
      for _, rel in ipairs(f.files) do
        if rel:match("%.png$") then add(('<img src="%s" alt="%s">'):format(html(sec.prefix .. rel), html(f.caption))) end
      end
      add("<figcaption>" .. html(f.caption) .. " " .. table.concat(links, " · ") .. "</figcaption>")
      add("</figure>")
    end
    if #sec.omitted > 0 then
      add('<p class="note">Not drawn, having nothing to show:</p><ul class="note">')
      for _, f in ipairs(sec.omitted) do add("<li>" .. html(f.title .. ": " .. f.why) .. "</li>") end
      add("</ul>")
    end
    add(("<%s>Tables</%s>"):format(h, h))
    for _, t in ipairs(sec.tables) do
      add(tables.html(t))
      local also = {}
      for _, f in ipairs { { "md", "Markdown" }, { "tex", "LaTeX" } } do
        if (sec.formats or M.FORMATS)[f[1]] then
          also[#also + 1] = ('<a href="%stables/%s.%s">%s</a>'):format(html(sec.prefix), html(t.file), f[1], f[2])
        end
      end
      if #also > 0 then add('<p class="note">Also as ' .. table.concat(also, " and ") .. ".</p>") end
    end
  end
end

-- Provenance in detail: per experiment, the environments, the prompts.
local function provenance_html(add, p)
  add("<h2>Provenance</h2>")
  local function or_dash(v) if v == nil or v == "" then return "-" end return scalar_text(v) end
  for _, e in ipairs(p.experiments) do
    add("<h3>Experiment " .. html(e.name) .. "</h3>")
    add(kv_table({
      { "created / updated", (e.created_at or "-") .. " / " .. (e.updated_at or "-") },
      { "architecture", or_dash(e.arch) }, { "prompt tags", or_dash(e.tags) }, { "replicas", or_dash(e.replicas) },
      { "turns", or_dash(e.turns) }, { "target speedup", or_dash(e.target_speedup) },
      { "selection", or_dash(e.select) }, { "history", or_dash(e.history) },
      { "klab (turns made by)", #e.klab > 0 and table.concat(e.klab, ", ") or "not recorded" },
    }, "glance"))
    local mrows = {}
    for _, m in ipairs(e.models) do mrows[#mrows + 1] = { m.name, m.settings } end
    add(list_table({ "Model", "Settings" }, mrows))
    local trows = {}
    for _, t in ipairs(e.tasks) do trows[#trows + 1] = { t.name, t.workloads } end
    add(list_table({ "Task", "Workloads" }, trows))
  end
  add("<h3>Environments</h3>")
  local erows = {}
  for _, e in ipairs(p.environments) do
    local function m(v) return (v == nil or v == "") and "not recorded" or v end
    erows[#erows + 1] = { m(e.gpu), m(e.arch), m(e.driver), m(e.cuda), m(e.clocks), m(e.libs), e.klab, m(e.host),
      tostring(e.runs), (e.first or "-") .. " / " .. (e.last or "-") }
  end
  if #erows == 0 then
    add('<p class="note">' .. html("No environment was recorded: no evaluation ran its GPU stages.") .. "</p>")
  else
    add(list_table({ "GPU", "Arch", "Driver", "CUDA", "Clocks (SM / mem)", "Libraries", "klab", "Host", "Runs",
      "First / last" }, erows))
  end
  add("<h3>Prompts</h3>")
  for _, pr in ipairs(p.prompts) do
    add("<details><summary>" .. html(("prompt %s, used by %s"):format(pr.hash, table.concat(pr.uses, ", "))) .. "</summary>")
    for _, m in ipairs(pr.messages) do
      add("<p><b>" .. html(tostring(m.role)) .. "</b></p><pre>" .. html(tostring(m.content)) .. "</pre>")
    end
    add("</details>")
  end
  add("<h3>Files</h3>")
  add('<p class="note">metrics.json holds every number above; figures/src/*.gp redraw the figures '
    .. "(gnuplot, in the folder that holds figures/). Schema version " .. html(tostring(p.schema_version or "?")) .. ".</p>")
end

local function index_html(ctx)
  local p = ctx.prov
  local o = {}
  local function add(s) o[#o + 1] = s end
  add("<!DOCTYPE html>")
  add('<html lang="en"><head><meta charset="utf-8">')
  add('<meta name="generator" content="klab report">')
  add("<title>" .. html("klab report: " .. ctx.title) .. "</title>")
  add("<style>" .. CSS .. "</style></head><body>")
  add("<h1>" .. html("klab report: " .. ctx.title) .. "</h1>")
  if ctx.notice then
    add(('<div class="notice" id="not-measured"><b>%s</b>: %s</div>'):format(html(ctx.notice[1]), html(ctx.notice[2])))
  end
  add('<h2 id="provenance-at-a-glance">At a glance</h2>')
  add(kv_table(glance_rows(ctx), "glance"))
  for _, w in ipairs(ctx.warnings) do add('<p class="warn">' .. html(w) .. "</p>") end
  if #ctx.trajs == 0 then add('<p class="warn">This store holds no experiment trajectories: there is nothing to plot.</p>') end
  sections_html(add, ctx)
  provenance_html(add, p)
  add("</body></html>")
  return table.concat(o, "\n") .. "\n"
end

-- ---- write ----------------------------------------------------------------

local sys = require "klab.sys"

local function is_dir(path) return require("klab.task").is_dir(path) end

local function exists(path)
  local ok, _, code = os.rename(path, path)
  return ok or code ~= 2
end

-- Whether an existing out_dir may be replaced: an empty folder, or one that
-- holds a klab report (its index.html says so). Anything else may hold the
-- user's own files.
local function replaceable(dir)
  local f = io.open(dir .. "/index.html", "rb")
  if f then
    local head = f:read(400) or ""
    f:close()
    return head:find('<meta name="generator" content="klab report">', 1, true) ~= nil
      or head:find("<title>klab report: ", 1, true) ~= nil
  end
  -- An empty folder: remove(3) takes away a folder only when it is empty.
  return os.remove(dir) ~= nil
end

-- One section of the report: the metrics, figures and tables of trajs
-- (one experiment, or all of them pooled when asked for one), written
-- under dir (the section's folder). Returns {figures, omitted, tables,
-- numbers, warnings, limits}; files written go into written (relative to
-- the report's root, with prefix).
local function write_section(dir, prefix, trajs, opts, written)
  local B, seed, level = opts.B or metrics.DEFAULT_B, opts.seed or metrics.DEFAULT_SEED, opts.level or metrics.DEFAULT_LEVEL
  mkdirs(dir)
  local limits = metrics.limits(trajs, opts.limits)
  local L = limits[#limits] or 1
  local function note(files, why)
    if not files then error("report: " .. tostring(why), 0) end
    for _, f in ipairs(files) do written[#written + 1] = prefix .. f end
    return files
  end
  local function with(extra)
    local o = { B = B, seed = seed, level = level, limits = opts.limits }
    for k, v in pairs(extra or {}) do o[k] = v end
    return o
  end
  -- The rates at the largest limit count only the trajectories decided there.
  local counted, left = metrics.decided(trajs, L)
  local warnings = {}
  if left["not measured"] > 0 then
    warnings[#warnings + 1] = ("%d of %d trajectories have no result within %d turns (a turn's verdict is unknown or "
      .. "request_error, and no turn passed): they are left out of the rates, not counted as failures.")
      :format(left["not measured"], #trajs, L)
  end
  if left.unfinished > 0 then
    warnings[#warnings + 1] = ("%d of %d trajectories are unfinished (the run stopped before their last turn): they are "
      .. "left out of the rates, not counted as failures; run the experiment again to finish them.")
      :format(left.unfinished, #trajs)
  end
  local success = metrics.success(trajs, with())
  local ps = metrics.breakpoints(counted, L)
  local fp_plain = metrics.fast_p(counted, with { ps = ps, limit = L })
  local fp_ver = metrics.fast_p(counted, with { ps = ps, limit = L, verified = true })
  local show = opts.ps or M.SHOW_PS
  local fpt_plain = metrics.fast_p(counted, with { ps = show, limit = L })
  local fpt_ver = metrics.fast_p(counted, with { ps = show, limit = L, verified = true })
  local kbv = metrics.kbv(counted, with { limit = L })
  local mix = metrics.failure_mix(trajs, with { limit = L })
  local bbt = metrics.best_by_turn(counted, with { limit = L })
  local cands = metrics.candidates(counted, L)
  local pdt = metrics.pdetect_table()

  -- Figures, per architecture.
  local fast_k = at_k.curves(counted, with { limit = L })
  local figs, omitted = figures.draw(dir, {
    trajs = trajs, counted = counted, limit = L, fast_p = fp_plain, fast_p_verified = fp_ver, success = success,
    failure_mix = mix, best_by_turn = bbt, candidates = cands, at_k = fast_k, note = note,
  })
  local archs = sorted_set(trajs, "arch")

  -- Tables.
  local tlist = {}
  local function tab(file, ts)
    local md, tex = {}, {}
    for _, t in ipairs(ts) do
      -- Grouped by conditions: the "Model" column holds the condition.
      for i, h in ipairs(opts.condition and t.head or {}) do if h == "Model" then t.head[i] = opts.condition end end
      md[#md + 1] = tables.markdown(t)
      tex[#tex + 1] = tables.latex(t)
      t.file = file
      tlist[#tlist + 1] = t
    end
    local formats = opts.formats or M.FORMATS
    for _, f in ipairs { { "md", md }, { "tex", tex } } do
      if formats[f[1]] then
        gnuplot.write_file(dir .. "/tables/" .. file .. "." .. f[1], table.concat(f[2], "\n"))
        written[#written + 1] = prefix .. "tables/" .. file .. "." .. f[1]
      end
    end
  end
  for _, a in ipairs(archs) do tab("ptxbench_" .. gnuplot.slug(a), tables.ptxbench(success, a)) end
  tab("kbv", { tables.kbv(kbv) })
  tab("success", { tables.success(success) })
  tab("fast_p", { tables.fast_p(fpt_plain, fpt_ver) })
  tab("at_k", { tables.at_k(fast_k) })
  tab("failure_mix", { tables.mix(mix) })
  tab("pdetect", { tables.pdetect(pdt) })
  local spent = require("klab.report.cost").table_rows(trajs, { limit = L })
  tab("cost", { tables.cost(spent) })
  local compared
  if opts.by then
    compared = require("klab.report.conditions").compare(counted, with { limit = L })
    tab("compare", { tables.compare(compared) })
  end
  return {
    figures = figs, omitted = omitted, tables = tlist, warnings = warnings, limits = limits, trajs = trajs,
    numbers = {
      limits = limits, success = success, fast_p = fp_plain, fast_p_verified = fp_ver, kbv = kbv, failure_mix = mix,
      best_by_turn = bbt, at_k = fast_k, pdetect = pdt, compare = compared, cost = spent, left_out = { not_measured = left["not measured"], unfinished = left.unfinished },
    },
  }
end

-- The experiments a store holds, by name.
local function experiment_names(db) return records.experiment_names(db) end
M.experiment_names = experiment_names

-- nil, or the message for an experiment name the store does not hold.
function M.check_experiment(db, name, store_name)
  if name == nil then return nil end
  local names = experiment_names(db)
  for _, n in ipairs(names) do if n == name then return nil end end
  if #names == 0 then return ("%s holds no experiments, so none named '%s'"):format(store_name, name) end
  return ("%s holds no experiment named '%s' (it holds: %s)"):format(store_name, name, table.concat(names, ", "))
end

local function build(db, out_dir, opts, store_name)
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  opts = o
  local B, seed, level = opts.B or metrics.DEFAULT_B, opts.seed or metrics.DEFAULT_SEED, opts.level or metrics.DEFAULT_LEVEL
  local trajs = metrics.load(db, { experiment = opts.experiment })
  if opts.by then
    opts.condition = require("klab.report.conditions").relabel(trajs, opts.by, opts.configs)
  end
  local written, warnings = {}, {}
  local pr = gnuplot.probe()
  if pr.why then warnings[#warnings + 1] = pr.why end
  -- One section per experiment, unless one was asked for or there is one.
  local groups = metrics.group(trajs, { "experiment" })
  local sections = {}
  local used = {}
  for _, g in ipairs(groups) do
    local sec = { name = g.experiment }
    if #groups > 1 then
      local slug = gnuplot.slug(g.experiment)
      while used[slug] do slug = slug .. "_" end
      used[slug] = true
      sec.prefix, sec.anchor = slug .. "/", "experiment-" .. slug
    else
      sec.prefix, sec.anchor = "", "experiment"
    end
    local r = write_section(out_dir .. "/" .. sec.prefix:gsub("/$", ""), sec.prefix, g.items, opts, written)
    for k, v in pairs(r) do sec[k] = v end
    sec.formats = opts.formats
    sections[#sections + 1] = sec
  end
  if #sections == 0 then
    -- Nothing to plot: the empty section still writes its (empty) tables.
    local r = write_section(out_dir, "", {}, opts, written)
    r.prefix, r.anchor, r.name, r.formats = "", "experiment", "", opts.formats
    sections[1] = r
  end
  local prov = M.provenance(db, trajs, opts)
  local nm = M.not_measured(db)
  local head, text = notice_text(nm)
  local all = { bootstrap = { B = B, seed = seed, level = level }, provenance = prov, not_measured = nm }
  if #groups > 1 then
    all.experiments = {}
    for _, sec in ipairs(sections) do all.experiments[sec.name] = sec.numbers end
  else
    for k, v in pairs(sections[1].numbers) do all[k] = v end
  end
  for _, sec in ipairs(sections) do
    local tag = #sections > 1 and ("experiment " .. sec.name .. ": ") or ""
    for _, w in ipairs(sec.warnings) do warnings[#warnings + 1] = tag .. w end
    for _, f in ipairs(sec.omitted) do warnings[#warnings + 1] = tag .. ("figure %s not drawn: %s"):format(f.name, f.why) end
  end
  gnuplot.write_file(out_dir .. "/metrics.json", json(all) .. "\n")
  written[#written + 1] = "metrics.json"
  local title = #prov.experiments > 0 and (function()
    local n = {}
    for _, e in ipairs(prov.experiments) do n[#n + 1] = e.name end
    return table.concat(n, ", ")
  end)() or store_name
  gnuplot.write_file(out_dir .. "/index.html", index_html {
    title = title, store_name = store_name, trajs = trajs, prov = prov, sections = sections,
    warnings = pr.why and { pr.why } or {}, notice = head and { head, text } or nil, B = B, seed = seed, level = level,
    klab_version = version.this(),
  })
  written[#written + 1] = "index.html"
  table.sort(written)
  if head then table.insert(warnings, 1, head .. ": " .. text) end
  return written, warnings
end

function M.write(db_or_path, out_dir, opts)
  opts = opts or {}
  if type(out_dir) ~= "string" or out_dir == "" then error("report.write: out_dir must be a path", 2) end
  out_dir = out_dir:gsub("/+$", "")
  if out_dir == "" then out_dir = "/" end
  if exists(out_dir) and not is_dir(out_dir) then
    return nil, ("report: %s is a file, not a folder: give --out a folder"):format(out_dir), "EINVAL"
  end
  if is_dir(out_dir) and not replaceable(out_dir) then
    return nil, ("report: %s holds files that are not a klab report; give --out a new or empty folder, or a "
      .. "previous report"):format(out_dir), "EINVAL"
  end
  local db, err, code, owned, scratch = open_store(db_or_path)
  if not db then return nil, err, code end
  local function close()
    if owned then db:close() end
    for _, ext in ipairs { "", "-wal", "-shm", ".lock" } do if scratch then os.remove(scratch .. ext) end end
  end
  local store_name
  if type(db_or_path) == "table" and not getmetatable(db_or_path) then
    local names = {}
    for i, p in ipairs(db_or_path) do names[i] = tostring(p):match("([^/]+)$") end
    store_name = table.concat(names, " + ")
  else
    store_name = type(db_or_path) == "string" and db_or_path:match("([^/]+)$") or (db:path() or ""):match("([^/]+)$")
      or "store"
  end
  local bad = M.check_experiment(db, opts.experiment, store_name)
  if not bad and opts.by then
    -- The experiments' configs, read once: checked here, used to label.
    local configs = {}
    for _, e in ipairs(records.has_table(db, "experiments") and records.experiments(db) or {}) do
      configs[e.name] = decode(e.config) or {}
    end
    bad = require("klab.report.conditions").check(opts.by, configs)
    local o = { configs = configs }
    for k, v in pairs(opts) do o[k] = v end
    opts = o
  end
  if bad then
    close()
    return nil, "report: " .. bad, bad:find("^%-%-by") and "EINVAL" or "ENOTFOUND"
  end
  -- Written into a folder beside out_dir, then renamed into place: an
  -- interrupted report leaves the old one whole, never a mix.
  local parent, base = out_dir:match("^(.*)/([^/]+)$")
  if not parent then parent, base = ".", out_dir end
  if parent == "" then parent = "/" end
  local pid = sys.getpid()
  local tmp = ("%s/.%s.klab-new-%d"):format(parent, base, pid)
  local old = ("%s/.%s.klab-old-%d"):format(parent, base, pid)
  local ok, res, warn = pcall(function()
    local mk, why = sys.mkdir(parent)
    if not mk then error("report: " .. tostring(why), 0) end
    assert(sys.remove_tree(tmp))
    return build(db, tmp, opts, store_name)
  end)
  close()
  if ok then
    local moved = true
    if is_dir(out_dir) then moved = os.rename(out_dir, old) end
    local rok, rerr = false, "cannot move the previous report aside"
    if moved then rok, rerr = os.rename(tmp, out_dir) end
    if not rok then
      if moved and is_dir(old) then os.rename(old, out_dir) end
      ok, res = false, ("report: cannot put the report in place at %s: %s"):format(out_dir, tostring(rerr))
    else
      sys.remove_tree(old)
    end
  end
  if not ok then
    sys.remove_tree(tmp)
    -- A store that cannot be read as klab's is the user's input, not a failure to write.
    if require("klab.errors").is(res, "mistake") then return nil, res.message, "EINVAL" end
    return nil, tostring(res), "EREPORT"
  end
  local out = {}
  for i, rel in ipairs(res) do out[i] = out_dir .. "/" .. rel end
  return out, warn
end

return M
