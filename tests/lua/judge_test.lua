-- Tests of klab.judge: the judge kernels compile for every target klab
-- supports, the tensor-map rules, and (on a GPU) each check against values
-- computed here.
local judge = require "klab.judge"
local jit = require "klab.jit"
local gpu = require "klab.gpu"

local T = {}

local function cache(t)
  local d = t.tmpdir()
  return d
end

function T.source_compiles_everywhere(t)
  local dir = cache(t)
  for _, arch in ipairs { "sm_80", "sm_90a", "sm_100a" } do
    local r, err, code, partial = jit.compile { source = judge.source(), lang = "cuda", arch = arch, name = "judge.cu",
      cache_dir = dir }
    t.ok(r, arch .. ": " .. tostring(err) .. " " .. tostring(partial and partial.log))
    if r then
      local names = {}
      for _, k in ipairs(r.kernels) do names[k.name] = true end
      for _, k in ipairs { "k_fill", "k_pattern", "k_pattern_check", "k_checksum", "k_compare", "k_bitdiff",
        "k_gather", "k_positions", "k_convert" } do
        t.ok(names[k], arch .. " lacks " .. k)
      end
      for _, k in ipairs(r.kernels) do t.eq(k.spill_stores or 0, 0, k.name .. " spills on " .. arch) end
    end
  end
end

-- The references' GEMM core (klab_gemm_tile) runs on the fp64 tensor
-- cores from sm_80 and keeps its SIMT loop under KLAB_GEMM_SIMT (the loop
-- the GPU suite compares it with, bit for bit), without spilling.
function T.gemm_core_uses_fp64_tensor_cores(t)
  local code = t.read(t.root .. "/tasks/gemm/reference.cu")
  local dir = cache(t)
  for _, arch in ipairs { "sm_80", "sm_90a", "sm_100a" } do
    for _, simt in ipairs { false, true } do
      local src = (simt and "#define KLAB_GEMM_SIMT 1\n" or "") ..
        require("klab.eval.prepare").task_source("tasks/gemm/reference.cu", code)
      local r, err = jit.compile { source = src, lang = "cuda", arch = arch, name = "reference.cu", cache_dir = dir }
      t.ok(r, arch .. ": " .. tostring(err))
      if r then
        for _, k in ipairs(r.kernels) do t.eq(k.spill_stores or 0, 0, k.name .. " spills on " .. arch) end
        local function count(pat)
          local n = 0
          for _ in r.ptx:gmatch(pat) do n = n + 1 end
          return n
        end
        local dmma, dfma = count("mma%.sync%.aligned%.m8n8k4%.row%.col%.f64"), count("fma%.rn%.f64")
        local what = arch .. (simt and " with KLAB_GEMM_SIMT" or "")
        if simt then
          t.eq(dmma, 0, what .. ": fp64 mma")
          t.ok(dfma >= 16, what .. ": " .. dfma .. " fp64 fma")
        else
          t.ok(dmma >= 8, what .. ": " .. dmma .. " fp64 mma")
        end
      end
    end
  end
end

function T.dtype_sizes(t)
  t.eq(judge.dtype_size("bf16"), 2)
  t.eq(judge.dtype_size("fp8e4m3"), 1)
  t.eq(judge.dtype_size("f32"), 4)
  t.eq(judge.dtype_size("f64"), 8)
  t.eq(judge.dtype_size("i64"), 8)
  t.eq(judge.dtype_size("nonsense"), nil)
end

function T.tensormap_rules(t)
  local ok = judge.tensormap_check(4096, { dtype = "bf16", dims = { 5120, 8192 }, box = { 64, 128 }, swizzle = "128B" })
  t.eq(ok, true)
  local _, why = judge.tensormap_check(4096, { dtype = "bf16", dims = { 5120, 8192 }, box = { 128, 128 },
    swizzle = "128B" })
  t.match(why, "128%-byte swizzle")
  _, why = judge.tensormap_check(4096, { dtype = "bf16", dims = { 789, 123 }, box = { 64, 64 } })
  t.match(why, "multiple of 16")
  _, why = judge.tensormap_check(4104, { dtype = "bf16", dims = { 64, 64 }, box = { 64, 64 } })
  t.match(why, "16%-byte aligned")
  _, why = judge.tensormap_check(4096, { dtype = "bf16", dims = { 64, 64 }, box = { 512, 64 } })
  t.match(why, "1%.%.256")
  t.raises(function() judge.tensormap_check(4096, { dtype = "bf16", dims = { 64 }, box = { 64, 64 } }) end, "box has")
end

-- ---- on a GPU ----

local function need(t)
  t.need_gpu()
  local ctx = assert(gpu.context(0))
  local arch = gpu.device(0).arch
  local r = assert(jit.compile { source = judge.source(), lang = "cuda", arch = arch, name = "judge.cu" })
  return ctx, assert(judge.open(ctx, r.cubin))
end

local function floats(buf, n)
  local s = buf:download(4 * n)
  local out = {}
  for i = 1, n do out[i] = string.unpack("<f", s, 4 * i - 3) end
  return out
end

function T.gpu_fill_is_seeded(t)
  local ctx, j = need(t)
  local a, b = assert(ctx:alloc(4 << 20)), assert(ctx:alloc(4 << 20))
  assert(j:fill(a, 1 << 20, "f32", "normal", 7))
  assert(j:fill(b, 1 << 20, "f32", "normal", 7))
  t.eq(j:checksum(a, 4 << 20), j:checksum(b, 4 << 20), "same seed, same data")
  assert(j:fill(b, 1 << 20, "f32", "normal", 8))
  t.ok(j:checksum(a, 4 << 20) ~= j:checksum(b, 4 << 20), "another seed, other data")
  local v = floats(a, 1 << 16)
  local sum, sq = 0, 0
  for _, x in ipairs(v) do sum = sum + x; sq = sq + x * x end
  t.near(sum / #v, 0, 0.02, "mean of N(0,1)")
  t.near(sq / #v, 1, 0.03, "variance of N(0,1)")
  assert(j:fill(b, 1 << 20, "f32", "normal", 7, 0, 1, -1))
  local w = floats(b, 16)
  for i = 1, 16 do t.eq(w[i], -v[i], "x-1 transform") end
  assert(j:fill(b, 1 << 20, "f32", "int", 3, -2, 2))
  local ints = floats(b, 4096)
  local seen = {}
  for _, x in ipairs(ints) do seen[x] = true; t.ok(x >= -2 and x <= 2 and x == math.floor(x)) end
  for k = -2, 2 do t.ok(seen[k], "int value " .. k .. " drawn") end
end

function T.gpu_guards_and_compare(t)
  local ctx, j = need(t)
  local buf = assert(ctx:alloc(4096))
  assert(j:pattern(buf, 4096, 0xA5C3E10F))
  local bad, first = j:pattern_check(buf, 4096, 0xA5C3E10F)
  t.eq(bad, 0)
  t.eq(first, nil)
  buf:upload("\0\0", 1000)
  bad, first = j:pattern_check(buf, 4096, 0xA5C3E10F)
  t.eq(bad, 2)
  t.eq(first, 1000)
  -- compare: got (f32) against want with a known set of errors.
  local n = 1000
  local got, want = assert(ctx:alloc(4 * n)), assert(ctx:alloc(4 * n))
  local g, w = {}, {}
  for i = 1, n do w[i] = i * 0.5; g[i] = i * 0.5 end
  g[10] = g[10] + 1.0   -- fails: abs 1 > atol and rel > rtol
  g[20] = g[20] + 1e-4  -- passes: within atol
  g[30] = 0 / 0         -- NaN
  g[40] = math.huge     -- Inf
  local function up(b, v)
    local parts = {}
    for i = 1, n do parts[i] = string.pack("<f", v[i]) end
    b:upload(table.concat(parts))
  end
  up(got, g); up(want, w)
  local r = assert(j:compare(got, "f32", want, n, 1e-3, 1e-3))
  t.eq(r.total, n)
  t.eq(r.failed, 3)
  t.eq(r.nan, 1)
  t.eq(r.inf, 1)
  t.eq(r.first_fail, 9)
  local r2 = assert(j:compare(want, "f32", want, n, 0, 0))
  t.eq(r2.failed, 0)
  t.eq(r2.max_abs, 0)
  local cnt, at = j:bitdiff(got, want, 4 * n)
  t.ok(cnt >= 3 and at >= 4 * 9 and at < 4 * 10, "bitdiff finds the first changed byte")
end

-- The comparison rule, case by case, as the device judge applies it (the
-- rule's one implementation; docs/verdicts.md states it): {got, want,
-- atol, rtol, fails}. A finite reference takes FlashInfer-Bench's rule and
-- no NaN or Inf; a NaN reference only NaN; an infinite one only the same
-- infinity.
local NaN, Inf = 0 / 0, math.huge
local CASES = {
  { 1.0, 1.0, 0, 0, false, "equal" },
  { 1.5, 1.0, 0.5, 0, false, "|x-y| = atol is not over it" },
  { 10.6, 10.0, 0.5, 0.25, false, "over atol, within rtol: both must be exceeded" },
  { 1.4, 1.0, 0.5, 0.25, false, "over rtol, within atol" },
  { 2.0, 1.0, 0.5, 0.25, true, "over both" },
  { NaN, 1.0, 1e30, 1e30, true, "NaN where the reference is finite" },
  { Inf, 1.0, 1e30, 1e30, true, "Inf where the reference is finite" },
  { -Inf, 1.0, 1e30, 1e30, true, "-Inf where the reference is finite" },
  { NaN, NaN, 0, 0, false, "NaN matched by NaN" },
  { 1.0, NaN, 1e30, 1e30, true, "a number where the reference is NaN" },
  { Inf, NaN, 1e30, 1e30, true, "Inf where the reference is NaN" },
  { Inf, Inf, 0, 0, false, "Inf matched by Inf" },
  { -Inf, -Inf, 0, 0, false, "-Inf matched by -Inf" },
  { -Inf, Inf, 1e30, 1e30, true, "the other infinity" },
  { 3.4e38, Inf, 1e30, 1e30, true, "a large number where the reference is Inf" },
  { NaN, Inf, 1e30, 1e30, true, "NaN where the reference is Inf" },
  { 1e-9, 0.0, 1e-8, 0, false, "near zero, within atol" },
}

function T.gpu_comparison_rule_cases(t)
  local ctx, j = need(t)
  local n = #CASES
  local got, want = assert(ctx:alloc(4 * n)), assert(ctx:alloc(4 * n))
  local g, w = {}, {}
  for i, c in ipairs(CASES) do g[i], w[i] = string.pack("<f", c[1]), string.pack("<f", c[2]) end
  got:upload(table.concat(g))
  want:upload(table.concat(w))
  -- One element at a time, each with its own tolerances.
  for i, c in ipairs(CASES) do
    local r = assert(j:compare(got:ptr() + 4 * (i - 1), "f32", want:ptr() + 4 * (i - 1), 1, c[3], c[4]))
    t.eq(r.failed, c[5] and 1 or 0, c[6])
  end
end

function T.gpu_gather_units(t)
  local ctx, j = need(t)
  local n = 40
  local parts = {}
  for i = 0, n - 1 do parts[#parts + 1] = string.pack("<f", i) end
  local src = assert(ctx:alloc(4 * n))
  src:upload(table.concat(parts))
  -- Units of 4 elements: take units 7, 0 and 3.
  local pos = assert(ctx:alloc(8 * 3))
  pos:upload(string.pack("<I8I8I8", 7, 0, 3))
  local dst = assert(ctx:alloc(4 * 12))
  assert(j:gather(src, "f32", pos, 3, 4, dst))
  local got = floats(dst, 12)
  local want = { 28, 29, 30, 31, 0, 1, 2, 3, 12, 13, 14, 15 }
  for i = 1, 12 do t.eq(got[i], want[i], "slot element " .. i) end
end

function T.gpu_positions_are_uniform_and_repeatable(t)
  local ctx, j = need(t)
  local n, total = 4096, 1000
  local a, b = assert(ctx:alloc(8 * n)), assert(ctx:alloc(8 * n))
  assert(j:positions(a, n, total, 42))
  assert(j:positions(b, n, total, 42))
  local sa, sb = a:download(8 * n), b:download(8 * n)
  t.eq(sa, sb, "the same seed draws the same positions")
  local seen, low = {}, 0
  for i = 0, n - 1 do
    local p = string.unpack("<I8", sa, 8 * i + 1)
    t.ok(p < total, "position in range")
    seen[p] = true
    if p < total // 2 then low = low + 1 end
  end
  local distinct = 0
  for _ in pairs(seen) do distinct = distinct + 1 end
  t.ok(distinct > 950, "most units drawn: " .. distinct)
  t.ok(low > 1800 and low < 2300, "about half below the middle: " .. low)
end

function T.gpu_tensormap_encodes(t)
  local ctx = need(t)
  local buf = assert(ctx:alloc(2 * 256 * 256))
  local s = assert(judge.tensormap(buf, { dtype = "bf16", dims = { 256, 256 }, box = { 64, 128 }, swizzle = "128B" }))
  t.eq(#s, 128)
end

return T
