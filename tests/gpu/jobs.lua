-- Jobs that the GPU check runs in worker processes (klab --worker).
local gpu = require "klab.gpu"
local jit = require "klab.jit"

local M = {}

local function root() return os.getenv("KLAB_ROOT") or "." end

local function must(v, msg, code) if v == nil then error(tostring(msg) .. " (" .. tostring(code) .. ")", 2) end return v end

local function context()
  local ok, why = gpu.available()
  if not ok then error("no GPU: " .. tostring(why)) end
  return must(gpu.context(0))
end

local function load(ctx, file, arch)
  local res = must(jit.compile_file(root() .. "/tasks/samples/" .. file, { arch = arch }))
  local mod = must(ctx:load(res.cubin))
  return mod, res
end

function M.describe()
  local p = must(gpu.device(0))
  p.driver_version = gpu.driver_version()
  p.uuid = nil
  return p
end

-- c = a + b over n floats, compiled for the device's exact architecture.
function M.vector_add(args)
  local n = args and args.n or (1 << 20)
  local ctx <close> = context()
  local arch = gpu.device(0).arch
  local mod, res = load(ctx, "vector_add.ptx", arch)
  local fn = must(mod:func("vector_add"))
  local a, b = {}, {}
  for i = 1, n do a[i] = (i % 1000) * 0.5; b[i] = (i % 7) - 3.0 end
  -- string.pack takes a bounded number of arguments: pack in chunks.
  local function upload(buf, vals)
    local parts = {}
    for i = 1, n, 4096 do
      parts[#parts + 1] = string.pack("<" .. ("f"):rep(math.min(4096, n - i + 1)), table.unpack(vals, i, math.min(n, i + 4095)))
    end
    buf:upload(table.concat(parts))
  end
  local A = must(ctx:alloc(4 * n)); upload(A, a)
  local B = must(ctx:alloc(4 * n)); upload(B, b)
  local C = must(ctx:alloc(4 * n)); C:fill(0xff)
  must(ctx:launch(fn, { grid = { (n + 255) // 256 }, block = { 256 }, args = { A, B, C, { "u32", n } } }))
  must(ctx:sync())
  local out = C:download()
  local bad = 0
  for i = 1, n do
    local v = string.unpack("<f", out, 4 * (i - 1) + 1)
    if v ~= a[i] + b[i] then bad = bad + 1 end
  end
  return { arch = arch, n = n, wrong = bad, registers = res.kernels[1].registers }
end

-- One 64x8x16 bf16 wgmma tile against a host reference (small integers:
-- exact in bf16 and fp32).
function M.wgmma_tile()
  local ctx <close> = context()
  local mod = load(ctx, "wgmma_tile.ptx", "sm_90a")
  local fn = must(mod:func("wgmma_tile"))
  local function bf16(x) return string.pack("<f", x):sub(3, 4) end
  local A, B = {}, {}
  local pa, pb = {}, {}
  for m = 0, 63 do for k = 0, 15 do
    local v = ((m * 3 + k * 5) % 7) - 3; A[m * 16 + k] = v; pa[#pa + 1] = bf16(v)
  end end
  for nn = 0, 7 do for k = 0, 15 do
    local v = ((nn * 2 + k) % 5) - 2; B[nn * 16 + k] = v; pb[#pb + 1] = bf16(v)
  end end
  local dA = must(ctx:alloc(64 * 16 * 2)); dA:upload(table.concat(pa))
  local dB = must(ctx:alloc(8 * 16 * 2)); dB:upload(table.concat(pb))
  local dD = must(ctx:alloc(64 * 8 * 4)); dD:fill(0xff)
  must(ctx:launch(fn, { grid = { 1 }, block = { 128 }, args = { dA, dB, dD } }))
  must(ctx:sync())
  local out, wrong = dD:download(), 0
  for m = 0, 63 do for nn = 0, 7 do
    local want = 0
    for k = 0, 15 do want = want + A[m * 16 + k] * B[nn * 16 + k] end
    if string.unpack("<f", out, 4 * (m * 8 + nn) + 1) ~= want then wrong = wrong + 1 end
  end end
  return { wrong = wrong }
end

-- A kernel that stores to an unmapped address: the error comes back and is
-- sticky; the worker that ran it must be replaced.
function M.fault()
  local ctx = context()
  local mod = load(ctx, "fault.ptx", gpu.device(0).arch)
  local fn = must(mod:func("fault"))
  must(ctx:launch(fn, { grid = { 1 }, block = { 32 }, args = { { "u64", 16 } } }))
  local ok, msg, code, detail = ctx:sync()
  return { ok = ok or false, msg = msg, code = code, sticky = detail and detail.sticky or false,
    cuda_error = detail and detail.cuda_error }
end

-- A kernel that never ends: only the supervisor's deadline stops it.
function M.spin()
  local ctx = context()
  local mod = load(ctx, "spin.ptx", gpu.device(0).arch)
  local fn = must(mod:func("spin"))
  must(ctx:launch(fn, { grid = { 1 }, block = { 32 }, args = {} }))
  ctx:sync()
  return { returned = true }
end

-- The GEMM references' fp64 core (klab_gemm_tile in the prelude) on the
-- tensor cores against its SIMT loop (KLAB_GEMM_SIMT), on edge shapes and
-- every element type of the GEMM family: the same sums, bit for bit.
-- The judge module opened on ctx, and the text of the task file at path.
local function judge_and_file(ctx, arch, path)
  local judge_mod = require "klab.judge"
  local jr = must(jit.compile { source = judge_mod.source(), lang = "cuda", arch = arch, name = "judge.cu" })
  local judge = must(judge_mod.open(ctx, jr.cubin))
  local f = must(io.open(root() .. "/" .. path))
  local code = f:read("a")
  f:close()
  return judge, code
end

function M.reference_core()
  local ctx <close> = context()
  local arch = gpu.device(0).arch
  local judge, code = judge_and_file(ctx, arch, "tasks/gemm/reference.cu")
  local function build(defines)
    local src = defines .. require("klab.eval.prepare").task_source("tasks/gemm/reference.cu", code)
    local res = must(jit.compile { source = src, lang = "cuda", arch = arch, name = "reference.cu" })
    local mod = must(ctx:load(res.cubin))
    return { mod = mod, fn = must(mod:func("gemm_ref")) }
  end
  local tc, simt = build(""), build("#define KLAB_GEMM_SIMT 1\n")
  local DT = { { "f32", 0, 4 }, { "f16", 1, 2 }, { "bf16", 2, 2 }, { "fp8e4m3", 3, 1 } }
  local cases, differ, nonzero = 0, {}, 0
  for _, shape in ipairs { { 129, 65, 17 }, { 1000, 777, 333 }, { 64, 64, 4096 }, { 1, 300, 5 }, { 1536, 1024, 2048 } } do
    local Mr, N, K = shape[1], shape[2], shape[3]
    for _, dt in ipairs(DT) do
      local A = must(ctx:alloc(dt[3] * Mr * K))
      local B = must(ctx:alloc(dt[3] * N * K))
      must(judge:fill(A:ptr(), Mr * K, dt[1], "normal", 11, nil, nil, 1.0))
      must(judge:fill(B:ptr(), N * K, dt[1], "normal", 12, nil, nil, 1.0))
      local sums = {}
      for i, k in ipairs { tc, simt } do
        local C = must(ctx:alloc(4 * Mr * N))
        C:fill(0xff)
        must(ctx:launch(k.fn, { grid = { (N + 63) // 64, (Mr + 63) // 64, 1 }, block = { 16, 16, 1 },
          args = { A, { "i32", dt[2] }, B, { "i32", dt[2] }, { "u64", 0 }, { "u64", 0 }, C, { "u32", Mr },
                   { "u32", N }, { "u32", K } } }))
        must(ctx:sync())
        sums[i] = must(judge:checksum(C:ptr(), 4 * Mr * N))
        if i == 1 and C:download(4):byte(4) ~= 0xff then nonzero = nonzero + 1 end
        C:free()
      end
      cases = cases + 1
      if sums[1] ~= sums[2] then differ[#differ + 1] = string.format("%dx%dx%d %s", Mr, N, K, dt[1]) end
      A:free()
      B:free()
    end
  end
  return { arch = arch, cases = cases, differ = differ, written = nonzero }
end

-- The convolution reference's two ways to compute all of y: a thread per
-- element (conv_fwd_ref, conv_bwd_data_ref) and 64x64 tiles through shared
-- memory (conv_ref_tiles, what a full reference runs), bit for bit, on
-- ragged shapes of both directions, bf16 and f32.
function M.conv_reference_tiles()
  local ctx <close> = context()
  local arch = gpu.device(0).arch
  local judge, code = judge_and_file(ctx, arch, "tasks/conv/reference.cu")
  local src = require("klab.eval.prepare").task_source("tasks/conv/reference.cu", code)
  local mod = must(ctx:load(must(jit.compile { source = src, lang = "cuda", arch = arch, name = "reference.cu" }).cubin))
  local tiles = must(mod:func("conv_ref_tiles"))
  local unit = { [0] = must(mod:func("conv_fwd_ref")), [1] = must(mod:func("conv_bwd_data_ref")) }
  local DT = { bf16 = { 2, 2 }, f32 = { 0, 4 } }
  local cases, differ, written = 0, {}, 0
  -- {transposed, dtype, N, H, W, C, K, R, S, P, U}
  for _, c in ipairs {
    { 0, "bf16", 2, 15, 17, 24, 40, 3, 3, 1, 2 }, { 0, "f32", 3, 9, 7, 5, 3, 5, 3, 2, 3 },
    { 0, "bf16", 4, 20, 18, 72, 130, 3, 3, 1, 1 }, { 0, "f32", 2, 16, 16, 96, 64, 1, 1, 0, 1 },
    { 1, "bf16", 2, 15, 17, 24, 40, 3, 3, 1, 2 }, { 1, "f32", 3, 10, 9, 5, 7, 5, 3, 2, 3 },
    { 1, "bf16", 2, 30, 28, 80, 136, 3, 3, 1, 2 },
  } do
    local tr, dt, N, H, W, C, K, R, S, P, U = table.unpack(c)
    local OH, OW = (H + 2 * P - R) // U + 1, (W + 2 * P - S) // U + 1
    local xn = tr == 1 and N * OH * OW * K or N * H * W * C
    local yn = tr == 1 and N * H * W * C or N * OH * OW * K
    local pixels, outc = tr == 1 and N * H * W or N * OH * OW, tr == 1 and C or K
    local x, w = must(ctx:alloc(DT[dt][2] * xn)), must(ctx:alloc(DT[dt][2] * K * R * S * C))
    must(judge:fill(x:ptr(), xn, dt, "normal", 21, nil, nil, 1.0))
    must(judge:fill(w:ptr(), K * R * S * C, dt, "normal", 22, nil, nil, 1.0))
    local geometry = { { "u32", N }, { "u32", H }, { "u32", W }, { "u32", C }, { "u32", K }, { "u32", R }, { "u32", S },
      { "u32", P }, { "u32", U }, { "u32", OH }, { "u32", OW } }
    local function args(first, last)
      local a = { table.unpack(first) }
      for _, g in ipairs(geometry) do a[#a + 1] = g end
      a[#a + 1] = last
      return a
    end
    local sums = {}
    for i = 1, 2 do
      local y = must(ctx:alloc(4 * yn))
      y:fill(0xff)
      if i == 1 then
        must(ctx:launch(unit[tr], { grid = { (yn + 255) // 256, 1, 1 }, block = { 256, 1, 1 },
          args = args({ x, { "i32", DT[dt][1] }, w, { "i32", DT[dt][1] }, { "u64", 0 }, { "u64", yn }, y }, { "u32", 1 }) }))
      else
        must(ctx:launch(tiles, { grid = { (pixels + 63) // 64, (outc + 63) // 64, 1 }, block = { 256, 1, 1 },
          args = args({ x, { "i32", DT[dt][1] }, w, { "i32", DT[dt][1] }, y }, { "u32", tr }) }))
      end
      must(ctx:sync())
      sums[i] = must(judge:checksum(y:ptr(), 4 * yn))
      if i == 2 and y:download(4, 4 * (yn - 1)):byte(4) ~= 0xff then written = written + 1 end
      y:free()
    end
    cases = cases + 1
    if sums[1] ~= sums[2] then
      differ[#differ + 1] = string.format("%s %s N%d %dx%d C%d K%d", tr == 1 and "convt" or "conv", dt, N, H, W, C, K)
    end
    x:free()
    w:free()
  end
  return { arch = arch, cases = cases, differ = differ, written = written }
end

return M
