#!/usr/bin/env bash
# bench-keyspaces.sh — the same workload in one keyspace and spread over N
# (docs/keyspaces.md), varve beside RocksDB column families, same flags,
# same run, interleaved.
#
#   scripts/bench-keyspaces.sh
#   REPS=5 KS="1 8" DB_DIR=/data scripts/bench-keyspaces.sh
#
# The shapes of issue #3 (scripts/bench-issues.sh "writes"), with
# --keyspaces=K: varve puts each key in one of K keyspaces, RocksDB in one
# of K column families (FNV-1a of the key, the same for both):
#   fill: fillrandom + waitforcompaction, 1M x 100 B, bloom_bits=10
#   cold: readrandom, 100k reads, direct reads, 8 MiB cache
#   hot:  readrandom twice, 500k reads, 1 GiB cache; the second pass counts
# The summary prints the median ops/s of every (engine, K, shape), each
# engine's K / first-K ratio, and varve / RocksDB per K; and it checks that
# both engines found the same number of keys in every read run.
#
# Environment: REPS (3), KS ("1 8"), NUM (1000000), DB_DIR (/work/kdb), BIN
# (a varve-bench built with --features rocksdb; default: build it into
# CARGO_TARGET_DIR).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REPS="${REPS:-3}"
KS="${KS:-1 8}"
NUM="${NUM:-1000000}"
DB_DIR="${DB_DIR:-/work/kdb}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ -z "${BIN:-}" ]; then
    (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -p varve-bench --features rocksdb >&2)
    BIN="$TARGET/release/varve-bench"
fi
mkdir -p "$DB_DIR"
OUT="$(mktemp)"
trap 'rm -f "$OUT"; rm -rf "$DB_DIR/ks-varve" "$DB_DIR/ks-rocksdb"' EXIT

# run SHAPE ENGINE K FLAGS... : one varve-bench run; records
# "engine K shape ops found" for its last result line.
run() {
    local shape="$1" engine="$2" k="$3"
    shift 3
    local out
    local own="${VARVE_FLAGS:-}"
    [ "$engine" = rocksdb ] && own="${ROCKSDB_FLAGS---tuned}"
    # The engine's own flags (ROCKSDB_FLAGS, default --tuned; VARVE_FLAGS) last: they override.
    # shellcheck disable=SC2086
    out=$("$BIN" --engine="$engine" --keyspaces="$k" --compression_type=none --bloom_bits=10 \
        --histogram=0 "$@" $own 2>&1)
    echo "$out" | grep -E '^[a-z]+ +:' | sed "s/^/$shape $engine K=$k | /"
    echo "$out" | grep -E '^(fillrandom|readrandom) +:' | tail -1 |
        awk -v e="$engine" -v k="$k" -v s="$shape" '
            { found = "-"
              for (i = 1; i <= NF; i++) {
                  if ($i == "ops/sec") ops = $(i - 1)
                  if ($i == "of" && substr($(i - 1), 1, 1) == "(") found = substr($(i - 1), 2)
              }
              print e, k, s, ops, found }' >>"$OUT"
}

for rep in $(seq "$REPS"); do
    for k in $KS; do
        for engine in varve rocksdb; do
            db="$DB_DIR/ks-$engine"
            rm -rf "$db"
            run fill "$engine" "$k" --benchmarks=fillrandom,waitforcompaction --num="$NUM" \
                --db="$db" --seed="$rep"
            run cold "$engine" "$k" --benchmarks=readrandom --use_existing_db=true --num="$NUM" \
                --reads=100000 --use_direct_reads=true --cache_size=8388608 --db="$db" --seed="$rep"
            run hot "$engine" "$k" --benchmarks=readrandom,readrandom --use_existing_db=true \
                --num="$NUM" --reads=500000 --cache_size=1073741824 --db="$db" --seed="$rep"
        done
    done
done
echo
awk '$5 != "-" { key = $2 " " $3; f[$1 " " key " " NR] = $5 }
     $1 == "varve" && $5 != "-" { v[$2 " " $3 " " ++nv[$2 " " $3]] = $5 }
     $1 == "rocksdb" && $5 != "-" { r[$2 " " $3 " " ++nr[$2 " " $3]] = $5 }
     END { bad = 0
           for (x in v) if ((x in r) && v[x] != r[x]) { print "MISMATCH K/shape/run " x ": varve " v[x] ", rocksdb " r[x]; bad = 1 }
           if (!bad) print "found counts: varve and rocksdb agree in every read run" }' "$OUT"
echo
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'; }
first_k="${KS%% *}"
echo "shape  engine     K   median ops/s   / K=$first_k   varve/rocksdb"
for shape in fill cold hot; do
    for engine in varve rocksdb; do
        for k in $KS; do
            m=$(awk -v e="$engine" -v k="$k" -v s="$shape" '$1 == e && $2 == k && $3 == s { print $4 }' "$OUT" | median)
            base=$(awk -v e="$engine" -v k="$first_k" -v s="$shape" '$1 == e && $2 == k && $3 == s { print $4 }' "$OUT" | median)
            rv=$(awk -v k="$k" -v s="$shape" '$1 == "varve" && $2 == k && $3 == s { print $4 }' "$OUT" | median)
            rr=$(awk -v k="$k" -v s="$shape" '$1 == "rocksdb" && $2 == k && $3 == s { print $4 }' "$OUT" | median)
            awk -v s="$shape" -v e="$engine" -v k="$k" -v m="$m" -v b="$base" -v rv="$rv" -v rr="$rr" \
                'BEGIN { printf "%-6s %-8s %3s %14.0f   %7.3f   %13.2f\n", s, e, k, m, (b > 0 ? m / b : 0), (rr > 0 ? rv / rr : 0) }'
        done
    done
done
