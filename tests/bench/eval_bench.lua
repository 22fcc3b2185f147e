-- tests/bench/eval_bench.lua: how fast and how true klab's evaluation is, on
-- a GPU machine. Prints these tables:
--
--   1. the stages of one evaluation of the wgmma sample on the PTXBench
--      shape, with a cold worker (new process, no compile cache) and warm;
--   2. evaluations per minute over a batch of candidates (samples and
--      known-bad kernels) with a stated timing budget: one worker in turn,
--      the pool on one GPU, two workers sharing the GPU; and 2b, the
--      study-like batch of 60 (tests/bench/study/) per GPU-hour, with the
--      pool on every GPU too where the machine has several, the new proof
--      (the default) beside the old one (proof = "full") with both lines'
--      verdicts per candidate, and for each line one number: the batch's
--      GPU time over the GPU time of the runs its rules require;
--   3. klab's median kernel time against ncu's gpu__time_duration for the
--      same kernels (ncu runs `klab replay`, so it sees the same launches);
--   4. cuBLASLt through klab against torch.matmul, same shapes, same run.
--
--   build/klab tests/bench/eval_bench.lua [--skip ncu,torch,batch,study]

local eval = require "klab.eval"
local sys = require "klab.sys"
local cjson = require "cjson"

local skip = {}
do
  local a = arg or {}
  for i = 1, #a do
    local list = a[i]:match("^%-%-skip=?(.*)$")
    if list == "" then list = a[i + 1] end -- "--skip ncu,torch" as well as "--skip=ncu,torch"
    if list then for w in list:gmatch("[^,]+") do skip[w] = true end end
  end
end

-- Figures without a GPU would be figures of nothing: say so and end with
-- "could not run".
-- GPUS: how many the workers see (the pool's rows use them all).
local GPUS
do
  local probe <close> = eval.session { gpus = 1, cpu = 0 }
  local m = probe:machine()
  if m.none then
    require("klab.errors").raise("unavailable", "eval_bench measures on a GPU, and there is none here: " .. m.none)
  end
  GPUS = m.gpus or 1
end

local function line(...) io.write(string.format(...), "\n") end
local function ms(s) return s and string.format("%9.1f", s * 1000) or "        -" end
-- The named parts of a stage (seconds) in milliseconds, in the order given.
local CORRECTNESS_PARTS = { "inputs", "reference", "poison", "run", "checks", "compare", "determinism", "decide" }
local PROFILER_PHASES = { "enable", "config", "prepare", "start", "run", "stop", "evaluate", "disable" }
local function parts_ms(t, keys, digits)
  local out = {}
  for _, k in ipairs(keys) do
    if t and t[k] then out[#out + 1] = string.format("%s %." .. digits .. "f", k, t[k] * 1000) end
  end
  return table.concat(out, ", ")
end

-- The line for an evaluation that ran twice (a worker that died, or a
-- neighbour's fault) in the way named way: what its first run gave.
local function ran_twice(way, candidate, task, r)
  return string.format("   ran twice (%s) in '%s': %s on %s: first %s (%s), then %s", tostring(r.rerun_alone.why), way,
    candidate, task, tostring(r.rerun_alone.verdict), tostring(r.rerun_alone.reason), r.verdict)
end

local PTX_TASK = "gemm_bf16/8192x7168x5120"
local WGMMA = "tasks/gemm/samples/wgmma_tma"

-- 1. Stages, cold and warm. The worker and the compile cache start empty.
local stage_rows = {}
do
  local s <close> = eval.session { deadline = 300 }
  local cold = assert(s:evaluate(PTX_TASK, WGMMA, { cache = false, force = true, timing_opts = { budget_s = 5 } }))
  -- Warm: the same candidate again once the compile cache and the census
  -- hold it (the cold run reads neither, so one evaluation fills them).
  assert(s:evaluate(PTX_TASK, WGMMA, { force = true, timing_opts = { budget_s = 1 } }))
  -- 'before': the range profiler enabled and disabled around every
  -- measurement (profiler_persistent = false), so each candidate pays its
  -- start. 'warm': kept enabled in the worker (the default,
  -- docs/profile.md).
  local before = assert(s:evaluate(PTX_TASK, WGMMA, { force = true, profiler_persistent = false,
    timing_opts = { budget_s = 5 } }))
  assert(s:evaluate(PTX_TASK, WGMMA, { force = true, profiler_persistent = true, timing_opts = { budget_s = 1 } }))
  local warm = assert(s:evaluate(PTX_TASK, WGMMA, { force = true, profiler_persistent = true,
    timing_opts = { budget_s = 5 } }))
  for _, r in ipairs { { "cold", cold }, { "before", before }, { "warm", warm } } do
    local st = r[2].stages
    local sass_s = st.build and st.build.sass and st.build.sass.seconds
    local known = (st.build and st.build.seconds or 0) + (sass_s or 0) + (st.plan and st.plan.seconds or 0) +
      (st.load and st.load.seconds or 0) + (st.correctness and st.correctness.seconds or 0) +
      (st.timing and st.timing.seconds or 0) + (st.instructions and st.instructions.seconds or 0)
    stage_rows[#stage_rows + 1] = { r[1], r[2].verdict, st.build and st.build.seconds, st.build and st.build.cached,
      st.plan and st.plan.seconds, st.load and st.load.seconds, st.correctness and st.correctness.seconds,
      st.instructions and st.instructions.seconds, st.timing and st.timing.seconds, r[2].seconds - known, r[2].seconds,
      st.timing and st.timing.candidate and st.timing.candidate.median, st.timing and st.timing.speedup, sass_s,
      r[2].seconds - (st.timing and st.timing.seconds or 0), st.instructions and st.instructions.passes,
      st.instructions and st.instructions.phase_seconds, st.build and st.build.sass and st.build.sass.cached,
      st.instructions and st.instructions.profiler_reused, st.correctness and st.correctness.parts,
      r[2].worker_seconds, st.correctness and st.correctness.trials and #st.correctness.trials }
  end
end
line("\n1. One evaluation of %s on %s (ms; 'worker' is process start, CUDA init,", WGMMA, PTX_TASK)
line("   judge compile, inputs and references: what a warm worker keeps)")
line("   'sass' is how long the evaluation waited for the static SASS census (nvdisasm runs during the GPU stages);")
line("   'before' enables the range profiler for the candidate (profiler_persistent = false), 'warm' keeps it (the default)")
line("%-6s %-8s %9s %6s %9s %9s %9s %9s %9s %9s %9s %9s %9s  %s", "", "verdict", "build", "cached", "sass", "plan", "load",
  "correct", "instr", "timing", "worker", "total", "no-timing", "kernel median / speedup")
for _, r in ipairs(stage_rows) do
  if r[16] then
    line("%-6s instruction stage: %s profiler passes (ms: %s); profiler %s; SASS census %s", r[1], tostring(r[16]),
      parts_ms(r[17], PROFILER_PHASES, 1), r[19] and "kept enabled" or "enabled for it", r[18] and "known from an earlier evaluation" or "taken")
  end
  if r[20] then
    -- The reference is made once per input set: its cost a set says how
    -- far a faster reference kernel, rather than fewer sets, can go.
    local sets = r[22] or 0
    line("%-6s correctness stage, %d input sets (ms): %s%s", r[1], sets, parts_ms(r[20], CORRECTNESS_PARTS, 1),
      (sets > 0 and r[20].reference) and string.format("; the reference %.1f a set", r[20].reference * 1000 / sets) or "")
  end
  if r[21] then
    line("%-6s worker process %.1f ms in all, of which stages %.1f ms; the caller's process the other %.1f ms", r[1],
      r[21] * 1000, ((r[6] or 0) + (r[7] or 0) + (r[8] or 0) + (r[9] or 0)) * 1000, (r[11] - r[21]) * 1000)
  end
end
for _, r in ipairs(stage_rows) do
  line("%-6s %-8s %s %6s %s %s %s %s %s %s %s %s %s  %.1f us / %.3fx", r[1], r[2], ms(r[3]), tostring(r[4]), ms(r[14]),
    ms(r[5]), ms(r[6]), ms(r[7]), ms(r[8]), ms(r[9]), ms(r[10]), ms(r[11]), ms(r[15]), r[12] or 0, r[13] or 0)
end

-- 2. Throughput over a batch, three ways in this one run: one worker
-- evaluating one candidate after another (compiles in this process); the
-- pool on one GPU (compiles and plans on CPU workers while the GPU works);
-- two GPU workers sharing the GPU (they take turns on its exclusive stages).
if not skip.batch then
  local batch = {
    "tasks/gemm/samples/naive", "tasks/gemm/samples/mma_sync", "tasks/gemm/samples/wgmma_tma",
    "tasks/gemm/bad/writes_nothing", "tasks/gemm/bad/partial_output", "tasks/gemm/bad/copies_input",
    "tasks/gemm/bad/cached_result", "tasks/gemm/bad/first_calls_only", "tasks/gemm/bad/writes_past_end",
    "tasks/gemm/bad/modifies_input", "tasks/gemm/bad/racy", "tasks/gemm/bad/low_precision",
    "tasks/gemm/bad/illegal_address",
  }
  local task = "gemm_bf16/4096x4096x4096"
  local budget = 1
  local cpu = require("klab.eval.pool").default_cpu()
  local ways = {
    -- The hopeless rule off: every candidate timed to the 0.5% interval,
    -- to show what the rule changes (docs/timing.md).
    { "one worker, timed in full", { gpus = 1, cpu = 0 }, false, 0 },
    { "one worker, in turn", { gpus = 1, cpu = 0 }, false },
    -- The range profiler enabled for each candidate (profiler_persistent =
    -- false) instead of kept (the default).
    { "one worker, profiler per candidate", { gpus = 1, cpu = 0 }, false, nil, false },
    { "pool, 1 GPU, " .. cpu .. " CPU workers", { gpus = 1, cpu = cpu }, true },
    { "pool, 2 workers share the GPU", { gpus = 1, per_gpu = 2, cpu = cpu }, true },
  }
  local rows = {}
  for _, w in ipairs(ways) do
    local o = { deadline = 120 }
    for k, v in pairs(w[2]) do o[k] = v end
    local s <close> = eval.session(o)
    -- Warm every worker and the task's inputs first: steady state is what a
    -- sweep sees.
    local warm = {}
    for i = 1, (o.per_gpu or 1) do warm[i] = s:submit(task, batch[3], { force = true, timing = false }) end
    for _, t in ipairs(warm) do s:wait(t) end
    local t0 = sys.now()
    local counts, verdicts_of, families_of = {}, {}, {}
    -- No compile cache: every way compiles every candidate, as a sweep of
    -- new candidates does.
    local opts = { force = true, cache = false, profiler_persistent = w[5],
      timing_opts = { budget_s = budget, hopeless = w[4] } }
    local speed_of, timing_s = {}, {}
    -- Each result as it lands (stderr), so that a slow one shows.
    local twice = {}
    local function landed(i, r)
      verdicts_of[i] = r.verdict
      if r.rerun_alone then twice[#twice + 1] = ran_twice(w[1], batch[i], task, r) end
      local ins = r.stages and r.stages.instructions
      if ins and ins.families then
        local fam = {}
        for name, f in pairs(ins.families) do fam[#fam + 1] = name .. "=" .. tostring(f.status) end
        table.sort(fam)
        families_of[i] = table.concat(fam, " ")
      end
      local st, parts = r.stages or {}, {}
      speed_of[i] = st.timing and (require("klab.eval.stages").speedup_text(st.timing) or "-") or "-"
      timing_s[i] = st.timing and st.timing.seconds
      for _, k in ipairs { "correctness", "instructions", "timing" } do
        if st[k] and st[k].seconds then parts[#parts + 1] = string.format("%s %.2f", k:sub(1, 5), st[k].seconds) end
      end
      io.stderr:write(string.format("   [%s] %6.1f s  %-36s %-20s %5.2f s  (%s)%s\n", w[1], sys.now() - t0, batch[i],
        r.verdict, r.seconds or 0, table.concat(parts, ", "),
        (r.verdict == "unknown" or r.verdict == "runtime_error") and (": " .. tostring(r.reason)) or
          (st.instructions and st.instructions.status == "unknown" and (": instructions " .. tostring(st.instructions.reason))
            or "")))
    end
    if w[3] then
      local tickets = {}
      for i, c in ipairs(batch) do tickets[assert(s:submit(task, c, opts))] = i end
      while s:pending() > 0 do
        for _, d in ipairs(s:poll(0.5)) do landed(tickets[d.ticket], d.result) end
      end
    else
      for i, c in ipairs(batch) do landed(i, s:evaluate(task, c, opts)) end
    end
    local wall = sys.now() - t0
    for _, v in pairs(verdicts_of) do counts[v] = (counts[v] or 0) + 1 end
    local parts = {}
    for v, n in pairs(counts) do parts[#parts + 1] = v .. "=" .. n end
    table.sort(parts)
    rows[#rows + 1] = { w[1], wall, #batch / wall * 60, table.concat(parts, " "), verdicts_of, speed_of, timing_s,
      families_of }
    if #rows == 1 then
      line("\n2. Batch of %d candidates on %s, timing budget %g s each", #batch, task, budget)
      line("%-36s %9s %10s %8s  %s", "", "seconds", "evals/min", "x first", "verdicts")
    end
    local r = rows[#rows]
    line("%-36s %9.1f %10.1f %8.2f  %s", r[1], r[2], r[3], r[3] / rows[1][3], r[4])
    for _, t in ipairs(twice) do line("%s", t) end
    io.stdout:flush()
  end
  -- What the hopeless rule changed: per candidate, the speedup and the
  -- timing stage's seconds timed in full (first way) and by the rule
  -- (second way).
  line("\n   timed in full vs by the hopeless rule (< 0.5x: stopped once decided)")
  line("   %-36s %-20s %12s %12s %9s %9s", "candidate", "verdict", "speedup full", "speedup", "timing s", "full s")
  for i, c in ipairs(batch) do
    local f, r = rows[1], rows[2]
    line("   %-36s %-20s %12s %12s %9s %9s", c, tostring(r[5][i]), tostring(f[6][i]), tostring(r[6][i]),
      r[7][i] and string.format("%.2f", r[7][i]) or "-", f[7][i] and string.format("%.2f", f[7][i]) or "-")
  end
  -- The same verdict for every candidate, whichever way it ran.
  for i, c in ipairs(batch) do
    for k = 2, #rows do
      if rows[k][5][i] ~= rows[1][5][i] then
        line("   verdicts differ for %s: %s (%s) vs %s (%s)", c, tostring(rows[1][5][i]), rows[1][1],
          tostring(rows[k][5][i]), rows[k][1])
      end
      if rows[k][8][i] ~= rows[1][8][i] then
        line("   instruction families differ for %s: %s (%s) vs %s (%s)", c, tostring(rows[1][8][i]), rows[1][1],
          tostring(rows[k][8][i]), rows[k][1])
      end
    end
  end
end

-- 2b. The study-like batch (tests/bench/study/batch.jsonl): 60 candidates
-- with a PTXBench-style study's mix (compile and plan errors, incorrect,
-- correct but slow, correct and fast) over GEMM, attention and the
-- memory-bound tasks at their main shapes, with the default timing budget
-- and the hopeless rule: evaluations per GPU-hour for one worker and the
-- pool, and the GPU seconds each class of candidate took.
if not skip.study then
  local list = {}
  local here = "tests/bench/study/"
  -- A candidate is named from the repository's root ("tasks/x", not
  -- "tests/bench/study/../../../tasks/x"); one that is missing stops the
  -- benchmark before any GPU time is spent, naming its line.
  local fs = require "klab.fs"
  local root = assert(fs.realpath("."))
  local n = 0
  for line in io.lines(here .. "batch.jsonl") do
    n = n + 1
    local e = cjson.decode(line)
    local c = e.candidate
    if c:sub(1, 1) ~= "/" then
      local full, err = fs.realpath(here .. c)
      if not full then error(("%sbatch.jsonl:%d: %s"):format(here, n, err), 0) end
      c = full:sub(1, #root + 1) == root .. "/" and full:sub(#root + 2) or full
    end
    list[#list + 1] = { task = e.task, candidate = c, class = e.class }
  end
  local cpu = require("klab.eval.pool").default_cpu()
  -- The seconds an evaluation must spend in the kernels it judges, however
  -- fast the judge around them, under the rules it ran by: the candidate's
  -- runs in correctness (every trial and the determinism run), one per
  -- profiler pass, every timed sample of the candidate and the baseline
  -- when the timing stage measured, and the kept baseline's samples when
  -- this evaluation measured them (the correctness runs decided the
  -- hopeless rule: docs/timing.md), at their medians. Known only for a
  -- candidate with a median; 0 for the others.
  local function own_kernel_seconds(r)
    local st = r.stages or {}
    local tm, ct = st.timing, (st.correctness or {}).timed
    local cm = tm and tm.candidate and tm.candidate.median
    if not cm then return 0 end
    local runs = #((st.correctness or {}).trials or {}) + 1 + ((st.instructions or {}).passes or 0)
    local base = 0
    if tm.measured ~= false then
      runs = runs + (tm.candidate.n or 0)
      base = (tm.baseline and tm.baseline.n or 0) * (tm.baseline and tm.baseline.median or 0)
    end
    if ct and ct.baseline_measured and ct.baseline then base = base + (ct.baseline.n or 0) * (ct.baseline.median_us or 0) end
    return (runs * cm + base) / 1e6
  end
  -- The GPU seconds of an evaluation's stages.
  local function gpu_seconds(r)
    local st, gs = r.stages or {}, 0
    for _, k in ipairs { "load", "correctness", "instructions", "timing", "sanitizer" } do
      gs = gs + (st[k] and st[k].seconds or 0)
    end
    return gs
  end
  -- The range profiler enabled for every candidate (profiler_persistent =
  -- false), then kept enabled in the worker (the default), with the full
  -- proof (the old pipeline: every element compared, no correctness run
  -- timed, every candidate timed) beside the default one (sampled
  -- distributions, timed correctness runs that may decide the hopeless
  -- rule, one determinism run; docs/timing.md); the pool on one GPU, and
  -- on every GPU where the machine has more than one. {label, session
  -- options, profiler_persistent, GPUs, proof}.
  local gpus = GPUS
  local ways = { { "one worker, profiler per candidate", { gpus = 1, cpu = 0 }, false, 1 },
    { "one worker, profiler kept", { gpus = 1, cpu = 0 }, nil, 1 },
    { "one worker, profiler kept, full proof", { gpus = 1, cpu = 0 }, nil, 1, "full" },
    { "pool, 1 GPU, " .. cpu .. " CPU workers", { gpus = 1, cpu = cpu }, nil, 1 } }
  local KEPT, FULL, POOL = 2, 3, 4
  if gpus >= 2 then
    ways[#ways + 1] = { ("pool, %d GPUs, %d CPU workers"):format(gpus, cpu), { gpus = "all", cpu = cpu }, nil, gpus }
  end
  local got = {}
  line("\n2b. Study-like batch: %d candidates (tests/bench/study/batch.jsonl), default timing budget", #list)
  line("%-36s %9s %12s  %s", "", "seconds", "evals/GPU-h", "verdicts")
  for wi, w in ipairs(ways) do
    local o = { deadline = 180 }
    for k, v in pairs(w[2]) do o[k] = v end
    local s <close> = eval.session(o)
    -- One warm-up job per GPU, at once, so that every GPU worker has
    -- started before the clock does.
    local warm = {}
    for k = 1, w[4] do
      local e = list[#list - k + 1]
      warm[k] = s:submit(e.task, e.candidate, { force = true, timing = false })
    end
    for _, tk in ipairs(warm) do s:wait(tk) end
    local t0 = sys.now()
    local tickets, res = {}, {}
    for i, e in ipairs(list) do
      tickets[assert(s:submit(e.task, e.candidate, { force = true, profiler_persistent = w[3], proof = w[5] }))] = i
    end
    while s:pending() > 0 do
      for _, d in ipairs(s:poll(0.5)) do res[tickets[d.ticket]] = d.result end
    end
    local wall = sys.now() - t0
    local counts, by_class = {}, {}
    for i, r in ipairs(res) do
      counts[r.verdict] = (counts[r.verdict] or 0) + 1
      local st, gs = r.stages or {}, gpu_seconds(r)
      local c = by_class[list[i].class] or { n = 0, s = 0, parts = {}, hopeless = 0, decided = 0 }
      for _, k in ipairs { "load", "correctness", "instructions", "timing", "sanitizer" } do
        c.parts[k] = (c.parts[k] or 0) + (st[k] and st[k].seconds or 0)
      end
      if st.timing and st.timing.stop_reason == "hopeless" then c.hopeless = c.hopeless + 1 end
      if st.timing and st.timing.measured == false then c.decided = c.decided + 1 end
      c.own = (c.own or 0) + own_kernel_seconds(r)
      c.n, c.s = c.n + 1, c.s + gs
      by_class[list[i].class] = c
    end
    local parts = {}
    for v, n in pairs(counts) do parts[#parts + 1] = v .. "=" .. n end
    table.sort(parts)
    -- Per GPU-hour: the wall time on every GPU the way used.
    line("%-36s %9.1f %12.0f  %s", w[1], wall, #list / (wall * w[4]) * 3600, table.concat(parts, " "))
    got[wi] = { res = res, by_class = by_class, wall = wall }
    io.stdout:flush()
  end
  if #ways > POOL then
    line("   %d GPUs against one (the pool rows): %.2fx the evaluations per hour", gpus, got[POOL].wall / got[POOL + 1].wall)
  end
  -- The default proof against the full one: the same verdicts, and every
  -- speedup above 0.5x inside the other's interval.
  do
    local same, differ, within, outside = 0, 0, 0, 0
    for i, e in ipairs(list) do
      local a, b = got[KEPT].res[i], got[FULL].res[i]
      if a.verdict == b.verdict then same = same + 1 else
        differ = differ + 1
        line("   proofs differ for %s on %s: %s (sampled) vs %s (full): %s", e.candidate, e.task, a.verdict, b.verdict,
          tostring(a.reason or b.reason))
      end
      local ta, tb = a.stages and a.stages.timing, b.stages and b.stages.timing
      if ta and tb and ta.speedup and tb.speedup and (ta.speedup > 0.5 or tb.speedup > 0.5) then
        local ca, cb = ta.speedup_ci, tb.speedup_ci
        if ca and cb and ca[1] <= cb[2] and cb[1] <= ca[2] then within = within + 1 else
          outside = outside + 1
          line("   speedups differ for %s on %s: %.3f (sampled) vs %.3f (full)", e.candidate, e.task, ta.speedup,
            tb.speedup)
        end
      end
    end
    line("   proof sampled vs full: %d verdicts equal, %d differ; speedups above 0.5x: %d overlap, %d do not",
      same, differ, within, outside)
    -- Both lines per candidate: the verdict, the speedup, and whether the
    -- timing stage measured or the correctness runs decided (new proof:
    -- sampled distributions, timed correctness runs, one determinism run).
    line("   per candidate: the new proof (%s) and the old one (%s)", ways[KEPT][1], ways[FULL][1])
    line("   %-34s %-30s %-20s %-20s %10s %10s  %s", "candidate", "task", "verdict new", "verdict old", "speedup new",
      "speedup old", "timing new / old")
    local st_text = require("klab.eval.stages").speedup_text
    local function how(r)
      local tm = r.stages and r.stages.timing
      if not tm then return "-" end
      return tm.measured == false and "decided from correctness" or string.format("measured %.2f s", tm.seconds or 0)
    end
    for i, e in ipairs(list) do
      local a, b = got[KEPT].res[i], got[FULL].res[i]
      local ta, tb = a.stages and a.stages.timing, b.stages and b.stages.timing
      line("   %-34s %-30s %-20s %-20s %10s %10s  %s / %s", e.candidate:match("[^/]+/[^/]+$") or e.candidate, e.task,
        tostring(a.verdict), tostring(b.verdict), ta and st_text(ta) or "-", tb and st_text(tb) or "-", how(a), how(b))
    end
    -- One number per line for the batch: its GPU time over the GPU time of
    -- the runs its rules require (the judged kernels' own runs at their
    -- medians, own_kernel_seconds).
    for _, k in ipairs { KEPT, FULL } do
      local all, own, decided = 0, 0, 0
      for _, r in ipairs(got[k].res) do
        all, own = all + gpu_seconds(r), own + own_kernel_seconds(r)
        if r.stages and r.stages.timing and r.stages.timing.measured == false then decided = decided + 1 end
      end
      line("   %-40s GPU time / GPU time of the runs its rules require: %.2fx (%.2f s / %.2f s); "
        .. "%d decided from correctness runs", ways[k][1], own > 0 and all / own or 0, all, own, decided)
    end
  end
  line("   GPU seconds per class: stages load, correctness, instructions, timing (profiler per candidate / kept)")
  for _, c in ipairs { "compile_error", "plan_error", "incorrect", "slow", "fast" } do
    local x, y = got[1].by_class[c], got[2] and got[2].by_class[c]
    if x then
      line("   %-14s %3d candidates %8.2f s  %6.2f s each   kept: %8.2f s  %6.2f s each", c, x.n, x.s, x.s / x.n,
        y and y.s or 0, y and y.s / y.n or 0)
      -- Where a class's seconds went (profiler per candidate), and how
      -- many of its timings the hopeless rule ended.
      local p = x.parts
      line("   %-14s   load %.2f s, correctness %.2f s, instructions %.2f s, timing %.2f s, sanitizer %.2f s; "
        .. "%d timings ended hopeless, %d decided from the correctness runs", "", p.load or 0, p.correctness or 0,
        p.instructions or 0, p.timing or 0, p.sanitizer or 0, x.hopeless, x.decided)
      if x.own > 0 then
        line("   %-14s   of which the kernels it judges (its runs and the baseline's, at their medians) %.2f s; "
          .. "the judge around them %.2f s", "", x.own, x.s - x.own)
      end
    end
  end
  -- What the batch would give if the judge cost nothing but the kernel runs
  -- its verdicts need (above), beside what it gives.
  do
    local own, all = 0, 0
    for _, c in pairs(got[1].by_class) do own, all = own + c.own, all + c.s end
    line("   all classes: GPU stages %.2f s, the judged kernels' own runs %.2f s (GPU time / required runs: %.2fx); "
      .. "a judge that cost nothing else would give %.0f evals/GPU-h", all, own, own > 0 and all / own or 0,
      own > 0 and #list / own * 3600 or 0)
  end
  -- Per candidate (first way): where its GPU seconds went, the kernel's
  -- own time, the profiler's passes and how its timing ended.
  line("   per candidate (one worker): stage seconds; profiler passes; kernel median; timing samples and stop")
  line("   %-10s %-30s %-38s %-20s %6s %6s %3s %6s %10s %7s  %s", "class", "candidate", "task", "verdict", "corr",
    "instr", "ps", "timing", "median us", "samples", "stop")
  for i, e in ipairs(list) do
    local r = got[1].res[i]
    local st = r and r.stages or {}
    local function sec(k) return st[k] and st[k].seconds and string.format("%6.2f", st[k].seconds) or "     -" end
    local tm = st.timing
    local cand = tm and tm.candidate
    line("   %-10s %-30s %-38s %-20s %s %s %3s %s %10s %7s  %s", e.class, e.candidate:match("[^/]+/[^/]+$") or e.candidate,
      e.task, r and r.verdict or "?", sec("correctness"), sec("instructions"),
      st.instructions and st.instructions.passes and tostring(st.instructions.passes) or "-", sec("timing"),
      cand and cand.median and string.format("%.1f", cand.median) or "-",
      cand and cand.n and (tostring(cand.n) .. "/" .. tostring(tm.baseline and tm.baseline.n or "-")) or "-",
      tm and tostring(tm.stop_reason) or "-")
    if r and (r.verdict == "runtime_error" or r.verdict == "unknown") then
      line("   %-10s   %s: %s", "", r.verdict, tostring(r.reason))
    end
    local cp = st.correctness and st.correctness.parts
    if cp then line("   %-10s   correctness ms: %s", "", parts_ms(cp, CORRECTNESS_PARTS, 0)) end
    local ph = st.instructions and st.instructions.phase_seconds
    if ph then
      local ck = tm and tm.checks
      -- What decided whether the second part (mma.sync FLOPs) was measured.
      local ro = st.instructions.roles or {}
      local pt = st.instructions.parts or {}
      line("   %-10s   profiler ms: %s%s; tensor pipe %s, wgmma %s, hmma %s; parts: first %s, hmma %s, simt %s", "",
        parts_ms(ph, PROFILER_PHASES, 0),
        ck and string.format("; timing checks %.2f s (%d sampled, %d full)", ck.seconds or 0, ck.sampled or 0,
          ck.full or 0) or "", tostring(ro["inst.tensor_pipe"]), tostring(ro["inst.wgmma"]), tostring(ro["inst.hmma"]),
        tostring(pt.first), tostring(pt.hmma), tostring(pt.simt))
    end
  end
  -- Every evaluation that ran twice, in any way (a worker that died, or a
  -- neighbour's fault), and what its first run gave.
  for k = 1, #got do
    for i, e in ipairs(list) do
      local r = got[k].res[i]
      if r and r.rerun_alone then line("%s", ran_twice(ways[k][1], e.candidate, e.task, r)) end
    end
  end
  for i, e in ipairs(list) do
    for k = 2, #got do
      local a, b = got[1].res[i], got[k].res[i]
      if b and a.verdict ~= b.verdict then
        line("   verdicts differ for %s on %s: %s (%s) vs %s (%s)", e.candidate, e.task, a.verdict, ways[1][1],
          b.verdict, ways[k][1])
        line("     %s: %s; %s: %s", ways[1][1], tostring(a.reason), ways[k][1], tostring(b.reason))
      end
    end
  end
end

-- 3. klab against ncu on the same kernels.
local function ncu_median(task, cand)
  local cmd = string.format("ncu --clock-control none --metrics gpu__time_duration.sum --csv " ..
    "--kernel-name gemm build/klab replay %s %s --runs 5 2>&1", task, cand)
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  local vals = {}
  for ln in out:gmatch("[^\n]+") do
    if ln:find("gpu__time_duration.sum", 1, true) then
      -- the last quoted field is the value; the one before it the unit
      local fields = {}
      for f in ln:gmatch('"([^"]*)"') do fields[#fields + 1] = f end
      local unit, val = fields[#fields - 1], (fields[#fields] or ""):gsub(",", "")
      local v = tonumber(val)
      if v then
        if unit == "nsecond" or unit == "ns" then v = v / 1000
        elseif unit == "msecond" or unit == "ms" then v = v * 1000 end
        vals[#vals + 1] = v
      end
    end
  end
  if #vals == 0 then return nil, out:sub(-600) end
  table.sort(vals)
  return vals[(#vals + 1) // 2], #vals
end

if not skip.ncu then
  local cases = {
    { "gemm_bf16/1000x1000x1000", "tasks/gemm/samples/naive" },
    { PTX_TASK, "tasks/gemm/samples/mma_sync" },
    { PTX_TASK, WGMMA },
    { "gemm_bf16/4096x4096x4096", WGMMA },
  }
  local klab_times = {}
  do
    local s <close> = eval.session { deadline = 300 }
    for i, c in ipairs(cases) do
      local r = s:evaluate(c[1], c[2], { force = true, timing_opts = { budget_s = 5 } })
      klab_times[i] = r.stages.timing and r.stages.timing.candidate and r.stages.timing.candidate.median
    end
  end
  line("\n3. klab's median (CUPTI, L2 flushed) against ncu's gpu__time_duration (median of 5, cache control all)")
  line("%-28s %-30s %12s %12s %8s", "task", "candidate", "klab us", "ncu us", "ratio")
  for i, c in ipairs(cases) do
    local n, info = ncu_median(c[1], c[2])
    if n then
      line("%-28s %-30s %12.2f %12.2f %8.4f", c[1], c[2], klab_times[i] or 0, n, (klab_times[i] or 0) / n)
    else
      line("%-28s %-30s %12.2f %12s   ncu failed: %s", c[1], c[2], klab_times[i] or 0, "-", tostring(info))
    end
  end
end

-- 4. cuBLASLt through klab against torch.matmul. torch runs first, in its
-- own process; klab's GPU work happens in this process afterwards.
if not skip.torch then
  local shapes = { { 8192, 7168, 5120 }, { 4096, 4096, 4096 }, { 8192, 8192, 8192 } }
  local dtypes = { "bf16", "f16", "e4m3", "f32", "tf32" }
  local sh = {}
  for _, s in ipairs(shapes) do sh[#sh + 1] = table.concat(s, "x") end
  local p = io.popen("python3 tests/bench/matmul_vs_torch.py --samples 100 --shapes " .. table.concat(sh, ",") ..
    " --dtypes " .. table.concat(dtypes, ",") .. " 2>&1")
  local torch = {}
  for ln in p:lines() do
    local ok, j = pcall(cjson.decode, ln)
    if ok and type(j) == "table" and j.dtype then
      local d = function(v) return math.tointeger(v) or v end
      torch[j.dtype .. "/" .. d(j.M) .. "x" .. d(j.N) .. "x" .. d(j.K)] = j
    end
  end
  p:close()
  local gpu = require "klab.gpu"
  local blas = require "klab.blas"
  local judge = require "klab.judge"
  local jit = require "klab.jit"
  local ctx = assert(gpu.context(0))
  local props = gpu.device(0)
  local j = assert(judge.open(ctx, assert(jit.compile { source = judge.source(), lang = "cuda", arch = props.arch,
    name = "judge.cu" }).cubin))
  line("\n4. cuBLASLt (klab, best of the heuristic's top 8, L2 flushed) against torch.matmul (same run)")
  line("%-6s %-16s %12s %12s %10s %10s %8s", "dtype", "shape", "klab us", "torch us", "klab TF/s", "torch TF/s",
    "ratio")
  for _, dt in ipairs(dtypes) do
    for _, s in ipairs(shapes) do
      local M, N, K = s[1], s[2], s[3]
      local ldt = (dt == "tf32") and "f32" or dt
      local esz = ({ bf16 = 2, f16 = 2, e4m3 = 1, f32 = 4 })[ldt]
      local osz = (ldt == "e4m3") and 2 or esz
      local A = assert(ctx:alloc(M * K * esz))
      local B = assert(ctx:alloc(N * K * esz))
      local C = assert(ctx:alloc(M * N * osz))
      local jdt = ({ bf16 = "bf16", f16 = "f16", e4m3 = "fp8e4m3", f32 = "f32" })[ldt]
      j:fill(A, M * K, jdt, "normal", 1)
      j:fill(B, N * K, jdt, "normal", 2)
      local plan = assert(blas.gemm_plan(ctx, { dtype = ldt, compute = dt == "tf32" and "tf32" or "f32", M = M, N = N,
        K = K, algos = 8 }))
      local opts = { budget_s = 0.5, min_samples = 20, max_samples = 300 }
      local tm = plan:time(A, B, C, opts)
      local key = dt .. "/" .. M .. "x" .. N .. "x" .. K
      local tr = torch[key]
      local kus = tm and tm.best and tm.best.median_us
      local flops = 2 * M * N * K
      local ktf = kus and flops / kus / 1e6
      local ttf = tr and tr.tflops
      line("%-6s %-16s %12s %12s %10s %10s %8s", dt, M .. "x" .. N .. "x" .. K, kus and string.format("%.2f", kus) or "-",
        tr and string.format("%.2f", tr.median_us) or "-", ktf and string.format("%.1f", ktf) or "-",
        ttf and string.format("%.1f", ttf) or "-", (ktf and ttf) and string.format("%.4f", ktf / ttf) or "-")
      plan:free(); A:free(); B:free(); C:free()
    end
  end
end
