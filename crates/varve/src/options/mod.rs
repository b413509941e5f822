//! Options for opening a database ([`Options`]), and for each read
//! ([`ReadOptions`]) and write ([`WriteOptions`], in `read_write`).
//!
//! Plain data; cloned freely. Choices with more than two answers are
//! enums defined where they take effect and re-exported at the root
//! ([`WalWriter`], [`Compression`],
//! [`IoEngine`]). [`Options::validate`] rejects nonsense
//! at open with `InvalidArgument` rather than failing later. This module
//! sits just below `db/`: nothing beneath reads it (each layer takes its
//! own small settings struct).

mod keyspace;
pub(crate) mod memory;
mod read_write;

pub use keyspace::KeyspaceOptions;

use std::fmt;
use std::sync::Arc;

pub use read_write::{DEFAULT_ASYNC_QUEUE_DEPTH, ReadOptions, ScanPrefetch, WriteOptions};

use crate::error::{Error, Result};
use crate::io::{FileSystem, IoEngine, PosixFs};
use crate::sst::{BlockCache, Compression, ReaderPool};
use crate::wal::WalWriter;

/// Options for `Db::open`.
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none. Default `true`.
    pub create_if_missing: bool,
    /// Fail if a database already exists. Default `false`.
    pub error_if_exists: bool,
    /// Bytes of arena a memtable holds before it becomes immutable and a new
    /// one starts. Default 64 MiB; at least 64 KiB, at most 2 GiB.
    pub write_buffer_size: usize,
    /// How many immutable memtables may wait for a flush before writers
    /// stop. One short of it, every write is first delayed by 1 ms (the
    /// graded step before the stop); both are counted in
    /// `Db::stats`.
    /// Default 4.
    pub max_immutable_memtables: usize,
    /// Value bytes (in blob files) the pointers of one memtable may
    /// reference before it becomes immutable, whatever its own size. A
    /// value overwritten while its pointer is still in a memtable is
    /// garbage nobody has counted yet (flush counts it): this bounds that
    /// unknown garbage to the memtables in memory times this size, so a
    /// sustained overwrite cannot outrun garbage collection unseen. A
    /// 64 MiB memtable of 16-byte keys holds pointers to about 4 GB of
    /// 4 KiB values. Default 512 MiB; at least 1 MiB.
    pub max_memtable_blob_bytes: u64,
    /// Largest key accepted, in bytes. Default 64 KiB; at most 16 MiB.
    pub max_key_size: usize,
    /// Largest value accepted, in bytes. Default 256 MiB; at most 1 GiB.
    pub max_value_size: usize,
    /// Values of at least this many bytes are written once to a blob file
    /// and the tables keep a pointer to them (`docs/blob-files.md`); `None`
    /// keeps every value inline. Default 4096, by measurement
    /// (`scripts/bench-blobs.sh threshold`, 800 MB of values each; the
    /// document's "The default threshold"): from 2 KiB up a blob value
    /// costs a cold point read nothing (1.01x inline at 2 KiB, 1.15x at 4
    /// KiB) while a fill runs 3.8x to 6x faster; at 1 KiB and below a cold
    /// point read pays for a second read (0.66x at 1 KiB). From 4 KiB a
    /// value fills a page, so its own read reads nothing else.
    pub min_blob_size: Option<usize>,
    /// Tables whose entries point into blob files (keys and ~12-byte
    /// pointers) keep all their data blocks in memory, outside the block
    /// cache, up to this many bytes in all: a point read of a separated
    /// value then reads the disk once, for the value, whatever the cache
    /// size. About 40 bytes per key with 16-byte keys (256 MiB: ~6M keys);
    /// tables past the budget read their blocks through the cache.
    /// `Db::stats` reports the bytes pinned. Default 256 MiB; 0: never.
    pub pinned_blob_tables_size: usize,
    /// Write lanes for blob values: each appends to its own blob file, and
    /// a writer takes the lane of its thread (or the first free one), or,
    /// with [`blob_lanes_by_key`](Self::blob_lanes_by_key), the lane of its
    /// key. Default 4.
    pub blob_write_lanes: usize,
    /// Lanes split the key space instead of serving threads: lane `i` takes
    /// the keys whose first 8 bytes (big-endian, zero-padded) fall in the
    /// `i`-th of `blob_write_lanes` equal slices of the 64-bit space, so
    /// the values of a key range sit together in that lane's files, as the
    /// contest engines' shards did. With
    /// [`shared_scan_bytes`](Self::shared_scan_bytes) at least a lane's
    /// share of the data, a scan in key order then reads each lane's files
    /// once however the keys arrived. For keys spread evenly over the
    /// space (hashes, random ids); skewed keys crowd few lanes. Default
    /// false.
    pub blob_lanes_by_key: bool,
    /// Bytes of resident blob-file chunks (1 MiB each) that concurrent long
    /// scans share: an iterator that has read 64 values takes each further
    /// value from the chunk that holds it, read once for every scan that
    /// arrives while it is resident, instead of from read-ahead windows of
    /// its own. The pool never grows past this; when it is full of chunks
    /// being copied from, a value is read alone. `Db::stats` reports its
    /// loads and hits. Default 0: off (each iterator reads ahead alone).
    pub shared_scan_bytes: usize,
    /// A lane seals its blob file at this size and opens the next. Default
    /// 256 MiB.
    pub blob_file_size: u64,
    /// Reclaim the space of overwritten and deleted blob values: a
    /// compaction copies the live values of a blob file with at least
    /// [`blob_garbage_collection_ratio`](Self::blob_garbage_collection_ratio)
    /// of garbage into new blob files, and a file whose pointers see no
    /// compaction is compacted for it at
    /// [`blob_garbage_collection_force_threshold`](Self::blob_garbage_collection_force_threshold).
    /// Files that are all garbage are deleted either way. Default `true`.
    pub enable_blob_garbage_collection: bool,
    /// Garbage share (of value bytes) at which a compaction relocates a
    /// blob file's live values. While that share of all sealed value bytes
    /// is garbage, collection also runs when the database is otherwise
    /// idle. Default 0.25: at rest, values on disk settle within about
    /// 1 / (1 - 0.25) = 1.33x the live ones.
    pub blob_garbage_collection_ratio: f64,
    /// Garbage share at which a blob file's tables are compacted for it
    /// even when no level needs compaction. Also the share of all sealed
    /// value bytes at which a writer switching memtables waits for
    /// collection to catch up (`stall_stops_blob_garbage` in `Db::stats`),
    /// which bounds the space of a sustained overwrite. Default 0.5.
    pub blob_garbage_collection_force_threshold: f64,
    /// Check WAL record checksums during recovery (always on) and also treat
    /// a bad record in a non-final WAL file as corruption. Default `true`.
    pub paranoid_checks: bool,
    /// Bytes of the block cache (uncompressed data blocks) this database
    /// creates for itself. Default 64 MiB; 0 disables it. Ignored when
    /// [`block_cache`](Self::block_cache) is given.
    pub cache_size: usize,
    /// A block cache shared with other databases (`BlockCache::new(bytes)`);
    /// `None`: this database creates its own of `cache_size` bytes.
    /// Default `None`.
    pub block_cache: Option<Arc<BlockCache>>,
    /// Most table files kept open at once (their index and filter blocks are
    /// pinned in memory while open). Default 1000.
    pub max_open_files: usize,
    /// After `Db::open` returns, a background thread opens the live tables
    /// (newest levels first, at most `max_open_files`), so the first reads
    /// of each table do not pay for loading its index and filter (RocksDB
    /// opens every table inside `DB::Open` by default; varve keeps the open
    /// itself fast). Best effort: errors are left for the read that needs
    /// the table. Default `true`.
    pub warm_table_cache: bool,
    /// Target uncompressed size of a data block. Default 4 KiB.
    pub block_size: usize,
    /// Bloom filter bits per key (0: no filter). Default 10 (~1% false
    /// positives).
    pub bloom_bits_per_key: u32,
    /// How data blocks are compressed. Default [`Compression::None`] (NVMe
    /// reads are cheap; decompression costs CPU on every miss).
    pub compression: Compression,
    /// L0 file count that triggers a compaction into L1. Default 4.
    pub l0_compaction_trigger: usize,
    /// L0 file count at which each write is delayed by 1 ms. Default 20.
    pub l0_slowdown_writes_trigger: usize,
    /// L0 file count at which writes stop until compaction catches up.
    /// Default 36.
    pub l0_stop_writes_trigger: usize,
    /// Target size of L1. Default 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Each deeper level's target is this many times larger. Default 10.
    pub max_bytes_for_level_multiplier: u64,
    /// Compaction output tables are cut at about this size. Default 64 MiB.
    pub target_file_size: u64,
    /// A large compaction is cut into up to this many key ranges that run
    /// in parallel. Default 2 (one per core on the 2-core machines we
    /// measure on; raise it on bigger ones). 1 disables sub-compactions.
    pub max_subcompactions: usize,
    /// Read table data with O_DIRECT through aligned buffers, bypassing the
    /// page cache. Default `false`.
    pub use_direct_reads: bool,
    /// Write tables (flush and compaction) with O_DIRECT. Default `false`.
    pub use_direct_io_for_flush_and_compaction: bool,
    /// How the write-ahead log's bytes reach its file. Every writer keeps
    /// the same promises (an acknowledged write survives `kill -9`; a
    /// `sync` write survives power loss); they differ in cost. Used as
    /// chosen only where the file system is plain OS files
    /// ([`FileSystem::uses_os_files`]); elsewhere plain appends. Default
    /// [`WalWriter::Mapped`] (see `docs/wal-format.md`).
    pub wal_writer: WalWriter,
    /// A partly filled WAL slot is handed to the OS after this long without
    /// a writer pushing it (WiredTiger's 50 ms). Writers normally push their
    /// own slot before returning, so this is a backstop. Zero disables it.
    pub wal_idle_flush_interval: std::time::Duration,
    /// Background fdatasync of the WAL this often when unsynced bytes exist
    /// (MongoDB's journal uses 100 ms). Default 100 ms: it bounds what a
    /// power loss can take from `sync = false` writes to about 100 ms for at
    /// most 10 fdatasyncs a second, done by the syncing thread off the
    /// write path (`sync = false` writes never wait for it). Zero disables
    /// it. `sync = true` writes are always fdatasync'ed before they return.
    pub wal_sync_interval: std::time::Duration,
    /// Whether reads may use io_uring (`multi_get` with `async_io`,
    /// concurrent seeks, the reader pool's batches, the table warm-up).
    /// [`IoEngine::Sync`] reads with `pread`, one read after another, with
    /// identical results; it excludes [`WalWriter::IoUring`]. The
    /// environment variable `VARVE_IO=sync` turns io_uring off for the
    /// whole process (for tests). Default [`IoEngine::IoUring`] (where the
    /// kernel offers it).
    pub io_engine: IoEngine,
    /// The threads that read scan chunks in the background (iterator
    /// prefetch). `None`: the database starts its own pool of four threads
    /// per core (8 to 64) on the first scan that prefetches, and they stop
    /// when the database and its iterators are gone. Pass a pool
    /// (`ReaderPool::new(threads)`) to size it, or to share one among
    /// databases. Default `None`.
    pub reader_pool: Option<Arc<ReaderPool>>,
    /// The file system the database lives on. Default: the real one.
    pub fs: Arc<dyn FileSystem>,
    /// One limit, in bytes, for the memory the engine holds
    /// (`docs/memory.md`). When set, it replaces `write_buffer_size`,
    /// `cache_size`, `pinned_blob_tables_size` and `shared_scan_bytes`
    /// with shares of the budget, bounds the index and filter blocks of
    /// open tables and every scan's and compaction's read-ahead buffers
    /// by their shares (a scan that finds no room reads ahead less, or
    /// block by block), and counts the blob lanes' staging slots first.
    /// The engine then degrades by waiting (writers, for memtables) or by
    /// evicting (caches, open tables), never by growing; `Db::stats`
    /// reports each part. Open fails with `InvalidArgument` when the fixed
    /// parts take more than half of it. Default `None`: each part is sized
    /// by its own option, and read-ahead buffers grow with the number of
    /// open iterators.
    pub memory_budget: Option<usize>,
    /// Time to live: an entry older than this is hidden from every read
    /// (snapshots too) and dropped by compaction, and tables holding only
    /// expired entries are deleted without a rewrite. Counted in
    /// milliseconds (at least 1 ms); expiry is never early, an expired
    /// entry never comes back (reopens and crashes included), and it is
    /// late by at most about a 64th of the TTL (50 ms to 60 s) plus the
    /// sync thread's tick (the exact bound is in
    /// `docs/ttl-and-filters.md`); entries written before the database had
    /// a TTL take the time of the first sample after they were written.
    /// Default `None`: nothing expires.
    pub ttl: Option<std::time::Duration>,
    /// The wall clock `ttl` counts by. Tests only (set a
    /// `varve::testing::ManualClock`); default `None`: the system clock.
    #[doc(hidden)]
    pub clock: Option<Arc<dyn crate::util::clock::Clock>>,
    /// Called by compaction for the newest value of each key that no
    /// snapshot can see: keep, remove or replace it
    /// ([`CompactionFilter`](crate::CompactionFilter)). Default `None`.
    pub compaction_filter: Option<Arc<dyn crate::CompactionFilter>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_immutable_memtables: 4,
            max_memtable_blob_bytes: 512 << 20,
            max_key_size: 64 << 10,
            max_value_size: 256 << 20,
            min_blob_size: Some(4096),
            pinned_blob_tables_size: 256 << 20,
            blob_write_lanes: 4,
            blob_lanes_by_key: false,
            shared_scan_bytes: 0,
            blob_file_size: 256 << 20,
            enable_blob_garbage_collection: true,
            blob_garbage_collection_ratio: 0.25,
            blob_garbage_collection_force_threshold: 0.5,
            paranoid_checks: true,
            cache_size: 64 << 20,
            block_cache: None,
            max_open_files: 1000,
            warm_table_cache: true,
            block_size: 4 << 10,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            l0_compaction_trigger: 4,
            l0_slowdown_writes_trigger: 20,
            l0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10,
            target_file_size: 64 << 20,
            max_subcompactions: 2,
            use_direct_reads: false,
            use_direct_io_for_flush_and_compaction: false,
            wal_writer: WalWriter::Mapped,
            wal_idle_flush_interval: std::time::Duration::from_millis(50),
            wal_sync_interval: std::time::Duration::from_millis(100),
            io_engine: IoEngine::IoUring,
            reader_pool: None,
            fs: Arc::new(PosixFs),
            memory_budget: None,
            ttl: None,
            clock: None,
            compaction_filter: None,
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_immutable_memtables", &self.max_immutable_memtables)
            .field("max_memtable_blob_bytes", &self.max_memtable_blob_bytes)
            .field("max_key_size", &self.max_key_size)
            .field("max_value_size", &self.max_value_size)
            .field("min_blob_size", &self.min_blob_size)
            .field("pinned_blob_tables_size", &self.pinned_blob_tables_size)
            .field("blob_write_lanes", &self.blob_write_lanes)
            .field("blob_lanes_by_key", &self.blob_lanes_by_key)
            .field("shared_scan_bytes", &self.shared_scan_bytes)
            .field("blob_file_size", &self.blob_file_size)
            .field(
                "enable_blob_garbage_collection",
                &self.enable_blob_garbage_collection,
            )
            .field(
                "blob_garbage_collection_ratio",
                &self.blob_garbage_collection_ratio,
            )
            .field(
                "blob_garbage_collection_force_threshold",
                &self.blob_garbage_collection_force_threshold,
            )
            .field("paranoid_checks", &self.paranoid_checks)
            .field("cache_size", &self.cache_size)
            .field(
                "block_cache",
                &self.block_cache.as_ref().map(|c| c.capacity()),
            )
            .field("max_open_files", &self.max_open_files)
            .field("warm_table_cache", &self.warm_table_cache)
            .field("block_size", &self.block_size)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("compression", &self.compression)
            .field("l0_compaction_trigger", &self.l0_compaction_trigger)
            .field(
                "l0_slowdown_writes_trigger",
                &self.l0_slowdown_writes_trigger,
            )
            .field("l0_stop_writes_trigger", &self.l0_stop_writes_trigger)
            .field("max_bytes_for_level_base", &self.max_bytes_for_level_base)
            .field(
                "max_bytes_for_level_multiplier",
                &self.max_bytes_for_level_multiplier,
            )
            .field("target_file_size", &self.target_file_size)
            .field("max_subcompactions", &self.max_subcompactions)
            .field("use_direct_reads", &self.use_direct_reads)
            .field(
                "use_direct_io_for_flush_and_compaction",
                &self.use_direct_io_for_flush_and_compaction,
            )
            .field("ttl", &self.ttl)
            .field("clock", &self.clock)
            .field(
                "compaction_filter",
                &self
                    .compaction_filter
                    .as_ref()
                    .map(|f| f.name().to_string()),
            )
            .field("wal_writer", &self.wal_writer)
            .field("wal_idle_flush_interval", &self.wal_idle_flush_interval)
            .field("wal_sync_interval", &self.wal_sync_interval)
            .field("io_engine", &self.io_engine)
            .field(
                "reader_pool",
                &self.reader_pool.as_ref().map(|p| p.threads()),
            )
            .field("fs", &self.fs)
            .field("memory_budget", &self.memory_budget)
            .finish()
    }
}

impl Options {
    /// These options with the sizes `memory_budget` sets applied, and the
    /// plan (`None` without a budget).
    pub(crate) fn planned(mut self) -> Result<(Options, Option<memory::MemoryPlan>)> {
        let Some(budget) = self.memory_budget else {
            return Ok((self, None));
        };
        let plan = memory::MemoryPlan::plan(&self, budget)?;
        plan.apply(&mut self)?;
        Ok((self, Some(plan)))
    }

    /// Checks the options for values the engine cannot work with.
    pub fn validate(&self) -> Result<()> {
        if let Some(ttl) = self.ttl
            && ttl < std::time::Duration::from_millis(1)
        {
            return Err(Error::InvalidArgument(format!(
                "ttl {ttl:?} is under one millisecond (expiry is counted in milliseconds)"
            )));
        }
        if !(64 << 10..=2 << 30).contains(&self.write_buffer_size) {
            return Err(Error::InvalidArgument(format!(
                "write_buffer_size {} is outside 64 KiB..=2 GiB",
                self.write_buffer_size
            )));
        }
        if self.max_memtable_blob_bytes < 1 << 20 {
            return Err(Error::InvalidArgument(format!(
                "max_memtable_blob_bytes {} is under 1 MiB",
                self.max_memtable_blob_bytes
            )));
        }
        if self.max_key_size == 0 || self.max_key_size > 16 << 20 {
            return Err(Error::InvalidArgument(format!(
                "max_key_size {} is outside 1..=16 MiB",
                self.max_key_size
            )));
        }
        if !(1..=256).contains(&self.blob_write_lanes) {
            return Err(Error::InvalidArgument(format!(
                "blob_write_lanes {} is outside 1..=256",
                self.blob_write_lanes
            )));
        }
        if !(1 << 20..=1 << 40).contains(&self.blob_file_size) {
            return Err(Error::InvalidArgument(format!(
                "blob_file_size {} is outside 1 MiB..=1 TiB",
                self.blob_file_size
            )));
        }
        for (name, v) in [
            (
                "blob_garbage_collection_ratio",
                self.blob_garbage_collection_ratio,
            ),
            (
                "blob_garbage_collection_force_threshold",
                self.blob_garbage_collection_force_threshold,
            ),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(Error::InvalidArgument(format!(
                    "{name} {v} is outside (0, 1]"
                )));
            }
        }
        if self.max_value_size > 1 << 30 {
            return Err(Error::InvalidArgument(format!(
                "max_value_size {} is over 1 GiB",
                self.max_value_size
            )));
        }
        if !(256..=64 << 20).contains(&self.block_size) {
            return Err(Error::InvalidArgument(format!(
                "block_size {} is outside 256 B..=64 MiB",
                self.block_size
            )));
        }
        if self.l0_compaction_trigger == 0
            || self.l0_slowdown_writes_trigger < self.l0_compaction_trigger
            || self.l0_stop_writes_trigger < self.l0_slowdown_writes_trigger
        {
            return Err(Error::InvalidArgument(format!(
                "L0 triggers must satisfy 1 <= compaction ({}) <= slowdown ({}) <= stop ({})",
                self.l0_compaction_trigger,
                self.l0_slowdown_writes_trigger,
                self.l0_stop_writes_trigger
            )));
        }
        if self.max_bytes_for_level_multiplier < 2
            || self.max_bytes_for_level_base == 0
            || self.target_file_size == 0
        {
            return Err(Error::InvalidArgument(
                "max_bytes_for_level_base and target_file_size must be > 0, the multiplier >= 2"
                    .into(),
            ));
        }
        if !(1..=64).contains(&self.max_subcompactions) {
            return Err(Error::InvalidArgument(format!(
                "max_subcompactions {} is outside 1..=64",
                self.max_subcompactions
            )));
        }
        if self.max_open_files < 16 {
            return Err(Error::InvalidArgument(format!(
                "max_open_files {} is below 16",
                self.max_open_files
            )));
        }
        if self.io_engine == IoEngine::Sync && self.wal_writer == WalWriter::IoUring {
            return Err(Error::InvalidArgument(
                "wal_writer IoUring needs io_engine IoUring (io_engine Sync uses no io_uring)"
                    .into(),
            ));
        }
        if self.max_immutable_memtables == 0 {
            return Err(Error::InvalidArgument(
                "max_immutable_memtables must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        Options::default().validate().expect("defaults are valid");
    }

    #[test]
    fn rejects_bad_sizes() {
        let o = Options {
            write_buffer_size: 10,
            ..Options::default()
        };
        assert!(matches!(o.validate(), Err(Error::InvalidArgument(_))));
        let o = Options {
            max_key_size: 0,
            ..Options::default()
        };
        assert!(matches!(o.validate(), Err(Error::InvalidArgument(_))));
    }
}
