-- slurm_test.lua: `klab slurm` without a Slurm cluster: its command line,
-- the batch script it writes (run here by sh with an array task's
-- environment, as slurmd would run it: the shard's store saved to the
-- results folder, a second run resuming from that copy), and submission
-- through an sbatch stand-in. tests/slurm/run.sh runs it on a real Slurm.

local slurm = require "klab.cli.slurm"
local store = require "klab.store"

local T = {}

local function q(s) return require("klab.command").shell_quote(s) end

local function write(path, text, mode)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  if mode then os.execute("chmod " .. mode .. " " .. q(path)) end
end

T.command_line = function(t)
  local o = assert(slurm.parse { "experiments/x.lua", "--shards", "4", "--partition=gpu", "--time", "2:00:00",
    "--gres", "gpu:1", "--sbatch-arg=--exclusive", "models=a,b", "--", "--odd=value" })
  t.eq(o.shards, 4) t.eq(o.experiment, "experiments/x.lua")
  t.eq(o.results, "results/x") t.eq(o.job_name, "klab-x")
  t.eq(#o.pass, 2) t.eq(o.pass[1], "models=a,b") t.eq(o.pass[2], "--odd=value")
  t.eq(o.sbatch[1][1], "partition") t.eq(o.sbatch[2][2], "2:00:00") t.eq(o.extra[1], "--exclusive")
  local function bad(args, pattern)
    local ok, err = slurm.parse(args)
    t.eq(ok, nil, table.concat(args, " "))
    t.match(err, pattern)
  end
  bad({ "x.lua" }, "%-%-shards N is required")
  bad({ "--shards", "2" }, "expected an experiment script")
  bad({ "x.lua", "--shards", "0" }, "whole number of at least 1")
  bad({ "x.lua", "--shards" }, "needs a value")
  bad({ "x.lua", "--shards", "2", "--bogus" }, "unknown option %-%-bogus")
  bad({ "x.lua", "--shards", "2", "db=x.db" }, "db= is set for each task")
  bad({ "x.lua", "--shards", "2", "shard=1/2" }, "shard= is set for each task")
  bad({ "x.lua", "--shards", "2", "notkv" }, "expected key=value")
  bad({ "x.lua", "--shards", "2", "--results", "my results" }, "must not contain spaces")
  bad({ "x.lua", "--shards", "2", "--partition", "a\n#SBATCH --x" }, "on one line")
  -- A value with a space would be a second option on its #SBATCH line.
  bad({ "x.lua", "--shards", "2", "--partition=gpu --output=/etc/cron.d/x" }, "%-%-partition takes one word")
  bad({ "x.lua", "--shards", "2", "--time", "1:00 --wrap=x" }, "%-%-time takes one word")
  bad({ "x.lua", "--shards", "2", "--gres", "gpu:1 --x" }, "%-%-gres takes one word")
  bad({ "x.lua", "--shards", "2", "--sbatch-arg=--comment=a --x" }, "takes one word")
  bad({ "x.lua", "--shards", "2", "--phase", "judging" }, "%-%-phase must be generate, judge or full")
  bad({ "x.lua", "--shards", "2", "--after", "12; rm" }, "%-%-after takes a job id")
  bad({ "x.lua", "--shards", "2", "--continue" }, "%-%-continue goes with %-%-phase judge")
  local code, out = t.sh(q(t.klab) .. " slurm --help")
  t.eq(code, 0) t.match(out, "usage: klab slurm EXPERIMENT%.lua %-%-shards N")
  local err
  code, _, err = t.sh(q(t.klab) .. " slurm x.lua")
  t.eq(code, 2) t.match(err, "klab slurm: %-%-shards N is required")
end

T.the_batch_script = function(t)
  local o = assert(slurm.parse { "exp.lua", "--shards", "3", "--partition", "gpu", "--max-running", "2",
    "--results", "out/r", "note=it's $HOME `x`" })
  o.klab = "/opt/klab/bin/klab"
  local s = slurm.script(o)
  t.match(s, "^#!/bin/sh\n")
  t.match(s, "\n#SBATCH %-%-array=0%-2%%2\n", "one task per shard, at most 2 at once")
  t.match(s, "\n#SBATCH %-%-requeue\n")
  t.match(s, "\n#SBATCH %-%-partition=gpu\n")
  t.match(s, "\n#SBATCH %-%-output=out/r/slurm%-%%A_%%a%.out\n")
  t.match(s, "\nklab='/opt/klab/bin/klab'\n")
  t.match(s, [["%$klab" 'exp%.lua' 'note=it'\''s %$HOME `x`' "shard=%${SLURM_ARRAY_TASK_ID}/3" "db=%$db" &]],
    "the experiment's options quoted for the shell, shard and store per task")
  t.match(s, "store='out/r/shard%-'%${SLURM_ARRAY_TASK_ID}'%-of%-3%.db'")
  t.match(s, "trap 'kill %-TERM %$pid", "SIGTERM is passed on to klab")
  -- the script is valid sh
  local path = t.tmpdir() .. "/s.sh"
  write(path, s)
  local code, _, err = t.sh("sh -n " .. q(path))
  t.eq(code, 0, err)
end

-- The two phases as arrays: generate tasks run the script with
-- phase=generate, judge tasks run klab judge on their shard's store after
-- the generate array (afterok).
T.the_phases_as_arrays = function(t)
  local o = assert(slurm.parse { "exp.lua", "--shards", "2", "--phase", "generate", "models=a" })
  o.klab = "/k"
  local s = slurm.script(o)
  t.match(s, [["%$klab" 'exp%.lua' 'models=a' phase=generate "shard=%${SLURM_ARRAY_TASK_ID}/2" "db=%$db" &]])
  t.eq(o.job_name, "klab-exp-generate")
  local j = assert(slurm.parse { "exp.lua", "--shards", "2", "--phase", "judge", "--after", "4242", "--continue",
    "models=a", "base_url=http://127.0.0.1:9/v1", "turns=3", "replicas=2" })
  j.klab = "/k"
  local js = slurm.script(j)
  t.match(js, "\n#SBATCH %-%-dependency=afterok:4242\n")
  t.match(js, [["%$klab" judge "%$db" %-%-continue 'models=a' 'base_url=http://127%.0%.0%.1:9/v1' 'turns=3' 'replicas=2' &]],
    "the judge array continues with the models and counts given")
  t.match(js, "store='results/exp/shard%-'%${SLURM_ARRAY_TASK_ID}'%-of%-2%.db'", "the generate array's shard store")
  t.eq(j.job_name, "klab-exp-judge")
end

-- klab judge --continue needs the models and the study's counts on its
-- command line: a judge array without them is refused before it is
-- submitted, not on every node.
T.a_judge_array_that_continues_names_its_models = function(t)
  local function refused(args, pattern)
    local o, err = slurm.parse(args)
    t.eq(o, nil, table.concat(args, " "))
    t.match(tostring(err), pattern)
  end
  refused({ "exp.lua", "--shards", "2", "--phase", "judge", "--continue" }, "set the model: models=")
  refused({ "exp.lua", "--shards", "2", "--phase", "judge", "--continue", "models=a", "base_url=http://127.0.0.1:9/v1",
    "turns=3" }, "replicas=N is missing")
  refused({ "exp.lua", "--shards", "2", "--phase", "judge", "--continue", "models=a", "turnz=3" },
    "unknown option 'turnz' %(did you mean 'turns'%?%)")
  refused({ "exp.lua", "--shards", "2", "--phase", "judge", "models=a" }, "key=value options go with %-%-continue")
end

-- The experiment's options are checked before anything is written or
-- submitted: a mistake is its one line, exit 2, and no batch script.
T.options_are_checked_before_submitting = function(t)
  local dir = t.tmpdir()
  local code, _, err = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " slurm experiments/ptxbench_sweep.lua "
    .. "--shards 2 --results " .. q(dir .. "/r") .. " -- models=m base_url=http://127.0.0.1:9/v1 replicaz=3")
  t.eq(code, 2, err)
  t.match(err, "^klab slurm: experiments/ptxbench_sweep%.lua does not start: .*unknown option 'replicaz' %(did you mean 'replicas'%?%)")
  t.eq(select(2, err:gsub("\n", "")), 1, "one line")
  t.ok(not io.open(dir .. "/r/ptxbench_sweep.sbatch"), "no batch script was written")
  code, _, err = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " slurm experiments/ptxbench_sweep.lua "
    .. "--shards 2 --results " .. q(dir .. "/r") .. " -- models=m base_url=http://127.0.0.1:9/v1 tags=nosuchtag")
  t.eq(code, 2, err)
  t.match(err, "tag nosuchtag: .*knowledge pack")
end

-- The batch script run as an array task would run it, outside Slurm.
T.an_array_task_saves_its_store_and_resumes_from_the_copy = function(t)
  local dir = t.tmpdir()
  local results = dir .. "/results"
  local code, out, err = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " slurm tests/slurm/sweep.lua --shards 3 " ..
    "--results " .. q(results) .. " --local-dir " .. q(dir .. "/node") .. " --dry-run")
  t.eq(code, 0, err)
  t.match(err, "wrote .*sweep%.sbatch %(not submitted: %-%-dry%-run%)")
  t.match(out, "#SBATCH %-%-array=0%-2")
  local script = results .. "/sweep.sbatch"
  t.eq(t.read(script), out, "--dry-run prints what it wrote")
  local task = "cd " .. q(t.root) .. " && SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=1 sh " .. q(script)
  code, out, err = t.sh(task)
  t.eq(code, 0, err)
  t.match(out, "new turns: 3 of 3")
  local saved = results .. "/shard-1-of-3.db"
  t.ok(t.read(saved), "the store was copied to the results folder")
  t.eq(t.read(saved .. "-wal"), nil, "as one file, without a write-ahead log")
  t.eq(t.read(saved .. ".part"), nil, "under its final name")
  t.eq(t.read(dir .. "/node/klab-77-1/shard.db"), nil, "the node's copy is removed once the task succeeded")
  do
    local db <close> = assert(store.open(saved, { readonly = true }))
    t.eq(db:first("SELECT count(*) AS n FROM trajectories").n, 1, "shard 1 of 3 holds one trajectory")
    t.eq(db:first("SELECT count(*) AS n FROM turns").n, 3)
  end
  -- run again (a requeue on another node): it starts from the saved copy
  code, out, err = t.sh(task)
  t.eq(code, 0, err)
  t.match(out, "new turns: 0 of 3", "nothing is done twice")
end

T.submission_goes_through_sbatch = function(t)
  local dir = t.tmpdir()
  local bin = dir .. "/bin"
  os.execute("mkdir -p " .. q(bin))
  write(bin .. "/sbatch", "#!/bin/sh\nprintf '%s\\n' \"$@\" > " .. q(dir .. "/args") .. "\necho '4242;cluster'\n", "+x")
  local base = "cd " .. q(t.root) .. " && PATH=" .. q(bin) .. ":\"$PATH\" " .. q(t.klab) ..
    " slurm tests/slurm/sweep.lua --shards 2 --results " .. q(dir .. "/r")
  local code, out, err = t.sh(base)
  t.eq(code, 0, err)
  t.match(out, "submitted job 4242: 2 array tasks running tests/slurm/sweep.lua")
  t.match(out, "klab merge .*/r/sweep%.db .*/r/shard%-%*%-of%-2%.db")
  t.eq(t.read(dir .. "/args"), "--parsable\n" .. dir .. "/r/sweep.sbatch\n", "sbatch got the script as one argument")
  write(bin .. "/sbatch", "#!/bin/sh\necho 'sbatch: error: invalid partition name' >&2\nexit 1\n", "+x")
  code, _, err = t.sh(base)
  t.eq(code, 1)
  t.match(err, "klab slurm: sbatch .* failed %(exit status 1%): sbatch: error: invalid partition name")
end

return T
