-- docs_test.lua: the pages of docs/ name only what exists. Every reference
-- a page makes to the code, found by pattern, is checked against the code:
--   a Lua module or a field of one     `klab.eval.verdict`, `klab.experiment.providers.NAMES`
--   a function of a module             `verdict.reason(name, detail)`, `plan.check_compiled(...)`
--                                      (the name before the dot is a module's last part, or a
--                                      local the page set with require)
--   a file                             scripts/..., host/..., tasks/..., tests/...
--   a command and its options          klab eval ... --seed N (asked of the command's own parser)
-- A reference with a placeholder in it (<family>, NAME, *) names no one file and is left alone.

local T = {}

-- A file or a folder.
local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- ---- what the code has -----------------------------------------------------

-- Every klab module (embedded Lua and C): name -> true, and by last part:
-- "verdict" -> {"klab.eval.verdict"}.
local function module_names()
  local all, by_last = {}, {}
  for name in pairs(package.preload) do
    if name == "klab" or name:match("^klab%.") then
      all[name] = true
      local last = name:match("([%w_]+)$")
      by_last[last] = by_last[last] or {}
      table.insert(by_last[last], name)
    end
  end
  return all, by_last
end

local function load_module(name)
  local ok, m = pcall(require, name)
  return ok and m or nil
end

-- The value at fields (a list) of module m, or nil.
local function field(m, fields)
  local v = m
  for _, f in ipairs(fields) do
    if type(v) ~= "table" then return nil end
    local ok, x = pcall(function() return v[f] end)
    if not ok then return nil end
    v = x
  end
  return v
end

-- A dotted name klab.a.b.c: the longest prefix that is a module, then its
-- fields. Returns true or why not.
local function dotted_exists(all, name)
  local parts = {}
  for p in name:gmatch("[^.]+") do parts[#parts + 1] = p end
  for n = #parts, 1, -1 do
    local mod = table.concat(parts, ".", 1, n)
    if all[mod] then
      local m = load_module(mod)
      if m == nil then return nil, "module " .. mod .. " does not load" end
      if n == #parts then return true end
      local rest = { table.unpack(parts, n + 1) }
      if field(m, rest) == nil then return nil, ("module %s has no %s"):format(mod, table.concat(rest, ".")) end
      return true
    end
  end
  return nil, "no such module"
end

-- The spec a command's parser uses (klab.command.options), read by calling
-- its main with --help and stopping at the parser: nothing else runs.
local function command_spec(cmd)
  local command = require "klab.command"
  local orig = command.options
  local STOP = {}
  local spec
  command.options = function(_, s)
    spec = s
    error(STOP, 0)
  end
  local ok, m = pcall(require, "klab.cli." .. cmd)
  if ok and type(m) == "table" and type(m.main) == "function" then pcall(m.main, { "--help" }) end
  command.options = orig
  return spec
end

-- Whether the command's parser takes option opt (an unknown one is refused
-- whatever follows it).
local function accepts(spec, opt)
  local _, err = require("klab.command").options({ opt }, spec)
  return not (err and err:match("^unknown option"))
end

-- ---- what the pages say ------------------------------------------------------

-- Every page of docs/, with its text.
local function pages(t)
  local out = {}
  local p = assert(io.popen("cd '" .. t.root .. "' && ls docs/*.md"))
  for path in p:lines() do out[#out + 1] = { path = path, text = t.read(t.root .. "/" .. path) } end
  p:close()
  return out
end

-- The code of a page, line by line: {text=, line=} for every line of a
-- fenced block (a line that starts with ```) and every inline `span` (one
-- backtick; a span in several backticks quotes backticks themselves).
local function code_of(text)
  local out, fenced, n = {}, false, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    -- A fence's info string holds no backtick (a line that starts with a
    -- span in four backticks is text).
    if line:match("^%s*```+[^`]*$") then
      fenced = not fenced
    elseif fenced then
      out[#out + 1] = { text = line, line = n, block = true }
    else
      local plain = line:gsub("``+.-``+", " ")
      for span in plain:gmatch("`([^`]+)`") do out[#out + 1] = { text = span, line = n } end
    end
  end
  return out
end

local FILE_EXT = { db = true, lua = true, md = true, json = true, jsonl = true, cu = true, ptx = true, gp = true,
  png = true, c = true, h = true, so = true, txt = true, log = true, cubin = true, sqlite = true, svg = true, pdf = true }

-- A part of a path or name that stands for many: <family>, *, {a,b}, ...,
-- a one-letter example (klab.a.b, tasks/x/); in a path also NAME.
local function placeholder(s, path)
  if s:find("[<>*{}$%%]") or s:find("...", 1, true) then return true end
  for seg in s:gmatch("[^/.]+") do
    if seg:match("^%a$") or (path and seg:match("^%u[%u_]+$")) then return true end
  end
  return false
end

-- The characters a path may follow in a page (not a URL's host, not
-- another path).
local BEFORE_PATH = { [""] = true, [" "] = true, ["\n"] = true, ["\t"] = true, ["`"] = true, ["("] = true,
  ['"'] = true, ["'"] = true, ["["] = true }

-- References of one page: {kind=, ref=, line=}.
local function references(text)
  local refs = {}
  local function line_of(pos) return select(2, text:sub(1, pos):gsub("\n", "")) + 1 end
  local function add(kind, ref, pos, line) refs[#refs + 1] = { kind = kind, ref = ref, line = line or line_of(pos) } end
  -- Modules and their fields, wherever they are named.
  for pos, name, after in text:gmatch("()%f[%w_./-]klab%.([%a_][%w_.]*[%w_])(.?.?)") do
    local last = name:match("([%w_]+)$")
    if not FILE_EXT[last] and not last:match("^%d+$") and not placeholder(name) and after ~= ".*" then
      add("module", "klab." .. name, pos)
    end
  end
  -- Files of the repository.
  for pos, path in text:gmatch("()%f[%w_./-]((%a+)/[%w_./<>*{}$-]*[%w_/])") do
    local top = path:match("^(%a+)/")
    if (top == "scripts" or top == "host" or top == "tasks" or top == "tests") and not placeholder(path, true)
        and BEFORE_PATH[text:sub(pos - 1, pos - 1)] then
      add("file", path, pos)
    end
  end
  -- Functions called through a module's short name (in code only), and
  -- the locals a page sets with require.
  local aliases = {}
  local code = code_of(text)
  for _, c in ipairs(code) do
    for alias, mod in c.text:gmatch("local%s+([%a_][%w_]*)%s*=%s*require%s*%(?%s*[\"'](klab[%w_.]*)[\"']") do
      aliases[alias] = mod
    end
  end
  for _, c in ipairs(code) do
    -- (alias:fn is an object's method, not the module's.)
    for alias, fn in c.text:gmatch("%f[%w_.:/%-]([%a_][%w_]*)%.([%a_][%w_]*)%s*[({]") do
      add("function", { alias = alias, fn = fn, local_module = aliases[alias] }, nil, c.line)
    end
  end
  -- Commands and their options: klab CMD ... --opt, in code.
  for _, c in ipairs(code) do
    -- Comments (shell's, Lua's) are prose.
    local line = c.text:gsub("^%s*#.*$", ""):gsub("%s#.*$", ""):gsub("%-%- .*$", "")
    for cmd, args in line:gmatch("%f[%w/]klab%s+(%a[%w_./-]*)([^|;&`]*)") do
      if not cmd:find("[./]") then
        for opt in args:gmatch("%f[%w-]%-%-([%a][%w-]*)") do add("option", { cmd = cmd, opt = "--" .. opt }, nil, c.line) end
        add("command", cmd, nil, c.line)
      end
    end
    for opt in line:gmatch("%f[%w/]klab%s+%-%-([%a][%w-]*)") do add("global", "--" .. opt, nil, c.line) end
  end
  return refs
end

-- ---- checked --------------------------------------------------------------

-- Each problem of one page's text: "LINE: what".
local function problems(t, text)
  local root = t.root
  local all, by_last = module_names()
  local main_c = t.read(root .. "/app/main.c")
  local specs = {}
  local out, seen = {}, {}
  local function bad(r, why)
    local key = r.line .. why
    if not seen[key] then seen[key] = true out[#out + 1] = r.line .. ": " .. why end
  end
  for _, r in ipairs(references(text)) do
    if r.kind == "module" then
      local ok, why = dotted_exists(all, r.ref)
      if not ok then bad(r, ("`%s`: %s"):format(r.ref, why)) end
    elseif r.kind == "file" then
      local path = r.ref:gsub("[:#].*$", ""):gsub("/$", "")
      if not exists(root .. "/" .. path) then bad(r, ("%s: no such file or folder"):format(path)) end
    elseif r.kind == "function" then
      local mods = r.ref.local_module and { r.ref.local_module } or by_last[r.ref.alias]
      if mods then
        local found = false
        for _, mod in ipairs(mods) do
          local m = load_module(mod)
          if m and field(m, { r.ref.fn }) ~= nil then found = true end
          -- An object's method (db:close, model caller:submit) is not the module's.
        end
        if not found and not r.ref.local_module then
          -- A name that is also the module's object (exp:select) is left to the module's own tests
          -- when no module of that name has it as a field.
          bad(r, ("%s.%s: no module %s has %s"):format(r.ref.alias, r.ref.fn, table.concat(mods, " or "), r.ref.fn))
        elseif not found then
          bad(r, ("%s.%s: %s has no %s"):format(r.ref.alias, r.ref.fn, r.ref.local_module, r.ref.fn))
        end
      end
    elseif r.kind == "command" then
      if not all["klab.cli." .. r.ref] then
        bad(r, ("klab %s: no such command"):format(r.ref))
      end
    elseif r.kind == "option" then
      if all["klab.cli." .. r.ref.cmd] then
        if specs[r.ref.cmd] == nil then specs[r.ref.cmd] = command_spec(r.ref.cmd) or false end
        local spec = specs[r.ref.cmd]
        if not spec and r.ref.opt ~= "--help" then
          bad(r, ("klab %s %s: the command takes no options"):format(r.ref.cmd, r.ref.opt))
        elseif spec and not accepts(spec, r.ref.opt) then
          bad(r, ("klab %s %s: the command takes no such option"):format(r.ref.cmd, r.ref.opt))
        end
      end
    elseif r.kind == "global" then
      if not main_c:find('"' .. r.ref .. '"', 1, true) then bad(r, ("klab %s: no such option of klab"):format(r.ref)) end
    end
  end
  return out
end

function T.every_reference_exists(t)
  local list, n = {}, 0
  for _, page in ipairs(pages(t)) do
    n = n + 1
    for _, p in ipairs(problems(t, page.text)) do list[#list + 1] = page.path .. ":" .. p end
  end
  t.ok(n >= 15, "read the pages (" .. n .. ")")
  t.eq(table.concat(list, "\n"), "")
end

-- The extraction finds each kind of reference, and a reference to what does
-- not exist is a problem.
function T.a_broken_reference_is_found(t)
  local good = table.concat({
    "The verdicts are `klab.eval.verdict`'s (`verdict.reason(name, detail)`), its list is",
    "`klab.eval.verdict.LIST`, in scripts/klab/eval/verdict.lua.",
    "```",
    "klab eval tasks/gemm/samples/wgmma_tma --seed 7 --json",
    "klab --verbose tasks",
    "```",
  }, "\n")
  t.eq(table.concat(problems(t, good), "\n"), "")
  local kinds = {}
  for _, r in ipairs(references(good)) do kinds[r.kind] = (kinds[r.kind] or 0) + 1 end
  t.eq(kinds.module, 2) t.eq(kinds["function"], 1) t.eq(kinds.file, 2) t.eq(kinds.option, 2) t.eq(kinds.global, 1)
  local broken = {
    { "`klab.eval.verdictz`", "klab.eval.verdictz`: module klab.eval has no verdictz" },
    { "`klab.evaluate`", "klab.evaluate`: no such module" },
    { "`klab.eval.verdict.LISTS`", "module klab.eval.verdict has no LISTS" },
    { "`verdict.reasons(name)`", "verdict.reasons: no module klab.eval.verdict has reasons" },
    { "see scripts/klab/eval/verdicts.lua", "scripts/klab/eval/verdicts.lua: no such file" },
    { "```\nklab eval DIR --seeds 7\n```", "klab eval %-%-seeds: the command takes no such option" },
    { "```\nklab evaluate DIR\n```", "klab evaluate: no such command" },
    { "```\nklab --verbosity eval\n```", "klab %-%-verbosity: no such option of klab" },
    { "```lua\nlocal v = require \"klab.eval.verdict\"\nprint(v.nope(1))\n```", "v.nope: klab.eval.verdict has no nope" },
  }
  for _, b in ipairs(broken) do
    local found = problems(t, b[1])
    t.eq(#found, 1, b[1])
    t.match(found[1] or "", b[2], b[1])
  end
  -- Placeholders name no one file.
  t.eq(#problems(t, "tasks/<family>/ and tests/gpu/NAME.lua and `klab.report.figures.*`"), 0)
end

return T
