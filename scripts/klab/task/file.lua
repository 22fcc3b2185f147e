-- klab.task.file: reads a task file and runs it in the sandbox
-- (klab.sandbox), with the _<name>.lua files beside it for include(); hands
-- back the fields it set as plain data, its functions replaced by host
-- functions of the values they returned for each variant. Also reads the
-- files a task ships beside its task file.
--
--   file.run(path, {limits =, max_bytes =}) -> raw fields (unchecked, but only known names)
--   file.returned(path, {limits =, max_bytes =}) -> the plain value a data file returns
--   file.read_beside(path, name, field, max_bytes) -> text, full path
-- Problems raise schema.LoadError values naming the file.

local schema = require("klab.task.schema")
local fs = require("klab.fs")
local fail, LoadError, FIELDS, sorted_keys = schema.fail, schema.LoadError, schema.FIELDS, schema.sorted_keys

local M = {}

-- What a task file sees: pure libraries and base functions, no io, os,
-- require, load or debug. They are the sandbox state's own tables, so a
-- file that replaces string.format changes nothing outside its own run.
-- The pattern functions of string (find, match, gmatch, gsub) are left
-- out, as for plans: their backtracking runs beyond the instruction limit.
local BASE_NAMES = {
  "math", "string", "table", "utf8", "pairs", "ipairs", "next", "select", "type", "tostring", "tonumber",
  "error", "assert", "pcall", "rawget", "rawlen", "rawequal",
}

-- Runs in the sandbox (with its text-only load): loads the task file in an
-- environment of its own whose misses go to the base, runs it, and returns
-- its fields as plain data. Functions cannot leave the sandbox: the
-- functions of a task file are functions of a variant's dimensions (flops,
-- bytes, baseline.spec), so each one is called here once per variant, and
-- what it returned (or raised) is kept by the variant's dimension values
-- and the function's place in the fields.
-- include("_name.lua") runs a sibling file (read by the host beforehand)
-- in an environment of its own and returns its value.
local RUNNER = [==[
local job = __klab_task
local load_text = load
local next, type, tostring, pcall, error, ipairs, setmetatable = next, type, tostring, pcall, error, ipairs, setmetatable
local tointeger, concat = math.tointeger, table.concat
local BASE = {}
for _, k in ipairs(job.base) do BASE[k] = _G[k] end
-- A name of the host's libraries is noted when read (even under pcall), so
-- that the refusal names it.
local refused, noted = {}, {}
local HOST = job.host
local function miss(_, k)
  local v = BASE[k]
  if v == nil and HOST[k] and not noted[k] then
    noted[k] = true
    refused[#refused + 1] = k
  end
  return v
end
local function env_of() return setmetatable({}, { __index = miss }) end
local running = {}
-- The constructors of a composed task's operations (klab.task.compose).
BASE.ops = load_text(job.ops, "=ops", "t", { setmetatable = setmetatable, type = type, next = next })()
BASE.include = function(name)
  local src = type(name) == "string" and job.files[name]
  if not src then
    if type(name) == "string" and job.unreadable[name] then
      error("include: cannot read " .. job.dir .. "/" .. name .. ": " .. job.unreadable[name], 2)
    end
    error("include: expected a sibling file named _<name>.lua, got " .. tostring(name), 2)
  end
  if running[name] then error("include: " .. name .. " includes itself", 2) end
  local chunk, cerr = load_text(src, "@" .. job.dir .. "/" .. name, "t", env_of())
  if not chunk then error("include: " .. cerr, 2) end
  running[name] = true
  local ok, v = pcall(chunk)
  running[name] = nil
  if not ok then error(v, 0) end
  return v
end
local env = env_of()
local chunk, cerr = load_text(job.src, "@" .. job.path, "t", env)
if not chunk then return { error = cerr, stage = "load" } end
local ok, rerr = pcall(chunk)
if refused[1] then return { refused = refused } end
if not ok then return { error = tostring(rerr), stage = "run" } end
-- A list of samples (expected.lua) is the value the file returns.
if job.returns then return { value = rerr } end
-- Each variant's dimensions, and the key they are kept by.
local points = {}
local dims, variants = env.dims, env.variants
if type(dims) == "table" and type(variants) == "table" then
  for _, v in ipairs(variants) do
    if type(v) == "table" then
      local d, key = {}, {}
      for i, name in ipairs(dims) do
        local x = v[name]
        x = tointeger(x) or x
        d[name] = x
        key[i] = tostring(x)
      end
      points[#points + 1] = { dims = d, key = concat(key, ",") }
    end
  end
end
local computed = {}
local plain
plain = function(v, path, depth, call)
  if type(v) == "function" then
    if call then
      local vals = {}
      for _, pt in ipairs(points) do
        local d = {}
        for k, x in next, pt.dims do d[k] = x end
        local fok, val = pcall(v, d)
        vals[pt.key] = fok and { value = plain(val, path, 0, false) } or { error = tostring(val) }
      end
      computed[path] = vals
    end
    return { __klab_function = path }
  end
  if type(v) ~= "table" or depth > 48 then return v end
  local out = {}
  for k, x in next, v do out[k] = plain(x, path .. "." .. tostring(k), depth + 1, call) end
  return out
end
local fields = {}
for k, v in next, env do fields[k] = plain(v, tostring(k), 0, true) end
if refused[1] then return { refused = refused } end
return { fields = fields, computed = computed }
]==]

local function load_error(msg, file)
  error(setmetatable({ msg = msg, file = file }, LoadError), 0)
end

-- A function of the task file, on the host: the values the sandbox
-- computed for each variant, looked up by the dimensions asked for.
local function computed_fn(file, where, vals, dims_list)
  return function(d)
    local key = {}
    for i, n in ipairs(dims_list) do key[i] = tostring(type(d) == "table" and d[n] or nil) end
    local r = vals and vals[table.concat(key, ",")]
    if not r then
      error(("%s: '%s' runs while the file loads, for its variants' dimensions only"):format(file, where), 0)
    end
    if r.error then error(r.error, 0) end
    return r.value
  end
end

-- Puts the host side of each function back in place of its marker.
local function restore(v, file, computed, dims_list)
  if type(v) ~= "table" then return v end
  if v.__klab_function then
    return computed_fn(file, v.__klab_function, computed[v.__klab_function], dims_list)
  end
  for k, x in pairs(v) do v[k] = restore(x, file, computed, dims_list) end
  return v
end

-- A task's files are its folder's own, not second names (hard links) of host files.
local ONE_NAME = { one_name = true }

-- The host's libraries, which a task folder's Lua does not have: a file
-- that reads one of these names is refused, naming them.
local HOST_NAMES = { io = true, os = true, require = true, load = true, loadfile = true, dofile = true, debug = true,
  package = true, collectgarbage = true }

-- Runs the file in the sandbox; returns what the runner handed back.
local function sandboxed(path, opts, returns)
  local src, err = fs.read(path, opts.max_bytes, ONE_NAME)
  if not src then fail(path, nil, "cannot read: " .. tostring(err)) end
  local dir = path:match("^(.*)/[^/]*$") or "."
  local files, unreadable = {}, {}
  for _, e in ipairs(fs.list(dir) or {}) do
    if e.name:match("^_[%w_%-]+%.lua$") then
      local text, rerr = fs.read(dir .. "/" .. e.name, opts.max_bytes, ONE_NAME)
      if text then files[e.name] = text else unreadable[e.name] = tostring(rerr):gsub("^.-: ", "") end
    end
  end
  local limits = { load = true }
  for k, v in pairs(opts.limits) do limits[k] = v end
  local out, msg, code = require("klab.sandbox").run(RUNNER, path, {
    __klab_task = { src = src, path = path, dir = dir, files = files, unreadable = unreadable, base = BASE_NAMES,
                    ops = require("klab.task.compose").SANDBOX, host = HOST_NAMES, returns = returns },
  }, limits)
  if not out then
    if code == "EMEMORY" or code == "ELIMIT" then load_error(msg, path) end
    fail(path, nil, "error while running: " .. tostring(msg))
  end
  if out.refused then
    fail(path, nil, ("refused: it reads %s, which a task folder's Lua does not have (it runs in the task sandbox: "
      .. "no io, os, require, load or debug)"):format(table.concat(out.refused, ", ")))
  end
  if out.error then
    if out.stage == "load" then fail(path, nil, out.error) end
    fail(path, nil, "error while running: " .. out.error)
  end
  return out
end

-- Runs the file in the sandbox; returns its raw fields.
function M.run(path, opts)
  local out = sandboxed(path, opts, false)
  local fields = {}
  local dims_list = type(out.fields.dims) == "table" and out.fields.dims or {}
  for k, v in pairs(out.fields) do
    if not FIELDS[k] then
      fail(path, nil, ("unknown field '%s'%s (task fields: %s; use local for helpers)"):format(
        tostring(k), require("klab.errors").did_you_mean(k, sorted_keys(FIELDS)), table.concat(sorted_keys(FIELDS), ", ")))
    end
    fields[k] = restore(v, path, out.computed, dims_list)
  end
  return fields
end

-- Runs a file of a task folder that returns plain data (a samples/ or bad/
-- folder's expected.lua) in the same sandbox, under the same limits; returns
-- its value (nil when it returns nothing).
function M.returned(path, opts)
  return sandboxed(path, opts, true).value
end

-- The text of a file the task ships beside its task file: a regular file
-- of the task's folder (no link, FIFO or device), at most MAX_FILE_BYTES.
function M.read_beside(path, name, field, max_bytes)
  local dir = path:match("^(.*)/[^/]*$") or "."
  local full = dir .. "/" .. name
  local text, err = fs.read(full, max_bytes, ONE_NAME)
  if not text then fail(path, field, "cannot read " .. full .. ": " .. tostring(err):gsub("^.-: ", "")) end
  return text, full
end

return M
