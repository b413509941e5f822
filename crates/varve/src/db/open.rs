//! Opening and destroying a database directory.
//!
//! Open order: validate options, check the path, take `LOCK`, replay the
//! WALs, start a new WAL (file, header, directory fsync), then delete logs
//! that held no record. Nothing is deleted before the new log is durable.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use parking_lot::{Mutex, RwLock};

use super::DbInner;
use super::filenames::{self, FileKind, LOCK, wal_path};
use super::info_log::InfoLog;
use super::recovery;
use super::snapshot::SnapshotList;
use super::write::WriteQueue;
use crate::wal::LogWriter;
use crate::{Error, Options, Result};

pub(crate) fn open(dir: &Path, options: Options) -> Result<DbInner> {
    options.validate()?;
    let fs = Arc::clone(&options.fs);
    if fs.exists(dir)? {
        if !fs.is_dir(dir)? {
            return Err(Error::InvalidArgument(format!(
                "{} exists and is not a directory",
                dir.display()
            )));
        }
    } else if options.create_if_missing {
        fs.create_dir_all(dir)?;
    } else {
        return Err(Error::NotFound(dir.to_path_buf()));
    }

    let lock_path = dir.join(LOCK);
    let lock = fs.try_lock(&lock_path)?.ok_or_else(|| Error::Locked {
        dir: dir.to_path_buf(),
        lock_file: lock_path.clone(),
    })?;

    let exists = fs.list_dir(dir)?.iter().any(|n| {
        matches!(
            filenames::parse(n),
            Some(FileKind::Wal(_) | FileKind::Current)
        )
    });
    if exists && options.error_if_exists {
        return Err(Error::AlreadyExists(dir.to_path_buf()));
    }
    if !exists && !options.create_if_missing {
        return Err(Error::NotFound(dir.to_path_buf()));
    }

    let info_log = InfoLog::open(dir);
    info_log.log(format!(
        "opening {} ({})",
        dir.display(),
        if exists { "existing" } else { "new" }
    ));
    let recovered = recovery::recover(fs.as_ref(), dir, &options, &info_log)?;

    let log_number = recovered.max_file_number + 1;
    let log_path = wal_path(dir, log_number);
    let log = LogWriter::new(fs.create_writable(&log_path)?, log_number)?;
    fs.sync_dir(dir)?;
    for n in &recovered.empty_logs {
        fs.remove_file(&wal_path(dir, *n))?;
    }
    info_log.log(format!(
        "opened: last sequence {}, {} records replayed, new WAL {}",
        recovered.last_sequence,
        recovered.report.records,
        log_path.display()
    ));

    Ok(DbInner {
        dir: dir.to_path_buf(),
        fs,
        lock: Mutex::new(Some(lock)),
        mems: RwLock::new(Arc::new(recovered.mems)),
        last_sequence: AtomicU64::new(recovered.last_sequence),
        next_file_number: AtomicU64::new(log_number + 1),
        snapshots: Arc::new(SnapshotList::default()),
        writes: WriteQueue::new(log),
        poisoned: Mutex::new(None),
        is_poisoned: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        info_log,
        recovery: recovered.report,
        options,
    })
}

pub(crate) fn destroy(dir: &Path, options: &Options) -> Result<()> {
    let fs = &options.fs;
    if !fs.exists(dir)? {
        return Ok(());
    }
    if !fs.is_dir(dir)? {
        return Err(Error::InvalidArgument(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let lock_path = dir.join(LOCK);
    let lock = fs.try_lock(&lock_path)?.ok_or_else(|| Error::Locked {
        dir: dir.to_path_buf(),
        lock_file: lock_path.clone(),
    })?;
    for name in fs.list_dir(dir)? {
        match filenames::parse(&name) {
            None | Some(FileKind::Lock) => {}
            Some(_) => fs.remove_file(&dir.join(&name))?,
        }
    }
    fs.remove_file(&lock_path)?;
    drop(lock);
    // Foreign files keep the directory; that is not an error.
    let _ = fs.remove_dir(dir);
    Ok(())
}
