-- correctness_timing_test.lua: the hopeless rule decided from the timed
-- correctness runs (klab.eval.correctness_timing, docs/timing.md "Decided
-- from the correctness runs"): which rules an evaluation chooses, the
-- decision from given durations, the baseline the worker keeps (measured
-- again at 10 minutes and on another clock reading, with a clock the test
-- turns), and the timing stage's record when it was decided. The gpu_*
-- tests run the whole pipeline on a GPU and skip without one.

local ct = require "klab.eval.correctness_timing"
local timing = require "klab.timing"
local json = require "klab.json"

local T = {}

-- A candidate near 400 us (its first run cold), a baseline near 100 us.
local SLOW = { 455, 401, 398, 404, 399, 402, 400, 403 }
local NEAR = { 190, 188, 192, 189, 191, 190, 187, 193 }
local function baseline_samples()
  local b = {}
  for i = 1, 20 do b[i] = 100 + (i % 5) * 0.5 end
  return b
end

function T.the_evaluation_chooses_the_rules(t)
  local rule = ct.choose({}, nil, true)
  t.eq(json.encode(rule), '[{"params":{"threshold":0.5},"rule":"hopeless_from_correctness"}]',
    "the default, as plain data the job carries")
  t.eq(ct.choose({}, "sampled", true)[1].params.threshold, 0.5)
  t.eq(ct.choose({}, "full", true), nil, "the full proof: the old pipeline")
  t.eq(ct.choose({}, nil, false), nil, "no timing stage: nothing to decide")
  t.eq(ct.choose({ timing_opts = { hopeless = 0 } }, nil, true), nil, "the hopeless rule off")
  t.eq(ct.choose({ timing_opts = { hopeless = 0.3 } }, nil, true)[1].params.threshold, 0.3)
  t.eq(ct.choose({ timing_opts = { correctness_stop = {} } }, nil, true), nil)
  local own = ct.choose({ timing_opts = { correctness_stop = { { "hopeless_from_correctness", threshold = 0.25 } },
    hopeless = 0.9 } }, nil, true)
  t.eq(own[1].rule, "hopeless_from_correctness")
  t.eq(own[1].params.threshold, 0.25)
  t.raises(function() ct.choose({ timing_opts = { correctness_stop = { "hopeless" } } }, nil, true) end,
    'correctness_stop%[1%] must be {"rule name"')
  -- Back in klab.timing's form, which the registry reads.
  local rules = ct.rules { correctness_stop = own }
  t.eq(rules[1][1], "hopeless_from_correctness")
  t.eq(rules[1].threshold, 0.25)
  t.eq(ct.rules {}, nil)
  t.raises(function() timing.decide({ stop = { { "hopeless_soon" } } }, SLOW, baseline_samples()) end,
    'unknown stopping rule "hopeless_soon"')
end

function T.the_rule_decides_from_given_durations(t)
  local rules = ct.rules { correctness_stop = ct.choose({}, nil, true) }
  local entry = { samples = baseline_samples() }
  local d = ct.decide(rules, SLOW, entry)
  t.eq(d.decided, "hopeless_from_correctness")
  t.eq(d.stop.rule, "hopeless_from_correctness")
  t.eq(d.stop.params.threshold, 0.5)
  t.near(d.speedup, 101 / 401.5, 1e-9, "the ratio of the medians")
  t.ok(d.speedup_upper < 0.5 and d.speedup_upper >= d.speedup, "its one-sided bound")
  -- Within reach of the threshold: not decided, the timing stage runs.
  local n = ct.decide(rules, NEAR, entry)
  t.eq(n.decided, nil)
  t.eq(n.stop, nil)
  t.ok(n.speedup_upper > 0.5)
  -- A higher threshold decides the same runs.
  t.eq(ct.decide({ { "hopeless_from_correctness", threshold = 0.6 } }, NEAR, entry).decided, "hopeless_from_correctness")
  -- Too few runs decide nothing, however slow.
  t.eq(ct.decide(rules, { 455, 401, 398, 404, 399 }, entry).decided, nil)
  t.eq(ct.decide(rules, SLOW, { samples = { 100, 100, 100, 100, 100 } }).decided, nil)
  -- A fast candidate never.
  t.eq(ct.decide(rules, { 50, 51, 49, 50, 52, 50, 51 }, entry).decided, nil)
end

function T.the_kept_baseline_is_measured_again_at_ten_minutes_or_another_clock(t)
  local now = 1000
  local kept = ct.kept(function() return now end)
  local e, why = kept:get("gemm_bf16/4096x4096x4096\0GPU-1", 1980)
  t.eq(e, nil)
  t.eq(why, "first")
  kept:put("gemm_bf16/4096x4096x4096\0GPU-1", { samples = baseline_samples(), clock_mhz = 1980 })
  now = now + 599
  e = kept:get("gemm_bf16/4096x4096x4096\0GPU-1", 1980)
  t.ok(e and #e.samples == 20, "kept within ten minutes")
  t.eq(select(2, kept:get("gemm_bf16/4096x4096x4096\0GPU-2", 1980)), "first", "another card")
  t.eq(select(2, kept:get("gemm_bf16/8192x8192x8192\0GPU-1", 1980)), "first", "another variant")
  e, why = kept:get("gemm_bf16/4096x4096x4096\0GPU-1", 1755)
  t.eq(e, nil)
  t.eq(why, "clock", "a run read another SM clock")
  t.ok(kept:get("gemm_bf16/4096x4096x4096\0GPU-1", nil), "no reading (no NVML): only its age counts")
  now = now + 2
  e, why = kept:get("gemm_bf16/4096x4096x4096\0GPU-1", 1980)
  t.eq(e, nil)
  t.eq(why, "age", "older than ten minutes")
  kept:put("gemm_bf16/4096x4096x4096\0GPU-1", { samples = baseline_samples(), clock_mhz = 1755 })
  t.ok(kept:get("gemm_bf16/4096x4096x4096\0GPU-1", 1755), "measured again, kept again")
  t.eq(kept.by["gemm_bf16/4096x4096x4096\0GPU-1"].at, now)
end

-- When the correctness runs decided, the timing stage measures nothing: its
-- record reads "< 0.5x" with the ratio and its bound, says so, and carries
-- the runs' statistics (no GPU needed: nothing is run).
function T.the_timing_stage_records_a_decision_from_correctness(t)
  local stage = require "klab.eval.stage.timing"
  local stages = require "klab.eval.stages"
  local rules = ct.rules { correctness_stop = ct.choose({}, nil, true) }
  local entry = { samples = baseline_samples() }
  local d = ct.decide(rules, SLOW, entry)
  local timed = { method = "cupti", samples = SLOW, decided = d.decided, stop = d.stop, speedup = d.speedup,
    speedup_upper = d.speedup_upper, baseline = { median_us = 100.5, n = 20, age_s = 12 } }
  local res = { stages = { correctness = { timed = timed } } }
  local run = { res = res, job = { task = { flops = 2e9 } } }
  stage.run(run)
  local st = res.stages.timing
  t.eq(st.measured, false)
  t.eq(st.decided_by, "hopeless_from_correctness")
  t.eq(st.stop_reason, "hopeless_from_correctness")
  t.eq(st.hopeless, 0.5)
  t.eq(stages.speedup_text(st), "< 0.5x")
  t.eq(st.candidate.n, #SLOW)
  t.near(st.candidate.median, 401.5, 1e-9)
  t.eq(st.baseline.median, 100.5)
  t.eq(res.verdict, nil, "a verdict is still the candidate's to earn")
  -- Not decided: the stage goes on to measure (here it fails early, with no
  -- job to measure: what matters is that it did not take the shortcut).
  timed.decided = nil
  local res2 = { stages = { correctness = { timed = timed } } }
  pcall(stage.run, { res = res2, job = { task = { flops = 2e9 }, trials = {} } })
  t.ok(not (res2.stages.timing and res2.stages.timing.measured == false), "no shortcut without a decision")
end

-- The determinism run is on one input set: the first plain trial's.
function T.the_determinism_run_is_on_the_first_plain_trial(t)
  local stage = require "klab.eval.stage.correctness"
  local prepare = require "klab.eval.prepare"
  local trials = prepare.seeded(prepare.trials { trials = 3, distributions = { { name = "scaled", scale = 8 } } }, "7")
  t.eq(stage.determinism_trial(trials), 1)
  -- A caller's trials that put a distribution first.
  local own = { { label = "spiky", distribution = true }, { label = "plain" }, { label = "plain 2" } }
  t.eq(stage.determinism_trial(own), 2)
  t.eq(stage.determinism_trial { { label = "only", distribution = true } }, 1, "no plain trial: the first")
end

-- On a GPU: a correct but slow kernel is decided from its correctness runs
-- (no timing stage), the fast one is timed as before, and the full proof
-- times every candidate; the verdicts agree.
function T.gpu_slow_candidates_are_decided_from_correctness(t)
  t.need_gpu()
  local eval = require "klab.eval"
  local s <close> = eval.session {}
  local task = "gemm_bf16/4096x4096x4096"
  local slow = assert(s:evaluate(task, "tasks/gemm/samples/naive", { force = true }))
  local ct_rec = slow.stages.correctness.timed
  t.ok(ct_rec and ct_rec.method == "cupti" and ct_rec.runs >= 6, "the correctness runs were timed")
  t.eq(ct_rec.decided, "hopeless_from_correctness")
  t.eq(slow.stages.timing.measured, false)
  t.ok(slow.stages.timing.speedup_upper < 0.5)
  t.ok(slow.stages.correctness.determinism and slow.stages.correctness.determinism.trial == "trial 1")
  local full = assert(s:evaluate(task, "tasks/gemm/samples/naive", { force = true, proof = "full" }))
  t.eq(full.verdict, slow.verdict)
  t.eq(full.stages.correctness.timed, nil, "the full proof times no correctness run")
  t.eq(full.stages.timing.measured, true)
  t.ok(full.stages.timing.speedup < 0.5)
  local fast = assert(s:evaluate(task, "tasks/gemm/samples/wgmma_tma", { force = true }))
  t.eq(fast.stages.timing.measured, true, "a candidate not decided is timed as before")
  t.eq(fast.stages.correctness.timed.decided, nil)
  -- The kept baseline serves the next evaluation of the variant.
  local again = assert(s:evaluate(task, "tasks/gemm/samples/naive", { force = true }))
  local b = again.stages.correctness.timed
  t.ok(b.baseline and (b.baseline_measured == nil or b.baseline_measured == "clock"), tostring(b.baseline_measured))
end

return T
