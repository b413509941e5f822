//! [`BatchCounters`]: what the batched value reads of short scans did
//! (`blob/value_batch.rs`), for `Db::stats` and the tests that check the
//! reads really went to the disk together.
//!
//! Thread-safe: relaxed atomics, one set per database (in its
//! `BlobReaders`), written once per batch, never read on a hot path.
//! Invariant: `most_in_flight` never goes down.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of batched blob value reads.
#[derive(Debug, Default)]
pub(crate) struct BatchCounters {
    /// Batches read.
    pub(crate) batches: AtomicU64,
    /// Values they read.
    pub(crate) values: AtomicU64,
    /// File reads they issued (values next to each other share one).
    pub(crate) reads: AtomicU64,
    /// Bytes those reads asked for.
    pub(crate) bytes: AtomicU64,
    /// The most reads of one batch seen in flight at once (at the disk
    /// together: submitted to io_uring and not yet collected).
    pub(crate) most_in_flight: AtomicU64,
}

impl BatchCounters {
    /// Counts a batch of `values` values read with `reads` reads of
    /// `bytes` bytes, at most `in_flight` of them in flight at once.
    pub(crate) fn record(&self, values: usize, reads: usize, bytes: u64, in_flight: usize) {
        debug_assert!(reads <= values.max(1) && in_flight <= reads.max(1));
        let r = Ordering::Relaxed;
        self.batches.fetch_add(1, r);
        self.values.fetch_add(values as u64, r);
        self.reads.fetch_add(reads as u64, r);
        self.bytes.fetch_add(bytes, r);
        self.most_in_flight.fetch_max(in_flight as u64, r);
    }

    /// The counters now: batches, values, reads, bytes, most in flight.
    pub(crate) fn snapshot(&self) -> [u64; 5] {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            r(&self.batches),
            r(&self.values),
            r(&self.reads),
            r(&self.bytes),
            r(&self.most_in_flight),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_and_the_most_in_flight_only_grows() {
        let c = BatchCounters::default();
        c.record(8, 3, 32 << 10, 3);
        c.record(2, 2, 8 << 10, 1);
        assert_eq!(c.snapshot(), [2, 10, 5, 40 << 10, 3]);
    }
}
