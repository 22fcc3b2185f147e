-- klab.eval.plan: a candidate's launch plan, run in the sandbox and checked.
--
--   plan.run(task, source [, opts]) -> launch plan, or nil, reason, code
--       Runs source (default: the task's plan) in klab.sandbox with the task's
--       dimensions and validates what it returns. code is "EPLAN", "EMEMORY"
--       or "ELIMIT"; every failure is a plan_error, and reason is fit to show
--       a model. opts: {arch=, limits=, memory=, instructions=, seconds=,
--       name= (the chunk name in messages: the plan file's path; default "plan"),
--       complete= (a function(value) -> value | nil, reason applied to what the plan
--       returns before it is validated: a language front end's own fields)}.
--   plan.validate(task, value [, limits]) -> launch plan, or nil, reason
--   plan.env(task [, opts])          -> the plain table the plan sees
--   plan.limits([arch], [over])      -> device limits used by the checks
--   plan.check_params(launch, layout) -> true, or nil, reason
--       layout: the kernel's parameters {{offset=, size=}, ...} in order
--       (cuKernelGetParamInfo at run time).
--       info: {params = layout, static_shared = bytes, max_threads = n,
--              max_shared = opt-in limit per block}
--   plan.pack(launch, layout [, resolve]) -> {size=, items=, bytes=}, or nil, reason
--       The byte layout of the argument buffer; with resolve(arg) (a device
--       address for buffers and workspace, 128 bytes for a tensor map) it
--       also builds the bytes.
--   plan.check_compiled(launch, kernel)  -> nil | a plan_error detail: the
--       arguments against the cubin's parameters, before any GPU
--
-- What a plan sees: `dims` (name -> integer), each dimension as a global
-- (M, N, K), `buffers` (name -> {role, dtype, shape, numel, bytes}), `arch`
-- (or nil), `limits`, and the helpers cdiv(a, b), buffer(name),
-- workspace(name), tensormap{...}, u32(v), i32(v), u64(v), i64(v), f32(v),
-- f64(v). What it returns:
--
--   { launches = { { kernel = "gemm", grid = {gx, gy, gz}, block = {bx, by, bz},
--                    cluster = {cx, cy, cz} (optional), shared = bytes (default 0),
--                    args = { {buffer = "A"}, {tensormap = "tmA"}, {workspace = "w"},
--                             {u32 = M}, ... } }, ... },
--     tensormaps = { tmA = { buffer = "A", box = {64, 128}, dims = {K, M} (default:
--                    the buffer's shape), strides = {...}, swizzle = "128B", ... } },
--     workspace = { w = { bytes = n, zero = false } } }
--
-- grid, block and cluster may also be a number or {x=, y=, z=}. An argument
-- may be written {kind="buffer", name=...}, {kind="scalar", type=, value=},
-- {kind="tensormap", buffer=, box=, ...} (inline) or a bare buffer name.
-- Tensor map dims, box, strides and elem_strides are innermost first, as
-- cuTensorMapEncodeTiled takes them; strides are in bytes (rank - 1 of them).
--
-- The normalized plan: { launches = { {index=, kernel=, grid={x,y,z},
-- block={x,y,z}, cluster={x,y,z} or nil, shared=, raise_shared=bool,
-- threads=, args = { {kind="buffer", name=} | {kind="workspace", name=} |
-- {kind="tensormap", name=, buffer=, dtype=, rank=, dims=, strides=, box=,
-- elem_strides=, swizzle=, interleave=, l2promotion=, oob_fill=} |
-- {kind="scalar", type=, value=} } } }, workspace = { name = {bytes=, zero=} },
-- tensormaps = { name = <as in args> } }.

local shape = require("klab.task.shape")

local M = {}

local KiB = 1024
local DEFAULT_LIMITS = {
  -- A KernelBench Level 3 model is one plan: DeepNarrowMLP's 17 layers are
  -- 17 launches of one kernel.
  max_launches = 64,
  max_args = 256,
  max_threads = 1024,
  max_block = { 1024, 1024, 64 },
  max_grid = { 0x7fffffff, 65535, 65535 },
  max_cluster = 8,             -- portable cluster size; 16 needs the non-portable attribute
  max_shared = nil,            -- dynamic shared memory per block; nil = not checked
  max_param_bytes = 32764,     -- kernel parameter space (CUDA 12.1+, Volta and later)
  max_workspace = 16 * 1024 * KiB * KiB,
}
-- Opt-in shared memory per block by architecture (bytes).
local ARCH_SHARED = { sm_80 = 163 * KiB, sm_86 = 99 * KiB, sm_89 = 99 * KiB, sm_90 = 227 * KiB,
                      sm_100 = 227 * KiB, sm_103 = 227 * KiB, sm_120 = 99 * KiB }
local ARCH_CLUSTER = { sm_90 = 16, sm_100 = 16, sm_103 = 16 }

local SCALARS = {
  u32 = { size = 4, fmt = "<I4", int = true, lo = 0, hi = 0xffffffff },
  i32 = { size = 4, fmt = "<i4", int = true, lo = -0x80000000, hi = 0x7fffffff },
  u64 = { size = 8, fmt = "<I8", int = true, lo = 0, hi = math.maxinteger },
  i64 = { size = 8, fmt = "<i8", int = true, lo = math.mininteger, hi = math.maxinteger },
  f32 = { size = 4, fmt = "<f" },
  f64 = { size = 8, fmt = "<d" },
}
local SIZE_OF = { buffer = 8, workspace = 8, tensormap = 128 }
local SWIZZLE = { none = 0, ["32B"] = 32, ["64B"] = 64, ["128B"] = 128 }
local INTERLEAVE = { none = true, ["16B"] = true, ["32B"] = true }
local L2PROMO = { none = true, ["64B"] = true, ["128B"] = true, ["256B"] = true }
local OOBFILL = { none = true, nan = true }
local TMAP_DTYPES = { u8 = true, u16 = true, u32 = true, i32 = true, u64 = true, i64 = true, f16 = true,
                      f32 = true, f64 = true, bf16 = true, tf32 = true, fp8e4m3 = true, fp8e5m2 = true }

M.PRELUDE = [[
function cdiv(a, b) return (a + b - 1) // b end
function buffer(name) return { kind = "buffer", name = name } end
function workspace(name) return { kind = "workspace", name = name } end
function tensormap(t) t.kind = "tensormap"; return t end
function u32(v) return { kind = "scalar", type = "u32", value = v } end
function i32(v) return { kind = "scalar", type = "i32", value = v } end
function u64(v) return { kind = "scalar", type = "u64", value = v } end
function i64(v) return { kind = "scalar", type = "i64", value = v } end
function f32(v) return { kind = "scalar", type = "f32", value = v } end
function f64(v) return { kind = "scalar", type = "f64", value = v } end
]]

function M.limits(arch, over)
  local l = {}
  for k, v in pairs(DEFAULT_LIMITS) do l[k] = v end
  local family = arch and arch:match("^(sm_%d+)")
  if family then
    l.max_shared = ARCH_SHARED[family]
    l.max_cluster_nonportable = ARCH_CLUSTER[family]
  end
  for k, v in pairs(over or {}) do l[k] = v end
  return l
end

function M.env(task, opts)
  opts = opts or {}
  local dims = {}
  local env = { dims = dims, buffers = {}, arch = opts.arch, limits = {} }
  for k, v in pairs(task.dims) do
    dims[k] = v
    env[k] = v
  end
  for _, name in ipairs(task.buffer_order) do
    local b = task.buffers[name]
    local s = {}
    for i, x in ipairs(b.shape) do s[i] = x end
    env.buffers[name] = { role = b.role, dtype = b.dtype, shape = s, numel = b.numel, bytes = b.bytes }
  end
  for k, v in pairs(M.limits(opts.arch, opts.limits)) do
    if type(v) ~= "table" then env.limits[k] = v end
  end
  return env
end

-- ---- validation -------------------------------------------------------

local Reject = {}

local function reject(fmt, ...)
  error(setmetatable({ msg = select("#", ...) > 0 and fmt:format(...) or fmt }, Reject), 0)
end

local function keys_ok(t, allowed, where)
  for k in pairs(t) do
    if not allowed[k] then
      local names = {}
      for a in pairs(allowed) do names[#names + 1] = a end
      table.sort(names)
      reject("%s: unknown field '%s' (expected %s)", where, tostring(k), table.concat(names, ", "))
    end
  end
end

local function int_field(v, where, lo, hi)
  local i = type(v) == "number" and math.tointeger(v) or nil
  if i == nil then reject("%s must be an integer, got %s", where, type(v) == "number" and tostring(v) or type(v)) end
  if lo and i < lo then reject("%s = %d is below %d", where, i, lo) end
  if hi and i > hi then reject("%s = %d is above %d", where, i, hi) end
  return i
end

-- {x,y,z}, {x=,y=,z=} or a number -> {x, y, z} (missing entries are 1).
local function dim3(v, where)
  if type(v) == "number" then v = { v } end
  if type(v) ~= "table" then reject("%s must be a list {x, y, z} or a number, got %s", where, type(v)) end
  local out = {}
  local named = v.x ~= nil or v.y ~= nil or v.z ~= nil
  for k in pairs(v) do
    local okk = named and (k == "x" or k == "y" or k == "z") or (not named and math.type(k) == "integer" and k >= 1 and k <= 3)
    if not okk then reject("%s has an unexpected entry '%s'", where, tostring(k)) end
  end
  local names = { "x", "y", "z" }
  for i = 1, 3 do
    local x = named and v[names[i]] or v[i]
    if x == nil then x = 1 end
    out[i] = int_field(x, where .. "." .. names[i], 1)
  end
  return out
end

local function norm_scalar(ty, value, where)
  local s = SCALARS[ty]
  if not s then reject("%s: unknown scalar type '%s' (u32, i32, u64, i64, f32, f64)", where, tostring(ty)) end
  if type(value) ~= "number" then reject("%s: a %s value must be a number, got %s", where, ty, type(value)) end
  if s.int then
    value = int_field(value, where .. " (" .. ty .. ")", s.lo, s.hi)
  else
    value = value + 0.0
  end
  return { kind = "scalar", type = ty, value = value }
end

-- A tensor map over a task buffer: checks the cuTensorMapEncodeTiled rules
-- that the host would otherwise hit at encode time, and that the map stays
-- inside its buffer.
local function norm_tensormap(task, t, name, where)
  if type(t) ~= "table" then reject("%s must be a table, got %s", where, type(t)) end
  keys_ok(t, { kind = true, name = true, buffer = true, [1] = true, dtype = true, dims = true, box = true,
               strides = true, elem_strides = true, swizzle = true, interleave = true,
               l2promotion = true, oob_fill = true }, where)
  local bname = t.buffer or t[1]
  local b = type(bname) == "string" and task.buffers[bname]
  if not b then
    reject("%s: tensor maps may only cover task buffers; unknown buffer '%s' (buffers: %s)", where,
      tostring(bname), table.concat(task.buffer_order, ", "))
  end
  local dtype = t.dtype or b.dtype
  local d = shape.dtype(dtype)
  if not d or not TMAP_DTYPES[d.name] then reject("%s: dtype '%s' cannot be used in a tensor map", where, tostring(dtype)) end
  if d.bits ~= b.elem_bits then
    reject("%s: dtype %s has %d-bit elements but buffer %s holds %d-bit %s", where, d.name, d.bits, bname,
      b.elem_bits, b.dtype)
  end
  local esize = d.bits // 8
  local function list(v, key, n)
    if type(v) ~= "table" then reject("%s.%s must be a list", where, key) end
    if n and #v ~= n then reject("%s.%s has %d entries, expected %d (the rank)", where, key, #v, n) end
    local out = {}
    for i = 1, #v do out[i] = v[i] end
    for k in pairs(v) do
      if math.type(k) ~= "integer" or k < 1 or k > #v then reject("%s.%s must be a list", where, key) end
    end
    return out
  end
  local dims
  if t.dims ~= nil then
    dims = list(t.dims, "dims")
  else
    dims = {}
    for i = #b.shape, 1, -1 do dims[#dims + 1] = b.shape[i] end
  end
  local rank = #dims
  if rank < 1 or rank > 5 then reject("%s: rank %d is outside 1..5", where, rank) end
  for i = 1, rank do dims[i] = int_field(dims[i], ("%s.dims[%d]"):format(where, i), 1, 1 << 32) end
  local interleave = t.interleave or "none"
  if not INTERLEAVE[interleave] then reject("%s.interleave must be none, 16B or 32B", where) end
  if interleave ~= "none" and rank < 3 then reject("%s: interleaved tensor maps need rank >= 3", where) end
  local align = interleave == "32B" and 32 or 16
  local strides
  if t.strides ~= nil then
    strides = list(t.strides, "strides", rank - 1)
    for i = 1, rank - 1 do strides[i] = int_field(strides[i], ("%s.strides[%d]"):format(where, i), 1, (1 << 40) - 1) end
  else
    strides = {}
    local s = esize
    for i = 1, rank - 1 do
      s = s * dims[i]
      strides[i] = s
    end
  end
  for i = 1, rank - 1 do
    if strides[i] % align ~= 0 then
      reject("%s: stride %d (%d bytes) is not a multiple of %d bytes; TMA needs rows aligned to %d bytes " ..
        "(here the innermost extent %d of %s gives %d-byte rows)", where, i, strides[i], align, align,
        dims[1], d.name, dims[1] * esize)
    end
  end
  -- the farthest byte the map can address must lie inside the buffer
  local last = esize
  for i = 2, rank do last = last + (dims[i] - 1) * strides[i - 1] end
  last = last + (dims[1] - 1) * esize
  if last > b.bytes then
    reject("%s: the map addresses %d bytes but buffer %s has only %d", where, last, bname, b.bytes)
  end
  local box = list(t.box, "box", rank)
  for i = 1, rank do box[i] = int_field(box[i], ("%s.box[%d]"):format(where, i), 1, 256) end
  if interleave == "none" and (box[1] * esize) % 16 ~= 0 then
    reject("%s: the inner box dimension (%d x %d bytes) must be a multiple of 16 bytes", where, box[1], esize)
  end
  local es
  if t.elem_strides ~= nil then
    es = list(t.elem_strides, "elem_strides", rank)
    for i = 1, rank do es[i] = int_field(es[i], ("%s.elem_strides[%d]"):format(where, i), 1, 8) end
  else
    es = {}
    for i = 1, rank do es[i] = 1 end
  end
  local swz = t.swizzle or "none"
  if SWIZZLE[swz] == nil then reject("%s.swizzle must be none, 32B, 64B or 128B, got %s", where, tostring(swz)) end
  if interleave == "none" and swz ~= "none" and box[1] * esize > SWIZZLE[swz] then
    reject("%s: the inner box dimension (%d bytes) exceeds the %s swizzle span", where, box[1] * esize, swz)
  end
  if interleave == "32B" and swz == "32B" then reject("%s: 32B interleave needs a swizzle other than 32B", where) end
  local l2 = t.l2promotion or "none"
  if not L2PROMO[l2] then reject("%s.l2promotion must be none, 64B, 128B or 256B", where) end
  local oob = t.oob_fill or "none"
  if not OOBFILL[oob] then reject("%s.oob_fill must be none or nan", where) end
  if oob == "nan" and not d.float then reject("%s: oob_fill nan needs a floating-point dtype", where) end
  return { kind = "tensormap", name = name, buffer = bname, dtype = d.name, rank = rank, dims = dims,
           strides = strides, box = box, elem_strides = es, swizzle = swz, interleave = interleave,
           l2promotion = l2, oob_fill = oob }
end

local function norm_arg(task, p, a, where)
  if type(a) == "string" then
    if task.buffers[a] then return { kind = "buffer", name = a } end
    if p.workspace[a] then return { kind = "workspace", name = a } end
    reject("%s: unknown buffer '%s' (buffers: %s)", where, a, table.concat(task.buffer_order, ", "))
  end
  if type(a) ~= "table" then reject("%s must be a table, got %s", where, type(a)) end
  local kind = a.kind
  if kind == nil then
    -- shorthand: exactly one of buffer=, workspace=, tensormap=, <scalar type>=
    local found
    for k in pairs(a) do
      if k == "buffer" or k == "workspace" or k == "tensormap" or SCALARS[k] then
        if found then reject("%s: give one of buffer, workspace, tensormap or a scalar type, not both %s and %s", where, found, k) end
        found = k
      else
        reject("%s: unknown field '%s' (write {buffer=\"A\"}, {tensormap=\"tmA\"}, {workspace=\"w\"} or {u32=n})", where, tostring(k))
      end
    end
    if not found then reject("%s is empty", where) end
    if SCALARS[found] then return norm_scalar(found, a[found], where) end
    if found == "tensormap" then
      local tm = a.tensormap
      if type(tm) == "table" then return norm_tensormap(task, tm, nil, where .. " (tensor map)") end
      local named = p.tensormaps[tm]
      if not named then reject("%s: no tensor map named '%s' in the plan's tensormaps", where, tostring(tm)) end
      return named
    end
    a = { kind = found, name = a[found] }
    kind = found
  end
  if kind == "buffer" then
    keys_ok(a, { kind = true, name = true }, where)
    if not task.buffers[a.name] then
      reject("%s: unknown buffer '%s' (buffers: %s)", where, tostring(a.name), table.concat(task.buffer_order, ", "))
    end
    return { kind = "buffer", name = a.name }
  elseif kind == "workspace" then
    keys_ok(a, { kind = true, name = true }, where)
    if not p.workspace[a.name] then
      reject("%s: unknown workspace '%s' (declare it in the plan's workspace table)", where, tostring(a.name))
    end
    return { kind = "workspace", name = a.name }
  elseif kind == "scalar" then
    keys_ok(a, { kind = true, type = true, value = true }, where)
    return norm_scalar(a.type, a.value, where)
  elseif kind == "tensormap" then
    return norm_tensormap(task, a, nil, where)
  end
  reject("%s: unknown argument kind '%s' (buffer, workspace, tensormap, scalar)", where, tostring(kind))
end

local function validate(task, v, limits)
  if type(v) ~= "table" then reject("the plan must return a table, got %s", type(v)) end
  keys_ok(v, { launches = true, tensormaps = true, workspace = true }, "plan")
  local p = { launches = {}, workspace = {}, tensormaps = {} }

  if v.workspace ~= nil then
    if type(v.workspace) ~= "table" then reject("workspace must be a table name -> {bytes=}") end
    for name, w in pairs(v.workspace) do
      local where = "workspace." .. tostring(name)
      if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then reject("%s: names must be identifiers", where) end
      if task.buffers[name] then reject("%s: the name is taken by a task buffer", where) end
      if type(w) == "number" then w = { bytes = w } end
      if type(w) ~= "table" then reject("%s must be {bytes = n}", where) end
      keys_ok(w, { bytes = true, zero = true }, where)
      local bytes = int_field(w.bytes, where .. ".bytes", 1, limits.max_workspace)
      if w.zero ~= nil and type(w.zero) ~= "boolean" then reject("%s.zero must be a boolean", where) end
      p.workspace[name] = { bytes = bytes, zero = w.zero == true }
    end
  end

  if v.tensormaps ~= nil then
    if type(v.tensormaps) ~= "table" then reject("tensormaps must be a table name -> {buffer=, box=, ...}") end
    for name, t in pairs(v.tensormaps) do
      if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
        reject("tensormaps.%s: names must be identifiers", tostring(name))
      end
      p.tensormaps[name] = norm_tensormap(task, t, name, "tensormaps." .. name)
    end
  end

  local ls = v.launches
  if type(ls) ~= "table" then reject("the plan must return {launches = {...}}") end
  local n = #ls
  if n == 0 then reject("the plan has no launches") end
  for k in pairs(ls) do
    if math.type(k) ~= "integer" or k < 1 or k > n then reject("launches must be a list") end
  end
  if n > limits.max_launches then reject("the plan has %d launches; at most %d are allowed", n, limits.max_launches) end

  for i, l in ipairs(ls) do
    local where = ("launch %d"):format(i)
    if type(l) ~= "table" then reject("%s must be a table", where) end
    if type(l.kernel) ~= "string" or not l.kernel:match("^[%a_$][%w_$]*$") or #l.kernel > 1024 then
      reject("%s: kernel must be the kernel's entry name, got %s", where, type(l.kernel) == "string" and ("'" .. l.kernel .. "'") or type(l.kernel))
    end
    where = ("launch %d (%s)"):format(i, l.kernel)
    keys_ok(l, { kernel = true, grid = true, block = true, cluster = true, shared = true, args = true }, where)
    if l.grid == nil then reject("%s: grid is missing", where) end
    if l.block == nil then reject("%s: block is missing", where) end
    local grid, block = dim3(l.grid, where .. ": grid"), dim3(l.block, where .. ": block")
    local names = { "x", "y", "z" }
    for d = 1, 3 do
      if grid[d] > limits.max_grid[d] then
        reject("%s: grid.%s = %d is above the limit %d", where, names[d], grid[d], limits.max_grid[d])
      end
      if block[d] > limits.max_block[d] then
        reject("%s: block.%s = %d is above the limit %d", where, names[d], block[d], limits.max_block[d])
      end
    end
    local threads = block[1] * block[2] * block[3]
    if threads > limits.max_threads then
      reject("%s: block has %d threads (%dx%dx%d); at most %d per block", where, threads, block[1], block[2],
        block[3], limits.max_threads)
    end
    local cluster
    if l.cluster ~= nil then
      cluster = dim3(l.cluster, where .. ": cluster")
      local size = cluster[1] * cluster[2] * cluster[3]
      local cap = limits.max_cluster_nonportable or limits.max_cluster
      if size > cap then reject("%s: cluster of %d blocks is above the limit %d", where, size, cap) end
      for d = 1, 3 do
        if grid[d] % cluster[d] ~= 0 then
          reject("%s: grid.%s = %d is not divisible by cluster.%s = %d", where, names[d], grid[d], names[d], cluster[d])
        end
      end
    end
    local shared = l.shared == nil and 0 or int_field(l.shared, where .. ": shared", 0)
    if limits.max_shared and shared > limits.max_shared then
      reject("%s: %d bytes of dynamic shared memory is above the device limit of %d bytes", where, shared,
        limits.max_shared)
    end
    local args = {}
    local raw = l.args or {}
    if type(raw) ~= "table" then reject("%s: args must be a list", where) end
    if #raw > limits.max_args then reject("%s: %d arguments; at most %d", where, #raw, limits.max_args) end
    for k in pairs(raw) do
      if math.type(k) ~= "integer" or k < 1 or k > #raw then reject("%s: args must be a list", where) end
    end
    for j, a in ipairs(raw) do args[j] = norm_arg(task, p, a, ("%s: argument %d"):format(where, j)) end
    p.launches[i] = {
      index = i, kernel = l.kernel, grid = grid, block = block, cluster = cluster, shared = shared,
      raise_shared = shared > 48 * KiB, threads = threads, args = args,
    }
  end
  return p
end

function M.validate(task, value, limits)
  limits = limits or M.limits()
  local ok, res = pcall(validate, task, value, limits)
  if ok then return res end
  if getmetatable(res) == Reject then return nil, res.msg end
  error(res, 0)
end

function M.run(task, source, opts)
  opts = opts or {}
  source = source or task.plan
  if type(source) ~= "string" then error("plan.run: the plan source must be a string", 2) end
  local sandbox = require("klab.sandbox")
  local limits = M.limits(opts.arch, opts.limits)
  -- Messages name the user's file when there is one ("DIR/plan.lua:3: ...").
  local value, msg, code = sandbox.run(source, opts.name or "plan", M.env(task, opts), {
    memory = opts.memory or 16 * KiB * KiB,
    instructions = opts.instructions or 5000000,
    seconds = opts.seconds or 2,
    prelude = M.PRELUDE,
  })
  if code then return nil, msg, code end
  -- A language front end completes its plans (klab.lang.triton sets the block).
  if opts.complete then
    local why
    value, why = opts.complete(value)
    if not value then return nil, tostring(why), "EPLAN" end
  end
  local p, reason = M.validate(task, value, limits)
  if not p then return nil, reason, "EPLAN" end
  return p
end

-- ---- parameters -------------------------------------------------------

local function arg_size(a)
  if a.kind == "scalar" then return SCALARS[a.type].size end
  return SIZE_OF[a.kind]
end

local function describe_arg(a)
  if a.kind == "scalar" then return ("%s %s"):format(a.type, tostring(a.value)) end
  if a.kind == "tensormap" then return "tensor map over " .. a.buffer end
  return ("%s %s"):format(a.kind, a.name)
end

local function check_layout(layout)
  if type(layout) ~= "table" then return nil, "the parameter layout must be a list" end
  for i, prm in ipairs(layout) do
    if type(prm) ~= "table" or math.type(prm.offset) ~= "integer" or math.type(prm.size) ~= "integer" then
      return nil, ("parameter %d of the layout needs integer offset and size"):format(i)
    end
  end
  return true
end

-- The first difference of the launch's arguments from the layout, or nil.
-- sizes_only: the layout is the cubin's, whose offsets count from another
-- base than the driver's, so a tensor map's alignment is left to the run.
local function param_mismatch(launch, layout, sizes_only)
  local args = launch.args
  if #args ~= #layout then
    return ("kernel %s takes %d parameter%s, the plan passes %d argument%s"):format(launch.kernel,
      #layout, #layout == 1 and "" or "s", #args, #args == 1 and "" or "s")
  end
  for i, a in ipairs(args) do
    local want, prm = arg_size(a), layout[i]
    if prm.size ~= want then
      return ("argument %d (%s) is %d bytes, but kernel parameter %d is %d bytes"):format(i,
        describe_arg(a), want, i, prm.size)
    end
    if a.kind == "tensormap" and not sizes_only and prm.offset % 64 ~= 0 then
      return ("argument %d (%s) needs a 64-byte aligned parameter (a const __grid_constant__ CUtensorMap), " ..
        "kernel parameter %d is at offset %d"):format(i, describe_arg(a), i, prm.offset)
    end
  end
end

function M.check_params(launch, layout)
  local ok, err = check_layout(layout)
  if not ok then error("plan.check_params: " .. err, 2) end
  local why = param_mismatch(launch, layout)
  if why then return nil, ("launch %d (%s): %s"):format(launch.index or 1, launch.kernel, why) end
  return true
end

-- The bytes the launch's arguments take packed in order, each at its
-- natural alignment, as the compiler lays out parameters: the end of the
-- last. nil with a tensor map, whose 64-byte alignment counts from where
-- the parameter space starts, which only the kernel's layout says.
local function packed_bytes(args)
  local pos = 0
  for _, a in ipairs(args) do
    if a.kind == "tensormap" then return nil end
    local size = arg_size(a)
    pos = (pos + size - 1) // size * size + size
  end
  return pos
end

-- The launch against what the cubin says of its kernel (a klab.jit kernel
-- record: params, each parameter's offset and size where the cubin gives
-- them all; param_bytes, their total), without a GPU: nil when they agree
-- or nothing is known, else the detail of a plan_error {kind =
-- "param_bytes", index =, kernel =, expected = the kernel's bytes, packed =
-- the arguments' bytes, why = the first parameter that differs}.
function M.check_compiled(launch, kernel)
  if type(kernel) ~= "table" then return nil end
  local detail = { kind = "param_bytes", index = launch.index or 1, kernel = launch.kernel,
    expected = kernel.param_bytes, packed = packed_bytes(launch.args) }
  if kernel.params then
    detail.why = param_mismatch(launch, kernel.params, true)
    return detail.why and detail or nil
  end
  if detail.expected and detail.packed and detail.expected ~= detail.packed then return detail end
end

function M.pack(launch, layout, resolve)
  local ok, reason = M.check_params(launch, layout)
  if not ok then return nil, reason end
  local items, size = {}, 0
  for i, a in ipairs(launch.args) do
    local prm = layout[i]
    items[i] = { index = i, offset = prm.offset, size = prm.size, kind = a.kind, arg = a }
    if prm.offset + prm.size > size then size = prm.offset + prm.size end
  end
  if size > DEFAULT_LIMITS.max_param_bytes then
    return nil, ("launch %d (%s): %d bytes of parameters exceed the %d-byte limit"):format(launch.index or 1,
      launch.kernel, size, DEFAULT_LIMITS.max_param_bytes)
  end
  local out = { size = size, items = items }
  if not resolve then return out end
  local order = {}
  for i = 1, #items do order[i] = items[i] end
  table.sort(order, function(x, y) return x.offset < y.offset end)
  local parts, pos = {}, 0
  for _, it in ipairs(order) do
    if it.offset < pos then error(("plan.pack: parameter %d overlaps the previous one"):format(it.index), 2) end
    parts[#parts + 1] = string.rep("\0", it.offset - pos)
    local a, bytes = it.arg
    if a.kind == "scalar" then
      bytes = string.pack(SCALARS[a.type].fmt, a.value)
    else
      local v = resolve(a)
      if a.kind == "tensormap" then
        if type(v) ~= "string" or #v ~= 128 then error("plan.pack: resolve must give 128 bytes for a tensor map", 2) end
        bytes = v
      else
        if math.type(v) ~= "integer" then error("plan.pack: resolve must give an integer address for " .. a.name, 2) end
        bytes = string.pack("<I8", v)
      end
    end
    parts[#parts + 1] = bytes
    pos = it.offset + #bytes
  end
  parts[#parts + 1] = string.rep("\0", size - pos)
  out.bytes = table.concat(parts)
  return out
end

return M
