-- klab.report: every figure and table of an experiment store, and an
-- index.html that shows them with the experiment's provenance.
--
--   local files = require("klab.report").write(db_or_path, out_dir [, opts])
--
-- db_or_path: an open store or the path of a store file (opened read-only;
-- a missing file or a file that is not a klab store gives nil, msg, code).
-- out_dir is created. Returns the sorted list of the files written (each as
-- out_dir .. "/" .. relative path), then a list of warnings (for example a
-- gnuplot terminal that is missing). opts: experiment (one experiment's
-- name; default all), limits ({1, 4, 8}), B (bootstrap resamples, 1000),
-- seed, level (0.95), ps (fast_p thresholds shown in the table).
--
-- Layout of out_dir:
--   index.html                  figures, tables and provenance
--   metrics.json                every number computed (sorted keys)
--   figures/NAME.{png,svg,pdf}  figures/src/NAME.gp (inline data; re-run with gnuplot in out_dir)
--   tables/NAME.{md,tex}
-- The same store gives the same bytes: sorted orders, a seeded bootstrap,
-- fixed number formats and no time of writing anywhere.

local metrics = require "klab.report.metrics"
local figures = require "klab.report.figures"
local tables = require "klab.report.tables"

local M = {}

M.SHOW_PS = { 0, 0.5, 0.8, 1, 1.2, 1.5 }

local html = tables.html_escape

local function json(v) return require("klab.experiment.model").json(v) end

local function klab_version()
  local ok, b = pcall(require, "klab.build")
  if ok and type(b) == "table" and b.version then return b.version .. (b.gitrev and (" (" .. b.gitrev .. ")") or "") end
  local f = io.open("VERSION")
  if f then
    local s = f:read("l")
    f:close()
    if s then return s end
  end
  return "unknown"
end

local function open_store(x)
  if type(x) ~= "string" then return x end
  local f = io.open(x, "rb")
  if not f then return nil, ("report: no such store file: %s"):format(x), "ENOENT" end
  local head = f:read(16) or ""
  f:close()
  if head ~= "SQLite format 3\0" then
    return nil, ("report: %s is not a klab store (not an SQLite database)"):format(x), "EINVAL"
  end
  local db, err, code = require("klab.store").open(x, { readonly = true })
  if not db then return nil, ("report: cannot open %s as a klab store: %s"):format(x, tostring(err)), code end
  return db, nil, nil, true
end
M.open_store = open_store

local function decode(s)
  if type(s) ~= "string" then return nil end
  local ok, v = pcall(require("cjson").decode, s)
  return ok and v or nil
end

local function mkdirs(dir)
  local fs = require "klab.fs"
  for _, sub in ipairs { "/figures/src", "/tables" } do
    local ok, err = fs.mkdirs(dir .. sub)
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

local function scalar_text(v)
  if type(v) == "table" then return json(v) end
  return tostring(v)
end

-- provenance(db, trajs) -> {experiments = {...}, environments = {...},
-- prompts = {...}, counts = {...}, dates = {...}, klab_versions = {...}}.
function M.provenance(db, trajs, opts)
  local p = { experiments = {}, environments = {}, prompts = {}, counts = {}, dates = {} }
  local has = metrics.has_table
  if has(db, "experiments") then
    for _, e in ipairs(db:query("SELECT id, name, config, created_at, updated_at FROM experiments ORDER BY name, id")) do
      if not opts.experiment or e.name == opts.experiment then
        local c = decode(e.config) or {}
        local models = {}
        for _, m in ipairs(type(c.models) == "table" and c.models or {}) do
          local parts = {}
          for _, k in ipairs { "provider", "model", "temperature", "top_p", "max_tokens", "reasoning_effort",
            "thinking_budget", "seed", "base_url" } do
            if m[k] ~= nil and m[k] ~= require("cjson").null then parts[#parts + 1] = k .. "=" .. scalar_text(m[k]) end
          end
          models[#models + 1] = { name = tostring(m.name or m.model), settings = table.concat(parts, ", ") }
        end
        local tasks = {}
        for _, t in ipairs(type(c.tasks) == "table" and c.tasks or {}) do
          tasks[#tasks + 1] = { name = tostring(t.name), workloads = table.concat(t.workloads or {}, ", ") }
        end
        p.experiments[#p.experiments + 1] = {
          name = e.name, created_at = e.created_at, updated_at = e.updated_at, models = models, tasks = tasks,
          tags = table.concat(type(c.tags) == "table" and c.tags or {}, ", "), replicas = c.replicas, turns = c.turns,
          arch = c.arch, select = c.select, history = c.history, target_speedup = c.target_speedup,
        }
      end
    end
  end
  -- Prompts: the distinct initial conversations of the trajectories.
  if has(db, "trajectories") then
    local rows = db:query([[SELECT t.messages, t.task, t.tag, e.name AS experiment FROM trajectories t
        JOIN experiments e ON e.id = t.experiment_id ORDER BY e.name, t.task, t.tag, t.model, t.replica]])
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
  local envs = {}
  if has(db, "turns") and #trajs > 0 then
    local ids = {}
    for _, tr in ipairs(trajs) do ids[#ids + 1] = tostring(math.tointeger(tr.id)) end
    envs = db:query(([[SELECT DISTINCT env.* FROM turns tu JOIN candidates c ON c.hash = tu.candidate
        JOIN evaluations ev ON ev.candidate_id = c.id JOIN environments env ON env.id = ev.env_id
        WHERE tu.trajectory_id IN (%s) ORDER BY env.id]]):format(table.concat(ids, ",")))
  end
  if #envs == 0 then envs = db:query("SELECT * FROM environments ORDER BY id") end
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
      host = e.host or "", klab = (e.klab_version or "?") .. (e.klab_gitrev and (" (" .. e.klab_gitrev .. ")") or ""),
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
  local function count(sql) local r = db:first(sql) return r and r.n or 0 end
  p.counts.trajectories = #trajs
  local turns = 0
  for _, tr in ipairs(trajs) do turns = turns + #tr.turns end
  p.counts.turns = turns
  p.counts.evaluations = count("SELECT count(*) AS n FROM evaluations")
  p.counts.candidates = count("SELECT count(*) AS n FROM candidates")
  if has(db, "turns") and #trajs > 0 then
    local ids = {}
    for _, tr in ipairs(trajs) do ids[#ids + 1] = tostring(math.tointeger(tr.id)) end
    local r = db:first(("SELECT min(created_at) AS a, max(created_at) AS b FROM turns WHERE trajectory_id IN (%s)"):format(
      table.concat(ids, ",")))
    p.dates.first_turn, p.dates.last_turn = r and r.a, r and r.b
  end
  local r = db:first("SELECT min(finished_at) AS a, max(finished_at) AS b FROM evaluations")
  p.dates.first_evaluation, p.dates.last_evaluation = r and r.a, r and r.b
  local sv = db:first("SELECT max(version) AS v FROM schema_version")
  p.schema_version = sv and sv.v
  p.klab_versions = {}
  local vs = {}
  for _, e in ipairs(p.environments) do vs[#vs + 1] = e.klab end
  p.klab_versions = sorted_set(vs)
  return p
end

-- ---- index.html ---------------------------------------------------------

local CSS = [[
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; } h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; vertical-align: top; }
th { background: #f4f4f4; } td.r, th.r { text-align: right; } td.l, th.l { text-align: left; }
p.note { font-size: 0.85em; color: #555; max-width: 60em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
pre { white-space: pre-wrap; background: #f8f8f8; padding: 0.6em; font-size: 0.85em; max-height: 30em; overflow: auto; }
.glance td:first-child { font-weight: bold; white-space: nowrap; }
.warn { color: #a00; }
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

local function index_html(ctx)
  local p = ctx.prov
  local o = {}
  local function add(s) o[#o + 1] = s end
  add("<!DOCTYPE html>")
  add('<html lang="en"><head><meta charset="utf-8">')
  add("<title>" .. html("klab report: " .. ctx.title) .. "</title>")
  add("<style>" .. CSS .. "</style></head><body>")
  add("<h1>" .. html("klab report: " .. ctx.title) .. "</h1>")
  -- At a glance.
  local models, tasks, archs, gpus, drivers = {}, {}, {}, {}, {}
  for _, tr in ipairs(ctx.trajs) do models[#models + 1] = tr.model tasks[#tasks + 1] = tr.task archs[#archs + 1] = tr.arch end
  for _, e in ipairs(p.environments) do gpus[#gpus + 1] = e.gpu drivers[#drivers + 1] = e.driver end
  local exps = {}
  for _, e in ipairs(p.experiments) do exps[#exps + 1] = e.name end
  local tags = {}
  for _, tr in ipairs(ctx.trajs) do tags[#tags + 1] = tr.tag end
  local glance = {
    { "Store", ctx.store_name },
    { "Experiments", table.concat(exps, ", ") },
    { "Models", table.concat(sorted_set(models), ", ") },
    { "Tasks", table.concat(sorted_set(tasks), ", ") },
    { "Prompt tags", table.concat(sorted_set(tags), ", ") },
    { "Architectures", table.concat(sorted_set(archs), ", ") },
    { "GPU", table.concat(sorted_set(gpus), ", ") },
    { "Driver", table.concat(sorted_set(drivers), ", ") },
    { "klab (runs)", table.concat(p.klab_versions, ", ") },
    { "klab (this report)", ctx.klab_version },
    { "Trajectories / turns", ("%d / %d"):format(p.counts.trajectories, p.counts.turns) },
    { "Evaluations / candidates", ("%d / %d"):format(p.counts.evaluations, p.counts.candidates) },
    { "Turns from / to", ("%s / %s"):format(p.dates.first_turn or "-", p.dates.last_turn or "-") },
    { "Evaluations from / to", ("%s / %s"):format(p.dates.first_evaluation or "-", p.dates.last_evaluation or "-") },
    { "Turn limits", table.concat(ctx.limits, ", ") },
    { "Bootstrap", ("%d resamples of trajectories, seed %d, %g%% percentile intervals"):format(ctx.B, ctx.seed, ctx.level * 100) },
  }
  add("<h2>At a glance</h2>")
  add(kv_table(glance, "glance"))
  for _, w in ipairs(ctx.warnings) do add('<p class="warn">' .. html(w) .. "</p>") end
  if #ctx.trajs == 0 then add('<p class="warn">This store holds no experiment trajectories: there is nothing to plot.</p>') end
  -- Figures.
  add("<h2>Figures</h2>")
  for _, f in ipairs(ctx.figures) do
    add("<figure>")
    local links = {}
    for _, rel in ipairs(f.files) do
      local ext = rel:match("%.(%w+)$")
      if ext ~= "png" then links[#links + 1] = ('<a href="%s">%s</a>'):format(html(rel), ext:upper()) end
    end
    local png
    for _, rel in ipairs(f.files) do if rel:match("%.png$") then png = rel end end
    if png then add(('<img src="%s" alt="%s">'):format(html(png), html(f.caption))) end
    add("<figcaption>" .. html(f.caption) .. " " .. table.concat(links, " · ") .. "</figcaption>")
    add("</figure>")
  end
  -- Tables.
  add("<h2>Tables</h2>")
  for _, t in ipairs(ctx.tables) do
    add(tables.html(t))
    add(('<p class="note">Also as <a href="tables/%s.md">Markdown</a> and <a href="tables/%s.tex">LaTeX</a>.</p>'):format(
      html(t.file), html(t.file)))
  end
  -- Provenance in detail.
  add("<h2>Provenance</h2>")
  for _, e in ipairs(p.experiments) do
    add("<h3>Experiment " .. html(e.name) .. "</h3>")
    add(kv_table({
      { "created / updated", (e.created_at or "-") .. " / " .. (e.updated_at or "-") },
      { "architecture", e.arch }, { "prompt tags", e.tags }, { "replicas", e.replicas and tostring(e.replicas) },
      { "turns", e.turns and tostring(e.turns) }, { "target speedup", e.target_speedup and tostring(e.target_speedup) },
      { "selection", e.select }, { "history", e.history },
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
    erows[#erows + 1] = { e.gpu, e.arch, e.driver, e.cuda, e.clocks, e.libs, e.klab, e.host, tostring(e.runs),
      (e.first or "-") .. " / " .. (e.last or "-") }
  end
  add(list_table({ "GPU", "Arch", "Driver", "CUDA", "Clocks (SM / mem)", "Libraries", "klab", "Host", "Runs", "First / last" }, erows))
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
    .. "(gnuplot, in this directory). Schema version " .. html(tostring(p.schema_version or "?")) .. ".</p>")
  add("</body></html>")
  return table.concat(o, "\n") .. "\n"
end

-- ---- write ----------------------------------------------------------------

function M.write(db_or_path, out_dir, opts)
  opts = opts or {}
  if type(out_dir) ~= "string" or out_dir == "" then error("report.write: out_dir must be a path", 2) end
  out_dir = out_dir:gsub("/+$", "")
  if out_dir == "" then out_dir = "/" end
  local db, err, code, owned = open_store(db_or_path)
  if not db then return nil, err, code end
  local ok, res, warn = pcall(function()
    local B, seed, level = opts.B or metrics.DEFAULT_B, opts.seed or metrics.DEFAULT_SEED, opts.level or metrics.DEFAULT_LEVEL
    local bo = { B = B, seed = seed, level = level }
    local trajs = metrics.load(db, { experiment = opts.experiment })
    local limits = metrics.limits(trajs, opts.limits)
    local L = limits[#limits] or 1
    mkdirs(out_dir)
    local written = {}
    local warnings = {}
    local pr = figures.probe()
    if pr.why then warnings[#warnings + 1] = pr.why end
    local function note(files, why)
      if not files then error("report: " .. tostring(why), 0) end
      for _, f in ipairs(files) do written[#written + 1] = f end
      return files
    end

    local function with(extra)
      local o = { B = B, seed = seed, level = level, limits = opts.limits }
      for k, v in pairs(extra or {}) do o[k] = v end
      return o
    end
    local success = metrics.success(trajs, with())
    local ps = metrics.breakpoints(trajs, L)
    local fp_plain = metrics.fast_p(trajs, with { ps = ps, limit = L })
    local fp_ver = metrics.fast_p(trajs, with { ps = ps, limit = L, verified = true })
    local show = opts.ps or M.SHOW_PS
    local fpt_plain = metrics.fast_p(trajs, with { ps = show, limit = L })
    local fpt_ver = metrics.fast_p(trajs, with { ps = show, limit = L, verified = true })
    local kbv = metrics.kbv(trajs, with { limit = L })
    local mix = metrics.failure_mix(trajs, with { limit = L })
    local bbt = metrics.best_by_turn(trajs, with { limit = L })
    local cands = metrics.candidates(trajs, L)
    local pdt = metrics.pdetect_table()

    -- Figures, per architecture.
    local figs = {}
    local archs = sorted_set(trajs, "arch")
    local function by_arch(rows, a)
      local out = {}
      for _, r in ipairs(rows) do if r.arch == a then out[#out + 1] = r end end
      return out
    end
    for _, a in ipairs(archs) do
      local at = by_arch(trajs, a)
      local models, tasks = sorted_set(at, "model"), sorted_set(at, "task")
      local sa = figures.slug(a)
      local function fig(name, caption, files, why)
        figs[#figs + 1] = { name = name, caption = caption, files = note(files, why) }
      end
      fig("fast_p_" .. sa, ("fast_p on %s (turn limit %d): share of trajectories with a correct turn faster than p × the "
        .. "library, left all correct turns, right those whose target instructions were seen executing; bands: 95%% "
        .. "bootstrap intervals."):format(a, L),
        figures.fast_p(out_dir, "fast_p_" .. sa, { title = ("fast_p on %s, turn limit %d"):format(a, L),
          plain = by_arch(fp_plain, a), verified = by_arch(fp_ver, a) }))
      local cell = {}
      for _, r in ipairs(success) do
        -- A group's largest limit (a group with fewer turns stops below L).
        local k = r.model .. "\0" .. r.task
        if r.arch == a and r.limit <= L and (not cell[k] or cell[k].limit < r.limit) then cell[k] = r end
      end
      fig("correct_" .. sa, ("Trajectories with a correct turn (solid) and a correct turn with verified target "
        .. "instructions (hatched) per task on %s, turn limit %d; error bars: 95%% bootstrap intervals."):format(a, L),
        figures.bars(out_dir, "correct_" .. sa, { title = ("Correct and verified on %s, turn limit %d"):format(a, L),
          models = models, tasks = tasks, cell = function(m, t)
            local r = cell[m .. "\0" .. t]
            return r and { correct = r.correct_rate, correct_ci = r.correct_ci, verified = r.verified_rate,
              verified_ci = r.verified_ci }
          end }))
      for _, r in ipairs(by_arch(mix, a)) do
        local name = "failure_mix_" .. sa .. "_" .. figures.slug(r.model)
        fig(name, ("Verdicts of the turns of %s on %s, per turn (n: turns stored at that turn)."):format(r.model, a),
          figures.mix(out_dir, name, { title = ("Verdicts per turn: %s on %s"):format(r.model, a), row = r }))
      end
      fig("best_by_turn_" .. sa, ("Mean over trajectories of the best speedup within the first n turns (0 until a "
        .. "correct timed turn) on %s; error bars: 95%% bootstrap intervals; dashed: the library."):format(a),
        figures.best_by_turn(out_dir, "best_by_turn_" .. sa, { title = ("Best speedup so far on %s"):format(a),
          rows = by_arch(bbt, a) }))
      fig("speedups_" .. sa, ("Speedup over the library of every correct timed candidate per task on %s (log scale; "
        .. "filled: target instructions verified; dots spread sideways by model)."):format(a),
        figures.speedups(out_dir, "speedups_" .. sa, { title = ("Every correct candidate on %s"):format(a),
          models = models, tasks = tasks, points = by_arch(cands, a) }))
    end

    -- Tables.
    local tlist = {}
    local function tab(file, ts)
      local md, tex = {}, {}
      for _, t in ipairs(ts) do
        md[#md + 1] = tables.markdown(t)
        tex[#tex + 1] = tables.latex(t)
        t.file = file
        tlist[#tlist + 1] = t
      end
      figures.write_file(out_dir .. "/tables/" .. file .. ".md", table.concat(md, "\n"))
      figures.write_file(out_dir .. "/tables/" .. file .. ".tex", table.concat(tex, "\n"))
      written[#written + 1] = "tables/" .. file .. ".md"
      written[#written + 1] = "tables/" .. file .. ".tex"
    end
    for _, a in ipairs(archs) do tab("ptxbench_" .. figures.slug(a), tables.ptxbench(success, a)) end
    tab("kbv", { tables.kbv(kbv) })
    tab("success", { tables.success(success) })
    tab("fast_p", { tables.fast_p(fpt_plain, fpt_ver) })
    tab("failure_mix", { tables.mix(mix) })
    tab("pdetect", { tables.pdetect(pdt) })

    -- Numbers and provenance.
    local prov = M.provenance(db, trajs, opts)
    local all = {
      limits = limits, bootstrap = { B = B, seed = seed, level = level },
      success = success, fast_p = fp_plain, fast_p_verified = fp_ver, kbv = kbv, failure_mix = mix,
      best_by_turn = bbt, pdetect = pdt, provenance = prov,
    }
    figures.write_file(out_dir .. "/metrics.json", json(all) .. "\n")
    written[#written + 1] = "metrics.json"
    local store_name = type(db_or_path) == "string" and db_or_path:match("([^/]+)$") or (db:path() or ""):match("([^/]+)$") or "store"
    local title = #prov.experiments > 0 and (function()
      local n = {}
      for _, e in ipairs(prov.experiments) do n[#n + 1] = e.name end
      return table.concat(n, ", ")
    end)() or store_name
    figures.write_file(out_dir .. "/index.html", index_html {
      title = title, store_name = store_name, trajs = trajs, prov = prov, figures = figs, tables = tlist,
      warnings = warnings, limits = limits, B = B, seed = seed, level = level, klab_version = klab_version(),
    })
    written[#written + 1] = "index.html"
    table.sort(written)
    local out = {}
    for i, rel in ipairs(written) do out[i] = out_dir .. "/" .. rel end
    return out, warnings
  end)
  if owned then db:close() end
  if not ok then return nil, tostring(res), "EREPORT" end
  return res, warn
end

return M
