-- tests/gpu/sample_sweep.lua: the false-rejection sweep. Every shipped
-- sample that its family's samples/expected.lua says must pass (or be
-- target_not_executed) is evaluated on every variant of its task, not only
-- the main one the family check uses: an honest kernel blamed on a small
-- or odd shape is a bug of the judge's, and this is where it shows.
--
--   build/klab tests/gpu/sample_sweep.lua [--quick] [--max-units N] [--family F]... [--budget S]
--   local sw = dofile("tests/gpu/sample_sweep.lua")       (from tests/gpu/check.lua)
--   local pairs_, rows = sw.run{max_units = 10000}        rows: {name, ok, detail} per pair
--
-- --quick sweeps the variants with fewer than 10,000 output units (as the
-- task counts them: rows for a row-wise task), where the timed check's
-- sample covers all of the output. The last line is the count line:
-- "sample sweep: N pairs, M false rejections".

local M = {}

-- A sample may be correct without the task's target instructions on some
-- shapes; either verdict is an acceptance.
M.ACCEPTED = { passed = true, target_not_executed = true }
M.QUICK_UNITS = 10000

-- True when a result says nothing of the candidate because this machine
-- lacks the candidate's language (Triton or CUTLASS not installed): the
-- pair is not run here, and is counted as such, not as a rejection.
function M.not_run_here(r)
  local b = r and r.verdict == "unknown" and r.stages and r.stages.build
  return b and b.ok == false and b.code == "EUNSUPPORTED" or false
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

-- The pairs to sweep, without a GPU: {sample = path, family =, task = the
-- variant's task, units =, expected =} for every accepted sample and every
-- variant of its task with fewer than max_units units (all when nil),
-- but those its expected.lua entry lists as `unsupported`.
function M.pairs(opts)
  opts = opts or {}
  local task = require "klab.task"
  local prepare = require "klab.eval.prepare"
  local root = (opts.root or "tasks"):gsub("/+$", "")
  local out = {}
  local fams = {}
  for _, t in ipairs(task.list(root)) do
    local fam = t.file:sub(#root + 2):match("^([^/]+)/")
    if fam and not fams[fam] then fams[fam] = true end
  end
  local order = {}
  for fam in pairs(fams) do
    if not opts.families or opts.families[fam] then order[#order + 1] = fam end
  end
  table.sort(order)
  for _, fam in ipairs(order) do
    local list = root .. "/" .. fam .. "/samples/expected.lua"
    if exists(list) then
      for _, e in ipairs(task.returned(list) or {}) do
        if M.ACCEPTED[e.verdict] then
          -- Variants the sample's own plan says it does not handle.
          local unsupported = {}
          for _, v in ipairs(e.unsupported or {}) do unsupported[e.task .. "/" .. v] = true end
          for _, t in ipairs(task.load(e.task).tasks) do
            local units = prepare.spec(t).total_units
            if not unsupported[t.name] and (not opts.max_units or units < opts.max_units) then
              out[#out + 1] = { sample = root .. "/" .. fam .. "/samples/" .. e.name, name = e.name, family = fam,
                task = t, units = units, expected = e.verdict }
            end
          end
        end
      end
    end
  end
  return out
end

-- Runs the sweep through one evaluation session; returns the pairs and a
-- row {name, ok, detail} per pair (ok: an accepted verdict).
function M.run(opts)
  opts = opts or {}
  local sys = require "klab.sys"
  local eval = require "klab.eval"
  local list = M.pairs(opts)
  local rows = {}
  local s <close> = eval.session { deadline = 300 }
  for i, p in ipairs(list) do
    local t0 = sys.now()
    local r, err = s:evaluate(p.task, p.sample, { timing_opts = { budget_s = opts.budget_s or 0.3 }, deadline = 300 })
    local got = r and r.verdict or ("error: " .. tostring(err))
    local ok = M.ACCEPTED[got] == true
    if M.not_run_here(r) then ok = nil end
    local detail = string.format("%s (%d units, %.1f s)%s", got, p.units, sys.now() - t0,
      ok and "" or (": " .. tostring(r and r.reason or err)))
    rows[#rows + 1] = { "sweep " .. p.name .. " on " .. p.task.name, ok, detail }
    io.stderr:write(string.format("[sweep %d/%d] %-22s %-40s %s  %s\n", i, #list, p.name, p.task.name,
      ok == nil and "skip" or ok and "pass" or "FAIL", detail))
  end
  return list, rows
end

-- The count line.
function M.count_line(rows)
  local bad, skipped = 0, 0
  for _, r in ipairs(rows) do
    if r[2] == nil then skipped = skipped + 1 elseif not r[2] then bad = bad + 1 end
  end
  return string.format("sample sweep: %d pairs, %d false rejections%s", #rows - skipped, bad,
    skipped > 0 and string.format(" (%d not run: this machine lacks their language)", skipped) or ""), bad
end

local script = arg and arg[0] or ""
if script:find("sample_sweep%.lua$") then
  local USAGE = [[
usage: klab tests/gpu/sample_sweep.lua [--quick] [--max-units N] [--family F]... [--budget S]
  Every shipped sample that must pass (or be target_not_executed) on every
  variant of its task.
  --quick        only variants with fewer than 10,000 output units
  --max-units N  only variants with fewer than N output units
  --family F     only family F (repeatable)
  --budget S     timing budget per evaluation in seconds (default 0.3)
  -h, --help     this text
Exit 0 when no sample is rejected, 1 when one is, 2 on a usage mistake,
3 without a GPU.]]
  local opts = {}
  local i = 1
  while i <= #arg do
    local a, v = arg[i], arg[i + 1]
    if a == "-h" or a == "--help" then
      print(USAGE)
      os.exit(0)
    elseif a == "--quick" then
      opts.max_units = M.QUICK_UNITS
      i = i + 1
    elseif a == "--max-units" and tonumber(v) then
      opts.max_units = tonumber(v)
      i = i + 2
    elseif a == "--budget" and tonumber(v) then
      opts.budget_s = tonumber(v)
      i = i + 2
    elseif a == "--family" and v then
      opts.families = opts.families or {}
      opts.families[v] = true
      i = i + 2
    else
      io.stderr:write("sample_sweep: unknown or incomplete argument '" .. a .. "'\n" .. USAGE .. "\n")
      os.exit(2)
    end
  end
  local ok, why = require("klab.gpu").available()
  if not ok then
    io.stderr:write("sample_sweep: no GPU here (" .. tostring(why) .. "); nothing was evaluated\n")
    os.exit(3)
  end
  local _, rows = M.run(opts)
  local line, bad = M.count_line(rows)
  print(line)
  os.exit(bad == 0 and #rows > 0 and 0 or 1)
end

return M
