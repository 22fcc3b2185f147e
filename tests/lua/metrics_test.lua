-- klab.report.metrics on a small store built here, with answers computed by hand.
-- The fixture (build) is shared with report_test.lua and export_test.lua
-- through this file's metatable (the runner only sees the tests).

local store = require "klab.store"
local metrics = require "klab.report.metrics"

-- The fixture. Experiment "e1" (sm_90a, 8 turns), models mA and mB, tasks
-- gemm and attn, tag t, two replicas each:
--   T1 mA gemm r1: compile_error | passed 0.5 v=1 | passed 1.2 v=0
--   T2 mA gemm r2: passed 0.8 v=1
--   T3 mA attn r1: incorrect | incorrect | timeout | incorrect | passed 0.3 v=NULL
--   T4 mA attn r2: compile_error | incorrect
--   T5 mB gemm r1: passed 1.5 v=1
--   T6 mB gemm r2: passed 2.0 v=0 | passed 0.7 v=1
--   T7 mB attn r1: runtime_error
--   T8 mB attn r2: extraction_error (reply, no code) | passed (not timed) v=1
-- Experiment "e2" (config without arch, 1 turn): mA gemm r1: passed 0.9
-- v=1, whose candidate's evaluation says sm_100a.
local function build(path)
  os.remove(path)
  os.remove(path .. "-wal")
  os.remove(path .. "-shm")
  local db = assert(store.open(path))
  require("klab.experiment").ensure_schema(db)
  local json = require("klab.experiment.model").json
  local env = db:put_environment { host = "testhost", gpu_name = "NVIDIA H200", driver_version = "580.65",
    cuda_version = "13.0", arch = "sm_90a", klab_version = "0.1.0", libs = { nvrtc = "13.0", cublasLt = "13.1" } }
  local env2 = db:put_environment { host = "testhost", gpu_name = "NVIDIA B200", driver_version = "580.65",
    cuda_version = "13.0", arch = "sm_100a", klab_version = "0.1.0", libs = { nvrtc = "13.0" } }
  local e1 = db:insert("experiments", { name = "e1", config = json {
    arch = "sm_90a", turns = 8, replicas = 2, tags = { "t" },
    models = { { name = "mA", provider = "openai", model = "a-1", temperature = 0.5 }, { name = "mB", provider = "anthropic", model = "b-1" } },
    tasks = { { name = "gemm", workloads = { "gemm/1" } }, { name = "attn", workloads = { "attn/1" } } } } })
  local e2 = db:insert("experiments", { name = "e2", config = json { turns = 1, models = { { name = "mA" } } } })
  local n = 0
  local function traj(exp, model, task, replica, turns, arch, envid)
    local id = db:insert("trajectories", { experiment_id = exp, key = ("%d/%s/%s/%d"):format(exp, model, task, replica),
      model = model, task = task, tag = "t", replica = replica, state = "done", turns = #turns,
      messages = json { { role = "system", content = "You write kernels." }, { role = "user", content = "Write " .. task .. "." } } })
    for i, tu in ipairs(turns) do
      n = n + 1
      local rec = { trajectory_id = id, turn = i, verdict = tu[1], reason = tu[1] .. ": why", speedup = tu[2],
        verified = tu[3], reply = tu.noreply and nil or ("reply %d of %s/%s/%d"):format(i, model, task, replica),
        feedback = tu.noreply and nil or ("feedback %d: %s"):format(i, tu[1]) }
      if tu[1] ~= "extraction_error" then
        local cid, hash = db:put_candidate { language = "ptx", code = ("// kernel %d"):format(n) }
        rec.candidate, rec.language = hash, "ptx"
        local meas = {}
        if tu[2] then meas.speedup = tu[2] end
        db:record_evaluation { key = "k" .. n, candidate = cid, task = task .. "/1", arch = arch, env = envid,
          verdict = tu[1] == "extraction_error" and "unknown" or tu[1], reason = "r", measurements = meas }
      end
      db:insert("turns", rec)
    end
    return id
  end
  traj(e1, "mA", "gemm", 1, { { "compile_error" }, { "passed", 0.5, 1 }, { "passed", 1.2, 0 } }, "sm_90a", env)
  traj(e1, "mA", "gemm", 2, { { "passed", 0.8, 1 } }, "sm_90a", env)
  traj(e1, "mA", "attn", 1, { { "incorrect" }, { "incorrect" }, { "timeout" }, { "incorrect" }, { "passed", 0.3 } }, "sm_90a", env)
  traj(e1, "mA", "attn", 2, { { "compile_error" }, { "incorrect" } }, "sm_90a", env)
  traj(e1, "mB", "gemm", 1, { { "passed", 1.5, 1 } }, "sm_90a", env)
  traj(e1, "mB", "gemm", 2, { { "passed", 2.0, 0 }, { "passed", 0.7, 1 } }, "sm_90a", env)
  traj(e1, "mB", "attn", 1, { { "runtime_error" } }, "sm_90a", env)
  traj(e1, "mB", "attn", 2, { { "extraction_error" }, { "passed", nil, 1 } }, "sm_90a", env)
  traj(e2, "mA", "gemm", 1, { { "passed", 0.9, 1 } }, "sm_100a", env2)
  return db
end

local function tmpdb(t)
  return t.tmpdir() .. "/m.db"
end

local function find(rows, want)
  for _, r in ipairs(rows) do
    local ok = true
    for k, v in pairs(want) do if r[k] ~= v then ok = false break end end
    if ok then return r end
  end
end

local tests = {}

function tests.rng_is_splitmix64(t)
  local r = metrics.rng(0)
  -- The reference sequence of splitmix64 seeded with 0.
  t.eq(r:next(), 0xE220A8397B1DCDAF)
  t.eq(r:next(), 0x6E789E6AA1B965F4)
  t.eq(r:next(), 0x06C45D188009454F)
  local a, b = metrics.rng(7), metrics.rng(7)
  for _ = 1, 100 do
    local x = a:int(5)
    t.ok(x >= 1 and x <= 5)
    t.eq(x, b:int(5))
    local f = a:float()
    b:float()
    t.ok(f >= 0 and f < 1)
  end
  t.raises(function() metrics.rng(1.5) end, "integer")
end

function tests.load_reads_trajectories_and_arch(t)
  local db <close> = build(tmpdb(t))
  local trajs = metrics.load(db)
  t.eq(#trajs, 9)
  -- Sorted by arch, model, task, tag, replica.
  t.eq(trajs[1].arch, "sm_100a", "e2 has no arch in its config: from its evaluations")
  t.eq(trajs[2].arch, "sm_90a")
  t.eq(trajs[2].model .. trajs[2].task .. trajs[2].replica, "mAattn1")
  t.eq(#trajs[2].turns, 5)
  t.eq(trajs[2].turns[5].verified, nil, "NULL verified stays unknown")
  t.eq(metrics.max_turns(trajs), 8)
  local lim = metrics.limits(trajs)
  t.eq(table.concat(lim, ","), "1,4,8")
  t.eq(table.concat(metrics.limits(trajs, { 1, 2, 16 }), ","), "1,2,8")
  t.eq(#metrics.load(db, { experiment = "e2" }), 1)
end

function tests.success_rates_and_best_speedup(t)
  local db <close> = build(tmpdb(t))
  local rows = metrics.success(metrics.load(db, { experiment = "e1" }), { B = 200 })
  t.eq(#rows, 4 * 3, "2 models x 2 tasks x 3 limits")
  local function check(model, task, L, c, v, best, bestv)
    local r = find(rows, { model = model, task = task, limit = L })
    t.ok(r, model .. " " .. task .. " " .. L)
    if not r then return end
    t.eq(r.n, 2)
    t.eq(r.correct, c, ("%s %s L%d correct"):format(model, task, L))
    t.eq(r.verified, v, ("%s %s L%d verified"):format(model, task, L))
    t.eq(r.best, best, ("%s %s L%d best"):format(model, task, L))
    t.eq(r.best_verified, bestv, ("%s %s L%d best verified"):format(model, task, L))
    t.near(r.correct_rate, c / 2, 1e-12)
    t.ok(r.correct_ci[1] <= r.correct_rate and r.correct_rate <= r.correct_ci[2], "interval holds the estimate")
  end
  check("mA", "gemm", 1, 1, 1, 0.8, 0.8)
  check("mA", "gemm", 4, 2, 2, 1.2, 0.8)
  check("mA", "gemm", 8, 2, 2, 1.2, 0.8)
  check("mA", "attn", 1, 0, 0, nil, nil)
  check("mA", "attn", 4, 0, 0, nil, nil)
  check("mA", "attn", 8, 1, 0, 0.3, nil)
  check("mB", "gemm", 1, 2, 1, 2.0, 1.5)
  check("mB", "gemm", 4, 2, 2, 2.0, 1.5)
  check("mB", "attn", 4, 1, 1, nil, nil)
  -- All trajectories correct (2 of 2): Wilson's interval keeps its width
  -- (a percentile bootstrap would say [1, 1]).
  local r = find(rows, { model = "mB", task = "gemm", limit = 1 })
  t.near(r.correct_ci[1], 0.34238023609333, 1e-6)
  t.eq(r.correct_ci[2], 1.0)
  -- None correct (0 of 2): [0, 0.658], not [0, 0].
  r = find(rows, { model = "mA", task = "attn", limit = 1 })
  t.eq(r.correct_ci[1], 0.0)
  t.near(r.correct_ci[2], 0.65761976390667, 1e-6)
  t.eq(metrics.best_speedup(metrics.load(db), 8), 2.0)
end

function tests.fast_p_plain_and_verified(t)
  local db <close> = build(tmpdb(t))
  local trajs = metrics.load(db, { experiment = "e1" })
  local ps = { 0, 0.5, 1, 1.5 }
  local plain = metrics.fast_p(trajs, { ps = ps, limit = 8, B = 200 })
  local ver = metrics.fast_p(trajs, { ps = ps, limit = 8, verified = true, B = 200 })
  local function vals(row)
    local out = {}
    for i, p in ipairs(row.points) do out[i] = ("%g"):format(p.value) end
    return table.concat(out, " ")
  end
  t.eq(#plain, 2)
  t.eq(plain[1].model, "mA")
  t.eq(vals(plain[1]), "0.75 0.5 0.25 0")
  t.eq(vals(ver[1]), "0.5 0.25 0 0", "0.5 is not above 0.5")
  t.eq(vals(plain[2]), "0.5 0.5 0.5 0.25", "a correct turn with no speedup counts for no p")
  t.eq(vals(ver[2]), "0.5 0.5 0.25 0")
  for _, row in ipairs(plain) do
    for _, p in ipairs(row.points) do t.ok(p.lo <= p.value and p.value <= p.hi) end
  end
  -- Turn limit 1: mA has only T2 (0.8).
  local l1 = metrics.fast_p(trajs, { ps = ps, limit = 1, B = 50 })
  t.eq(vals(l1[1]), "0.25 0.25 0 0")
  -- Default thresholds: 0 .. max(3, best rounded up to 0.25) in 0.05 steps
  -- (the best here is 2.0: KernelBench's grid up to 3 sets the range).
  local th = metrics.thresholds(trajs, 8)
  t.eq(#th, 61, "0 to 3.0")
  t.near(th[61], 3.0, 1e-12)
end

-- Fast@k and best-of-k against the fixture worked by hand (limit 8):
--   mA gemm {1.2, 0.8} (one > 1), attn {0.3, 0}; mB gemm {1.5, 2.0}, attn {0, 0}
-- (T8's correct turn has no speedup). Fast@1 = mean over tasks of c/n,
-- Fast@2 = one of both; best-of-1 = the mean speedup, best-of-2 = the max.
function tests.fast_at_k_and_best_of_k(t)
  local at_k = require "klab.report.at_k"
  local db <close> = build(tmpdb(t))
  local trajs = metrics.load(db, { experiment = "e1" })
  local rows = at_k.curves(trajs, { limit = 8, B = 200 })
  t.eq(#rows, 2)
  t.eq(rows[1].model, "mA")
  t.eq(rows[1].kmax, 2)
  t.eq(rows[1].tasks, 2)
  local function v(row, k, f) return ("%.4g"):format(row.points[k][f]) end
  t.eq(v(rows[1], 1, "fast"), "0.25")
  t.eq(v(rows[1], 2, "fast"), "0.5")
  t.eq(v(rows[1], 1, "best"), "0.575")
  t.eq(v(rows[1], 2, "best"), "0.75")
  t.eq(v(rows[2], 1, "fast"), "0.5")
  t.eq(v(rows[2], 2, "fast"), "0.5")
  t.eq(v(rows[2], 1, "best"), "0.875")
  t.eq(v(rows[2], 2, "best"), "1")
  for _, r in ipairs(rows) do
    for _, pt in ipairs(r.points) do
      t.ok(pt.fast_ci[1] <= pt.fast + 1e-12 and pt.fast <= pt.fast_ci[2] + 1e-12, "fast inside its interval")
      t.ok(pt.best_ci[1] <= pt.best + 1e-12 and pt.best <= pt.best_ci[2] + 1e-12, "best inside its interval")
    end
  end
  -- The closed forms against every k-subset, counted out.
  local rng = metrics.rng(7)
  for _ = 1, 30 do
    local n = 1 + rng:int(6)
    local sp = {}
    for i = 1, n do sp[i] = rng:int(3) == 1 and 0 or rng:float() * 2 end
    local c = 0
    for _, x in ipairs(sp) do if x > 1 then c = c + 1 end end
    for k = 1, n do
      local subsets, fast, best = 0, 0, 0
      local function walk(start, left, any, top)
        if left == 0 then
          subsets, fast, best = subsets + 1, fast + (any and 1 or 0), best + top
          return
        end
        for i = start, n - left + 1 do walk(i + 1, left - 1, any or sp[i] > 1, math.max(top, sp[i])) end
      end
      walk(1, k, false, 0)
      t.near(at_k.fast_at_k(n, c, k), fast / subsets, 1e-12)
      t.near(at_k.best_of_k(sp, k), best / subsets, 1e-12)
    end
    t.eq(at_k.fast_at_k(n, c, n + 1), nil)
  end
end

function tests.kbv_geomean_correctness_fast1(t)
  local db <close> = build(tmpdb(t))
  local trajs = metrics.load(db, { experiment = "e1" })
  local rows = metrics.kbv(trajs, { limit = 8, B = 200 })
  t.eq(#rows, 2)
  local a, b = rows[1], rows[2]
  t.eq(a.model, "mA")
  t.eq(a.problems, 2)
  t.eq(a.correct, 2)
  t.near(a.correctness, 1.0, 1e-12)
  t.near(a.speedup, math.sqrt(1.2 * 0.3), 1e-12, "geomean of 1.2 and 0.3 = 0.6")
  t.near(a.fast1, 0.5, 1e-12)
  t.eq(b.model, "mB")
  t.near(b.correctness, 1.0, 1e-12, "attn is correct without a speedup")
  t.near(b.speedup, 2.0, 1e-12, "geomean over the timed correct problems only")
  t.near(b.fast1, 0.5, 1e-12)
  -- Two problems, one of them timed: a bootstrap over one speedup is a
  -- point, so there is no interval.
  t.eq(b.timed, 1)
  t.eq(b.speedup_ci, nil, "one timed task: no interval")
  t.ok(a.speedup_ci[1] <= a.speedup and a.speedup <= a.speedup_ci[2])
  local l1 = metrics.kbv(trajs, { limit = 1, B = 50 })
  t.near(l1[1].correctness, 0.5, 1e-12)
  t.near(l1[1].speedup, 0.8, 1e-12)
  t.near(l1[1].fast1, 0.0, 1e-12)
  t.near(l1[2].speedup, 2.0, 1e-12)
  t.near(metrics.geomean { 2, 8 }, 4, 1e-12)
  t.eq(metrics.geomean {}, nil)
end

function tests.failure_mix_per_turn(t)
  local db <close> = build(tmpdb(t))
  local rows = metrics.failure_mix(metrics.load(db, { experiment = "e1" }), { limit = 8, B = 100 })
  local a = rows[1]
  t.eq(a.model, "mA")
  t.eq(table.concat(a.verdicts, ","), "compile_error,timeout,incorrect,passed", "in verdict precedence")
  t.eq(a.turns[1].total, 4)
  t.near(a.turns[1].shares.compile_error, 0.5, 1e-12)
  t.near(a.turns[1].shares.passed, 0.25, 1e-12)
  t.near(a.turns[1].shares.incorrect, 0.25, 1e-12)
  t.eq(a.turns[2].total, 3)
  t.near(a.turns[2].shares.incorrect, 2 / 3, 1e-12)
  t.eq(a.turns[3].total, 2)
  t.near(a.turns[3].shares.timeout, 0.5, 1e-12)
  t.eq(a.turns[5].total, 1)
  t.eq(a.turns[6].total, 0)
  t.eq(a.all.total, 11)
  t.eq(a.all.counts.passed, 4)
  t.eq(a.all.counts.incorrect, 4)
  t.eq(a.all.counts.compile_error, 2)
  t.eq(a.all.counts.timeout, 1)
  t.near(a.all.shares.passed, 4 / 11, 1e-12)
  t.ok(a.all.ci.passed[1] <= 4 / 11 and 4 / 11 <= a.all.ci.passed[2])
  local b = rows[2]
  t.eq(table.concat(b.verdicts, ","), "extraction_error,runtime_error,passed")
  t.eq(b.all.total, 6)
  t.eq(b.turns[2].counts.passed, 2)
end

function tests.best_by_turn_means(t)
  local db <close> = build(tmpdb(t))
  local rows = metrics.best_by_turn(metrics.load(db, { experiment = "e1" }), { limit = 8, B = 100 })
  -- Over the trajectories with a correct timed turn by turn n only (mA:
  -- gemm r2 from turn 1, gemm r1 from turn 2, attn r1 from turn 5; attn r2
  -- never), not counting the others as 0.
  local want = { 0.8, 0.65, 1.0, 1.0, 2.3 / 3, 2.3 / 3, 2.3 / 3, 2.3 / 3 }
  local nwant = { 1, 2, 2, 2, 3, 3, 3, 3 }
  for n, w in ipairs(want) do
    t.near(rows[1].points[n].mean, w, 1e-12, "mA turn " .. n)
    t.eq(rows[1].points[n].n, nwant[n], "mA turn " .. n .. " averages")
  end
  t.near(rows[1].points[3].max, 1.2, 1e-12)
  t.near(rows[2].points[1].mean, 1.75, 1e-12)
  t.eq(rows[2].points[1].n, 2)
  t.near(rows[2].points[2].mean, 1.75, 1e-12)
end

-- Correct follows the verdict list: target_not_executed is correct code
-- whose targets did not run (correct, never verified); unknown is neither.
function tests.correct_follows_the_verdict_list(t)
  local metrics = require "klab.report.metrics"
  local function tr(v, verified) return { turns = { { turn = 1, verdict = v, verified = verified, speedup = 1.5 } } } end
  t.ok(metrics.correct(tr("passed", true), 1, true))
  t.ok(metrics.correct(tr("target_not_executed", false), 1))
  t.ok(not metrics.correct(tr("target_not_executed", false), 1, true))
  t.eq(metrics.best(tr("target_not_executed", false), 1), 1.5)
  t.ok(not metrics.correct(tr("unknown"), 1))
  t.ok(not metrics.correct(tr("incorrect"), 1))
  t.ok(not metrics.correct(tr("passed", true), 0), "a turn past the limit does not count")
end

function tests.pdetect(t)
  t.near(metrics.pdetect(0.1, 10), 1 - 0.9 ^ 10, 1e-15)
  t.near(metrics.pdetect(0.1, 10), 0.6513215599, 1e-9)
  t.eq(metrics.pdetect(0.5, 3), 0.875)
  t.eq(metrics.pdetect(0, 5), 0.0)
  t.eq(metrics.pdetect(1, 1), 1.0)
  t.eq(metrics.pdetect(0.3, 0), 0.0)
  t.raises(function() metrics.pdetect(1.5, 2) end, "p must be")
  t.raises(function() metrics.pdetect(0.5, 1.5) end, "n must be")
  local tab = metrics.pdetect_table({ 0.5 }, { 1, 2 })
  t.eq(tab.values[1][2], 0.75)
end

function tests.bootstrap_is_deterministic_and_stratified(t)
  local items = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }
  local mean = function(s) return metrics.mean(s) end
  local a = metrics.bootstrap(items, mean, { B = 500, key = "x" })
  local b = metrics.bootstrap(items, mean, { B = 500, key = "x" })
  t.eq(a[1][1], b[1][1])
  t.eq(a[1][2], b[1][2])
  t.ok(a[1][1] < 5.5 and 5.5 < a[1][2])
  t.ok(a[1][1] >= 1 and a[1][2] <= 10)
  local pair = function(s) return s[1] + 10 * s[2] end
  local c1 = metrics.bootstrap(items, pair, { B = 20, key = "x", level = 0.5 })
  local c2 = metrics.bootstrap(items, pair, { B = 20, key = "y", level = 0.5 })
  t.ok(c1[1][1] ~= c2[1][1] or c1[1][2] ~= c2[1][2], "another key draws other resamples")
  -- Strata keep their sizes: the sum of one element from each of two
  -- constant strata is constant.
  local s = metrics.bootstrap({ { 1, 1, 1 }, { 5, 5 } }, function(st) return st[1][1] + st[2][2] end,
    { B = 50, strata = true })
  t.eq(s[1][1], 6)
  t.eq(s[1][2], 6)
  -- Undefined entries are left out; a wholly undefined entry has no interval.
  local u = metrics.bootstrap(items, function() return { nil, 1, n = 2 } end, { B = 10 })
  t.eq(u[1][1], nil)
  t.eq(u[2][1], 1)
end

function tests.empty_store(t)
  local db <close> = assert(store.open(tmpdb(t)))
  t.eq(#metrics.load(db), 0, "no experiment tables")
  require("klab.experiment").ensure_schema(db)
  local trajs = metrics.load(db)
  t.eq(#trajs, 0)
  t.eq(#metrics.success(trajs), 0)
  t.eq(#metrics.fast_p(trajs), 0)
  t.eq(#metrics.limits(trajs), 0)
end

-- What is not a result: turns that were not measured and trajectories that
-- did not finish are neither successes nor failures.
function tests.unmeasured_and_unfinished_are_left_out(t)
  local function tr(state, verdicts)
    local turns = {}
    for i, v in ipairs(verdicts) do turns[i] = { turn = i, verdict = v[1] or v, speedup = v[2] } end
    return { arch = "sm_90a", model = "m", task = "x", tag = "t", replica = 1, experiment = "e", id = 1, state = state,
      max_turns = 3, turns = turns }
  end
  local unknown = tr("done", { "unknown", "unknown", "unknown" })
  local late = tr("done", { "unknown", "incorrect", { "passed", 1.5 } })
  local failed = tr("done", { "compile_error", "incorrect", "incorrect" })
  local cut = tr("running", { "compile_error" })
  local noreply = tr("done", { "request_error", "incorrect", "incorrect" })
  t.eq(metrics.undecided(unknown, 3), "not measured")
  t.eq(metrics.undecided(late, 3), nil, "a correct turn decides, whatever came before")
  t.eq(metrics.undecided(late, 2), "not measured")
  t.eq(metrics.undecided(failed, 3), nil, "a measured failure counts")
  t.eq(metrics.undecided(cut, 3), "unfinished")
  t.eq(metrics.undecided(cut, 1), nil, "the turns it has count at their own limit")
  t.eq(metrics.undecided(noreply, 3), "not measured", "request_error is not a result either")
  local all = { unknown, late, failed, cut, noreply }
  local kept, left = metrics.decided(all, 3)
  t.eq(#kept, 2)
  t.eq(left["not measured"], 2)
  t.eq(left.unfinished, 1)
  local rows = metrics.success(all, { B = 50, limits = { 1, 3 } })
  local r3 = find(rows, { limit = 3 })
  t.eq(r3.n, 2) t.eq(r3.correct, 1) t.near(r3.correct_rate, 0.5, 1e-12)
  t.eq(r3.not_measured, 2) t.eq(r3.unfinished, 1)
  local r1 = find(rows, { limit = 1 })
  t.eq(r1.n, 2, "at limit 1: failed and cut count") t.eq(r1.not_measured, 3)
  -- No trajectory decided: no rate, no interval, not 0%.
  local none = metrics.success({ unknown }, { B = 20 })
  t.eq(none[1].n, 0) t.eq(none[1].correct_rate, nil) t.eq(none[1].correct_ci, nil)
  -- The failure mix: shares over results only; unknown and request_error apart.
  local mix = metrics.failure_mix(all, { limit = 3, B = 20 })[1]
  t.eq(table.concat(mix.verdicts, ","), "compile_error,incorrect,passed")
  t.eq(mix.all.total, 8)
  t.eq(mix.all.not_result.unknown, 4)
  t.eq(mix.all.not_result.request_error, 1)
  t.near(mix.all.shares.incorrect, 5 / 8, 1e-12)
  t.eq(mix.turns[1].total, 2) t.eq(mix.turns[1].not_result.unknown, 2)
end

-- Wilson intervals against values computed independently (Python's
-- statistics.NormalDist for z, the score interval's closed form), at the
-- edges (0 of n, n of n) where a percentile bootstrap collapses.
function tests.wilson_intervals(t)
  local want = {
    { 0, 2, 0.0, 65.76197724933468 }, { 9, 9, 70.08549515804562, 100.0 }, { 5, 10, 23.659309051256404, 76.3406909487436 },
    { 0, 4, 0.0, 48.98908364545972 }, { 1, 1, 20.654931437723747, 100.0 },
  }
  for _, w in ipairs(want) do
    local ci = metrics.wilson(w[1], w[2])
    t.near(ci[1] * 100, w[3], 1e-5, ("%d of %d: lo"):format(w[1], w[2]))
    t.near(ci[2] * 100, w[4], 1e-5, ("%d of %d: hi"):format(w[1], w[2]))
  end
  t.near(metrics.normal_quantile(0.975), 1.9599639845400536, 1e-6)
  t.eq(metrics.wilson(0, 0), nil)
  -- A wider level, a wider interval.
  local a, b = metrics.wilson(3, 10, 0.90), metrics.wilson(3, 10, 0.99)
  t.ok(b[1] < a[1] and b[2] > a[2], "99% wider than 90%")
end

return setmetatable(tests, { __index = { fixture = build } })
