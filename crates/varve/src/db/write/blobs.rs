//! Key-value separation on the write path (`docs/blob-files.md`): before a
//! batch takes its sequence numbers, every put whose value is at least
//! `Options::min_blob_size` bytes is written to a blob file through the
//! write lanes, and the batch carries the value's pointer instead.
//!
//! Thread-safe: lanes serialize per lane; the version set is locked only to
//! register a new blob file or record a sealed one. Invariant: a pointer
//! enters a batch only after its value is in the page cache of a blob file
//! the manifest lists, so a `kill -9` at any point leaves no pointer to
//! bytes that are not there.

use super::super::DbInner;
use crate::batch::{BatchOp, WriteBatch};
use crate::blob::file_writer::BlobFileMeta;
use crate::blob::format::BlobPointer;
use crate::blob::lane::{BlobFiles, BlobWriteLanes};
use crate::db::memtables::SuperVersion;
use crate::db::stats::Counters;
use crate::error::Result;
use crate::version::{BlobFileEdit, VersionEdit};

/// Blob file numbers and records through the database's version set.
pub(crate) struct VersionFiles<'a>(pub(crate) &'a DbInner);

impl BlobFiles for VersionFiles<'_> {
    fn open_blob_file(&self) -> Result<u64> {
        let mut vs = self.0.versions.lock();
        let number = vs.new_file_number();
        vs.log_and_apply(VersionEdit {
            blob_files: vec![BlobFileEdit {
                number,
                ..BlobFileEdit::default()
            }],
            ..VersionEdit::default()
        })?;
        // Readers take their sequence before their super version: one that
        // can see a pointer into this file (written after this returns)
        // holds a version that lists it, so the obsolete-file pass keeps
        // the file while that reader lives.
        self.0.install(&vs, |sv| SuperVersion {
            version: vs.current(),
            ..sv.clone()
        });
        Ok(number)
    }

    fn sealed_blob_file(&self, meta: BlobFileMeta) -> Result<()> {
        self.record(BlobFileEdit::sealed(&meta))
    }

    fn closed_failed_blob_file(&self, number: u64, size: u64) -> Result<()> {
        self.0.info_log.log(format!(
            "resume: closed blob file {number} ({size} bytes), given up after a failed write"
        ));
        self.record(BlobFileEdit::crash_closed(number, size))
    }
}

impl VersionFiles<'_> {
    /// Logs `edit` and installs the version that has it.
    fn record(&self, edit: BlobFileEdit) -> Result<()> {
        let mut vs = self.0.versions.lock();
        vs.log_and_apply(VersionEdit {
            blob_files: vec![edit],
            ..VersionEdit::default()
        })?;
        self.0.install(&vs, |sv| SuperVersion {
            version: vs.current(),
            ..sv.clone()
        });
        Ok(())
    }
}

/// `batch` with its large values moved to blob files, and the value bytes
/// moved; `None` when it has none (or blob files are off), and the batch
/// stays as it is.
pub(crate) fn separate(db: &DbInner, batch: &WriteBatch) -> Result<Option<(WriteBatch, u64)>> {
    let Some(lanes) = &db.blob_lanes else {
        return Ok(None);
    };
    // Only the default keyspace keeps values in blob files.
    let large = |id: u32, op: &BatchOp<'_>| {
        id == 0 && matches!(op, BatchOp::Put { value, .. } if lanes.takes(value.len()))
    };
    if !batch.iter_in().any(|(id, op)| large(id, &op)) {
        return Ok(None);
    }
    let mut out = WriteBatch::new();
    let mut moved = 0u64;
    for (id, op) in batch.iter_in() {
        match op {
            BatchOp::Put { key, value } if large(id, &op) => {
                out.put_blob_index(key, &stage(db, lanes, key, value)?.encode());
                moved += value.len() as u64;
            }
            BatchOp::Put { key, value } => out.put_to(id, key, value),
            BatchOp::Delete { key } => out.delete_to(id, key),
            BatchOp::PutBlob { key, pointer } => {
                debug_assert_eq!(
                    id, 0,
                    "only the engine writes pointers, in the default keyspace"
                );
                out.put_blob_index(key, pointer)
            }
            BatchOp::DeleteRange { start, end } => out.delete_range_to(id, start, end),
        }
    }
    Ok(Some((out, moved)))
}

/// The batch of a single put of `value` (which `lanes` take): the value is
/// staged straight from the caller's slice, and the batch holds only its
/// pointer.
pub(crate) fn separate_put(
    db: &DbInner,
    lanes: &BlobWriteLanes,
    key: &[u8],
    value: &[u8],
) -> Result<WriteBatch> {
    debug_assert!(lanes.takes(value.len()));
    let p = stage(db, lanes, key, value)?;
    let pointer = p.encode();
    let mut out = WriteBatch::for_one(key.len(), pointer.len());
    out.put_blob_index(key, &pointer);
    Ok(out)
}

/// Stages `value` (for `key`) in a write lane; its pointer. A value that
/// could not be staged fails the write before it has a sequence number;
/// the lane's file is given up and the database poisoned, as after a
/// failed WAL write.
fn stage(db: &DbInner, lanes: &BlobWriteLanes, key: &[u8], value: &[u8]) -> Result<BlobPointer> {
    let p = lanes
        .put(&VersionFiles(db), key, value)
        .inspect_err(|e| db.poison_err("blob write failed", e))?;
    Counters::add(&db.counters.blob_values_written, 1);
    Counters::add(&db.counters.blob_bytes_written, value.len() as u64);
    Ok(p)
}
