-- klab.mutate: mutants of a passing candidate, so that klab can measure
-- how many injected faults its checks catch (the mutation score,
-- docs/integrity.md).
--
--   mutate.FAMILIES                      the families, in the order mutants are listed
--   mutate.families_of(lang)             those that have operators for a language
--   mutate.make(cand, opts)              -> {mutants=, dropped=, original_cubin=} | nil, why
--       opts: families (list, default all), max (per family), arch,
--       compile (function(cand) -> cubin_hash | nil, why; default klab.jit,
--       in cache_dir when given)
--   mutate.write(dir, task_name, cand, made, opts) -> true | nil, why
--   mutate.check_out(dir)                -> true | nil, why  (may klab write its mutants there?)
--
-- A mutant is the candidate's code with one operator applied at one place
-- (klab.mutate.cuda, klab.mutate.ptx): {id=, family=, operator=, line=,
-- original=, mutated= (the changed lines before and after), code=}. A mutant
-- whose text is the original's, or another mutant's, is not made; one that
-- does not compile, or compiles to the original's binary (the change was
-- dead code or optimised away, so it cannot be caught), is dropped and
-- counted in dropped[family].not_compiling or .same_binary. The same
-- candidate and options give the same mutants, ids and order.
local M = {}

M.FAMILIES = { "precision", "bounds", "indexing", "constants", "reductions", "synchronisation", "work" }

-- What marks a folder as klab mutate's own output (mutants.json's "tool").
M.TOOL = "klab mutate"

-- A language's operators (the module its klab.lang entry names), or nil.
local function operators(lang)
  local l = require("klab.lang").get(lang)
  return l and l.mutants and require(l.mutants) or nil
end

function M.families_of(lang)
  local ops = operators(lang)
  return ops and (ops.FAMILIES or M.FAMILIES) or {}
end

-- The line of byte offset s in text.
local function line_of(text, s)
  local _, n = text:sub(1, s - 1):gsub("\n", "")
  return n + 1
end

-- edits applied to text (offsets of text, shifted by -base).
local function apply(text, edits, base)
  local sorted = {}
  for _, e in ipairs(edits) do sorted[#sorted + 1] = e end
  table.sort(sorted, function(a, b) return a.s > b.s end)
  for _, e in ipairs(sorted) do
    text = text:sub(1, e.s - base - 1) .. e.text .. text:sub(e.e - base + 1)
  end
  return text
end

-- The mutant that one site makes of text: code, line, and the changed
-- lines before and after. helpers: the operators' HELPERS (device functions
-- a site may need, put at helper_at).
local function mutant_of(text, site, helper_at, helpers)
  local lo, hi = math.huge, 0
  for _, e in ipairs(site.edits) do
    lo, hi = math.min(lo, e.s), math.max(hi, e.e, e.s)
  end
  local edits = site.edits
  if site.helper then
    -- A helper that would land after the change cannot serve it.
    if not helper_at or helper_at > lo then return nil end
    edits = { table.unpack(site.edits) }
    edits[#edits + 1] = { s = helper_at, e = helper_at - 1, text = helpers[site.helper] }
  end
  local rs = lo
  while rs > 1 and text:sub(rs - 1, rs - 1) ~= "\n" do rs = rs - 1 end
  local re = text:find("\n", hi, true) or #text + 1
  local region = text:sub(rs, re - 1)
  return {
    family = site.family, operator = site.operator, line = line_of(text, lo), original = region,
    mutated = apply(region, site.edits, rs - 1), code = apply(text, edits, 0),
  }
end

-- Every mutant of c.code in the families asked for, in family order, then
-- source order; identical texts once.
local function generate(c, families)
  local ops = operators(c.lang)
  local sites = ops.sites(c.code)
  local helper_at = ops.helper_place and ops.helper_place(c.code) or nil
  local by_family = {}
  for _, f in ipairs(families) do by_family[f] = {} end
  local seen = { [c.code] = true }
  for _, site in ipairs(sites) do
    local list = by_family[site.family]
    if list then
      local m = mutant_of(c.code, site, helper_at, ops.HELPERS)
      if m and not seen[m.code] then
        seen[m.code] = true
        m.at = site.at
        list[#list + 1] = m
      end
    end
  end
  return by_family
end

-- The families named, or why one is not known (with the nearest name).
function M.check_families(names)
  local known = {}
  for _, f in ipairs(M.FAMILIES) do known[f] = true end
  for _, n in ipairs(names) do
    if not known[n] then
      return nil, ("unknown family '%s'%s (known: %s)"):format(n, require("klab.errors").did_you_mean(n, M.FAMILIES),
        table.concat(M.FAMILIES, ", "))
    end
  end
  return true
end

local function jit_compile(arch, cache_dir)
  return function(c)
    -- Without line information, a change that only moves code compiles to
    -- the same binary, and is seen as such.
    local r, err = require("klab.jit").compile { source = c.code, lang = require("klab.lang").get(c.lang).jit,
      arch = arch, name = c.file or c.name, lineinfo = false, cache_dir = cache_dir }
    if not r then return nil, err end
    return r.cubin_hash
  end
end

function M.make(c, opts)
  opts = opts or {}
  if not operators(c.lang) then
    return nil, ("%s: klab mutate has no operators for %s"):format(c.file or c.name,
      require("klab.lang").get(c.lang).title)
  end
  local families = {}
  local offered = {}
  for _, f in ipairs(M.families_of(c.lang)) do offered[f] = true end
  for _, f in ipairs(opts.families or M.FAMILIES) do
    if offered[f] then families[#families + 1] = f end
  end
  local compile = opts.compile or jit_compile(opts.arch or "sm_90a", opts.cache_dir)
  local base, berr = compile(c)
  if not base then
    return nil, ("%s does not compile for %s, and only a passing candidate can be mutated: %s"):format(
      c.file or c.name, opts.arch or "sm_90a", tostring(berr):match("^[^\n]*"))
  end
  local hash = require("klab.store").hash
  local by_family = generate(c, families)
  local out, dropped = {}, {}
  for _, f in ipairs(families) do
    local list = by_family[f]
    dropped[f] = { not_compiling = 0, same_binary = 0 }
    -- Under --max, a fixed pseudo-random order (a hash of each mutant) picks
    -- which to try, so that a cap does not keep only the file's first lines.
    local order = {}
    for n, m in ipairs(list) do order[n] = m end
    if opts.max then
      for _, m in ipairs(order) do m.key = hash("klab.mutant.1", f, m.operator, tostring(m.at), m.code) end
      table.sort(order, function(a, b) return a.key < b.key end)
    end
    local kept = {}
    for _, m in ipairs(order) do
      if opts.max and #kept >= opts.max then break end
      local cubin = compile { code = m.code, lang = c.lang, file = c.file, name = c.name }
      if not cubin then
        dropped[f].not_compiling = dropped[f].not_compiling + 1
      elseif cubin == base then
        dropped[f].same_binary = dropped[f].same_binary + 1
      else
        kept[#kept + 1] = m
      end
    end
    table.sort(kept, function(a, b)
      if a.at ~= b.at then return a.at < b.at end
      return a.code < b.code
    end)
    for n, m in ipairs(kept) do
      m.id = ("%s_%02d"):format(f, n)
      m.at, m.key = nil, nil
      out[#out + 1] = m
    end
  end
  return { mutants = out, dropped = dropped, families = families }
end

-- ---- the folder -------------------------------------------------------------

local ID = "^[%w_]+$"

-- Whether dir is klab mutate's own earlier output: its mutants.json says so.
local function own_output(dir)
  local text = require("klab.fs").read(dir .. "/mutants.json", 64 * 1024 * 1024)
  local ok, doc = pcall(require("klab.json").decode, text or "")
  return ok and type(doc) == "table" and doc.tool == M.TOOL and doc or nil
end

function M.check_out(dir)
  local fs = require "klab.fs"
  local kind = fs.type(dir)
  if not kind then return true end
  if kind ~= "dir" then return nil, dir .. " exists and is not a folder; name another with --out" end
  local entries, err = fs.list(dir)
  if not entries then return nil, err end
  if #entries == 0 or own_output(dir) then return true end
  return nil, dir .. " exists and is not empty (nor klab mutate's output); name another with --out"
end

local function write_file(path, text)
  local ok, err = require("klab.fs").write(path, text)
  if not ok then return nil, "cannot write " .. path .. ": " .. tostring(err) end
  return true
end

-- A candidate folder: the kernel and the plan.
local function write_candidate(dir, lang, code, plan)
  local sys = require "klab.sys"
  local ok, err = sys.mkdir(dir)
  if not ok then return nil, err end
  ok, err = write_file(dir .. "/" .. require("klab.lang").get(lang).file, code)
  if ok and plan then ok, err = write_file(dir .. "/plan.lua", plan) end
  return ok, err
end

-- Writes the mutants of made (M.make's result) into dir, with batch.jsonl
-- (the original first, then every mutant, all with one seed so that they
-- see the same inputs) and mutants.json. An earlier output of klab mutate
-- there is replaced: the folders it lists and its two files.
function M.write(dir, task_name, c, made, opts)
  local json, sys = require "klab.json", require "klab.sys"
  local ok, err = M.check_out(dir)
  if not ok then return nil, err end
  local old = own_output(dir)
  if old then
    for _, m in ipairs(type(old.mutants) == "table" and old.mutants or {}) do
      if type(m) == "table" and type(m.id) == "string" and m.id:match(ID) then sys.remove_tree(dir .. "/" .. m.id) end
    end
    sys.remove_tree(dir .. "/original")
  end
  ok, err = sys.mkdir(dir)
  if not ok then return nil, err end
  ok, err = write_candidate(dir .. "/original", c.lang, c.code, c.plan)
  if not ok then return nil, err end
  local seed = opts.seed
  local lines = { json.encode { task = task_name, candidate = "original", seed = seed } }
  local listed = {}
  for _, m in ipairs(made.mutants) do
    ok, err = write_candidate(dir .. "/" .. m.id, c.lang, m.code, c.plan)
    if not ok then return nil, err end
    lines[#lines + 1] = json.encode { task = task_name, candidate = m.id, seed = seed }
    listed[#listed + 1] = {
      id = m.id, family = m.family, operator = m.operator, file = c.file or c.name, line = m.line,
      original = m.original, mutated = m.mutated,
      hash = require("klab.eval.candidate").hash { lang = c.lang, code = m.code, plan = c.plan },
    }
  end
  ok, err = write_file(dir .. "/batch.jsonl", table.concat(lines, "\n") .. "\n")
  if not ok then return nil, err end
  local doc = {
    tool = M.TOOL, version = 1, task = task_name, arch = opts.arch, seed = seed, families = made.families,
    max = opts.max, dropped = made.dropped, mutants = listed,
    original = { candidate = "original", file = c.file or c.name, hash = c.hash },
  }
  return write_file(dir .. "/mutants.json", json.encode(doc) .. "\n")
end

return M
