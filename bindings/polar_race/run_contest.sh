#!/usr/bin/env bash
# run_contest.sh DIR NUM THREADS: the contest's run, one process per phase.
#
#   1. `harness write DIR NUM THREADS`: once it prints "WRITTEN" (after its
#      last acknowledged Write) it is killed with SIGKILL: no close, no
#      flush, as the contest did between phases;
#   2. `harness read ...`: every key, every value byte checked;
#   3. `harness range ...`: every thread scans everything twice, checked.
#
# Fails (non-zero) on any error. DIR must not exist yet, or be empty.
# HARNESS picks the binary (default: build/harness next to this script;
# `make harness` builds it). VARVE_MEMORY_BUDGET reaches the engine.
set -euo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 DIR NUM THREADS" >&2
    exit 2
fi
DIR=$1
NUM=$2
THREADS=$3
HERE=$(cd "$(dirname "$0")" && pwd)
HARNESS=${HARNESS:-$HERE/build/harness}

die() {
    echo "run_contest.sh: $*" >&2
    exit 1
}

[ -x "$HARNESS" ] || die "no harness at $HARNESS (run: make -C $HERE harness)"
if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
    die "$DIR exists and is not empty"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/run-contest.XXXXXX")
WRITER=
cleanup() {
    if [ -n "$WRITER" ] && kill -0 "$WRITER" 2>/dev/null; then
        kill -9 "$WRITER" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

echo "run_contest.sh: $NUM keys, $THREADS threads, in $DIR"

# 1. Write, then kill -9 right after the last acknowledged write.
mkfifo "$WORK/out"
"$HARNESS" write "$DIR" "$NUM" "$THREADS" >"$WORK/out" &
WRITER=$!
written=no
while IFS= read -r line; do
    echo "$line"
    if [[ $line == WRITTEN* ]]; then
        kill -9 "$WRITER"
        written=yes
        break
    fi
done <"$WORK/out"
status=0
{ wait "$WRITER"; } 2>/dev/null || status=$?  # no "Killed" job notice
WRITER=
if [ "$written" != yes ]; then
    die "the write phase exited with status $status before printing WRITTEN"
fi
# 128 + SIGKILL: it was still sleeping after WRITTEN when the kill came.
[ "$status" -eq 137 ] || die "the write phase ended with status $status, not by SIGKILL (137)"
echo "run_contest.sh: write phase killed with SIGKILL after its last acknowledged write"

# 2. and 3., each in a process of its own.
"$HARNESS" read "$DIR" "$NUM" "$THREADS" || die "the read phase failed"
"$HARNESS" range "$DIR" "$NUM" "$THREADS" || die "the range phase failed"
echo "run_contest.sh: PASSED (write, kill -9, read, range)"
