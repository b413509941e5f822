#!/usr/bin/env bash
# ycsb.sh — YCSB's core workloads A-F on every engine, each inside the same
# memory cgroup (scripts/compare.sh: 2 GiB by default, page cache counted),
# then the charts (varve-bench chart) from the JSON records.
#
#   scripts/ycsb.sh                          (4M records x 1 KiB, 16 threads)
#   VALUE=4096 NUM=1000000 scripts/ycsb.sh   (the contest's 4 KiB values)
#   ENGINES="varve rocksdb" REPS=1 DURATION=10 scripts/ycsb.sh
#
# Environment (and every variable of scripts/compare.sh: ENGINES, REPS,
# MEM_LIMIT, DB_DIR, BENCH, *_FLAGS, DISK, RUN_TIMEOUT):
#   NUM       records loaded by ycsb_load (4000000)
#   THREADS   client threads (16)
#   DURATION  seconds each of A, B, C, F, D, E runs (20); the load runs to the end
#   VALUE     bytes per record (1000: YCSB's 10 fields x 100 B)
#   CACHE     --cache_size of every engine (805306368: 768 MiB, leaving the rest
#             of the 2 GiB to memtables and the page cache); varve's own flags
#             give it one --memory_budget of the same total instead
#   OUT       the JSON records (default ${TMPDIR:-/tmp}/ycsb-<time>.jsonl)
#   CHARTS    where the SVG charts go (default: OUT without .jsonl, + -charts)
#
# The workloads run in YCSB's recommended order (A, B, C, F, D, E: D and E
# insert) on one load per repetition. Every LSM engine runs --tuned with
# direct reads; redb and LMDB read through the page cache (they have no
# direct IO), inside the same limit.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NUM="${NUM:-4000000}"
THREADS="${THREADS:-16}"
DURATION="${DURATION:-20}"
VALUE="${VALUE:-1000}"
CACHE="${CACHE:-805306368}"
export OUT="${OUT:-${TMPDIR:-/tmp}/ycsb-$(date -u +%Y%m%dT%H%M%SZ).jsonl}"
CHARTS="${CHARTS:-${OUT%.jsonl}-charts}"
export VARVE_FLAGS="${VARVE_FLAGS---tuned --memory_budget=1610612736}"
# A failed run (or one stopped by RUN_TIMEOUT) still gets its charts from
# the records of the runs that finished; the script then exits non-zero.
status=0
"$ROOT/scripts/compare.sh" \
    --benchmarks=ycsb_load,ycsb_a,ycsb_b,ycsb_c,ycsb_f,ycsb_d,ycsb_e \
    --num="$NUM" --threads="$THREADS" --duration="$DURATION" --value_size="$VALUE" \
    --use_direct_reads=true --cache_size="$CACHE" --histogram=1 "$@" || status=$?
BENCH="${BENCH:-${CARGO_TARGET_DIR:-$ROOT/target}/release/varve-bench}"
"$BENCH" chart --out="$CHARTS" "$OUT"
echo "ycsb: records in $OUT, charts in $CHARTS"
[ "$status" -eq 0 ] || echo "ycsb: compare.sh failed (exit $status): see its lines above" >&2
exit "$status"
