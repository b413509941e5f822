//! [`Clock`]: the wall clock `Options::ttl` reads (`docs/ttl-and-filters.md`),
//! [`SystemClock`] (the real one, the default) and [`ManualClock`] (a clock
//! a test sets by hand, reached through `varve::testing`).
//!
//! Contract: `now` is the time since the Unix epoch at any precision; it
//! may jump either way (the TTL code rounds and clamps, so a clock that
//! goes back never makes an entry expire early or come back). Every
//! implementation is thread-safe (`Send + Sync`); reading it takes no lock.

#[cfg(any(test, feature = "testing"))]
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time for `Options::ttl` (tests inject
/// [`ManualClock`]; the default is [`SystemClock`]).
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Time since the Unix epoch (zero before it).
    fn now(&self) -> Duration;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
    }
}

/// A clock that moves only when told to, at nanosecond precision.
#[cfg(any(test, feature = "testing"))]
#[derive(Debug, Default)]
pub struct ManualClock {
    nanos: AtomicU64,
}

#[cfg(any(test, feature = "testing"))]
impl ManualClock {
    /// A clock reading `start` (since the Unix epoch).
    pub fn new(start: Duration) -> ManualClock {
        let c = ManualClock::default();
        c.set(start);
        c
    }

    /// Sets the time (it may go back).
    pub fn set(&self, t: Duration) {
        let n = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.store(n, Ordering::Release);
    }

    /// Moves the time forward by `d`.
    pub fn advance(&self, d: Duration) {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                Some(v.saturating_add(n))
            });
    }
}

#[cfg(any(test, feature = "testing"))]
impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_when_told() {
        let c = ManualClock::new(Duration::from_millis(1500));
        assert_eq!(c.now(), Duration::from_millis(1500));
        c.advance(Duration::from_nanos(7));
        assert_eq!(c.now(), Duration::from_nanos(1_500_000_007));
        c.set(Duration::from_secs(1));
        assert_eq!(c.now(), Duration::from_secs(1));
        assert!(SystemClock.now() > Duration::from_secs(1_600_000_000));
    }
}
