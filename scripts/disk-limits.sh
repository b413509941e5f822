#!/usr/bin/env bash
# disk-limits.sh — measure the disk's own limits with fio, on the filesystem
# that holds the database, so benchmark numbers can be read against them.
#
#   scripts/disk-limits.sh [DIR]        (DIR default: $DB_DIR, else ${TMPDIR:-/tmp})
#   SIZE=2G RUNTIME=10 scripts/disk-limits.sh /data
#
# Measures, each for RUNTIME seconds on a SIZE test file in a temporary
# directory under DIR (removed afterwards):
#   4 KiB random read IOPS, O_DIRECT, queue depth 1 and 32 (io_uring, else libaio)
#   sequential read and write MB/s, 1 MiB blocks, O_DIRECT, queue depth 4
#   sequential write MB/s into new files (written once, not time-based):
#     1 file and 4 files at once (SIZE each), and 64 files at once (SIZE/16
#     each: as many as the contest's blob write lanes), each at queue
#     depth 3, 1 MiB blocks, O_DIRECT: the way an engine writes fresh blob
#     files and tables (on ext4 a write that allocates blocks costs more
#     than one over written blocks, and writes that extend a file are
#     done one at a time per file)
#   fdatasync/s: 4 KiB buffered writes, each followed by fdatasync
# and prints a markdown table. Installs fio with apt-get when missing.
set -euo pipefail

DIR="${1:-${DB_DIR:-${TMPDIR:-/tmp}}}"
SIZE="${SIZE:-1G}"
RUNTIME="${RUNTIME:-10}"

if ! command -v fio >/dev/null 2>&1; then
    echo "disk-limits: fio not found; installing with apt-get" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq fio >&2
fi
command -v python3 >/dev/null 2>&1 || { echo "disk-limits: python3 is needed to read fio's JSON" >&2; exit 1; }

mkdir -p "$DIR"
WORK="$(mktemp -d "$DIR/disk-limits.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
FILE="$WORK/fio.dat"

# Pick an async engine that works here (io_uring may be blocked by seccomp).
ENGINE=""
for e in io_uring libaio; do
    if fio --name=probe --filename="$WORK/probe" --size=1M --rw=read --bs=4k \
        --ioengine="$e" --direct=1 --runtime=1 --output-format=json >/dev/null 2>&1; then
        ENGINE="$e"
        break
    fi
done
rm -f "$WORK/probe"
if [ -z "$ENGINE" ]; then
    echo "disk-limits: neither io_uring nor libaio works with O_DIRECT in $DIR; using psync" >&2
    ENGINE="psync"
fi

echo "disk-limits: $(df -hT "$DIR" | tail -1 | awk '{print $1" ("$2")"}'), file $SIZE, ${RUNTIME}s per test, engine $ENGINE" >&2
echo "disk-limits: laying out $SIZE test file" >&2
fio --name=layout --filename="$FILE" --size="$SIZE" --rw=write --bs=1M --ioengine=psync \
    --direct=1 --end_fsync=1 --output-format=json >/dev/null

run() { # name, extra fio args...
    local name="$1"; shift
    fio --name="$name" --filename="$FILE" --size="$SIZE" --runtime="$RUNTIME" --time_based \
        --output-format=json "$@"
}

# Prints "iops bw_MBps" for reads or writes from fio's JSON on stdin.
# A test fio could not finish prints "n/a n/a" (its row then reads "n/a",
# which scripts reading the table skip) and a note on stderr, and the
# other tests go on.
metric() { # read|write|sync
    python3 -c '
import json, sys
kind = sys.argv[1]
text = sys.stdin.read()
try:
    # fio may print notes before its JSON.
    j = json.loads(text[text.index("{"):])["jobs"][0]
except (ValueError, KeyError, IndexError) as e:
    print("disk-limits: fio gave no result (%s): %s" % (e, text[:200].strip()), file=sys.stderr)
    print("n/a n/a")
    sys.exit(0)
if kind == "sync":
    s = j.get("sync", {})
    lat = s.get("lat_ns", s)
    n = lat.get("N", s.get("total_ios", 0))
    secs = j["job_runtime"] / 1000.0
    bw = j["write"]["bw_bytes"] / 1048576
    print("%.0f %.1f" % (n / secs, bw))
else:
    d = j[kind]
    print("%.0f %.1f" % (d["iops"], d["bw_bytes"] / 1048576))
' "$1"
}

echo "disk-limits: randread qd1" >&2
read -r RR1 _ < <(run rr1 --rw=randread --bs=4k --iodepth=1 --ioengine="$ENGINE" --direct=1 | metric read)
echo "disk-limits: randread qd32" >&2
read -r RR32 _ < <(run rr32 --rw=randread --bs=4k --iodepth=32 --ioengine="$ENGINE" --direct=1 | metric read)
echo "disk-limits: seqread 1M" >&2
read -r _ SR < <(run sr --rw=read --bs=1M --iodepth=4 --ioengine="$ENGINE" --direct=1 | metric read)
echo "disk-limits: seqwrite 1M" >&2
read -r _ SW < <(run sw --rw=write --bs=1M --iodepth=4 --ioengine="$ENGINE" --direct=1 | metric write)
# new_files JOBS [SIZE]: MB/s of JOBS jobs each writing a new file of SIZE
# (default $SIZE) once. Prints only after the files are removed and that
# removal is on disk (`sync -f` of the file system under test; with
# online discard ext4 trims the freed blocks then), so the next test neither overlaps the removal nor finds
# its directory removed under it. Callers read it through a command
# substitution, which waits for the whole function: a process
# substitution would let `read` return at the printed line while the
# removal still ran.
new_files() {
    local dir="$WORK/new" out
    mkdir "$dir"
    out="$(fio --name=new --directory="$dir" --size="${2:-$SIZE}" --numjobs="$1" --group_reporting \
        --rw=write --bs=1M --iodepth=3 --ioengine="$ENGINE" --direct=1 --fallocate=none \
        --output-format=json | metric write)" || true # metric printed n/a for a failed fio
    rm -rf "$dir"
    sync -f "$WORK"
    echo "$out"
}
echo "disk-limits: seqwrite 1M into a new file" >&2
read -r _ SWN1 <<< "$(new_files 1)"
echo "disk-limits: seqwrite 1M into 4 new files" >&2
read -r _ SWN4 <<< "$(new_files 4)"
echo "disk-limits: seqwrite 1M into 64 new files" >&2
# SIZE/16 each (whole MiB): 64 files hold 4 x SIZE, as the 4-file test.
SIZE64="$(( $(numfmt --from=iec "$SIZE") / 16 / 1048576 ))M"
read -r _ SWN64 <<< "$(new_files 64 "$SIZE64")"
echo "disk-limits: fdatasync 4k" >&2
read -r FS FSBW < <(run fs --rw=write --bs=4k --ioengine=psync --fdatasync=1 --direct=0 | metric sync)

echo
echo "| disk limit ($DIR, $ENGINE, ${RUNTIME}s each) | value |"
echo "|---|---:|"
echo "| 4 KiB random read, QD1, O_DIRECT | $RR1 IOPS |"
echo "| 4 KiB random read, QD32, O_DIRECT | $RR32 IOPS |"
echo "| sequential read, 1 MiB, O_DIRECT | $SR MB/s |"
echo "| sequential write, 1 MiB, O_DIRECT | $SW MB/s |"
echo "| sequential write into a new file, 1 MiB, QD3, O_DIRECT | $SWN1 MB/s |"
echo "| sequential write into 4 new files at once, 1 MiB, QD3 each, O_DIRECT | $SWN4 MB/s |"
echo "| sequential write into 64 new files at once, 1 MiB, QD3 each, O_DIRECT | $SWN64 MB/s |"
echo "| 4 KiB write + fdatasync | $FS fdatasync/s ($FSBW MB/s) |"
