-- klab.store.records: the one owner of the store's records. Every SQL
-- statement klab's library runs is in scripts/klab/store/: this module's
-- typed reads and writes (experiments, trajectories, turns, reports,
-- exports, the verdict list), and klab.store.merge's store-to-store copy.
-- The schema itself (tables, indexes, klab's triggers, versions) is
-- host/store's, described once in host/store/tables.c; M.schema() is that
-- description, which merge and the typed reads here take their tables,
-- keys, references and column types from.
--
--   records.open(path [, {readonly=, make_folder=}]) -> db | nil, line, code
--
-- A store can be made or damaged by someone else: host/store refuses one
-- whose klab tables are not tables, caps what it reads and runs with
-- trusted_schema off; the readers here check the types of the columns they
-- hand on (a NULL task name, a number where text belongs) and decode JSON
-- columns carefully. Whatever is wrong is a klab.errors mistake whose one
-- line names the store, the table and what is wrong.

local errors = require "klab.errors"
local json = require "klab.json"

local M = {}

-- ---- reading safely -----------------------------------------------------

local function where(db) return db and db.path and db:path() or "the store" end

local function bad(db, fmt, ...)
  errors.raise("mistake", ("store %s: " .. fmt):format(where(db), ...))
end

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

-- Checks the columns of rows of table tbl: kinds = {col = "string" | "integer"
-- | "number", ...}, a kind ending in "?" allowing NULL. Raises a mistake.
local KIND_OK = {
  string = function(v) return type(v) == "string" end,
  integer = function(v) return math.type(v) == "integer" end,
  number = function(v) return type(v) == "number" end,
}
-- The store's tables as host/store describes them (klab.store.schema()),
-- each also under its name, and each column under its name in its table's
-- columns. Read-only: one copy for the process.
local SCHEMA
function M.schema()
  if not SCHEMA then
    SCHEMA = require("klab.store").schema()
    for _, t in ipairs(SCHEMA.tables) do
      SCHEMA.tables[t.name] = t
      for _, c in ipairs(t.columns) do t.columns[c.name] = c end
    end
  end
  return SCHEMA
end

local KIND_OF_TYPE = { INTEGER = "integer", REAL = "number", TEXT = "string", BLOB = "string" }

-- The kinds `checked` takes for the columns cols ("id name config") of
-- table tbl, from the schema: a column that may be NULL allows nil. extra:
-- kinds of computed columns a read adds ({experiment = "string"}).
local function kinds(tbl, cols, extra)
  local t = M.schema().tables[tbl]
  local out = {}
  for name in cols:gmatch("[%w_]+") do
    local c = t.columns[name] or error(("records: the store's table %s has no column %s"):format(tbl, name), 2)
    out[name] = KIND_OF_TYPE[c.type] .. ((c.not_null or c.primary_key) and "" or "?")
  end
  for k, v in pairs(extra or {}) do out[k] = v end
  return out
end
M.kinds = kinds

local function checked(db, tbl, rows, kinds)
  for _, r in ipairs(rows) do
    for col, kind in pairs(kinds) do
      local optional = kind:sub(-1) == "?"
      local k = optional and kind:sub(1, -2) or kind
      local v = r[col]
      if not ((v == nil and optional) or (v ~= nil and KIND_OK[k](v))) then
        bad(db, "table %s has a row (id %s) whose %s is %s, not %s%s; klab did not write it", tbl, tostring(r.id or "?"),
          col, v == nil and "NULL" or (type(v) .. " " .. tostring(v):sub(1, 40)), k == "integer" and "an integer" or
          ("a " .. k), optional and " or NULL" or "")
      end
    end
  end
  return rows
end

-- The value of a JSON column, or nil for NULL; a mistake when it is not JSON.
-- opts: klab.json.decode's ({integers = true}: whole numbers as integers).
function M.decode(db, tbl, col, text, id, opts)
  if text == nil then return nil end
  if type(text) ~= "string" then bad(db, "%s.%s of row %s is %s, not JSON text", tbl, col, tostring(id), type(text)) end
  local ok, v = pcall(json.decode, text, opts)
  if not ok then bad(db, "%s.%s of row %s is not JSON (%s)", tbl, col, tostring(id), tostring(v):sub(1, 80)) end
  return v
end

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
