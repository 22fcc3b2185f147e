-- tests/lua/run.lua: klab's Lua test runner, run by klab itself.
--
--   klab tests/lua/run.lua [FILE...]      (default: every tests/lua/*_test.lua)
--
-- A test file returns a table of functions name -> function(t). A test passes
-- when it raises nothing, made at least one assertion (t.ok, t.eq, t.near,
-- t.match, t.raises) and every assertion held; t.skip(reason) skips it,
-- t.need_gpu() skips it with the one reason every GPU test shares. Skips are
-- reported once per reason: "skip N tests: reason", then a line "  tests:
-- file name, ..." naming them. The last line is "lua: N passed, N failed,
-- N skipped".

local sys_ok, sys = pcall(require, "klab.sys")

local function here()
  local src = debug.getinfo(1, "S").source:sub(2)
  return src:match("^(.*)/[^/]*$") or "."
end

local function list_tests(dir)
  local files = {}
  local p = io.popen('ls "' .. dir .. '"/*_test.lua 2>/dev/null')
  for line in p:lines() do files[#files + 1] = line end
  p:close()
  table.sort(files)
  return files
end

local function self_exe()
  local f = io.open("/proc/self/exe")
  if f then f:close() end
  local p = io.popen("readlink -f /proc/" .. (sys_ok and sys.getpid() or "self") .. "/exe")
  local exe = p:read("l")
  p:close()
  return exe
end

local SKIP = {}

-- The folders t.tmpdir made for the running test.
local made_dirs = {}
local function remove_made_dirs(keep)
  for _, d in ipairs(made_dirs) do
    if keep then
      io.stderr:write("    kept ", d, "\n")
    elseif d:match("^/.+/tmp%.[%w]+$") and not d:find("'", 1, true) then
      os.execute("rm -rf -- '" .. d .. "'")
    end
  end
  made_dirs = {}
end

-- The repository root, absolute: tests run from any working directory.
local ROOT = (function()
  local dir = here():gsub("/?tests/lua$", "")
  if dir == "" then dir = "." end
  local p = io.popen('cd "' .. dir .. '" && pwd')
  local abs = p:read("l")
  p:close()
  return abs or dir
end)()

local function new_t(name, failures)
  local t = { klab = self_exe(), name = name, root = ROOT, assertions = 0 }
  local function fail(msg, level)
    local info = debug.getinfo(level or 3, "Sl")
    failures[#failures + 1] = string.format("%s:%d: %s", info.short_src, info.currentline or 0, msg)
  end
  function t.ok(v, msg)
    t.assertions = t.assertions + 1
    if not v then fail("expected a true value" .. (msg and (": " .. msg) or "")) end
    return v
  end
  function t.eq(got, want, msg)
    t.assertions = t.assertions + 1
    if got ~= want then
      fail(string.format("expected %s, got %s%s", tostring(want), tostring(got), msg and (": " .. msg) or ""))
    end
    return got == want
  end
  function t.near(got, want, tol, msg)
    t.assertions = t.assertions + 1
    local good = type(got) == "number" and math.abs(got - want) <= tol
    if not good then
      fail(string.format("expected %s +- %s, got %s%s", tostring(want), tostring(tol), tostring(got),
        msg and (": " .. msg) or ""))
    end
    return good
  end
  function t.match(s, pattern, msg)
    t.assertions = t.assertions + 1
    local good = type(s) == "string" and s:find(pattern) ~= nil
    if not good then
      fail(string.format("%q does not match %q%s", tostring(s), pattern, msg and (": " .. msg) or ""))
    end
    return good
  end
  function t.raises(fn, pattern, msg)
    t.assertions = t.assertions + 1
    local ok, err = pcall(fn)
    if ok then
      fail("expected an error" .. (msg and (": " .. msg) or ""))
      return false
    end
    if pattern and not tostring(err):find(pattern) then
      fail(string.format("error %q does not match %q", tostring(err), pattern))
      return false
    end
    return true
  end
  function t.skip(reason) error(setmetatable({ reason = reason }, SKIP), 0) end
  function t.need_gpu()
    local ok, why = require("klab.gpu").available()
    if not ok then t.skip("no GPU: " .. tostring(why)) end
  end
  -- A new private folder; it is removed when the test ends, unless the
  -- test failed (then its path is printed with the failure).
  function t.tmpdir()
    local p = io.popen("mktemp -d")
    local d = p:read("l")
    p:close()
    made_dirs[#made_dirs + 1] = d
    return d
  end
  -- A file's contents, or nil when it cannot be read.
  function t.read(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("a")
    f:close()
    return s
  end
  -- Runs a shell command; returns exit code, stdout, stderr.
  function t.sh(cmd)
    local errf = os.tmpname()
    local p = io.popen(cmd .. " 2>" .. errf)
    local out = p:read("a")
    local _, _, code = p:close()
    local f = io.open(errf)
    local err = f and f:read("a") or ""
    if f then f:close() end
    os.remove(errf)
    return code, out, err
  end
  return t
end

local files = { ... }
if #files == 0 then files = list_tests(here()) end

-- Verdict reasons that show klab's internals (klab.eval.verdict writes
-- them to KLAB_REASON_AUDIT, which tests/run.sh sets for every suite): the
-- test during which one appeared fails, whichever process made it.
local AUDIT = os.getenv("KLAB_REASON_AUDIT")
if AUDIT == "" then AUDIT = nil end
local function audit_size()
  local f = AUDIT and io.open(AUDIT, "rb")
  if not f then return 0 end
  local n = f:seek("end")
  f:close()
  return n
end
local function audit_since(at)
  local f = io.open(AUDIT, "rb")
  if not f then return nil end
  f:seek("set", at)
  local s = f:read("a")
  f:close()
  return s
end

local passed, failed, skipped = 0, 0, 0
local skips, skip_order = {}, {}   -- reason -> {"file name", ...}
for _, file in ipairs(files) do
  local chunk, err = loadfile(file)
  local tests
  if chunk then
    local ok, res = xpcall(chunk, debug.traceback)
    if ok and type(res) == "table" then tests = res else err = ok and "did not return a table" or res end
  end
  if not tests then
    failed = failed + 1
    io.stderr:write("FAIL ", file, ": ", tostring(err), "\n")
  else
    local names = {}
    for name in pairs(tests) do names[#names + 1] = name end
    table.sort(names)
    -- KLAB_TEST_TRACE=1: each test's name on stderr as it starts (to find one that hangs).
    local trace = os.getenv("KLAB_TEST_TRACE") == "1"
    for _, name in ipairs(names) do
      if trace then io.stderr:write("start ", file, " ", name, "\n") end
      local failures = {}
      local t = new_t(name, failures)
      local audit_at = AUDIT and audit_size()
      local ok, e = xpcall(tests[name], function(m)
        if getmetatable(m) == SKIP then return m end
        return debug.traceback(tostring(m), 2)
      end, t)
      if audit_at and audit_size() > audit_at then
        for l in audit_since(audit_at):gmatch("[^\n]+") do
          failures[#failures + 1] = "a verdict reason shows klab's internals: " .. l
        end
      end
      if not ok and getmetatable(e) == SKIP then
        skipped = skipped + 1
        local reason = tostring(e.reason)
        if not skips[reason] then skips[reason] = {} skip_order[#skip_order + 1] = reason end
        table.insert(skips[reason], (file:match("([^/]+)$") or file) .. " " .. name)
      elseif ok and #failures == 0 and t.assertions == 0 then
        failed = failed + 1
        io.stderr:write("FAIL ", file, " ", name, "\n    the test made no assertion\n")
      elseif not ok or #failures > 0 then
        failed = failed + 1
        io.stderr:write("FAIL ", file, " ", name, "\n")
        for _, f in ipairs(failures) do io.stderr:write("    ", f, "\n") end
        if not ok then io.stderr:write("    ", tostring(e), "\n") end
      else
        passed = passed + 1
      end
      remove_made_dirs(not ok and getmetatable(e) ~= SKIP or #failures > 0)
    end
  end
end
for _, reason in ipairs(skip_order) do
  local names = skips[reason]
  io.stderr:write(("skip %d test%s: %s\n"):format(#names, #names == 1 and "" or "s", reason))
  io.stderr:write("  tests: ", table.concat(names, ", "), "\n")
end
print(string.format("lua: %d passed, %d failed, %d skipped", passed, failed, skipped))
os.exit(failed == 0 and 0 or 1)
