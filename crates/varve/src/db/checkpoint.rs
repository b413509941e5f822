//! Online checkpoints: a consistent, openable copy of a live database in a
//! new directory, made while writers keep writing.
//!
//! Protocol (see `docs/cli.md`, "checkpoint"):
//! 1. sync the current WAL (every acknowledged write is in a WAL file);
//! 2. under the version-set lock: pause obsolete-file deletion and record
//!    the current version (its tables), `log_number`, the compact pointers
//!    and the newest WAL that holds writes (`max_wal`);
//! 3. hard-link every recorded table into the target (copy if linking
//!    fails, e.g. across file systems);
//! 4. copy every WAL numbered `log_number..=max_wal` up to its current
//!    length: older ones are complete (a WAL is synced and never written
//!    again once the next starts), the newest may end in a torn record that
//!    recovery truncates. The log being written is copied only up to its
//!    *written* position read before the copy (every byte below it reached
//!    the file, in log order, so the copy has no hole; reading further could
//!    catch zeros that a record fills a moment later, then a later record:
//!    a hole recovery rightly calls corruption). A memory-mapped log's
//!    length includes its preallocated zeros, which retiring the log cuts
//!    while an older log is copied, so the copy of an older WAL ends where
//!    the file does;
//! 5. write a fresh manifest holding one snapshot edit of the recorded
//!    version, then `CURRENT`, fsync files and the directory;
//! 6. resume deletion.
//!
//! Invariant: the target holds every write acknowledged before
//! [`checkpoint`] was called, and a prefix (in sequence order) of the
//! later ones. Thread-safe: any number of checkpoints may run at once, and
//! writers, flushes and compactions continue meanwhile (only deletion of
//! obsolete files waits).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::DbInner;
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind, wal_path};
use crate::io::FileSystem;
use crate::version::manifest::{self, ManifestWriter};
use crate::version::{Version, VersionEdit};

/// Resumes obsolete-file deletion when dropped.
struct PauseGuard<'a>(&'a DbInner);

impl Drop for PauseGuard<'_> {
    fn drop(&mut self) {
        self.0.deletions_paused.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What was recorded under the version-set lock.
struct Recorded {
    /// Every keyspace's version (each keyspace has its own blob files).
    versions: Vec<Arc<Version>>,
    log_number: u64,
    /// The whole state as snapshot edits: the default keyspace's, then
    /// every other keyspace's.
    snapshot: Vec<VersionEdit>,
}

/// Makes a checkpoint of `db` in `target` (see the module docs).
pub(crate) fn checkpoint(db: &DbInner, target: &Path) -> Result<()> {
    let fs = db.fs.as_ref();
    check_target(fs, &db.dir, target)?;
    db.writes.sync_wal(db)?;
    let (rec, guard) = {
        let vs = db.versions.lock();
        db.deletions_paused.fetch_add(1, Ordering::AcqRel);
        let guard = PauseGuard(db);
        let rec = Recorded {
            versions: vs.trees().map(|(_, v)| Arc::clone(v)).collect(),
            log_number: vs.log_number(),
            snapshot: vs.full_snapshot(),
        };
        (rec, guard)
    };
    // Read after the lock: only grows, and every WAL below it is complete.
    let max_wal = db.super_version().mem.wal;
    let result = copy_files(db, target, &rec, max_wal);
    if result.is_err() {
        // Leave no half-made checkpoint that could be mistaken for a good one.
        let _ = fs.remove_file(&manifest::current_path(target));
    }
    drop(guard);
    super::obsolete::delete_obsolete_files(db);
    result.inspect(|()| {
        db.info_log
            .log(format!("checkpoint written to {}", target.display()))
    })
}

/// `target` must not exist, or be an empty directory, and not be `dir`.
fn check_target(fs: &dyn FileSystem, dir: &Path, target: &Path) -> Result<()> {
    if target == dir {
        return Err(Error::InvalidArgument(format!(
            "checkpoint target {} is the database itself",
            target.display()
        )));
    }
    if !fs.exists(target)? {
        return Ok(());
    }
    if !fs.is_dir(target)? {
        return Err(Error::InvalidArgument(format!(
            "checkpoint target {} exists and is not a directory",
            target.display()
        )));
    }
    if !fs.list_dir(target)?.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "checkpoint target {} already exists and is not empty",
            target.display()
        )));
    }
    Ok(())
}

fn copy_files(db: &DbInner, target: &Path, rec: &Recorded, max_wal: u64) -> Result<()> {
    let fs = db.fs.as_ref();
    fs.create_dir_all(target)?;
    let mut max_seq = 0u64;
    for (_, f) in rec.snapshot.iter().flat_map(|e| &e.new_files) {
        let name = format!("{:06}.sst", f.number);
        link_or_copy(fs, &db.dir.join(&name), &target.join(&name), f.file_size)?;
        max_seq = max_seq.max(f.largest_seq);
    }
    let mut wals: Vec<u64> = fs
        .list_dir(&db.dir)?
        .iter()
        .filter_map(|n| match filenames::parse(n) {
            Some(FileKind::Wal(w)) if (rec.log_number..=max_wal).contains(&w) => Some(w),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    // The log being written now (number >= max_wal: the gate is taken after
    // the switch that made max_wal current, if one ran since).
    let (live, live_written) = {
        let log = db.writes.current();
        (log.number, log.written())
    };
    for &w in &wals {
        let src = wal_path(&db.dir, w);
        if w == live {
            copy_prefix(fs, &src, &wal_path(target, w), live_written)?;
        } else {
            let len = fs.file_size(&src)?;
            copy_up_to(fs, &src, &wal_path(target, w), len)?;
        }
    }
    // Blob files after the WALs: every value a copied WAL record points to
    // was appended before that record was placed; the lanes write what
    // they still stage into the files, so it is in the file now. A sealed
    // file is linked (or copied) at its size; a lane's open file is copied
    // as it is now (a link would share the lane's later writes, and the
    // copy's open closes it at the length it has).
    super::write::blobs::sync_all(db)?;
    for (&n, b) in rec.versions.iter().flat_map(|v| v.blob_files()) {
        let name = format!("{n:06}.blob");
        let (src, dst) = (db.dir.join(&name), target.join(&name));
        if b.sealed {
            link_or_copy(fs, &src, &dst, b.size)?;
        } else {
            copy_up_to(fs, &src, &dst, fs.file_size(&src)?)?;
        }
    }
    // Everything copied; the sequence and file counters only grow, so
    // reading them now bounds everything in the target.
    let (next_file, vs_seq) = {
        let vs = db.versions.lock();
        (vs.next_file_number(), vs.last_sequence())
    };
    let number = next_file.max(max_wal + 1);
    let mut snap = rec.snapshot.clone();
    snap[0].log_number = Some(rec.log_number);
    snap[0].next_file_number = Some(number + 1);
    snap[0].last_sequence = Some(
        max_seq
            .max(vs_seq)
            .max(db.writes.visible_sequence(&db.last_sequence)),
    );
    drop(ManifestWriter::create(fs, target, number, &snap)?);
    manifest::write_current(fs, target, number)?;
    fs.sync_dir(target)
}

/// Hard-links `src` to `dst`; copies `len` bytes when linking fails.
fn link_or_copy(fs: &dyn FileSystem, src: &Path, dst: &Path, len: u64) -> Result<()> {
    if fs.hard_link(src, dst).is_ok() {
        return Ok(());
    }
    copy_prefix(fs, src, dst, len)
}

/// Copies the first `len` bytes of `src` into a new file `dst` and syncs it.
pub(crate) fn copy_prefix(fs: &dyn FileSystem, src: &Path, dst: &Path, len: u64) -> Result<()> {
    let copied = copy_up_to(fs, src, dst, len)?;
    if copied < len {
        return Err(Error::corruption(
            src,
            copied,
            format!("file ended while copying {len} bytes"),
        ));
    }
    Ok(())
}

/// Copies at most the first `len` bytes of `src` (fewer if it ends first)
/// into a new file `dst`, syncs it and returns how many were copied.
fn copy_up_to(fs: &dyn FileSystem, src: &Path, dst: &Path, len: u64) -> Result<u64> {
    let mut from = fs.open_sequential(src)?;
    let mut to = fs.create_writable(dst)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = from.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        to.append(&buf[..n])?;
        left -= n as u64;
    }
    to.sync_data()?;
    Ok(len - left)
}
