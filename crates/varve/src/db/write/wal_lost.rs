//! A [`WalLog`]'s failure path: the first IO failure, where the log
//! stopped, and which writes were lost past that point (reported by their
//! writers, so `Db::resume` can take exactly those out of the memtable).
//! Nothing here runs on the success path. Thread-safe.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::wal_log::WalLog;
use crate::error::{Error, Result};

/// The writes whose records ended past the stop point.
#[derive(Debug, Default)]
pub(super) struct Lost {
    /// Their sequence ranges, `first..=last`.
    pub(super) ranges: Vec<(u64, u64)>,
    /// The sum of their record lengths.
    pub(super) bytes: u64,
}

impl WalLog {
    /// The first IO failure, if any. The recorded failure is read first:
    /// the sink records it before it sets the stop point and the `failed`
    /// flag, so a writer that saw the stop point (`lost_at`) always finds
    /// it here, even before the flag is set. (Reading the flag first let
    /// such a writer report a generic failure, which is not resumable,
    /// instead of the full disk: `tests/enospc.rs` caught it about once in
    /// 60 runs.)
    pub(crate) fn failure(&self) -> Option<Error> {
        if let Some(e) = self.sink.failure.lock().as_ref() {
            return Some(e.duplicate());
        }
        if !self.sink.failed.load(Ordering::Acquire) && !self.pool.is_poisoned() {
            return None;
        }
        Some(Error::Poisoned(format!(
            "WAL {} failed earlier",
            self.path.display()
        )))
    }

    /// An fdatasync failed: stops the log where the sink is (nothing more
    /// is written; what was written may or may not be durable).
    pub(super) fn fail_sync(&self, e: &Error) {
        self.sync_failed.store(true, Ordering::Release);
        {
            let next = self.sink.next.lock();
            self.sink.fail_at(*next, e);
        }
        self.wake_after_failure();
    }

    /// Poisons the pool (no more joins) and wakes every kind of waiter.
    pub(super) fn wake_after_failure(&self) {
        self.pool.poison();
        self.sink.cv.notify_all();
        self.events.notify();
        self.durable_events.notify();
    }

    /// The error for a writer whose record ends at `end`, if it can never
    /// be written: it ends past the stop point, or the pool was poisoned
    /// without one (a handle dropped unwritten).
    pub(super) fn lost_at(&self, end: u64) -> Option<Error> {
        match self.sink.stopped_at() {
            Some(at) if end > at => Some(self.failure().unwrap_or_else(|| self.poisoned())),
            Some(_) => None,
            None if self.pool.is_poisoned() => {
                Some(self.failure().unwrap_or_else(|| self.poisoned()))
            }
            None => None,
        }
    }

    /// Whether an fdatasync of this log failed.
    pub(crate) fn sync_failed(&self) -> bool {
        self.sync_failed.load(Ordering::Acquire)
    }

    /// Called (error path only) by a writer whose write failed: if its
    /// record — sequences `first..=last`, `len` bytes ending at `end` —
    /// lies past the stop point, it never reached the file, and resume must
    /// drop those sequences from the memtable.
    pub(crate) fn record_lost(&self, first: u64, last: u64, end: u64, len: u64) {
        if self.sink.stopped_at().is_some_and(|at| end > at) {
            let mut lost = self.lost.lock();
            lost.ranges.push((first, last));
            lost.bytes += len;
            // It never becomes durable: out of view before its writer
            // sees the error (resume then drops it for good).
            self.hide(first, last);
            self.lost_cv.notify_all();
        }
    }

    /// Waits (at most `max`) until every writer whose record lies past the
    /// stop point has reported it, then returns their sequence ranges.
    /// Call with the write gate held exclusively (no record is being
    /// placed) on a log that stopped.
    pub(crate) fn lost_ranges(&self, max: Duration) -> Result<Vec<(u64, u64)>> {
        let Some(at) = self.sink.stopped_at() else {
            return Ok(Vec::new());
        };
        // Records tile the log, so the bytes past the stop point are
        // exactly the lost records.
        let expected = self.placed_end().saturating_sub(at);
        let until = std::time::Instant::now() + max;
        let mut lost = self.lost.lock();
        loop {
            debug_assert!(
                lost.bytes <= expected,
                "more bytes lost than placed past the stop point"
            );
            if lost.bytes >= expected {
                return Ok(lost.ranges.clone());
            }
            if self.lost_cv.wait_until(&mut lost, until).timed_out() && lost.bytes < expected {
                return Err(Error::Poisoned(format!(
                    "writers of {} are still finishing their failed writes ({} of {expected} \
                     bytes reported); try Db::resume again",
                    self.path.display(),
                    lost.bytes
                )));
            }
        }
    }
}
