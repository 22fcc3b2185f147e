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

local M = {}

local FIELDS = {
  name = true, family = true, description = true, dims = true, variants = true, buffers = true,
  inputs = true, scales = true, reference = true, baseline = true, tolerance = true,
  flops = true, bytes = true, targets = true, plan = true, trials = true, distributions = true,
  tags = true, kernel = true, precision = true, work = true, tensor_type = true,
}
local REQUIRED = { "name", "family", "description", "dims", "variants", "buffers", "inputs",
                   "reference", "baseline", "tolerance", "flops", "targets", "plan" }
local ROLES = { input = true, output = true, scratch = true }
local LAYOUTS = { row = true, col = true }
local DISTS = {
  normal = { mean = 0, std = 1 },
  uniform = { lo = -1, hi = 1 },
  spiky = { std = 1, spike_std = 10, p = 0.001 },
  int = { lo = 0, hi = 1 },
  const = { value = 0 },
}
local FP8_MAX = { fp8e4m3 = 448, fp8e5m2 = 57344, fp4e2m1 = 6 }

-- ---- errors ------------------------------------------------------------

local LoadError = {}
LoadError.__index = LoadError
LoadError.__tostring = function(e) return e.msg end

local function fail(file, path, msg, variant)
  local where = variant and (" (variant " .. variant .. ")") or ""
  local text = path and ("%s: field '%s'%s: %s"):format(file, path, where, msg)
      or ("%s: %s"):format(file, msg)
  error(setmetatable({ msg = text, file = file, field = path }, LoadError), 0)
end

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

function M.plain(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = M.plain(x) end
  return out
end

-- ---- field checks -----------------------------------------------------

local function is_ident(s) return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil end
local function is_name(s) return type(s) == "string" and s:match("^[%w_%.%-]+$") ~= nil end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
  return ks
end

local function check_type(file, path, v, want)
  if type(v) ~= want then fail(file, path, ("must be a %s, got %s"):format(want, type(v))) end
end

local function check_list(file, path, v, elem_check)
  check_type(file, path, v, "table")
  local n = #v
  for k in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 or k > n then
      fail(file, path, ("must be a list; unexpected key '%s'"):format(tostring(k)))
    end
  end
  if elem_check then
    for i, x in ipairs(v) do elem_check(path .. "[" .. i .. "]", x) end
  end
  return n
end

local function check_number(file, path, v, lo, hi)
  if type(v) ~= "number" or v ~= v then fail(file, path, "must be a number, got " .. type(v)) end
  if lo and v < lo then fail(file, path, ("must be >= %s, got %s"):format(lo, v)) end
  if hi and v > hi then fail(file, path, ("must be <= %s, got %s"):format(hi, v)) end
  return v
end

local function check_keys(file, path, t, allowed)
  for k in pairs(t) do
    if not allowed[k] then
      local names = sorted_keys(allowed)
      fail(file, path, ("unknown key '%s' (allowed: %s)"):format(tostring(k), table.concat(names, ", ")))
    end
  end
end

local function canon_dtype(file, path, name)
  local d, err = shape.dtype(name)
  if not d then fail(file, path, err) end
  return d.name
end

-- Launch-plan text: compiled here (not run) to catch syntax errors early.
local function check_plan_text(file, path, v)
  check_type(file, path, v, "string")
  local _, perr = load(v, "=" .. path, "t", {})
  if perr then fail(file, path, perr) end
  return v
end

-- A file the task ships beside its task file (reference.cu, baseline.cu):
-- a relative path that stays inside the task's folder.
local function check_source(file, path, v)
  check_type(file, path, v, "string")
  if not v:match("^[%w_%-][%w_%-%.]*$") or v:find("..", 1, true) then
    fail(file, path, "must be a file name in the task's folder, got '" .. v .. "'")
  end
  return v
end

-- A distribution: {dist=kind, params...}; returns a normalized copy.
local function check_dist(file, path, d, dtype)
  if type(d) == "string" then d = { dist = d } end
  check_type(file, path, d, "table")
  local kind = d.dist
  if not DISTS[kind] then
    fail(file, path .. ".dist", ("unknown distribution '%s' (known: %s)"):format(tostring(kind),
      table.concat(sorted_keys(DISTS), ", ")))
  end
  local allowed = { dist = true }
  for k in pairs(DISTS[kind]) do allowed[k] = true end
  check_keys(file, path, d, allowed)
  local out = { dist = kind }
  for k, dflt in pairs(DISTS[kind]) do
    local v = d[k]
    if v == nil then v = dflt end
    out[k] = check_number(file, path .. "." .. k, v)
  end
  if kind == "normal" or kind == "spiky" then
    check_number(file, path .. ".std", out.std, 0)
  end
  if kind == "spiky" then
    check_number(file, path .. ".spike_std", out.spike_std, 0)
    check_number(file, path .. ".p", out.p, 0, 1)
  end
  if kind == "uniform" and not (out.lo < out.hi) then fail(file, path, "needs lo < hi") end
  if kind == "int" then
    if math.type(out.lo) ~= "integer" or math.type(out.hi) ~= "integer" or out.lo > out.hi then
      fail(file, path, "an int distribution needs integers lo <= hi")
    end
  end
  if dtype and not shape.dtypes[dtype].float and kind ~= "int" and kind ~= "const" then
    fail(file, path, ("integer buffer of dtype %s needs an int or const distribution"):format(dtype))
  end
  return out
end

-- ---- loading ----------------------------------------------------------

local fs = require("klab.fs")

-- A task file, and each _<name>.lua it includes, is read only as a regular
-- file of at most this size.
M.MAX_FILE_BYTES = 1024 * 1024

-- The limits a task file runs under (klab.sandbox): its memory (the whole
-- state it runs in), its instructions and its time. A file past one is
-- reported by name and skipped; the others load.
M.LIMITS = { memory = 64 * 1024 * 1024, instructions = 20 * 1000 * 1000, seconds = 10 }

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
local function env_of() return setmetatable({}, { __index = BASE }) end
local running = {}
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
if not ok then return { error = tostring(rerr), stage = "run" } end
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

-- Runs the file in the sandbox; returns its raw fields.
local function run_file(path)
  local src, err = fs.read(path, M.MAX_FILE_BYTES, ONE_NAME)
  if not src then fail(path, nil, "cannot read: " .. tostring(err)) end
  local dir = path:match("^(.*)/[^/]*$") or "."
  local files, unreadable = {}, {}
  for _, e in ipairs(fs.list(dir) or {}) do
    if e.name:match("^_[%w_%-]+%.lua$") then
      local text, rerr = fs.read(dir .. "/" .. e.name, M.MAX_FILE_BYTES, ONE_NAME)
      if text then files[e.name] = text else unreadable[e.name] = tostring(rerr):gsub("^.-: ", "") end
    end
  end
  local opts = { load = true }
  for k, v in pairs(M.LIMITS) do opts[k] = v end
  local out, msg, code = require("klab.sandbox").run(RUNNER, path, {
    __klab_task = { src = src, path = path, dir = dir, files = files, unreadable = unreadable, base = BASE_NAMES },
  }, opts)
  if not out then
    if code == "EMEMORY" or code == "ELIMIT" then load_error(msg, path) end
    fail(path, nil, "error while running: " .. tostring(msg))
  end
  if out.error then
    if out.stage == "load" then fail(path, nil, out.error) end
    fail(path, nil, "error while running: " .. out.error)
  end
  local fields = {}
  local dims_list = type(out.fields.dims) == "table" and out.fields.dims or {}
  for k, v in pairs(out.fields) do
    if not FIELDS[k] then
      fail(path, nil, ("unknown field '%s' (task fields: %s; use local for helpers)"):format(
        tostring(k), table.concat(sorted_keys(FIELDS), ", ")))
    end
    fields[k] = restore(v, path, out.computed, dims_list)
  end
  return fields
end

local function expand_text(file, text, dims, extra)
  return (text:gsub("%${([%w_]+)}", function(k)
    local v = dims[k]
    if v == nil then v = extra[k] end
    if v == nil then fail(file, "description", ("unknown placeholder '${%s}'"):format(k)) end
    return tostring(v)
  end))
end

-- Checks the fields shared by every variant; returns a normalized table.
local function check_common(file, f)
  for _, k in ipairs(REQUIRED) do
    if f[k] == nil then fail(file, k, "is missing (required)") end
  end
  local c = {}
  if not is_name(f.name) or f.name:find("/") then
    fail(file, "name", "must be a string of letters, digits, '_', '.' or '-'")
  end
  c.name = f.name
  if not is_ident(f.family) then fail(file, "family", "must be an identifier string") end
  c.family = f.family
  check_type(file, "description", f.description, "string")
  if not f.description:find("%S") then fail(file, "description", "is empty") end
  c.description = f.description
  c.kernel = f.kernel
  if f.kernel ~= nil and not (type(f.kernel) == "string" and f.kernel:match("^[%w_$]+$")) then
    fail(file, "kernel", "must be a kernel entry name")
  end

  -- dims: ordered list of names
  local nd = check_list(file, "dims", f.dims)
  if nd == 0 then fail(file, "dims", "needs at least one dimension name") end
  local seen = {}
  for i, d in ipairs(f.dims) do
    if not is_ident(d) then fail(file, "dims[" .. i .. "]", "must be an identifier string") end
    if d == "cdiv" or d == "min" or d == "max" then fail(file, "dims[" .. i .. "]", "'" .. d .. "' is reserved") end
    if seen[d] then fail(file, "dims[" .. i .. "]", "duplicate dimension '" .. d .. "'") end
    seen[d] = true
  end
  c.dim_order = f.dims

  -- tags
  c.tags = {}
  if f.tags ~= nil then
    check_list(file, "tags", f.tags, function(p, t) if not is_name(t) then fail(file, p, "must be a tag string") end end)
    c.tags = f.tags
  end

  -- variants
  local nv = check_list(file, "variants", f.variants)
  if nv == 0 then fail(file, "variants", "needs at least one variant") end
  c.variants = {}
  local vnames = {}
  for i, v in ipairs(f.variants) do
    local p = "variants[" .. i .. "]"
    check_type(file, p, v, "table")
    local allowed = { name = true, tags = true }
    for _, d in ipairs(f.dims) do allowed[d] = true end
    check_keys(file, p, v, allowed)
    local dv, parts = {}, {}
    for _, d in ipairs(f.dims) do
      local x = v[d]
      if x == nil then fail(file, p .. "." .. d, "is missing") end
      if math.type(x) ~= "integer" then
        x = math.tointeger(x)
        if not x then fail(file, p .. "." .. d, "must be an integer") end
      end
      if x <= 0 then fail(file, p .. "." .. d, "must be positive, got " .. x) end
      dv[d] = x
      parts[#parts + 1] = tostring(x)
    end
    local vname = v.name or table.concat(parts, "x")
    if not is_name(vname) then fail(file, p .. ".name", "must be a string of letters, digits, '_', '.' or '-'") end
    if vnames[vname] then fail(file, p .. ".name", "duplicate variant name '" .. vname .. "'") end
    vnames[vname] = true
    local vt = {}
    if v.tags ~= nil then
      check_list(file, p .. ".tags", v.tags, function(q, t) if not is_name(t) then fail(file, q, "must be a tag string") end end)
      vt = v.tags
    end
    c.variants[i] = { name = vname, dims = dv, tags = vt }
  end

  -- buffers
  check_type(file, "buffers", f.buffers, "table")
  c.buffers, c.buffer_order = {}, {}
  local nout = 0
  for _, bname in ipairs(sorted_keys(f.buffers)) do
    local b = f.buffers[bname]
    local p = "buffers." .. tostring(bname)
    if not is_ident(bname) then fail(file, p, "buffer names must be identifiers") end
    check_type(file, p, b, "table")
    check_keys(file, p, b, { role = true, dtype = true, shape = true, layout = true })
    if not ROLES[b.role] then fail(file, p .. ".role", "must be 'input', 'output' or 'scratch', got " .. tostring(b.role)) end
    if b.role == "output" then nout = nout + 1 end
    local dt = canon_dtype(file, p .. ".dtype", b.dtype)
    local layout = b.layout or "row"
    if not LAYOUTS[layout] then fail(file, p .. ".layout", "must be 'row' or 'col', got " .. tostring(layout)) end
    if b.shape == nil then fail(file, p .. ".shape", "is missing") end
    -- every name a shape uses must be a dimension
    local list = (type(b.shape) == "table") and b.shape or { b.shape }
    for i, e in ipairs(list) do
      for _, nm in ipairs(shape.names(e)) do
        if not seen[nm] then
          fail(file, p .. ".shape", ("[%d]: unknown dimension '%s' in '%s'"):format(i, nm, tostring(e)))
        end
      end
    end
    c.buffers[bname] = { name = bname, role = b.role, dtype = dt, shape_expr = b.shape, layout = layout }
  end
  if nout == 0 then fail(file, "buffers", "needs at least one buffer with role 'output'") end
  local order = { input = 1, output = 2, scratch = 3 }
  for name in pairs(c.buffers) do c.buffer_order[#c.buffer_order + 1] = name end
  table.sort(c.buffer_order, function(a, b)
    local ra, rb = order[c.buffers[a].role], order[c.buffers[b].role]
    if ra ~= rb then return ra < rb end
    return a < b
  end)

  -- scales (fp8): data buffer -> {buffer = scale buffer, value = v}: the
  -- per-tensor scale a kernel must apply, written into the scale buffer (an
  -- f32 input of one element) before every run.
  c.scales = {}
  local scale_bufs = {}
  if f.scales ~= nil then
    check_type(file, "scales", f.scales, "table")
    for _, data in ipairs(sorted_keys(f.scales)) do
      local s = f.scales[data]
      local p = "scales." .. tostring(data)
      local db = c.buffers[data]
      if not db then fail(file, p, "names no buffer '" .. tostring(data) .. "'") end
      if db.role ~= "input" then fail(file, p, "the scaled buffer must be an input") end
      if type(s) == "string" then s = { buffer = s } end
      check_type(file, p, s, "table")
      check_keys(file, p, s, { buffer = true, mode = true, value = true })
      local sb = c.buffers[s.buffer]
      if not sb then fail(file, p .. ".buffer", "names no buffer '" .. tostring(s.buffer) .. "'") end
      if sb.role ~= "input" or sb.dtype ~= "f32" then fail(file, p .. ".buffer", "a scale buffer must be an f32 input") end
      local mode = s.mode or "const"
      if mode ~= "const" then fail(file, p .. ".mode", "must be 'const' (a fixed scale value)") end
      check_number(file, p .. ".value", s.value, 0)
      if not (s.value > 0) then fail(file, p .. ".value", "must be positive") end
      c.scales[data] = { buffer = s.buffer, mode = mode, value = s.value, max = FP8_MAX[db.dtype] }
      scale_bufs[s.buffer] = true
    end
  end

  -- inputs: one distribution per input buffer that is not a scale
  check_type(file, "inputs", f.inputs, "table")
  c.inputs = {}
  for _, bname in ipairs(sorted_keys(f.inputs)) do
    local b = c.buffers[bname]
    local p = "inputs." .. tostring(bname)
    if not b then fail(file, p, "names no buffer '" .. tostring(bname) .. "'") end
    if b.role ~= "input" then fail(file, p, "buffer '" .. bname .. "' is not an input") end
    if scale_bufs[bname] then fail(file, p, "is a scale buffer; its values come from 'scales'") end
    local storage = c.scales[bname] and "f32" or b.dtype
    c.inputs[bname] = check_dist(file, p, f.inputs[bname], storage)
  end
  for _, bname in ipairs(c.buffer_order) do
    if c.buffers[bname].role == "input" and not c.inputs[bname] and not scale_bufs[bname] then
      fail(file, "inputs." .. bname, "is missing: every input buffer needs a distribution")
    end
  end

  -- reference: kernels the task ships, run by klab in the worker like its
  -- own ({source=, plan=, units=, derive=, derived=, sample=}).
  check_type(file, "reference", f.reference, "table")
  local r = f.reference
  check_keys(file, "reference", r, { source = true, plan = true, units = true, derive = true, derived = true,
    sample = true, name = true, accumulate = true })
  c.reference = { name = r.name, accumulate = r.accumulate }
  c.reference.source = check_source(file, "reference.source", r.source)
  c.reference.plan = check_plan_text(file, "reference.plan", r.plan)
  c.reference.units = {}
  if r.units ~= nil then check_type(file, "reference.units", r.units, "table") end
  for _, bname in ipairs(c.buffer_order) do
    local b = c.buffers[bname]
    local u = (r.units or {})[bname]
    if b.role == "output" then
      if u == nil then u = 1 end
      for _, nm in ipairs(shape.names(u)) do
        if not seen[nm] then fail(file, "reference.units." .. bname, ("unknown dimension '%s'"):format(nm)) end
      end
      c.reference.units[bname] = u
    elseif u ~= nil then
      fail(file, "reference.units." .. bname, "units are given for outputs only")
    end
  end
  for k in pairs(r.units or {}) do
    if not c.buffers[k] then fail(file, "reference.units." .. tostring(k), "names no buffer") end
  end
  if r.derive ~= nil then
    c.reference.derive = check_plan_text(file, "reference.derive", r.derive)
    check_list(file, "reference.derived", r.derived, function(p, name)
      local b = c.buffers[name]
      if not b or b.role ~= "input" then fail(file, p, "must name an input buffer") end
    end)
    if #r.derived == 0 then fail(file, "reference.derived", "names the inputs the derive plan writes") end
    c.reference.derived = r.derived
  elseif r.derived ~= nil then
    fail(file, "reference.derived", "needs reference.derive (the plan that writes them)")
  end
  c.reference.sample = r.sample == nil and 8192 or r.sample
  if math.type(c.reference.sample) ~= "integer" or c.reference.sample < 1 then
    fail(file, "reference.sample", "must be a positive integer (units checked per timed run)")
  end

  -- baseline: a library operation ({lib=, op=, ...}, read by klab.eval.baselines.<lib>)
  -- or a kernel the task ships ({source=, plan=, name=}).
  check_type(file, "baseline", f.baseline, "table")
  c.baseline = {}
  for k, v in pairs(f.baseline) do c.baseline[k] = v end
  if f.baseline.source ~= nil then
    check_keys(file, "baseline", f.baseline, { source = true, plan = true, name = true, note = true })
    c.baseline.kind = "shipped"
    c.baseline.source = check_source(file, "baseline.source", f.baseline.source)
    c.baseline.plan = check_plan_text(file, "baseline.plan", f.baseline.plan)
  else
    if not is_ident(f.baseline.lib) then fail(file, "baseline.lib", "must be an identifier string (or give source= and plan= for a shipped kernel)") end
    if not is_ident(f.baseline.op) then fail(file, "baseline.op", "must be an identifier string") end
    local modes = f.baseline.modes or { "default" }
    check_list(file, "baseline.modes", modes, function(p, m) if not is_ident(m) then fail(file, p, "must be an identifier string") end end)
    if #modes == 0 then fail(file, "baseline.modes", "needs at least one mode") end
    if f.baseline.spec ~= nil and type(f.baseline.spec) ~= "function" then
      fail(file, "baseline.spec", "must be a function of the variant's dimensions returning the library's description")
    end
    c.baseline.kind = "library"
    c.baseline.modes = modes
  end

  -- work: the fraction of the task's FLOPs a kernel must execute (tensor
  -- cores and SIMT pipes counted in the instruction stage); nil: not checked.
  if f.work ~= nil then
    c.work = check_number(file, "work", f.work, 0, 1)
    if not (c.work > 0) then fail(file, "work", "must be in (0, 1]") end
  end

  -- precision: the element type whose peak bounds the task's FLOPs (the
  -- physical floor and the fraction of peak); default: the first input's.
  if f.precision ~= nil then
    c.precision = canon_dtype(file, "precision", f.precision)
  else
    for _, bname in ipairs(c.buffer_order) do
      if c.buffers[bname].role == "input" and not scale_bufs[bname] then c.precision = c.buffers[bname].dtype break end
    end
  end

  -- tolerance: output dtype -> {atol, rtol, matched}
  check_type(file, "tolerance", f.tolerance, "table")
  c.tolerance = {}
  for _, dt in ipairs(sorted_keys(f.tolerance)) do
    local p = "tolerance." .. tostring(dt)
    local t = f.tolerance[dt]
    local cdt = canon_dtype(file, p, dt)
    check_type(file, p, t, "table")
    check_keys(file, p, t, { atol = true, rtol = true, matched = true })
    c.tolerance[cdt] = {
      atol = check_number(file, p .. ".atol", t.atol, 0),
      rtol = check_number(file, p .. ".rtol", t.rtol, 0),
      matched = t.matched == nil and 1.0 or check_number(file, p .. ".matched", t.matched, 0, 1),
    }
    if c.tolerance[cdt].matched <= 0 then fail(file, p .. ".matched", "must be in (0, 1]") end
  end
  for _, bname in ipairs(c.buffer_order) do
    local b = c.buffers[bname]
    if b.role == "output" and not c.tolerance[b.dtype] then
      fail(file, "tolerance." .. b.dtype, "is missing for output '" .. bname .. "'")
    end
  end

  -- counts
  check_type(file, "flops", f.flops, "function")
  if f.bytes ~= nil then check_type(file, "bytes", f.bytes, "function") end

  -- targets: arch -> list of instruction families
  check_type(file, "targets", f.targets, "table")
  c.targets = {}
  for _, arch in ipairs(sorted_keys(f.targets)) do
    local p = "targets." .. tostring(arch)
    if not (type(arch) == "string" and arch:match("^sm_%d+[af]?$")) then
      fail(file, p, "arch names look like 'sm_90a' or 'sm_100a'")
    end
    local n = check_list(file, p, f.targets[arch], function(q, fam)
      if type(fam) ~= "string" or not fam:match("^[%w_%.]+$") then fail(file, q, "must be an instruction family name") end
    end)
    if n == 0 then fail(file, p, "needs at least one instruction family") end
    c.targets[arch] = f.targets[arch]
  end

  -- tensor_type: the operands' type the tensor cores must use (the fp8
  -- GEMM's path is fp8, not bf16 after a conversion)
  if f.tensor_type ~= nil then
    local TYPES = { bf16 = true, fp16 = true, tf32 = true, int8 = true, fp8 = true, fp4 = true }
    if not TYPES[f.tensor_type] then
      fail(file, "tensor_type", "must be one of bf16, fp16, tf32, int8, fp8, fp4, not " .. tostring(f.tensor_type))
    end
    c.tensor_type = f.tensor_type
  end

  -- plan: Lua source, compiled here (not run) to catch syntax errors early
  c.plan = check_plan_text(file, "plan", f.plan)

  -- trials and distributions
  c.trials = f.trials == nil and 3 or f.trials
  if math.type(c.trials) ~= "integer" or c.trials < 1 then fail(file, "trials", "must be a positive integer") end
  local dists = f.distributions or { { name = "base" } }
  check_list(file, "distributions", dists)
  if #dists == 0 then fail(file, "distributions", "needs at least one entry") end
  c.distributions = {}
  local dnames = {}
  for i, d in ipairs(dists) do
    local p = "distributions[" .. i .. "]"
    check_type(file, p, d, "table")
    check_keys(file, p, d, { name = true, scale = true, tol_scale = true, inputs = true })
    if not is_name(d.name) then fail(file, p .. ".name", "must be a name string") end
    if dnames[d.name] then fail(file, p .. ".name", "duplicate distribution '" .. d.name .. "'") end
    dnames[d.name] = true
    local nd2 = { name = d.name, scale = 1, tol_scale = 1 }
    if d.scale ~= nil then nd2.scale = check_number(file, p .. ".scale", d.scale) end
    if nd2.scale == 0 then fail(file, p .. ".scale", "must not be zero") end
    if d.tol_scale ~= nil then nd2.tol_scale = check_number(file, p .. ".tol_scale", d.tol_scale) end
    if nd2.tol_scale <= 0 then fail(file, p .. ".tol_scale", "must be positive") end
    if d.inputs ~= nil then
      check_type(file, p .. ".inputs", d.inputs, "table")
      nd2.inputs = {}
      for _, bname in ipairs(sorted_keys(d.inputs)) do
        local q = p .. ".inputs." .. tostring(bname)
        if not c.inputs[bname] then fail(file, q, "names no input with a distribution") end
        local storage = c.scales[bname] and "f32" or c.buffers[bname].dtype
        nd2.inputs[bname] = check_dist(file, q, d.inputs[bname], storage)
      end
    end
    c.distributions[i] = nd2
  end
  return c
end

-- A task or candidate lookup's message as a line for the user: without the
-- library's function name, and with the way out for an unknown task.
function M.hint(msg)
  msg = tostring(msg):gsub("^task%.load: ", "")
  if msg:find("no task named", 1, true) then msg = msg .. " ('klab tasks' lists the tasks)" end
  return msg
end

-- Builds the task of one variant.
local function build_variant(file, c, f, v)
  local t = {
    kind = "task", name = c.name .. "/" .. v.name, base = c.name, variant = v.name,
    family = c.family, file = file, dims = v.dims, dim_order = c.dim_order,
    kernel = c.kernel, inputs = c.inputs, scales = c.scales, reference = c.reference,
    baseline = c.baseline, tolerance = c.tolerance, targets = c.targets, plan = c.plan,
    trials = c.trials, distributions = c.distributions, buffer_order = c.buffer_order,
    precision = c.precision, work = c.work, tensor_type = c.tensor_type,
  }
  -- A library baseline described per variant (a cuDNN graph, a cuBLASLt
  -- matmul with its shape): spec(dims) gives the plain description.
  if c.baseline.spec then
    local dd = {}
    for k, x in pairs(v.dims) do dd[k] = x end
    local ok, spec = pcall(c.baseline.spec, dd)
    if not ok then fail(file, "baseline.spec", "raised: " .. tostring(spec), v.name) end
    if type(spec) ~= "table" then fail(file, "baseline.spec", "must return a table, got " .. type(spec), v.name) end
    local b = {}
    for k, x in pairs(c.baseline) do b[k] = x end
    b.spec = M.plain(spec)
    t.baseline = b
  end
  -- The reference's units per output, in elements, for this variant.
  t.units = {}
  for bname, u in pairs(c.reference.units) do
    local n, err = shape.eval(u, v.dims)
    if not n then fail(file, "reference.units." .. bname, err, v.name) end
    if n < 1 then fail(file, "reference.units." .. bname, "must be at least 1 element, got " .. n, v.name) end
    t.units[bname] = n
  end
  local tags = {}
  for _, x in ipairs(c.tags) do tags[#tags + 1] = x end
  for _, x in ipairs(v.tags) do tags[#tags + 1] = x end
  t.tags = tags
  t.buffers = {}
  local io_bytes = 0
  for _, bname in ipairs(c.buffer_order) do
    local b = c.buffers[bname]
    local ext, err = shape.expand(b.shape_expr, v.dims)
    if not ext then fail(file, "buffers." .. bname .. ".shape", err, v.name) end
    local numel = shape.numel(ext)
    local d = shape.dtypes[b.dtype]
    t.buffers[bname] = {
      name = bname, role = b.role, dtype = b.dtype, shape = ext, shape_expr = b.shape_expr,
      layout = b.layout, numel = numel, bytes = shape.bytes(b.dtype, numel), elem_bits = d.bits,
    }
    if b.role ~= "scratch" then io_bytes = io_bytes + t.buffers[bname].bytes end
  end
  local dcopy = {}
  for k, x in pairs(v.dims) do dcopy[k] = x end
  local ok, fl = pcall(f.flops, dcopy)
  if not ok then fail(file, "flops", "raised: " .. tostring(fl), v.name) end
  if type(fl) ~= "number" or fl ~= fl or fl <= 0 then
    fail(file, "flops", "must return a positive number, got " .. tostring(fl), v.name)
  end
  t.flops = fl
  if f.bytes then
    local ok2, by = pcall(f.bytes, dcopy)
    if not ok2 then fail(file, "bytes", "raised: " .. tostring(by), v.name) end
    if type(by) ~= "number" or by ~= by or by <= 0 then
      fail(file, "bytes", "must return a positive number, got " .. tostring(by), v.name)
    end
    t.bytes = by
  else
    t.bytes = io_bytes
  end
  t.description = expand_text(file, c.description, v.dims, { name = t.name, variant = v.name, base = c.name })
  return t
end

local cache, failed = {}, {}

-- The text of a file the task ships beside its task file: a regular file
-- of the task's folder (no link, FIFO or device), at most MAX_FILE_BYTES.
local function read_beside(path, name, field)
  local dir = path:match("^(.*)/[^/]*$") or "."
  local full = dir .. "/" .. name
  local text, err = fs.read(full, M.MAX_FILE_BYTES, ONE_NAME)
  if not text then fail(path, field, "cannot read " .. full .. ": " .. tostring(err):gsub("^.-: ", "")) end
  return text, full
end

-- Loads one file; returns the (frozen) file descriptor. A file that failed
-- keeps its error for the rest of the process: a runaway file costs its
-- limits once.
local function load_file(path)
  if cache[path] then return cache[path] end
  if failed[path] then error(failed[path], 0) end
  local ok, desc = pcall(function()
    local f = run_file(path)
    local c = check_common(path, f)
    c.reference.code, c.reference.path = read_beside(path, c.reference.source, "reference.source")
    if c.baseline.kind == "shipped" then
      c.baseline.code, c.baseline.path = read_beside(path, c.baseline.source, "baseline.source")
    end
    local tasks = {}
    for i, v in ipairs(c.variants) do tasks[i] = build_variant(path, c, f, v) end
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

-- ---- discovery --------------------------------------------------------

local function exists(path) return fs.type(path) ~= nil end

local function is_dir(path)
  local kind = fs.type(path)
  if kind == "link" then
    local real = fs.realpath(path)
    kind = real and fs.type(real)
  end
  return kind == "dir"
end
M.is_dir = is_dir

-- The repository's tasks/: ./tasks, a tasks/ entry of package.path,
-- $KLAB_SCRIPTS/../tasks, then tasks/ next to the build directory of the
-- running binary.
function M.default_root()
  if is_dir("tasks") then return "tasks" end
  for entry in (package.path or ""):gmatch("[^;]+") do
    local dir = entry:match("^(.*)/tasks/%?%.lua$")
    if dir and is_dir(dir .. "/tasks") then return dir .. "/tasks" end
  end
  local scripts = os.getenv("KLAB_SCRIPTS")
  if scripts and scripts ~= "" and is_dir(scripts .. "/../tasks") then return scripts .. "/../tasks" end
  local okp, sys = pcall(require, "klab.sys")
  local exe = okp and type(sys) == "table" and sys.exe and sys.exe()
  local dir = exe and exe:match("^(.*)/[^/]+$")
  while dir and dir ~= "" do
    if is_dir(dir .. "/tasks") and is_dir(dir .. "/scripts/klab") then return dir .. "/tasks" end
    dir = dir:match("^(.*)/[^/]+$")
  end
  return "tasks"
end

-- Folders a command's --tasks option named, searched first.
local extra_path = {}

-- Sets the folders given with --tasks (in order), searched before
-- $KLAB_TASKS and the repository's tasks/.
function M.use_path(dirs)
  extra_path = {}
  for i, d in ipairs(dirs or {}) do extra_path[i] = d end
end

-- The task search path: opts.path (a list) or opts.root (one folder) when
-- given, else the --tasks folders, then $KLAB_TASKS (dir1:dir2), then the
-- repository's tasks/. A task name found in several folders is taken from
-- the first.
function M.path(opts)
  opts = opts or {}
  local out, seen = {}, {}
  local function add(d)
    if d and d ~= "" and not seen[d] then
      seen[d] = true
      out[#out + 1] = d
    end
  end
  if opts.path then
    for _, d in ipairs(opts.path) do add(d) end
    return out
  end
  if opts.root then return { opts.root } end
  for _, d in ipairs(extra_path) do add(d) end
  for d in (os.getenv("KLAB_TASKS") or ""):gmatch("[^:]+") do add(d) end
  add(M.default_root())
  return out
end

-- A folder or a list of folders; nil: the search path.
local function roots_of(root)
  if root == nil then return M.path() end
  if type(root) == "table" then return root end
  return { root }
end

-- Task files are exactly <root>/<dir>/<name>.lua: deeper files (samples,
-- known-bad kernels, their plans) are not tasks, nor are _<name>.lua files.
-- With a list of folders, each folder's files in order.
function M.files(root)
  local out = {}
  for _, r in ipairs(roots_of(root)) do
    local here = {}
    for _, d in ipairs(fs.list(r) or {}) do
      if d.type == "dir" then
        for _, e in ipairs(fs.list(r .. "/" .. d.name) or {}) do
          if e.type == "file" and e.name:match("%.lua$") and not e.name:match("^_") then
            here[#here + 1] = r .. "/" .. d.name .. "/" .. e.name
          end
        end
      end
    end
    table.sort(here)
    for _, f in ipairs(here) do out[#out + 1] = f end
  end
  return out
end

-- Every task (all variants) under root (a folder, a list, or nil: the search
-- path), and the load errors of the files that failed. A task name found in
-- several files is taken from the first.
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
  local d, errs = find_base(base, roots)
  if not d then
    -- a broken file may hold it: report load errors rather than "not found"
    local extra = #errs > 0 and ("; files that failed to load: " .. table.concat(errs, "; ")) or ""
    error(("task.load: no task named '%s' under %s%s"):format(base, table.concat(roots, ":"), extra), 2)
  end
  if not variant then return d end
  for _, t in ipairs(d.tasks) do
    if t.variant == variant then return t end
  end
  error(("task.load: task '%s' has no variant '%s' (variants: %s)"):format(base, variant,
    table.concat(M.plain(d.variants), ", ")), 2)
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
  for _, dt in ipairs(sorted_keys(t.tolerance)) do
    local x = t.tolerance[dt]
    tols[#tols + 1] = ("%s: atol %g, rtol %g, %s"):format(dt, x.atol, x.rtol,
      x.matched >= 1 and "every element must match" or (("%.4g%% of elements must match"):format(x.matched * 100)))
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "An output element fails when |x - y| > atol and |x - y| / (|y| + 1e-8) > rtol; NaN and Inf fail. "
      .. "Tolerances: " .. table.concat(tols, "; ") .. "."
  return table.concat(lines, "\n")
end

return M
