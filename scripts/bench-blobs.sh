#!/usr/bin/env bash
# bench-blobs.sh — the blob-file measurements (docs/blob-files.md): varve
# with and without blob files beside RocksDB with and without its
# integrated BlobDB, same flags, same run, interleaved, next to the disk's
# own limits measured in the same run.
#
#   scripts/bench-blobs.sh [section...]     (default: disk fill1 fill8 reads readseq overwrite)
#   REPS=3 MIN=1024 DB_DIR=/data scripts/bench-blobs.sh fill1
#
# Sections:
#   disk       scripts/disk-limits.sh over DB_DIR
#   fill1      fillrandom + waitforcompaction, 1 thread, 16-byte keys, 4 KiB
#              values, NUM (1,000,000) keys: varve and RocksDB, each with
#              blob files (threshold MIN) and without
#   fill8      the same fill with 8 threads (--writes=NUM/8 each)
#   reads      cold readrandom and multireadrandom (batch 128, async_io),
#              direct reads, 8 MiB cache, on a filled database with blob
#              files and on one without; disk reads per found key from
#              /sys/block/<dev>/stat around each run
#   readseq    cold readseq after a full compaction (`compact`), with fio's
#              sequential rate over the same blob and table files right
#              after
#   threshold  the default min_blob_size: for value sizes SIZES (512 .. 16384),
#              about 800 MB of fillrandom + waitforcompaction and 50,000
#              cold readrandom (direct reads, 8 MiB cache), varve with blob
#              files at that size against varve with values inline
#   overwrite  fillseq of NUM keys, then overwrite of OW_TIMES (3) x NUM,
#              then waitforcompaction: the bytes of tables and blob files at
#              the end and their peak (sampled every 0.5 s) against the live
#              data (NUM x (16 + 4096))
#
# Environment: NUM (1000000), REPS (3), MIN (blob threshold, 1024), OW_TIMES, DB_DIR
# (default /work/bdb, needs ~20 GB free), KEEP_DBS (keep the read sections'
# databases at the end), BIN (a varve-bench built with
# --features rocksdb; default: build it into CARGO_TARGET_DIR). Page caches
# are dropped before cold runs (needs root). Prints one line per result:
#   section | engine | rep | metric : value
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NUM="${NUM:-1000000}"
REPS="${REPS:-3}"
MIN="${MIN:-1024}"
OW_TIMES="${OW_TIMES:-3}"
DB_DIR="${DB_DIR:-/work/bdb}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ -z "${BIN:-}" ]; then
    (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -p varve-bench --features rocksdb >&2)
    BIN="$TARGET/release/varve-bench"
fi
SECTIONS=("$@")
[ ${#SECTIONS[@]} -gt 0 ] || SECTIONS=(disk fill1 fill8 reads readseq overwrite)
mkdir -p "$DB_DIR"
DEV="$(basename "$(df --output=source "$DB_DIR" | tail -1)")"
STAT="/sys/block/$DEV/stat"
[ -r "$STAT" ] || STAT=""

COMMON=(--key_size=16 --value_size=4096 --compression_type=none --histogram=0)
declare -A ENGINE_FLAGS=(
    [varve-blob]="--engine=varve --enable_blob_files=true --min_blob_size=$MIN"
    [varve]="--engine=varve"
    [rocksdb-blob]="--engine=rocksdb --enable_blob_files=true --min_blob_size=$MIN ${ROCKSDB_FLAGS:---tuned}"
    [rocksdb]="--engine=rocksdb ${ROCKSDB_FLAGS:---tuned}"
)

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }
disk_reads() { if [ -n "$STAT" ]; then awk '{print $1}' "$STAT"; else echo 0; fi; }

# run SECTION ENGINE REP flags... : runs varve-bench, prints its result
# lines prefixed, and the disk reads it made.
run() {
    local section="$1" engine="$2" rep="$3"
    shift 3
    local before after out
    before=$(disk_reads)
    # shellcheck disable=SC2086
    # The engine's own flags last: they override the shared ones.
    out=$("$BIN" "${COMMON[@]}" "$@" ${ENGINE_FLAGS[$engine]} 2>&1) || {
        echo "$section | $engine | $rep | FAILED: $(echo "$out" | tail -3 | tr '\n' ' ')"
        return
    }
    after=$(disk_reads)
    echo "$out" | grep -E '^[a-z]+ +:' | sed "s/^/$section | $engine | $rep | /"
    echo "$section | $engine | $rep | disk reads : $((after - before))"
}

# settle ENGINE DB: reopens the database and waits for its background work.
# The fill's last memtable comes back from the WAL at the next open, and the
# work it brings (its garbage, once flushed) would otherwise run under the
# first cold read.
settle() {
    run settle "$1" 1 --benchmarks=waitforcompaction --use_existing_db=true --num="$NUM" --db="$2" \
        | grep -v "disk reads" || true
}

bytes_of() { find "$1" -maxdepth 1 \( -name '*.blob' -o -name '*.sst' \) -printf '%s\n' | awk '{s+=$1} END {printf "%.0f\n", s}'; }

fio_rate() {
    local label="$1" dir="$2" files
    files=$(cd "$dir" && find . -maxdepth 1 \( -name '*.sst' -o -name '*.blob' \) | sort | sed "s|^\./|$dir/|" | paste -sd:)
    [ -n "$files" ] || return 0
    fio --name=seq --readonly --filename="$files" --file_service_type=sequential --rw=read \
        --bs=1M --direct=1 --ioengine=io_uring --iodepth=4 --output-format=terse --terse-version=3 \
        2>/dev/null | awk -F';' -v l="$label" '{printf "%s | fio seqread : %.1f MB/s\n", l, $7 * 1024 / 1e6}'
}

for s in "${SECTIONS[@]}"; do
    case "$s" in
    disk)
        echo "## disk"
        RUNTIME="${RUNTIME:-5}" SIZE="${SIZE:-2G}" bash "$ROOT/scripts/disk-limits.sh" "$DB_DIR"
        ;;
    fill1 | fill8)
        echo "## $s"
        threads=1
        engines=(varve-blob rocksdb-blob rocksdb varve)
        if [ "$s" = fill8 ]; then
            threads=8
            engines=(varve-blob rocksdb-blob)
        fi
        for rep in $(seq "$REPS"); do
            for e in "${engines[@]}"; do
                rm -rf "$DB_DIR/fill"
                run "$s" "$e" "$rep" --benchmarks=fillrandom,waitforcompaction --num="$NUM" \
                    --threads=$threads --writes=$((NUM / threads)) --seed="$rep" --db="$DB_DIR/fill"
                echo "$s | $e | $rep | bytes : $(bytes_of "$DB_DIR/fill")"
            done
        done
        rm -rf "$DB_DIR/fill"
        ;;
    reads)
        echo "## reads"
        for e in varve-blob varve rocksdb-blob; do
            rm -rf "$DB_DIR/r-$e"
            run fill-for-reads "$e" 1 --benchmarks=fillrandom,waitforcompaction --num="$NUM" \
                --seed=1 --bloom_bits=10 --db="$DB_DIR/r-$e"
            settle "$e" "$DB_DIR/r-$e"
        done
        for rep in $(seq "$REPS"); do
            for e in varve-blob varve rocksdb-blob; do
                for b in readrandom multireadrandom; do
                    drop_caches
                    run "$b-cold" "$e" "$rep" --benchmarks=$b --use_existing_db=true --num="$NUM" \
                        --reads=100000 --use_direct_reads=true --cache_size=8388608 --bloom_bits=10 \
                        --batch_size=128 --async_io=true --seed="$rep" --db="$DB_DIR/r-$e"
                done
            done
        done
        ;;
    readseq)
        echo "## readseq (after a full compaction)"
        for e in varve-blob varve rocksdb-blob; do
            if [ ! -d "$DB_DIR/r-$e" ]; then
                run fill-for-reads "$e" 1 --benchmarks=fillrandom,waitforcompaction \
                    --num="$NUM" --seed=1 --bloom_bits=10 --db="$DB_DIR/r-$e"
                settle "$e" "$DB_DIR/r-$e"
            fi
            run compact "$e" 1 --benchmarks=compact --use_existing_db=true --num="$NUM" --db="$DB_DIR/r-$e"
        done
        for rep in $(seq "$REPS"); do
            for e in varve-blob varve rocksdb-blob; do
                drop_caches
                run readseq-cold "$e" "$rep" --benchmarks=readseq --use_existing_db=true --num="$NUM" \
                    --use_direct_reads=true --cache_size=8388608 --db="$DB_DIR/r-$e"
                fio_rate "readseq-cold | $e | $rep" "$DB_DIR/r-$e"
            done
        done
        ;;
    threshold)
        echo "## threshold"
        for size in ${SIZES:-512 1024 2048 4096 16384}; do
            n=$((800000000 / (size + 16)))
            for e in varve-blob varve; do
                rm -rf "$DB_DIR/t"
                flags=(--engine=varve --key_size=16 --value_size="$size" --num="$n" --db="$DB_DIR/t"
                    --bloom_bits=10 --compression_type=none)
                [ "$e" = varve-blob ] && flags+=(--enable_blob_files=true --min_blob_size="$size")
                "$BIN" "${flags[@]}" --benchmarks=fillrandom,waitforcompaction --seed=1 2>&1 \
                    | grep -E '^[a-z]+ +:' | sed "s/^/threshold-$size | $e | 1 | /"
                drop_caches
                "$BIN" "${flags[@]}" --benchmarks=readrandom --use_existing_db=true --reads=50000 \
                    --use_direct_reads=true --cache_size=8388608 --seed=2 2>&1 \
                    | grep -E '^[a-z]+ +:' | sed "s/^/threshold-$size | $e | 1 | /"
            done
        done
        rm -rf "$DB_DIR/t"
        ;;
    overwrite)
        echo "## overwrite (${OW_TIMES} x the live data)"
        live=$((NUM * (16 + 4096)))
        for e in varve-blob rocksdb-blob; do
            rm -rf "$DB_DIR/ow"
            run overwrite "$e" 1 --benchmarks=fillseq --num="$NUM" --seed=1 --db="$DB_DIR/ow"
            # The peak: the table and blob bytes sampled every half second
            # while the overwrite and the wait run.
            peak_file=$(mktemp)
            echo 0 > "$peak_file"
            (
                peak=0
                while [ -d "$DB_DIR/ow" ]; do
                    # A file deleted while find lists it makes find fail
                    # (the sum of the rest is still printed): one number.
                    b=$( (bytes_of "$DB_DIR/ow" 2>/dev/null || true) | head -1)
                    [ -n "$b" ] || b=0
                    [ "$b" -gt "$peak" ] && peak=$b && echo "$peak" > "$peak_file"
                    sleep 0.5
                done
            ) &
            sampler=$!
            run overwrite "$e" 1 --benchmarks=overwrite,waitforcompaction --use_existing_db=true \
                --num="$NUM" --writes=$((OW_TIMES * NUM)) --seed=1 --db="$DB_DIR/ow"
            b=$(bytes_of "$DB_DIR/ow")
            kill "$sampler" 2>/dev/null || true
            wait "$sampler" 2>/dev/null || true
            p=$(cat "$peak_file")
            rm -f "$peak_file"
            echo "overwrite | $e | 1 | bytes : $b ($(awk -v b="$b" -v l="$live" 'BEGIN {printf "%.2f", b / l}') x the live $live)"
            echo "overwrite | $e | 1 | peak bytes : $p ($(awk -v b="$p" -v l="$live" 'BEGIN {printf "%.2f", b / l}') x the live $live)"
        done
        rm -rf "$DB_DIR/ow"
        ;;
    *)
        echo "unknown section $s" >&2
        exit 2
        ;;
    esac
done
# The read sections' databases (reused by `readseq` after `reads`) take
# ~10 GB: gone at the end unless KEEP_DBS is set.
[ -n "${KEEP_DBS:-}" ] || rm -rf "$DB_DIR"/r-varve-blob "$DB_DIR"/r-varve "$DB_DIR"/r-rocksdb-blob
