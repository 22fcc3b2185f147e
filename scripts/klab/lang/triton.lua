-- klab.lang.triton: a Triton candidate (kernel.py) as a cubin and a plan.
--
--   triton.venv()                  -> the pinned environment's folder | nil, reason
--   triton.shape(task, value, meta) -> the plan value as the pipeline takes it
--                                     | nil, reason (a plan_error)
--   triton.config(plan)            -> {kernel=, constexprs=, num_warps=, num_stages=}
--   triton.signature(task, plan)   -> {"*fp32", "i32", ...}, nil, {positions divisible by 16} | nil, reason
--   triton.compile{code=, name=, arch=, task=, plan=, cache=}
--       -> jit result (of klab's ptxas on Triton's PTX), with .triton = {version=,
--          confinement=, seconds=, shared=, num_warps=} | nil, message, code [, partial]
--          (an error of the Python child is its one line, without the candidate's prints)
--
-- A Triton candidate's plan names the launch as any plan does (kernel,
-- grid, args by name), plus `constexprs = {BLOCK = 1024}`, `num_warps`
-- (default 4) and `num_stages` (default 3). klab sets the block (32 x
-- num_warps threads), the dynamic shared memory (Triton's figure) and the
-- two scratch pointers Triton adds after the kernel's own parameters
-- (null: klab refuses a kernel that needs scratch memory). The kernel's
-- other parameters get their types from the arguments: a task buffer
-- its dtype (*fp32, *bf16, ...), a scalar its type.
--
-- The child that runs the candidate's Python is held as host/lang/pychild.h
-- says (klab.lang.pychild); its PTX is assembled by klab.jit like any PTX,
-- under the same limits.
--
-- The language's fields are klab.lang's (scripts/klab/lang/init.lua). A
-- model's reply is read for Triton only when its caller asks for it
-- (klab.experiment.extract's opts.languages): a reply in CUDA C++ may carry
-- Python beside its kernel.

local jit = require "klab.jit"
local pychild = require "klab.lang.pychild"
local versions = require "klab.lang.versions"

local M = {}

M.version = versions.triton

M.title = "Triton"
M.file = "kernel.py"
M.suffixes = { ".py" }
M.fences = { "python", "triton" }
M.more_fences = { "py" }
M.kernel_hint = "a @triton.jit function in Triton"
M.reply_default = false
M.records = { "triton" }

function M.kernel(code) return code:find("@triton%.jit") ~= nil end
M.untagged = M.kernel

function M.venv()
  return pychild.venv("triton-" .. M.version, "Triton", M.version, "it")
end

local POINTEE = { f32 = "fp32", f16 = "fp16", bf16 = "bf16", f64 = "fp64", i8 = "i8", u8 = "u8", i16 = "i16",
  u16 = "u16", i32 = "i32", u32 = "u32", i64 = "i64", u64 = "u64", fp8e4m3 = "fp8e4nv", fp8e5m2 = "fp8e5" }
local SCALAR = { u32 = "u32", i32 = "i32", u64 = "u64", i64 = "i64", f32 = "fp32", f64 = "fp64" }
local TRITON_FIELDS = { constexprs = true, num_warps = true, num_stages = true }

local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if b[k] ~= v then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- The workspace klab gives a kernel for Triton's global scratch.
local SCRATCH = "triton_global_scratch"
M.SCRATCH = SCRATCH

-- The number of programs of a launch's grid (a count or {x, y, z}), or nil.
local function programs(grid)
  if math.type(grid) == "integer" then return grid > 0 and grid or nil end
  if type(grid) ~= "table" then return nil end
  local n = 1
  for i = 1, 3 do
    local g = grid[i] or grid[({ "x", "y", "z" })[i]] or 1
    if math.type(g) ~= "integer" or g < 1 then return nil end
    n = n * g
  end
  return n
end

-- The plan value (plain data from the sandbox) with every launch made a
-- launch the pipeline knows; meta: the child's answer (nil before the
-- compile: shared memory 0 then).
function M.shape(task, v, meta)
  if type(v) ~= "table" or type(v.launches) ~= "table" then return v end
  local first, scratch
  local launches = {}
  for i, l in ipairs(v.launches) do
    if type(l) ~= "table" then return v end
    local where = ("launch %d (%s)"):format(i, tostring(l.kernel))
    if l.block ~= nil or l.shared ~= nil then
      return nil, where .. ": a Triton launch sets no block or shared memory: klab takes them from num_warps (32 "
        .. "threads each) and from the compiled kernel"
    end
    local nw, ns = l.num_warps or 4, l.num_stages or 3
    if math.type(nw) ~= "integer" or nw < 1 or nw > 32 or nw & (nw - 1) ~= 0 then
      return nil, where .. ": num_warps must be a power of two from 1 to 32"
    end
    if math.type(ns) ~= "integer" or ns < 1 or ns > 8 then return nil, where .. ": num_stages must be 1 to 8" end
    local ce = l.constexprs or {}
    if type(ce) ~= "table" then return nil, where .. ": constexprs must be a table {NAME = value}" end
    for k, c in pairs(ce) do
      if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") or not (math.type(c) or type(c) == "boolean") then
        return nil, where .. ": constexprs must map parameter names to numbers or booleans"
      end
    end
    local cfg = { kernel = l.kernel, constexprs = ce, num_warps = nw, num_stages = ns }
    if first and not (first.kernel == cfg.kernel and first.num_warps == nw and first.num_stages == ns
        and same(first.constexprs, ce)) then
      return nil, where .. ": every launch of a Triton candidate runs its one kernel with one configuration "
        .. "(kernel, constexprs, num_warps, num_stages)"
    end
    first = first or cfg
    local out = {}
    for k, x in pairs(l) do if not TRITON_FIELDS[k] then out[k] = x end end
    out.block = 32 * nw
    out.shared = meta and math.tointeger(meta.shared) or 0
    local args = {}
    for j, a in ipairs(type(l.args) == "table" and l.args or {}) do args[j] = a end
    -- Triton's global and profile scratch pointers, after the kernel's own.
    -- The global scratch (where a kernel writes the tensor descriptors it
    -- makes, global_scratch bytes per program) is a workspace of klab's:
    -- poisoned before every run and guarded like any other.
    local per = meta and math.tointeger(meta.global_scratch) or 0
    if per > 0 then
      local n = programs(l.grid)
      if not n then return nil, where .. ": its grid must be a count or {x, y, z} of counts" end
      scratch = math.max(scratch or 0, per * n)
      args[#args + 1] = { workspace = SCRATCH }
    else
      args[#args + 1] = { u64 = 0 }
    end
    args[#args + 1] = { u64 = 0 }
    out.args = args
    launches[i] = out
  end
  local c = {}
  for k, x in pairs(v) do c[k] = x end
  c.launches = launches
  if scratch then
    if type(c.workspace) ~= "nil" and type(c.workspace) ~= "table" then return nil, "workspace must be a table" end
    local ws = {}
    for k, x in pairs(c.workspace or {}) do ws[k] = x end
    if ws[SCRATCH] ~= nil then
      return nil, ("workspace %s is klab's name for Triton's global scratch: name yours otherwise"):format(SCRATCH)
    end
    ws[SCRATCH] = { bytes = scratch }
    c.workspace = ws
  end
  return c
end

function M.config(v)
  local l = v.launches[1]
  return { kernel = l.kernel, constexprs = l.constexprs or {}, num_warps = l.num_warps or 4,
    num_stages = l.num_stages or 3 }
end

-- The types of the kernel's own parameters, from a normalized plan's
-- first launch (its last two arguments are klab's scratch pointers), and
-- which of them are multiples of 16, as Triton's own launcher tells its
-- compiler (it then vectorises loads and stores): every pointer (klab's
-- buffers and workspace are 256-byte aligned, and the timed runs' shifts
-- are multiples of 256) and every integer scalar whose value in this plan
-- is a multiple of 16.
function M.signature(task, plan)
  local args, sig, div16 = plan.launches[1].args, {}, {}
  for i = 1, #args - 2 do
    local a = args[i]
    if a.kind == "buffer" then
      local dt = task.buffers[a.name].dtype
      if not POINTEE[dt] then return nil, ("argument %d: buffer %s of dtype %s has no Triton type"):format(i, a.name, dt) end
      sig[i] = "*" .. POINTEE[dt]
      div16[#div16 + 1] = i
    elseif a.kind == "workspace" then
      sig[i] = "*u8"
      div16[#div16 + 1] = i
    elseif a.kind == "scalar" then
      sig[i] = SCALAR[a.type]
      if math.type(a.value) == "integer" and a.value % 16 == 0 then div16[#div16 + 1] = i end
    else
      return nil, ("argument %d: a Triton kernel takes buffers, workspace and scalars, not a %s"):format(i, a.kind)
    end
  end
  return sig, nil, div16
end

-- CUDA's version as "MAJOR.MINOR", from klab's ptxas (the PTX ISA Triton
-- writes follows from it).
local function cuda_version()
  local v = jit.versions().ptxas
  return v.ok and v.version:match("^(%d+%.%d+)") or nil, v.error
end

function M.compile(o)
  local venv, why = M.venv()
  if not venv then return nil, o.name .. ": " .. why, "EUNSUPPORTED" end
  local cuda, cerr = cuda_version()
  if not cuda then return nil, "no ptxas to assemble Triton's PTX: " .. tostring(cerr), "EUNSUPPORTED" end
  local cc = tonumber(o.arch:match("^sm_(%d+)"))
  local cfg = M.config(o.plan_value)
  local sig, serr, div16 = M.signature(o.task, o.plan)
  if not sig then return nil, o.name .. ": " .. serr, "EPLAN" end
  local request = { name = o.name, kernel = cfg.kernel, signature = sig, divisible_by_16 = div16,
    constexprs = cfg.constexprs, num_warps = cfg.num_warps, num_stages = cfg.num_stages, cc = cc, cuda = cuda }
  o.venv = venv
  local res, answer, out, partial = pychild.compile("triton", "Triton", o, request, function(a)
    if (a.profile_scratch or 0) > 0 then
      return ("the kernel needs %d bytes of Triton profile scratch memory (its instrumentation), which klab does not "
        .. "provide"):format(a.profile_scratch), "EREJECT"
    end
    if a.name ~= cfg.kernel then return "the Triton compiler's answer has no PTX for " .. tostring(cfg.kernel) end
  end)
  if not res then return nil, answer, out, partial end
  res.triton = { version = M.version, confinement = out.confinement, seconds = out.seconds,
    shared = answer.shared, num_warps = answer.num_warps, global_scratch = answer.global_scratch or 0 }
  res.lang = "triton"
  return res
end

-- A run's candidate (klab.eval.prepare's build): its plan first (the
-- launch configuration is part of what Triton compiles), then the compile;
-- run.complete_plan is left for the plan stage. Same returns as compile;
-- code "EPLAN" for a plan that cannot be used.
function M.build(run)
  return pychild.build(run, { title = "Triton", plan_hint = "kernel, grid, args, constexprs, num_warps",
    shape = M.shape, compile = M.compile, meta = function(res) return res.triton end })
end

return M
