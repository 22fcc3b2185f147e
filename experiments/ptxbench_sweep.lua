-- experiments/ptxbench_sweep.lua: a PTXBench-style sweep.
--
--   klab experiments/ptxbench_sweep.lua models=NAME base_url=URL api_key_env=VAR [key=value ...]
--
-- For each model and task: languages x prompt tags x replicas trajectories
-- (1 x 3 x 4 by default) of up to 8 turns. Each turn sends the conversation so far, turns
-- the reply into a candidate (the last ```cuda/```ptx block, or ```python for
-- Triton, a ```lua plan if any), evaluates it on every workload of the task, and answers with
-- PTXBench's feedback (per workload: PASSED with the speedup and both times,
-- or the status with the max errors; the compiler log; the INSTRUCTION
-- WARNING when the target instructions did not run). A trajectory stops
-- early once every workload passes at >= target (1.2x). At the end: the
-- table of trajectories and PTXBench's cells (correct / correct with
-- verified instructions / best speedup).
--
-- Every option below can be given as key=value; lists are comma-separated
-- (tags=hopper-no-hint,hopper+warp_specialization). The store (db=) keeps
-- the responses, evaluations and turns: run the same command again to resume
-- after an interruption; mode=replay reruns it from the store with no network.

local experiment = require "klab.experiment"

local o = experiment.options(experiment.with_model_options {
  about = "A PTXBench-style sweep: languages x prompt tags x replicas trajectories of repair turns per model and task.",
  { "name", "ptxbench_sweep", "the experiment's name in the store" },
  { "db", "results/ptxbench_sweep.db", "the store (created with its folder; run again to resume)" },
  { "tasks", { "gemm_bf16/8192x7168x5120" }, "tasks or task groups, comma-separated (klab tasks lists them)" },
  { "tags", { "hopper-no-hint", "hopper+cluster_multicast", "hopper+warp_specialization" },
    "prompt tags, comma-separated (prompts/)" },
  { "languages", { "cuda" }, "the languages kernels are asked in, comma-separated: cuda, cute, triton "
    .. "(docs/languages.md)" },
  { "replicas", 4, "trajectories per model, task, language and tag" },
  { "turns", 8, "turns per trajectory at most" },
  { "target", 1.2, "stop a trajectory once every workload passes at this speedup" },
  { "arch", "sm_90a", "the compile target" },
  { "mode", "record-missing", "live, record-missing or replay (answers from the store only)" },
  { "select", "fastest_verified", "the selection policy per trajectory" },
  { "profile", false, "add the profile to the feedback" },
  { "profile_after", 2, "from which turn the profile is added" },
  { "responses_dir", "", "a folder of stored replies to answer from (as experiments/responses/)" },
  { "log", "", "the log file (default: DB.log)" },
}, { ... })

local exp <close> = experiment.new {
  name = o.name, db = o.db, models = experiment.models_from(o), tasks = o.tasks, tags = o.tags,
  languages = o.languages,
  replicas = math.tointeger(o.replicas), turns = math.tointeger(o.turns), target_speedup = o.target,
  arch = o.arch, mode = o.mode, select = o.select, responses_dir = o.responses_dir ~= "" and o.responses_dir or nil,
  feedback = { profile = o.profile, profile_after = math.tointeger(o.profile_after) },
  log = o.log ~= "" and o.log or (o.db .. ".log"),
}
local summary = exp:run()
print(exp:table())
print()
print(experiment.format_cells(exp:cells()))
-- The exit status (klab --help): 3 when nothing could be evaluated (model server
-- unreachable, no GPU), else 0.
return summary.status
