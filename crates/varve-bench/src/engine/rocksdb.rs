//! The `rocksdb` engine (cargo feature `rocksdb`): RocksDB built from the
//! `rocksdb` crate's bundled source with its `io-uring` and `jemalloc`
//! features, configured as db_bench configures it.
//!
//! Every flag db_bench has for an option maps to that option: block-based
//! tables with an LRU block cache of `--cache_size`, a bloom filter of
//! `--bloom_bits` bits per key when non-negative (db_bench's -1 means none),
//! `--use_direct_reads`, `--use_direct_io_for_flush_and_compaction`,
//! `--compression_type` (none by default), `--write_buffer_size`,
//! `--readahead_size` (iterators' `ReadOptions::readahead_size`), and the
//! tuning flags of [`crate::tuning::LsmFlags`] one to one (background jobs,
//! memtables, bytes_per_sync, pipelined and concurrent memtable writes, L0
//! triggers, level sizes, compaction read-ahead, block size, index and
//! filter blocks in the cache, blob cache, rate limiter). Not given: db_bench's
//! default, which differs from RocksDB's own for `enable_pipelined_write`
//! (true) and `level_compaction_dynamic_level_bytes` (false), both set
//! explicitly. `--tuned` applies [`crate::tuning::rocksdb_tuned`] plus direct
//! IO for flush and compaction, a 10-bit bloom filter when none is given, a
//! blob cache as large as the block cache, and `async_io` reads (io_uring).
//! Writes honour sync/disable_wal; reads honour `--async_io`.
//! `--enable_blob_files` turns on the integrated BlobDB: `min_blob_size`,
//! `blob_file_size`, `enable_blob_garbage_collection` (false unless given, as
//! in db_bench), `blob_garbage_collection_age_cutoff` (0.25) and
//! `blob_garbage_collection_force_threshold` (1.0); blob values stay
//! uncompressed (RocksDB's default). RocksDB has no garbage-share threshold,
//! so `--blob_garbage_collection_ratio` is an error. The report lists the
//! options set here and every line of the `OPTIONS-*` file RocksDB wrote.
//! `DB` is `Send + Sync`; the crate's `ReadOptions` and `WriteOptions` are
//! not `Sync`, so each thread keeps its own (like db_bench's per-benchmark
//! options) instead of allocating one per call.

use std::cell::RefCell;
use std::path::Path;

use anyhow::{Context, Result};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DB, DBCompressionType, DBRawIterator,
    Options, ReadOptions, WaitForCompactOptions, WriteBatch, WriteOptions,
};

use super::{Cursor, Engine, Opened, WriteOpts};
use crate::flags::Flags;
use crate::tuning::{self, LsmFlags};

/// RocksDB behind the benchmark trait.
pub struct Rocks {
    db: DB,
    /// Column families with `--keyspaces=N`: "default", then `ks1` ..
    /// `ks<N-1>` (1: the default one only).
    families: usize,
    async_io: bool,
    /// `ReadOptions::readahead_size` of iterators (`--readahead_size`).
    readahead: Option<usize>,
    batched: bool,
    path: String,
}

/// Opens (creating if missing) a RocksDB database at `path`.
pub fn open(flags: &Flags, path: &Path) -> Result<Opened> {
    super::reject_varve_only_flags(flags, "RocksDB")?;
    let lsm = if flags.lsm.tuned {
        tuning::rocksdb_tuned(&flags.lsm)
    } else {
        flags.lsm.clone()
    };
    let mut set = OptionLog::default();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_write_buffer_size(set.log("write_buffer_size", flags.write_buffer_size));
    opts.set_use_direct_reads(set.log("use_direct_reads", flags.use_direct_reads));
    // The tuning guide's advice for SSDs; a given flag wins (clap cannot
    // tell a given false from the default, so --tuned turns it on).
    let direct_bg = flags.use_direct_io_for_flush_and_compaction || lsm.tuned;
    opts.set_use_direct_io_for_flush_and_compaction(
        set.log("use_direct_io_for_flush_and_compaction", direct_bg),
    );
    opts.set_max_subcompactions(set.log(
        "max_subcompactions",
        u32::try_from(flags.subcompactions.max(1)).unwrap_or(u32::MAX),
    ));
    if let Some(n) = flags.level0_file_num_compaction_trigger {
        opts.set_level_zero_file_num_compaction_trigger(
            set.log("level0_file_num_compaction_trigger", i32::try_from(n)?),
        );
    }
    opts.set_compression_type(
        match set.log("compression", flags.compression_type.as_str()) {
            "lz4" => DBCompressionType::Lz4,
            _ => DBCompressionType::None,
        },
    );
    apply_lsm_flags(&lsm, &mut opts, &mut set)?;

    let mut table = BlockBasedOptions::default();
    let cache = Cache::new_lru_cache(set.log("block_cache_size", flags.cache_size as usize));
    table.set_block_cache(&cache);
    let bloom_bits = if flags.bloom_bits < 0 && lsm.tuned {
        10
    } else {
        flags.bloom_bits
    };
    if bloom_bits >= 0 {
        table.set_bloom_filter(f64::from(set.log("bloom_bits", bloom_bits)), false);
    }
    if let Some(n) = lsm.block_size {
        table.set_block_size(set.log("block_size", n));
    }
    if let Some(v) = lsm.cache_index_and_filter_blocks {
        table.set_cache_index_and_filter_blocks(set.log("cache_index_and_filter_blocks", v));
    }
    if let Some(v) = lsm.pin_l0_filter_and_index_blocks_in_cache {
        table.set_pin_l0_filter_and_index_blocks_in_cache(
            set.log("pin_l0_filter_and_index_blocks_in_cache", v),
        );
    }
    opts.set_block_based_table_factory(&table);
    if flags.enable_blob_files {
        if let Some(r) = flags.blob_garbage_collection_ratio {
            anyhow::bail!(
                "--blob_garbage_collection_ratio={r}: RocksDB picks blob files for garbage \
                 collection by age (--blob_garbage_collection_age_cutoff), not by garbage share"
            );
        }
        opts.set_enable_blob_files(set.log("enable_blob_files", true));
        opts.set_min_blob_size(set.log("min_blob_size", u64::try_from(flags.min_blob_size)?));
        opts.set_blob_file_size(set.log("blob_file_size", flags.blob_file_size));
        opts.set_blob_compression_type(DBCompressionType::None);
        opts.set_enable_blob_gc(set.log("enable_blob_garbage_collection", flags.blob_gc()));
        opts.set_blob_gc_age_cutoff(set.log(
            "blob_garbage_collection_age_cutoff",
            flags.blob_gc_age_cutoff(),
        ));
        opts.set_blob_gc_force_threshold(set.log(
            "blob_garbage_collection_force_threshold",
            flags.blob_gc_force_threshold(),
        ));
        // The BlobDB page: a blob cache of its own (db_bench's
        // --use_blob_cache); --tuned turns it on, sized as the block cache.
        let use_blob_cache = lsm.use_blob_cache.unwrap_or(lsm.tuned);
        if set.log("use_blob_cache", use_blob_cache) {
            let n = lsm.blob_cache_size.unwrap_or(if lsm.tuned {
                flags.cache_size
            } else {
                DB_BENCH_BLOB_CACHE_SIZE
            });
            opts.set_blob_cache(&Cache::new_lru_cache(
                set.log("blob_cache_size", n as usize),
            ));
        }
    } else if lsm.use_blob_cache.is_some() || lsm.blob_cache_size.is_some() {
        anyhow::bail!("--use_blob_cache / --blob_cache_size need --enable_blob_files");
    }
    // Opened with the default column family described by the same options
    // (so `cf_handle("default")` serves the batched MultiGet API). A bare
    // `open_cf` would give that family default options: LZ4, no table config.
    // With --keyspaces=N, N column families described by the same options.
    let families = flags.keyspaces.max(1) as usize;
    opts.create_missing_column_families(true);
    let cfs = (0..families).map(|i| {
        let name = if i == 0 {
            rocksdb::DEFAULT_COLUMN_FAMILY_NAME.to_string()
        } else {
            format!("ks{i}")
        };
        ColumnFamilyDescriptor::new(name, opts.clone())
    });
    let db = DB::open_cf_descriptors(&opts, path, cfs)
        .with_context(|| format!("opening RocksDB database at {}", path.display()))?;
    // io_uring reads (the crate's `io-uring` feature): MultiGet and
    // iterators' prefetch read in parallel with ReadOptions::async_io;
    // --tuned turns it on, as RocksDB's async IO blog post advises.
    let async_io = set.log("read.async_io", flags.async_io || lsm.tuned);
    let readahead = flags
        .readahead_size
        .map(|n| set.log("read.readahead_size", n));
    let mut ignored = Vec::new();
    if flags.async_io && flags.async_queue_depth != 64 {
        ignored.push(format!(
            "async_queue_depth={}: RocksDB sizes its async reads itself (no such option)",
            flags.async_queue_depth
        ));
    }
    let mut options = set.lines;
    // Every option RocksDB ran with, as it wrote them itself.
    let file = latest_options_file(path)
        .with_context(|| format!("RocksDB wrote no OPTIONS file in {}", path.display()))?;
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    options.extend(options_file_lines(&text).map(|l| format!("{}{l}", super::FROM_FILE)));
    Ok(Opened {
        engine: Box::new(Rocks {
            db,
            families,
            async_io,
            readahead,
            batched: flags.multiread_batched,
            path: path.display().to_string(),
        }),
        ignored,
        options,
    })
}

/// db_bench's `--blob_cache_size` default (8 MiB).
const DB_BENCH_BLOB_CACHE_SIZE: u64 = 8 << 20;

/// The options set explicitly, as `name=value` lines for the report.
#[derive(Default)]
struct OptionLog {
    lines: Vec<String>,
}

impl OptionLog {
    /// Records `name=v` and hands `v` back.
    fn log<T: std::fmt::Debug>(&mut self, name: &str, v: T) -> T {
        self.lines.push(format!("{name}={v:?}"));
        v
    }
}

/// Maps the LSM tuning flags (each one given, or set by `--tuned`); db_bench's
/// defaults for the rest.
fn apply_lsm_flags(lsm: &LsmFlags, opts: &mut Options, set: &mut OptionLog) -> Result<()> {
    // db_bench sets these two differently from RocksDB's own defaults.
    opts.set_enable_pipelined_write(set.log(
        "enable_pipelined_write",
        lsm.enable_pipelined_write.unwrap_or(true),
    ));
    opts.set_level_compaction_dynamic_level_bytes(set.log(
        "level_compaction_dynamic_level_bytes",
        lsm.level_compaction_dynamic_level_bytes.unwrap_or(false),
    ));
    if let Some(n) = lsm.max_background_jobs {
        opts.set_max_background_jobs(set.log("max_background_jobs", n));
    }
    if let Some(n) = lsm.max_write_buffer_number {
        opts.set_max_write_buffer_number(set.log("max_write_buffer_number", n));
    }
    if let Some(n) = lsm.min_write_buffer_number_to_merge {
        opts.set_min_write_buffer_number_to_merge(set.log("min_write_buffer_number_to_merge", n));
    }
    if let Some(n) = lsm.bytes_per_sync {
        opts.set_bytes_per_sync(set.log("bytes_per_sync", n));
    }
    if let Some(n) = lsm.wal_bytes_per_sync {
        opts.set_wal_bytes_per_sync(set.log("wal_bytes_per_sync", n));
    }
    if let Some(v) = lsm.allow_concurrent_memtable_write {
        opts.set_allow_concurrent_memtable_write(set.log("allow_concurrent_memtable_write", v));
    }
    if let Some(v) = lsm.unordered_write {
        opts.set_unordered_write(set.log("unordered_write", v));
    }
    if let Some(n) = lsm.level0_slowdown_writes_trigger {
        opts.set_level_zero_slowdown_writes_trigger(set.log("level0_slowdown_writes_trigger", n));
    }
    if let Some(n) = lsm.level0_stop_writes_trigger {
        opts.set_level_zero_stop_writes_trigger(set.log("level0_stop_writes_trigger", n));
    }
    if let Some(n) = lsm.max_bytes_for_level_base {
        opts.set_max_bytes_for_level_base(set.log("max_bytes_for_level_base", n));
    }
    if let Some(x) = lsm.max_bytes_for_level_multiplier {
        opts.set_max_bytes_for_level_multiplier(set.log("max_bytes_for_level_multiplier", x));
    }
    if let Some(n) = lsm.target_file_size_base {
        opts.set_target_file_size_base(set.log("target_file_size_base", n));
    }
    if let Some(n) = lsm.compaction_readahead_size {
        opts.set_compaction_readahead_size(
            set.log("compaction_readahead_size", usize::try_from(n)?),
        );
    }
    if let Some(n) = lsm.rate_limiter_bytes_per_sec.filter(|&n| n > 0) {
        // db_bench's refill period (100 ms) and fairness (10).
        opts.set_ratelimiter(
            set.log("rate_limiter_bytes_per_sec", i64::try_from(n)?),
            100_000,
            10,
        );
    }
    if let Some(v) = lsm.optimize_filters_for_hits {
        opts.set_optimize_filters_for_hits(set.log("optimize_filters_for_hits", v));
    }
    Ok(())
}

/// The `[Section] name=value` lines of a RocksDB OPTIONS file (comments
/// and blank lines left out).
pub fn options_file_lines(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut section = String::new();
    text.lines().filter_map(move |l| {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            None
        } else if l.starts_with('[') {
            section = l.to_string();
            None
        } else {
            Some(format!("{section} {l}"))
        }
    })
}

/// The newest `OPTIONS-*` file RocksDB wrote in `dir`.
pub fn latest_options_file(dir: &Path) -> Option<std::path::PathBuf> {
    let mut best: Option<(u64, std::path::PathBuf)> = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let name = e.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_prefix("OPTIONS-"))
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue;
        };
        if best.as_ref().is_none_or(|(b, _)| n > *b) {
            best = Some((n, e.path()));
        }
    }
    best.map(|(_, p)| p)
}

thread_local! {
    /// This thread's read options, tagged with the async_io they were built for.
    static READ_OPTS: RefCell<Option<(bool, ReadOptions)>> = const { RefCell::new(None) };
    /// This thread's write options, tagged with their (sync, disable_wal).
    static WRITE_OPTS: RefCell<Option<((bool, bool), WriteOptions)>> = const { RefCell::new(None) };
}

impl Rocks {
    /// Column family `i` (`--keyspaces`).
    fn family(&self, i: usize) -> Result<&rocksdb::ColumnFamily> {
        let name = if i == 0 {
            rocksdb::DEFAULT_COLUMN_FAMILY_NAME.to_string()
        } else {
            format!("ks{i}")
        };
        self.db
            .cf_handle(&name)
            .with_context(|| format!("column family {name}"))
    }

    /// The column family `key` goes to.
    fn family_of(&self, key: &[u8]) -> Result<&rocksdb::ColumnFamily> {
        self.family(super::keyspace_of(key, self.families))
    }

    fn read_options(&self) -> ReadOptions {
        let mut ro = ReadOptions::default();
        if self.async_io {
            ro.set_async_io(true);
        }
        if let Some(n) = self.readahead {
            ro.set_readahead_size(n);
        }
        ro
    }

    fn with_read_options<R>(&self, f: impl FnOnce(&ReadOptions) -> R) -> R {
        READ_OPTS.with(|c| {
            let mut c = c.borrow_mut();
            if !matches!(&*c, Some((a, _)) if *a == self.async_io) {
                *c = Some((self.async_io, self.read_options()));
            }
            f(&c.as_ref().expect("just set").1)
        })
    }
}

fn with_write_options<R>(opts: WriteOpts, f: impl FnOnce(&WriteOptions) -> R) -> R {
    let tag = (opts.sync, opts.disable_wal);
    WRITE_OPTS.with(|c| {
        let mut c = c.borrow_mut();
        if !matches!(&*c, Some((t, _)) if *t == tag) {
            let mut wo = WriteOptions::default();
            wo.set_sync(opts.sync);
            wo.disable_wal(opts.disable_wal);
            *c = Some((tag, wo));
        }
        f(&c.as_ref().expect("just set").1)
    })
}

impl Engine for Rocks {
    fn write(&self, batch: &[(&[u8], &[u8])], opts: WriteOpts) -> Result<()> {
        if self.families > 1 {
            let mut b = WriteBatch::default();
            for (k, v) in batch {
                b.put_cf(self.family_of(k)?, k, v);
            }
            with_write_options(opts, |wo| self.db.write_opt(b, wo))?;
            return Ok(());
        }
        with_write_options(opts, |wo| {
            if let [(k, v)] = batch {
                self.db.put_opt(k, v, wo)
            } else {
                let mut b = WriteBatch::default();
                for (k, v) in batch {
                    b.put(k, v);
                }
                self.db.write_opt(b, wo)
            }
        })?;
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        let v = if self.families > 1 {
            let cf = self.family_of(key)?;
            self.with_read_options(|ro| self.db.get_pinned_cf_opt(cf, key, ro))?
        } else {
            self.with_read_options(|ro| self.db.get_pinned_opt(key, ro))?
        };
        Ok(v.map(|v| v.len()))
    }

    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let v = if self.families > 1 {
            let cf = self.family_of(key)?;
            self.with_read_options(|ro| self.db.get_pinned_cf_opt(cf, key, ro))?
        } else {
            self.with_read_options(|ro| self.db.get_pinned_opt(key, ro))?
        };
        Ok(v.map(|v| f(&v)).is_some())
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        if self.families > 1 {
            // MultiGet across column families: each key with its family.
            let with_cf: Vec<_> = keys
                .iter()
                .map(|k| Ok((self.family_of(k)?, *k)))
                .collect::<Result<_>>()?;
            return self.with_read_options(|ro| {
                self.db
                    .multi_get_cf_opt(with_cf, ro)
                    .into_iter()
                    .map(|r| Ok(r?.map(|v| v.len())))
                    .collect()
            });
        }
        self.with_read_options(|ro| {
            if self.batched {
                let cf = self
                    .db
                    .cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
                    .context("default column family")?;
                self.db
                    .batched_multi_get_cf_opt(cf, keys.iter().copied(), false, ro)
                    .into_iter()
                    .map(|r| Ok(r?.map(|v| v.len())))
                    .collect()
            } else {
                self.db
                    .multi_get_opt(keys.iter(), ro)
                    .into_iter()
                    .map(|r| Ok(r?.map(|v| v.len())))
                    .collect()
            }
        })
    }

    fn native_multi_get(&self) -> bool {
        true
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>> {
        if self.families > 1 {
            let parts = (0..self.families)
                .map(|i| {
                    let cf = self.family(i)?;
                    Ok(Box::new(RocksCursor {
                        it: self.db.raw_iterator_cf_opt(cf, self.read_options()),
                    }) as Box<dyn Cursor>)
                })
                .collect::<Result<_>>()?;
            return Ok(Box::new(super::ChainCursor::new(parts)));
        }
        Ok(Box::new(RocksCursor {
            it: self.db.raw_iterator_opt(self.read_options()),
        }))
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut b = WriteBatch::default();
        for i in 0..self.families {
            b.delete_range_cf(self.family(i)?, start, end);
        }
        self.db.write(b)?;
        Ok(())
    }

    fn flush(&self) -> Result<Option<String>> {
        for i in 0..self.families {
            self.db.flush_cf(self.family(i)?)?;
        }
        Ok(None)
    }

    fn compact(&self) -> Result<Option<String>> {
        for i in 0..self.families {
            self.db
                .compact_range_cf(self.family(i)?, None::<&[u8]>, None::<&[u8]>);
        }
        Ok(None)
    }

    fn wait_for_compaction(&self) -> Result<Option<String>> {
        self.db
            .wait_for_compact(&WaitForCompactOptions::default())?;
        Ok(None)
    }

    fn stats(&self) -> String {
        self.db
            .property_value("rocksdb.stats")
            .ok()
            .flatten()
            .unwrap_or_else(|| "rocksdb.stats unavailable\n".into())
    }

    fn close(self: Box<Self>) -> Result<()> {
        let path = self.path.clone();
        self.db
            .flush_wal(true)
            .with_context(|| format!("closing RocksDB database at {path}"))?;
        drop(self);
        Ok(())
    }

    fn version(&self) -> String {
        "RocksDB (rocksdb crate 0.25, librocksdb-sys 0.19.0+11.8.1, bundled)".into()
    }
}

struct RocksCursor<'a> {
    it: DBRawIterator<'a>,
}

impl RocksCursor<'_> {
    fn check(&self) -> Result<()> {
        if !self.it.valid() {
            self.it.status()?;
        }
        Ok(())
    }
}

impl Cursor for RocksCursor<'_> {
    fn seek_to_first(&mut self) -> Result<()> {
        self.it.seek_to_first();
        self.check()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.it.seek_to_last();
        self.check()
    }
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.it.seek(key);
        self.check()
    }
    fn valid(&self) -> bool {
        self.it.valid()
    }
    fn key(&self) -> &[u8] {
        self.it.key().unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.it.value().unwrap_or(&[])
    }
    fn next(&mut self) -> Result<()> {
        self.it.next();
        self.check()
    }
    fn prev(&mut self) -> Result<()> {
        self.it.prev();
        self.check()
    }
}
