-- tests/slurm/sweep.lua: the quickstart's replayed sweep
-- (experiments/quickstart_spec.lua: sample replies, no network) as an
-- experiment script that takes options, for the Slurm test
-- (tests/slurm/run.sh). Run it from the repository's root.
--
--   klab tests/slurm/sweep.lua db=PATH [shard=I/N] [pause=SECONDS] [run=false]
--
-- run=true (the default) runs the sweep (or its shard), printing a line per
-- stored turn and the number of turns this run added; pause waits after
-- each stored turn, so that a run can be stopped half way. run=false prints
-- what the store holds: the experiment's table, the rows of each table and
-- every turn with its verdict and candidate, for comparing two stores.

local experiment = require "klab.experiment"

local o = experiment.options({ db = "", run = true, pause = 0.0 }, { ... })
if o.db == "" then error("db=PATH is required", 0) end

local exp <close> = experiment.new(dofile("experiments/quickstart_spec.lua") {
  db = o.db,
  -- Every turn judged as far as the machine can: the test compares whole stores.
  phase = "full",
  on_turn = function(e)
    print(("stored turn %s r%d t%d: %s"):format(e.tag, e.replica, e.turn, e.verdict))
    io.stdout:flush()
    if o.pause > 0 then require("klab.sys").sleep(o.pause) end
  end,
})

if o.run then
  local sum = exp:run()
  print(("new turns: %d of %d"):format(sum.new_turns, sum.turns))
  return
end
print(exp:table())
local db = exp.db
for _, t in ipairs { "candidates", "evaluations", "measurements", "responses", "experiments", "trajectories", "turns" } do
  print(("%s: %d rows"):format(t, db:first("SELECT count(*) AS n FROM " .. t).n))
end
for _, r in ipairs(db:query([[SELECT t.model, t.task, t.tag, t.replica, u.turn, u.verdict, u.candidate, u.reason
    FROM turns u JOIN trajectories t ON t.id = u.trajectory_id ORDER BY t.model, t.task, t.tag, t.replica, u.turn]])) do
  print(r.model, r.task, r.tag, r.replica, r.turn, r.verdict, r.candidate or "-", r.reason or "-")
end
