//! The YCSB client threads: the load phase and the transaction phase.
//!
//! [`load`] has `--threads` threads insert key numbers `0..records` taken
//! from one shared counter (YCSB's `keysequence`), each thread its share
//! of the count. [`transactions`] has each thread do its share of the
//! operation count (YCSB's `operationcount / threadcount`, the first
//! `operationcount % threadcount` threads one more), or run `--duration`
//! seconds: each operation is drawn from the workload's mix, its record
//! from the request distribution among the acknowledged records, and inserts
//! take new numbers from a shared [`AckCounter`].
//!
//! Timing: each operation's engine calls (not key or value generation) are
//! timed with `Instant` into a per-thread, per-operation-type HdrHistogram;
//! the threads' [`OpStats`] are merged after they join. Per-thread state
//! only; the engine, the insert counter and the load counter are shared.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Result;

use super::generators::{AckCounter, Op, OpChooser, ScrambledZipfian, SkewedLatest, uniform_in};
use super::keys::key_of;
use super::spec::{Distribution, MAX_SCAN_LENGTH, Spec};
use crate::engine::WriteOpts;
use crate::keygen::Rng;
use crate::stats::{Limit, Stats};
use crate::valuegen::ValueGen;
use crate::workloads::{Ctx, run_threads};

/// One operation type's numbers, for one thread or merged.
pub struct OpStats {
    /// Counts, bytes, found keys and the latency histogram (nanoseconds).
    pub stats: Stats,
    /// Sum of the timed latencies, nanoseconds.
    pub busy_ns: u128,
}

impl OpStats {
    fn new(reads: bool) -> OpStats {
        let mut stats = Stats::new(true, None);
        stats.start();
        if reads {
            stats.reads = Some(0);
        }
        OpStats { stats, busy_ns: 0 }
    }

    #[inline]
    fn record(&mut self, ns: u64, bytes: u64) {
        if let Some(h) = &mut self.stats.hist {
            h.saturating_record(ns.max(1));
        }
        self.busy_ns += u128::from(ns);
        self.stats.done += 1;
        self.stats.bytes += bytes;
    }

    #[inline]
    fn lookup(&mut self, found: bool) {
        if let Some(r) = &mut self.stats.reads {
            *r += 1;
        }
        self.stats.found += u64::from(found);
    }
}

/// Everything a workload run produced.
pub struct Run {
    /// All operations together (the workload's result line).
    pub total: Stats,
    /// Each operation type of the mix, in [`Op::ALL`] order.
    pub per_op: Vec<(Op, OpStats)>,
    /// Records when the run ended (key numbers `0..records_after`).
    pub records_after: u64,
}

/// Operations thread `i` of `threads` does out of `total` (YCSB's split).
pub fn share(total: u64, threads: usize, i: usize) -> u64 {
    let t = threads.max(1) as u64;
    total / t + u64::from((i as u64) < total % t)
}

/// Merges per-thread results and fills the totals.
fn merge(ctx_total: Stats, parts: Vec<Vec<(Op, OpStats)>>) -> (Stats, Vec<(Op, OpStats)>) {
    let mut merged: Vec<(Op, OpStats)> = Vec::new();
    for part in parts {
        for (op, s) in part {
            match merged.iter_mut().find(|(o, _)| *o == op) {
                Some((_, m)) => {
                    m.stats.merge(&s.stats);
                    m.busy_ns += s.busy_ns;
                }
                None => merged.push((op, s)),
            }
        }
    }
    merged.sort_by_key(|(op, _)| op.index());
    let mut total = ctx_total;
    total.hist = None;
    for (_, m) in &mut merged {
        // micros/op of an operation type is its mean latency.
        m.stats.seconds = m.busy_ns as f64 / 1e9;
        match (&mut total.hist, &m.stats.hist) {
            (Some(a), Some(b)) => {
                // Same bounds and auto-resizing: adding cannot fail.
                let _ = a.add(b);
            }
            (None, Some(b)) => total.hist = Some(b.clone()),
            _ => {}
        }
    }
    (total, merged)
}

/// A context like `ctx` whose thread stats keep no histogram (the
/// operation types keep their own).
fn quiet<'a>(ctx: &Ctx<'a>) -> Ctx<'a> {
    Ctx {
        flags: ctx.flags,
        engine: ctx.engine,
        seed: ctx.seed,
        threads_started: ctx.threads_started,
        latency: false,
        progress: ctx.progress.clone(),
        ycsb: ctx.ycsb,
    }
}

/// The load phase: inserts records `0..records`.
pub fn load(ctx: &Ctx<'_>, records: u64, value_size: usize) -> Result<Run> {
    let f = ctx.flags;
    let wo = WriteOpts {
        sync: f.sync,
        disable_wal: f.disable_wal,
    };
    drop(ValueGen::new(value_size, f.compression_ratio));
    let sequence = AtomicU64::new(0);
    let parts = Mutex::new(Vec::new());
    let threads = f.threads.max(1);
    let inner = quiet(ctx);
    let total = run_threads(&inner, threads, |tid, st| {
        let mut values = ValueGen::new(value_size, f.compression_ratio);
        let mut key = Vec::with_capacity(24);
        let mut ins = OpStats::new(false);
        for _ in 0..share(records, threads, tid) {
            let k = sequence.fetch_add(1, Ordering::Relaxed);
            key_of(k, &mut key);
            let v = values.generate(value_size);
            let t0 = Instant::now();
            ctx.engine.write(&[(&key[..], v)], wo)?;
            let ns = t0.elapsed().as_nanos() as u64;
            let b = (key.len() + value_size) as u64;
            ins.record(ns, b);
            st.bytes += b;
            st.finished_ops(1);
        }
        ins.stats.stop();
        parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(vec![(Op::Insert, ins)]);
        Ok(())
    })?;
    let parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
    let (total, per_op) = merge(total, parts);
    Ok(Run {
        total,
        per_op,
        records_after: records,
    })
}

/// Chooses the records operations touch.
#[derive(Clone)]
enum Chooser {
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
}

impl Chooser {
    /// YCSB's `nextKeynum`: a record number no higher than the last
    /// acknowledged insert (drawn again when higher).
    fn next(&mut self, counter: &AckCounter, rng: &mut Rng) -> u64 {
        match self {
            Chooser::Zipfian(z) => loop {
                let k = z.next(rng);
                if k <= counter.last() {
                    return k;
                }
            },
            Chooser::Latest(l) => l.next(counter.last(), rng),
        }
    }
}

/// The parameters of one transaction phase.
pub struct TxnParams {
    /// Records in the database when the phase starts.
    pub records: u64,
    /// Operations in total (all threads), unless `--duration` is set.
    pub operations: u64,
    /// Value bytes of updates and inserts.
    pub value_size: usize,
}

/// A transaction phase of `spec` (workloads A–F).
pub fn transactions(ctx: &Ctx<'_>, spec: &Spec, p: &TxnParams) -> Result<Run> {
    let f = ctx.flags;
    let wo = WriteOpts {
        sync: f.sync,
        disable_wal: f.disable_wal,
    };
    let threads = f.threads.max(1);
    let counter = AckCounter::new(p.records);
    // Built once, before the clock: SkewedLatest computes zeta(records).
    let chooser = match spec.distribution {
        Distribution::Latest => Chooser::Latest(SkewedLatest::new(counter.last())),
        _ => {
            // YCSB sizes the scrambled key space for the inserts it
            // expects (twice the insert share of the operations), so that
            // new keys do not shift which keys are popular.
            let expected = (p.operations as f64 * spec.proportion(Op::Insert) * 2.0) as u64;
            Chooser::Zipfian(ScrambledZipfian::new(0, p.records + expected))
        }
    };
    let ops = OpChooser::new(spec.mix);
    drop(ValueGen::new(p.value_size, f.compression_ratio));
    let parts = Mutex::new(Vec::new());
    let inner = quiet(ctx);
    let total = run_threads(&inner, threads, |tid, st| {
        let mut rng = ctx.thread_rng();
        let mut chooser = chooser.clone();
        let mut values = ValueGen::new(p.value_size, f.compression_ratio);
        let mut per: Vec<Option<OpStats>> = Op::ALL
            .iter()
            .map(|&op| {
                (spec.proportion(op) > 0.0)
                    .then(|| OpStats::new(matches!(op, Op::Read | Op::Scan | Op::ReadModifyWrite)))
            })
            .collect();
        let mut key = Vec::with_capacity(24);
        let mut record = Vec::with_capacity(p.value_size);
        let mut limit = Limit::new(f.duration, share(p.operations, threads, tid));
        while !limit.done(1) {
            let op = ops.next(&mut rng);
            let (ns, bytes, found) = match op {
                Op::Read => {
                    key_of(chooser.next(&counter, &mut rng), &mut key);
                    let t0 = Instant::now();
                    let found = ctx.engine.get_with(&key, &mut |got| {
                        record.clear();
                        record.extend_from_slice(got);
                    })?;
                    let ns = t0.elapsed().as_nanos() as u64;
                    let b = if found { key.len() + record.len() } else { 0 };
                    (ns, b, Some(found))
                }
                Op::Update => {
                    key_of(chooser.next(&counter, &mut rng), &mut key);
                    let v = values.generate(p.value_size);
                    let t0 = Instant::now();
                    ctx.engine.write(&[(&key[..], v)], wo)?;
                    let ns = t0.elapsed().as_nanos() as u64;
                    (ns, key.len() + p.value_size, None)
                }
                Op::Insert => {
                    let k = counter.next();
                    key_of(k, &mut key);
                    let v = values.generate(p.value_size);
                    let t0 = Instant::now();
                    let r = ctx.engine.write(&[(&key[..], v)], wo);
                    let ns = t0.elapsed().as_nanos() as u64;
                    // As YCSB: acknowledged whether or not the insert worked.
                    counter.acknowledge(k)?;
                    r?;
                    (ns, key.len() + p.value_size, None)
                }
                Op::Scan => {
                    key_of(chooser.next(&counter, &mut rng), &mut key);
                    let len = uniform_in(1, MAX_SCAN_LENGTH, &mut rng);
                    let t0 = Instant::now();
                    let mut c = ctx.engine.cursor()?;
                    c.seek(&key)?;
                    let found = c.valid() && c.key() == &key[..];
                    let mut b = 0;
                    let mut n = 0;
                    while n < len && c.valid() {
                        record.clear();
                        record.extend_from_slice(c.value());
                        b += c.key().len() + record.len();
                        n += 1;
                        c.next()?;
                    }
                    drop(c);
                    let ns = t0.elapsed().as_nanos() as u64;
                    (ns, b, Some(found))
                }
                Op::ReadModifyWrite => {
                    key_of(chooser.next(&counter, &mut rng), &mut key);
                    let v = values.generate(p.value_size);
                    let t0 = Instant::now();
                    let found = ctx.engine.get_with(&key, &mut |got| {
                        record.clear();
                        record.extend_from_slice(got);
                    })?;
                    // YCSB writes only after a successful read.
                    if found {
                        ctx.engine.write(&[(&key[..], v)], wo)?;
                    }
                    let ns = t0.elapsed().as_nanos() as u64;
                    let b = if found {
                        2 * key.len() + record.len() + p.value_size
                    } else {
                        0
                    };
                    (ns, b, Some(found))
                }
            };
            if let Some(s) = &mut per[op.index()] {
                s.record(ns, bytes as u64);
                if let Some(found) = found {
                    s.lookup(found);
                    st.found += u64::from(found);
                    st.reads = Some(st.reads.unwrap_or(0) + 1);
                }
            }
            st.bytes += bytes as u64;
            st.finished_ops(1);
        }
        let mine: Vec<(Op, OpStats)> = Op::ALL
            .iter()
            .zip(per)
            .filter_map(|(&op, s)| {
                s.map(|mut s| {
                    s.stats.stop();
                    (op, s)
                })
            })
            .collect();
        parts.lock().unwrap_or_else(|e| e.into_inner()).push(mine);
        Ok(())
    })?;
    counter.settle();
    let parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
    let (total, per_op) = merge(total, parts);
    Ok(Run {
        total,
        per_op,
        records_after: counter.issued(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_as_ycsb_splits_them() {
        assert_eq!(
            (0..3).map(|i| share(10, 3, i)).collect::<Vec<_>>(),
            [4, 3, 3]
        );
        assert_eq!((0..4).map(|i| share(10, 4, i)).sum::<u64>(), 10);
        assert_eq!(share(5, 0, 0), 5);
    }
}
