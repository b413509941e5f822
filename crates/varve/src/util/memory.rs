//! [`MemoryGauge`]: one part of the memory budget (`Options::memory_budget`,
//! `docs/memory.md`) for memory that is taken in pieces and given back:
//! a limit, the bytes reserved now and the most ever reserved.
//!
//! A holder asks for a [`Reservation`] before it allocates and keeps it as
//! long as it may hold that memory; dropping the reservation gives the
//! bytes back. A request that does not fit is refused, never granted over
//! the limit: the caller then makes do with less (a scan reads without
//! read-ahead), which is how the engine degrades instead of growing.
//!
//! Used by the pinned blob pointer tables (`sst/pinned.rs`), by table
//! read-ahead (`sst/readahead`) and by shared passes' segments
//! (`db/read/shared_pass.rs`, in the read-ahead part).
//!
//! Thread-safe (atomics only). Invariants: `used <= limit` at every point,
//! `used` is the sum of the live reservations' bytes, `peak >= used`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A limit on bytes reserved from it, and how many are reserved now.
#[derive(Debug)]
pub(crate) struct MemoryGauge {
    limit: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
    refused: AtomicUsize,
}

impl MemoryGauge {
    pub(crate) fn new(limit: usize) -> Arc<MemoryGauge> {
        Arc::new(MemoryGauge {
            limit,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
        })
    }

    /// `bytes` of the gauge, or `None` if they do not fit under the limit.
    pub(crate) fn try_reserve(self: &Arc<Self>, bytes: usize) -> Option<Reservation> {
        self.take(bytes).then(|| Reservation {
            gauge: Arc::clone(self),
            bytes,
        })
    }

    /// Counts `bytes` as used if they fit under the limit (else counts a
    /// refusal).
    fn take(&self, bytes: usize) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&n| n <= self.limit)
            });
        match taken {
            Ok(before) => {
                let now = before + bytes;
                debug_assert!(now <= self.limit, "a reservation stays under the limit");
                self.peak.fetch_max(now, Ordering::Relaxed);
                true
            }
            Err(_) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// The limit, bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes reserved now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The most bytes ever reserved at once.
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Requests refused for lack of room.
    pub(crate) fn refused(&self) -> usize {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Bytes reserved from a [`MemoryGauge`], given back on drop.
#[derive(Debug)]
pub(crate) struct Reservation {
    gauge: Arc<MemoryGauge>,
    bytes: usize,
}

impl Reservation {
    /// The bytes reserved.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Makes the reservation `bytes`: a smaller one gives the difference
    /// back, a larger one takes it if it fits (false, and unchanged, if
    /// not).
    pub(crate) fn resize(&mut self, bytes: usize) -> bool {
        if bytes <= self.bytes {
            let less = self.bytes - bytes;
            self.gauge.used.fetch_sub(less, Ordering::AcqRel);
            self.bytes = bytes;
            return true;
        }
        let grown = self.gauge.take(bytes - self.bytes);
        if grown {
            self.bytes = bytes;
        }
        grown
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let before = self.gauge.used.fetch_sub(self.bytes, Ordering::AcqRel);
        debug_assert!(before >= self.bytes, "gave back more than was reserved");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_stay_under_the_limit_and_come_back() {
        let g = MemoryGauge::new(100);
        let a = g.try_reserve(60).expect("fits");
        assert!(g.try_reserve(41).is_none(), "over the limit is refused");
        assert_eq!(g.refused(), 1);
        let b = g.try_reserve(40).expect("exactly the limit fits");
        assert_eq!((g.used(), g.peak()), (100, 100));
        assert_eq!(a.bytes() + b.bytes(), 100);
        drop(a);
        assert_eq!(g.used(), 40);
        drop(b);
        assert_eq!((g.used(), g.peak()), (0, 100));
        assert!(g.try_reserve(usize::MAX).is_none(), "no overflow");
    }

    #[test]
    fn a_reservation_grows_within_the_limit_and_shrinks() {
        let g = MemoryGauge::new(100);
        let mut r = g.try_reserve(50).expect("fits");
        assert!(r.resize(80));
        assert_eq!((r.bytes(), g.used()), (80, 80));
        assert!(!r.resize(101), "past the limit");
        assert_eq!(
            (r.bytes(), g.used()),
            (80, 80),
            "a refused growth changes nothing"
        );
        assert!(r.resize(10));
        assert_eq!((r.bytes(), g.used()), (10, 10));
        drop(r);
        assert_eq!(g.used(), 0);
    }

    #[test]
    fn many_threads_never_pass_the_limit() {
        let g = MemoryGauge::new(1000);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for i in 0..10_000usize {
                        if let Some(r) = g.try_reserve(1 + i % 300) {
                            assert!(g.used() <= g.limit());
                            drop(r);
                        }
                    }
                });
            }
        });
        assert_eq!(g.used(), 0);
        assert!(g.peak() <= 1000);
    }
}
