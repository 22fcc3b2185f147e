-- Tests of klab.sandbox and klab.eval.plan.
local sandbox = require("klab.sandbox")
local plan = require("klab.eval.plan")
local task = require("klab.task")

local T = {}

local function gemm(t, name)
  return task.get(name or "gemm_bf16/8192x7168x5120", { root = t.root .. "/tasks" })
end

local function now()
  local ok, sys = pcall(require, "klab.sys")
  if ok and sys.monotonic then return sys.monotonic() end
  return os.clock()
end

-- ---- sandbox ------------------------------------------------------------

function T.sandbox_returns_plain_data(t)
  local v, printed = sandbox.run("print('hi', 2) return { a = M * 2, b = { 1, 2.5, 'x', true }, c = sub.k }",
    "plan", { M = 21, sub = { k = "v" } })
  if not t.ok(v, printed) then return end
  t.eq(v.a, 42)
  t.eq(math.type(v.a), "integer")
  t.eq(v.b[2], 2.5)
  t.eq(v.b[3], "x")
  t.eq(v.b[4], true)
  t.eq(v.c, "v")
  t.eq(printed, "hi\t2\n")
  local none, p2, code = sandbox.run("local x = 1", "plan")
  t.eq(none, nil)
  t.eq(code, nil, "a chunk returning nothing is not a failure")
  t.eq(p2, "")
end

function T.sandbox_blocks_dangerous_functions(t)
  for _, name in ipairs({ "io", "os", "require", "load", "loadstring", "dofile", "loadfile", "debug",
                          "collectgarbage", "package", "coroutine", "string.dump", "string.find",
                          "string.gsub", "table.move", "math.random" }) do
    local v, msg = sandbox.run("return " .. name .. " == nil", "plan")
    t.eq(v, true, name .. " is absent: " .. tostring(msg))
  end
  -- through the string metatable too
  t.eq(sandbox.run("return ('').dump == nil and getmetatable('').__index.dump == nil", "plan"), true)
  local v, msg, code = sandbox.run("return os.execute('true')", "plan")
  t.eq(v, nil)
  t.eq(code, "EPLAN")
  t.match(msg, "plan:1:.*os")
  -- binary chunks are refused
  v, msg, code = sandbox.run("\27Lua", "plan")
  t.eq(code, "EPLAN")
  t.match(msg, "binary")
  -- table functions take plain tables only (a __len could make their C loops endless)
  v, msg, code = sandbox.run("table.remove(setmetatable({}, { __len = function() return 1 << 62 end }), 1)", "plan")
  t.eq(code, "EPLAN")
  t.match(msg, "table%.remove: tables with metatables")
  v = sandbox.run("local t = { 3, 1, 2 } table.insert(t, 4) table.insert(t, 1, 0) table.sort(t) " ..
    "local x = table.remove(t) return table.concat(t, ',') .. '|' .. x .. '|' .. select('#', table.unpack(t))", "plan")
  t.eq(v, "0,1,2,3|4|4")
  -- finalizers would run with hooks off
  v, msg, code = sandbox.run("setmetatable({}, { __gc = function() while true do end end })", "plan")
  t.eq(code, "EPLAN")
  t.match(msg, "__gc")
end

function T.sandbox_cannot_reach_host_state(t)
  _G.klab_plan_test_secret = "s3cret"
  local env = { tbl = { x = 1 } }
  local v = sandbox.run("tbl.x = 99; klab_plan_test_secret = 'changed'; return klab_plan_test_secret", "plan", env)
  t.eq(v, "changed")
  t.eq(env.tbl.x, 1, "the env is copied in, not shared")
  t.eq(_G.klab_plan_test_secret, "s3cret", "host globals untouched")
  t.eq(sandbox.run("return _G.klab_plan_test_secret == nil", "plan"), true)
  _G.klab_plan_test_secret = nil
  -- functions and cycles cannot go in or come out
  t.raises(function() sandbox.run("return 1", "plan", { f = print }) end, "plain data")
  local cyc = {}
  cyc.self = cyc
  t.raises(function() sandbox.run("return 1", "plan", cyc) end, "cycle")
  local _, msg, code = sandbox.run("return function() end", "plan")
  t.eq(code, "EPLAN")
  t.match(msg, "function")
  _, msg, code = sandbox.run("local a = {} a.a = a return a", "plan")
  t.eq(code, "EPLAN")
  t.match(msg, "cycle")
  -- a DAG that doubles at each level cannot blow up the copy
  -- (whichever limit it meets first: the count of values, the depth, or
  -- the bytes the copy makes)
  _, msg, code = sandbox.run("local x = {} for i = 1, 40 do x = { x, x } end return x", "plan")
  t.ok(code == "EPLAN" or code == "EMEMORY", code)
  t.ok(msg and (msg:find("values") or msg:find("deeper") or msg:find("memory limit")), msg)
end

function T.sandbox_infinite_loop_hits_instruction_limit(t)
  for _, src in ipairs({
    "while true do end",
    "local function f() while true do end end while true do pcall(f) end",
    "while true do pcall(error, 'x') end",
    "return xpcall(function() while true do end end, function() while true do end end)",
    "local function f() return f() end return f()",
    "local x <close> = setmetatable({}, { __close = function() while true do end end }) while true do end",
    -- a sparse table whose border is 2^61: the C loops of table.* are charged
    "local t = { 1, 2, 3, 4, 5 } t[8] = 1 t[9] = 1 for k = 4, 61 do t[1 << k] = 1 end table.insert(t, 1, 0)",
    "local t = { 1, 2, 3, 4, 5 } t[8] = 1 t[9] = 1 for k = 4, 61 do t[1 << k] = 1 end table.remove(t, 1)",
    "return table.concat({}, '', 1, math.maxinteger)",
  }) do
    local t0 = now()
    local v, msg, code = sandbox.run(src, "plan", nil, { instructions = 1000000, seconds = 30 })
    local dt = now() - t0
    t.eq(v, nil, src)
    t.eq(code, "ELIMIT", src .. ": " .. tostring(msg))
    t.match(msg, "instruction limit")
    t.ok(dt < 5, ("%s took %.2f s"):format(src, dt))
  end
  -- the deadline also stops it
  local _, msg, code = sandbox.run("while true do end", "plan", nil, { instructions = 1e15, seconds = 0.2 })
  t.eq(code, "ELIMIT")
  t.match(msg, "time limit")
end

function T.sandbox_gigabyte_allocation_hits_memory_limit(t)
  for _, src in ipairs({
    "return string.rep('x', 1 << 30)",
    "local ok = pcall(string.rep, 'x', 1 << 30) return ok",
    "local t = {} for i = 1, 1 << 27 do t[i] = i end return #t",
    "local ok = pcall(function() local s = 'x' for i = 1, 40 do s = s .. s end end) while true do end",
  }) do
    local v, msg, code = sandbox.run(src, "plan", nil, { memory = 8 << 20, instructions = 1e10 })
    t.eq(v, nil, src)
    t.eq(code, "EMEMORY", src .. ": " .. tostring(msg))
    t.match(msg, "memory limit")
  end
  -- empty-string repetition cannot spin in C
  local v = sandbox.run("return string.rep('', 1 << 60)", "plan")
  t.eq(v, "")
end

-- ---- plans --------------------------------------------------------------

function T.default_plans_valid(t)
  local all, errs = task.list(t.root .. "/tasks")
  t.eq(#errs, 0)
  t.ok(#all >= 48)
  for _, x in ipairs(all) do
    for _, arch in ipairs({ "sm_90a", "sm_100a" }) do
      local p, err = plan.run(x, nil, { arch = arch })
      -- Every default plan runs; the GEMM family's has a known shape.
      if t.ok(p, x.name .. " " .. arch .. ": " .. tostring(err)) and x.family == "gemm" then
        local l = p.launches[1]
        t.eq(l.kernel, "gemm")
        t.eq(l.block[1], 256)
        t.eq(l.grid[1], (x.dims.N + 127) // 128)
        t.eq(l.grid[2], (x.dims.M + 127) // 128)
        t.eq(l.args[1].kind, "buffer")
        t.eq(l.args[#l.args].kind, "scalar")
        t.eq(l.args[#l.args].value, x.dims.K)
      end
    end
  end
end

function T.sample_plans_normalize(t)
  local b = gemm(t)
  for _, name in ipairs({ "naive", "mma_sync", "wgmma_tma" }) do
    local f = io.open(t.root .. "/tasks/gemm/samples/" .. name .. "/plan.lua")
    if f then
      local src = f:read("a")
      f:close()
      local p, err = plan.run(b, src, { arch = "sm_90a" })
      t.ok(p, name .. ": " .. tostring(err))
      if p and name == "wgmma_tma" then
        local l = p.launches[1]
        t.eq(l.args[1].kind, "tensormap")
        t.eq(l.args[1].buffer, "A")
        t.eq(l.args[1].dims[1], 5120)
        t.eq(l.args[1].strides[1], 5120 * 2)
        t.eq(l.args[1].swizzle, "128B")
        t.eq(l.raise_shared, true)
        t.eq(l.cluster[1], 2)
        t.eq(l.grid[1] % 2, 0)
      end
    end
  end
end

local function reason(t, src, pattern, task_, opts)
  local p, msg, code = plan.run(task_ or gemm(t), src, opts or { arch = "sm_90a" })
  t.eq(p, nil, "expected a plan_error matching " .. pattern)
  t.match(msg or "", pattern)
  return code
end

function T.plan_error_reasons(t)
  local L = "return { launches = { { kernel = 'gemm', grid = %s, block = %s, %s args = %s } } %s }"
  local function src(grid, block, extra, args, top)
    return L:format(grid or "{ 56, 64, 1 }", block or "{ 256, 1, 1 }", extra or "", args or "{ { buffer = 'A' } }", top or "")
  end
  t.eq(reason(t, src(nil, nil, nil, "{ { buffer = 'D' } }"), "argument 1: unknown buffer 'D' %(buffers: A, B, C%)"), "EPLAN")
  reason(t, src(nil, nil, nil, "{ 'Z' }"), "unknown buffer 'Z'")
  reason(t, src("{ 57, 64, 1 }", nil, "cluster = { 2, 1, 1 },"), "grid%.x = 57 is not divisible by cluster%.x = 2")
  reason(t, src(nil, nil, "cluster = { 1, 3, 1 },"), "grid%.y = 64 is not divisible by cluster%.y = 3")
  reason(t, src(nil, "{ 64, 32, 1 }"), "block has 2048 threads")
  reason(t, src(nil, nil, "shared = 300000,"), "300000 bytes of dynamic shared memory is above the device limit of 232448")
  reason(t, src(nil, nil, nil, "{ { u33 = 1 } }"), "unknown field 'u33'")
  reason(t, src(nil, nil, nil, "{ { u32 = -1 } }"), "argument 1 %(u32%) = %-1 is below 0")
  reason(t, src(nil, nil, nil, "{ { u32 = 1.5 } }"), "must be an integer")
  reason(t, src(nil, nil, nil, "{ { kind = 'scalar', type = 'f16', value = 1 } }"), "unknown scalar type 'f16'")
  reason(t, src(nil, nil, nil, "{ { workspace = 'w' } }"), "unknown workspace 'w'")
  reason(t, src(nil, nil, nil, "{ { tensormap = 'tm' } }"), "no tensor map named 'tm'")
  reason(t, src("{ 0, 1, 1 }"), "grid%.x = 0 is below 1")
  reason(t, src("'many'"), "grid must be a list")
  reason(t, "return { launches = {} }", "no launches")
  reason(t, "return 42", "must return a table")
  reason(t, "return { launch = {} }", "unknown field 'launch'")
  reason(t, "return { launches = { { kernel = 'a b', grid = 1, block = 1 } } }", "kernel must be")
  local many = {}
  for i = 1, 65 do many[i] = "{ kernel = 'k', grid = 1, block = 1 }" end
  reason(t, "return { launches = { " .. table.concat(many, ", ") .. " } }", "65 launches; at most 64")
  reason(t, src(nil, nil, nil, "{ { buffer = 'A' } }", ", workspace = { A = { bytes = 4 } }"), "taken by a task buffer")
  -- errors raised by the plan itself
  t.eq(reason(t, "error('K must be even')", "plan:1: K must be even"), "EPLAN")
  t.eq(reason(t, "while true do end", "instruction limit"), "ELIMIT")
  t.eq(reason(t, "return string.rep('x', 1 << 30)", "memory limit"), "EMEMORY")
end

function T.plan_helpers_and_workspace(t)
  local src = [[
    return {
      workspace = { partial = { bytes = M * N * 4, zero = true } },
      launches = {
        { kernel = "splitk", grid = { cdiv(N, 128), cdiv(M, 128), 4 }, block = 128,
          args = { buffer "A", buffer "B", workspace "partial", u32(M), i32(-1), f32(0.5), u64(1 << 40), "C" } },
        { kernel = "reduce", grid = cdiv(M * N, 256), block = { x = 256 },
          args = { workspace "partial", buffer "C", f64(2) } },
      },
    }
  ]]
  local p, err = plan.run(gemm(t), src)
  if not t.ok(p, err) then return end
  t.eq(#p.launches, 2)
  t.eq(p.workspace.partial.bytes, 8192 * 7168 * 4)
  t.eq(p.workspace.partial.zero, true)
  local a = p.launches[1].args
  t.eq(a[3].kind, "workspace")
  t.eq(a[5].type, "i32")
  t.eq(a[5].value, -1)
  t.eq(a[6].type, "f32")
  t.eq(a[8].kind, "buffer")
  t.eq(a[8].name, "C")
  t.eq(p.launches[1].grid[3], 4)
  t.eq(p.launches[2].block[1], 256)
  t.eq(p.launches[2].block[2], 1)
  t.eq(p.launches[2].grid[1], 8192 * 7168 // 256)
  t.eq(p.launches[1].raise_shared, false)
end

function T.tensormap_checks(t)
  local odd = gemm(t, "gemm_bf16/4097x4095x4099")
  local tm = "return { launches = { { kernel = 'g', grid = 1, block = 128, args = { { tensormap = 'a' } } } }, " ..
             "tensormaps = { a = %s } }"
  reason(t, tm:format("{ buffer = 'A', box = { 64, 128 }, swizzle = '128B' }"),
    "stride 1 %(8198 bytes%) is not a multiple of 16 bytes", odd)
  local b = gemm(t)
  reason(t, tm:format("{ buffer = 'A', box = { 128, 128 }, swizzle = '128B' }"),
    "inner box dimension %(256 bytes%) exceeds the 128B swizzle span", b)
  reason(t, tm:format("{ buffer = 'A', box = { 4, 128 } }"), "multiple of 16 bytes", b)
  reason(t, tm:format("{ buffer = 'A', box = { 64, 512 } }"), "box%[2%] = 512 is above 256", b)
  reason(t, tm:format("{ buffer = 'A', dims = { 5120, 9000 }, box = { 64, 64 } }"),
    "addresses %d+ bytes but buffer A has only 83886080", b)
  reason(t, tm:format("{ buffer = 'X', box = { 64, 64 } }"), "unknown buffer 'X'", b)
  reason(t, tm:format("{ buffer = 'A', dtype = 'f32', box = { 64, 64 } }"), "32%-bit elements but buffer A holds 16%-bit", b)
  reason(t, tm:format("{ buffer = 'A', box = { 64 } }"), "box has 1 entries, expected 2", b)
  -- a valid one, inline, with the defaults filled in
  local p, err = plan.run(b, "return { launches = { { kernel = 'g', grid = 1, block = 128, " ..
    "args = { { tensormap = { buffer = 'B', box = { 64, 256 }, swizzle = '128B', l2promotion = '256B' } } } } } }")
  if t.ok(p, err) then
    local a = p.launches[1].args[1]
    t.eq(a.dims[1], 5120)
    t.eq(a.dims[2], 7168)
    t.eq(a.strides[1], 10240)
    t.eq(a.elem_strides[2], 1)
    t.eq(a.dtype, "bf16")
    t.eq(a.oob_fill, "none")
  end
end

function T.check_params_and_pack(t)
  local p = assert(plan.run(gemm(t), nil))
  local l = p.launches[1]
  local layout = { { offset = 0, size = 8 }, { offset = 8, size = 8 }, { offset = 16, size = 8 },
                   { offset = 24, size = 4 }, { offset = 28, size = 4 }, { offset = 32, size = 4 } }
  t.eq(plan.check_params(l, layout), true)
  local ok, why = plan.check_params(l, { table.unpack(layout, 1, 5) })
  t.eq(ok, nil)
  t.match(why, "kernel gemm takes 5 parameters, the plan passes 6 arguments")
  local bad = { table.unpack(layout) }
  bad[4] = { offset = 24, size = 8 }
  ok, why = plan.check_params(l, bad)
  t.eq(ok, nil)
  t.match(why, "argument 4 %(u32 8192%) is 4 bytes, but kernel parameter 4 is 8 bytes")
  bad = { table.unpack(layout) }
  bad[1] = { offset = 0, size = 4 }
  ok, why = plan.check_params(l, bad)
  t.match(why or "", "argument 1 %(buffer A%) is 8 bytes")

  local packed = plan.pack(l, layout, function(a)
    return ({ A = 0x1000, B = 0x2000, C = 0x3000 })[a.name]
  end)
  t.eq(packed.size, 36)
  t.eq(#packed.bytes, 36)
  t.eq(string.unpack("<I8", packed.bytes, 1), 0x1000)
  t.eq(string.unpack("<I8", packed.bytes, 17), 0x3000)
  t.eq(string.unpack("<I4", packed.bytes, 25), 8192)
  t.eq(string.unpack("<I4", packed.bytes, 33), 5120)
  t.eq(packed.items[4].offset, 24)
  local desc = plan.pack(l, layout)
  t.eq(desc.bytes, nil)
  t.eq(desc.size, 36)

  -- tensor maps are 128 bytes at 64-byte aligned offsets
  local f = io.open(t.root .. "/tasks/gemm/samples/wgmma_tma/plan.lua")
  if f then
    local w = assert(plan.run(gemm(t), f:read("a"), { arch = "sm_90a" }))
    f:close()
    local wl = w.launches[1]
    local tl = { { offset = 0, size = 128 }, { offset = 128, size = 128 }, { offset = 256, size = 8 },
                 { offset = 264, size = 4 }, { offset = 268, size = 4 }, { offset = 272, size = 4 } }
    t.eq(plan.check_params(wl, tl), true)
    tl[2] = { offset = 136, size = 128 }
    ok, why = plan.check_params(wl, tl)
    t.match(why or "", "64%-byte aligned")
    tl[2] = { offset = 128, size = 8 }
    ok, why = plan.check_params(wl, tl)
    t.match(why or "", "tensor map over B%) is 128 bytes, but kernel parameter 2 is 8 bytes")
  end
end

-- The load stage checks every launch against its compiled kernel's limits
-- and the device's shared memory, and its plan_error says which.
function T.launches_fit_their_kernels(t)
  local load = require "klab.eval.stage.load"
  local verdict = require "klab.eval.verdict"
  local l = assert(plan.run(gemm(t), nil)).launches[1]
  t.eq(l.block[1] * (l.block[2] or 1) * (l.block[3] or 1), 256)
  local attrs = { max_threads = 128, registers = 96, static_smem = 1024 }
  local over = load.threads_over(l, attrs)
  t.match(verdict.reason("plan_error", over), "^kernel gemm launched with 256 threads per block, but it can take at "
    .. "most 128 %(registers: 96%)$")
  t.eq(load.threads_over(l, { max_threads = 256 }), nil)
  local big = { kernel = "gemm", block = l.block, shared = 232448 }
  t.match(verdict.reason("plan_error", load.shared_over(big, attrs, 232448)),
    "^kernel gemm asks for 232448 bytes of dynamic shared memory; with its 1024 static bytes that exceeds the device's 232448$")
  t.eq(load.shared_over(big, { static_smem = 0 }, 232448), nil)
  t.eq(load.shared_over({ kernel = "gemm", block = l.block }, {}, 0), nil, "no dynamic shared memory fits")
end

return T
