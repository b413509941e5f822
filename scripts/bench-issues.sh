#!/usr/bin/env bash
# bench-issues.sh — the measurements the issues ask for, varve beside RocksDB
# in the same run, printed as raw varve-bench/db_bench lines (one per run,
# prefixed with what ran) so medians and ratios can be read off.
#
#   scripts/bench-issues.sh [SECTION...]     SECTION: disk writes sync wal mget scan compact
#                                            (default: all, in that order)
#
# Environment:
#   BIN       varve-bench built with --features rocksdb (default: build it
#             into $CARGO_TARGET_DIR or ./target, like scripts/compare.sh)
#   DB_DIR    where databases live (default /tmp/varve-bench-issues); needs
#             ~21 GB; the same filesystem disk-limits.sh measures
#   REPS      repetitions of each measurement (default 3), interleaved
#   ROCKSDB_FLAGS  flags of the RocksDB runs only, after the shared ones so
#             they override them (default --tuned: the tuning guide's
#             configuration, printed by each run); VARVE_FLAGS the same for varve
#   KEEP=1    keep the databases (they are reused by a later run when present)
#   OLD       a varve-bench of an earlier commit: the regression check. Each
#             varve run is repeated right after with OLD on its own
#             databases (paths ending in -old, labels in " @old"), the
#             RocksDB runs are left out, and a table of medians (ops/sec,
#             or 1/seconds for a one-step line such as compact; new / old,
#             "<0.97" marked) follows the raw lines. Each build fills its
#             own databases, so a cold read also measures where the file
#             system put them and whether the host's cache beneath a
#             virtual disk still holds them (the one filled last is
#             favoured): re-check a marked line on one database (a copy per
#             build: a newer build may upgrade it past what the older reads)
#
# Regression check against the main an issue started from, e.g.:
#   git worktree add /tmp/base <commit> && (cd /tmp/base &&
#     CARGO_TARGET_DIR=/tmp/base-target cargo build --release -p varve-bench)
#   OLD=/tmp/base-target/release/varve-bench BIN=target/release/varve-bench \
#     REPS=3 scripts/bench-issues.sh writes sync mget scan
#
# Sections:
#   disk     scripts/disk-limits.sh on DB_DIR
#   writes   #3: fillseq and fillrandom + waitforcompaction (1M x 100 B);
#            readrandom cold (direct reads, 8 MiB cache) and hot (1 GiB cache,
#            second pass), bloom_bits=10
#   sync     #5: fillsync with 1, 4, 16, 64 threads; fillrandom with 1, 2, 8,
#            32, 64 threads (100 B values, 5 s each)
#   wal      #5 items 5 and 6: fillsync (1, 16, 64 threads) and fillseq with
#            each WAL write mode: plain pwrite, mapped fallocate'd space
#            (default), mapped zero-filled space, io_uring
#   mget     #6: multireadrandom, 1M x 4 KiB keys (filluniquerandom), batch 128:
#            cold sync / async / RocksDB without and with bloom filters
#            (m-*, mb-*), async_queue_depth sweep (bloom); hot on a
#            400k-key database that fits a 2 GiB cache (warmed by readseq)
#   scan     #7: count (1, 2 scan threads) on a compacted 10M x 100 B database
#            against RocksDB readseq (hot, second pass); readseq cold and
#            seekrandom --seek_nexts=100 cold on the 1M x 4 KiB database,
#            each round beside fio's sequential rate over that database's
#            own table files (read-only)
#   compact  #7: full compaction of a 10M-key fillrandom database,
#            --subcompactions=1 against 2, on fresh copies
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DB_DIR="${DB_DIR:-/tmp/varve-bench-issues}"
REPS="${REPS:-3}"
SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(disk writes sync wal mget scan compact)

if [ -z "${BIN:-}" ]; then
    TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
    (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -p varve-bench --features rocksdb,fjall >&2)
    BIN="$TARGET/release/varve-bench"
fi
mkdir -p "$DB_DIR"

# run LABEL ENGINE FLAGS... : one varve-bench run; prints "LABEL | <result lines>".
# With OLD set: RocksDB runs are skipped and each varve run is followed by
# the same run of OLD on the "-old" twin of its database.
RESULTS="$(mktemp "${TMPDIR:-/tmp}/bench-issues.XXXXXX")"
trap 'rm -f "$RESULTS"' EXIT
# Engine-specific flags (ROCKSDB_FLAGS, default --tuned: RocksDB as its
# tuning guide configures it; VARVE_FLAGS, default none) come last, so they
# override the shared ones.
ROCKSDB_FLAGS="${ROCKSDB_FLAGS:---tuned}"
VARVE_FLAGS="${VARVE_FLAGS:-}"
one() { # BIN LABEL ENGINE FLAGS...
    local bin="$1" label="$2" engine="$3" own
    shift 3
    own="$VARVE_FLAGS"
    if [ "$engine" = rocksdb ]; then own="$ROCKSDB_FLAGS"; fi
    # shellcheck disable=SC2086
    "$bin" --engine="$engine" --compression_type=none "$@" $own 2>&1 \
        | grep -E '^[a-z]+ +:' | sed "s/^/$label | /" | tee -a "$RESULTS" || true
}
run() {
    local label="$1" engine="$2"
    shift 2
    if [ -n "${OLD:-}" ] && [ "$engine" = rocksdb ]; then
        return
    fi
    one "$BIN" "$label" "$engine" "$@"
    if [ -n "${OLD:-}" ] && [ "$engine" = varve ]; then
        local args=() a
        for a in "$@"; do
            case "$a" in --db=*) a="$a-old" ;; esac
            args+=("$a")
        done
        one "$OLD" "$label @old" varve "${args[@]}"
    fi
}

fresh() { rm -rf "$1" "$1-old"; }

# disk_rate LABEL DIR : the disk's sequential rate right now over DIR's own
# table files (fio, read in order, 1 MiB reads, QD4, O_DIRECT), for the cold
# scans run beside it: the shared host's disk speed moves between minutes.
# --readonly and no --size: fio never writes, lays out or truncates them.
disk_rate() {
    local label="$1" dir="$2" files
    if ! command -v fio >/dev/null 2>&1; then
        echo "$label | fio not installed (the disk section installs it)"
        return
    fi
    files=$(cd "$dir" && find . -maxdepth 1 -name '*.sst' | sort | sed "s|^\./|$dir/|" | paste -sd:)
    if [ -z "$files" ]; then
        echo "$label | no table files in $dir"
        return
    fi
    fio --name=seq --readonly --filename="$files" --file_service_type=sequential --rw=read \
        --bs=1M --direct=1 --ioengine=io_uring --iodepth=4 --output-format=terse --terse-version=3 \
        2>/dev/null | awk -F';' -v l="$label" '{printf "%s | fio seqread : %.1f MB/s\n", l, $7 * 1024 / 1e6}'
}

section_disk() {
    echo "## disk"
    RUNTIME="${RUNTIME:-5}" bash "$ROOT/scripts/disk-limits.sh" "$DB_DIR"
}

section_writes() {
    echo "## writes (#3)"
    local n=1000000
    for rep in $(seq "$REPS"); do
        for e in varve rocksdb; do
            for w in fillseq fillrandom; do
                fresh "$DB_DIR/w-$e"
                run "$w+wait $e rep$rep" "$e" --benchmarks="$w,waitforcompaction" --num=$n \
                    --bloom_bits=10 --db="$DB_DIR/w-$e" --seed=$rep
            done
        done
    done
    for e in varve rocksdb; do
        fresh "$DB_DIR/r-$e"
        run "fill-for-reads $e" "$e" --benchmarks=fillrandom,waitforcompaction --num=$n \
            --bloom_bits=10 --db="$DB_DIR/r-$e" --seed=1
    done
    for rep in $(seq "$REPS"); do
        for e in varve rocksdb; do
            run "readrandom-cold $e rep$rep" "$e" --benchmarks=readrandom --use_existing_db=true \
                --num=$n --reads=100000 --use_direct_reads=true --cache_size=8388608 \
                --bloom_bits=10 --db="$DB_DIR/r-$e" --seed=$rep
            run "readrandom-hot $e rep$rep" "$e" --benchmarks=readrandom,readrandom \
                --use_existing_db=true --num=$n --reads=500000 --cache_size=1073741824 \
                --bloom_bits=10 --db="$DB_DIR/r-$e" --seed=$rep
        done
    done
}

section_sync() {
    echo "## sync (#5)"
    for rep in $(seq "$REPS"); do
        for t in 1 4 16 64; do
            for e in varve rocksdb; do
                fresh "$DB_DIR/s-$e"
                run "fillsync t=$t $e rep$rep" "$e" --benchmarks=fillsync --threads=$t \
                    --num=1000000 --duration=5 --value_size=100 --db="$DB_DIR/s-$e" --seed=$rep
            done
        done
        for t in 1 2 8 32 64; do
            for e in varve rocksdb; do
                fresh "$DB_DIR/s-$e"
                run "fillrandom t=$t $e rep$rep" "$e" --benchmarks=fillrandom --threads=$t \
                    --num=1000000 --duration=5 --value_size=100 --db="$DB_DIR/s-$e" --seed=$rep
            done
        done
    done
    fresh "$DB_DIR/s-varve"
    fresh "$DB_DIR/s-rocksdb"
}

section_wal() {
    echo "## wal modes (#5)"
    local modes=("plain:--wal_writer=plain" "fallocate:--wal_writer=mapped"
        "zerofill:--wal_writer=mapped_zero_filled" "uring:--wal_writer=io_uring")
    for rep in $(seq "$REPS"); do
        for t in 1 16 64; do
            for m in "${modes[@]}"; do
                fresh "$DB_DIR/s-varve"
                # shellcheck disable=SC2086
                run "fillsync t=$t ${m%%:*} rep$rep" varve --benchmarks=fillsync --threads=$t \
                    --num=1000000 --duration=5 --value_size=100 --db="$DB_DIR/s-varve" --seed=$rep ${m#*:}
            done
        done
        for m in "${modes[@]}"; do
            fresh "$DB_DIR/s-varve"
            # shellcheck disable=SC2086
            run "fillseq ${m%%:*} rep$rep" varve --benchmarks=fillseq --num=1000000 \
                --value_size=100 --db="$DB_DIR/s-varve" --seed=$rep ${m#*:}
        done
    done
    fresh "$DB_DIR/s-varve"
}

# fill_cold_dbs: the 1M x 4 KiB databases of the cold reads (m-varve,
# m-rocksdb; db_bench's default, no bloom filters), when not there yet.
fill_cold_dbs() {
    local e
    for e in varve rocksdb; do
        if [ ! -f "$DB_DIR/m-$e/CURRENT" ]; then
            run "fill 1M x 4KiB $e" "$e" --benchmarks=filluniquerandom,waitforcompaction \
                --num=1000000 --key_size=16 --value_size=4096 --db="$DB_DIR/m-$e" --seed=1
        fi
    done
}

section_mget() {
    echo "## mget (#6)"
    local big=(--num=1000000 --key_size=16 --value_size=4096)
    # Two cold databases: db_bench's default (no bloom filters: a lookup
    # reads a block on every level whose range holds the key, 2.5 on
    # average here) and bloom_bits=10 (one read per found key, which is how
    # the issue counts reads). Same flags for both engines.
    fill_cold_dbs
    for e in varve rocksdb; do
        if [ ! -f "$DB_DIR/mb-$e/CURRENT" ]; then
            run "fill 1M x 4KiB bloom10 $e" "$e" --benchmarks=filluniquerandom,waitforcompaction \
                "${big[@]}" --bloom_bits=10 --db="$DB_DIR/mb-$e" --seed=1
        fi
    done
    local cold=(--benchmarks=multireadrandom,multireadrandom --use_existing_db=true "${big[@]}"
        --use_direct_reads=true --cache_size=8388608 --reads=30000 --batch_size=128)
    for rep in $(seq "$REPS"); do
        for db in m mb; do
            local bb=()
            [ "$db" = mb ] && bb=(--bloom_bits=10)
            run "mget-cold $db varve sync rep$rep" varve "${cold[@]}" "${bb[@]}" --db="$DB_DIR/$db-varve" \
                --seed=$rep --async_io=false
            run "mget-cold $db varve async32 rep$rep" varve "${cold[@]}" "${bb[@]}" --db="$DB_DIR/$db-varve" \
                --seed=$rep --async_io=true --async_queue_depth=32
            run "mget-cold $db rocksdb batched rep$rep" rocksdb "${cold[@]}" "${bb[@]}" \
                --db="$DB_DIR/$db-rocksdb" --seed=$rep --multiread_batched=true
        done
    done
    for d in 1 4 16 32 64 128; do
        run "mget-cold mb varve depth=$d" varve "${cold[@]}" --bloom_bits=10 --db="$DB_DIR/mb-varve" --seed=7 \
            --async_io=true --async_queue_depth=$d
    done
    local hotdb=(--num=400000 --key_size=16 --value_size=4096)
    for e in varve rocksdb; do
        if [ ! -f "$DB_DIR/mh-$e/CURRENT" ]; then
            run "fill 400k x 4KiB $e" "$e" --benchmarks=filluniquerandom,waitforcompaction \
                "${hotdb[@]}" --db="$DB_DIR/mh-$e" --seed=1
        fi
    done
    # readseq first: it puts every block in the cache (random reads would
    # leave a third of them out), so the second and third line are all hits.
    local hot=(--benchmarks=readseq,multireadrandom,multireadrandom --use_existing_db=true "${hotdb[@]}"
        --cache_size=2147483648 --reads=400000 --batch_size=128)
    for rep in $(seq "$REPS"); do
        run "mget-hot varve sync rep$rep" varve "${hot[@]}" --db="$DB_DIR/mh-varve" --seed=$rep --async_io=false
        run "mget-hot varve async32 rep$rep" varve "${hot[@]}" --db="$DB_DIR/mh-varve" --seed=$rep \
            --async_io=true --async_queue_depth=32
        run "mget-hot rocksdb batched rep$rep" rocksdb "${hot[@]}" --db="$DB_DIR/mh-rocksdb" --seed=$rep \
            --multiread_batched=true
    done
}

section_scan() {
    echo "## scan (#7)"
    local ten=(--num=10000000 --key_size=16 --value_size=100)
    for e in varve rocksdb; do
        if [ ! -f "$DB_DIR/c-$e/CURRENT" ]; then
            run "fill 10M $e" "$e" --benchmarks=fillrandom,compact "${ten[@]}" --db="$DB_DIR/c-$e" --seed=1
        fi
    done
    for rep in $(seq "$REPS"); do
        for t in 1 2; do
            run "count t=$t varve rep$rep" varve --benchmarks=count,count --use_existing_db=true "${ten[@]}" \
                --scan_threads=$t --db="$DB_DIR/c-varve"
        done
        run "readseq-hot varve rep$rep" varve --benchmarks=readseq,readseq --use_existing_db=true "${ten[@]}" \
            --db="$DB_DIR/c-varve"
        run "readseq-hot rocksdb rep$rep" rocksdb --benchmarks=readseq,readseq --use_existing_db=true "${ten[@]}" \
            --db="$DB_DIR/c-rocksdb"
    done
    fill_cold_dbs
    local big=(--num=1000000 --key_size=16 --value_size=4096 --use_existing_db=true
        --use_direct_reads=true --cache_size=8388608)
    for rep in $(seq "$REPS"); do
        disk_rate "disk m-varve files rep$rep" "$DB_DIR/m-varve"
        run "readseq-cold varve rep$rep" varve --benchmarks=readseq "${big[@]}" --db="$DB_DIR/m-varve"
        run "readseq-cold varve async rep$rep" varve --benchmarks=readseq "${big[@]}" --db="$DB_DIR/m-varve" \
            --async_io=true
        run "readseq-cold rocksdb rep$rep" rocksdb --benchmarks=readseq "${big[@]}" --db="$DB_DIR/m-rocksdb"
        for e in varve rocksdb; do
            run "seekrandom100-cold $e rep$rep" "$e" --benchmarks=seekrandom --seek_nexts=100 --reads=3000 \
                "${big[@]}" --db="$DB_DIR/m-$e" --seed=$rep
        done
    done
}

section_compact() {
    echo "## compact (#7)"
    local ten=(--num=10000000 --key_size=16 --value_size=100)
    if [ ! -f "$DB_DIR/cc-base/CURRENT" ]; then
        run "fill 10M uncompacted varve" varve --benchmarks=fillrandom "${ten[@]}" --db="$DB_DIR/cc-base" --seed=1
    fi
    for rep in $(seq "$REPS"); do
        for s in 1 2; do
            fresh "$DB_DIR/cc-run"
            cp -r "$DB_DIR/cc-base" "$DB_DIR/cc-run"
            if [ -n "${OLD:-}" ]; then
                cp -r "$DB_DIR/cc-base-old" "$DB_DIR/cc-run-old"
            fi
            sync
            run "compact subcompactions=$s rep$rep" varve --benchmarks=compact --use_existing_db=true \
                "${ten[@]}" --subcompactions=$s --db="$DB_DIR/cc-run"
        done
    done
    fresh "$DB_DIR/cc-run"
}

for s in "${SECTIONS[@]}"; do
    "section_$s"
done
if [ -n "${OLD:-}" ]; then
    echo "## medians, new / old (OLD=$OLD)"
    python3 - "$RESULTS" <<'PY'
import re, statistics, sys
from collections import defaultdict

# "LABEL | bench : ... N ops/sec S seconds K operations": one line per
# benchmark of a run; a run of "readrandom,readrandom" gives two, told
# apart by their order. Higher is better: ops/sec, or 1/seconds for a
# one-operation step (compact, waitforcompaction) that took 10 ms or more.
runs = defaultdict(lambda: defaultdict(list))
last_label, seen = None, defaultdict(int)
for line in open(sys.argv[1]):
    m = re.match(r"(.*?) \| (\w+) +:.*?([\d.]+) ops/sec +([\d.]+) seconds +(\d+) operations", line)
    if not m:
        continue
    label, bench = m.group(1), m.group(2)
    ops, secs, n = float(m.group(3)), float(m.group(4)), int(m.group(5))
    if label != last_label:
        last_label, seen = label, defaultdict(int)
    seen[bench] += 1
    if n == 1:
        if secs < 0.01:
            continue
        bench, ops = bench + " (1/s)", 1.0 / secs
    side = "old" if label.endswith(" @old") else "new"
    key = re.sub(r" ?rep\d+", "", label.removesuffix(" @old"))
    runs[(key, bench, seen[m.group(2)])][side].append(ops)
print("| measurement | old | new | new / old |")
print("|---|---:|---:|---:|")
for (key, bench, k), sides in runs.items():
    if not sides["old"] or not sides["new"]:
        continue
    o, w = statistics.median(sides["old"]), statistics.median(sides["new"])
    r = w / o if o else float("nan")
    mark = " <0.97" if r < 0.97 else ""
    name = f"{key} {bench}" + (f" #{k}" if k > 1 else "")
    fmt = (lambda v: f"{v:,.0f}") if o >= 100 else (lambda v: f"{v:.3f}")
    print(f"| {name} | {fmt(o)} | {fmt(w)} | {r:.3f}{mark} |")
PY
fi
if [ "${KEEP:-0}" != 1 ]; then
    rm -rf "$DB_DIR"
fi
