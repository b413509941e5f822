//! [`Db::resume`](super::Db::resume): bringing writes back after a full
//! disk poisoned the database, without a reopen.
//!
//! Owns no state; it sequences what other modules own. Under the write
//! path's `switching` mutex (one switch at a time, so no memtable switch
//! or other resume runs): refuse unless the first failure was a full disk;
//! start a new manifest if a manifest write failed
//! (`VersionSet::restart_manifest`); write out and close the blob files a
//! write lane gave up after a failure (their staged values are
//! acknowledged writes; they are recorded closed once the flush below put
//! their pointers in tables) and open the next file of each lane whose put
//! failed (so a disk still too full for it fails the resume); end the
//! current WAL and start a fresh
//! one (`write::restart_log`, which takes the write gate exclusively, drops
//! the writes that failed from the memtable and clears the poison before
//! it lets writers in). Then, without locks, wait until the background
//! flush has written every memtable to L0 — the edit that records that
//! retires the old WALs — or fails again, and delete what the edits
//! retired.
//!
//! Invariants: the poison is cleared only after every step that needs the
//! disk succeeded except the flush; a step that fails leaves the database
//! poisoned and a later `resume` starts over from the state it left (the
//! steps are idempotent: a cut log is cut again at the same point, a
//! failed manifest is replaced again, a half-created WAL was removed).
//! Thread-safety: callable from any thread, concurrently with writes,
//! reads and other `resume` calls.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::DbInner;
use super::write;
use crate::error::{Error, Result};

/// See [`Db::resume`](super::Db::resume).
pub(crate) fn resume(db: &DbInner) -> Result<()> {
    if db.closed.load(Ordering::Acquire) {
        return Err(Error::Closed);
    }
    if db.read_only {
        return Err(Error::ReadOnly(db.dir.clone()));
    }
    {
        let _one = db.writes.switching();
        let Some(poison) = db.poison_state() else {
            return Ok(());
        };
        if !poison.resumable {
            return Err(Error::Poisoned(format!(
                "{}; Db::resume recovers only from a full disk (ENOSPC/EDQUOT): reopen the \
                 database",
                poison.why
            )));
        }
        db.info_log.log(format!("resume: after \"{}\"", poison.why));
        db.versions.lock().restart_manifest()?;
        let _no_lane_syncs = db.writes.no_lane_syncs();
        db.blob_lanes.try_for_each(|id, lanes| {
            let closed = lanes.close_failed()?;
            if closed > 0 {
                db.info_log.log(format!(
                    "resume: wrote out {closed} blob files of keyspace {id} given up after \
                     failures"
                ));
            }
            // A lane whose put failed (perhaps creating its next file, with
            // nothing to write out) must have room for that file now.
            lanes.reopen_after_failure(&write::blobs::VersionFiles::of(db, id))
        })?;
        write::restart_log(db)?;
    }
    loop {
        if !db.super_version().has_imms() {
            // The tables point into the blob files written out above now.
            db.blob_lanes.try_for_each(|id, lanes| {
                lanes
                    .record_closed(&write::blobs::VersionFiles::of(db, id))
                    .map(|_| ())
            })?;
            // The flush thread deletes what its last edit retired right
            // after installing it; do it here too, so the old logs (and a
            // failed manifest, and the tables of its edit) are gone when
            // resume returns.
            super::obsolete::delete_obsolete_files(db);
            db.info_log
                .log("resume: every memtable flushed, writes accepted");
            return Ok(());
        }
        if db.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(poison) = db.poison_state() {
            return Err(poison.error());
        }
        db.bg.kick();
        db.bg.wait_progress(Duration::from_millis(50));
    }
}
