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

mod bg;
mod checkpoint;
mod info_log;
mod memtables;
mod obsolete;
mod open;
mod read;
mod recovery;
mod repair;
mod resume;
mod stats;
mod write;

use std::collections::HashSet;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};

pub use crate::snapshot::Snapshot;
pub use read::anchors::{Anchor, Anchors, KeyRange};
pub use read::db_iter::DbIterator;
pub use read::par_scan::{CHUNKS_PER_THREAD, ChunkInfo, MAX_CHUNK_BYTES, MAX_CHUNKS};
pub use recovery::{RecoveryReport, TruncatedTail};
pub use repair::RepairReport;
pub use stats::{DbStats, LevelStats};

use crate::compaction::picker::{self, LevelTargets};
use crate::io::{FileLock, FileSystem};
use crate::snapshot::SnapshotList;
use crate::sst::BlockCache;
use crate::sst::{ReaderPool, TableBuilderOptions};
use crate::version::TableCache;
use crate::version::{Version, VersionEdit, VersionSet};
use crate::{Error, Options, ReadOptions, Result, WriteBatch, WriteOptions};
use bg::Background;
use info_log::InfoLog;
use memtables::SuperVersion;
use stats::Counters;
use write::{WalLog, WritePath};

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

/// Table-building options derived from the database options.
pub(crate) fn table_options(o: &Options) -> TableBuilderOptions {
    TableBuilderOptions {
        block_size: o.block_size,
        bloom_bits_per_key: o.bloom_bits_per_key,
        compression: o.compression,
        ..TableBuilderOptions::default()
    }
}

/// State shared by the database handle (and, later, background threads).
pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    pub(crate) fs: Arc<dyn FileSystem>,
    lock: Mutex<Option<Box<dyn FileLock>>>,
    /// What readers consult (memtables + table files); replaced whole.
    state: RwLock<Arc<SuperVersion>>,
    /// The manifest and current version; lock before `state`.
    pub(crate) versions: Mutex<VersionSet>,
    /// Versions installed and maybe still held by readers (pins files).
    pub(crate) live_versions: Mutex<Vec<Weak<Version>>>,
    /// Table numbers being written by flushes and compactions.
    pub(crate) pending_outputs: Mutex<HashSet<u64>>,
    pub(crate) table_cache: Arc<TableCache>,
    pub(crate) block_cache: Option<Arc<BlockCache>>,
    /// Reads scans' read-ahead chunks in the background (the database's
    /// own, or the one `Options::reader_pool` shares).
    pub(crate) reader_pool: Arc<ReaderPool>,
    pub(crate) bg: Background,
    pub(crate) counters: Counters,
    /// Highest sequence number visible to readers.
    pub(crate) last_sequence: AtomicU64,
    pub(crate) snapshots: Arc<SnapshotList>,
    pub(crate) writes: WritePath,
    poisoned: Mutex<Option<Poison>>,
    is_poisoned: AtomicBool,
    closed: AtomicBool,
    /// Opened with [`Db::open_read_only`]: every write is refused.
    pub(crate) read_only: bool,
    pub(crate) info_log: InfoLog,
    recovery: RecoveryReport,
    /// Checkpoints in progress; while non-zero no obsolete file is deleted.
    pub(crate) deletions_paused: AtomicUsize,
}

/// Why writes are refused (the first failure; later ones are only logged).
#[derive(Debug, Clone)]
pub(crate) struct Poison {
    /// What failed, with the error (which names the file).
    pub(crate) why: String,
    /// The failure was a full disk ([`Error::is_no_space`]): [`Db::resume`]
    /// may bring writes back once space is freed.
    pub(crate) resumable: bool,
}

impl Poison {
    /// The error writes get while the database is poisoned by this.
    pub(crate) fn error(&self) -> Error {
        let hint = if self.resumable {
            "no space left on device (ENOSPC/EDQUOT): free space, then call Db::resume() \
             (or reopen the database)"
        } else {
            "reopen the database"
        };
        Error::Poisoned(format!("{}; {hint}", self.why))
    }
}

impl DbInner {
    /// Marks the database unwritable until reopen (a failure
    /// [`Db::resume`] does not recover from: a bug, a broken invariant).
    pub(crate) fn poison(&self, why: String) {
        self.poison_with(why, false, || true);
    }

    /// Marks the database unwritable because of `e` (`what` says what
    /// failed). Resumable if `e` is a full disk.
    pub(crate) fn poison_err(&self, what: &str, e: &Error) {
        self.poison_with(format!("{what}: {e}"), e.is_no_space(), || true);
    }

    /// [`poison_err`](Self::poison_err) for a failure of WAL `log`: ignored
    /// once [`Db::resume`] replaced that log (a writer of the old log may
    /// report its failure late). The check and resume's clearing happen
    /// under the same lock.
    pub(crate) fn poison_wal(&self, log: &WalLog, what: &str, e: &Error) {
        self.poison_with(format!("{what}: {e}"), e.is_no_space(), || {
            !log.is_retired()
        });
    }

    fn poison_with(&self, why: String, resumable: bool, applies: impl FnOnce() -> bool) {
        let mut p = self.poisoned.lock();
        if !applies() {
            return;
        }
        self.info_log.log(format!("poisoned: {why}"));
        if p.is_none() {
            *p = Some(Poison { why, resumable });
        }
        self.is_poisoned.store(true, Ordering::Release);
    }

    /// Why the database is poisoned, if it is.
    pub(crate) fn poison_state(&self) -> Option<Poison> {
        self.poisoned.lock().clone()
    }

    /// Accepts writes again ([`Db::resume`], with the write gate held
    /// exclusively and `old`, the log that failed, already replaced).
    pub(crate) fn clear_poison(&self, old: &WalLog) {
        let mut p = self.poisoned.lock();
        old.retire();
        *p = None;
        self.is_poisoned.store(false, Ordering::Release);
    }

    /// `Err` if writes are no longer allowed.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.read_only {
            return Err(Error::ReadOnly(self.dir.clone()));
        }
        if self.is_poisoned.load(Ordering::Acquire)
            && let Some(p) = self.poison_state()
        {
            return Err(p.error());
        }
        Ok(())
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.is_poisoned.load(Ordering::Acquire)
    }

    /// The current read state.
    pub(crate) fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.state.read())
    }

    /// Replaces the read state with `f(current)`. Holding the version set's
    /// lock (`_vs`) orders installs with manifest edits.
    pub(crate) fn install(&self, _vs: &VersionSet, f: impl FnOnce(&SuperVersion) -> SuperVersion) {
        self.install_unordered(f);
    }

    /// [`install`](Self::install) for changes that touch only memtables.
    pub(crate) fn install_unordered(&self, f: impl FnOnce(&SuperVersion) -> SuperVersion) {
        let mut st = self.state.write();
        let next = Arc::new(f(&st));
        if !Arc::ptr_eq(&next.version, &st.version) {
            self.live_versions
                .lock()
                .push(Arc::downgrade(&next.version));
        }
        *st = next;
    }

    pub(crate) fn table_options(&self) -> TableBuilderOptions {
        table_options(&self.options)
    }

    pub(crate) fn level_targets(&self) -> LevelTargets {
        LevelTargets {
            l0_compaction_trigger: self.options.l0_compaction_trigger,
            max_bytes_for_level_base: self.options.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: self.options.max_bytes_for_level_multiplier,
        }
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
        Ok(Db {
            inner: Arc::new(open::open_read_only(path.as_ref(), options)?),
        })
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

    /// Looks up many keys as of one sequence number (the snapshot's, or the
    /// latest): one result per key, in input order. A lookup's error is that
    /// key's result only.
    ///
    /// With [`ReadOptions::async_io`], the keys missing from the memtables
    /// are looked up in the tables concurrently: each runs the ordinary
    /// lookup of [`get`](Self::get) on a fiber of this thread, and their file
    /// reads go through io_uring together, at most
    /// [`ReadOptions::async_queue_depth`] at once, so a cold batch keeps the
    /// disk's queue full. Without io_uring (old kernel, seccomp,
    /// `VARVE_IO=sync`) or when called from inside such a fiber, the lookups
    /// run one after another with the same results.
    ///
    /// ```
    /// # fn main() -> varve::Result<()> {
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let db = varve::Db::open(dir.path(), varve::Options::default())?;
    /// db.put(b"a", b"1")?;
    /// let opts = varve::ReadOptions { async_io: true, ..Default::default() };
    /// let got = db.multi_get(&opts, &[&b"a"[..], b"b"]);
    /// assert_eq!(got[0].as_ref().ok(), Some(&Some(b"1".to_vec())));
    /// assert_eq!(got[1].as_ref().ok(), Some(&None));
    /// # Ok(())
    /// # }
    /// ```
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        opts: &ReadOptions,
        keys: &[K],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        read::multi_get::multi_get(&self.inner, opts, keys)
    }

    /// A consistent view of the database as of now, released on drop.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshots.acquire(
            self.inner
                .writes
                .visible_sequence(&self.inner.last_sequence),
        )
    }

    /// An iterator over all keys in order, starting at the first.
    pub fn iter(&self) -> DbIterator {
        self.iter_opt(&ReadOptions::default())
    }

    /// An iterator with explicit read options (snapshot, bounds).
    pub fn iter_opt(&self, opts: &ReadOptions) -> DbIterator {
        read::iter(&self.inner, opts)
    }

    /// An iterator over the keys in `range` (any Rust range of byte
    /// strings: `a..b`, `a..=b`, `a..`, `..b`), double-ended:
    /// `db.range(a..b).rev()` walks it backward.
    ///
    /// ```no_run
    /// # fn main() -> varve::Result<()> {
    /// # let db = varve::Db::open("/tmp/doc-range", varve::Options::default())?;
    /// for entry in db.range(b"apple".as_slice()..b"cherry".as_slice()).rev() {
    ///     let (key, value) = entry?;
    ///     println!("{key:?} = {value:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn range<K: ?Sized + AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        self.range_opt(range, &ReadOptions::default())
    }

    /// [`range`](Self::range) with read options; the range is intersected
    /// with the options' bounds.
    pub fn range_opt<K: ?Sized + AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
        opts: &ReadOptions,
    ) -> DbIterator {
        // The smallest key after `k` is `k` followed by a zero byte.
        let after = |k: &K| {
            let mut v = k.as_ref().to_vec();
            v.push(0);
            v
        };
        let lower = match range.start_bound() {
            Bound::Included(k) => Some(k.as_ref().to_vec()),
            Bound::Excluded(k) => Some(after(k)),
            Bound::Unbounded => None,
        };
        let upper = match range.end_bound() {
            Bound::Included(k) => Some(after(k)),
            Bound::Excluded(k) => Some(k.as_ref().to_vec()),
            Bound::Unbounded => None,
        };
        let mut opts = opts.clone();
        opts.iterate_lower_bound = match (lower, opts.iterate_lower_bound.take()) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        opts.iterate_upper_bound = match (upper, opts.iterate_upper_bound.take()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.iter_opt(&opts)
    }

    /// An iterator over the keys that start with `prefix`, double-ended.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        self.prefix_opt(prefix, &ReadOptions::default())
    }

    /// [`prefix`](Self::prefix) with read options.
    pub fn prefix_opt(&self, prefix: impl AsRef<[u8]>, opts: &ReadOptions) -> DbIterator {
        let p = prefix.as_ref();
        match prefix_end(p) {
            Some(end) => self.range_opt(p..end.as_slice(), opts),
            None => self.range_opt(p.., opts),
        }
    }

    /// Anchor keys of `range`: sorted, distinct keys strictly inside it
    /// (after its start, before its end), at most `max_anchors`, each with
    /// the approximate bytes since the previous anchor, plus the bytes after
    /// the last one. Sampled from the index of every overlapping table on
    /// every level and from the memtables; no data block is read.
    ///
    /// Errors: only if a table cannot be opened.
    pub fn approximate_key_anchors(&self, range: &KeyRange, max_anchors: usize) -> Result<Anchors> {
        read::anchors::approximate_key_anchors(&self.inner, range, max_anchors)
    }

    /// Cuts `range` into `parts` contiguous sub-ranges of about equal bytes,
    /// at anchor keys: the first starts at `range.start`, the last ends at
    /// `range.end`, each ends where the next starts. Fewer parts (at least
    /// one) when the range has too few anchors, e.g. when it is empty or
    /// small; `parts == 0` counts as 1.
    pub fn split_range(&self, range: &KeyRange, parts: usize) -> Result<Vec<KeyRange>> {
        read::anchors::split_range(&self.inner, range, parts)
    }

    /// Calls `f(chunk, key, value)` for every key of `range` (intersected
    /// with the bounds of `opts`) visible in one snapshot (`opts.snapshot`
    /// or one taken now), on `threads` threads (0: one per CPU), the
    /// caller's included.
    ///
    /// The range is cut into many more chunks than threads, handed out
    /// largest first from a shared cursor; within a chunk keys come in
    /// order, chunks run concurrently. The first error (the engine's,
    /// converted with `From`, or the callback's) stops every thread and is
    /// returned.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use varve::{Db, KeyRange, Options, ReadOptions};
    ///
    /// # fn main() -> varve::Result<()> {
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for i in 0..1000u32 {
    ///     db.put(format!("key{i:04}"), i.to_le_bytes())?;
    /// }
    /// let sum = AtomicU64::new(0);
    /// let range = KeyRange::new("key0100", "key0200");
    /// db.par_scan(&ReadOptions::default(), &range, 4, |_chunk, _key, value| {
    ///     let v = u32::from_le_bytes(value.try_into().expect("4 bytes"));
    ///     sum.fetch_add(u64::from(v), Ordering::Relaxed);
    ///     Ok::<(), varve::Error>(())
    /// })?;
    /// assert_eq!(sum.into_inner(), (100..200).sum::<u64>());
    /// assert_eq!(db.par_count(&ReadOptions::default(), &range, 4)?, 100);
    /// # Ok(())
    /// # }
    /// ```
    pub fn par_scan<E, F>(
        &self,
        opts: &ReadOptions,
        range: &KeyRange,
        threads: usize,
        f: F,
    ) -> std::result::Result<(), E>
    where
        E: From<Error> + Send,
        F: Fn(&ChunkInfo, &[u8], &[u8]) -> std::result::Result<(), E> + Sync,
    {
        read::par_scan::par_scan(self, opts, range, threads, f)
    }

    /// [`par_scan`](Self::par_scan) delivering every key in key order to `f`
    /// on the caller's thread, while `threads` workers read chunks ahead (at
    /// most `2 * threads` chunks buffered).
    pub fn par_scan_ordered<E, F>(
        &self,
        opts: &ReadOptions,
        range: &KeyRange,
        threads: usize,
        f: F,
    ) -> std::result::Result<(), E>
    where
        E: From<Error> + Send,
        F: FnMut(&ChunkInfo, &[u8], &[u8]) -> std::result::Result<(), E>,
    {
        read::par_scan::par_scan_ordered(self, opts, range, threads, f)
    }

    /// Number of keys of `range` (intersected with the bounds of `opts`)
    /// visible in one snapshot, counted on `threads` threads like
    /// [`par_scan`](Self::par_scan); values are never copied. A count over
    /// much more data than the block cache holds should pass
    /// `fill_cache: false`: otherwise every block read is inserted and
    /// evicts another (on a hot 10M-key database that churn cost 40% of
    /// the count).
    pub fn par_count(&self, opts: &ReadOptions, range: &KeyRange, threads: usize) -> Result<u64> {
        read::par_scan::par_count(self, opts, range, threads)
    }

    /// Writes every memtable to L0 table files and waits for it; afterwards
    /// every write so far is in a table and no WAL is needed to recover it.
    pub fn flush(&self) -> Result<()> {
        self.inner.writes.flush_memtable(&self.inner)
    }

    /// Compacts every table overlapping `[begin, end]` (user keys; `None`
    /// is unbounded) down to the deepest level holding the range, after a
    /// flush. Drops deleted and overwritten entries no snapshot can see.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.flush()?;
        let db = &self.inner;
        let _only_one = db.bg.compaction_lock.lock();
        let deepest = {
            let v = db.versions.lock().current();
            (0..crate::version::NUM_LEVELS)
                .rev()
                .find(|&l| !v.overlapping_files(l, begin, end).is_empty())
        };
        let Some(deepest) = deepest else {
            return Ok(());
        };
        for level in 0..deepest.max(1) {
            db.check_writable()?;
            let plan = {
                let vs = db.versions.lock();
                let busy = db.bg.being_compacted.lock().clone();
                picker::pick_range(&vs.current(), level, begin, end, &busy)
            };
            if let Some(plan) = plan {
                bg::run_plan(db, &plan).inspect_err(|e| db.poison_err("compaction failed", e))?;
            }
        }
        db.bg.kick();
        Ok(())
    }

    /// Waits until no level is due for compaction (the tree is in shape).
    pub fn wait_for_compactions(&self) -> Result<()> {
        let db = &self.inner;
        if db.read_only {
            return Ok(()); // nothing ever changes
        }
        loop {
            db.check_writable()?;
            let due = {
                let v = db.super_version().version.clone();
                picker::level_scores(&v, &db.level_targets())
                    .iter()
                    .any(|&s| s >= 1.0)
            };
            if !due && db.super_version().imms.is_empty() {
                // Take the lock once so a running job has finished.
                drop(db.bg.compaction_lock.lock());
                return Ok(());
            }
            db.bg.kick();
            db.bg.wait_progress(std::time::Duration::from_millis(50));
        }
    }

    /// The engine's counters and the shape of the tree.
    pub fn stats(&self) -> DbStats {
        let db = &self.inner;
        let sv = db.super_version();
        let mut s = DbStats::from_counters(&db.counters);
        s.levels = DbStats::levels_of(
            &sv.version,
            &picker::level_scores(&sv.version, &db.level_targets()),
        );
        if let Some(c) = &db.block_cache {
            s.block_cache_hits = c.hits();
            s.block_cache_misses = c.misses();
            s.block_cache_usage = c.usage() as u64;
            s.block_cache_capacity = c.capacity() as u64;
        }
        s.open_tables = db.table_cache.open_tables() as u64;
        s.pinned_table_memory = db.table_cache.pinned_memory() as u64;
        s.memtable_bytes = sv.memtable_usage() as u64;
        s.immutable_memtables = sv.imms.len() as u64;
        s
    }

    /// [`stats`](Self::stats) as a human-readable report.
    pub fn stats_report(&self) -> String {
        self.stats().report()
    }

    /// Writes a consistent, openable copy of this database into `target`
    /// while writers continue: tables are hard-linked (copied where links
    /// are impossible), the live WALs and a fresh manifest are copied and
    /// written, everything is fsynced. The copy holds every write
    /// acknowledged before the call (except `disable_wal` writes still in
    /// a memtable) and a sequence-order prefix of later ones.
    ///
    /// Errors: `InvalidArgument` if `target` exists and is not an empty
    /// directory (or is this database); IO errors name the file.
    pub fn checkpoint(&self, target: impl AsRef<Path>) -> Result<()> {
        checkpoint::checkpoint(&self.inner, target.as_ref())
    }

    /// Rebuilds the (closed) database in `path` from the table and WAL
    /// files present, when its manifest or `CURRENT` is lost or damaged:
    /// every good table and WAL is merged into new tables (written with
    /// `options`' table settings, through `options.fs`), and whatever fails
    /// its checksums is moved to `path/lost/` (see `docs/cli.md`).
    ///
    /// Errors: `Locked` if the database is open, `NotFound` if `path` is
    /// not a directory, IO errors naming the file.
    pub fn repair(path: impl AsRef<Path>, options: &Options) -> Result<RepairReport> {
        repair::repair(path.as_ref(), options)
    }

    /// Numbers of the table files in each level of the current version
    /// (index = level), with their sizes in bytes.
    pub fn live_tables(&self) -> Vec<Vec<(u64, u64)>> {
        let v = self.inner.super_version().version.clone();
        (0..crate::version::NUM_LEVELS)
            .map(|l| v.files(l).iter().map(|f| (f.number, f.file_size)).collect())
            .collect()
    }

    /// The highest sequence number visible to reads.
    pub fn latest_sequence(&self) -> u64 {
        self.inner
            .writes
            .visible_sequence(&self.inner.last_sequence)
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
        self.inner.super_version().memtable_usage()
    }

    /// Brings back writes after a full disk poisoned the database, once
    /// space has been freed; a no-op when the database is not poisoned.
    ///
    /// varve does not retry on its own: it cannot tell when space comes
    /// back, and retrying against a full disk would only repeat the failing
    /// IO. The application calls `resume` when it has freed space (or at
    /// intervals); until then writes fail with `Error::Poisoned`, whose
    /// message names the failure and says whether `resume` can help, and
    /// reads keep working. See `docs/errors.md`.
    ///
    /// What it does, holding the write path's locks so no write is in
    /// flight: if the manifest failed, starts a new one holding a snapshot
    /// of the current state; if the WAL failed, cuts it to the end of its
    /// last record that reached the file (every acknowledged write is
    /// there) and drops the writes that failed from the memtable; starts a
    /// fresh WAL, accepts writes again, and waits until every memtable is
    /// flushed to L0, so the old WALs are retired by a normal manifest
    /// edit. Background flushes and compactions stopped by the failure
    /// restart.
    ///
    /// Writes that failed are never visible afterwards. Between the
    /// failure and `resume`, reads may still see a write whose WAL write
    /// failed (the write path publishes a batch before its bytes reach the
    /// file); `resume` (or a reopen) removes it.
    ///
    /// Errors: `Error::Poisoned` saying "reopen" when the failure was not a
    /// full disk (an IO error such as EIO, a failed fdatasync of the WAL,
    /// whose effect on the file is unknown) — only a reopen recovers from
    /// those; the IO error (ENOSPC) if the disk is still too full for one
    /// of the steps, in which case the database stays poisoned and
    /// `resume` may be called again later; `Error::Closed` after `close`.
    pub fn resume(&self) -> Result<()> {
        resume::resume(&self.inner)
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
        bg::stop(&self.inner);
        self.inner.writes.stop();
        let result = if self.inner.is_poisoned.load(Ordering::Acquire) {
            Ok(())
        } else {
            // Tables a reader still pinned when the job that retired them
            // finished are deleted now that the background work is done,
            // so a closed directory holds only what its manifest names
            // (plus the current WALs): leftovers would otherwise wait for
            // the next open, and a repair in between would have to guess.
            obsolete::delete_obsolete_files(&self.inner);
            self.inner
                .writes
                .sync_wal(&self.inner)
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
        let edit = VersionEdit {
            clean_close: Some((log.number, log.durable())),
            ..VersionEdit::default()
        };
        db.versions.lock().log_and_apply(edit)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close_impl();
    }
}

/// The smallest key above every key that starts with `prefix`: the prefix
/// with its last byte below 0xff raised by one (and the rest dropped);
/// `None` when every byte is 0xff (no key is above them all).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}
