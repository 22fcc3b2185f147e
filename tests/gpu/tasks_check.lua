-- tests/gpu/tasks_check.lua: every task family's baselines, samples and
-- known-bad kernels on the GPU, through the evaluation pipeline. Families
-- with checks of their own (gemm, attention) are left to them.
--
--   build/klab tests/gpu/tasks_check.lua [--family F]...   (standalone; exit 1 on failure)
--   local tc = dofile("tests/gpu/tasks_check.lua")           (from tests/gpu/check.lua)
--   local rows, tables = tc.run{skip = {gemm = true, attention = true}, families = nil,
--                               baselines_only = {gemm = true}}  (a skipped family's baselines still checked)
--
-- For each family folder tasks/<family>/:
--   1. every task's baseline on every variant: compared with the task's
--      reference on the first input set and timed alone; the main shapes
--      (variants tagged "main") must take at least 50 us;
--   2. every sample (samples/expected.lua: {name, task, verdict, variant?})
--      on the task's first "main" variant, with its verdict and time;
--   3. every known-bad kernel (bad/expected.lua: {name, task, verdict,
--      variant?}) on the task's "small" variant (else its first).

local M = {}

local MIN_US = 50

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

local function variant_of(t_file, tag)
  for _, t in ipairs(t_file.tasks) do
    for _, g in ipairs(require("klab.task").plain(t.tags)) do
      if g == tag then return t end
    end
  end
  return t_file.tasks[1]
end

function M.run(opts)
  opts = opts or {}
  local sys = require "klab.sys"
  local task = require "klab.task"
  local eval = require "klab.eval"
  local sweep = dofile("tests/gpu/sample_sweep.lua")
  local rows, base_rows, cand_rows = {}, {}, {}
  local function check(name, ok, detail)
    rows[#rows + 1] = { name, ok, detail }
    io.stderr:write(string.format("[tasks] %-48s %s  %s\n", name, ok == nil and "skip" or ok and "pass" or "FAIL",
      detail or ""))
  end
  local root = (opts.root or "tasks"):gsub("/+$", "")
  local all, errs = task.list(root)
  for _, e in ipairs(errs) do check("task file loads", false, e) end
  local families, order = {}, {}
  for _, t in ipairs(all) do
    local fam = t.file:sub(1, #root + 1) == root .. "/" and t.file:sub(#root + 2):match("^([^/]+)/")
    local wanted = fam and not (opts.skip or {})[fam] and (not opts.families or opts.families[fam])
      or fam and (opts.baselines_only or {})[fam]
    if wanted then
      if not families[fam] then
        families[fam] = { files = {}, list = {} }
        order[#order + 1] = fam
      end
      local f = families[fam]
      if not f.files[t.base] then
        f.files[t.base] = task.load(t.file)
        f.list[#f.list + 1] = t.base
      end
    end
  end
  table.sort(order)
  local s <close> = eval.session { deadline = 300 }
  for _, fam in ipairs(order) do
    local f = families[fam]
    table.sort(f.list)
    -- 1. Baselines.
    for _, base in ipairs(f.list) do
      for _, t in ipairs(f.files[base].tasks) do
        local t0 = sys.now()
        local main = false
        for _, g in ipairs(task.plain(t.tags)) do if g == "main" then main = true end end
        local r = s:check_baseline(t, { budget_s = 0.3 })
        local st = r.stages.baseline or {}
        local info = st.info or {}
        local us = st.timing and st.timing.median
        local function int(v) return math.tointeger(v) or v end
        local engine = info.lib == "shipped" and ("shipped kernel (" .. tostring(info.name or info.source) .. ")")
          or (tostring(info.lib) .. (info.engine and (" engine " .. tostring(int(info.engine))) or "")
            .. (info.algo and (" algo " .. tostring(int(info.algo))) or "") .. (info.compute and (" " .. info.compute) or "")
            .. ((info.splitk or 1) > 1 and (" split-K " .. tostring(int(info.splitk))) or ""))
        local fl = st.floor or {}
        local bound = (fl.us or 0) > 0 and ((fl.memory_us or 0) >= (fl.compute_us or 0) and "memory" or "compute") or nil
        -- A kernel shipped beside the library's: both times, and which is the baseline.
        local ch = st.choice
        local choice = ch and string.format("%s of library %s / shipped %s", ch.chosen,
          ch.library.median_us and string.format("%.1f us", ch.library.median_us) or "-",
          ch.shipped.median_us and string.format("%.1f us", ch.shipped.median_us) or tostring(ch.shipped.error))
        base_rows[#base_rows + 1] = { t.name, engine, us, r.verdict, main, st.floor_fraction, bound, choice }
        local ok = r.verdict == "passed" and (not main or (us and us >= MIN_US))
        check("baseline " .. t.name, ok, string.format("%s, %s, %s%s%s (%.1f s)%s", r.verdict, engine,
          us and string.format("%.1f us", us) or "not timed",
          st.floor_fraction and string.format(", %.0f%% of the floor", 100 * st.floor_fraction) or "",
          choice and (", " .. choice) or "", sys.now() - t0,
          r.verdict ~= "passed" and (": " .. tostring(r.reason)) or (main and us and us < MIN_US and
            string.format(": under %d us on a main shape", MIN_US) or "")))
      end
    end
    -- 2 and 3. Samples and known-bad kernels (families with checks of
    -- their own for those: their baselines only).
    for _, kind in ipairs((opts.baselines_only or {})[fam] and {} or { "samples", "bad" }) do
      local list_path = root .. "/" .. fam .. "/" .. kind .. "/expected.lua"
      if exists(list_path) then
        -- A folder named with --tasks is data: its lists run in the task sandbox.
        for _, e in ipairs(task.returned(list_path) or {}) do
          local tf = f.files[e.task]
          if not tf then
            check(kind .. " " .. fam .. "/" .. e.name, false, "names task " .. tostring(e.task) .. ", not in this family")
          else
            local t = e.variant and task.get(e.task .. "/" .. e.variant)
              or variant_of(tf, kind == "samples" and "main" or "small")
            local t0 = sys.now()
            local r, err = s:evaluate(t, root .. "/" .. fam .. "/" .. kind .. "/" .. e.name,
              { timing_opts = { budget_s = kind == "samples" and 2 or 1 }, deadline = 300 })
            local got = r and r.verdict or ("error: " .. tostring(err))
            local tm = r and r.stages.timing
            local us = tm and tm.candidate and tm.candidate.median
            cand_rows[#cand_rows + 1] = { e.name, t.name, e.verdict, got, us, tm and tm.speedup }
            -- This machine lacking the candidate's language (Triton, CUTLASS) is a skip.
            local ok = got == e.verdict
            if not ok and sweep.not_run_here(r) then ok = nil end
            check(kind .. " " .. e.name .. " on " .. t.name, ok, string.format(
              "want %s, got %s%s (%.1f s)%s", e.verdict, got, us and string.format(", %.1f us", us) or "",
              sys.now() - t0, got ~= e.verdict and r and (": " .. tostring(r.reason)) or ""))
          end
        end
      end
    end
  end
  -- The tables.
  print()
  -- floor: the physical floor over the baseline's median (1 = at the
  -- speed of light; klab.eval.peaks), and which of FLOPs or bytes set it.
  print(string.format("%-34s %-44s %-12s %-16s %s", "task (baseline)", "engine", "time", "floor", "vs reference"))
  for _, b in ipairs(base_rows) do
    print(string.format("%-34s %-44s %-12s %-16s %s%s", b[1], b[2], b[3] and string.format("%.1f us", b[3]) or "-",
      b[6] and string.format("%.0f%% %s", 100 * b[6], b[7]) or "-", b[4], (b[5] and " (main)" or "") ..
      (b[8] and ("  [" .. b[8] .. "]") or "")))
  end
  print()
  print(string.format("%-22s %-34s %-20s %-20s %-12s %s", "candidate", "task", "expected", "actual", "time", "speedup"))
  for _, c in ipairs(cand_rows) do
    print(string.format("%-22s %-34s %-20s %-20s %-12s %s", c[1], c[2], c[3], c[4],
      c[5] and string.format("%.1f us", c[5]) or "-", c[6] and string.format("%.3fx", c[6]) or "-"))
  end
  return rows
end

local script = arg and arg[0] or ""
if script:find("tasks_check%.lua$") then
  local USAGE = [[
usage: klab tests/gpu/tasks_check.lua [--tasks DIR] [--family F]...
  Every task family's baselines, samples and known-bad kernels on the GPU.
  --tasks DIR   the folder of task families (default tasks)
  --family F    only family F (repeatable)
  -h, --help    this text
Exit 0 when every check passes, 1 when one fails, 2 on a usage mistake or
when nothing was checked.]]
  local fams, root
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "-h" or a == "--help" then
      print(USAGE)
      os.exit(0)
    elseif (a == "--family" or a == "--tasks") and arg[i + 1] then
      if a == "--family" then
        fams = fams or {}
        fams[arg[i + 1]] = true
      else
        root = arg[i + 1]
      end
      i = i + 2
    else
      io.stderr:write("tasks_check: unknown or incomplete argument '" .. a .. "'\n" .. USAGE .. "\n")
      os.exit(2)
    end
  end
  if root and not (require("klab.fs").type(root) == "dir") then
    io.stderr:write("tasks_check: --tasks " .. root .. ": not a folder\n")
    os.exit(2)
  end
  local rows = M.run { families = fams, root = root }
  local failed = 0
  for _, r in ipairs(rows) do if r[2] == false then failed = failed + 1 end end
  print(string.format("%d task checks, %d failed", #rows, failed))
  if #rows == 0 then
    io.stderr:write("tasks_check: no task checked under " .. (root or "tasks") ..
      (fams and " for the families asked" or "") .. "\n")
    os.exit(2)
  end
  os.exit(failed == 0 and 0 or 1)
end

return M
