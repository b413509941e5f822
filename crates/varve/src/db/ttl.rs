//! `Options::ttl` and `KeyspaceOptions::ttl`: the time samples the
//! database takes and the expiry floors reads and compactions use
//! (`docs/ttl-and-filters.md`).
//!
//! A sample `(newest published sequence number, unix milliseconds)` is
//! taken at open, every [`sample_interval`] by the WAL sync thread
//! ([`step`]), at each flush and at close; its time is the clock
//! (`Options::clock`) read after the sequence number, rounded up, so it
//! bounds every write it covers. Each keyspace's floor (every entry below
//! it is expired) is recomputed from all the samples ([`refresh`]) and
//! only grows. Contracts:
//!
//! * **Never early**: the arithmetic of `version/time_map.rs` (sample
//!   times rounded up, now rounded down, the TTL rounded up, in ms).
//! * **Never back**: a floor is written to the manifest (tag 21, in its
//!   keyspace's part, with the pending samples and a `last_sequence` that
//!   covers them) *before* the atomic readers load is raised, and an open
//!   starts every keyspace's floor from its version, before any read and
//!   whether or not the keyspace's TTL is known yet. A floor or sample
//!   never names a sequence number a later write can take again (the
//!   edit's `last_sequence` keeps the open from reusing it).
//! * **Late by a bounded amount**: [`step`] samples once the interval has
//!   passed and refreshes when the oldest unexpired sample's time plus a
//!   TTL is reached, and tells the sync thread when that is next.
//!
//! Thread-safety: [`TtlState`] is under its own mutex, a leaf: it is taken
//! with the version set's lock held (flush, refresh), never the other way
//! round, and nothing else is locked while it is held.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::DbInner;
use crate::error::Result;
use crate::keys::SequenceNumber;
use crate::util::clock::{Clock, SystemClock};
use crate::version::VersionEdit;
use crate::version::time_map::{TimeMap, now_ms, sample_ms, ttl_ms};

/// The samples and timing of `Options::ttl` (in `DbInner::time_samples`).
#[derive(Debug, Default)]
pub(crate) struct TtlState {
    /// Every sample known: the manifest's and those taken since.
    map: TimeMap,
    /// Samples taken since the last edit that carried them.
    pending: Vec<(u64, u64)>,
    /// Clock time (ms) of the last sample.
    last_sample: Option<u64>,
    /// [`step`] does nothing before this clock time (ms; 0: run now).
    next_step: u64,
    /// The clock time (ms) through which [`step`] has run (tests wait for
    /// it, through `DbDebug`).
    stepped: u64,
}

/// The wall clock of `Options::ttl`: `Options::clock`, or the system's.
fn now(db: &DbInner) -> Duration {
    match &db.options.clock {
        Some(c) => c.now(),
        None => SystemClock.now(),
    }
}

/// How often the sync thread samples: a 64th of the TTL, within
/// 50 ms..=60 s.
pub(crate) fn sample_interval(ttl: Duration) -> Duration {
    (ttl / 64).clamp(Duration::from_millis(50), Duration::from_secs(60))
}

/// At open, before any read: the samples and every keyspace's floor from
/// the manifest, then a first sample and refresh.
pub(crate) fn start(db: &DbInner) -> Result<()> {
    {
        let vs = db.versions.lock();
        // Samples live in the default keyspace's version; any other
        // tree's (none is written there) are merged in sequence order.
        let mut all: Vec<(u64, u64)> = vs
            .trees()
            .flat_map(|(_, v)| v.time_map().samples().to_vec())
            .collect();
        all.sort_unstable();
        let mut st = db.time_samples.lock();
        for (seq, ms) in all {
            st.map.add(seq, ms);
        }
        drop(st);
        db.ttl_floor
            .fetch_max(vs.current().ttl_floor(), Ordering::AcqRel);
        for k in db.keyspaces.read().values().filter(|k| k.id != 0) {
            if let Some(v) = vs.current_of(k.id) {
                k.ttl_floor.fetch_max(v.ttl_floor(), Ordering::AcqRel);
            }
        }
    }
    sample(db);
    refresh(db)
}

/// Records a sample now (with a TTL only).
pub(crate) fn sample(db: &DbInner) {
    if shortest_ttl(db).is_none() {
        return;
    }
    let mut st = db.time_samples.lock();
    let seq = db.writes.visible_sequence(&db.last_sequence);
    // Read after the sequence number: every write it covers came before.
    let t = sample_ms(now(db));
    st.last_sample = Some(st.last_sample.map_or(t, |l| l.max(t)));
    st.next_step = 0;
    let last = st.map.samples().last().copied();
    if last.is_some_and(|(s, _)| seq <= s) {
        return;
    }
    st.map.add(seq, t);
    if let Some(&s) = st.map.samples().last() {
        st.pending.push(s);
    }
}

/// The samples not yet in a version edit, for the next one (a flush's or
/// the close's). The caller holds the version set's lock.
pub(crate) fn take_pending(db: &DbInner) -> Vec<(u64, u64)> {
    std::mem::take(&mut db.time_samples.lock().pending)
}

/// The keyspaces with a TTL now: `(id, ttl in ms, floor now)`.
fn ttls(db: &DbInner) -> Vec<(u32, u64, SequenceNumber)> {
    let mut out: Vec<_> = db
        .options
        .ttl
        .map(|t| (0, ttl_ms(t), floor(db)))
        .into_iter()
        .collect();
    out.extend(
        db.keyspaces
            .read()
            .values()
            .filter(|k| k.id != 0 && !k.dropped.load(Ordering::Acquire))
            .filter_map(|k| k.options().ttl.map(|t| (k.id, ttl_ms(t), k.ttl_floor()))),
    );
    out
}

fn raise(db: &DbInner, id: u32, floor: SequenceNumber) {
    if id == 0 {
        db.ttl_floor.fetch_max(floor, Ordering::AcqRel);
    } else if let Some(k) = db.keyspace_state(id) {
        k.ttl_floor.fetch_max(floor, Ordering::AcqRel);
    }
}

/// Recomputes every keyspace's floor from the samples. A floor that rises
/// is made durable in the manifest first (with the pending samples), so it
/// holds after any reopen; in a read-only database it rises in memory
/// only. Errors: the manifest write's (the floors then stay where they
/// were: expiry is late, never undone).
pub(crate) fn refresh(db: &DbInner) -> Result<()> {
    let ttls = ttls(db);
    if ttls.is_empty() {
        return Ok(());
    }
    let at = now_ms(now(db));
    let raised: Vec<(u32, SequenceNumber)> = {
        let st = db.time_samples.lock();
        ttls.iter()
            .filter_map(|&(id, ttl, now_floor)| {
                let through = st.map.expired_through(at, ttl);
                (through > 0 && through + 1 > now_floor).then_some((id, through + 1))
            })
            .collect()
    };
    if raised.is_empty() {
        return Ok(());
    }
    if db.read_only {
        for &(id, f) in &raised {
            raise(db, id, f);
        }
        return Ok(());
    }
    let mut vs = db.versions.lock();
    let samples = take_pending(db);
    let covered = samples
        .iter()
        .map(|s| s.0)
        .chain(raised.iter().map(|r| r.1 - 1))
        .max();
    let mut edits = vec![VersionEdit {
        time_samples: samples.clone(),
        last_sequence: covered,
        ..VersionEdit::default()
    }];
    for &(id, f) in &raised {
        if id == 0 {
            edits[0].ttl_floor = Some(f);
        } else if vs.current_of(id).is_some() {
            edits.push(VersionEdit {
                keyspace: id,
                ttl_floor: Some(f),
                ..VersionEdit::default()
            });
        }
    }
    if let Err(e) = vs.log_and_apply_group(edits) {
        // Kept for the next edit (expiry waits; nothing is undone).
        let mut st = db.time_samples.lock();
        let later = std::mem::take(&mut st.pending);
        st.pending = samples;
        st.pending.extend(later);
        return Err(e);
    }
    for &(id, f) in &raised {
        db.install_tree_version(&vs, id);
        raise(db, id, f);
    }
    if !raised.iter().any(|r| r.0 == 0) {
        db.install_tree_version(&vs, 0);
    }
    Ok(())
}

/// The sync thread's TTL work, run on each of its wake-ups: samples once
/// [`sample_interval`] has passed since the last sample, refreshes the
/// floors, and returns how long until it has work again (`None`: no
/// keyspace has a TTL). A failed refresh is logged and retried after an
/// interval.
pub(crate) fn step(db: &DbInner) -> Option<Duration> {
    let shortest = shortest_ttl(db)?;
    let interval = ttl_ms(sample_interval(shortest));
    let at = now_ms(now(db));
    {
        let mut st = db.time_samples.lock();
        if at < st.next_step {
            st.stepped = st.stepped.max(at);
            return Some(Duration::from_millis(st.next_step - at));
        }
    }
    let due = db
        .time_samples
        .lock()
        .last_sample
        .is_none_or(|t| at >= t.saturating_add(interval));
    if due {
        sample(db);
    }
    let failed = refresh(db).err();
    if let Some(e) = &failed {
        db.info_log.log(format!(
            "ttl: the expiry floors could not be persisted: {e}"
        ));
    }
    let ttls = ttls(db);
    let mut st = db.time_samples.lock();
    let mut next = st.last_sample.map_or(at, |t| t.saturating_add(interval));
    if failed.is_some() {
        next = at.saturating_add(interval);
    } else {
        for &(_, ttl, _) in &ttls {
            if let Some(e) = st.map.next_expiry(at, ttl) {
                next = next.min(e);
            }
        }
    }
    let next = next.max(at + 1);
    st.next_step = next;
    st.stepped = st.stepped.max(at);
    Some(Duration::from_millis(next - at))
}

/// A keyspace's TTL was set or changed (`Db::keyspace`): its floor catches
/// up now, and the sync thread's next [`step`] recomputes its timing. A
/// failed refresh is logged (expiry waits for the next one).
pub(crate) fn options_changed(db: &DbInner) {
    db.time_samples.lock().next_step = 0;
    sample(db);
    if let Err(e) = refresh(db) {
        db.info_log.log(format!(
            "ttl: the expiry floors could not be persisted: {e}"
        ));
    }
}

/// The clock time (ms) through which the sync thread's [`step`] has run.
pub(crate) fn stepped_through(db: &DbInner) -> u64 {
    db.time_samples.lock().stepped
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
pub(crate) fn shortest_ttl(db: &DbInner) -> Option<Duration> {
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
