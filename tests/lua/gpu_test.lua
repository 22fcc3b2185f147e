-- gpu_test.lua: require "klab.gpu" (bindings/l_gpu.c over host/driver/cuda.c).
--
-- The first group runs everywhere (on a machine without a driver it checks
-- the failures); the gpu_* tests need a GPU and skip with the reason when
-- gpu.available() is false. The faulting kernel runs in a child klab process,
-- because a sticky error poisons the process that hit it.

local gpu = require "klab.gpu"

local VADD_PTX = [[
.version 8.0
.target sm_80
.address_size 64

.visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 pn)
{
    .reg .pred %p;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u32 %r1, [pn];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p, %r5, %r1;
    @%p bra DONE;
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd3, %rd3;
    mul.wide.u32 %rd4, %r5, 4;
    add.s64 %rd5, %rd1, %rd4;
    add.s64 %rd6, %rd2, %rd4;
    add.s64 %rd7, %rd3, %rd4;
    ld.global.f32 %f1, [%rd5];
    ld.global.f32 %f2, [%rd6];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd7], %f3;
DONE:
    ret;
}
]]

local FAULT_PTX = [[
.version 8.0
.target sm_80
.address_size 64

.visible .entry fault()
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    mov.u64 %rd1, 16;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
]]

local function need_gpu(t)
  t.need_gpu()
end

local function floats(list)
  return string.pack(string.rep("<f", #list), table.unpack(list))
end

local function unfloats(s)
  local out = {}
  for i = 1, #s // 4 do out[i] = (string.unpack("<f", s, (i - 1) * 4 + 1)) end
  return out
end

-- The vadd cubin through klab.jit; skips when klab.jit is not built in.
local function jit_cubin(t, source, arch)
  local ok, jit = pcall(require, "klab.jit")
  if not ok then t.skip("klab.jit is not available: " .. tostring(jit)) end
  local res, msg = jit.compile { source = source, lang = "ptx", arch = arch }
  t.ok(res, "jit.compile: " .. tostring(msg))
  if not res then t.skip("cannot compile") end
  t.ok(type(res.cubin) == "string" and res.cubin:sub(1, 4) == "\127ELF", "cubin is an ELF image")
  return res.cubin
end

-- Allocates a, b, out (n floats) and runs vadd; returns the sums.
local function run_vadd(t, ctx, fn, n, extra)
  local av, bv = {}, {}
  for i = 1, n do av[i] = i - 1; bv[i] = 0.25 * i end
  local a <close> = assert(ctx:alloc(4 * n))
  local b <close> = assert(ctx:alloc(4 * n))
  local out <close> = assert(ctx:alloc(4 * n))
  assert(a:upload(floats(av)))
  assert(b:upload(floats(bv)))
  assert(out:fill(0))
  local spec = { grid = { (n + 127) // 128 }, block = { 128 }, args = { a, b, out, { "u32", n } } }
  for k, v in pairs(extra or {}) do spec[k] = v end
  local ok, msg, code = ctx:launch(fn, spec)
  t.ok(ok, "launch: " .. tostring(msg) .. " " .. tostring(code))
  t.eq(ctx:sync(), true)
  local got = unfloats(assert(out:download()))
  local wrong = 0
  for i = 1, n do if got[i] ~= av[i] + bv[i] then wrong = wrong + 1 end end
  t.eq(wrong, 0, "wrong sums")
end

return {
  -- ---- everywhere ----

  available = function(t)
    local ok, why = gpu.available()
    t.eq(type(ok), "boolean")
    if ok then
      t.eq(why, nil)
    else
      t.match(why, "^no CUDA d")  -- "no CUDA driver found: ..." or "no CUDA device found: ..."
    end
  end,

  no_driver_failures = function(t)
    local ok, why = gpu.available()
    if ok then t.skip("a GPU is present") end
    for _, call in ipairs {
      function() return gpu.device(0) end,
      function() return gpu.device() end,
      function() return gpu.context(0) end,
      function() return gpu.count() end,
      function() return gpu.driver_version() end,
    } do
      local v, msg, code = call()
      t.eq(v, nil)
      t.eq(msg, why)
      t.eq(code, "ENODRIVER")
    end
  end,

  type_errors = function(t)
    t.raises(function() gpu.device("zero") end, "number expected")
    t.raises(function() gpu.device(-1) end, "ordinal")
    t.raises(function() gpu.device(1.5) end, "integer")
    t.raises(function() gpu.context({}) end, "number expected")
    t.raises(function() gpu.arch_name("nine", 0) end, "number expected")
    t.raises(function() gpu.is_sticky({}) end, "number expected")
  end,

  arch_names = function(t)
    t.eq(gpu.arch_name(9, 0), "sm_90a")
    t.eq(gpu.arch_name(10, 0), "sm_100a")
    t.eq(gpu.arch_name(8, 9), "sm_89")
    t.eq(gpu.arch_name(8, 0), "sm_80")
    t.eq(gpu.arch_name(12, 0), "sm_120")
  end,

  sticky_classification = function(t)
    for _, r in ipairs { 700, 714, 715, 716, 718, 719 } do t.eq(gpu.is_sticky(r), true, tostring(r)) end
    for _, r in ipairs { 0, 1, 2, 209, 500, 701 } do t.eq(gpu.is_sticky(r), false, tostring(r)) end
    t.eq(gpu.is_sticky("CUDA_ERROR_ILLEGAL_ADDRESS"), true)
    t.eq(gpu.is_sticky("CUDA_ERROR_MISALIGNED_ADDRESS"), true)
    t.eq(gpu.is_sticky("CUDA_ERROR_INVALID_VALUE"), false)
    t.eq(gpu.is_sticky("not an error"), false)
  end,

  -- ---- GPU only ----

  gpu_device = function(t)
    need_gpu(t)
    local n = assert(gpu.count())
    t.ok(n >= 1)
    t.ok(assert(gpu.driver_version()) >= 12040)
    local p = assert(gpu.device(0))
    t.eq(p.ordinal, 0)
    t.ok(#p.name > 0)
    t.eq(p.arch, gpu.arch_name(p.major, p.minor))
    t.ok(p.sm_count > 0 and p.warp_size == 32 and p.total_mem > 2 ^ 30)
    t.ok(p.l2_bytes > 0 and p.smem_per_block_optin >= 48 * 1024 and p.smem_per_sm > 0)
    t.ok(p.max_threads_per_block >= 512 and p.regs_per_sm > 0)
    t.ok(p.clock_khz > 0 and p.mem_clock_khz > 0 and p.bus_width_bits > 0)
    t.match(p.uuid, "^GPU%-%x+%-%x+%-%x+%-%x+%-%x+$")
    t.match(p.pci_bus_id, ":")
    t.eq(type(p.ecc), "boolean")
    t.eq(type(p.cluster_launch), "boolean")
    t.ok(p.compute_mode == "default" or p.compute_mode == "exclusive_process" or p.compute_mode == "prohibited")
    local none, msg, code = gpu.device(n)
    t.eq(none, nil)
    t.match(msg, "no CUDA device " .. n)
    t.eq(code, "EINVAL")
  end,

  gpu_buffers = function(t)
    need_gpu(t)
    local ctx <close> = assert(gpu.context(0))
    t.eq(ctx:device(), 0)
    local free0, total = ctx:mem_info()
    t.ok(free0 > 0 and free0 <= total)
    local buf = assert(ctx:alloc(4096))
    t.eq(buf:size(), 4096)
    t.ok(buf:ptr() > 0)
    t.match(tostring(buf), "^klab%.gpu%.Buffer %(0x%x+, 4096 bytes%)$")
    t.eq(buf:fill(0x5a), true)
    t.eq(buf:download(4, 100), "ZZZZ")
    t.eq(buf:upload("hello", 10), true)
    t.eq(buf:download(7, 9), "ZhelloZ")
    t.eq(#buf:download(), 4096)
    t.eq(#buf:download(0, 4096), 0)
    t.raises(function() buf:upload("x", 4096) end, "do not fit")
    t.raises(function() buf:download(10, 4090) end, "do not fit")
    t.raises(function() buf:fill(256) end, "0..255")
    t.raises(function() ctx:alloc(0) end, "positive")
    t.eq(buf:free(), true)
    t.eq(buf:free(), false)
    t.eq(tostring(buf), "klab.gpu.Buffer (freed)")
    t.raises(function() buf:size() end, "freed")
    -- Too large: an ordinary failure.
    local big, msg, code = ctx:alloc(total * 2)
    t.eq(big, nil)
    t.match(msg, "CUDA_ERROR_OUT_OF_MEMORY")
    t.eq(code, "ENOMEM")
    t.eq(ctx:sticky(), nil)
  end,

  gpu_alloc_collects_garbage = function(t)
    need_gpu(t)
    local ctx <close> = assert(gpu.context(0))
    local free0 = ctx:mem_info()
    local chunk = free0 // 3
    -- Buffers dropped without :free(): the allocator collects them on OOM.
    for i = 1, 6 do
      local b, msg = ctx:alloc(chunk)
      t.ok(b, "allocation " .. i .. ": " .. tostring(msg))
      if not b then break end
    end
    collectgarbage()
    local free1 = ctx:mem_info()
    t.ok(free1 > free0 - chunk // 2, "memory came back")
  end,

  gpu_lifetimes = function(t)
    need_gpu(t)
    local ctx = assert(gpu.context(0))
    local buf = assert(ctx:alloc(256))
    local mod = assert(ctx:load(VADD_PTX))   -- PTX through the driver JIT
    local fn = assert(mod:func("vadd"))
    -- Freeing parents first: they stay alive underneath their children.
    t.eq(ctx:free(), true)
    t.eq(tostring(ctx), "klab.gpu.Context (freed)")
    t.raises(function() ctx:alloc(16) end, "freed")
    t.eq(mod:free(), true)
    t.eq(buf:fill(7), true)
    t.eq(buf:download(2), "\7\7")
    t.ok(fn:attributes().registers > 0)
    t.eq(fn:free(), true)
    t.eq(buf:free(), true)
    -- A fresh context still works after all that.
    local ctx2 <close> = assert(gpu.context(0))
    local b2 <close> = assert(ctx2:alloc(16))
    t.eq(b2:fill(1), true)
    -- Handles dropped without :free() are collected.
    for _ = 1, 8 do
      local c = assert(gpu.context(0))
      local _ = assert(c:alloc(1 << 20))
    end
    collectgarbage()
    collectgarbage()
    t.eq(ctx2:sync(), true)
  end,

  gpu_vadd_jit = function(t)
    need_gpu(t)
    local props = assert(gpu.device(0))
    local cubin = jit_cubin(t, VADD_PTX, props.arch)
    local ctx <close> = assert(gpu.context(0))
    local mod <close> = assert(ctx:load(cubin))
    local fn <close> = assert(mod:func("vadd"))
    t.eq(fn:name(), "vadd")
    local a = fn:attributes()
    t.ok(a.registers > 0 and a.max_threads > 0)
    t.eq(a.binary_version, props.major * 10 + props.minor)
    t.eq(a.local_bytes, 0)
    local params = fn:params()
    if params then
      t.eq(#params, 4)
      t.eq(params[1].offset, 0); t.eq(params[1].size, 8)
      t.eq(params[3].offset, 16); t.eq(params[3].size, 8)
      t.eq(params[4].offset, 24); t.eq(params[4].size, 4)
    end
    run_vadd(t, ctx, fn, 1000)
    -- Over 48 KiB of dynamic shared memory: the attribute is raised first.
    run_vadd(t, ctx, fn, 1000, { shared = 100 * 1024 })
    t.eq(fn:attributes().max_dynamic_smem, 100 * 1024)
    t.eq(fn:set_max_shared(props.smem_per_block_optin), true)
    local no, nmsg, ncode = fn:set_max_shared(props.smem_per_block_optin + 4096)
    t.eq(no, nil)
    t.match(nmsg, "MAX_DYNAMIC_SHARED_SIZE_BYTES")
    t.eq(ncode, "ECUDA")
    if props.cluster_launch then
      run_vadd(t, ctx, fn, 1024, { cluster = { 2, 1, 1 } })
    end
    local none, msg, code = mod:func("nope")
    t.eq(none, nil)
    t.match(msg, "nope")
    t.eq(code, "ENOTFOUND")
  end,

  gpu_vadd_driver_jit = function(t)
    need_gpu(t)
    local ctx <close> = assert(gpu.context(0))
    local mod <close> = assert(ctx:load(VADD_PTX))
    local fn <close> = assert(mod:func("vadd"))
    run_vadd(t, ctx, fn, 333)
    -- The other argument forms: a pointer with an offset, raw bytes.
    local a <close> = assert(ctx:alloc(64))
    local out <close> = assert(ctx:alloc(64))
    assert(a:upload(floats { 1, 2, 3, 4, 5, 6, 7, 8 }))
    assert(out:fill(0))
    assert(ctx:launch(fn, { grid = 1, block = 32,
      args = { { "ptr", a, 16 }, { "ptr", a, 0 }, out, { "bytes", string.pack("<I4", 4) } } }))
    t.eq(ctx:sync(), true)
    local got = unfloats(out:download(16))
    t.eq(string.format("%g,%g,%g,%g", table.unpack(got)), "6,8,10,12")
    -- A module the driver rejects: nil, message, ECUDA, the JIT log.
    local bad, msg, code, log = ctx:load("this is not PTX")
    t.eq(bad, nil)
    t.match(msg, "cuModuleLoadDataEx")
    t.eq(code, "ECUDA")
    t.ok(type(log) == "string" and #log > 0, "JIT log")
    -- A truncated cubin never reaches the driver.
    local trunc, tmsg, tcode = ctx:load("\127ELF\2\1\1" .. string.rep("\0", 20))
    t.eq(trunc, nil)
    t.match(tmsg, "truncated")
    t.eq(tcode, "EINVAL")
  end,

  gpu_launch_refused = function(t)
    need_gpu(t)
    local ctx <close> = assert(gpu.context(0))
    local mod <close> = assert(ctx:load(VADD_PTX))
    local fn <close> = assert(mod:func("vadd"))
    local a <close> = assert(ctx:alloc(64))
    local function launch(args, extra)
      local spec = { grid = { 1 }, block = { 16 }, args = args }
      for k, v in pairs(extra or {}) do spec[k] = v end
      return ctx:launch(fn, spec)
    end
    if fn:params() then
      local ok, msg, code = launch { a, a, a }
      t.eq(ok, nil)
      t.match(msg, "takes 4 parameters, 3 given")
      t.eq(code, "EINVAL")
      ok, msg, code = launch { a, a, a, { "u64", 16 } }
      t.eq(ok, nil)
      t.match(msg, "argument 4 is 8 bytes")
      t.eq(code, "EINVAL")
      ok, msg, code = launch { a, { "f32", 1 }, a, { "u32", 16 } }
      t.eq(ok, nil)
      t.match(msg, "argument 2 is 4 bytes")
    else
      t.ok(false, "cuFuncGetParamInfo is expected on driver 12.4+")
    end
    -- Misuse raises.
    t.raises(function() launch { a, a, a, { "u33", 1 } } end, "unknown type")
    t.raises(function() launch { a, a, a, 16 } end, "expected")
    t.raises(function() launch { a, a, a, { "u32", -1 } } end, "does not fit")
    t.raises(function() launch { a, a, a, { "u32", 1.5 } } end, "integer")
    t.raises(function() ctx:launch(fn, { block = { 1 } }) end, "grid and block")
    t.raises(function() launch({ a, a, a, { "u32", 1 } }, { block = { 0 } }) end, "out of range")
    t.raises(function() launch({ a, a, a, { "u32", 1 } }, { grid = { 1, 1, 1, 1 } }) end, "1 to 3")
    t.raises(function() ctx:launch(a, {}) end, "Function expected")
    -- Not a multiple of the cluster: refused before the driver.
    local ok, msg, code = launch({ a, a, a, { "u32", 16 } }, { grid = { 3 }, cluster = { 2 } })
    t.eq(ok, nil)
    t.match(msg, "multiple")
    t.eq(code, "EINVAL")
    -- Too many threads: the driver refuses; not sticky.
    local ok2, msg2, code2, detail = launch({ a, a, a, { "u32", 16 } }, { block = { 4096 } })
    t.eq(ok2, nil)
    t.eq(code2, "ECUDA")
    t.match(msg2, "cuLaunchKernelEx")
    t.eq(detail and detail.sticky, false)
    t.eq(ctx:sync(), true)
    -- A freed buffer as an argument.
    local gone = assert(ctx:alloc(16))
    gone:free()
    t.raises(function() launch { gone, a, a, { "u32", 1 } } end, "freed")
  end,

  gpu_zz_fault_is_sticky = function(t)
    need_gpu(t)
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write("local gpu = require 'klab.gpu'\n",
      "local ctx = assert(gpu.context(0))\n",
      "local mod = assert(ctx:load(", string.format("%q", FAULT_PTX), "))\n",
      "local fn = assert(mod:func('fault'))\n",
      "local ok, msg, code, d = ctx:launch(fn, {grid={1}, block={1}, args={}})\n",
      "if ok then ok, msg, code, d = ctx:sync() end\n",
      "print(string.format('ok=%s code=%s sticky=%s err=%s ctxsticky=%s', tostring(ok), tostring(code),\n",
      "  tostring(d and d.sticky), tostring(d and d.cuda_error), tostring(ctx:sticky())))\n",
      "local b, m2, c2 = ctx:alloc(64)\n",
      "print('after=' .. tostring(b) .. ' ' .. tostring(c2))\n",
      "mod:free(); ctx:free()\n",
      "print('done')\n")
    f:close()
    local rc, out, err = t.sh('"' .. t.klab .. '" "' .. script .. '"')
    os.remove(script)
    t.eq(rc, 0, err)
    t.match(out, "ok=nil code=ECUDA sticky=true err=CUDA_ERROR_ILLEGAL_ADDRESS ctxsticky=CUDA_ERROR_ILLEGAL_ADDRESS")
    t.match(out, "after=nil ECUDA")
    t.match(out, "done")
  end,
}
