#!/usr/bin/env bash
# stress-tests.sh [RUNS]: runs `cargo test --release --workspace` RUNS times
# in a row (default 10) while stress-ng loads both cores, and prints one line
# per run (with the 1-minute load average at its end) and a summary.
# Timing-sensitive tests show up here. Installs stress-ng with apt-get when
# missing. Exits non-zero if any run failed.
#
# STRESS_LOAD=external: start no stress-ng; the caller already loads the
# cores with something else that keeps them busy (a parallel build, fuzzers);
# the load averages printed per run show that it did.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-10}"
LOAD="${STRESS_LOAD:-stress-ng}"
if [ "$LOAD" = stress-ng ] && ! command -v stress-ng >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng
fi
export VARVE_REQUIRE_URING="${VARVE_REQUIRE_URING:-1}"
cargo test --release --workspace --no-run -q 2>/dev/null || cargo test --release --workspace --no-run
logs=$(mktemp -d)
if [ "$LOAD" = stress-ng ]; then
    stress-ng --cpu "$(nproc)" --quiet &
    stress=$!
    trap 'kill $stress 2>/dev/null' EXIT
    LOAD="stress-ng --cpu $(nproc)"
fi
failed=0
for i in $(seq 1 "$RUNS"); do
    start=$(date +%s)
    if cargo test --release --workspace > "$logs/run-$i.log" 2>&1; then
        echo "run $i: passed ($(( $(date +%s) - start )) s, load $(cut -d' ' -f1 /proc/loadavg))"
    else
        failed=$((failed + 1))
        echo "run $i: FAILED ($(( $(date +%s) - start )) s, load $(cut -d' ' -f1 /proc/loadavg)), log $logs/run-$i.log:"
        grep -E "^test .* FAILED|panicked" "$logs/run-$i.log" | head -5
    fi
done
echo "stress-tests: $RUNS runs under $LOAD, $failed failed"
[ "$failed" -eq 0 ]
