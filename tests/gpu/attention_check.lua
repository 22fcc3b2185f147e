-- tests/gpu/attention_check.lua: the attention part of the GPU check.
--
--   build/klab tests/gpu/attention_check.lua [--quick]   (standalone; exit 1 on failure)
--   local ac = dofile("tests/gpu/attention_check.lua")    (from tests/gpu/check.lua)
--   local rows = ac.run{quick = false}  -> list of {name, ok, detail} check rows
--
-- 1. Every sample and known-bad kernel under tasks/attention is evaluated
--    by klab.eval on the tasks listed below (the short sequence for most,
--    the primary shape for the tensor-core forward) and must get its
--    expected verdict; the table shows candidate, task, expected, actual,
--    time and the speedup over cuDNN (the baseline timed interleaved).
-- 2. Every attention task's cuDNN baseline runs once in a worker on the
--    first input set (the pipeline's baseline check) and its outputs are
--    compared with the task's reference under the task's tolerance; a case
--    cuDNN refuses is listed with cuDNN's message.
-- Every row also records the cuDNN library (version and path) that ran.

local M = {}

local SHORT = "4x48x1024x128"
local PRIMARY = "4x48x4096x128"

-- {candidate folder, task, expected verdict, timing budget (s)}. The
-- samples are correct but use neither wgmma nor TMA, the tasks' targets on
-- sm_90a: the instruction stage gives them target_not_executed.
local function cases()
  local list = {
    { "tasks/attention/samples/naive_fwd", "attn_fwd/" .. SHORT, "target_not_executed", 1 },
    { "tasks/attention/samples/naive_fwd", "attn_fwd_causal/" .. SHORT, "target_not_executed", 1 },
    { "tasks/attention/samples/mma_fwd", "attn_fwd/" .. PRIMARY, "target_not_executed", 3 },
    { "tasks/attention/samples/mma_fwd", "attn_fwd_causal/" .. PRIMARY, "target_not_executed", 3 },
    { "tasks/attention/samples/mma_fwd", "attn_fwd/4x48x4096x96", "target_not_executed", 1 },
    { "tasks/attention/samples/mma_fwd", "attn_fwd_causal/4x48x4096x64", "target_not_executed", 1 },
    { "tasks/attention/samples/naive_bwd", "attn_bwd/" .. SHORT, "target_not_executed", 1 },
    { "tasks/attention/samples/naive_bwd", "attn_bwd_causal/" .. SHORT, "target_not_executed", 1 },
  }
  for _, e in ipairs(require("klab.task").returned("tasks/attention/bad/expected.lua")) do
    list[#list + 1] = { "tasks/attention/bad/" .. e.name, e.task .. "/" .. SHORT, e.verdict, 1 }
  end
  return list
end

local function fmt_us(us) return us and string.format("%.1f us", us) or "-" end

function M.run(opts)
  opts = opts or {}
  local sys = require "klab.sys"
  local eval = require "klab.eval"
  local task = require "klab.task"
  local checks, eval_rows, base_rows = {}, {}, {}
  local function check(name, ok, detail)
    checks[#checks + 1] = { name, ok, detail }
    io.stderr:write(string.format("[attention] %-44s %s  %s\n", name, ok and "pass" or "FAIL", detail or ""))
  end

  -- 1. Samples and known-bad kernels.
  do
    local es <close> = eval.session { deadline = 120 }
    for _, c in ipairs(cases()) do
      local cand, tname, want, budget = c[1], c[2], c[3], c[4]
      local t0 = sys.now()
      local r, err = es:evaluate(tname, cand, { timing_opts = { budget_s = budget }, deadline = 120 })
      local got = r and r.verdict or ("error: " .. tostring(err))
      local tm = r and r.stages.timing
      local time, speedup = "-", "-"
      if tm and tm.candidate and tm.candidate.median then
        time = string.format("%s, %.1f TFLOP/s", fmt_us(tm.candidate.median), tm.candidate.tflops or 0)
        if tm.speedup then
          local bi = tm.baseline_info or {}
          speedup = string.format("%.3fx cuDNN %s %s", tm.speedup, tostring(bi.version), tostring(bi.route))
        elseif tm.baseline_error then
          speedup = "no baseline: " .. tostring(tm.baseline_error):sub(1, 60)
        end
      end
      eval_rows[#eval_rows + 1] = { cand:match("([^/]+)$"), tname, want, got, time, speedup }
      check(cand:match("([^/]+/[^/]+)$") .. " on " .. tname, got == want,
        string.format("want %s, got %s (%.1f s)", want, got, sys.now() - t0))
      if got ~= want and r then io.stderr:write("  reason: ", tostring(r.reason), "\n") end
    end
  end

  -- 2. Every task's baseline, once, against the reference (the pipeline's
  -- baseline check, in a worker).
  do
    local es <close> = eval.session { deadline = 300 }
    local all = task.list("tasks")
    table.sort(all, function(a, b) return a.name < b.name end)
    for _, t in ipairs(all) do
      if t.family == "attention" then
        local t0 = sys.now()
        local r = es:check_baseline(t, { budget_s = 0.3 })
        local st = r.stages.baseline or {}
        local info = st.info or {}
        local errs = {}
        for name, o in pairs((st.check or {}).outputs or {}) do
          errs[#errs + 1] = string.format("%s %.3g", name, tonumber(o.max_abs) or -1)
        end
        table.sort(errs)
        local tflops = st.timing and st.timing.tflops
        local refused = r.verdict == "unknown" and tostring(r.reason) or nil
        local status = refused and "REFUSED" or (r.verdict == "passed" and "ok" or "WRONG")
        base_rows[#base_rows + 1] = { t.name, status, info.route or "-", tostring(info.engine or "-"),
          info.version or "-", tflops and string.format("%.1f", tflops) or "-", table.concat(errs, ", "),
          refused or (r.verdict ~= "passed" and tostring(r.reason)) or info.refused or "", info.path or "" }
        -- A refusal is reported, not a failure of the check; a wrong or
        -- broken run is.
        check("cuDNN baseline " .. t.name, r.verdict == "passed" or refused ~= nil,
          string.format("%s %s engine %s, %s TFLOP/s (%.1f s)%s", status, tostring(info.route),
            tostring(info.engine), tflops and string.format("%.1f", tflops) or "-", sys.now() - t0,
            r.verdict ~= "passed" and (": " .. tostring(r.reason)) or ""))
      end
    end
  end

  -- The tables.
  print()
  print(string.format("%-20s %-32s %-17s %-17s %-30s %s", "candidate", "task", "expected", "actual", "time",
    "speedup"))
  for _, e in ipairs(eval_rows) do
    print(string.format("%-20s %-32s %-17s %-17s %-30s %s", e[1], e[2], e[3], e[4], e[5], e[6]))
  end
  print()
  print(string.format("%-32s %-8s %-10s %-7s %-8s %-8s %s", "task (cuDNN baseline)", "status", "route", "engine",
    "version", "TFLOP/s", "max abs error vs reference"))
  local refused = {}
  for _, b in ipairs(base_rows) do
    print(string.format("%-32s %-8s %-10s %-7s %-8s %-8s %s", b[1], b[2], b[3], b[4], b[5], b[6], b[7]))
    if b[8] ~= "" then refused[#refused + 1] = "  " .. b[1] .. ": " .. b[8] end
  end
  if base_rows[1] then print("library: " .. tostring(base_rows[1][9])) end
  if #refused > 0 then
    print("cuDNN refusals, errors and fallbacks:")
    for _, l in ipairs(refused) do print(l) end
  end
  return checks
end

-- Standalone: klab tests/gpu/attention_check.lua [--quick]
local script = arg and arg[0] or ""
if script:find("attention_check%.lua$") then
  local quick = false
  for _, a in ipairs(arg) do if a == "--quick" then quick = true end end
  local rows = M.run { quick = quick }
  local failed = 0
  for _, r in ipairs(rows) do if not r[2] then failed = failed + 1 end end
  print(string.format("%d attention checks, %d failed", #rows, failed))
  os.exit(failed == 0 and 0 or 1)
end

return M
