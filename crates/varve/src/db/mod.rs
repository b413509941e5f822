//! The database: it owns the directory, the WAL, the memtables, the
//! snapshots, and calls the stages of the data path in order.
//!
//! - [`open`](Db::open) checks the directory, takes `LOCK`, replays the WALs
//!   (`recovery`) and starts a fresh WAL;
//! - writes (`write`) join a WAL log slot, insert into the memtable
//!   concurrently and are published in sequence order;
//! - reads (`read`) and iterators look at the memtables as of one sequence
//!   number, so a batch is seen whole or not at all;
//! - the first write that cannot complete (WAL, flush, compaction,
//!   manifest) *poisons* the database: writes are refused, reads go on,
//!   until a reopen or, after a full disk, [`Db::resume`] (`resume`,
//!   `docs/errors.md`).
//!
//! Thread-safety: `Db` is `Send + Sync`; share it with an `Arc`. Reads never
//! block writes. Invariant: every entry with a sequence number `<=`
//! `last_sequence` is in a memtable or table of the current read state (`SuperVersion`).

mod admin;
mod bg;
mod boot;
mod checkpoint;
mod debug;
mod info_log;
mod inner;
mod keyspace;
mod keyspace_state;
mod lock;
mod memtables;
mod obsolete;
mod open;
mod read;
mod recovery;
mod repair;
mod replay_buffer;
mod resume;
mod stats;
mod ttl;
mod write;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

pub use crate::snapshot::Snapshot;
pub use debug::DbDebug;
pub(crate) use info_log::InfoLog;
pub(crate) use inner::{DbInner, table_options};
pub use keyspace::{Keyspace, MAX_KEYSPACE_NAME};
pub(crate) use open::{recover_read_only_state, staged_view};
pub use read::anchors::{Anchor, Anchors, KeyRange};
pub use read::db_iter::DbIterator;
pub use read::par_scan::ChunkInfo;
pub use recovery::{OpenTimes, RecoveryReport, TruncatedTail};
pub use repair::RepairReport;
pub use stats::{DbStats, KeyspaceStats, LevelStats, MemoryStats};

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::options::{Options, WriteOptions};
use crate::version::VersionEdit;
use write::WritePath;

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
        let inner = Arc::new(open::open(path.as_ref(), options)?);
        // Expiry counts from the floors and samples the manifest kept,
        // before any read.
        ttl::start(&inner)?;
        bg::start(&inner)?;
        WritePath::start(&inner)?;
        Ok(Db { inner })
    }

    /// Opens an existing database without changing anything in its
    /// directory: the manifest is read but not rewritten, the WALs are
    /// replayed into memtables but neither cut nor written to tables, no
    /// background thread runs and nothing is deleted or logged. Reads,
    /// iterators, snapshots, scans and stats work; every write, `flush` and
    /// compaction fails with `InvalidArgument`. The lock is taken as for
    /// [`open`](Self::open), so a database another process has open fails
    /// with `Error::Locked` (take a [`checkpoint`](Self::checkpoint) in that
    /// process instead).
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = Arc::new(open::open_read_only(path.as_ref(), options)?);
        ttl::start(&inner)?;
        Ok(Db { inner })
    }

    /// `open_read_only` without taking `LOCK`, for `varve check` (which
    /// runs beside a process that may have the database open, and reads
    /// only to learn whether a read of a key fails).
    pub(crate) fn open_unlocked_for_check(path: &Path, options: Options) -> Result<Db> {
        let inner = Arc::new(open::open_read_only_locked(path, options, false)?);
        // The expiry floors the manifest records: an entry they hide is read
        // by no open, so check must not read it either.
        ttl::start(&inner)?;
        Ok(Db { inner })
    }

    /// Deletes the database in `path` (its files, then the directory if it
    /// is empty), through `options.fs`. Fails with `Locked` if the database
    /// is open.
    pub fn destroy(path: impl AsRef<Path>, options: &Options) -> Result<()> {
        open::destroy(path.as_ref(), options)
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
        write::put(&self.inner, 0, key.as_ref(), value.as_ref(), opts)
    }

    /// Deletes `key` (not an error if it is absent).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// Deletes `key` with explicit write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, opts: &WriteOptions) -> Result<()> {
        let key = key.as_ref();
        let mut batch = WriteBatch::for_one(key.len(), 0);
        batch.delete(key);
        self.write_opt(batch, opts)
    }

    /// Deletes every key in `range` (`start..end`, `end` excluded) with one
    /// range tombstone: O(1) to write, whatever the range holds. Reads
    /// honour it at once; compaction drops the keys it covers (and then
    /// the tombstone) once no snapshot can see them
    /// (`docs/range-deletes.md`). `start > end` is `InvalidArgument`; an
    /// empty range deletes nothing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = varve::Db::open(dir.path(), varve::Options::default())?;
    /// for k in [b"a", b"b", b"c", b"d"] {
    ///     db.put(k, b"v")?;
    /// }
    /// db.delete_range(b"b".as_slice()..b"d".as_slice())?;
    /// let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"a".to_vec(), b"d".to_vec()]);
    /// # Ok::<(), varve::Error>(())
    /// ```
    pub fn delete_range<K: AsRef<[u8]>>(&self, range: std::ops::Range<K>) -> Result<()> {
        self.delete_range_opt(range, &WriteOptions::default())
    }

    /// [`Db::delete_range`] with explicit write options.
    pub fn delete_range_opt<K: AsRef<[u8]>>(
        &self,
        range: std::ops::Range<K>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let (start, end) = (range.start.as_ref(), range.end.as_ref());
        let mut batch = WriteBatch::for_one(start.len(), end.len());
        batch.delete_range(start..end);
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

    /// Syncs the write-ahead log and releases the lock. Dropping a `Db`
    /// does the same but cannot report errors.
    pub fn close(self) -> Result<()> {
        self.close_impl()
    }

    fn close_impl(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Writers through `Keyspace` handles on other threads: those inside
        // the gate finish placing their records (synced below), later ones
        // fail with `Closed`.
        self.inner.writes.drain_writers();
        bg::stop(&self.inner);
        self.inner.writes.stop();
        self.inner.writes.discard_prepared(&self.inner);
        let result = if self.inner.is_poisoned.load(Ordering::Acquire) {
            Ok(())
        } else {
            // Tables a reader still pinned when the job that retired them
            // finished are deleted now that the background work is done,
            // so a closed directory holds only what its manifest names
            // (plus the current WALs): leftovers would otherwise wait for
            // the next open, and a repair in between would have to guess.
            obsolete::delete_obsolete_files(&self.inner);
            // Blob files first: the clean-close mark vouches for the WAL,
            // whose pointers name their values.
            let sealed = write::blobs::seal_all(&self.inner);
            sealed
                .and_then(|()| self.inner.writes.sync_wal(&self.inner))
                .and_then(|()| self.record_clean_close())
        };
        self.inner.info_log.log("closed");
        self.inner.lock.lock().take();
        result
    }
}

impl Db {
    /// The last edit of a clean close: the live WAL and how many of its
    /// bytes are synced, so that recovery can tell a log cut after a clean
    /// close (lost writes: `Corruption`) from a crash's torn tail.
    fn record_clean_close(&self) -> Result<()> {
        let db = &self.inner;
        if db.read_only {
            return Ok(());
        }
        let log = db.writes.current();
        debug_assert!(log.durable() >= log.written(), "close syncs the log first");
        // A last time sample, and those since the last edit, so that
        // expiry after a reopen counts from them (`db/ttl.rs`).
        ttl::sample(db);
        let mut vs = db.versions.lock();
        let time_samples = ttl::take_pending(db);
        let edit = VersionEdit {
            clean_close: Some((log.number, log.durable())),
            last_sequence: time_samples.last().map(|s| s.0),
            time_samples,
            ..VersionEdit::default()
        };
        vs.log_and_apply(edit)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close_impl();
    }
}
