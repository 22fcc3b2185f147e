-- layering_test.lua: the Lua library keeps its layers (DESIGN.md, "The Lua
-- library in layers"): no require cycle, lazy requires included; library
-- modules never require the command line; one JSON codec; SQL in one
-- module; no module past its size.
local T = {}

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Every module of scripts/klab: name -> {path=, src= (comments removed)}.
local function modules(root)
  local out = {}
  local p = assert(io.popen("cd '" .. root .. "' && find scripts/klab -name '*.lua' | sort"))
  for path in p:lines() do
    local name = path:gsub("^scripts/", ""):gsub("%.lua$", ""):gsub("/", ".")
    name = name:gsub("%.init$", "")
    local src = read(root .. "/" .. path)
    -- Long comments, then line comments; strings stay (a require names one).
    src = src:gsub("%-%-%[(=*)%[.-%]%1%]", ""):gsub("%-%-[^\n]*", "")
    out[name] = { path = path, src = src, lines = select(2, read(root .. "/" .. path):gsub("\n", "")) }
  end
  p:close()
  return out
end

-- The klab modules each module requires, wherever the call is (at the top or
-- inside a function).
local function requires(mods)
  local out = {}
  for name, m in pairs(mods) do
    local set = {}
    for r in m.src:gmatch("require%s*%(?%s*[\"']([%w_.]+)[\"']") do
      if mods[r] and r ~= name then set[r] = true end
    end
    out[name] = set
  end
  return out
end

local function library(name) return not (name:match("^klab%.cli") or name == "klab.command") end

function T.no_require_cycles(t)
  local mods = modules(t.root)
  local req = requires(mods)
  local n = 0
  for _ in pairs(mods) do n = n + 1 end
  t.ok(n > 40, "found the library (" .. n .. " modules)")
  local state, cycles = {}, {}
  local stack = {}
  local function visit(v)
    if state[v] == "done" then return end
    if state[v] == "open" then
      local i = #stack
      while stack[i] ~= v do i = i - 1 end
      local c = {}
      for k = i, #stack do c[#c + 1] = stack[k] end
      c[#c + 1] = v
      cycles[#cycles + 1] = table.concat(c, " -> ")
      return
    end
    state[v] = "open"
    stack[#stack + 1] = v
    local names = {}
    for w in pairs(req[v]) do names[#names + 1] = w end
    table.sort(names)
    for _, w in ipairs(names) do visit(w) end
    stack[#stack] = nil
    state[v] = "done"
  end
  local names = {}
  for name in pairs(mods) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do visit(name) end
  t.eq(table.concat(cycles, "; "), "", "require cycles")
  -- The test sees a cycle when there is one.
  local fake = { a = { b = true }, b = { a = true } }
  state, cycles, stack, req = {}, {}, {}, fake
  visit("a")
  t.eq(#cycles, 1, "a planted cycle is found")
end

function T.library_never_requires_the_command_line(t)
  local mods = modules(t.root)
  local req = requires(mods)
  local bad = {}
  for name, set in pairs(req) do
    if library(name) then
      for r in pairs(set) do
        if not library(r) then bad[#bad + 1] = name .. " requires " .. r end
      end
    end
  end
  table.sort(bad)
  t.eq(table.concat(bad, "; "), "")
end

-- cjson is klab.json's business (bindings/l_json.c); Lua modules use klab.json.
function T.one_json_codec(t)
  local bad = {}
  for name, m in pairs(modules(t.root)) do
    if m.src:find("require%s*%(?%s*[\"']cjson") or m.src:find("cjson%.") then bad[#bad + 1] = name end
  end
  table.sort(bad)
  t.eq(table.concat(bad, ", "), "")
end

-- SQL text: a statement's first words, and the clauses and functions a
-- statement is built from (a module that writes "%s IS NOT NULL" or
-- "json_remove(" builds SQL as surely as one that writes SELECT). Read in
-- Lua strings (comments removed) and in C string literals.
local SQL_WORDS = { "SELECT%s+[%w_*(]", "INSERT%s+INTO", "INSERT%s+OR%s+%u+%s+INTO", "UPDATE%s+[%w_]+%s+SET",
  "DELETE%s+FROM", "CREATE%s+TABLE", "CREATE%s+TEMP", "CREATE%s+INDEX", "CREATE%s+TRIGGER", "CREATE%s+VIEW",
  "ALTER%s+TABLE", "DROP%s+TABLE", "PRAGMA%s+%l", "ATTACH%s+DATABASE", "DETACH%s+DATABASE", "BEGIN%s+IMMEDIATE",
  "SAVEPOINT%s", "%f[%w]WHERE%s", "%f[%w]JOIN%s", "ORDER%s+BY%f[%W]", "GROUP%s+BY%f[%W]", "IS%s+NOT%s+NULL",
  "%f[%w]IS%s+NULL", "json_extract%(", "json_set%(", "json_remove%(", "json_each%(", "json_valid%(",
  "json_group_array%(" }

local function sql_in(text)
  for _, p in ipairs(SQL_WORDS) do
    local hit = text:match(p)
    if hit then return hit end
  end
end

-- The store's owner in the library: the one Lua module that holds SQL.
local SQL_OWNER = "scripts/klab/store/records.lua"

-- The modules other than the owner that hold SQL: {"name (words)"}.
local function sql_outside_the_owner(mods)
  local bad = {}
  for name, m in pairs(mods) do
    local hit = sql_in(m.src)
    if hit and m.path ~= SQL_OWNER then bad[#bad + 1] = name .. " (" .. hit .. ")" end
  end
  table.sort(bad)
  return bad
end

-- Every SQL statement of the library is the store's owner's
-- (klab.store.records): klab.store.merge decides what a merge does and runs
-- the owner's merge_* statements; no other module, of scripts/klab/store/
-- or elsewhere, writes SQL.
function T.sql_lives_in_the_store(t)
  local mods = modules(t.root)
  t.eq(table.concat(sql_outside_the_owner(mods), ", "), "")
  t.ok(sql_in(mods["klab.store.records"].src), "the owner holds the SQL")
  -- SQL planted in a module beside the owner is found, a statement or a
  -- fragment; a message's lower-case words are not SQL.
  local merge = mods["klab.store.merge"]
  local src = merge.src
  merge.src = src .. '\nlocal x = "SELECT id FROM evaluations"'
  t.eq(table.concat(sql_outside_the_owner(mods), ", "), "klab.store.merge (SELECT i)")
  merge.src = src .. '\nlocal w = ("%s IS NOT NULL"):format(c)'
  t.eq(table.concat(sql_outside_the_owner(mods), ", "), "klab.store.merge (IS NOT NULL)")
  merge.src = src
  t.eq(sql_in("local s = 'select a store where the order by the user is kept'"), nil, "words are not SQL")
end

-- One concern per file keeps files short: no Lua module past 800 lines, no
-- C file of host/ past 1,300.
function T.no_file_past_its_size(t)
  local over = {}
  for _, m in pairs(modules(t.root)) do
    if m.lines > 800 then over[#over + 1] = ("%s (%d lines)"):format(m.path, m.lines) end
  end
  local p = assert(io.popen("cd '" .. t.root .. "' && find host -name '*.c' | sort"))
  local nc = 0
  for path in p:lines() do
    nc = nc + 1
    local _, n = read(t.root .. "/" .. path):gsub("\n", "")
    if n > 1300 then over[#over + 1] = ("%s (%d lines)"):format(path, n) end
  end
  p:close()
  table.sort(over)
  t.ok(nc > 20, "found host/ (" .. nc .. " C files)")
  t.eq(table.concat(over, ", "), "")
end

-- A verdict is given by klab.eval.verdict (make/give), with its reason built
-- there from the producer's detail: no other library module writes a
-- verdict's name into a record.
function T.verdicts_come_from_the_authority(t)
  local verdicts = require "klab.eval.verdict"
  local bad, gives = {}, 0
  for name, m in pairs(modules(t.root)) do
    if name ~= "klab.eval.verdict" then
      for v in m.src:gmatch('verdict%s*=%s*"([%w_]+)"') do
        if verdicts.valid(v) then bad[#bad + 1] = name .. " (" .. v .. ")" end
      end
      for _ in m.src:gmatch("verdicts?%.give%(") do gives = gives + 1 end
      for _ in m.src:gmatch("verdicts?%.make%(") do gives = gives + 1 end
    end
  end
  table.sort(bad)
  t.eq(table.concat(bad, ", "), "")
  t.ok(gives >= 10, "the pipeline gives its verdicts through the authority (" .. gives .. " calls)")
end

-- ---- extension points asked through their owner; functions kept short --------

-- src with every comment and string blanked to spaces, its newlines kept, so
-- that a keyword or a name inside text is not read as code and line numbers
-- hold.
local function code_only(src)
  local out, i, n = {}, 1, #src
  local function blank(s) return (s:gsub("[^\n]", " ")) end
  while i <= n do
    local c = src:sub(i, i)
    local long = src:match("^%-%-%[(=*)%[", i) or src:match("^%[(=*)%[", i)
    if long and (c == "[" or src:sub(i, i + 1) == "--") then
      local open = (c == "[" and "" or "--") .. "[" .. long .. "["
      local close = "]" .. long .. "]"
      local j = src:find(close, i + #open, true) or n
      local body = src:sub(i, j + #close - 1)
      -- A long string stays a string (one placeholder word), a comment goes.
      out[#out + 1] = (c == "[" and '""' or "") .. blank(body):sub(c == "[" and 3 or 1)
      i = j + #close
    elseif src:sub(i, i + 1) == "--" then
      local j = src:find("\n", i, true) or n + 1
      out[#out + 1] = blank(src:sub(i, j - 1))
      i = j
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local d = src:sub(j, j)
        if d == "\\" then j = j + 2
        elseif d == c or d == "\n" then break
        else j = j + 1 end
      end
      out[#out + 1] = src:sub(i, j)
      i = j + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

-- The functions of src longer than max lines: {"name (N lines, line L)"}.
-- Blocks are counted from the keywords that open one (function, if, do,
-- repeat) to the end (or until) that closes it.
local function long_functions(src, max)
  local code = code_only(src):gsub('"[^"\n]*"', '""'):gsub("'[^'\n]*'", "''")
  local stack, found, line = {}, {}, 1
  local pos = 1
  while true do
    local s, e, word = code:find("%f[%w_]([%a_][%w_]*)", pos)
    if not s then break end
    line = line + select(2, code:sub(pos, s - 1):gsub("\n", ""))
    pos = e + 1
    if word == "function" then
      local name = code:match("^%s*([%w_.:]*)", pos)
      stack[#stack + 1] = { fn = name ~= "" and name or "function", line = line }
    elseif word == "if" or word == "do" or word == "repeat" then
      stack[#stack + 1] = { line = line }
    elseif word == "end" or word == "until" then
      local b = table.remove(stack)
      if b and b.fn and line - b.line + 1 > max then
        found[#found + 1] = ("%s (%d lines, line %d)"):format(b.fn, line - b.line + 1, b.line)
      end
    end
  end
  return found
end

-- Where a new concern grows a function, it gets one of its own: no function
-- of the library is longer than 150 lines.
function T.no_function_past_150_lines(t)
  local over, n = {}, 0
  for _, m in pairs(modules(t.root)) do
    n = n + 1
    for _, f in ipairs(long_functions(read(t.root .. "/" .. m.path), 150)) do over[#over + 1] = m.path .. ": " .. f end
  end
  table.sort(over)
  t.ok(n > 40, "read the library")
  t.eq(table.concat(over, ", "), "")
  -- The counter counts: a function of 151 lines is found, one of 150 is not,
  -- and keywords in strings and comments do not open blocks.
  local function fn(lines) return "local function f()\n" .. ("x = 1\n"):rep(lines - 2) .. "end\n" end
  t.eq(#long_functions(fn(151), 150), 1)
  t.eq(#long_functions(fn(150), 150), 0)
  t.eq(#long_functions("local s = 'if do' -- function\n" .. fn(151) .. "--[[ end end ]]", 150), 1)
  t.eq(long_functions("function M.g()\n  if a then\n    for i = 1, 2 do\n    end\n  end\n" .. ("x = 1\n"):rep(150)
    .. "end\n", 150)[1], "M.g (156 lines, line 1)")
end

-- A verdict is asked about through klab.eval.verdict (verdict.passed,
-- .correct, .measured, .undecided, ...): no other module compares a value
-- with a verdict's name. A status or an architecture that shares a word with
-- a verdict ("timeout", "unknown") is not a verdict.
--
-- comparisons(code, named, spared): each `x == "name"` or `"name" ~= x` of
-- code whose string named(s) says is one, unless x's last word is in spared.
local function comparisons(code, named, spared)
  local found = {}
  local function check(lhs, v, at)
    if named(v) and not (spared or {})[lhs:match("([%w_]+)$") or ""] then found[#found + 1] = at end
  end
  for lhs, op, v in code:gmatch("([%w_.%]%[]+)%s*([=~]=)%s*\"([%w_]+)\"") do check(lhs, v, lhs .. " " .. op .. ' "' .. v .. '"') end
  for v, op, rhs in code:gmatch("\"([%w_]+)\"%s*([=~]=)%s*([%w_.]+)") do check(rhs, v, '"' .. v .. '" ' .. op .. " " .. rhs) end
  return found
end

-- What found(code) finds in every module of the library whose path is not
-- under owner (the folder or file allowed to name those values), sorted:
-- "module: at", and how many modules were read.
local function found_outside(root, owner, found)
  local bad, n = {}, 0
  for name, m in pairs(modules(root)) do
    if m.path:sub(1, #owner) ~= owner then
      n = n + 1
      for _, at in ipairs(found(code_only(read(root .. "/" .. m.path)))) do bad[#bad + 1] = name .. ": " .. at end
    end
  end
  table.sort(bad)
  return table.concat(bad, ", "), n
end

local NOT_A_VERDICT = { status = true, arch = true }
local function verdict_comparisons(code, verdicts) return comparisons(code, verdicts.valid, NOT_A_VERDICT) end

function T.verdicts_are_asked_not_compared(t)
  local verdicts = require "klab.eval.verdict"
  t.eq(found_outside(t.root, "scripts/klab/eval/verdict.lua", function(code) return verdict_comparisons(code, verdicts) end), "")
  -- What the rule finds, and what it lets pass.
  t.eq(#verdict_comparisons('if r.verdict == "passed" then', verdicts), 1)
  t.eq(#verdict_comparisons('if "incorrect" ~= v then', verdicts), 1)
  t.eq(#verdict_comparisons('if rep.status == "timeout" or r.arch ~= "unknown" then', verdicts), 0)
  t.eq(#verdict_comparisons('if verdicts.passed(r.verdict) then', verdicts), 0)
end


-- A candidate language is one module of scripts/klab/lang/, registered in
-- klab.lang: no other module compares a value with a language's name; it
-- asks the registry (lang.get(name).kernel, .file, .records, ...).
local function language_comparisons(code)
  local lang = require "klab.lang"
  return comparisons(code, function(s) return lang.get(s) ~= nil end)
end

function T.languages_are_asked_not_compared(t)
  local bad, n = found_outside(t.root, "scripts/klab/lang/", language_comparisons)
  t.ok(n > 40, "read the library")
  t.eq(bad, "")
  -- What the rule finds, and what it lets pass.
  t.eq(#language_comparisons('if c.lang == "ptx" then'), 1)
  t.eq(#language_comparisons('if "triton" ~= b.lang then'), 1)
  t.eq(#language_comparisons('if v ~= "cuda" and v ~= "ptx" then'), 2)
  t.eq(#language_comparisons('if tag == "lua" or lang.get(c.lang).jit then'), 0)
end

-- A baseline is one file of scripts/klab/eval/baselines/, registered in
-- klab.eval.baselines: no other module compares a library's name (a task's
-- baseline.kind, "library" or "shipped", is the task's, not a library).
local function baseline_comparisons(code)
  local names = require("klab.eval.baselines").NAMES
  return comparisons(code, function(s)
    for _, n in ipairs(names) do if n == s then return true end end
    return false
  end, { kind = true })
end

function T.baselines_are_asked_not_compared(t)
  t.eq(found_outside(t.root, "scripts/klab/eval/baselines/", baseline_comparisons), "")
  t.eq(#baseline_comparisons('if x.baseline.lib == "cudnn" and x.baseline.op == "graph" then'), 1)
  t.eq(#baseline_comparisons('if pro.lib == "cublaslt" then'), 1)
  t.eq(#baseline_comparisons('if t.baseline.kind == "shipped" then'), 0)
end

-- A model provider is one file of scripts/klab/experiment/providers/,
-- registered in klab.experiment.providers, its tool-calling format
-- included: no other module names one, in a string or as a word of its
-- code (klab.agent.wire's formats were tables named after them).
local function names_a_provider(code, names)
  local found = {}
  for _, p in ipairs(names) do
    if code:find("%f[%w_]" .. p .. "%f[^%w_]") then found[#found + 1] = p end
  end
  return found
end

function T.providers_are_named_only_by_their_registry(t)
  local names = require("klab.experiment.providers").NAMES
  t.ok(#names >= 2, "read the registry")
  t.eq(found_outside(t.root, "scripts/klab/experiment/providers/", function(code) return names_a_provider(code, names) end), "")
  t.eq(#names_a_provider('local FORMATS = { openai = openai }', names), 1)
  t.eq(#names_a_provider('m.provider == "anthropic"', names), 1)
  t.eq(#names_a_provider(code_only('-- openai\nlocal p = providers.get(m.provider)'), names), 0)
end

-- ---- host/'s C: floors inside a folder, and short functions ----------------

-- C source with comments, strings and character literals blanked (newlines
-- kept, so line numbers hold).
local function c_code(src)
  local out, i, n = {}, 1, #src
  while i <= n do
    local c, d = src:sub(i, i), src:sub(i, i + 1)
    if d == "/*" then
      local e = src:find("*/", i + 2, true) or n - 1
      out[#out + 1] = src:sub(i, e + 1):gsub("[^\n]", " ")
      i = e + 2
    elseif d == "//" then
      local e = src:find("\n", i, true) or n + 1
      i = e
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and src:sub(j, j) ~= c do
        if src:sub(j, j) == "\\" then j = j + 1 end
        j = j + 1
      end
      out[#out + 1] = c .. c
      i = j + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

-- The functions a C file defines, in house style (the body opens with "{"
-- and closes with "}", each alone at the start of a line): {name=, static=,
-- first=, last=, body=}.
local function c_functions(src)
  local lines, fns = {}, {}
  for l in (c_code(src) .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  local i = 1
  while i <= #lines do
    if lines[i] == "{" then
      local s = i - 1
      while s > 1 and not lines[s]:match("^[%a_]") do s = s - 1 end
      local sig = table.concat(lines, " ", s, i - 1)
      local name = sig:match("([%a_][%w_]*)%s*%(")
      local e = i
      while e <= #lines and lines[e] ~= "}" do e = e + 1 end
      if name then
        fns[#fns + 1] = { name = name, static = sig:match("^static%f[%W]") ~= nil, first = s, last = e,
          body = table.concat(lines, "\n", i, e) }
      end
      i = e
    end
    i = i + 1
  end
  return fns
end

-- The arrows that do not go down: a file calling a function another file of
-- the folder defines must sit on a lower floor (floors listed top first).
-- files = {name = source}. Returns the offences, and the files on no floor.
local function arrows_up(files, floors)
  local floor_of, defined, unplaced = {}, {}, {}
  for k, names in ipairs(floors) do for _, f in ipairs(names) do floor_of[f] = k end end
  for f, src in pairs(files) do
    if not floor_of[f] then unplaced[#unplaced + 1] = f end
    for _, fn in ipairs(c_functions(src)) do if not fn.static then defined[fn.name] = f end end
  end
  local bad = {}
  for f, src in pairs(files) do
    local calls = {}
    for _, fn in ipairs(c_functions(src)) do
      for name in fn.body:gmatch("([%a_][%w_]*)%s*%(") do
        local g = defined[name]
        if g and g ~= f and floor_of[f] and floor_of[g] and floor_of[g] <= floor_of[f] then
          calls[g] = calls[g] or {}
          calls[g][name] = true
        end
      end
    end
    for g, names in pairs(calls) do
      local list = {}
      for name in pairs(names) do list[#list + 1] = name end
      table.sort(list)
      bad[#bad + 1] = f .. " -> " .. g .. " (" .. table.concat(list, ", ") .. ")"
    end
  end
  table.sort(bad)
  table.sort(unplaced)
  return bad, unplaced
end

-- The C files of a folder of the checkout: {name = source}.
local function c_files(root, pattern)
  local out = {}
  local p = assert(io.popen("cd '" .. root .. "' && ls " .. pattern .. " 2>/dev/null"))
  for path in p:lines() do out[path:match("[^/]+$")] = read(root .. "/" .. path) end
  p:close()
  return out
end

-- host/compile, floor by floor (host/compile/jit_common.h draws them): each
-- file calls only files below it, so following a compile request never
-- comes back up. A new file takes its place here.
local COMPILE_FLOORS = {
  { "jit.c" },
  { "jit_target.c" },
  { "jit_cache.c", "jit_nvrtc.c", "jit_ptxas.c" },
  { "jit_result.c" },
  { "jit_policy.c" },
  { "cubin.c", "jit_common.c", "jit_log.c", "jit_trust.c", "ptx_census.c", "std_headers.c" },
}

function T.host_compile_calls_only_down(t)
  local files = c_files(t.root, "host/compile/*.c")
  local n = 0
  for _ in pairs(files) do n = n + 1 end
  t.ok(n >= 10, "found host/compile (" .. n .. " files)")
  local bad, unplaced = arrows_up(files, COMPILE_FLOORS)
  t.eq(table.concat(bad, "; "), "", "arrows back up in host/compile")
  t.eq(table.concat(unplaced, ", "), "", "host/compile files on no floor (add them to COMPILE_FLOORS)")
  -- A planted arrow back up is found, and so is a call between files of one floor.
  local planted = { ["top.c"] = "int a(void)\n{\n    return b();\n}\n",
    ["low.c"] = "int b(void)\n{\n    return a() + c();\n}\n", ["side.c"] = "int c(void)\n{\n    return b();\n}\n" }
  local found = arrows_up(planted, { { "top.c" }, { "low.c", "side.c" } })
  t.eq(table.concat(found, "; "), "low.c -> side.c (c); low.c -> top.c (a); side.c -> low.c (b)")
end

-- No function of the timing loop, its stopping rules or the compiler's
-- parts is over 150 lines (house style: "{" and "}" alone on their lines).
function T.c_functions_stay_short(t)
  local long, n = {}, 0
  for _, pattern in ipairs { "host/measure/timing.c", "host/measure/stop*.c", "host/compile/jit*.c" } do
    for f, src in pairs(c_files(t.root, pattern)) do
      for _, fn in ipairs(c_functions(src)) do
        n = n + 1
        local len = fn.last - fn.first + 1
        if len > 150 then long[#long + 1] = ("%s %s (%d lines)"):format(f, fn.name, len) end
      end
    end
  end
  table.sort(long)
  t.ok(n > 50, "found the functions (" .. n .. ")")
  t.eq(table.concat(long, ", "), "")
  local planted = "static int f(void)\n{\n" .. string.rep("    x++;\n", 149) .. "}\n"
  local fns = c_functions(planted)
  t.eq(#fns, 1)
  t.eq(fns[1].last - fns[1].first + 1, 152, "a planted function's length")
  t.eq(fns[1].name, "f")
  t.eq(fns[1].static, true)
end

-- ---- the store's owner: host/store in floors, no SQL in bindings/ ----------

-- The text of a C file without its comments, its string literals kept.
local function c_strings(src)
  return (src:gsub("/%*.-%*/", " "):gsub("//[^\n]*", " "))
end

local function sql_in_strings(src)
  for lit in c_strings(src):gmatch('"([^"\n]*)"') do
    local hit = sql_in(lit)
    if hit then return hit end
  end
end

-- The store's SQL is its owner's (host/store/, klab.store.records): a binding
-- hands the owner's statements over and writes none of its own.
function T.no_sql_in_bindings(t)
  local p = assert(io.popen("cd '" .. t.root .. "' && ls bindings/*.c | sort"))
  local bad, n = {}, 0
  for path in p:lines() do
    n = n + 1
    local hit = sql_in_strings(read(t.root .. "/" .. path))
    if hit then bad[#bad + 1] = path .. " (" .. hit .. ")" end
  end
  p:close()
  t.ok(n > 10, "found bindings/ (" .. n .. " C files)")
  t.eq(table.concat(bad, ", "), "")
  -- The check sees SQL where there is some, and none in a message.
  t.ok(sql_in_strings('x = run("SELECT * FROM evaluations WHERE id = ?");'), "a planted SELECT is found")
  t.ok(not sql_in_strings('/* SELECT x FROM y */ luaL_error(L, "select a store");'), "comments and words are not SQL")
end

-- host/store's floors (host/store/db.h says what each file is).
local STORE_FLOORS = {
  { "store.c" },
  { "schema.c", "records.c" },
  { "ddl.c", "mark.c" },
  { "db.c", "hash.c", "tables.c" },
}

function T.no_arrow_back_up_in_host_store(t)
  local files = c_files(t.root, "host/store/*.c")
  local bad, unplaced = arrows_up(files, STORE_FLOORS)
  t.eq(table.concat(unplaced, ", "), "", "every file of host/store has a floor")
  t.eq(table.concat(bad, "; "), "", "calls that go back up")
  -- The rule sees an arrow where there is one: store.c put on the lowest
  -- floor, its calls into schema.c go up.
  local lowered = { { "schema.c", "records.c" }, { "ddl.c", "mark.c" }, { "db.c", "hash.c", "tables.c", "store.c" } }
  local planted = arrows_up(files, lowered)
  t.ok(#planted > 0, "a file put below what it calls is found (" .. #planted .. " arrows)")
end

-- Every store the library opens is opened by the store's owner
-- (klab.store.records.open, with its checks and messages): no module
-- outside scripts/klab/store/ calls klab.store's open, directly or through
-- a local name for the module.
local function opens_a_store(src)
  if src:find("require%s*%(?%s*[\"']klab%.store[\"']%s*%)?%s*%.open%s*%(") then return true end
  for alias in src:gmatch("local%s+([%w_]+)%s*=%s*require%s*%(?%s*[\"']klab%.store[\"']") do
    if src:find("%f[%w_]" .. alias .. "%s*[.:]%s*open%s*%(") then return true end
  end
  return false
end

function T.stores_open_through_the_owner(t)
  local bad = {}
  for name, m in pairs(modules(t.root)) do
    if not m.path:match("^scripts/klab/store/") and opens_a_store(m.src) then bad[#bad + 1] = name end
  end
  table.sort(bad)
  t.eq(table.concat(bad, ", "), "")
  t.ok(opens_a_store('local s = require "klab.store"\nlocal db = s.open(p)'), "an open through an alias is found")
  t.ok(opens_a_store('local db = require("klab.store").open(p)'), "a direct open is found")
  t.ok(not opens_a_store('local db = require("klab.store.records").open(p)'), "the owner's open is fine")
end


return T
