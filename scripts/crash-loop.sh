#!/usr/bin/env bash
# crash-loop.sh [KILLS]: SIGKILLs a writer process KILLS times (default 1000)
# in each of two modes and checks every acknowledged write after each kill:
#   sync      4 writer threads, sync = true, one write in four a 3-key batch;
#   lsm       tiny memtables and tables, so most kills land in flushes and
#             compactions (sync = false: a write that reached the OS must
#             survive kill -9);
#   keyspaces batches and range deletes across three keyspaces while a
#             fourth is created, filled and dropped (docs/keyspaces.md);
#   blobs     values on both sides of the blob threshold through blob files
#             (tests/blob_crash.rs): plain, during garbage collection, and
#             with lanes by key; each kill must leave every acknowledged
#             value readable (the test panics, naming the key, if not).
# After every kill `varve check` (tools::check_db) must find no damage in
# what the kill left, and again after the reopen; after every 4th kill
# (VARVE_RO_VERIFY_EVERY) a read-only open must show exactly what a
# read-write open of a copy shows (every keyspace, gets and scans both
# ways) and leave the directory unchanged: a difference fails the run.
# Prints, per mode, the kills, the acknowledged keys checked, the keys lost
# and the torn batches (all must be 0); exits non-zero if any was lost.
# A fresh database every 50 kills keeps each check bounded.
# Takes about 10-20 minutes per 1000 kills on 2 cores (release build).
set -euo pipefail
cd "$(dirname "$0")/.."
KILLS="${1:-1000}"
export VARVE_CRASH_KILLS="$KILLS"
export VARVE_RO_VERIFY_EVERY="${VARVE_RO_VERIFY_EVERY:-4}"
status=0
for test in kill9_with_sync_writes_loses_nothing_acknowledged \
            kill9_during_flush_and_compaction_loses_nothing_acknowledged; do
    echo "== $test ($KILLS kills)"
    if ! cargo test -q --release -p varve --test crash -- --exact "$test" --nocapture \
            --test-threads=1 2>&1 | tee /tmp/crash-loop.$$.log | grep -A1 -E "^crash-loop|panicked|FAILED"; then
        :
    fi
    if ! grep -qE "^crash-loop .* lost 0, torn batches 0$" /tmp/crash-loop.$$.log; then
        status=1
    fi
done
echo "== kill9_with_batches_across_keyspaces_is_all_or_nothing ($KILLS kills)"
cargo test -q --release -p varve --test keyspace_crash -- --exact \
    kill9_with_batches_across_keyspaces_is_all_or_nothing --nocapture --test-threads=1 2>&1 \
    | tee /tmp/crash-loop.$$.log | grep -A1 -E "^keyspace crash loop|panicked|FAILED" || true
if ! grep -qE "^keyspace crash loop: .* lost 0, torn 0$" /tmp/crash-loop.$$.log; then
    status=1
fi
for test in kill9_with_blob_values_loses_nothing_acknowledged \
            kill9_during_blob_gc_loses_nothing_acknowledged \
            kill9_with_lanes_by_key_loses_nothing_acknowledged; do
    echo "== $test ($KILLS kills)"
    if ! VARVE_BLOB_CRASH_KILLS="$KILLS" cargo test -q --release -p varve --test blob_crash -- \
            --exact "$test" --nocapture --test-threads=1 > /tmp/crash-loop.$$.log 2>&1; then
        status=1
    fi
    grep -E "kills left staged|panicked|lost its|FAILED" /tmp/crash-loop.$$.log || true
done
rm -f /tmp/crash-loop.$$.log
exit $status
