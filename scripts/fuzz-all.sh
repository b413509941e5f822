#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for SECONDS each, one after another
# (one libFuzzer process at a time), then prints per target: seconds run,
# executions, corpus size and crashes. See docs/fuzzing.md.
#
# usage: scripts/fuzz-all.sh [SECONDS_PER_TARGET]     (default 3600)
# env:   FUZZ_LOG_DIR  where logs, the working corpus, artifacts and the
#                      summary go (default fuzz/logs)
#        FUZZ_TARGETS  space-separated targets (default: all of them)
#
# Needs nightly and cargo-fuzz (`cargo install cargo-fuzz`). The targets are
# built once at the start and the binaries copied to $FUZZ_LOG_DIR/bin, so
# editing the tree during a long run changes nothing. The working corpus is
# $FUZZ_LOG_DIR/corpus/<target>, seeded from fuzz/corpus/<target>; the
# committed corpus is not touched (minimize and copy back by hand, see
# docs/fuzzing.md). Crash, timeout and OOM inputs land in
# $FUZZ_LOG_DIR/artifacts/<target>/. When everything is done the summary is
# in $FUZZ_LOG_DIR/summary.txt and $FUZZ_LOG_DIR/DONE exists.
set -euo pipefail

secs=${1:-3600}
root=$(cd "$(dirname "$0")/.." && pwd)
logdir=${FUZZ_LOG_DIR:-$root/fuzz/logs}
all="wal_v1 wal_v2 write_batch sst_table sst_block bloom_filter manifest_edit manifest"
targets=${FUZZ_TARGETS:-$all}

mkdir -p "$logdir/bin"
logdir=$(cd "$logdir" && pwd)
rm -f "$logdir/DONE" "$logdir/runs.tsv"
cd "$root"

echo "building fuzz targets ($(date -u +%FT%TZ))"
cargo +nightly fuzz build >"$logdir/build.log" 2>&1
bindir="$root/fuzz/target/x86_64-unknown-linux-gnu/release"
for t in $targets; do
    cp "$bindir/$t" "$logdir/bin/$t"
done

for t in $targets; do
    corpus="$logdir/corpus/$t"
    artifacts="$logdir/artifacts/$t"
    mkdir -p "$corpus" "$artifacts"
    cp -n "$root/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
    extra=()
    if [ -d "$root/fuzz/regressions/$t" ]; then
        extra+=("$root/fuzz/regressions/$t")
    fi
    echo "fuzzing $t for ${secs}s ($(date -u +%FT%TZ)), log $logdir/$t.log"
    start=$(date +%s)
    set +e
    "$logdir/bin/$t" "$corpus" "${extra[@]}" \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" \
        >"$logdir/$t.log" 2>&1
    rc=$?
    set -e
    end=$(date +%s)
    printf '%s\t%s\t%s\n' "$t" "$((end - start))" "$rc" >>"$logdir/runs.tsv"
done

{
    printf '%-14s %8s %14s %14s %10s %8s %s\n' \
        target seconds executions corpus_files corpus_kib crashes exit
    while IFS=$'\t' read -r t s rc; do
        log="$logdir/$t.log"
        execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
        if [ -z "$execs" ]; then
            execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#' || true)
        fi
        files=$(find "$logdir/corpus/$t" -type f | wc -l)
        kib=$(du -sk --apparent-size "$logdir/corpus/$t" | cut -f1)
        crashes=$(find "$logdir/artifacts/$t" -type f | wc -l)
        printf '%-14s %8s %14s %14s %10s %8s %s\n' \
            "$t" "$s" "${execs:-?}" "$files" "$kib" "$crashes" "$rc"
    done <"$logdir/runs.tsv"
} | tee "$logdir/summary.txt"
date -u +%FT%TZ >"$logdir/DONE"
