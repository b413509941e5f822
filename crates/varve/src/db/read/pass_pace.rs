//! [`Pace`]: the handshake between the iterator that makes a shared pass's
//! next segment, which waits (bounded) for the iterators still in the
//! oldest segment, and the last of those to leave it, which wakes it
//! (`docs/shared-passes.md`, "How long segments stay").
//!
//! The leader holds the lock of the pass's segments, announces its wait
//! (`waiting`), checks again whether the oldest segment is busy, and only
//! then sleeps on `left` (which lets the lock go). A leaver counts itself
//! out of its segment and, when it was the last one in it and a leader
//! waits, takes the same lock (so the leader is either before its check or
//! asleep) and wakes it. Each side writes one word and then reads the
//! other's, with a `SeqCst` fence between the two: at least one of them
//! sees the other's write. Either the leader sees the segment empty and
//! does not sleep, or the leaver sees the wait and wakes it; a leader
//! never sleeps out its slice for a segment that emptied.
//!
//! Thread-safe: one leader at a time (the iterator making a segment), any
//! number of leavers. Atomics, lock and condition variable come from
//! [`crate::sync`]: under `--cfg loom` the tests below model-check the
//! handshake (loom's timed wait never times out, so a lost wakeup hangs
//! the model, which loom reports). Invariant: a segment's count of readers
//! never goes below zero (`debug_assert!`).

use std::time::Duration;

use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use crate::sync::{Condvar, Mutex, MutexGuard};

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Pace {
    /// A leader waits on `left` (or is about to).
    waiting: AtomicBool,
    /// Signalled by the last leaver of a segment while a leader waits.
    left: Condvar,
}

impl Pace {
    pub(crate) fn new() -> Pace {
        Pace {
            waiting: AtomicBool::new(false),
            left: Condvar::new(),
        }
    }

    /// The leader, holding `guard` (the lock [`Pace::leave`] takes): waits
    /// up to `slice` for a leaver's signal if `busy` (which reads the
    /// readers' counts) still holds once the wait is announced. The wait
    /// may end early; the caller checks again.
    pub(crate) fn wait<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        slice: Duration,
        busy: impl Fn(&T) -> bool,
    ) -> MutexGuard<'a, T> {
        let mut guard = guard;
        self.waiting.store(true, Ordering::Relaxed);
        // Pairs with the fence in `leave`: this check sees the leaver's
        // count, or the leaver sees `waiting`.
        fence(Ordering::SeqCst);
        if busy(&guard) {
            guard = self
                .left
                .wait_timeout(guard, slice)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        self.waiting.store(false, Ordering::Relaxed);
        guard
    }

    /// Counts the caller out of a segment (`readers`, its count of
    /// iterators) and, when it was the last one in it while a leader
    /// waits, wakes the leader under `lock`.
    pub(crate) fn leave<T>(&self, readers: &AtomicUsize, lock: &Mutex<T>) {
        let before = readers.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(before > 0, "left a segment it was not counted in");
        if before != 1 {
            return;
        }
        // Pairs with the fence in `wait`.
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::Relaxed) {
            // Taking the lock: the leader is not between its check and its
            // sleep, so the signal cannot fall in that gap.
            let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
            self.left.notify_all();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_leader_wakes_when_the_last_reader_leaves_not_at_the_end_of_its_slice() {
        let pace = Arc::new(Pace::new());
        let lock = Arc::new(Mutex::new(()));
        let readers = Arc::new(AtomicUsize::new(2));
        let leavers: Vec<_> = (0..2)
            .map(|i| {
                let (pace, lock, readers) = (pace.clone(), lock.clone(), readers.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(20 + 10 * i));
                    pace.leave(&readers, &lock);
                })
            })
            .collect();
        let start = Instant::now();
        let mut g = lock.lock().expect("lock");
        while readers.load(Ordering::Acquire) > 0 {
            g = pace.wait(g, Duration::from_secs(60), |_| {
                readers.load(Ordering::Acquire) > 0
            });
        }
        drop(g);
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "woken by the leaver, not by the slice's end"
        );
        for l in leavers {
            l.join().expect("leaver");
        }
    }

    #[test]
    fn a_leader_does_not_sleep_for_an_empty_segment() {
        let pace = Pace::new();
        let lock = Mutex::new(());
        let readers = AtomicUsize::new(1);
        pace.leave(&readers, &lock);
        let start = Instant::now();
        let g = lock.lock().expect("lock");
        drop(pace.wait(g, Duration::from_secs(60), |_| {
            readers.load(Ordering::Acquire) > 0
        }));
        assert!(start.elapsed() < Duration::from_secs(30));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use loom::sync::Arc;

    use super::*;

    /// A leader waits for `readers` iterators that leave at the same time
    /// as it checks; `honest`: they leave through [`Pace::leave`] (else
    /// they only count themselves out, the misuse the model must catch).
    fn leader_and_leavers(readers: usize, honest: bool) {
        loom::model(move || {
            let pace = Arc::new(Pace::new());
            let lock = Arc::new(Mutex::new(()));
            let count = Arc::new(AtomicUsize::new(readers));
            let leavers: Vec<_> = (0..readers)
                .map(|_| {
                    let (pace, lock, count) = (pace.clone(), lock.clone(), count.clone());
                    loom::thread::spawn(move || {
                        if honest {
                            pace.leave(&count, &lock);
                        } else {
                            count.fetch_sub(1, Ordering::AcqRel);
                        }
                    })
                })
                .collect();
            let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
            // loom's timed wait never times out: a lost wakeup hangs here.
            while count.load(Ordering::Acquire) > 0 {
                g = pace.wait(g, Duration::from_millis(5), |_| {
                    count.load(Ordering::Acquire) > 0
                });
            }
            drop(g);
            for l in leavers {
                l.join().expect("leaver");
            }
            assert_eq!(count.load(Ordering::Acquire), 0);
        });
    }

    #[test]
    fn loom_the_last_leaver_always_wakes_a_waiting_leader() {
        leader_and_leavers(1, true);
        leader_and_leavers(2, true);
    }

    #[test]
    #[should_panic]
    fn loom_a_leaver_that_skips_the_handshake_hangs_the_leader() {
        leader_and_leavers(1, false);
    }
}
