//! Key-value separation on the write path (`docs/blob-files.md`): before a
//! batch takes its sequence numbers, every put whose value is at least its
//! keyspace's `min_blob_size` bytes is written to a blob file through that
//! keyspace's write lanes, and the batch carries the value's pointer
//! instead.
//!
//! Thread-safe: lanes serialize per lane; the version set is locked only to
//! register a new blob file or record a sealed one. Invariant: a pointer
//! enters a batch only after its value is in the page cache of a blob file
//! the manifest lists, so a `kill -9` at any point leaves no pointer to
//! bytes that are not there.

use std::sync::Arc;

use super::super::DbInner;
use crate::batch::{BatchOp, WriteBatch};
use crate::blob::file_writer::BlobFileMeta;
use crate::blob::format::BlobPointer;
use crate::blob::lane::{BlobFiles, BlobWriteLanes, Mark};
use crate::db::stats::Counters;
use crate::error::{Error, Result};
use crate::version::{BlobFileEdit, VersionEdit};

/// Blob file numbers and records through the database's version set, in
/// keyspace `id`'s tree (the blob files a keyspace's lanes write belong to
/// it).
pub(crate) struct VersionFiles<'a> {
    db: &'a DbInner,
    id: u32,
}

impl<'a> VersionFiles<'a> {
    /// The blob files of keyspace `id` of `db`.
    pub(crate) fn of(db: &'a DbInner, id: u32) -> VersionFiles<'a> {
        VersionFiles { db, id }
    }

    /// Logs `edit` and installs the version that has it; a dropped
    /// keyspace's lanes get `KeyspaceNotFound` (and no manifest write).
    fn record(&self, edit: BlobFileEdit) -> Result<()> {
        let mut vs = self.db.versions.lock();
        if vs.current_of(self.id).is_none() {
            return Err(Error::KeyspaceNotFound(format!("(id {})", self.id)));
        }
        vs.log_and_apply(VersionEdit {
            keyspace: self.id,
            blob_files: vec![edit],
            ..VersionEdit::default()
        })?;
        // Readers take their sequence before their super version: one that
        // can see a pointer into a new file (written after this returns)
        // holds a version that lists it, so the obsolete-file pass keeps
        // the file while that reader lives.
        self.db.install_tree_version(&vs, self.id);
        Ok(())
    }
}

impl BlobFiles for VersionFiles<'_> {
    fn open_blob_file(&self) -> Result<u64> {
        let number = self.db.versions.lock().new_file_number();
        self.record(BlobFileEdit {
            number,
            ..BlobFileEdit::default()
        })?;
        Ok(number)
    }

    fn sealed_blob_file(&self, meta: BlobFileMeta) -> Result<()> {
        self.record(BlobFileEdit::sealed(&meta))
    }

    fn closed_failed_blob_file(&self, number: u64, size: u64) -> Result<()> {
        self.db.info_log.log(format!(
            "resume: closed blob file {number} ({size} bytes) of keyspace {}, given up after a \
             failed write",
            self.id
        ));
        self.record(BlobFileEdit::crash_closed(number, size))
    }
}

/// Makes every value every keyspace's lanes appended so far durable.
pub(crate) fn sync_all(db: &DbInner) -> Result<()> {
    db.blob_lanes.try_for_each(|_, lanes| lanes.sync())
}

/// Where every keyspace's lanes' appended bytes end now (`BlobLane::mark`):
/// taken when a flush begins, after its memtables stopped taking writes,
/// so the marks cover every value those memtables point to (a value is
/// appended before its write takes its place in a memtable).
pub(crate) fn marks(db: &DbInner) -> Vec<(u32, Vec<Option<Mark>>)> {
    let mut marks = Vec::new();
    let _ = db.blob_lanes.try_for_each(|id, lanes| {
        marks.push((id, lanes.marks()));
        Ok::<(), ()>(())
    });
    marks
}

/// Makes the bytes below `marks` durable (`BlobWriteLanes::sync_to_marks`),
/// for a flush: its writers are not held up while the disk works. A
/// keyspace dropped since has nothing left to make durable.
pub(crate) fn sync_to_marks(db: &DbInner, marks: &[(u32, Vec<Option<Mark>>)]) -> Result<()> {
    for (id, marks) in marks {
        if let Some(lanes) = db.blob_lanes.of(*id) {
            lanes.sync_to_marks(marks)?;
        }
    }
    Ok(())
}

/// Seals the open file of every lane of every keyspace that had no value
/// since the previous call, or only a trickle (at each flush; see
/// `BlobLane::seal_if_idle`).
/// A keyspace dropped meanwhile is skipped (its lanes are let go).
pub(crate) fn seal_idle(db: &DbInner) -> Result<()> {
    db.blob_lanes.try_for_each(
        |id, lanes| match lanes.seal_idle(&VersionFiles::of(db, id)) {
            Ok(_) | Err(Error::KeyspaceNotFound(_)) => Ok(()),
            Err(e) => Err(e),
        },
    )
}

/// Seals every keyspace's lanes' open files (at close).
pub(crate) fn seal_all(db: &DbInner) -> Result<()> {
    db.blob_lanes
        .try_for_each(|id, lanes| lanes.seal(&VersionFiles::of(db, id)))
}

/// The lanes of each keyspace a batch writes to, looked up once per run of
/// operations in one keyspace.
struct LanesOf<'a> {
    db: &'a DbInner,
    last: Option<(u32, Option<Arc<BlobWriteLanes>>)>,
}

impl LanesOf<'_> {
    fn get(&mut self, id: u32) -> Option<Arc<BlobWriteLanes>> {
        match &self.last {
            Some((last, lanes)) if *last == id => lanes.clone(),
            _ => {
                let lanes = self.db.blob_lanes.of(id);
                self.last = Some((id, lanes.clone()));
                lanes
            }
        }
    }

    /// Whether `op` (in keyspace `id`) is a put whose value goes to a blob
    /// file.
    fn large(&mut self, id: u32, op: &BatchOp<'_>) -> bool {
        match op {
            BatchOp::Put { value, .. } => {
                self.db.blob_lanes.may_take(value.len())
                    && self.get(id).is_some_and(|l| l.takes(value.len()))
            }
            _ => false,
        }
    }
}

/// `batch` with its large values moved to blob files, and the value bytes
/// moved; `None` when it has none (or blob files are off), and the batch
/// stays as it is.
pub(crate) fn separate(db: &DbInner, batch: &WriteBatch) -> Result<Option<(WriteBatch, u64)>> {
    if db.blob_lanes.is_empty() {
        return Ok(None);
    }
    // Each keyspace's values go to its own lanes (its own blob files);
    // a keyspace without lanes keeps them inline.
    let mut lanes = LanesOf { db, last: None };
    if !batch.iter_in().any(|(id, op)| lanes.large(id, &op)) {
        return Ok(None);
    }
    let mut out = WriteBatch::new();
    let mut moved = 0u64;
    for (id, op) in batch.iter_in() {
        match op {
            BatchOp::Put { key, value } if lanes.large(id, &op) => {
                let Some(l) = lanes.get(id) else {
                    unreachable!("large() found lanes")
                };
                match stage(db, id, &l, key, value)? {
                    Some(p) => {
                        out.put_blob_index_to(id, key, &p.encode());
                        moved += value.len() as u64;
                    }
                    // No room in the memory budget for a lane's staging
                    // slots: the value stays inline.
                    None => out.put_to(id, key, value),
                }
            }
            BatchOp::Put { key, value } => out.put_to(id, key, value),
            BatchOp::Delete { key } => out.delete_to(id, key),
            BatchOp::PutBlob { key, pointer } => out.put_blob_index_to(id, key, pointer),
            BatchOp::DeleteRange { start, end } => out.delete_range_to(id, start, end),
        }
    }
    Ok(Some((out, moved)))
}

/// The batch of a single put of `value` in keyspace `id` (whose `lanes`
/// take it): the value is
/// staged straight from the caller's slice, and the batch holds only its
/// pointer; `None` when the memory budget has no room for the staging
/// slots of the lane's next file (the caller keeps the value inline).
pub(crate) fn separate_put(
    db: &DbInner,
    id: u32,
    lanes: &BlobWriteLanes,
    key: &[u8],
    value: &[u8],
) -> Result<Option<WriteBatch>> {
    debug_assert!(lanes.takes(value.len()));
    let Some(p) = stage(db, id, lanes, key, value)? else {
        return Ok(None);
    };
    let pointer = p.encode();
    let mut out = WriteBatch::for_one(key.len(), pointer.len());
    out.put_blob_index_to(id, key, &pointer);
    Ok(Some(out))
}

/// Stages `value` (for `key`) in a write lane of keyspace `id`; its
/// pointer. A value that could not be staged fails the write before it has
/// a sequence number; the lane's file is given up and the database
/// poisoned, as after a failed WAL write (unless the keyspace was dropped
/// meanwhile: the write fails with `KeyspaceNotFound`, as it would have
/// later). `None`: the lane needed a new file and the memory budget had no
/// room for its staging slots; nothing was written.
fn stage(
    db: &DbInner,
    id: u32,
    lanes: &BlobWriteLanes,
    key: &[u8],
    value: &[u8],
) -> Result<Option<BlobPointer>> {
    let Some(p) = lanes
        .put(&VersionFiles::of(db, id), key, value)
        .inspect_err(|e| {
            if !matches!(e, Error::KeyspaceNotFound(_)) {
                db.poison_err("blob write failed", e)
            }
        })?
    else {
        return Ok(None);
    };
    Counters::add(&db.counters.blob_values_written, 1);
    Counters::add(&db.counters.blob_bytes_written, value.len() as u64);
    Ok(Some(p))
}
