-- Tests of klab.eval.verdict: the list, precedence, and every reason the
-- authority can build.
local verdict = require("klab.eval.verdict")

local T = {}

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

function T.classes_say_what_counts(t)
  t.ok(verdict.correct("passed"))
  t.ok(verdict.correct("target_not_executed"))
  t.ok(not verdict.correct("incorrect"))
  t.ok(not verdict.correct("unknown"))
  t.ok(not verdict.measured("unknown"))
  t.ok(not verdict.measured("request_error"))
  t.ok(verdict.measured("incorrect"))
  local seen = { families = { wgmma = { status = "executed" }, tma = { status = "executed" } }, status = "ok" }
  t.ok(verdict.verified("passed", seen))
  t.ok(not verdict.verified("target_not_executed", seen))
  t.ok(not verdict.verified("passed", nil), "passed without the instruction stage is not verified")
  t.ok(not verdict.verified("passed", { status = "ok", families = {} }))
  t.ok(not verdict.verified("passed", { status = "ok", families = { wgmma = { status = "not_executed" } } }))
  t.ok(not verdict.verified("passed", { status = "unavailable", families = { wgmma = { status = "executed" } } }))
end

-- The questions other modules ask, each answered for every verdict: the
-- set of verdicts that say yes, written out.
function T.questions_name_their_verdicts(t)
  local want = {
    passed = { "passed" },
    undecided = { "unknown" },
    request_failed = { "request_error" },
    no_candidate = { "request_error", "extraction_error" },
    target_missing = { "target_not_executed" },
    not_loaded = { "compile_error", "load_error" },
    before_gpu = { "compile_error", "plan_error" },
  }
  for q, names in pairs(want) do
    local yes = {}
    for _, n in ipairs(verdict.NAMES) do
      if verdict[q](n) then yes[#yes + 1] = n end
    end
    table.sort(yes)
    table.sort(names)
    t.eq(table.concat(yes, ","), table.concat(names, ","), q)
    t.ok(not verdict[q](nil), q .. "(nil)")
  end
end

-- One example of every situation of every verdict, and a pattern its
-- reason must match: a new situation without an example fails here.
local EXAMPLES = {
  request_error = {
    message = { { message = "HTTP 503 from the server\nretry later" }, "^HTTP 503 from the server retry later$" },
  },
  extraction_error = {
    message = { { message = "no ```cuda block in the reply" }, "^no ```cuda block in the reply$" },
  },
  compile_error = {
    compiler = { { message = "kernel.cu(3): error: identifier \"q\" is undefined" }, "^compile error: kernel%.cu%(3%)" },
    rejected = { { message = "line 4: device-side launch" }, "^rejected: line 4: device%-side launch$" },
  },
  load_error = {
    unreadable = { {}, "^cannot read the compiled cubin$" },
    refused = { { message = "CUDA_ERROR_INVALID_PTX\nline 2" }, "^the driver refused the module: CUDA_ERROR_INVALID_PTX line 2$" },
    global = { { name = "counter", bytes = 4 }, "^cannot locate the module global counter %(4 bytes%)" },
  },
  plan_error = {
    message = { { message = "launch 1 (gemm): grid.x = 57 is not divisible by cluster.x = 2" }, "^launch 1 %(gemm%)" },
    undefined_kernel = { { kernel = "gemm2", defined = { "gemm", "fill" } },
      "^the plan launches kernel 'gemm2', but the code defines only gemm, fill$" },
    module_lacks = { { kernel = "k", message = "CUDA_ERROR_NOT_FOUND" }, "^the plan launches kernel 'k', which the module lacks: CUDA_ERROR_NOT_FOUND$" },
    param_bytes = { { index = 1, kernel = "k", expected = 20, packed = 24 },
      "^launch 1: kernel k takes 20 bytes of parameters, the plan's arguments pack into 24$" },
    threads = { { kernel = "k", threads = 1024, max = 512, registers = 128 },
      "^kernel k launched with 1024 threads per block, but it can take at most 512 %(registers: 128%)$" },
    shared = { { kernel = "k", dynamic = 300000, static = 16, limit = 232448 },
      "^kernel k asks for 300000 bytes of dynamic shared memory; with its 16 static bytes that exceeds the device's 232448$" },
  },
  runtime_error = {
    cuda = { { message = "CUDA_ERROR_ILLEGAL_ADDRESS during correctness trial 2" }, "^CUDA_ERROR_ILLEGAL_ADDRESS during correctness trial 2$" },
    profiled = { { message = "CUDA_ERROR_LAUNCH_FAILED" }, "^the kernel failed in the profiled run: CUDA_ERROR_LAUNCH_FAILED$" },
    crashed = { { signal = "SIGSEGV", stage = "correctness" }, "^the worker died with SIGSEGV while running the kernel during correctness$" },
    exited = { { code = 3 }, "^the worker exited with status 3 while running the kernel$" },
    sanitizer = { { errors = 2, first = "Invalid __global__ write of size 4\nat k+0x10" },
      "^compute%-sanitizer memcheck found 2 error%(s%): Invalid __global__ write of size 4 at k%+0x10$" },
  },
  timeout = {
    stage = { { stage = "correctness", seconds = 10 }, "^the correctness stage did not finish within its 10 s; the kernel was stopped" },
    deadline = { { seconds = 60, stage = "timing" }, "^the evaluation did not finish within 60 s during timing;" },
  },
  guard_violation = {
    guard = { { buffer = "C", side = "after", at = 0, bytes = 128, buffer_bytes = 4096, where = "trial 1" },
      "^wrote 128 byte%(s%) past the end of buffer C %(4096 bytes long; first stray byte at offset 0%) on trial 1$" },
  },
  input_modified = {
    input = { { buffer = "A", where = "trial 3" }, "^input A was changed by the kernel on trial 3$" },
  },
  incorrect = {
    compare = { { buffer = "C", failed = 12, total = 100, nan = 1, inf = 0, max_abs = 0.5, location = "[3]",
                  matched = 0.88, required = 1, atol = 0.01, rtol = 0.01, where = "trial 1" },
      "^12 of 100 elements of C differ %(1 NaN, 0 Inf; max abs err 0%.5 at %[3%]%) on trial 1; matched 88%.0000%% < 100%.0000%% required" },
    timed = { { sample = 7 }, "^the output of timed run 7 was wrong %(every timed run gets fresh inputs" },
  },
  nondeterministic = {
    bits = { { buffer = "C", bytes = 12, first = 40 },
      "^two runs on the same inputs gave different bits in C %(12 bytes differ, first at byte 40%)$" },
  },
  unexpected_launches = {
    launches = { { message = "2 launches of helper" }, "^timing saw launches the plan did not make: 2 launches of helper$" },
  },
  insufficient_work = {
    work = { { executed = 1e9, tensor = 1e9, simt = 0, task = 1e10, required = 0.5 },
      "^the kernel executed 1e%+09 FLOPs %(tensor cores 1e%+09, SIMT pipes 0%), 10%.0%% of the task's 1e%+10; the task requires at least 50%%$" },
  },
  below_floor = {
    floor = { { median_us = 1.5, floor_us = 20, path = "tensor", flops = 1e12, tflops = 989, compute_us = 20, bytes = 1e6,
                gbs = 4800, memory_us = 0.2 }, "^median 1%.50 us is below the physical floor of 20%.00 us %(tensor:" },
  },
  target_not_executed = {
    missing = { { missing = { "wgmma" }, arch = "sm_90a", hmma_frac = 1 },
      "^wgmma did not execute %(0 warp instructions%), though the task targets it on sm_90a; 100%.0%% of the task's FLOPs went through mma%.sync" },
    path = { { family = "wgmma", count = 1, frac = 0.01, min = 0.5, hmma = 0.99, other = 0 },
      "^wgmma executed %(1 warp instruction%) but carried only 1%.0%% of the task's FLOPs %(< 50%%%)" },
    type = { { type = "fp8", frac = 0, task = 1.37e11, required = 0.5, ran = { { "bf16", 1 } } },
      "^the task's tensor%-core path is fp8, but fp8 tensor FLOPs were 0%.0%% .*; the tensor cores ran bf16 100%.0%%$" },
  },
  unknown = {
    message = { { message = "no profiling rights" }, "^no profiling rights$" },
    no_gpu = { { message = "no CUDA driver" }, "^GPU stages skipped: no CUDA driver$" },
    baseline = { { message = "cuBLASLt found no algorithm" }, "^the baseline could not run: cuBLASLt found no algorithm$" },
    worker = { { message = "lost the pipe" }, "^the evaluation itself failed: lost the pipe$" },
    judge = { { what = "check a timed output", message = "scripts/klab/eval/stage/timing.lua:145: cuCtxSynchronize: "
      .. "CUDA_ERROR_ILLEGAL_ADDRESS (700)\nstack traceback:\n\t[C]: in function 'error'", again = true },
      "^klab's own step failed %(check a timed output%), not the kernel: cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS "
      .. "%(700%); twice, the second time alone in a fresh worker$" },
    start = { { message = "no such task" }, "^the evaluation could not start: no such task$" },
    not_stored = { {}, "^the candidate is not in the store$" },
    awaiting = { {}, "^built and plan%-checked; its GPU stages wait for klab judge$" },
  },
  passed = {
    evaluated = { {}, "^correct on every trial and timed run$" },
    baseline = { {}, "^the baseline matches the reference$" },
    replay = { {}, "^the last replayed run was correct$" },
  },
}

-- A worker that died is judged again in a fresh one before the candidate is
-- blamed; the second death says so.
function T.a_second_death_says_so(t)
  t.match(verdict.reason("runtime_error", { kind = "crashed", signal = "SIGSEGV", stage = "timing", again = true }),
    "^the worker died with SIGSEGV while running the kernel during timing, twice %(the second time alone, in a fresh worker%)$")
end

-- A reason is shown to a model: what klab's own code added to a message on
-- its way up (a traceback, the place in klab's Lua that raised) is not in
-- it, while a user's own file and line stay.
function T.reasons_hold_no_klab_internals(t)
  local r = verdict.reason("runtime_error", { kind = "cuda", message = "/opt/k/scripts/klab/eval/stage/timing.lua:145: "
    .. "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered\nstack traceback:\n"
    .. "\t[C]: in function 'error'\n\tscripts/klab/eval/stage/timing.lua:145: in upvalue 'check_sample'" })
  t.eq(r, "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered")
  t.eq(verdict.reason("plan_error", { message = "plan.lua:3: attempt to index a nil value" }),
    "plan.lua:3: attempt to index a nil value")
end

function T.every_reason_is_one_line(t)
  local n = 0
  for _, v in ipairs(verdict.LIST) do
    local examples = EXAMPLES[v.name]
    t.ok(examples ~= nil, v.name .. " has examples")
    for _, kind in ipairs(verdict.situations(v.name)) do
      local ex = examples and examples[kind]
      t.ok(ex ~= nil, v.name .. "/" .. kind .. " has an example")
      if ex then
        local d = {}
        for k, x in pairs(ex[1]) do d[k] = x end
        d.kind = kind
        local r = verdict.reason(v.name, d)
        t.match(r, ex[2])
        t.ok(not r:find("[\r\n]"), v.name .. "/" .. kind .. " is one line")
        t.ok(r:sub(1, #v.name + 1) ~= v.name .. ":", v.name .. "/" .. kind .. " does not repeat the name")
        local made = verdict.make(v.name, d)
        t.eq(made.verdict, v.name)
        t.eq(made.reason, r)
        local rec = verdict.give({ other = 1 }, v.name, d)
        t.eq(rec.verdict, v.name)
        t.eq(rec.reason, r)
        t.eq(rec.other, 1)
        n = n + 1
      end
    end
    for kind in pairs(examples or {}) do
      local found = false
      for _, k in ipairs(verdict.situations(v.name)) do found = found or k == kind end
      t.ok(found, v.name .. "/" .. kind .. " is a situation of the authority")
    end
  end
  t.ok(n >= 40, "examples cover " .. n .. " situations")
end

function T.text_from_elsewhere_is_bounded(t)
  local r = verdict.reason("compile_error", { kind = "compiler", message = ("x"):rep(5000) .. "\n\nend" })
  t.ok(#r <= 640, "a long compiler log is cut: " .. #r)
  t.match(r, "%.%.%.$")
end

function T.misuse_is_an_error(t)
  t.raises(function() verdict.reason("bogus", { message = "x" }) end, "unknown verdict")
  t.raises(function() verdict.reason("incorrect", "a string") end, "detail must be a table")
  t.raises(function() verdict.reason("incorrect", { kind = "vibes" }) end, "has no situation 'vibes'")
  t.raises(function() verdict.make("passed", { kind = "message", message = "x" }) end, "has no situation 'message'")
end

function T.docs_and_store_follow_the_list(t)
  local f = assert(io.open("docs/verdicts.md"))
  local doc = f:read("a")
  f:close()
  t.ok(doc:find(verdict.markdown(), 1, true) ~= nil, "docs/verdicts.md holds verdict.markdown() verbatim")
  for i, v in ipairs(verdict.LIST) do
    t.eq(verdict.NAMES[i], v.name)
    t.eq(verdict.SHORT[v.name], v.short)
  end
  local records = require("klab.store.records")
  local db = assert(require("klab.store").open(":memory:"))
  local cand = db:put_candidate { language = "ptx", code = "x" }
  t.eq(records.define_verdicts(db), true)
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

-- The stage registry is what docs/verdicts.md and klab eval --help show,
-- and every verdict's stage in the list may give it.
function T.stages_follow_the_registry(t)
  local stages = require "klab.eval.stages"
  local f = assert(io.open("docs/verdicts.md"))
  local doc = f:read("a")
  f:close()
  t.ok(doc:find(stages.text(), 1, true) ~= nil, "docs/verdicts.md holds stages.text() verbatim")
  local code, out = t.sh(("'%s' eval --help"):format(t.klab))
  t.eq(code, 0)
  t.ok(out:find(stages.text(), 1, true) ~= nil, "klab eval --help lists the stages")
  for _, v in ipairs(verdict.LIST) do
    if stages.get(v.stage) then t.ok(stages.allows(v.stage, v.name), v.name .. " is given by " .. v.stage) end
  end
end

-- The report takes each verdict's colour and the verdicts that are not a
-- result from the one list: a new verdict gets its own colour.
function T.report_reads_the_list(t)
  local gnuplot = require "klab.report.gnuplot"
  local metrics = require "klab.report.metrics"
  local seen = {}
  for _, v in ipairs(verdict.LIST) do
    local c = gnuplot.VERDICT_COLORS[v.name]
    t.ok(type(c) == "string" and c:match("^#%x%x%x%x%x%x$"), v.name .. " has a colour")
    t.ok(c == nil or not seen[c], v.name .. "'s colour is its own")
    if c then seen[c] = true end
    t.eq(metrics.NOT_RESULT[v.name] == true, v.class == "not_measured", v.name .. " is a result or not")
  end
end

return T
