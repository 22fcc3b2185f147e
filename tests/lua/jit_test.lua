-- tests/lua/jit_test.lua: require "klab.jit" and `klab compile`, without a GPU.
--
-- Every compile uses a temporary cache directory (cache_dir, or
-- KLAB_CACHE_DIR for the CLI) so the user's cache is never touched.
local jit = require("klab.jit")
local cjson = require("cjson")

local T = {}

-- The samples directory: under t.root, or (when the runner was started with
-- a relative path and t.root is "tests/lua") under the current directory.
local function samples(t)
  for _, root in ipairs { t.root, (t.root:gsub("/?tests/lua$", "")), "." } do
    local dir = (root == "" and "." or root) .. "/tasks/samples/"
    local f = io.open(dir .. "vector_add.ptx")
    if f then
      f:close()
      return dir
    end
  end
  error("tasks/samples not found from " .. tostring(t.root))
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function need_ptxas(t)
  local v = jit.versions()
  if not v.ptxas.ok then t.skip("ptxas not found: " .. tostring(v.ptxas.error)) end
end

local function need_nvrtc(t)
  local v = jit.versions()
  if not v.nvrtc.ok then t.skip("NVRTC not found: " .. tostring(v.nvrtc.error)) end
end

local sh_quote = require("klab.command").shell_quote

-- Runs `klab compile ARGS` with a private cache; returns code, stdout, stderr.
local function klab_compile(t, cache, args)
  return t.sh("KLAB_CACHE_DIR=" .. sh_quote(cache) .. " " .. sh_quote(t.klab) .. " compile " .. args)
end

local HELLO = [[
.version 8.0
.target sm_80
.address_size 64
.visible .entry hello(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
]]

function T.compile_ptx_result(t)
  need_ptxas(t)
  local dir = t.tmpdir()
  local r, msg, code = jit.compile{ source = read(samples(t) .. "wgmma_tile.ptx"), arch = "sm_90a",
    name = "wgmma_tile.ptx", cache_dir = dir }
  t.ok(r, msg)
  if not r then return end
  t.eq(code, nil)
  t.eq(r.ok, true)
  t.eq(r.lang, "ptx")
  t.eq(r.arch, "sm_90a")
  t.eq(r.cubin:sub(1, 4), "\127ELF")
  t.match(r.ptx, "wgmma%.mma_async")
  t.match(r.compiler, "^ptxas %d+%.%d")
  t.eq(#r.hash, 64)
  t.eq(#r.cubin_hash, 64)
  t.ok(r.hash ~= r.cubin_hash)
  t.eq(r.cached, false)
  t.ok(r.compile_ms > 0)
  t.eq(#r.kernels, 1)
  local k = r.kernels[1]
  t.eq(k.name, "wgmma_tile")
  t.eq(r.entries[1], "wgmma_tile")
  t.ok(k.registers > 0 and k.registers <= 255, "registers " .. tostring(k.registers))
  t.eq(k.spill_stores, 0)
  t.eq(k.spill_loads, 0)
  t.eq(k.shared_static, 2304)
  t.eq(k.local_bytes, 0)
  t.match(r.log, "Used " .. k.registers .. " registers")
  t.eq(r.census.wgmma, 4)
  t.eq(r.census["fence.proxy.async"], 1)
  t.eq(r.census.tcgen05, 0)
  t.ok(r.census.instructions > 40)
  os.execute("rm -rf " .. sh_quote(dir))
end

function T.compile_tcgen05(t)
  need_ptxas(t)
  local r, msg = jit.compile{ source = read(samples(t) .. "tcgen05_alloc.ptx"), arch = "sm_100a",
    cache = false }
  t.ok(r, msg)
  if not r then return end
  t.eq(r.census["tcgen05.alloc"], 3)
  t.eq(r.census["tcgen05.mma"], 1)
  t.eq(r.census["tcgen05.ld"], 1)
  t.ok(r.kernels[1].tcgen05 >= 1)
  t.eq(r.cache_note, "cache bypassed")
end

function T.compile_cuda(t)
  need_nvrtc(t)
  need_ptxas(t)
  local r, msg = jit.compile_file(samples(t) .. "vector_add.cu", { arch = "sm_90a", cache = false })
  t.ok(r, msg)
  if not r then return end
  t.eq(r.lang, "cuda")
  t.match(r.compiler, "^nvrtc ")
  t.match(r.ptx, "%.entry vector_add")
  t.ok(r.kernels[1].registers > 0)
  t.eq(r.kernels[1].name, "vector_add")
  -- lang can be forced, and a ".ptx"-named CUDA file then fails as PTX.
  local bad, _, code = jit.compile{ source = read(samples(t) .. "vector_add.cu"), lang = "ptx",
    arch = "sm_90a", cache = false }
  t.eq(bad, nil)
  t.eq(code, "ECOMPILE")
end

-- The toolkit's headers that include their neighbours by a quoted name
-- (crt/mma.h includes "mma.hpp", cooperative_groups/details/driver_abi.h
-- "info.h") compile; a file beside the source is never read in place of a
-- toolkit header; errors name the user's file and its own line numbers.
function T.cuda_toolkit_headers_and_names(t)
  need_nvrtc(t)
  need_ptxas(t)
  local wmma = table.concat({
    "#include <mma.h>",
    "#include <cooperative_groups.h>",
    "#include \"cuda_bf16.h\"",
    "using namespace nvcuda;",
    "extern \"C\" __global__ void k(const __half *a, float *c) {",
    "  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;",
    "  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;",
    "  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;",
    "  wmma::fill_fragment(fc, 0.0f);",
    "  wmma::load_matrix_sync(fa, a, 16);",
    "  wmma::load_matrix_sync(fb, a, 16);",
    "  wmma::mma_sync(fc, fa, fb, fc);",
    "  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);",
    "  cooperative_groups::this_thread_block().sync();",
    "}", "" }, "\n")
  local dir = t.tmpdir()
  -- A header of the toolkit's name beside the source: it must not be read.
  local f = assert(io.open(dir .. "/cuda_bf16.h", "w"))
  f:write("#error \"the folder of the source was searched\"\n")
  f:close()
  local r, msg = jit.compile { source = wmma, arch = "sm_90a", name = dir .. "/kernel.cu", cache = false }
  t.ok(r, msg)
  t.match(r and r.ptx or "", "wmma%.mma%.sync", "WMMA compiled")
  local bad = wmma:gsub("wmma::fill_fragment%(fc, 0%.0f%);", "int x = ;")
  local b, bmsg, code, res = jit.compile { source = bad, arch = "sm_90a", name = dir .. "/kernel.cu", cache = false }
  t.eq(b, nil)
  t.eq(code, "ECOMPILE")
  t.match(bmsg, "kernel%.cu:9: error", "the user's file and line")
  t.ok(not (res and res.log or ""):find("klab%-candidate"), "the folder NVRTC was given stays out of the log")
end

-- The C and C++ standard headers NVRTC lacks and kernels written for nvcc
-- include anyway: klab gives NVRTC its own (compile/std_headers.h).
function T.cuda_standard_headers(t)
  need_nvrtc(t)
  need_ptxas(t)
  local names = { "stdio.h", "cstdio", "assert.h", "cassert", "math.h", "cmath", "stdint.h", "cstdint",
    "limits.h", "climits", "stddef.h", "cstddef", "float.h", "cfloat" }
  local lines = {}
  for _, n in ipairs(names) do lines[#lines + 1] = "#include <" .. n .. ">" end
  lines[#lines + 1] = "#include <cuda_bf16.h>"
  lines[#lines + 1] = [[extern "C" __global__ void k(float *y, uint32_t n, int64_t m, size_t s, ptrdiff_t d) {
  assert(n < UINT32_MAX);
  if (n == 7u && m == INT64_MIN) printf("%u\n", n);
  y[0] = sqrtf(FLT_MAX) + FLT_EPSILON + (float)DBL_MIN + (float)(INT_MAX + CHAR_BIT) + (float)(s + d);
}
]]
  local r, msg = jit.compile { source = table.concat(lines, "\n"), arch = "sm_90a", name = "std.cu", cache = false }
  t.ok(r, msg)
  local b, bmsg = jit.compile { source = "#include <iostream>\n", arch = "sm_90a", name = "io.cu", cache = false }
  t.eq(b, nil)
  t.match(bmsg or "", "io%.cu:1: #include <iostream> is not allowed")
end

function T.cache_hit(t)
  need_ptxas(t)
  local dir = t.tmpdir()
  local a = assert(jit.compile{ source = HELLO, arch = "sm_90a", cache_dir = dir })
  local b = assert(jit.compile{ source = HELLO, arch = "sm_90a", cache_dir = dir })
  local c = assert(jit.compile{ source = HELLO, arch = "sm_90a", cache_dir = dir, cache = false })
  t.eq(a.cached, false)
  t.eq(b.cached, true)
  t.eq(c.cached, false)
  t.eq(a.hash, b.hash)
  t.eq(a.cubin, b.cubin)
  t.eq(a.kernels[1].registers, b.kernels[1].registers)
  local d = assert(jit.compile{ source = HELLO, arch = "sm_100a", cache_dir = dir })
  t.ok(d.hash ~= a.hash, "arch is part of the hash")
  local e = assert(jit.compile{ source = HELLO, arch = "sm_90a", cache_dir = dir, options = { "-O1" } })
  t.ok(e.hash ~= a.hash, "options are part of the hash")
  os.execute("rm -rf " .. sh_quote(dir))
end

function T.compile_error(t)
  need_ptxas(t)
  local src = HELLO:gsub("mov%.u32", "mvo.u32")
  local r, msg, code, res = jit.compile{ source = src, arch = "sm_90a", name = "typo.ptx", cache = false }
  t.eq(r, nil)
  t.eq(code, "ECOMPILE")
  t.match(msg, "typo%.ptx")
  t.eq(type(res), "table")
  if res then
    t.eq(res.ok, false)
    t.match(res.log, "typo%.ptx, line 9")
    t.eq(res.code, "ECOMPILE")
    t.eq(res.cubin, nil)
  end
end

function T.rejections(t)
  need_ptxas(t)
  local function rejected(opts, pattern)
    opts.cache = false
    local r, msg, code = jit.compile(opts)
    t.eq(r, nil)
    t.eq(code, "EREJECT", tostring(msg))
    t.match(msg, pattern)
  end
  rejected({ source = "", arch = "sm_90a" }, "empty")
  rejected({ source = "abc\0def", arch = "sm_90a" }, "binary")
  rejected({ source = HELLO, arch = "sm_99" }, "does not know the target sm_99")
  rejected({ source = HELLO, arch = "gfx90a" }, "not a GPU target")
  local cdp = HELLO:gsub("%.visible", ".extern .func (.param .b32 r) cudaLaunchDeviceV2(.param .b64 a);\n.visible", 1)
  rejected({ source = cdp, arch = "sm_90a" }, "dynamic parallelism")
  local ext = HELLO:gsub("%.visible", ".extern .func helper();\n.visible", 1)
  rejected({ source = ext, arch = "sm_90a" }, "unresolved external function helper")
end

function T.misuse_raises(t)
  t.raises(function() jit.compile{ source = HELLO } end, "arch is required")
  t.raises(function() jit.compile{ arch = "sm_90a" } end, "source")
  t.raises(function() jit.compile("text") end)
  t.raises(function() jit.compile{ source = HELLO, arch = "sm_90a", lang = "fortran" } end, "lang")
  t.raises(function() jit.compile{ source = HELLO, arch = "sm_90a", options = "-O3" } end, "options")
  t.raises(function() jit.compile{ source = HELLO, arch = "sm_90a", options = { 3 } } end, "options%[1%]")
  t.raises(function() jit.compile{ source = HELLO, arch = "sm_90a", cache = "yes" } end, "boolean")
  if jit.versions().ptxas.ok then
    t.raises(function() jit.compile{ source = HELLO, arch = "sm_90a", options = { "-c" } } end, "not allowed")
  end
end

-- Whose code it is decides how it compiles (host/compile/jit_trust.c):
-- klab's judge kernels in this process, anything else confined and limited.
function T.own_source_and_candidates(t)
  t.raises(function() jit.compile{ source = HELLO, arch = "sm_90a", limits = { cpu = -1 } } end,
    "jit.compile: limits must be positive")
  t.raises(function() jit.compile{ source = HELLO, arch = "sm_90a", limits = { memory = -5 } } end,
    "jit.compile: limits must be positive")
  if not jit.versions().nvrtc.ok then t.skip("NVRTC is not installed") end
  local judge = require "klab.judge"
  local own = assert(jit.compile{ source = judge.source(), arch = "sm_90a", lang = "cuda", name = "judge.cu", cache = false })
  t.eq(own.confinement, "klab's own source")
  -- One line more and it is a candidate's, confined (or refused where no
  -- confinement is possible).
  local near = judge.source():gsub('(#line 1 "judge.cu"\n)', "%1int klab_extra;\n", 1)
  local r, msg, code = jit.compile{ source = near, arch = "sm_90a", lang = "cuda", name = "judge.cu", cache = false }
  if r then t.ok(r.confinement ~= "klab's own source", tostring(r.confinement)) else t.eq(code, "EUNSUPPORTED", msg) end
end

function T.compile_file_missing(t)
  local r, msg, code = jit.compile_file("/nonexistent/k.ptx", { arch = "sm_90a" })
  t.eq(r, nil)
  t.eq(code, "EIO")
  t.match(msg, "/nonexistent/k%.ptx")
end

function T.census_function(t)
  local c = jit.census([[
    // mbarrier.init in a comment
    mbarrier.init.shared::cta.b64 [%r1], 1;
    @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];
    L1: elect.sync %r1|%p1, 0xffffffff;
    setmaxnreg.dec.sync.aligned.u32 40;
  ]])
  t.eq(c.mbarrier, 1)
  t.eq(c["cp.async.bulk.tensor"], 1)
  t.eq(c["cp.async.bulk"], 0)
  t.eq(c["cp.async"], 0)
  t.eq(c["elect.sync"], 1)
  t.eq(c.setmaxnreg, 1)
  t.eq(c.instructions, 4)
  t.eq(#jit.families, 18)
  for _, f in ipairs(jit.families) do t.eq(type(c[f]), "number", f) end
  t.raises(function() jit.census() end)
end

function T.versions(t)
  local v = jit.versions()
  for _, k in ipairs { "nvrtc", "ptxas", "cupti", "cublasLt", "cudnn" } do
    t.eq(type(v[k]), "table", k)
    t.eq(type(v[k].ok), "boolean", k)
    if v[k].ok then t.eq(type(v[k].version), "string", k) else t.eq(type(v[k].error), "string", k) end
  end
  if v.ptxas.ok then t.match(v.ptxas.version, "^%d+%.%d+") end
  if v.nvrtc.ok then t.match(v.nvrtc.version, "^%d+%.%d+$") end
end

function T.cache_dir_env(t)
  local code, out = t.sh("KLAB_CACHE_DIR=/tmp/klab-x " .. sh_quote(t.klab) ..
    " -e 'print(require(\"klab.jit\").cache_dir())'")
  t.eq(code, 0)
  t.eq(out, "/tmp/klab-x\n")
  code, out = t.sh("env -u KLAB_CACHE_DIR XDG_CACHE_HOME=/xdg " .. sh_quote(t.klab) ..
    " -e 'print(require(\"klab.jit\").cache_dir())'")
  t.eq(out, "/xdg/klab/jit\n")
  code, out = t.sh("env -u KLAB_CACHE_DIR -u XDG_CACHE_HOME HOME=/home/u " .. sh_quote(t.klab) ..
    " -e 'print(require(\"klab.jit\").cache_dir())'")
  t.eq(out, "/home/u/.cache/klab/jit\n")
end

-- ---- the CLI ---------------------------------------------------------------

function T.cli_help(t)
  local code, out = t.sh(sh_quote(t.klab) .. " compile --help")
  t.eq(code, 0)
  t.match(out, "usage: klab compile")
  t.match(out, "%-%-arch")
end

function T.cli_readable_and_cache(t)
  need_ptxas(t)
  local dir = t.tmpdir()
  local file = sh_quote(samples(t) .. "wgmma_tile.ptx")
  local out_cubin = dir .. "/w.cubin"
  local code, out, err = klab_compile(t, dir .. "/c", file .. " --arch sm_90a -o " .. sh_quote(out_cubin))
  t.eq(code, 0, err)
  t.match(out, "wgmma_tile%s+%d+%s+0/0%s+2304%s+0")
  t.match(out, "wgmma 4")
  t.match(out, "hash%s+%x+")
  t.ok(not out:find("from cache"))
  t.eq(read(out_cubin):sub(1, 4), "\127ELF")
  code, out = klab_compile(t, dir .. "/c", file .. " --arch=sm_90a")
  t.eq(code, 0)
  t.match(out, "from cache")
  os.execute("rm -rf " .. sh_quote(dir))
end

function T.cli_json(t)
  need_ptxas(t)
  local dir = t.tmpdir()
  local code, out, err = klab_compile(t, dir, sh_quote(samples(t) .. "vector_add.ptx") .. " --arch sm_100a --json --no-cache")
  t.eq(code, 0, err)
  local ok, obj = pcall(cjson.decode, out)
  t.ok(ok, "stdout is one JSON object: " .. out)
  if ok then
    t.eq(obj.ok, true)
    t.eq(obj.arch, "sm_100a")
    t.eq(obj.cubin, nil)
    t.ok(obj.cubin_size > 0)
    t.eq(obj.cached, false)
    t.eq(obj.kernels[1].name, "vector_add")
    t.ok(obj.kernels[1].registers > 0)
    t.eq(obj.census.wgmma, 0)
    t.eq(#obj.hash, 64)
    t.match(obj.log, "vector_add")
  end
  os.execute("rm -rf " .. sh_quote(dir))
end

function T.cli_bad_input(t)
  local dir = t.tmpdir()
  local va = sh_quote(samples(t) .. "vector_add.ptx")
  local code, out, err = klab_compile(t, dir, "/nonexistent/x.ptx --arch sm_90a")
  t.eq(code, 2, "a missing file is the user's mistake")
  t.match(err, "cannot read /nonexistent/x%.ptx")
  code, out, err = klab_compile(t, dir, va .. " --frobnicate")
  t.eq(code, 2)
  t.match(err, "unknown option %-%-frobnicate")
  code, out, err = klab_compile(t, dir, va .. " --arch")
  t.eq(code, 2)
  t.match(err, "%-%-arch needs a value")
  code, out, err = klab_compile(t, dir, va)
  t.eq(code, 2)
  t.match(err, "%-%-arch is required")
  code, out, err = klab_compile(t, dir, "--arch sm_90a")
  t.eq(code, 2)
  t.match(err, "no input file")
  t.eq(out, "")
  code, out, err = klab_compile(t, dir, va .. " --arch sm_99z")
  t.eq(code, 2, "a name that is no target")
  t.match(err, "^klab compile: %-%-arch: 'sm_99z' is not a GPU target name")
  if not jit.versions().ptxas.ok then return end
  code, out, err = klab_compile(t, dir, va .. " --arch sm_77")
  t.eq(code, 2, "a target the compiler does not know")
  t.match(err, "does not know the target sm_77")
  -- one clear line, not a traceback
  t.ok(not err:find("traceback"), err)
  -- wgmma for sm_80: the assembler's message and exit 1
  code, out, err = klab_compile(t, dir, sh_quote(samples(t) .. "wgmma_tile.ptx") .. " --arch sm_80")
  t.eq(code, 1)
  t.match(err, "ptxas")
  t.match(err, "ECOMPILE")
  -- a syntax error prints the log with the line
  local bad = dir .. "/bad.ptx"
  local f = assert(io.open(bad, "w"))
  f:write((HELLO:gsub("ret;", "ret")))
  f:close()
  code, out, err = klab_compile(t, dir, sh_quote(bad) .. " --arch sm_90a")
  t.eq(code, 1)
  t.match(err, "bad%.ptx, line %d+")
  -- ... and with --json, still one object on stdout
  code, out = klab_compile(t, dir, sh_quote(bad) .. " --arch sm_90a --json")
  t.eq(code, 1)
  local ok, obj = pcall(cjson.decode, out)
  t.ok(ok and obj.ok == false and obj.code == "ECOMPILE" and obj.log:find("bad%.ptx"), out)
  -- an empty file is rejected
  local empty = dir .. "/empty.cu"
  io.open(empty, "w"):close()
  code, out, err = klab_compile(t, dir, sh_quote(empty) .. " --arch sm_90a")
  t.eq(code, 1)
  t.match(err, "empty")
  os.execute("rm -rf " .. sh_quote(dir))
end

return T
