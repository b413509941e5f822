#!/usr/bin/env bash
# power-loop.sh [ROUNDS]: ROUNDS (default 1000) simulated power cuts on the
# fault-injecting file system, in each of four loads, all on the default
# write paths (the mapped WAL; blob values staged in mapped slots and
# written by direct chunk writes), with a power cut that keeps or loses
# each unsynced 4 KiB page on its own:
#   small values   6 writer threads, values under 300 bytes, two in three
#                  writes sync = true, one in five a 2-key batch;
#   blob values    the same with 4-12 KiB values (blob files);
#   no sync        blob values, no write synced;
#   keyspaces      batches across three keyspaces (one with blob files)
#                  while a fourth is created, filled and dropped
#                  (tests/keyspace_crash.rs).
# After each cut recovery must open, every write acknowledged with
# sync = true must be there, and each thread's surviving writes must be a
# prefix of its writes (batches whole). Prints, per load, the cuts, the
# synced writes checked, the count lost and the count not a prefix (both
# must be 0); exits non-zero if any was lost. A fresh database every 50
# cuts keeps each check bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-1000}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for test in power_loss_keeps_every_synced_write \
            power_loss_keeps_every_synced_blob_write_on_the_default_paths \
            power_loss_without_sync_leaves_a_prefix; do
    VARVE_POWER_LOSS_ROUNDS="$ROUNDS" cargo test -q --release -p varve --test power_loss -- \
        --exact "$test" --nocapture --test-threads=1 2>&1 \
        | tee "$log" | grep -A1 -E "^power-loop|panicked|FAILED" || true
    grep -qE "^power-loop .* lost 0, not a prefix 0," "$log" || status=1
done
VARVE_POWER_LOSS_ROUNDS="$ROUNDS" cargo test -q --release -p varve --test keyspace_crash -- \
    --exact power_loss_with_batches_across_keyspaces --nocapture --test-threads=1 2>&1 \
    | tee "$log" | grep -A1 -E "^keyspace power loop|panicked|FAILED" || true
grep -qE "^keyspace power loop: .* lost 0, torn 0$" "$log" || status=1
exit $status
