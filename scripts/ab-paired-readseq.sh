#!/usr/bin/env bash
# ab-paired-readseq.sh OLD_BIN NEW_BIN — does a build cost a hot scan of
# small (inline) values anything, to within a few percent, on a shared
# machine whose runs of one binary vary up to 2x?
#
# Two measurements that the machine's noise does not move:
#
# 1. Paired wall clock. OLD and NEW scan the same database (100-byte values,
#    6.3M keys, built once by OLD) at the same time, each pinned to one of
#    the two cores, cores swapped every round, so both see the same host
#    at the same moment. Each side reads its own fresh copy, and the page
#    cache is dropped and refilled for both copies the same way: an older
#    copy of the same files was measured 8% slower to scan (its page cache
#    pages are not the ones a fresh copy gets). An A/A round (OLD against
#    OLD on a third copy) shows what the method itself gives: a ratio of
#    1.00 within the printed spread. Prints each round's ratio of the mean
#    of 3 warm passes, and the median and mean of the ratios.
# 2. Instructions and cache misses. One pass of each under valgrind's
#    cachegrind (instructions, simulated L1/last-level misses): the same
#    every time, where wall clock is not. Skipped when valgrind is missing
#    (install it with `apt-get install valgrind`), which the output says.
#
#   ROUNDS=12 DB_DIR=/data/ab scripts/ab-paired-readseq.sh old/varve-bench new/varve-bench
#
# Needs root (drop_caches) and 2+ cores; about 3 minutes per 12 rounds
# plus 2 minutes of cachegrind. KEEP=1 keeps the databases.
set -euo pipefail
OLD="${1:?old varve-bench}"
NEW="${2:?new varve-bench}"
ROUNDS="${ROUNDS:-12}"
DB_DIR="${DB_DIR:-/tmp/varve-ab-paired}"
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores" >&2; exit 1; }
[ -w /proc/sys/vm/drop_caches ] || { echo "needs root (drop_caches)" >&2; exit 1; }
FLAGS=(--engine=varve --compression_type=none --num=10000000 --key_size=16 --value_size=100)
mkdir -p "$DB_DIR"

if [ ! -f "$DB_DIR/base/CURRENT" ]; then
    rm -rf "$DB_DIR/base"
    echo "building the database with $OLD (10M random puts, compacted)"
    "$OLD" "${FLAGS[@]}" --benchmarks=fillrandom,compact --seed=1 --db="$DB_DIR/base" >/dev/null
fi
# Fresh copies, made before any build opens them (a newer build may
# upgrade a manifest an older one cannot read), then one page-cache state.
for c in a b aa; do
    rm -rf "${DB_DIR:?}/$c"
    cp -r "$DB_DIR/base" "$DB_DIR/$c"
done
sync
echo 3 >/proc/sys/vm/drop_caches
cat "$DB_DIR"/a/* "$DB_DIR"/b/* "$DB_DIR"/aa/* >/dev/null

# scan BIN DB CPU: the mean keys/s of 3 hot passes (after one warm-up);
# fails, saying so, when the run printed no pass.
scan() {
    taskset -c "$3" "$1" "${FLAGS[@]}" --benchmarks=readseq,readseq,readseq,readseq \
        --use_existing_db=true --db="$2" 2>&1 |
        grep -E '^readseq +:' | tail -n +2 |
        awk -v bin="$1" '{s += $5} END {
            if (NR == 0) { print "no readseq pass from " bin > "/dev/stderr"; exit 1 }
            printf "%.0f\n", s / NR }'
}

# pairs NAME BIN_A DB_A BIN_B DB_B: ROUNDS paired rounds, B's ratio to A.
pairs() {
    local out
    out="$(mktemp)"
    for r in $(seq "$ROUNDS"); do
        local ca=$((r % 2)) cb=$((1 - r % 2))
        scan "$2" "$3" "$ca" >"$out.a" &
        local pa=$!
        scan "$4" "$5" "$cb" >"$out.b" &
        local pb=$!
        wait "$pa" && wait "$pb" || { echo "round $r failed" >&2; exit 1; }
        echo "$(cat "$out.a") $(cat "$out.b")" >>"$out"
    done
    python3 - "$1" "$out" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
r = [b / a for a, b in rows]
print("%s: %d rounds, ratio median %.3f, mean %.3f, sd %.3f (A median %.0f, B median %.0f keys/s)" % (
    sys.argv[1], len(r), statistics.median(r), statistics.mean(r), statistics.stdev(r),
    statistics.median([a for a, _ in rows]), statistics.median([b for _, b in rows])))
PY
    rm -f "$out" "$out.a" "$out.b"
}

pairs "new / old" "$OLD" "$DB_DIR/a" "$NEW" "$DB_DIR/b"
pairs "old / old (A/A)" "$OLD" "$DB_DIR/a" "$OLD" "$DB_DIR/aa"

if command -v valgrind >/dev/null; then
    for v in old new; do
        bin="$OLD" db="$DB_DIR/aa"
        [ "$v" = new ] && bin="$NEW" db="$DB_DIR/b"
        valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$DB_DIR/cg.$v" \
            "$bin" "${FLAGS[@]}" --benchmarks=readseq --use_existing_db=true --db="$db" \
            >/dev/null 2>&1 &
    done
    wait
    python3 - "$DB_DIR/cg.old" "$DB_DIR/cg.new" <<'PY'
import sys
def summary(path):
    ev = su = None
    for line in open(path):
        if line.startswith("events:"):
            ev = line.split()[1:]
        elif line.startswith("summary:"):
            su = list(map(int, line.split()[1:]))
    return dict(zip(ev, su))
o, n = summary(sys.argv[1]), summary(sys.argv[2])
print("cachegrind, one pass (new / old):")
for k in ("Ir", "D1mr", "DLmr", "D1mw", "DLmw"):
    print("  %-5s %14d %14d  %.4f" % (k, o[k], n[k], n[k] / o[k]))
PY
else
    echo "cachegrind: skipped, valgrind is not installed"
fi
[ -n "${KEEP:-}" ] || rm -rf "${DB_DIR:?}"/{a,b,aa,cg.old,cg.new}
