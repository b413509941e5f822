//! Timing and counting of one workload, per thread, merged for the report.
//!
//! A [`Stats`] belongs to one thread: it counts operations, bytes and found
//! keys, and (when latency is measured) records the time between successive
//! completed operations into an HdrHistogram, as db_bench's `FinishedOps`
//! does. After the threads join, their stats are [`Stats::merge`]d: elapsed
//! time spans the earliest start to the latest finish, and `seconds` sums the
//! per-thread busy time, which is what db_bench's micros/op divides.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::ProgressBar;

/// Counters and timings of one thread's run of one workload.
#[derive(Debug, Clone)]
pub struct Stats {
    start: Instant,
    finish: Instant,
    last_op: Instant,
    /// Sum over threads of each thread's run time, in seconds.
    pub seconds: f64,
    /// Operations done.
    pub done: u64,
    /// Bytes of keys and values moved.
    pub bytes: u64,
    /// Reads that found their key.
    pub found: u64,
    /// Reads attempted (the Y in `(X of Y found)`), when the workload reads.
    pub reads: Option<u64>,
    /// Latency of each operation (or batch) in nanoseconds, when measured.
    pub hist: Option<Histogram<u64>>,
    /// Text appended to the result line, like db_bench's `AddMessage`.
    pub message: String,
    progress: Option<ProgressBar>,
    pending_progress: u64,
}

impl Stats {
    /// Fresh stats; `latency` turns on the histogram; `progress` is advanced
    /// as operations finish.
    pub fn new(latency: bool, progress: Option<ProgressBar>) -> Stats {
        let now = Instant::now();
        Stats {
            start: now,
            finish: now,
            last_op: now,
            seconds: 0.0,
            done: 0,
            bytes: 0,
            found: 0,
            reads: None,
            hist: latency.then(|| {
                Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
            }),
            message: String::new(),
            progress,
            pending_progress: 0,
        }
    }

    /// Starts the clock.
    pub fn start(&mut self) {
        self.start = Instant::now();
        self.last_op = self.start;
    }

    /// Records that `n` operations just finished (one histogram sample).
    #[inline]
    pub fn finished_ops(&mut self, n: u64) {
        if let Some(h) = &mut self.hist {
            let now = Instant::now();
            let ns = now.duration_since(self.last_op).as_nanos() as u64;
            h.saturating_record(ns.max(1));
            self.last_op = now;
        }
        self.done += n;
        if self.progress.is_some() {
            self.pending_progress += n;
            if self.pending_progress >= 1024 {
                self.flush_progress();
            }
        }
    }

    fn flush_progress(&mut self) {
        if let Some(p) = &self.progress {
            p.inc(self.pending_progress);
        }
        self.pending_progress = 0;
    }

    /// Stops the clock.
    pub fn stop(&mut self) {
        self.flush_progress();
        self.finish = Instant::now();
        self.seconds = self.finish.duration_since(self.start).as_secs_f64();
    }

    /// Appends a message, space-separated.
    pub fn add_message(&mut self, msg: &str) {
        if !self.message.is_empty() {
            self.message.push(' ');
        }
        self.message.push_str(msg);
    }

    /// Folds another thread's stats into these.
    pub fn merge(&mut self, other: &Stats) {
        self.start = self.start.min(other.start);
        self.finish = self.finish.max(other.finish);
        self.seconds += other.seconds;
        self.done += other.done;
        self.bytes += other.bytes;
        self.found += other.found;
        self.reads = match (self.reads, other.reads) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        match (&mut self.hist, &other.hist) {
            (Some(a), Some(b)) => {
                a.add(b).expect("histograms auto-resize");
            }
            (None, Some(b)) => self.hist = Some(b.clone()),
            _ => {}
        }
        if self.message.is_empty() {
            self.message = other.message.clone();
        }
    }

    /// Wall-clock time from the earliest start to the latest finish, seconds.
    pub fn elapsed(&self) -> f64 {
        self.finish
            .duration_since(self.start)
            .max(Duration::from_nanos(1))
            .as_secs_f64()
    }

    /// The numbers of the result line.
    pub fn summary(&self) -> Summary {
        let done = self.done.max(1);
        let elapsed = self.elapsed();
        let pct = |q: f64| {
            self.hist
                .as_ref()
                .map(|h| h.value_at_quantile(q) as f64 / 1000.0)
        };
        Summary {
            micros_per_op: self.seconds * 1e6 / done as f64,
            ops_per_sec: done as f64 / elapsed,
            seconds: elapsed,
            ops: done,
            mb_per_sec: (self.bytes > 0).then(|| self.bytes as f64 / 1_048_576.0 / elapsed),
            bytes: self.bytes,
            found: self.reads.map(|_| self.found),
            reads: self.reads,
            p50_us: pct(0.5),
            p95_us: pct(0.95),
            p99_us: pct(0.99),
            p999_us: pct(0.999),
            max_us: self.hist.as_ref().map(|h| h.max() as f64 / 1000.0),
        }
    }
}

/// The measured numbers of one workload.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    /// Busy time per operation summed over threads (db_bench's micros/op).
    pub micros_per_op: f64,
    /// Operations per wall-clock second.
    pub ops_per_sec: f64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Operations done.
    pub ops: u64,
    /// Key+value MiB per wall-clock second, when bytes moved.
    pub mb_per_sec: Option<f64>,
    /// Key+value bytes moved.
    pub bytes: u64,
    /// Keys found, for reading workloads.
    pub found: Option<u64>,
    /// Keys looked up, for reading workloads.
    pub reads: Option<u64>,
    /// Median latency in microseconds, when measured.
    pub p50_us: Option<f64>,
    /// 95th percentile latency in microseconds, when measured.
    pub p95_us: Option<f64>,
    /// 99th percentile latency in microseconds, when measured.
    pub p99_us: Option<f64>,
    /// 99.9th percentile latency in microseconds, when measured.
    pub p999_us: Option<f64>,
    /// Largest latency in microseconds, when measured.
    pub max_us: Option<f64>,
}

/// db_bench's result line: `%-12s : %11.3f micros/op %ld ops/sec %.3f seconds
/// %ld operations;%s%s`, where the extra part is `%6.1f MB/s` and/or the message.
pub fn format_line(name: &str, s: &Summary, message: &str) -> String {
    let mut extra = String::new();
    if let Some(mb) = s.mb_per_sec {
        extra = format!("{mb:>6.1} MB/s");
    }
    if !message.is_empty() {
        if !extra.is_empty() {
            extra.push(' ');
        }
        extra.push_str(message);
    }
    format!(
        "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}{}",
        name,
        s.micros_per_op,
        s.ops_per_sec as i64,
        s.seconds,
        s.ops,
        if extra.is_empty() { "" } else { " " },
        extra
    )
}

/// db_bench-style latency summary (`Microseconds per <op>:` ...), from
/// nanosecond samples.
pub fn format_histogram(op: &str, h: &Histogram<u64>) -> String {
    let us = |ns: f64| ns / 1000.0;
    let q = |x: f64| us(h.value_at_quantile(x) as f64);
    format!(
        "Microseconds per {op}:\nCount: {} Average: {:.4}  StdDev: {:.2}\nMin: {:.3}  Median: {:.4}  Max: {:.3}\n\
         Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}\n",
        h.len(),
        us(h.mean()),
        us(h.stdev()),
        us(h.min() as f64),
        q(0.5),
        us(h.max() as f64),
        q(0.5),
        q(0.75),
        q(0.99),
        q(0.999),
        q(0.9999),
    )
}

/// Bounds a run by operation count, or by seconds when `max_seconds > 0`
/// (db_bench's `Duration`: with a time limit the count is ignored).
#[derive(Debug)]
pub struct Limit {
    max_seconds: u64,
    max_ops: u64,
    ops: u64,
    start: Instant,
}

impl Limit {
    /// A limit of `max_ops` operations, or `max_seconds` if non-zero.
    pub fn new(max_seconds: u64, max_ops: u64) -> Limit {
        Limit {
            max_seconds,
            max_ops,
            ops: 0,
            start: Instant::now(),
        }
    }

    /// Whether the run is over, before doing `increment` more operations.
    pub fn done(&mut self, increment: u64) -> bool {
        self.ops += increment;
        if self.max_seconds > 0 {
            self.start.elapsed().as_secs_f64() >= self.max_seconds as f64
        } else {
            self.ops > self.max_ops
        }
    }

    /// How many operations the next step may do, at most `want`.
    pub fn next_batch(&self, want: u64) -> u64 {
        if self.max_seconds > 0 {
            want
        } else {
            want.min(self.max_ops.saturating_sub(self.ops))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(mb: Option<f64>) -> Summary {
        Summary {
            micros_per_op: 30.055,
            ops_per_sec: 33262.9,
            seconds: 30.064,
            ops: 1_000_000,
            mb_per_sec: mb,
            bytes: 0,
            found: None,
            reads: None,
            p50_us: None,
            p95_us: None,
            p99_us: None,
            p999_us: None,
            max_us: None,
        }
    }

    #[test]
    fn line_matches_db_bench_format() {
        assert_eq!(
            format_line("fillrandom", &summary(Some(130.4)), ""),
            "fillrandom   :      30.055 micros/op 33262 ops/sec 30.064 seconds 1000000 operations;  130.4 MB/s"
        );
        assert_eq!(
            format_line("readrandom", &summary(Some(40.1)), "(8701 of 10000 found)"),
            "readrandom   :      30.055 micros/op 33262 ops/sec 30.064 seconds 1000000 operations;   40.1 MB/s (8701 of 10000 found)"
        );
        assert_eq!(
            format_line("compact", &summary(None), ""),
            "compact      :      30.055 micros/op 33262 ops/sec 30.064 seconds 1000000 operations;"
        );
        assert_eq!(
            format_line("multireadrandom", &summary(Some(1175.0)), ""),
            "multireadrandom :      30.055 micros/op 33262 ops/sec 30.064 seconds 1000000 operations; 1175.0 MB/s"
        );
    }

    #[test]
    fn merge_sums_counts_and_spans_time() {
        let mut a = Stats::new(true, None);
        let mut b = Stats::new(true, None);
        a.start();
        b.start();
        for _ in 0..10 {
            a.finished_ops(1);
            b.finished_ops(2);
        }
        a.found = 3;
        a.reads = Some(10);
        b.found = 4;
        b.reads = Some(20);
        a.stop();
        b.stop();
        a.merge(&b);
        assert_eq!(a.done, 30);
        assert_eq!(a.hist.as_ref().unwrap().len(), 20);
        let s = a.summary();
        assert_eq!((s.found, s.reads), (Some(7), Some(30)));
        assert!(s.p50_us.is_some());
        assert!(
            format_histogram("op", a.hist.as_ref().unwrap())
                .starts_with("Microseconds per op:\nCount: 20 ")
        );
    }

    #[test]
    fn limit_counts_ops() {
        let mut l = Limit::new(0, 3);
        assert!(!l.done(1) && !l.done(1) && !l.done(1));
        assert!(l.done(1));
        assert_eq!(Limit::new(0, 10).next_batch(4), 4);
    }
}
