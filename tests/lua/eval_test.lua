-- Tests of the evaluation pipeline (klab.eval, klab eval): the stages that
-- need no GPU everywhere, and whole evaluations on a GPU.
local eval = require "klab.eval"
local gpu = require "klab.gpu"
local cjson = require "cjson"
local prepare = require "klab.eval.prepare"

local T = {}

local TASK = "gemm_bf16/123x457x789"

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function candidate(t, code, plan)
  local d = t.tmpdir()
  write(d .. "/kernel.cu", code)
  if plan then write(d .. "/plan.lua", plan) end
  return d
end

local NAIVE = [[
extern "C" __global__ void gemm(const unsigned short *A, const unsigned short *B, unsigned short *C,
                                unsigned M, unsigned N, unsigned K) {}
]]

-- An evaluation's GPU stages run once more, alone, before anything is
-- recorded, when its worker died by a signal (never the candidate's doing:
-- its faults are CUDA errors) or a neighbour on the same device may have
-- caused its sticky error; only once, and never for its own fault or hang.
function T.a_dead_worker_or_a_neighbours_fault_runs_again_once(t)
  local crashed = { verdict = "runtime_error", worker = { status = "crashed", signal = "SIGSEGV" } }
  t.eq(eval.rerun_reason(crashed, { shared = false }, false), "crashed")
  t.eq(eval.rerun_reason(crashed, { shared = true }, true), nil, "the second run's result stands")
  local sticky = { verdict = "runtime_error", unfit = true }
  t.eq(eval.rerun_reason(sticky, { shared = true }, false), "neighbour")
  t.eq(eval.rerun_reason(sticky, { shared = false }, false), nil, "alone on its device: its own fault")
  -- The judge's own launch failed in the neighbour's wake (the job raised).
  local raised = { verdict = "unknown", worker = { status = "error" } }
  t.eq(eval.rerun_reason(raised, { shared = true }, false), "neighbour")
  t.eq(eval.rerun_reason(raised, { shared = true }, true), nil, "the second run's result stands")
  t.eq(eval.rerun_reason(raised, { shared = false }, false), nil, "alone on its device: klab's own failure")
  t.eq(eval.rerun_reason({ verdict = "timeout", worker = { status = "timeout" } }, { shared = true }, false), nil,
    "a hang is the candidate's")
  t.eq(eval.rerun_reason({ verdict = "passed" }, { shared = true }, false), nil)
  -- klab's own step failed (its reference, a check, the flush): tried once
  -- more alone before it stands as unknown, and never the candidate's.
  local judge = { verdict = "unknown", judge_fault = { detail = { kind = "judge", what = "check a timed output" } } }
  t.eq(eval.rerun_reason(judge, { shared = false }, false), "judge")
  t.eq(eval.rerun_reason(judge, { shared = false }, true), nil, "the second run's result stands")
end

function T.compile_error_is_a_verdict(t)
  local d = candidate(t, "extern \"C\" __global__ void gemm() { int x = ; }")
  local r = assert(eval.evaluate(TASK, d, { deadline = 30 }))
  t.eq(r.verdict, "compile_error")
  t.match(r.reason, "expected an expression")
  t.eq(r.stages.build.ok, false)
end

function T.rejected_device_launch(t)
  local d = candidate(t, [[
extern "C" __global__ void child() {}
extern "C" __global__ void gemm() { child<<<1, 1>>>(); }
]])
  local r = assert(eval.evaluate(TASK, d))
  t.eq(r.verdict, "compile_error")
end

function T.plan_errors(t)
  local d = candidate(t, NAIVE, "return { launches = { { kernel = 'gemm', grid = {1}, block = {32}, " ..
    "args = { {buffer = 'Q'} } } } }")
  local r = assert(eval.evaluate(TASK, d))
  t.eq(r.verdict, "plan_error")
  t.match(r.reason, "Q")
  d = candidate(t, NAIVE, "return { launches = { { kernel = 'other', grid = {1}, block = {32}, args = {} } } }")
  r = assert(eval.evaluate(TASK, d))
  t.eq(r.verdict, "plan_error")
  t.match(r.reason, "defines only gemm")
  d = candidate(t, NAIVE, "while true do end")
  r = assert(eval.evaluate(TASK, d))
  t.eq(r.verdict, "plan_error")
  d = candidate(t, NAIVE, "return { launches = { { kernel = 'gemm', grid = {3}, block = {32}, cluster = {2}, args = {} } } }")
  r = assert(eval.evaluate(TASK, d))
  t.eq(r.verdict, "plan_error")
  t.match(r.reason, "cluster")
end

-- A kernel whose parameters are not the plan's arguments is a plan_error
-- before any GPU: the cubin gives each parameter's size (and their total),
-- so the turn gets its reason at once, not "GPU stages skipped".
function T.parameters_that_do_not_fit_are_a_plan_error_offline(t)
  local d = candidate(t, [[
extern "C" __global__ void relu(const float *X, float *Y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) Y[i] = X[i] > 0.f ? X[i] : 0.f;
}
]])
  local r = assert(eval.evaluate("relu_f32/999x1021", d, { timing = false }))
  t.eq(r.verdict, "plan_error")
  t.eq(r.reason, "launch 1: kernel relu takes 20 bytes of parameters, the plan's arguments pack into 24 (argument 3 "
    .. "(u64 1019979) is 8 bytes, but kernel parameter 3 is 4 bytes)")
  -- With only the total known (a cubin without each parameter's record).
  local plan = require "klab.eval.plan"
  local launch = { kernel = "relu", args = { { kind = "buffer", name = "X" }, { kind = "buffer", name = "Y" },
    { kind = "scalar", type = "u64", value = 1 } } }
  local detail = plan.check_compiled(launch, { name = "relu", param_bytes = 20 })
  t.eq(detail.expected, 20)
  t.eq(detail.packed, 24)
  t.eq(plan.check_compiled(launch, { name = "relu", param_bytes = 24 }), nil)
  -- A u32 after a u64 packs at 8-byte alignment: 8 + 8 + 4, then a u64 at 24.
  launch.args[3] = { kind = "scalar", type = "u32", value = 1 }
  launch.args[4] = { kind = "scalar", type = "u64", value = 1 }
  t.eq(plan.check_compiled(launch, { name = "relu", param_bytes = 32 }), nil)
  t.eq(plan.check_compiled(launch, { name = "relu", param_bytes = 28 }).packed, 32)
  -- A tensor map: the cubin counts offsets from another base than the
  -- driver (48 here is 64-byte aligned on the device), so only sizes count
  -- offline, and no packed total is claimed.
  local tm = { kernel = "g", args = { { kind = "tensormap", buffer = "A" }, { kind = "scalar", type = "u32", value = 1 } } }
  t.eq(plan.check_compiled(tm, { name = "g", param_bytes = 180, params = { { offset = 48, size = 128 },
    { offset = 176, size = 4 } } }), nil)
  local miss = plan.check_compiled(tm, { name = "g", param_bytes = 184, params = { { offset = 48, size = 128 },
    { offset = 176, size = 8 } } })
  t.eq(require("klab.eval.verdict").reason("plan_error", miss), "launch 1: kernel g takes 184 bytes of parameters "
    .. "(argument 2 (u32 1) is 4 bytes, but kernel parameter 2 is 8 bytes)")
end

-- The task lint finds a reference plan that passes an argument its kernel
-- does not take (klab tasks --check, no GPU).
function T.a_reference_plan_that_does_not_fit_its_kernel_is_a_task_mistake(t)
  local q = require("klab.command").shell_quote
  local dir = t.tmpdir()
  t.eq((t.sh(("cp -r %s %s"):format(q(t.root .. "/tasks/activation"), q(dir .. "/activation")))), 0)
  local path = dir .. "/activation/_family.lua"
  local s = assert(t.read(path))
  local n
  s, n = s:gsub('f64%(%%%.17g%) }', 'f64(%%.17g), i32(0) }', 1)
  t.eq(n, 1)
  local f = assert(io.open(path, "w"))
  f:write(s)
  f:close()
  local code, out, err = t.sh(("%s tasks --check %s"):format(q(t.klab), q(dir .. "/activation")))
  t.eq(code, 2, out .. err)
  t.match(out, "activation/[%w_]+%.lua: reference: [%w_]+/[%dx]+ on sm_90a: the task's reference plan failed: "
    .. "launch 1: kernel act_ref takes %d+ bytes of parameters, the plan.s arguments pack into %d+ %(kernel act_ref "
    .. "takes 7 parameters, the plan passes 8 arguments%)")
end

function T.bad_input(t)
  local r, err = eval.evaluate("no_such_task/1x1", "tasks/gemm/samples/naive")
  t.eq(r, nil)
  t.match(err, "no_such_task")
  r, err = eval.evaluate(TASK, t.tmpdir())
  t.eq(r, nil)
  t.match(err, "no device code")
end

-- The store key names the machine, which a worker must start CUDA to say:
-- submit sends the question and returns, the build runs meanwhile, and the
-- key is there when the result is stored.
function T.the_store_key_does_not_hold_up_the_build(t)
  local db = t.tmpdir() .. "/k.db"
  local store = require "klab.store"
  local s = eval.session { db = assert(store.open(db)) }
  local ticket = assert(s:submit(TASK, "tasks/gemm/samples/naive"))
  t.eq(s:machine(true), nil, "submit returned before the machine was known")
  local r = s:wait(ticket)
  t.ok(r.verdict ~= nil)
  t.ok(s:machine(true) ~= nil, "the machine is known once the result is")
  s:close()
  local st <close> = assert(store.open(db))
  t.eq(st:first("SELECT count(*) AS n FROM evaluations").n, 1, "the result was stored under its key")
end

function T.no_gpu_says_unknown_and_is_stored(t)
  if gpu.available() then t.skip("a GPU is present: the GPU test covers this") end
  local db = t.tmpdir() .. "/r.db"
  local r = assert(eval.evaluate(TASK, "tasks/gemm/samples/naive", { db = db }))
  t.eq(r.verdict, "unknown")
  t.match(r.reason, "GPU stages skipped")
  t.ok(r.stages.build.ok)
  t.eq(r.stages.plan.launches, 1)
  -- An unknown result is not a measurement: asking again evaluates again
  -- (the row is replaced, not answered from).
  local r2 = assert(eval.evaluate(TASK, "tasks/gemm/samples/naive", { db = db }))
  t.eq(r2.cached, nil)
  t.eq(r2.verdict, "unknown")
  local store = require "klab.store"
  local s <close> = assert(store.open(db))
  t.eq(s:first("SELECT count(*) AS n FROM evaluations").n, 1)
  t.eq(s:first("SELECT attempts FROM evaluations").attempts, 2)
  t.eq(s:first("SELECT count(*) AS n FROM candidates").n, 1)
  -- A result that was measured here (a compile error needs no GPU) answers
  -- again from the store.
  local bad = candidate(t, "extern \"C\" __global__ void gemm( { }", nil)
  local c1 = assert(eval.evaluate(TASK, bad, { db = db }))
  t.eq(c1.verdict, "compile_error")
  local c2 = assert(eval.evaluate(TASK, bad, { db = db }))
  t.eq(c2.cached, true)
  t.eq(c2.verdict, "compile_error")
  -- The store's key names the machine and klab's version: a result measured
  -- elsewhere is a different row.
  local e = s:first("SELECT count(*) AS n FROM evaluations").n
  t.eq(e, 2)
end

function T.cli(t)
  local code, out, err = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --no-timing --json")
  local r = cjson.decode(out)
  t.eq(r.task, TASK)
  -- Exit 0 for a correct candidate (on a GPU), 3 for unknown (nothing could run here).
  t.ok(r.verdict == "unknown" or r.verdict == "target_not_executed", r.verdict)
  t.eq(code, r.verdict == "unknown" and 3 or 0, err)
  code, _, err = t.sh(t.klab .. " eval " .. TASK)
  t.eq(code, 2)
  t.match(err, "expected TASK and CANDIDATE")
  code, _, err = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --bogus")
  t.eq(code, 2)
  t.match(err, "unknown option")
  code, _, err = t.sh(t.klab .. " eval nope/1 tasks/gemm/samples/naive")
  t.eq(code, 2, "an unknown task is the user's mistake")
  t.match(err, "^klab eval: no task named 'nope' under [^\n]*%('klab tasks' lists the tasks%)\n$")
  code, _, err = t.sh(t.klab .. " eval " .. TASK .. " /nonexistent/cand")
  t.eq(code, 2, "a missing candidate")
  t.match(err, "/nonexistent/cand")
  for _, d in ipairs { "inf", "1e999", "nan", "0" } do
    code, _, err = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --deadline " .. d)
    t.eq(code, 2, "--deadline " .. d)
    t.match(err, "positive, finite number of seconds, not '" .. d .. "'")
  end
  code, _, err = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --arch sm_99z")
  t.eq(code, 2, "--arch sm_99z")
  t.match(err, "'sm_99z' is not a GPU target name")
  -- A file that is not a store: one line naming it, no internal path, no traceback.
  local d = t.tmpdir()
  local g = assert(io.open(d .. "/garbage.db", "w"))
  g:write(("not a database\n"):rep(100))
  g:close()
  code, _, err = t.sh("cd '" .. d .. "' && " .. t.klab .. " eval " .. TASK .. " " .. t.root .. "/tasks/gemm/samples/naive --db garbage.db")
  t.eq(code, 2, "--db garbage.db")
  t.eq(err, "klab eval: garbage.db is not a klab store (SQLite says: file is not a database)\n")
  code, out = t.sh(t.klab .. " eval --help")
  t.eq(code, 0)
  t.match(out, "usage: klab eval")
end

function T.sanitizer_stage(t)
  -- A stand-in for compute-sanitizer that runs the worker it wraps (klab
  -- --worker, after memcheck's options) and reports errors, its summary
  -- once the worker has ended: the verdict is a runtime_error naming the
  -- first one, before any GPU stage.
  local d = t.tmpdir()
  write(d .. "/fake-sanitizer", "#!/bin/sh\necho '========= COMPUTE-SANITIZER'\n" ..
    "echo \"$*\" > '" .. d .. "/args'\nshift 6\n\"$@\"\n" ..
    "echo '========= Invalid __global__ write of size 2 bytes'\necho '========= ERROR SUMMARY: 3 errors'\n")
  os.execute("chmod +x '" .. d .. "/fake-sanitizer'")
  local code, out = t.sh("KLAB_SANITIZER='" .. d .. "/fake-sanitizer' " .. t.klab .. " eval " .. TASK ..
    " tasks/gemm/samples/naive --sanitize --json")
  local r = cjson.decode(out)
  t.eq(code, 1)
  t.eq(r.verdict, "runtime_error")
  t.match(r.reason, "memcheck found 3 error%(s%): Invalid __global__ write")
  t.eq(r.stages.sanitizer.errors, 3)
  t.match(t.read(d .. "/args"), "^%-%-tool memcheck %-%-report%-api%-errors no %-%-error%-exitcode 0 .+ %-%-worker\n$",
    "the tool wraps a worker, not klab's command line")
  -- Without the tool the stage says unknown and the evaluation goes on.
  code, out = t.sh("KLAB_SANITIZER=/nonexistent " .. t.klab .. " eval " .. TASK ..
    " tasks/gemm/samples/naive --sanitize --no-timing --json")
  r = cjson.decode(out)
  t.eq(r.stages.sanitizer.status, "unknown")
  t.ok(r.verdict ~= "runtime_error")
end

-- The static SASS census is taken at build time, so every evaluation that
-- compiled records "present in machine code", GPU or not. A stand-in for
-- nvdisasm prints a listing with one HGMMA and one TMA load.
function T.static_sass_census_is_recorded_with_every_evaluation(t)
  local d = t.tmpdir()
  write(d .. "/listing.txt", table.concat({
    "\t.section\t.text.gemm,\"ax\",@progbits",
    ".text.gemm:",
    "        /*0000*/                   HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;",
    "        /*0010*/                   UTMALDG.2D [UR8], [UR4] ;",
    "        /*0020*/                   EXIT ;",
  }, "\n") .. "\n")
  write(d .. "/nvdisasm", "#!/bin/sh\ncat '" .. d .. "/listing.txt'\n")
  os.execute("chmod +x '" .. d .. "/nvdisasm'")
  local db = d .. "/r.db"
  local _, out, err = t.sh("KLAB_NVDISASM='" .. d .. "/nvdisasm' " .. t.klab .. " eval " .. TASK ..
    " tasks/gemm/samples/naive --no-timing --json --db '" .. db .. "'")
  local r = cjson.decode(out)
  local sass = r.stages.build.sass
  t.eq(sass.available, true, err)
  t.eq(sass.families.wgmma, 1)
  t.eq(sass.families.tma, 1)
  t.eq(sass.opcodes.EXIT, 1)
  local store = require "klab.store"
  local s <close> = assert(store.open(db))
  t.eq(s:first("SELECT value FROM measurements WHERE name = 'sass_static_wgmma'").value, 1)
  t.eq(s:first("SELECT value FROM measurements WHERE name = 'ptx_wgmma'").value, 0, "the PTX census says none")
  -- Every row the offline pipeline stores is a measurement the stage
  -- registry declares, with the declaration's unit.
  local stages = require "klab.eval.stages"
  local rows = s:query("SELECT name, unit FROM measurements")
  t.ok(#rows > 3, "the build's measurements")
  for _, m in ipairs(rows) do
    local decl = stages.measurement(m.name)
    t.ok(decl ~= nil, m.name .. " is declared")
    t.eq(m.unit, decl and decl.unit, m.name .. "'s unit")
  end
  -- Without either tool (each variable names nothing): not available, with
  -- the reason; the evaluation goes on.
  _, out = t.sh("KLAB_NVDISASM=/nonexistent KLAB_CUOBJDUMP=/nonexistent " .. t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive " ..
    "--no-timing --json")
  r = cjson.decode(out)
  t.eq(r.stages.build.sass.available, false)
  t.match(r.stages.build.sass.reason, "nvdisasm")
  t.ok(r.stages.plan and r.stages.plan.launches == 1, "the plan stage still ran")
end

function T.stage_deadlines_are_checked(t)
  local d = t.tmpdir()
  t.raises(function() eval.evaluate(TASK, "tasks/gemm/samples/naive", { stage_deadlines = { compile = 5 } }) end,
    "unknown stage 'compile'")
  t.raises(function() eval.evaluate(TASK, "tasks/gemm/samples/naive", { stage_deadlines = { timing = -1 } }) end,
    "positive number")
  t.raises(function() eval.evaluate(TASK, "tasks/gemm/samples/naive", { stage_deadlines = 5 }) end, "must be a table")
  local code, _, err = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --stage-deadline correctness")
  t.eq(code, 2)
  t.match(err, "STAGE=S")
  code, _, err = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --stage-deadline timing=0")
  t.eq(code, 2)
  t.match(err, "positive, finite number")
  code, _, err = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --stage-deadline timing=1e999")
  t.eq(code, 2)
  code, _, err = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --stage-deadline bogus=3")
  t.eq(code, 2)
  t.match(err, "unknown stage 'bogus'")
  code = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --no-timing --stage-deadline correctness=30 " ..
    "--json --db '" .. d .. "/r.db'")
  t.ok(code == 0 or code == 1 or code == 3, "accepted")
end

-- The plain trials compare every element; a distribution's trial compares
-- sampled units unless the evaluation asks for the full proof; a caller's
-- own trials are compared in full.
function T.distribution_trials_are_sampled_unless_the_proof_is_full(t)
  local def = assert(require("klab.task").get("softmax_bf16/1000x1023"))
  local trials = prepare.trials(def)
  local plain, dists = 0, 0
  for _, tr in ipairs(prepare.seeded(trials, "7")) do
    if tr.distribution then
      dists = dists + 1
      t.eq(tr.sampled, true, tr.label)
    else
      plain = plain + 1
      t.eq(tr.sampled, nil, tr.label)
    end
  end
  t.ok(plain >= 1 and dists >= 6, plain .. " plain trials, " .. dists .. " distributions")
  for _, tr in ipairs(prepare.seeded(trials, "7", "full")) do t.eq(tr.sampled, nil, tr.label) end
  for _, tr in ipairs(prepare.seeded({ { label = "mine", scale = 4 } }, "7")) do t.eq(tr.sampled, nil) end
  -- The job the caller's stages make: sampled distributions by default,
  -- none with the full proof, none where the output has no more units than
  -- a sampled check draws.
  local function job_trials(task, opts)
    local run = { task = require("klab.task").get(task), cand = assert(require("klab.eval.candidate").load(
      "tasks/softmax/samples/naive")), arch = "sm_90a", opts = opts, seed = "0x3", result = { stages = {} } }
    assert(require("klab.eval.stages").run_caller(run), tostring(run.result.reason))
    prepare.cleanup(run)
    local n = 0
    for _, tr in ipairs(run.job.trials) do if tr.sampled then n = n + 1 end end
    return n, #run.job.trials
  end
  local n, all = job_trials("softmax_bf16/1000x1023", {})
  t.eq(n, 0, "1,000 rows: fewer units than a sampled check draws")
  n, all = job_trials("softmax_bf16/16384x16384", {})
  t.eq(n, dists)
  t.eq(all, plain + dists)
  t.eq(job_trials("softmax_bf16/16384x16384", { proof = "full" }), 0)
  t.raises(function() eval.evaluate(TASK, "tasks/gemm/samples/naive", { proof = "most" }) end,
    'proof must be "sampled" or "full"')
  local code, _, err = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --proof most")
  t.eq(code, 2)
  t.match(err, "--proof needs 'sampled' or 'full'")
  code, _, err = t.sh(t.klab .. " batch /dev/null --proof most")
  t.eq(code, 2)
  t.match(err, "--proof needs 'sampled' or 'full'")
end

-- ---- on a GPU ----

-- A kernel that never ends is stopped by the limit of the stage it hangs
-- in, long before the job's deadline, and the reason names the stage.
function T.gpu_hang_is_stopped_by_its_stage_limit(t)
  t.need_gpu()
  local t0 = require("klab.sys").now()
  local r = assert(eval.evaluate("gemm_bf16/4096x4096x4096", "tasks/gemm/bad/infinite_loop",
    { deadline = 120, stage_deadlines = { correctness = 3 } }))
  local dt = require("klab.sys").now() - t0
  t.eq(r.verdict, "timeout")
  t.match(r.reason, "the correctness stage did not finish within its 3 s")
  t.eq(r.worker.stage, "correctness")
  t.ok(dt < 60, string.format("stopped after %.1f s (deadline 120 s)", dt))
end

function T.gpu_sample_passes_and_is_stored(t)
  t.need_gpu()
  local db = t.tmpdir() .. "/r.db"
  local s <close> = eval.session { db = db }
  local r = assert(s:evaluate(TASK, "tasks/gemm/samples/naive", { timing_opts = { budget_s = 1 } }))
  -- Correct; the naive kernel runs no wgmma, so it is not "verified".
  t.eq(r.verdict, "target_not_executed", r.reason)
  t.ok(r.stages.timing.candidate.median > 0)
  t.ok(r.stages.timing.baseline and r.stages.timing.speedup > 0, "baseline timed")
  local w = assert(s:evaluate(TASK, "tasks/gemm/bad/writes_nothing", { timing_opts = { budget_s = 1 } }))
  t.eq(w.verdict, "incorrect")
  t.match(w.reason, "never written")
  local store = require "klab.store"
  local db2 <close> = assert(store.open(db))
  t.eq(db2:first("SELECT count(*) AS n FROM evaluations").n, 2)
  t.ok(db2:first("SELECT count(*) AS n FROM environments").n >= 1)
  local m = db2:first("SELECT value FROM measurements WHERE name = 'median_us'")
  t.ok(m and m.value > 0)
end

-- The same kernel passes under either proof; the result says which trials
-- were sampled and how many units, and the range faults the distributions
-- exist for are still found on sampled units.
function T.gpu_sampled_distributions_keep_the_verdicts(t)
  t.need_gpu()
  local s <close> = eval.session {}
  -- More rows (units) than a sampled check draws.
  local task = "softmax_bf16/16384x16384"
  local r = assert(s:evaluate(task, "tasks/softmax/samples/naive", { timing = false }))
  local f = assert(s:evaluate(task, "tasks/softmax/samples/naive", { timing = false, proof = "full" }))
  t.eq(r.verdict, f.verdict)
  t.eq(r.proof, "sampled")
  t.eq(f.proof, "full")
  local sampled = 0
  for _, tr in ipairs(r.stages.correctness.trials) do
    if tr.label:match("^distribution") then
      t.ok(tr.sampled and tr.sampled > 0, tr.label)
      sampled = sampled + 1
    else
      t.eq(tr.sampled, nil, tr.label)
    end
  end
  t.ok(sampled > 0)
  for _, tr in ipairs(f.stages.correctness.trials) do t.eq(tr.sampled, nil, tr.label) end
  local bad = assert(s:evaluate(task, "tasks/softmax/bad/max_misses_half", { timing = false }))
  t.eq(bad.verdict, "incorrect")
end

-- One seed per evaluation: drawn from the operating system, shown with the
-- result, and everything random in the job derives from it. The same seed
-- gives the same job; another seed other trials and timed draws.
function T.one_seed_per_evaluation(t)
  local seed = require "klab.eval.seed"
  t.eq(seed.format(seed.parse("0x00000000000000ff")), "0x00000000000000ff")
  t.eq(seed.parse("255"), 255)
  t.eq(seed.format(seed.parse("18446744073709551615")), "0xffffffffffffffff")
  t.eq(seed.parse("18446744073709551616"), nil)
  t.eq(seed.parse("0x10000000000000000"), nil)
  t.eq(seed.parse("12x"), nil)
  t.ok(seed.new() ~= seed.new(), "two draws differ")
  -- Every use of a seed gets draws of its own, and a draw is fixed by its seed.
  t.ok(seed.derive(1, "trial", 1) ~= seed.derive(1, "trial", 2) and seed.derive(1, "trial", 1) ~= seed.derive(2, "trial", 1)
    and seed.derive(1, "trial", 1) ~= seed.derive(1, "input", 1))
  local a, b = seed.rng(7), seed.rng(7)
  for _ = 1, 5 do t.eq(a(1000), b(1000)) end
  local function job(s)
    local run = { task = require("klab.task").get(TASK), cand = assert(require("klab.eval.candidate").load(
      "tasks/gemm/samples/naive")), arch = "sm_90a", opts = { seed = s }, seed = s, result = { stages = {} } }
    assert(require("klab.eval.stages").run_caller(run), tostring(run.result.reason))
    prepare.cleanup(run)
    return run.job
  end
  local j1, j2, j3 = job("0x1"), job("0x1"), job("0x2")
  t.eq(j1.seed, "0x1")
  t.eq(#j1.trials, #j3.trials)
  local distinct = {}
  for i, tr in ipairs(j1.trials) do
    t.eq(tr.seed, j2.trials[i].seed, "the same seed, the same trial " .. i)
    t.ok(tr.seed ~= j3.trials[i].seed, "another seed, another trial " .. i)
    t.eq(tr.label, j3.trials[i].label)
    distinct[tr.seed] = true
  end
  local n = 0
  for _ in pairs(distinct) do n = n + 1 end
  t.eq(n, #j1.trials, "every trial has a seed of its own")
  -- Through the pipeline: a new seed each time, or the one asked for.
  local r1 = assert(eval.evaluate(TASK, "tasks/gemm/samples/naive", { deadline = 60 }))
  local r2 = assert(eval.evaluate(TASK, "tasks/gemm/samples/naive", { deadline = 60 }))
  t.match(r1.seed, "^0x%x+$")
  t.ok(r1.seed ~= r2.seed, "two evaluations, two seeds")
  local r3 = assert(eval.evaluate(TASK, "tasks/gemm/samples/naive", { deadline = 60, seed = "42" }))
  t.eq(r3.seed, "0x000000000000002a")
  local _, err = eval.evaluate(TASK, "tasks/gemm/samples/naive", { seed = "forty-two" })
  t.match(err, "^seed: ")
  local code, out = t.sh(t.klab .. " eval " .. TASK .. " tasks/gemm/samples/naive --json --seed 0x2a")
  t.eq(require("klab.json").decode(out).seed, "0x000000000000002a", tostring(code))
end

-- On the GPU: two evaluations of an honest kernel, two seeds, one verdict;
-- the same seed again gives the same errors, element for element.
function T.gpu_seeds_change_inputs_not_verdicts(t)
  t.need_gpu()
  local s <close> = eval.session {}
  local o = { timing_opts = { budget_s = 0.5 } }
  local r1 = assert(s:evaluate(TASK, "tasks/gemm/samples/naive", o))
  local r2 = assert(s:evaluate(TASK, "tasks/gemm/samples/naive", o))
  t.ok(r1.seed ~= r2.seed)
  t.eq(r1.verdict, "target_not_executed", r1.reason)
  t.eq(r2.verdict, r1.verdict, r2.reason)
  local e1 = r1.stages.correctness.outputs.C.max_abs
  t.ok(e1 ~= r2.stages.correctness.outputs.C.max_abs, "other inputs, other errors")
  local r3 = assert(s:evaluate(TASK, "tasks/gemm/samples/naive", { timing_opts = { budget_s = 0.5 }, seed = r1.seed }))
  t.eq(r3.seed, r1.seed)
  t.eq(r3.stages.correctness.outputs.C.max_abs, e1, "the same seed, the same inputs")
  t.eq(r3.stages.correctness.outputs.C.max_abs_at, r1.stages.correctness.outputs.C.max_abs_at)
end

return T
