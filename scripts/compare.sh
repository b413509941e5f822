#!/usr/bin/env bash
# compare.sh — the same db_bench workloads on varve, RocksDB (and fjall, and
# Debian's db_bench when installed), side by side, on this machine, now.
#
#   scripts/compare.sh [extra varve-bench/db_bench flags...]
#   NUM=200000 REPS=3 scripts/compare.sh --value_size=400
#   BENCHMARKS=fillrandom,readrandom ENGINES=varve,rocksdb scripts/compare.sh
#
# Environment:
#   NUM         keys (--num), default 200000
#   REPS        repetitions, default 3; the table shows medians
#   BENCHMARKS  workload list, default fillseq,fillrandom,overwrite,readrandom,
#               multireadrandom,readseq,readreverse,seekrandom
#   ENGINES     default: varve,rocksdb,fjall (those the build has)
#   DB_BENCH    1 (default) to add Debian's db_bench (package rocksdb-tools,
#               RocksDB 7.8.3) as a column when installable; 0 to skip
#   DB_DIR      where databases live (default ${TMPDIR:-/tmp}); same
#               filesystem as scripts/disk-limits.sh should measure
#   OUT         where raw outputs go (default a new dir under DB_DIR)
#   CARGO_TARGET_DIR  as usual
#
# Every engine gets identical flags: --num, --benchmarks, --seed=<rep>,
# --compression_type=none, --histogram=1 (per-op timing for all, db_bench
# included), plus yours. Engines are interleaved within each repetition so
# machine noise hits all of them alike. Builds varve-bench in release mode with
# --features rocksdb,fjall (RocksDB's bundled source needs libclang-dev; this
# script installs it with apt-get when missing; the first build takes ~15 min).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NUM="${NUM:-200000}"
REPS="${REPS:-3}"
BENCHMARKS="${BENCHMARKS:-fillseq,fillrandom,overwrite,readrandom,multireadrandom,readseq,readreverse,seekrandom}"
ENGINES="${ENGINES:-varve,rocksdb,fjall}"
DB_BENCH="${DB_BENCH:-1}"
DB_DIR="${DB_DIR:-${TMPDIR:-/tmp}}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
EXTRA=("$@")

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
apt_install() {
    $SUDO apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >&2
}

# librocksdb-sys runs bindgen, which needs libclang.
if ! ldconfig -p 2>/dev/null | grep -q 'libclang[-.0-9]*\.so' || ! dpkg -s libclang-dev >/dev/null 2>&1; then
    echo "compare: installing libclang-dev and clang (bindgen for librocksdb-sys)" >&2
    apt_install libclang-dev clang || echo "compare: could not install libclang-dev; the rocksdb build may fail" >&2
fi

echo "compare: building varve-bench (release, --features rocksdb,fjall)" >&2
(cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -p varve-bench --features rocksdb,fjall >&2)
BIN="$TARGET/release/varve-bench"

HAVE_DB_BENCH=0
if [ "$DB_BENCH" = 1 ]; then
    if ! command -v db_bench >/dev/null 2>&1; then
        echo "compare: installing rocksdb-tools for db_bench" >&2
        apt_install rocksdb-tools || true
    fi
    command -v db_bench >/dev/null 2>&1 && HAVE_DB_BENCH=1
    [ "$HAVE_DB_BENCH" = 1 ] || echo "compare: db_bench not available; no db_bench column" >&2
fi

mkdir -p "$DB_DIR"
OUT="${OUT:-$(mktemp -d "$DB_DIR/compare.XXXXXX")}"
mkdir -p "$OUT"
echo "compare: raw outputs in $OUT" >&2

# db_bench does not know our workloads or flags.
DBB_BENCHMARKS="$(echo "$BENCHMARKS" | tr ',' '\n' | grep -v -x -e count -e contest -e contest_inprocess | paste -sd, -)"
DBB_EXTRA=()
for a in "${EXTRA[@]+"${EXTRA[@]}"}"; do
    case "$a" in
        --engine=*|-engine=*|--json=*|-json=*|--scan_threads=*|-scan_threads=*) ;;
        *) DBB_EXTRA+=("$a") ;;
    esac
done

COMMON=(--num="$NUM" --compression_type=none --histogram=1)
echo "compare: flags: --benchmarks=$BENCHMARKS ${COMMON[*]} --seed=<rep> ${EXTRA[*]+"${EXTRA[*]}"}" >&2

for rep in $(seq 1 "$REPS"); do
    for e in $(echo "$ENGINES" | tr ',' ' '); do
        echo "compare: rep $rep/$REPS engine $e" >&2
        rm -rf "$DB_DIR/compare-db-$e"
        if ! "$BIN" --engine="$e" --benchmarks="$BENCHMARKS" "${COMMON[@]}" --seed="$rep" \
            --db="$DB_DIR/compare-db-$e" --json="$OUT/$e.jsonl" "${EXTRA[@]+"${EXTRA[@]}"}" \
            >"$OUT/$e.$rep.out" 2>"$OUT/$e.$rep.err"; then
            echo "compare: $e failed (rep $rep): $(tail -1 "$OUT/$e.$rep.err")" >&2
        fi
        rm -rf "$DB_DIR/compare-db-$e"
    done
    if [ "$HAVE_DB_BENCH" = 1 ] && [ -n "$DBB_BENCHMARKS" ]; then
        echo "compare: rep $rep/$REPS db_bench" >&2
        rm -rf "$DB_DIR/compare-db-dbbench"
        db_bench --benchmarks="$DBB_BENCHMARKS" "${COMMON[@]}" --seed="$rep" \
            --db="$DB_DIR/compare-db-dbbench" "${DBB_EXTRA[@]+"${DBB_EXTRA[@]}"}" \
            >"$OUT/db_bench.$rep.out" 2>"$OUT/db_bench.$rep.err" \
            || echo "compare: db_bench failed (rep $rep)" >&2
        rm -rf "$DB_DIR/compare-db-dbbench"
    fi
done

# Median ops/sec per workload and engine, from the db_bench-format lines
# every column prints (one parser for all: the format is the contract).
python3 - "$OUT" "$BENCHMARKS" "$ENGINES" "$HAVE_DB_BENCH" "$NUM" "$REPS" <<'PY'
import glob, os, re, statistics, sys
out, benches, engines, have_dbb, num, reps = sys.argv[1:]
benches = benches.split(",")
cols = engines.split(",") + (["db_bench"] if have_dbb == "1" else [])
line = re.compile(r"^(\S+)\s*:\s+([\d.]+) micros/op (\d+) ops/sec ")
data = {}  # dicts keep insertion order: first run's line order
for c in cols:
    for path in sorted(glob.glob(os.path.join(out, f"{c}.*.out"))):
        seen = {}
        for l in open(path, errors="replace"):
            m = line.match(l)
            if not m:
                continue
            name = m.group(1)
            k = seen.get(name, 0)
            seen[name] = k + 1
            key = name if k == 0 else f"{name}#{k + 1}"
            data.setdefault((c, key), []).append(int(m.group(3)))
names = []  # in the order the workloads printed them
for (c, key) in data:
    if key not in names:
        names.append(key)
def med(c, n):
    v = data.get((c, n))
    return statistics.median(v) if v else None
label = {"db_bench": "db_bench 7.8.3"}
hdr = ["workload"] + [f"{label.get(c, c)} ops/s" for c in cols]
ratio = "varve" in cols and "rocksdb" in cols
if ratio:
    hdr.append("varve/rocksdb")
print(f"\nmedian of {reps} runs, num={num}, ops/sec (higher is better)\n")
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" + "---:|" * (len(hdr) - 1))
for n in names:
    row = [n]
    for c in cols:
        m = med(c, n)
        row.append(f"{m:,.0f}" if m is not None else "—")
    if ratio:
        a, b = med("varve", n), med("rocksdb", n)
        row.append(f"{a / b:.2f}" if a and b else "—")
    print("| " + " | ".join(row) + " |")
PY
