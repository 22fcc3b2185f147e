-- klab.report, klab.report.tables, klab.report.figures and `klab report` on the store of
-- metrics_test.lua (answers computed by hand there).

local report = require "klab.report"
local figures = require "klab.report.figures"
local tables = require "klab.report.tables"
local store = require "klab.store"

local function here()
  return debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
end
local fixture = getmetatable(dofile(here() .. "/metrics_test.lua")).__index.fixture

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
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
    local x, y = read(f), read(b[i])
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
  local m = cjson.decode(read(dir .. "/r1/metrics.json"))
  t.eq(#m.experiments.e1.kbv, 2, "e1: mA and mB on sm_90a")
  t.eq(#m.experiments.e2.kbv, 1, "e2: mA on sm_100a")
  t.eq(m.bootstrap.B, 200)
end

function tests.figures_in_three_formats(t)
  local pr = figures.probe()
  if not pr.gnuplot then t.skip(pr.why) end
  local path, dir = make_store(t)
  local files = assert(report.write(path, dir .. "/r", { B = 50 }))
  for _, name in ipairs { "e1/figures/fast_p_sm_90a", "e1/figures/correct_sm_90a", "e1/figures/failure_mix_sm_90a_ma",
    "e1/figures/failure_mix_sm_90a_mb", "e1/figures/best_by_turn_sm_90a", "e1/figures/speedups_sm_90a",
    "e2/figures/fast_p_sm_100a" } do
    for _, fmt in ipairs(pr.formats) do
      local f = dir .. "/r/" .. name .. "." .. fmt
      t.ok(contains(files, f), f)
      local s = read(f) or ""
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
  local gp = read(dir .. "/r/e1/figures/src/fast_p_sm_90a.gp")
  t.match(gp, "set output 'figures/fast_p_sm_90a.png'")
  t.match(gp, "%$f1_1 << EOD")
  local code = t.sh("cd " .. sq(dir .. "/r/e1") .. " && rm figures/fast_p_sm_90a.png && gnuplot figures/src/fast_p_sm_90a.gp")
  t.eq(code, 0)
  t.ok(read(dir .. "/r/e1/figures/fast_p_sm_90a.png") ~= nil, "redrawn")
end

function tests.tables_have_the_hand_computed_cells(t)
  local path, dir = make_store(t)
  assert(report.write(path, dir .. "/r", { B = 50 }))
  local md = read(dir .. "/r/e1/tables/ptxbench_sm_90a.md")
  t.match(md, "turn limit 1 %(n = 2 trajectories per cell%)")
  t.match(md, "| mA | 0 / 0 / %- | 1 / 1 / 0%.800 |", "limit 1")
  t.match(md, "| mA | 1 / 0 / 0%.300 | 2 / 2 / 1%.200 |", "limit 8")
  t.match(md, "| mB | 1 / 1 / %- | 2 / 2 / 2%.000 |", "limit 8")
  local md100 = read(dir .. "/r/e2/tables/ptxbench_sm_100a.md")
  t.match(md100, "| mA | 1 / 1 / 0%.900 |")
  t.ok(not md100:find("turn limit 4", 1, true), "e2 has one turn: only limit 1")
  local kbv = read(dir .. "/r/e1/tables/kbv.md")
  t.match(kbv, "| sm_90a | mA | 2 | 0%.600 %[[%d.]+, [%d.]+%] | 100%.0%% %[[%d.]+, [%d.]+%] | 50%.0%% ")
  t.match(kbv, "| MemEff | MemEff%% |")
  t.match(kbv, "| 2%.000 | 100%.0%% |")
  local tex = read(dir .. "/r/e1/tables/kbv.tex")
  t.match(tex, "\\begin{tabular}{llrrrrrr}", "tabular")
  t.match(tex, "sm\\_90a & mA & 2 & 0%.600")
  t.match(tex, "MemEff\\%%")
  local mix = read(dir .. "/r/e1/tables/failure_mix.md")
  t.match(mix, "| sm_90a | mA | incorrect | 4 / 11 | 36%.4%% ")
  local pd = read(dir .. "/r/e1/tables/pdetect.md")
  t.match(pd, "| 0%.1 | 0%.100 | 0%.271 | 0%.410 | 0%.651 |", "1 - 0.9^n for n = 1, 3, 5, 10")
  local fp = read(dir .. "/r/e1/tables/fast_p.md")
  t.match(fp, "| sm_90a | mA | any | 4 | 75%.0%% ")
  t.match(fp, "| sm_90a | mA | verified | 4 | 50%.0%% ")
end

function tests.index_shows_provenance(t)
  local path, dir = make_store(t)
  assert(report.write(path, dir .. "/r", { B = 50 }))
  local h = read(dir .. "/r/index.html")
  t.match(h, "^<!DOCTYPE html>")
  local wants = { "NVIDIA H200", "NVIDIA B200", "580.65", "e1, e2", "mA, mB", "attn, gemm", "sm_100a, sm_90a",
    "0.1.0", "cublasLt 13.1", "Write gemm.", "You write kernels.", "provider=openai, model=a-1, temperature=0.5",
    'href="e1/tables/kbv.tex"', "Trajectories / turns</td><td>9 / 18", '<h2 id="experiment-e1">Experiment e1</h2>',
    '<h2 id="experiment-e2">Experiment e2</h2>', '<a href="#experiment-e2">e2</a>',
    -- Settings read back from JSON print as integers.
    "<td>replicas</td><td>2</td>", "<td>turns</td><td>8</td>" }
  -- Figures are linked only where gnuplot could draw them.
  if figures.probe().gnuplot then
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
  t.match(read(dir .. "/plain/index.html"), "no experiment trajectories")
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
  t.match(tables.markdown(tb), "| <t> | 1\\|2 |")
  t.match(tables.latex(tb), "a \\& b\\_c | 50\\%%")
  t.match(tables.html(tb), "<td class=\"l\">&lt;t&gt;</td>")
  t.eq(figures.slug("GPT 5.5 (high)/x"), "gpt-5.5-high-x")
  t.eq(figures.quote("it's"), "'it''s'")
end

function tests.pdf_dates_are_fixed(t)
  local dir = t.tmpdir()
  local p = dir .. "/a.pdf"
  local body = "%PDF-1.5\n<< /Producer (cairo) /CreationDate (D:20261129181825Z) >>\n"
  figures.write_file(p, body)
  figures.fix_pdf_dates(p)
  local s = read(p)
  t.eq(#s, #body, "same length: offsets stay valid")
  t.match(s, "/CreationDate %(D:20000101000000Z%)")
end

function tests.cli(t)
  local path, dir = make_store(t)
  local code, out, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --out " .. sq(dir .. "/cli"))
  t.eq(code, 0, err)
  t.match(out, "open .*/cli/index%.html")
  t.ok(read(dir .. "/cli/index.html") ~= nil)
  -- Default directory: the store's name without its extension + _report.
  code, out = t.sh(sq(t.klab) .. " report " .. sq(path))
  t.eq(code, 0)
  t.ok(read(dir .. "/fx_report/index.html") ~= nil, "fx_report/index.html")
  code, out = t.sh(sq(t.klab) .. " report --help")
  t.eq(code, 0)
  t.match(out, "usage: klab report DB")
  code, _, err = t.sh(sq(t.klab) .. " report")
  t.eq(code, 2)
  t.match(err, "expected one store file")
  code, _, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --bogus")
  t.eq(code, 2)
  t.match(err, "unknown option %-%-bogus")
  code, _, err = t.sh(sq(t.klab) .. " report " .. sq(dir .. "/missing.db"))
  t.eq(code, 2, "a missing store is the user's mistake")
  t.match(err, "no such store file")
  t.ok(read(dir .. "/missing.db") == nil, "a missing store is not created")
end

return tests
