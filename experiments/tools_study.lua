-- experiments/tools_study.lua: a tool-calling study. The model works with
-- klab's tools through its provider's tool-calling API (compile, run on the
-- smallest shape, profile, submit) within budgets; each submission is a
-- turn. docs/agents.md describes it; klab.agent.study runs it.
--
--   klab experiments/tools_study.lua models=NAME base_url=URL api_key_env=VAR [key=value ...]
--
-- Compare it with the turn-based loop on the same tasks and models:
--   klab experiments/ptxbench_sweep.lua db=results/both.db models=NAME base_url=URL tasks=T
--   klab experiments/tools_study.lua db=results/both.db models=NAME base_url=URL tasks=T
--   klab report results/both.db --by policy --out results/both-report

local experiment = require "klab.experiment"

local o = experiment.options(experiment.with_model_options {
  about = "A tool-calling study: the model compiles, runs, profiles and submits through tools, within budgets.",
  { "name", "tools_study", "the study's name in the store" },
  { "db", "results/tools_study.db", "the store (created with its folder; run again to resume)" },
  { "tasks", { "gemm_bf16/123x457x789" }, "tasks (klab tasks lists them), comma-separated" },
  { "replicas", 1, "trajectories per model and task" },
  { "tool_calls", 30, "budget: tool calls per trajectory" },
  { "submissions", 3, "budget: submissions per trajectory (each a turn)" },
  { "tokens", 0, "budget: tokens per trajectory, input and output (0: none)" },
  { "wall_s", 0, "budget: seconds of wall time per trajectory (0: none)" },
  { "gpu_s", 0, "budget: seconds of GPU tools per trajectory (0: none)" },
  { "target", -1.0, "end a trajectory at a passing submission with this speedup (0: any; -1: never)" },
  { "arch", "sm_90a", "the compile target" },
  { "mode", "record-missing", "live, record-missing or replay (answers from the store only)" },
  { "log", "", "the log file (default: DB.log)" },
}, { ... })

local function limit(v) return v > 0 and v or nil end

local s <close> = require("klab.agent.study").new {
  name = o.name, db = o.db, models = experiment.models_from(o), tasks = o.tasks,
  replicas = math.tointeger(o.replicas), arch = o.arch, mode = o.mode, target_speedup = o.target >= 0 and o.target or nil,
  budgets = { tool_calls = o.tool_calls, submissions = o.submissions, tokens = limit(o.tokens),
    wall_s = limit(o.wall_s), gpu_s = limit(o.gpu_s) },
  log = o.log ~= "" and o.log or (o.db .. ".log"),
}
local summary = s:run()
print(("%s: %d trajectories, %d model requests, %d tool calls, %d submissions (%s phase)"):format(o.name,
  summary.trajectories, summary.requests, summary.tool_calls, summary.submissions, summary.phase))
for _, f in ipairs(summary.failed) do io.stderr:write(o.name, ": a request failed: ", f, "\n") end
-- The exit status (klab --help): 3 when no model request got an answer, else 0.
return summary.status
