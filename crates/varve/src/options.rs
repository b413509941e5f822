//! Options for opening a database, writing and reading.
//!
//! Plain data; cloned freely. [`Options::validate`] rejects nonsense at open
//! with `InvalidArgument` rather than failing later.

use std::fmt;
use std::sync::Arc;

use crate::io::{FileSystem, PosixFs};
use crate::snapshot::Snapshot;
use crate::{Error, Result};

/// Options for [`Db::open`](crate::Db::open).
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
    /// [`Db::stats`](crate::Db::stats).
    /// Default 4.
    pub max_immutable_memtables: usize,
    /// Largest key accepted, in bytes. Default 64 KiB; at most 16 MiB.
    pub max_key_size: usize,
    /// Largest value accepted, in bytes. Default 256 MiB; at most 1 GiB.
    pub max_value_size: usize,
    /// Check WAL record checksums during recovery (always on) and also treat
    /// a bad record in a non-final WAL file as corruption. Default `true`.
    pub paranoid_checks: bool,
    /// Bytes of the shared block cache (uncompressed data blocks).
    /// Default 64 MiB; 0 disables it.
    pub cache_size: usize,
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
    /// Compress data blocks with LZ4. Default `false` (NVMe reads are cheap;
    /// compression costs CPU on every miss).
    pub compression: bool,
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
    /// Append to the WAL through a shared memory mapping of preallocated
    /// file space (a `memcpy` per write group) instead of one `write(2)` per
    /// group. Either way an acknowledged write survives `kill -9`, and
    /// `sync` writes are `fdatasync`ed before they return. Used only where
    /// the file system is plain OS files ([`FileSystem::uses_os_files`]);
    /// elsewhere plain appends are used. Default `true` (it halves the cost
    /// of a small unsynced write; see `docs/wal-format.md`).
    pub wal_mmap: bool,
    /// With `wal_mmap`, preallocate the log by writing zeros instead of
    /// `fallocate`: the zeros are written once, and fdatasyncs of records
    /// copied over them then write only data, never an extent conversion
    /// (what recycling old log files buys RocksDB). Default `false`: see
    /// `docs/wal-format.md` for the measurement.
    pub wal_zero_fill: bool,
    /// Write the WAL through io_uring: one thread owns a ring, a write and
    /// the fdatasync behind it go to the kernel as one `IO_LINK`ed chain, a
    /// short write is an error. Takes precedence over `wal_mmap`; falls back
    /// to plain writes where io_uring cannot be set up. Default `false`:
    /// `fillsync` is faster with the mapped log on the machines we measured
    /// (see `docs/wal-format.md`).
    pub wal_io_uring: bool,
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
    /// The file system the database lives on. Default: the real one.
    pub fs: Arc<dyn FileSystem>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_immutable_memtables: 4,
            max_key_size: 64 << 10,
            max_value_size: 256 << 20,
            paranoid_checks: true,
            cache_size: 64 << 20,
            max_open_files: 1000,
            warm_table_cache: true,
            block_size: 4 << 10,
            bloom_bits_per_key: 10,
            compression: false,
            l0_compaction_trigger: 4,
            l0_slowdown_writes_trigger: 20,
            l0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10,
            target_file_size: 64 << 20,
            max_subcompactions: 2,
            use_direct_reads: false,
            use_direct_io_for_flush_and_compaction: false,
            wal_mmap: true,
            wal_zero_fill: false,
            wal_io_uring: false,
            wal_idle_flush_interval: std::time::Duration::from_millis(50),
            wal_sync_interval: std::time::Duration::from_millis(100),
            fs: Arc::new(PosixFs),
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
            .field("max_key_size", &self.max_key_size)
            .field("max_value_size", &self.max_value_size)
            .field("paranoid_checks", &self.paranoid_checks)
            .field("cache_size", &self.cache_size)
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
            .field("wal_mmap", &self.wal_mmap)
            .field("wal_zero_fill", &self.wal_zero_fill)
            .field("wal_io_uring", &self.wal_io_uring)
            .field("wal_idle_flush_interval", &self.wal_idle_flush_interval)
            .field("wal_sync_interval", &self.wal_sync_interval)
            .field("fs", &self.fs)
            .finish()
    }
}

impl Options {
    /// Checks the options for values the engine cannot work with.
    pub fn validate(&self) -> Result<()> {
        if !(64 << 10..=2 << 30).contains(&self.write_buffer_size) {
            return Err(Error::InvalidArgument(format!(
                "write_buffer_size {} is outside 64 KiB..=2 GiB",
                self.write_buffer_size
            )));
        }
        if self.max_key_size == 0 || self.max_key_size > 16 << 20 {
            return Err(Error::InvalidArgument(format!(
                "max_key_size {} is outside 1..=16 MiB",
                self.max_key_size
            )));
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
        if self.max_immutable_memtables == 0 {
            return Err(Error::InvalidArgument(
                "max_immutable_memtables must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// Options for one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// fdatasync the WAL before returning, so the write survives power loss.
    /// Without it the write has reached the OS on return and survives a
    /// process crash (`kill -9`) but not a machine crash. Default `false`.
    pub sync: bool,
    /// Skip the WAL: the write lives only in the memtable until it is flushed
    /// and is lost on any crash. Default `false`.
    pub disable_wal: bool,
}

impl WriteOptions {
    /// Options with `sync = true`.
    pub fn sync() -> Self {
        WriteOptions {
            sync: true,
            disable_wal: false,
        }
    }
}

/// Default [`ReadOptions::async_queue_depth`]: 32 reads in flight is where
/// NVMe SSDs typically reach their 4 KiB random-read IOPS limit (the figure
/// `multi_get` is measured against), while each fiber costs a stack (512 KiB
/// reserved, a few KiB touched) and deeper queues only add latency.
pub const DEFAULT_ASYNC_QUEUE_DEPTH: usize = 32;

/// Options for reads and iterators.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Read as of this snapshot instead of the latest state.
    pub snapshot: Option<Snapshot>,
    /// Iterators start at or after this key (inclusive).
    pub iterate_lower_bound: Option<Vec<u8>>,
    /// Iterators stop before this key (exclusive). Read-ahead never reads
    /// past the table block that holds it.
    pub iterate_upper_bound: Option<Vec<u8>>,
    /// Largest read-ahead chunk of an iterator, in bytes. While an
    /// iterator's block reads are sequential, each read fetches a chunk that
    /// starts at 16 KiB and doubles up to this size, kept across table
    /// files; a seek elsewhere starts over at 16 KiB. 0 turns read-ahead off
    /// (one read per block). Default 2 MiB. Point reads never read ahead.
    /// See `docs/readahead.md`.
    pub readahead_size: usize,
    /// Insert the data blocks an iterator reads into the block cache.
    /// Default `true`; a one-off large scan may pass `false` to keep the
    /// cache's working set. Point reads always fill the cache.
    pub fill_cache: bool,
    /// Asynchronous IO, like RocksDB's `ReadOptions::async_io`. In
    /// `multi_get`: look the memtable misses up in the tables concurrently,
    /// on fibers whose file reads go through io_uring (one after another
    /// where io_uring is unavailable). In iterators: once read-ahead chunks
    /// have grown to `readahead_size` (at least 256 KiB), read the next chunks
    /// of every L0 file or level being scanned on the process-wide reader
    /// pool while the current one is consumed (what `adaptive_prefetch`, on
    /// by default, does too). Default `false`.
    pub async_io: bool,
    /// Background prefetch for iterators that have proven sequential: once
    /// an iterator's read-ahead chunks have grown to `readahead_size` (at
    /// least 256 KiB, so after about twice that many bytes read in
    /// sequence), the process-wide reader pool reads the next chunks of each
    /// L0 file or level being scanned (two in flight per file or level)
    /// while the current one is consumed.
    /// Point lookups and short scans never start it. Default `true`;
    /// `par_scan` / `par_count` ignore it (they already run one reader per
    /// thread) and prefetch only with `async_io`. See `docs/readahead.md`.
    pub adaptive_prefetch: bool,
    /// Iterators position their sources (memtables, L0 files, levels) for a
    /// seek concurrently: each source's seek runs on a fiber of the calling
    /// thread, so the block reads of several levels are in flight together
    /// through io_uring. Without io_uring (or with `VARVE_IO=sync`) the
    /// sources are positioned one after another, with identical results.
    /// Adaptive: after a positioning that found everything cached (under
    /// 20 µs), the next 16 seeks position in order.
    /// A thread that positions an iterator this way gets its own io_uring
    /// (created on first use, like `multi_get`'s). Default `true`. See
    /// `docs/readahead.md`.
    pub concurrent_seeks: bool,
    /// `multi_get` with `async_io`: most lookups (and so file reads) in
    /// flight at once. Default [`DEFAULT_ASYNC_QUEUE_DEPTH`] (32); 0 counts as 1.
    pub async_queue_depth: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            snapshot: None,
            iterate_lower_bound: None,
            iterate_upper_bound: None,
            readahead_size: crate::sst::DEFAULT_READAHEAD,
            fill_cache: true,
            async_io: false,
            adaptive_prefetch: true,
            concurrent_seeks: true,
            async_queue_depth: DEFAULT_ASYNC_QUEUE_DEPTH,
        }
    }
}

impl ReadOptions {
    /// Read options pinned to `snapshot`.
    pub fn at(snapshot: &Snapshot) -> Self {
        ReadOptions {
            snapshot: Some(snapshot.clone()),
            ..ReadOptions::default()
        }
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
