//! YCSB's core workloads (`site.ycsb.workloads.CoreWorkload`): the load
//! phase `ycsb_load` and workloads `ycsb_a` … `ycsb_f`.
//!
//! Owns the mapping from flags to YCSB's properties (`recordcount` =
//! `--num`, `operationcount` = `--ycsb_operations`, total over all
//! threads, default `--num`; value size 1000 = 10 fields × 100 B unless
//! `--value_size` is given), the record count carried from one YCSB
//! workload to the next in a run ([`YcsbState`]: a load sets it, inserts
//! grow it), and the outcomes: one result per workload (`ycsb_a`, all
//! operations) and one per operation type (`ycsb_a.read`, `ycsb_a.update`,
//! ...), each with p50/p95/p99/p99.9/max latency and a [`Info`] for its
//! JSON record. [`YcsbState`] is shared by the run's workloads, one at a
//! time (atomics, no lock).
//!
//! Departures from YCSB, all named in `--help`: a record is one value (the
//! fields concatenated, no field names); an update writes a whole new
//! value without reading (YCSB's `writeallfields=true`; YCSB's default
//! updates one field, and its RocksDB binding reads the record first);
//! values come from db_bench's generator (`--compression_ratio`), not
//! YCSB's random printable bytes; random numbers are SplitMix64.

pub mod driver;
pub mod generators;
pub mod keys;
pub mod spec;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, ensure};
use serde::Serialize;

use super::{Ctx, Outcome};
use crate::flags::Flags;
use driver::{Run, TxnParams};
use generators::ZIPFIAN_CONSTANT;
use spec::{DEFAULT_VALUE_SIZE, Distribution, FIELD_COUNT, MAX_SCAN_LENGTH, Spec};

/// Every YCSB workload name, for the list of known benchmarks.
pub const NAMES: &[&str] = &[
    "ycsb_load",
    "ycsb_a",
    "ycsb_b",
    "ycsb_c",
    "ycsb_d",
    "ycsb_e",
    "ycsb_f",
];

/// What the run's YCSB workloads share: the record count.
#[derive(Debug, Default)]
pub struct YcsbState {
    /// Records in the database (key numbers `0..records`); 0 until a
    /// load in this run, meaning `--num`.
    records: AtomicU64,
}

impl YcsbState {
    /// Records in the database: what this run loaded and inserted, else `--num`.
    pub fn records(&self, flags: &Flags) -> u64 {
        match self.records.load(Ordering::Acquire) {
            0 => flags.num(),
            n => n,
        }
    }

    fn set(&self, n: u64) {
        self.records.store(n, Ordering::Release);
    }
}

/// What a YCSB result is, for its JSON record (`"ycsb": {...}`).
#[derive(Debug, Clone, Serialize)]
pub struct Info {
    /// YCSB's workload letter, or `load`.
    pub workload: &'static str,
    /// `all`, or the operation type: read, update, insert, scan, rmw.
    pub op: &'static str,
    /// Operation proportions.
    pub mix: BTreeMap<&'static str, f64>,
    /// zipfian, latest, or (load) sequential.
    pub request_distribution: &'static str,
    /// The zipfian constant of the request distribution.
    pub zipfian_constant: f64,
    /// Records when the workload started (`recordcount`).
    pub record_count: u64,
    /// Records when it ended (after its inserts).
    pub records_after: u64,
    /// Operations asked for in total (`operationcount`; with `--duration`
    /// the time decides).
    pub operation_count: u64,
    /// `--duration` in seconds (0: the count decides).
    pub duration_secs: u64,
    /// Value bytes.
    pub value_size: usize,
    /// Fields per record (concatenated into the value).
    pub field_count: usize,
    /// Client threads.
    pub threads: usize,
    /// Longest scan (`maxscanlength`), for scanning workloads.
    pub max_scan_length: Option<u64>,
    /// Scan length distribution, for scanning workloads.
    pub scan_length_distribution: Option<&'static str>,
    /// What an update writes.
    pub update: &'static str,
}

/// The value size: `--value_size` when given, else YCSB's 1000 bytes.
pub fn value_size(flags: &Flags) -> usize {
    let given = flags
        .argv
        .iter()
        .any(|a| a == "--value_size" || a.starts_with("--value_size="));
    if given {
        flags.value_size
    } else {
        DEFAULT_VALUE_SIZE
    }
}

/// `operationcount`: `--ycsb_operations`, or `--num` when negative.
pub fn operations(flags: &Flags) -> u64 {
    if flags.ycsb_operations < 0 {
        flags.num()
    } else {
        flags.ycsb_operations as u64
    }
}

/// Runs YCSB workload `name`.
pub fn run(name: &str, ctx: &Ctx<'_>) -> Result<Vec<Outcome>> {
    let f = ctx.flags;
    let Some(spec) = spec::spec(name) else {
        anyhow::bail!(
            "unknown YCSB workload `{name}` (known: {})",
            NAMES.join(", ")
        );
    };
    let vs = value_size(f);
    let (records, operations, run) = if spec.distribution == Distribution::Sequential {
        let records = f.num();
        let run = driver::load(ctx, records, vs)?;
        (0, records, run)
    } else {
        let records = ctx.ycsb.records(f);
        ensure!(
            records >= 1,
            "{name} needs at least one record (--num, or ycsb_load first)"
        );
        let p = TxnParams {
            records,
            operations: operations(f),
            value_size: vs,
        };
        let run = driver::transactions(ctx, spec, &p)?;
        (records, p.operations, run)
    };
    ctx.ycsb.set(run.records_after);
    Ok(outcomes(ctx, spec, records, operations, vs, run))
}

/// `p50 … max` of a histogram, in microseconds.
fn latency_text(st: &crate::stats::Stats) -> Option<String> {
    let h = st.hist.as_ref()?;
    let us = |ns: u64| ns as f64 / 1000.0;
    Some(format!(
        "p50 {:.1} p95 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} us",
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.95)),
        us(h.value_at_quantile(0.99)),
        us(h.value_at_quantile(0.999)),
        us(h.max()),
    ))
}

fn outcomes(
    ctx: &Ctx<'_>,
    spec: &Spec,
    records: u64,
    operations: u64,
    value_size: usize,
    run: Run,
) -> Vec<Outcome> {
    let f = ctx.flags;
    let threads = f.threads.max(1);
    let info = |op: &'static str| Info {
        workload: spec.workload,
        op,
        mix: spec.mix.iter().map(|(w, o)| (o.label(), *w)).collect(),
        request_distribution: spec.distribution.label(),
        zipfian_constant: ZIPFIAN_CONSTANT,
        record_count: records,
        records_after: run.records_after,
        operation_count: operations,
        duration_secs: if spec.distribution == Distribution::Sequential {
            0
        } else {
            f.duration
        },
        value_size,
        field_count: FIELD_COUNT,
        threads,
        max_scan_length: spec.scans().then_some(MAX_SCAN_LENGTH),
        scan_length_distribution: spec.scans().then_some("uniform"),
        update: "whole value, written without reading (writeallfields=true)",
    };
    let mut total = run.total;
    let dist = match spec.distribution {
        Distribution::Sequential => "hashed inserts".to_string(),
        d => format!("{} over {records} records", d.label()),
    };
    total.add_message(&format!(
        "({}; {dist}; {value_size} B values; {threads} threads)",
        spec.mix_text()
    ));
    if let Some(l) = latency_text(&total) {
        total.add_message(&l);
    }
    let mut all = Outcome::new(spec.name, total, "op", threads);
    all.ycsb = Some(info("all"));
    let mut out = vec![all];
    for (op, mut s) in run.per_op {
        if let Some(l) = latency_text(&s.stats) {
            s.stats.add_message(&l);
        }
        let name = format!("{}.{}", spec.name, op.label());
        let mut o = Outcome::new(&name, s.stats, op.label(), threads);
        o.ycsb = Some(info(op.label()));
        out.push(o);
    }
    out
}
