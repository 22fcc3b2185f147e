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
