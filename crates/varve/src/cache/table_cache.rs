//! [`TableCache`]: open table readers by file number, at most `capacity` at
//! once (least recently used closed first).
//!
//! Opening a table reads its footer, index, filter and properties and pins
//! them in memory, so the cache bounds both open file descriptors and that
//! pinned memory. A reader already handed out stays valid after eviction
//! (it is an `Arc`). Thread-safe; tables are opened outside the lock, so
//! two threads may open the same table at once and one copy is kept.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use super::BlockCache;
use crate::Result;
use crate::io::FileSystem;
use crate::iter::InternalIterator;
use crate::iter::level::LevelIterator;
use crate::sst::{Table, TableReadOptions};
use crate::version::FileMetaData;

struct Lru {
    tables: HashMap<u64, (Arc<Table>, u64)>,
    by_use: BTreeMap<u64, u64>,
    tick: u64,
}

/// Cache of open tables.
pub struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    block_cache: Option<Arc<BlockCache>>,
    capacity: usize,
    direct_reads: bool,
    lru: Mutex<Lru>,
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCache")
            .field("capacity", &self.capacity)
            .field("open", &self.lru.lock().tables.len())
            .finish()
    }
}

/// Path of table number `n` in `dir`.
pub fn table_path(dir: &std::path::Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.sst"))
}

impl TableCache {
    /// A cache for the tables of `dir`, keeping at most `capacity` open,
    /// reading with O_DIRECT when `direct_reads`.
    pub fn new(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        block_cache: Option<Arc<BlockCache>>,
        capacity: usize,
        direct_reads: bool,
    ) -> Self {
        TableCache {
            dir,
            fs,
            block_cache,
            capacity: capacity.max(1),
            direct_reads,
            lru: Mutex::new(Lru {
                tables: HashMap::new(),
                by_use: BTreeMap::new(),
                tick: 0,
            }),
        }
    }

    /// The reader of `file`, opening it if needed.
    pub fn get(&self, file: &FileMetaData) -> Result<Arc<Table>> {
        {
            let mut lru = self.lru.lock();
            let lru = &mut *lru;
            lru.tick += 1;
            let tick = lru.tick;
            if let Some((table, used)) = lru.tables.get_mut(&file.number) {
                lru.by_use.remove(used);
                *used = tick;
                lru.by_use.insert(tick, file.number);
                return Ok(Arc::clone(table));
            }
        }
        let path = table_path(&self.dir, file.number);
        let reader = if self.direct_reads {
            self.fs.open_random_access_direct(&path)?
        } else {
            self.fs.open_random_access(&path)?
        };
        let table = Table::open(
            reader,
            file.file_size,
            TableReadOptions {
                cache: self.block_cache.clone(),
                cache_id: file.number,
                verify_checksums: true,
            },
        )?;
        let mut lru = self.lru.lock();
        let lru = &mut *lru;
        lru.tick += 1;
        let tick = lru.tick;
        if let Some((old, used)) = lru.tables.insert(file.number, (Arc::clone(&table), tick)) {
            // Another thread opened it meanwhile; keep one copy.
            lru.by_use.remove(&used);
            drop(old);
        }
        lru.by_use.insert(tick, file.number);
        while lru.tables.len() > self.capacity {
            let Some((_, victim)) = lru.by_use.pop_first() else {
                break;
            };
            lru.tables.remove(&victim);
        }
        Ok(table)
    }

    /// A cursor over `files` (one L0 file, or a whole sorted level), opening
    /// each table only when the cursor reaches it.
    pub fn files_iterator(
        self: &Arc<Self>,
        files: &[Arc<FileMetaData>],
    ) -> Box<dyn InternalIterator> {
        let largest = files.iter().map(|f| f.largest.clone()).collect();
        let files: Vec<Arc<FileMetaData>> = files.to_vec();
        let cache = Arc::clone(self);
        Box::new(LevelIterator::new(
            largest,
            Box::new(move |i| {
                let table = cache.get(&files[i])?;
                Ok(Box::new(table.iter()) as Box<dyn InternalIterator>)
            }),
        ))
    }

    /// Forgets table `number` (after it was deleted).
    pub fn evict(&self, number: u64) {
        let mut lru = self.lru.lock();
        if let Some((_, used)) = lru.tables.remove(&number) {
            lru.by_use.remove(&used);
        }
        if let Some(cache) = &self.block_cache {
            cache.erase_table(number);
        }
    }

    /// Tables open now.
    pub fn open_tables(&self) -> usize {
        self.lru.lock().tables.len()
    }

    /// Bytes of index, filter and properties pinned by the open tables.
    pub fn pinned_memory(&self) -> usize {
        self.lru
            .lock()
            .tables
            .values()
            .map(|(t, _)| t.pinned_memory())
            .sum()
    }
}
