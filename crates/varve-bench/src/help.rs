//! The `--help` text that follows the flags: the workload list of
//! `flags.rs` followed by the YCSB workloads and the `chart` subcommand.
//! A leaf: it imports nothing of the crate, so `flags.rs` can sit on it
//! without a loop through the workloads.
//!
//! Pure function and constants, no state.

/// `base` (the flags' after-help), then YCSB's and `chart`'s sections.
pub fn after_help(base: &str) -> String {
    format!("{base}\n\n{}\n\n{}", YCSB, CHART)
}

/// `--help` text for the YCSB workloads.
pub const YCSB: &str = "\
YCSB core workloads (ours; as YCSB's CoreWorkload, workloads/workload[a-f]):
  ycsb_load  insert --num records (fresh DB; skipped with --use_existing_db)
  ycsb_a     50% read, 50% update             zipfian (scrambled, 0.99)
  ycsb_b     95% read, 5% update              zipfian
  ycsb_c     100% read                        zipfian
  ycsb_d     95% read, 5% insert              latest (skewed to the newest)
  ycsb_e     95% scan (1..=100 records, uniform), 5% insert   zipfian
  ycsb_f     50% read, 50% read-modify-write  zipfian
  Keys are `user` + the decimal FNV-64 hash of the record number (~23 B;
  --key_size is not used); values are 1000 B (10 fields x 100 B,
  concatenated) unless --value_size is given. --ycsb_operations operations
  in total (YCSB's operationcount; default --num), split over --threads;
  --duration runs for that many seconds instead. A read copies the whole
  value out (get_with); an update writes a whole new value without reading
  it (YCSB's writeallfields=true); an insert takes the next record number
  from a counter shared by the threads (readers choose only acknowledged
  inserts); a scan opens an iterator, seeks to the record and reads that
  many records; a read-modify-write reads, then writes a whole value.
  Each workload prints one line for all its operations and one per
  operation type (ycsb_a.read, ycsb_a.update, ...) with p50/p95/p99/p99.9/max
  latency, in --json too. Run ycsb_load first (or --use_existing_db on a
  loaded database with the same --num); inserts of one workload extend the
  key space of the next in the same run.
  Example: varve-bench --benchmarks=ycsb_load,ycsb_a,ycsb_b,ycsb_c,ycsb_f,ycsb_d,ycsb_e \\
             --num=100000 --ycsb_operations=100000 --threads=4 --json=ycsb.jsonl";

/// `--help` text for the chart subcommand.
pub const CHART: &str = "\
Charts (ours): varve-bench chart [--out=DIR] [--series=engine|file] FILE.jsonl...
  reads JSON record files written with --json (one or more runs, any
  engines) and writes SVG charts into DIR (default ./charts):
  throughput.svg (ops/s, grouped bars: one group per workload, one bar per
  engine) and latency-<workload>.svg (p50/p95/p99/p99.9/max per operation
  type, one line per engine, log scale). A later record of the same engine
  and workload replaces an earlier one. `varve-bench chart --help` for more.
  Example:
    varve-bench --engine=varve --benchmarks=ycsb_load,ycsb_a,ycsb_e --num=100000 --json=v.jsonl
    varve-bench --engine=memory --benchmarks=ycsb_load,ycsb_a,ycsb_e --num=100000 --json=m.jsonl
    varve-bench chart --out=charts v.jsonl m.jsonl";
