//! Per-call options: [`WriteOptions`] for a write, [`ReadOptions`] for a
//! point read, a `multi_get`, an iterator or a parallel scan.
//!
//! Plain data; cloned freely. Each IO mechanism has its own switch: a
//! `multi_get`'s concurrency is [`ReadOptions::async_io`] (with
//! [`ReadOptions::async_queue_depth`]); an iterator's background prefetch
//! is [`ReadOptions::scan_prefetch`]; a seek's concurrent positioning is
//! [`ReadOptions::concurrent_seeks`].

use crate::snapshot::Snapshot;

/// Options for one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// fdatasync the WAL before returning, so the write survives power loss.
    /// Without it the write has reached the OS on return and survives a
    /// process crash (`kill -9`) but not a machine crash. Default `false`.
    pub sync: bool,
    /// Skip the WAL: the write lives only in the memtable until it is flushed
    /// and is lost on any crash. Default `false`. Together with `sync` it is
    /// refused (`InvalidArgument`): there would be nothing to sync.
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

/// When an iterator's next read-ahead chunks are read in the background by
/// the reader pool ([`Options::reader_pool`](crate::Options::reader_pool))
/// while it consumes the current one. Prefetch starts only once an
/// iterator has proven sequential: its chunks have grown to
/// [`ReadOptions::readahead_size`] (at least 256 KiB), so after about twice
/// that many bytes read in order; point reads and short scans never start
/// it. See `docs/readahead.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanPrefetch {
    /// Iterators prefetch once sequential; the chunk iterators of
    /// `par_scan` / `par_count` do not (they already run one reader per
    /// thread). The default.
    #[default]
    Adaptive,
    /// Iterators and the chunk iterators of parallel scans prefetch once
    /// sequential (what RocksDB's `async_io` does for scans).
    Always,
    /// Never: every read-ahead chunk is read by the iterator's own thread.
    Off,
}

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
    /// `multi_get` only: look the memtable misses up in the tables
    /// concurrently, on fibers whose file reads go through io_uring (one
    /// after another where io_uring is unavailable or
    /// [`IoEngine::Sync`](crate::IoEngine::Sync)), like RocksDB's
    /// `ReadOptions::async_io` for `MultiGet`. Default `false`.
    pub async_io: bool,
    /// `multi_get` with `async_io`: most lookups (and so file reads) in
    /// flight at once. Default [`DEFAULT_ASYNC_QUEUE_DEPTH`] (32); 0 counts
    /// as 1.
    pub async_queue_depth: usize,
    /// Background prefetch of iterators (see [`ScanPrefetch`]). Default
    /// [`ScanPrefetch::Adaptive`].
    pub scan_prefetch: ScanPrefetch,
    /// Iterators position their sources (memtables, L0 files, levels) for a
    /// seek concurrently: each source's seek runs on a fiber of the calling
    /// thread, so the block reads of several levels are in flight together
    /// through io_uring. Without io_uring (or with
    /// [`IoEngine::Sync`](crate::IoEngine::Sync)) the sources are
    /// positioned one after another, with identical results. Adaptive:
    /// after a positioning that found everything cached (under 20 µs), the
    /// next 16 seeks position in order. A thread that positions an iterator
    /// this way gets its own io_uring (created on first use, like
    /// `multi_get`'s). Default `true`. See `docs/readahead.md`.
    pub concurrent_seeks: bool,
    /// Iterators without bounds that start at the first key and walk
    /// forward share one merge with the other iterators doing the same over
    /// the same state at the same time: the first one to reach an entry
    /// merges it (and reads its blob value), the others read what it left
    /// (`docs/shared-passes.md`). An iterator that starts while no other
    /// walks the state walks alone, at no cost. An iterator that seeks, moves backward or
    /// falls too far behind goes on alone, with the same results. Default
    /// `true`; `false` gives every iterator its own merge.
    pub shared_passes: bool,
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
            async_queue_depth: DEFAULT_ASYNC_QUEUE_DEPTH,
            scan_prefetch: ScanPrefetch::Adaptive,
            concurrent_seeks: true,
            shared_passes: true,
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
