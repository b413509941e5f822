#!/usr/bin/env bash
# ab.sh OLD_BIN NEW_BIN [SECTION...] — A/B of two varve-bench builds on the
# same databases, interleaved (old, new, old, new, ...), REPS rounds each,
# printing every result line and then the median of each benchmark for each
# build and the new/old ratio. For "performance unchanged" checks of a change.
#
#   OLD_BIN=/path/varve-bench-old NEW_BIN=target/release/varve-bench \
#       REPS=5 DB_DIR=/tmp/ab scripts/ab.sh "$OLD_BIN" "$NEW_BIN" scan reads writes
#
# Sections (default: scan):
#   scan    count with 1 and 2 threads and readseq (hot, second pass) on a
#           compacted 10M x 100 B database; readseq and seekrandom
#           --seek_nexts=100 cold (direct reads, 8 MiB cache) on 1M x 4 KiB
#   reads   readrandom cold (direct reads, 8 MiB cache) and hot (1 GiB cache,
#           second pass), 1M x 100 B, bloom_bits=10
#   writes  fillrandom (1M x 100 B, then waitforcompaction), fresh each run
#   cpu     the CPU-bound lines, sized for MEASURE=instructions: fillseq and
#           fillrandom (300k x 100 B, fresh), and on a compacted 2M x 100 B
#           database readrandom (300k gets, 1 GiB cache), readseq, count
#           (1 and 2 threads) and seekrandom --seek_nexts=100 (20k seeks),
#           all hot, one pass, --seed=1
#
# MEASURE=instructions: each run goes under valgrind's cachegrind and its
# result is the process's user-space instruction count (lower is better)
# instead of ops/s. On a shared virtual machine one build's timed runs
# spread up to 1.6x and there are no hardware counters; the count of a
# run repeats within ~0.5% (background flushes and compactions start at
# slightly different points). It leaves out the kernel, the disk and cache
# misses: read it beside the timed pairs, not instead. REPS=1 is enough;
# `MEASURE=instructions REPS=1 scripts/ab.sh OLD NEW cpu` takes about two
# minutes on two cores (cachegrind runs a program 20-50x slower). Needs
# valgrind (apt-get install valgrind). multireadrandom is not measured so:
# its fibers switch stacks, which valgrind takes for stack overflows.
#
# NEW_FLAGS: flags given to NEW_BIN's runs only (e.g. NEW_FLAGS=
# "--enable_blob_files=true --min_blob_size=4096": small values with blob
# files on, against a build without them).
#
# The databases are built once with OLD_BIN and copied for NEW_BIN before
# either opens them again (a newer build may upgrade a manifest an older one
# cannot read), so both read the same table files. KEEP=1 keeps them.
set -euo pipefail
OLD="${1:?old varve-bench}"
NEW="${2:?new varve-bench}"
shift 2
SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(scan)
DB_DIR="${DB_DIR:-/tmp/varve-ab}"
REPS="${REPS:-5}"
MEASURE="${MEASURE:-time}"
case "$MEASURE" in
    time) ;;
    instructions)
        command -v valgrind >/dev/null || {
            echo "ab.sh: MEASURE=instructions needs valgrind (apt-get install valgrind)" >&2
            exit 2
        }
        ;;
    *)
        echo "ab.sh: MEASURE is time or instructions, not '$MEASURE'" >&2
        exit 2
        ;;
esac
OUT="$(mktemp)"
mkdir -p "$DB_DIR"

# run LABEL BIN FLAGS...: one run; prints "LABEL | name : ..." for the last
# pass of each benchmark (count,count and readseq,readseq: the warm pass),
# or with MEASURE=instructions "LABEL | instructions : N" for the process.
run() {
    local label="$1" bin="$2" extra=()
    shift 2
    [ "$bin" = "$NEW" ] && read -ra extra <<<"${NEW_FLAGS:-}"
    if [ "$MEASURE" = instructions ]; then
        local log n
        log="$(mktemp)"
        valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
            "$bin" --engine=varve --compression_type=none "$@" "${extra[@]}" >"$log" 2>&1 || true
        n="$(awk '/I +refs:/ { gsub(",", "", $NF); print $NF }' "$log")"
        if [ -z "$n" ]; then
            echo "ab.sh: $label: no instruction count; the run printed:" >&2
            cat "$log" >&2
            rm -f "$log"
            return
        fi
        rm -f "$log"
        echo "$label | instructions : $n" | tee -a "$OUT"
        return
    fi
    "$bin" --engine=varve --compression_type=none "$@" "${extra[@]}" 2>&1 \
        | grep -E '^[a-z]+ +:' \
        | awk '{n = $1; last[n] = $0; if (!(n in seen)) { seen[n] = 1; order[++k] = n } }
               END { for (i = 1; i <= k; i++) print last[order[i]] }' \
        | sed "s/^/$label | /" | tee -a "$OUT" || true
}

# prepare NAME FLAGS...: builds $DB_DIR/NAME-old with OLD_BIN if missing and
# copies it to NAME-new.
prepare() {
    local name="$1"
    shift
    if [ ! -f "$DB_DIR/$name-old/CURRENT" ]; then
        rm -rf "$DB_DIR/$name-old" "$DB_DIR/$name-new"
        "$OLD" --engine=varve --compression_type=none "$@" --db="$DB_DIR/$name-old" >/dev/null
    fi
    if [ ! -f "$DB_DIR/$name-new/CURRENT" ]; then
        cp -r "$DB_DIR/$name-old" "$DB_DIR/$name-new"
    fi
}

section_scan() {
    local ten=(--num=10000000 --key_size=16 --value_size=100)
    local big=(--num=1000000 --key_size=16 --value_size=4096)
    prepare c "${ten[@]}" --benchmarks=fillrandom,compact --seed=1
    prepare m "${big[@]}" --benchmarks=filluniquerandom,waitforcompaction --seed=1
    local cold=("${big[@]}" --use_existing_db=true --use_direct_reads=true --cache_size=8388608)
    for rep in $(seq "$REPS"); do
        for v in old new; do
            local bin="$OLD"
            [ "$v" = new ] && bin="$NEW"
            for t in 1 2; do
                run "count t=$t $v" "$bin" --benchmarks=count,count --use_existing_db=true \
                    "${ten[@]}" --scan_threads=$t --db="$DB_DIR/c-$v"
            done
            run "readseq-hot $v" "$bin" --benchmarks=readseq,readseq --use_existing_db=true \
                "${ten[@]}" --db="$DB_DIR/c-$v"
            run "readseq-cold $v" "$bin" --benchmarks=readseq "${cold[@]}" --db="$DB_DIR/m-$v"
            run "seekrandom100-cold $v" "$bin" --benchmarks=seekrandom --seek_nexts=100 \
                --reads=3000 "${cold[@]}" --db="$DB_DIR/m-$v" --seed="$rep"
        done
    done
}

section_reads() {
    local n=(--num=1000000 --value_size=100 --bloom_bits=10)
    prepare r "${n[@]}" --benchmarks=fillrandom,waitforcompaction --seed=1
    for rep in $(seq "$REPS"); do
        for v in old new; do
            local bin="$OLD"
            [ "$v" = new ] && bin="$NEW"
            run "readrandom-cold $v" "$bin" --benchmarks=readrandom --use_existing_db=true "${n[@]}" \
                --reads=100000 --use_direct_reads=true --cache_size=8388608 --db="$DB_DIR/r-$v" --seed="$rep"
            run "readrandom-hot $v" "$bin" --benchmarks=readrandom,readrandom --use_existing_db=true \
                "${n[@]}" --reads=500000 --cache_size=1073741824 --db="$DB_DIR/r-$v" --seed="$rep"
        done
    done
}

section_writes() {
    for rep in $(seq "$REPS"); do
        for v in old new; do
            local bin="$OLD"
            [ "$v" = new ] && bin="$NEW"
            rm -rf "$DB_DIR/w-$v"
            run "fillrandom+wait $v" "$bin" --benchmarks=fillrandom,waitforcompaction \
                --num=1000000 --value_size=100 --db="$DB_DIR/w-$v" --seed="$rep"
            rm -rf "$DB_DIR/w-$v"
        done
    done
}

section_cpu() {
    local two=(--num=2000000 --key_size=16 --value_size=100)
    prepare h "${two[@]}" --benchmarks=fillrandom,compact --seed=1
    local hot=(--use_existing_db=true "${two[@]}" --seed=1)
    for rep in $(seq "$REPS"); do
        for v in old new; do
            local bin="$OLD"
            [ "$v" = new ] && bin="$NEW"
            for w in fillseq fillrandom; do
                rm -rf "$DB_DIR/f-$v"
                run "$w $v" "$bin" --benchmarks="$w" --num=300000 --value_size=100 \
                    --db="$DB_DIR/f-$v" --seed=1
                rm -rf "$DB_DIR/f-$v"
            done
            run "readrandom-hot $v" "$bin" --benchmarks=readrandom "${hot[@]}" --reads=300000 \
                --cache_size=1073741824 --db="$DB_DIR/h-$v"
            run "readseq-hot $v" "$bin" --benchmarks=readseq "${hot[@]}" --db="$DB_DIR/h-$v"
            for t in 1 2; do
                run "count t=$t $v" "$bin" --benchmarks=count "${hot[@]}" --scan_threads=$t \
                    --db="$DB_DIR/h-$v"
            done
            run "seekrandom100-hot $v" "$bin" --benchmarks=seekrandom --seek_nexts=100 \
                --reads=20000 "${hot[@]}" --db="$DB_DIR/h-$v"
        done
    done
}

for s in "${SECTIONS[@]}"; do
    "section_$s"
done

# Medians: for each "label old|new | name", the median ops/s of the lines
# (run() keeps the last pass of a multi-pass run: the warm one).
python3 - "$OUT" <<'PY'
import re, statistics, sys, collections
# ops/s per run; for a one-operation step (waitforcompaction) its time in
# microseconds instead (lower is better), since its ops/s means nothing.
per_run = collections.defaultdict(list)
single = set()
for line in open(sys.argv[1]):
    c = re.match(r"(.*) (old|new) \| instructions : ([0-9]+)$", line.strip())
    if c:
        per_run[(c.group(1), "instructions", c.group(2))].append(float(c.group(3)))
        continue
    m = re.match(r"(.*) (old|new) \| (\w+) +: +([0-9.]+) micros/op ([0-9.]+) ops/sec.*? ([0-9]+) operations", line)
    if m:
        label, ver, name = m.group(1), m.group(2), m.group(3)
        if m.group(6) == "1":
            single.add(name)
            per_run[(label, name, ver)].append(float(m.group(4)))
        else:
            per_run[(label, name, ver)].append(float(m.group(5)))
print("\nmedians (ops/s, µs for one-operation steps, or instructions; the last pass of each run) and new/old:")
labels = sorted({(k[0], k[1]) for k in per_run})
for label, name in labels:
    o = per_run.get((label, name, "old"), [])
    n = per_run.get((label, name, "new"), [])
    if not o or not n:
        continue
    mo, mn = statistics.median(o), statistics.median(n)
    unit = "µs (lower is better)" if name in single else "ops/s"
    if name == "instructions":
        unit = "instructions (lower is better)"
    print(f"  {label:24} {name:18} old {mo:14,.0f}  new {mn:14,.0f}  new/old {mn / mo:6.3f}  {unit}  (n={len(o)}/{len(n)})")
PY
rm -f "$OUT"
if [ "${KEEP:-0}" != 1 ]; then
    rm -rf "$DB_DIR"
fi
