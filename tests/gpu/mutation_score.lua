-- tests/gpu/mutation_score.lua: the judge's mutation score on a GPU
-- (docs/integrity.md, "Mutation score"). Mutates one shipped sample of each
-- task family (the first that tasks/<family>/samples/expected.lua says is
-- correct), judges every mutant and the original with one `klab batch` on
-- the pool, and prints the score table of `klab mutate --score`.
--
--   build/klab tests/gpu/mutation_score.lua [--max N] [--tag TAG] [--family F]... [--out DIR] [--all]
--
--   --max N     at most N mutants per family and sample (default 8)
--   --tag TAG   judge each sample on its task's variant tagged TAG ("small"
--               by default, else "main", else the first variant)
--   --family F  only the task family F (repeatable)
--   --all       every correct sample of each family, not only the first
--   --out DIR   where the mutants and results go (default build/mutation-score)
--   --dry-run   write the mutants and the batch list, print the batch command,
--               judge nothing (needs no GPU)
--
-- Exit status: 0 every family's score is at least 99% and every original
-- passed; 1 otherwise; 2 a bad option; 3 no GPU here (nothing was judged).
local quote = require("klab.command").shell_quote

local opts = { max = 8, tag = "small", families = {}, out = "build/mutation-score" }
local args = arg or {}
local i = 1
while i <= #args do
  local a = args[i]
  if a == "--max" or a == "--tag" or a == "--family" or a == "--out" then
    local v = args[i + 1]
    if not v then
      io.stderr:write("mutation_score: ", a, " needs a value\n")
      os.exit(2)
    end
    if a == "--max" then
      opts.max = math.tointeger(tonumber(v))
      if not opts.max or opts.max < 1 then
        io.stderr:write("mutation_score: --max needs a whole number >= 1, not ", v, "\n")
        os.exit(2)
      end
    elseif a == "--family" then
      opts.families[v] = true
    else
      opts[a:sub(3)] = v
    end
    i = i + 2
  elseif a == "--all" or a == "--dry-run" then
    opts[a == "--all" and "all" or "dry_run"] = true
    i = i + 1
  else
    io.stderr:write("mutation_score: unknown option ", a, " (--max, --tag, --family, --out, --all, --dry-run)\n")
    os.exit(2)
  end
end

local ok, why = require("klab.gpu").available()
if not ok and not opts.dry_run then
  print("mutation_score: no GPU here (" .. tostring(why) .. "); nothing was judged. Run it on a machine with a GPU.")
  os.exit(3)
end

local KLAB = (function()
  local p = io.popen("readlink -f /proc/" .. require("klab.sys").getpid() .. "/exe")
  local exe = p:read("l")
  p:close()
  return exe
end)()

local function run(cmd)
  io.stderr:write("[mutation_score] ", cmd, "\n")
  local okc, _, code = os.execute(cmd)
  return okc and 0 or code
end

-- The variant of a task file to judge on.
local function variant(base)
  local d = require("klab.task").load(base)
  if d.kind == "task" then return d.name end
  for _, tag in ipairs { opts.tag, "main" } do
    for _, t in ipairs(d.tasks) do
      for _, g in ipairs(require("klab.task").plain(t.tags or {})) do
        if g == tag then return t.name end
      end
    end
  end
  return d.tasks[1].name
end

-- The samples: {family, name, task, dir}.
local samples = {}
local p = io.popen("ls tasks/*/samples/expected.lua")
for file in p:lines() do
  local family = file:match("^tasks/([^/]+)/")
  if next(opts.families) == nil or opts.families[family] then
    local taken = false
    for _, e in ipairs(require("klab.task").returned(file) or {}) do
      if (e.verdict == "passed" or e.verdict == "target_not_executed") and (opts.all or not taken) then
        taken = true
        local task = e.variant and (e.task .. "/" .. e.variant) or variant(e.task)
        samples[#samples + 1] = { family = family, name = e.name, task = task, dir = "tasks/" .. family .. "/samples/" .. e.name }
      end
    end
  end
end
p:close()
if #samples == 0 then
  io.stderr:write("mutation_score: no sample matches\n")
  os.exit(2)
end

require("klab.sys").mkdir(opts.out)
local dirs, list = {}, {}
local t0 = require("klab.sys").now()
for _, s in ipairs(samples) do
  local dir = opts.out .. "/" .. s.family .. "-" .. s.name
  local code = run(("%s mutate %s %s --out %s --max %d >&2"):format(quote(KLAB), quote(s.task), quote(s.dir), quote(dir),
    opts.max))
  if code ~= 0 then
    io.stderr:write("mutation_score: klab mutate failed on ", s.dir, "\n")
    os.exit(1)
  end
  dirs[#dirs + 1] = dir
  local f = assert(io.open(dir .. "/batch.jsonl"))
  for line in f:lines() do
    local e = require("klab.json").decode(line)
    e.candidate = dir .. "/" .. e.candidate
    if e.candidate:sub(1, 1) ~= "/" then e.candidate = os.getenv("PWD") .. "/" .. e.candidate end
    list[#list + 1] = require("klab.json").encode(e)
  end
  f:close()
end
local all = opts.out .. "/all.jsonl"
local f = assert(io.open(all, "w"))
f:write(table.concat(list, "\n"), "\n")
f:close()
local t1 = require("klab.sys").now()
local results = opts.out .. "/results.jsonl"
-- The timed phase's checks are part of the judge: timing stays on, short.
local batch = ("%s batch %s --json --budget 0.3 --deadline 60 > %s"):format(quote(KLAB), quote(all), quote(results))
if opts.dry_run then
  print(("%d samples, %d evaluations in %s, mutated and compiled in %.0f s; judge them with:\n  %s"):format(#samples,
    #list, all, t1 - t0, batch))
  os.exit(0)
end
local code = run(batch)
if code ~= 0 then
  io.stderr:write("mutation_score: klab batch ended with status ", tostring(code), "\n")
  os.exit(code == 3 and 3 or 1)
end
local t2 = require("klab.sys").now()
local qdirs = {}
for n, d in ipairs(dirs) do qdirs[n] = quote(d) end
local score = require "klab.mutate.score"
local runs = {}
for _, d in ipairs(dirs) do runs[#runs + 1] = assert(score.load(d, results)) end
local tab, err = score.table(runs)
if not tab then
  io.stderr:write("mutation_score: ", err, "\n")
  os.exit(1)
end
io.write(score.format(tab))
print(("\n%d samples, %d mutants: mutated and compiled in %.0f s, judged in %.0f s (klab mutate --score %s --results %s)")
  :format(#samples, tab.all.mutants, t1 - t0, t2 - t1, table.concat(qdirs, " "), quote(results)))
local low = {}
for name, c in pairs(tab.families) do
  if c.caught + c.survivors > 0 and c.caught < 0.99 * (c.caught + c.survivors) then low[#low + 1] = name end
end
table.sort(low)
if #low > 0 then
  print("below the 99% target: " .. table.concat(low, ", "))
  os.exit(1)
end
os.exit(0)
