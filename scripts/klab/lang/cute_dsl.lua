-- klab.lang.cute_dsl: a CuTe DSL candidate (a kernel.py written with
-- nvidia-cutlass-dsl) as a cubin and a plan.
--
--   cute_dsl.venv()                  -> the pinned environment's folder | nil, reason
--   cute_dsl.claims(code)            -> whether a kernel.py is CuTe DSL (it imports cutlass)
--   cute_dsl.shape(task, value, meta) -> the plan value as the pipeline takes it
--                                       | nil, reason (a plan_error)
--   cute_dsl.arguments(task, plan)   -> the driver's "args" | nil, reason
--   cute_dsl.compile{code=, name=, arch=, task=, plan=, plan_value=, cache=}
--       -> jit result (of klab's ptxas on the DSL's PTX), with .cute_dsl =
--          {version=, confinement=, seconds=, block=} | nil, message, code [, partial]
--   cute_dsl.build(run)              -> klab.lang.compile's returns
--
-- A kernel.py is CuTe DSL when it imports cutlass (`import cutlass`,
-- `import cutlass.cute as cute`, `from cutlass ...`), else Triton. Its plan
-- has one launch, whose kernel names the @cute.jit host function to
-- compile (or, left out, the only one), which launches one @cute.kernel.
-- klab compiles that function for the run's architecture with a fake tensor
-- per buffer argument (its dtype, shape and layout compiled in: one compile
-- per variant) and a run-time value per scalar, in the plan's order; the
-- PTX entry is renamed to the host function's name. The block is the
-- entry's .reqntid (the launch's block in the host function); a plan that
-- names another is a plan_error. Dynamic shared memory is the plan's
-- `shared` (default 0).
--
-- The child that runs the candidate's Python is held as host/lang/pychild.h
-- says (klab.lang.pychild); its PTX is assembled by klab.jit like any PTX.

local pychild = require "klab.lang.pychild"
local versions = require "klab.lang.versions"

local M = {}

M.version = versions.cutlass_dsl

M.title = "CuTe DSL"
M.file = "kernel.py"
M.suffixes = { ".py" }
M.fences = { "python" }
M.more_fences = { "py" }
M.kernel_hint = "a @cute.kernel launched by a @cute.jit function in CuTe DSL (it imports cutlass)"
M.reply_default = false
M.records = { "cute_dsl" }

function M.kernel(code) return code:find("@cute%.kernel") ~= nil and M.claims(code) end
function M.untagged(code) return M.claims(code) end

function M.venv()
  return pychild.venv("cutlass_dsl-" .. M.version, "CuTe DSL (nvidia-cutlass-dsl)", M.version, "it")
end

-- A kernel.py is CuTe DSL's when it imports cutlass (klab.lang's claims).
function M.claims(code)
  for line in code:gmatch("[^\n]*") do
    if line:match("^%s*import%s+cutlass[%s%.,]") or line:match("^%s*import%s+cutlass$")
        or line:match("^%s*from%s+cutlass[%s%.]") then
      return true
    end
  end
  return false
end

-- klab's dtypes as the DSL's type names.
local DTYPE = { f32 = "Float32", f16 = "Float16", bf16 = "BFloat16", f64 = "Float64", i8 = "Int8", u8 = "Uint8",
  i16 = "Int16", u16 = "Uint16", i32 = "Int32", u32 = "Uint32", i64 = "Int64", u64 = "Uint64",
  fp8e4m3 = "Float8E4M3FN", fp8e5m2 = "Float8E5M2" }
local SCALAR = { u32 = "Uint32", i32 = "Int32", u64 = "Uint64", i64 = "Int64", f32 = "Float32", f64 = "Float64" }

local function same_block(a, b)
  if type(a) == "number" then a = { a, 1, 1 } end
  if type(a) ~= "table" then return false end
  local x, y, z = a[1] or a.x, a[2] or a.y or 1, a[3] or a.z or 1
  return x == b[1] and y == b[2] and z == b[3]
end

-- The plan value with its launch made one the pipeline knows; meta: the
-- compile's (nil before it: the plan's block, else one thread, for the
-- first check).
function M.shape(task, v, meta)
  if type(v) ~= "table" or type(v.launches) ~= "table" then return v end
  if #v.launches ~= 1 then
    return nil, ("a CuTe DSL plan has one launch (its host function's one kernel), this one has %d"):format(#v.launches)
  end
  local l = v.launches[1]
  if type(l) ~= "table" then return v end
  local out = {}
  for k, x in pairs(l) do out[k] = x end
  if meta and meta.block then
    if l.block ~= nil and not same_block(l.block, meta.block) then
      return nil, ("launch 1 (%s): the plan's block is not the kernel's: its host function launches {%d, %d, %d} "
        .. "(.reqntid); leave block out"):format(tostring(l.kernel), table.unpack(meta.block))
    end
    out.block = meta.block
  elseif meta and l.block == nil then
    return nil, ("launch 1 (%s): the kernel has no .reqntid (a block fixed at compile time): name the plan's block")
      :format(tostring(l.kernel))
  elseif l.block == nil then
    out.block = 1
  end
  local c = {}
  for k, x in pairs(v) do c[k] = x end
  c.launches = { out }
  return c
end

-- A buffer's shape and strides in elements (plain lists, for the
-- request): row-major (the last dimension contiguous) or column-major (the
-- first).
local function shape_strides(b)
  local n, shape, s, acc = #b.shape, {}, {}, 1
  local first, last, step = n, 1, -1
  if b.layout == "col" then first, last, step = 1, n, 1 end
  for i = first, last, step do
    shape[i], s[i] = b.shape[i], acc
    acc = acc * b.shape[i]
  end
  return shape, s
end

function M.arguments(task, plan)
  local out = {}
  for i, a in ipairs(plan.launches[1].args) do
    if a.kind == "buffer" then
      local b = task.buffers[a.name]
      if not DTYPE[b.dtype] then
        return nil, ("argument %d: buffer %s of dtype %s has no CuTe DSL type"):format(i, a.name, b.dtype)
      end
      local shape, strides = shape_strides(b)
      out[i] = { tensor = { dtype = DTYPE[b.dtype], shape = shape, strides = strides } }
    elseif a.kind == "scalar" then
      out[i] = { scalar = { type = SCALAR[a.type], value = a.value } }
    else
      return nil, ("argument %d: a CuTe DSL kernel takes task buffers and scalars, not a %s"):format(i, a.kind)
    end
  end
  return out
end

function M.compile(o)
  local venv, why = M.venv()
  if not venv then return nil, o.name .. ": " .. why, "EUNSUPPORTED" end
  local args, aerr = M.arguments(o.task, o.plan)
  if not args then return nil, o.name .. ": " .. aerr, "EPLAN" end
  local kernel = o.plan_value.launches[1].kernel
  o.venv = venv
  local res, answer, out, partial = pychild.compile("cute_dsl", "CuTe DSL", o,
    { name = o.name, kernel = kernel, arch = o.arch, args = args })
  if not res then return nil, answer, out, partial end
  res.cute_dsl = { version = M.version, confinement = out.confinement, seconds = out.seconds, block = answer.block }
  res.lang = "cute_dsl"
  return res
end

function M.build(run)
  return pychild.build(run, { title = "CuTe DSL", plan_hint = "kernel, grid, args", shape = M.shape,
    compile = M.compile, meta = function(res) return res.cute_dsl end })
end

return M
