//! Engine counters and the human-readable stats report.
//!
//! Counters are relaxed atomics bumped on the write, flush and compaction
//! paths; [`DbStats`] is a consistent-enough copy for monitoring (each field
//! is exact, fields are not taken at one instant). Thread-safe.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::version::{NUM_LEVELS, Version};

/// Live counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub user_bytes: AtomicU64,
    pub user_writes: AtomicU64,
    pub wal_bytes: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub flushes: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub compactions: AtomicU64,
    pub subcompactions: AtomicU64,
    pub trivial_moves: AtomicU64,
    pub ttl_tables_dropped: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub stall_slowdowns_l0: AtomicU64,
    pub stall_slowdowns_memtables: AtomicU64,
    pub stall_stops_memtables: AtomicU64,
    pub stall_stops_l0: AtomicU64,
    pub stall_stops_blob_garbage: AtomicU64,
    pub stall_micros: AtomicU64,
    pub blob_values_written: AtomicU64,
    pub blob_bytes_written: AtomicU64,
    pub blob_garbage_found: AtomicU64,
    pub blob_gc_bytes_relocated: AtomicU64,
    pub blob_gc_files_written: AtomicU64,
    pub blob_gc_compactions: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

/// One level of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelStats {
    /// Number of table files.
    pub files: usize,
    /// Bytes of table files.
    pub bytes: u64,
    /// Compaction score (`>= 1` means the level is due).
    pub score: f64,
}

/// The shape of one keyspace other than the default one.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyspaceStats {
    /// Its name.
    pub name: String,
    /// Its id in the files.
    pub id: u32,
    /// Per level L0..L6.
    pub levels: Vec<LevelStats>,
    /// Bytes of its memtables' arenas.
    pub memtable_bytes: u64,
    /// Range tombstones in its version.
    pub range_tombstones: u64,
    /// Its live blob files (`KeyspaceOptions::min_blob_size`).
    pub blob_files: u64,
    /// Their bytes on disk (sealed files).
    pub blob_file_bytes: u64,
    /// Of their value bytes, garbage.
    pub blob_garbage_bytes: u64,
}

/// A copy of the engine's counters.
#[derive(Debug, Clone, PartialEq)]
pub struct DbStats {
    /// Per level L0..L6 (of the default keyspace).
    pub levels: Vec<LevelStats>,
    /// The other keyspaces (`docs/keyspaces.md`); the counters are the
    /// database's, across all keyspaces.
    pub keyspaces: Vec<KeyspaceStats>,
    /// Bytes of keys and values written by users.
    pub user_bytes: u64,
    /// Write batches applied.
    pub user_writes: u64,
    /// Bytes appended to WALs.
    pub wal_bytes: u64,
    /// WAL fdatasyncs.
    pub wal_syncs: u64,
    /// Memtables flushed to L0.
    pub flushes: u64,
    /// Bytes of tables written by flushes.
    pub flush_bytes: u64,
    /// Compactions that rewrote files.
    pub compactions: u64,
    /// Parts compactions ran in (equal to `compactions` without
    /// sub-compactions).
    pub subcompactions: u64,
    /// Compactions that only moved a file down a level.
    pub trivial_moves: u64,
    /// Tables deleted whole because every entry had expired
    /// (`Options::ttl`).
    pub ttl_tables_dropped: u64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: u64,
    /// `(flush + compaction bytes written) / user bytes`.
    pub write_amplification: f64,
    /// Writes delayed because L0 reached the slowdown trigger.
    pub stall_slowdowns_l0: u64,
    /// Writes delayed because the immutable memtables were one short of
    /// `max_immutable_memtables` (the step before a stop).
    pub stall_slowdowns_memtables: u64,
    /// Writes stopped because too many memtables waited for a flush.
    pub stall_stops_memtables: u64,
    /// Writes stopped because L0 reached the stop trigger.
    pub stall_stops_l0: u64,
    /// Memtable switches held back because blob garbage outran its
    /// collection (`Options::blob_garbage_collection_force_threshold` of
    /// all sealed value bytes dead).
    pub stall_stops_blob_garbage: u64,
    /// Microseconds writers spent stalled.
    pub stall_micros: u64,
    /// Block cache hits.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Bytes in the block cache.
    pub block_cache_usage: u64,
    /// Block cache capacity.
    pub block_cache_capacity: u64,
    /// Table files open.
    pub open_tables: u64,
    /// Bytes of index and filter blocks pinned by open tables.
    pub pinned_table_memory: u64,
    /// Bytes of data blocks pinned by open tables that point into blob
    /// files (`Options::pinned_blob_tables_size`).
    pub pinned_blob_table_bytes: u64,
    /// The budget for those.
    pub pinned_blob_table_budget: u64,
    /// Bytes of memtable arenas.
    pub memtable_bytes: u64,
    /// Immutable memtables waiting for a flush.
    pub immutable_memtables: u64,
    /// Range tombstones in the current version (flushed, not yet pruned:
    /// some table may still hold an entry one of them deletes).
    pub range_tombstones: u64,
    /// Range tombstones in the memtables (not yet flushed).
    pub memtable_range_tombstones: u64,
    /// Blob files live in the current version, of every keyspace (the
    /// blob totals below are the database's; `keyspaces` has each other
    /// keyspace's part).
    pub blob_files: u64,
    /// Bytes of live blob files on disk (sealed files' sizes; open files
    /// count what the version knows: nothing until sealed).
    pub blob_file_bytes: u64,
    /// Value bytes in sealed blob files.
    pub blob_value_bytes: u64,
    /// Of those, garbage: values no table points to any more.
    pub blob_garbage_bytes: u64,
    /// Values written to blob files by the write path.
    pub blob_values_written: u64,
    /// Their bytes.
    pub blob_bytes_written: u64,
    /// Garbage bytes found by flushes and compactions.
    pub blob_garbage_found: u64,
    /// Value bytes copied into new blob files by garbage collection.
    pub blob_gc_bytes_relocated: u64,
    /// Blob files written by garbage collection.
    pub blob_gc_files_written: u64,
    /// Compactions run only to collect blob garbage (forced).
    pub blob_gc_compactions: u64,
    /// The budget of shared scan chunks (`Options::shared_scan_bytes`).
    pub shared_scan_budget: u64,
    /// Bytes of chunk buffers the pool holds now.
    pub shared_scan_bytes: u64,
    /// Chunks read from disk into the pool.
    pub shared_scan_loads: u64,
    /// Values served by a chunk already resident (or being loaded).
    pub shared_scan_hits: u64,
    /// Chunk loads turned away for lack of room (values read alone).
    pub shared_scan_no_room: u64,
    /// Loads of chunks the pool had evicted lately (scans that fell
    /// behind the pool's window).
    pub shared_scan_reloads: u64,
    /// Loads of new chunks that waited a moment while such scans loaded.
    pub shared_scan_paced: u64,
    /// Batches of blob values that short scans read together (their
    /// look-ahead, `docs/blob-files.md`, "Short scans").
    pub scan_batches: u64,
    /// Values those batches read.
    pub scan_batch_values: u64,
    /// File reads they issued (values next to each other share one).
    pub scan_batch_reads: u64,
    /// Bytes those reads asked for.
    pub scan_batch_bytes: u64,
    /// The most reads of one batch that were in flight at once (on
    /// io_uring; 1 when they ran one after another).
    pub scan_batch_most_in_flight: u64,
    /// Shared passes started (`ReadOptions::shared_passes`): merges that
    /// iterators walking the same state from its start share.
    pub shared_passes: u64,
    /// Iterators that joined a pass another iterator started.
    pub shared_pass_joins: u64,
    /// Segments the passes merged (each once, whatever their iterators).
    pub shared_pass_segments: u64,
    /// Iterators that fell out of their pass's window and went on alone.
    pub shared_pass_behind: u64,
    /// Waits of a pass's leader for an iterator at the window's tail.
    pub shared_pass_paced: u64,
    /// Segments a pass did not make for lack of room in the memory
    /// budget's read-ahead part (the iterators that wanted them went on
    /// alone).
    pub shared_pass_refused: u64,
    /// Bytes of merged segments the passes hold now (keys, pointers and
    /// inline values; blob values stay in the shared scan chunks).
    pub shared_pass_bytes: u64,
    /// The memory each part of the engine holds, and its part of
    /// `Options::memory_budget`.
    pub memory: MemoryStats,
    /// How long opening this database took, and its parts.
    pub open_times: super::recovery::OpenTimes,
    /// WAL records (write batches) the open replayed.
    pub open_records_replayed: u64,
}

/// Bytes held by each part of the engine that holds memory, and each
/// part's limit: its share of `Options::memory_budget` (`docs/memory.md`),
/// or, without a budget, its own option's size (0 where nothing bounds it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryStats {
    /// `Options::memory_budget` (0: none).
    pub budget: u64,
    /// Memtable arenas in use (the mutable one and those waiting for a
    /// flush); the limit covers them and the WAL's slot buffers.
    pub memtables: u64,
    /// The memtables' limit.
    pub memtables_limit: u64,
    /// Block cache contents and capacity.
    pub block_cache: u64,
    /// The block cache's capacity.
    pub block_cache_limit: u64,
    /// Data blocks pinned by tables of blob pointers.
    pub pinned_blob_tables: u64,
    /// The pinned blob tables' limit.
    pub pinned_blob_tables_limit: u64,
    /// Index, filter and properties blocks of open tables.
    pub table_metadata: u64,
    /// The table metadata's limit (0: bounded by `max_open_files` only).
    pub table_metadata_limit: u64,
    /// Read-ahead chunk buffers reserved by scans and compactions (tracked
    /// with a budget only), the most ever reserved at once, and how often
    /// a scan found no room and read ahead less or not at all.
    pub readahead: u64,
    /// The read-ahead part (0: no budget, not tracked).
    pub readahead_limit: u64,
    /// The most read-ahead bytes reserved at once.
    pub readahead_peak: u64,
    /// Reservations refused (the scan read ahead less, or block by block).
    pub readahead_refused: u64,
    /// Shared scan chunks (`Options::shared_scan_bytes`).
    pub shared_scan: u64,
    /// The shared scan chunks' budget.
    pub shared_scan_limit: u64,
    /// Staging slots of the blob write lanes (page cache the process maps).
    pub blob_staging: u64,
    /// The blob lanes' staging limit: with a budget its blob-staging part,
    /// which the lanes of every keyspace share; else every lane with a
    /// file open.
    pub blob_staging_limit: u64,
    /// Times a lane found no room in the blob-staging part for a new file
    /// (the value was kept inline instead).
    pub blob_staging_refused: u64,
    /// Set aside for threads, fiber stacks, io_uring rings and small
    /// structures (with a budget).
    pub reserve: u64,
}

impl MemoryStats {
    /// The bytes the parts hold now, added up (the reserve not included).
    pub fn used(&self) -> u64 {
        self.memtables
            + self.block_cache
            + self.pinned_blob_tables
            + self.table_metadata
            + self.readahead
            + self.shared_scan
            + self.blob_staging
    }
}

impl DbStats {
    pub(crate) fn levels_of(version: &Version, scores: &[f64]) -> Vec<LevelStats> {
        (0..NUM_LEVELS)
            .map(|l| LevelStats {
                files: version.num_files(l),
                bytes: version.level_bytes(l),
                score: scores.get(l).copied().unwrap_or(0.0),
            })
            .collect()
    }

    /// Fills the blob-file fields that the version knows.
    pub(crate) fn add_blob_files(&mut self, version: &Version) {
        for b in version.blob_files().values() {
            self.blob_files += 1;
            self.blob_file_bytes += b.size;
            self.blob_value_bytes += b.value_bytes;
            self.blob_garbage_bytes += b.garbage_bytes;
        }
    }

    pub(crate) fn from_counters(c: &Counters) -> DbStats {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let user = r(&c.user_bytes);
        let written = r(&c.flush_bytes) + r(&c.compaction_bytes_written);
        DbStats {
            levels: Vec::new(),
            keyspaces: Vec::new(),
            user_bytes: user,
            user_writes: r(&c.user_writes),
            wal_bytes: r(&c.wal_bytes),
            wal_syncs: r(&c.wal_syncs),
            flushes: r(&c.flushes),
            flush_bytes: r(&c.flush_bytes),
            compactions: r(&c.compactions),
            subcompactions: r(&c.subcompactions),
            trivial_moves: r(&c.trivial_moves),
            ttl_tables_dropped: r(&c.ttl_tables_dropped),
            compaction_bytes_read: r(&c.compaction_bytes_read),
            compaction_bytes_written: r(&c.compaction_bytes_written),
            write_amplification: if user == 0 {
                0.0
            } else {
                written as f64 / user as f64
            },
            stall_slowdowns_l0: r(&c.stall_slowdowns_l0),
            stall_slowdowns_memtables: r(&c.stall_slowdowns_memtables),
            stall_stops_memtables: r(&c.stall_stops_memtables),
            stall_stops_l0: r(&c.stall_stops_l0),
            stall_stops_blob_garbage: r(&c.stall_stops_blob_garbage),
            stall_micros: r(&c.stall_micros),
            block_cache_hits: 0,
            block_cache_misses: 0,
            block_cache_usage: 0,
            block_cache_capacity: 0,
            open_tables: 0,
            pinned_table_memory: 0,
            pinned_blob_table_bytes: 0,
            pinned_blob_table_budget: 0,
            memtable_bytes: 0,
            immutable_memtables: 0,
            range_tombstones: 0,
            memtable_range_tombstones: 0,
            blob_files: 0,
            blob_file_bytes: 0,
            blob_value_bytes: 0,
            blob_garbage_bytes: 0,
            blob_values_written: r(&c.blob_values_written),
            blob_bytes_written: r(&c.blob_bytes_written),
            blob_garbage_found: r(&c.blob_garbage_found),
            blob_gc_bytes_relocated: r(&c.blob_gc_bytes_relocated),
            blob_gc_files_written: r(&c.blob_gc_files_written),
            blob_gc_compactions: r(&c.blob_gc_compactions),
            shared_scan_budget: 0,
            shared_scan_bytes: 0,
            shared_scan_loads: 0,
            shared_scan_hits: 0,
            shared_scan_no_room: 0,
            shared_scan_reloads: 0,
            shared_scan_paced: 0,
            scan_batches: 0,
            scan_batch_values: 0,
            scan_batch_reads: 0,
            scan_batch_bytes: 0,
            scan_batch_most_in_flight: 0,
            shared_passes: 0,
            shared_pass_joins: 0,
            shared_pass_segments: 0,
            shared_pass_behind: 0,
            shared_pass_paced: 0,
            shared_pass_refused: 0,
            shared_pass_bytes: 0,
            memory: MemoryStats::default(),
            open_times: super::recovery::OpenTimes::default(),
            open_records_replayed: 0,
        }
    }

    /// A report in the spirit of RocksDB's `rocksdb.stats` (also what
    /// `Display` prints).
    pub fn report(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "** varve stats **");
        let _ = writeln!(s, "Level  Files   Size(MiB)  Score");
        for (l, lv) in self.levels.iter().enumerate() {
            let _ = writeln!(
                s,
                "L{l:<5} {:>5} {:>11.1} {:>6.2}",
                lv.files,
                lv.bytes as f64 / 1048576.0,
                lv.score
            );
        }
        let mib = |b: u64| b as f64 / 1048576.0;
        for k in &self.keyspaces {
            let files: usize = k.levels.iter().map(|l| l.files).sum();
            let bytes: u64 = k.levels.iter().map(|l| l.bytes).sum();
            let per: Vec<String> = k.levels.iter().map(|l| l.files.to_string()).collect();
            let _ = writeln!(
                s,
                "Keyspace {:?} (id {}): {files} tables ({}), {:.1} MiB, memtables {:.1} MiB, \
                 {} blob files {:.1} MiB ({:.1} MiB garbage)",
                k.name,
                k.id,
                per.join("/"),
                mib(bytes),
                mib(k.memtable_bytes),
                k.blob_files,
                mib(k.blob_file_bytes),
                mib(k.blob_garbage_bytes)
            );
        }
        let _ = writeln!(
            s,
            "User writes: {} batches, {:.1} MiB; WAL: {:.1} MiB, {} syncs",
            self.user_writes,
            mib(self.user_bytes),
            mib(self.wal_bytes),
            self.wal_syncs
        );
        let _ = writeln!(
            s,
            "Flush: {} memtables, {:.1} MiB; Compaction: {} jobs ({} parts) + {} moves, read {:.1} MiB, wrote {:.1} MiB",
            self.flushes,
            mib(self.flush_bytes),
            self.compactions,
            self.subcompactions,
            self.trivial_moves,
            mib(self.compaction_bytes_read),
            mib(self.compaction_bytes_written)
        );
        let _ = writeln!(s, "Write amplification: {:.2}", self.write_amplification);
        if self.shared_scan_budget > 0 {
            let _ = writeln!(
                s,
                "Shared scan chunks: {:.1}/{:.1} MiB, {} loads ({} again, {} paced), {} hits, {} turned away",
                mib(self.shared_scan_bytes),
                mib(self.shared_scan_budget),
                self.shared_scan_loads,
                self.shared_scan_reloads,
                self.shared_scan_paced,
                self.shared_scan_hits,
                self.shared_scan_no_room
            );
        }
        if self.scan_batches > 0 {
            let _ = writeln!(
                s,
                "Short-scan batches: {} batches, {} values, {} reads, {:.1} MiB, at most {} in flight",
                self.scan_batches,
                self.scan_batch_values,
                self.scan_batch_reads,
                mib(self.scan_batch_bytes),
                self.scan_batch_most_in_flight
            );
        }
        if self.shared_passes > 0 {
            let _ = writeln!(
                s,
                "Shared passes: {} passes, {} joins, {} segments merged, {} iterators fell behind, {} paced, {} refused, {:.1} MiB resident",
                self.shared_passes,
                self.shared_pass_joins,
                self.shared_pass_segments,
                self.shared_pass_behind,
                self.shared_pass_paced,
                self.shared_pass_refused,
                mib(self.shared_pass_bytes)
            );
        }
        let m = &self.memory;
        let _ = writeln!(
            s,
            "Memory: {:.1} MiB used{}: memtables {:.1}/{:.1}, block cache {:.1}/{:.1}, pinned blob tables {:.1}/{:.1}, table metadata {:.1}/{:.1}, read-ahead {:.1}/{:.1} (peak {:.1}, {} refused), shared scans {:.1}/{:.1}, blob staging {:.1}/{:.1} ({} refused), reserve {:.1}",
            mib(m.used()),
            if m.budget > 0 {
                format!(" of a {:.1} MiB budget", mib(m.budget))
            } else {
                String::new()
            },
            mib(m.memtables),
            mib(m.memtables_limit),
            mib(m.block_cache),
            mib(m.block_cache_limit),
            mib(m.pinned_blob_tables),
            mib(m.pinned_blob_tables_limit),
            mib(m.table_metadata),
            mib(m.table_metadata_limit),
            mib(m.readahead),
            mib(m.readahead_limit),
            mib(m.readahead_peak),
            m.readahead_refused,
            mib(m.shared_scan),
            mib(m.shared_scan_limit),
            mib(m.blob_staging),
            mib(m.blob_staging_limit),
            m.blob_staging_refused,
            mib(m.reserve)
        );
        let _ = writeln!(
            s,
            "Open: {}, {} WAL records replayed",
            self.open_times, self.open_records_replayed
        );
        let _ = writeln!(
            s,
            "Stalls: {} slowdowns (L0), {} slowdowns (memtables), {} stops (memtables), {} stops (L0), {} stops (blob garbage), {:.3} s stalled",
            self.stall_slowdowns_l0,
            self.stall_slowdowns_memtables,
            self.stall_stops_memtables,
            self.stall_stops_l0,
            self.stall_stops_blob_garbage,
            self.stall_micros as f64 / 1e6
        );
        let lookups = self.block_cache_hits + self.block_cache_misses;
        let _ = writeln!(
            s,
            "Block cache: {:.1}/{:.1} MiB, {} hits, {} misses ({:.1}% hit)",
            mib(self.block_cache_usage),
            mib(self.block_cache_capacity),
            self.block_cache_hits,
            self.block_cache_misses,
            if lookups == 0 {
                0.0
            } else {
                100.0 * self.block_cache_hits as f64 / lookups as f64
            }
        );
        let _ = writeln!(
            s,
            "Tables open: {} ({:.1} MiB index+filter pinned); memtables: {:.1} MiB, {} immutable",
            self.open_tables,
            mib(self.pinned_table_memory),
            mib(self.memtable_bytes),
            self.immutable_memtables
        );
        if self.ttl_tables_dropped > 0 {
            let _ = writeln!(
                s,
                "TTL: {} tables deleted whole (every entry expired)",
                self.ttl_tables_dropped
            );
        }
        if self.range_tombstones > 0 || self.memtable_range_tombstones > 0 {
            let _ = writeln!(
                s,
                "Range tombstones: {} in the version, {} in memtables",
                self.range_tombstones, self.memtable_range_tombstones
            );
        }
        if self.blob_files > 0 || self.blob_values_written > 0 {
            let _ = writeln!(
                s,
                "Blob files: {} ({:.1} MiB sealed), values {:.1} MiB, garbage {:.1} MiB ({:.1}%)",
                self.blob_files,
                mib(self.blob_file_bytes),
                mib(self.blob_value_bytes),
                mib(self.blob_garbage_bytes),
                if self.blob_value_bytes == 0 {
                    0.0
                } else {
                    100.0 * self.blob_garbage_bytes as f64 / self.blob_value_bytes as f64
                }
            );
            let _ = writeln!(
                s,
                "Blob pointer tables pinned: {:.1} of {:.1} MiB",
                mib(self.pinned_blob_table_bytes),
                mib(self.pinned_blob_table_budget)
            );
            let _ = writeln!(
                s,
                "Blob writes: {} values, {:.1} MiB; GC: {:.1} MiB garbage found, {:.1} MiB relocated into {} files, {} forced compactions",
                self.blob_values_written,
                mib(self.blob_bytes_written),
                mib(self.blob_garbage_found),
                mib(self.blob_gc_bytes_relocated),
                self.blob_gc_files_written,
                self.blob_gc_compactions
            );
        }
        s
    }
}

impl std::fmt::Display for DbStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.report())
    }
}
