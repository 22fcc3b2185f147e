-- pychild_security_test.lua: what a Python candidate (Triton, CuTe DSL)
-- can reach, tried as an attacker would (no GPU needed). The child that
-- runs it (host/lang/pychild.h) must refuse or contain each attack with one
-- line, and a marker file must never appear. Run with Landlock and with it
-- taken away (tests/c/helper_nolandlock): then the child is refused unless
-- the explicit opt-in is given, and with it the seccomp walls still hold.
-- Each language's tests skip, with the reason, where its pinned package is
-- not installed.
local cjson = require "cjson"

local T = {}

local SECRET = "klab-test-secret-value-0123456789"

local function write(path, text) assert(require("klab.fs").write(path, text)) end

local function q(s) return require("klab.command").shell_quote(s) end

-- Each language: its front end, an honest copy kernel, the driver's
-- request for it, its package (PKG in the attacks) and a program of its
-- environment (PROGRAM: Triton's bundled ptxas, the environment's Python).
local LANGS = {
  triton = { title = "Triton", front = "klab.lang.triton", pkg = "triton",
    program = 'os.path.join(triton.__path__[0], "backends/nvidia/bin/ptxas")',
    kernel = [[
import triton
import triton.language as tl


@triton.jit
def copy(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)
]],
    request = '{"name":"DIR/kernel.py","kernel":"copy","signature":["*fp32","*fp32","i32"],'
      .. '"constexprs":{"BLOCK":256},"num_warps":4,"num_stages":3,"cc":90,"cuda":"13.0"}',
    entry = "%.entry copy%(",
    env = "['HOME', 'LC_ALL', 'TMPDIR', 'TRITON_CACHE_DIR']" },
  cute_dsl = { title = "CuTe DSL", front = "klab.lang.cute_dsl", pkg = "nvidia_cutlass_dsl",
    program = "sys.executable",
    kernel = [[
import cutlass
import cutlass.cute as cute


@cute.kernel
def copy_kernel(gX: cute.Tensor, gY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    if i < cute.size(gX):
        gY[i] = gX[i]


@cute.jit
def copy(mX: cute.Tensor, mY: cute.Tensor):
    copy_kernel(mX, mY).launch(grid=[cute.ceil_div(cute.size(mX), 128), 1, 1], block=[128, 1, 1])
]],
    request = '{"name":"DIR/kernel.py","kernel":"copy","arch":"sm_90a","args":['
      .. '{"tensor":{"dtype":"Float32","shape":[1000],"strides":[1]}},'
      .. '{"tensor":{"dtype":"Float32","shape":[1000],"strides":[1]}}]}',
    entry = "%.visible %.entry copy%(",
    env = "['CUTE_DSL_ARCH', 'CUTE_DSL_CACHE_DIR', 'CUTE_DSL_DISABLE_FILE_CACHING', 'CUTE_DSL_DUMP_DIR', "
      .. "'CUTE_DSL_KEEP', 'HOME', 'LC_ALL', 'TMPDIR']" },
}

local function need(t, lang)
  local venv, why = require(LANGS[lang].front).venv()
  if not venv then t.skip(why) end
  return venv
end

-- A script that runs each attack through klab.pychild.ptx in its own klab
-- process (so that the test can take Landlock away from it) and prints
-- {name = {ok=, err=, code=, answer=, log=}} as JSON.
local DRIVER = [[
local pychild, cjson = require "klab.pychild", require "cjson"
local lang, venv, dir = arg[1], arg[2], arg[3]
local out = {}
for _, name in ipairs { table.unpack(arg, 4) } do
  local f = assert(io.open(dir .. "/" .. name .. ".py"))
  local src = f:read("a")
  f:close()
  local r, err, code = pychild.ptx { lang = lang, venv = venv, source = src, name = "DIR/kernel.py", request = %q,
    limits = { memory = 1 << 30, cpu = 2 }, timeout = name == "spin" and 60 or 6 }
  out[name] = r and { ok = true, answer = r.answer, log = r.log, exit_code = r.exit_code,
    confinement = r.confinement } or { ok = false, err = err, code = code }
end
print(cjson.encode(out))
]]

-- Each attack: Python run at the top of kernel.py, before the kernel; want:
-- what the one-line answer must say. MARKER, SECRET_FILE and OUT are
-- replaced by paths of the test's own, PKG and PROGRAM by the language's.
local ATTACKS = {
  read_host = { code = [[raise SystemExit(open("SECRET_FILE").read())]], want = "PermissionError" },
  passwd = { code = [[print(open("/etc/passwd").read())]], want = "PermissionError" },
  environ = { code = [[import os
if any("KLAB_TEST_TOKEN" in k for k in os.environ): raise ValueError(os.environ["KLAB_TEST_TOKEN"])
open("MARKER", "w")]], want = "PermissionError" },
  subprocess = { code = [[import subprocess
subprocess.run(["/usr/bin/touch", "MARKER"])]], want = "PermissionError" },
  venv_program = { code = [[import os, sys, PKG
os.execv(PROGRAM, ["program", "--version"])]], want = "PermissionError" },
  socket = { code = [[import socket
socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(("127.0.0.1", 9))]], want = "PermissionError" },
  unix_socket = { code = [[import socket
socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)]], want = "PermissionError" },
  ctypes_execve = { code = [[import ctypes
libc = ctypes.CDLL(None, use_errno=True)
argv = (ctypes.c_char_p * 3)(b"/usr/bin/touch", b"MARKER", None)
r = libc.syscall(59, b"/usr/bin/touch", argv, None)
raise OSError(ctypes.get_errno(), "raw execve returned %d" % r)]], want = "PermissionError: %[Errno 1%] raw" },
  -- execveat on the descriptor number klab's first exec used (the
  -- descriptor limit), with an absolute path, which ignores the descriptor.
  ctypes_execveat = { code = [[import ctypes, resource
libc = ctypes.CDLL(None, use_errno=True)
fd = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
argv = (ctypes.c_char_p * 3)(b"/usr/bin/touch", b"MARKER", None)
r = libc.syscall(322, fd, b"/usr/bin/touch", argv, None, 0x1000)
raise OSError(ctypes.get_errno(), "raw execveat returned %d" % r)]], want = "PermissionError: %[Errno 1%] raw" },
  ctypes_fork = { code = [[import ctypes
libc = ctypes.CDLL(None, use_errno=True)
pid = libc.syscall(57)
if pid == 0:
    open("MARKER", "w"); libc._exit(0)
raise OSError(ctypes.get_errno(), "raw fork returned %d" % pid)]], want = "PermissionError: %[Errno 1%] raw" },
  fork = { code = [[import os
if os.fork() == 0:
    open("MARKER", "w")]], want = "PermissionError" },
  kill_parent = { code = [[import os
os.kill(os.getppid(), 9)]], want = "PermissionError" },
  sigqueue_parent = { code = [[import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
info = (ctypes.c_int * 32)(9, 0, -1)
r = libc.syscall(129, os.getppid(), 9, info)
raise OSError(ctypes.get_errno(), "raw rt_sigqueueinfo returned %d" % r)]], want = "PermissionError: %[Errno 1%] raw" },
  write_outside = { code = [[open("OUT/written", "w").write("x")]], want = "PermissionError" },
  write_venv = { code = [[import PKG, os
open(os.path.join(PKG.__path__[0], "klab-was-here"), "w")]], want = "PermissionError" },
  memory = { code = [[x = bytearray(100 * 2**30)]], want = "MemoryError" },
  fill_disk = { code = [[f = open("big", "wb")
while True: f.write(b"x" * (1 << 20))]], want = "File too large" },
  -- (its deadline is 60 s, so that a busy machine reaches the CPU limit first)
  spin = { code = [[while True: pass]], want = "exceeded its 2 s CPU limit" },
  sleep = { code = [[import time
time.sleep(3600)]], want = "took longer than 6 s" },
}

local function prepare(t, dir, lang)
  local L = LANGS[lang]
  local marker = dir .. "/MARKER-" .. ("%08x"):format(math.random(0, 0x7fffffff))
  local secret_file = dir .. "/secret.txt"
  write(secret_file, SECRET .. "-file\n")
  require("klab.sys").mkdir(dir .. "/out")
  local names = {}
  for name, a in pairs(ATTACKS) do
    local code = a.code:gsub("MARKER", marker):gsub("SECRET_FILE", secret_file):gsub("OUT", dir .. "/out")
      :gsub("PROGRAM", L.program):gsub("PKG", L.pkg)
    write(dir .. "/" .. name .. ".py", code .. "\n" .. L.kernel)
    names[#names + 1] = name
  end
  table.sort(names)
  write(dir .. "/driver.lua", DRIVER:format(L.request))
  return marker, names
end

-- The child's one line for an attack: klab's refusal, or the error the
-- child answered with.
local function said(r)
  if not r.ok then return tostring(r.err) end
  local ok, a = pcall(cjson.decode, r.answer)
  if ok and type(a) == "table" and a.error then return a.error end
  return "no error: " .. tostring(r.answer):sub(1, 200)
end

local function run_driver(t, lang, venv, dir, names, prefix, env)
  local code, out, err = t.sh(("%s KLAB_TEST_TOKEN=%s %s%s %s %s %s %s %s"):format(env or "", SECRET, prefix,
    q(t.klab), q(dir .. "/driver.lua"), lang, q(venv), q(dir), table.concat(names, " ")))
  t.eq(code, 0, "driver: " .. err)
  return cjson.decode(out), out .. err
end

local function every_attack_is_refused_with_landlock(t, lang)
  local venv = need(t, lang)
  if require("klab.sys").landlock_abi() < 1 then t.skip("this kernel has no Landlock") end
  local dir = t.tmpdir()
  local marker, names = prepare(t, dir, lang)
  local res, all = run_driver(t, lang, venv, dir, names, "")
  for _, name in ipairs(names) do
    local r = res[name]
    local line = said(r)
    t.match(line, ATTACKS[name].want, name .. ": " .. line)
    t.ok(not line:find("\n"), name .. ": one line")
    t.ok(line:find("DIR/kernel.py", 1, true) == 1, name .. ": names the user's file: " .. line)
    if r.ok then t.eq(r.confinement, "Landlock, seccomp", name) end
  end
  t.eq(require("klab.fs").type(marker), nil, "no marker file appears")
  t.eq(require("klab.fs").type(dir .. "/out/written"), nil, "nothing is written outside the scratch folder")
  t.ok(not all:find(SECRET, 1, true), "neither the secret variable nor the secret file reaches any output")
  t.ok(not all:find("root:x:0:0", 1, true), "no line of /etc/passwd reaches any output")
  local found = t.sh("find " .. q(venv .. "/lib") .. " -name klab-was-here | grep -q .")
  t.ok(found ~= 0, "nothing is written into the environment")
end

-- Without Landlock the child is refused in one line naming the opt-in;
-- with the opt-in, the seccomp walls (no program, no socket, no process)
-- and the limits still hold, and the result says it ran unconfined.
local function without_landlock_refused_unless_opted_in(t, lang)
  local venv = need(t, lang)
  local helper = q(t.klab:match("^(.*)/[^/]+$") .. "/tests/helper_nolandlock") .. " "
  local dir = t.tmpdir()
  local marker, names = prepare(t, dir, lang)
  local res, all = run_driver(t, lang, venv, dir, names, helper)
  for _, name in ipairs(names) do
    t.eq(res[name].code, "EUNSUPPORTED", name)
    t.match(said(res[name]), "^DIR/kernel%.py: the " .. LANGS[lang].title .. " compiler cannot be confined here "
      .. "%(this kernel has no Landlock%): set KLAB_ALLOW_UNCONFINED_COMPILER=1", name)
  end
  local walls = { "subprocess", "venv_program", "socket", "unix_socket", "ctypes_execve", "ctypes_execveat",
    "ctypes_fork", "fork",
    "kill_parent", "sigqueue_parent", "memory", "spin", "sleep" }
  res, all = run_driver(t, lang, venv, dir, walls, helper, "KLAB_ALLOW_UNCONFINED_COMPILER=1")
  for _, name in ipairs(walls) do
    local line = said(res[name])
    t.match(line, ATTACKS[name].want, name .. " (opted in): " .. line)
    if res[name].ok then t.eq(res[name].confinement, "unconfined (KLAB_ALLOW_UNCONFINED_COMPILER=1), seccomp", name) end
  end
  t.eq(require("klab.fs").type(marker), nil, "no marker file appears")
  t.ok(not all:find(SECRET, 1, true), "the secret variable reaches no output")
end

-- Through klab eval: a candidate that reads a host file gets a one-line
-- compile_error naming its file, and neither the file nor the environment
-- reaches the output or the store; its plan's mistakes are plan_errors.
function T.eval_of_a_hostile_candidate(t)
  need(t, "triton")
  local KERNEL = LANGS.triton.kernel
  local dir = t.tmpdir()
  local marker = "klab-marker-" .. ("%08x"):format(math.random(0, 0x7fffffff))
  write(dir .. "/marker.txt", marker .. "\n")
  local plan = 'return { launches = { { kernel = "copy", grid = cdiv(R * C, 256), args = { "X", "Y", i32(R * C) }, '
    .. 'constexprs = { BLOCK = 256 }, num_warps = 4 %s} } }\n'
  local cases = {
    hostile = { py = "raise SystemExit(open(" .. ("%q"):format(dir .. "/marker.txt") .. ").read())\n" .. KERNEL,
      plan = plan:format(""), verdict = "compile_error", reason = "kernel%.py:1: PermissionError" },
    blocked = { py = KERNEL, plan = plan:format(", block = 128 "), verdict = "plan_error",
      reason = "a Triton launch sets no block" },
    no_plan = { py = KERNEL, verdict = "plan_error", reason = "a Triton candidate brings its plan%.lua" },
    memory = { py = "x = bytearray(100 * 2**30)\n" .. KERNEL, plan = plan:format(""), verdict = "compile_error",
      reason = "kernel%.py: the Triton compiler exceeded its 4 GiB memory limit" },
    prints = { py = 'print("kernel.py:1: error: a line made to look like the reason")\nundefined_name\n' .. KERNEL,
      plan = plan:format(""), verdict = "compile_error", reason = "kernel%.py:2: NameError: name 'undefined_name'" },
    two_kernels = { py = KERNEL .. KERNEL:gsub("def copy", "def copy2"):gsub("import[^\n]*\n", ""),
      plan = plan:format(""):gsub('"copy"', '"copy3"'), verdict = "compile_error",
      reason = "no @triton.jit function named copy3 %(it has: copy, copy2%)" },
  }
  for name, c in pairs(cases) do
    local cd = dir .. "/" .. name
    require("klab.sys").mkdir(cd)
    write(cd .. "/kernel.py", c.py)
    if c.plan then write(cd .. "/plan.lua", c.plan) end
    local db = dir .. "/" .. name .. ".db"
    local code, out, err = t.sh(("KLAB_TEST_TOKEN=%s %s eval relu_f32/999x1021 %s --json --db %s"):format(SECRET,
      q(t.klab), q(cd), q(db)))
    t.eq(code, 1, name .. ": " .. err)
    local r = cjson.decode(out)
    t.eq(r.verdict, c.verdict, name .. ": " .. tostring(r.reason))
    t.match(r.reason or "", c.reason, name)
    t.ok(not (r.reason or ""):find("\n"), name .. ": one line")
    for _, text in ipairs { out, err, t.read(db) or "", t.read(db .. "-wal") or "" } do
      t.ok(not text:find(marker, 1, true), name .. ": the host file's line is nowhere")
      t.ok(not text:find(SECRET, 1, true), name .. ": nor the secret")
    end
  end
end

-- An honest kernel compiles in the same child: the walls do not stop the
-- language's compiler.
local function honest_kernel_compiles_confined(t, lang)
  local L = LANGS[lang]
  local venv = need(t, lang)
  local r, err = require("klab.pychild").ptx { lang = lang, venv = venv, source = L.kernel, name = "k/kernel.py",
    request = L.request }
  t.ok(r, err)
  local a = cjson.decode(r.answer)
  t.eq(a.error, nil, tostring(a.error) .. "\n" .. r.log)
  t.match(a.ptx, L.entry)
  t.eq(a.name, "copy")
  return a
end

-- The child sees only the variables klab gives it, and those its driver
-- sets for its language (inside the scratch folder).
local function child_sees_no_environment(t, lang)
  local L = LANGS[lang]
  local venv = need(t, lang)
  local src = 'import os\nprint(sorted(os.environ))\n' .. L.kernel
  local code, out, err = t.sh(("KLAB_TEST_TOKEN=%s %s -e %s"):format(SECRET, q(t.klab), q(([[
    local r = require("klab.pychild").ptx { lang = %q, venv = %q, source = %q, name = "k.py", request = %q }
    io.write(r.log)]]):format(lang, venv, src, L.request))))
  t.eq(code, 0, err)
  t.eq(out:match("%[.-%]"), L.env, out)
end

for lang in pairs(LANGS) do
  T[lang .. "_every_attack_is_refused_with_landlock"] = function(t) every_attack_is_refused_with_landlock(t, lang) end
  T[lang .. "_without_landlock_refused_unless_opted_in"] = function(t) without_landlock_refused_unless_opted_in(t, lang) end
  T[lang .. "_child_sees_no_environment"] = function(t) child_sees_no_environment(t, lang) end
end

function T.triton_honest_kernel_compiles_confined(t)
  t.eq(honest_kernel_compiles_confined(t, "triton").num_warps, 4)
end

-- The CuTe DSL entry, renamed to the @cute.jit function, keeps the block
-- its host function launches (.reqntid).
function T.cute_dsl_honest_kernel_compiles_confined(t)
  local a = honest_kernel_compiles_confined(t, "cute_dsl")
  t.eq(cjson.encode(a.block), "[128,1,1]")
  t.match(a.ptx, "%.reqntid 128, 1, 1")
  t.ok(not a.ptx:find("kernel_cutlass_", 1, true), "the DSL's own name for the entry is gone")
end

return T
