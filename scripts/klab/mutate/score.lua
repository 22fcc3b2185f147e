-- klab.mutate.score: the mutation score of the judge, from the mutants
-- klab mutate wrote and the results `klab batch --json` gave for them.
--
--   score.load(dir [, results_file]) -> run | nil, why
--       run: {dir=, doc= (mutants.json), results = {candidate hash -> result}}
--   score.table(runs)   -> tab | nil, why [, "unjudged" (the original could not be judged)]
--       tab: {families = {name -> counts}, tasks = {family -> counts},
--             all = counts, survivors = {{id=, dir=, family=, operator=, file=, line=, task=}...},
--             unjudged = {...the same...}}
--       counts: {mutants=, caught=, equivalent=, survivors=, unjudged=}
--   score.classify(original_result, mutant_result) -> "caught" | "equivalent" | "survivor" | "unjudged"
--   score.format(tab)   -> the table as text
--
-- A mutant is caught when its verdict is any measured verdict that is not
-- correct (passed, target_not_executed). A correct mutant is equivalent
-- when its outputs hash alike with the original's on every correctness
-- trial, under the same seed (so on the same inputs): it is left out of
-- the score. Otherwise it survives. A mutant with no result, or whose
-- evaluation could not run (unknown), is unjudged and left out too.
local verdicts = require "klab.eval.verdict"
local json = require "klab.json"

local M = {}

local MAX_BYTES = 256 * 1024 * 1024

function M.load(dir, results_file)
  local fs = require "klab.fs"
  local mfile = dir .. "/mutants.json"
  local text, err = fs.read(mfile, MAX_BYTES)
  if not text then return nil, err .. " (is " .. dir .. " a folder klab mutate wrote?)" end
  local ok, doc = pcall(json.decode, text, { integers = true })
  if not ok or type(doc) ~= "table" or doc.tool ~= require("klab.mutate").TOOL or type(doc.original) ~= "table" then
    return nil, mfile .. ": not a mutants.json written by klab mutate"
  end
  results_file = results_file or (dir .. "/results.jsonl")
  local rtext, rerr = fs.read(results_file, MAX_BYTES)
  if not rtext then
    return nil, rerr .. "; judge the mutants first: klab batch " .. dir .. "/batch.jsonl --json > " .. results_file
  end
  local results, n = {}, 0
  for line in (rtext .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:find("%S") then
      local lok, r = pcall(json.decode, line)
      if not lok or type(r) ~= "table" or type(r.verdict) ~= "string" then
        return nil, ("%s:%d: not a result of klab batch --json"):format(results_file, n)
      end
      if type(r.candidate) == "string" then results[r.candidate] = r end
    end
  end
  return { dir = dir, doc = doc, results = results, results_file = results_file }
end

-- The output checksums of each correctness trial, or nil.
local function trial_sums(r)
  local st = type(r.stages) == "table" and r.stages.correctness
  local trials = type(st) == "table" and st.trials
  if type(trials) ~= "table" or #trials == 0 then return nil end
  for _, t in ipairs(trials) do
    if type(t) ~= "table" or type(t.outputs) ~= "table" then return nil end
  end
  return trials
end

local function same_outputs(a, b)
  if a.seed == nil or a.seed ~= b.seed then return false end
  local ta, tb = trial_sums(a), trial_sums(b)
  if not ta or not tb or #ta ~= #tb then return false end
  for i, t in ipairs(ta) do
    local u = tb[i]
    if t.label ~= u.label then return false end
    for name, sum in pairs(t.outputs) do
      if u.outputs[name] ~= sum then return false end
    end
    for name in pairs(u.outputs) do
      if t.outputs[name] == nil then return false end
    end
  end
  return true
end

function M.classify(orig, r)
  if type(r) ~= "table" or not verdicts.measured(r.verdict) then return "unjudged" end
  if not verdicts.correct(r.verdict) then return "caught" end
  return same_outputs(orig, r) and "equivalent" or "survivor"
end

local function counts() return { mutants = 0, caught = 0, equivalent = 0, survivors = 0, unjudged = 0 } end
local PLURAL = { caught = "caught", equivalent = "equivalent", survivor = "survivors", unjudged = "unjudged" }

local function task_family(name)
  local ok, t = pcall(require("klab.task").get, name)
  return ok and type(t) == "table" and t.family or name
end

function M.table(runs)
  local tab = { families = {}, tasks = {}, all = counts(), survivors = {}, unjudged = {} }
  for _, run in ipairs(runs) do
    local doc = run.doc
    local orig = run.results[doc.original.hash]
    if not orig then
      return nil, ("%s: no result for the original (line 1 of %s/batch.jsonl) in %s"):format(run.dir, run.dir,
        run.results_file)
    end
    if not verdicts.measured(orig.verdict) then
      return nil, ("%s: the original could not be judged (%s: %s); there is nothing to score"):format(run.dir,
        tostring(orig.verdict), tostring(orig.reason or ""):match("^[^\n]*")), "unjudged"
    end
    if not verdicts.correct(orig.verdict) then
      return nil, ("%s: the original's verdict is %s, not passed: only the mutants of a passing candidate score the judge")
        :format(run.dir, tostring(orig.verdict))
    end
    if not trial_sums(orig) then
      return nil, ("%s: the original's result has no output checksums per trial (judged by an older klab?); "
        .. "judge the batch again"):format(run.dir)
    end
    local tf = task_family(doc.task)
    tab.tasks[tf] = tab.tasks[tf] or counts()
    for _, m in ipairs(type(doc.mutants) == "table" and doc.mutants or {}) do
      local class = M.classify(orig, run.results[m.hash])
      tab.families[m.family] = tab.families[m.family] or counts()
      for _, c in ipairs { tab.families[m.family], tab.tasks[tf], tab.all } do
        c.mutants = c.mutants + 1
        c[PLURAL[class]] = c[PLURAL[class]] + 1
      end
      if class == "survivor" or class == "unjudged" then
        local list = class == "survivor" and tab.survivors or tab.unjudged
        local r = run.results[m.hash]
        list[#list + 1] = { id = m.id, dir = run.dir, family = m.family, operator = m.operator, file = m.file,
          line = m.line, task = doc.task, verdict = r and r.verdict, mutated = m.mutated }
      end
    end
  end
  return tab
end

-- caught / (caught + survivors), as a percentage text.
local function rate(c)
  local n = c.caught + c.survivors
  if n == 0 then return "-" end
  return ("%.1f%%"):format(100 * c.caught / n)
end

function M.format(tab)
  local lines = {}
  local function row(name, c)
    lines[#lines + 1] = ("%-18s %7d %7d %14d %10d %9d %9s"):format(name, c.mutants, c.caught,
      c.caught + c.survivors, c.equivalent, c.survivors, rate(c))
  end
  local function section(title, by, order)
    lines[#lines + 1] = ("%-18s %7s %7s %14s %10s %9s %9s"):format(title, "mutants", "caught", "non-equivalent",
      "equivalent", "survivors", "score")
    for _, name in ipairs(order) do
      if by[name] then row(name, by[name]) end
    end
  end
  section("family", tab.families, require("klab.mutate").FAMILIES)
  row("all", tab.all)
  lines[#lines + 1] = ""
  local tfs = {}
  for name in pairs(tab.tasks) do tfs[#tfs + 1] = name end
  table.sort(tfs)
  section("task family", tab.tasks, tfs)
  if tab.all.unjudged > 0 then
    lines[#lines + 1] = ("\n%d mutants not judged (no result, or the evaluation could not run), left out:"):format(
      tab.all.unjudged)
    for _, s in ipairs(tab.unjudged) do
      lines[#lines + 1] = ("  %s/%s  %s"):format(s.dir, s.id, s.verdict or "no result")
    end
  end
  lines[#lines + 1] = ("\n%d survivors%s"):format(#tab.survivors, #tab.survivors > 0 and ":" or "")
  for _, s in ipairs(tab.survivors) do
    lines[#lines + 1] = ("  %s/%s  %s:%d  %s / %s  (%s)"):format(s.dir, s.id, s.file, s.line, s.family, s.operator,
      s.verdict)
  end
  return table.concat(lines, "\n") .. "\n"
end

return M
