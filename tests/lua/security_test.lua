-- security_test.lua: what a candidate, a plan, a task file or a model server
-- can reach, tried as an attacker would (no GPU needed). Each test is one
-- attack and the answer klab must give.
local eval = require "klab.eval"
local jit = require "klab.jit"
local cjson = require "cjson"

local T = {}

local TASK = "gemm_bf16/123x457x789"
local SECRET = "klab-test-secret-value-0123456789"

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function q(s) return require("klab.command").shell_quote(s) end

local KERNEL = 'extern "C" __global__ void gemm(float *x) { x[0] = 1; }\n'

-- ---- candidate code ---------------------------------------------------------

-- A kernel that includes a host file: refused before the compiler reads it,
-- the reason names the include and the line, and neither the file nor the
-- environment reaches the result (which would be stored and fed back).
function T.kernel_cannot_include_host_files(t)
  local d = t.tmpdir()
  write(d .. "/kernel.cu", "// reads the host\n#include \"/proc/self/environ\"\n" .. KERNEL)
  local code, out = t.sh("KLAB_TEST_TOKEN=" .. SECRET .. " " .. t.klab .. " eval " .. TASK .. " " .. q(d) ..
    " --json --db " .. q(d .. "/r.db"))
  t.eq(code, 1)
  local r = cjson.decode(out)
  t.eq(r.verdict, "compile_error")
  t.match(r.reason, d:gsub("%p", "%%%0") .. "/kernel.cu:2: #include \"/proc/self/environ\" is not allowed: " ..
    "candidates may include only the CUDA toolkit's headers")
  t.ok(not out:find(SECRET, 1, true), "the environment is not in the result")
  t.ok(not out:find("PATH=", 1, true), "nor any other variable")
  t.ok(not t.read(d .. "/r.db"):find(SECRET, 1, true), "nor in the store")
  for _, inc in ipairs { '"/etc/passwd"', '"../x.h"', '"plan.lua"', "</etc/passwd>" } do
    local _, err, ecode = jit.compile { source = "#include " .. inc .. "\n" .. KERNEL, arch = "sm_90a", lang = "cuda",
      name = "k.cu", cache = false }
    t.eq(ecode, "ECOMPILE", inc)
    t.match(err, "^k%.cu:1: #include .* is not allowed")
  end
  -- The toolkit's own headers are what candidates may use.
  local ok, err = jit.compile { source = "#include <cuda_fp16.h>\n#include <cuda/std/cstdint>\n" .. KERNEL,
    arch = "sm_90a", lang = "cuda", cache = false }
  t.ok(ok, err)
end

-- __has_include spelled by token pasting escapes any lexical check; the
-- compiler child reads only the toolkit and the system's libraries
-- (Landlock), so a file of the host is as absent as a missing one.
function T.pasted_has_include_cannot_probe_the_host(t)
  if require("klab.sys").landlock_abi() < 1 then t.skip("this kernel has no Landlock") end
  local d = t.tmpdir()
  write(d .. "/present.h", "int x;\n")
  local function probe(path)
    return table.concat({
      "#define CAT(a, b) a ## b", "#define HI CAT(__has_, include)",
      "#if HI(<" .. path .. ">)", "#error \"the host told the compiler the file is there\"", "#endif",
      "#include <mma.h>", KERNEL }, "\n")
  end
  for _, path in ipairs { d .. "/present.h", d .. "/absent.h" } do
    local ok, err = jit.compile { source = probe(path), arch = "sm_90a", lang = "cuda", name = "k.cu", cache = false }
    t.ok(ok, path .. ": " .. tostring(err))
  end
end

-- Runs klab (args: a shell-quoted string) with Landlock, and again with
-- the Landlock calls made to fail by a seccomp filter (as on Linux before
-- 5.13, or in a container whose profile lacks them); fn(code, out, err,
-- label, d) for each.
local function with_and_without_landlock(t, env, args, fn)
  local helper = t.klab:match("^(.*)/[^/]+$") .. "/tests/helper_nolandlock"
  local runs = { { label = "with Landlock", prefix = "" }, { label = "without Landlock", prefix = q(helper) .. " " } }
  if require("klab.sys").landlock_abi() < 1 then runs[1] = nil end
  for _, r in pairs(runs) do
    local code, out, err = t.sh(env .. " " .. r.prefix .. q(t.klab) .. " " .. args)
    fn(code, out, err, r.label)
  end
end

-- A toolkit header that builds an include name from a macro the candidate
-- defines: Thrust's system headers name <thrust/system/CUDA/...>, its
-- memory resource header <memory_resource>. The compiler reads nothing
-- but the toolkit on any kernel, so neither the host file nor the
-- environment (secrets included) reaches any output or the store.
function T.computed_include_reads_no_host_file(t)
  local d = t.tmpdir()
  local marker = "klab-marker-" .. ("%08x"):format(math.random(0, 0x7fffffff))
  write(d .. "/marker.txt", marker .. "\n" .. marker .. " second line\n")
  local up = ("../"):rep(24)
  local attacks = {
    resource = "#define memory_resource " .. up .. d:sub(2) .. "/marker.txt\n#include <thrust/mr/memory_resource.h>\n",
    vector = "#define cuda " .. up .. d:sub(2) .. "/marker.txt >\n#include <thrust/universal_vector.h>\n",
    environ = "#define cuda " .. up .. "proc/self/environ >\n#include <thrust/universal_vector.h>\n",
    absolute = "#include \"" .. d .. "/marker.txt\"\n",
  }
  local env = "KLAB_TEST_TOKEN=" .. SECRET .. " MY_SECRET_PASSWORD=" .. SECRET .. "-pw"
  for name, head in pairs(attacks) do
    local c = d .. "/" .. name
    assert(require("klab.sys").mkdir(c))
    write(c .. "/kernel.cu", head .. KERNEL)
    local function clean(code, out, err, label, what)
      local where = name .. ", " .. what .. ", " .. label
      t.eq(code, 1, where .. ": " .. err)
      for _, text in ipairs { out, err } do
        t.ok(not text:find(marker, 1, true), where .. ": the host file's lines are not in the output")
        t.ok(not text:find(SECRET, 1, true), where .. ": no secret is in the output")
        t.ok(not text:find("HOME=", 1, true), where .. ": nor the environment")
      end
    end
    with_and_without_landlock(t, env, "compile " .. q(c .. "/kernel.cu") .. " --arch sm_90a --no-cache --json",
      function(code, out, err, label)
        clean(code, out, err, label, "klab compile")
        local r = cjson.decode(out)
        t.eq(r.code, "ECOMPILE", name .. ", " .. label)
        t.match(r.confinement or "", "open guard", label)
        t.eq((r.confinement or ""):find("Landlock") ~= nil, label == "with Landlock", label .. ": " .. tostring(r.confinement))
      end)
    local db = c .. "/r.db"
    with_and_without_landlock(t, env, "eval " .. TASK .. " " .. q(c) .. " --json --db " .. q(db),
      function(code, out, err, label)
        clean(code, out, err, label, "klab eval")
        t.eq(cjson.decode(out).verdict, "compile_error", name .. ", " .. label)
        for _, suffix in ipairs { "", "-wal" } do
          local blob = t.read(db .. suffix) or ""
          t.ok(not blob:find(marker, 1, true) and not blob:find(SECRET, 1, true), name .. ": the store holds neither")
        end
      end)
  end
end

-- CUTLASS's own computed includes (CUDA_STD_HEADER(x) is <cuda/std/x>),
-- steered by a macro the candidate defines, and a path from the CUTLASS
-- folder to a file beside it: the compiler may read the CUTLASS folder
-- and the toolkit, nothing else, with and without Landlock.
function T.cute_computed_include_reads_no_host_file(t)
  local include, why = require("klab.lang.cutlass").include_dir()
  if not include then t.skip(why) end
  local d = t.tmpdir()
  local marker = "klab-marker-" .. ("%08x"):format(math.random(0, 0x7fffffff))
  write(d .. "/marker.txt", marker .. "\n")
  write(include .. "/../klab-test-beside.txt", marker .. "\n")
  local up = ("../"):rep(24)
  local body = 'extern "C" __global__ void relu(const float *X, float *Y, unsigned long long n) { }\n'
  local attacks = {
    computed = "#define cuda " .. up .. d:sub(2) .. "/marker.txt >\n#include <cute/tensor.hpp>\n",
    beside = "#include <cute/tensor.hpp>\n#include <cute/../../klab-test-beside.txt>\n",
  }
  for name, head in pairs(attacks) do
    local c = d .. "/" .. name
    assert(require("klab.sys").mkdir(c))
    write(c .. "/kernel.cu", head .. body)
    local db = c .. "/r.db"
    with_and_without_landlock(t, "KLAB_TEST_TOKEN=" .. SECRET, "eval relu_f32/999x1021 " .. q(c) .. " --json --db "
      .. q(db), function(code, out, err, label)
        local where = name .. ", " .. label
        t.eq(code, 1, where .. ": " .. err)
        local r = cjson.decode(out)
        t.eq(r.verdict, "compile_error", where .. ": " .. tostring(r.reason))
        t.ok(not (r.reason or ""):find("\n"), where .. ": one line")
        if name == "beside" then
          t.match(r.reason or "", "kernel%.cu:2: #include <cute/%.%./%.%./klab%-test%-beside%.txt> is not allowed: "
            .. "candidates may include only the CUDA toolkit's and CUTLASS's headers", where)
        end
        for _, text in ipairs { out, err, t.read(db) or "", t.read(db .. "-wal") or "" } do
          t.ok(not text:find(marker, 1, true), where .. ": the host file's line is nowhere")
          t.ok(not text:find(SECRET, 1, true), where .. ": nor the secret")
        end
      end)
  end
  os.remove(include .. "/../klab-test-beside.txt")
end

-- Includes are judged where the preprocessor reads them: a host include in
-- a group it skips is not read and refuses nothing; one in a live group is
-- refused with its line.
function T.fenced_host_includes_compile(t)
  local fenced = table.concat({ "#include <cuda_bf16.h>", "#if 0", "#include <torch/types.h>", "#endif",
    "#ifndef __CUDACC_RTC__", "#include <iostream>", "#include \"/etc/passwd\"", "#endif",
    "#if defined(__CUDACC_RTC__) && 0", "#include <ATen/ATen.h>", "#elif 1", "#include <cuda_fp16.h>", "#else",
    "#include <vector>", "#endif", KERNEL }, "\n")
  local ok, err = jit.compile { source = fenced, arch = "sm_90a", lang = "cuda", name = "k.cu", cache = false }
  t.ok(ok, err)
  local live = "#include <cuda_bf16.h>\n#ifdef __CUDACC_RTC__\n  #include <torch/types.h>\n#endif\n" .. KERNEL
  local _, lerr, code = jit.compile { source = live, arch = "sm_90a", lang = "cuda", name = "k.cu", cache = false }
  t.eq(code, "ECOMPILE")
  t.eq(lerr, "k.cu:3: #include <torch/types.h> is not allowed: candidates may include only the CUDA toolkit's headers")
  -- The sample that ships with the GEMM tasks compiles as it is.
  local res, serr = jit.compile_file(t.root .. "/tasks/gemm/samples/fenced_includes/kernel.cu",
    { arch = "sm_90a", cache = false })
  t.ok(res, serr)
end

-- What klab prints is redacted like what it stores: a compile log that
-- quotes a secret (here the candidate's own source holds the value of a
-- variable whose name looks secret) shows it neither on stdout nor stderr.
function T.command_output_is_redacted(t)
  local d = t.tmpdir()
  local value = "pw_" .. ("%08x%08x"):format(math.random(0, 0x7fffffff), os.time())
  write(d .. "/kernel.cu", 'extern "C" __global__ void gemm(float *x) { x[0] = ' .. value .. '; }\n')
  for _, args in ipairs {
    "compile " .. q(d .. "/kernel.cu") .. " --arch sm_90a --no-cache",
    "compile " .. q(d .. "/kernel.cu") .. " --arch sm_90a --no-cache --json",
    "eval " .. TASK .. " " .. q(d) .. " --json",
    "eval " .. TASK .. " " .. q(d),
  } do
    local code, out, err = t.sh("MY_DB_PASSWORD=" .. value .. " " .. q(t.klab) .. " " .. args)
    t.eq(code, 1, args)
    t.match(out .. err, "redacted MY_DB_PASSWORD", args .. ": the log was printed")
    t.ok(not (out .. err):find(value, 1, true), args .. ": the value is not printed")
  end
end

-- A candidate file with a second name elsewhere (a hard link to a host
-- file) is refused like a symbolic link, before it is read.
function T.hard_linked_candidate_is_refused(t)
  local d = t.tmpdir()
  write(d .. "/host.cu", KERNEL)
  local c = d .. "/cand"
  assert(require("klab.sys").mkdir(c))
  local code = t.sh("ln " .. q(d .. "/host.cu") .. " " .. q(c .. "/kernel.cu"))
  t.eq(code, 0, "ln")
  local r, err = eval.evaluate(TASK, c, { deadline = 30 })
  t.eq(r, nil)
  t.match(err or "", "kernel%.cu: has 2 names %(hard links%)")
end

-- NVRTC names the program by the user's path and never searches its folder.
function T.compile_errors_name_the_users_file(t)
  local d = t.tmpdir()
  write(d .. "/kernel.cu", 'extern "C" __global__ void gemm(float *x)\n{\n  int y = ;\n}\n')
  write(d .. "/beside.h", "#define X 1\n")
  local r = assert(eval.evaluate(TASK, d, { deadline = 30 }))
  t.eq(r.verdict, "compile_error")
  t.match(r.reason, d:gsub("%p", "%%%0") .. "/kernel%.cu:3: error: expected an expression")
  t.ok(not r.reason:find("(3)", 1, true))
  -- Garbage PTX: ptxas's first real error, not its closing summary.
  local p = t.tmpdir()
  write(p .. "/kernel.ptx", "garbage\n")
  r = assert(eval.evaluate(TASK, p, { deadline = 30 }))
  t.eq(r.verdict, "compile_error")
  t.match(r.reason, "Missing %.version directive")
  t.match(r.reason, p:gsub("%p", "%%%0") .. "/kernel%.ptx, line 1")
  -- A plan's errors name plan.lua.
  local c = t.tmpdir()
  write(c .. "/kernel.cu", t.read(t.root .. "/tasks/gemm/samples/naive/kernel.cu"))
  write(c .. "/plan.lua", "\n\nerror('no plan today')\n")
  r = assert(eval.evaluate(TASK, c, { deadline = 30 }))
  t.eq(r.verdict, "plan_error")
  t.match(r.reason, "^" .. c:gsub("%p", "%%%0") .. "/plan%.lua:3: no plan today")
end

-- A macro bomb is stopped by the compiler's limits, whichever comes first,
-- and the compile error says which.
function T.compiler_runs_under_limits(t)
  local levels = { "#define A0 x+x+x+x+x+x+x+x+x+x" }
  for i = 1, 7 do levels[#levels + 1] = ("#define A%d %s"):format(i, ("A" .. (i - 1) .. "+"):rep(9) .. "A" .. (i - 1)) end
  local cpu_bomb = table.concat(levels, "\n") .. '\nextern "C" __global__ void k(float *y, float x) { y[0] = A7; }\n'
  local t0 = require("klab.sys").now()
  local _, err, code = jit.compile { source = cpu_bomb, arch = "sm_90a", lang = "cuda", name = "DIR/kernel.cu",
    cache = false, limits = { cpu = 1 } }
  t.eq(code, "ECOMPILE")
  t.eq(err, "DIR/kernel.cu: the compiler exceeded its 1 s CPU limit")
  t.ok(require("klab.sys").now() - t0 < 20, "stopped early")
  local wide = { "#define A0 " .. ("x"):rep(90) }
  for i = 1, 7 do wide[#wide + 1] = ("#define A%d %s"):format(i, ("A" .. (i - 1) .. " "):rep(10)) end
  local mem_bomb = table.concat(wide, "\n") .. "\n#define S(x) #x\n#define T(x) S(x)\n" ..
    'extern "C" __global__ void k(char *y) { const char *s = T(A7); y[0] = s[1]; }\n'
  _, err, code = jit.compile { source = mem_bomb, arch = "sm_90a", lang = "cuda", name = "DIR/kernel.cu",
    cache = false, limits = { memory = 256 * 1024 * 1024, cpu = 30 } }
  t.eq(code, "ECOMPILE")
  t.match(err, "^DIR/kernel%.cu: the compiler exceeded its 256 MiB memory limit")
end

-- A compiler log is bounded before anything stores or feeds it back.
function T.compiler_log_is_bounded(t)
  local lines = {}
  for i = 1, 3000 do lines[i] = ('#warning "warning %d, padded to make the log long enough"'):format(i) end
  local src = table.concat(lines, "\n") .. "\n" .. KERNEL
  local r, err = jit.compile { source = src, arch = "sm_90a", lang = "cuda", name = "w.cu", cache = false }
  t.ok(r, err)
  t.ok(#r.log <= 64 * 1024, "log of " .. #r.log .. " bytes")
  t.match(r.log, "%[%.%.%. %d+ bytes cut%]")
  t.match(r.log, "warning 1,")
  t.match(r.log, "warning 3000,")
end

-- ---- candidate folders ----------------------------------------------------------

-- A candidate is only the regular files inside its folder: each way out is
-- refused with the path and the reason, and nothing refused is stored.
function T.candidate_folder_cannot_reach_outside(t)
  local cases = {}
  local function case(name, setup, want)
    local d = t.tmpdir() .. "/" .. name
    os.execute("mkdir " .. q(d))
    setup(d)
    cases[#cases + 1] = { dir = d, want = want }
  end
  case("link_out", function(d) os.execute("ln -s /etc/passwd " .. q(d .. "/kernel.cu")) end,
    "/kernel%.cu: a symbolic link that leaves the candidate folder")
  case("plan_link_out", function(d)
    write(d .. "/kernel.cu", KERNEL)
    os.execute("ln -s /etc/hostname " .. q(d .. "/plan.lua"))
  end, "/plan%.lua: a symbolic link that leaves the candidate folder")
  case("fifo", function(d) os.execute("mkfifo " .. q(d .. "/kernel.cu")) end, "/kernel%.cu: is a FIFO")
  case("device", function(d) os.execute("ln -s /dev/zero " .. q(d .. "/kernel.ptx")) end,
    "/kernel%.ptx: a symbolic link that leaves")
  case("dir", function(d) os.execute("mkdir " .. q(d .. "/kernel.cu")) end, "/kernel%.cu: is a directory, not a file")
  case("big", function(d) write(d .. "/kernel.cu", ("/" .. ("x"):rep(1023)):rep(5 * 1024)) end,
    "/kernel%.cu: too large %(5242880 bytes; the limit is 4194304 bytes%)")
  case("both", function(d)
    write(d .. "/kernel.cu", KERNEL)
    write(d .. "/kernel.ptx", ".version 8.0\n")
  end, ": both kernel%.cu and kernel%.ptx; keep one")
  local db = t.tmpdir() .. "/r.db"
  for _, c in ipairs(cases) do
    local code, out, err = t.sh("timeout 20 " .. t.klab .. " eval " .. TASK .. " " .. q(c.dir) .. " --db " .. q(db))
    t.eq(code, 2, c.dir) -- a mistake in what was asked (docs/rules.md)
    t.match(err, "^klab eval: " .. c.dir:gsub("%p", "%%%0") .. c.want, c.dir)
    t.eq(out, "", c.dir)
  end
  local s = require("klab.store").open(db)
  if s then
    t.eq(s:first("SELECT count(*) AS n FROM candidates").n, 0, "nothing refused is stored")
    s:close()
  end
  -- A link inside the folder to a file inside it is the file.
  local d = t.tmpdir()
  write(d .. "/real.cu", KERNEL)
  os.execute("ln -s real.cu " .. q(d .. "/kernel.cu"))
  local c, why = require("klab.eval.candidate").load(d)
  t.ok(c, why)
  t.eq(c and c.code, KERNEL)
end

-- A candidate path is a path, never shell text: a folder named
-- x$(touch PWNED) is listed, not run.
function T.candidate_path_runs_no_command(t)
  local d = t.tmpdir()
  local name = "x$(touch PWNED)"
  os.execute("mkdir " .. q(d .. "/" .. name))
  write(d .. "/" .. name .. "/kernel.cu", KERNEL)
  local code, out, err = t.sh("cd " .. q(d) .. " && " .. t.klab .. " eval " .. TASK .. " " .. q(name) .. " --json")
  t.ok(not t.read(d .. "/PWNED"), "no file was created")
  local ok, r = pcall(cjson.decode, out)
  t.ok(ok and r.name == name, "the folder was the candidate: " .. tostring(out):sub(1, 200) .. " (stderr: " ..
    tostring(err):sub(-400) .. ")")
  t.ok(code ~= 0)
end

-- ---- plans ----------------------------------------------------------------------

-- A plan's result counts against its memory cap: references to one 1 MiB
-- string are a copy each once outside (200,000 of them would be 200 GiB);
-- 64 are refused at the 16 MiB cap. (Kept to 64 so that a klab without the
-- count fails this test without exhausting the machine.)
function T.plan_result_counts_against_the_cap(t)
  local plan = require "klab.eval.plan"
  local task = require("klab.task").get(TASK, { root = t.root .. "/tasks" })
  local t0 = require("klab.sys").now()
  local before = collectgarbage("count")
  local p, why, code = plan.run(task, [[
local s = ("x"):rep(1024 * 1024)
local t = {}
for i = 1, 64 do t[i] = s end
return { launches = t }]], { name = "DIR/plan.lua" })
  t.eq(p, nil)
  t.eq(code, "EMEMORY")
  t.match(why, "^DIR/plan%.lua exceeded the memory limit %(16777216 bytes%) with its result")
  collectgarbage()
  t.ok(collectgarbage("count") - before < 64 * 1024, "klab did not grow past the cap")
  t.ok(require("klab.sys").now() - t0 < 10)
  -- Many small values are counted too (table entries, not only strings).
  local sandbox = require "klab.sandbox"
  local v, msg, c = sandbox.run("local t = {} for i = 1, 400000 do t[i] = i end return t", "p", nil,
    { memory = 8 * 1024 * 1024, instructions = 1e8 })
  t.eq(v, nil, "400,000 entries do not fit in 8 MiB")
  t.eq(c, "EMEMORY", msg)
end

-- ---- task folders ----------------------------------------------------------------

-- A task folder is something one downloads: its expected.lua lists are run
-- like its task files, in the task sandbox. One that runs a command,
-- writes a file or reads a secret (spelled backwards, past redaction) does
-- none of it: `klab tasks --check` names the file and what it refused, in
-- one line, exit 2, with Landlock and without; a sample named by a path is
-- refused before anything reads it.
function T.task_folder_lua_runs_only_sandboxed(t)
  local d = t.tmpdir()
  local marker = d .. "/marker-" .. ("%08x"):format(math.random(0, 0x7fffffff))
  t.eq((t.sh(("mkdir -p %s/lib && cp -r %s %s/lib/act"):format(q(d), q(t.root .. "/tasks/activation"), q(d)))), 0)
  local hostile = {
    -- Straight out: the first call stops the file.
    plain = ('os.execute("touch %s.exec")\nreturn {}\n'):format(marker),
    -- Each attempt wrapped in pcall, so the file returns a list anyway,
    -- with the secret reversed in it.
    wrapped = ('pcall(function() os.execute("touch %s.exec") end)\n'
      .. 'pcall(function() local f = io.open("%s.io", "w") f:write("x") f:close() end)\n'
      .. 'local _, s = pcall(function() return string.reverse(os.getenv("KLAB_TEST_TOKEN")) end)\n'
      .. 'return { { name = "naive_gelu_tanh", task = "gelu_tanh_bf16", verdict = "passed", why = tostring(s) } }\n')
      :format(marker, marker),
    loader = 'local f = load("return 1")\nreturn {}\n',
  }
  local refused = { plain = "os", wrapped = "os, io", loader = "load" }
  for what, src in pairs(hostile) do
    write(d .. "/lib/act/samples/expected.lua", src)
    with_and_without_landlock(t, "KLAB_TEST_TOKEN=" .. SECRET, "tasks --check " .. q(d .. "/lib"),
      function(code, out, err, label)
        local where = what .. ", " .. label
        t.eq(code, 2, where .. ": " .. out .. err)
        t.eq(select(2, out:gsub("\n", "")), 1, where .. ": one line: " .. out)
        t.match(out, "^" .. d:gsub("%p", "%%%0") .. "/lib/act/samples/expected%.lua: load: refused: it reads "
          .. refused[what]:gsub("%p", "%%%0") .. ", which a task folder's Lua does not have", where)
        for _, s in ipairs { SECRET, SECRET:reverse() } do
          t.ok(not (out .. err):find(s, 1, true), where .. ": the secret appears nowhere")
        end
      end)
    for _, suffix in ipairs { ".exec", ".io" } do
      t.eq(require("klab.fs").type(marker .. suffix), nil, what .. ": no file " .. suffix .. " appears")
    end
  end
  -- A sample's name is a folder beside the list, never a path out of it.
  write(d .. "/lib/act/samples/expected.lua",
    'return { { name = "../../../../../../etc", task = "gelu_tanh_bf16", verdict = "passed" } }\n')
  local code, out, err = t.sh(q(t.klab) .. " tasks --check " .. q(d .. "/lib"))
  t.eq(code, 2, out .. err)
  t.match(out, "samples/expected%.lua: name: entry 1 %(%.%./.-%): a sample is a folder beside the list")
end

-- Task files: task_test.lua (task_files_run_sandboxed, task_search_path).

-- ---- model servers ---------------------------------------------------------------

local function with_server(t, fn) return dofile(t.root .. "/tests/server/model_server.lua").with(t, fn) end

-- Runs a Lua script in a child klab with env (a "K=V ..." prefix); returns code, out, err.
local function child(t, dir, env, body, ...)
  local script = dir .. "/child.lua"
  write(script, body)
  local args = {}
  for i, a in ipairs { ... } do args[i] = q(a) end
  return t.sh(("cd %s && %s %s %s %s"):format(q(t.root), env, q(t.klab), q(script), table.concat(args, " ")))
end

-- A server that echoes the key in a 401, one that quotes it in a reply, and
-- a kernel that includes the environment: the key reaches neither the
-- store, nor the log, nor the next request, while every request carried it.
-- The variable's name is not *_KEY: what protects it is api_key_env.
function T.keys_do_not_leak_through_servers(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local key = "sk-klab-" .. ("%08x%08x"):format(math.random(0, 0x7fffffff), os.time())
    local environ = "Here.\n\n```cuda\n#include \"/proc/self/environ\"\n" .. KERNEL .. "```\n"
    s:script { { status = 401, echo_auth = true }, { reply_auth = true }, { reply = environ } }
    local code, out, err = child(t, dir, "KLAB_SECRET_FOR_TEST=" .. q(key), [[
local experiment = require "klab.experiment"
local dir, base = arg[1], arg[2]
local exp = experiment.new {
  name = "keys", db = dir .. "/k.db", log = dir .. "/k.log", progress = false,
  models = { { name = "oa", provider = "openai", model = "m", base_url = base .. "/v1",
    api_key_env = "KLAB_SECRET_FOR_TEST", retry = { attempts = 1 }, concurrency = 1 } },
  tasks = { "]] .. TASK .. [[" }, replicas = 1, turns = 3,
}
exp:run()
for _, r in ipairs(exp.db:query("SELECT error FROM responses WHERE error IS NOT NULL")) do print("error: " .. r.error) end
]], dir, s.base)
    t.eq(code, 0, err)
    t.match(out, "error: HTTP 401: invalid key: Bearer %[redacted KLAB_SECRET_FOR_TEST%]")
    local log = s:log()
    t.eq(#log, 3, "three requests")
    local want = (select(2, t.sh("printf %s " .. q(key) .. " | sha256sum")) or ""):match("^(%x+)")
    for i, e in ipairs(log) do
      t.eq(e.secrets.authorization, want, "request " .. i .. " carried the key (the test is not vacuous)")
      t.ok(not e.body:find(key, 1, true), "request " .. i .. " does not send the key back")
    end
    t.match(log[3].body, "redacted KLAB_SECRET_FOR_TEST", "the quoted key went back redacted")
    local blobs = { out, err, t.read(dir .. "/k.log") or "" }
    for _, suffix in ipairs { "", "-wal", "-shm" } do blobs[#blobs + 1] = t.read(dir .. "/k.db" .. suffix) or "" end
    for i, b in ipairs(blobs) do t.ok(not b:find(key, 1, true), "the key is absent from output " .. i .. ": " .. b:sub(1, 3000)) end
    local db <close> = assert(require("klab.store").open(dir .. "/k.db", { readonly = true }))
    local turns = db:query("SELECT turn, verdict, reason, feedback, reply FROM turns ORDER BY turn")
    t.eq(#turns, 3)
    t.eq(turns[1] and turns[1].verdict, "request_error")
    t.match(turns[1] and turns[1].reason or "", "%[redacted KLAB_SECRET_FOR_TEST%]")
    t.match(turns[2] and turns[2].reply or "", "Your key is Bearer %[redacted KLAB_SECRET_FOR_TEST%]")
    t.eq(turns[3] and turns[3].verdict, "compile_error")
    t.match(turns[3] and turns[3].reason or "", "#include \"/proc/self/environ\" is not allowed")
  end)
end

-- End to end, without Landlock: a model whose first reply includes a host
-- file through a toolkit header gets, in its second turn's request, the
-- compile log of its own file and the toolkit's only: no line of the host
-- file and no variable of klab's environment.
function T.fed_back_compile_log_holds_no_host_file(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local marker = "klab-marker-" .. ("%08x"):format(math.random(0, 0x7fffffff))
    write(dir .. "/marker.txt", marker .. "\n")
    local up = ("../"):rep(24)
    local hostile = "```cuda\n#define cuda " .. up .. dir:sub(2) .. "/marker.txt >\n#include <thrust/universal_vector.h>\n"
      .. KERNEL .. "```\n"
    local environ = "```cuda\n#define cuda " .. up .. "proc/self/environ >\n#include <thrust/universal_vector.h>\n"
      .. KERNEL .. "```\n"
    s:script { { reply = hostile }, { reply = environ }, { reply = "no code" } }
    local helper = t.klab:match("^(.*)/[^/]+$") .. "/tests/helper_nolandlock"
    local script = dir .. "/child.lua"
    write(script, [[
local experiment = require "klab.experiment"
local exp = experiment.new {
  name = "fed", db = arg[1] .. "/f.db", progress = false,
  models = { { name = "oa", provider = "openai", model = "m", base_url = arg[2] .. "/v1", retry = { attempts = 1 } } },
  tasks = { "]] .. TASK .. [[" }, replicas = 1, turns = 3,
}
exp:run()
]])
    local code, _, err = t.sh(("cd %s && MY_SECRET_PASSWORD=%s %s %s %s %s %s"):format(q(t.root), SECRET, q(helper),
      q(t.klab), q(script), q(dir), q(s.base)))
    t.eq(code, 0, err)
    local log = s:log()
    t.eq(#log, 3, "three requests: each compile error was fed back")
    for i = 2, 3 do
      local body = log[i].body
      t.match(body, "universal_vector", "request " .. i .. " quotes the compile log")
      t.ok(not body:find(marker, 1, true), "request " .. i .. ": no line of the host file")
      t.ok(not body:find(SECRET, 1, true) and not body:find("HOME=", 1, true), "request " .. i .. ": no variable")
    end
  end)
end

-- A key over plain http:// to another machine is refused, with the reason,
-- unless the model says allow_insecure_http; this machine is fine.
function T.key_refused_over_plain_http(t)
  local model = require "klab.experiment.model"
  local http = require "klab.http"
  t.raises(function()
    model.new { provider = "openai", model = "m", base_url = "http://models.example/v1", api_key_env = "SOME_API_KEY" }
  end, "plain http:// to another machine and api_key_env is set: the key would cross the network unencrypted")
  t.ok(model.new { provider = "openai", model = "m", base_url = "http://models.example/v1", api_key_env = "SOME_API_KEY",
    allow_insecure_http = true })
  t.ok(model.new { provider = "openai", model = "m", base_url = "http://127.0.0.1:8000/v1", api_key_env = "SOME_API_KEY" })
  t.ok(model.new { provider = "openai", model = "m", base_url = "http://models.example/v1" }, "no key, no refusal")
  for url, want in pairs {
    ["http://localhost:8000/v1"] = true, ["http://127.0.0.1/"] = true, ["http://127.1.2.3:9"] = true,
    ["http://[::1]:8000/x"] = true, ["http://127.0.0.1@evil.example/"] = false, ["http://127.0.0.1.evil.example/"] = false,
    ["http://localhost.evil.example/"] = false, ["http://10.0.0.1/"] = false, ["http://0127.0.0.1:8000/v1"] = false,
  } do
    t.eq(http.is_loopback(url), want, url)
  end
  -- The HTTP layer refuses on its own too, before connecting.
  local c = http.client()
  if not c then return t.skip("libcurl is not installed") end
  local id, err, code = c:submit { url = "http://10.255.255.1/v1", headers = { Authorization = { env = "PATH", prefix = "Bearer " } },
    body = "{}" }
  t.eq(id, nil)
  t.eq(code, "EREJECT")
  t.match(err, "refusing to send a key over plain http://")
  c:free()
end

-- No field of a reply aborts a sweep: odd usage figures are stored as text
-- with a warning; a reply over the size limit is an error with its size,
-- and none of its body is stored.
function T.odd_replies_do_not_abort(t)
  local model = require "klab.experiment.model"
  local store = require "klab.store"
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/m.db"))
    local lines = {}
    local c <close> = model.caller { db = db, mode = "live", log = function(l) lines[#lines + 1] = l end }
    local m = model.new { provider = "openai", model = "m", base_url = s.base .. "/v1", retry = { attempts = 1 },
      max_reply_bytes = 100000 }
    local MSG = { { role = "user", content = "hi" } }
    for i, raw in ipairs { '{"prompt_tokens": 12.5, "completion_tokens": 1e20}', '{"prompt_tokens": NaN, "completion_tokens": "7"}',
      '{"prompt_tokens": -3, "completion_tokens": Infinity}', '[1, 2]' } do
      s:script { { usage_raw = raw } }
      local o = c:call(m, MSG, { key = { sample = i } })
      t.ok(o.ok, "reply " .. i .. " is a reply: " .. tostring(o.error))
      t.eq(o.usage.input, nil)
      t.eq(o.usage.output, nil)
      local row = db:cache_get(o.hash)
      t.ok(row and row.input_tokens == nil and row.output_tokens == nil, "counts stored as NULL")
      local resp = cjson.decode(row.response)
      if i == 1 then
        t.eq(resp.usage_text.input, "12.5")
        t.eq(resp.usage_text.output, "1e+20")
      elseif i == 2 then
        t.eq(resp.usage_text.input, "nan")
        t.eq(resp.usage_text.output, "7")
      end
    end
    t.match(table.concat(lines, "\n"), "warning: usage input = 12%.5 is not a token count")
    s:script { { pad = 200000 } }
    local o = c:call(m, MSG, { key = { sample = 9 } })
    t.eq(o.ok, false)
    t.match(o.error, "response body of %d+ bytes %(Content%-Length%) is larger than the limit of 100000 bytes")
    local row = db:cache_get(o.hash)
    t.ok(row and #row.response < 4096, "the body is not stored")
  end)
end

-- ---- interruptions and concurrent runs --------------------------------------------------------

-- The sweep a child klab runs in the tests below: four requests at once.
local SWEEP = [[
local experiment = require "klab.experiment"
local dir, base, name = arg[1], arg[2], arg[3]
local exp = experiment.new {
  name = name, db = dir .. "/s.db", log = dir .. "/s.log", progress = false, drain_s = 20,
  models = { { name = "oa", provider = "openai", model = "m", base_url = base .. "/v1", retry = { attempts = 1 },
    concurrency = 4, timeout = 60 } },
  tasks = { "]] .. TASK .. [[" }, replicas = 4, turns = 1,
}
exp:run()
print("finished")
]]

-- Starts the sweep in a child klab; returns the process once the server
-- has all four requests in flight.
local function start_sweep(t, s, dir, name)
  local spawn, sys = require "klab.spawn", require "klab.sys"
  write(dir .. "/sweep.lua", SWEEP)
  local before = #s:log()
  local p = assert(spawn.start { argv = { t.klab, dir .. "/sweep.lua", dir, s.base, name }, cwd = t.root })
  local deadline = sys.now() + 30
  while #s:log() < before + 4 and sys.now() < deadline do sys.sleep(0.05) end
  t.eq(#s:log(), before + 4, "four requests in flight")
  return p
end

-- The same sweep in the foreground: code, out, err.
local function run_sweep(t, s, dir, name)
  return t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " " .. q(dir .. "/sweep.lua") .. " " .. q(dir) .. " " ..
    q(s.base) .. " " .. name)
end

local function replies_stored(dir)
  local db <close> = assert(require("klab.store").open(dir .. "/s.db", { readonly = true }))
  return db:first("SELECT count(*) AS n FROM responses WHERE error IS NULL").n
end

-- SIGINT during a sweep: the replies in flight are waited for and stored,
-- klab exits non-zero with a one-line reason, and the next run buys none
-- of them again.
function T.sigint_drains_replies_in_flight(t)
  local sys = require "klab.sys"
  with_server(t, function(s)
    local dir = t.tmpdir()
    s:script { { delay = 1.5 }, { delay = 1.5 }, { delay = 1.5 }, { delay = 1.5 } }
    local p = start_sweep(t, s, dir, "sig")
    t.ok(sys.kill(p:pid(), "INT"))
    local r = p:wait(60)
    t.eq(r.status, "exited")
    t.eq(r.code, 130, "128 + SIGINT, as the shell reports a signal")
    t.match(r.stderr, "^experiment sig: stopped by SIGINT; 4 of 4 replies in flight were waited for and stored")
    t.ok(not r.stderr:find("traceback"), r.stderr)
    t.ok(not r.stdout:find("finished"))
    t.eq(replies_stored(dir), 4, "every paid reply is in the store")
    local sent = #s:log()
    local code, _, err = run_sweep(t, s, dir, "sig")
    t.eq(code, 0, err)
    t.eq(#s:log(), sent, "the rerun sent nothing again")
  end)
end

-- A second signal ends the process at once, drain or not; SIGTERM is a
-- signal like SIGINT.
function T.second_signal_exits_at_once(t)
  local sys = require "klab.sys"
  with_server(t, function(s)
    local dir = t.tmpdir()
    s:script { { delay = 20 }, { delay = 20 }, { delay = 20 }, { delay = 20 } }
    local p = start_sweep(t, s, dir, "twice")
    t.ok(sys.kill(p:pid(), "TERM"))
    sys.sleep(0.3)
    local t0 = sys.now()
    t.ok(sys.kill(p:pid(), "INT"))
    local r = p:wait(30)
    t.eq(r.status, "signaled")
    t.eq(r.signal, "INT")
    t.ok(sys.now() - t0 < 5, "ended at once")
  end)
end

-- Two runs of one experiment on one store: the second says the first is
-- running, with its pid, and exits (no traceback, no constraint error).
-- The first killed with SIGKILL leaves no lock behind.
function T.second_run_of_an_experiment_stops(t)
  local sys = require "klab.sys"
  with_server(t, function(s)
    local dir = t.tmpdir()
    s:script { { delay = 20 }, { delay = 20 }, { delay = 20 }, { delay = 20 } }
    local p = start_sweep(t, s, dir, "once")
    local code, out, err = run_sweep(t, s, dir, "once")
    t.eq(code, 1)
    t.match(err, "^experiment once is running elsewhere on this store %(.-s%.db%): pid " .. p:pid() .. " on ")
    t.ok(not err:find("traceback") and not err:find("UNIQUE"), err)
    t.eq(out, "")
    sys.kill(p:pid(), "KILL")
    p:wait(10)
    code, out, err = run_sweep(t, s, dir, "once")
    t.eq(code, 0, err)
    t.match(out, "finished")
  end)
end

-- scripts/klab holds no shell command: no io.popen, no os.execute.
function T.no_shell_in_the_library(t)
  local found = {}
  local p = assert(io.popen("find " .. q(t.root .. "/scripts/klab") .. " -name '*.lua'"))
  for path in p:lines() do
    local src = t.read(path)
    for _, pat in ipairs { "io%.popen", "os%.execute", "os%.tmpname" } do
      if src:find(pat) then found[#found + 1] = path:sub(#t.root + 2) .. " uses " .. pat:gsub("%%", "") end
    end
  end
  p:close()
  t.eq(#found, 0, table.concat(found, "; "))
end

-- A task name is a name: a path given as TASK is refused before anything
-- reads it (a task file elsewhere is found through --tasks).
function T.a_task_name_is_never_a_path(t)
  for _, bad in ipairs { "../../etc/passwd", "/etc/passwd", "tasks/gemm/bf16.lua", "gemm_bf16/../x", "a/b/c" } do
    local code, _, err = t.sh(("'%s' eval %s tasks/gemm/samples/naive"):format(t.klab,
      require("klab.command").shell_quote(bad)))
    t.eq(code, 2, bad)
    t.match(err, "is not a task name", bad)
    t.ok(not err:find("root:", 1, true), "nothing of the file is shown")
  end
  local eval = require "klab.eval"
  local r, err = eval.evaluate("../../etc/passwd", "tasks/gemm/samples/naive")
  t.eq(r, nil)
  t.match(err, "is not a task name")
  t.ok(require("klab.task").is_name("gemm_bf16/8192x7168x5120"))
  t.ok(require("klab.task").is_name("softmax_bf16"))
end

-- security_io_test.lua runs its commands the same two ways.
return setmetatable(T, { __index = { with_and_without_landlock = with_and_without_landlock } })
