//! The `rocksdb` engine (cargo feature `rocksdb`): RocksDB built from the
//! `rocksdb` crate's bundled source, configured as db_bench configures it.
//!
//! Block-based tables with an LRU block cache of `--cache_size`, a bloom
//! filter of `--bloom_bits` bits per key when non-negative (db_bench's -1 means
//! none), `--use_direct_reads`, `--use_direct_io_for_flush_and_compaction`,
//! `--compression_type` (none by default), `--write_buffer_size`; writes honour
//! sync/disable_wal; reads honour `--async_io`. `--enable_blob_files` turns on
//! the integrated BlobDB with db_bench's flags mapped one to one:
//! `min_blob_size`, `blob_file_size`, `enable_blob_garbage_collection` (true
//! unless given), `blob_garbage_collection_age_cutoff` (0.25) and
//! `blob_garbage_collection_force_threshold` (1.0); blob values stay
//! uncompressed (RocksDB's default). RocksDB has no garbage-share threshold,
//! so `--blob_garbage_collection_ratio` is an error. Everything else is RocksDB's
//! default, as in db_bench. `DB` is `Send + Sync`; the crate's `ReadOptions`
//! and `WriteOptions` are not `Sync`, so each thread keeps its own (like
//! db_bench's per-benchmark options) instead of allocating one per call.

use std::cell::RefCell;
use std::path::Path;

use anyhow::{Context, Result};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DB, DBCompressionType, DBRawIterator,
    Options, ReadOptions, WaitForCompactOptions, WriteBatch, WriteOptions,
};

use super::{Cursor, Engine, Opened, WriteOpts};
use crate::flags::Flags;

/// RocksDB behind the benchmark trait.
pub struct Rocks {
    db: DB,
    /// Column families with `--keyspaces=N`: "default", then `ks1` ..
    /// `ks<N-1>` (1: the default one only).
    families: usize,
    async_io: bool,
    batched: bool,
    path: String,
}

/// Opens (creating if missing) a RocksDB database at `path`.
pub fn open(flags: &Flags, path: &Path) -> Result<Opened> {
    super::reject_varve_only_flags(flags, "RocksDB")?;
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_write_buffer_size(flags.write_buffer_size);
    opts.set_use_direct_reads(flags.use_direct_reads);
    opts.set_use_direct_io_for_flush_and_compaction(flags.use_direct_io_for_flush_and_compaction);
    opts.set_max_subcompactions(u32::try_from(flags.subcompactions.max(1)).unwrap_or(u32::MAX));
    if let Some(n) = flags.level0_file_num_compaction_trigger {
        opts.set_level_zero_file_num_compaction_trigger(i32::try_from(n).unwrap_or(i32::MAX));
    }
    opts.set_compression_type(match flags.compression_type.as_str() {
        "lz4" => DBCompressionType::Lz4,
        _ => DBCompressionType::None,
    });
    let mut table = BlockBasedOptions::default();
    let cache = Cache::new_lru_cache(flags.cache_size as usize);
    table.set_block_cache(&cache);
    if flags.bloom_bits >= 0 {
        table.set_bloom_filter(f64::from(flags.bloom_bits), false);
    }
    opts.set_block_based_table_factory(&table);
    if flags.enable_blob_files {
        if let Some(r) = flags.blob_garbage_collection_ratio {
            anyhow::bail!(
                "--blob_garbage_collection_ratio={r}: RocksDB picks blob files for garbage \
                 collection by age (--blob_garbage_collection_age_cutoff), not by garbage share"
            );
        }
        opts.set_enable_blob_files(true);
        opts.set_min_blob_size(u64::try_from(flags.min_blob_size)?);
        opts.set_blob_file_size(flags.blob_file_size);
        opts.set_blob_compression_type(DBCompressionType::None);
        opts.set_enable_blob_gc(flags.blob_gc());
        opts.set_blob_gc_age_cutoff(flags.blob_gc_age_cutoff());
        opts.set_blob_gc_force_threshold(flags.blob_gc_force_threshold());
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
    let mut ignored = Vec::new();
    if let Some(n) = flags.readahead_size {
        ignored.push(format!(
            "readahead_size={n}: not mapped for RocksDB; its automatic read-ahead is used"
        ));
    }
    if flags.async_io {
        ignored.push(format!(
            "async_queue_depth={}: the rocksdb crate exposes no such option; RocksDB's default is used",
            flags.async_queue_depth
        ));
    }
    Ok(Opened {
        engine: Box::new(Rocks {
            db,
            families,
            async_io: flags.async_io,
            batched: flags.multiread_batched,
            path: path.display().to_string(),
        }),
        ignored,
    })
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
