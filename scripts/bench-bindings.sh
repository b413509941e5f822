#!/usr/bin/env bash
# bench-bindings.sh — what the bindings cost: the same fill and hot-read
# loop (bindings/bench/overhead.*: NUM 16-byte keys, 100-byte values, a
# 256 MiB block cache) through Rust, through the C ABI, and through
# Python for varve, plyvel (LevelDB) and rocksdict (RocksDB), interleaved,
# REPS rounds, then the median ops/s of each and the ratios the bindings
# issue asks for (C / Rust, varve-python / plyvel, varve-python /
# rocksdict).
#
#   scripts/bench-bindings.sh                 (NUM=1000000 REPS=3)
#   NUM=200000 REPS=5 DB_DIR=/data scripts/bench-bindings.sh
#
# Environment: NUM, REPS, DB_DIR (default /work/bdb, else $TMPDIR), PYVENV
# (the virtualenv of scripts/test-python.sh, default target/pyvenv; plyvel
# and rocksdict are pip-installed into it). Builds the release library
# and the two native loops first. Prints one line per run:
#   engine phase ops/s
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NUM="${NUM:-1000000}"
REPS="${REPS:-3}"
DB_DIR="${DB_DIR:-/work/bdb}"
[ -d "$(dirname "$DB_DIR")" ] || DB_DIR="${TMPDIR:-/tmp}/varve-bench-bindings"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PYVENV="${PYVENV:-$ROOT/target/pyvenv}"
mkdir -p "$DB_DIR"
WORK="$(mktemp -d "$DB_DIR/bindings.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

echo "bench-bindings: building (release)" >&2
(cd "$ROOT" && cargo build -q --release -p varve-ffi --lib --example overhead)
cc -O2 -std=c11 -I"$ROOT/include" "$ROOT/bindings/bench/overhead.c" \
    "$TARGET/release/libvarve_ffi.a" -lpthread -ldl -lm -o "$WORK/overhead-c"
# Always a fresh build of the Python package (test-python.sh builds it,
# release, and runs its tests): an installed one may predate the code.
PYVENV="$PYVENV" bash "$ROOT/scripts/test-python.sh" -q >&2
"$PYVENV/bin/pip" install -q plyvel rocksdict >&2

PY="$PYVENV/bin/python $ROOT/bindings/bench/overhead.py"
declare -A CMD=(
    [rust]="$TARGET/release/examples/overhead $WORK/db"
    [c]="$WORK/overhead-c $WORK/db"
    [varve-python]="$PY varve $WORK/db"
    [plyvel]="$PY plyvel $WORK/db"
    [rocksdict]="$PY rocksdict $WORK/db"
)
ORDER=(rust c varve-python plyvel rocksdict)
RESULTS="$WORK/results"
: > "$RESULTS"
for rep in $(seq "$REPS"); do
    for e in "${ORDER[@]}"; do
        # shellcheck disable=SC2086
        out=$(${CMD[$e]} "$NUM") || { echo "bench-bindings: $e failed" >&2; exit 1; }
        while read -r _ phase rate; do
            echo "$e $phase $rate" | tee -a "$RESULTS"
        done <<< "$out"
        rm -rf "$WORK/db"
    done
done

python3 - "$RESULTS" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    e, phase, rate = line.split()
    runs.setdefault((e, phase), []).append(float(rate))
med = {k: statistics.median(v) for k, v in runs.items()}
print()
print("| loop | " + " | ".join(["rust", "c", "varve-python", "plyvel", "rocksdict"]) + " | C / Rust | varve-py / plyvel | varve-py / rocksdict |")
print("|---|" + "---:|" * 8)
for phase in ("fill", "read"):
    g = lambda e: med.get((e, phase), float("nan"))
    cells = " | ".join(f"{g(e):,.0f}" for e in ["rust", "c", "varve-python", "plyvel", "rocksdict"])
    print(f"| {phase} ops/s | {cells} | {g('c') / g('rust'):.2f} | "
          f"{g('varve-python') / g('plyvel'):.2f} | {g('varve-python') / g('rocksdict'):.2f} |")
EOF
