#!/usr/bin/env bash
# power-loop.sh [ROUNDS]: ROUNDS (default 1000) simulated power cuts on the
# fault-injecting file system: 6 writer threads (two in three writes
# sync = true, one in five a 2-key batch) run until the file system
# "loses power" at a random moment; everything not fdatasync'ed may be
# lost, wholly or in part; recovery must open and every write acknowledged
# with sync = true must be there. Prints the power cuts, the synced writes
# checked and the count lost (must be 0); exits non-zero if any was lost.
# Then the same with batches across three keyspaces while a fourth is
# created, filled and dropped (tests/keyspace_crash.rs).
# A fresh database every 50 cuts keeps each check bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-1000}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
VARVE_POWER_LOSS_ROUNDS="$ROUNDS" cargo test -q --release -p varve --test power_loss -- \
    --exact power_loss_keeps_every_synced_write --nocapture --test-threads=1 2>&1 \
    | tee "$log" | grep -A1 -E "^power-loop|panicked|FAILED" || true
grep -qE "^power-loop: .* lost 0," "$log"
VARVE_POWER_LOSS_ROUNDS="$ROUNDS" cargo test -q --release -p varve --test keyspace_crash -- \
    --exact power_loss_with_batches_across_keyspaces --nocapture --test-threads=1 2>&1 \
    | tee "$log" | grep -A1 -E "^keyspace power loop|panicked|FAILED" || true
grep -qE "^keyspace power loop: .* lost 0, torn 0$" "$log"
