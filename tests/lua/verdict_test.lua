-- Tests of klab.eval.verdict: precedence, reasons and the comparison rule.
local verdict = require("klab.eval.verdict")

local T = {}
local NaN, Inf = 0 / 0, math.huge

function T.names_and_precedence(t)
  t.eq(verdict.NAMES[1], "request_error")
  t.eq(verdict.NAMES[#verdict.NAMES], "passed")
  for _, n in ipairs({ "passed", "compile_error", "plan_error", "load_error", "runtime_error", "timeout",
                       "incorrect", "guard_violation", "input_modified", "nondeterministic",
                       "unexpected_launches", "target_not_executed", "unknown", "extraction_error" }) do
    t.ok(verdict.valid(n), n)
  end
  t.ok(not verdict.valid("fast"))
  t.raises(function() verdict.rank("fast") end, "unknown verdict")
  t.eq(verdict.worst("passed", "incorrect", "compile_error"), "compile_error")
  t.eq(verdict.worst("passed", "unknown"), "unknown")
  t.eq(verdict.worst("target_not_executed", "unknown"), "target_not_executed")
  t.eq(verdict.worst("incorrect", "guard_violation"), "guard_violation")
  t.eq(verdict.worst("nondeterministic", "incorrect"), "incorrect")
  t.eq(verdict.worst({ verdict = "timeout" }, { verdict = "incorrect" }), "timeout")
  t.ok(verdict.rank("extraction_error") < verdict.rank("compile_error"))
  t.ok(verdict.rank("load_error") < verdict.rank("plan_error"))
  t.ok(verdict.rank("runtime_error") < verdict.rank("incorrect"))
end

function T.reasons_are_one_line(t)
  local cases = {
    { "extraction_error", "no ```cuda block in the reply", "^extraction_error: no ```cuda block" },
    { "compile_error", { errors = 2, log = "warning: x\nkernel.cu(3): error: identifier \"q\" is undefined\nmore" },
      "^compile_error: 2 errors; first: kernel%.cu%(3%): error: identifier" },
    { "plan_error", "launch 1 (gemm): grid.x = 57 is not divisible by cluster.x = 2", "^plan_error: launch 1" },
    { "load_error", { msg = "CUDA_ERROR_INVALID_PTX\nline 2" }, "^load_error: CUDA_ERROR_INVALID_PTX line 2$" },
    { "runtime_error", { error = "CUDA_ERROR_ILLEGAL_ADDRESS", stage = "correctness", trial = 2, launch = 1, kernel = "gemm" },
      "^runtime_error: CUDA_ERROR_ILLEGAL_ADDRESS during correctness trial 2 %(launch 1, kernel gemm%)$" },
    { "timeout", { stage = "correctness", seconds = 10 }, "^timeout: correctness stage did not finish within 10 s$" },
    { "guard_violation", { buffer = "C", side = "after", offset = 0, bytes = 128 },
      "^guard_violation: 128 bytes written past the end of C %(first at byte %+0%)$" },
    { "input_modified", { buffer = "A", changed = 512 }, "^input_modified: input A changed during the run %(512 bytes changed%)" },
    { "nondeterministic", { buffer = "C", differ = 12, total = 100, max_abs = 0.5 },
      "^nondeterministic: two runs on the same inputs differ in 12 of 100 elements of C %(max abs diff 0%.5%)$" },
    { "unexpected_launches", { expected = 1, got = 2, kernels = { "gemm", "helper" } },
      "^unexpected_launches: the plan has 1 launch but 2 kernels ran %(gemm, helper%)$" },
    { "target_not_executed", { arch = "sm_90a", missing = { "wgmma" }, required = { "wgmma", "tma" } },
      "^target_not_executed: on sm_90a no wgmma instruction executed %(required: wgmma, tma%)$" },
    { "unknown", { stage = "instructions", why = "no profiling rights" },
      "^unknown: instructions stage could not run: no profiling rights$" },
    { "passed", { time_ms = 0.8, baseline_ms = 1.0 }, "^passed: 1%.25x the baseline %(0%.8 ms vs 1 ms%)$" },
  }
  for _, c in ipairs(cases) do
    local r = verdict.reason(c[1], c[2])
    t.match(r, c[3])
    t.ok(not r:find("\n"), c[1] .. " reason is one line")
    local v = verdict.make(c[1], c[2])
    t.eq(v.verdict, c[1])
    t.eq(v.reason, r)
  end
  t.raises(function() verdict.reason("bogus", "x") end, "unknown verdict")
end

function T.compare_exact_match(t)
  local c = verdict.compare({ 1, 2, 3, 4 }, { 1, 2, 3, 4 }, { 2, 2 }, { atol = 0, rtol = 0 })
  t.eq(c.pass, true)
  t.eq(c.matched, 4)
  t.eq(c.total, 4)
  t.eq(c.max_abs, 0)
  t.eq(c.nan, 0)
  t.eq(c.inf, 0)
end

function T.compare_nan_and_inf_fail(t)
  local c = verdict.compare({ 1, NaN, 3, 4 }, { 1, 2, 3, 4 }, { 2, 2 }, { atol = 1e9, rtol = 1e9, matched = 0.5 })
  t.eq(c.pass, false, "NaN fails even with huge tolerances and a low matched ratio")
  t.eq(c.nan, 1)
  t.eq(c.matched, 3)
  t.eq(c.worst.row, 0)
  t.eq(c.worst.col, 1)
  c = verdict.compare({ 1, 2, -Inf, 4 }, { 1, 2, 3, 4 }, { 2, 2 }, { atol = 1e9, rtol = 1e9, matched = 0.5 })
  t.eq(c.pass, false)
  t.eq(c.inf, 1)
  t.eq(c.worst.row, 1)
  t.eq(c.worst.col, 0)
  t.match(verdict.describe(c), "^incorrect: 0 NaN and 1 Inf in the output %(first at row 1, col 0, tile %(0,0%) of 128x128%)")
  -- Inf where the reference is Inf still fails (and a non-finite reference fails too)
  c = verdict.compare({ Inf }, { Inf }, { 1 }, { atol = 1, rtol = 1 })
  t.eq(c.pass, false)
  c = verdict.compare({ 1 }, { NaN }, { 1 }, { atol = 1, rtol = 1 })
  t.eq(c.pass, false)
  t.eq(c.ref_nonfinite, 1)
end

function T.compare_atol_rtol_boundary(t)
  local tol = { atol = 0.5, rtol = 0.25, eps = 0 }
  -- |x-y| = atol exactly: not > atol, passes
  t.eq(verdict.compare({ 10.5 }, { 10 }, { 1 }, tol).pass, true)
  -- over atol but relative 0.6/10 = 0.06 <= rtol: passes (both must be exceeded)
  t.eq(verdict.compare({ 10.6 }, { 10 }, { 1 }, tol).pass, true)
  -- over rtol but not atol: 0.4/1 = 0.4 > 0.25, 0.4 <= 0.5: passes
  t.eq(verdict.compare({ 1.4 }, { 1 }, { 1 }, tol).pass, true)
  -- rel exactly rtol: 0.75 / 3 = 0.25, not > rtol: passes
  t.eq(verdict.compare({ 3.75 }, { 3 }, { 1 }, tol).pass, true)
  -- over both: fails
  local c = verdict.compare({ 3.875 }, { 3 }, { 1 }, tol)
  t.eq(c.pass, false)
  t.eq(c.matched, 0)
  t.eq(c.max_abs, 0.875)
  t.near(c.max_rel, 0.875 / 3, 1e-12)
  -- eps keeps y = 0 finite: rel = d / 1e-8
  c = verdict.compare({ 1e-9 }, { 0 }, { 1 }, { atol = 0, rtol = 0.2 })
  t.eq(c.pass, true, "1e-9 / (0 + 1e-8) = 0.1 <= 0.2")
  c = verdict.compare({ 1e-8 }, { 0 }, { 1 }, { atol = 0, rtol = 0.2 })
  t.eq(c.pass, false)
  -- the FlashInfer-Bench defaults, 1e-2 / 1e-2
  local fib = { atol = 1e-2, rtol = 1e-2 }
  t.eq(verdict.compare({ 100.9 }, { 100 }, { 1 }, fib).pass, true)
  t.eq(verdict.compare({ 101.1 }, { 100 }, { 1 }, fib).pass, false)
  t.eq(verdict.compare({ 0.019 }, { 0.01 }, { 1 }, fib).pass, true)
  t.eq(verdict.compare({ 0.021 }, { 0.01 }, { 1 }, fib).pass, false)
end

function T.compare_matched_ratio(t)
  local got, want = {}, {}
  for i = 1, 100000 do got[i], want[i] = i, i end
  got[5], got[99999], got[50000] = 0, 0, 1e6
  local tol = { atol = 0, rtol = 0, matched = 0.99997 }
  local c = verdict.compare(got, want, { 100000 }, tol)
  t.eq(c.matched, 99997)
  t.eq(c.pass, true, "exactly the required ratio passes")
  tol.matched = 0.99999
  c = verdict.compare(got, want, { 100000 }, tol)
  t.eq(c.pass, false)
  t.match(verdict.describe(c), "; matched 99%.997%% < 99%.999%% required$")
  tol.matched = 1.0
  c = verdict.compare(got, want, { 100000 }, tol)
  t.eq(c.pass, false)
  t.match(verdict.describe(c), "matched 99%.997%% < 100%% required")
  -- the worst element is the largest failing error, located on the 1-D index
  t.eq(c.worst.index, 50000)
  t.eq(c.worst.col, 49999)
  t.eq(c.max_abs, 1e6 - 50000)
end

function T.compare_worst_location_and_tile(t)
  local rows, cols = 300, 500
  local got, want = {}, {}
  for i = 1, rows * cols do got[i], want[i] = 1, 1 end
  local function at(r, c) return r * cols + c + 1 end
  got[at(17, 40)] = 1.5      -- small error
  got[at(130, 260)] = 4.1    -- the worst: row 130, col 260 -> tile (1,2) of 128x128
  got[at(299, 499)] = 2      -- another error
  local c = verdict.compare(got, want, { rows, cols }, { atol = 1e-3, rtol = 1e-3 })
  t.eq(c.pass, false)
  t.eq(c.total, rows * cols)
  t.eq(c.matched, rows * cols - 3)
  t.eq(c.worst.row, 130)
  t.eq(c.worst.col, 260)
  t.eq(c.worst.tile[1], 1)
  t.eq(c.worst.tile[2], 2)
  t.near(c.max_abs, 3.1, 1e-12)
  t.near(c.worst.got, 4.1, 0)
  local line = verdict.describe(c, { buffer = "C", trial = 2, distribution = "x3" })
  t.match(line, "^incorrect: C %(trial 2, distribution x3%): 3 of 150000 elements differ %(max abs err 3%.1 at row 130, col 260, " ..
    "tile %(1,2%) of 128x128: got 4%.1, expected 1; max rel err 3%.1%); matched 99%.998%% < 100%% required$")
  t.ok(not line:find("\n"))
  -- a custom tile size
  c = verdict.compare(got, want, { rows, cols }, { atol = 1e-3, rtol = 1e-3, tile = { 64, 256 } })
  t.eq(c.worst.tile[1], 2)
  t.eq(c.worst.tile[2], 1)
  -- higher-rank shapes fold the leading dimensions into rows
  c = verdict.compare(got, want, { 3, 100, cols }, { atol = 1e-3, rtol = 1e-3 })
  t.eq(c.worst.row, 130)
  t.eq(c.worst.col, 260)
  -- reason builder accepts the comparison
  t.match(verdict.reason("incorrect", c), "^incorrect: 3 of 150000 elements differ")
  t.raises(function() verdict.compare({ 1, 2 }, { 1, 2, 3 }, { 3 }, {}) end, "elements")
end

-- docs/verdicts.md shows the one list, and the store takes it as its constraint.
function T.docs_and_store_follow_the_list(t)
  local f = assert(io.open("docs/verdicts.md"))
  local doc = f:read("a")
  f:close()
  t.ok(doc:find(verdict.markdown(), 1, true) ~= nil, "docs/verdicts.md holds verdict.markdown() verbatim")
  for i, v in ipairs(verdict.LIST) do
    t.eq(verdict.NAMES[i], v.name)
    t.eq(verdict.SHORT[v.name], v.short)
    t.ok(verdict.reason(v.name, "x"):find("^" .. v.name .. ": x$") ~= nil, "reason of " .. v.name)
  end
  local db = assert(require("klab.store").open(":memory:"))
  local cand = db:put_candidate { language = "ptx", code = "x" }
  t.eq(verdict.define(db), true)
  t.eq(db:first("SELECT count(*) AS n FROM verdicts").n, #verdict.LIST)
  for _, v in ipairs(verdict.LIST) do
    t.ok(db:record_evaluation { key = v.name, candidate = cand, task = "t", arch = "sm_90a", verdict = v.name },
      v.name .. " is accepted")
  end
  t.raises(function()
    db:record_evaluation { key = "bad", candidate = cand, task = "t", arch = "sm_90a", verdict = "fast" }
  end, "unknown verdict 'fast'")
  db:close()
end

-- The report takes each verdict's colour and the verdicts that are not a
-- result from the one list: a new verdict gets its own colour.
function T.report_reads_the_list(t)
  local verdict = require "klab.eval.verdict"
  local figures = require "klab.report.figures"
  local metrics = require "klab.report.metrics"
  local seen = {}
  for _, v in ipairs(verdict.LIST) do
    local c = figures.VERDICT_COLORS[v.name]
    t.ok(type(c) == "string" and c:match("^#%x%x%x%x%x%x$"), v.name .. " has a colour")
    t.ok(c == nil or not seen[c], v.name .. "'s colour is its own")
    if c then seen[c] = true end
    t.eq(metrics.NOT_RESULT[v.name] == true, v.class == "not_measured", v.name .. " is a result or not")
  end
end

return T
