//! [`TableCache`]: open table readers by file number, at most `capacity` at
//! once (least recently used closed first).
//!
//! Opening a table reads its footer, index, filter and properties and pins
//! them in memory, so the cache bounds both open file descriptors and that
//! pinned memory. The bookkeeping is the block cache's `LruShard` with a
//! charge of one per table. A reader already handed out stays valid after eviction
//! (it is an `Arc`). Thread-safe; tables are opened outside the cache's
//! lock, one opener per table at a time (`opening`): a thread that asks
//! for a table another thread is opening waits for it and takes its copy,
//! so a table (whose data blocks may be pinned: tens of MiB read at once)
//! is never read twice because two threads wanted it at the same moment
//! (the warm-up thread and the first reader after an open), nor once per
//! lookup of a `multi_get` batch. The opener reads synchronously
//! (`fiber::SyncReads`): a fiber holding an opening entry never switches
//! away, so a fiber that blocks on one waits for another thread, never
//! for a fiber of its own (which could not run).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use super::FileMetaData;
use crate::error::Result;
use crate::internal_iter::InternalIterator;
use crate::io::FileSystem;
use crate::iter::level::LevelIterator;
use crate::sst::BlockCache;
use crate::sst::{PinBudget, Readahead, ReaderPool, Table, TableIterOptions, TableReadOptions};
use crate::util::lru::LruShard;
use crate::util::memory::MemoryGauge;

/// Cache of open tables.
pub(crate) struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    block_cache: Option<Arc<BlockCache>>,
    /// This table cache's owner id in the block cache (which databases may
    /// share): block keys are `BlockCache::cache_id(owner, number)`.
    cache_owner: u64,
    capacity: usize,
    direct_reads: bool,
    /// Tables that point into blob files pin their data blocks within this
    /// budget (`None`: never).
    pin: Option<Arc<PinBudget>>,
    /// Open tables by file number, each charged 1 against `capacity`, or,
    /// with a memory budget, its pinned index, filter and properties bytes
    /// against the budget's part for them.
    lru: Mutex<LruShard<u64, Arc<Table>>>,
    /// Tables being opened now, by file number: the opener holds the
    /// entry's lock while it reads the table; others wait on it. Lock
    /// order: `opening`, then an entry, then `lru` (`opening` is never held
    /// while waiting for an entry).
    opening: Mutex<HashMap<u64, Arc<Mutex<()>>>>,
    /// The memory budget's part for open tables' metadata (`None`: the
    /// cache counts tables, not bytes).
    metadata_budget: Option<usize>,
    /// The memory budget's part for read-ahead buffers, which every
    /// iterator and compaction input made here reserves from.
    readahead: Option<Arc<MemoryGauge>>,
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCache")
            .field("capacity", &self.capacity)
            .field("open", &self.lru.lock().len())
            .finish()
    }
}

/// How a scan over table files reads them (see [`TableCache::files_iterator`]).
#[derive(Debug, Clone)]
pub(crate) struct ScanOptions {
    /// Largest read-ahead chunk in bytes; 0 reads one block per `read_at`.
    pub readahead_size: usize,
    /// Insert the blocks read into the block cache.
    pub fill_cache: bool,
    /// Read the next read-ahead chunks in the background on this pool.
    pub prefetch: Option<Arc<ReaderPool>>,
    /// Exclusive upper bound (user key): read-ahead stops at its block.
    pub upper_bound: Option<Vec<u8>>,
}

impl Default for ScanOptions {
    /// No read-ahead, fill the cache, no bound: the plain cursor.
    fn default() -> Self {
        ScanOptions {
            readahead_size: 0,
            fill_cache: true,
            prefetch: None,
            upper_bound: None,
        }
    }
}

impl TableCache {
    /// A cache for the tables of `dir`, keeping at most `capacity` open,
    /// reading with O_DIRECT when `direct_reads`.
    pub(crate) fn new(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        block_cache: Option<Arc<BlockCache>>,
        capacity: usize,
        direct_reads: bool,
        pin_blob_tables: usize,
    ) -> Self {
        TableCache {
            pin: (pin_blob_tables > 0).then(|| PinBudget::new(pin_blob_tables)),
            dir,
            fs,
            cache_owner: block_cache.as_ref().map_or(0, |c| c.new_owner()),
            block_cache,
            capacity: capacity.max(1),
            direct_reads,
            lru: Mutex::new(LruShard::new(capacity.max(1))),
            opening: Mutex::new(HashMap::new()),
            metadata_budget: None,
            readahead: None,
        }
    }

    /// Bounds the open tables' pinned index, filter and properties blocks
    /// by `metadata` bytes (the least recently used table is closed first;
    /// a table whose blocks alone exceed it is opened for each use and not
    /// kept) as well as by `capacity` tables, and read-ahead buffers by
    /// `readahead` bytes.
    pub(crate) fn with_memory_budget(mut self, metadata: usize, readahead: usize) -> Self {
        self.metadata_budget = Some(metadata);
        self.lru = Mutex::new(LruShard::new(metadata.max(1)));
        self.readahead = Some(MemoryGauge::new(readahead));
        self
    }

    /// The read-ahead part's gauge, with a memory budget.
    pub(crate) fn readahead_gauge(&self) -> Option<&Arc<MemoryGauge>> {
        self.readahead.as_ref()
    }

    /// Bytes the open tables' metadata may take (with a memory budget).
    pub(crate) fn metadata_budget(&self) -> Option<usize> {
        self.metadata_budget
    }

    /// The reader of table `number` if it is open (never opens it).
    pub(crate) fn get_open(&self, number: u64) -> Option<Arc<Table>> {
        self.lru.lock().get(&number)
    }

    /// The reader of `file`, opening it if needed.
    pub(crate) fn get(&self, file: &FileMetaData) -> Result<Arc<Table>> {
        if let Some(table) = self.lru.lock().get(&file.number) {
            return Ok(table);
        }
        // One opener per table: wait for one already at it, then look
        // again (a table too large for the metadata budget is not kept, so
        // each waiter then opens it in turn).
        let entry = Arc::clone(self.opening.lock().entry(file.number).or_default());
        let turn = entry.lock();
        if let Some(table) = self.lru.lock().get(&file.number) {
            drop(turn);
            self.done_opening(file.number, entry);
            return Ok(table);
        }
        let opened = {
            let _no_switch = crate::io::fiber::SyncReads::enter();
            self.open_table(file)
        };
        drop(turn);
        self.done_opening(file.number, entry);
        opened
    }

    /// Lets go of `number`'s opening entry, and forgets it once no thread
    /// holds it (clones are made and dropped only under `opening`, so the
    /// count is exact).
    fn done_opening(&self, number: u64, entry: Arc<Mutex<()>>) {
        let mut opening = self.opening.lock();
        drop(entry);
        if opening
            .get(&number)
            .is_some_and(|e| Arc::strong_count(e) == 1)
        {
            opening.remove(&number);
        }
    }

    /// Opens `file` and keeps it (budget permitting).
    fn open_table(&self, file: &FileMetaData) -> Result<Arc<Table>> {
        let path = crate::filenames::table_path(&self.dir, file.number);
        let reader = if self.direct_reads {
            self.fs.open_random_access_direct(&path)?
        } else {
            self.fs.open_random_access(&path)?
        };
        let cache_id = BlockCache::cache_id(self.cache_owner, file.number);
        let table = Table::open(
            reader,
            file.file_size,
            TableReadOptions {
                cache: self.block_cache.clone().filter(|_| cache_id.is_some()),
                cache_id: cache_id.unwrap_or(0),
                verify_checksums: true,
                pin: self.pin.clone().filter(|_| file.oldest_blob_file != 0),
            },
        )?;
        let mut lru = self.lru.lock();
        match self.metadata_budget {
            None => lru.insert(file.number, Arc::clone(&table), 1),
            Some(_) => {
                lru.insert(
                    file.number,
                    Arc::clone(&table),
                    table.pinned_memory().max(1),
                );
                while lru.len() > self.capacity {
                    lru.evict_lru();
                }
            }
        }
        debug_assert!(
            lru.len() <= self.capacity,
            "at most max_open_files tables open"
        );
        drop(lru);
        Ok(table)
    }

    /// A cursor over `files` (one L0 file, or a whole sorted level), opening
    /// each table only when the cursor reaches it. All its tables share one
    /// read-ahead state (when `scan.readahead_size > 0`), so the read size
    /// reached in one file carries over to the next.
    pub(crate) fn files_iterator(
        self: &Arc<Self>,
        files: &[Arc<FileMetaData>],
        scan: &ScanOptions,
    ) -> Box<dyn InternalIterator> {
        let largest = files.iter().map(|f| f.largest.clone()).collect();
        let files: Vec<Arc<FileMetaData>> = files.to_vec();
        let cache = Arc::clone(self);
        let opts = TableIterOptions {
            readahead: (scan.readahead_size > 0).then(|| {
                Arc::new(Mutex::new(Readahead::with_budget(
                    scan.readahead_size,
                    scan.prefetch.clone(),
                    self.readahead.clone(),
                )))
            }),
            upper_bound: scan.upper_bound.clone(),
            fill_cache: scan.fill_cache,
        };
        Box::new(LevelIterator::new(
            largest,
            Box::new(move |i| {
                let table = cache.get(&files[i])?;
                Ok(Box::new(table.iter_with(opts.clone())) as Box<dyn InternalIterator>)
            }),
        ))
    }

    /// Forgets table `number` (after it was deleted).
    pub(crate) fn evict(&self, number: u64) {
        self.lru.lock().remove(&number);
        if let Some(cache) = &self.block_cache {
            cache.erase_table(number);
        }
    }

    /// Tables open now.
    pub(crate) fn open_tables(&self) -> usize {
        self.lru.lock().len()
    }

    /// Bytes of data blocks pinned by open tables that point into blob
    /// files, and the budget for them.
    pub(crate) fn pinned_blob_tables(&self) -> (usize, usize) {
        self.pin.as_ref().map_or((0, 0), |p| (p.used(), p.limit()))
    }

    /// Bytes of index, filter and properties pinned by the open tables.
    pub(crate) fn pinned_memory(&self) -> usize {
        self.lru.lock().values().map(|t| t.pinned_memory()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::flush::build_table;
    use crate::io::PosixFs;
    use crate::keys::ValueKind;
    use crate::memtable::MemTable;
    use crate::sst::TableBuilderOptions;

    fn make_tables(dir: &std::path::Path, n: u64) -> Vec<FileMetaData> {
        (1..=n)
            .map(|number| {
                let mem = Arc::new(MemTable::new(1 << 20));
                mem.add(
                    number,
                    ValueKind::Value,
                    format!("key{number}").as_bytes(),
                    b"v",
                )
                .expect("add");
                build_table(
                    &PosixFs,
                    dir,
                    number,
                    &mut mem.iter(),
                    crate::compaction::filter::VersionFilter::new(Vec::new()),
                    TableBuilderOptions::default(),
                    false,
                    &mut crate::compaction::blob_gc::BlobFlow::default(),
                )
                .expect("build")
                .expect("non-empty")
            })
            .collect()
    }

    #[test]
    fn bounds_open_tables_and_reopens_evicted_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = make_tables(dir.path(), 20);
        let cache = TableCache::new(
            dir.path().to_path_buf(),
            Arc::new(PosixFs),
            None,
            4,
            false,
            0,
        );
        let first = cache.get(&files[0]).expect("open");
        assert!(
            Arc::ptr_eq(&first, &cache.get(&files[0]).expect("hit")),
            "a hit returns the open reader"
        );
        for f in &files {
            let t = cache.get(f).expect("open");
            assert_eq!(t.properties().num_entries, 1);
            assert!(
                cache.open_tables() <= 4,
                "at most max_open_files tables stay open"
            );
        }
        assert!(cache.pinned_memory() > 0);
        // An evicted table opens again; a reader handed out before stays valid.
        assert_eq!(
            first.get(b"key1", 100).expect("get").map(|(_, v)| v),
            Some(b"v".to_vec())
        );
        cache.evict(files[19].number);
        assert!(cache.get(&files[0]).is_ok());
        assert!(cache.open_tables() <= 4);
    }

    /// Threads asking for the same table at once share one open: each
    /// gets the same reader, and the file is read as often as one open
    /// reads it.
    #[test]
    fn concurrent_gets_of_a_table_open_it_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = make_tables(dir.path(), 8);
        let fs = crate::testing::FaultInjectingFs::new(Arc::new(PosixFs));
        let cache_of = || {
            TableCache::new(
                dir.path().to_path_buf(),
                Arc::new(fs.clone()),
                None,
                16,
                false,
                0,
            )
        };
        let before = fs.reads();
        cache_of().get(&files[0]).expect("open");
        let one_open = fs.reads() - before;
        assert!(one_open > 0);
        for f in &files {
            let cache = cache_of();
            let start = std::sync::Barrier::new(8);
            let before = fs.reads();
            let tables: Vec<Arc<Table>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|_| {
                        s.spawn(|| {
                            start.wait();
                            cache.get(f).expect("open")
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("join"))
                    .collect()
            });
            assert!(tables.iter().all(|t| Arc::ptr_eq(t, &tables[0])));
            assert_eq!(
                fs.reads() - before,
                one_open,
                "table {} read once",
                f.number
            );
            assert!(cache.opening.lock().is_empty(), "no opening entry left");
        }
    }

    /// The lookups of one fiber batch (as `multi_get` runs them) that all
    /// need the same unopened table: one opens it, the others wait without
    /// stalling the thread they share (an opener that switched fibers
    /// while holding the table's entry would leave them blocked for good).
    #[test]
    fn fibers_of_one_thread_share_a_table_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = make_tables(dir.path(), 4);
        let (tx, rx) = std::sync::mpsc::channel();
        let dir_path = dir.path().to_path_buf();
        std::thread::spawn(move || {
            let cache = TableCache::new(dir_path, Arc::new(PosixFs), None, 16, false, 0);
            for f in &files {
                let got: Vec<std::cell::RefCell<Option<Arc<Table>>>> =
                    (0..16).map(|_| std::cell::RefCell::new(None)).collect();
                crate::io::fiber::run_tasks_on(crate::io::IoEngine::IoUring, 16, 16, &|i| {
                    *got[i].borrow_mut() = Some(cache.get(f).expect("open"));
                });
                let first = got[0].borrow().clone().expect("ran");
                assert!(
                    got.iter()
                        .all(|t| Arc::ptr_eq(t.borrow().as_ref().expect("ran"), &first))
                );
            }
            let _ = tx.send(());
        });
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .expect("the batch finished (no fiber blocked its own thread)");
    }
}
