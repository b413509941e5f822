#!/usr/bin/env bash
# compare.sh — the same varve-bench workload on several engines, one after
# another, every one inside the same cgroup v1 memory limit; medians of REPS
# runs, ratio to varve, peak RSS and cgroup peak. Run `scripts/compare.sh
# --help` for the environment variables.
#
# Contract: runs are sequential (never two at once), each in a fresh
# database directory after `sync; echo 3 > /proc/sys/vm/drop_caches`, each
# benchmark process moved into the memory cgroup
# /sys/fs/cgroup/memory/varve-compare-$$ (page cache counts against the
# limit; the folder is removed on exit, whatever the exit). Every
# varve-bench JSON record goes to $OUT, annotated with the repetition, the
# run's exit status and its cgroup peak (and a `compare_run` id; the table
# reads only this invocation's records). Needs root (cgroup, drop_caches)
# and python3. Exits non-zero if the cgroup cannot be made or a run fails.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/compare.sh [varve-bench flags...]

Runs the same varve-bench workload (the flags given, e.g.
--benchmarks=fillrandom,readrandom --num=100000) for each engine in ENGINES,
one after another, each inside one cgroup v1 memory limit, REPS times each on
a freshly loaded database (the directory is removed before every run, so the
benchmark list should start with a fill), dropping the page cache before
every run. Prints a table: engine x workload median ops/s over the reps,
ratio to varve, peak RSS (varve-bench's VmHWM for that workload) and the
cgroup's peak usage over the whole run (page cache included).

Environment:
  ENGINES      engines to run, in order, spaces or commas
               (default "varve rocksdb fjall redb lmdb")
  REPS         repetitions per engine (default 3); the table shows medians
  MEM_LIMIT    the cgroup's memory.limit_in_bytes, bytes or with an IEC
               suffix (default 2G); the same limit holds for every engine
  OUT          the JSON file every record is appended to (default
               ${TMPDIR:-/tmp}/varve-compare-<time>.jsonl)
  DB_DIR       where the databases go (default ${TMPDIR:-/tmp})
  BENCH        the varve-bench binary; not set: built with
               cargo build --release -p varve-bench --features "$FEATURES"
               into CARGO_TARGET_DIR (default ./target)
  FEATURES     cargo features for that build (default: the engines of
               ENGINES other than varve and memory, e.g. "rocksdb,fjall,redb,lmdb";
               rocksdb builds RocksDB from source: ~20 minutes on 2 cores)
  VARVE_FLAGS, ROCKSDB_FLAGS, FJALL_FLAGS, REDB_FLAGS, LMDB_FLAGS
               extra flags for one engine, placed after the shared flags so
               they override them (varve-bench's parser keeps the last
               occurrence of a flag, as db_bench/gflags does); the LSM
               engines' default is --tuned (the configuration their own
               documentation recommends), set "" for db_bench's defaults
  DISK         1 (default): scripts/disk-limits.sh over DB_DIR before and
               after the engines, so ratios can be read against the disk's
               limits of the same run; 0 to skip
  DROP_CACHES  1 (default) to drop the page cache before every run; 0 to skip
  RUN_TIMEOUT  seconds one run (one engine, one repetition) may take; a run
               that takes longer gets SIGTERM (SIGKILL 30 s later) and counts
               as failed (exit 124 in the records), with the records of the
               workloads it finished kept (default: no limit)

Every run gets, in this order: --seed=<rep> (the same keys for every
engine in a repetition), the shared flags, the engine's own flags, then
--engine, --db and --json (set by this script).

Example:
  ENGINES="varve redb lmdb" REPS=1 scripts/compare.sh \
      --benchmarks=fillrandom,readrandom --num=20000
EOF
}

case "${1:-}" in
    -h | --help) usage; exit 0 ;;
esac

die() { echo "compare: $*" >&2; exit 1; }

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ENGINES="$(echo "${ENGINES:-varve rocksdb fjall redb lmdb}" | tr ',' ' ')"
REPS="${REPS:-3}"
MEM_LIMIT="${MEM_LIMIT:-2G}"
DB_DIR="${DB_DIR:-${TMPDIR:-/tmp}}"
OUT="${OUT:-${TMPDIR:-/tmp}/varve-compare-$(date -u +%Y%m%dT%H%M%SZ).jsonl}"
DROP_CACHES="${DROP_CACHES:-1}"
DISK="${DISK:-1}"
# Each engine as its own documentation configures it (varve-bench --tuned;
# the report prints every option it ran with). Set to "" for db_bench's
# defaults.
VARVE_FLAGS="${VARVE_FLAGS---tuned}"
ROCKSDB_FLAGS="${ROCKSDB_FLAGS---tuned}"
FJALL_FLAGS="${FJALL_FLAGS---tuned}"
SHARED=("$@")
RUN_ID="$(date -u +%Y%m%dT%H%M%SZ)-$$"

[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS=$REPS is not a positive number"
[ -z "${RUN_TIMEOUT:-}" ] || [[ "$RUN_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "RUN_TIMEOUT=$RUN_TIMEOUT is not a number of seconds"
[ -n "$ENGINES" ] || die "ENGINES is empty"
command -v python3 >/dev/null 2>&1 || die "needs python3 (the summary)"
[ "$(id -u)" -eq 0 ] || die "needs root (the memory cgroup and /proc/sys/vm/drop_caches)"
LIMIT_BYTES="$(numfmt --from=iec "$MEM_LIMIT" 2>/dev/null)" || die "MEM_LIMIT=$MEM_LIMIT is not a size"

first="$(printf '%s\n' "${SHARED[@]+"${SHARED[@]}"}" | sed -n 's/^--*benchmarks=//p' | tail -1 | cut -d, -f1)"
case "$first" in
    fill* | ycsb_load | "") ;;
    *) echo "compare: warning: the first benchmark is $first, not a fill: every run starts from an empty database" >&2 ;;
esac

# The binary.
if [ -z "${BENCH:-}" ]; then
    if [ -z "${FEATURES+x}" ]; then
        FEATURES="$(for e in $ENGINES; do case "$e" in varve | memory) ;; *) echo "$e" ;; esac; done | paste -sd, -)"
    fi
    TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
    echo "compare: building varve-bench (release, --features \"$FEATURES\") into $TARGET" >&2
    (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -p varve-bench --features "$FEATURES" >&2) \
        || die "cargo build --release -p varve-bench --features \"$FEATURES\" failed"
    BENCH="$TARGET/release/varve-bench"
fi
[ -x "$BENCH" ] || die "BENCH=$BENCH is not an executable"

# The memory cgroup (v1).
MEMCG_ROOT=/sys/fs/cgroup/memory
[ -d "$MEMCG_ROOT" ] || die "no cgroup v1 memory controller: $MEMCG_ROOT does not exist"
CG="$MEMCG_ROOT/varve-compare-$$"
BENCH_PID=""
WORK=""
cleanup() {
    if [ -n "$BENCH_PID" ] && kill -0 "$BENCH_PID" 2>/dev/null; then
        kill "$BENCH_PID" 2>/dev/null || true
        wait "$BENCH_PID" 2>/dev/null || true
    fi
    [ -z "$WORK" ] || rm -rf "$WORK"
    if [ -d "$CG" ]; then
        rmdir "$CG" 2>/dev/null || echo "compare: could not remove cgroup $CG (still has tasks?)" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$CG" 2>/dev/null || die "cannot create the cgroup folder $CG"
echo "$LIMIT_BYTES" 2>/dev/null >"$CG/memory.limit_in_bytes" || die "cannot write $CG/memory.limit_in_bytes"
# No swap either, where the kernel accounts it.
if [ -f "$CG/memory.memsw.limit_in_bytes" ]; then
    echo "$LIMIT_BYTES" >"$CG/memory.memsw.limit_in_bytes" || die "cannot write $CG/memory.memsw.limit_in_bytes"
fi
[ -w "$CG/cgroup.procs" ] || die "cannot write $CG/cgroup.procs"
oom_kills() { awk '$1 == "oom_kill" {print $2; f=1} END {if (!f) print 0}' "$CG/memory.oom_control"; }

mkdir -p "$DB_DIR" "$(dirname "$OUT")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/varve-compare.XXXXXX")"
: >>"$OUT" || die "cannot write $OUT"
echo "compare: engines: $ENGINES; reps $REPS; cgroup $CG limited to $LIMIT_BYTES bytes; records in $OUT" >&2
echo "compare: shared flags: ${SHARED[*]+"${SHARED[*]}"}" >&2

disk_limits() { # LABEL
    if [ "$DISK" = 1 ]; then
        echo "## disk limits ($1), fio over $DB_DIR"
        "$ROOT/scripts/disk-limits.sh" "$DB_DIR" || echo "compare: disk-limits.sh failed" >&2
    fi
}
disk_limits "before the engines"

failed=0
for e in $ENGINES; do
    var="$(echo "$e" | tr '[:lower:]' '[:upper:]')_FLAGS"
    read -r -a OWN <<<"${!var:-}"
    for rep in $(seq 1 "$REPS"); do
        db="$DB_DIR/varve-compare-db-$$"
        rm -rf "$db"
        sync
        if [ "$DROP_CACHES" = 1 ]; then
            echo 3 >/proc/sys/vm/drop_caches || die "cannot write /proc/sys/vm/drop_caches"
        fi
        echo 0 >"$CG/memory.max_usage_in_bytes" || die "cannot reset $CG/memory.max_usage_in_bytes"
        oom0="$(oom_kills)"
        json="$WORK/$e.$rep.jsonl"
        args=(--seed="$rep" "${SHARED[@]+"${SHARED[@]}"}" "${OWN[@]+"${OWN[@]}"}" --engine="$e" --db="$db" --json="$json")
        echo "compare: $e rep $rep/$REPS: $BENCH ${args[*]}" >&2
        status=0
        limit=()
        [ -n "${RUN_TIMEOUT:-}" ] && limit=(timeout --kill-after=30 "$RUN_TIMEOUT")
        (
            echo "$BASHPID" >"$CG/cgroup.procs" || exit 125
            exec "${limit[@]+"${limit[@]}"}" "$BENCH" "${args[@]}"
        ) >"$WORK/$e.$rep.out" 2>"$WORK/$e.$rep.err" &
        BENCH_PID=$!
        wait "$BENCH_PID" || status=$?
        BENCH_PID=""
        peak="$(cat "$CG/memory.max_usage_in_bytes")"
        ooms=$(($(oom_kills) - oom0))
        rm -rf "$db"
        if [ -n "${RUN_TIMEOUT:-}" ] && { [ "$status" -eq 124 ] || { [ "$status" -eq 137 ] && [ "$ooms" -eq 0 ]; }; }; then
            echo "compare: $e rep $rep: stopped after RUN_TIMEOUT=$RUN_TIMEOUT s" >&2
            status=124
        fi
        if [ "$status" -ne 0 ]; then
            failed=1
            echo "compare: $e rep $rep failed (exit $status, OOM kills $ooms): $(tail -1 "$WORK/$e.$rep.err")" >&2
        fi
        if [ "$rep" = 1 ]; then # the engine's options and what it ignores, once
            grep -E '^Engine:' "$WORK/$e.$rep.out" | sed "s/^/compare: $e: /" >&2 || true
            grep -E '^varve-bench: [a-z]+: ignored:' "$WORK/$e.$rep.err" | sed "s/^varve-bench: /compare: /" >&2 || true
        fi
        grep -E ' ops/sec' "$WORK/$e.$rep.out" | sed "s/^/compare: $e rep $rep: /" >&2 || true
        echo "compare: $e rep $rep: cgroup peak $peak bytes" >&2
        python3 - "$json" "$OUT" "$e" "$rep" "$status" "$peak" "$LIMIT_BYTES" "$ooms" "$RUN_ID" <<'PY'
import json, os, sys
src, out, engine, rep, status, peak, limit, ooms, run = sys.argv[1:]
extra = {"compare_run": run, "compare_rep": int(rep), "exit_status": int(status),
         "cgroup_peak_bytes": int(peak), "cgroup_limit_bytes": int(limit),
         "cgroup_oom_kills": int(ooms)}
recs = []
if os.path.exists(src):
    with open(src) as f:
        recs = [json.loads(l) for l in f if l.strip()]
seen = {}
with open(out, "a") as f:
    for r in recs:
        k = seen.get(r["name"], 0) + 1
        seen[r["name"]] = k
        r.update(extra, compare_occurrence=k)
        f.write(json.dumps(r) + "\n")
    if not recs:  # a run that failed before any workload finished
        f.write(json.dumps(dict(extra, name=None, engine=engine)) + "\n")
PY
    done
done

disk_limits "after the engines"

python3 - "$OUT" "$ENGINES" "$REPS" "$LIMIT_BYTES" "$RUN_ID" <<'PY'
import json, statistics, sys
out, engines, reps, limit, run = sys.argv[1:]
engines = engines.split()
ops, rss, cg, failed, p99 = {}, {}, {}, {}, {}
names = []
with open(out) as f:
    for line in f:
        r = json.loads(line)
        if r.get("compare_run") != run or r.get("engine") not in engines:
            continue
        e = r["engine"]
        cg.setdefault(e, {})[r["compare_rep"]] = r["cgroup_peak_bytes"]
        if r["exit_status"] != 0:
            failed.setdefault(e, set()).add(r["compare_rep"])
        if r.get("name") is None:
            continue
        n = r["name"] if r["compare_occurrence"] == 1 else f'{r["name"]}#{r["compare_occurrence"]}'
        if n not in names:
            names.append(n)
        ops.setdefault((e, n), []).append(r["ops_per_sec"])
        if r.get("p99_us") is not None:
            p99.setdefault((e, n), []).append(r["p99_us"])
        if r.get("peak_rss_bytes") is not None:
            rss.setdefault((e, n), []).append(r["peak_rss_bytes"])
med = lambda v: statistics.median(v) if v else None
mib = lambda b: f"{b / 2**20:,.0f}" if b is not None else "—"
print(f"\nmedian of {reps} runs per engine; ops/sec (higher is better); memory in MiB; "
      f"cgroup limit {int(limit) / 2**20:,.0f} MiB (page cache counted); all records in {out}\n")
print("| engine | workload | ops/s | vs varve | p99 us | peak RSS | cgroup peak | failed runs |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for e in engines:
    rows = [n for n in names if (e, n) in ops] or ["—"]
    for n in rows:
        m = med(ops.get((e, n), []))
        v = med(ops.get(("varve", n), []))
        ratio = f"{m / v:.2f}" if m is not None and v else "—"
        q = med(p99.get((e, n), []))
        print(f"| {e} | {n} | {f'{m:,.0f}' if m is not None else '—'} | {ratio} | "
              f"{f'{q:,.0f}' if q is not None else '—'} | "
              f"{mib(med(rss.get((e, n), [])))} | {mib(med(list(cg.get(e, {}).values())))} | "
              f"{len(failed.get(e, ()))} |")
print("\npeak RSS: varve-bench's VmHWM for that workload (reset per workload); "
      "cgroup peak: memory.max_usage_in_bytes over the whole run (every workload, page cache included).")
PY
exit "$failed"
