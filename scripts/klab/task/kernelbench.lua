-- klab.task.kernelbench: which KernelBench problems the task library poses.
-- A task file claims a problem with its `kernelbench` field (one claim or a
-- list): { level =, problem =, exact = true } when it computes KernelBench's
-- operation with its layouts, transposes, axes, constants and reductions
-- (the dtype and the shapes may differ), or { level =, problem =, differs =
-- "how" } when it is a near relative. docs/kernelbench_problems.lua holds
-- KernelBench's problems as data (names, current input shapes, constants).
-- coverage() joins the two into the table docs/kernelbench.md holds. A
-- task that claims a problem exactly carries its `oracle` (klab.task.oracle).
--
--   kernelbench.claims(file, v, fail)   -> the claims, normalized (schema)
--   kernelbench.problems(load [, path]) -> the problems: list, and by[level][problem]
--                                         (load: klab.task.returned, the sandboxed data loader)
--   kernelbench.shape_matches(kb, task) -> whether a task's extents are KernelBench's, merged
--   kernelbench.coverage(tasks, problems) -> { rows, counts, mistakes }
--   kernelbench.markdown(cov)           -> the generated part of docs/kernelbench.md
local M = {}

-- The problems per level (KernelBench's Levels 1 to 3).
M.LEVELS = { 100, 100, 50 }
-- Beside docs/kernelbench.md: a .lua file directly in tasks/ would make
-- tasks/ look like one family's folder to `klab tasks --check`.
M.DATA = "docs/kernelbench_problems.lua"
local CLAIM_KEYS = { level = true, problem = true, exact = true, differs = true, note = true }

-- Checks a task file's `kernelbench` field; fail(path, message) raises.
function M.claims(v, fail)
  if v == nil then return nil end
  if type(v) ~= "table" then fail("kernelbench", "must be a table, got " .. type(v)) end
  local list = v.level ~= nil and { v } or v
  for k in pairs(v) do
    if list == v and math.type(k) ~= "integer" then fail("kernelbench", "is a claim or a list of claims") end
  end
  local out = {}
  for i, c in ipairs(list) do
    local p = list == v and ("kernelbench[" .. i .. "]") or "kernelbench"
    if type(c) ~= "table" then fail(p, "must be a table { level =, problem =, exact = true | differs = \"...\" }") end
    for k in pairs(c) do
      if not CLAIM_KEYS[k] then
        local names = { "differs", "exact", "level", "note", "problem" }
        fail(p, ("unknown key '%s'%s (allowed: %s)"):format(tostring(k),
          require("klab.errors").did_you_mean(tostring(k), names), table.concat(names, ", ")))
      end
    end
    local n = M.LEVELS[c.level]
    if math.type(c.level) ~= "integer" or not n then fail(p .. ".level", "must be 1, 2 or 3 (KernelBench's levels)") end
    if math.type(c.problem) ~= "integer" or c.problem < 1 or c.problem > n then
      fail(p .. ".problem", ("must be a problem number of level %d, 1 to %d"):format(c.level, n))
    end
    local differs = type(c.differs) == "string" and c.differs:find("%S") ~= nil
    if (c.exact == true) == differs or (c.exact ~= nil and c.exact ~= true) or (c.differs ~= nil and not differs) then
      fail(p, "needs exact = true (KernelBench's semantics) or differs = \"how it differs\", not both")
    end
    if c.note ~= nil and type(c.note) ~= "string" then fail(p .. ".note", "must be a string") end
    out[#out + 1] = { level = c.level, problem = c.problem, exact = c.exact == true, differs = c.differs,
      note = c.note }
  end
  if #out == 0 then fail("kernelbench", "must hold at least one claim") end
  return out
end

-- KernelBench's problems (docs/kernelbench_problems.lua of the repository
-- whose tasks/ klab uses, unless path), read by load (klab.task.returned:
-- the task sandbox, as a task folder's data).
function M.problems(load, path)
  path = path or (require("klab.task.search").default_root() .. "/../" .. M.DATA)
  local list = load(path)
  if type(list) ~= "table" then error(path .. ": must return the list of problems", 0) end
  local by = { {}, {}, {} }
  for i, p in ipairs(list) do
    if type(p) ~= "table" or not M.LEVELS[p.level] or math.type(p.problem) ~= "integer"
        or type(p.name) ~= "string" or type(p.inputs) ~= "table" then
      error(("%s: entry %d: needs level, problem, name and inputs"):format(path, i), 0)
    end
    by[p.level][p.problem] = p
  end
  return { list = list, by = by, file = path }
end

-- Whether a task buffer's extents are a KernelBench tensor's with adjacent
-- dimensions merged (a 3-D tensor times a matrix folds its batch into M; a
-- LayerNorm over the last three dimensions is one row). Extents of 1 are
-- dropped on both sides first ([K, 1] is a vector of K).
function M.shape_matches(kb, task)
  local a, b = {}, {}
  for _, x in ipairs(kb) do if x ~= 1 then a[#a + 1] = x end end
  for _, x in ipairs(task) do if x ~= 1 then b[#b + 1] = x end end
  local i = 1
  for _, want in ipairs(b) do
    local prod = 1
    repeat
      if i > #a then return false end
      prod, i = prod * a[i], i + 1
    until prod >= want
    if prod ~= want then return false end
  end
  return i > #a
end

-- Whether every KernelBench input has its own task input of its shape.
local function inputs_match(kb_inputs, shapes)
  local used = {}
  local function assign(k)
    if k > #kb_inputs then return true end
    for j, s in ipairs(shapes) do
      if not used[j] and M.shape_matches(kb_inputs[k], s) then
        used[j] = true
        if assign(k + 1) then return true end
        used[j] = nil
      end
    end
    return false
  end
  return assign(1)
end

local function has(list, x)
  for _, y in ipairs(list or {}) do if y == x then return true end end
  return false
end

-- tasks: the variants `klab.task.list` gives. Claims are per task file.
function M.coverage(tasks, problems)
  local files, order = {}, {}
  for _, t in ipairs(tasks) do
    if t.kernelbench then
      local f = files[t.base]
      if not f then
        f = { base = t.base, file = t.file, claims = t.kernelbench, oracle = t.oracle, variants = {} }
        files[t.base] = f
        order[#order + 1] = t.base
      end
      f.variants[#f.variants + 1] = t
    end
  end
  table.sort(order)
  local mistakes, by_problem = {}, { {}, {}, {} }
  local function mistake(file, msg) mistakes[#mistakes + 1] = file .. ": kernelbench: " .. msg end
  for _, base in ipairs(order) do
    local f = files[base]
    local exact = {}
    for _, c in ipairs(f.claims) do
      local p = problems.by[c.level][c.problem]
      if not p then
        mistake(f.file, ("level %d problem %d is not in %s"):format(c.level, c.problem, problems.file))
      else
        local at = by_problem[c.level][c.problem] or {}
        by_problem[c.level][c.problem] = at
        at[#at + 1] = { task = base, file = f.file, claim = c, variant = nil }
        if c.exact then exact[#exact + 1] = { p = p, entry = at[#at] } end
      end
    end
    -- An exact claim is measured: the task carries its oracle.
    if #exact > 0 and not f.oracle then
      mistake(f.file, "an exact claim needs the task's oracle (one PyTorch expression of KernelBench's semantics)")
    end
    -- A variant tagged kernelbench poses KernelBench's current shape of
    -- one of the problems the file claims exactly.
    for _, t in ipairs(f.variants) do
      local shapes = {}
      for _, name in ipairs(t.buffer_order) do
        local b = t.buffers[name]
        if b.role == "input" then shapes[#shapes + 1] = b.shape end
      end
      local matched = false
      for _, e in ipairs(exact) do
        if inputs_match(e.p.inputs, shapes) then
          matched = true
          e.entry.variant = e.entry.variant or t.variant
        end
      end
      if has(t.tags, "kernelbench") and #exact > 0 and not matched then
        local nums = {}
        for _, e in ipairs(exact) do nums[#nums + 1] = ("%d/%d"):format(e.p.level, e.p.problem) end
        mistake(f.file, ("variant %s is tagged kernelbench but its inputs are not the current shape of %s "
          .. "(%s)"):format(t.variant, #nums == 1 and "the problem it poses exactly" or "any problem it poses exactly",
          table.concat(nums, ", ")))
      end
    end
  end
  local rows, counts = {}, {}
  for _, p in ipairs(problems.list) do
    local claims = by_problem[p.level][p.problem] or {}
    table.sort(claims, function(x, y)
      if x.claim.exact ~= y.claim.exact then return x.claim.exact end
      return x.task < y.task
    end)
    local exact = 0
    for _, e in ipairs(claims) do if e.claim.exact then exact = exact + 1 end end
    if exact > 1 then
      local names = {}
      for _, e in ipairs(claims) do if e.claim.exact then names[#names + 1] = e.file end end
      mistake(names[2], ("level %d problem %d is claimed as exact by %d tasks (%s): one poses it, the others "
        .. "say how they differ"):format(p.level, p.problem, exact, table.concat(names, ", ")))
    end
    local status = exact > 0 and "exact" or (#claims > 0 and "differs" or "missing")
    counts[p.level] = counts[p.level] or { exact = 0, differs = 0, missing = 0, total = 0 }
    counts[p.level][status] = counts[p.level][status] + 1
    counts[p.level].total = counts[p.level].total + 1
    rows[#rows + 1] = { level = p.level, problem = p.problem, name = p.name, status = status, claims = claims }
  end
  return { rows = rows, counts = counts, mistakes = mistakes }
end

local function cell(s) return (s:gsub("|", "\\|"):gsub("\n", " ")) end

-- The generated part of docs/kernelbench.md: the counts, then one row per
-- problem.
function M.markdown(cov)
  local out = { "| level | exact | differs | missing |", "|---|---|---|---|" }
  for level = 1, #M.LEVELS do
    local c = cov.counts[level]
    if c then
      out[#out + 1] = ("| %d (%d) | %d | %d | %d |"):format(level, c.total, c.exact, c.differs, c.missing)
    end
  end
  out[#out + 1] = ""
  out[#out + 1] = "| level | problem | klab task | claim | notes |"
  out[#out + 1] = "|---|---|---|---|---|"
  for _, r in ipairs(cov.rows) do
    local names, notes = {}, {}
    for _, e in ipairs(r.claims) do
      names[#names + 1] = e.task
      local c, n = e.claim, nil
      if c.exact then
        n = e.variant and ("KernelBench's shape is variant " .. e.variant) or "KernelBench's shape is not a variant"
        if c.note then n = c.note .. "; " .. n end
      else
        n = c.differs
      end
      notes[#notes + 1] = #r.claims > 1 and (e.task .. ": " .. n) or n
    end
    out[#out + 1] = ("| %d | %d %s | %s | %s | %s |"):format(r.level, r.problem, cell(r.name),
      #names > 0 and cell(table.concat(names, ", ")) or "—", r.status, cell(table.concat(notes, "; ")))
  end
  return table.concat(out, "\n") .. "\n"
end

return M
