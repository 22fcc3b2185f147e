#!/bin/sh
# tests/slurm/run.sh [BUILD_DIR]: a sweep through a real Slurm.
#
# Starts munged, slurmctld and slurmd (Debian's munge and slurm-wlm) on
# localhost, with a generated slurm.conf, munge key, state, spool and logs in
# a temporary folder and ports of their own, so nothing of the system's is
# used or touched. Then:
#   1. `klab slurm tests/slurm/sweep.lua --shards 3` submits the quickstart's
#      replayed sweep as a job array; every array task must complete;
#   2. array task 0 is requeued while it runs (it gets SIGTERM half way, as on
#      preemption) and must continue where it stopped: its second run adds
#      only the turns the first did not store;
#   3. `klab merge` puts the three shard stores together, and the merged
#      store must hold what an unsharded run of the same sweep holds: the same
#      experiment table, the same rows per table, every turn with the same
#      verdict and candidate.
# Everything it started is stopped on the way out, failed or not. When Slurm
# cannot be started here (not installed, a daemon that will not come up) the
# test is skipped and says why, unless KLAB_REQUIRE_SLURM=1 (CI), where that
# is a failure. Prints "slurm: N passed, N failed, N skipped" last.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${1:-build}
klab="$root/$build/klab"
PATH="$PATH:/usr/sbin:/sbin"
passed=0 failed=0 skipped=0
T=""
pids=""
job=""

say() { echo "slurm: $*"; }
finish() {
    say "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]
    exit
}
pass() { say "ok: $*"; passed=$((passed + 1)); }
fail() { say "FAIL: $*"; failed=$((failed + 1)); }
# A reason not to run: a skip, or a failure where Slurm is required.
cannot() {
    if [ "${KLAB_REQUIRE_SLURM:-0}" = 1 ]; then
        fail "cannot run Slurm (KLAB_REQUIRE_SLURM=1): $*"
    else
        say "skip: $*"
        skipped=$((skipped + 1))
    fi
    finish
}
# The last informative line of a daemon's log.
last_line() { grep -v '^\s*$' "$1" 2>/dev/null | tail -n 1; }

cleanup() {
    trap - EXIT INT TERM
    if [ -n "$job" ] && [ -n "$T" ]; then scancel "$job" >/dev/null 2>&1; fi
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$p" 2>/dev/null
    done
    if [ "$failed" -gt 0 ] && [ -n "$T" ]; then
        for f in "$T"/log/*.log "$T"/results/slurm-*.out; do
            [ -f "$f" ] || continue
            echo "---- ${f#"$T"/} (last lines)"
            tail -n 15 "$f"
        done
    fi
    [ -n "$T" ] && rm -rf "$T"
}
trap cleanup EXIT
trap 'fail "interrupted"; exit 1' INT TERM

[ -x "$klab" ] || { fail "$klab is missing (make first)"; finish; }
for p in munged slurmctld slurmd sbatch squeue scontrol sinfo scancel; do
    command -v "$p" >/dev/null 2>&1 || cannot "$p not installed (Debian: apt-get install slurm-wlm munge)"
done

T=$(mktemp -d "${TMPDIR:-/tmp}/klab-slurm.XXXXXX") || cannot "no temporary folder"
chmod 755 "$T"   # munged wants its socket's folder searchable by all
mkdir -p "$T/state" "$T/spool" "$T/log" "$T/local" "$T/results"
user=$(id -un)

# ---- munge: a key of its own, its socket in T ----
head -c 1024 /dev/urandom >"$T/munge.key" && chmod 400 "$T/munge.key"
munged -F -f --key-file="$T/munge.key" --socket="$T/munge.sock" --pid-file="$T/munged.pid" \
    --log-file="$T/log/munged.log" --seed-file="$T/munged.seed" >>"$T/log/munged.log" 2>&1 &
pids="$pids $!"
i=0
while [ ! -S "$T/munge.sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$T/munge.sock" ] || cannot "munged did not start: $(last_line "$T/log/munged.log")"

# ---- slurm.conf: one node (this host as localhost), one partition ----
port=$((10000 + $$ % 20000))
cat >"$T/slurm.conf" <<EOF
ClusterName=klabtest
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock
CredType=cred/munge
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=500 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$T/slurm.conf"

slurmctld -D -f "$SLURM_CONF" >>"$T/log/slurmctld.log" 2>&1 &
ctld=$!
slurmd -D -f "$SLURM_CONF" -N localhost >>"$T/log/slurmd.log" 2>&1 &
slurmd=$!
pids="$pids $ctld $slurmd"
i=0
state=""
while [ $i -lt 100 ]; do
    state=$(sinfo -h -o %t 2>/dev/null)
    [ "$state" = idle ] && break
    kill -0 "$ctld" 2>/dev/null && kill -0 "$slurmd" 2>/dev/null || break
    sleep 0.2
    i=$((i + 1))
done
if [ "$state" != idle ]; then
    why=$(grep -hiE 'error|fatal' "$T/log/slurmctld.log" "$T/log/slurmd.log" 2>/dev/null | grep -v pmix | tail -n 1)
    cannot "Slurm did not come up (node state '${state:-none}'): ${why:-no error logged}"
fi
say "munged, slurmctld and slurmd running on localhost (ports $port and $((port + 1)), $(nproc) CPUs)"

# Field NAME of array task $job_$1 (scontrol's one-line form).
field() { scontrol -o show job "${job}_$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
# Waits up to $3 seconds for array task $1 to be in state $2.
wait_state() {
    n=0
    while [ $n -lt $(($3 * 5)) ]; do
        [ "$(field "$1" JobState)" = "$2" ] && return 0
        sleep 0.2
        n=$((n + 1))
    done
    return 1
}

# ---- 1. the sweep as a job array ----
out=$("$klab" slurm tests/slurm/sweep.lua --shards 3 --results "$T/results" --local-dir "$T/local" \
    --time 5 -- pause=1 2>&1)
job=$(echo "$out" | sed -n 's/^submitted job \([0-9][0-9]*\):.*/\1/p')
if [ -z "$job" ]; then
    fail "klab slurm did not submit: $out"
    finish
fi
say "klab slurm submitted job $job (3 array tasks)"

# ---- 2. requeue task 0 half way: SIGTERM, its store saved, run again ----
log0="$T/results/slurm-${job}_0.out"
n=0
while [ $n -lt 100 ] && ! grep -q '^stored turn' "$log0" 2>/dev/null; do sleep 0.2; n=$((n + 1)); done
if grep -q '^stored turn' "$log0" 2>/dev/null; then
    scontrol requeue "${job}_0"
    # A requeued job waits (BeginTime) before it may start again: not here.
    wait_state 0 PENDING 20 && scontrol update JobId="${job}_0" StartTime=now
else
    fail "array task 0 stored no turn within 20 s"
fi

for a in 0 1 2; do
    if ! wait_state $a COMPLETED 40; then
        fail "array task $a did not complete: state $(field $a JobState), reason $(field $a Reason)"
    fi
done
states=""
for a in 0 1 2; do states="$states $a:$(field $a JobState)/$(field $a ExitCode)"; done
if [ "$states" = " 0:COMPLETED/0:0 1:COMPLETED/0:0 2:COMPLETED/0:0" ]; then
    pass "every array task completed:$states"
else
    fail "array tasks:$states"
fi

logged=$(grep -c '^stored turn' "$log0" 2>/dev/null)
runs=$(grep -c '^new turns:' "$log0" 2>/dev/null)
added=$(sed -n 's/^new turns: \([0-9]*\) of \([0-9]*\)$/\1 \2/p' "$log0" | tail -n 1)
restarts=$(field 0 Restarts)
set -- $added
if [ "$restarts" = 1 ] && [ "$runs" = 1 ] && [ $# -eq 2 ] && [ "$2" -eq 6 ] && [ "$1" -lt 6 ] &&
    [ "$logged" -eq 6 ]; then
    pass "array task 0, requeued while running, stored $((6 - $1)) turns before SIGTERM and $1 after (of 6; none twice)"
else
    fail "requeue of array task 0: restarts=$restarts, completed runs=$runs, added/total=${added:-none}, stored turns logged=$logged"
fi

# ---- 3. merge and compare with an unsharded run ----
if "$klab" merge "$T/merged.db" "$T"/results/shard-*-of-3.db >"$T/merge.txt" 2>&1; then
    pass "klab merge: $(tail -n 1 "$T/merge.txt")"
else
    fail "klab merge failed: $(cat "$T/merge.txt")"
fi
"$klab" tests/slurm/sweep.lua db="$T/full.db" >/dev/null 2>&1 || fail "the unsharded run failed"
"$klab" tests/slurm/sweep.lua db="$T/full.db" run=false >"$T/full.txt" 2>&1
"$klab" tests/slurm/sweep.lua db="$T/merged.db" run=false >"$T/merged.txt" 2>&1
if [ -s "$T/full.txt" ] && grep -q 'verdicts per turn' "$T/full.txt" && cmp -s "$T/full.txt" "$T/merged.txt"; then
    pass "the merged store equals an unsharded run: the table, rows per table and every turn's verdict"
    sed -n '1,/^verdicts:/p' "$T/merged.txt" | sed 's/^/  /'
else
    fail "the merged store differs from the unsharded run:"
    diff "$T/full.txt" "$T/merged.txt" | head -n 30
fi
finish
