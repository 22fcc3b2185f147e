-- tests/lua/store_test.lua: the Lua API of the result store (klab.store).
local store = require "klab.store"

local T = {}

-- A fresh database in a fresh directory; returns db, path, cleanup.
local function fresh(t, opts)
  local dir = t.tmpdir()
  local path = dir .. "/exp.db"
  local db, err = store.open(path, opts)
  assert(db, err)
  if not (opts and opts.readonly) then require("klab.store.records").define_verdicts(db) end
  return db, path, function() t.sh("rm -rf '" .. dir .. "'") end
end

local function count(db, sql, ...)
  return db:first("SELECT count(*) AS n FROM " .. sql, ...).n
end

function T.open_creates_schema_and_handle_lifecycle(t)
  local db, path, done = fresh(t)
  for _, name in ipairs { "schema_version", "environments", "candidates", "compiles",
                          "evaluations", "measurements", "responses" } do
    t.eq(count(db, "sqlite_master WHERE type = 'table' AND name = ?", name), 1, name)
  end
  t.eq(db:first("SELECT max(version) AS v FROM schema_version").v, store.SCHEMA_VERSION)
  t.eq(db:first("PRAGMA journal_mode").journal_mode, "wal")
  t.eq(db:path(), path)
  t.match(tostring(db), "^klab%.Store %(")
  t.eq(db:close(), true)
  t.eq(db:close(), false)
  t.eq(tostring(db), "klab.Store (freed)")
  t.raises(function() db:query("SELECT 1") end, "closed")
  do
    local db2 <close> = assert(store.open(path))
    t.eq(count(db2, "schema_version"), store.SCHEMA_VERSION, "reopen applies nothing twice")
    db = db2
  end
  t.eq(tostring(db), "klab.Store (freed)", "<close> released it")
  local bad, msg, code = store.open("/nonexistent-dir/for/klab/x.db")
  t.eq(bad, nil)
  t.match(msg, "cannot open")
  t.eq(code, "EIO")
  t.raises(function() store.open(42 > 1) end, "string expected")
  done()
end

function T.query_parameters_and_round_trips(t)
  local db, _, done = fresh(t)
  assert(db:exec("CREATE TABLE v(x)"))
  local values = { 42, -7, 1 << 62, 2.5, 1e-300, "text", "", "a\0b", true }
  for _, v in ipairs(values) do db:query("INSERT INTO v VALUES (?)", v) end
  db:query("INSERT INTO v VALUES (?)", nil)
  db:query("INSERT INTO v VALUES (?)", store.blob("\0\1\2\255"))
  db:query("INSERT INTO v VALUES (?)", store.blob(""))
  local rows = db:query("SELECT x, typeof(x) AS ty FROM v ORDER BY rowid")
  t.eq(#rows, #values + 3)
  t.eq(rows[1].x, 42); t.eq(math.type(rows[1].x), "integer")
  t.eq(rows[2].x, -7)
  t.eq(rows[3].x, 1 << 62); t.eq(math.type(rows[3].x), "integer")
  t.eq(rows[4].x, 2.5); t.eq(math.type(rows[4].x), "float")
  t.eq(rows[5].x, 1e-300)
  t.eq(rows[6].x, "text"); t.eq(rows[6].ty, "text")
  t.eq(rows[7].x, ""); t.eq(rows[7].ty, "text")
  t.eq(rows[8].x, "a\0b")
  t.eq(rows[9].x, 1, "true is stored as 1")
  t.eq(rows[10].x, nil, "NULL column is absent"); t.eq(rows[10].ty, "null")
  t.eq(rows[11].x, "\0\1\2\255"); t.eq(rows[11].ty, "blob")
  t.eq(rows[12].x, ""); t.eq(rows[12].ty, "blob", "an empty blob is not NULL")
  -- Floats that are whole stay floats.
  t.eq(math.type(db:first("SELECT ? AS f", 3.0).f), "float")

  -- Named parameters from one table; a table otherwise becomes JSON text.
  local r = db:first("SELECT :a AS a, @b AS b, $c AS c", { a = 1, b = "two", c = 3.5 })
  t.eq(r.a, 1); t.eq(r.b, "two"); t.eq(r.c, 3.5)
  t.eq(db:first("SELECT ? AS j", { b = 2, a = { 1, "x" } }).j, '{"a":[1,"x"],"b":2}')
  t.eq(db:first("SELECT json_extract(?, '$.k') AS k", { k = "v\n\"\1" }).k, "v\n\"\1")
  t.eq(db:first("SELECT ? AS j", { 0.1, 1 / 3, -2.5e-300, 1 << 62 }).j,
    "[0.1,0.3333333333333333,-2.5e-300,4611686018427387904]")
  for _, x in ipairs { 0.1, 1 / 3, -2.5e-300, 123456.789 } do
    t.eq(db:first("SELECT json_extract(?, '$[0]') AS x", { x }).x, x, "JSON number round trip")
  end

  -- first: nil when there is no row.
  t.eq(db:first("SELECT x FROM v WHERE 0"), nil)
  t.eq(#db:query("SELECT x FROM v WHERE 0"), 0)

  -- Misuse raises, naming the SQL error.
  t.raises(function() db:query("SELEC 1") end, "syntax error")
  t.raises(function() db:query("SELECT * FROM nope") end, "no such table: nope")
  t.raises(function() db:query("SELECT ?, ?", 1) end, "takes 2 parameters, got 1")
  t.raises(function() db:query("SELECT 1; SELECT 2") end, "more than one")
  t.raises(function() db:query("SELECT ?", print) end, "cannot store a function")
  t.raises(function() db:query("SELECT ?", { 1, nil, 3, x = 1 }) end, "JSON")
  t.raises(function() db:query("SELECT ?", { 1, 2, [2.5] = 3 }) end, "JSON")
  local cyc = {}; cyc.self = cyc
  t.raises(function() db:query("SELECT ?", cyc) end, "deeper")
  db:close()
  done()
end

function T.exec_insert_and_constraints(t)
  local db, _, done = fresh(t)
  t.eq(db:exec("CREATE TABLE u(k TEXT PRIMARY KEY, n INTEGER DEFAULT 5, j TEXT)"), true)
  t.eq(db:insert("u", { k = "a", n = 1 }), 1)
  t.eq(db:insert("u", { k = "b", j = { 3, 4 } }), 2)
  t.eq(db:first("SELECT n, j FROM u WHERE k = 'b'").n, 5)
  t.eq(db:first("SELECT j FROM u WHERE k = 'b'").j, "[3,4]")
  local id, msg, code = db:insert("u", { k = "a" })
  t.eq(id, nil)
  t.match(msg, "UNIQUE constraint failed: u%.k")
  t.eq(code, "ECONSTRAINT")
  local ok, m2, c2 = db:exec("INSERT INTO u(k) VALUES ('a')")
  t.eq(ok, nil); t.match(m2, "SQLITE_CONSTRAINT"); t.eq(c2, "ECONSTRAINT")
  t.raises(function() db:insert("u; DROP TABLE u", { k = "x" }) end, "identifier")
  t.raises(function() db:insert("u", { ["k) VALUES (1); --"] = "x" }) end, "identifiers")
  t.raises(function() db:insert("u", { [1] = "x" }) end, "identifiers")
  t.raises(function() db:insert("u", { nope = 1 }) end, "no column named nope")
  t.eq(count(db, "u"), 2)
  -- Foreign keys are on.
  local r, _, fc = db:insert("compiles", { candidate_id = 99, arch = "sm_90a", hash = "h", ok = 1 })
  t.eq(r, nil); t.eq(fc, "ECONSTRAINT")
  db:close()
  done()
end

function T.transaction_commit_rollback_and_nesting(t)
  local db, _, done = fresh(t)
  assert(db:exec("CREATE TABLE x(v)"))
  local a, b = db:transaction(function(p)
    db:insert("x", { v = p })
    t.eq(db:in_transaction(), true)
    return "r1", "r2"
  end, 1)
  t.eq(a, "r1"); t.eq(b, "r2")
  t.eq(db:in_transaction(), false)
  t.eq(count(db, "x"), 1)

  -- Rollback on error, and the same error value comes out.
  local err = { code = "EMINE" }
  local ok, got = pcall(db.transaction, db, function()
    db:insert("x", { v = 2 })
    db:insert("x", { v = 3 })
    error(err)
  end)
  t.eq(ok, false)
  t.eq(got, err, "the error object is re-raised unchanged")
  t.eq(count(db, "x"), 1, "rolled back")
  t.eq(db:in_transaction(), false)
  t.raises(function() db:transaction(function() error("boom") end) end, "boom")

  -- Nested: an inner failure caught inside undoes only the inner part.
  db:transaction(function()
    db:insert("x", { v = "outer" })
    local iok = pcall(db.transaction, db, function()
      db:insert("x", { v = "inner" })
      error("inner fails")
    end)
    t.eq(iok, false)
    t.eq(db:in_transaction(), true)
  end)
  t.eq(count(db, "x WHERE v = 'outer'"), 1)
  t.eq(count(db, "x WHERE v = 'inner'"), 0)

  -- The store's own helpers join the caller's transaction.
  pcall(db.transaction, db, function()
    db:put_candidate { language = "ptx", code = "gone" }
    error("abort")
  end)
  t.eq(count(db, "candidates"), 0)
  db:close()
  done()
end

function T.busy_writer_is_an_ordinary_failure(t)
  local db, path, done = fresh(t)
  local other = assert(store.open(path, { busy_timeout = 50 }))
  db:transaction(function()
    db:insert("environments", { klab_version = "1" })
    local ok, msg, code = other:insert("environments", { klab_version = "2" })
    t.eq(ok, nil)
    t.match(msg, "SQLITE_BUSY")
    t.eq(code, "EBUSY")
    local r, _, c = other:transaction(function() end)
    t.eq(r, nil); t.eq(c, "EBUSY")
    -- Readers do not wait for the writer (WAL).
    t.eq(count(other, "environments"), 0)
  end)
  t.eq(count(other, "environments"), 1)
  t.ok(other:insert("environments", { klab_version = "2" }))
  other:close()
  db:close()
  done()
end

function T.candidates_by_content_hash(t)
  local db, _, done = fresh(t)
  local code = ".version 8.0\n.target sm_90a\n"
  local id1, h1, new1 = db:put_candidate { language = "ptx", code = code, source = "model-a" }
  local id2, h2, new2 = db:put_candidate { language = "ptx", code = code, source = "model-b" }
  t.eq(new1, true); t.eq(new2, false)
  t.eq(id1, id2); t.eq(h1, h2)
  t.eq(h1, store.hash("klab.candidate.1", "ptx", code, nil))
  t.eq(db:first("SELECT source FROM candidates WHERE id = ?", id1).source, "model-a", "first source kept")
  local id3, h3 = db:put_candidate { language = "ptx", code = code, plan = "return {}", meta = { t = 0.7 } }
  t.ok(id3 ~= id1 and h3 ~= h1, "the plan is part of the identity")
  t.eq(db:first("SELECT meta FROM candidates WHERE id = ?", id3).meta, '{"t":0.7}')
  local id4 = db:put_candidate { language = "cuda", code = code }
  t.ok(id4 ~= id1, "the language is part of the identity")
  t.eq(count(db, "candidates"), 3)
  t.raises(function() db:put_candidate { language = "ptx" } end, "'code' must be a string")
  t.raises(function() db:put_candidate { code = "x" } end, "'language' is required")
  t.raises(function() db:put_candidate { language = "ptx", code = "x", hash = "h" } end, "unknown field 'hash'")
  db:close()
  done()
end

function T.hash_function(t)
  t.eq(store.hash("abc"), "ce91dc5eec0139adf091900d225971d6ad246a845bad791b5693a9d0d55dd391")
  t.eq(store.hash(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
  t.ok(store.hash(nil) ~= store.hash(""), "nil and empty string differ")
  t.ok(store.hash("ab", "c") ~= store.hash("a", "bc"), "parts are framed")
  t.raises(function() store.hash(1) end, "string or nil expected")
end

function T.record_evaluation_with_measurements(t)
  local db, _, done = fresh(t)
  local cand = db:put_candidate { language = "ptx", code = "k" }
  local env = db:put_environment { gpu_name = "NVIDIA H200", sm_clock_mhz = 1980, libs = { nvrtc = "13.0" } }
  local ev = {
    key = store.hash("eval", tostring(cand), "gemm", "sm_90a", "0"),
    candidate = cand, task = "gemm", arch = "sm_90a", env = env,
    options = { trials = 5 },
    verdict = "passed", reason = "all trials within tolerance", timing_method = "cupti",
    stage_times = { build = 0.12, timing = 1.5 },
    detail = { worst = { index = 17 } },
    measurements = { median_us = 12.25, p10_us = { value = 11.0, unit = "us" }, speedup = 1.3 },
  }
  local id, already = db:record_evaluation(ev)
  t.ok(math.type(id) == "integer" and id > 0)
  t.eq(already, false)
  local row = db:first("SELECT * FROM evaluations WHERE id = ?", id)
  t.eq(row.state, "done"); t.eq(row.verdict, "passed"); t.eq(row.env_id, env)
  t.eq(row.timing_method, "cupti")
  t.eq(row.options, '{"trials":5}')
  t.eq(db:first("SELECT json_extract(stage_times, '$.timing') AS s FROM evaluations").s, 1.5)
  t.eq(db:first("SELECT json_extract(detail, '$.worst.index') AS i FROM evaluations").i, 17)
  t.ok(row.finished_at and row.created_at, "timestamps")
  local ms = db:query("SELECT name, value, unit FROM measurements WHERE evaluation_id = ? ORDER BY name", id)
  t.eq(#ms, 3)
  t.eq(ms[1].name, "median_us"); t.eq(ms[1].value, 12.25); t.eq(ms[1].unit, nil)
  t.eq(ms[2].name, "p10_us"); t.eq(ms[2].unit, "us")
  t.eq(ms[3].name, "speedup"); t.eq(ms[3].value, 1.3)

  local d = db:evaluation_done(ev.key)
  t.eq(d.id, id); t.eq(d.verdict, "passed")
  t.eq(d.measurements.median_us, 12.25); t.eq(d.measurements.p10_us, 11.0)

  -- Recording the same key again writes nothing.
  ev.verdict = "incorrect"
  local id2, again = db:record_evaluation(ev)
  t.eq(id2, id); t.eq(again, true)
  t.eq(db:first("SELECT verdict FROM evaluations WHERE id = ?", id).verdict, "passed")
  t.eq(count(db, "measurements"), 3)

  -- Misuse raises; ordinary failures leave nothing behind.
  t.raises(function() db:record_evaluation { key = "x", candidate = cand, task = "t", arch = "a", verdict = "pass" } end,
    "unknown verdict 'pass'")
  t.raises(function() db:record_evaluation { key = "x", candidate = cand, task = "t", arch = "a" } end,
    "'verdict' is required")
  t.raises(function() db:record_evaluation { key = "x", candidate = cand, task = "t", arch = "a", verdict = "passed",
    measurements = { m = "fast" } } end, "must be a number")
  t.raises(function() db:record_evaluation { key = "x", candidate = cand, task = "t", arch = "a", verdict = "passed",
    measurements = { m = 0 / 0 } } end, "NaN")
  t.raises(function() db:record_evaluation { key = "x", candidate = cand, task = "t", arch = "a", verdict = "passed",
    verdcit = "typo" } end, "unknown field 'verdcit'")
  t.raises(function() db:record_evaluation { key = ev.key, candidate = cand, task = "other", arch = "sm_90a",
    verdict = "passed" } end, "already used")
  local none, msg, code = db:record_evaluation { key = "fk", candidate = 999, task = "t", arch = "a",
    verdict = "passed", measurements = { m = 1 } }
  t.eq(none, nil); t.match(msg, "FOREIGN KEY"); t.eq(code, "ECONSTRAINT")
  t.eq(count(db, "evaluations WHERE key = 'fk'"), 0)
  t.eq(count(db, "evaluations"), 1)
  t.eq(db:evaluation_done("never"), nil)
  db:close()
  done()
end

function T.resume_semantics(t)
  local db, path, done = fresh(t)
  local cand = db:put_candidate { language = "cuda", code = "__global__ void k() {}" }
  local spec = { key = "run1/gemm/0", candidate = cand, task = "gemm", arch = "sm_90a" }
  local id, already = db:begin_evaluation(spec)
  t.eq(already, false)
  t.eq(db:evaluation_done(spec.key), nil, "running is not done")
  db:close() -- the run is interrupted here

  db = assert(store.open(path))
  t.eq(db:evaluation_done(spec.key), nil)
  local id2, already2 = db:begin_evaluation(spec)
  t.eq(id2, id, "the unfinished evaluation is redone in place")
  t.eq(already2, false)
  t.eq(db:first("SELECT attempts FROM evaluations WHERE id = ?", id).attempts, 2)
  t.eq(db:finish_evaluation(id, { verdict = "timeout", reason = "timing stage passed 10 s",
    measurements = { median_us = 5 } }), true)
  local none, msg, code = db:finish_evaluation(id, { verdict = "passed" })
  t.eq(none, nil); t.match(msg, "not running"); t.eq(code, "ENOTFOUND")
  db:close()

  db = assert(store.open(path))
  local d = db:evaluation_done(spec.key)
  t.eq(d.id, id); t.eq(d.verdict, "timeout"); t.eq(d.measurements.median_us, 5.0)
  local id3, already3 = db:begin_evaluation(spec)
  t.eq(id3, id); t.eq(already3, true, "a finished key is skipped")
  t.eq(db:first("SELECT attempts FROM evaluations WHERE id = ?", id).attempts, 2)
  t.eq(count(db, "evaluations"), 1)
  db:close()
  done()
end

function T.environment_and_response_cache(t)
  local db, _, done = fresh(t)
  local env = db:put_environment { gpu_name = "NVIDIA H200", driver_version = "580.65",
                                   libs = { cublasLt = "13.0.1", nvrtc = "13.0" }, extra = "{\"note\":1}" }
  local e = db:first("SELECT * FROM environments WHERE id = ?", env)
  t.eq(e.gpu_name, "NVIDIA H200")
  t.eq(e.libs, '{"cublasLt":"13.0.1","nvrtc":"13.0"}')
  t.eq(e.extra, '{"note":1}')
  t.eq(e.klab_version, require("klab.build").version)
  t.ok(type(e.host) == "string" and #e.host > 0 and e.pid > 0)
  t.ok(db:put_environment() > env, "defaults only")
  t.raises(function() db:put_environment { gpu = "x" } end, "unknown field 'gpu'")

  t.eq(db:cache_get("h1"), nil)
  t.eq(db:cache_put { hash = "h1", request = { model = "m", messages = { { role = "user", content = "hi" } } },
                      response = '{"text":"ok"}', status = 200, model = "m", latency_ms = 812.5,
                      input_tokens = 10, output_tokens = 42, cost_usd = 0.001 }, true)
  local r = db:cache_get("h1")
  t.eq(r.request, '{"messages":[{"content":"hi","role":"user"}],"model":"m"}')
  t.eq(r.response, '{"text":"ok"}'); t.eq(r.status, 200); t.eq(r.output_tokens, 42)
  t.eq(r.latency_ms, 812.5); t.eq(r.cost_usd, 0.001)
  db:cache_put { hash = "h1", request = "{}", response = '{"text":"again"}' }
  t.eq(db:cache_get("h1").response, '{"text":"again"}')
  t.eq(db:cache_get("h1").status, nil)
  t.raises(function()
    db:cache_put { hash = "h2", request = { headers = { Authorization = "Bearer sk-x" } } }
  end, "API keys are never stored")
  t.raises(function() db:cache_put { hash = "h2", request = '{"x-api-key": "k"}' } end, "credential")
  t.eq(db:cache_get("h2"), nil)
  t.raises(function() db:cache_put { hash = "h3" } end, "'request' is required")
  db:close()
  done()
end

function T.readonly_store(t)
  local db, path, done = fresh(t)
  db:put_candidate { language = "ptx", code = "ro" }
  db:close()
  local ro = assert(store.open(path, { readonly = true }))
  t.eq(count(ro, "candidates"), 1)
  local ok, msg, code = ro:exec("DELETE FROM candidates")
  t.eq(ok, nil); t.match(msg, "SQLITE_READONLY"); t.eq(code, "EIO")
  ro:close()
  done()
end

function T.two_processes_write_concurrently(t)
  local db, path, done = fresh(t)
  db:close()
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write([[
local store = require "klab.store"
local path, tag = ...
local db = assert(store.open(path))
require("klab.store.records").define_verdicts(db)
local cand = assert(db:put_candidate { language = "ptx", code = "shared" })
for i = 1, 50 do
  assert(db:record_evaluation { key = tag .. i, candidate = cand, task = "t", arch = "sm_90a",
    verdict = "passed", measurements = { median_us = i } })
end
db:close()
]])
  f:close()
  local cmd = string.format("'%s' '%s' '%s' A & '%s' '%s' '%s' B & wait", t.klab, script, path, t.klab, script, path)
  local code, _, err = t.sh("sh -c \"" .. cmd:gsub('"', '\\"') .. "\"")
  os.remove(script)
  t.eq(code, 0, err)
  db = assert(store.open(path))
  t.eq(count(db, "evaluations"), 100)
  t.eq(count(db, "measurements"), 100)
  t.eq(count(db, "candidates"), 1)
  db:close()
  done()
end

-- A write the file-size limit refuses is one line naming the store (klab
-- ignores SIGXFSZ, which would kill it silently), and the rows written
-- before it are all there.
function T.a_refused_write_is_one_line_and_loses_nothing(t)
  local dir = t.tmpdir()
  local db = dir .. "/s.db"
  local script = ([[local s = assert(require("klab.store").open(%q))
assert(s:put_candidate { language = "ptx", code = "small" })
assert(s:put_candidate { language = "ptx", code = string.rep("x", 400000) })]]):format(db)
  local code, out, err = t.sh(("ulimit -f 500; '%s' -e %s"):format(t.klab, require("klab.command").shell_quote(script)))
  t.eq(code, 1)
  t.match(err, "cannot write " .. db:gsub("%p", "%%%0") .. ": the file%-size limit %(ulimit %-f: %d+ bytes%) stops it")
  t.eq(select(2, err:gsub("\n", "")), 1, "one line: " .. err)
  local s <close> = assert(require("klab.store").open(db))
  t.eq(s:first("SELECT count(*) AS n FROM candidates").n, 1, "the first row survived")
end

-- ---- the schema, described once (host/store/tables.c) ----------------------

-- klab.store.schema() is the store a fresh open makes: its tables, each
-- column's name, type, NOT NULL and primary key in order, its references
-- and its indexes.
function T.schema_describes_the_store(t)
  local db <close>, _, done = fresh(t)
  local schema = store.schema()
  t.eq(schema.version, store.SCHEMA_VERSION)
  t.eq(#schema.versions, store.SCHEMA_VERSION)
  local described = {}
  for _, tbl in ipairs(schema.tables) do
    described[tbl.name] = true
    t.ok(tbl.owner == "c" or tbl.owner == "lua", tbl.name .. " has an owner")
    local cols = db:query("SELECT name, type, \"notnull\" AS nn, pk FROM pragma_table_info(?) ORDER BY cid", tbl.name)
    t.eq(#cols, #tbl.columns, tbl.name .. ": the columns described")
    for i, c in ipairs(tbl.columns) do
      local r = cols[i] or {}
      t.eq(("%s %s %s %s"):format(r.name, r.type, r.nn == 1, (r.pk or 0) > 0),
        ("%s %s %s %s"):format(c.name, c.type, c.not_null, c.primary_key), tbl.name .. " column " .. i)
    end
    local refs = {}
    for _, r in ipairs(db:query("SELECT \"from\" AS col, \"table\" AS tbl FROM pragma_foreign_key_list(?)", tbl.name)) do
      refs[#refs + 1] = r.col .. "->" .. r.tbl
    end
    local want = {}
    for _, c in ipairs(tbl.columns) do if c.references then want[#want + 1] = c.name .. "->" .. c.references end end
    table.sort(refs)
    table.sort(want)
    t.eq(table.concat(refs, " "), table.concat(want, " "), tbl.name .. ": references")
    for _, ix in ipairs(tbl.indexes) do
      t.eq(count(db, "sqlite_master WHERE type = 'index' AND name = ? AND tbl_name = ?", ix.name, tbl.name), 1, ix.name)
    end
  end
  for _, r in ipairs(db:query("SELECT name FROM sqlite_master WHERE type = 'table'")) do
    t.ok(described[r.name], "table " .. r.name .. " is described")
  end
  done()
end

-- What reads the store takes its tables from the description: merge's
-- tables, order, keys and references; records' column kinds.
function T.merge_and_records_read_the_schema(t)
  local merge = require "klab.store.merge"
  local records = require "klab.store.records"
  local i = 0
  for _, tbl in ipairs(store.schema().tables) do
    if tbl.per_store then
      t.ok(merge.OWN[tbl.name], tbl.name .. " is each store's own")
    else
      i = i + 1
      local spec = merge.TABLES[i]
      t.eq(spec.name, tbl.name, "merge order " .. i)
      t.eq(type(spec.key) == "table" and table.concat(spec.key, ",") or spec.key,
        tbl.key and table.concat(tbl.key, ",") or "*", tbl.name .. "'s key")
      for _, c in ipairs(tbl.columns) do
        t.eq(spec.refs and spec.refs[c.name], c.references, tbl.name .. "." .. c.name .. " reference")
      end
    end
  end
  t.eq(#merge.TABLES, i, "merge has no table of its own")
  local k = records.kinds("turns", "awaiting reason speedup verdict", { extra = "string" })
  t.eq(("%s %s %s %s %s"):format(k.awaiting, k.reason, k.speedup, k.verdict, k.extra),
    "integer string? number? string string")
  t.raises(function() records.kinds("turns", "no_such_column") end, "turns has no column no_such_column")
end

-- ---- compiles: one row per compile ------------------------------------------

function T.put_compile_keeps_one_row_per_hash(t)
  local db <close>, _, done = fresh(t)
  local cand = db:put_candidate { language = "cuda", code = "k" }
  local row = { candidate = cand, arch = "sm_90a", hash = "h1", ok = true, registers = 40, census = { mma = 2 },
    log = "ok", seconds = 0.5 }
  local id = db:put_compile(row)
  t.eq(db:put_compile(row), id, "the same compile is the same row")
  local r = db:first("SELECT * FROM compiles WHERE id = ?", id)
  t.eq(("%s %s %d %d %s %s"):format(r.arch, r.hash, r.ok, r.registers, r.census, tostring(r.spill_stores)),
    'sm_90a h1 1 40 {"mma":2} nil')
  t.raises(function() db:put_compile { arch = "sm_90a", hash = "h2" } end, "candidate")
  t.raises(function() db:put_compile { candidate = cand, arch = "sm_90a", hash = "h2", colour = 1 } end, "colour")
  -- Two candidates of one code (two plans) share the compile cache's key:
  -- each has its own row.
  local records = require "klab.store.records"
  local a, ah = db:put_candidate { language = "cuda", code = "same", plan = "p1" }
  local b, bh = db:put_candidate { language = "cuda", code = "same", plan = "p2" }
  local build = { ok = true, hash = "cache-key", kernels = { { registers = 8 }, { registers = 30 } } }
  local ca, cb = records.put_compile(db, a, ah, "sm_90a", build), records.put_compile(db, b, bh, "sm_90a", build)
  t.ok(ca ~= cb, "one row per candidate")
  t.eq(records.put_compile(db, a, ah, "sm_90a", build), ca, "and one per compile of it")
  t.eq(db:first("SELECT registers FROM compiles WHERE id = ?", cb).registers, 30, "the largest kernel's registers")
  t.eq(records.put_compile(db, a, ah, "sm_90a", { ok = true }), nil, "no compile of the candidate's, no row")
  done()
end

-- An evaluation stores the candidate's compile, a failed one too, and
-- points to it; judging again adds no row.
function T.an_evaluation_records_its_compile(t)
  local eval = require "klab.eval"
  local task = "gemm_bf16/123x457x789"
  local path = t.tmpdir() .. "/c.db"
  assert(eval.evaluate(task, "tasks/gemm/samples/naive", { db = path }))
  assert(eval.evaluate(task, "tasks/gemm/samples/naive", { db = path }))
  local bad = t.tmpdir()
  local f = assert(io.open(bad .. "/kernel.cu", "w"))
  f:write('extern "C" __global__ void gemm( { }')
  f:close()
  local c = assert(eval.evaluate(task, bad, { db = path }))
  t.eq(c.verdict, "compile_error")
  local db <close> = assert(store.open(path))
  local rows = db:query([[SELECT c.ok, c.registers, c.log, c.compiler, ca.language, e.verdict FROM compiles c
    JOIN candidates ca ON ca.id = c.candidate_id JOIN evaluations e ON e.compile_id = c.id ORDER BY c.id]])
  t.eq(#rows, 2, "one row per compile, each an evaluation's")
  t.eq(rows[1].ok, 1)
  t.ok(math.type(rows[1].registers) == "integer" and rows[1].registers > 0, "the registers the compiler gave")
  t.ok(type(rows[1].compiler) == "string", "the compiler")
  t.eq(rows[2].ok, 0)
  t.eq(rows[2].verdict, "compile_error")
  t.ok(type(rows[2].log) == "string" and #rows[2].log > 0, "a failed compile keeps its log")
end

return T
