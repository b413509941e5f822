#!/usr/bin/env bash
# instructions.sh — user-space instruction counts (valgrind's cachegrind) of
# the CPU-bound issues 3-7 lines, for two varve-bench builds, as a table of
# new / old. The regression check in bench-issues.sh times each line; on a
# shared virtual machine one build's runs spread up to 1.6x, so a 3% gap
# needs many pairs to see. An instruction count does not move with the
# host: the same run gives the same count within ~0.5% (background work,
# flushes and compactions, starts at slightly different points). It
# counts user-space instructions only: the kernel's copies, the disk and
# cache misses are not in it. Read it beside the timed pairs, not instead.
#
#   scripts/instructions.sh OLD NEW        (two varve-bench binaries)
#
# Lines (one thread unless named; the database lines read a compacted
# NUM x 100 B database, hot, that each build gets its own copy of):
#   fillseq, fillrandom    FILL x 100 B into a fresh database
#   readrandom-hot         300,000 gets, 1 GiB cache
#   readseq-hot            the whole database, forward
#   count t=1, count t=2   the parallel-scan count (#7)
#   seekrandom100          20,000 seeks, 100 nexts each
# (multireadrandom is left out: its fibers switch stacks, which valgrind
# reports as stack overflows and slows by orders of magnitude.)
#
# Environment:
#   DB_DIR   where the databases go (default ${TMPDIR:-/tmp}/varve-instructions;
#            removed at the end unless KEEP=1, which also lets a later run
#            reuse the read database)
#   NUM      keys in the read database (2000000); FILL keys per fill (300000)
#   REPS     runs per line and build (1); the table shows medians
#
# Needs valgrind (apt-get install valgrind). Takes about 2 minutes with the
# defaults on two cores (cachegrind runs a program 20-50 times slower).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h | --help) usage; exit 0 ;; esac
if [ $# -ne 2 ]; then
    usage >&2
    exit 2
fi
OLD="$1"
NEW="$2"
for b in "$OLD" "$NEW"; do
    [ -x "$b" ] || { echo "instructions.sh: $b is not an executable varve-bench" >&2; exit 2; }
done
command -v valgrind > /dev/null || {
    echo "instructions.sh: needs valgrind (apt-get install valgrind)" >&2
    exit 2
}

DB_DIR="${DB_DIR:-${TMPDIR:-/tmp}/varve-instructions}"
NUM="${NUM:-2000000}"
FILL="${FILL:-300000}"
REPS="${REPS:-1}"
mkdir -p "$DB_DIR"
OUT="$(mktemp -d "${TMPDIR:-/tmp}/instructions.XXXXXX")"
cleanup() {
    rm -rf "$OUT" "$DB_DIR/read-base.tmp"
    if [ "${KEEP:-0}" != 1 ]; then
        rm -rf "$DB_DIR"/{fill,read}-{old,new} "$DB_DIR/read-base"
        rmdir "$DB_DIR" 2> /dev/null || true
    fi
}
trap cleanup EXIT

common=(--engine=varve --compression_type=none --value_size=100 --seed=1)
read_db=(--use_existing_db=true --num="$NUM" --key_size=16)

# The read database: filled and compacted once (by OLD, natively), copied
# for each build (a newer build may upgrade a database past what an older
# one reads).
if [ ! -d "$DB_DIR/read-base" ]; then
    echo "instructions.sh: filling the $NUM-key read database" >&2
    "$OLD" "${common[@]}" --benchmarks=fillrandom,compact --num="$NUM" --key_size=16 \
        --db="$DB_DIR/read-base.tmp" > /dev/null
    mv "$DB_DIR/read-base.tmp" "$DB_DIR/read-base"
fi
for v in old new; do
    rm -rf "$DB_DIR/read-$v"
    cp -a "$DB_DIR/read-base" "$DB_DIR/read-$v"
done

# count LINE BUILD BIN FLAGS...: one run under cachegrind; appends
# "LINE BUILD INSTRUCTIONS" to $OUT/counts.
count() {
    local line="$1" build="$2" bin="$3"
    shift 3
    local log="$OUT/run.log"
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
        "$bin" "${common[@]}" "$@" > "$log" 2>&1 || {
        echo "instructions.sh: $line ($build) failed; its output:" >&2
        cat "$log" >&2
        exit 1
    }
    local n
    n="$(grep 'I   refs' "$log" | awk '{gsub(",", "", $NF); print $NF}')"
    echo "$line $build $n" >> "$OUT/counts"
    echo "instructions.sh: $line $build $n" >&2
}

for rep in $(seq 1 "$REPS"); do
    for v in old new; do
        bin="$OLD"
        [ "$v" = new ] && bin="$NEW"
        for fill in fillseq fillrandom; do
            rm -rf "$DB_DIR/fill-$v"
            count "$fill" "$v" "$bin" --benchmarks="$fill" --num="$FILL" --db="$DB_DIR/fill-$v"
        done
        rm -rf "$DB_DIR/fill-$v"
        db="--db=$DB_DIR/read-$v"
        count readrandom-hot "$v" "$bin" --benchmarks=readrandom "${read_db[@]}" --reads=300000 \
            --cache_size=1073741824 "$db"
        count readseq-hot "$v" "$bin" --benchmarks=readseq "${read_db[@]}" "$db"
        count "count-t=1" "$v" "$bin" --benchmarks=count "${read_db[@]}" --scan_threads=1 "$db"
        count "count-t=2" "$v" "$bin" --benchmarks=count "${read_db[@]}" --scan_threads=2 "$db"
        count seekrandom100 "$v" "$bin" --benchmarks=seekrandom --seek_nexts=100 --reads=20000 \
            "${read_db[@]}" "$db"
    done
done

python3 - "$OUT/counts" << 'EOF'
import collections, statistics, sys
runs = collections.defaultdict(lambda: collections.defaultdict(list))
order = []
for row in open(sys.argv[1]):
    line, build, n = row.split()
    if line not in order:
        order.append(line)
    runs[line][build].append(int(n))
print("| line | old instructions | new instructions | new / old |")
print("|---|---:|---:|---:|")
for line in order:
    o = statistics.median(runs[line]["old"])
    n = statistics.median(runs[line]["new"])
    print(f"| {line} | {o:,.0f} | {n:,.0f} | {n / o:.3f} |")
EOF
