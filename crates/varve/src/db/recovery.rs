//! Recovery: replay the WALs the manifest still needs (number >= its log
//! number), oldest first, into memtables (a memtable's worth at a time, in
//! key order: [`ReplayBuffer`]); the caller writes them to L0.
//!
//! Each WAL record is a write batch stamped with its first sequence number.
//! A torn or zero-filled tail (what a crash leaves) is cut off the file and
//! reported in `LOG` and in the [`RecoveryReport`]; damage followed by good
//! records is `Error::Corruption` naming the file and offset (the WAL reader
//! decides which is which). A torn tail in a log that a log with records
//! follows cannot come from a crash (the writer syncs a log before any
//! record goes into the next; a next log made ahead of its switch holds
//! only its header until then), so with `paranoid_checks` it is
//! corruption too, unless everything
//! from the end of the good data on is zero: that is preallocated space of a
//! memory-mapped log (`wal::MappedLogFile`) whose process died before the
//! file was cut to length, not lost data.
//! After a clean close (the manifest's last edit records the live WAL and
//! its synced length), that log must be readable up to that length: a log
//! cut or damaged before it is `Corruption`, since no crash can shorten a
//! synced, closed log.
//!
//! Blob pointers: a record written without `sync` may reach the disk
//! while the blob value it points to did not (a power loss keeps any
//! prefix of a file's unsynced bytes). Given the sizes of the blob files
//! still open ([`BlobSizes`], after their staged bytes were applied),
//! replay ends at the first record pointing past the end of one, like at
//! a torn tail, and skips every later record and log: every `sync` write
//! synced the blob files after every record before it was placed, so no
//! acknowledged `sync` write lies past that point, and the database is a
//! prefix of the writes, as without blob files. A pointer into a sealed
//! file past its recorded size, or into a file the manifest does not list,
//! is `Corruption` (those files are durable). Runs single-threaded during
//! open.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::info_log::InfoLog;
use super::replay_buffer::ReplayBuffer;
use crate::batch::{BatchOp, WriteBatch};
use crate::blob::format::BlobPointer;
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind, wal_path};
use crate::io::FileSystem;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::version::{ManifestTail, VersionSet};
use crate::wal::{self, TailStatus};

/// A WAL tail that recovery cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncatedTail {
    /// The log file.
    pub file: PathBuf,
    /// Where the good data ended (the file's new length).
    pub offset: u64,
    /// Bytes removed.
    pub bytes_removed: u64,
    /// Why the tail was rejected.
    pub reason: String,
}

/// How long opening the database took, in its parts (`Db::stats`, the
/// info log). The parts run one after the other; `total` also covers the
/// rest (lock, direct-IO probe, the new WAL and its manifest edit, the
/// obsolete-file pass).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenTimes {
    /// The whole open.
    pub total: std::time::Duration,
    /// Reading CURRENT and the manifest into the current version.
    pub manifest: std::time::Duration,
    /// Copying the values a crash left staged into their blob files.
    pub blob_staging: std::time::Duration,
    /// Replaying the WALs into memtables (and checking their blob
    /// pointers).
    pub wal_replay: std::time::Duration,
    /// Writing the replayed memtables as level-0 tables.
    pub recovery_tables: std::time::Duration,
}

/// `12.3 ms (manifest 1.0, blob staging 0.0, WAL replay 9.1, recovery
/// tables 0.0, other 2.2)`: the info log's and `stats`'s form.
impl std::fmt::Display for OpenTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let parts = self.manifest + self.blob_staging + self.wal_replay + self.recovery_tables;
        write!(
            f,
            "{:.1} ms (manifest {:.1}, blob staging {:.1}, WAL replay {:.1}, recovery tables \
             {:.1}, other {:.1})",
            ms(self.total),
            ms(self.manifest),
            ms(self.blob_staging),
            ms(self.wal_replay),
            ms(self.recovery_tables),
            ms(self.total.saturating_sub(parts))
        )
    }
}

/// What recovery did when the database was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// How long the open took, and its parts.
    pub open_times: OpenTimes,
    /// WAL numbers replayed, in order.
    pub logs_replayed: Vec<u64>,
    /// Records (write batches) replayed.
    pub records: u64,
    /// Tails cut off damaged logs, and the parts of logs not replayed
    /// because a record before them pointed to a blob value a power loss
    /// took (those files are left as they were; the open retires them).
    pub truncated: Vec<TruncatedTail>,
    /// Highest sequence number found.
    pub last_sequence: u64,
    /// A damaged MANIFEST tail that was accepted as an edit that was never
    /// acknowledged (see `docs/manifest-format.md`, "Damaged manifest
    /// tails"). `None` when the manifest was whole.
    pub manifest_tail: Option<ManifestTail>,
    /// Files no version references that were moved to `lost/` instead of
    /// being deleted, because the manifest had a damaged tail: (file name,
    /// why). Nothing in them is needed by the recovered database.
    pub lost: Vec<(String, String)>,
}

/// What recovery knows of each blob file the manifest lists: its size, and
/// whether it is sealed (durable at that size) or was open (the size it
/// has on disk now). `None` skips the pointer check (a read-only open,
/// which cannot apply staged bytes).
pub(crate) type BlobSizes = HashMap<u64, (u64, bool)>;

/// The state rebuilt from the WALs.
pub(crate) struct Recovered {
    /// The memtables holding the replayed writes of each keyspace that
    /// has any, oldest first.
    pub memtables: Vec<(u32, Vec<Arc<MemTable>>)>,
    pub last_sequence: u64,
    pub report: RecoveryReport,
}

/// Replays the WALs of `dir` numbered `>= versions.log_number()`, marking
/// every file number seen as used. A torn tail is cut off the file unless
/// `read_only` (then it is only skipped and reported).
pub(crate) fn recover(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
    info_log: &InfoLog,
    versions: &mut VersionSet,
    read_only: bool,
    blob_sizes: Option<&BlobSizes>,
) -> Result<Recovered> {
    let mut logs = Vec::new();
    for name in fs.list_dir(dir)? {
        match filenames::parse(&name) {
            Some(FileKind::Wal(n)) => {
                versions.mark_file_number_used(n);
                if n >= versions.log_number() {
                    logs.push(n);
                }
            }
            Some(FileKind::Table(n) | FileKind::Blob(n) | FileKind::Manifest(n)) => {
                versions.mark_file_number_used(n);
            }
            _ => {}
        }
    }
    logs.sort_unstable();

    // One buffer per live keyspace; records of a dropped keyspace are
    // skipped (ids are never reused), one that was never created is damage.
    let mut replayed: std::collections::BTreeMap<u32, ReplayBuffer> = std::iter::once(0)
        .chain(versions.keyspaces().into_iter().map(|(id, _)| id))
        .map(|id| {
            (
                id,
                ReplayBuffer::for_keyspace(options.write_buffer_size, id),
            )
        })
        .collect();
    let next_keyspace_id = versions.next_keyspace_id();
    let mut last_sequence = 0u64;
    let mut report = RecoveryReport::default();
    let clean_close = versions
        .clean_close()
        .filter(|&(wal, _)| wal >= versions.log_number());
    if let Some((wal, _)) = clean_close
        && !logs.contains(&wal)
    {
        return Err(Error::corruption(
            wal_path(dir, wal),
            0,
            "the database was closed cleanly with this log live, and it is missing",
        ));
    }
    // Where replay ended at a record whose blob value a power loss took.
    let mut blob_cut: Option<(u64, String)> = None;
    // After a restart the newest log's unsynced pages may have holes
    // (`db/boot.rs`).
    let restarted = super::boot::restarted_since_last_open(fs, dir)?;
    let mut open_values = restarted.then(|| OpenBlobValues::new(fs, dir));
    for (i, &number) in logs.iter().enumerate() {
        let path = wal_path(dir, number);
        if let Some((cut_log, why)) = &blob_cut {
            // Everything after the cut is skipped (see the module docs).
            let size = fs.file_size(&path)?;
            let reason = format!("follows log {cut_log}, whose replay ended early: {why}");
            cut_log_at(info_log, &mut report, &path, 0, size, reason);
            continue;
        }
        let mut records = 0u64;
        let mut cut_here: Option<(u64, String)> = None;
        // The newest log with records: the ones after it (if any) were
        // made ahead of a switch that never came, and hold none. Older
        // logs were synced whole before the next one took writes.
        let holes = if restarted
            && logs[i + 1..]
                .iter()
                .map(|&n| holds_no_record(fs, dir, n))
                .collect::<Result<Vec<bool>>>()?
                .into_iter()
                .all(|empty| empty)
        {
            wal::Holes::EndLog
        } else {
            wal::Holes::Refuse
        };
        let outcome = wal::replay_with(fs, &path, number, holes, |payload, offset| {
            if cut_here.is_some() {
                return Ok(());
            }
            let batch = WriteBatch::from_encoded(payload).map_err(|reason| {
                Error::corruption(&path, offset, format!("bad write batch: {reason}"))
            })?;
            if let Some(sizes) = blob_sizes
                && let Some(why) = lost_blob_value(
                    &batch,
                    |id| replayed.contains_key(&id),
                    sizes,
                    &path,
                    offset,
                    open_values.as_mut(),
                )?
            {
                cut_here = Some((offset, why));
                return Ok(());
            }
            if !batch.is_empty() {
                last_sequence = last_sequence.max(batch.sequence() + batch.len() as u64 - 1);
            }
            let push = |buffer: &mut ReplayBuffer, batch: WriteBatch| {
                buffer
                    .push(batch)
                    .map_err(|reason| Error::corruption(&path, offset, reason))
            };
            if batch.has_keyspaces() {
                let mut ids: Vec<u32> = batch.iter_in().map(|(id, _)| id).collect();
                ids.sort_unstable();
                ids.dedup();
                if let Some(id) = ids.iter().find(|&&id| id >= next_keyspace_id) {
                    return Err(Error::corruption(
                        &path,
                        offset,
                        format!("a record of keyspace {id}, which was never created"),
                    ));
                }
                for id in ids {
                    if let Some(buffer) = replayed.get_mut(&id) {
                        push(buffer, batch.clone())?;
                    }
                }
            } else if let Some(buffer) = replayed.get_mut(&0) {
                push(buffer, batch)?;
            }
            records += 1;
            Ok(())
        })?;
        if let Some((wal, bytes)) = clean_close
            && wal == number
            && outcome.valid_len < bytes
        {
            // Every byte up to `bytes` was synced before the clean close was
            // recorded: anything short of it is damage, not a crash.
            return Err(Error::corruption(
                &path,
                outcome.valid_len,
                format!(
                    "the database was closed cleanly with {bytes} bytes in this log, but it \
                     is readable only up to here: the log was cut or damaged, and the writes \
                     after this point would be lost"
                ),
            ));
        }
        if let Some((offset, why)) = cut_here {
            let size = fs.file_size(&path)?;
            cut_log_at(info_log, &mut report, &path, offset, size, why.clone());
            blob_cut = Some((number, why));
        } else if let TailStatus::Truncated { offset, reason } = outcome.tail {
            // The newest log with records: the ones after it (if any) were
            // made ahead of a switch that never came, and hold none.
            let newest = i + 1 == logs.len()
                || logs[i + 1..]
                    .iter()
                    .map(|&n| holds_no_record(fs, dir, n))
                    .collect::<Result<Vec<bool>>>()?
                    .into_iter()
                    .all(|empty| empty);
            if !newest && options.paranoid_checks && !wal::zero_from(fs, &path, offset)? {
                return Err(Error::corruption(
                    &path,
                    offset,
                    format!("damaged record ({reason}) in a log that newer logs follow"),
                ));
            }
            let size = fs.file_size(&path)?;
            if !read_only {
                fs.truncate(&path, offset)?;
            }
            info_log.log(format!(
                "recovery: truncated {} at offset {offset} ({} bytes removed): {reason}",
                path.display(),
                size.saturating_sub(offset)
            ));
            report.truncated.push(TruncatedTail {
                file: path.clone(),
                offset,
                bytes_removed: size.saturating_sub(offset),
                reason,
            });
        }
        info_log.log(format!(
            "recovery: replayed {} ({records} records)",
            path.display()
        ));
        report.records += records;
        report.logs_replayed.push(number);
    }
    report.last_sequence = last_sequence;
    report.manifest_tail = versions.recovered_tail().cloned();
    let mut memtables = Vec::new();
    for (id, buffer) in replayed {
        let mems = buffer
            .finish()
            .map_err(|reason| Error::corruption(dir, 0, reason))?;
        if !mems.is_empty() {
            memtables.push((id, mems));
        }
    }
    Ok(Recovered {
        memtables,
        last_sequence,
        report,
    })
}

/// Whether log `number` of `dir` holds no record: a log made ahead of a
/// switch that never came (`db/write/room.rs`, `prepare_switch`), whose
/// header is all it has, or only part of it (a power loss while it was
/// being made). A log with damage before good records is not such a log
/// (`false`: the torn tail before it stays corruption).
fn holds_no_record(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<bool> {
    let path = wal_path(dir, number);
    match wal::replay(fs, &path, number, |_, _| Ok(())) {
        Ok(outcome) => Ok(outcome.records == 0),
        Err(Error::Corruption { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Why `batch` (the record at `offset` of log `path`) cannot be replayed:
/// it points past the end of a blob file that was still open (a power loss
/// took the value). `Corruption` for a pointer that no crash explains.
/// Pointers of keyspaces that are not `live` (dropped: their records are
/// skipped, and their blob files left with them) are not checked.
/// After a restart (`values` given) a pointer into an open file is also
/// read: the file's unsynced pages may have reached the disk in any order,
/// so a value inside the file's length may still be lost (a hole).
fn lost_blob_value(
    batch: &WriteBatch,
    live: impl Fn(u32) -> bool,
    sizes: &BlobSizes,
    path: &Path,
    offset: u64,
    mut values: Option<&mut OpenBlobValues<'_>>,
) -> Result<Option<String>> {
    for (id, op) in batch.iter_in() {
        let BatchOp::PutBlob { pointer, .. } = op else {
            continue;
        };
        if !live(id) {
            continue;
        }
        let p = BlobPointer::decode(pointer)
            .ok_or_else(|| Error::corruption(path, offset, "malformed blob pointer"))?;
        let end = p
            .offset
            .checked_add(u64::from(p.length))
            .ok_or_else(|| Error::corruption(path, offset, "blob pointer past 2^64"))?;
        match sizes.get(&p.file_number) {
            None => {
                return Err(Error::corruption(
                    path,
                    offset,
                    format!(
                        "a record points into blob file {}, which the manifest does not list",
                        p.file_number
                    ),
                ));
            }
            Some(&(size, true)) if end > size => {
                return Err(Error::corruption(
                    path,
                    offset,
                    format!(
                        "a record points to bytes {}..{end} of sealed blob file {} of {size} \
                         bytes",
                        p.offset, p.file_number
                    ),
                ));
            }
            Some(&(size, false)) if end > size => {
                return Ok(Some(format!(
                    "its blob value ({} bytes at {} of blob file {}) is past the file's end \
                     ({size} bytes): a write without sync whose value a power loss took",
                    p.length, p.offset, p.file_number
                )));
            }
            Some(&(_, false)) => {
                if let Some(v) = values.as_deref_mut()
                    && let Some(why) = v.lost(&p)?
                {
                    return Ok(Some(format!(
                        "its blob value ({} bytes at {} of blob file {}) does not check out \
                         ({why}): a write without sync whose value's pages a power cut lost",
                        p.length, p.offset, p.file_number
                    )));
                }
            }
            Some(_) => {}
        }
    }
    Ok(None)
}

/// The open blob files of a directory, read by pointer during a replay
/// after a restart (see `lost_blob_value`).
pub(crate) struct OpenBlobValues<'a> {
    fs: &'a dyn FileSystem,
    dir: &'a Path,
    readers: HashMap<u64, crate::blob::reader::BlobReader>,
}

impl<'a> OpenBlobValues<'a> {
    fn new(fs: &'a dyn FileSystem, dir: &'a Path) -> Self {
        OpenBlobValues {
            fs,
            dir,
            readers: HashMap::new(),
        }
    }

    /// Why the value `p` names cannot be read whole (`None`: it can).
    fn lost(&mut self, p: &BlobPointer) -> Result<Option<String>> {
        let reader = match self.readers.entry(p.file_number) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let path = filenames::blob_file_path(self.dir, p.file_number);
                match crate::blob::reader::BlobReader::open(self.fs, &path, false) {
                    Ok(r) => e.insert(r),
                    // No header: no value of it survived.
                    Err(Error::Corruption { reason, .. }) => return Ok(Some(reason)),
                    Err(other) => return Err(other),
                }
            }
        };
        match reader.get(p) {
            Ok(_) => Ok(None),
            Err(Error::Corruption { reason, .. }) => Ok(Some(reason)),
            Err(other) => Err(other),
        }
    }
}

/// Reports that the replay of log `path` (of `size` bytes) ended at
/// `offset`. The file is left as it is: the open's edit retires it, and an
/// open that fails before that finds the same point again.
fn cut_log_at(
    info_log: &InfoLog,
    report: &mut RecoveryReport,
    path: &Path,
    offset: u64,
    size: u64,
    reason: String,
) {
    info_log.log(format!(
        "recovery: ended the replay of {} at offset {offset} ({} bytes not replayed): {reason}",
        path.display(),
        size.saturating_sub(offset)
    ));
    report.truncated.push(TruncatedTail {
        file: path.to_path_buf(),
        offset,
        bytes_removed: size.saturating_sub(offset),
        reason,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_pointing_to(file_number: u64, offset: u64, length: u32) -> WriteBatch {
        let p = BlobPointer {
            file_number,
            offset,
            length,
            crc: 0,
        };
        let mut b = WriteBatch::new();
        b.put_blob_index(b"k", &p.encode());
        b
    }

    /// Within an open file: replayed; past its end: the replay ends there;
    /// past a sealed file, into an unlisted one or past 2^64: corruption.
    #[test]
    fn replayed_pointers_are_checked_against_the_blob_files() {
        let sizes: BlobSizes = [(7, (8192, false)), (8, (8192, true))].into();
        let wal = Path::new("000009.log");
        let check = |b: WriteBatch| lost_blob_value(&b, |id| id != 5, &sizes, wal, 100, None);
        assert!(matches!(check(batch_pointing_to(7, 4096, 4096)), Ok(None)));
        assert!(matches!(
            check(batch_pointing_to(7, 4096, 4097)),
            Ok(Some(_))
        ));
        assert!(check(batch_pointing_to(8, 4096, 4097)).is_err());
        assert!(check(batch_pointing_to(9, 4096, 1)).is_err());
        assert!(check(batch_pointing_to(7, u64::MAX - 1, 10)).is_err());
        // A dropped keyspace's pointers are skipped with its records.
        let mut dropped = WriteBatch::new();
        let p = BlobPointer {
            file_number: 9,
            offset: 4096,
            length: 1,
            crc: 0,
        };
        dropped.put_blob_index_to(5, b"k", &p.encode());
        assert!(matches!(check(dropped), Ok(None)));
    }
}
