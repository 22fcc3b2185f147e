-- klab slurm: a sweep as a Slurm job array, one shard per array task.
local command = require "klab.command"

local M = {}

M.summary = "run an experiment script as a Slurm job array (one shard per task)"

local USAGE = [[
usage: klab slurm EXPERIMENT.lua --shards N [options] [--] [key=value...]

Writes a batch script for a job array of N tasks and submits it with
sbatch. Array task I runs

  klab EXPERIMENT.lua key=value... shard=I/N db=<a store on the node's disk>

and copies its store, in one consistent file, to RESULTS/shard-I-of-N.db
when it ends (also when it is stopped to be requeued). A requeued task
continues from that copy (or from the node's store when it runs there
again), so nothing is done twice. When every task has finished:

  klab merge RESULTS/sweep.db RESULTS/shard-*-of-N.db

Options:
  --shards N          the number of array tasks (shards)
  --results DIR       where the shard stores, the batch script and the
                      tasks' logs go (default: results/<EXPERIMENT's name>)
  --local-dir DIR     where a task writes its store while it runs (default:
                      $SLURM_TMPDIR, else $TMPDIR, else /tmp, on the node)
  --job-name NAME     (default: klab-<EXPERIMENT's name>)
  --partition P, --time T, --gres G, --cpus-per-task N, --mem M,
  --account A, --qos Q, --constraint C
                      passed to sbatch as #SBATCH lines
  --sbatch-arg ARG    one more #SBATCH line, e.g. --sbatch-arg=--exclusive
                      (repeatable)
  --max-running K     run at most K tasks at once (--array=0-(N-1)%K)
  --phase P           generate: each task asks the models and stores the
                      candidates awaiting judgement (phase=generate; on CPU
                      nodes near the API); judge: each task runs `klab judge`
                      on its shard's store from RESULTS (on GPU nodes);
                      full (the default): the experiment as it is
  --after JOB         start only after job JOB ended well
                      (--dependency=afterok:JOB), e.g. a judge array after
                      its generate array
  --continue          with --phase judge: then the repair turns (klab judge
                      --continue, given the key=value options: models=,
                      turns=, replicas=, checked before submitting)
  --dry-run           write the batch script and print it; submit nothing

The key=value arguments go to the experiment script (klab's experiment
options), or with --phase judge --continue to klab judge --continue; db=
and shard= are set per task. docs/slurm.md has the plain
sbatch form and how requeue and merge work.

Before anything is written or submitted, the experiment's options are
checked by running the script in check mode (KLAB_EXPERIMENT_CHECK=1: it
stops once its spec is checked): a mistake is its one line, exit 2.

Here 0 means the job was submitted (or written, with --dry-run) and 1
that sbatch failed.
]]
USAGE = USAGE .. require("klab.command").EXIT_TEXT

-- Options that become "#SBATCH --NAME=VALUE" lines.
local SBATCH = { "partition", "time", "gres", "cpus-per-task", "mem", "account", "qos", "constraint" }

-- Every valued option's text goes into the batch script: one line each.
local function one_line(store)
  return function(v, o, key, flag)
    if v:find("%c") then return ("option %s needs a value on one line"):format(flag) end
    return store(v, o, key, flag)
  end
end

-- An #SBATCH value is one word: sbatch reads "--partition=gpu --output=x"
-- on one #SBATCH line as two options, a quote as the start of a longer
-- word, and a leading '-' as an option of its own.
local function sbatch_word(v, flag)
  if v == "" then return ("option %s needs a value"):format(flag) end
  if v:find("[%s%c\"'\\]") then
    return ("option %s takes one word, without spaces, quotes or backslashes, got '%s'"):format(flag, v)
  end
  if v:sub(1, 1) == "-" then return ("option %s takes a value, not an option, got '%s'"):format(flag, v) end
end

local function one_word(store)
  return one_line(function(v, o, key, flag)
    local bad = sbatch_word(flag == "--sbatch-arg" and (v:match("^%-%-?[%w][%w%-]*=(.*)$") or "x") or v, flag)
    if bad then return bad end
    return store(v, o, key, flag)
  end)
end

local OPTIONS = {
  ["--dry-run"] = "flag", ["--shards"] = "count", ["--max-running"] = "count",
  ["--results"] = one_line(function(v, o) o.results = v end),
  ["--local-dir"] = one_line(function(v, o) o.local_dir = v end),
  ["--job-name"] = one_word(function(v, o) o.job_name = v end),
  ["--sbatch-arg"] = one_word(function(v, o)
    if not v:match("^%-%-?[%w]") then return ("--sbatch-arg takes one sbatch option (--NAME or --NAME=VALUE), got '%s'"):format(v) end
    o.extra = o.extra or {}
    o.extra[#o.extra + 1] = v
  end),
  ["--phase"] = function(v, o)
    if v ~= "generate" and v ~= "judge" and v ~= "full" then
      return ("--phase must be generate, judge or full, got '%s'"):format(v)
    end
    o.phase = v
  end,
  ["--after"] = function(v, o)
    if not v:match("^%d+$") then return ("--after takes a job id (digits), got '%s'"):format(v) end
    o.after = v
  end,
  ["--continue"] = "flag",
}
for _, name in ipairs(SBATCH) do
  OPTIONS["--" .. name] = one_word(function(v, o)
    o.sbatch = o.sbatch or {}
    o.sbatch[#o.sbatch + 1] = { name, v }
  end)
end

-- The experiment's name: its file name without ".lua".
local function base_name(path)
  return (path:match("([^/]+)$") or path):gsub("%.lua$", "")
end

function M.parse(args)
  local o, err = command.options(args, OPTIONS)
  if not o then return nil, err end
  o.sbatch, o.extra = o.sbatch or {}, o.extra or {}
  o.experiment = o.positional[1]
  o.pass = { table.unpack(o.positional, 2) }
  if o.help then return o end
  if not o.experiment then return nil, "expected an experiment script (EXPERIMENT.lua)" end
  if o.experiment:find("[%c]") then return nil, "the experiment script's path must be on one line" end
  if not o.shards then return nil, "--shards N is required" end
  for _, p in ipairs(o.pass) do
    local k = p:match("^([%w_%.%-]+)=")
    if not k then return nil, "expected key=value for the experiment, got '" .. p .. "'" end
    if k == "db" or k == "shard" then
      return nil, ("%s= is set for each task (--results says where the stores go)"):format(k)
    end
    if p:find("[%c]") then return nil, "an experiment option must be on one line" end
  end
  -- The script's name made one word for the defaults that go on #SBATCH
  -- lines (a file name may hold spaces and quotes).
  local name = base_name(o.experiment):gsub("[^%w_%.%-]", "_")
  o.results = o.results or ("results/" .. name)
  if o.results:find("[%s%%\"'\\]") then
    return nil, "the results folder must not contain spaces, quotes, backslashes or '%' (it names the tasks' logs on an "
      .. "#SBATCH line)"
  end
  o.job_name = o.job_name or ("klab-" .. name) .. (o.phase and o.phase ~= "full" and ("-" .. o.phase) or "")
  o.phase = o.phase or "full"
  if o.continue and o.phase ~= "judge" then return nil, "--continue goes with --phase judge" end
  -- A judge array's key=value options are klab judge --continue's (the
  -- models, turns=, replicas=): checked here, so a mistake is not found on
  -- every node.
  if o.phase == "judge" and #o.pass > 0 and not o.continue then
    return nil, ("%s: with --phase judge, key=value options go with --continue"):format(o.pass[1])
  end
  if o.continue then
    local ok, e = pcall(require("klab.cli.judge").continue_settings, o.pass)
    if not ok then
      if not require("klab.errors").is(e, "mistake") then error(e, 0) end
      return nil, (e.message:gsub("^judge: ", "klab judge --continue: "))
    end
  end
  return o
end

-- The store of shard i in the results folder (a shell word: $-expansions in
-- i are meant, the rest quoted).
local function shard_store(o, i)
  return command.shell_quote(o.results .. "/shard-") .. i .. command.shell_quote("-of-" .. o.shards .. ".db")
end

-- The batch script's text. o: parsed options plus o.klab (this program).
function M.script(o)
  local sq = command.shell_quote
  local lines = { "#!/bin/sh" }
  local function sb(s) lines[#lines + 1] = "#SBATCH " .. s end
  sb("--job-name=" .. o.job_name)
  sb(("--array=0-%d%s"):format(o.shards - 1, o.max_running and ("%" .. o.max_running) or ""))
  sb("--requeue")
  sb("--open-mode=append")
  sb("--output=" .. o.results .. "/slurm-%A_%a.out")
  for _, kv in ipairs(o.sbatch) do sb(("--%s=%s"):format(kv[1], kv[2])) end
  if o.after then sb("--dependency=afterok:" .. o.after) end
  for _, x in ipairs(o.extra) do sb(x) end
  local cmd
  if o.phase == "judge" then
    cmd = { '"$klab"', "judge", '"$db"' }
    if o.continue then
      cmd[#cmd + 1] = "--continue"
      for _, p in ipairs(o.pass) do cmd[#cmd + 1] = sq(p) end
    end
  else
    cmd = { '"$klab"', sq(o.experiment) }
    for _, p in ipairs(o.pass) do cmd[#cmd + 1] = sq(p) end
    if o.phase == "generate" then cmd[#cmd + 1] = "phase=generate" end
    cmd[#cmd + 1] = '"shard=${SLURM_ARRAY_TASK_ID}/' .. o.shards .. '"'
    cmd[#cmd + 1] = '"db=$db"'
  end
  local body = ([[
# Written by klab slurm: shard $SLURM_ARRAY_TASK_ID of %d of %s.
# Each task writes its store on the node's own disk (SQLite is not safe over
# NFS) and copies it to the results folder when it ends; a requeued task
# continues from the node's store or from that copy.
set -u
klab=%s
store=%s
dir=%s/klab-${SLURM_ARRAY_JOB_ID}-${SLURM_ARRAY_TASK_ID}
db=$dir/shard.db
# The node's folder is this task's own: a folder or link someone else made
# under its name is refused, so nothing is written through it.
mkdir -p -m 700 "$dir" && [ -d "$dir" ] && [ ! -L "$dir" ] && [ -O "$dir" ] || exit 1
if [ ! -f "$db" ] && [ -f "$store" ]; then
    cp "$store" "$db" || exit 1
fi

# The store as one consistent file (no write-ahead log beside it), copied
# under a temporary name and renamed, so the results folder never holds half
# a store; whatever lay under the temporary name (a link) is removed first,
# never written through.
save() {
    rm -f "$dir/save.db" "$dir/save.db-wal" "$dir/save.db-shm"
    "$klab" merge "$dir/save.db" "$db" >/dev/null && [ ! -s "$dir/save.db-wal" ] &&
        rm -f "$store.part" && cp "$dir/save.db" "$store.part" && mv -f "$store.part" "$store"
}

# klab runs in the background so that a SIGTERM (scancel, preemption,
# requeue) reaches this script at once: it is passed on, klab stops, and the
# store is saved before the job ends.
%s &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' TERM INT
wait $pid
rc=$?
while kill -0 $pid 2>/dev/null; do
    wait $pid
    rc=$?
done
if ! save; then
    echo "klab slurm: could not copy $db to $store" >&2
    [ $rc -eq 0 ] && rc=1
fi
[ $rc -eq 0 ] && rm -rf "$dir"
exit $rc
]]):format(o.shards, o.experiment, sq(o.klab), shard_store(o, "${SLURM_ARRAY_TASK_ID}"),
    o.local_dir and sq(o.local_dir) or '"${SLURM_TMPDIR:-${TMPDIR:-/tmp}}"', table.concat(cmd, " "))
  return table.concat(lines, "\n") .. "\n\n" .. body
end

-- Runs argv (no shell); returns the exit status and what it printed
-- (standard output and error together).
local function run(argv, timeout)
  local res, err = require("klab.spawn").run { argv = argv, stderr = "stdout", timeout = timeout or 120 }
  if not res then return nil, ("cannot run %s: %s"):format(argv[1], tostring(err)) end
  if res.status == "exited" then return res.code, res.stdout or "" end
  return nil, ("%s: %s"):format(argv[1], res.status) .. ((res.stdout or "") ~= "" and ("\n" .. res.stdout) or "")
end

function M.main(args)
  local o, code = command.parsed("slurm", USAGE, M.parse(args))
  if not o then return code end
  local f = io.open(o.experiment, "r")
  if not f then return command.fail("slurm", "no such experiment script: " .. o.experiment, 2) end
  f:close()
  o.klab = assert(require("klab.sys").exe())
  -- The experiment's options, checked before anything is written: the
  -- script runs in check mode and stops once its spec is checked.
  if o.phase ~= "judge" then
    local argv = { o.klab, o.experiment }
    for _, p in ipairs(o.pass) do argv[#argv + 1] = p end
    argv[#argv + 1] = "shard=0/" .. o.shards
    argv[#argv + 1] = "db=/nonexistent/klab-slurm-check.db"
    local res, rerr = require("klab.spawn").run { argv = argv, stderr = "stdout", timeout = 120,
      env = { KLAB_EXPERIMENT_CHECK = "1" } }
    if not res then return command.fail("slurm", "cannot check the experiment: " .. tostring(rerr)) end
    if res.status ~= "exited" or res.code ~= 0 then
      local line = (res.stdout or ""):match("([^\n]*%S[^\n]*)\n?%s*$") or tostring(res.status)
      return command.fail("slurm", ("%s does not start: %s"):format(o.experiment, line:gsub("^klab: ", "")),
        res.code == 2 and command.EXIT.usage or command.EXIT.failed)
    end
  end
  local made, merr = require("klab.sys").mkdir(o.results)
  if not made then return command.fail("slurm", "cannot create " .. o.results .. ": " .. tostring(merr)) end
  local path = o.results .. "/" .. base_name(o.experiment) .. ".sbatch"
  local wrote, err = require("klab.fs").write(path, M.script(o))
  if not wrote then return command.fail("slurm", err) end
  if o.dry_run then
    io.write(M.script(o))
    io.stderr:write("klab slurm: wrote ", path, " (not submitted: --dry-run)\n")
    return 0
  end
  local rc, out = run { "sbatch", "--parsable", path }
  if rc ~= 0 then
    return command.fail("slurm", ("sbatch %s failed%s: %s"):format(path, rc and (" (exit status " .. rc .. ")") or "",
      (tostring(out):gsub("%s+$", ""))))
  end
  local job = out:match("(%d+)[;%d%a]*%s*$") or out:match("(%d+)")
  print(("submitted job %s: %d array tasks running %s"):format(tostring(job), o.shards, o.experiment))
  print(("batch script: %s; stores: %s/shard-I-of-%d.db; logs: %s/slurm-%s_I.out"):format(path, o.results, o.shards,
    o.results, tostring(job)))
  print(("when every task has finished: klab merge %s/%s.db %s/shard-*-of-%d.db"):format(o.results,
    base_name(o.experiment), o.results, o.shards))
  return 0
end

return M
