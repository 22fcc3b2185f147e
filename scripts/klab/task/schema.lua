-- klab.task.schema: the fields of a task file, checked. check() takes the
-- raw fields a task file set and returns them normalized (every problem
-- raises "<file>: field '<path>': <what>" as a LoadError); variant() builds
-- the task of one variant from them. The field list is docs/tasks.md's.
--
--   schema.check(file, fields)            -> the fields shared by every variant
--   schema.variant(file, common, fields, v) -> one variant's task (not yet frozen)
--   schema.fail(file, path, msg [, variant])  raises a LoadError
--   schema.LoadError, schema.FIELDS, schema.plain(v), schema.sorted_keys(t)

local shape = require("klab.task.shape")

local M = {}

local FIELDS = {
  name = true, family = true, description = true, dims = true, variants = true, buffers = true,
  inputs = true, scales = true, reference = true, baseline = true, tolerance = true,
  flops = true, bytes = true, targets = true, plan = true, trials = true, distributions = true,
  tags = true, kernel = true, precision = true, work = true, tensor_type = true, zero_dims = true,
  compose = true, kernelbench = true, oracle = true,
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
M.FIELDS = FIELDS

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
M.LoadError, M.fail = LoadError, fail

-- A deep, mutable copy of a (frozen) descriptor.
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
      fail(file, path, ("unknown key '%s'%s (allowed: %s)"):format(tostring(k),
        require("klab.errors").did_you_mean(k, names), table.concat(names, ", ")))
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
M.sorted_keys = sorted_keys

local function expand_text(file, text, dims, extra)
  return (text:gsub("%${([%w_]+)}", function(k)
    local v = dims[k]
    if v == nil then v = extra[k] end
    if v == nil then fail(file, "description", ("unknown placeholder '${%s}'"):format(k)) end
    return tostring(v)
  end))
end

-- The parts of a task file's check, in the order they are checked (the
-- first problem found is the one said): each reads the raw fields f and
-- fills the normalized table c.

-- name, family, description, kernel, after the required fields.
local function check_identity(file, f, c)
  for _, k in ipairs(REQUIRED) do
    if f[k] == nil then fail(file, k, "is missing (required)") end
  end
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
end

-- dims: the ordered list of dimension names; returns them as a set.
local function check_dims(file, f, c)
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
  return seen
end

local function check_tags(file, f, c)
  c.tags = {}
  if f.tags ~= nil then
    check_list(file, "tags", f.tags, function(p, t) if not is_name(t) then fail(file, p, "must be a tag string") end end)
    c.tags = f.tags
  end
end

-- variants: each a value for every dimension, a name, tags.
local function check_variants(file, f, c)
  local nv = check_list(file, "variants", f.variants)
  if nv == 0 then fail(file, "variants", "needs at least one variant") end
  c.variants = {}
  local vnames = {}
  -- Dimensions that may be 0 (a padding, say); the others must be positive.
  local zero_ok = {}
  if f.zero_dims ~= nil then
    check_type(file, "zero_dims", f.zero_dims, "table")
    local is_dim = {}
    for _, d in ipairs(f.dims) do is_dim[d] = true end
    for i, d in ipairs(f.zero_dims) do
      if not is_dim[d] then fail(file, "zero_dims[" .. i .. "]", "'" .. tostring(d) .. "' is not one of dims") end
      zero_ok[d] = true
    end
  end
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
      if x < 0 or (x == 0 and not zero_ok[d]) then
        fail(file, p .. "." .. d, (zero_ok[d] and "must not be negative, got " or "must be positive, got ") .. x)
      end
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
end

-- buffers: role, dtype, a shape over the dimensions (dims: their set),
-- layout; and the order buffers are passed in.
local function check_buffers(file, f, c, dims)
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
        if not dims[nm] then
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
end

-- scales (fp8): data buffer -> {buffer = scale buffer, value = v}: the
-- per-tensor scale a kernel must apply, written into the scale buffer (an
-- f32 input of one element) before every run.
-- Returns the set of scale buffers.
local function check_scales(file, f, c)
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
  return scale_bufs
end

-- inputs: one distribution per input buffer that is not a scale.
local function check_inputs(file, f, c, scale_bufs)
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
end

-- reference: kernels the task ships, run by klab in the worker like its
-- own ({source=, plan=, units=, derive=, derived=, sample=}); units are
-- expressions over the dimensions (dims: their set).
local function check_reference(file, f, c, dims)
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
        if not dims[nm] then fail(file, "reference.units." .. bname, ("unknown dimension '%s'"):format(nm)) end
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
end

-- baseline: a library operation ({lib=, op=, ...}, read by klab.eval.baselines.<lib>)
-- or a kernel the task ships ({source=, plan=, name=}).
local function check_baseline(file, f, c)
  check_type(file, "baseline", f.baseline, "table")
  -- floor_note: why the baseline stays far from the physical floor on
  -- the H200 (docs/tasks.md gives each baseline's fraction of it).
  if f.baseline.floor_note ~= nil then check_type(file, "baseline.floor_note", f.baseline.floor_note, "string") end
  c.baseline = {}
  for k, v in pairs(f.baseline) do c.baseline[k] = v end
  if f.baseline.source ~= nil then
    check_keys(file, "baseline", f.baseline, { source = true, plan = true, name = true, note = true, prologue = true,
      floor_note = true })
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
    -- shipped: a kernel the task ships beside the library's (where the
    -- library is far from the physical floor), timed as well; the faster
    -- of the two is the baseline (klab.eval.stage.baseline).
    if f.baseline.shipped ~= nil then
      local sh = f.baseline.shipped
      check_type(file, "baseline.shipped", sh, "table")
      check_keys(file, "baseline.shipped", sh, { source = true, plan = true, name = true, note = true })
      c.baseline.shipped = { source = check_source(file, "baseline.shipped.source", sh.source),
        plan = check_plan_text(file, "baseline.shipped.plan", sh.plan), name = sh.name, note = sh.note }
      if sh.name ~= nil then check_type(file, "baseline.shipped.name", sh.name, "string") end
      if sh.note ~= nil then check_type(file, "baseline.shipped.note", sh.note, "string") end
    end
  end
end

-- work and precision: what bounds the task's FLOPs.
local function check_work(file, f, c, scale_bufs)
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
end

-- tolerance: output dtype -> {atol, rtol, matched}, one for every output's dtype.
local function check_tolerance(file, f, c)
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
end

-- flops and bytes, targets (arch -> instruction families) and the tensor
-- cores' operand type.
local function check_targets(file, f, c)
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
end

-- plan (Lua source, compiled here, not run, to catch syntax errors early),
-- trials and input distributions.
local function check_runs(file, f, c)
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
end

-- The KernelBench problems the file poses (klab.task.kernelbench) and its
-- semantics as one PyTorch expression (klab.task.oracle).
local function check_claims(file, f, c)
  local function fail_here(path, msg) fail(file, path, msg) end
  c.kernelbench = require("klab.task.kernelbench").claims(f.kernelbench, fail_here)
  c.oracle = require("klab.task.oracle").check(f.oracle, c, fail_here)
end

-- Checks the fields shared by every variant; returns a normalized table.
function M.check(file, f)
  local c = {}
  check_identity(file, f, c)
  local dims = check_dims(file, f, c)
  check_tags(file, f, c)
  check_variants(file, f, c)
  check_buffers(file, f, c, dims)
  local scale_bufs = check_scales(file, f, c)
  check_inputs(file, f, c, scale_bufs)
  check_reference(file, f, c, dims)
  check_baseline(file, f, c)
  check_work(file, f, c, scale_bufs)
  check_tolerance(file, f, c)
  check_targets(file, f, c)
  check_runs(file, f, c)
  check_claims(file, f, c)
  return c
end

-- Builds the task of one variant.
function M.variant(file, c, f, v)
  local t = {
    kind = "task", name = c.name .. "/" .. v.name, base = c.name, variant = v.name,
    family = c.family, file = file, dims = v.dims, dim_order = c.dim_order,
    kernel = c.kernel, inputs = c.inputs, scales = c.scales, reference = c.reference,
    baseline = c.baseline, tolerance = c.tolerance, targets = c.targets, plan = c.plan,
    trials = c.trials, distributions = c.distributions, buffer_order = c.buffer_order,
    precision = c.precision, work = c.work, tensor_type = c.tensor_type, kernelbench = c.kernelbench,
    oracle = c.oracle,
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
  -- A shipped baseline's library calls described per variant (a composed
  -- task's cuDNN convolution, an MLP's layers): the same, for each call of
  -- baseline.prologue (one call or a list).
  local pro = c.baseline.prologue
  if type(pro) == "table" then
    local calls = pro.lib ~= nil and { pro } or pro
    local done, any = {}, false
    for i, call in ipairs(calls) do
      local where = pro.lib ~= nil and "baseline.prologue.spec" or ("baseline.prologue[%d].spec"):format(i)
      local p = {}
      for k, x in pairs(call) do p[k] = x end
      if type(call.spec) == "function" then
        local dd = {}
        for k, x in pairs(v.dims) do dd[k] = x end
        local ok, spec = pcall(call.spec, dd)
        if not ok then fail(file, where, "raised: " .. tostring(spec), v.name) end
        if type(spec) ~= "table" then fail(file, where, "must return a table, got " .. type(spec), v.name) end
        p.spec, any = M.plain(spec), true
      end
      done[i] = p
    end
    if any then
      local b = {}
      for k, x in pairs(t.baseline) do b[k] = x end
      b.prologue = pro.lib ~= nil and done[1] or done
      t.baseline = b
    end
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

return M
