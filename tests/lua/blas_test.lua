-- blas_test.lua: require "klab.blas" (bindings/l_blas.c over host/libraries/blas.c).
--
-- The first group runs everywhere (cuBLASLt is loaded without a driver).
-- The gpu_* tests need a GPU and skip when gpu.available() is false: each
-- dtype runs C = A·Bᵀ on small integer-valued inputs and is compared
-- exactly with a reference computed here in Lua, with every heuristic
-- algorithm; fp32 strict and TF32 are compared on random inputs.

local blas = require "klab.blas"
local gpu = require "klab.gpu"

local function need_gpu(t)
  t.need_gpu()
  return assert(gpu.context(0))
end

-- ---- encoders and decoders for the element types ----

local function f32(x) return string.pack("<f", x) end

-- bf16 is the top half of an fp32 (exact for the small integers used here).
local function bf16(x) return string.pack("<f", x):sub(3, 4) end

local function from_bf16(s, i) -- i: 0-based element
  return (string.unpack("<f", "\0\0" .. s:sub(2 * i + 1, 2 * i + 2)))
end

-- fp16 of an integer |v| < 2048 (exactly representable).
local function f16(v)
  assert(math.type(v) == "integer" and math.abs(v) < 2048)
  if v == 0 then return "\0\0" end
  local sign = v < 0 and 0x8000 or 0
  v = math.abs(v)
  local e = 0
  while (1 << (e + 1)) <= v do e = e + 1 end
  local mant = ((v << 10) >> e) & 0x3ff
  return string.pack("<I2", sign | ((e + 15) << 10) | mant)
end

local function from_f16(s, i)
  local h = string.unpack("<I2", s, 2 * i + 1)
  local sign = (h & 0x8000) ~= 0 and -1 or 1
  local e, m = (h >> 10) & 0x1f, h & 0x3ff
  if e == 0 then return sign * m * 2.0 ^ -24 end
  return sign * (1 + m / 1024) * 2.0 ^ (e - 15)
end

-- e4m3 of an integer |v| <= 8 (all exactly representable): 1 sign bit,
-- 4 exponent bits (bias 7), 3 mantissa bits.
local function e4m3(v)
  assert(math.type(v) == "integer" and math.abs(v) <= 8)
  if v == 0 then return "\0" end
  local sign = v < 0 and 0x80 or 0
  v = math.abs(v)
  local e = 0
  while (1 << (e + 1)) <= v do e = e + 1 end
  local mant = ((v << 3) >> e) & 0x7
  return string.char(sign | ((e + 7) << 3) | mant)
end

local function from_f32(s, i) return (string.unpack("<f", s, 4 * i + 1)) end

local ENC = { bf16 = bf16, f16 = f16, e4m3 = e4m3, f32 = f32 }
local DEC = { bf16 = from_bf16, f16 = from_f16, e4m3 = from_bf16, f32 = from_f32 }

-- Row-major matrices as Lua lists of numbers, and their encodings.
local function encode(dtype, vals)
  local enc, parts = ENC[dtype], {}
  for i = 1, #vals do parts[i] = enc(vals[i]) end
  return table.concat(parts)
end

local function ref_gemm(A, B, M, N, K) -- C = A·Bᵀ, row-major lists
  local C = {}
  for m = 0, M - 1 do
    for n = 0, N - 1 do
      local s = 0
      for k = 1, K do s = s + A[m * K + k] * B[n * K + k] end
      C[m * N + n + 1] = s
    end
  end
  return C
end

-- ---- everywhere ----

local T = {}

function T.version(t)
  local v, err = blas.version()
  t.ok(v, err)
  t.match(v, "^%d+%.%d+%.%d+$")
  t.match(assert(blas.library()), "libcublasLt")
end

-- The test's own encoders, checked against known bit patterns, so that a
-- GPU failure is cuBLASLt's and not this file's.
function T.encoders(t)
  local function hex(s) return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end
  t.eq(hex(bf16(1)), "803f"); t.eq(hex(bf16(-2)), "00c0")
  t.eq(from_bf16(bf16(-37), 0), -37)
  t.eq(hex(f16(1)), "003c"); t.eq(hex(f16(-2)), "00c0"); t.eq(hex(f16(3)), "0042")
  t.eq(hex(f16(0)), "0000"); t.eq(hex(f16(1024)), "0064"); t.eq(hex(f16(-576)), "80e0")
  for _, v in ipairs { -2047, -576, -3, -1, 0, 1, 2, 5, 100, 1023, 2047 } do
    t.eq(from_f16(f16(v), 0), v, "f16 round trip")
  end
  t.eq(hex(e4m3(1)), "38"); t.eq(hex(e4m3(2)), "40"); t.eq(hex(e4m3(3)), "44")
  t.eq(hex(e4m3(-1)), "b8"); t.eq(hex(e4m3(8)), "50"); t.eq(hex(e4m3(7)), "4e")
  t.eq(hex(e4m3(0)), "00")
  t.eq(from_f32(f32(0.5) .. f32(-3.25), 1), -3.25)
  local C = ref_gemm({ 1, 2, 3, 4 }, { 5, 6, 7, 8, 9, 10 }, 2, 3, 2)
  t.eq(table.concat(C, ","), "17,23,29,39,53,67")
end

function T.map_bf16(t)
  local m = blas.map { dtype = "bf16", M = 64, N = 128, K = 256 }
  t.eq(m.m, 128); t.eq(m.n, 64); t.eq(m.k, 256)
  t.eq(m.transa, "T"); t.eq(m.transb, "N")
  t.eq(m.lda, 256); t.eq(m.ldb, 256); t.eq(m.ldc, 128)
  t.eq(m.a_is_user_b, true)
end

function T.map_fp8_is_tn(t)
  local m = blas.map { dtype = "e4m3", M = 48, N = 80, K = 32 }
  t.eq(m.transa, "T"); t.eq(m.transb, "N")
  t.eq(m.m, 80); t.eq(m.n, 48); t.eq(m.lda, 32); t.eq(m.ldc, 80)
  local f = blas.map { dtype = "f32", compute = "tf32", M = 3, N = 5, K = 7 }
  t.eq(f.m, 5); t.eq(f.n, 3); t.eq(f.k, 7); t.eq(f.ldb, 7)
end

-- The mapping, applied by a plain column-major GEMM to the row-major
-- buffers, gives row-major C = A·Bᵀ.
function T.map_semantics(t)
  local M, N, K = 3, 5, 7
  local mp = blas.map { dtype = "bf16", M = M, N = N, K = K }
  local A, B = {}, {}
  for i = 1, M * K do A[i] = (i * 7 + 3) % 11 - 5 end
  for i = 1, N * K do B[i] = (i * 5 + 1) % 13 - 6 end
  local LA, LB = A, B
  if mp.a_is_user_b then LA, LB = B, A end
  local D = {}
  for i = 0, mp.m - 1 do
    for j = 0, mp.n - 1 do
      local s = 0
      for p = 0, mp.k - 1 do
        local a = mp.transa == "T" and LA[p + i * mp.lda + 1] or LA[i + p * mp.lda + 1]
        local b = mp.transb == "T" and LB[j + p * mp.ldb + 1] or LB[p + j * mp.ldb + 1]
        s = s + a * b
      end
      D[i + j * mp.ldc + 1] = s
    end
  end
  local C = ref_gemm(A, B, M, N, K)
  for i = 1, M * N do
    if not t.eq(D[i], C[i], "element " .. i) then break end
  end
end

function T.map_rejects(t)
  t.raises(function() blas.map { dtype = "e4m3", M = 64, N = 64, K = 40 } end, "multiple of 16")
  t.raises(function() blas.map { dtype = "bf16", compute = "tf32", M = 8, N = 8, K = 8 } end, "tf32")
  t.raises(function() blas.map { dtype = "fp8", M = 8, N = 8, K = 8 } end, "unknown GEMM dtype")
  t.raises(function() blas.map { dtype = "bf16", M = 8, N = 8 } end, "K >= 1")
  t.raises(function() blas.map { M = 8, N = 8, K = 8 } end, "needs dtype")
  t.raises(function() blas.map { dtype = "bf16", M = 8, N = 8, K = 8, algos = 0 } end, "algos")
  t.raises(function() blas.map { dtype = "bf16", M = 8, N = 8, K = 8, fast_accum = true } end,
    "fast_accum")
  t.raises(function() blas.map "bf16" end)
end

function T.plan_needs_a_context(t)
  t.raises(function() blas.gemm_plan(nil, { dtype = "bf16", M = 8, N = 8, K = 8 }) end,
    "klab.gpu.Context")
  t.raises(function() blas.gemm_plan({}, { dtype = "bf16", M = 8, N = 8, K = 8 }) end,
    "klab.gpu.Context")
  if not gpu.available() then
    local ctx, msg, code = gpu.context(0)
    t.eq(ctx, nil)
    t.eq(code, "ENODRIVER", msg)
  end
end

-- ---- variants: layouts, batches, epilogues ----

-- Row-major C[b] = op(A[b])·op(B[b]) (+ epilogue) for a spec: the GPU
-- check's reference, so that the two agree on what a variant means.
local function gemm_ref(t, spec, v) return dofile(t.root .. "/tests/gpu/libs_check.lua").gemm_ref(spec, v) end

-- The map for every layout and a padded batch: a column-major GEMM per
-- member on the mapped buffers is the row-major result.
function T.map_layouts_and_batches(t)
  local M, N, K, batch = 4, 6, 5, 2
  for _, al in ipairs { "mk", "km" } do
    for _, bl in ipairs { "nk", "kn" } do
      local spec = { dtype = "f32", M = M, N = N, K = K, a_layout = al, b_layout = bl, batch = batch,
                     stride_a = 29, stride_b = 33, stride_c = 31 }
      local mp = blas.map(spec)
      t.eq(mp.batch, batch)
      t.eq(mp.transa, bl == "nk" and "T" or "N", al .. bl .. " transa")
      t.eq(mp.transb, al == "mk" and "N" or "T", al .. bl .. " transb")
      local A, B = {}, {}
      for i = 1, 29 + M * K do A[i] = (i * 7 + 3) % 11 - 5 end
      for i = 1, 33 + N * K do B[i] = (i * 5 + 1) % 13 - 6 end
      local want = gemm_ref(t, spec, { A = A, B = B })
      local LA, LB = A, B
      if mp.a_is_user_b then LA, LB = B, A end
      local bad = 0
      for b = 0, batch - 1 do
        local oa, ob, oc = b * mp.stride_a, b * mp.stride_b, b * mp.stride_c
        for i = 0, mp.m - 1 do
          for j = 0, mp.n - 1 do
            local s = 0
            for q = 0, mp.k - 1 do
              local a = mp.transa == "T" and LA[oa + q + i * mp.lda + 1] or LA[oa + i + q * mp.lda + 1]
              local x = mp.transb == "T" and LB[ob + j + q * mp.ldb + 1] or LB[ob + q + j * mp.ldb + 1]
              s = s + a * x
            end
            if s ~= want[oc + i + j * mp.ldc + 1] then bad = bad + 1 end
          end
        end
      end
      t.eq(bad, 0, al .. "/" .. bl .. " mismatches")
    end
  end
end

-- Without a GPU, cuBLASLt creates the descriptors and layouts of every
-- variant (the heuristic needs a device).
function T.describe_without_a_gpu(t)
  local cases = {
    { dtype = "bf16", M = 512, N = 512, K = 512, batch = 16 },
    { dtype = "bf16", M = 1024, N = 4096, K = 1024, epilogue = "bias" },
    { dtype = "bf16", M = 1024, N = 4096, K = 1024, epilogue = "relu_bias" },
    { dtype = "bf16", M = 1024, N = 4096, K = 1024, epilogue = "gelu_bias", bias_dtype = "f32" },
    { dtype = "f16", M = 256, N = 256, K = 256, a_layout = "km", b_layout = "kn", epilogue = "gelu" },
    { dtype = "f32", compute = "f32", M = 8192, N = 1, K = 8192 },
    { dtype = "f32", compute = "tf32", M = 1, N = 8192, K = 8192, b_layout = "kn" },
    { dtype = "f32", compute = "tf32", M = 2048, N = 2048, K = 2048, epilogue = "relu_bias" },
    { dtype = "e4m3", M = 2048, N = 2048, K = 2048, fast_accum = true },
  }
  for i, spec in ipairs(cases) do
    local d, err = blas.describe(spec)
    if t.ok(d, "case " .. i .. ": " .. tostring(err)) then
      t.eq(d.descriptors, true)
      t.eq(d.epilogue, spec.epilogue or "none")
      t.eq(d.batch, spec.batch or 1)
      t.eq(d.a_layout, spec.a_layout or "mk")
    end
  end
  local d = blas.describe(cases[4])
  t.eq(d.bias_dtype, "f32")
  t.eq(d.bias_bytes, 4096 * 4)
  d = blas.describe(cases[3])
  t.eq(d.bias_dtype, "bf16")
  t.eq(d.bias_bytes, 4096 * 2)
  d = blas.describe(cases[1])
  t.eq(d.a_bytes, 16 * 512 * 512 * 2)
  t.eq(d.stride_c, 512 * 512)
  t.eq(d.align_a, 256)
  d = blas.describe { dtype = "bf16", M = 3, N = 5, K = 7, batch = 3 }
  t.eq(d.align_a, 2, "35 bf16 elements between members")
end

function T.variant_misuse_raises(t)
  local base = { dtype = "bf16", M = 16, N = 16, K = 16 }
  local function with(k, v)
    local s = {}
    for a, b in pairs(base) do s[a] = b end
    s[k] = v
    return s
  end
  t.raises(function() blas.describe(with("a_layout", "mn")) end, "a_layout must be")
  t.raises(function() blas.describe(with("b_layout", "row")) end, "b_layout must be")
  t.raises(function() blas.describe(with("epilogue", "silu")) end, "unknown GEMM epilogue")
  t.raises(function() blas.describe(with("bias_dtype", "f32")) end, "needs an epilogue with a bias")
  t.raises(function() blas.describe(with("batch", 0)) end, "batch must be")
  t.raises(function() blas.describe(with("stride_a", -1)) end, "stride_a must be")
  t.raises(function() blas.describe(with("stride_a", 512)) end, "batch > 1")
  local s = with("batch", 2)
  s.stride_c = 8
  t.raises(function() blas.describe(s) end, "overlap")
  s = with("epilogue", "bias")
  s.bias_dtype = "f16"
  t.raises(function() blas.describe(s) end, "bias_dtype must be f32 or bf16")
  t.raises(function() blas.map { dtype = "e4m3", M = 16, N = 16, K = 16, a_layout = "km" } end, "TN layout")
end

-- ---- on a GPU ----

-- Runs every algorithm of a plan for dtype on integer inputs drawn from
-- vals, checks each result exactly; returns the plan.
local function exact_case(t, ctx, dtype, M, N, K, vals, opts)
  opts = opts or {}
  local plan, err, code = blas.gemm_plan(ctx, { dtype = dtype, M = M, N = N, K = K })
  if not t.ok(plan, tostring(err) .. " " .. tostring(code)) then return end
  local info = plan:info()
  t.eq(info.transa, "T"); t.eq(info.transb, "N")
  local A, B = {}, {}
  for i = 1, M * K do A[i] = vals[(i * 7 + 3) % #vals + 1] end
  for i = 1, N * K do B[i] = vals[(i * 5 + 1) % #vals + 1] end
  local want = ref_gemm(A, B, M, N, K)
  local scale = 1
  local bA = assert(ctx:alloc(info.a_bytes))
  local bB = assert(ctx:alloc(info.b_bytes))
  local bC = assert(ctx:alloc(info.c_bytes))
  assert(bA:upload(encode(dtype, A)))
  assert(bB:upload(encode(dtype, B)))
  local run_opts = {}
  if opts.scales then
    local sa, sb = assert(ctx:alloc(4)), assert(ctx:alloc(4))
    assert(sa:upload(f32(opts.scales[1])))
    assert(sb:upload(f32(opts.scales[2])))
    run_opts.scale_a, run_opts.scale_b = sa, sb
    scale = opts.scales[1] * opts.scales[2]
  end
  local algos = plan:algos()
  t.ok(#algos >= 1 and #algos <= 8, "algorithm count " .. #algos)
  t.eq(algos[1].index, 1)
  for i = 1, #algos do
    assert(bC:fill(0xff))
    run_opts.algo = i
    local ok, rerr = plan:run(bA, bB, bC, run_opts)
    t.ok(ok, rerr)
    assert(ctx:sync())
    local out, dec, bad = bC:download(), DEC[dtype], 0
    for j = 1, M * N do
      if dec(out, j - 1) ~= want[j] * scale then
        if bad == 0 then
          t.eq(dec(out, j - 1), want[j] * scale,
            string.format("%s algo %d (tile %s) element %d", dtype, i, algos[i].tile, j))
        end
        bad = bad + 1
      end
    end
    t.eq(bad, 0, dtype .. " algo " .. i .. " mismatches")
  end
  return plan
end

function T.gpu_bf16(t)
  local ctx = need_gpu(t)
  -- |sum| <= K = 64: exact in bf16.
  local plan = exact_case(t, ctx, "bf16", 64, 96, 64, { -1, 0, 1 })
  if plan then
    t.match(tostring(plan), "bf16 M=64 N=96 K=64")
    local a = plan:algos()[1]
    t.ok(a.tile and a.stages and a.workspace_bytes and a.waves, "algo info fields")
    t.eq(plan:free(), true)
    t.eq(plan:free(), false)
    t.match(tostring(plan), "freed")
    t.raises(function() plan:algos() end, "freed")
  end
end

function T.gpu_f16(t)
  local ctx = need_gpu(t)
  exact_case(t, ctx, "f16", 64, 128, 64, { -3, -1, 0, 2, 3 }) -- |sum| <= 576 < 2048
end

function T.gpu_e4m3(t)
  local ctx = need_gpu(t)
  exact_case(t, ctx, "e4m3", 64, 128, 64, { -1, 0, 1 })                   -- unit scales
  exact_case(t, ctx, "e4m3", 64, 128, 64, { -1, 0, 1 }, { scales = { 0.5, 4 } }) -- 2·sum
end

function T.gpu_f32(t)
  local ctx = need_gpu(t)
  exact_case(t, ctx, "f32", 32, 64, 48, { -5, -2, 0, 1, 7 })
end

-- fp32 strict is close to the exact result; TF32 (10-bit mantissa inputs)
-- is measurably further away, so the two modes really differ.
function T.gpu_f32_vs_tf32(t)
  local ctx = need_gpu(t)
  local M, N, K = 64, 64, 256
  local rng = 12345
  local function rand()
    rng = (rng * 1103515245 + 12345) % 2147483648
    return rng / 1073741824 - 1
  end
  local A, B = {}, {}
  for i = 1, M * K do A[i] = string.unpack("<f", f32(rand())) end
  for i = 1, N * K do B[i] = string.unpack("<f", f32(rand())) end
  local want = ref_gemm(A, B, M, N, K)
  local bA, bB = assert(ctx:alloc(M * K * 4)), assert(ctx:alloc(N * K * 4))
  assert(bA:upload(encode("f32", A)))
  assert(bB:upload(encode("f32", B)))
  local err, outs = {}, {}
  for _, mode in ipairs { "f32", "tf32" } do
    local plan = assert(blas.gemm_plan(ctx, { dtype = "f32", compute = mode, M = M, N = N, K = K }))
    t.eq(plan:info().compute, mode)
    local bC = assert(ctx:alloc(M * N * 4))
    assert(plan:run(bA, bB, bC))
    assert(ctx:sync())
    local out, worst = bC:download(), 0
    for j = 1, M * N do
      worst = math.max(worst, math.abs(from_f32(out, j - 1) - want[j]))
    end
    err[mode], outs[mode] = worst, out
    plan:free()
  end
  t.ok(err.f32 < 1e-4, "fp32 max error " .. err.f32)
  t.ok(err.tf32 < 0.1, "tf32 max error " .. err.tf32)
  t.ok(err.tf32 > 10 * err.f32, string.format("tf32 error %g vs fp32 %g", err.tf32, err.f32))
  t.ok(outs.f32 ~= outs.tf32, "fp32 and tf32 outputs are identical")
end

function T.gpu_time(t)
  local ctx = need_gpu(t)
  local M, N, K = 1024, 1024, 1024
  local plan = assert(blas.gemm_plan(ctx, { dtype = "bf16", M = M, N = N, K = K, algos = 3 }))
  local info = plan:info()
  local bA, bB, bC = assert(ctx:alloc(info.a_bytes)), assert(ctx:alloc(info.b_bytes)),
      assert(ctx:alloc(info.c_bytes))
  assert(bA:fill(0)); assert(bB:fill(0))
  local r, err, code = plan:time(bA, bB, bC, { min_samples = 10, max_samples = 30, budget_s = 5 })
  if not t.ok(r, tostring(err) .. " " .. tostring(code)) then return end
  t.eq(#r.algos, #plan:algos())
  t.eq(r.first.index, 1)
  t.ok(r.flush_bytes > 0, "L2 flushed")
  t.ok(r.method == "cupti" or r.method == "events", r.method)
  for _, a in ipairs(r.algos) do
    t.ok(a.samples >= 10 and a.samples <= 30, "samples " .. a.samples)
    t.ok(a.median_us > 0 and a.min_us <= a.median_us and a.median_us <= a.max_us, "order")
    t.near(a.tflops, info.flops / (a.median_us * 1e-6) / 1e12, 1e-6 * a.tflops + 1e-9)
    t.ok(r.best.median_us <= a.median_us, "best is the fastest")
  end
end

-- Batched, both operands in their other layout, ReLU+bias: exact on
-- integer values, every algorithm; the bias is required.
function T.gpu_batched_layouts_relu_bias(t)
  local ctx = need_gpu(t)
  local B_, M, N, K = 3, 32, 48, 64
  local spec = { dtype = "bf16", M = M, N = N, K = K, batch = B_, a_layout = "km", b_layout = "kn",
                 epilogue = "relu_bias" }
  local plan, err = blas.gemm_plan(ctx, spec)
  if not t.ok(plan, tostring(err)) then return end
  local info = plan:info()
  t.eq(info.epilogue, "relu_bias")
  t.eq(info.flops, 2 * M * N * K * B_)
  local A, Bm, bias = {}, {}, {}
  for i = 1, B_ * K * M do A[i] = (i * 7 + 3) % 3 - 1 end
  for i = 1, B_ * K * N do Bm[i] = (i * 5 + 1) % 3 - 1 end
  for n = 1, N do bias[n] = (n - 1) % 7 - 3 end
  local want = gemm_ref(t, spec, { A = A, B = Bm, bias = bias })
  local bA, bB = assert(ctx:alloc(info.a_bytes)), assert(ctx:alloc(info.b_bytes))
  local bC, bbias = assert(ctx:alloc(info.c_bytes)), assert(ctx:alloc(info.bias_bytes))
  assert(bA:upload(encode("bf16", A)))
  assert(bB:upload(encode("bf16", Bm)))
  assert(bbias:upload(encode("bf16", bias)))
  for i = 1, #plan:algos() do
    assert(bC:fill(0xff))
    local ok, rerr = plan:run(bA, bB, bC, { algo = i, bias = bbias })
    t.ok(ok, rerr)
    assert(ctx:sync())
    local out, bad = bC:download(), 0
    for j = 1, B_ * M * N do
      if from_bf16(out, j - 1) ~= want[j] then bad = bad + 1 end
    end
    t.eq(bad, 0, "algo " .. i .. " mismatches")
  end
  t.raises(function() plan:run(bA, bB, bC) end, "needs opts.bias")
  local r, terr = plan:time(bA, bB, bC, { bias = bbias, min_samples = 5, max_samples = 10, budget_s = 2 })
  t.ok(r, tostring(terr))
  plan:free()
end

function T.gpu_misuse(t)
  local ctx = need_gpu(t)
  local plan = assert(blas.gemm_plan(ctx, { dtype = "bf16", M = 64, N = 64, K = 64, algos = 2 }))
  t.ok(#plan:algos() <= 2)
  local small = assert(ctx:alloc(16))
  local ok = assert(ctx:alloc(64 * 64 * 2))
  t.raises(function() plan:run(small, ok, ok) end, "A: 8192 bytes from offset 0 do not fit in the 16%-byte buffer")
  -- A region inside a larger buffer: {buffer, offset}.
  local big = assert(ctx:alloc(64 * 64 * 2 + 256))
  t.ok(plan:run({ big, 256 }, ok, ok), "a {buffer, offset} region")
  t.raises(function() plan:run({ big, 512 }, ok, ok) end, "do not fit")
  t.raises(function() plan:run(ok, ok, ok, { algo = 99 }) end, "algo must be")
  t.raises(function() plan:run(ok, ok, ok, { scale_a = small }) end, "e4m3")
  t.raises(function() plan:run(ok, ok, "x") end, "klab.gpu.Buffer")
  local other = assert(gpu.context(0))
  local foreign = assert(other:alloc(64 * 64 * 2))
  -- Both handles stand for the device's one primary context.
  t.ok(plan:run(ok, ok, foreign), "a buffer of another handle on the same device is the same context")
  -- The plan keeps its context alive after ctx:free().
  t.eq(ctx:free(), true)
  t.raises(function() plan:run(ok, ok, ok) end, "freed")
  t.eq(plan:free(), true)
end

return T
