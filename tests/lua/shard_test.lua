-- shard_test.lua: klab.experiment.shard and sharded experiments: where a
-- shard comes from (spec, command line, Slurm's environment), that the
-- shards of a sweep partition it evenly and always the same way, that a
-- shard resumes like a whole sweep, and that the shards' stores merged give
-- what one unsharded run gives (the quickstart's replayed sweep, no GPU or
-- network needed).

local experiment = require "klab.experiment"
local shard = require "klab.experiment.shard"
local merge = require "klab.store.merge"
local store = require "klab.store"

local T = {}

local function q(s) return require("klab.command").shell_quote(s) end

-- The quickstart's sweep (4 trajectories of 3 turns), replayed from the
-- sample replies shipped in experiments/responses/quickstart.
local function quickstart(t, db, extra)
  -- Every turn judged (as far as this machine can): shards of whole trajectories are what is tested.
  local s = dofile(t.root .. "/experiments/quickstart_spec.lua") {
    db = db, responses_dir = t.root .. "/experiments/responses/quickstart", phase = "full" }
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

local function keys_of(path)
  local db <close> = assert(store.open(path))
  local out = {}
  for _, r in ipairs(db:query("SELECT key FROM trajectories ORDER BY key")) do out[#out + 1] = r.key end
  return out
end

local function env(vars) return function(name) return vars[name] end end

T.shards_are_parsed_and_checked = function(t)
  local s = shard.parse("2/5")
  t.eq(s.index, 2) t.eq(s.count, 5)
  s = shard.parse { index = 0, count = 1 }
  t.eq(s.index, 0) t.eq(s.count, 1)
  t.eq(shard.parse(nil), nil) t.eq(shard.parse(false), false)
  for _, bad in ipairs { "5/5", "-1/3", "1/0", "a/b", "1", "1/2/3", "" } do
    t.raises(function() shard.parse(bad) end, "expected I/N with 0 <= I < N, got '" .. bad:gsub("%p", "%%%0") .. "'")
  end
  t.raises(function() shard.parse { index = 2, count = 2 } end, "0 <= I < N")
  t.eq(shard.path("r/s{index}-of-{count}.db", { index = 3, count = 8 }), "r/s3-of-8.db")
  t.eq(shard.path("r/plain.db", nil), "r/plain.db")
  t.raises(function() shard.path("r/s{index}.db", nil) end, "names {index} but no shard is set")
end

T.slurm_array_tasks_name_their_shard = function(t)
  t.eq(shard.from_slurm(env {}), nil, "not an array task")
  local s = shard.from_slurm(env { SLURM_ARRAY_TASK_ID = "3", SLURM_ARRAY_TASK_COUNT = "4" })
  t.eq(s.index, 3) t.eq(s.count, 4)
  s = shard.from_slurm(env { SLURM_ARRAY_TASK_ID = "5", SLURM_ARRAY_TASK_MIN = "4", SLURM_ARRAY_TASK_MAX = "7" })
  t.eq(s.index, 1, "--array=4-7: task 5 is the second") t.eq(s.count, 4)
  s = shard.from_slurm(env { SLURM_ARRAY_TASK_ID = "8", SLURM_ARRAY_TASK_MIN = "0", SLURM_ARRAY_TASK_MAX = "12",
    SLURM_ARRAY_TASK_STEP = "4", SLURM_ARRAY_TASK_COUNT = "4" })
  t.eq(s.index, 2, "--array=0-12:4: task 8 is the third") t.eq(s.count, 4)
  t.raises(function() shard.from_slurm(env { SLURM_ARRAY_TASK_ID = "1" }) end, "neither SLURM_ARRAY_TASK_COUNT")
  t.raises(function() shard.from_slurm(env { SLURM_ARRAY_TASK_ID = "4", SLURM_ARRAY_TASK_COUNT = "4" }) end, "0 <= I < N")
  t.raises(function() shard.from_slurm(env { SLURM_ARRAY_TASK_ID = "x", SLURM_ARRAY_TASK_COUNT = "4" }) end,
    "cannot read the Slurm array task")
  -- the spec wins, then the command line, then Slurm
  local slurm = env { SLURM_ARRAY_TASK_ID = "1", SLURM_ARRAY_TASK_COUNT = "2" }
  local saved = shard.command_line
  shard.command_line = shard.parse("0/3")
  t.eq(shard.resolve("2/7", slurm).index, 2, "the spec's shard")
  t.eq(shard.resolve(false, slurm), nil, "shard = false: the whole sweep, even in an array task")
  t.eq(shard.resolve(nil, slurm).count, 3, "the command line's shard")
  shard.command_line = nil
  t.eq(shard.resolve(nil, slurm).count, 2, "the array task's shard")
  t.eq(shard.resolve(nil, env {}), nil)
  shard.command_line = saved
end

T.every_experiment_script_takes_shard = function(t)
  local o = experiment.options({ db = "results/s{index}-of-{count}.db", n = 1 }, { "n=2", "shard=1/4" })
  t.eq(o.n, 2) t.eq(o.shard.index, 1) t.eq(o.shard.count, 4)
  t.eq(o.db, "results/s1-of-4.db", "the store path is filled from the shard")
  t.eq(shard.command_line.index, 1, "and experiment.new will use it")
  o = experiment.options({ db = "results/x.db" }, {})
  t.eq(o.shard, nil) t.eq(shard.command_line, nil, "a command line without shard= sets none")
  t.raises(function() experiment.options({ db = "x" }, { "shard=4/4" }) end, "0 <= I < N")
  if not os.getenv("SLURM_ARRAY_TASK_ID") then
    t.raises(function() experiment.options({ db = "r/s{index}.db" }, {}) end, "names {index} but no shard is set")
  end
  shard.command_line = nil
end

T.shards_partition_the_sweep_evenly_and_always_alike = function(t)
  local dir = t.tmpdir()
  -- 1 model x 1 task x 2 tags x 7 replicas = 14 trajectories in 4 shards
  local function trajectories(sh, name)
    local e <close> = experiment.new(quickstart(t, dir .. "/" .. name .. ".db", { replicas = 7,
      shard = sh }))
    e.exp_id = e.db:transaction(function() return e:_experiment_id() end)
    local keys = {}
    for _, tr in ipairs(e.db:transaction(function() return e:_trajectories() end)) do keys[#keys + 1] = tr.key end
    return keys
  end
  local all = trajectories(false, "all")
  t.eq(#all, 14)
  local seen, sizes = {}, {}
  for i = 0, 3 do
    local keys = trajectories({ index = i, count = 4 }, "s" .. i)
    sizes[#sizes + 1] = #keys
    for _, k in ipairs(keys) do
      t.eq(seen[k], nil, "a trajectory is in one shard only")
      seen[k] = i
    end
    local again = trajectories(("%d/4"):format(i), "again" .. i)
    t.eq(table.concat(again, ","), table.concat(keys, ","), "shard " .. i .. " is the same every time")
  end
  for _, k in ipairs(all) do t.ok(seen[k], "every trajectory is in a shard") end
  t.eq(table.concat(sizes, ","), "4,4,3,3", "the shards differ by one trajectory at most")
  for p, k in ipairs(all) do t.eq(seen[k], (p - 1) % 4, "position " .. p .. " goes to shard " .. (p - 1) % 4) end
end

T.sharded_runs_merged_equal_the_unsharded_run = function(t)
  local dir = t.tmpdir()
  local full <close> = experiment.new(quickstart(t, dir .. "/full.db", { shard = false }))
  full:run()
  local sums = {}
  for i = 0, 2 do
    local e <close> = experiment.new(quickstart(t, dir .. "/s{index}.db", { shard = { index = i, count = 3 } }))
    sums[i] = e:run()
    t.eq(sums[i].shard.index, i)
  end
  t.eq(sums[0].trajectories + sums[1].trajectories + sums[2].trajectories, 4)
  t.eq(sums[0].trajectories, 2) t.eq(sums[1].trajectories, 1)
  local union = {}
  for i = 0, 2 do for _, k in ipairs(keys_of(dir .. "/s" .. i .. ".db")) do union[#union + 1] = k end end
  table.sort(union)
  t.eq(table.concat(union, ","), table.concat(keys_of(dir .. "/full.db"), ","), "the shards hold the sweep's trajectories")
  do
    local out <close> = assert(store.open(dir .. "/merged.db"))
    for i = 0, 2 do
      local r = merge.merge(out, dir .. "/s" .. i .. ".db")
      t.eq(#r.conflicts, 0)
    end
  end
  local merged <close> = experiment.new(quickstart(t, dir .. "/merged.db", { shard = false }))
  -- On a GPU the sharded and the unsharded sweeps each time their passing
  -- kernels, so speedups differ in the last digits, and so do the later
  -- turns' requests, whose feedback quotes them. Those are measurements,
  -- not what a merge decides: they are masked there.
  -- Each evaluation draws its own inputs (one seed per evaluation), so on a
  -- GPU the figures an incorrect turn's reason quotes differ as well.
  local timed = require("klab.gpu").available()
  local function masked(s) return timed and (s:gsub("%d+%.%d+x", "N.NNNx")) or s end
  local function figures(s) return timed and (s:gsub("[%d.]+", "N")) or s end
  local tbl = merged:table()
  t.match(tbl, "verdicts per turn")
  t.eq(masked(tbl), masked(full:table()), "the merged table is the unsharded one, in sweep order")
  local function turns(e)
    local out = {}
    for _, r in ipairs(e.db:query([[SELECT t.key, u.turn, u.verdict, u.candidate, u.reason, u.request_hash
        FROM turns u JOIN trajectories t ON t.id = u.trajectory_id ORDER BY t.key, u.turn]])) do
      out[#out + 1] = table.concat({ r.key, r.turn, r.verdict, r.candidate or "-", figures(r.reason or "-"),
        timed and "-" or r.request_hash }, " ")
    end
    return table.concat(out, "\n")
  end
  t.eq(turns(merged), turns(full), "every turn: verdict, candidate, reason, request")
  for _, tb in ipairs { "candidates", "evaluations", "measurements", "responses", "experiments", "trajectories", "turns" } do
    local n = "SELECT count(*) AS n FROM " .. tb
    t.eq(merged.db:first(n).n, full.db:first(n).n, tb .. ": as many rows as the unsharded run")
  end
end

T.a_shard_resumes_after_an_interruption = function(t)
  local dir = t.tmpdir()
  local stored = 0
  local spec = quickstart(t, dir .. "/s0.db", { shard = "0/3", on_turn = function()
    stored = stored + 1
    if stored == 2 then error("stopped after 2 turns") end
  end })
  local ok, err = pcall(function()
    local e <close> = experiment.new(spec)
    e:run()
  end)
  t.eq(ok, false) t.match(tostring(err), "stopped after 2 turns")
  spec.on_turn = nil
  local e <close> = experiment.new(spec)
  local sum = e:run()
  t.eq(sum.trajectories, 2) t.eq(sum.turns, 6)
  t.eq(sum.new_turns, 4, "only the turns the interrupted run did not store")
  t.eq(e.db:first("SELECT count(*) AS n FROM turns").n, 6, "no turn twice")
  local again = e:run()
  t.eq(again.new_turns, 0, "a finished shard has nothing left to do")
end

T.a_script_takes_its_shard_from_the_command_line_or_slurm = function(t)
  local dir = t.tmpdir()
  local e <close> = experiment.new(quickstart(t, dir .. "/s1.db", { shard = "1/3" }))
  e:run()
  local want1 = table.concat(keys_of(dir .. "/s1.db"), ",")
  local run = "cd " .. q(t.root) .. " && "
  local code, out, err = t.sh(run .. "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=2 " .. q(t.klab) ..
    " tests/slurm/sweep.lua " .. q("db=" .. dir .. "/env{index}.db"))
  t.eq(code, 0, err)
  t.match(out, "new turns: 3 of 3")
  t.eq(table.concat(keys_of(dir .. "/env1.db"), ","), want1, "array task 1 of 0-2 ran shard 1/3")
  code, _, err = t.sh(run .. "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 " .. q(t.klab) ..
    " tests/slurm/sweep.lua shard=1/3 " .. q("db=" .. dir .. "/cli.db"))
  t.eq(code, 0, err)
  t.eq(table.concat(keys_of(dir .. "/cli.db"), ","), want1, "shard=1/3 on the command line")
  code, _, err = t.sh(run .. "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=3 " .. q(t.klab) ..
    " tests/slurm/sweep.lua shard=1/3 " .. q("db=" .. dir .. "/both.db"))
  t.eq(code, 0, err)
  t.eq(table.concat(keys_of(dir .. "/both.db"), ","), want1, "the command line wins over the array task")
end

return T
