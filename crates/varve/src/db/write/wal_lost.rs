//! The writes a [`WalLog`](super::wal_log::WalLog) lost: after the log
//! stopped on a failed write, each writer whose record lies past the stop
//! point reports its sequence range and record length here, and
//! `Db::resume` waits until the reports add up to the bytes placed past
//! the stop point, then takes exactly those sequences out of the memtable.
//! Nothing here runs on the success path.
//!
//! Thread-safe: one mutex and its condition variable. Invariant: the
//! reported bytes never exceed the bytes placed past the stop point
//! (records tile the log), checked when `Db::resume` waits.

use std::path::Path;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

/// The writes whose records ended past the stop point.
#[derive(Debug, Default)]
struct Lost {
    /// Their sequence ranges, `first..=last`.
    ranges: Vec<(u64, u64)>,
    /// The sum of their record lengths.
    bytes: u64,
}

/// The reports of one log's lost writes.
#[derive(Debug, Default)]
pub(super) struct LostWrites {
    lost: Mutex<Lost>,
    reported: Condvar,
}

impl LostWrites {
    /// Records a lost write: sequences `first..=last`, `len` record bytes.
    pub(super) fn record(&self, first: u64, last: u64, len: u64) {
        debug_assert!(first <= last, "a lost write has at least one sequence");
        let mut lost = self.lost.lock();
        lost.ranges.push((first, last));
        lost.bytes += len;
        self.reported.notify_all();
    }

    /// Waits (at most `max`) until the reports add up to `expected` bytes,
    /// then returns their sequence ranges; the error names `path` (the log)
    /// and says to try again.
    pub(super) fn wait_for(
        &self,
        expected: u64,
        max: Duration,
        path: &Path,
    ) -> Result<Vec<(u64, u64)>> {
        let until = Instant::now() + max;
        let mut lost = self.lost.lock();
        loop {
            debug_assert!(
                lost.bytes <= expected,
                "more bytes lost than placed past the stop point"
            );
            if lost.bytes >= expected {
                return Ok(lost.ranges.clone());
            }
            if self.reported.wait_until(&mut lost, until).timed_out() && lost.bytes < expected {
                return Err(Error::Poisoned(format!(
                    "writers of {} are still finishing their failed writes ({} of {expected} \
                     bytes reported); try Db::resume again",
                    path.display(),
                    lost.bytes
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_until_the_reports_add_up() {
        let l = LostWrites::default();
        l.record(5, 7, 300);
        let e = l
            .wait_for(400, Duration::from_millis(10), Path::new("000009.log"))
            .expect_err("100 bytes unreported");
        assert!(e.to_string().contains("000009.log"), "{e}");
        l.record(9, 9, 100);
        assert_eq!(
            l.wait_for(400, Duration::from_secs(1), Path::new("x"))
                .expect("all reported"),
            vec![(5, 7), (9, 9)]
        );
    }
}
