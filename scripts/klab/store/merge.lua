-- klab.store.merge: several stores into one (`klab merge OUT.db SHARD.db...`),
-- for the shards of a sweep run as separate processes (docs/slurm.md).
--
--   local merge = require "klab.store.merge"
--   local db <close> = assert(require("klab.store.records").open("results/sweep.db"))
--   local report = merge.merge(db, "results/shard-0-of-4.db")
--
-- Every row of a source ends up in the output once. A row is recognised by
-- its table's key (the store's schema), never by its id: ids are
-- remapped, and every reference to them follows. For a key already in the output:
--   same      the stored row stays (merging a source twice changes nothing);
--   newer     the source's row has gone further (an evaluation finished, a
--             trajectory with more turns, a response where the output has a
--             failed call) and replaces it, with its owned rows;
--   conflict  the same key with different content: the output's row stays,
--             and the conflict is reported with the columns that differ.
-- An experiment of the same name with another config refuses the whole
-- source (its rows would mix two sweeps). Each source merges in one
-- transaction: all of it or nothing.
--
-- The store's schema is the one place that knows the tables: a table in a
-- source that it does not name refuses the source, so nothing is dropped
-- silently. A table missing from the output is created from the source's
-- definition.

local store = require "klab.store"
local json = require "klab.json"

local M = {}

-- The tables, their order (each after those it references), their keys
-- and references are the store's schema (host/store/tables.c, read through
-- klab.store.records.schema()):
--   key       columns that identify a row across stores (a table without
--             one, environments, is matched on every column but the id:
--             each row is one run's provenance, kept as its own row);
--   refs      column -> table it references (remapped to the output's ids).
-- What a merge does beyond that is said here, per table (POLICY):
--   identity  columns that must agree for the same key (else a conflict);
--   progress  SQL over the row ("$." is the row) that grows as the work
--             behind it goes on; a higher value replaces a lower one;
--   settled   columns that must agree when both rows are as far along;
--   owner     the ref column of an owned table: its rows are part of the
--             row they point to, copied with it when it is added or
--             replaced, and never mixed from two stores;
--   strict    a conflict refuses the whole source.
-- A table the schema gains merges by its key with no policy until it gets one.
local POLICY = {
  verdicts = { identity = { "rank", "short", "stage", "class", "means" } },
  candidates = { identity = { "language", "code", "plan" } },
  compiles = { identity = { "candidate_id", "arch", "ok" } },
  evaluations = { identity = { "candidate_id", "task", "arch", "replica" }, progress = "($.state = 'done')",
    settled = { "verdict" } },
  measurements = { owner = "evaluation_id" },
  responses = { identity = { "request" }, progress = "($.response IS NOT NULL)", settled = { "response" } },
  -- The klab builds that made an experiment's turns ($.klab) are not its
  -- identity: shards run by two builds merge, and the output lists both.
  experiments = { identity = { "config" }, strict = true, compare = { config = "json_remove(%s, '$.klab')" },
    after = "union_builds" },
  trajectories = { identity = { "experiment_id", "model", "task", "tag", "replica", "messages" },
    progress = "($.state = 'done') * 1000000000 + $.turns" },
  turns = { owner = "trajectory_id", identity = { "request_hash", "candidate", "verdict", "reply" } },
}

-- M.TABLES: the tables merged, in order, each a spec with the fields above;
-- M.OWN: the tables each store has of its own, never merged.
M.TABLES, M.OWN = {}, {}
for _, t in ipairs(require("klab.store.records").schema().tables) do
  if t.per_store then
    M.OWN[t.name] = true
  else
    local spec = { name = t.name, key = t.key or "*" }
    for _, c in ipairs(t.columns) do
      if c.references then
        spec.refs = spec.refs or {}
        spec.refs[c.name] = c.references
      end
    end
    for k, v in pairs(POLICY[t.name] or {}) do spec[k] = v end
    M.TABLES[#M.TABLES + 1] = spec
  end
end

local function q(name) return '"' .. name:gsub('"', '""') .. '"' end

-- db:query, db:first and db:exec that raise on a failure (a constraint, a
-- busy or unreadable store) instead of returning it: a merge either
-- completes or, its transaction rolled back, writes nothing.
local function rows_of(db, text, ...)
  local rows, err = db:query(text, ...)
  if not rows then error(tostring(err), 0) end
  return rows
end
local function first(db, text, ...) return rows_of(db, text, ...)[1] end
local function exec(db, text)
  local ok, err = db:exec(text)
  if not ok then error(tostring(err), 0) end
end

local function by_name()
  local t = {}
  for _, spec in ipairs(M.TABLES) do t[spec.name] = spec end
  return t
end

-- {name = {name=, pk=}, list = {...}} of schema.table, or nil when absent.
local function columns(db, schema, tbl)
  local rows = rows_of(db, ("PRAGMA %s.table_info(%s)"):format(schema, q(tbl)))
  if #rows == 0 then return nil end
  local out = { list = {} }
  for _, r in ipairs(rows) do
    out[r.name] = r
    out.list[#out.list + 1] = r.name
  end
  return out
end

-- The file a schema of db is, for telling a source from the output.
local function file_of(db, schema)
  for _, r in ipairs(rows_of(db, "PRAGMA database_list")) do
    if r.name == schema then return r.file end
  end
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

-- SQL for a source column: its value, or the output's id for a reference.
local function src_expr(spec, col, alias)
  local to = spec.refs and spec.refs[col]
  if to then
    return ("(SELECT new FROM temp.merge_map WHERE tbl = '%s' AND old = %s.%s)"):format(to, alias, q(col))
  end
  return alias .. "." .. q(col)
end

local function key_cols(spec, common)
  if spec.key ~= "*" then return spec.key end
  local out = {}
  for _, c in ipairs(common.list) do if common.pk[c] == 0 then out[#out + 1] = c end end
  return out
end

-- "m.k IS <source k>" over the key columns present in both.
local function key_match(spec, keys, m, s)
  local parts = {}
  for _, c in ipairs(keys) do parts[#parts + 1] = ("%s.%s IS %s"):format(m, q(c), src_expr(spec, c, s)) end
  return table.concat(parts, " AND ")
end

local function all_same(spec, list, common)
  local parts = {}
  for _, c in ipairs(list or {}) do
    if common[c] then
      local f = spec.compare and spec.compare[c] or "%s"
      parts[#parts + 1] = (f .. " IS " .. f):format("m." .. q(c), src_expr(spec, c, "s"))
    end
  end
  return #parts > 0 and table.concat(parts, " AND ") or "1"
end

local function progress(spec, alias)
  return spec.progress and spec.progress:gsub("%$%.", alias .. ".") or "0"
end

-- A short text of a value for a conflict message.
local function show(v)
  if v == nil then return "NULL" end
  local s = tostring(v):gsub("%s+", " ")
  if #s > 40 then s = s:sub(1, 37) .. "..." end
  return s
end

-- The top-level fields two JSON texts disagree on ("replicas: 2 vs 3").
local function json_diff(a, b)
  local ok1, x = pcall(json.decode, a or "null")
  local ok2, y = pcall(json.decode, b or "null")
  if not (ok1 and ok2 and type(x) == "table" and type(y) == "table") then return show(a) .. " vs " .. show(b) end
  local keys, seen = {}, {}
  for k in pairs(x) do keys[#keys + 1], seen[k] = k, true end
  for k in pairs(y) do if not seen[k] then keys[#keys + 1] = k end end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do
    -- klab.json sorts object keys: equal values give equal text.
    local ea, eb = x[k] ~= nil and json.encode(x[k]) or "absent", y[k] ~= nil and json.encode(y[k]) or "absent"
    if ea ~= eb then out[#out + 1] = ("%s: %s vs %s"):format(k, show(ea), show(eb)) end
  end
  return table.concat(out, "; ")
end

-- What differs between the output's row and the source's, for a message.
local function differences(db, spec, common, old, new)
  local cols = {}
  for _, list in ipairs { spec.identity or {}, spec.settled or {} } do
    for _, c in ipairs(list) do if common[c] then cols[#cols + 1] = c end end
  end
  local sel = {}
  for i, c in ipairs(cols) do
    local f = spec.compare and spec.compare[c] or "%s"
    sel[#sel + 1] = (f .. " AS m%d, " .. f .. " AS s%d"):format("m." .. q(c), i, src_expr(spec, c, "s"), i)
  end
  if #sel == 0 then return "" end
  local row = first(db, ("SELECT %s FROM src.%s s, main.%s m WHERE s.rowid = ? AND m.rowid = ?"):format(
    table.concat(sel, ", "), q(spec.name), q(spec.name)), old, new)
  local out = {}
  for i, c in ipairs(cols) do
    local a, b = row["m" .. i], row["s" .. i]
    if a ~= b then
      out[#out + 1] = c == "config" and ("config (%s)"):format(json_diff(a, b))
        or ("%s (output %s, source %s)"):format(c, show(a), show(b))
    end
  end
  return table.concat(out, ", ")
end

local function key_text(db, spec, keys, old)
  local sel = {}
  for i, c in ipairs(keys) do sel[i] = ("s.%s AS k%d"):format(q(c), i) end
  local row = first(db, ("SELECT %s FROM src.%s s WHERE s.rowid = ?"):format(table.concat(sel, ", "), q(spec.name)), old)
  local parts = {}
  for i, c in ipairs(keys) do parts[#parts + 1] = c .. "=" .. show(row["k" .. i]) end
  return table.concat(parts, " ")
end

-- Decides every source row of spec's table: new, same, newer or conflict
-- (in temp.merge_map), counting into st and adding conflict messages.
local function decide(db, spec, common, keys, st, report)
  local sql = ([[SELECT s.rowid AS old, m.rowid AS new, (%s) AS ident, (%s) AS settled,
      %s AS sp, %s AS mp
    FROM src.%s s LEFT JOIN main.%s m
      ON m.rowid = (SELECT m2.rowid FROM main.%s m2 WHERE %s ORDER BY m2.rowid LIMIT 1)]]):format(
    all_same(spec, spec.identity, common), all_same(spec, spec.settled, common), progress(spec, "s"), progress(spec, "m"),
    q(spec.name), q(spec.name), q(spec.name), key_match(spec, keys, "m2", "s"))
  local conflicts = {}
  for _, r in ipairs(rows_of(db, sql)) do
    local state
    if not r.new then state = "new"
    elseif r.ident ~= 1 then state = "conflict"
    elseif r.sp > r.mp then state = "newer"
    elseif r.sp < r.mp or r.settled == 1 then state = "same"
    else state = "conflict" end
    rows_of(db, "INSERT INTO temp.merge_map(tbl, old, new, state) VALUES (?, ?, ?, ?)", spec.name, r.old, r.new, state)
    if state == "conflict" then conflicts[#conflicts + 1] = r end
  end
  -- A reference the source cannot resolve would be stored as NULL: refuse.
  for col, to in pairs(spec.refs or {}) do
    if common[col] then
      local n = first(db, ("SELECT count(*) AS n FROM src.%s s WHERE s.%s IS NOT NULL AND %s IS NULL"):format(
        q(spec.name), q(col), src_expr(spec, col, "s"))).n
      if n > 0 then error(("%d rows of %s point to %s rows that the source does not have"):format(n, spec.name, to), 0) end
    end
  end
  -- An owned row that disagrees makes its owner a conflict: the two stores
  -- did different work under one key, and neither replaces the other.
  for _, child in ipairs(M.TABLES) do
    if child.owner and child.refs[child.owner] == spec.name and child.identity then
      local ccols = columns(db, "src", child.name)
      local mcols = columns(db, "main", child.name)
      if ccols and mcols then
        local ccommon = {}
        for _, c in ipairs(ccols.list) do if mcols[c] then ccommon[c] = true end end
        local bad = rows_of(db, ([[SELECT DISTINCT p.old, p.new FROM src.%s s
            JOIN temp.merge_map p ON p.tbl = '%s' AND p.old = s.%s AND p.state IN ('same', 'newer')
            JOIN main.%s m ON %s WHERE NOT (%s)]]):format(q(child.name), spec.name, q(child.owner), q(child.name),
          key_match(child, child.key, "m", "s"), all_same(child, child.identity, ccommon)))
        for _, r in ipairs(bad) do
          rows_of(db, "UPDATE temp.merge_map SET state = 'conflict' WHERE tbl = ? AND old = ?", spec.name, r.old)
          conflicts[#conflicts + 1] = { old = r.old, new = r.new, child = child.name }
        end
      end
    end
  end
  for _, r in ipairs(conflicts) do
    local why = r.child and ("its %s differ"):format(r.child) or differences(db, spec, common, r.old, r.new)
    local msg = ("%s %s: %s"):format(spec.name, key_text(db, spec, keys, r.old), why)
    if spec.strict then error(msg .. "; not merged (a store holds one config per experiment name)", 0) end
    report.conflicts[#report.conflicts + 1] = msg .. "; the output's row is kept"
  end
  for _, r in ipairs(rows_of(db, "SELECT state, count(*) AS n FROM temp.merge_map WHERE tbl = ? GROUP BY state", spec.name)) do
    st[r.state] = r.n
  end
end

-- Creates in the output a table (and its indexes) that only the source has.
local function create_from_source(db, tbl)
  for _, r in ipairs(rows_of(db, [[SELECT type, sql FROM src.sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL
      ORDER BY type = 'index', rowid]], tbl)) do
    exec(db, r.sql)
  end
end

-- SQL: the source rows of an owned table whose owner is added or replaced.
local function owned_rows(spec)
  return ("s.%s IN (SELECT old FROM temp.merge_map WHERE tbl = '%s' AND state IN ('new', 'newer'))"):format(
    q(spec.owner), spec.refs[spec.owner])
end

-- A source row the output refuses (a constraint, a trigger), as one line
-- naming the table, the row and its key, and SQLite's reason without the
-- statement.
local function refused_row(db, spec, rowid, err)
  local cols = {}
  for i, c in ipairs(type(spec.key) == "table" and spec.key or {}) do cols[i] = "s." .. q(c) end
  local r = #cols > 0 and db:query(("SELECT %s FROM src.%s s WHERE s.rowid = ?"):format(table.concat(cols, ", "),
    q(spec.name)), rowid)
  local key = {}
  for i, c in ipairs(#cols > 0 and spec.key or {}) do
    local v = tostring(r and r[1] and r[1][c])
    key[i] = c .. " " .. (#v > 40 and v:sub(1, 40) .. "..." or v)
  end
  local why = tostring(err):gsub("^store: %w+: ", ""):gsub(" %(SQLITE_[%w_]+%) in: .*$", "")
  return ("%s row %d%s is refused by the output store: %s"):format(spec.name, rowid,
    #key > 0 and " (" .. table.concat(key, ", ") .. ")" or "", why)
end

-- Inserts the source rows (ids) one by one; a refused one raises its line.
local function insert_rows(db, spec, insert, ids)
  for _, id in ipairs(ids) do
    local ok, err = db:query(insert .. " WHERE s.rowid = ?", id)
    if not ok then error(refused_row(db, spec, id, err), 0) end
  end
end

-- Copies the source rows the decisions call for into the output. owned:
-- the tables owned by spec's (their rows go when an owner is replaced).
local function apply(db, spec, common, keys, owned)
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
    if not db:query(insert .. " WHERE " .. owned_rows(spec) .. " ORDER BY s.rowid") then
      -- One at a time, to name the row the output refuses.
      local ids = {}
      for i, r in ipairs(rows_of(db, ("SELECT s.rowid AS id FROM src.%s s WHERE %s ORDER BY s.rowid"):format(
          q(spec.name), owned_rows(spec)))) do ids[i] = r.id end
      insert_rows(db, spec, insert, ids)
    end
    return
  end
  local upd_cols, upd_exprs = {}, {}
  for i, c in ipairs(upd) do upd_cols[i], upd_exprs[i] = q(c), src_expr(spec, c, "s") end
  local update = ("UPDATE main.%s SET (%s) = (SELECT %s FROM src.%s s WHERE s.rowid = ?) WHERE rowid = ?"):format(
    q(spec.name), table.concat(upd_cols, ", "), table.concat(upd_exprs, ", "), q(spec.name))
  for _, r in ipairs(rows_of(db, [[SELECT old, new, state FROM temp.merge_map WHERE tbl = ? AND state IN ('new', 'newer')
      ORDER BY old]], spec.name)) do
    if r.state == "new" then
      insert_rows(db, spec, insert, { r.old })
      rows_of(db, "UPDATE temp.merge_map SET new = last_insert_rowid() WHERE tbl = ? AND old = ?", spec.name, r.old)
    else
      for _, child in ipairs(owned) do
        rows_of(db, ("DELETE FROM main.%s WHERE %s = ?"):format(q(child.name), q(child.owner)), r.new)
      end
      if #upd > 0 then rows_of(db, update, r.old, r.new) end
    end
  end
end

-- The columns a table has in both stores: {list = {...}, name = true,
-- pk = {name = position in the output's primary key}, integer_pk}.
local function common_columns(scols, mcols)
  local common = { list = {}, pk = {} }
  local pks = 0
  for _, c in ipairs(mcols.list) do if mcols[c].pk > 0 then pks = pks + 1 end end
  for _, c in ipairs(scols.list) do
    if mcols[c] then
      common.list[#common.list + 1], common[c], common.pk[c] = c, true, mcols[c].pk
      if mcols[c].pk > 0 and pks == 1 and mcols[c].type:upper() == "INTEGER" then common.integer_pk = true end
    end
  end
  return common
end

-- Merges one table of the attached source; adds its counts to report.
-- What a table needs once its rows are merged (spec.after names one).
local AFTER = {
  -- An experiment both stores hold: the output's builds, then the source's
  -- it lacks, in their order.
  union_builds = function(db)
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
  end,
}

local function merge_table(db, spec, report)
  local scols = columns(db, "src", spec.name)
  if not scols then return end
  if not columns(db, "main", spec.name) then create_from_source(db, spec.name) end
  local common = common_columns(scols, columns(db, "main", spec.name))
  local keys = key_cols(spec, common)
  local st = { new = 0, same = 0, newer = 0, conflict = 0 }
  if not spec.owner then decide(db, spec, common, keys, st, report) end
  local owned = {}
  for _, child in ipairs(M.TABLES) do
    if child.owner and child.refs[child.owner] == spec.name and columns(db, "main", child.name) then
      owned[#owned + 1] = child
    end
  end
  apply(db, spec, common, keys, owned)
  if spec.after then AFTER[spec.after](db) end
  if spec.owner then
    st.new = first(db, ("SELECT count(*) AS n FROM src.%s s WHERE %s"):format(q(spec.name), owned_rows(spec))).n
    st.same = first(db, ("SELECT count(*) AS n FROM src.%s"):format(q(spec.name))).n - st.new
  end
  report.tables[#report.tables + 1] = { name = spec.name, added = st.new, same = st.same, newer = st.newer,
    conflicts = st.conflict }
end

local function check_source(db, path)
  local ver = first(db, "SELECT name FROM src.sqlite_master WHERE type = 'table' AND name = 'schema_version'")
  if not ver then error(path .. " is not a klab store (no schema_version table)", 0) end
  local v = first(db, "SELECT max(version) AS v FROM src.schema_version").v or 0
  if v > store.SCHEMA_VERSION then
    error(("%s has schema version %d, newer than this klab's %d"):format(path, v, store.SCHEMA_VERSION), 0)
  end
  -- The whole schema, as klab writes it (the store's owner compares it):
  -- a view in place of a table, a trigger, a generated column or an index
  -- on an expression of someone else's is no shard of a sweep.
  local good, why = db:check_schema("src")
  if not good then error((tostring(why):gsub("^store: ", "")), 0) end
  local known = by_name()
  local unknown = {}
  for _, r in ipairs(rows_of(db, [[SELECT name FROM src.sqlite_master WHERE type = 'table'
      AND substr(name, 1, 7) <> 'sqlite_' ORDER BY name]])) do
    if not known[r.name] and not M.OWN[r.name] then unknown[#unknown + 1] = r.name end
  end
  if #unknown > 0 then
    error(("%s has tables that klab merge does not know (%s): it would drop them"):format(path,
      table.concat(unknown, ", ")), 0)
  end
end

-- Merges the store at path into the open store db. Returns a report
-- {source = path, tables = {{name=, added=, same=, newer=, conflicts=}, ...},
-- conflicts = {message, ...}}; raises (having written nothing) when the
-- source cannot be merged, saying why.
function M.merge(db, path)
  if db:in_transaction() then error("merge: the output store has a transaction open", 2) end
  local f = io.open(path, "rb")
  if not f then error(path .. ": no such file", 0) end
  f:close()
  local attached, err = db:query("ATTACH DATABASE ? AS src", source_uri(path))
  if not attached then error(("%s cannot be read: %s"):format(path, tostring(err)), 0) end
  local ok, res = pcall(function()
    local out_file, src_file = file_of(db, "main"), file_of(db, "src")
    if out_file and out_file ~= "" and out_file == src_file then error(path .. " is the output store itself", 0) end
    check_source(db, path)
    return db:transaction(function()
      exec(db, [[CREATE TEMP TABLE IF NOT EXISTS merge_map(tbl TEXT NOT NULL, old INTEGER NOT NULL, new INTEGER,
        state TEXT NOT NULL, PRIMARY KEY (tbl, old)); DELETE FROM temp.merge_map;]])
      local report = { source = path, tables = {}, conflicts = {} }
      for _, spec in ipairs(M.TABLES) do merge_table(db, spec, report) end
      return report
    end)
  end)
  rows_of(db, "DETACH DATABASE src")
  if not ok then error(res, 0) end
  return res
end

-- One line per source: "shard0.db: environments +1, candidates +5 (2 there), ...".
function M.summary(report)
  local parts = {}
  for _, t in ipairs(report.tables) do
    local p = ("%s +%d"):format(t.name, t.added)
    local extra = {}
    if t.same > 0 then extra[#extra + 1] = t.same .. " there" end
    if t.newer > 0 then extra[#extra + 1] = t.newer .. " newer" end
    if t.conflicts > 0 then extra[#extra + 1] = t.conflicts .. " in conflict" end
    if #extra > 0 then p = p .. " (" .. table.concat(extra, ", ") .. ")" end
    parts[#parts + 1] = p
  end
  return report.source .. ": " .. table.concat(parts, ", ")
end

return M
