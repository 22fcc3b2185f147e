-- Tests of klab.task, klab.task.shape, the GEMM task files and `klab tasks`.
local task = require("klab.task")
local shape = require("klab.task.shape")

local T = {}

local function root_tasks(t) return t.root .. "/tasks" end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- A small valid task file; `patch` replaces a line or appends text.
local GOOD = [[
name = "toy"
family = "toy"
description = "Add ${N} numbers."
dims = { "N" }
variants = { { N = 16 }, { name = "big", N = 1024 } }
buffers = {
  X = { role = "input", dtype = "f32", shape = { "N" } },
  Y = { role = "output", dtype = "f32", shape = "N" },
}
inputs = { X = { dist = "uniform", lo = -1, hi = 1 } }
reference = { source = "ref.cu",
  plan = "return { launches = { { kernel = 'ref', grid = 1, block = 32, args = { { buffer = 'X' } } } } }" }
baseline = { lib = "none", op = "copy" }
tolerance = { f32 = { atol = 0, rtol = 0 } }
flops = function(d) return d.N end
targets = { sm_90a = { "tma" } }
plan = "return { launches = { { kernel = 'k', grid = 1, block = 32, args = { { buffer = 'X' } } } } }"
]]

local made = {}

-- Writes text to <fresh tmpdir>/toy/<name>; cleanup() removes every such dir.
local function toy(t, text, name)
  local top = t.tmpdir()
  made[#made + 1] = top
  local dir = top .. "/toy"
  os.execute("mkdir -p '" .. dir .. "'")
  local path = dir .. "/" .. (name or "toy.lua")
  write(path, text)
  write(dir .. "/ref.cu", 'extern "C" __global__ void ref(const float *x) {}\n')
  return path
end

local function cleanup()
  for _, d in ipairs(made) do
    if d:match("^/tmp/") then os.execute("rm -rf '" .. d .. "'") end
  end
  made = {}
end

local function load_err(path)
  local ok, err = pcall(task.load, path, { reload = true })
  if ok then return nil end
  return tostring(err)
end

function T.shipped_tasks_all_load(t)
  local all, errs = task.list(root_tasks(t))
  t.eq(#errs, 0, "load errors: " .. table.concat(errs, "; "))
  local per = {}
  for _, x in ipairs(all) do per[x.base] = (per[x.base] or 0) + 1 end
  -- fp8 leaves out the three shapes whose K is not a multiple of 16 (no
  -- cuBLASLt baseline there); bf16 adds PTXBench's other 16 GEMM problems.
  for base, n in pairs({ gemm_bf16 = 28, gemm_f16 = 12, gemm_fp8e4m3 = 9, gemm_f32 = 12 }) do
    t.eq(per[base], n, base .. " variants")
  end
  -- every GEMM file covers each shape class
  for _, base in ipairs({ "gemm_bf16", "gemm_f16", "gemm_fp8e4m3", "gemm_f32" }) do
    local d = task.load(base, { root = root_tasks(t) })
    local tags, odd_ok, small_ok = {}, false, false
    for _, x in ipairs(d.tasks) do
      for _, tag in ipairs(x.tags) do tags[tag] = true end
      if x.dims.M % 16 ~= 0 and x.dims.N % 16 ~= 0 then odd_ok = true end
      if x.dims.M <= 128 then small_ok = true end
    end
    for _, tag in ipairs({ "ptxbench", "square", "tall_skinny", "small", "odd" }) do
      t.ok(tags[tag], base .. " has a " .. tag .. " shape")
    end
    t.ok(odd_ok, base .. " has a shape with M and N not multiples of 16")
    t.ok(small_ok, base .. " has M <= 128")
  end
end

function T.gemm_flops_and_bytes(t)
  local r = { root = root_tasks(t) }
  local b = task.get("gemm_bf16/8192x7168x5120", r)
  t.eq(b.flops, 2 * 8192 * 7168 * 5120)
  t.eq(b.flops, 601295421440)
  t.eq(b.buffers.A.bytes, 8192 * 5120 * 2)
  t.eq(b.buffers.B.bytes, 7168 * 5120 * 2)
  t.eq(b.buffers.C.bytes, 8192 * 7168 * 2)
  t.eq(b.buffers.C.shape[1], 8192)
  t.eq(b.buffers.C.shape[2], 7168)
  t.eq(b.bytes, 2 * (8192 * 5120 + 7168 * 5120 + 8192 * 7168))
  t.eq(b.tolerance.bf16.rtol, 1e-2)
  t.eq(b.targets.sm_90a[1], "wgmma")

  local f8 = task.get("gemm_fp8e4m3/8192x7168x5120", r)
  t.eq(f8.buffers.A.bytes, 8192 * 5120)
  t.eq(f8.buffers.A.dtype, "fp8e4m3")
  t.eq(f8.buffers.scale_a.bytes, 4)
  t.eq(f8.buffers.C.dtype, "bf16")
  t.eq(f8.scales.A.buffer, "scale_a")
  t.eq(f8.scales.A.max, 448)
  t.eq(f8.flops, 601295421440)

  local f32 = task.get("gemm_f32/4097x4095x4099", r)
  t.eq(f32.buffers.C.bytes, 4097 * 4095 * 4)
  t.eq(f32.flops, 2 * 4097 * 4095 * 4099)
  t.eq(f32.baseline.modes[1], "fp32")
  t.eq(f32.baseline.modes[2], "tf32")
  t.eq(#f32.baseline.modes, 2)

  local h = task.get("gemm_f16/1x7168x5120", r)
  t.eq(h.buffers.A.dtype, "f16")
  t.eq(h.buffers.A.bytes, 5120 * 2)
  t.eq(h.tolerance.f16.rtol, 2e-3)
end

function T.descriptors_are_read_only(t)
  local b = task.get("gemm_bf16/1000x1000x1000", { root = root_tasks(t) })
  t.raises(function() b.flops = 1 end, "read%-only")
  t.raises(function() b.buffers.A.bytes = 1 end, "read%-only")
  t.raises(function() b.dims.M = 2 end, "read%-only")
  t.eq(b.dims.M, 1000)
  local p = task.plain(b)
  p.flops = 1 -- a plain copy is mutable
  t.eq(p.flops, 1)
  t.eq(b.flops, 2e9)
end

function T.description_placeholders_expand(t)
  local b = task.get("gemm_bf16/123x457x789", { root = root_tasks(t) })
  t.match(b.description, "M=123, N=457, K=789")
  t.ok(not b.description:find("%${"), "no placeholder left")
  local text = task.describe(b)
  t.match(text, "C%s+output%s+bf16%s+%[123, 457%]")
  t.match(text, "atol 0.01, rtol 0.01")
end

function T.variants_and_names(t)
  local path = toy(t, GOOD)
  local d = task.load(path)
  t.eq(d.kind, "taskfile")
  t.eq(#d.tasks, 2)
  t.eq(d.tasks[1].name, "toy/16")
  t.eq(d.tasks[2].name, "toy/big")
  t.eq(d.tasks[2].dims.N, 1024)
  t.eq(d.tasks[2].buffers.Y.bytes, 4096)
  t.eq(d.tasks[1].description, "Add 16 numbers.")
  t.eq(d.tasks[1].trials, 3, "default trials")
  t.eq(d.tasks[1].baseline.modes[1], "default")
  t.eq(d.tasks[1].tolerance.f32.matched, 1.0)
  -- found by name through the root directory
  local root = path:match("^(.*)/toy/toy%.lua$")
  t.eq(task.get("toy/big", { root = root }).dims.N, 1024)
  t.raises(function() task.get("toy", { root = root }) end, "2 variants")
  t.raises(function() task.get("toy/nope", { root = root }) end, "no variant 'nope'")
  t.raises(function() task.get("nothing_here", { root = root }) end, "no task named")
  local all, errs = task.list(root)
  t.eq(#all, 2)
  t.eq(#errs, 0)
  cleanup()
end

local function broken(t, find, replace, want_field, want_msg)
  local text = GOOD
  if find then
    local s, e = text:find(find, 1, true)
    assert(s, "test bug: pattern not in GOOD: " .. find)
    text = text:sub(1, s - 1) .. replace .. text:sub(e + 1)
  else
    text = text .. replace
  end
  local path = toy(t, text)
  local err = load_err(path)
  if not t.ok(err, "expected a load error for " .. (want_field or want_msg)) then return end
  t.ok(err:find(path, 1, true) == 1, "error names the file: " .. err)
  if want_field then t.ok(err:find("field '" .. want_field .. "'", 1, true), "error names field " .. want_field .. ": " .. err) end
  if want_msg then t.match(err, want_msg) end
end

function T.broken_files_name_file_and_field(t)
  broken(t, 'reference = { source', 'reference_ = { source', nil, "unknown field 'reference_'")
  broken(t, 'source = "ref.cu"', 'source = "../ref.cu"', "reference.source", "task's folder")
  broken(t, 'source = "ref.cu"', 'source = "nothere.cu"', "reference.source", "cannot read")
  broken(t, 'source = "ref.cu",', 'source = "ref.cu", units = { Y = "Q" },', "reference.units.Y", "unknown dimension 'Q'")
  broken(t, 'source = "ref.cu",', 'source = "ref.cu", units = { X = 1 },', "reference.units.X", "outputs only")
  broken(t, 'source = "ref.cu",', 'source = "ref.cu", derived = { "X" },', "reference.derived", "reference.derive")
  broken(t, 'shape = "N" }', 'shape = { "N", "Q" } }', "buffers.Y.shape", "unknown dimension 'Q'")
  broken(t, 'dtype = "f32", shape = { "N" }', 'dtype = "f33", shape = { "N" }', "buffers.X.dtype", "unknown dtype 'f33'")
  broken(t, 'tolerance = { f32 = { atol = 0, rtol = 0 } }', 'tolerance = { bf16 = { atol = 0, rtol = 0 } }',
    "tolerance.f32", "missing for output 'Y'")
  broken(t, nil, "tolerence = {}\n", nil, "unknown field 'tolerence'")
  broken(t, '{ name = "big", N = 1024 }', '{ name = "big" }', "variants[2].N", "missing")
  broken(t, '{ N = 16 }', '{ N = 0 }', "variants[1].N", "positive")
  -- zero_dims lets a dimension be 0, never negative, and names dims only.
  broken(t, '{ N = 16 }', '{ N = -1 }', "variants[1].N", "positive")
  do
    local text = GOOD:gsub('dims = { "N" }', 'dims = { "N" }\nzero_dims = { "N" }', 1):gsub("{ N = 16 }", "{ N = -1 }", 1)
    local err = load_err(toy(t, text)) or ""
    t.match(err, "variants%[1%]%.N.*must not be negative, got %-1")
  end
  broken(t, 'dims = { "N" }', 'dims = { "N" }\nzero_dims = { "Q" }', "zero_dims[1]", "not one of dims")
  broken(t, 'flops = function(d) return d.N end', 'flops = function(d) return nil end', "flops", "positive number")
  broken(t, 'flops = function(d) return d.N end', 'flops = function(d) return d.N.x end', "flops", "raised")
  broken(t, 'inputs = { X = { dist = "uniform", lo = -1, hi = 1 } }', 'inputs = {}', "inputs.X", "every input")
  broken(t, 'dist = "uniform"', 'dist = "gamma"', "inputs.X.dist", "unknown distribution")
  broken(t, 'role = "input", dtype', 'role = "inptu", dtype', "buffers.X.role", "input")
  broken(t, '\nplan = "return', '\nplan = "return return', "plan", "unexpected")
  broken(t, 'targets = { sm_90a = { "tma" } }', 'targets = { hopper = { "tma" } }', "targets.hopper", "sm_90a")
  broken(t, 'name = "toy"', 'name = "to/y"', "name", nil)
  broken(t, 'dims = { "N" }', 'dims = { "N", "N" }', "dims[2]", "duplicate")
  broken(t, 'shape = "N" }', 'shape = "N/3" }', "buffers.Y.shape", "not exact")
  broken(t, 'description = "Add ${N} numbers."', 'description = "Add ${Z} numbers."', "description", "unknown placeholder")
  broken(t, nil, 'buffers.X.shape = "N - 16"\n', "buffers.X.shape", "extents must be positive")
  -- A kernel shipped beside a library baseline: a file in the folder, a plan, nothing else.
  broken(t, 'op = "copy" }', 'op = "copy", shipped = { source = "ref.cu", plna = "" } }', "baseline.shipped",
    "unknown key 'plna'")
  broken(t, 'op = "copy" }', 'op = "copy", shipped = { source = "../ref.cu", plan = "return {}" } }',
    "baseline.shipped.source", "task's folder")
  broken(t, 'op = "copy" }', 'op = "copy", shipped = { source = "ref.cu", plan = "return return" } }',
    "baseline.shipped.plan", "unexpected")
  broken(t, 'op = "copy" }', 'op = "copy", shipped = { source = "gone.cu", plan = "return {}" } }',
    "baseline.shipped.source", "cannot read")
  -- syntax and run-time errors in the file itself name the file
  local p1 = toy(t, "name = = 1\n")
  t.match(load_err(p1) or "", "toy%.lua")
  local p2 = toy(t, "error('boom')\n")
  t.match(load_err(p2) or "", "error while running: .*boom")
  cleanup()
end

function T.bad_variant_shape_names_variant(t)
  local text = GOOD:gsub('shape = "N" }', 'shape = "N - 17" }')
  local path = toy(t, text)
  local err = load_err(path) or ""
  t.match(err, "field 'buffers%.Y%.shape' %(variant 16%)")
  cleanup()
end

function T.list_reports_broken_files_and_keeps_good_ones(t)
  local dir = t.tmpdir()
  os.execute("mkdir -p '" .. dir .. "/a' '" .. dir .. "/b' '" .. dir .. "/a/samples'")
  write(dir .. "/a/good.lua", GOOD)
  write(dir .. "/a/ref.cu", "")
  write(dir .. "/b/bad.lua", GOOD:gsub('family = "toy"', 'family = 3'))
  write(dir .. "/a/samples/plan.lua", "return {}") -- deeper files are not tasks
  local all, errs = task.list(dir)
  t.eq(#all, 2)
  t.eq(#errs, 1)
  t.match(errs[1] or "", "bad%.lua: field 'family'")
  os.execute("rm -rf '" .. dir .. "'")
end

function T.include_shares_a_family_file(t)
  local path = toy(t, 'local shared = include "_shared.lua"\n' .. GOOD:gsub('flops = function%(d%) return d.N end',
    'flops = shared.flops'))
  write(path:gsub("toy%.lua$", "_shared.lua"), "return { flops = function(d) return 3 * d.N end }")
  local d = task.load(path, { reload = true })
  t.eq(d.tasks[1].flops, 48, "flops from the included file")
  -- The shared file is not a task of its own.
  local dir = path:match("^(.*)/toy/")
  for _, f in ipairs(task.files(dir)) do t.ok(not f:match("/_[^/]*$"), f .. " listed as a task file") end
  -- Only sibling files named _<name>.lua.
  local bad = toy(t, 'local x = include "../etc.lua"\n' .. GOOD)
  t.match(load_err(bad), "sibling file named _<name>%.lua")
  cleanup()
end

function T.shape_expressions(t)
  local d = { M = 100, N = 7, K = 64 }
  t.eq(shape.eval("M*K", d), 6400)
  t.eq(shape.eval("cdiv(M, 64)", d), 2)
  t.eq(shape.eval("(M + 63) // 64 * 64", d), 128)
  t.eq(shape.eval("max(N, 8) - min(N, 8) + 1", d), 2)
  t.eq(shape.eval("-N + 10 % 4", d), -5)
  t.eq(shape.eval(12, d), 12)
  t.eq(shape.eval("K / 16", d), 4)
  local v, err = shape.eval("M / 3", d)
  t.eq(v, nil)
  t.match(err, "not exact")
  v, err = shape.eval("os.exit(1)", d)
  t.eq(v, nil)
  t.match(err, "unexpected character '%.'")
  v, err = shape.eval("Q * 2", d)
  t.eq(v, nil)
  t.match(err, "unknown dimension 'Q'")
  v, err = shape.eval("M // 0", d)
  t.eq(v, nil)
  t.match(err, "division by zero")
  v = shape.eval("M +", d)
  t.eq(v, nil)
  local list = shape.expand({ "M", "K*2" }, d)
  t.eq(list[1], 100)
  t.eq(list[2], 128)
  t.eq(shape.expand("M*N", d)[1], 700)
  t.eq(shape.bytes("bf16", 10), 20)
  t.eq(shape.bytes("fp8e4m3", 10), 10)
  t.eq(shape.bytes("fp4e2m1", 3), 2)
  t.eq(shape.bytes("f64", 3), 24)
  t.eq(shape.dtype("fp16").name, "f16")
  t.eq(shape.dtype("e4m3").name, "fp8e4m3")
  t.eq(shape.dtype("nope"), nil)
end

function T.cli_lists_tasks(t)
  local q = require("klab.command").shell_quote
  local code, out, err = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " tasks --json")
  t.eq(code, 0, err)
  local cjson = require("cjson")
  local ok, list = pcall(cjson.decode, out)
  if not t.ok(ok and type(list) == "table", "JSON output: " .. out:sub(1, 200)) then return end
  local gemms = 0
  for _, r in ipairs(list) do if r.family == "gemm" then gemms = gemms + 1 end end
  t.eq(gemms, 61, "four GEMM task files of twelve shapes (fp8: nine), and bf16's 16 PTXBench problems")
  local found
  for _, r in ipairs(list) do
    if r.name == "gemm_fp8e4m3/8192x7168x5120" then found = r end
  end
  if t.ok(found, "fp8 PTXBench task listed") then
    t.eq(found.flops, 601295421440)
    t.eq(found.family, "gemm")
    t.eq(found.inputs, "fp8e4m3,f32")
    t.eq(found.outputs, "bf16")
    t.eq(found.targets.sm_90a[1], "wgmma")
  end
  code, out = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " tasks --family gemm --tag ptxbench")
  t.eq(code, 0)
  t.match(out, "gemm_f32/8192x7168x5120%s+gemm%s+M=8192 N=7168 K=5120%s+f32%->f32%s+601%.295%s+sm_100a:tma sm_90a:tma")
  t.match(out, "20 tasks") -- the PTXBench shape of each file, and bf16's 16 other PTXBench problems
  t.match(out, "gemm_bf16/8828x21504x5376 ")
  local errf
  code, out, errf = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " tasks --family nope")
  t.eq(code, 2, "a family no task has is a typo")
  t.eq(out, "")
  t.match(errf, "^klab tasks: no task has family 'nope' %(known: [^)]*attention, [^)]*gemm[^)]*%)\n$")
  code, out, errf = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " tasks --tag nope")
  t.eq(code, 2)
  t.match(errf, "no task has tag 'nope'[^\n]* %(known: [^)]*ptxbench")
  code = t.sh(q(t.klab) .. " tasks --bogus")
  t.eq(code, 2)
  local err2
  code, out, err2 = t.sh(q(t.klab) .. " tasks --root /nonexistent/klab-tasks")
  t.eq(code, 2)
  t.match(err2, "no task directory at /nonexistent/klab%-tasks")
  -- from another directory, the repository's tasks are found next to the binary
  local dir = t.tmpdir()
  code, out = t.sh("cd " .. q(dir) .. " && env -u KLAB_TASKS " .. q(t.klab) .. " tasks --tag ptxbench")
  os.execute("rmdir " .. q(dir))
  t.eq(code, 0)
  -- the GEMM family's 20; the serving family's block-scaled fp8 GEMM, its D = 256 attention's
  -- 4 PTXBench shapes and its fp8 attention's 8 (four head dimensions, causal and not)
  t.match(out, "33 tasks")
  t.match(out, "gemm_fp8_1d2d/4096x4096x7168 ")
end

-- ---- sandbox and search path -------------------------------------------------------

local cjson = require("cjson")
local sq = require("klab.command").shell_quote

local function task_tree(t, files)
  local dir = t.tmpdir()
  for path, text in pairs(files) do
    local sub = dir .. "/" .. path:match("^(.*)/")
    os.execute("mkdir -p " .. sq(sub))
    write(dir .. "/" .. path, text)
    write(sub .. "/ref.cu", 'extern "C" __global__ void ref(const float *x) {}\n')
  end
  return dir
end

-- Task files run in a sandbox of their own: one that loops, hogs memory,
-- reaches for io or replaces string.format is reported by name, changes
-- nothing in klab, and the other tasks load and evaluate.
function T.task_files_run_sandboxed(t)
  local task = require "klab.task"
  local dir = task_tree(t, {
    ["a/loop.lua"] = "while true do end\n",
    ["b/hog.lua"] = "local t = {}\nfor i = 1, 1e9 do t[i] = ('x'):rep(4096) .. i end\n",
    ["c/evil.lua"] = "string.format = function() return 'pwned' end\nerror('and then fails')\n",
    ["c/reads.lua"] = "local f = io.open('/etc/passwd')\n",
    ["c/wide.lua"] = GOOD:gsub('name = "toy"', 'name = "wide"'):gsub("{ N = 16 }", "{ N = 1 << 32 }")
      :gsub('shape = { "N" }', 'shape = { "N", "N" }'),
    ["d/toy.lua"] = GOOD,
  })
  local saved = task.LIMITS
  task.LIMITS = { memory = 32 * 1024 * 1024, instructions = 2000000, seconds = 5 }
  local t0 = require("klab.sys").now()
  local all, errs = task.list(dir)
  task.LIMITS = saved
  t.ok(require("klab.sys").now() - t0 < 10, "a runaway file costs its limits, no more")
  t.eq(#all, 2)
  t.eq(all[1] and all[1].name, "toy/16")
  local text = table.concat(errs, "\n")
  t.eq(#errs, 5, text)
  t.match(text, "a/loop%.lua exceeded the instruction limit")
  t.match(text, "b/hog%.lua exceeded the memory limit")
  t.match(text, "c/evil%.lua: error while running: .*and then fails")
  t.match(text, "c/reads%.lua: refused: it reads io, which a task folder's Lua does not have")
  t.match(text, "c/wide%.lua: field 'buffers%.X%.shape' %(variant 4294967296%): holds more than 2%^40 elements")
  t.eq(string.format("%d", 5), "5", "klab's own string library is untouched")
  t.eq(("%s"):format("x"), "x")
  -- The command line: the good task is found and evaluated past the broken
  -- ones; `klab tasks` lists it and names every file that failed.
  local c = t.tmpdir()
  write(c .. "/kernel.cu", 'extern "C" __global__ void k(float *x) { x[0] = ; }\n')
  local code, out, err = t.sh("timeout 120 " .. t.klab .. " eval toy/16 " .. sq(c) .. " --tasks " .. sq(dir) .. " --json")
  t.eq(code, 1, err)
  local ok, r = pcall(cjson.decode, out)
  t.ok(ok and r.verdict == "compile_error" and r.task == "toy/16", out .. err)
  code, out, err = t.sh("timeout 120 " .. t.klab .. " tasks --tasks " .. sq(dir))
  t.eq(code, 1)
  t.match(out, "toy/16")
  t.match(err, "loop%.lua exceeded the instruction limit")
end

-- The search path: --tasks folders, then $KLAB_TASKS (dir1:dir2), then the
-- repository's tasks/; a name found twice is taken from the first.
function T.task_search_path(t)
  local one = task_tree(t, { ["x/toy.lua"] = GOOD:gsub("Add ", "One adds ") })
  local two = task_tree(t, { ["x/toy.lua"] = GOOD:gsub("Add ", "Two adds ") })
  local three = task_tree(t, { ["x/toy.lua"] = GOOD:gsub("Add ", "Three adds ") })
  local function desc(env, args)
    local code, out, err = t.sh(env .. " " .. t.klab .. " tasks --json " .. args)
    local ok, list = pcall(cjson.decode, out)
    if not (ok and type(list) == "table") then return "?" .. out .. err, code end
    local toy, gemm
    for _, r in ipairs(list) do
      if r.name == "toy/16" then toy = r end
      if r.family == "gemm" then gemm = true end
    end
    return toy and toy.file, gemm
  end
  local file, gemm = desc("KLAB_TASKS=" .. sq(one .. ":" .. two), "")
  t.eq(file, one .. "/x/toy.lua")
  t.ok(gemm, "the repository's tasks come after")
  file = desc("KLAB_TASKS=" .. sq(two .. ":" .. one), "")
  t.eq(file, two .. "/x/toy.lua")
  file = desc("KLAB_TASKS=" .. sq(one .. ":" .. two), "--tasks " .. sq(three))
  t.eq(file, three .. "/x/toy.lua")
  local task = require "klab.task"
  t.eq(task.get("toy/16", { path = { two, one } }).file, two .. "/x/toy.lua")
  t.eq(task.get("toy/16", { path = { one, two } }).file, one .. "/x/toy.lua")
end


-- A family's folder copied outside the repository evaluates from there with
-- --tasks: it builds, plans and compiles the copy's own reference.
function T.family_folder_outside_the_repository(t)
  local dir = t.tmpdir()
  local code = t.sh("cp -r " .. sq(t.root .. "/tasks/softmax") .. " " .. sq(dir .. "/softmax"))
  t.eq(code, 0)
  local out, err
  code, out, err = t.sh("timeout 120 " .. sq(t.klab) .. " eval softmax_bf16/1000x1023 " ..
    sq(dir .. "/softmax/samples/naive") .. " --tasks " .. sq(dir) .. " --json")
  local ok, r = pcall(cjson.decode, out)
  t.ok(ok and type(r) == "table", out .. err)
  if not (ok and type(r) == "table") then return end
  t.ok(r.stages.build and r.stages.build.ok, "the candidate built")
  t.ok(r.stages.plan ~= nil, "the plan ran")
  if not require("klab.gpu").available() then
    t.eq(code, 3, "nothing measured without a GPU")
    t.match(r.reason, "GPU stages skipped")
  end
  -- The copy's reference is the one compiled: broken, it is named.
  local f = assert(io.open(dir .. "/softmax/reference.cu", "a"))
  f:write("\nthis is not CUDA\n")
  f:close()
  code, out, err = t.sh("timeout 120 " .. sq(t.klab) .. " eval softmax_bf16/1000x1023 " ..
    sq(dir .. "/softmax/samples/naive") .. " --tasks " .. sq(dir))
  t.ok(code ~= 0, "a broken reference fails the evaluation")
  t.ok((out .. err):find(dir .. "/softmax/reference.cu", 1, true) ~= nil, "the message names the copy's reference: "
    .. out .. err)
  code, out = t.sh(sq(t.klab) .. " tasks --json --family softmax --tasks " .. sq(dir))
  local lok, list = pcall(cjson.decode, out)
  t.ok(lok and #list > 0, out)
  for _, x in ipairs(lok and list or {}) do
    t.eq(x.file:sub(1, #dir), dir, x.name .. " comes from the copy")
  end
end

-- eval_bench's study batch runs only on a GPU, so a renamed task or a moved
-- sample would first show there: every line names a task variant that loads
-- and a candidate that exists, and the mix is the study's (30% compile or
-- plan errors, 25% incorrect, 25% slow, 20% fast of 60).
function T.study_batch_names_what_exists(t)
  local cjson = require("cjson")
  local fs = require("klab.fs")
  local dir = t.root .. "/tests/bench/study/"
  local r = { root = root_tasks(t) }
  local count, n = {}, 0
  for line in io.lines(dir .. "batch.jsonl") do
    n = n + 1
    local e = cjson.decode(line)
    local where = ("batch.jsonl:%d"):format(n)
    t.ok(pcall(task.get, e.task, r), where .. ": task " .. tostring(e.task) .. " loads")
    t.ok(fs.type(dir .. e.candidate) ~= nil, where .. ": candidate " .. tostring(e.candidate) .. " exists")
    count[e.class] = (count[e.class] or 0) + 1
  end
  t.eq(n, 60)
  t.eq((count.compile_error or 0) + (count.plan_error or 0), 18)
  t.eq(count.incorrect, 15)
  t.eq(count.slow, 15)
  t.eq(count.fast, 12)
end

return T
