-- experiments/samples_study.lua: a small study of the repository's own sample
-- kernels, for a first look at a report with two conditions side by side.
--
--   klab experiments/samples_study.lua [out=DIR] [replicas=2]
--   klab report --by tag DIR/samples_study.db --out DIR/report
--
-- One "model" (klab-sample), two tasks (a bf16 GEMM and attention forward),
-- two prompt tags, two turns. The replies are written by this script from the
-- sample kernels under tasks/*/samples (written by the klab team, not model
-- output), so that the two tags differ the way a study's conditions would:
--   none    turn 1 the naive kernel, turn 2 the same kernel again
--   hopper  turn 1 the naive kernel, turn 2 the tensor-core kernel
--           (wgmma_tma for the GEMM, mma_fwd for attention)
-- The sweep runs in record-missing mode against these files and never
-- contacts a server. On a machine without a GPU every turn is "unknown";
-- on an H200 the hopper rows pass with a speedup and the none rows are slow.

local experiment = require("klab.experiment")
local sys = require("klab.sys")

local o = experiment.options({
  about = "A small study of the sample kernels under two prompt tags, for `klab report --by tag`.",
  { "out", "build/samples_study", "the folder for the replies, the store and its log" },
  { "replicas", 2, "trajectories per task and tag" },
}, { ... })

local TASKS = {
  { name = "gemm", workload = "gemm_bf16/128x4096x4096", naive = "tasks/gemm/samples/naive",
    fast = "tasks/gemm/samples/wgmma_tma" },
  { name = "attention", workload = "attn_fwd/4x48x1024x128", naive = "tasks/attention/samples/naive_fwd",
    fast = "tasks/attention/samples/mma_fwd" },
}
local TURNS = { none = { "naive", "naive" }, hopper = { "naive", "fast" } }

local function read(path) return assert(require("klab.fs").read(path)) end

local function reply(sample)
  return table.concat({
    "<!-- written by the klab team as sample data, not model output -->",
    "The kernel and its launch plan.", "",
    "```cuda", read(sample .. "/kernel.cu"), "```", "",
    "```lua", read(sample .. "/plan.lua"), "```", "",
  }, "\n")
end

local replicas = math.tointeger(o.replicas)
local responses = o.out .. "/responses"
for _, t in ipairs(TASKS) do
  for tag, turns in pairs(TURNS) do
    for r = 1, replicas do
      local dir = ("%s/klab-sample/%s/%s/r%d"):format(responses, t.name, tag, r)
      assert(sys.mkdir(dir))
      for n, which in ipairs(turns) do
        local f = assert(io.open(("%s/turn%d.md"):format(dir, n), "wb"))
        f:write(reply(t[which]))
        f:close()
      end
    end
  end
end

local db = o.out .. "/samples_study.db"
for _, suffix in ipairs { "", "-wal", "-shm" } do os.remove(db .. suffix) end
local tasks = {}
for i, t in ipairs(TASKS) do tasks[i] = { name = t.name, workloads = { t.workload } } end
local exp <close> = experiment.new {
  name = "samples_study", db = db, log = o.out .. "/samples_study.log",
  mode = "record-missing", responses_dir = responses,
  -- Never contacted: every request is answered from the files written above.
  models = { { name = "klab-sample", provider = "openai", model = "klab-sample", base_url = "http://127.0.0.1:9/v1" } },
  tasks = tasks, tags = { "none", "hopper" }, replicas = replicas, turns = 2,
  -- A trajectory never stops early: both tags get both turns.
  target_speedup = 1e9, select = "fastest_correct",
}
local summary = exp:run()
print(exp:table())
print(("\n%d trajectories, %d turns; responses: %d from the files, %d from the store, %d from the network."):format(
  summary.trajectories, summary.turns, summary.requests.files, summary.requests.cache, summary.requests.network))
print(("Store: %s\nReport: klab report --by tag %s --out %s/report"):format(db, db, o.out))
