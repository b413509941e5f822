//! [`TimeMap`]: samples `(sequence number, unix milliseconds)` that bound
//! when entries were written, for `Options::ttl` (`docs/ttl-and-filters.md`),
//! and the rounding rules of the TTL arithmetic.
//!
//! A sample `(S, T)` is taken once `S` was the newest published sequence
//! number, with `T` the clock read *after* that, rounded *up* to the
//! millisecond ([`sample_ms`]): every entry with a sequence number `<= S`
//! was written at or before `T`. An entry of sequence `s` is then expired
//! at time `now` (rounded *down*, [`now_ms`]) once some sample with
//! `S >= s` has `T + ttl <= now`, the TTL rounded *up* ([`ttl_ms`]):
//! [`TimeMap::expired_through`] is the largest such `S`, so "expired" is a
//! prefix of the sequence numbers. With those roundings expiry is never
//! early at any clock precision: `write <= T`, `T + ttl <= now`.
//!
//! Plain data; single-threaded (the owner locks). Invariants (checked by
//! `debug_assert!`): sequence numbers strictly ascending, times
//! non-decreasing, at most [`MAX_SAMPLES`] samples. Thinning (dropping
//! every other sample of the older half when full; the newest
//! `MAX_SAMPLES / 2` are kept) only makes expiry later, never earlier,
//! and depends on the samples alone, so replaying the same edits gives the
//! same map. Manifests before format 7 hold whole seconds rounded down:
//! [`from_old_seconds`] turns one into the milliseconds that bound it.

use std::time::Duration;

/// Samples kept before thinning.
pub(crate) const MAX_SAMPLES: usize = 1024;

/// A sample's time: `t` rounded up to the millisecond (an upper bound of
/// every write before the clock was read).
pub(crate) fn sample_ms(t: Duration) -> u64 {
    u64::try_from(t.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// The time expiry is judged at: `t` rounded down to the millisecond.
pub(crate) fn now_ms(t: Duration) -> u64 {
    u64::try_from(t.as_millis()).unwrap_or(u64::MAX)
}

/// A TTL in milliseconds, rounded up.
pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// The milliseconds that bound an old (format <= 6) sample of whole unix
/// seconds, which were rounded down: the end of that second.
pub(crate) fn from_old_seconds(secs: u64) -> u64 {
    secs.saturating_add(1).saturating_mul(1000)
}

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
    /// time `ms` (milliseconds). A sample whose sequence number is not
    /// above the last one's adds nothing; a time below the last one's (a
    /// clock that went back) is raised to it.
    pub(crate) fn add(&mut self, seq: u64, ms: u64) {
        let ms = match self.samples.last() {
            Some(&(s, _)) if seq <= s => return,
            Some(&(_, t)) => ms.max(t),
            None => ms,
        };
        self.samples.push((seq, ms));
        if self.samples.len() > MAX_SAMPLES {
            // Every other sample of the older half goes; the newer half
            // stays at the sampling rate (the late bound needs it).
            let half = self.samples.len() / 2;
            let mut i = 0;
            self.samples.retain(|_| {
                i += 1;
                i > half || i % 2 == 0
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
    /// expired at unix time `now` (milliseconds, rounded down) for a
    /// time-to-live of `ttl` milliseconds (rounded up); 0: none is.
    pub(crate) fn expired_through(&self, now: u64, ttl: u64) -> u64 {
        let Some(cutoff) = now.checked_sub(ttl) else {
            return 0;
        };
        let n = self.samples.partition_point(|&(_, t)| t <= cutoff);
        n.checked_sub(1).map_or(0, |i| self.samples[i].0)
    }

    /// When (unix milliseconds) the oldest sample not expired at `now`
    /// expires for `ttl`, so the expiry floor moves next (`None`: every
    /// sample has).
    pub(crate) fn next_expiry(&self, now: u64, ttl: u64) -> Option<u64> {
        let cutoff = now.checked_sub(ttl);
        let n = cutoff.map_or(0, |c| self.samples.partition_point(|&(_, t)| t <= c));
        self.samples.get(n).map(|&(_, t)| t.saturating_add(ttl))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn time_map_expiry_follows_the_samples() {
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
        assert_eq!(m.next_expiry(10, 50), Some(150));
        assert_eq!(m.next_expiry(150, 50), Some(250));
        assert_eq!(m.next_expiry(250, 50), None);
    }

    #[test]
    fn time_map_rounding_never_shortens() {
        let t = Duration::from_nanos(1_700_000_000_000_000_001);
        assert_eq!(sample_ms(t), 1_700_000_000_001);
        assert_eq!(now_ms(t), 1_700_000_000_000);
        assert_eq!(ttl_ms(Duration::from_micros(1500)), 2);
        assert_eq!(ttl_ms(Duration::from_millis(1500)), 1500);
        assert_eq!(from_old_seconds(1_700_000_000), 1_700_000_001_000);
        assert_eq!(sample_ms(Duration::MAX), u64::MAX);
    }

    proptest! {
        /// Thinning never makes an entry expire earlier than the full
        /// sample list says.
        #[test]
        fn time_map_thinning_only_delays_expiry(
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

        /// Against a model of true write times in nanoseconds (not the
        /// map's rule): entries are written at known instants, samples are
        /// taken at later instants and rounded as the engine rounds them,
        /// and an entry the map calls expired at `now` was written at least
        /// `ttl` before `now`, at any sub-millisecond offset and TTL; and
        /// once `now` reaches the first sample after the write plus the TTL
        /// (plus the 2 ms the roundings may add), it is expired.
        #[test]
        fn time_map_never_early_against_true_times(
            gaps in proptest::collection::vec((0u64..3_000_000_000, any::<bool>()), 1..200),
            ttl_ns in 1_000_000u64..5_000_000_000,
            probes in proptest::collection::vec(0u64..650_000_000_000, 1..40),
        ) {
            let start = 1_700_000_000_123_456_789u64;
            let ttl = Duration::from_nanos(ttl_ns);
            let mut m = TimeMap::default();
            // (sequence, true write time, time of the first sample covering it)
            let mut entries: Vec<(u64, u64, Option<u64>)> = Vec::new();
            let mut t = start;
            let mut seq = 0;
            for &(gap, sample) in &gaps {
                t += gap;
                if sample {
                    // Every entry so far is published; the clock is read now.
                    m.add(seq, sample_ms(Duration::from_nanos(t)));
                    for e in entries.iter_mut().filter(|e| e.2.is_none()) {
                        e.2 = Some(t);
                    }
                } else {
                    seq += 1;
                    entries.push((seq, t, None));
                }
            }
            for &p in &probes {
                let now = start + p;
                let through = m.expired_through(now_ms(Duration::from_nanos(now)), ttl_ms(ttl));
                for &(s, written, sampled) in &entries {
                    if s <= through {
                        prop_assert!(written + ttl_ns <= now, "early: seq {} written {} ttl {} now {}", s, written, ttl_ns, now);
                    }
                    if let Some(at) = sampled
                        && at + ttl_ns + 2_000_000 <= now
                        && m.samples().len() < MAX_SAMPLES
                    {
                        prop_assert!(s <= through, "late: seq {} sampled {} now {}", s, at, now);
                    }
                }
            }
        }
    }
}
