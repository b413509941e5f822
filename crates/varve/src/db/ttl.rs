//! `Options::ttl`: the time samples the database takes and the expiry
//! floor reads and compactions use (`docs/ttl-and-filters.md`).
//!
//! The WAL sync thread takes a sample `(newest published sequence number,
//! unix seconds)` every [`sample_interval`] and recomputes the floor: every
//! entry with a sequence number below it is expired. Samples wait in
//! `DbInner::time_samples` until a flush writes them into its version
//! edit; the version keeps the persisted ones. The floor lives in one
//! atomic that only grows, so a read pays one load for it.
//! Thread-safe: the pending samples are under their own mutex, taken
//! after (never while holding) the version set's.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::DbInner;
use crate::keys::SequenceNumber;

/// Wall-clock seconds since the Unix epoch (0 before it).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How often the sync thread samples: a 64th of the TTL, within 1..=60 s.
pub(crate) fn sample_interval(ttl: Duration) -> Duration {
    (ttl / 64).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// Records a sample now (with a TTL only).
pub(crate) fn sample(db: &DbInner) {
    if db.options.ttl.is_none() {
        return;
    }
    let seq = db.writes.visible_sequence(&db.last_sequence);
    db.time_samples.lock().add(seq, unix_now());
}

/// The samples not yet in a version edit, for the next one (a flush's).
pub(crate) fn take_pending(db: &DbInner) -> Vec<(u64, u64)> {
    std::mem::take(&mut *db.time_samples.lock())
        .samples()
        .to_vec()
}

/// Recomputes the floor from the version's samples and the pending ones.
pub(crate) fn refresh(db: &DbInner) {
    let Some(ttl) = db.options.ttl else {
        return;
    };
    let now = unix_now();
    let ttl = ttl.as_secs();
    let persisted = db
        .super_version()
        .version
        .time_map()
        .expired_through(now, ttl);
    let pending = db.time_samples.lock().expired_through(now, ttl);
    let through = persisted.max(pending);
    if through > 0 {
        db.ttl_floor.fetch_max(through + 1, Ordering::AcqRel);
    }
}

/// Entries with a sequence number below this are expired (0: none is).
pub(crate) fn floor(db: &DbInner) -> SequenceNumber {
    db.ttl_floor.load(Ordering::Acquire)
}
