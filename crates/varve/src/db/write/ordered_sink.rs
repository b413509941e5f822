//! [`OrderedSink`]: a WAL's IO boundary. The slot pool hands it records
//! in any order; it `pwrite`s them in log order (a slot that finished early
//! waits for the slots before it), so the file only ever holds a prefix of
//! the log. The first failed write stops the log at `stopped_at` (a record
//! boundary): nothing at or past it reaches the file. Thread-safe.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::error::Error;
use crate::io::LogFile;
use crate::wal::slots::SlotSink;

/// The pool's IO boundary: `pwrite` in log order.
#[derive(Debug)]
pub(super) struct OrderedSink {
    pub(super) file: Arc<dyn LogFile>,
    /// The log offset the next write must start at.
    pub(super) next: Mutex<u64>,
    pub(super) cv: Condvar,
    /// Writes in progress or waiting for their turn.
    pub(super) busy: AtomicUsize,
    /// The first failure (kept for every waiter).
    pub(super) failure: Mutex<Option<Error>>,
    pub(super) failed: AtomicBool,
    /// The log offset from which nothing reaches the file (`u64::MAX`
    /// while the log works): `next` when the first failure was recorded.
    pub(super) stopped_at: AtomicU64,
}

impl OrderedSink {
    /// Records the first failure. `at` is the value of `next`, which the
    /// caller holds locked, so no write is in progress or can start.
    pub(super) fn fail_at(&self, at: u64, e: &Error) {
        let mut f = self.failure.lock();
        if f.is_none() {
            *f = Some(e.duplicate());
        }
        drop(f);
        // Only the first failure sets it: `next` never moves after it.
        let _ = self
            .stopped_at
            .compare_exchange(u64::MAX, at, Ordering::AcqRel, Ordering::Acquire);
        self.failed.store(true, Ordering::Release);
    }

    /// Where the log stopped, if it did.
    pub(super) fn stopped_at(&self) -> Option<u64> {
        let at = self.stopped_at.load(Ordering::Acquire);
        (at != u64::MAX).then_some(at)
    }
}

impl SlotSink for OrderedSink {
    fn write_at_log_offset(&self, log_offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.busy.fetch_add(1, Ordering::SeqCst);
        let result = (|| {
            let mut next = self.next.lock();
            while *next != log_offset && !self.failed.load(Ordering::Acquire) {
                self.cv.wait(&mut next);
            }
            if self.failed.load(Ordering::Acquire) {
                return Err(io::Error::other("an earlier WAL write failed"));
            }
            let r = self.file.write_at(log_offset, bytes);
            match r {
                Ok(()) => *next += bytes.len() as u64,
                Err(ref e) => self.fail_at(*next, e),
            }
            self.cv.notify_all();
            r.map_err(|e| io::Error::other(e.to_string()))
        })();
        self.busy.fetch_sub(1, Ordering::SeqCst);
        result
    }
}
