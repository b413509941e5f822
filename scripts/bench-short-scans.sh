#!/usr/bin/env bash
# bench-short-scans.sh — the short-scan, multi_get and their disk limits of
# issue #51, varve beside RocksDB --tuned in the same run: seek + N nexts
# over cold 4 KiB blob values at 1 and 16 threads (ops/s and file-system
# bytes read per byte returned), and multi_get cold at batch 128, then fio's
# 4 KiB random-read IOPS at QD1 and QD32 over the same disk.
#
#   scripts/bench-short-scans.sh
#   NUM=500000 REPS=1 scripts/bench-short-scans.sh
#
# Environment:
#   BIN       varve-bench built with --features rocksdb (default: build it into
#             CARGO_TARGET_DIR or ./target)
#   DB_DIR    where the two databases go (default /tmp/varve-short-scans; needs
#             2 x NUM x 4.2 KB); KEEP=1 keeps (and later reuses) them
#   NUM       keys, 4 KiB values each, in blob files (1000000)
#   REPS      repetitions, interleaved (3); medians are printed
#   NEXTS     seek_nexts values (100)
#   ROCKSDB_FLAGS  (--tuned) and VARVE_FLAGS (--tuned): each engine's own
#             flags, after the shared ones so they override them
# Needs root for drop_caches (skipped otherwise, with a warning) and python3.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DB_DIR="${DB_DIR:-/tmp/varve-short-scans}"
NUM="${NUM:-1000000}"
REPS="${REPS:-3}"
NEXTS="${NEXTS:-100}"
ROCKSDB_FLAGS="${ROCKSDB_FLAGS---tuned}"
VARVE_FLAGS="${VARVE_FLAGS---tuned}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ -z "${BIN:-}" ]; then
    (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -p varve-bench --features rocksdb >&2)
    BIN="$TARGET/release/varve-bench"
fi
mkdir -p "$DB_DIR"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/short-scans.XXXXXX")"
trap 'rm -rf "$WORK"; [ "${KEEP:-0}" = 1 ] || rm -rf "$DB_DIR/ss-varve" "$DB_DIR/ss-rocksdb"' EXIT
own() { if [ "$1" = rocksdb ]; then echo "$ROCKSDB_FLAGS"; else echo "$VARVE_FLAGS"; fi; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || echo "short-scans: cannot drop the page cache" >&2; }
SHARED=(--num="$NUM" --key_size=16 --value_size=4096 --enable_blob_files=true --min_blob_size=4096
    --compression_type=none --use_direct_reads=true --cache_size=8388608 --bloom_bits=10 --histogram=0)
run() { # LABEL ENGINE FLAGS...
    local label="$1" e="$2"
    shift 2
    # shellcheck disable=SC2046
    "$BIN" --engine="$e" "${SHARED[@]}" "$@" $(own "$e") --db="$DB_DIR/ss-$e" \
        --json="$WORK/$label.jsonl" > "$WORK/$label.out" 2> "$WORK/$label.err" \
        || { echo "short-scans: $label failed: $(tail -2 "$WORK/$label.err")" >&2; return 1; }
    grep -E '^[a-z]+ +:' "$WORK/$label.out" | sed "s/^/$label | /"
}
for e in varve rocksdb; do
    if [ ! -f "$DB_DIR/ss-$e/CURRENT" ]; then
        run "fill-$e" "$e" --benchmarks=filluniquerandom,waitforcompaction --seed=1
    fi
done
for rep in $(seq "$REPS"); do
    for e in varve rocksdb; do
        for t in 1 16; do
            reads=$((t == 1 ? 300 : 60))
            drop
            run "seek$NEXTS-t$t-$e-$rep" "$e" --benchmarks=seekrandom --use_existing_db=true \
                --seek_nexts="$NEXTS" --threads="$t" --reads="$reads" --seed="$rep"
        done
        drop
        mg=(--multiread_batched=true)
        [ "$e" = varve ] && mg=(--async_io=true --async_queue_depth=32)
        run "mget128-$e-$rep" "$e" --benchmarks=multireadrandom --use_existing_db=true \
            --batch_size=128 --reads=60000 --seed="$rep" "${mg[@]}"
    done
done
echo "## disk limits (after the engines), fio over $DB_DIR"
RUNTIME="${RUNTIME:-10}" "$ROOT/scripts/disk-limits.sh" "$DB_DIR" | tee "$WORK/disk.md"
python3 - "$WORK" "$NEXTS" <<'PY'
import glob, json, os, re, statistics, sys
work, nexts = sys.argv[1], sys.argv[2]
rows = {}
for f in glob.glob(os.path.join(work, "*.jsonl")):
    label = os.path.basename(f)[:-6]
    m = re.match(r"(seek\d+-t\d+|mget128)-(varve|rocksdb)-(\d+)$", label)
    if not m:
        continue
    for line in open(f):
        r = json.loads(line)
        if r["name"] not in ("seekrandom", "multireadrandom"):
            continue
        ratio = (r["proc_io_read_bytes"] / r["bytes"]) if r.get("proc_io_read_bytes") and r.get("bytes") else None
        rows.setdefault((m.group(1), m.group(2)), []).append((r["ops_per_sec"], ratio))
med = lambda v: statistics.median(v) if v else float("nan")
print("\n| shape | varve ops/s | RocksDB --tuned ops/s | varve / RocksDB | varve bytes read / returned | RocksDB bytes read / returned |")
print("|---|---:|---:|---:|---:|---:|")
for shape in sorted({k[0] for k in rows}):
    v = rows.get((shape, "varve"), []); r = rows.get((shape, "rocksdb"), [])
    vo, ro = med([x[0] for x in v]), med([x[0] for x in r])
    vb = med([x[1] for x in v if x[1]]); rb = med([x[1] for x in r if x[1]])
    print(f"| {shape} | {vo:,.0f} | {ro:,.0f} | {vo / ro:.2f} | {vb:.2f} | {rb:.2f} |")
print(f"\nmedians of the reps (ops/s: seeks with {nexts} nexts, or keys read for multireadrandom)")
PY
