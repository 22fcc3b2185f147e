-- klab.store.records: the one owner of the store's records. Every SQL
-- statement klab's library runs is here; experiments, reports, exports and
-- merges read and write typed records through it, and it checks what it
-- reads (a store can be made or damaged by someone else).
--
--   records.open(path [, {readonly=, make_folder=}]) -> db | nil, line, code
--
-- The schema itself (tables, indexes, klab's triggers, versions) is
-- host/store's; this module holds the queries.

local M = {}

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
