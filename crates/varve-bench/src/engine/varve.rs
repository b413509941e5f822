//! The `varve` engine: the library under test, through its public API only.
//!
//! Flags map onto `varve::Options` / `WriteOptions` the way db_bench maps them
//! onto RocksDB's: `--cache_size` → block cache, `--bloom_bits` → bloom bits
//! per key (db_bench's -1, no filter, becomes 0), `--compression_type=lz4` →
//! LZ4 blocks, direct-IO flags → the same-named options. multireadrandom
//! calls `Db::multi_get` with `ReadOptions { async_io, async_queue_depth }`
//! from `--async_io` / `--async_queue_depth` (fibers + io_uring when async).
//! `count` uses `par_count` without filling the block cache. Cursors and `par_count` read ahead with
//! `--readahead_size` when given (`ReadOptions::readahead_size`; else
//! varve's default, 2 MiB); cursors prefetch the next chunks in the
//! background once they have proven sequential (`--adaptive_prefetch`,
//! default true: `ScanPrefetch::Adaptive`), and with `--async_io` so do
//! `par_count`'s (`ScanPrefetch::Always`). `--wal_writer` picks
//! `Options::wal_writer`. `--enable_blob_files` sets `Options::min_blob_size`
//! to `--min_blob_size` (without it, values stay inline, as in db_bench:
//! varve's own default, 4096, is not used, so the same flags mean the same
//! on every engine); `--pinned_blob_tables_size` sets the same-named option; `--blob_file_size`,
//! `--enable_blob_garbage_collection`, `--blob_garbage_collection_ratio` and
//! `--blob_garbage_collection_force_threshold` set the same-named options
//! (varve's defaults when not given). varve picks blob files for GC by
//! garbage share, not age, so `--blob_garbage_collection_age_cutoff` is an
//! error. Cursors
//! position their levels for a seek concurrently (`--concurrent_seeks`,
//! default true).
//! `Db` is `Send + Sync`; cursors wrap a `DbIterator` each.

use std::path::Path;

use anyhow::{Context, Result};

use super::{Cursor, Engine, Opened, WriteOpts};
use crate::flags::Flags;
use crate::tuning;

/// varve behind the benchmark trait.
pub struct Varve {
    db: varve::Db,
    /// Read options of cursors, `par_count` and `multi_get`.
    read: varve::ReadOptions,
    /// With `--keyspaces=N` (N > 1): the default keyspace and `ks1` ..
    /// `ks<N-1>`, each key in the one `keyspace_of` picks.
    spread: Vec<varve::Keyspace>,
}

/// Opens (creating if missing) a varve database at `path`.
pub fn open(flags: &Flags, path: &Path) -> Result<Opened> {
    anyhow::ensure!(
        !flags.enable_blob_files || flags.blob_garbage_collection_age_cutoff.is_none(),
        "--blob_garbage_collection_age_cutoff: varve picks blob files for garbage \
         collection by their garbage share (--blob_garbage_collection_ratio), not by age"
    );
    let lsm = if flags.lsm.tuned {
        tuning::varve_tuned(&flags.lsm)
    } else {
        flags.lsm.clone()
    };
    lsm.refuse_unmapped("varve", VARVE_MAPS)?;
    let defaults = varve::Options::default();
    let multiplier = match lsm.max_bytes_for_level_multiplier {
        None => defaults.max_bytes_for_level_multiplier,
        Some(x) if x >= 1.0 && x.fract() == 0.0 => x as u64,
        Some(x) => {
            anyhow::bail!("--max_bytes_for_level_multiplier={x}: varve takes a whole number")
        }
    };
    let options = varve::Options {
        max_immutable_memtables: match lsm.max_write_buffer_number {
            None => defaults.max_immutable_memtables,
            Some(n) if n >= 2 => (n - 1) as usize,
            Some(n) => anyhow::bail!(
                "--max_write_buffer_number={n}: varve needs at least 2 (one active, one flushing)"
            ),
        },
        l0_slowdown_writes_trigger: lsm
            .level0_slowdown_writes_trigger
            .map_or(Ok(defaults.l0_slowdown_writes_trigger), usize::try_from)?,
        l0_stop_writes_trigger: lsm
            .level0_stop_writes_trigger
            .map_or(Ok(defaults.l0_stop_writes_trigger), usize::try_from)?,
        max_bytes_for_level_base: lsm
            .max_bytes_for_level_base
            .unwrap_or(defaults.max_bytes_for_level_base),
        max_bytes_for_level_multiplier: multiplier,
        target_file_size: lsm
            .target_file_size_base
            .unwrap_or(defaults.target_file_size),
        block_size: lsm.block_size.unwrap_or(defaults.block_size),
        create_if_missing: true,
        error_if_exists: false,
        write_buffer_size: flags.write_buffer_size,
        max_key_size: flags.key_size.max(defaults.max_key_size),
        max_value_size: flags.value_size.max(defaults.max_value_size),
        cache_size: flags.cache_size as usize,
        // --tuned: varve's recommended (and default) 10-bit bloom filter
        // when none is asked for, as RocksDB's profile does.
        bloom_bits_per_key: if flags.bloom_bits < 0 && lsm.tuned {
            defaults.bloom_bits_per_key
        } else {
            flags.bloom_bits.max(0) as u32
        },
        compression: if flags.compression_type == "lz4" {
            varve::Compression::Lz4
        } else {
            varve::Compression::None
        },
        use_direct_reads: flags.use_direct_reads,
        use_direct_io_for_flush_and_compaction: flags.use_direct_io_for_flush_and_compaction
            || lsm.tuned,
        wal_writer: match flags.wal_writer.as_str() {
            "mapped_zero_filled" => varve::WalWriter::MappedZeroFilled,
            "io_uring" => varve::WalWriter::IoUring,
            "plain" => varve::WalWriter::Plain,
            _ => varve::WalWriter::Mapped,
        },
        max_subcompactions: flags.subcompactions.max(1),
        l0_compaction_trigger: flags
            .level0_file_num_compaction_trigger
            .unwrap_or(defaults.l0_compaction_trigger),
        min_blob_size: flags.enable_blob_files.then_some(flags.min_blob_size),
        pinned_blob_tables_size: flags
            .pinned_blob_tables_size
            .unwrap_or(defaults.pinned_blob_tables_size),
        blob_write_lanes: flags.blob_write_lanes.unwrap_or(defaults.blob_write_lanes),
        shared_scan_bytes: flags
            .shared_scan_bytes
            .unwrap_or(defaults.shared_scan_bytes),
        blob_lanes_by_key: flags
            .blob_lanes_by_key
            .unwrap_or(defaults.blob_lanes_by_key),
        memory_budget: flags.memory_budget,
        // Without blob files the other blob flags do nothing (as in
        // db_bench), so they cannot fail the open either.
        blob_file_size: if flags.enable_blob_files {
            flags.blob_file_size
        } else {
            defaults.blob_file_size
        },
        // db_bench's default (off) unless asked, as for every engine.
        enable_blob_garbage_collection: flags.blob_gc(),
        blob_garbage_collection_ratio: flags
            .blob_garbage_collection_ratio
            .filter(|_| flags.enable_blob_files)
            .unwrap_or(defaults.blob_garbage_collection_ratio),
        blob_garbage_collection_force_threshold: flags
            .blob_garbage_collection_force_threshold
            .filter(|_| flags.enable_blob_files)
            .unwrap_or(defaults.blob_garbage_collection_force_threshold),
        ..Default::default()
    };
    let db = varve::Db::open(path, options.clone())
        .with_context(|| format!("opening varve database at {}", path.display()))?;

    let mut ignored = Vec::new();
    if flags.multiread_batched {
        ignored.push("multiread_batched: varve's multi_get has a single (batched) form".into());
    }
    if flags.async_io && !varve::io_uring_available() {
        ignored.push(
            "async_io: io_uring is unavailable here (or VARVE_IO=sync); multi_get reads synchronously"
                .into(),
        );
    }
    let mut read = varve::ReadOptions {
        // --tuned: multi_get on fibers and io_uring (scans keep their mode).
        async_io: flags.async_io || lsm.tuned,
        async_queue_depth: flags.async_queue_depth.max(1),
        scan_prefetch: if flags.async_io {
            varve::ScanPrefetch::Always
        } else if flags.adaptive_prefetch {
            varve::ScanPrefetch::Adaptive
        } else {
            varve::ScanPrefetch::Off
        },
        concurrent_seeks: flags.concurrent_seeks,
        ..Default::default()
    };
    if let Some(n) = flags.readahead_size {
        read.readahead_size = n;
    }
    let mut spread = Vec::new();
    if flags.keyspaces > 1 {
        spread.push(db.default_keyspace());
        for i in 1..flags.keyspaces {
            // The same settings as the database's (KeyspaceOptions::from).
            let ks = db
                .keyspace(&format!("ks{i}"), varve::KeyspaceOptions::from(&options))
                .with_context(|| format!("opening keyspace ks{i}"))?;
            spread.push(ks);
        }
    }
    let mut listed = vec![format!("tuned={}", lsm.tuned)];
    listed.extend(
        format!("{options:#?}")
            .lines()
            .map(|l| l.trim().trim_end_matches(',').to_string()),
    );
    listed.extend(
        format!("{read:#?}")
            .lines()
            .map(|l| format!("read.{}", l.trim().trim_end_matches(','))),
    );
    Ok(Opened {
        engine: Box::new(Varve { db, read, spread }),
        ignored,
        options: listed,
    })
}

/// The LSM tuning flags varve has an equivalent for.
const VARVE_MAPS: &[&str] = &[
    "max_write_buffer_number",
    "level0_slowdown_writes_trigger",
    "level0_stop_writes_trigger",
    "max_bytes_for_level_base",
    "max_bytes_for_level_multiplier",
    "target_file_size_base",
    "block_size",
];

impl Varve {
    /// The keyspace `key` goes to (`--keyspaces`).
    fn ks(&self, key: &[u8]) -> &varve::Keyspace {
        &self.spread[super::keyspace_of(key, self.spread.len())]
    }
}

impl Engine for Varve {
    fn write(&self, batch: &[(&[u8], &[u8])], opts: WriteOpts) -> Result<()> {
        let wo = varve::WriteOptions {
            sync: opts.sync,
            disable_wal: opts.disable_wal,
        };
        if let ([(k, v)], false) = (batch, self.spread.is_empty()) {
            self.ks(k).put_opt(k, v, &wo)?;
        } else if !self.spread.is_empty() {
            // One atomic batch across the keyspaces its keys go to.
            let mut b = varve::WriteBatch::new();
            for (k, v) in batch {
                b.put_in(self.ks(k), k, v);
            }
            self.db.write_opt(b, &wo)?;
        } else if let [(k, v)] = batch {
            self.db.put_opt(k, v, &wo)?;
        } else {
            let mut b = varve::WriteBatch::new();
            for (k, v) in batch {
                b.put(k, v);
            }
            self.db.write_opt(b, &wo)?;
        }
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        let v = if self.spread.is_empty() {
            self.db.get(key)?
        } else {
            self.ks(key).get(key)?
        };
        Ok(v.map(|v| v.len()))
    }

    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let v = if self.spread.is_empty() {
            self.db.get(key)?
        } else {
            self.ks(key).get(key)?
        };
        Ok(v.map(|v| f(&v)).is_some())
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        if self.spread.is_empty() {
            return self
                .db
                .multi_get(&self.read, keys)
                .into_iter()
                .map(|r| Ok(r?.map(|v| v.len())))
                .collect();
        }
        // One multi_get per keyspace, results put back in key order.
        let mut out = vec![None; keys.len()];
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); self.spread.len()];
        for (i, k) in keys.iter().enumerate() {
            groups[super::keyspace_of(k, self.spread.len())].push(i);
        }
        for (ks, idx) in self.spread.iter().zip(&groups) {
            if idx.is_empty() {
                continue;
            }
            let sub: Vec<&[u8]> = idx.iter().map(|&i| keys[i]).collect();
            for (&i, r) in idx.iter().zip(ks.multi_get(&self.read, &sub)) {
                out[i] = r?.map(|v| v.len());
            }
        }
        Ok(out)
    }

    fn native_multi_get(&self) -> bool {
        true
    }

    fn par_count(&self, threads: usize) -> Result<Option<u64>> {
        // A whole-database count is a bulk scan: it reads every block once
        // and must not churn the block cache (fill_cache off, as RocksDB
        // advises for such scans).
        let opts = varve::ReadOptions {
            fill_cache: false,
            ..self.read.clone()
        };
        if !self.spread.is_empty() {
            let mut n = 0;
            for ks in &self.spread {
                n += ks.par_count(&opts, &varve::KeyRange::all(), threads.max(1))?;
            }
            return Ok(Some(n));
        }
        let n = self
            .db
            .par_count(&opts, &varve::KeyRange::all(), threads.max(1))?;
        Ok(Some(n))
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>> {
        if !self.spread.is_empty() {
            let parts = self
                .spread
                .iter()
                .map(|ks| {
                    Box::new(VarveCursor {
                        it: ks.iter_opt(&self.read),
                    }) as Box<dyn Cursor>
                })
                .collect();
            return Ok(Box::new(super::ChainCursor::new(parts)));
        }
        Ok(Box::new(VarveCursor {
            it: self.db.iter_opt(&self.read),
        }))
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        if !self.spread.is_empty() {
            let mut b = varve::WriteBatch::new();
            for ks in &self.spread {
                b.delete_range_in(ks, start..end);
            }
            self.db.write(b)?;
            return Ok(());
        }
        self.db.delete_range(start..end)?;
        Ok(())
    }

    fn flush(&self) -> Result<Option<String>> {
        self.db.flush()?;
        Ok(None)
    }

    fn compact(&self) -> Result<Option<String>> {
        self.db.compact_range(None, None)?;
        for ks in self.spread.iter().skip(1) {
            ks.compact_range(None, None)?;
        }
        Ok(None)
    }

    fn wait_for_compaction(&self) -> Result<Option<String>> {
        self.db.wait_for_compactions()?;
        Ok(None)
    }

    fn stats(&self) -> String {
        let mut s = self.db.stats().to_string();
        if !s.ends_with('\n') {
            s.push('\n');
        }
        s
    }

    fn close(self: Box<Self>) -> Result<()> {
        let path = self.db.path().to_path_buf();
        self.db
            .close()
            .with_context(|| format!("closing varve database at {}", path.display()))
    }

    fn version(&self) -> String {
        format!("varve {}", env!("CARGO_PKG_VERSION"))
    }
}

struct VarveCursor {
    it: varve::DbIterator,
}

impl VarveCursor {
    fn check(&self) -> Result<()> {
        if !self.it.valid() {
            self.it.status()?;
        }
        Ok(())
    }
}

impl Cursor for VarveCursor {
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
        self.it.key()
    }
    fn value(&self) -> &[u8] {
        self.it.value()
    }
    fn next(&mut self) -> Result<()> {
        self.it.move_next();
        self.check()
    }
    fn prev(&mut self) -> Result<()> {
        self.it.move_prev();
        self.check()
    }
}
