-- klab.report, klab.report.tables, klab.report.figures and `klab report` on the store of
-- metrics_test.lua (answers computed by hand there).

local report = require "klab.report"
local gnuplot = require "klab.report.gnuplot"
local tables = require "klab.report.tables"
local store = require "klab.store"

local function here()
  return debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
end
local fixture = getmetatable(dofile(here() .. "/metrics_test.lua")).__index.fixture

-- A Markdown file's text as a reader sees it: the escaper's backslashes
-- (before every character Markdown gives meaning to) taken out.
local function md_text(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return (s:gsub("\\(%p)", "%1"))
end

local sq = require("klab.command").shell_quote

local function make_store(t)
  local dir = t.tmpdir()
  local path = dir .. "/fx.db"
  fixture(path):close()
  return path, dir
end

local function contains(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

local tests = {}

function tests.two_reports_are_byte_identical(t)
  local path, dir = make_store(t)
  local a = assert(report.write(path, dir .. "/r1", { B = 200 }))
  local b = assert(report.write(path, dir .. "/r2", { B = 200 }))
  t.eq(#a, #b)
  t.ok(#a > 10, "many files")
  for i, f in ipairs(a) do
    local rel = f:sub(#dir + 5)
    t.eq(b[i]:sub(#dir + 5), rel)
    local x, y = t.read(f), t.read(b[i])
    t.ok(x and #x > 0, rel .. " is not empty")
    t.ok(x == y, rel .. " is the same in both reports")
  end
  -- The listing is sorted and every file is in it.
  for i = 2, #a do t.ok(a[i - 1] < a[i]) end
  -- Two experiments: a section (folder) each, nothing pooled.
  t.ok(contains(a, dir .. "/r1/index.html"))
  t.ok(contains(a, dir .. "/r1/metrics.json"))
  t.ok(contains(a, dir .. "/r1/e1/tables/ptxbench_sm_90a.md"))
  t.ok(contains(a, dir .. "/r1/e2/tables/ptxbench_sm_100a.tex"))
  t.ok(not contains(a, dir .. "/r1/e1/tables/ptxbench_sm_100a.tex"), "e2's architecture is not in e1's section")
  t.ok(contains(a, dir .. "/r1/e1/tables/kbv.tex"))
  t.ok(contains(a, dir .. "/r1/e1/figures/src/fast_p_sm_90a.gp"))
  local cjson = require "cjson"
  local m = cjson.decode(t.read(dir .. "/r1/metrics.json"))
  t.eq(#m.experiments.e1.kbv, 2, "e1: mA and mB on sm_90a")
  t.eq(#m.experiments.e2.kbv, 1, "e2: mA on sm_100a")
  t.eq(m.bootstrap.B, 200)
end

function tests.figures_in_three_formats(t)
  local pr = gnuplot.probe()
  if not pr.gnuplot then t.skip(pr.why) end
  local path, dir = make_store(t)
  local files = assert(report.write(path, dir .. "/r", { B = 50 }))
  for _, name in ipairs { "e1/figures/fast_p_sm_90a", "e1/figures/correct_sm_90a", "e1/figures/failure_mix_sm_90a_ma",
    "e1/figures/failure_mix_sm_90a_mb", "e1/figures/best_by_turn_sm_90a", "e1/figures/speedups_sm_90a",
    "e2/figures/fast_p_sm_100a" } do
    for _, fmt in ipairs(pr.formats) do
      local f = dir .. "/r/" .. name .. "." .. fmt
      t.ok(contains(files, f), f)
      local s = t.read(f) or ""
      if fmt == "png" then t.eq(s:sub(1, 8), "\137PNG\r\n\26\n", name .. ".png is a PNG") end
      if fmt == "svg" then t.match(s, "<svg", name .. ".svg is an SVG") end
      if fmt == "pdf" then
        t.eq(s:sub(1, 5), "%PDF-", name .. ".pdf is a PDF")
        local date = s:match("/CreationDate%s*%(D:(%d+)")
        t.ok(date == nil or date:match("^20000101"), "fixed creation date, got " .. tostring(date))
      end
    end
  end
  -- The script draws the figure again by itself.
  local gp = t.read(dir .. "/r/e1/figures/src/fast_p_sm_90a.gp")
  t.match(gp, "set output 'figures/fast_p_sm_90a.png'")
  t.match(gp, "%$f1_1 << EOD")
  local code = t.sh("cd " .. sq(dir .. "/r/e1") .. " && rm figures/fast_p_sm_90a.png && gnuplot figures/src/fast_p_sm_90a.gp")
  t.eq(code, 0)
  t.ok(t.read(dir .. "/r/e1/figures/fast_p_sm_90a.png") ~= nil, "redrawn")
end

-- A figure is one file of scripts/klab/report/figures/ and one name in
-- klab.report.figures.NAMES: every file there is registered, and a figure
-- added that way is drawn, captioned and listed like the shipped ones.
function tests.a_figure_is_one_file(t)
  local figures = require "klab.report.figures"
  local listed = {}
  for _, n in ipairs(figures.NAMES) do
    listed[n] = true
    t.eq(type(require("klab.report.figures." .. n).instances), "function", n)
  end
  local p = assert(io.popen("ls " .. sq(t.root .. "/scripts/klab/report/figures")))
  local n = 0
  for f in p:lines() do
    n = n + 1
    if f ~= "init.lua" then t.ok(listed[f:gsub("%.lua$", "")], f .. " is registered") end
  end
  p:close()
  t.eq(n, #figures.NAMES + 1, "one file per figure and the registry")
  local name = "klab.report.figures.task_count"
  package.preload[name] = function()
    return { instances = function(s)
      return { { name = "task_count_" .. s.sa, title = "Tasks", caption = ("Tasks on %s: %d."):format(s.a, #s.tasks),
        draw = function(d, fname) return gnuplot.render_empty(d, fname, "Tasks", "n") end } }
    end }
  end
  figures.NAMES[#figures.NAMES + 1] = "task_count"
  local path, dir = make_store(t)
  local ok, files = pcall(report.write, path, dir .. "/r", { B = 50 })
  figures.NAMES[#figures.NAMES] = nil
  package.preload[name], package.loaded[name] = nil, nil
  t.ok(ok and files, tostring(files))
  t.ok(contains(files, dir .. "/r/e1/figures/src/task_count_sm_90a.gp"), "its script is written")
  t.match(t.read(dir .. "/r/index.html"), "Tasks on sm_90a: 2%.")
end

function tests.tables_have_the_hand_computed_cells(t)
  local path, dir = make_store(t)
  assert(report.write(path, dir .. "/r", { B = 50 }))
  local md = md_text(dir .. "/r/e1/tables/ptxbench_sm_90a.md")
  t.match(md, "turn limit 1 %(n = 2 trajectories per cell; a cell with another n says it%)")
  t.match(md, "| mA | 0 / 0 / %- | 1 / 1 / 0%.800 |", "limit 1")
  t.match(md, "| mA | 1 / 0 / 0%.300 | 2 / 2 / 1%.200 |", "limit 8")
  t.match(md, "| mB | 1 / 1 / %- | 2 / 2 / 2%.000 |", "limit 8")
  local md100 = md_text(dir .. "/r/e2/tables/ptxbench_sm_100a.md")
  t.match(md100, "| mA | 1 / 1 / 0%.900 |")
  t.ok(not md100:find("turn limit 4", 1, true), "e2 has one turn: only limit 1")
  local kbv = md_text(dir .. "/r/e1/tables/kbv.md")
  t.match(kbv, "| sm_90a | mA | 2 | 0%.600 %[[%d.]+, [%d.]+%] | 100%.0%% %[[%d.]+, [%d.]+%] | 50%.0%% ")
  local tex = t.read(dir .. "/r/e1/tables/kbv.tex")
  t.match(tex, "\\begin{tabular}{llrrrr}", "tabular")
  t.match(tex, "sm\\_90a & mA & 2 & 0%.600")
  local mix = md_text(dir .. "/r/e1/tables/failure_mix.md")
  t.match(mix, "| sm_90a | mA | incorrect | 4 / 11 | 36%.4%% ")
  local pd = md_text(dir .. "/r/e1/tables/pdetect.md")
  t.match(pd, "| 0%.1 | 0%.100 | 0%.271 | 0%.410 | 0%.651 |", "1 - 0.9^n for n = 1, 3, 5, 10")
  local fp = md_text(dir .. "/r/e1/tables/fast_p.md")
  t.match(fp, "| sm_90a | mA | any | 4 | 75%.0%% ")
  t.match(fp, "| sm_90a | mA | verified | 4 | 50%.0%% ")
end

function tests.index_shows_provenance(t)
  local path, dir = make_store(t)
  assert(report.write(path, dir .. "/r", { B = 50 }))
  local h = t.read(dir .. "/r/index.html")
  t.match(h, "^<!DOCTYPE html>")
  local wants = { "NVIDIA H200", "NVIDIA B200", "580.65", "e1, e2", "mA, mB", "attn, gemm", "sm_100a, sm_90a",
    "0.1.0", "cublasLt 13.1", "Write gemm.", "You write kernels.", "provider=openai, model=a-1, temperature=0.5",
    'href="e1/tables/kbv.tex"', "Trajectories / turns</td><td>9 / 18", '<h2 id="experiment-e1">Experiment e1</h2>',
    '<h2 id="experiment-e2">Experiment e2</h2>', '<a href="#experiment-e2">e2</a>',
    -- Settings read back from JSON print as integers.
    "<td>replicas</td><td>2</td>", "<td>turns</td><td>8</td>" }
  -- Figures are linked only where gnuplot could draw them.
  if gnuplot.probe().gnuplot then
    wants[#wants + 1] = 'src="e1/figures/fast_p_sm_90a.png"'
    wants[#wants + 1] = 'href="e1/figures/fast_p_sm_90a.pdf"'
  end
  for _, want in ipairs(wants) do
    t.ok(h:find(want, 1, true), "index.html shows " .. want)
  end
  t.ok(not h:find("<script", 1, true), "no scripts: a static page")
  t.ok(not h:find('id="not-measured"', 1, true), "every evaluation of the fixture was measured: no notice")
  t.ok(not h:find("http", 1, true), "self-contained: no remote links")
end

function tests.bad_stores(t)
  local dir = t.tmpdir()
  local files, msg, code = report.write(dir .. "/nope.db", dir .. "/out")
  t.eq(files, nil)
  t.match(msg, "no such store file")
  t.eq(code, "ENOENT")
  local f = assert(io.open(dir .. "/text.db", "w"))
  f:write("not a database")
  f:close()
  files, msg, code = report.write(dir .. "/text.db", dir .. "/out")
  t.eq(files, nil)
  t.match(msg, "not a klab store")
  t.eq(code, "EINVAL")
  -- A store with no experiments still gives an index that says so.
  local db = assert(store.open(dir .. "/plain.db"))
  db:close()
  files = assert(report.write(dir .. "/plain.db", dir .. "/plain"))
  t.ok(contains(files, dir .. "/plain/index.html"))
  t.match(t.read(dir .. "/plain/index.html"), "no experiment trajectories")
  t.raises(function() report.write(dir .. "/plain.db", nil) end, "out_dir")
end

function tests.an_open_store_is_left_open(t)
  local path, dir = make_store(t)
  local db <close> = assert(store.open(path))
  assert(report.write(db, dir .. "/r", { B = 20 }))
  t.ok(db:first("SELECT count(*) AS n FROM turns").n == 18, "still usable")
end

function tests.table_renderers_escape(t)
  local tb = { id = "x", caption = "a & b_c | 50%", head = { "k", "v" }, align = { "l", "r" },
    rows = { { "<t>", "1|2" } }, notes = { "n" } }
  -- A name is text in Markdown too: no raw HTML.
  t.match(tables.markdown(tb), "| &lt;t&gt; | 1\\|2 |")
  t.match(tables.latex(tb), "a \\& b\\_c | 50\\%%")
  t.match(tables.html(tb), "<td class=\"l\">&lt;t&gt;</td>")
  t.eq(gnuplot.slug("GPT 5.5 (high)/x"), "gpt-5.5-high-x")
  t.eq(gnuplot.quote("it's"), "'it''s'")
  local escape = require "klab.report.escape"
  t.eq(escape.gnuplot("a\0b\nc'd"), "'ab c''d'")
  t.eq(escape.gnuplot_tic("50% of %s"), "'50%% of %%s'")
  t.eq(escape.markdown("`x` *y* \\ <i>"), "\\`x\\` \\*y\\* \\\\ &lt;i&gt;")
  t.eq(escape.latex("\\input{x} 5%"), "\\textbackslash{}input\\{x\\} 5\\%")
  t.eq(escape.html("a\0<b>\n"), "a&lt;b&gt;\n")
end

function tests.pdf_dates_are_fixed(t)
  local dir = t.tmpdir()
  local p = dir .. "/a.pdf"
  local body = "%PDF-1.5\n<< /Producer (cairo) /CreationDate (D:20261129181825Z) >>\n"
  gnuplot.write_file(p, body)
  gnuplot.fix_pdf_dates(p)
  local s = t.read(p)
  t.eq(#s, #body, "same length: offsets stay valid")
  t.match(s, "/CreationDate %(D:20000101000000Z%)")
end

function tests.cli(t)
  local path, dir = make_store(t)
  local code, out, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --out " .. sq(dir .. "/cli"))
  t.eq(code, 0, err)
  t.match(out, "open .*/cli/index%.html")
  t.ok(t.read(dir .. "/cli/index.html") ~= nil)
  -- Default directory: the store's name without its extension + _report.
  code, out = t.sh(sq(t.klab) .. " report " .. sq(path))
  t.eq(code, 0)
  t.ok(t.read(dir .. "/fx_report/index.html") ~= nil, "fx_report/index.html")
  code, out = t.sh(sq(t.klab) .. " report --help")
  t.eq(code, 0)
  t.match(out, "usage: klab report DB")
  code, _, err = t.sh(sq(t.klab) .. " report")
  t.eq(code, 2)
  t.match(err, "expected a store file")
  code, _, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --bogus")
  t.eq(code, 2)
  t.match(err, "unknown option %-%-bogus")
  code, _, err = t.sh(sq(t.klab) .. " report " .. sq(dir .. "/missing.db"))
  t.eq(code, 2, "a missing store is the user's mistake")
  t.match(err, "no such store file")
  t.ok(t.read(dir .. "/missing.db") == nil, "a missing store is not created")
end

-- ---- a store without GPU results, unfinished trajectories ---------------------

local SKIPPED = "GPU stages skipped: no CUDA driver found: libcuda.so.1: cannot open shared object file"

-- Experiment "nogpu" (sm_90a, 3 turns) as a machine without a GPU leaves it:
-- T1 unknown x3; T2 compile_error, unknown, unknown. Experiment "cut" (3
-- turns): T3 stopped after turn 1 (state running, compile_error), T4 done:
-- incorrect x3.
local function nogpu_store(t)
  local dir = t.tmpdir()
  local path = dir .. "/nogpu.db"
  local db = assert(store.open(path))
  require("klab.experiment").ensure_schema(db)
  local json = require("klab.experiment.model").json
  local n = 0
  local function exp(name)
    return db:insert("experiments", { name = name, config = json { arch = "sm_90a", turns = 3, replicas = 2,
      models = { { name = "m", provider = "openai", model = "m-1", max_tokens = 32000 } } } })
  end
  local function traj(e, task, replica, state, verdicts)
    local id = db:insert("trajectories", { experiment_id = e, key = ("%d/%s/%d"):format(e, task, replica), model = "m",
      task = task, tag = "none", replica = replica, state = state, turns = #verdicts })
    for i, v in ipairs(verdicts) do
      n = n + 1
      local cid, hash = db:put_candidate { language = "ptx", code = ("// k%d"):format(n) }
      db:record_evaluation { key = "k" .. n, candidate = cid, task = task .. "/1", arch = "sm_90a", verdict = v,
        reason = v == "unknown" and SKIPPED or (v .. ": why") }
      db:insert("turns", { trajectory_id = id, turn = i, verdict = v, reason = v .. ": why", candidate = hash,
        language = "ptx", reply = "r", feedback = "f" })
    end
  end
  local e1, e2 = exp("nogpu"), exp("cut")
  traj(e1, "gemm", 1, "done", { "unknown", "unknown", "unknown" })
  traj(e1, "gemm", 2, "done", { "compile_error", "unknown", "unknown" })
  traj(e2, "gemm", 1, "running", { "compile_error" })
  traj(e2, "gemm", 2, "done", { "incorrect", "incorrect", "incorrect" })
  db:close()
  return path, dir
end

function tests.a_store_without_gpu_results_says_so(t)
  local path, dir = nogpu_store(t)
  local files, warnings = assert(report.write(path, dir .. "/r", { B = 50, experiment = "nogpu" }))
  local h = t.read(dir .. "/r/index.html")
  -- The notice, with the stored reason, comes before everything else on the page.
  local at = h:find('<div class="notice" id="not-measured"><b>GPU stages skipped</b>: 5 of 10 evaluations', 1, true)
  t.ok(at, "the notice")
  t.ok(at and at < h:find("At a glance", 1, true), "above the provenance")
  t.ok(h:find("no CUDA driver found: libcuda.so.1: cannot open shared object file", 1, true), "the stored reason")
  t.match(warnings[1], "^GPU stages skipped: 5 of 10 evaluations")
  -- No blank shown as if it were data.
  t.ok(h:find("<td>GPU</td><td>not measured (GPU stages skipped)</td>", 1, true), "GPU: not measured")
  t.ok(h:find("<td>Driver</td><td>not measured (GPU stages skipped)</td>", 1, true), "driver: not measured")
  t.ok(not h:find("<td></td>", 1, true), "no empty cell")
  -- Figures with nothing to show are left out, and the page says why.
  for _, name in ipairs { "fast_p_sm_90a", "correct_sm_90a", "best_by_turn_sm_90a", "speedups_sm_90a" } do
    t.ok(not contains(files, dir .. "/r/figures/src/" .. name .. ".gp"), name .. " not drawn")
    t.ok(h:find("figures/" .. name, 1, true) == nil, name .. " not linked")
  end
  t.match(h, "Not drawn, having nothing to show:")
  t.match(h, "fast_p on sm_90a: no trajectory on sm_90a has a result")
  -- The failure mix draws the one real result and leaves unknown out.
  if gnuplot.probe().gnuplot then t.ok(contains(files, dir .. "/r/figures/failure_mix_sm_90a_m.png")) end
  local mix = md_text(dir .. "/r/tables/failure_mix.md")
  t.match(mix, "| sm_90a | m | compile_error | 1 / 1 | 100%.0%% ")
  t.match(mix, "| sm_90a | m | unknown %(no result%) | 5 | not counted |")
  t.ok(not mix:find("unknown | 5 /", 1, true), "unknown is no share of the results")
  -- Rates count decided trajectories only; the others are named, not failed.
  local succ = md_text(dir .. "/r/tables/success.md")
  t.match(succ, "| sm_90a | m | gemm | 3 | 0 | %- | %- | %- | %- | 2 not measured |", "no rate from nothing")
  t.match(succ, "| sm_90a | m | gemm | 1 | 1 | 0%.0%% [^|]*| 0%.0%% [^|]*| %- | %- | 1 not measured |",
    "at turn limit 1, T2's first turn is a result")
  t.match(md_text(dir .. "/r/tables/ptxbench_sm_90a.md"), "| m | not measured |")
  local m = require("cjson").decode(t.read(dir .. "/r/metrics.json"))
  t.eq(m.not_measured.unknown, 5)
  t.eq(m.left_out.not_measured, 2)
  -- The command line prints the same notice (the text report).
  local code, _, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --experiment nogpu --out " .. sq(dir .. "/cli"))
  t.eq(code, 0, err)
  t.match(err, "^klab report: GPU stages skipped: 5 of 10 evaluations in this store have no GPU results")
  t.match(err, "figure fast_p_sm_90a not drawn: ")
end

function tests.unfinished_trajectories_are_not_failures(t)
  local path, dir = nogpu_store(t)
  local _, warnings = assert(report.write(path, dir .. "/r", { B = 50, experiment = "cut" }))
  local found
  for _, w in ipairs(warnings) do if w:find("1 of 2 trajectories are unfinished", 1, true) then found = true end end
  t.ok(found, "a warning names the unfinished trajectory")
  t.match(t.read(dir .. "/r/index.html"), "1 of 2 trajectories are unfinished")
  local succ = md_text(dir .. "/r/tables/success.md")
  t.match(succ, "| sm_90a | m | gemm | 3 | 1 | 0%.0%% [^|]*| 0%.0%% [^|]*| %- | %- | 1 unfinished |",
    "n = 1: the finished failure only")
  t.match(succ, "| sm_90a | m | gemm | 1 | 2 |", "both count at turn limit 1")
  local pb = md_text(dir .. "/r/tables/ptxbench_sm_90a.md")
  t.match(pb, "Left out of n: 0 trajectories with no result %(a turn's verdict unknown or request_error, none passed%) "
    .. "and 1 unfinished; they are not failures%.")
end

-- Figures that do not pretend: nothing timed draws no "best speedup so
-- far" or Fast@k (each is listed among the figures not drawn, with the
-- reason); a task with no result is named under the correct/verified
-- bars; a condition with one task has no interval (not "[100.0, 100.0]").
function tests.figures_and_intervals_of_nothing_are_not_drawn(t)
  local path, dir = nogpu_store(t)
  do
    local db <close> = assert(store.open(path))
    local e = db:first("SELECT id FROM experiments WHERE name = 'cut'").id
    local id = db:insert("trajectories", { experiment_id = e, key = "cut/attn/1", model = "m", task = "attn",
      tag = "none", replica = 1, state = "done", turns = 1 })
    db:insert("turns", { trajectory_id = id, turn = 1, verdict = "unknown", reason = SKIPPED, language = "ptx",
      reply = "r", feedback = "f" })
  end
  local _, warnings = assert(report.write(path, dir .. "/r", { B = 50, experiment = "cut" }))
  local text = table.concat(warnings, "\n")
  t.match(text, "figure best_by_turn_sm_90a not drawn: no correct timed candidate on sm_90a")
  t.match(text, "figure at_k_sm_90a not drawn: no correct timed candidate on sm_90a")
  local h = t.read(dir .. "/r/index.html") or ""
  t.match(h, "Not measured %(no bar%): attn%.")
  -- One task: no interval.
  local fx = make_store(t)
  assert(report.write(fx, dir .. "/fx", { B = 50 }))
  local mix = md_text(dir .. "/fx/e2/tables/failure_mix.md")
  t.match(mix, "| sm_100a | mA | passed | 1 / 1 | 100%.0%% |")
  local ak = md_text(dir .. "/fx/e2/tables/at_k.md")
  t.match(ak, "| sm_100a | mA | 1 | 1 | 0%.0%% | 0%.900 |")
  t.ok(not (mix .. ak):find("%[(%d+%.%d+), %1%]"), "no zero-width interval")
end

function tests.default_report_has_a_section_per_experiment(t)
  local path, dir = nogpu_store(t)
  local files = assert(report.write(path, dir .. "/r", { B = 20 }))
  t.ok(contains(files, dir .. "/r/nogpu/tables/success.md"))
  t.ok(contains(files, dir .. "/r/cut/tables/success.md"))
  t.ok(not contains(files, dir .. "/r/tables/success.md"), "nothing pooled over experiments")
  local h = t.read(dir .. "/r/index.html")
  t.ok(h:find('<h2 id="experiment-cut">Experiment cut</h2>', 1, true) < h:find('<h2 id="experiment-nogpu">', 1, true))
  local m = require("cjson").decode(t.read(dir .. "/r/metrics.json"))
  t.eq(#m.experiments.cut.success, 2, "cut: limits 1 and 3")
  t.eq(m.experiments.nogpu.left_out.not_measured, 2)
end

function tests.unknown_experiment_names_the_ones_held(t)
  local path, dir = nogpu_store(t)
  local files, msg, code = report.write(path, dir .. "/r", { experiment = "nope" })
  t.eq(files, nil)
  t.eq(msg, "report: nogpu.db holds no experiment named 'nope' (it holds: cut, nogpu)")
  t.eq(code, "ENOTFOUND")
  t.ok(io.open(dir .. "/r/index.html") == nil, "nothing written")
  local c, out, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --experiment nope --out " .. sq(dir .. "/r"))
  t.eq(c, 2)
  t.eq(out, "")
  t.eq(err, "klab report: nogpu.db holds no experiment named 'nope' (it holds: cut, nogpu)\n")
end

-- A store in a folder the user cannot write (SQLite cannot make the WAL's
-- -shm file there) is read as it is. As root, permissions do not bind: the
-- report then runs as nobody.
function tests.a_store_in_a_read_only_folder(t)
  local path, dir = nogpu_store(t)
  local ro = dir .. "/ro"
  assert(require("klab.sys").mkdir(ro))
  assert(os.rename(path, ro .. "/nogpu.db"))
  local out = dir .. "/out"
  assert(require("klab.sys").mkdir(out))
  local cmd = sq(t.klab) .. " report " .. sq(ro .. "/nogpu.db") .. " --experiment nogpu --out " .. sq(out .. "/r")
  local uid = select(2, t.sh("id -u")):match("%d+")
  if uid == "0" then
    if t.sh("command -v setpriv >/dev/null") ~= 0 then t.skip("running as root without setpriv: cannot drop privileges") end
    -- nobody must reach the binary, the store and the output folder.
    os.execute("chmod 755 " .. sq(dir) .. " " .. sq(ro) .. " && chmod 644 " .. sq(ro .. "/nogpu.db")
      .. " && chmod 777 " .. sq(out))
    local probe = t.sh("setpriv --reuid=65534 --regid=65534 --clear-groups test -x " .. sq(t.klab))
    if probe ~= 0 then t.skip("the user nobody cannot run " .. t.klab) end
    cmd = "setpriv --reuid=65534 --regid=65534 --clear-groups " .. cmd
  end
  os.execute("chmod 555 " .. sq(ro))
  local code, _, err = t.sh(cmd)
  os.execute("chmod 755 " .. sq(ro))
  t.eq(code, 0, err)
  t.ok(t.read(out .. "/r/index.html") ~= nil, "the report was written")
  t.ok(io.open(ro .. "/nogpu.db-shm") == nil and io.open(ro .. "/nogpu.db-wal") == nil, "nothing written beside the store")
  -- The library's read-only open works there too (here, where permissions may not bind, it is the plain path).
  local db = assert(store.open(ro .. "/nogpu.db", { readonly = true }))
  t.eq(db:first("SELECT count(*) AS n FROM turns").n, 10)
  db:close()
end

-- A report that fails half way leaves the previous one whole and no
-- temporary folder; a new one replaces it at once.
function tests.an_interrupted_report_leaves_the_old_one(t)
  local path, dir = nogpu_store(t)
  local r = dir .. "/r"
  local first = assert(report.write(path, r, { B = 20, experiment = "nogpu" }))
  local before = {}
  for _, f in ipairs(first) do before[f] = t.read(f) end
  -- limits that are no list make the metrics raise half way through.
  local files, msg, code = report.write(path, r, { B = 20, experiment = "cut", limits = 7 })
  t.eq(files, nil)
  t.eq(code, "EREPORT")
  t.ok(msg ~= nil)
  for f, body in pairs(before) do t.ok(t.read(f) == body, "unchanged: " .. f) end
  local _, listing = t.sh("ls -A " .. sq(dir))
  t.ok(not listing:find("klab-new", 1, true) and not listing:find("klab-old", 1, true), "no temporary folder left: " .. listing)
  -- The next report replaces the old one whole: no file of the old one is left.
  assert(report.write(path, r, { B = 20, experiment = "cut" }))
  t.match(t.read(r .. "/index.html"), "klab report: cut")
  local _, l2 = t.sh("ls -A " .. sq(dir))
  t.ok(not l2:find("klab-", 1, true), "no temporary folder left")
end

function tests.out_must_be_a_folder_for_a_report(t)
  local path, dir = nogpu_store(t)
  local f = assert(io.open(dir .. "/afile", "w"))
  f:write("mine")
  f:close()
  local code, out, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --out " .. sq(dir .. "/afile"))
  t.eq(code, 2)
  t.eq(out, "")
  t.eq(err, "klab report: " .. dir .. "/afile is a file, not a folder: give --out a folder\n")
  t.eq(t.read(dir .. "/afile"), "mine", "untouched")
  -- A folder with the user's own files is not replaced.
  assert(require("klab.sys").mkdir(dir .. "/mine"))
  local g = assert(io.open(dir .. "/mine/notes.txt", "w"))
  g:write("keep")
  g:close()
  code, _, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --out " .. sq(dir .. "/mine"))
  t.eq(code, 2)
  t.match(err, "holds files that are not a klab report")
  t.eq(t.read(dir .. "/mine/notes.txt"), "keep")
end

function tests.sft_export_says_why_it_has_no_records(t)
  local path, dir = nogpu_store(t)
  local export = require "klab.report.export"
  local recs, s = assert(export.sft(path, { experiment = "nogpu" }))
  t.eq(#recs, 0)
  t.eq(export.summary_text(s), "0 records: experiment nogpu has 6 turns, none passed (5 were not measured)")
  local code, out = t.sh(sq(t.klab) .. " export sft " .. sq(path) .. " --experiment cut --out " .. sq(dir .. "/x.jsonl"))
  t.eq(code, 1, "nothing passed: the candidates failed")
  t.match(out, "^0 records: experiment cut has 4 turns, none passed\nnothing exported: no file written\n$")
  t.ok(not out:find("task%s+generation"), "no empty header")
  -- A store where nothing was measured: status 3.
  local db = assert(store.open(path))
  db:exec("UPDATE turns SET verdict = 'unknown'")
  db:close()
  code, out = t.sh(sq(t.klab) .. " export sft " .. sq(path) .. " --out " .. sq(dir .. "/y.jsonl"))
  t.eq(code, 3)
  t.match(out, "^0 records: the store has 10 turns and none was measured")
  code, _, out = t.sh(sq(t.klab) .. " export sft " .. sq(path) .. " --experiment nope")
  t.eq(code, 2)
  t.match(out, "holds no experiment named 'nope' %(it holds: cut, nogpu%)")
end

-- Hostile names (quotes, %, backslashes, NUL, newlines, HTML, TeX and
-- Markdown markup) survive every renderer: the report is written, every
-- figure is drawn (none is left out for gnuplot's sake), and no name
-- reaches a file as markup.
function tests.hostile_names_survive_the_report(t)
  local path, dir = make_store(t)
  local db <close> = assert(store.open(path))
  local model = "m'A\"%s%d\\ <script>alert(1)</script>\0\n`x` \\input{x} |p|"
  local task = "g%emm\n'q'_$&#{}~^ <b>"
  db:query("UPDATE trajectories SET model = ?1 WHERE model = 'mA'", model)
  db:query("UPDATE trajectories SET task = ?1 WHERE task = 'gemm'", task)
  db:close()
  local files = assert(report.write(path, dir .. "/r", { B = 50 }))
  local omitted = t.read(dir .. "/r/index.html") or ""
  t.ok(not omitted:find("gnuplot failed", 1, true), "no figure failed")
  for _, f in ipairs(files) do
    local body = t.read(f) or ""
    if f:match("%.md$") or f:match("%.html$") then
      t.ok(not body:find("<script>", 1, true), f .. ": no raw HTML from a name")
    end
    if f:match("%.md$") then t.ok(not body:find("<b>", 1, true), f .. ": no raw HTML from a name") end
    if f:match("%.tex$") then
      t.ok(not body:find("\\input{", 1, true), f .. ": no TeX command from a name")
    end
    if not f:match("%.png$") and not f:match("%.pdf$") then t.ok(not body:find("\0", 1, true), f .. ": no NUL byte") end
  end
  if gnuplot.probe().gnuplot then
    local pngs = 0
    for _, f in ipairs(files) do if f:match("%.png$") then pngs = pngs + 1 end end
    t.ok(pngs >= 4, "figures drawn: " .. pngs)
  end
  local md = md_text(dir .. "/r/e1/tables/ptxbench_sm_90a.md") or ""
  t.ok(md:find("&lt;script&gt;", 1, true), "the model's name is shown as text")
end

-- Conditions side by side (--by tag,model): one section, the tables'
-- first column is the condition, a comparison table; and two stores at
-- once (their experiments renamed apart), the same bytes on a second run.
function tests.conditions_side_by_side_and_two_stores(t)
  local path, dir = make_store(t)
  local a = assert(report.write(path, dir .. "/by1", { B = 50, by = { "model", "experiment" } }))
  local b = assert(report.write(path, dir .. "/by2", { B = 50, by = { "model", "experiment" } }))
  t.eq(#a, #b)
  for i = 1, #a do t.ok(t.read(a[i]) == t.read(b[i]), a[i] .. " is the same twice") end
  local md = md_text(dir .. "/by1/tables/ptxbench_sm_90a.md") or ""
  t.match(md, "| Condition %(model, experiment%) |")
  t.match(md, "| mA / e1 |")
  local cmp = md_text(dir .. "/by1/tables/compare.md") or ""
  -- sm_90a: mA / e1 against mB / e1 on the two tasks both ran.
  t.match(cmp, "| sm_90a | mA / e1 | mB / e1 | 2 |")
  local bad, msg, code = report.write(path, dir .. "/bad", { by = { "modle" } })
  t.eq(bad, nil)
  t.eq(code, "EINVAL")
  t.match(msg, "no condition variable 'modle'")
  -- A list of the config (the same for every turn) is no condition: refused
  -- with the per-turn name it was mistaken for, exit 2 on the command line.
  for list, one in pairs { tags = "tag", models = "model", tasks = "task", templates = "template" } do
    bad, msg, code = report.write(path, dir .. "/bad", { by = { list } })
    t.eq(bad, nil, list)
    t.eq(code, "EINVAL", list)
    t.match(msg, "did you mean '" .. one .. "'%?", list)
  end
  -- A template given by its absolute path is named by its file name.
  t.eq(require("klab.report.conditions").relabel({ { experiment = "x", model = "m", task = "t" } }, { "template" },
    { x = { prompt = { user = "/home/me/prompts/mine.md" } } }), "Condition (template)")
  local trs = { { experiment = "x", model = "m", task = "t" } }
  require("klab.report.conditions").relabel(trs, { "template" }, { x = { prompt = { user = "/home/me/p/mine.md" } } })
  t.eq(trs[1].model, "mine.md")
  local rc, _, err = t.sh(("%s report %s --by tags --out %s"):format(sq(t.klab), sq(path), sq(dir .. "/bad")))
  t.eq(rc, 2)
  t.match(err, "'tags' is a list in the experiment's config")

  -- A second store: the same study under other names.
  local p2 = dir .. "/other.db"
  fixture(p2):close()
  do
    local db <close> = assert(store.open(p2))
    db:query("UPDATE experiments SET name = name || '_b'")
    db:query("UPDATE trajectories SET key = 'b/' || key")
  end
  local two = assert(report.write({ path, p2 }, dir .. "/two1", { B = 50 }))
  local again = assert(report.write({ path, p2 }, dir .. "/two2", { B = 50 }))
  t.eq(#two, #again)
  for i = 1, #two do t.ok(t.read(two[i]) == t.read(again[i]), two[i] .. " is the same twice") end
  t.ok(contains(two, dir .. "/two1/e1/tables/kbv.md") and contains(two, dir .. "/two1/e1_b/tables/kbv.md"),
    "both stores' experiments are in the report")
  t.match(t.read(dir .. "/two1/index.html") or "", "fx%.db %+ other%.db")
  -- By experiment across the two stores: e1 against e1_b, which hold the same results.
  assert(report.write({ path, p2 }, dir .. "/two_by", { B = 50, by = { "experiment" } }))
  t.match(md_text(dir .. "/two_by/tables/compare.md") or "", "| sm_90a | e1 | e1_b | 2 | [%d.]+%% %(n=%d+%) | [%d.]+%% %(n=%d+%) | %+0%.0 pts")
end

-- --format picks the table files (LaTeX only here; the page links what
-- exists), and --ps the fast_p table's thresholds; bad values are one line.
function tests.format_and_thresholds(t)
  local path, dir = make_store(t)
  local files = assert(report.write(path, dir .. "/tex", { B = 20, formats = { tex = true }, ps = { 0, 1, 4 } }))
  local md, tex = 0, 0
  for _, f in ipairs(files) do
    if f:match("/tables/.*%.md$") then md = md + 1 end
    if f:match("/tables/.*%.tex$") then tex = tex + 1 end
  end
  t.eq(md, 0, "no Markdown tables")
  t.ok(tex > 0, "LaTeX tables")
  local page = t.read(dir .. "/tex/index.html") or ""
  t.ok(page:find("LaTeX</a>", 1, true) and not page:find("Markdown</a>", 1, true), "the page links only the LaTeX files")
  local fp = t.read(dir .. "/tex/e1/tables/fast_p.tex") or t.read(dir .. "/tex/tables/fast_p.tex") or ""
  t.match(fp, "\\toprule")
  t.match(fp, "p = 4")
  local cli = require "klab.cli.report"
  local o = assert(cli.parse { "x.db", "--format", "md", "--ps", "2,0.5" })
  t.ok(o.format.md and not o.format.tex)
  t.eq(o.ps[1], 0.5)
  t.eq(o.ps[2], 2)
  local bad, err = cli.parse { "x.db", "--format", "html" }
  t.eq(bad, nil)
  t.match(err, "'html' is not md or tex")
  bad, err = cli.parse { "x.db", "--ps", "1,-2" }
  t.eq(bad, nil)
  t.match(err, "'%-2' is not a speedup")
end

-- The cost table: requests, tokens, dollars and latency per condition from
-- the turns' own records, and the dollars per correct trajectory.
function tests.cost_per_condition(t)
  local path, dir = make_store(t)
  do
    local db <close> = assert(store.open(path))
    db:query([[UPDATE turns SET source = 'network', input_tokens = 1000, output_tokens = 200, cost_usd = 0.01,
      latency_ms = 100 * turn WHERE trajectory_id IN (SELECT id FROM trajectories WHERE model = 'mA')]])
  end
  assert(report.write(path, dir .. "/r", { B = 20 }))
  local md = md_text(dir .. "/r/e1/tables/cost.md") or ""
  -- e1, mA on sm_90a: 11 turns over 4 trajectories, 3 of them with a correct
  -- turn (gemm r1 and r2, attn r1), 2 with a verified one (gemm r1, r2);
  -- latency: median 200 ms, mean 2500 / 11 ms.
  t.match(md, "| sm_90a | mA | 11 | 11 | 11000 | 2200 | 0%.1100 | 200 | 227 | 0%.0367 | 0%.0550 |")
  -- mB: nothing was recorded, and no price.
  t.match(md, "| sm_90a | mB | 0 | 0 | 0 | 0 | %- | %- | %- | %- | %- |")
end

-- The speed-of-light fraction: a passed turn's floor over its median, its
-- geometric mean over the timed problems' best turns in the KBV table.
function tests.speed_of_light_fraction(t)
  local path, dir = make_store(t)
  do
    local db <close> = assert(store.open(path))
    -- Every evaluation: a floor of 40 us under a median of 100 us (0.4 of the floor's speed).
    db:query("INSERT INTO measurements(evaluation_id, name, value, unit) SELECT id, 'floor_us', 40, 'us' FROM evaluations")
    db:query("INSERT INTO measurements(evaluation_id, name, value, unit) SELECT id, 'median_us', 100, 'us' FROM evaluations")
  end
  assert(report.write(path, dir .. "/r", { B = 20 }))
  local md = md_text(dir .. "/r/e1/tables/kbv.md") or ""
  t.match(md, "| SOL |")
  t.match(md, "| sm_90a | mA | 2 | [^|]+| [^|]+| [^|]+| 0%.400 |")
  -- The figure: every correct timed candidate at 0.4, the floor at 1 (its
  -- source is written whole without gnuplot too).
  if gnuplot.probe().gnuplot then
    for _, ext in ipairs { "png", "svg", "pdf" } do
      t.ok(t.read(dir .. "/r/e1/figures/sol_sm_90a." .. ext), "sol_sm_90a." .. ext)
    end
  end
  local gp = t.read(dir .. "/r/e1/figures/src/sol_sm_90a.gp") or ""
  t.match(gp, "physical floor")
  local dots = 0
  for y in gp:gmatch("\n[%-%d%.]+ ([%d%.]+)\n") do
    t.eq(y, "0.4")
    dots = dots + 1
  end
  t.ok(dots > 0, "the candidates are drawn")
end

-- Fast@k and best-of-k: the fixture has two replicas per task, so k = 1, 2.
function tests.fast_at_k_table_and_figure(t)
  local path, dir = make_store(t)
  assert(report.write(path, dir .. "/r", { B = 20 }))
  local md = md_text(dir .. "/r/e1/tables/at_k.md") or ""
  t.match(md, "| sm_90a | mA | 2 | 1 | 25%.0%% %[[%d%.]+, [%d%.]+%] | 0%.575 %[")
  t.match(md, "| sm_90a | mB | 2 | 2 | 50%.0%% %[[%d%.]+, [%d%.]+%] | 1%.000 %[")
  t.ok(t.read(dir .. "/r/e1/figures/src/at_k_sm_90a.gp"), "the figure's source")
  if gnuplot.probe().gnuplot then t.ok(t.read(dir .. "/r/e1/figures/at_k_sm_90a.png"), "the figure") end
  t.ok(t.read(dir .. "/r/e1/tables/at_k.tex"), "the LaTeX table")
  -- e2 has one trajectory per task: left out, with the reason.
  local html = t.read(dir .. "/r/index.html") or ""
  t.match(html, "k = 1 only")
end

-- A figure wider than MAX_WIDTH_IN is drawn in pages of tasks, each inside
-- the renderer's limit (here forced with a narrow limit on two tasks).
function tests.wide_figures_are_paged(t)
  local path, dir = make_store(t)
  local keep = gnuplot.MAX_WIDTH_IN
  gnuplot.MAX_WIDTH_IN = 4.2
  local ok, files = pcall(report.write, path, dir .. "/r", { B = 20 })
  gnuplot.MAX_WIDTH_IN = keep
  t.ok(ok and files, tostring(files))
  if not (ok and files) then return end
  t.ok(contains(files, dir .. "/r/e1/figures/src/correct_sm_90a_p1.gp"), "page 1")
  t.ok(contains(files, dir .. "/r/e1/figures/src/correct_sm_90a_p2.gp"), "page 2")
  t.ok(not contains(files, dir .. "/r/e1/figures/src/correct_sm_90a.gp"), "no unpaged figure")
  t.match(t.read(dir .. "/r/e1/figures/src/correct_sm_90a_p2.gp") or "", "tasks 2 to 2 of 2")
  if gnuplot.probe().gnuplot then
    t.ok(contains(files, dir .. "/r/e1/figures/correct_sm_90a_p2.png"), "page 2 drawn")
    t.match(t.read(dir .. "/r/index.html") or "", "correct_sm_90a_p2%.png")
  end
end

-- The quickstart's report, provenance that does not pretend: the klab that
-- made the turns is named though no GPU ran (no environment row), the
-- base_url of a model whose replies all came from files is said to be never
-- contacted, and no latency is made of replies that took no server time.
function tests.quickstart_provenance_names_what_is_known(t)
  local dir = t.tmpdir()
  local code, out, err = t.sh("cd " .. sq(t.root) .. " && KLAB_CACHE_DIR=" .. sq(dir .. "/cache") .. " " .. sq(t.klab)
    .. " experiments/quickstart.lua arch=sm_90a files=tasks/samples/vector_add.ptx out=" .. sq(dir .. "/qs"))
  t.eq(code, 0, out .. err)
  local h = t.read(dir .. "/qs/report/index.html") or ""
  local b = require("klab.build")
  local this = b.version .. " (" .. b.gitrev .. ")"
  t.match(this, "^%d+%.%d+%.%d+")
  t.ok(h:find("<td>klab (runs)</td><td>" .. this .. "</td>", 1, true), "the klab that made the turns: " .. this)
  t.ok(h:find("<td>klab (turns made by)</td><td>" .. this .. "</td>", 1, true), "in the experiment's provenance")
  t.match(h, "base_url=http://127%.0%.0%.1:9/v1 %(never contacted: no reply in this store came from it%)")
  local cost = md_text(dir .. "/qs/report/tables/cost.md")
  t.match(cost, "| sm_90a | klab%-sample | 8 | 0 | 0 | 0 | %- | %- | %- | %- | %- |", "no latency of 0 requests")
end

-- A study resumed by another klab build names both builds.
function tests.a_resumed_study_names_every_klab_build(t)
  local dir = t.tmpdir()
  local db = dir .. "/s.db"
  local run = "cd " .. sq(t.root) .. " && " .. sq(t.klab) .. " experiments/ptxbench_sweep.lua models=m "
    .. "base_url=http://127.0.0.1:9/v1 tags=none replicas=1 turns=2 tasks=gemm_bf16/128x4096x4096 db=" .. sq(db)
  t.eq((t.sh(run)), 3, "nothing could be measured")
  do
    local s <close> = assert(store.open(db))
    s:query([[UPDATE experiments SET config = json_set(config, '$.klab', json('["0.0.1 (0123456789ab)"]'))]])
  end
  local code, _, err = t.sh(run)
  t.ok(code == 0 or code == 3, "the resumed run: " .. err)
  local b = require("klab.build")
  local this = b.version .. " (" .. b.gitrev .. ")"
  assert(report.write(db, dir .. "/r", { B = 20 }))
  local h = t.read(dir .. "/r/index.html") or ""
  t.ok(h:find("<td>klab (turns made by)</td><td>0.0.1 (0123456789ab), " .. this .. "</td>", 1, true), "both builds")
  t.ok(h:find("<td>klab (runs)</td><td>0.0.1 (0123456789ab), " .. this .. "</td>", 1, true), "both at a glance")
  -- A server was asked (and failed): its address is no placeholder.
  t.match(h, "base_url=http://127%.0%.0%.1:9/v1</td>")
end

-- A store whose awaiting turns a judge run without a GPU could not judge:
-- the notice says the stages were skipped and that the turns still await
-- 'klab judge' on a GPU machine.
function tests.awaiting_turns_stay_in_the_notice_after_a_judge_without_gpu(t)
  local path, dir = nogpu_store(t)
  do
    local db <close> = assert(store.open(path))
    db:query("UPDATE turns SET awaiting = 1 WHERE verdict = 'unknown'")
  end
  local _, warnings = assert(report.write(path, dir .. "/r", { B = 20, experiment = "nogpu" }))
  t.match(warnings[1], "^GPU stages skipped: 5 of 10 evaluations in this store have no GPU results")
  t.match(warnings[1], " 5 turns still await 'klab judge' on a GPU machine%.$")
end

return tests
