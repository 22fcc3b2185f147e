-- klab compile: compile one kernel file for one target, without a GPU.
--
--   klab compile FILE.ptx|FILE.cu --arch sm_90a [--json] [-o OUT.cubin]
--                [--no-cache] [--lang ptx|cuda] [--no-lineinfo]
--
-- Exit status (klab.command.EXIT): 0 compiled; 1 the compiler or klab
-- refused the kernel (the log is printed); 2 bad command line, unknown
-- target, missing or unreadable file.
local M = {}

M.summary = "compile a PTX or CUDA file for a target; resources, census, hash"

local USAGE = [[
usage: klab compile FILE.ptx|FILE.cu --arch sm_XY [options]

Compiles one kernel file whole-program for one exact target, with ptxas
(PTX) or NVRTC (CUDA C++ device code), without a GPU. Prints each kernel's
registers, spills, static shared memory and stack frame, a census of PTX
instruction families, the content hash and the compile time.

Options:
  --arch sm_XY     target, for example sm_90a, sm_100a, sm_120 (required)
  --lang ptx|cuda  source language (default: from the file name or content)
  -o, --output F   write the cubin to F
  --json           print one JSON object (everything except the cubin bytes)
  --no-cache       neither read nor write the compile cache
  --no-lineinfo    compile without -lineinfo
  -h, --help       print this help

Cache: $KLAB_CACHE_DIR, else $XDG_CACHE_HOME/klab/jit, else ~/.cache/klab/jit.

Here "the candidate failed" (1) is a kernel that the compiler or klab
refused; an unknown target or a missing file is 2.

]]

local command = require "klab.command"
local EXIT = command.EXIT
USAGE = USAGE .. command.EXIT_TEXT

local function fail(msg, code) return command.fail("compile", msg, code) end

-- Parses args; returns an options table, or nil, message.
local OPTIONS = {
  ["--arch"] = "value", ["--output"] = "value", ["-o"] = "--output", ["--json"] = "flag", ["--no-cache"] = "flag",
  ["--no-lineinfo"] = "flag",
  ["--lang"] = function(v, o)
    -- The languages klab.jit compiles as they are (klab.lang's `jit`).
    local lang = require "klab.lang"
    local l = lang.get(v)
    if not (l and l.jit) then return "--lang must be " .. require("klab.errors").one_of(lang.having("jit")) .. ", not " .. v end
    o.lang = l.jit
  end,
}

local function parse(args)
  local o, err = require("klab.command").options(args, OPTIONS)
  if not o then return nil, err end
  if #o.positional > 1 then
    return nil, "only one input file, got " .. o.positional[1] .. " and " .. o.positional[2]
  end
  o.file = o.positional[1]
  o.cache, o.lineinfo = not o.no_cache, not o.no_lineinfo
  return o
end

-- A copy of the result without the binary, for JSON.
local function plain(r, file)
  local out = {}
  for k, v in pairs(r) do
    if k ~= "cubin" then out[k] = v end
  end
  out.file = file
  if r.cubin then out.cubin_size = #r.cubin end
  return out
end

local function num(v)
  if v == nil then return "?" end
  return tostring(v)
end

local function report(r, file, output)
  local lines = {}
  local function add(...) lines[#lines + 1] = string.format(...) end
  add("%s -> %s  (%s, %.1f ms%s)", file, r.arch, r.compiler, r.compile_ms,
    r.cached and ", from cache" or "")
  add("%-32s %5s %13s %9s %7s", "kernel", "regs", "spill st/ld", "smem", "stack")
  for _, k in ipairs(r.kernels) do
    add("%-32s %5s %13s %9s %7s", k.name, num(k.registers),
      num(k.spill_stores) .. "/" .. num(k.spill_loads), num(k.shared_static), num(k.local_bytes))
  end
  local fams = {}
  if r.census then
    for _, f in ipairs(require("klab.jit").families) do
      local n = r.census[f]
      if n and n > 0 then fams[#fams + 1] = f .. " " .. n end
    end
    add("census: %d instructions%s%s", r.census.instructions, #fams > 0 and "; " or "",
      table.concat(fams, ", "))
  end
  add("hash    %s", r.hash)
  add("cubin   %s (%d bytes)%s", r.cubin_hash, #r.cubin, output and (" -> " .. output) or "")
  if r.cache_note and r.cache_note ~= "cache bypassed" then add("cache: %s", r.cache_note) end
  print(table.concat(lines, "\n"))
end

function M.main(args)
  local o, pcode = command.parsed("compile", USAGE, parse(args or {}))
  if not o then return pcode end
  if not o.file then return command.usage_error("compile", "no input file (klab compile FILE --arch sm_XY)") end
  if not o.arch then return command.usage_error("compile", "--arch is required (for example --arch sm_90a)") end

  local jit = require("klab.jit")
  local f = io.open(o.file, "rb")
  if not f then return fail("cannot read " .. o.file .. ": no such file or not readable", EXIT.usage) end
  f:close()
  local aok, why = jit.check_arch(o.arch, o.lang or (o.file:match("%.cuh?$") and "cuda") or "auto")
  if not aok then return fail("--arch: " .. tostring(why), EXIT.usage) end
  local r, msg, code, partial = jit.compile_file(o.file, {
    arch = o.arch, lang = o.lang, cache = o.cache, lineinfo = o.lineinfo,
  })
  if not r then
    if o.json then
      local obj = partial and plain(partial, o.file) or { ok = false, file = o.file }
      obj.ok, obj.error, obj.code = false, msg, code
      print(require("klab.json").encode(obj))
    elseif partial and partial.log and partial.log ~= "" then
      io.stderr:write(partial.log, partial.log:sub(-1) == "\n" and "" or "\n")
    end
    return fail(msg .. " [" .. tostring(code) .. "]", EXIT.failed)
  end

  if o.output then
    local ok, werr = require("klab.fs").write(o.output, r.cubin)
    if not ok then return fail(tostring(werr), EXIT.usage) end
  end
  if o.json then
    local obj = plain(r, o.file)
    obj.output = o.output
    print(require("klab.json").encode(obj))
  else
    report(r, o.file, o.output)
  end
  return 0
end

return M
