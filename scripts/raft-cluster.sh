#!/usr/bin/env bash
# raft-cluster.sh — the replicated key-value service (docs/raft.md) on a
# 3-node loopback cluster.
#
#   scripts/raft-cluster.sh fault   # the fault test: 3 nodes, KILLS SIGKILLs
#                                   # (leader or follower, restarted) and
#                                   # PAUSES SIGSTOP/SIGCONT under CLIENTS
#                                   # writers; checks that every acknowledged
#                                   # write is on all three nodes and that each
#                                   # client's register is linearizable
#                                   # (stateright); exits non-zero if not
#   scripts/raft-cluster.sh bench   # writes/s and p99 of varve-raft beside
#                                   # openraft-rocksstore: the same server code,
#                                   # 3 nodes, 16 clients, 100-byte values,
#                                   # interleaved REPS times, medians and the
#                                   # ratio; plus the disk's fdatasync/s (fio)
#   scripts/raft-cluster.sh demo    # start 3 nodes, init, put, get, add a
#                                   # learner, promote it, remove a node, stop
#
# Environment: DIR (/work/raft-cluster), KILLS (50), PAUSES (20), CLIENTS
# (8 for fault, 16 for bench), MAX_SECS (900), SECONDS_PER_RUN (15), REPS (3),
# VALUE_SIZE (100), PEER_BIN (varve-raft-server-rocksstore; built into
# /work/target-raft-peer when missing, 15-30 minutes the first time).
# Every node listens on 127.0.0.1 only; everything stops by itself.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODE="${1:-fault}"
DIR="${DIR:-/work/raft-cluster}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build --release -p varve-raft-kv >&2)
SERVER="$TARGET/release/varve-raft-server"
CLIENT="$TARGET/release/varve-raft-client"
rm -rf "$DIR"
mkdir -p "$DIR"

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# start BIN PORT_BASE SUBDIR: three nodes, initialized.
start() {
    local bin="$1" base="$2" sub="$3"
    PIDS=()
    for i in 1 2 3; do
        "$bin" --id "$i" --addr "127.0.0.1:$((base + i))" --dir "$DIR/$sub/n$i" \
            >"$DIR/$sub-n$i.log" 2>&1 &
        PIDS+=($!)
    done
    NODES="1=127.0.0.1:$((base + 1)),2=127.0.0.1:$((base + 2)),3=127.0.0.1:$((base + 3))"
    for _ in $(seq 50); do
        "$CLIENT" --nodes "$NODES" init >/dev/null 2>&1 && break
        sleep 0.2
    done
    # A write through the leader confirms it is up.
    "$CLIENT" --nodes "$NODES" --timeout-secs 30 put warmup ok >/dev/null
}

stop() {
    cleanup
    wait 2>/dev/null || true
    PIDS=()
}

case "$MODE" in
fault)
    "$CLIENT" fault-test --server-bin "$SERVER" --dir "$DIR/fault" \
        --kills "${KILLS:-50}" --pauses "${PAUSES:-20}" --clients "${CLIENTS:-8}" \
        --max-secs "${MAX_SECS:-900}"
    ;;
demo)
    start "$SERVER" 21000 demo
    "$SERVER" --id 4 --addr 127.0.0.1:21004 --dir "$DIR/demo/n4" >"$DIR/demo-n4.log" 2>&1 &
    PIDS+=($!)
    set -x
    "$CLIENT" --nodes "$NODES" put hello world
    "$CLIENT" --nodes "$NODES" get hello
    "$CLIENT" --nodes "$NODES" add-learner 4 127.0.0.1:21004
    "$CLIENT" --nodes "$NODES" change-membership 1,2,4
    "$CLIENT" --nodes "4=127.0.0.1:21004" get hello --stale
    set +x
    stop
    ;;
bench)
    PEER_BIN="${PEER_BIN:-/work/target-raft-peer/release/varve-raft-server-rocksstore}"
    if [ ! -x "$PEER_BIN" ]; then
        (cd "$ROOT/crates/varve-raft-kv/rocksstore-peer" &&
            cargo build --release --target-dir /work/target-raft-peer >&2)
    fi
    if ! command -v fio >/dev/null 2>&1; then
        echo "raft-cluster: fio not found; installing with apt-get" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >&2
    fi
    echo "== disk: 4 KiB writes, each followed by fdatasync (fio, same file system)"
    fio --name=sync --directory="$DIR" --rw=write --bs=4k --size=64m --fdatasync=1 \
        --runtime=5 --time_based --ioengine=sync --output-format=terse 2>/dev/null |
        awk -F';' '{printf "fdatasync/s: %.0f (4 KiB write + fdatasync, one at a time)\n", $49}'
    rm -f "$DIR"/sync.*
    OUT="$DIR/results"
    : >"$OUT"
    for rep in $(seq "${REPS:-3}"); do
        for engine in varve rocksstore; do
            bin="$SERVER"
            [ "$engine" = rocksstore ] && bin="$PEER_BIN"
            start "$bin" 21100 "$engine-$rep"
            line=$("$CLIENT" --nodes "$NODES" bench --clients "${CLIENTS:-16}" \
                --seconds "${SECONDS_PER_RUN:-15}" --value-size "${VALUE_SIZE:-100}" --prefix "b$rep")
            if [ "$engine" = varve ]; then
                # How many batches (appends, applies, votes) each fdatasync served.
                for i in 1 2 3; do
                    "$CLIENT" --nodes "$NODES" storage-stats --node "$i" | python3 -c \
                        "import json,sys; s=json.load(sys.stdin); print(f'  node $i: {s[\"user_writes\"]} batches, {s[\"wal_syncs\"]} fdatasyncs')"
                done
            fi
            stop
            echo "$engine rep $rep: $line"
            echo "$engine $line" >>"$OUT"
        done
    done
    python3 - "$OUT" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    engine = line.split()[0]
    w = float(re.search(r"([0-9.]+) writes/s", line).group(1))
    p99 = int(re.search(r"p99 ([0-9]+) us", line).group(1))
    rows.setdefault(engine, []).append((w, p99))
med = {e: (statistics.median(w for w, _ in r), statistics.median(p for _, p in r)) for e, r in rows.items()}
for e, (w, p) in med.items():
    print(f"{e:10s} median {w:9.0f} writes/s, p99 {p/1000:7.1f} ms ({len(rows[e])} runs)")
if "varve" in med and "rocksstore" in med:
    print(f"varve / rocksstore: writes/s {med['varve'][0] / med['rocksstore'][0]:.2f}x, "
          f"p99 {med['varve'][1] / med['rocksstore'][1]:.2f}x")
PY
    ;;
*)
    echo "usage: $0 fault|bench|demo" >&2
    exit 2
    ;;
esac
