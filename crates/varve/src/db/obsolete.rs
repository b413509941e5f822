//! Deleting files no version needs any more: WALs whose data is in tables,
//! tables retired by compactions, old manifests, leftover temporary files.
//!
//! Called only after the edit that retired them is durable in the manifest.
//! Tables still pinned by a live `Version` (held by a reader or iterator)
//! or being written by a running flush or compaction are kept. Failures to
//! delete are logged, not fatal (the next pass retries); a file another
//! pass already deleted is no failure. Thread-safe.

use std::collections::HashSet;

use super::DbInner;
use crate::error::Error;
use crate::filenames::{self, FileKind};

/// Passes again if the last pass kept files for readers (see
/// `DbInner::obsolete_kept`).
pub(crate) fn retry_if_kept(db: &DbInner) {
    if db.obsolete_kept.load(std::sync::atomic::Ordering::Relaxed) {
        delete_obsolete_files(db);
    }
}

/// Deletes every obsolete file in the database directory.
pub(crate) fn delete_obsolete_files(db: &DbInner) {
    if db.read_only {
        return;
    }
    let listing = match db.fs.list_dir(&db.dir) {
        Ok(l) => l,
        Err(e) => {
            db.info_log
                .log(format!("listing for obsolete files failed: {e}"));
            return;
        }
    };
    let being_written: HashSet<u64> = db.pending_outputs.lock().clone();
    // What readers' versions still name: such files stay for now.
    let mut read: HashSet<u64> = HashSet::new();
    {
        let mut live = db.live_versions.lock();
        live.retain(|w| w.strong_count() > 0);
        for v in live.iter().filter_map(|w| w.upgrade()) {
            read.extend(v.live_file_numbers());
        }
    }
    let names = {
        let vs = db.versions.lock();
        // Checked under the version-set lock: a checkpoint pauses deletion
        // under the same lock, so no list computed after that is acted on.
        if db
            .deletions_paused
            .load(std::sync::atomic::Ordering::Acquire)
            > 0
        {
            return;
        }
        vs.obsolete_files(&listing, &being_written)
    };
    let (kept, names): (Vec<String>, Vec<String>) =
        names
            .into_iter()
            .partition(|name| match filenames::parse(name) {
                Some(FileKind::Table(n) | FileKind::Blob(n)) => read.contains(&n),
                _ => false,
            });
    // Files kept only for a reader's version: the idle compaction thread
    // passes again later.
    db.obsolete_kept
        .store(!kept.is_empty(), std::sync::atomic::Ordering::Relaxed);
    for name in names {
        let path = db.dir.join(&name);
        match db.fs.remove_file(&path) {
            Ok(()) => {
                match filenames::parse(&name) {
                    Some(FileKind::Table(n)) => db.table_cache.evict(n),
                    Some(FileKind::Blob(n)) => db.blobs.forget(n),
                    _ => {}
                }
                db.info_log.log(format!("deleted obsolete {name}"));
            }
            // Another pass (a flush and a resume, say) got there first.
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => db.info_log.log(format!("deleting {name} failed: {e}")),
        }
    }
}
