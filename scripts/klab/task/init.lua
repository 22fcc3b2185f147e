-- klab.task: declarative task files, checked when loaded.
--
-- A task file (tasks/<dir>/<name>.lua) is a chunk that sets fields as
-- globals of its own fresh environment (docs/tasks.md lists them). Loading
-- checks every field; a problem raises "<file>: field '<path>': <what>".
-- Each variant (a named set of dimension values) becomes one task named
-- "<name>/<variant>", e.g. "gemm_bf16/8192x7168x5120".
--
--   task.load(path_or_name [, opts]) -> descriptor (read-only)
--       a file path ("tasks/gemm/bf16.lua") or a base name ("gemm_bf16")
--       gives the file's descriptor {kind="taskfile", name=, file=, tasks={...}};
--       "base/variant" gives that one task.
--   task.get(name [, opts])          -> one task; a base name with a single variant works too
--   task.list([root])                -> list of every task (all variants), list of load errors
--   task.files([root])               -> task file paths under root, sorted
--       root: a folder, a list of folders, or nil for the search path
--   task.plain(descriptor)           -> a deep, mutable copy (for JSON, printing)
--   task.describe(t)                 -> the text that describes the task to a model
--   task.returned(path)              -> the plain value a task folder's data file (expected.lua)
--                                       returns, run in the task sandbox like a task file
--   task.path([opts])                -> the search path: --tasks folders (task.use_path),
--                                       then $KLAB_TASKS (dir1:dir2), then the repository's tasks/
--   task.use_path(dirs)              -> sets the --tasks folders
--   task.default_root()              -> the repository's tasks/
-- opts: {path = {dir, ...}} or {root = dir} instead of the search path; a task
-- name found in several folders is taken from the first.
--
-- Task files run sandboxed (klab.sandbox, limits in task.LIMITS): their own
-- library tables, no io, os, require, load or debug, capped memory,
-- instructions and time. A file that fails or runs away is reported by name
-- (task.list's errors; task.load says which files failed when the name is
-- not found) and the other files load.
--
-- A task descriptor holds: name, base, variant, family, file, description,
-- dims (name -> integer), dim_order, tags, kernel, buffers (name -> {name,
-- role, dtype, shape (integers), shape_expr, layout, numel, bytes,
-- elem_bits}), buffer_order, inputs, scales, reference ({source, path, code,
-- plan, units (expressions), derive, derived, sample}), units (output ->
-- elements per reference unit, for this variant), baseline ({kind =
-- "library", lib, op, modes, ...} or {kind = "shipped", source, path, code,
-- plan}), precision, tolerance (dtype -> {atol, rtol, matched}), flops,
-- bytes, targets (arch -> list), tensor_type (the tensor-core operand type
-- the targets must run on, or nil), plan (source), trials, distributions.

local shape = require("klab.task.shape")


local schema = require("klab.task.schema")
local file = require("klab.task.file")
local compose = require("klab.task.compose")
local search = require("klab.task.search")
local fail, LoadError = schema.fail, schema.LoadError

local M = {}

-- A task file, and each _<name>.lua it includes, is read only as a regular
-- file of at most this size.
M.MAX_FILE_BYTES = 1024 * 1024

-- The limits a task file runs under (klab.sandbox): its memory (the whole
-- state it runs in), its instructions and its time. A file past one is
-- reported by name and skipped; the others load.
M.LIMITS = { memory = 64 * 1024 * 1024, instructions = 20 * 1000 * 1000, seconds = 10 }

-- ---- read-only descriptors --------------------------------------------

local function freeze(v)
  if type(v) ~= "table" then return v end
  local store = {}
  for k, x in pairs(v) do store[k] = freeze(x) end
  return setmetatable({}, {
    __index = store,
    __newindex = function(_, k) error(("task descriptors are read-only (field '%s')"):format(tostring(k)), 2) end,
    __pairs = function() return next, store, nil end,
    __len = function() return #store end,
    __metatable = "klab.task (read-only)",
  })
end

M.plain = schema.plain
M.is_dir, M.default_root, M.use_path, M.path, M.files = search.is_dir, search.default_root, search.use_path,
  search.path, search.files
local exists = search.exists

-- Whether s is a task's name ("gemm_bf16", "gemm_bf16/8192x7168x5120")
-- and not a path: a task file elsewhere is found through the search path
-- (--tasks DIR), never by a name that climbs out of it.
function M.is_name(s)
  if type(s) ~= "string" or s == "" or s:find("..", 1, true) then return false end
  return s:match("^[%w_][%w_%.%-]*$") ~= nil or s:match("^[%w_][%w_%.%-]*/[%w_][%w_%.%-]*$") ~= nil
end

-- Why s is not a task name, as a line for the user.
function M.not_a_name(s)
  return ("'%s' is not a task name (names look like gemm_bf16/8192x7168x5120, as 'klab tasks' lists them; a task "
    .. "file elsewhere is found with --tasks DIR)"):format(tostring(s))
end

-- A task or candidate lookup's message as a line for the user: without the
-- library's function name, and with the way out for an unknown task.
function M.hint(msg)
  msg = tostring(msg):gsub("^task%.[%a_]+: ", "")
  if msg:find("no task named", 1, true) then msg = msg .. " ('klab tasks' lists the tasks)" end
  return msg
end

local cache, failed = {}, {}
-- name + search path -> the file descriptor found there.
local by_name = {}



-- Loads one file; returns the (frozen) file descriptor. A file that failed
-- keeps its error for the rest of the process: a runaway file costs its
-- limits once.
local function load_file(path)
  if cache[path] then return cache[path] end
  if failed[path] then error(failed[path], 0) end
  local ok, desc = pcall(function()
    local f = file.run(path, { limits = M.LIMITS, max_bytes = M.MAX_FILE_BYTES })
    local composed
    if f.compose ~= nil then f, composed = compose.expand(path, f) end
    local c = schema.check(path, f)
    if composed then
      c.reference.code, c.reference.path = compose.sources(path, "reference", M.MAX_FILE_BYTES, composed)
      c.baseline.code, c.baseline.path = compose.sources(path, "baseline", M.MAX_FILE_BYTES, composed)
    else
      c.reference.code, c.reference.path = file.read_beside(path, c.reference.source, "reference.source", M.MAX_FILE_BYTES)
      if c.baseline.kind == "shipped" then
        c.baseline.code, c.baseline.path = file.read_beside(path, c.baseline.source, "baseline.source", M.MAX_FILE_BYTES)
      elseif c.baseline.shipped then
        local sh = c.baseline.shipped
        sh.code, sh.path = file.read_beside(path, sh.source, "baseline.shipped.source", M.MAX_FILE_BYTES)
      end
    end
    local tasks = {}
    for i, v in ipairs(c.variants) do
      tasks[i] = schema.variant(path, c, f, v)
      tasks[i].compose = composed
    end
    local variants = {}
    for i, v in ipairs(c.variants) do variants[i] = v.name end
    return freeze({
      kind = "taskfile", name = c.name, family = c.family, file = path, tags = c.tags,
      variants = variants, tasks = tasks,
    })
  end)
  if not ok then
    failed[path] = desc
    error(desc, 0)
  end
  cache[path] = desc
  return desc
end

-- The value a data file of a task folder returns (a samples/ or bad/
-- folder's expected.lua), run in the task sandbox under the task limits;
-- a problem raises one line naming the file.
function M.returned(path)
  local ok, v = pcall(file.returned, path, { limits = M.LIMITS, max_bytes = M.MAX_FILE_BYTES })
  if not ok then error(tostring(v), 0) end
  return v
end

function M.list(root)
  local all, errs, seen = {}, {}, {}
  for _, path in ipairs(M.files(root)) do
    local ok, d = pcall(load_file, path)
    if ok then
      if not seen[d.name] then
        seen[d.name] = true
        for _, t in ipairs(d.tasks) do all[#all + 1] = t end
      end
    else
      errs[#errs + 1] = tostring(d)
    end
  end
  return all, errs
end

local function rethrow(e)
  if getmetatable(e) == LoadError then error(e.msg, 0) end
  error(e, 0)
end

local function pload(path)
  local ok, d = pcall(load_file, path)
  if not ok then rethrow(d) end
  return d
end

-- The first file along roots whose task is named base, and the errors of
-- files that failed on the way (they are skipped).
local function find_base(base, roots)
  local errs = {}
  for _, path in ipairs(M.files(roots)) do
    local ok, d = pcall(load_file, path)
    if ok and d.name == base then return d, errs end
    if not ok then errs[#errs + 1] = tostring(d) end
  end
  return nil, errs
end

function M.load(spec, opts)
  opts = opts or {}
  if type(spec) ~= "string" or spec == "" then error("task.load: expected a path or a task name", 2) end
  if spec:match("%.lua$") or (exists(spec) and not spec:match("^[%w_%.%-]+/[%w_%.%-]+$")) then
    if opts.reload then cache[spec], failed[spec] = nil, nil end
    return pload(spec)
  end
  local base, variant = spec:match("^([^/]+)/(.+)$")
  base = base or spec
  local roots = M.path(opts)
  -- A name found once is found again without walking the folders (an
  -- experiment asks for its tasks at every turn).
  local ckey = base .. "\0" .. table.concat(roots, "\0")
  local d, errs = by_name[ckey], nil
  if opts.reload then d = nil end
  if not d then
    d, errs = find_base(base, roots)
    if d then by_name[ckey] = d end
  end
  if not d then
    -- a broken file may hold it: report load errors rather than "not found"
    local extra = #errs > 0 and ("; files that failed to load: " .. table.concat(errs, "; ")) or ""
    local names = {}
    for _, t in ipairs((M.list(roots))) do names[#names + 1] = t.base end
    error(("task.load: no task named '%s' under %s%s%s"):format(base, table.concat(roots, ":"),
      require("klab.errors").did_you_mean(base, names), extra), 2)
  end
  if not variant then return d end
  for _, t in ipairs(d.tasks) do
    if t.variant == variant then return t end
  end
  error(("task.load: task '%s' has no variant '%s'%s (variants: %s)"):format(base, variant,
    require("klab.errors").did_you_mean(variant, M.plain(d.variants)), table.concat(M.plain(d.variants), ", ")), 2)
end

function M.get(name, opts)
  local d = M.load(name, opts)
  if d.kind == "task" then return d end
  if #d.tasks == 1 then return d.tasks[1] end
  error(("task.get: '%s' has %d variants; name one (e.g. '%s')"):format(name, #d.tasks, d.tasks[1].name), 2)
end

-- ---- text for a model -------------------------------------------------

local function fmt_shape(b)
  local parts = {}
  for i, x in ipairs(b.shape) do parts[i] = tostring(x) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

function M.describe(t)
  local lines = { t.description:gsub("%s+$", ""), "", "Buffers (allocated by the harness; " ..
    (t.buffers[t.buffer_order[1]].layout == "row" and "row-major" or "see layout") .. "):" }
  for _, name in ipairs(t.buffer_order) do
    local b = t.buffers[name]
    lines[#lines + 1] = ("  %-8s %-7s %-8s %s%s"):format(name, b.role, b.dtype, fmt_shape(b),
      b.layout ~= "row" and (" " .. b.layout .. "-major") or "")
  end
  local tols = {}
  for _, dt in ipairs(schema.sorted_keys(t.tolerance)) do
    local x = t.tolerance[dt]
    tols[#tols + 1] = ("%s: atol %g, rtol %g, %s"):format(dt, x.atol, x.rtol,
      x.matched >= 1 and "every element must match" or (("%.4g%% of elements must match"):format(x.matched * 100)))
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Where the reference y is finite, an output element x fails when it is NaN or Inf, or when "
      .. "|x - y| > atol and |x - y| / (|y| + 1e-8) > rtol; where y is NaN, x must be NaN; where y is +Inf or -Inf, "
      .. "x must be that same infinity. "
      .. "Tolerances: " .. table.concat(tols, "; ") .. "."
  return table.concat(lines, "\n")
end

return M

