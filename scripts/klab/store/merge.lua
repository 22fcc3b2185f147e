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
local records = require "klab.store.records"

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
--   progress  how far the work behind a row has gone, which grows as it
--             goes on; a row further along replaces one behind it:
--             done = col (the row is finished: col is 'done') or
--             present = col (col is not NULL), then count = col;
--   settled   columns that must agree when both rows are as far along;
--   ignore    column -> JSON fields of it that are no part of its identity;
--   owner     the ref column of an owned table: its rows are part of the
--             row they point to, copied with it when it is added or
--             replaced, and never mixed from two stores;
--   strict    a conflict refuses the whole source;
--   after     what the table needs once its rows are merged.
-- A table the schema gains merges by its key with no policy until it gets one.
-- The statements are the store's owner's (klab.store.records, merge_*):
-- this module holds no SQL.
local POLICY = {
  verdicts = { identity = { "rank", "short", "stage", "class", "means" } },
  candidates = { identity = { "language", "code", "plan" } },
  compiles = { identity = { "candidate_id", "arch", "ok" } },
  evaluations = { identity = { "candidate_id", "task", "arch", "replica" }, progress = { done = "state" },
    settled = { "verdict" } },
  measurements = { owner = "evaluation_id" },
  responses = { identity = { "request" }, progress = { present = "response" }, settled = { "response" } },
  -- The klab builds that made an experiment's turns ($.klab) are not its
  -- identity: shards run by two builds merge, and the output lists both.
  experiments = { identity = { "config" }, strict = true, ignore = { config = { "klab" } },
    after = records.merge_union_builds },
  trajectories = { identity = { "experiment_id", "model", "task", "tag", "replica", "messages" },
    progress = { done = "state", count = "turns" } },
  turns = { owner = "trajectory_id", identity = { "request_hash", "candidate", "verdict", "reply" } },
}

-- M.TABLES: the tables merged, in order, each a spec with the fields above;
-- M.OWN: the tables each store has of its own, never merged.
M.TABLES, M.OWN = {}, {}
for _, t in ipairs(records.schema().tables) do
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

local function by_name()
  local t = {}
  for _, spec in ipairs(M.TABLES) do t[spec.name] = spec end
  return t
end

local function key_cols(spec, common)
  if spec.key ~= "*" then return spec.key end
  local out = {}
  for _, c in ipairs(common.list) do if common.pk[c] == 0 then out[#out + 1] = c end end
  return out
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
  if #cols == 0 then return "" end
  local out = {}
  for i, v in ipairs(records.merge_compare(db, spec, cols, old, new)) do
    local c, a, b = cols[i], v.output, v.source
    if a ~= b then
      out[#out + 1] = c == "config" and ("config (%s)"):format(json_diff(a, b))
        or ("%s (output %s, source %s)"):format(c, show(a), show(b))
    end
  end
  return table.concat(out, ", ")
end

local function key_text(db, spec, keys, old)
  local row, err = records.merge_source_row(db, spec.name, keys, old)
  if not row then error(tostring(err), 0) end
  local parts = {}
  for _, c in ipairs(keys) do parts[#parts + 1] = c .. "=" .. show(row[c]) end
  return table.concat(parts, " ")
end

-- An owned row that disagrees makes its owner a conflict: the two stores
-- did different work under one key, and neither replaces the other.
-- Returns the owners in conflict {{old=, new=, child=}, ...}.
local function owned_conflicts(db, spec)
  local out = {}
  for _, child in ipairs(M.TABLES) do
    if child.owner and child.refs[child.owner] == spec.name and child.identity then
      local ccols = records.merge_columns(db, "src", child.name)
      local mcols = records.merge_columns(db, "main", child.name)
      if ccols and mcols then
        local ccommon = {}
        for _, c in ipairs(ccols.list) do if mcols[c] then ccommon[c] = true end end
        for _, r in ipairs(records.merge_owned_disagreements(db, spec, child, ccommon)) do
          records.merge_mark(db, spec.name, r.old, r.new, "conflict")
          out[#out + 1] = { old = r.old, new = r.new, child = child.name }
        end
      end
    end
  end
  return out
end

-- Decides every source row of spec's table: new, same, newer or conflict
-- (recorded by records.merge_mark), counting into st and adding conflict
-- messages.
local function decide(db, spec, common, keys, st, report)
  local conflicts = {}
  for _, r in ipairs(records.merge_pairs(db, spec, common, keys)) do
    local state
    if not r.new then state = "new"
    elseif r.ident ~= 1 then state = "conflict"
    elseif r.sp > r.mp then state = "newer"
    elseif r.sp < r.mp or r.settled == 1 then state = "same"
    else state = "conflict" end
    records.merge_mark(db, spec.name, r.old, r.new, state)
    if state == "conflict" then conflicts[#conflicts + 1] = r end
  end
  -- A reference the source cannot resolve would be stored as NULL: refuse.
  for col, to in pairs(spec.refs or {}) do
    if common[col] then
      local n = records.merge_unresolved(db, spec, col)
      if n > 0 then error(("%d rows of %s point to %s rows that the source does not have"):format(n, spec.name, to), 0) end
    end
  end
  for _, r in ipairs(owned_conflicts(db, spec)) do conflicts[#conflicts + 1] = r end
  for _, r in ipairs(conflicts) do
    local why = r.child and ("its %s differ"):format(r.child) or differences(db, spec, common, r.old, r.new)
    local msg = ("%s %s: %s"):format(spec.name, key_text(db, spec, keys, r.old), why)
    if spec.strict then error(msg .. "; not merged (a store holds one config per experiment name)", 0) end
    report.conflicts[#report.conflicts + 1] = msg .. "; the output's row is kept"
  end
  for state, n in pairs(records.merge_counts(db, spec.name)) do st[state] = n end
end

-- A source row the output refuses (a constraint, a trigger), as one line
-- naming the table, the row and its key, and SQLite's reason without the
-- statement.
local function refused_row(db, spec, rowid, err)
  local cols = type(spec.key) == "table" and spec.key or {}
  local r = records.merge_source_row(db, spec.name, cols, rowid)
  local key = {}
  for i, c in ipairs(cols) do
    local v = tostring(r and r[c])
    key[i] = c .. " " .. (#v > 40 and v:sub(1, 40) .. "..." or v)
  end
  local why = tostring(err):gsub("^store: %w+: ", ""):gsub(" %(SQLITE_[%w_]+%) in: .*$", "")
  return ("%s row %d%s is refused by the output store: %s"):format(spec.name, rowid,
    #key > 0 and " (" .. table.concat(key, ", ") .. ")" or "", why)
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
local function merge_table(db, spec, report)
  local scols = records.merge_columns(db, "src", spec.name)
  if not scols then return end
  if not records.merge_columns(db, "main", spec.name) then records.merge_create_table(db, spec.name) end
  local common = common_columns(scols, records.merge_columns(db, "main", spec.name))
  local keys = key_cols(spec, common)
  local st = { new = 0, same = 0, newer = 0, conflict = 0 }
  if not spec.owner then decide(db, spec, common, keys, st, report) end
  -- The tables owned by this one: their rows go when an owner is replaced.
  local owned = {}
  for _, child in ipairs(M.TABLES) do
    if child.owner and child.refs[child.owner] == spec.name and records.merge_columns(db, "main", child.name) then
      owned[#owned + 1] = child
    end
  end
  local copied, rowid, err = records.merge_copy(db, spec, common, keys, owned)
  if not copied then error(refused_row(db, spec, rowid, err), 0) end
  if spec.after then spec.after(db) end
  if spec.owner then
    local added, all = records.merge_owned_counts(db, spec)
    st.new, st.same = added, all - added
  end
  report.tables[#report.tables + 1] = { name = spec.name, added = st.new, same = st.same, newer = st.newer,
    conflicts = st.conflict }
end

local function check_source(db, path)
  local v = records.merge_source_version(db)
  if not v then error(path .. " is not a klab store (no schema_version table)", 0) end
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
  for _, name in ipairs(records.merge_source_tables(db)) do
    if not known[name] and not M.OWN[name] then unknown[#unknown + 1] = name end
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
  local attached, err = records.merge_attach(db, path)
  if not attached then error(("%s cannot be read: %s"):format(path, tostring(err)), 0) end
  local ok, res = pcall(function()
    local out_file, src_file = records.merge_file(db, "main"), records.merge_file(db, "src")
    if out_file and out_file ~= "" and out_file == src_file then error(path .. " is the output store itself", 0) end
    check_source(db, path)
    return db:transaction(function()
      records.merge_begin(db)
      local report = { source = path, tables = {}, conflicts = {} }
      for _, spec in ipairs(M.TABLES) do merge_table(db, spec, report) end
      return report
    end)
  end)
  records.merge_detach(db)
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
