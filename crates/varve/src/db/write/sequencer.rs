//! [`Sequencer`]: hands out sequence-number ranges without a lock and
//! publishes them to readers in order.
//!
//! A writer takes a range with one `fetch_add` on `next`, inserts its batch
//! into the memtable under those numbers, then [`Sequencer::complete`]s the
//! range. The published sequence (`DbInner::last_sequence`) advances only
//! over *contiguous* completed ranges: whoever completes the range right
//! after the published one advances over it and over every later range that
//! already completed out of order (kept in a map), so no writer has to
//! wait for its turn to publish.
//!
//! Read-your-writes without making writers wait: a writer does not wait for
//! its own range to be published. It raises the *acknowledged floor*
//! ([`Sequencer::acknowledge`], one `fetch_max`) before it returns, and every
//! read takes its sequence through [`Sequencer::visible`], which waits
//! (spin briefly, then park) until the published sequence reaches the floor.
//! So anything that happens after a write returned — in the same thread or
//! in one it signalled — sees that write, and a writer preempted inside its
//! memtable insert no longer holds up every writer behind it: only a read
//! that arrives in that window waits, exactly as long as the writers used
//! to.
//!
//! Thread-safety: `Sync`; `complete` takes a short mutex. Invariants:
//! `last_sequence` only grows and is only written under `pending`'s lock;
//! `acked` only grows, and `visible` never returns less than the `acked`
//! it loaded;
//! every sequence `<= last_sequence` belongs to a completed range, so a
//! reader never sees a batch in part, nor a later write without every
//! earlier one; every range handed out is completed exactly once (also on
//! failure) so publishing never stalls behind a failed writer.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::keys::MAX_SEQUENCE;
use crate::util::lru::FastMap;

/// Sequence assignment and in-order publication.
#[derive(Debug)]
pub(crate) struct Sequencer {
    /// The next sequence number to hand out.
    next: AtomicU64,
    /// Completed ranges (first -> last) above the published sequence that
    /// are not contiguous with it yet. Looked up only by a range's first
    /// number, so a hash map: with 64 writers on two cores, a writer
    /// preempted in its insert leaves thousands of ranges pending, and
    /// every write inserts and removes one.
    pending: Mutex<FastMap<u64, u64>>,
    cv: Condvar,
    waiters: AtomicUsize,
    /// The highest sequence of any write that returned (or is about to):
    /// reads wait until the published sequence reaches it.
    acked: AtomicU64,
}

impl Sequencer {
    /// Starts after `last_sequence` (the last published number).
    pub(crate) fn new(last_sequence: u64) -> Sequencer {
        Sequencer {
            next: AtomicU64::new(last_sequence + 1),
            pending: Mutex::new(FastMap::default()),
            cv: Condvar::new(),
            waiters: AtomicUsize::new(0),
            acked: AtomicU64::new(last_sequence),
        }
    }

    /// Takes `count >= 1` numbers; returns the first. On exhaustion the
    /// range is still completed (so later publishing does not stall) and an
    /// error returned.
    pub(crate) fn assign(&self, published: &AtomicU64, count: u64) -> Result<u64> {
        debug_assert!(count >= 1, "a write takes at least one sequence number");
        let first = self.next.fetch_add(count, Ordering::Relaxed);
        debug_assert!(
            first > published.load(Ordering::Relaxed),
            "a number handed out ({first}) is never already published"
        );
        if first.saturating_add(count - 1) > MAX_SEQUENCE {
            self.complete(published, first, first + count - 1);
            return Err(Error::InvalidArgument("sequence numbers exhausted".into()));
        }
        Ok(first)
    }

    /// Marks `first..=last` inserted and publishes whatever became
    /// contiguous.
    pub(crate) fn complete(&self, published: &AtomicU64, first: u64, last: u64) {
        debug_assert!(first <= last, "an empty range {first}..={last}");
        debug_assert!(
            last < self.next.load(Ordering::Relaxed),
            "completing numbers {first}..={last} that were never handed out"
        );
        let mut pending = self.pending.lock();
        let current = published.load(Ordering::Relaxed);
        debug_assert!(
            first > current,
            "range {first}..={last} completed twice (published is {current})"
        );
        if first != current + 1 {
            let again = pending.insert(first, last);
            debug_assert!(again.is_none(), "range starting at {first} completed twice");
            return;
        }
        let mut top = last;
        while let Some(end) = pending.remove(&(top + 1)) {
            debug_assert!(end > top, "pending ranges are disjoint and ordered");
            top = end;
        }
        debug_assert!(
            // (A full look only while it is cheap.)
            pending.len() > 1024 || pending.keys().all(|&k| k > top + 1),
            "a pending range contiguous with the published sequence was left behind"
        );
        // Published only grows (under this lock).
        debug_assert!(top >= current);
        published.store(top, Ordering::Release);
        drop(pending);
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _g = self.pending.lock();
            self.cv.notify_all();
        }
    }

    /// Records that the write whose range ends at `last` is acknowledged:
    /// every later [`Sequencer::visible`] returns at least `last`. Call it
    /// after [`Sequencer::complete`] and before the write returns.
    pub(crate) fn acknowledge(&self, last: u64) {
        self.acked.fetch_max(last, Ordering::Release);
    }

    /// The sequence a read may use: the published one, after waiting until
    /// it covers every acknowledged write.
    pub(crate) fn visible(&self, published: &AtomicU64) -> u64 {
        let floor = self.acked.load(Ordering::Acquire);
        let now = published.load(Ordering::Acquire);
        if now >= floor {
            return now;
        }
        self.wait_published(published, floor);
        let seen = published.load(Ordering::Acquire);
        debug_assert!(
            seen >= floor,
            "visible() returned below the acknowledged floor"
        );
        seen
    }

    /// Waits until `published >= seq` (spin briefly, then park).
    pub(crate) fn wait_published(&self, published: &AtomicU64, seq: u64) {
        for round in 0..64 {
            if published.load(Ordering::Acquire) >= seq {
                return;
            }
            if round < 48 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        let mut g = self.pending.lock();
        self.waiters.fetch_add(1, Ordering::SeqCst);
        while published.load(Ordering::Acquire) < seq {
            // The timeout only bounds a missed wake-up; `complete` notifies.
            self.cv.wait_for(&mut g, Duration::from_millis(2));
        }
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publishes_only_contiguous_ranges() {
        let published = AtomicU64::new(10);
        let s = Sequencer::new(10);
        let a = s.assign(&published, 3).expect("a"); // 11..=13
        let b = s.assign(&published, 1).expect("b"); // 14
        let c = s.assign(&published, 2).expect("c"); // 15..=16
        assert_eq!((a, b, c), (11, 14, 15));
        s.complete(&published, c, 16);
        assert_eq!(published.load(Ordering::Relaxed), 10);
        s.complete(&published, a, 13);
        assert_eq!(published.load(Ordering::Relaxed), 13);
        s.complete(&published, b, 14);
        assert_eq!(published.load(Ordering::Relaxed), 16);
        s.wait_published(&published, 16);
    }

    #[test]
    fn many_threads_publish_everything() {
        let published = AtomicU64::new(0);
        let s = Sequencer::new(0);
        std::thread::scope(|sc| {
            for t in 0..8u64 {
                let (s, published) = (&s, &published);
                sc.spawn(move || {
                    for i in 0..2000u64 {
                        let n = 1 + (i + t) % 3;
                        let first = s.assign(published, n).expect("assign");
                        s.complete(published, first, first + n - 1);
                        s.acknowledge(first + n - 1);
                        assert!(s.visible(published) >= first + n - 1);
                    }
                });
            }
        });
        let total: u64 = (0..8u64)
            .map(|t| (0..2000u64).map(|i| 1 + (i + t) % 3).sum::<u64>())
            .sum();
        assert_eq!(published.load(Ordering::Relaxed), total);
    }

    #[test]
    fn a_read_waits_for_an_acknowledged_write_behind_an_unfinished_one() {
        let published = AtomicU64::new(0);
        let s = Sequencer::new(0);
        let slow = s.assign(&published, 1).expect("slow"); // 1, still inserting
        let fast = s.assign(&published, 2).expect("fast"); // 2..=3
        s.complete(&published, fast, 3);
        s.acknowledge(3);
        assert_eq!(published.load(Ordering::Relaxed), 0);
        let returned = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|sc| {
            let reader = sc.spawn(|| {
                let seen = s.visible(&published);
                returned.store(true, Ordering::SeqCst);
                seen
            });
            std::thread::sleep(Duration::from_millis(50));
            // The reader must not see sequence 0 while write 2..=3 is
            // acknowledged: it is still waiting.
            assert!(!returned.load(Ordering::SeqCst));
            s.complete(&published, slow, 1);
            assert_eq!(reader.join().expect("reader"), 3);
        });
        // Nothing acknowledged above the published sequence: no wait.
        assert_eq!(s.visible(&published), 3);
    }
}
