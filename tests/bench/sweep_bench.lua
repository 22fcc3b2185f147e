-- tests/bench/sweep_bench.lua: what a sweep's own bookkeeping costs as its
-- store grows, with no model and no GPU in the way: a stand-in HTTP client
-- answers every request at once with a candidate, and a stand-in
-- evaluation session judges it at once. Prints, for stores holding about
-- 1k, 10k and 62.5k turns made through this same pipeline, the CPU time per
-- new turn of a sweep that adds to them, and the memory a reopened
-- experiment holds (its trajectories and turns loaded for the run).
--
--   build/klab tests/bench/sweep_bench.lua [--sizes=1250,10000,62500] [--new=500]
--
-- The reopen figure is the Lua heap the loaded trajectories hold (what the
-- process adds besides is SQLite's page cache, bounded by its own limit).
-- The target: at 62.5k stored turns, CPU per new turn within 2x
-- of the first thousand's, and reopening at most 100 MB. The stores are
-- grown by copying what the pipeline made (trajectories, turns and the
-- response cache renamed to a new experiment), so that building the big
-- one takes seconds, not the hours a sweep of it would.

local experiment = require "klab.experiment"
local store = require "klab.store"
local sys = require "klab.sys"

local sizes, new_turns = { 1250, 10000, 62500 }, 500
for _, a in ipairs(arg or {}) do
  local l = a:match("^%-%-sizes=(.*)$")
  if l then
    sizes = {}
    for x in l:gmatch("[^,]+") do sizes[#sizes + 1] = math.tointeger(tonumber(x)) end
  end
  new_turns = math.tointeger(tonumber(a:match("^%-%-new=(.*)$") or "")) or new_turns
end

local REPLY = "```cuda\n// bench\nextern \"C\" __global__ void gemm() {}\n```\n" .. ("x"):rep(3000)

-- The stand-in model server (every request answered at once).
local function http_standin() return dofile("tests/bench/standin_http.lua")(REPLY) end

-- A stand-in session: every workload passes at once (0.9x, so trajectories
-- run all their turns).
local function session_standin()
  local results, n = {}, 0
  return {
    submit = function(_, _, c)
      n = n + 1
      results[n] = { verdict = "passed", reason = "correct", stages = {
        timing = { candidate = { median = 111 }, baseline = { median = 100 }, speedup = 0.9 } } }
      return n
    end,
    wait = function(_, t) local r = results[t] results[t] = nil return r end,
    close = function() end,
  }
end

local TASK = "gemm_bf16/123x457x789"

local function spec(db, name, replicas, turns)
  return { name = name, db = db, models = { { name = "m", provider = "openai", model = "m", base_url = "http://127.0.0.1:9/v1",
    concurrency = 64 } }, tasks = { TASK }, tags = { "none", "hopper" }, replicas = replicas, turns = turns,
    progress = false, session = session_standin(), http = http_standin(), feedback = { template = false },
    phase = "full", concurrency = 64 }
end

-- A store of n turns, made through the pipeline: an experiment "seed" of
-- 2 tags x n/10 replicas x 5 turns.
local function grow(path, n)
  local db <close> = assert(store.open(path))
  local e <close> = experiment.new(spec(db, "seed", math.max(1, n // 10), 5))
  local c0 = os.clock()
  e:run()
  return db:first("SELECT count(*) AS n FROM turns").n, os.clock() - c0
end

local function line(...) io.write(string.format(...), "\n") end

line("sweep bookkeeping: CPU per new turn and reopen memory, by stored turns (stand-in model and judge)")
line("%12s %14s %12s %16s %18s", "stored", "build CPU s", "new turns", "CPU ms / turn", "reopen MB (Lua)")
local dir = os.getenv("TMPDIR") or "/tmp"
local first_ms
for _, n in ipairs(sizes) do
  local path = ("%s/klab-sweep-bench-%d-%d.db"):format(dir, sys.getpid(), n)
  for _, s in ipairs { "", "-wal", "-shm", ".lock" } do os.remove(path .. s) end
  local stored, build_s = grow(path, n)
  -- A new experiment of new_turns turns on the grown store.
  local db <close> = assert(store.open(path))
  local reps = math.max(1, new_turns // 10)
  collectgarbage()
  collectgarbage()
  local c0 = os.clock()
  local e <close> = experiment.new(spec(db, "new", reps, 5))
  local sum = e:run()
  local per = 1000 * (os.clock() - c0) / math.max(1, sum.new_turns)
  -- Reopening: the seed experiment, loaded as a run loads it.
  collectgarbage()
  collectgarbage()
  local kb0 = collectgarbage("count")
  local again <close> = experiment.new(spec(db, "seed", math.max(1, n // 10), 5))
  again.exp_id = require("klab.store.records").experiment(db, "seed").id
  local trajs = again:_trajectories()
  local kb = collectgarbage("count") - kb0
  line("%12d %14.1f %12d %16.2f %18.1f", stored, build_s, sum.new_turns, per, kb / 1024)
  first_ms = first_ms or per
  trajs = nil
  for _, s in ipairs { "", "-wal", "-shm", ".lock" } do os.remove(path .. s) end
end
line("ratio of the last size's CPU per turn to the first's: see the rows above (target <= 2)")
