-- experiments/repair_loop.lua: a repair loop in the manner of CuTeGen.
--
--   klab experiments/repair_loop.lua models=NAME base_url=URL api_key_env=VAR [key=value ...]
--
-- Starts from a broken kernel (default: tasks/gemm/bad/low_precision, a GEMM
-- that accumulates in bf16), evaluates it once, and asks the model to repair
-- it: diagnose first (what is wrong and where), then send the whole fixed
-- kernel. Each turn's feedback is PTXBench-style; the profile text is added
-- only after turn `profile_after` (CuTeGen's delayed profiling: early turns
-- fix correctness without the distraction of counters). The loop stops at the
-- first correct turn (target=0) or after `turns` turns.

local experiment = require "klab.experiment"
local prompt = require "klab.experiment.prompt"

local o = experiment.options(experiment.with_model_options {
  about = "A repair loop: the model is shown a broken kernel and its evaluation, and repairs it turn by turn.",
  { "name", "repair_loop", "the experiment's name in the store" },
  { "db", "results/repair_loop.db", "the store (created with its folder; run again to resume)" },
  { "task", "gemm_bf16/1000x1000x1000", "the task (klab tasks lists them)" },
  { "seed_kernel", "tasks/gemm/bad/low_precision", "the broken kernel to repair (a candidate folder or file)" },
  { "replicas", 2, "trajectories" },
  { "turns", 5, "turns per trajectory at most" },
  { "target", 0.0, "stop at a correct turn with this speedup (0: the first correct turn)" },
  { "arch", "sm_90a", "the compile target" },
  { "mode", "record-missing", "live, record-missing or replay (answers from the store only)" },
  { "profile_after", 2, "from which turn the profile is added to the feedback" },
  { "log", "", "the log file (default: DB.log)" },
}, { ... })

local command = require "klab.command"
local seed, why = require("klab.eval.candidate").load(o.seed_kernel)
if not seed then command.raise(("%s: seed_kernel=%s: %s"):format(arg[0], o.seed_kernel, why)) end

-- The seed's own evaluation, as the model will see it.
local db <close> = experiment.open_store(o.db, arg[0])
local ev <close> = require("klab.eval").session { db = db }
local r, rerr = ev:evaluate(o.task, seed, { arch = o.arch })
if not r then command.raise(("%s: task=%s: %s"):format(arg[0], o.task, command.task_hint(rerr))) end
local t = require("klab.task").get(o.task)
local axes = {}
for _, d in ipairs(t.dim_order) do axes[#axes + 1] = d .. "=" .. t.dims[d] end
local seed_feedback = prompt.feedback({ verdict = r.verdict, reason = r.reason, workloads = { {
  name = o.task, axes = table.concat(axes, ", "), verdict = r.verdict, reason = r.reason,
  speedup = r.stages.timing and r.stages.timing.speedup } }, compile_log = r.stages.build and r.stages.build.log }, {})

local exp <close> = experiment.new {
  name = o.name, db = db, session = ev, models = experiment.models_from(o), tasks = { o.task }, tags = { "none" },
  replicas = math.tointeger(o.replicas), turns = math.tointeger(o.turns), target_speedup = o.target, arch = o.arch,
  mode = o.mode, select = "first_correct",
  prompt = { user = "repair.md", vars = { seed_code = seed.code, seed_plan = seed.plan or "(the task's default plan)",
    seed_feedback = seed_feedback } },
  feedback = { template = "repair_feedback.md", profile = true, profile_after = math.tointeger(o.profile_after) },
  log = o.log ~= "" and o.log or (o.db .. ".log"),
}
local summary = exp:run()
print("seed kernel: " .. o.seed_kernel .. " -> " .. tostring(r.reason))
print(exp:table())
-- The exit status (klab --help): 3 when nothing could be evaluated (model server
-- unreachable, no GPU), else 0.
return summary.status
