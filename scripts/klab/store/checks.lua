-- klab.store.checks: what a value read from a store must be. A store can be
-- made or damaged by someone else, so the store's owner (klab.store.records)
-- checks each row it hands on against host/store's description of the
-- columns (a NULL task name, a number where text belongs, JSON that is not
-- JSON) and raises one line that names the store. These are those checks;
-- they hold no SQL (every statement is the owner's: layering_test,
-- sql_lives_in_the_store).

local errors = require "klab.errors"
local json = require "klab.json"

local M = {}

local function where(db) return db and db.path and db:path() or "the store" end

-- Raises a klab.errors mistake: "store PATH: " and the line.
function M.bad(db, fmt, ...)
  errors.raise("mistake", ("store %s: " .. fmt):format(where(db), ...))
end

-- A column's kind: "string" | "integer" | "number", a kind ending in "?"
-- allowing NULL.
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
function M.kinds(tbl, cols, extra)
  local t = M.schema().tables[tbl]
  local out = {}
  for name in cols:gmatch("[%w_]+") do
    local c = t.columns[name] or error(("records: the store's table %s has no column %s"):format(tbl, name), 2)
    out[name] = KIND_OF_TYPE[c.type] .. ((c.not_null or c.primary_key) and "" or "?")
  end
  for k, v in pairs(extra or {}) do out[k] = v end
  return out
end

-- Checks the columns of rows of table tbl against kinds (M.kinds); returns
-- rows, or raises a mistake naming the store, the table, the row and what
-- is wrong.
function M.checked(db, tbl, rows, kinds)
  for _, r in ipairs(rows) do
    for col, kind in pairs(kinds) do
      local optional = kind:sub(-1) == "?"
      local k = optional and kind:sub(1, -2) or kind
      local v = r[col]
      if not ((v == nil and optional) or (v ~= nil and KIND_OK[k](v))) then
        M.bad(db, "table %s has a row (id %s) whose %s is %s, not %s%s; klab did not write it", tbl, tostring(r.id or "?"),
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
  if type(text) ~= "string" then M.bad(db, "%s.%s of row %s is %s, not JSON text", tbl, col, tostring(id), type(text)) end
  local ok, v = pcall(json.decode, text, opts)
  if not ok then M.bad(db, "%s.%s of row %s is not JSON (%s)", tbl, col, tostring(id), tostring(v):sub(1, 80)) end
  return v
end

return M
