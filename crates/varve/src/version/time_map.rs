//! [`TimeMap`]: samples `(sequence number, unix seconds)` that bound when
//! entries were written, for `Options::ttl` (`docs/ttl-and-filters.md`).
//!
//! A sample `(S, T)` is taken at wall time `T` when `S` was the newest
//! published sequence number, so every entry with a sequence number
//! `<= S` was written at or before `T`. An entry of sequence `s` is then
//! expired at time `now` once some sample with `S >= s` has
//! `T + ttl <= now`: [`TimeMap::expired_through`] is the largest such `S`,
//! so "expired" is a prefix of the sequence numbers. Expiry is never early
//! (each sample bounds write times from above); it is late by at most the
//! time between samples, and by more for entries a crash left without a
//! persisted sample after them (they take the next sample's time).
//!
//! Plain data; single-threaded (the owner locks). Invariants (checked by
//! `debug_assert!`): sequence numbers strictly ascending, times
//! non-decreasing, at most [`MAX_SAMPLES`] samples. Thinning (dropping
//! every other sample when full) only makes expiry later, never earlier,
//! and depends on the samples alone, so replaying the same edits gives the
//! same map.

/// Samples kept before thinning.
pub(crate) const MAX_SAMPLES: usize = 1024;

/// Sequence-number-to-time samples; see the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TimeMap {
    samples: Vec<(u64, u64)>,
}

impl TimeMap {
    /// The samples, oldest first.
    pub(crate) fn samples(&self) -> &[(u64, u64)] {
        &self.samples
    }

    /// Records that every entry up to sequence `seq` was written by unix
    /// time `secs`. A sample whose sequence number is not above the last
    /// one's adds nothing; a time below the last one's (a clock that went
    /// back) is raised to it.
    pub(crate) fn add(&mut self, seq: u64, secs: u64) {
        let secs = match self.samples.last() {
            Some(&(s, _)) if seq <= s => return,
            Some(&(_, t)) => secs.max(t),
            None => secs,
        };
        self.samples.push((seq, secs));
        if self.samples.len() > MAX_SAMPLES {
            // Keep the odd positions and the newest sample.
            let last = self.samples.len() - 1;
            let mut i = 0;
            self.samples.retain(|_| {
                i += 1;
                i % 2 == 0 || i - 1 == last
            });
        }
        debug_assert!(self.samples.len() <= MAX_SAMPLES);
        debug_assert!(
            self.samples
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1)
        );
    }

    /// The largest sequence number every entry at or below which is
    /// expired at unix time `now` for a time-to-live of `ttl` seconds (0:
    /// none is).
    pub(crate) fn expired_through(&self, now: u64, ttl: u64) -> u64 {
        let Some(cutoff) = now.checked_sub(ttl) else {
            return 0;
        };
        let n = self.samples.partition_point(|&(_, t)| t <= cutoff);
        n.checked_sub(1).map_or(0, |i| self.samples[i].0)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn expiry_follows_the_samples() {
        let mut m = TimeMap::default();
        m.add(10, 100);
        m.add(20, 200);
        m.add(20, 250); // not newer: ignored
        m.add(30, 150); // clock went back: raised to 200
        assert_eq!(m.samples(), &[(10, 100), (20, 200), (30, 200)]);
        assert_eq!(m.expired_through(99, 0), 0);
        assert_eq!(m.expired_through(150, 50), 10);
        assert_eq!(m.expired_through(249, 50), 10);
        assert_eq!(m.expired_through(250, 50), 30);
        assert_eq!(m.expired_through(10, 50), 0, "now before the ttl: nothing");
    }

    proptest! {
        /// Thinning never makes an entry expire earlier than the full
        /// sample list says.
        #[test]
        fn thinning_only_delays_expiry(
            steps in proptest::collection::vec((1u64..5, 0u64..3), 1..3000),
            probes in proptest::collection::vec((0u64..10_000, 0u64..100), 1..20),
        ) {
            let mut m = TimeMap::default();
            let mut full: Vec<(u64, u64)> = Vec::new();
            let (mut seq, mut t) = (0, 0);
            for &(ds, dt) in &steps {
                seq += ds;
                t += dt;
                m.add(seq, t);
                full.push((seq, t));
            }
            prop_assert!(m.samples().len() <= MAX_SAMPLES);
            prop_assert_eq!(m.samples().last(), full.last());
            for &(now, ttl) in &probes {
                let exact = full.iter().filter(|s| s.1 + ttl <= now).map(|s| s.0).max().unwrap_or(0);
                prop_assert!(m.expired_through(now, ttl) <= exact);
            }
        }
    }
}
