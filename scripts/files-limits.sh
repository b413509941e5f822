#!/usr/bin/env bash
# files-limits.sh — the disk's limits over a database's own files, read-only,
# right after a benchmark used them: what disk-limits.sh measures on a fresh
# 1 GiB test file can differ a lot from what the same disk gives over an
# 8 GB database laid out by the file system (on this machine's virtio disk,
# 4 KiB QD32 reads: 92k IOPS on the test file, 49k over the contest
# database's blob files, in the same minute).
#
#   scripts/files-limits.sh DIR                 (THREADS=64 RUNTIME=10)
#
# Over DIR's blob files (its tables when it has none), each for RUNTIME
# seconds, page cache dropped first when run as root:
#   4 KiB random read IOPS, O_DIRECT, io_uring at queue depth 32
#   4 KiB random read IOPS, O_DIRECT, THREADS threads with one pread each
#     in flight (psync): the shape of a point-read phase of THREADS threads
# and over all its blob and table files, read in order:
#   sequential read MB/s, 1 MiB reads, queue depth 4, O_DIRECT
# Prints markdown table rows like disk-limits.sh ("| what | value unit |").
# On a virtual disk, files a benchmark has just read may still be in the
# host's cache beneath the guest (dropping the guest's page cache does not
# reach it): on this machine the sequential rate over the contest's blob
# files right after its range phase was 2,288-2,690 MB/s against 578 MB/s
# on disk-limits.sh's fresh test file in the same run. Read such a figure
# as what the files gave then, not as the disk's cold rate.
# fio runs with --readonly and no --size: it never writes, lays out or
# truncates the files.
set -euo pipefail

DIR="${1:?usage: files-limits.sh DIR}"
THREADS="${THREADS:-64}"
RUNTIME="${RUNTIME:-10}"
command -v fio >/dev/null 2>&1 || { echo "files-limits: fio not found (scripts/disk-limits.sh installs it)" >&2; exit 1; }
[ -d "$DIR" ] || { echo "files-limits: $DIR is not a directory" >&2; exit 1; }

list() { # find name patterns...
    (cd "$DIR" && find . -maxdepth 1 "$@" | sort | sed "s|^\./|$DIR/|" | paste -sd:)
}
VALUES="$(list -name '*.blob')"
[ -n "$VALUES" ] || VALUES="$(list -name '*.sst')"
ALL="$(list \( -name '*.blob' -o -name '*.sst' \))"
[ -n "$ALL" ] || { echo "files-limits: no blob or table files in $DIR" >&2; exit 1; }

cold() { sync; [ "$(id -u)" -ne 0 ] || echo 3 > /proc/sys/vm/drop_caches; }

# terse v3: field 7 is read bandwidth in KiB/s, field 8 read IOPS.
fio_read() { # fio args...
    fio --readonly --direct=1 --runtime="$RUNTIME" --time_based --group_reporting \
        --output-format=terse --terse-version=3 "$@" 2>/dev/null
}

cold
QD32="$(fio_read --name=rr32 --filename="$VALUES" --rw=randread --bs=4k --ioengine=io_uring \
    --iodepth=32 | awk -F';' '{printf "%.0f", $8}')"
cold
PSYNC="$(fio_read --name=rrthreads --filename="$VALUES" --rw=randread --bs=4k --ioengine=psync \
    --numjobs="$THREADS" --thread | awk -F';' '{printf "%.0f", $8}')"
cold
SEQ="$(fio_read --name=seq --filename="$ALL" --file_service_type=sequential --rw=read --bs=1M \
    --ioengine=io_uring --iodepth=4 | awk -F';' '{printf "%.1f", $7 * 1024 / 1048576}')"

echo "| 4 KiB random read over the database's files, QD32, O_DIRECT | $QD32 IOPS |"
echo "| 4 KiB random read over the database's files, $THREADS threads x QD1, O_DIRECT | $PSYNC IOPS |"
echo "| sequential read over the database's files, 1 MiB, O_DIRECT | $SEQ MB/s |"
