//! The database: it owns the directory, the WAL, the memtables, the
//! snapshots, and calls the stages of the data path in order.
//!
//! - [`open`](Db::open) checks the directory, takes `LOCK`, replays the WALs
//!   (`recovery`) and starts a fresh WAL;
//! - writes go through one group-commit queue (`write`): WAL, then
//!   memtable, then the new sequence number is published;
//! - reads (`read`) and iterators look at the memtables as of one sequence
//!   number, so a batch is seen whole or not at all.
//!
//! Thread-safety: `Db` is `Send + Sync`; share it with an `Arc`. Reads never
//! block writes. Invariant: every entry with a sequence number `<=`
//! `last_sequence` is in a memtable of the current [`MemSet`].

mod filenames;
mod info_log;
mod memtables;
mod open;
mod read;
mod recovery;
mod snapshot;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

pub use crate::iter::db_iter::DbIterator;
pub use recovery::{RecoveryReport, TruncatedTail};
pub use snapshot::Snapshot;

use crate::io::{FileLock, FileSystem};
use crate::{Error, Options, ReadOptions, Result, WriteBatch, WriteOptions};
use info_log::InfoLog;
use memtables::MemSet;
use snapshot::SnapshotList;
use write::WriteQueue;

/// An open database.
///
/// ```
/// use varve::{Db, Options, WriteBatch};
///
/// # fn main() -> varve::Result<()> {
/// let dir = tempfile::tempdir().expect("temp dir");
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"apple", b"red")?;
/// db.put(b"banana", b"yellow")?;
/// assert_eq!(db.get(b"apple")?, Some(b"red".to_vec()));
///
/// let mut batch = WriteBatch::new();
/// batch.delete(b"apple");
/// batch.put(b"cherry", b"dark red");
/// db.write(batch)?; // atomic
///
/// let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, vec![b"banana".to_vec(), b"cherry".to_vec()]);
/// db.close()?;
/// # Ok(())
/// # }
/// ```
pub struct Db {
    inner: Arc<DbInner>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.inner.dir).finish()
    }
}

/// State shared by the database handle (and, later, background threads).
pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    pub(crate) fs: Arc<dyn FileSystem>,
    lock: Mutex<Option<Box<dyn FileLock>>>,
    /// The memtables readers consult; replaced whole on a switch.
    pub(crate) mems: RwLock<Arc<MemSet>>,
    /// Highest sequence number visible to readers.
    pub(crate) last_sequence: AtomicU64,
    pub(crate) next_file_number: AtomicU64,
    pub(crate) snapshots: Arc<SnapshotList>,
    pub(crate) writes: WriteQueue,
    poisoned: Mutex<Option<String>>,
    is_poisoned: AtomicBool,
    closed: AtomicBool,
    pub(crate) info_log: InfoLog,
    recovery: RecoveryReport,
}

impl DbInner {
    /// Marks the database unwritable until reopen.
    pub(crate) fn poison(&self, why: String) {
        self.info_log.log(format!("poisoned: {why}"));
        let mut p = self.poisoned.lock();
        if p.is_none() {
            *p = Some(why);
        }
        self.is_poisoned.store(true, Ordering::Release);
    }

    /// `Err` if writes are no longer allowed.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.is_poisoned.load(Ordering::Acquire) {
            let why = self.poisoned.lock().clone().unwrap_or_default();
            return Err(Error::Poisoned(why));
        }
        Ok(())
    }

    pub(crate) fn current_mems(&self) -> Arc<MemSet> {
        Arc::clone(&self.mems.read())
    }
}

impl Db {
    /// Opens (and by default creates) the database in directory `path`,
    /// replaying its write-ahead logs.
    ///
    /// Errors: `InvalidArgument` for bad options or a path that is not a
    /// directory, `Locked` if another `Db` has it open, `NotFound` /
    /// `AlreadyExists` per `create_if_missing` / `error_if_exists`,
    /// `Corruption` naming file and offset if a log is damaged anywhere but
    /// at its tail.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        open::open(path.as_ref(), options).map(|inner| Db {
            inner: Arc::new(inner),
        })
    }

    /// Deletes the database in `path` (its files, then the directory if it
    /// is empty). Fails with `Locked` if the database is open.
    pub fn destroy(path: impl AsRef<Path>) -> Result<()> {
        open::destroy(path.as_ref(), &Options::default())
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// Sets `key` to `value` with explicit write options.
    pub fn put_opt(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(key, value);
        self.write_opt(batch, opts)
    }

    /// Deletes `key` (not an error if it is absent).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// Deletes `key` with explicit write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, opts: &WriteOptions) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(key);
        self.write_opt(batch, opts)
    }

    /// Applies every operation of `batch` atomically.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// Applies `batch` atomically with explicit write options. Readers see
    /// all of it or none of it.
    pub fn write_opt(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        write::write(&self.inner, batch, opts)
    }

    /// The value of `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// The value of `key` with explicit read options (e.g. a snapshot).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        read::get(&self.inner, key.as_ref(), opts)
    }

    /// A consistent view of the database as of now, released on drop.
    pub fn snapshot(&self) -> Snapshot {
        self.inner
            .snapshots
            .acquire(self.inner.last_sequence.load(Ordering::Acquire))
    }

    /// An iterator over all keys in order, starting at the first.
    pub fn iter(&self) -> DbIterator {
        self.iter_opt(&ReadOptions::default())
    }

    /// An iterator with explicit read options (snapshot, bounds).
    pub fn iter_opt(&self, opts: &ReadOptions) -> DbIterator {
        read::iter(&self.inner, opts)
    }

    /// Makes every write so far durable. (Until table files exist the
    /// memtables stay in memory; this syncs the write-ahead log.)
    pub fn flush(&self) -> Result<()> {
        self.inner.writes.sync_wal(&self.inner)
    }

    /// The highest sequence number visible to reads.
    pub fn latest_sequence(&self) -> u64 {
        self.inner.last_sequence.load(Ordering::Acquire)
    }

    /// Number of live snapshots (including those iterators hold).
    pub fn live_snapshots(&self) -> usize {
        self.inner.snapshots.len()
    }

    /// What recovery found when this database was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// Bytes of memtable arena in use.
    pub fn memtable_usage(&self) -> usize {
        self.inner.current_mems().memory_usage()
    }

    /// Syncs the write-ahead log and releases the lock. Dropping a `Db`
    /// does the same but cannot report errors.
    pub fn close(self) -> Result<()> {
        self.close_impl()
    }

    fn close_impl(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let result = if self.inner.is_poisoned.load(Ordering::Acquire) {
            Ok(())
        } else {
            self.inner.writes.sync_wal(&self.inner)
        };
        self.inner.info_log.log("closed");
        self.inner.lock.lock().take();
        result
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close_impl();
    }
}
