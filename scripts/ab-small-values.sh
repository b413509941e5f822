#!/usr/bin/env bash
# ab-small-values.sh OLD_BIN NEW_BIN [MID_BIN] — does a build cost small
# (inline) values anything? Interleaved runs of two or three varve-bench
# builds on the same databases, 100-byte values, with many passes per run,
# because on a shared machine the same binary's hot passes vary up to 2x
# between runs (docs/blob-files.md, "Small values cost nothing"):
#
#   fillrandom     1M keys + waitforcompaction, a fresh database each run
#   readseq-hot    PASSES passes over a compacted 10M-key database (every
#                  pass counted)
#   readrandom-hot 1M gets, 1 GiB cache, PASSES passes (all but the first)
#   readrandom-cold 100k gets, direct reads, 8 MiB cache, caches dropped
#                  (needs root); also the disk reads it made, from
#                  /sys/block/<dev>/stat, which noise does not move
#
#   REPS=9 PASSES=3 DB_DIR=/data/ab scripts/ab-small-values.sh old/varve-bench new/varve-bench
#
# The read databases are built once with OLD_BIN and copied for the
# others before any of them opens them (a newer build may upgrade a
# manifest an older one cannot read). Prints every result and then the
# median of each benchmark per build, and its ratio to OLD_BIN's.
set -euo pipefail
OLD="${1:?old varve-bench}"
NEW="${2:?new varve-bench}"
MID="${3:-}"
REPS="${REPS:-9}"
PASSES="${PASSES:-3}"
DB_DIR="${DB_DIR:-/tmp/varve-ab-small}"
OUT="$(mktemp)"
mkdir -p "$DB_DIR"
DEV="$(basename "$(df --output=source "$DB_DIR" | tail -1)")"
STAT="/sys/block/$DEV/stat"
[ -r "$STAT" ] || STAT=""
disk_reads() { if [ -n "$STAT" ]; then awk '{print $1}' "$STAT"; else echo 0; fi; }

VERSIONS=(old new)
[ -n "$MID" ] && VERSIONS=(old mid new)
bin_of() { case "$1" in old) echo "$OLD" ;; mid) echo "$MID" ;; new) echo "$NEW" ;; esac; }
TEN=(--num=10000000 --key_size=16 --value_size=100)
ONE=(--num=1000000 --value_size=100 --bloom_bits=10)

# passes LABEL NAME SKIP: the ops/s of each pass of benchmark NAME on
# stdin, after the first SKIP, as "LABEL value" lines.
passes() {
    grep -E "^$2 +:" | tail -n +"$(($3 + 1))" | awk -v l="$1" '{print l, $5}' | tee -a "$OUT"
}

for db in c r; do
    if [ ! -f "$DB_DIR/$db-old/CURRENT" ]; then
        rm -rf "$DB_DIR/$db-old"
        if [ "$db" = c ]; then
            "$OLD" --engine=varve --compression_type=none "${TEN[@]}" --benchmarks=fillrandom,compact \
                --seed=1 --db="$DB_DIR/c-old" >/dev/null
        else
            "$OLD" --engine=varve --compression_type=none "${ONE[@]}" \
                --benchmarks=fillrandom,waitforcompaction --seed=1 --db="$DB_DIR/r-old" >/dev/null
        fi
    fi
    for v in "${VERSIONS[@]}"; do
        [ "$v" = old ] || [ -f "$DB_DIR/$db-$v/CURRENT" ] || cp -r "$DB_DIR/$db-old" "$DB_DIR/$db-$v"
    done
done

list() { local n="$1" b; b=""; for _ in $(seq "$n"); do b="$b,$2"; done; echo "${b#,}"; }
for rep in $(seq "$REPS"); do
    for v in "${VERSIONS[@]}"; do
        b="$(bin_of "$v")"
        run=("$b" --engine=varve --compression_type=none)
        rm -rf "$DB_DIR/w-$v"
        "${run[@]}" --benchmarks=fillrandom,waitforcompaction --num=1000000 --value_size=100 \
            --seed="$rep" --db="$DB_DIR/w-$v" 2>&1 | passes "fillrandom $v" fillrandom 0
        rm -rf "$DB_DIR/w-$v"
        "${run[@]}" --benchmarks="$(list "$PASSES" readseq)" --use_existing_db=true "${TEN[@]}" \
            --db="$DB_DIR/c-$v" 2>&1 | passes "readseq-hot $v" readseq 0
        "${run[@]}" --benchmarks="$(list $((PASSES)) readrandom)" --use_existing_db=true "${ONE[@]}" \
            --reads=1000000 --cache_size=1073741824 --seed="$rep" --db="$DB_DIR/r-$v" 2>&1 \
            | passes "readrandom-hot $v" readrandom 1
        sync
        echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
        before=$(disk_reads)
        "${run[@]}" --benchmarks=readrandom --use_existing_db=true "${ONE[@]}" --reads=100000 \
            --use_direct_reads=true --cache_size=8388608 --seed="$rep" --db="$DB_DIR/r-$v" 2>&1 \
            | passes "readrandom-cold $v" readrandom 0
        echo "readrandom-cold-diskreads $v $(($(disk_reads) - before))" | tee -a "$OUT"
    done
done

python3 - "$OUT" "${VERSIONS[@]}" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, ver, value = line.split()
    runs[(name, ver)].append(float(value))
versions = sys.argv[2:]
print("\nmedians (ops/s; disk reads for -diskreads) and ratio to old:")
for name in ("fillrandom", "readseq-hot", "readrandom-hot", "readrandom-cold", "readrandom-cold-diskreads"):
    old = statistics.median(runs[(name, "old")]) if runs[(name, "old")] else None
    cells = []
    for v in versions:
        vals = runs[(name, v)]
        if not vals or not old:
            continue
        m = statistics.median(vals)
        cells.append("%s %12.0f (%.3f)" % (v, m, m / old))
    print("  %-26s %s  n=%d" % (name, "  ".join(cells), len(runs[(name, "old")])))
PY
rm -f "$OUT"
[ -n "${KEEP:-}" ] || rm -rf "$DB_DIR"/c-* "$DB_DIR"/r-*
