-- merge_test.lua: klab.store.merge and `klab merge`: shard stores merged
-- with nothing lost or duplicated, ids remapped, every environment kept,
-- the same result when run again, conflicts reported, sources that cannot
-- be merged refused whole.

local store = require "klab.store"
local merge = require "klab.store.merge"
local experiment = require "klab.experiment"

local T = {}

local function q(s) return require("klab.command").shell_quote(s) end

-- A store as one shard of a sweep would leave it. `who` names the shard;
-- opts change what it did: verdict (of its own evaluation), reply (of its
-- second turn), config (of the experiment), median (of the shared
-- evaluation).
local function shard(path, who, opts)
  opts = opts or {}
  local db = assert(store.open(path))
  experiment.ensure_schema(db)
  local env = db:put_environment { host = "node-" .. who, gpu_name = "H200", extra = { shard = who } }
  local shared = db:put_candidate { language = "cuda", code = "__global__ void shared() {}", source = "model:" .. who }
  local own = db:put_candidate { language = "ptx", code = ".entry k_" .. who .. "() { ret; }", plan = "return {}" }
  local comp = db:insert("compiles", { candidate_id = own, arch = "sm_90a", hash = "compile-" .. who, ok = 1,
    image = store.blob("\0\1\2" .. who) })
  -- the same evaluation in both shards (the same kernel sent in two of
  -- their trajectories): one row in the output, the first merged
  db:record_evaluation { key = "eval-shared", candidate = shared, task = "gemm/1", arch = "sm_90a",
    verdict = "passed", measurements = { median_us = opts.median or 10 } }
  db:record_evaluation { key = "eval-" .. who, candidate = own, task = "gemm/1", arch = "sm_90a", env = env,
    compile = comp, verdict = opts.verdict or "incorrect", reason = "max error 0.5",
    measurements = { median_us = 5, max_err = 0.5 } }
  db:cache_put { hash = "req-" .. who, request = '{"r":"' .. who .. '"}', response = '{"text":"' .. who .. '"}', status = 200 }
  db:cache_put { hash = "req-shared", request = '{"r":"s"}', response = '{"text":"s"}', status = 200 }
  local exp = db:insert("experiments", { name = "sweep", config = opts.config or '{"replicas":2,"turns":2}' })
  local traj = db:insert("trajectories", { experiment_id = exp, key = "traj-" .. who, model = "m", task = "gemm",
    tag = who, replica = 1, state = "done", turns = 2, stop_reason = "max_turns", messages = "[]" })
  db:insert("turns", { trajectory_id = traj, turn = 1, request_hash = "req-" .. who, verdict = "compile_error",
    reply = "first reply of " .. who })
  db:insert("turns", { trajectory_id = traj, turn = 2, request_hash = "req-shared", verdict = "passed",
    candidate = "c-" .. who, reply = opts.reply or ("second reply of " .. who) })
  return db
end

-- Every row of a store, ids replaced by what they point to, one line per
-- row, sorted: two stores with equal dumps hold the same thing. Each query
-- names its columns c1..cN.
local DUMP = {
  { 5, [[SELECT 'verdict' c1, name c2, rank c3, short c4, class c5 FROM verdicts]] },
  { 4, [[SELECT 'environment' c1, host c2, extra c3, created_at c4 FROM environments]] },
  { 5, [[SELECT 'candidate' c1, hash c2, language c3, code c4, plan c5 FROM candidates]] },
  { 6, [[SELECT 'compile' c1, c.hash c2, k.hash c3, c.ok c4, typeof(c.image) c5, hex(c.image) c6 FROM compiles c
    JOIN candidates k ON k.id = c.candidate_id]] },
  { 9, [[SELECT 'evaluation' c1, e.key c2, k.hash c3, e.state c4, e.verdict c5, e.reason c6, v.host c7,
    v.created_at c8, c.hash c9 FROM evaluations e JOIN candidates k ON k.id = e.candidate_id
    LEFT JOIN environments v ON v.id = e.env_id LEFT JOIN compiles c ON c.id = e.compile_id]] },
  { 4, [[SELECT 'measurement' c1, e.key c2, m.name c3, m.value c4 FROM measurements m
    JOIN evaluations e ON e.id = m.evaluation_id]] },
  { 4, [[SELECT 'response' c1, hash c2, request c3, response c4 FROM responses]] },
  { 3, [[SELECT 'experiment' c1, name c2, config c3 FROM experiments]] },
  { 5, [[SELECT 'trajectory' c1, t.key c2, x.name c3, t.state c4, t.turns c5 FROM trajectories t
    JOIN experiments x ON x.id = t.experiment_id]] },
  { 6, [[SELECT 'turn' c1, t.key c2, u.turn c3, u.verdict c4, u.candidate c5, u.reply c6 FROM turns u
    JOIN trajectories t ON t.id = u.trajectory_id]] },
}

local function dump_text(db)
  local out = {}
  for _, d in ipairs(DUMP) do
    for _, r in ipairs(db:query(d[2])) do
      local cells = {}
      for i = 1, d[1] do cells[i] = r["c" .. i] == nil and "NULL" or tostring(r["c" .. i]) end
      out[#out + 1] = table.concat(cells, " | ")
    end
  end
  table.sort(out)
  return out
end

local function set_of(lines)
  local s = {}
  for _, l in ipairs(lines) do s[l] = (s[l] or 0) + 1 end
  return s
end

local function count(db, tbl) return db:first("SELECT count(*) AS n FROM " .. tbl).n end

-- The dump of a fresh store that the sources were merged into, in order.
local function merged(path, ...)
  local db <close> = assert(store.open(path))
  for _, src in ipairs { ... } do merge.merge(db, src) end
  return table.concat(dump_text(db), "\n")
end

local function added(report, name)
  for _, t in ipairs(report.tables) do if t.name == name then return t.added, t end end
end

T.every_table_of_a_store_is_known = function(t)
  local db <close> = assert(store.open(t.tmpdir() .. "/fresh.db"))
  experiment.ensure_schema(db)
  local known = {}
  for _, spec in ipairs(merge.TABLES) do known[spec.name] = true end
  local n = 0
  for _, r in ipairs(db:query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")) do
    n = n + 1
    t.ok(known[r.name] or merge.OWN[r.name], "klab.store.merge knows table " .. r.name)
  end
  t.ok(n >= 10, "the store's tables were listed")
  for name in pairs(known) do
    t.ok(db:first("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", name), name .. " is a store table")
  end
end

T.shards_merge_with_nothing_lost_or_duplicated = function(t)
  local dir = t.tmpdir()
  local a <close> = shard(dir .. "/a.db", "a")
  local b <close> = shard(dir .. "/b.db", "b")
  local da, db_ = dump_text(a), dump_text(b)
  a:close() b:close()
  local out <close> = assert(store.open(dir .. "/out.db"))
  local ra = merge.merge(out, dir .. "/a.db")
  local rb = merge.merge(out, dir .. "/b.db")
  t.eq(#ra.conflicts + #rb.conflicts, 0, "no conflicts")
  -- every row of each shard is in the output, with what it points to
  local have = set_of(dump_text(out))
  for _, l in ipairs(da) do t.ok(have[l], "from a: " .. l) end
  for _, l in ipairs(db_) do t.ok(have[l], "from b: " .. l) end
  -- and nothing else: the output is exactly the union, each row once
  local union = set_of(da)
  for _, l in ipairs(db_) do union[l] = 1 end
  local nu, no = 0, 0
  for l, k in pairs(have) do
    no = no + 1
    t.eq(k, 1, "once: " .. l)
    t.ok(union[l], "came from a shard: " .. l)
  end
  for _ in pairs(union) do nu = nu + 1 end
  t.eq(no, nu, "the output holds the union of the shards")
  t.eq(count(out, "candidates"), 3, "the shared candidate once")
  t.eq(count(out, "responses"), 3, "the shared response once")
  t.eq(count(out, "evaluations"), 3, "the shared evaluation once")
  t.eq(count(out, "measurements"), 5)
  t.eq(count(out, "experiments"), 1, "one experiment of that name")
  t.eq(count(out, "trajectories"), 2) t.eq(count(out, "turns"), 4)
  -- provenance: both runs' environments, each evaluation on its own
  t.eq(count(out, "environments"), 2, "every environment row kept")
  for _, who in ipairs { "a", "b" } do
    local r = out:first([[SELECT v.host FROM evaluations e JOIN environments v ON v.id = e.env_id WHERE e.key = ?]],
      "eval-" .. who)
    t.eq(r and r.host, "node-" .. who, "eval-" .. who .. " points to its own shard's environment")
  end
  t.eq(out:first("SELECT typeof(image) AS ty FROM compiles WHERE hash = 'compile-b'").ty, "blob", "blobs stay blobs")
  -- b's rows got new ids and what points to them followed
  local tb = out:first("SELECT id FROM trajectories WHERE key = 'traj-b'").id
  t.eq(tb, 2, "b's trajectory was renumbered")
  t.eq(out:first("SELECT count(*) AS n FROM turns WHERE trajectory_id = ?", tb).n, 2, "its turns followed it")
  t.eq(added(rb, "candidates"), 1) t.eq(select(2, added(rb, "candidates")).same, 1)
  t.match(merge.summary(rb), "b%.db: verdicts %+0 %(%d+ there%), environments %+1, candidates %+1 %(1 there%)")
end

T.merging_again_changes_nothing_and_order_does_not_matter = function(t)
  local dir = t.tmpdir()
  shard(dir .. "/a.db", "a"):close()
  shard(dir .. "/b.db", "b"):close()
  local out <close> = assert(store.open(dir .. "/out.db"))
  merge.merge(out, dir .. "/a.db")
  merge.merge(out, dir .. "/b.db")
  local first = table.concat(dump_text(out), "\n")
  local again = { merge.merge(out, dir .. "/a.db"), merge.merge(out, dir .. "/b.db"), merge.merge(out, dir .. "/a.db") }
  for _, r in ipairs(again) do
    for _, tb in ipairs(r.tables) do t.eq(tb.added, 0, r.source .. ": nothing added to " .. tb.name .. " again") end
    t.eq(#r.conflicts, 0)
  end
  t.eq(table.concat(dump_text(out), "\n"), first, "the same store after merging again")
  t.eq(merged(dir .. "/rev.db", dir .. "/b.db", dir .. "/a.db"), first, "the same store whichever shard comes first")
end

T.conflicts_are_reported_and_the_output_kept = function(t)
  local dir = t.tmpdir()
  shard(dir .. "/a.db", "a"):close()
  -- the same keys, but the evaluation got another verdict and a turn another reply
  shard(dir .. "/a2.db", "a", { verdict = "timeout", reply = "a different reply" }):close()
  local out <close> = assert(store.open(dir .. "/out.db"))
  merge.merge(out, dir .. "/a.db")
  local before = dump_text(out)
  local r = merge.merge(out, dir .. "/a2.db")
  local text = table.concat(r.conflicts, "\n")
  t.eq(#r.conflicts, 2, text)
  t.match(text, "evaluations key=eval%-a: verdict %(output incorrect, source timeout%); the output's row is kept")
  t.match(text, "trajectories key=traj%-a: its turns differ; the output's row is kept")
  -- every row stays as it was; the only new row is a2's environment (its
  -- own run, kept for provenance)
  local after = set_of(dump_text(out))
  local n = 0
  for _, l in ipairs(before) do t.ok(after[l], "kept: " .. l) end
  for _ in pairs(after) do n = n + 1 end
  t.eq(n, #before + 1)
  t.eq(count(out, "environments"), 2)
  local _, ev = added(r, "evaluations")
  t.eq(ev.conflicts, 1)
  -- the command says so on stderr and exits 1
  local code, outp, err = t.sh(q(t.klab) .. " merge " .. q(dir .. "/out2.db") .. " " .. q(dir .. "/a.db") .. " " ..
    q(dir .. "/a2.db"))
  t.eq(code, 1, "conflicts make the exit status 1")
  t.match(err, "conflict in .-a2%.db: evaluations key=eval%-a: verdict")
  t.match(outp, "2 of 2 stores merged, 2 conflicts")
end

T.an_experiment_with_another_config_refuses_the_source = function(t)
  local dir = t.tmpdir()
  shard(dir .. "/a.db", "a"):close()
  shard(dir .. "/c.db", "c", { config = '{"replicas":3,"turns":2}' }):close()
  local out <close> = assert(store.open(dir .. "/out.db"))
  merge.merge(out, dir .. "/a.db")
  local before = table.concat(dump_text(out), "\n")
  t.raises(function() merge.merge(out, dir .. "/c.db") end,
    "experiments name=sweep: config %(replicas: 2 vs 3%); not merged")
  t.eq(table.concat(dump_text(out), "\n"), before, "nothing of the refused source was written")
  t.eq(out:first("SELECT count(*) AS n FROM candidates WHERE code LIKE '%k_c%'").n, 0)
end

-- Shards whose turns two klab builds made (a requeued task after an
-- upgrade): the builds are not the experiment's identity; the output names
-- both, the first store's first.
T.shards_of_two_klab_builds_merge_and_name_both = function(t)
  local dir = t.tmpdir()
  shard(dir .. "/a.db", "a", { config = '{"replicas":2,"turns":2,"klab":["0.1.0 (aaa)"]}' }):close()
  shard(dir .. "/b.db", "b", { config = '{"replicas":2,"turns":2,"klab":["0.1.0 (bbb)","0.1.0 (aaa)"]}' }):close()
  local out <close> = assert(store.open(dir .. "/out.db"))
  merge.merge(out, dir .. "/a.db")
  merge.merge(out, dir .. "/b.db")
  local c = require("klab.json").decode(out:first("SELECT config FROM experiments WHERE name = 'sweep'").config)
  t.eq(table.concat(c.klab, ", "), "0.1.0 (aaa), 0.1.0 (bbb)")
  t.eq(c.replicas, 2, "the rest of the config is the experiment's")
  -- Anything else that differs still refuses the source.
  shard(dir .. "/c.db", "c", { config = '{"replicas":3,"turns":2,"klab":["0.1.0 (aaa)"]}' }):close()
  t.raises(function() merge.merge(out, dir .. "/c.db") end, "config %(replicas: 2 vs 3")
end

T.a_copy_that_went_further_replaces_the_older_one = function(t)
  local dir = t.tmpdir()
  -- older: a trajectory after one turn, an evaluation begun but not finished,
  -- a failed model call; newer: the same after the work went on
  local function copy(path, newer)
    local db = assert(store.open(path))
    experiment.ensure_schema(db)
    local c = db:put_candidate { language = "cuda", code = "__global__ void k() {}" }
    local id = db:begin_evaluation { key = "eval-x", candidate = c, task = "gemm/1", arch = "sm_90a" }
    if newer then db:finish_evaluation(id, { verdict = "passed", measurements = { median_us = 3 } }) end
    db:cache_put { hash = "req-1", request = '{"r":1}', response = newer and '{"text":"hi"}' or nil,
      error = not newer and "timeout" or nil }
    local exp = db:insert("experiments", { name = "sweep", config = "{}" })
    local traj = db:insert("trajectories", { experiment_id = exp, key = "traj-x", model = "m", task = "gemm", tag = "none",
      replica = 1, state = newer and "done" or "running", turns = newer and 2 or 1, messages = "[]" })
    db:insert("turns", { trajectory_id = traj, turn = 1, verdict = "compile_error", reply = "r1" })
    if newer then db:insert("turns", { trajectory_id = traj, turn = 2, verdict = "passed", reply = "r2" }) end
    db:close()
  end
  copy(dir .. "/old.db", false)
  copy(dir .. "/new.db", true)
  local out <close> = assert(store.open(dir .. "/out.db"))
  merge.merge(out, dir .. "/old.db")
  t.eq(out:first("SELECT state FROM evaluations").state, "running")
  local r = merge.merge(out, dir .. "/new.db")
  t.eq(#r.conflicts, 0, table.concat(r.conflicts, "\n"))
  t.eq(select(2, added(r, "evaluations")).newer, 1)
  t.eq(select(2, added(r, "trajectories")).newer, 1)
  local want = table.concat(dump_text(out), "\n")
  t.eq(out:first("SELECT state, verdict FROM evaluations").verdict, "passed", "the finished evaluation replaced it")
  t.eq(count(out, "measurements"), 1)
  t.eq(out:first("SELECT response FROM responses").response, '{"text":"hi"}', "the answered call replaced the failed one")
  t.eq(out:first("SELECT state FROM trajectories").state, "done")
  t.eq(count(out, "turns"), 2, "the trajectory's turns are the newer copy's")
  merge.merge(out, dir .. "/old.db")
  t.eq(table.concat(dump_text(out), "\n"), want, "the older copy merged again does not go back")
  t.eq(merged(dir .. "/rev.db", dir .. "/new.db", dir .. "/old.db"), want, "in either order")
end

-- Of two copies of an unfinished trajectory, the one with more turns has
-- gone further; a finished one has gone further than any unfinished one.
T.a_trajectory_goes_further_by_its_turns_until_it_is_done = function(t)
  local dir = t.tmpdir()
  local function copy(path, state, turns)
    local db = assert(store.open(path))
    experiment.ensure_schema(db)
    local exp = db:insert("experiments", { name = "sweep", config = "{}" })
    local traj = db:insert("trajectories", { experiment_id = exp, key = "traj-x", model = "m", task = "gemm",
      tag = "none", replica = 1, state = state, turns = turns, messages = "[]" })
    for i = 1, turns do db:insert("turns", { trajectory_id = traj, turn = i, verdict = "compile_error", reply = "r" }) end
    db:close()
  end
  copy(dir .. "/one.db", "running", 1)
  copy(dir .. "/three.db", "running", 3)
  copy(dir .. "/done.db", "done", 2)
  local out <close> = assert(store.open(dir .. "/out.db"))
  merge.merge(out, dir .. "/one.db")
  t.eq(select(2, added(merge.merge(out, dir .. "/three.db"), "trajectories")).newer, 1, "3 turns replace 1")
  t.eq(count(out, "turns"), 3)
  t.eq(select(2, added(merge.merge(out, dir .. "/one.db"), "trajectories")).same, 1, "1 turn does not replace 3")
  t.eq(select(2, added(merge.merge(out, dir .. "/done.db"), "trajectories")).newer, 1, "done replaces running")
  t.eq(select(2, added(merge.merge(out, dir .. "/three.db"), "trajectories")).same, 1, "running does not replace done")
  t.eq(out:first("SELECT state, turns FROM trajectories").turns, 2)
  t.eq(count(out, "turns"), 2)
end

T.a_store_still_open_is_read_through_its_log = function(t)
  local dir = t.tmpdir()
  local a <close> = shard(dir .. "/a.db", "a")   -- open: its last writes are in a-wal
  local f = io.open(dir .. "/a.db-wal", "rb")
  t.ok(f, "the shard has a write-ahead log")
  if f then f:close() end
  local out <close> = assert(store.open(dir .. "/out.db"))
  merge.merge(out, dir .. "/a.db")
  t.eq(count(out, "turns"), 2, "rows only in the log were merged")
  t.eq(table.concat(dump_text(out), "\n"), table.concat(dump_text(a), "\n"))
  -- a closed store is read without leaving files beside it
  shard(dir .. "/b.db", "b"):close()
  merge.merge(out, dir .. "/b.db")
  t.eq(io.open(dir .. "/b.db-shm", "rb"), nil, "no -shm file next to a closed source")
  t.eq(io.open(dir .. "/b.db-wal", "rb"), nil, "no -wal file next to a closed source")
end

T.sources_that_cannot_be_merged_are_refused_whole = function(t)
  local dir = t.tmpdir()
  local out <close> = assert(store.open(dir .. "/out.db"))
  experiment.ensure_schema(out)
  local function refused(path, pattern)
    local before = table.concat(dump_text(out), "\n")
    t.raises(function() merge.merge(out, path) end, pattern)
    t.eq(table.concat(dump_text(out), "\n"), before, "nothing written for " .. path)
  end
  local x = shard(dir .. "/unknown.db", "x")
  x:exec("CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT)")
  x:close()
  refused(dir .. "/unknown.db", "has tables that klab merge does not know %(notes%)")
  local y = shard(dir .. "/newer.db", "y")
  y:exec("INSERT INTO schema_version(version, description, klab_version) VALUES (99, 'future', 'x')")
  y:close()
  refused(dir .. "/newer.db", "schema version 99, newer than this klab's")
  local z = shard(dir .. "/plain.db", "z")
  z:exec("DROP TABLE schema_version")
  z:close()
  refused(dir .. "/plain.db", "is not a klab store")
  refused(dir .. "/missing.db", "no such file")
  local f = assert(io.open(dir .. "/text.db", "w"))
  f:write("not a database, just text long enough to have a header's worth of bytes in it\n")
  f:close()
  refused(dir .. "/text.db", "text%.db cannot be read: .*not a database")
  refused(dir .. "/out.db", "is the output store itself")
  t.eq(out:in_transaction(), false, "no transaction left open")
  for _, d in ipairs(out:query("PRAGMA database_list")) do t.ok(d.name ~= "src", "the source was detached") end
end

T.the_command_line = function(t)
  local dir = t.tmpdir()
  shard(dir .. "/a.db", "a"):close()
  shard(dir .. "/b.db", "b"):close()
  local code, _, err = t.sh(q(t.klab) .. " merge " .. q(dir .. "/out.db"))
  t.eq(code, 2, "one argument is a bad command line")
  t.match(err, "expected the output store and at least one shard store")
  local out
  code, out = t.sh(q(t.klab) .. " merge --help")
  t.eq(code, 0) t.match(out, "usage: klab merge OUT%.db SHARD%.db")
  code, out = t.sh(q(t.klab) .. " merge " .. q(dir .. "/out.db") .. " " .. q(dir .. "/a.db") .. " " .. q(dir .. "/b.db"))
  t.eq(code, 0)
  t.match(out, "a%.db: verdicts %+0 %(%d+ there%), environments %+1, candidates %+2")
  t.match(out, "out%.db: 2 of 2 stores merged, 0 conflicts")
  code, out, err = t.sh(q(t.klab) .. " merge " .. q(dir .. "/out.db") .. " " .. q(dir .. "/a.db") .. " " ..
    q(dir .. "/none.db"))
  t.eq(code, 1, "a shard that cannot be merged makes the exit status 1")
  t.match(err, "none%.db not merged: .-no such file")
  t.match(out, "1 of 2 stores merged")
end

-- Stores made or damaged by someone else: each command that reads one
-- (merge, export, report) says in one line which store and what is wrong,
-- exits 2, and never hangs.
function T.damaged_stores_are_one_line_mistakes(t)
  local dir = t.tmpdir()
  local function damaged(name, sql)
    local path = dir .. "/" .. name .. ".db"
    local db = shard(path, name)
    assert(db:exec(sql))
    db:close()
    return path
  end
  local cases = {
    { damaged("view", [[DROP TABLE turns; CREATE VIEW turns AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL
        SELECT x + 1 FROM c) SELECT x AS id, 1 AS trajectory_id, x AS turn, 'passed' AS verdict FROM c;]]),
      "turns is a view, not the table klab made" },
    { damaged("nulltask", [[PRAGMA foreign_keys = OFF; ALTER TABLE trajectories RENAME TO t_old;
        CREATE TABLE trajectories (id INTEGER PRIMARY KEY, experiment_id INTEGER, key TEXT, model TEXT, task TEXT,
          tag TEXT, replica INTEGER, state TEXT, stop_reason TEXT, turns INTEGER, best_speedup REAL, best_turn INTEGER,
          selected_turn INTEGER, selected_speedup REAL, selection TEXT, messages TEXT, created_at TEXT, finished_at TEXT,
          language TEXT);
        INSERT INTO trajectories SELECT * FROM t_old; UPDATE trajectories SET task = NULL; DROP TABLE t_old;]]),
      "is not the one klab made" },
    { damaged("badjson", [[UPDATE experiments SET config = '{not json']]), "malformed JSON" },
  }
  for _, c in ipairs(cases) do
    local path, want = c[1], c[2]
    for _, args in ipairs {
      "report " .. q(path) .. " --out " .. q(dir .. "/out-" .. path:match("([%w]+)%.db$")),
      "export sft " .. q(path) .. " --out " .. q(dir .. "/sft.jsonl"),
    } do
      local code, out, err = t.sh("timeout 60 " .. q(t.klab) .. " " .. args)
      t.eq(code, 2, args .. ": " .. err .. out)
      t.match(err, path:gsub("%p", "%%%0"), args .. ": names the store")
      t.ok(err:find(want, 1, true), args .. ": says what is wrong: " .. err)
      t.ok(not err:find("%.lua:%d+:"), args .. ": no internal position: " .. err)
      t.eq(select(2, err:gsub("\n", "")), 1, args .. ": one line: " .. err)
    end
  end
  -- A merge refuses the view at once (no hang), naming the shard.
  local code, _, err = t.sh("timeout 60 " .. q(t.klab) .. " merge " .. q(dir .. "/out.db") .. " " .. q(cases[1][1]))
  t.ok(code ~= 0 and code ~= 124, "merge ends: " .. tostring(code))
  t.ok(err:find("turns is a view", 1, true), err)
  -- A merge's output with a trigger of someone else's is not written into.
  local out = dir .. "/trig.db"
  local db = assert(store.open(out))
  assert(db:exec("CREATE TRIGGER mine AFTER INSERT ON candidates BEGIN SELECT 1; END;"))
  db:close()
  code, _, err = t.sh(q(t.klab) .. " merge " .. q(out) .. " " .. q(dir .. "/badjson.db"))
  t.eq(code, 2, err)
  t.ok(err:find("holds the trigger mine, which klab did not make", 1, true), err)
end

return T
