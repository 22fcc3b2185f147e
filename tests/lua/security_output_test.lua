-- security_output_test.lua: what klab prints or writes from names it did
-- not choose (a store's tasks and models, a task folder's names, a batch
-- list's candidates, a Slurm script's file name), tried as an attacker would.
-- A name may hold escape sequences, Markdown, option syntax or any length:
-- the terminal gets it escaped, a report gets it as text, sbatch gets one
-- word, and an error is one line naming the store and the row.
local escape = require "klab.report.escape"
local store = require "klab.store"

local T = {}

local SECRET = "klab-test-secret-value-0123456789"
-- An escape sequence that sets a terminal's title and one that clears it.
local TITLE, CLEAR = "\27]0;" .. SECRET .. "\7", "\27[2J\27[H"

local function q(s) return require("klab.command").shell_quote(s) end

local function write(path, text) local f = assert(io.open(path, "wb")) assert(f:write(text)) assert(f:close()) end

-- What reaches a terminal holds no control character but line ends.
local function no_controls(t, text, what)
  t.ok(not text:find("[%z\1-\9\11-\31\127]"), what .. ": no control character reaches the terminal")
  t.ok(not text:find("\194[\128-\159]"), what .. ": nor a C1 control")
end

-- The store of metrics_test.lua, its names changed by sql.
local function fixture_store(t, sql, ...)
  local here = debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
  local build = getmetatable(dofile(here .. "/metrics_test.lua")).__index.fixture
  local path = t.tmpdir() .. "/s.db"
  build(path):close()
  local db = assert(store.open(path))
  assert(db:query(sql, ...))
  db:close()
  return path
end

-- ---- names on a terminal ---------------------------------------------------

function T.terminal_escape_shows_every_control(t)
  t.eq(escape.terminal("gemm_bf16/1x2 é ✓"), "gemm_bf16/1x2 é ✓", "names and UTF-8 text as they are")
  t.eq(escape.terminal("a\27[2Jb\7c\nd\te\r\127"), "a\\x1b[2Jb\\x07c\\nd\\te\\r\\x7f")
  t.eq(escape.terminal("x\194\155" .. "2J"), "x\\xc2\\x9b2J", "U+009B (a CSI) is shown")
  t.eq(escape.terminal("\255\192\175"), "\\xff\\xc0\\xaf", "bytes that are not UTF-8 are shown")
  no_controls(t, escape.terminal(TITLE .. CLEAR), "escape.terminal")
end

-- A task folder whose family folder and sample names hold escape
-- sequences: klab tasks --check names them escaped, one line each.
function T.tasks_check_prints_names_escaped(t)
  local d = t.tmpdir()
  local fam = d .. "/lib/act" .. CLEAR
  t.eq((t.sh(("mkdir -p %s && cp -r %s/. %s"):format(q(fam), q(t.root .. "/tasks/activation"), q(fam)))), 0)
  write(fam .. "/samples/expected.lua", ('return { { name = "naive_gelu_tanh", task = "gelu_tanh_bf16", verdict = "p%s" } }\n')
    :format(TITLE:gsub("\27", "\\27"):gsub("\7", "\\7")))
  local code, out, err = t.sh(q(t.klab) .. " tasks --check " .. q(d .. "/lib"))
  t.eq(code, 2, out .. err)
  no_controls(t, out .. err, "tasks --check")
  t.match(out, "act\\x1b%[2J\\x1b%[H/samples/expected%.lua: verdict: entry 1 %(naive_gelu_tanh%): 'p\\x1b%]0;")
end

-- A store's task of 130 characters with escape sequences in it: klab export
-- sft prints its summary (it raised a Lua format error), escaped.
function T.export_summary_takes_long_and_hostile_task_names(t)
  local long = ("t"):rep(120) .. CLEAR .. TITLE
  local path = fixture_store(t, "UPDATE trajectories SET task = ? WHERE task = 'gemm'", long)
  local code, out, err = t.sh(q(t.klab) .. " export sft " .. q(path) .. " --out " .. q(path .. ".jsonl"))
  t.eq(code, 0, out .. err)
  t.ok(not (out .. err):find("invalid conversion", 1, true), "no Lua format error: " .. err)
  no_controls(t, out .. err, "export sft")
  t.match(out, ("t"):rep(120) .. "\\x1b%[2J")
  t.ok(not (out .. err):find(SECRET .. "\7", 1, true), "the sequence is not whole")
end

-- The summary a judge prints: a store's model and task names escaped.
function T.experiment_table_prints_names_escaped(t)
  local text = require("klab.experiment.summary_table").format { { task = "gemm" .. CLEAR, model = "m" .. TITLE,
    tag = "t\n", replica = 1, verdicts = { "passed" }, state = "done", stop_reason = "done\27[1A" } }
  no_controls(t, text, "summary table")
  t.match(text, "gemm\\x1b%[2J")
  t.match(text, "m\\x1b%]0;")
end

-- An error that reaches klab's top level (a script's, or a command's that
-- quotes a name) is printed with its control characters escaped, its line
-- breaks kept; a secret in it is still redacted.
function T.uncaught_errors_are_shown_escaped(t)
  local text = [["name \27]0;title\7 cleared \27[2J\nsecond line " .. os.getenv("KLAB_TEST_TOKEN")]]
  for _, chunk in ipairs { "error(" .. text .. ")", "error({ message = " .. text .. ", exit = 2 })" } do
    local code, out, err = t.sh(("KLAB_TEST_TOKEN=%s %s -e %s"):format(SECRET, q(t.klab), q(chunk)))
    t.ok(code ~= 0, chunk)
    no_controls(t, out .. err, chunk)
    t.match(err, "name \\x1b%]0;title\\x07 cleared \\x1b%[2J\n", chunk)
    t.ok(not err:find(SECRET, 1, true), chunk .. ": the secret is redacted")
  end
end

-- The progress line of `klab judge` names the store's experiment.
function T.progress_line_shows_names_escaped(t)
  local bar = require("klab.progress").new { total = 2, label = "e" .. CLEAR .. ": judged", mode = "off" }
  bar:update { done = 1, note = "m" .. TITLE }
  local line = bar:line()
  no_controls(t, line, "progress")
  t.match(line, "^e\\x1b%[2J")
end

-- klab batch's table of a list whose candidate names hold escape sequences.
function T.batch_table_prints_names_escaped(t)
  local d = t.tmpdir()
  local name = "cand" .. CLEAR
  t.eq((t.sh(("cp -r %s %s"):format(q(t.root .. "/tasks/activation/bad/relu_vec4_no_tail"), q(d .. "/" .. name)))), 0)
  write(d .. "/l.jsonl", require("klab.json").encode { task = "relu_f32/999x1021", candidate = name } .. "\n"
    .. require("klab.json").encode { task = "relu_f32/999x1021", candidate = "gone" .. TITLE } .. "\n")
  local code, out, err = t.sh(q(t.klab) .. " batch " .. q(d .. "/l.jsonl") .. " --no-timing")
  t.ok(code == 3 or code == 0, out .. err)
  no_controls(t, out .. err, "batch")
  t.match(out, "cand\\x1b%[2J\\x1b%[H")
  t.match(out, "gone\\x1b%]0;")
end

-- ---- --json: every candidate has its line ----------------------------------

-- klab batch LIST --json prints one line per candidate, those refused
-- before they start included (it printed none for them).
function T.batch_json_has_a_line_for_every_candidate(t)
  local d = t.tmpdir()
  local json = require "klab.json"
  write(d .. "/l.jsonl", json.encode { task = "relu_f32/999x1021", candidate = t.root .. "/tasks/activation/bad/relu_vec4_no_tail" }
    .. "\n" .. json.encode { task = "relu_f32/999x1021", candidate = "gone" } .. "\n"
    .. json.encode { task = "relu_f32/999x1021", candidate = "gone too" } .. "\n")
  local code, out, err = t.sh(q(t.klab) .. " batch " .. q(d .. "/l.jsonl") .. " --json --no-timing")
  t.ok(code == 3 or code == 0, out .. err)
  local names = {}
  for line in out:gmatch("[^\n]+") do
    local r = json.decode(line)
    t.ok(type(r.verdict) == "string" and r.task == "relu_f32/999x1021", line)
    names[#names + 1] = r.name
  end
  table.sort(names)
  t.eq(#names, 3, out)
  t.eq(names[1], "gone")
  t.eq(names[2], "gone too")
  t.eq(names[3], "relu_vec4_no_tail")
end

-- ---- Markdown --------------------------------------------------------------

-- Every character Markdown gives meaning to in a name comes out escaped: a
-- link or an image in a model's name is text.
function T.markdown_names_are_inert(t)
  for _, name in ipairs { "[x](javascript:alert(1))", "![](http://x)", "a_b_ *c* `d` ~~e~~ <b>f</b> & | g \\",
    "# heading", "- item", "+ item", "1. item", "2) item", "= rule" } do
    local md = escape.markdown(name)
    -- Every ASCII punctuation Markdown reads is preceded by a backslash (or
    -- is an entity), so the text reads back as the name and nothing else.
    local i = 1
    while i <= #md do
      local c = md:sub(i, i)
      if c == "\\" then
        t.ok(md:sub(i + 1, i + 1):match("[%p]"), name .. ": a backslash escapes punctuation: " .. md)
        i = i + 2
      else
        t.ok(not c:match("[%[%]()!*_`~|<>]"), ("%s: '%s' is escaped in %s"):format(name, c, md))
        if c == "&" then t.ok(md:sub(i):match("^&%a+;"), name .. ": & is an entity") end
        t.ok(not (i == 1 and c:match("[#+=-]")), name .. ": no block starts: " .. md)
        i = i + 1
      end
    end
    t.ok(not md:match("^%d+[.)]"), name .. ": no list starts: " .. md)
  end
  t.eq(escape.markdown("[x](javascript:alert(1))"), "\\[x\\]\\(javascript:alert\\(1\\)\\)")
  t.eq(escape.markdown("![](http://x)"), "\\!\\[\\]\\(http://x\\)")
end

-- klab report of a store whose model is a link and an image: the Markdown
-- tables hold them as text.
function T.report_markdown_holds_links_as_text(t)
  local path = fixture_store(t, "UPDATE trajectories SET model = ? WHERE model = 'mA'", "[x](javascript:alert(1))![](http://x)")
  local out_dir = t.tmpdir() .. "/rep"
  local code, out, err = t.sh(q(t.klab) .. " report " .. q(path) .. " --out " .. q(out_dir))
  t.eq(code, 0, out .. err)
  local found = 0
  local p = assert(io.popen("find " .. q(out_dir) .. " -name '*.md'"))
  for f in p:lines() do
    local body = t.read(f)
    t.ok(not body:find("](", 1, true) and not body:find("![", 1, true), f .. ": no link or image")
    if body:find("\\[x\\]\\(javascript:alert\\(1\\)\\)", 1, true) then found = found + 1 end
  end
  p:close()
  t.ok(found > 0, "the model's name is in a table, as text")
end

-- ---- errors naming the store and the row -----------------------------------

-- A source store whose evaluation the output refuses (a verdict klab does
-- not know): klab merge says which store and which row, in one line, not
-- the SQL it ran.
function T.merge_names_the_refused_row(t)
  -- The store keeps its schema whole (the trigger is put back), so it
  -- opens; only the row is forged.
  local path = fixture_store(t, "SELECT 1")
  local db = assert(store.open(path))
  local trigger = db:first("SELECT sql FROM sqlite_master WHERE name = 'evaluations_verdict_update'").sql
  assert(db:query("DROP TRIGGER evaluations_verdict_update"))
  assert(db:query("UPDATE evaluations SET verdict = 'forged' WHERE key = 'k3'"))
  assert(db:query(trigger))
  db:close()
  local out_path = t.tmpdir() .. "/o.db"
  local code, out, err = t.sh(q(t.klab) .. " merge " .. q(out_path) .. " " .. q(path))
  t.eq(code, 1, out .. err)
  t.eq(select(2, err:gsub("\n", "")), 1, "one line: " .. err)
  t.match(err, "^klab merge: " .. path:gsub("%p", "%%%0") .. " not merged: evaluations row %d+ %(key k3%) is refused "
    .. "by the output store: unknown verdict")
  t.ok(not err:find("INSERT", 1, true) and not err:find("SELECT", 1, true), "no SQL: " .. err)
end

-- ---- Slurm -----------------------------------------------------------------

-- Every #SBATCH line is one option: a job name with options in it is
-- refused (one line, exit 2, nothing written), and a script whose file
-- name holds spaces and option syntax gets a job name of one word.
function T.sbatch_values_are_one_word(t)
  local d = t.tmpdir()
  local marker = d .. "/PWN"
  for _, args in ipairs {
    "--job-name " .. q("x --output=" .. marker .. " --wrap=touch"),
    "--partition " .. q("gpu\"  --wrap=touch " .. marker),
    "--sbatch-arg=" .. q("--comment=\"a --wrap=touch " .. marker .. "\""),
    "--account=--wrap=touch",
    "--results " .. q(d .. "/r\"x"),
  } do
    local code, out, err = t.sh(("cd %s && %s slurm tests/slurm/sweep.lua --shards 2 --results %s --dry-run %s"):format(
      q(t.root), q(t.klab), q(d .. "/r"), args))
    t.eq(code, 2, args .. ": " .. out .. err)
    t.eq(select(2, err:gsub("\n", "")), 1, args .. ": one line")
    t.ok(err:match("^klab slurm: option %-%-[%w%-]+ takes ") or err:match("^klab slurm: the results folder must not "
      .. "contain spaces, quotes"), args .. ": " .. err)
    t.eq(out, "", args)
    t.eq(require("klab.fs").type(d .. "/r"), nil, args .. ": nothing written")
  end
  local script = d .. "/my sweep --wrap=touch PWN.lua"
  write(script, t.read(t.root .. "/tests/slurm/sweep.lua"))
  local code, out, err = t.sh(("cd %s && %s slurm %s --shards 2 --results %s --dry-run"):format(q(t.root), q(t.klab),
    q(script), q(d .. "/r2")))
  t.eq(code, 0, out .. err)
  local n = 0
  for v in out:gmatch("#SBATCH ([^\n]*)") do
    n = n + 1
    t.ok(not v:find("%s") and v:match("^%-%-[%w%-]+"), "one option per line: " .. v)
  end
  t.ok(n >= 5, out)
  t.match(out, "#SBATCH %-%-job%-name=klab%-my_sweep_%-%-wrap_touch_")
  t.eq(require("klab.fs").type(marker), nil, "nothing ran")
end

return T
