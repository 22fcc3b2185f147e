-- timing_test.lua: require "klab.timing" (bindings/l_timing.c over host/measure/stats.c,
-- host/measure/timing.c, host/measure/cupti_act.c).
--
-- The stats tests run everywhere; the gpu_* tests need a GPU and skip with the
-- reason when gpu.available() is false.

local timing = require "klab.timing"
local gpu = require "klab.gpu"

-- One thread block of 32 threads spinning `iters` times, then writing the
-- running sum (sum of 0..iters-1, mod 2^32) to out[tid].
local BUSY_PTX = [[
.version 8.0
.target sm_80
.address_size 64

.visible .entry klab_busy(.param .u64 out, .param .u32 iters)
{
    .reg .u64 %rd<5>;
    .reg .u32 %r<6>;
    .reg .pred %p;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [iters];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, 0;
    mov.u32 %r4, 0;
LOOP:
    add.u32 %r4, %r4, %r3;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p, %r3, %r1;
    @%p bra LOOP;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r2, 4;
    add.u64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r4;
    ret;
}
]]

local function need_gpu(t)
  t.need_gpu()
end

local function busy_setup(t)
  need_gpu(t)
  local ctx = assert(gpu.context(0))
  local mod = assert(ctx:load(BUSY_PTX))
  local fn = assert(mod:func("klab_busy"))
  local out = assert(ctx:alloc(4 * 32))
  return ctx, fn, out
end

local function launch(fn, out, iters)
  return { func = fn, grid = { 1 }, block = { 32 }, args = { out, { "u32", iters } } }
end

local function expected_sum(iters)
  return (iters * (iters - 1) // 2) & 0xffffffff
end

local INF = math.huge

return {
  -- ---- everywhere ----

  stats_known_answers = function(t)
    local s = timing.stats { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 }
    t.eq(s.n, 10)
    t.eq(s.median, 5.5)
    t.eq(s.mean, 5.5)
    t.eq(s.min, 1)
    t.eq(s.max, 10)
    t.near(s.p10, 1.9, 1e-12)
    t.near(s.p90, 9.1, 1e-12)
    -- Distribution-free 95% CI of the median for n = 10: ranks 2 and 9.
    t.eq(s.ci_low, 2)
    t.eq(s.ci_high, 9)
    t.near(s.ci_coverage, 0.978515625, 1e-12)
    t.near(s.rel_halfwidth, 7 / 11, 1e-12)
    t.eq(s.confidence, 0.95)
    -- 99%: ranks 1 and 10.
    local s99 = timing.stats({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, 0.99)
    t.eq(s99.ci_low, 1)
    t.eq(s99.ci_high, 10)
  end,

  stats_too_few = function(t)
    local s = timing.stats { 3, 1, 2, 5, 4 }
    t.eq(s.median, 3)
    t.eq(s.ci_low, -INF)
    t.eq(s.ci_high, INF)
    t.eq(s.rel_halfwidth, INF)
    local e = timing.stats {}
    t.eq(e.n, 0)
    t.ok(e.median ~= e.median, "median of nothing is NaN")
  end,

  stats_misuse = function(t)
    t.raises(function() timing.stats { 1, "2", 3 } end, "samples%[2%] must be a number")
    t.raises(function() timing.stats { 1, 2, {} } end, "samples%[3%]")
    t.raises(function() timing.stats(42) end, "table expected")
    t.raises(function() timing.stats({ 1, 2 }, 1.5) end, "confidence")
    t.raises(function() timing.percentile({ 1, 2 }, 101) end, "percentile")
  end,

  percentile_and_ranks = function(t)
    t.eq(timing.percentile({ 4, 1, 3, 2 }, 50), 2.5)
    t.near(timing.percentile({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, 25), 3.25, 1e-12)
    local l, cov = timing.ci_rank(100)
    t.eq(l, 40)
    t.near(cov, 0.9647997997822952, 1e-12)
    t.eq((timing.ci_rank(5)), 0)
    t.eq((timing.ci_rank(6)), 1)
    t.eq((timing.ci_rank(100, 0.99)), 37)
  end,

  stopping_rule = function(t)
    local flat = {}
    for i = 1, 12 do flat[i] = 10 end
    local rule = { min_samples = 10, max_samples = 50, budget_s = 2, target_ci = 0.005 }
    local why, hw = timing.should_stop({ 10, 10, 10, 10, 10, 10, 10, 10, 10 }, rule, 0.1)
    t.eq(why, "continue") -- below min_samples although the CI is 0 wide
    t.eq(hw, 0)
    t.eq((timing.should_stop(flat, rule, 0.1)), "converged")
    local wide = {}
    for i = 1, 50 do wide[i] = 100 + i end
    t.eq((timing.should_stop({ table.unpack(wide, 1, 20) }, rule, 0.1)), "continue")
    t.eq((timing.should_stop(wide, rule, 0.1)), "max_samples")
    t.eq((timing.should_stop({ table.unpack(wide, 1, 20) }, rule, 2.5)), "budget")
  end,

  measure_misuse = function(t)
    t.raises(function() timing.measure({}, { runs = {} }) end, "klab.gpu.Context expected")
    t.raises(function() timing.measure(nil, {}) end, "klab.gpu.Context expected")
  end,

  -- The stopping rules are chosen by name with their parameters
  -- (host/measure/stop.h); the options are read before the Context is
  -- looked at, so a wrong choice raises on any machine.
  -- The timing stage's rules: the evaluation's own list, else convergence
  -- and the hopeless rule at its default threshold (0 turns it off); each
  -- list is one the binding takes.
  stage_stopping_rules = function(t)
    local stage = require "klab.eval.stage.timing"
    -- "name(k=v, ...); ..." with the parameters sorted.
    local function show(rules)
      local out = {}
      for _, r in ipairs(rules) do
        local ps = {}
        for k, v in pairs(r) do if k ~= 1 then ps[#ps + 1] = k .. "=" .. tostring(v) end end
        table.sort(ps)
        out[#out + 1] = r[1] .. "(" .. table.concat(ps, ", ") .. ")"
      end
      return table.concat(out, "; ")
    end
    t.eq(show(stage.stop_rules({}, 10)), "converged(min_samples=10, target_ci=0.005); hopeless(threshold=0.5)")
    t.eq(show(stage.stop_rules({ hopeless = 0, target_ci = 0.01 }, 12)), "converged(min_samples=12, target_ci=0.01)")
    t.eq(show(stage.stop_rules({ hopeless = 0.25 }, 10)), "converged(min_samples=10, target_ci=0.005); hopeless(threshold=0.25)")
    local own = { { "hopeless", threshold = 0.3 } }
    t.eq(stage.stop_rules({ stop = own, hopeless = 0.9 }, 10), own)
    for _, rules in ipairs { stage.stop_rules({}, 10), stage.stop_rules({ hopeless = 0 }, 10), own } do
      t.raises(function() timing.measure({}, { stop = rules }) end, "klab.gpu.Context expected")
    end
  end,

  stopping_rules_misuse = function(t)
    local function measure(spec) return function() timing.measure({}, spec) end end
    t.raises(measure { stop = { { "entropy" } } }, 'unknown stopping rule "entropy" %(the rules are converged, hopeless, hopeless_from_correctness%)')
    t.raises(measure { stop = { { "hopeless", thresold = 0.5 } } }, 'hopeless has no parameter "thresold" %(it has threshold%)')
    t.raises(measure { stop = { { "hopeless", threshold = "half" } } }, "spec.stop%[1%].threshold must be a number")
    t.raises(measure { stop = { { "converged", min_samples = 2.5 } } }, "min_samples must be a whole number")
    t.raises(measure { stop = { { "converged", min_samples = 20 } }, max_samples = 10 }, "min_samples 20 exceeds max_samples 10")
    t.raises(measure { min_samples = 20, max_samples = 10 }, "min_samples 20 exceeds max_samples 10")
    t.raises(measure { stop = { "converged" } }, 'spec.stop%[1%] must be {"rule name"')
    t.raises(measure { stop = "converged" }, "spec.stop must be a list of rules")
    t.raises(measure { stop = { { "hopeless" } }, hopeless = 0.5 }, "spec.hopeless and spec.stop: give hopeless's threshold in spec.stop")
    t.raises(measure { target_ci = -1 }, "converged's target_ci must be a number in 0..1")
    -- Well chosen, the options pass and the Context is what is missing.
    t.raises(measure { stop = { { "converged", target_ci = 0.01 }, { "hopeless" } } }, "klab.gpu.Context expected")
    t.raises(measure { stop = {} }, "klab.gpu.Context expected")
    t.raises(measure { hopeless = 0, min_samples = 3 }, "klab.gpu.Context expected")
  end,

  clock_without_gpu = function(t)
    if gpu.available() then t.skip("a GPU is present") end
    local mhz, msg, code = timing.clock(0)
    t.eq(mhz, nil)
    t.ok(code == "ENOLIB" or code == "ENODRIVER", tostring(code) .. ": " .. tostring(msg))
  end,

  -- A session and a decision: misuse raises before anything reaches the
  -- GPU; a decision needs no GPU at all.
  session_and_decide_misuse = function(t)
    t.raises(function() timing.session({}, {}) end, "klab.gpu.Context expected")
    t.raises(function() timing.session(nil, {}) end, "klab.gpu.Context expected")
    t.raises(function() timing.decide({}, { 1 }, { 1 }) end, "spec.stop must be a list of rules")
    t.raises(function() timing.decide({ stop = { { "hopeless_from_correctness" } } }, { 1, "x" }, { 1 }) end,
      "samples%[2%] must be a number")
    t.raises(function() timing.decide({ stop = {}, confidence = 1 }, { 1 }, { 1 }) end, "confidence")
    local slow, base = { 40, 41, 40, 42, 40, 41 }, { 10, 10, 11, 10, 10, 10 }
    local d = timing.decide({ stop = { { "hopeless", threshold = 0.5 } } }, slow, base)
    t.eq(d.stop_reason, "hopeless", "any rule of the registry may be asked")
    t.eq(d.stop.params.threshold, 0.5)
    t.near(d.speedup, 10 / 40.5, 1e-12)
    t.near(d.speedup_upper, 11 / 40, 1e-12, "the baseline's largest over the candidate's smallest at n = 6")
    t.eq(timing.decide({ stop = {} }, slow, base).stop_reason, nil, "no rule, nothing decided")
  end,

  -- ---- GPU only ----

  -- A session: runs made one at a time, each timed as a sample; a run with
  -- an unplanned launch is refused and the session takes no more.
  gpu_session_times_runs_one_at_a_time = function(t)
    local ctx <close>, fn, out = busy_setup(t)
    local s, msg, code = timing.session(ctx, { method = "cupti" })
    if not s and (code == "EUNSUPPORTED" or code == "ENOLIB") then t.skip("CUPTI is not available here: " .. msg) end
    t.ok(s, tostring(msg))
    local us = {}
    for k, iters in ipairs { 2000, 2000, 8000, 8000 } do
      assert(ctx:launch(fn, launch(fn, out, 100))) -- the caller's own work between runs
      us[k] = assert(s:run(function()
        assert(ctx:launch(fn, launch(fn, out, iters)))
        return 1
      end))
    end
    t.ok(us[3] > 2 * us[1] and us[4] > 2 * us[2], table.concat(us, ", "))
    local r, err, c = s:run(function()
      assert(ctx:launch(fn, launch(fn, out, 10)))
      assert(ctx:launch(fn, launch(fn, out, 10)))
      return 1
    end)
    t.eq(r, nil)
    t.eq(c, "EREJECT", tostring(err))
    local r2, msg2, c2 = s:run(function() error("never called") end)
    t.eq(r2, nil)
    t.eq(c2, "EINVAL")
    t.match(msg2, "refused")
    local res = s:close()
    t.ok(res and res.candidate.n == 4 and res.method == "cupti" and res.flush_bytes > 0)
    t.eq(res.candidate.samples[3], us[3])
    t.eq(res.warmup, 0)
    t.eq(s:close(), nil, "closed once")
    t.raises(function() s:run(function() return 1 end) end, "attempt to use a closed klab.timing.Session")
  end,

  gpu_option_errors = function(t)
    local ctx <close>, fn, out = busy_setup(t)
    t.raises(function() timing.measure(ctx, {}) end, "runs")
    t.raises(function() timing.measure(ctx, { runs = {} }) end, "at least one launch")
    t.raises(function() timing.measure(ctx, { runs = { { grid = 1 } } }) end, "func must be")
    t.raises(function() timing.measure(ctx, { runs = { launch(fn, out, 10) }, method = "wall" }) end,
      "method")
    t.raises(function() timing.measure(ctx, { runs = { launch(fn, out, 10) }, before = 3 }) end,
      "before")
    -- A flush smaller than twice the L2 is refused as an ordinary failure.
    local r, msg, code = timing.measure(ctx, { runs = { launch(fn, out, 10) }, flush_bytes = 4096 })
    t.eq(r, nil)
    t.eq(code, "EINVAL")
    t.match(msg, "twice the L2")
  end,

  gpu_cupti_vs_events = function(t)
    local ctx <close>, fn, out = busy_setup(t)
    local spec = { runs = { launch(fn, out, 2000) }, min_samples = 20, max_samples = 200,
      budget_s = 5, flops = 1e6, method = "cupti" }
    local rc, msg, code = timing.measure(ctx, spec)
    if not rc and (code == "EUNSUPPORTED" or code == "ENOLIB") then
      t.skip("CUPTI is not available here: " .. msg)
    end
    t.ok(rc, tostring(msg))
    local c = rc.candidate
    t.eq(rc.method, "cupti")
    t.eq(rc.launch_checked, true)
    t.ok(c.n >= 20 and c.n <= 200, "n = " .. c.n)
    t.eq(#c.samples, c.n)
    t.eq(#c.event_samples, c.n)
    t.eq(c.planned, 1)
    t.ok(c.min <= c.p10 and c.p10 <= c.median and c.median <= c.p90 and c.p90 <= c.max)
    t.ok(c.ci_low <= c.median and c.median <= c.ci_high)
    t.ok(c.tflops > 0)
    t.ok(c.median < c.event_median, string.format("cupti %.3f us < events %.3f us", c.median, c.event_median))
    t.ok(rc.flush_bytes >= 2 * assert(gpu.device(0)).l2_bytes)
    -- Every run's kernel was seen on klab's stream: warm-up + samples.
    local seen = 0
    for _, s in ipairs(rc.seen) do
      t.eq(s.klab_stream, true, "only klab's stream")
      if s.kind == "kernel" and s.name == "klab_busy" then seen = seen + s.count end
    end
    t.eq(seen, c.n + rc.warmup)
    t.ok(rc.stop_reason == "converged" or rc.stop_reason == "max_samples" or rc.stop_reason == "budget")
    if rc.clock_source == "nvml" then t.ok(rc.clock_before_mhz > 0 and rc.clock_after_mhz > 0) end

    spec.method = "events"
    local re = assert(timing.measure(ctx, spec))
    t.eq(re.method, "events")
    t.eq(re.launch_checked, false)
    t.eq(re.candidate.event_samples, nil)
    t.ok(c.median < re.candidate.median,
      string.format("cupti %.3f us < events %.3f us", c.median, re.candidate.median))
    -- The output is what the kernel computes.
    local v = string.unpack("<I4", assert(out:download(4)))
    t.eq(v, expected_sum(2000))
  end,

  -- With the judge's kernels the flush is a memset and a read of a clean
  -- buffer of the same size; the read's records are not the run's (no
  -- unexpected launch, only the planned kernel seen).
  gpu_flush_reads_l2_with_the_judge = function(t)
    local ctx <close>, fn, out = busy_setup(t)
    local jr = assert(require("klab.jit").compile { source = require("klab.judge").source(), lang = "cuda",
      arch = assert(gpu.device(0)).arch, name = "judge.cu" })
    local j <close> = assert(require("klab.judge").open(ctx, jr.cubin))
    local spec = { runs = { launch(fn, out, 100) }, min_samples = 10, max_samples = 20, judge = j }
    local r, msg = timing.measure(ctx, spec)
    t.ok(r, tostring(msg))
    t.ok(r.flush_bytes >= 2 * assert(gpu.device(0)).l2_bytes)
    t.eq(r.l2.read_bytes, r.flush_bytes)
    for _, s in ipairs(r.seen) do
      t.eq(s.name, "klab_busy", "only the planned kernel is in the runs' records")
    end
    spec.judge = nil
    local r2 = assert(timing.measure(ctx, spec))
    t.eq(r2.l2.read_bytes, nil, "without the judge the flush is the memset alone")
  end,

  gpu_unplanned_launch = function(t)
    local ctx <close>, fn, out = busy_setup(t)
    local spec = {
      run = function()
        assert(ctx:launch(fn, launch(fn, out, 100)))
        assert(ctx:launch(fn, launch(fn, out, 100))) -- a second, unplanned launch
        return 1
      end,
      method = "auto", min_samples = 10, max_samples = 20,
    }
    local r, msg, code, res = timing.measure(ctx, spec)
    if r and r.method == "events" then t.skip("CUPTI unavailable: " .. tostring(r.fallback)) end
    t.eq(r, nil)
    t.eq(code, "EREJECT")
    t.match(msg, "unexpected launches")
    t.ok(res and res.unexpected, "result attached")
    t.eq(res.unexpected.sample, -1) -- the first warm-up run
    t.match(res.unexpected.why, "2 kernel launches on klab's stream, 1 planned")
    t.eq(res.stop_reason, "unexpected_launches")
    -- Planned correctly, it passes.
    spec.run = function()
      assert(ctx:launch(fn, launch(fn, out, 100)))
      assert(ctx:launch(fn, launch(fn, out, 100)))
      return 2
    end
    local ok = assert(timing.measure(ctx, spec))
    t.eq(ok.candidate.planned, 2)
  end,

  gpu_interleaved_baseline = function(t)
    local ctx <close>, fn, out = busy_setup(t)
    local out2 <close> = assert(ctx:alloc(4 * 32))
    local r = assert(timing.measure(ctx, {
      runs = { launch(fn, out, 1000) },
      baseline = { runs = { launch(fn, out2, 8000) } },
      min_samples = 20, max_samples = 100, budget_s = 5,
    }))
    t.eq(r.candidate.n, r.baseline.n)
    t.ok(r.speedup > 2, "speedup " .. tostring(r.speedup))
    t.eq(r.baseline.label, "baseline")
    if r.stop_reason == "converged" then
      t.eq(r.stop.rule, "converged")
      t.eq(r.stop.params.min_samples, 20)
    else
      t.eq(r.stop, nil) -- a limit ended it
    end
    -- Swapped, the candidate is 8 times slower: the hopeless rule ends it
    -- after 6 samples of each and the result says so.
    local h = assert(timing.measure(ctx, {
      runs = { launch(fn, out2, 8000) },
      baseline = { runs = { launch(fn, out, 1000) } },
      max_samples = 100, budget_s = 5,
      stop = { { "converged", target_ci = 0.0001 }, { "hopeless", threshold = 0.5 } },
    }))
    t.eq(h.stop_reason, "hopeless")
    t.eq(h.stop.rule, "hopeless")
    t.eq(h.stop.params.threshold, 0.5)
    t.eq(h.candidate.n, 6)
    t.ok(h.speedup_upper < 0.5, "bound " .. tostring(h.speedup_upper))
  end,

  gpu_rotation_and_checks = function(t)
    local ctx <close>, fn, out = busy_setup(t)
    local outs = { out, assert(ctx:alloc(4 * 32)), assert(ctx:alloc(4 * 32)) }
    local iters = { 300, 400, 500 }
    local entry = launch(fn, out, 300)
    local used = {}
    local current
    local r = assert(timing.measure(ctx, {
      runs = { entry },
      min_samples = 12, max_samples = 12,
      before = function(target, sample)
        -- Rotate input sets: a different output buffer and size per sample.
        current = (sample - 1) % 3 + 1
        entry.args = { outs[current], { "u32", iters[current] } }
        used[current] = true
        return sample % 4 == 0
      end,
      check = function(target, sample)
        local v = string.unpack("<I4", assert(outs[current]:download(4)))
        return v == expected_sum(iters[current])
      end,
    }))
    t.eq(r.candidate.n, 12)
    t.eq(r.candidate.checks, 3)
    t.eq(r.candidate.check_failures, 0)
    t.ok(used[1] and used[2] and used[3])
    -- A failing check stops sampling and says which sample.
    local r2 = assert(timing.measure(ctx, {
      runs = { launch(fn, out, 300) }, min_samples = 12, max_samples = 12,
      before = function(target, sample) return sample == 5 end,
      check = function() return false end,
    }))
    t.eq(r2.stop_reason, "check_failed")
    t.eq(r2.candidate.first_failed_sample, 5)
    t.eq(r2.candidate.n, 5)
  end,

  gpu_callback_errors = function(t)
    local ctx <close>, fn, out = busy_setup(t)
    t.raises(function()
      timing.measure(ctx, { run = function() error("boom in run") end })
    end, "boom in run")
    t.raises(function()
      timing.measure(ctx, { runs = { launch(fn, out, 10) }, before = function() error("boom in before") end })
    end, "boom in before")
    -- A run that returns nothing useful is an ordinary failure.
    local r, msg, code = timing.measure(ctx, { run = function() return "many" end })
    t.eq(r, nil)
    t.eq(code, "EINVAL")
    t.match(msg, "number of launches")
  end,
}
