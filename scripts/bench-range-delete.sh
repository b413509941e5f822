#!/usr/bin/env bash
# bench-range-delete.sh — reads around a range delete (docs/range-deletes.md),
# varve beside RocksDB, same flags, same run, interleaved.
#
#   scripts/bench-range-delete.sh
#   REPS=5 NUM=1000000 DB_DIR=/data scripts/bench-range-delete.sh
#
# Each rep, per engine, on a fresh database, each line its own process
# (so no phase inherits another's caches or allocator state):
#   fillrandom (NUM keys, 16-byte keys, 100-byte values), compact
#   readrandom, readseq x SEQ                 <- "before": no tombstone
#   deleterange (the middle tenth of the key numbers, one range delete),
#   readrandom, readseq x SEQ                 <- "tombstone": not compacted
#   compact
#   readrandom, readseq x SEQ                 <- "compacted"
# With KS=N (default 1) the keys are spread over N keyspaces (varve) or
# column families (RocksDB), and the range delete covers the tenth in each.
# readrandom does NUM reads; each readseq reads the whole database (a
# pass takes a fraction of a second, so SEQ passes, default 5, each count;
# the median is over every pass of every rep). The
# summary prints, per engine, the median ops/s of each phase and its ratio
# to "before", after checking that both engines found the same keys in
# every phase (same seed, same keys read: a difference is a wrong answer).
#
# Environment: NUM (1000000), REPS (3), SEQ (5), KS (1), DB_DIR (/work/rdb), BIN (a
# varve-bench built with --features rocksdb; default: build it into
# CARGO_TARGET_DIR).
set -euo pipefail
# The engine's own flags, after the shared ones so they override them
# (ROCKSDB_FLAGS, default --tuned: RocksDB as its tuning guide configures it).
engine_flags() { if [ "$1" = rocksdb ]; then echo "${ROCKSDB_FLAGS---tuned}"; else echo "${VARVE_FLAGS:-}"; fi; }

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NUM="${NUM:-1000000}"
REPS="${REPS:-3}"
SEQ="${SEQ:-5}"
KS="${KS:-1}"
DB_DIR="${DB_DIR:-/work/rdb}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ -z "${BIN:-}" ]; then
    (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -p varve-bench --features rocksdb >&2)
    BIN="$TARGET/release/varve-bench"
fi
mkdir -p "$DB_DIR"
OUT="$(mktemp)"
trap 'rm -f "$OUT"; rm -rf "$DB_DIR/rd"' EXIT

SEQS=$(printf ',readseq%.0s' $(seq "$SEQ"))
READS="readrandom${SEQS}"
for rep in $(seq "$REPS"); do
    for engine in varve rocksdb; do
        rm -rf "$DB_DIR/rd"
        for step in "fill:fillrandom,compact" "before:$READS" "tombstone:deleterange,$READS" \
            "compact:compact" "compacted:$READS"; do
            phase="${step%%:*}"
            benches="${step#*:}"
            existing=true
            [ "$phase" = fill ] && existing=false
            echo "== rep $rep $engine $phase: $BIN --engine=$engine --keyspaces=$KS --benchmarks=$benches --use_existing_db=$existing --num=$NUM --reads=$NUM ..."
            run_out=$("$BIN" --engine="$engine" --keyspaces="$KS" --benchmarks="$benches" \
                --use_existing_db="$existing" --num="$NUM" --reads="$NUM" \
                --key_size=16 --value_size=100 --compression_type=none --histogram=0 \
                --seed="$rep" --db="$DB_DIR/rd" $(engine_flags "$engine") 2>&1)
            echo "$run_out"
            echo "$run_out" | grep -E '^(readrandom|readseq) +:' |
                awk -v e="$engine" -v r="$rep" -v phase="$phase" '
                    { found = ""
                      for (i = 1; i <= NF; i++) {
                          if ($i == "ops/sec") ops = $(i - 1)
                          if ($i == "operations;") found = $(i - 1)
                          if ($i == "of" && substr($(i - 1), 1, 1) == "(") found = substr($(i - 1), 2)
                      }
                      print e, r, $1, phase, ops, found }' >>"$OUT" || true
        done
    done
done
echo
# The same seed reads the same keys in every engine: the keys found (and
# the entries a readseq walks) must agree.
awk '$1 == "varve" { v[$2" "$3" "$4] = $6 } $1 == "rocksdb" { r[$2" "$3" "$4] = $6 }
     END { bad = 0
           for (k in v) if ((k in r) && v[k] != r[k]) { print "MISMATCH rep/bench/phase " k ": varve " v[k] ", rocksdb " r[k]; bad = 1 }
           if (!bad) print "found counts: varve and rocksdb agree in every rep and phase" }' "$OUT"
echo
echo "engine   bench       phase       median ops/s   / before"
for engine in varve rocksdb; do
    for b in readrandom readseq; do
        base=""
        for phase in before tombstone compacted; do
            med=$(awk -v e="$engine" -v b="$b" -v p="$phase" '$1 == e && $3 == b && $4 == p { print $5 }' "$OUT" |
                sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }')
            [ -n "$base" ] || base="$med"
            awk -v e="$engine" -v b="$b" -v p="$phase" -v m="$med" -v base="$base" \
                'BEGIN { printf "%-8s %-11s %-11s %12.0f   %6.2f\n", e, b, p, m, (base > 0 ? m / base : 0) }'
        done
    done
done
