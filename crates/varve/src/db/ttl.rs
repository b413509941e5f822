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
    if shortest_ttl(db).is_none() {
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

/// Recomputes every keyspace's floor from the version's samples and the
/// pending ones.
pub(crate) fn refresh(db: &DbInner) {
    let now = unix_now();
    let sv = db.super_version();
    let through = |ttl: std::time::Duration| {
        let ttl = ttl.as_secs();
        let persisted = sv.version.time_map().expired_through(now, ttl);
        let pending = db.time_samples.lock().expired_through(now, ttl);
        persisted.max(pending)
    };
    if let Some(ttl) = db.options.ttl {
        let t = through(ttl);
        if t > 0 {
            db.ttl_floor.fetch_max(t + 1, Ordering::AcqRel);
        }
    }
    let states: Vec<_> = db.keyspaces.read().values().cloned().collect();
    for k in states.iter().filter(|k| k.id != 0) {
        if let Some(ttl) = k.options().ttl {
            let t = through(ttl);
            if t > 0 {
                k.ttl_floor.fetch_max(t + 1, Ordering::AcqRel);
            }
        }
    }
}

/// Entries with a sequence number below this are expired (0: none is).
pub(crate) fn floor(db: &DbInner) -> SequenceNumber {
    db.ttl_floor.load(Ordering::Acquire)
}

/// [`floor`] of keyspace `id`'s TTL (`KeyspaceOptions::ttl`).
pub(crate) fn floor_of(db: &DbInner, id: u32) -> SequenceNumber {
    if id == 0 {
        return floor(db);
    }
    db.keyspace_state(id).map_or(0, |k| k.ttl_floor())
}

/// The shortest TTL of any keyspace (the sampling interval follows it).
pub(crate) fn shortest_ttl(db: &DbInner) -> Option<std::time::Duration> {
    let others = db
        .keyspaces
        .read()
        .iter()
        .filter(|(id, _)| **id != 0)
        .filter_map(|(_, k)| k.options().ttl)
        .min();
    match (db.options.ttl, others) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
