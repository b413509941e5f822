//! [`Pins`]: how many of each shard's shared scan chunks some iterator
//! holds, against a limit of half the shard, and [`Holders`], a chunk's
//! count of the iterators that hold it.
//!
//! The rest of a shard stays evictable, so the scan in front can always
//! load the next chunk while the ones behind hold theirs. The limit is per
//! shard because a load evicts within its own shard
//! ([`super::shared_chunks`]): with one limit for the whole pool, the held
//! chunks of a shard that the hash gave more than its share could fill
//! it, and its loads were turned away. Shared by the pool and every table
//! of held chunks ([`super::held_chunks`]), which pins a chunk when it
//! takes it and unpins it when it lets it go.
//!
//! Lock-free (atomics from [`crate::sync`], model-checked by the loom
//! tests below); `Send + Sync`. Invariants: a shard's count is the number
//! of its chunks with at least one holder and never exceeds the limit
//! except for the instant between a claim and its undo in [`Pins::pin`];
//! a chunk's holders never go below 0 (`debug_assert!`).

use crate::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// The iterators holding one chunk, and the shard whose pins count it.
#[derive(Debug)]
pub(crate) struct Holders {
    count: AtomicU32,
    shard: usize,
}

impl Holders {
    /// No holder yet, in shard `shard`.
    pub(crate) fn new(shard: usize) -> Holders {
        Holders {
            count: AtomicU32::new(0),
            shard,
        }
    }

    /// Holders now.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u32 {
        self.count.load(Ordering::Acquire)
    }
}

/// The pinned chunks of every shard (see the module docs).
#[derive(Debug)]
pub(crate) struct Pins {
    /// Per shard: chunks with at least one holder (each on a cache line of
    /// its own).
    pinned: Box<[PinCount]>,
    /// Per shard.
    limit: usize,
    /// Values iterators served from chunks they held, reported now and
    /// then (for `Db::stats`, with the pool's own hits).
    hits: AtomicU64,
}

/// One shard's count of pinned chunks, on a cache line of its own.
#[derive(Debug)]
#[repr(align(128))]
struct PinCount(AtomicUsize);

impl Pins {
    /// Counts for `shards` shards, each holding at most `limit` pinned
    /// chunks.
    pub(crate) fn new(shards: usize, limit: usize) -> Pins {
        Pins {
            pinned: (0..shards).map(|_| PinCount(AtomicUsize::new(0))).collect(),
            limit,
            hits: AtomicU64::new(0),
        }
    }

    /// Becomes a holder of the chunk of `h`; false (nothing changed) when
    /// it had no holder and its shard's limit of pinned chunks is reached.
    /// (Two first holders racing may both claim a place; the one that
    /// loses gives its place back, and may be refused although the chunk
    /// ends up pinned: the caller then reads without holding it.)
    pub(crate) fn pin(&self, h: &Holders) -> bool {
        loop {
            let n = h.count.load(Ordering::Acquire);
            if n > 0 {
                if h.count
                    .compare_exchange(n, n + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            // The first holder: a place among its shard's pinned chunks
            // first.
            let pinned = &self.pinned[h.shard].0;
            if pinned.fetch_add(1, Ordering::AcqRel) >= self.limit {
                pinned.fetch_sub(1, Ordering::AcqRel);
                return false;
            }
            if h.count
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return true;
            }
            // Someone else became the first holder meanwhile.
            pinned.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Stops holding the chunk of `h` (pinned by [`pin`](Self::pin)).
    pub(crate) fn unpin(&self, h: &Holders) {
        let before = h.count.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(before > 0, "unpinned more often than pinned");
        if before == 1 {
            let was = self.pinned[h.shard].0.fetch_sub(1, Ordering::AcqRel);
            debug_assert!(was > 0, "a shard's pinned count never goes below 0");
        }
    }

    /// Counts `n` values served from held chunks.
    pub(crate) fn add_hits(&self, n: u64) {
        if n > 0 {
            self.hits.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Values served from held chunks so far.
    pub(crate) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Chunks with at least one holder now.
    #[cfg(test)]
    pub(crate) fn pinned(&self) -> usize {
        self.pinned
            .iter()
            .map(|p| p.0.load(Ordering::Acquire))
            .sum()
    }

    /// The most chunks held at once (by new holders), in all shards.
    #[cfg(test)]
    pub(crate) fn limit(&self) -> usize {
        self.limit * self.pinned.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_shard_pins_at_most_its_limit_and_a_chunk_counts_once() {
        let pins = Pins::new(2, 2);
        let (a, b, c) = (Holders::new(0), Holders::new(0), Holders::new(0));
        let other = Holders::new(1);
        assert!(
            pins.pin(&a) && pins.pin(&a),
            "a second holder needs no place"
        );
        assert!(pins.pin(&b));
        assert!(!pins.pin(&c), "shard 0 is full");
        assert_eq!(c.count(), 0, "a refused pin changes nothing");
        assert!(pins.pin(&other), "shard 1 has its own places");
        assert_eq!(pins.pinned(), 3);
        pins.unpin(&a);
        assert!(!pins.pin(&c), "a still has a holder");
        pins.unpin(&a);
        assert!(pins.pin(&c), "a's place is free");
        for h in [&b, &c, &other] {
            pins.unpin(h);
        }
        assert_eq!(pins.pinned(), 0);
        pins.add_hits(3);
        pins.add_hits(0);
        assert_eq!(pins.hits(), 3);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use std::sync::Arc;

    use super::*;

    /// Two threads pin and unpin the same chunk while a third pins
    /// another of the same shard, with two places (so both first holders
    /// of the same chunk can claim one, and the loser must give its place
    /// back): some pin succeeds, and once all let go the count of pinned
    /// chunks and every chunk's holders are back to 0.
    #[test]
    fn loom_pins_count_each_held_chunk_once() {
        loom::model(|| {
            let pins = Arc::new(Pins::new(1, 2));
            let x = Arc::new(Holders::new(0));
            let y = Arc::new(Holders::new(0));
            let spawn = |h: &Arc<Holders>| {
                let (pins, h) = (Arc::clone(&pins), Arc::clone(h));
                loom::thread::spawn(move || {
                    let got = pins.pin(&h);
                    let pinned_then = pins.pinned();
                    if got {
                        assert!(h.count() > 0);
                        pins.unpin(&h);
                    }
                    (got, pinned_then)
                })
            };
            let t1 = spawn(&x);
            let t2 = spawn(&x);
            let t3 = spawn(&y);
            let mut any = false;
            for t in [t1, t2, t3] {
                let (got, pinned_then) = t.join().expect("thread");
                any |= got;
                // A claim and its undo may overlap for an instant: at most
                // one extra per racing first holder.
                assert!(pinned_then <= 3);
            }
            assert!(any, "some pin succeeds: the shard had a free place");
            assert_eq!(pins.pinned(), 0);
            assert_eq!((x.count(), y.count()), (0, 0));
        });
    }
}
