-- languages_test.lua: the candidate languages beyond CUDA C++ and PTX
-- (docs/languages.md): the deps step that installs them, Triton's and
-- CuTe's samples built offline, and CuTe's include folder held like the
-- toolkit's. Tests that need the pinned triton or CUTLASS skip, with the
-- reason, where they are not installed.
local cjson = require "cjson"

local T = {}

local function q(s) return require("klab.command").shell_quote(s) end

local function eval_json(t, task, dir, env)
  local code, out, err = t.sh(("%s %s eval %s %s --json"):format(env or "", q(t.klab), task, q(dir)))
  local ok, r = pcall(cjson.decode, out)
  t.ok(ok, "klab eval --json: " .. out .. err)
  return ok and r or {}, code, out .. err
end

-- Without PyPI the deps step says what it could not install and why, and
-- succeeds: those languages are then refused with that reason.
function T.deps_without_pypi_says_so(t)
  local dir = t.tmpdir()
  local code, out, err = t.sh(("KLAB_LANG_DIR=%s PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_NO_CACHE_DIR=1 "
    .. "PIP_FIND_LINKS= sh %s"):format(q(dir .. "/lang"), q(t.root .. "/tools/deps_langs.sh")))
  t.eq(code, 0, out .. err)
  t.match(err, "deps: PyPI not reachable: pip install triton==[%d.]+ failed %(.-%): Triton candidates will be refused")
  t.match(err, "deps: PyPI not reachable: pip download nvidia%-cutlass==[%d.]+ failed")
  t.match(err, "deps: PyPI not reachable: pip install nvidia%-cutlass%-dsl==[%d.]+ failed %(.-%): CuTe DSL candidates "
    .. "will be refused")
  t.eq(require("klab.fs").type(dir .. "/lang/cutlass_dsl-" .. require("klab.lang.versions").cutlass_dsl), nil,
    "no half-made CuTe DSL environment is left")
  t.eq(require("klab.fs").type(dir .. "/lang/triton-" .. require("klab.lang.versions").triton), nil,
    "no half-made environment is left")
  -- klab then refuses a Triton candidate with that reason, as the machine's.
  local r = eval_json(t, "sum_last_f32/999x1021", t.root .. "/tasks/reduce/samples/triton_sum_last",
    "KLAB_LANG_DIR=" .. q(dir .. "/lang"))
  t.eq(r.verdict, "unknown", tostring(r.reason))
  t.match(r.reason or "", "Triton [%d.]+ is not installed in .- %(make deps installs it from PyPI%)")
end

local function need(t, mod)
  local ok, why
  if mod == "triton" then ok, why = require("klab.lang.triton").venv()
  elseif mod == "cute_dsl" then ok, why = require("klab.lang.cute_dsl").venv()
  else ok, why = require("klab.lang.cutlass").include_dir() end
  if not ok then t.skip(why) end
end

-- The Triton samples (a row reduction, a softmax) compile offline: Triton's
-- PTX, assembled by klab's ptxas, planned with the block from num_warps;
-- the result records the Triton version and how its child was held.
function T.triton_samples_compile_offline(t)
  need(t, "triton")
  local samples = {
    { task = "sum_last_f32/999x1021", dir = "tasks/reduce/samples/triton_sum_last", kernel = "sum_last", warps = 4 },
    { task = "softmax_bf16/1000x1023", dir = "tasks/softmax/samples/triton", kernel = "softmax", warps = 8 },
  }
  for _, s in ipairs(samples) do
    local r = eval_json(t, s.task, t.root .. "/" .. s.dir)
    local b = r.stages and r.stages.build or {}
    t.eq(b.ok, true, s.dir .. ": " .. tostring(r.reason))
    t.eq(b.language, "triton", s.dir)
    t.eq(b.triton and b.triton.version, require("klab.lang.versions").triton, s.dir)
    t.match(b.triton and b.triton.confinement or "", "seccomp", s.dir)
    t.match(b.compiler or "", "^ptxas ", s.dir .. ": klab's ptxas assembles Triton's PTX")
    t.eq(b.kernels and b.kernels[1].name, s.kernel, s.dir)
    -- the kernel's own parameters, then Triton's two scratch pointers
    t.eq(b.kernels and #b.kernels[1].params, 5, s.dir)
    t.eq(r.stages.plan and r.stages.plan.launches, 1, s.dir .. ": planned")
    -- Without a GPU the verdict is unknown, after the build and the plan.
    t.eq(r.verdict, "unknown", s.dir)
  end
end

-- Triton is told what its own launcher would tell it: pointers and the
-- plan's integers that are multiples of 16 are, so its loads are vectors.
function T.triton_is_told_which_arguments_are_multiples_of_16(t)
  local triton = require "klab.lang.triton"
  local task = { buffers = { X = { dtype = "f32" }, Y = { dtype = "f32" } } }
  local function plan(n)
    return { launches = { { args = { { kind = "buffer", name = "X" }, { kind = "buffer", name = "Y" },
      { kind = "scalar", type = "i32", value = n }, { kind = "scratch" }, { kind = "scratch" } } } } }
  end
  local sig, _, div = triton.signature(task, plan(4096))
  t.eq(table.concat(sig, ","), "*fp32,*fp32,i32")
  t.eq(table.concat(div, ","), "1,2,3")
  _, _, div = triton.signature(task, plan(1021))
  t.eq(table.concat(div, ","), "1,2", "1021 is no multiple of 16")
  need(t, "triton")
  local src = table.concat({
    "import triton", "import triton.language as tl", "@triton.jit",
    "def twice(x, y, n, BLOCK: tl.constexpr):",
    "    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
    "    m = i < n",
    "    tl.store(y + i, tl.load(x + i, mask=m) * 2, mask=m)", "" }, "\n")
  local json = require "klab.json"
  local function ptx(n)
    local s, _, d = triton.signature(task, plan(n))
    local out = assert(require("klab.pychild").ptx { lang = "triton", venv = assert(triton.venv()), source = src,
      name = "kernel.py",
      request = json.encode { name = "kernel.py", kernel = "twice", signature = s, divisible_by_16 = d,
        constexprs = { BLOCK = 1024 }, num_warps = 4, num_stages = 3, cc = 90, cuda = "13.0" } })
    local answer = json.decode(out.answer)
    t.ok(type(answer.ptx) == "string", tostring(answer.error))
    return answer.ptx or ""
  end
  t.match(ptx(4096), "ld%.global%.v4", "vector loads where every argument is a multiple of 16")
  t.ok(not ptx(1021):find("ld.global.v4", 1, true), "scalar loads where n is not")
end

-- A kernel that makes tensor descriptors (Triton's way to TMA) needs
-- Triton's global scratch: klab gives it a workspace of that many bytes a
-- program, poisoned and guarded like any other, as the scratch argument.
function T.triton_global_scratch_is_a_workspace(t)
  local triton = require "klab.lang.triton"
  local v = { launches = { { kernel = "k", grid = { 3, 5, 1 }, args = { "X" }, num_warps = 4 } } }
  local p = assert(triton.shape({}, v, { global_scratch = 256, shared = 0 }))
  local args = p.launches[1].args
  t.eq(args[2].workspace, triton.SCRATCH, "the global scratch argument")
  t.eq(args[3].u64, 0, "no profile scratch")
  t.eq(p.workspace[triton.SCRATCH].bytes, 256 * 15, "256 bytes for each of 15 programs")
  p = assert(triton.shape({}, v, { global_scratch = 0, shared = 0 }))
  t.eq(p.launches[1].args[2].u64, 0, "none needed, none given")
  t.eq(p.workspace, nil)
  v.workspace = { [triton.SCRATCH] = { bytes = 4 } }
  local bad, why = triton.shape({}, v, { global_scratch = 256 })
  t.eq(bad, nil)
  t.match(why, "klab's name for Triton's global scratch")
  need(t, "triton")
  local dir = t.tmpdir()
  local f = assert(io.open(dir .. "/kernel.py", "w"))
  f:write(table.concat({ "import triton", "import triton.language as tl", "@triton.jit",
    "def relu(x, y, M, N, BM: tl.constexpr, BN: tl.constexpr):",
    "    dx = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])",
    "    dy = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])",
    "    pm = tl.program_id(0)", "    pn = tl.program_id(1)",
    "    dy.store([pm * BM, pn * BN], tl.maximum(dx.load([pm * BM, pn * BN]), 0.0))", "" }, "\n"))
  f:close()
  f = assert(io.open(dir .. "/plan.lua", "w"))
  f:write("return { launches = { { kernel = 'relu', grid = { cdiv(dims.R, 64), cdiv(dims.C, 64), 1 }, "
    .. "args = { 'X', 'Y', i32(dims.R), i32(dims.C) }, constexprs = { BM = 64, BN = 64 }, num_warps = 4 } } }\n")
  f:close()
  local r = eval_json(t, "relu_f32/16384x16384", dir)
  local b = r.stages and r.stages.build or {}
  t.eq(b.ok, true, tostring(r.reason))
  t.eq(b.triton and b.triton.global_scratch, 256, "Triton's answer: 256 bytes a program")
  t.eq(r.stages.plan and r.stages.plan.launches, 1, "planned with the scratch as workspace")
end

-- The CuTe sample compiles offline with the pinned headers, in the same
-- confined child, and records the CUTLASS version; without them it is the
-- machine's unknown, naming the way out.
function T.cute_sample_compiles_offline(t)
  need(t, "cutlass")
  local dir = t.root .. "/tasks/activation/samples/cute_relu"
  local r = eval_json(t, "relu_f32/999x1021", dir)
  local b = r.stages and r.stages.build or {}
  t.eq(b.ok, true, tostring(r.reason))
  t.match(b.cutlass or "", "^%d+%.%d+%.%d+$")
  t.match(b.confinement or "", "open guard")
  t.eq(r.verdict, "unknown")
  r = eval_json(t, "relu_f32/999x1021", dir, "KLAB_LANG_DIR=/nonexistent KLAB_CUTLASS_INCLUDE=")
  t.eq(r.verdict, "unknown")
  t.match(r.reason or "", "cute_relu/kernel%.cu: CUTLASS [%d.]+ is not installed")
end

-- ---- CuTe DSL ----------------------------------------------------------

local CUTE_SAMPLE = "tasks/activation/samples/cute_dsl_relu"

-- A kernel.py is CuTe DSL's when it imports cutlass, else Triton's.
function T.cute_dsl_is_told_from_triton_by_its_imports(t)
  local candidate = require "klab.eval.candidate"
  local c = assert(candidate.load(t.root .. "/" .. CUTE_SAMPLE))
  t.eq(c.lang, "cute_dsl")
  c = assert(candidate.load(t.root .. "/tasks/reduce/samples/triton_sum_last"))
  t.eq(c.lang, "triton")
  local claims = require("klab.lang.cute_dsl").claims
  t.ok(claims("import cutlass\n"), "import cutlass")
  t.ok(claims("import os\nfrom cutlass import cute\n"), "from cutlass import")
  t.ok(claims("  import cutlass.cute as cute\n"), "import cutlass.cute")
  t.ok(not claims("import cutlass_tools\nimport triton\n"), "another package")
  t.ok(not claims("# import cutlass\nimport triton\n"), "a comment")
end

-- The sample compiles offline: the DSL's PTX, its entry renamed to the
-- @cute.jit function, assembled by klab's ptxas, planned with the block
-- from its .reqntid; the result records the version and the confinement.
function T.cute_dsl_sample_compiles_offline(t)
  need(t, "cute_dsl")
  local r = eval_json(t, "relu_f32/999x1021", t.root .. "/" .. CUTE_SAMPLE)
  local b = r.stages and r.stages.build or {}
  t.eq(b.ok, true, tostring(r.reason))
  t.eq(b.language, "cute_dsl")
  t.eq(b.cute_dsl and b.cute_dsl.version, require("klab.lang.versions").cutlass_dsl)
  t.match(b.cute_dsl and b.cute_dsl.confinement or "", "seccomp")
  t.eq(b.cute_dsl and ("%d,%d,%d"):format(table.unpack(b.cute_dsl.block)), "256,1,1")
  t.match(b.compiler or "", "^ptxas ", "klab's ptxas assembles the DSL's PTX")
  t.eq(b.kernels and b.kernels[1].name, "relu")
  t.eq(b.kernels and #b.kernels[1].params, 2, "one pointer per tensor")
  t.eq(r.stages.plan and r.stages.plan.launches, 1, "planned")
  t.eq(r.verdict, "unknown")
end

local function cute_case(t, plan, code)
  local dir = t.tmpdir()
  local fs = require "klab.fs"
  assert(fs.write(dir .. "/kernel.py", code or t.read(t.root .. "/" .. CUTE_SAMPLE .. "/kernel.py")))
  if plan then assert(fs.write(dir .. "/plan.lua", plan)) end
  return eval_json(t, "relu_f32/999x1021", dir)
end

-- A plan that names another block than the kernel's, or more than one
-- launch, is a plan_error; a Python error is a one-line compile_error.
function T.cute_dsl_plan_and_code_errors(t)
  local r = cute_case(t, 'return { launches = { { kernel = "relu", grid = cdiv(R * C, 256), args = { "X", "Y" } }, '
    .. '{ kernel = "relu", grid = cdiv(R * C, 256), args = { "X", "Y" } } } }')
  t.eq(r.verdict, "plan_error", tostring(r.reason))
  t.match(r.reason or "", "a CuTe DSL plan has one launch")
  r = cute_case(t)
  t.eq(r.verdict, "plan_error", tostring(r.reason))
  t.match(r.reason or "", "a CuTe DSL candidate brings its plan%.lua")
  need(t, "cute_dsl")
  r = cute_case(t, 'return { launches = { { kernel = "relu", grid = cdiv(R * C, 128), block = 128, args = { "X", "Y" } } } }')
  t.eq(r.verdict, "plan_error", tostring(r.reason))
  t.match(r.reason or "", "the plan's block is not the kernel's: its host function launches {256, 1, 1}")
  r = cute_case(t, 'return { launches = { { kernel = "relu", grid = cdiv(R * C, 256), args = { "X", "Y" } } } }',
    "import cutlass\nundefined_name\n")
  t.eq(r.verdict, "compile_error", tostring(r.reason))
  t.match(r.reason or "", "kernel%.py:2: NameError: name 'undefined_name' is not defined")
  r = cute_case(t, 'return { launches = { { kernel = "relu2", grid = cdiv(R * C, 256), args = { "X", "Y" } } } }')
  t.match(r.reason or "", "no @cute%.jit function named relu2 %(it has: relu%)")
end

-- Without the environment the machine cannot build it: unknown, naming
-- the way out.
function T.cute_dsl_without_its_environment(t)
  local r = eval_json(t, "relu_f32/999x1021", t.root .. "/" .. CUTE_SAMPLE, "KLAB_LANG_DIR=/nonexistent")
  t.eq(r.verdict, "unknown", tostring(r.reason))
  t.eq(r.stages and r.stages.build and r.stages.build.code, "EUNSUPPORTED")
  t.match(r.reason or "", "cute_dsl_relu/kernel%.py: CuTe DSL %(nvidia%-cutlass%-dsl%) [%d.]+ is not installed in "
    .. "/nonexistent/cutlass_dsl%-[%d.]+ %(make deps installs it from PyPI%)")
end

return T
