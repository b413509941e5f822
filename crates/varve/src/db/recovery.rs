//! Recovery: replay every WAL, oldest first, into memtables.
//!
//! Each WAL record is a write batch stamped with its first sequence number.
//! A torn or zero-filled tail (what a crash leaves) is cut off the file and
//! reported in `LOG` and in the [`RecoveryReport`]; damage followed by good
//! records is `Error::Corruption` naming the file and offset (the WAL reader
//! decides which is which). A torn tail in a log that is not the newest one
//! cannot come from a crash (the writer syncs a log before starting the
//! next), so with `paranoid_checks` it is corruption too.
//! Runs single-threaded during open.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::filenames::{self, FileKind, wal_path};
use super::info_log::InfoLog;
use super::memtables::{MemSet, batch_charge, insert_batch};
use crate::io::FileSystem;
use crate::memtable::MemTable;
use crate::wal::{self, TailStatus};
use crate::{Error, Options, Result, WriteBatch};

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

/// What recovery did when the database was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// WAL numbers replayed, in order.
    pub logs_replayed: Vec<u64>,
    /// Records (write batches) replayed.
    pub records: u64,
    /// Tails cut off damaged logs.
    pub truncated: Vec<TruncatedTail>,
    /// Highest sequence number found.
    pub last_sequence: u64,
}

/// The state rebuilt from the WALs.
pub(crate) struct Recovered {
    pub mems: MemSet,
    pub last_sequence: u64,
    /// Highest file number seen in the directory.
    pub max_file_number: u64,
    /// Logs that held no record (safe to delete once a new log exists).
    pub empty_logs: Vec<u64>,
    pub report: RecoveryReport,
}

/// Replays the WALs found in `dir`.
pub(crate) fn recover(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
    info_log: &InfoLog,
) -> Result<Recovered> {
    let mut logs = Vec::new();
    let mut max_file_number = 0;
    for name in fs.list_dir(dir)? {
        match filenames::parse(&name) {
            Some(FileKind::Wal(n)) => {
                logs.push(n);
                max_file_number = max_file_number.max(n);
            }
            Some(FileKind::Table(n) | FileKind::Blob(n) | FileKind::Manifest(n)) => {
                max_file_number = max_file_number.max(n);
            }
            _ => {}
        }
    }
    logs.sort_unstable();

    let mut mems = MemSet::new(options.write_buffer_size);
    let mut last_sequence = 0u64;
    let mut report = RecoveryReport::default();
    let mut empty_logs = Vec::new();
    for (i, &number) in logs.iter().enumerate() {
        let path = wal_path(dir, number);
        let mut records = 0u64;
        let outcome = wal::replay(fs, &path, number, |payload, offset| {
            let batch = WriteBatch::from_encoded(payload).map_err(|reason| {
                Error::corruption(&path, offset, format!("bad write batch: {reason}"))
            })?;
            apply(&mut mems, &batch, options.write_buffer_size)
                .map_err(|reason| Error::corruption(&path, offset, reason))?;
            if !batch.is_empty() {
                last_sequence = last_sequence.max(batch.sequence() + batch.len() as u64 - 1);
            }
            records += 1;
            Ok(())
        })?;
        if let TailStatus::Truncated { offset, reason } = outcome.tail {
            let newest = i + 1 == logs.len();
            if !newest && options.paranoid_checks {
                return Err(Error::corruption(
                    &path,
                    offset,
                    format!("damaged record ({reason}) in a log that newer logs follow"),
                ));
            }
            let size = fs.file_size(&path)?;
            fs.truncate(&path, offset)?;
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
        if records == 0 {
            empty_logs.push(number);
        }
        report.records += records;
        report.logs_replayed.push(number);
    }
    report.last_sequence = last_sequence;
    Ok(Recovered {
        mems,
        last_sequence,
        max_file_number,
        empty_logs,
        report,
    })
}

/// Inserts a replayed batch, switching to a new memtable when full.
fn apply(mems: &mut MemSet, batch: &WriteBatch, write_buffer_size: usize) -> Result<(), String> {
    let charge = batch_charge(batch);
    if mems.mem.remaining() < charge {
        *mems = mems.switched(Arc::new(MemTable::new(write_buffer_size.max(charge))));
    }
    insert_batch(&mems.mem, batch, batch.sequence())
        .map_err(|_| "memtable rejected a replayed entry".to_string())
}
