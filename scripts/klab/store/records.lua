-- klab.store.records: the one owner of the store's records. Every SQL
-- statement klab's library runs is here: the typed reads and writes
-- (experiments, trajectories, turns, reports, exports, the verdict list)
-- and the statements of the store-to-store copy (merge_*), which
-- klab.store.merge runs in the order its policy decides. The schema itself
-- (tables, indexes, klab's triggers, versions) is host/store's, described
-- once in host/store/tables.c; M.schema() is that description, which merge
-- and the typed reads here take their tables, keys, references and column
-- types from.
--
--   records.open(path [, {readonly=, make_folder=}]) -> db | nil, line, code
--
-- A store can be made or damaged by someone else: host/store refuses one
-- whose klab tables are not tables, caps what it reads and runs with
-- trusted_schema off; the readers here check the types of the columns they
-- hand on (a NULL task name, a number where text belongs) and decode JSON
-- columns carefully (klab.store.checks). Whatever is wrong is a klab.errors mistake whose one
-- line names the store, the table and what is wrong.

local checks = require "klab.store.checks"

local M = {}

-- ---- reading safely -----------------------------------------------------

-- The checks of what a store hands back (klab.store.checks, no SQL).
local bad, kinds, checked = checks.bad, checks.kinds, checks.checked
M.schema, M.kinds, M.decode = checks.schema, checks.kinds, checks.decode

-- db:query that turns a failure (a value too large, a busy or damaged file,
-- JSON that is not JSON in a column SQL reads) into a mistake naming the
-- store; SQLite's words stay, the statement and the position go.
local function query(db, sql, ...)
  local ok, rows, err = pcall(db.query, db, sql, ...)
  if not ok or not rows then
    local why = tostring(ok and err or rows):gsub("^[^:\n]*%.lua:%d+: ", ""):gsub("^store: ", ""):gsub(" in: .*$", "")
    bad(db, "%s", why:gsub("^step: ", ""))
  end
  return rows
end

local function first(db, sql, ...) return query(db, sql, ...)[1] end

function M.has_table(db, name)
  return first(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", name) ~= nil
end

local function count(db, tbl) return first(db, "SELECT count(*) AS n FROM " .. tbl).n or 0 end
M.count = count

-- Where the finished evaluations were measured: how many carry this
-- machine's user's mark (host/store/mark.c), and how many do not (merged
-- from elsewhere, written before marks, or changed since).
function M.measured_where(db)
  local here, elsewhere = 0, 0
  for _, r in ipairs(query(db, "SELECT id FROM evaluations WHERE state = 'done'")) do
    if db:evaluation_proven(r.id) then here = here + 1 else elsewhere = elsewhere + 1 end
  end
  return here, elsewhere
end

-- ---- the verdict list -----------------------------------------------------

function M.verdict_rows(db) return query(db, "SELECT name, rank, short, stage, class, means FROM verdicts") end

-- The store checks every verdict it records against its verdicts table;
-- this fills it from klab.eval.verdict's list (idempotent).
function M.define_verdicts(db)
  local list = require("klab.eval.verdict").LIST
  local have = {}
  for _, r in ipairs(M.verdict_rows(db)) do have[r.name] = r end
  local stale = false
  for i, v in ipairs(list) do
    local r = have[v.name]
    if not (r and r.rank == i and r.short == v.short and r.stage == v.stage and r.class == v.class
        and r.means == v.means) then
      stale = true
    end
  end
  if not stale then return true end
  db:transaction(function()
    for i, v in ipairs(list) do
      query(db, "INSERT OR REPLACE INTO verdicts(name, rank, short, stage, class, means) VALUES (?, ?, ?, ?, ?, ?)",
        v.name, i, v.short, v.stage, v.class, v.means)
    end
  end)
  return true
end

-- ---- compiles ---------------------------------------------------------------

-- The largest value of field k over a module's kernels, or nil.
local function most(kernels, k)
  local m
  for _, kn in ipairs(kernels or {}) do
    if math.type(kn[k]) == "integer" and (not m or kn[k] > m) then m = kn[k] end
  end
  return m
end

-- Stores what the build stage recorded of the candidate's compile (build:
-- a result's stages.build) as one compiles row, and returns its id; nil
-- when the run compiled nothing of the candidate's. candidate: its id and
-- content hash. A row is named by its candidate, arch and what was
-- compiled (the compile cache's key; for a compile that failed, which is a
-- row too, its log): the same compile of a candidate is one row however
-- often it is judged. The cache's key alone is not a candidate's: two
-- candidates with one code and two plans share it.
function M.put_compile(db, candidate, candidate_hash, arch, build)
  if type(build) ~= "table" or (build.ok and not build.hash) then return nil end
  local hash = require("klab.store").hash("klab.compile.1", candidate_hash, arch, build.ok and "ok" or "failed",
    tostring(build.ok and build.hash or build.log or ""))
  local k = build.kernels
  return db:put_compile { candidate = candidate, arch = arch, hash = hash, ok = build.ok == true,
    compiler = build.compiler, registers = most(k, "registers"), spill_stores = most(k, "spill_stores"),
    spill_loads = most(k, "spill_loads"), shared_bytes = most(k, "shared_static"), local_bytes = most(k, "local_bytes"),
    census = build.census, log = build.log, seconds = build.compile_ms and build.compile_ms / 1000 }
end

-- ---- experiments ------------------------------------------------------------

local EXPERIMENT = kinds("experiments", "id name config")

function M.experiment(db, name)
  return checked(db, "experiments", query(db, "SELECT * FROM experiments WHERE name = ?", name), EXPERIMENT)[1]
end

-- The experiment's id, its config stored (created or updated).
function M.save_experiment(db, name, config)
  local row = M.experiment(db, name)
  if row then
    query(db, "UPDATE experiments SET config = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?",
      config, row.id)
    return row.id
  end
  return db:insert("experiments", { name = name, config = config })
end

function M.experiment_names(db)
  if not M.has_table(db, "experiments") then return {} end
  local out = {}
  for _, r in ipairs(checked(db, "experiments", query(db, "SELECT id, name FROM experiments ORDER BY name"),
    EXPERIMENT)) do
    out[#out + 1] = r.name
  end
  return out
end

function M.experiments(db)
  return checked(db, "experiments", query(db, "SELECT id, name, config, created_at, updated_at FROM experiments "
    .. "ORDER BY name, id"), EXPERIMENT)
end

-- ---- trajectories and turns ---------------------------------------------------

local TRAJECTORY = kinds("trajectories", "id experiment_id key model task tag replica state turns messages")
local TURN = kinds("turns", "id trajectory_id turn verdict reason speedup verified candidate reply feedback awaiting")

-- A trajectory by its key, without its messages (trajectory_messages).
function M.trajectory(db, key)
  return checked(db, "trajectories", query(db, [[SELECT id, experiment_id, key, model, task, tag, replica, state, turns
      FROM trajectories WHERE key = ?]], key), TRAJECTORY)[1]
end

function M.trajectory_messages(db, id)
  local r = first(db, "SELECT messages FROM trajectories WHERE id = ?", id)
  return r and M.decode(db, "trajectories", "messages", r.messages, id) or nil
end

-- A tool-calling trajectory's whole conversation so far (klab.agent.study),
-- written after every step.
function M.set_trajectory_messages(db, id, messages)
  query(db, "UPDATE trajectories SET messages = ? WHERE id = ?", messages, id)
end

function M.add_trajectory(db, fields)
  local id = db:insert("trajectories", fields)
  return checked(db, "trajectories", query(db, "SELECT * FROM trajectories WHERE id = ?", id), TRAJECTORY)[1]
end

function M.turns(db, trajectory_id)
  return checked(db, "turns", query(db, "SELECT * FROM turns WHERE trajectory_id = ? ORDER BY turn", trajectory_id),
    TURN)
end

-- The turns of a finished trajectory without their replies and feedback.
function M.turn_summaries(db, trajectory_id)
  return checked(db, "turns", query(db, [[SELECT id, trajectory_id, turn, verdict, reason, speedup, verified, candidate,
      language, awaiting, workloads FROM turns WHERE trajectory_id = ? ORDER BY turn]], trajectory_id), TURN)
end

-- Stores a turn and the trajectory's count of turns; returns the stored row.
function M.add_turn(db, rec)
  local id, err = db:insert("turns", rec)
  if not id then
    error(("experiment: cannot store turn %d of trajectory %d: %s"):format(rec.turn, rec.trajectory_id, tostring(err)), 0)
  end
  query(db, "UPDATE trajectories SET turns = ? WHERE id = ?", rec.turn, rec.trajectory_id)
  return checked(db, "turns", query(db, "SELECT * FROM turns WHERE id = ?", id), TURN)[1]
end

-- A judged turn: its verdict and what comes with it replace what the
-- generate phase stored (f = {verdict=, reason=, speedup=, verified=,
-- workloads=, feedback=}); awaiting goes to 0. Returns the stored row.
function M.judge_turn(db, id, f)
  query(db, [[UPDATE turns SET verdict = ?, reason = ?, speedup = ?, verified = ?, workloads = ?, feedback = ?,
    awaiting = 0 WHERE id = ?]], f.verdict, f.reason, f.speedup, f.verified, f.workloads, f.feedback, id)
  return checked(db, "turns", query(db, "SELECT * FROM turns WHERE id = ?", id), TURN)[1]
end

-- The experiment's turns that await judgement (or, again: every turn with
-- a candidate), with their trajectory's key, in trajectory and turn order.
function M.turns_to_judge(db, experiment_id, again)
  return checked(db, "turns", query(db, [[SELECT turns.*, t.key AS trajectory_key FROM turns
      JOIN trajectories t ON t.id = trajectory_id
      WHERE t.experiment_id = ? AND (turns.awaiting = 1 OR (? AND turns.candidate IS NOT NULL))
      ORDER BY t.id, turns.turn]], experiment_id, again and 1 or 0),
    kinds("turns", "id trajectory_id turn candidate", { trajectory_key = "string" }))
end

-- f = {stop_reason=, best_speedup=, best_turn=, selected_turn=, selected_speedup=, selection=}
function M.finish_trajectory(db, id, f)
  query(db, [[UPDATE trajectories SET state = 'done', stop_reason = ?, best_speedup = ?, best_turn = ?,
    selected_turn = ?, selected_speedup = ?, selection = ?, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
    WHERE id = ?]], f.stop_reason, f.best_speedup, f.best_turn, f.selected_turn, f.selected_speedup, f.selection, id)
end

-- verdict -> turns of the experiment.
function M.verdict_counts(db, experiment_id)
  local out = {}
  for _, r in ipairs(query(db, [[SELECT verdict, count(*) AS n FROM turns JOIN trajectories t ON t.id = trajectory_id
      WHERE t.experiment_id = ? GROUP BY verdict]], experiment_id)) do
    if type(r.verdict) == "string" then out[r.verdict] = r.n end
  end
  return out
end

function M.trajectories_of(db, experiment_id)
  return checked(db, "trajectories", query(db, "SELECT * FROM trajectories WHERE experiment_id = ? ORDER BY id",
    experiment_id), TRAJECTORY)
end

-- The turns of a trajectory with their tokens and cost.
function M.turn_costs(db, trajectory_id)
  return checked(db, "turns", query(db, [[SELECT turn, verdict, input_tokens, output_tokens, cost_usd FROM turns
      WHERE trajectory_id = ? ORDER BY turn]], trajectory_id), kinds("turns", "turn verdict input_tokens output_tokens cost_usd"))
end

-- Every turn of the experiment with its trajectory's model, task, tag, replica
-- and language (as trajectory_language: a turn has its candidate's own).
function M.experiment_turns(db, experiment_id)
  return checked(db, "turns", query(db, [[SELECT turns.*, t.model, t.task, t.tag, t.replica,
      t.language AS trajectory_language FROM turns
      JOIN trajectories t ON t.id = trajectory_id WHERE t.experiment_id = ?
      ORDER BY t.model, t.task, t.tag, t.replica, turns.turn]], experiment_id),
    kinds("turns", "verdict turn", kinds("trajectories", "model task tag replica")))
end

function M.candidate(db, hash)
  return query(db, "SELECT * FROM candidates WHERE hash = ?", hash)[1]
end

-- ---- what reports read ----------------------------------------------------

-- The trajectories a report reads (with their language, their experiment's
-- name, arch and turn limit), of one experiment or all.
function M.report_trajectories(db, experiment)
  return checked(db, "trajectories", query(db, [[SELECT t.id, t.model, t.task, t.tag, t.replica, t.state,
      t.language, t.turns AS nturns, e.name AS experiment, json_extract(e.config, '$.arch') AS arch,
      json_extract(e.config, '$.turns') AS max_turns
      FROM trajectories t JOIN experiments e ON e.id = t.experiment_id
      WHERE (? IS NULL OR e.name = ?)]], experiment, experiment),
    kinds("trajectories", "id model task tag replica state language", { experiment = "string", arch = "string?" }))
end

-- Every turn's outcome, by trajectory and turn.
function M.turn_outcomes(db)
  return checked(db, "turns", query(db, [[SELECT trajectory_id, turn, verdict, reason, speedup, verified, candidate,
      source, input_tokens, output_tokens, latency_ms, cost_usd
      FROM turns ORDER BY trajectory_id, turn]]), kinds("turns", [[trajectory_id turn verdict reason speedup verified
      candidate source input_tokens output_tokens latency_ms cost_usd]]))
end

-- The architectures a trajectory's candidates were evaluated for, most first.
function M.trajectory_archs(db, trajectory_id)
  return query(db, [[SELECT ev.arch, count(*) AS n FROM turns tu JOIN candidates c ON c.hash = tu.candidate
      JOIN evaluations ev ON ev.candidate_id = c.id WHERE tu.trajectory_id = ?
      GROUP BY ev.arch ORDER BY n DESC, ev.arch]], trajectory_id)
end

-- Measurements names[...] of the evaluations of a candidate (for one arch, or any).
function M.candidate_measurements(db, candidate, arch, names)
  return query(db, ([[SELECT m.name, m.value, ev.id AS ev FROM candidates c
      JOIN evaluations ev ON ev.candidate_id = c.id
      JOIN measurements m ON m.evaluation_id = ev.id
      WHERE c.hash = ? AND (? IS NULL OR ev.arch = ?) AND m.name IN (%s)
      ORDER BY ev.id, m.name]]):format(("?"):rep(#names, ", ")), candidate, arch, arch, table.unpack(names))
end

-- The initial conversations of the trajectories, with where they were used.
function M.prompts(db)
  return checked(db, "trajectories", query(db, [[SELECT t.messages, t.task, t.tag, e.name AS experiment
      FROM trajectories t JOIN experiments e ON e.id = t.experiment_id
      ORDER BY e.name, t.task, t.tag, t.model, t.replica]]), kinds("trajectories", "messages task tag",
      { experiment = "string" }))
end

local function id_list(ids)
  local out = {}
  for i, id in ipairs(ids) do out[i] = tostring(math.tointeger(id)) end
  return table.concat(out, ",")
end

-- The environments the evaluations of these trajectories' candidates ran in.
function M.environments_of(db, trajectory_ids)
  if #trajectory_ids == 0 then return {} end
  return query(db, ([[SELECT DISTINCT env.* FROM turns tu JOIN candidates c ON c.hash = tu.candidate
      JOIN evaluations ev ON ev.candidate_id = c.id JOIN environments env ON env.id = ev.env_id
      WHERE tu.trajectory_id IN (%s) ORDER BY env.id]]):format(id_list(trajectory_ids)))
end

function M.environments(db) return query(db, "SELECT * FROM environments ORDER BY id") end

-- The first and last turn of these trajectories, and of the evaluations.
function M.turn_dates(db, trajectory_ids)
  if #trajectory_ids == 0 then return nil, nil end
  local r = first(db, ("SELECT min(created_at) AS a, max(created_at) AS b FROM turns WHERE trajectory_id IN (%s)")
    :format(id_list(trajectory_ids)))
  return r and r.a, r and r.b
end

function M.evaluation_dates(db)
  local r = first(db, "SELECT min(finished_at) AS a, max(finished_at) AS b FROM evaluations")
  return r and r.a, r and r.b
end

function M.schema_version(db)
  local r = first(db, "SELECT max(version) AS v FROM schema_version")
  return r and r.v
end

-- The turns that await judgement (a generate phase's), store-wide. A store
-- klab opens has this klab's schema (an older one is migrated, or refused
-- read-only), so turns.awaiting is there.
function M.awaiting_count(db)
  return first(db, "SELECT count(*) AS n FROM turns WHERE awaiting = 1").n or 0
end

-- Why evaluations were not measured: {{reason=, n=}, ...}, most frequent first.
function M.unknown_reasons(db)
  return query(db, [[SELECT reason, count(*) AS n FROM evaluations WHERE verdict = 'unknown'
      GROUP BY reason ORDER BY n DESC, reason]])
end

-- ---- what exports read ----------------------------------------------------

-- opts.messages = false: without the first messages (the export reads them
-- one trajectory at a time).
function M.export_trajectories(db, experiment, opts)
  local messages = not (opts and opts.messages == false)
  return checked(db, "trajectories", query(db, ([[SELECT t.id, t.model, t.task, t.tag, t.replica%s,
      e.name AS experiment FROM trajectories t JOIN experiments e ON e.id = t.experiment_id
      WHERE (? IS NULL OR e.name = ?) ORDER BY t.id]]):format(messages and ", t.messages" or ""), experiment, experiment),
    kinds("trajectories", "id model task tag replica messages"))
end

-- A trajectory's turns with their candidates' code and plan (those from
-- turn `from` to `to` when given).
function M.turns_with_code(db, trajectory_id, from, to)
  return checked(db, "turns", query(db, [[SELECT tu.*, c.code AS k_code, c.plan AS k_plan, c.language AS k_language
      FROM turns tu LEFT JOIN candidates c ON c.hash = tu.candidate
      WHERE tu.trajectory_id = ? AND tu.turn BETWEEN ? AND ? ORDER BY tu.turn]], trajectory_id, from or 0,
      to or math.maxinteger), TURN)
end


-- ---- store-to-store copy ----------------------------------------------------
--
-- klab.store.merge decides what a merge does: the tables in their order,
-- which of two rows stays, the conflicts, the report. The statements it runs
-- are these. The source is attached read-only as schema src, the output is
-- main; temp.merge_map records per table each source row (old), its output
-- row (new) and the merge's decision (state: new, same, newer, conflict).
-- A table's spec (klab.store.merge's M.TABLES) gives its name, its key
-- ("*": every column but the id), refs {column = table}, identity and
-- settled columns, progress {done = col | present = col, count = col},
-- ignore {column = {json field, ...}} and owner (the ref column of an owned
-- table). common: the table's columns in both stores {list, name = true,
-- pk = {name = position}, integer_pk}; keys: the key's columns.
-- Each raises SQLite's message, so that the merge's transaction rolls back.

local function q(name) return '"' .. name:gsub('"', '""') .. '"' end

local function rows_of(db, sql, ...)
  local rows, err = db:query(sql, ...)
  if not rows then error(tostring(err), 0) end
  return rows
end

local function exec(db, sql)
  local ok, err = db:exec(sql)
  if not ok then error(tostring(err), 0) end
end

-- A source as an SQLite URI, opened read-only (a source is never written).
-- A store no process has open (no write-ahead log beside it) is opened
-- immutable: reading takes no locks and leaves no files next to it, which is
-- what a results folder on NFS needs. One with a log (open elsewhere, or
-- left by a process that was killed) is read through the log.
local function source_uri(path)
  local enc = path:gsub("[%%?#]", function(c) return ("%%%02X"):format(c:byte()) end):gsub("^/+", "/")
  local wal = io.open(path .. "-wal", "rb")
  if wal then
    wal:close()
    return "file:" .. enc .. "?mode=ro"
  end
  return "file:" .. enc .. "?immutable=1"
end

-- true, or nil and SQLite's message.
function M.merge_attach(db, path) return db:query("ATTACH DATABASE ? AS src", source_uri(path)) end
function M.merge_detach(db) rows_of(db, "DETACH DATABASE src") end

-- The file a schema (main, src) of db is.
function M.merge_file(db, schema)
  for _, r in ipairs(rows_of(db, "PRAGMA database_list")) do
    if r.name == schema then return r.file end
  end
end

-- {name = {name=, pk=, type=}, list = {name, ...}} of schema.tbl, or nil when absent.
function M.merge_columns(db, schema, tbl)
  local rows = rows_of(db, ("PRAGMA %s.table_info(%s)"):format(schema == "src" and "src" or "main", q(tbl)))
  if #rows == 0 then return nil end
  local out = { list = {} }
  for _, r in ipairs(rows) do
    out[r.name] = r
    out.list[#out.list + 1] = r.name
  end
  return out
end

-- The source's schema version, or nil when it has no schema_version table.
function M.merge_source_version(db)
  if not rows_of(db, "SELECT name FROM src.sqlite_master WHERE type = 'table' AND name = 'schema_version'")[1] then
    return nil
  end
  return rows_of(db, "SELECT max(version) AS v FROM src.schema_version")[1].v or 0
end

-- The source's tables, SQLite's own left out, by name.
function M.merge_source_tables(db)
  local out = {}
  for i, r in ipairs(rows_of(db, [[SELECT name FROM src.sqlite_master WHERE type = 'table'
      AND substr(name, 1, 7) <> 'sqlite_' ORDER BY name]])) do out[i] = r.name end
  return out
end

-- Creates in the output a table (and its indexes) that only the source has.
function M.merge_create_table(db, tbl)
  for _, r in ipairs(rows_of(db, [[SELECT type, sql FROM src.sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL
      ORDER BY type = 'index', rowid]], tbl)) do
    exec(db, r.sql)
  end
end

-- An empty temp.merge_map, for one source.
function M.merge_begin(db)
  exec(db, [[CREATE TEMP TABLE IF NOT EXISTS merge_map(tbl TEXT NOT NULL, old INTEGER NOT NULL, new INTEGER,
    state TEXT NOT NULL, PRIMARY KEY (tbl, old)); DELETE FROM temp.merge_map;]])
end

-- A source column's value, or the output's id for a reference.
local function src_expr(spec, col, alias)
  local to = spec.refs and spec.refs[col]
  if to then
    return ("(SELECT new FROM temp.merge_map WHERE tbl = '%s' AND old = %s.%s)"):format(to, alias, q(col))
  end
  return alias .. "." .. q(col)
end

-- "m.k IS <source k>" over the key columns.
local function key_match(spec, keys, m, s)
  local parts = {}
  for _, c in ipairs(keys) do parts[#parts + 1] = ("%s.%s IS %s"):format(m, q(c), src_expr(spec, c, s)) end
  return table.concat(parts, " AND ")
end

-- A column as compared: without the JSON fields spec.ignore names for it.
local function compared(spec, col, expr)
  for _, field in ipairs(spec.ignore and spec.ignore[col] or {}) do
    assert(field:match("^[%a_][%w_]*$"), "merge: a JSON field to ignore is a name")
    expr = ("json_remove(%s, '$.%s')"):format(expr, field)
  end
  return expr
end

local function all_same(spec, list, common)
  local parts = {}
  for _, c in ipairs(list or {}) do
    if common[c] then
      parts[#parts + 1] = compared(spec, c, "m." .. q(c)) .. " IS " .. compared(spec, c, src_expr(spec, c, "s"))
    end
  end
  return #parts > 0 and table.concat(parts, " AND ") or "1"
end

-- How far a row's work has gone: done (its state is 'done') or present
-- (the column is not NULL) first, then count.
local function progress(spec, a)
  local p = spec.progress or {}
  local first = p.done and ("(%s.%s = 'done')"):format(a, q(p.done))
    or p.present and ("(%s.%s IS NOT NULL)"):format(a, q(p.present)) or "0"
  return p.count and ("%s * 1000000000 + %s.%s"):format(first, a, q(p.count)) or first
end

-- Every source row of spec's table with the output's row of its key (new,
-- or nil), whether their identity (ident) and settled columns agree (1 or
-- 0), and their progress (sp, mp).
function M.merge_pairs(db, spec, common, keys)
  local t = q(spec.name)
  return rows_of(db, ([[SELECT s.rowid AS old, m.rowid AS new, (%s) AS ident, (%s) AS settled,
      %s AS sp, %s AS mp
    FROM src.%s s LEFT JOIN main.%s m
      ON m.rowid = (SELECT m2.rowid FROM main.%s m2 WHERE %s ORDER BY m2.rowid LIMIT 1)]]):format(
    all_same(spec, spec.identity, common), all_same(spec, spec.settled, common), progress(spec, "s"),
    progress(spec, "m"), t, t, t, key_match(spec, keys, "m2", "s")))
end

-- Records the decision for a source row (a later one replaces its state).
function M.merge_mark(db, tbl, old, new, state)
  rows_of(db, [[INSERT INTO temp.merge_map(tbl, old, new, state) VALUES (?, ?, ?, ?)
    ON CONFLICT(tbl, old) DO UPDATE SET state = excluded.state]], tbl, old, new, state)
end

-- How many source rows have a reference in col that the source cannot
-- resolve (it would be stored as NULL).
function M.merge_unresolved(db, spec, col)
  return rows_of(db, ("SELECT count(*) AS n FROM src.%s s WHERE s.%s IS NOT NULL AND %s IS NULL"):format(
    q(spec.name), q(col), src_expr(spec, col, "s")))[1].n
end

-- The rows {old, new} of spec's table, found the same or newer, whose owned
-- rows of child disagree with the output's on child's identity.
function M.merge_owned_disagreements(db, spec, child, ccommon)
  return rows_of(db, ([[SELECT DISTINCT p.old, p.new FROM src.%s s
      JOIN temp.merge_map p ON p.tbl = '%s' AND p.old = s.%s AND p.state IN ('same', 'newer')
      JOIN main.%s m ON %s WHERE NOT (%s)]]):format(q(child.name), spec.name, q(child.owner), q(child.name),
    key_match(child, child.key, "m", "s"), all_same(child, child.identity, ccommon)))
end

-- The columns cols of the output's row new and the source's row old, as
-- compared: {{output =, source =}, ...}.
function M.merge_compare(db, spec, cols, old, new)
  local sel = {}
  for i, c in ipairs(cols) do
    sel[i] = ("%s AS m%d, %s AS s%d"):format(compared(spec, c, "m." .. q(c)), i, compared(spec, c,
      src_expr(spec, c, "s")), i)
  end
  local row = rows_of(db, ("SELECT %s FROM src.%s s, main.%s m WHERE s.rowid = ? AND m.rowid = ?"):format(
    table.concat(sel, ", "), q(spec.name), q(spec.name)), old, new)[1]
  local out = {}
  for i in ipairs(cols) do out[i] = { output = row["m" .. i], source = row["s" .. i] } end
  return out
end

-- The columns cols of the source's row of tbl, by name; nil and SQLite's
-- message on a failure.
function M.merge_source_row(db, tbl, cols, rowid)
  if #cols == 0 then return {} end
  local sel = {}
  for i, c in ipairs(cols) do sel[i] = "s." .. q(c) end
  local rows, err = db:query(("SELECT %s FROM src.%s s WHERE s.rowid = ?"):format(table.concat(sel, ", "), q(tbl)),
    rowid)
  if not rows then return nil, err end
  return rows[1] or {}
end

-- {state = count} of the decisions on tbl's rows.
function M.merge_counts(db, tbl)
  local out = {}
  for _, r in ipairs(rows_of(db, "SELECT state, count(*) AS n FROM temp.merge_map WHERE tbl = ? GROUP BY state",
      tbl)) do
    out[r.state] = r.n
  end
  return out
end

-- The source rows of an owned table whose owner is added or replaced.
local function owned_rows(spec)
  return ("s.%s IN (SELECT old FROM temp.merge_map WHERE tbl = '%s' AND state IN ('new', 'newer'))"):format(
    q(spec.owner), spec.refs[spec.owner])
end

-- Of an owned table: the source rows copied with their owner, and all.
function M.merge_owned_counts(db, spec)
  local t = q(spec.name)
  return rows_of(db, ("SELECT count(*) AS n FROM src.%s s WHERE %s"):format(t, owned_rows(spec)))[1].n,
    rows_of(db, ("SELECT count(*) AS n FROM src.%s"):format(t))[1].n
end

-- Inserts the source rows (ids) one by one: nil, the row and SQLite's
-- message for the first one the output refuses.
local function insert_rows(db, insert, ids)
  for _, id in ipairs(ids) do
    local ok, err = db:query(insert .. " WHERE s.rowid = ?", id)
    if not ok then return nil, id, err end
  end
  return true
end

-- Copies into the output the source rows the decisions call for: a new row
-- is added (and its output id recorded), a newer one replaces the output's
-- (the rows owned by it in the tables owned go first); an owned table's
-- rows go with their owner. true, or nil, the source row the output
-- refuses (a constraint, a trigger) and SQLite's message.
function M.merge_copy(db, spec, common, keys, owned)
  local cols, exprs, upd = {}, {}, {}
  local is_key = {}
  for _, c in ipairs(keys) do is_key[c] = true end
  for _, c in ipairs(common.list) do
    -- An INTEGER PRIMARY KEY is the rowid: the output numbers its own rows.
    if not (common.integer_pk and common.pk[c] > 0) then
      cols[#cols + 1], exprs[#exprs + 1] = q(c), src_expr(spec, c, "s")
      if not is_key[c] then upd[#upd + 1] = c end
    end
  end
  local select = ("SELECT %s FROM src.%s s"):format(table.concat(exprs, ", "), q(spec.name))
  local insert = ("INSERT INTO main.%s (%s) "):format(q(spec.name), table.concat(cols, ", ")) .. select
  if spec.owner then
    if db:query(insert .. " WHERE " .. owned_rows(spec) .. " ORDER BY s.rowid") then return true end
    -- One at a time, to name the row the output refuses.
    local ids = {}
    for i, r in ipairs(rows_of(db, ("SELECT s.rowid AS id FROM src.%s s WHERE %s ORDER BY s.rowid"):format(
        q(spec.name), owned_rows(spec)))) do ids[i] = r.id end
    return insert_rows(db, insert, ids)
  end
  local upd_cols, upd_exprs = {}, {}
  for i, c in ipairs(upd) do upd_cols[i], upd_exprs[i] = q(c), src_expr(spec, c, "s") end
  local update = ("UPDATE main.%s SET (%s) = (SELECT %s FROM src.%s s WHERE s.rowid = ?) WHERE rowid = ?"):format(
    q(spec.name), table.concat(upd_cols, ", "), table.concat(upd_exprs, ", "), q(spec.name))
  for _, r in ipairs(rows_of(db, [[SELECT old, new, state FROM temp.merge_map
      WHERE tbl = ? AND state IN ('new', 'newer') ORDER BY old]], spec.name)) do
    if r.state == "new" then
      local ok, id, err = insert_rows(db, insert, { r.old })
      if not ok then return nil, id, err end
      rows_of(db, "UPDATE temp.merge_map SET new = last_insert_rowid() WHERE tbl = ? AND old = ?", spec.name, r.old)
    else
      for _, child in ipairs(owned) do
        rows_of(db, ("DELETE FROM main.%s WHERE %s = ?"):format(q(child.name), q(child.owner)), r.new)
      end
      if #upd > 0 then rows_of(db, update, r.old, r.new) end
    end
  end
  return true
end

-- An experiment both stores hold: the output's klab builds ($.klab of its
-- config), then the source's it lacks, in their order.
function M.merge_union_builds(db)
  exec(db, [[UPDATE main.experiments AS m SET config = json_set(m.config, '$.klab', json((
      SELECT json_group_array(value) FROM (
        SELECT value, 0 AS o, CAST(key AS INTEGER) AS k FROM json_each(m.config, '$.klab')
        UNION ALL
        SELECT value, 1, CAST(key AS INTEGER) FROM json_each(s.config, '$.klab')
        WHERE value NOT IN (SELECT value FROM json_each(m.config, '$.klab'))
        ORDER BY o, k))))
    FROM src.experiments AS s
    WHERE s.name = m.name AND json_valid(m.config) AND json_valid(s.config)
      AND json_type(s.config, '$.klab') = 'array'
      AND EXISTS (SELECT 1 FROM json_each(s.config, '$.klab')
                  WHERE value NOT IN (SELECT value FROM json_each(m.config, '$.klab')))]])
end


-- One line for the user from klab.store.open's message about path: what
-- is wrong with the file, in the user's terms, with SQLite's own words.
local function problem(path, err)
  err = tostring(err)
  local said = err:match(": ([^:]-) %(SQLITE_[%u_]+%)") or err:gsub("^store: ", "")
  if err:find("SQLITE_NOTADB", 1, true) then
    return ("%s is not a klab store (SQLite says: %s)"):format(path, said)
  end
  if err:find("SQLITE_CANTOPEN", 1, true) or err:find("SQLITE_PERM", 1, true) then
    return ("cannot open the store %s (SQLite says: %s); check that the file and its folder exist and can be read")
      :format(path, said)
  end
  return (err:gsub("^store: ", ""))
end

-- open(path [, {readonly = true, make_folder = true}]) -> db | nil, line,
-- code: the store at path, or a line for the user that names the file and
-- what is wrong, and a short code: ENOENT when a read-only open finds no
-- file, EINVAL when the file is not a klab store, else klab.store's code.
-- make_folder: the file's folder is made when missing (results/sweep.db on
-- a fresh checkout).
function M.open(path, opts)
  opts = opts or {}
  if opts.make_folder then
    local dir = path:match("^(.*)/[^/]+$")
    if dir and dir ~= "" then
      local ok, why = require("klab.sys").mkdir(dir)
      if not ok then return nil, ("cannot make the folder of %s: %s"):format(path, why), "EIO" end
    end
  end
  local kind = require("klab.fs").type(path)
  if kind == "dir" then return nil, ("%s is a folder, not a store file"):format(path), "EINVAL" end
  if opts.readonly and kind == nil then return nil, ("no such store file: %s"):format(path), "ENOENT" end
  local db, err, code = require("klab.store").open(path, opts)
  if db then return db end
  local line = problem(path, err)
  if tostring(err):find("SQLITE_NOTADB", 1, true) or tostring(err):find("not a klab store", 1, true) then
    code = "EINVAL"
  end
  return nil, line, code
end


return M
