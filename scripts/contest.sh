#!/usr/bin/env bash
# contest.sh — the PolarDB 2018 engine contest as it ran (varve-bench --benchmarks=contest:
# 64 threads, 8-byte keys, 4 KiB values, one process per phase, kill -9 after
# the write phase), for varve and for RocksDB with blob files at the same
# threshold, inside a memory cgroup limited to 2 GiB (page cache counted, as
# on the contest's machine), beside scripts/disk-limits.sh in the same run
# (before and after the engines), and after each varve run
# scripts/files-limits.sh over the database it left (the disk's random- and
# sequential-read limits over those very files).
#
#   scripts/contest.sh                       (NUM=2000000: an 8 GiB database)
#   NUM=250000 REPS=1 ENGINES=varve scripts/contest.sh
#
# Environment:
#   NUM      keys (2000000)            THREADS  threads (64)
#   REPS     runs per engine, interleaved (3); medians are reported
#   ENGINES  "varve rocksdb"           MIN      blob threshold, bytes (1024)
#   LIMIT    cgroup memory limit (2G)  DB_DIR   where databases go
#            (default ${TMPDIR:-/tmp}/varve-contest; needs NUM x 4.2 KB free)
#   BIN      a varve-bench built with --features rocksdb (default: built into
#            CARGO_TARGET_DIR, or target/)
#   VARVE_FLAGS  varve-only flags (default: --blob_write_lanes=64
#            --blob_lanes_by_key --memory_budget=1610612736)
#   ROCKSDB_FLAGS  flags for the RocksDB runs only (default: --tuned; e.g.
#            add --contest_phases=write,verify,read: its range phase reads
#            every value once per thread and takes hours at 2M keys)
#            Engine flags come after the shared ones and override them.
#   COMMON_FLAGS  flags for both engines' runs (default:
#            --level0_file_num_compaction_trigger=10 --bloom_bits=10, see
#            below)
#   EXTRA    more varve-bench flags for every run (e.g.
#            --contest_phases=write,verify,read leaves the range phase out)
#
# Needs root (the cgroup, and dropping the page cache before each run) and
# python3. Prints each run's result lines, then a table of medians with the
# ratios the contest issue asks for: write MB/s against the disk's
# sequential-write rates, read ops/s against 4 KiB QD32 IOPS, range
# file-system reads per pass against the database size and range wall time
# against 2 x database / sequential-read rate, reopen seconds, the cgroup's
# peak memory and OOM kills, and varve / RocksDB.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NUM="${NUM:-2000000}"
THREADS="${THREADS:-64}"
REPS="${REPS:-3}"
ENGINES="${ENGINES:-varve rocksdb}"
MIN="${MIN:-1024}"
LIMIT="${LIMIT:-2G}"
DB_DIR="${DB_DIR:-${TMPDIR:-/tmp}/varve-contest}"
EXTRA="${EXTRA:-}"
# varve's contest setup: 64 write lanes that split the key space (the
# contest engines' shards), and one memory budget of 1.5 GiB (the contest's
# peak-RSS goal), which sizes every part and turns on shared scan chunks
# (318 MiB), so the range phase reads each lane's values about once for all
# 64 threads (docs/memory.md).
VARVE_FLAGS="${VARVE_FLAGS:---blob_write_lanes=64 --blob_lanes_by_key --memory_budget=1610612736}"
# Both engines: an L0 compaction waits for 10 L0 tables instead of 4. The
# write phase is a bulk load of random keys, so every L0 table spans the
# whole key space and each L0 compaction rewrites all of L1: at 4, varve
# merged 90 MB of pointer tables three times over in its write phase, about
# a tenth of the two cores its 64 writers need. The L0 tables that then
# stay (5 at 2M keys) would each be searched by every read, so both
# engines also build bloom filters (10 bits per key: 2.5 MB at 2M keys,
# 80 MB at the contest's 64M), and a read searches only the table that
# has its key (docs/contest.md).
COMMON_FLAGS="${COMMON_FLAGS:---level0_file_num_compaction_trigger=10 --bloom_bits=10}"
# RocksDB as its tuning guide and BlobDB page configure it (varve-bench
# --tuned: max_background_jobs 4, max_write_buffer_number 6, bytes_per_sync
# 1 MiB, direct IO for flush and compaction, dynamic level sizes, 16 KiB
# blocks with index and filter blocks in the cache, a blob cache, async IO);
# blob garbage collection stays off (db_bench's default: the contest only
# writes each key once). The report prints every option it ran with.
ROCKSDB_FLAGS="${ROCKSDB_FLAGS:---tuned}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

[ "$(id -u)" -eq 0 ] || { echo "contest.sh: needs root (memory cgroup, drop_caches)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "contest.sh: needs python3" >&2; exit 1; }
if [ -z "${BIN:-}" ]; then
    (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -p varve-bench --features rocksdb >&2)
    BIN="$TARGET/release/varve-bench"
fi
mkdir -p "$DB_DIR"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/contest-sh.XXXXXX")"

# The memory cgroup: v1 (memory.limit_in_bytes) or v2 (memory.max).
LIMIT_BYTES="$(numfmt --from=iec "$LIMIT")"
if [ -d /sys/fs/cgroup/memory ]; then
    CG="/sys/fs/cgroup/memory/varve-contest-$$"
    mkdir "$CG"
    echo "$LIMIT_BYTES" > "$CG/memory.limit_in_bytes"
    # No swap either, where the kernel accounts it.
    if [ -f "$CG/memory.memsw.limit_in_bytes" ]; then
        echo "$LIMIT_BYTES" > "$CG/memory.memsw.limit_in_bytes"
    fi
    reset_peak() { echo 0 > "$CG/memory.max_usage_in_bytes"; }
    peak() { cat "$CG/memory.max_usage_in_bytes"; }
    ooms() { awk '$1 == "oom_kill" {print $2}' "$CG/memory.oom_control"; }
    CGV=v1
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CG="/sys/fs/cgroup/varve-contest-$$"
    mkdir "$CG"
    echo "$LIMIT_BYTES" > "$CG/memory.max"
    echo 0 > "$CG/memory.swap.max" 2>/dev/null || true
    reset_peak() { echo reset > "$CG/memory.peak" 2>/dev/null || true; }
    peak() { cat "$CG/memory.peak" 2>/dev/null || echo 0; }
    ooms() { awk '$1 == "oom_kill" {print $2}' "$CG/memory.events"; }
    CGV=v2
else
    echo "contest.sh: no memory cgroup controller (v1 or v2) found" >&2
    exit 1
fi
cleanup() {
    rm -rf "$WORK" "$DB_DIR/db"
    rmdir "$CG" 2>/dev/null || true
}
trap cleanup EXIT

# The disk's limits before the engines run and again after them (the
# disk here moves from hour to hour; the ratios use the mean of the two,
# or the one that gave a result).
echo "## disk (before the runs)"
DB_DIR="$DB_DIR" "$ROOT/scripts/disk-limits.sh" "$DB_DIR" | tee "$WORK/disk.1.md"

flags_of() { # engine: the shared flags first, so an engine's own flags override them
    echo -n "--engine=$1 --benchmarks=contest --num=$NUM --threads=$THREADS --enable_blob_files=true \
--min_blob_size=$MIN --use_direct_reads=true --cache_size=268435456 --compression_type=none --seed=1 --db=$DB_DIR/db $COMMON_FLAGS $EXTRA"
    if [ "$1" = varve ]; then printf ' %s' "$VARVE_FLAGS"; fi
    if [ "$1" = rocksdb ]; then printf ' %s' "$ROCKSDB_FLAGS"; fi
    echo
}

echo "## runs ($NUM keys, $THREADS threads, memory cgroup $CGV limited to $LIMIT)"
for rep in $(seq 1 "$REPS"); do
    for e in $ENGINES; do
        rm -rf "$DB_DIR/db"
        sync
        echo 3 > /proc/sys/vm/drop_caches
        reset_peak
        oom0="$(ooms)"
        json="$WORK/$e.$rep.jsonl"
        echo "# $e rep $rep: $BIN $(flags_of "$e") --json=$json"
        status=0
        # shellcheck disable=SC2046
        ( echo "$BASHPID" > "$CG/cgroup.procs"; exec "$BIN" $(flags_of "$e") --json="$json" ) \
            || status=$?
        oom1="$(ooms)"
        echo "{\"engine\": \"$e\", \"rep\": $rep, \"status\": $status, \"cgroup_peak\": $(peak), \"oom_kills\": $((oom1 - oom0))}" \
            >> "$WORK/runs.jsonl"
        echo "# $e rep $rep: exit $status, cgroup peak $(peak) bytes, OOM kills $((oom1 - oom0))"
        # The disk's limits over the database varve just used (its blob
        # files as the contest laid them out), in the same minute.
        if [ "$e" = varve ] && [ "$status" -eq 0 ]; then
            THREADS="$THREADS" "$ROOT/scripts/files-limits.sh" "$DB_DIR/db" | tee "$WORK/files.$rep.md" \
                || echo "# files-limits failed; ratios use disk-limits only"
        fi
    done
done

echo "## disk (after the runs)"
DB_DIR="$DB_DIR" "$ROOT/scripts/disk-limits.sh" "$DB_DIR" | tee "$WORK/disk.2.md"

echo "## summary (medians of $REPS)"
python3 - "$WORK" "$ENGINES" "$THREADS" <<'EOF'
import json, os, re, statistics, sys
work, engines, THREADS = sys.argv[1], sys.argv[2].split(), sys.argv[3]
def limits(name):
    """The (what, value) rows of a disk-limits.sh or files-limits.sh table
    in work/name that hold a positive number ("n/a" and 0: no result)."""
    path = os.path.join(work, name)
    if not os.path.exists(path):
        return
    for line in open(path):
        m = re.match(r"\| (.+?) \| ([\d.]+) ", line)
        if m and float(m.group(2)) > 0:
            yield m.group(1), float(m.group(2))
# Each disk limit: the mean of its measures before and after the runs
# (of the one, if fio gave no result for the other).
seen = {}
for name in ("disk.1.md", "disk.2.md"):
    for what, v in limits(name):
        seen.setdefault(what, []).append(v)
disk = {k: statistics.mean(v) for k, v in seen.items()}
seqw = disk.get("sequential write, 1 MiB, O_DIRECT", 0)
neww = disk.get("sequential write into 4 new files at once, 1 MiB, QD3 each, O_DIRECT", 0)
# As many new files as the write phase's blob write lanes (64).
new64 = disk.get("sequential write into 64 new files at once, 1 MiB, QD3 each, O_DIRECT", 0)
seqr = disk.get("sequential read, 1 MiB, O_DIRECT", 0)
iops = disk.get("4 KiB random read, QD32, O_DIRECT", 0)
runs = [json.loads(l) for l in open(os.path.join(work, "runs.jsonl"))]
# scripts/files-limits.sh over varve's database after each of its runs.
files = {"qd32": [], "threads": [], "seq": []}
for name in sorted(os.listdir(work)):
    if not (name.startswith("files.") and name.endswith(".md")):
        continue
    for what, v in limits(name):
        if what.startswith("4 KiB random read") and "QD32" in what:
            files["qd32"].append(v)
        elif what.startswith("4 KiB random read"):
            files["threads"].append(v)
        elif what.startswith("sequential read"):
            files["seq"].append(v)
res = {}
for e in engines:
    rows = {"write": [], "read": [], "range": [], "reopen": [], "range_pass_x": [],
            "range_wall_x": [], "peak": [], "rss": [], "ooms": 0, "failed": 0}
    for r in runs:
        if r["engine"] != e:
            continue
        rows["ooms"] += r["oom_kills"]
        rows["peak"].append(r["cgroup_peak"] / 2**30)
        path = os.path.join(work, f"{e}.{r['rep']}.jsonl")
        recs = {}
        if r["status"] == 0 and os.path.exists(path):
            recs = {j["name"]: j for j in map(json.loads, open(path))}
        if not recs:
            rows["failed"] += 1
            continue
        # --contest_phases may leave phases out (EXTRA): those stay empty.
        if "contest.write" in recs:
            rows["write"].append(recs["contest.write"]["mb_per_sec"])
        if "contest.read" in recs:
            rows["read"].append(recs["contest.read"]["ops_per_sec"])
        if "contest.open" in recs:
            m = re.search(r"open ([\d.]+) s", recs["contest.open"]["message"])
            rows["reopen"].append(float(m.group(1)) if m else float("nan"))
        if "contest.range" in recs:
            db = recs["contest.range"]["db_dir_bytes"]
            rows["range"].append(recs["contest.range"]["mb_per_sec"])
            rows["range_pass_x"].append(recs["contest.range"]["proc_io_read_bytes"] / 2 / db)
            if seqr:
                rows["range_wall_x"].append(
                    recs["contest.range"]["seconds"] / (2 * db / 2**20 / seqr))
        rows["rss"].append(max(j["peak_rss_bytes"] for j in recs.values()) / 2**30)
    res[e] = rows
med = lambda v: statistics.median(v) if v else float("nan")
pct = lambda a, b: f"{a / b:.0%}" if b and b == b else "n/a"  # b == b: not NaN
print("disk limits: the mean of the measures before and after the runs")
print(f"disk: sequential write {seqw:.0f} MB/s (into 4 new files {neww:.0f}, into 64 new "
      f"files {new64:.0f}), sequential read {seqr:.0f} MB/s, 4 KiB QD32 {iops:.0f} IOPS")
print("| engine | write MB/s | of seq write | of 4-new-file write | of 64-new-file write "
      "| read ops/s | of QD32 IOPS "
      "| range MB/s | FS reads per pass / DB | range wall / (2 x DB / seq read) | reopen s "
      "| peak RSS GiB | cgroup peak GiB | OOM kills | failed runs |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for e, r in res.items():
    w, rd = med(r["write"]), med(r["read"])
    print(f"| {e} | {w:.0f} | {pct(w, seqw)} | {pct(w, neww)} | {pct(w, new64)} | {rd:.0f} "
          f"| {pct(rd, iops)} "
          f"| {med(r['range']):.0f} | {med(r['range_pass_x']):.2f} | {med(r['range_wall_x']):.2f} "
          f"| {med(r['reopen']):.3f} | {med(r['rss']):.2f} | {med(r['peak']):.2f} | {r['ooms']} "
          f"| {r['failed']} |")
fq, ft, fs = (med(files[k]) for k in ("qd32", "threads", "seq"))
if files["qd32"] or files["threads"] or files["seq"]:
    print(f"over varve's database files (scripts/files-limits.sh, medians of "
          f"{len(files['qd32'])}): 4 KiB QD32 {fq:.0f} IOPS, 4 KiB with {THREADS} threads "
          f"{ft:.0f} IOPS, sequential read {fs:.0f} MB/s")
    for e, r in res.items():
        rd = med(r["read"])
        print(f"{e}: read {pct(rd, fq)} of the files' QD32 IOPS, {pct(rd, ft)} of their "
              f"{THREADS}-thread IOPS; range wall / (2 x DB / the files' sequential read) "
              f"{med(r['range_wall_x']) * fs / seqr if seqr else float('nan'):.2f}")
if "varve" in res and "rocksdb" in res:
    a, b = res["varve"], res["rocksdb"]
    ratio = lambda k: med(a[k]) / med(b[k]) if b[k] and a[k] else float("nan")
    print(f"varve / rocksdb: write {ratio('write'):.2f}x, read {ratio('read'):.2f}x, "
          f"range {ratio('range'):.2f}x")
EOF
