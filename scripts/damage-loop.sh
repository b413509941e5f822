#!/usr/bin/env bash
# damage-loop.sh [ROUNDS] [FIRST_SEED]: the random-damage test over ROUNDS
# damaged copies (default 5000) of a database with data on several levels,
# overwrites and tombstones in its tables and its WAL: one file (WAL,
# table, MANIFEST, CURRENT, LOG) gets 1-8 flipped bytes, a truncation or a
# zeroed 4 KiB range; then gets of every key and full scans both ways, in a
# read-only, a read-write and a second read-write open. Passing means an
# error or exactly the right data every time (a reported WAL tail cut is
# the one loss allowed). Prints the outcomes per file kind; a failure
# names the seed, so VARVE_DAMAGE_SEED=<seed> VARVE_DAMAGE_ROUNDS=1 replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
VARVE_DAMAGE_ROUNDS="${1:-5000}" VARVE_DAMAGE_SEED="${2:-1}" \
    cargo test -q --release -p varve --test damage -- --nocapture --test-threads=1
