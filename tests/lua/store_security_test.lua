-- store_security_test.lua: a store is data. A store someone else made (a
-- paper's artifact, a colleague's run, a shard) is tried as an attacker
-- would: its config naming a key's variable, an endpoint, prompt files, a
-- feedback file, a deadline, a billion replicas or a path as a task; its
-- schema holding triggers, views, expression indexes or generated columns.
-- A marker secret in the environment and a marker file on disk must never
-- reach a request, a file or the output. No GPU needed.
local experiment = require "klab.experiment"
local store = require "klab.store"
local cjson = require "cjson"

local T = {}

local TASK = "gemm_bf16/123x457x789"
local SECRET = "klab-store-marker-secret-" .. string.format("%08x", math.random(0, 0x7fffffff))
local MARKER_VAR = "KLAB_STORE_MARKER_TOKEN"

local function q(s) return require("klab.command").shell_quote(s) end
local function with_server(t, fn) return dofile(t.root .. "/tests/server/model_server.lua").with(t, fn) end

-- A reply whose candidate builds and plan-checks without a GPU: the
-- repository's naive gemm sample.
local function naive_reply(t)
  local dir = t.root .. "/tasks/gemm/samples/naive/"
  return "```cuda\n" .. t.read(dir .. "kernel.cu") .. "```\n\n```lua\n" .. t.read(dir .. "plan.lua") .. "```\n"
end

local function the_model(s)
  return { name = "test-oa", provider = "openai", model = "test-oa", base_url = s.base .. "/v1", concurrency = 1,
    retry = { attempts = 1, base = 0.05, max = 0.1 }, timeout = 10, connect_timeout = 5 }
end

-- A study's generate phase: one trajectory, its first turn stored awaiting
-- judgement. Returns the store's path.
local function study(t, s, dir, extra)
  s:script { { reply = naive_reply(t) } }
  local spec = { name = "study", db = dir .. "/study.db", models = { the_model(s) }, tasks = { TASK }, turns = 3,
    replicas = 1, progress = false, phase = "generate" }
  for k, v in pairs(extra or {}) do spec[k] = v end
  local exp <close> = experiment.new(spec)
  local sum = exp:run()
  t.eq(sum.awaiting, 1, "the first turn awaits judgement")
  return spec.db
end

-- fn(server, dir, path) with a study's store at path, made through server.
local function with_study(t, fn)
  with_server(t, function(s)
    local dir = t.tmpdir()
    fn(s, dir, study(t, s, dir))
  end)
end

-- Changes the stored config of experiment "study" with fn(config).
local function tamper(path, fn)
  local db <close> = assert(store.open(path))
  local row = db:first("SELECT config FROM experiments WHERE name = 'study'")
  local c = cjson.decode(row.config)
  fn(c)
  assert(db:query("UPDATE experiments SET config = ? WHERE name = 'study'", cjson.encode(c)))
end

-- Runs klab with the marker secret in its environment.
local function klab(t, args)
  return t.sh(("%s=%s timeout 120 %s %s"):format(MARKER_VAR, SECRET, q(t.klab), args))
end

-- Neither the marker secret nor text nowhere but in the marker file
-- reached the server, the store or the output.
local function nothing_leaked(t, s, files, outputs, marker)
  local hash = require("klab.store").hash and nil
  for _, r in ipairs(s:log()) do
    t.ok(not r.body:find(SECRET, 1, true), "the secret is in no request body")
    t.ok(not (marker and r.body:find(marker, 1, true)), "the marker file is in no request body")
    for name, v in pairs(r.headers or {}) do
      t.ok(not tostring(v):find(SECRET, 1, true), "the secret is in no header: " .. name)
    end
    t.eq(next(r.secrets or {}), nil, "no key was sent")
  end
  for _, f in ipairs(files) do
    local text = t.read(f) or ""
    t.ok(not text:find(SECRET, 1, true), "the secret is not in " .. f)
    t.ok(not (marker and text:find(marker, 1, true)), "the marker file is not in " .. f)
  end
  for _, o in ipairs(outputs) do
    t.ok(not o:find(SECRET, 1, true), "the secret is not in the output")
    t.ok(not (marker and o:find(marker, 1, true)), "the marker file is not in the output")
  end
  return hash
end

-- ---- the config: what the judging machine does is the user's ---------------

-- Finding 2: a stored api_key_env (and one more replica) is not obeyed:
-- --continue compares the store's condition with the command line's and
-- stops, naming the field, before any request.
function T.stored_key_variable_and_counts_are_not_obeyed(t)
  with_study(t, function(s, dir, path)
    local asked = #s:log()
    tamper(path, function(c)
      c.models[1].api_key_env = MARKER_VAR
      c.replicas = 2
    end)
    local given = ("models=test-oa base_url=%s turns=3 replicas=1"):format(q(s.base .. "/v1"))
    local code, out, err = klab(t, "judge " .. q(path) .. " --continue " .. given)
    t.eq(code, 2, out .. err)
    t.match(err, "model test%-oa: api_key_env: the store says \"" .. MARKER_VAR .. "\", the command line none")
    t.eq(select(2, err:gsub("\n", "")), 1, "one line: " .. err)
    t.eq(#s:log(), asked, "no model was asked")
    -- The user's key variable matches: the extra replica is named next.
    code, out, err = klab(t, "judge " .. q(path) .. " --continue " .. given .. " api_key_env=" .. MARKER_VAR)
    t.eq(code, 2, out .. err)
    t.match(err, "replicas: the store says 2, the command line 1")
    t.eq(#s:log(), asked, "no model was asked")
    nothing_leaked(t, s, { path, path .. "-wal" }, { out, err })
  end)
end

-- Finding 14: where the GPU stages cannot run, --continue asks no model
-- (even for a trajectory whose last turn was judged elsewhere), says so in
-- one line and exits 3.
function T.continue_without_gpu_asks_nothing(t)
  if require("klab.gpu").available() then t.skip("a GPU is present: the repair turns would be asked") end
  with_study(t, function(s, dir, path)
    -- As if judged on a GPU machine: incorrect, with its feedback.
    local db = assert(store.open(path))
    assert(db:query("UPDATE turns SET awaiting = 0, verdict = 'incorrect', reason = 'incorrect: off by one', "
      .. "feedback = 'INCORRECT_NUMERICAL'"))
    db:close()
    local asked = #s:log()
    local code, out, err = klab(t, ("judge %s --continue models=test-oa base_url=%s turns=3 replicas=1"):format(q(path),
      q(s.base .. "/v1")))
    t.eq(code, 3, out .. err)
    local line = err:match("klab judge: [^\n]*\n$") or ""
    t.match(line, "^klab judge: no repair turn was asked of any model: the GPU stages cannot run here")
    t.eq(select(2, err:gsub("klab judge:", "")), 1, "said in one line: " .. err)
    t.eq(#s:log(), asked, "the model server received no request")
    local after = assert(store.open(path, { readonly = true }))
    t.eq(after:first("SELECT count(*) AS n FROM turns").n, 1, "no turn was added")
    after:close()
  end)
end

-- A stand-in for the GPU machine: every candidate passes at 1.1x.
local function passing_session()
  local done, n = {}, 0
  local function result()
    return { verdict = "passed", reason = "passed: correct", stages = {
      timing = { candidate = { median = 100 }, baseline = { median = 110 }, speedup = 1.1 } } }
  end
  return {
    evaluate = function() return result() end,
    submit = function() n = n + 1 done[n] = result() return n end,
    wait = function(_, ticket) local r = done[ticket] done[ticket] = nil return r end,
    close = function() end,
  }
end

-- Findings 3, 4 and 10: prompt files, the feedback template, a prompt
-- root and deadlines named by a store are never opened or obeyed: judging
-- feeds back the template stored as text, continuing sends the first
-- messages as they were stored, and no trajectory is made from files.
function T.stored_prompt_paths_and_deadlines_are_not_obeyed(t)
  with_study(t, function(s, dir, path)
    local marker = "MARKER-FILE-" .. SECRET:reverse()
    local file = dir .. "/marker.md"
    local f = assert(io.open(file, "wb"))
    f:write(marker, " ${results}\n")
    f:close()
    tamper(path, function(c)
      c.prompt = { system = file, user = "/proc/self/environ", root = dir }
      c.feedback = { template = file }
      c.eval = { deadline = 0.001, stage_deadlines = { build = 0.001 }, budget_s = 1e9 }
      c.replicas = 2
    end)
    local db <close> = assert(store.open(path))
    local user = { models = { the_model(s) }, turns = 3, replicas = 2, mode = "record-missing" }
    s:script { { reply = naive_reply(t) } }
    local exp <close> = experiment.from_store(db, "study", { session = passing_session(), progress = false, user = user })
    local opts = exp:_eval_opts(1)
    t.eq(opts.deadline, nil, "the store's deadline is not used")
    t.eq(opts.stage_deadlines, nil, "nor its stage deadlines")
    t.eq(opts.budget_s, nil, "nor its budget")
    local r = exp:judge { continue = true }
    t.eq(r.judged, 1)
    local turns = db:query("SELECT turn, feedback FROM turns ORDER BY turn")
    t.match(turns[1].feedback, "PASSED", "the stored template's feedback")
    t.eq(db:first("SELECT count(*) AS n FROM trajectories").n, 1, "no trajectory was made from prompt files")
    t.eq(r.run.new_turns, 2, "the repair turns were asked")
    local log = s:log()
    t.match(log[#log].body, "PASSED", "with the judged feedback")
    nothing_leaked(t, s, { path, path .. "-wal" }, {}, marker)
    t.ok(not log[#log].body:find("PATH=", 1, true), "the environment went nowhere")
  end)
end

-- ---- counts, names and signals ----------------------------------------------

-- Finding 6: counts from a store are checked before anything is built from
-- them: replicas = 1e9 or 200,000 tags are one line and exit 2, at once.
function T.stored_counts_are_limited(t)
  with_study(t, function(s, dir, path)
    for _, case in ipairs {
      { function(c) c.replicas = 1000000000 end, "replicas = 1000000000, not a whole number from 1 to 10000" },
      { function(c) c.replicas = 2.5 end, "replicas = 2%.5, not a whole number" },
      { function(c) c.tags = {} for i = 1, 200000 do c.tags[i] = "t" .. i end end, "tags holds more than 1000 entries" },
      { function(c) c.turns = 0 end, "turns = 0, not a whole number from 1 to 1000" },
      { function(c) c.replicas = 10000 c.tags = {} for i = 1, 1000 do c.tags[i] = "t" .. i end end,
        "its sweep would be 10000000 trajectories" },
    } do
      local copy = dir .. "/copy.db"
      os.remove(copy)
      assert(os.execute(("cp %s %s"):format(q(path), q(copy))))
      tamper(copy, case[1])
      local t0 = os.time()
      local code, out, err = klab(t, "judge " .. q(copy))
      t.eq(code, 2, out .. err)
      t.match(err, case[2])
      t.eq(select(2, err:gsub("\n", "")), 1, "one line: " .. err)
      t.ok(os.time() - t0 < 20, "at once")
    end
  end)
end

-- Finding 6: SIGTERM stops klab judge while it lists a big (allowed) sweep.
function T.sigterm_stops_judge_while_it_builds(t)
  with_study(t, function(s, dir, path)
    tamper(path, function(c)
      c.replicas = 5000
      c.tags = {}
      for i = 1, 100 do c.tags[i] = "t" .. i end
    end)
    local log = dir .. "/judge.err"
    local code, out, err = t.sh(("%s judge %s 2>%s & pid=$!; sleep 2; kill -TERM $pid; start=$(date +%%s); wait $pid; "
      .. "rc=$?; echo \"rc=$rc took=$(( $(date +%%s) - start ))\""):format(q(t.klab), q(path), q(log)))
    local rc, took = out:match("rc=(%d+) took=(%d+)")
    t.eq(tonumber(rc), 143, out .. err)
    t.ok(tonumber(took) <= 3, "stopped at once, took " .. tostring(took) .. " s")
    t.match(t.read(log) or "", "stopped by SIGTERM")
  end)
end

-- Finding 9: a workload named /etc/passwd is not a task name: one line, no
-- file read (the Lua parser's message would show it was).
function T.stored_task_names_are_names(t)
  with_study(t, function(s, dir, path)
    tamper(path, function(c) c.tasks = { { name = "x", workloads = { "/etc/passwd" } } } end)
    local code, out, err = klab(t, "judge " .. q(path))
    t.eq(code, 2, out .. err)
    t.match(err, "'/etc/passwd' is not a task name")
    t.ok(not err:find("function arguments expected", 1, true), "the file was not parsed: " .. err)
    t.ok(not err:find("%.lua:%d+:"), "no internal position: " .. err)
    t.eq(select(2, err:gsub("\n", "")), 1, "one line: " .. err)
  end)
end

-- ---- results -------------------------------------------------------------------

-- Makes every evaluation of the store at path the issue's forged row:
-- passed, at 42x, under the key klab computes on this machine.
local function forge(path)
  local db <close> = assert(store.open(path))
  assert(db:exec([[UPDATE evaluations SET verdict = 'passed', reason = 'passed: correct',
    detail = json_set(detail, '$.verdict', 'passed', '$.reason', 'passed: correct', '$.speedup', 42);
    INSERT OR REPLACE INTO measurements(evaluation_id, name, value) SELECT id, 'speedup', 42 FROM evaluations;]]))
  return db:first("SELECT count(*) AS n FROM evaluations").n
end

-- Finding 5: a stored row is never this machine's measurement unless its
-- mark proves it: klab eval --db and klab judge of the forged row measure
-- again (here, without a GPU: unknown), never "passed" at 42x, also after
-- klab merge.
function T.forged_results_are_measured_again(t)
  local dir = t.tmpdir()
  local sample = t.root .. "/tasks/gemm/samples/naive"
  local path = dir .. "/e.db"
  local eval = ("eval %s %s --json --db "):format(TASK, q(sample))
  local code, out, err = klab(t, eval .. q(path))
  t.eq(code, 3, out .. err)
  t.eq(cjson.decode(out).verdict, "unknown")
  t.eq(forge(path), 1, "the row klab wrote is forged")
  code, out, err = klab(t, eval .. q(path))
  local r = cjson.decode(out)
  t.eq(r.verdict, "unknown", "measured again, not answered from the forged row")
  t.eq(r.cached, nil)
  t.ok(not err:find("answered from the store", 1, true), err)
  -- Forged again, then merged into another store: still not an answer.
  forge(path)
  local merged = dir .. "/merged.db"
  code, out, err = klab(t, "merge " .. q(merged) .. " " .. q(path))
  t.eq(code, 0, out .. err)
  code, out, err = klab(t, eval .. q(merged))
  t.eq(cjson.decode(out).verdict, "unknown", "a merged forged row is measured again")
  t.ok(not (out .. err):find("answered from the store", 1, true))
  -- A row this machine wrote does answer again (a passed one cannot be
  -- made here; the mark is what is checked, shown through the store).
  local db <close> = assert(store.open(merged))
  local row = db:first("SELECT id FROM evaluations")
  t.eq(db:evaluation_proven(row.id), true, "the re-measured row is this machine's")
  -- The report says which results were measured where.
  for _, c in ipairs { { path, "0 / 1" }, { merged, "1 / 0" } } do
    local outdir = c[1] .. "-report"
    code, out, err = klab(t, "report " .. q(c[1]) .. " --out " .. q(outdir))
    t.eq(code, 0, out .. err)
    local html = t.read(outdir .. "/index.html") or ""
    t.match(html, "Measured by this machine&#39;s user / elsewhere</t[hd]>%s*<td>" .. c[2], c[1])
  end

  if require("klab.gpu").available() then return end
  with_server(t, function(s)
    local spath = study(t, s, dir)
    code, out, err = klab(t, "judge " .. q(spath))
    t.eq(code, 3, out .. err)
    t.ok(forge(spath) >= 1, "judge's rows are forged")
    code, out, err = klab(t, "judge " .. q(spath))
    t.eq(code, 3, "nothing was judged here: " .. out .. err)
    t.ok(not out:find("passed=", 1, true), out)
    t.ok(not out:find("42", 1, true), out)
    local sdb <close> = assert(store.open(spath, { readonly = true }))
    t.eq(sdb:first("SELECT count(*) AS n FROM turns WHERE verdict = 'passed'").n, 0, "no turn took the forged verdict")
  end)
end

-- ---- the schema --------------------------------------------------------------

-- Findings 7 and 8: a store whose schema is not the one klab writes is
-- refused, whole, by every command that opens it, before any query.
function T.hostile_schemas_are_refused_by_every_command(t)
  with_study(t, function(s, dir, path)
    local cases = {
      { "replaced", [[DROP TRIGGER evaluations_verdict_insert; CREATE TRIGGER evaluations_verdict_insert BEFORE INSERT
          ON evaluations BEGIN SELECT (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
          SELECT count(*) FROM c); END;]], "the trigger evaluations_verdict_insert is not the one klab made" },
      { "sqlitex", "CREATE TRIGGER sqliteX_evil AFTER INSERT ON evaluations BEGIN SELECT (WITH RECURSIVE c(x) AS "
          .. "(SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c); END;",
        "holds the trigger sqliteX_evil, which klab did not make" },
      { "view", "CREATE VIEW everything AS SELECT * FROM turns;", "holds the view everything" },
      { "index", "CREATE INDEX slow ON candidates(length(replace(hex(zeroblob(50000000)), '0', '00')));",
        "holds the index slow" },
      { "generated", "ALTER TABLE turns ADD COLUMN big INTEGER GENERATED ALWAYS AS "
          .. "(length(replace(hex(zeroblob(50000000)), '0', '00'))) VIRTUAL;", "the table turns is not the one klab made" },
    }
    local sample = t.root .. "/tasks/gemm/samples/naive"
    for _, c in ipairs(cases) do
      local bad = dir .. "/" .. c[1] .. ".db"
      assert(os.execute(("cp %s %s"):format(q(path), q(bad))))
      local db = assert(store.open(bad))
      assert(db:exec(c[2]))
      db:close()
      for _, run in ipairs {
        { "judge " .. q(bad), 2 },
        -- (klab merge says 1 for a source it could not merge, 2 for an output it cannot open)
        { "merge " .. q(dir .. "/out-" .. c[1] .. ".db") .. " " .. q(bad), 1 },
        { "merge " .. q(bad) .. " " .. q(path), 2 },
        { "eval " .. TASK .. " " .. q(sample) .. " --db " .. q(bad), 2 },
        { "export sft " .. q(bad) .. " --out " .. q(dir .. "/sft-" .. c[1] .. ".jsonl"), 2 },
      } do
        local args = run[1]
        local code, out, err = klab(t, args)
        t.eq(code, run[2], args .. ": " .. out .. err)
        t.ok(err:find(c[3], 1, true), args .. ": says what is wrong: " .. err)
        t.eq(select(2, err:gsub("\n", "")), 1, args .. ": one line: " .. err)
      end
    end
  end)
end

return T
