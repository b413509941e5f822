//! The `fjall` engine (cargo feature `fjall`): fjall 3, one keyspace.
//!
//! Flag mapping: `--cache_size` → the database block cache; `--write_buffer_size`
//! → the keyspace's max memtable size; `--bloom_bits` → a bloom filter of that
//! many bits per key, none when negative (db_bench's default; fjall's own
//! default would be 10); `--compression_type` → data and index block
//! compression; `--sync` → the journal is fdatasync'ed after the write
//! (`PersistMode::SyncData`). `--enable_blob_files` → key-value separation
//! (`KeyspaceCreateOptions::with_kv_separation`) with `KvSeparationOptions`
//! `separation_threshold` = `--min_blob_size`, `file_target_size` =
//! `--blob_file_size`, `age_cutoff` = `--blob_garbage_collection_age_cutoff`
//! (0 with `--enable_blob_garbage_collection=false`: fjall always runs its
//! blob GC in compaction, and a cutoff of 0 relocates nothing),
//! `staleness_threshold` = `--blob_garbage_collection_ratio`, blobs
//! uncompressed; fjall has no force threshold, so
//! `--blob_garbage_collection_force_threshold` is an error. A keyspace keeps
//! the separation it was created with, so reopening one
//! (`--use_existing_db`) with other blob flags is an error. fjall has no
//! direct IO, no WAL bypass, no async IO and no MultiGet, so those flags are
//! reported ignored. `Database` and
//! `Keyspace` are `Send + Sync`; a cursor re-opens a range iterator when it
//! seeks or changes direction.

use std::ops::Bound;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use fjall::config::{BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry};
use fjall::{
    CompressionType, Database, Iter, Keyspace, KeyspaceCreateOptions, KvSeparationOptions,
    PersistMode, Slice,
};

use super::{Cursor, Engine, Opened, WriteOpts};
use crate::flags::Flags;

/// fjall behind the benchmark trait.
pub struct Fjall {
    db: Database,
    ks: Keyspace,
}

/// The key-value separation the blob flags ask for (`None`: off).
fn kv_separation(flags: &Flags) -> Result<Option<KvSeparationOptions>> {
    super::reject_varve_only_flags(flags, "fjall")?;
    if !flags.enable_blob_files {
        return Ok(None);
    }
    anyhow::ensure!(
        flags.blob_garbage_collection_force_threshold.is_none(),
        "--blob_garbage_collection_force_threshold: fjall has no forced blob \
         garbage collection (its blob GC relocates only during compactions)"
    );
    let threshold = u32::try_from(flags.min_blob_size).map_err(|_| {
        anyhow::anyhow!(
            "--min_blob_size={}: fjall's separation threshold is a u32 (at most {})",
            flags.min_blob_size,
            u32::MAX
        )
    })?;
    let age_cutoff = if flags.blob_gc() {
        flags.blob_gc_age_cutoff() as f32
    } else {
        anyhow::ensure!(
            flags.blob_garbage_collection_age_cutoff.is_none(),
            "--blob_garbage_collection_age_cutoff with \
             --enable_blob_garbage_collection=false: fjall turns its blob GC off \
             through the age cutoff (0), so it cannot take both"
        );
        0.0
    };
    let defaults = KvSeparationOptions::default();
    let staleness = flags
        .blob_garbage_collection_ratio
        .map_or(defaults.staleness_threshold, |r| r as f32);
    Ok(Some(
        defaults
            .separation_threshold(threshold)
            .staleness_threshold(staleness)
            .file_target_size(flags.blob_file_size)
            .age_cutoff(age_cutoff)
            // varve and RocksDB (by default) keep blob values uncompressed;
            // fjall's default would be LZ4.
            .compression(CompressionType::None),
    ))
}

/// Opens (creating if missing) a fjall database at `path`.
pub fn open(flags: &Flags, path: &Path) -> Result<Opened> {
    anyhow::ensure!(
        flags.keyspaces == 1,
        "--keyspaces={}: not supported by fjall (its keyspaces are not wired into varve-bench)",
        flags.keyspaces
    );
    anyhow::ensure!(
        flags.level0_file_num_compaction_trigger.is_none(),
        "--level0_file_num_compaction_trigger: fjall has no such setting"
    );
    // fjall's README: size the cache, keep the defaults otherwise; it has
    // none of RocksDB's tuning knobs, so each given one is refused.
    flags.lsm.refuse_unmapped("fjall", &[])?;
    let kv = kv_separation(flags)?;
    let db = Database::builder(path)
        .cache_size(flags.cache_size)
        .open()
        .with_context(|| format!("opening fjall database at {}", path.display()))?;
    let compression = match flags.compression_type.as_str() {
        "lz4" => CompressionType::Lz4,
        _ => CompressionType::None,
    };
    let filter = if flags.bloom_bits >= 0 {
        FilterPolicy::all(FilterPolicyEntry::Bloom(
            BloomConstructionPolicy::BitsPerKey(flags.bloom_bits as f32),
        ))
    } else {
        FilterPolicy::disabled()
    };
    let wbs = flags.write_buffer_size as u64;
    let wanted = kv.clone();
    let ks = db
        .keyspace("default", move || {
            KeyspaceCreateOptions::default()
                .max_memtable_size(wbs)
                .filter_policy(filter)
                .data_block_compression_policy(CompressionPolicy::all(compression))
                .index_block_compression_policy(CompressionPolicy::all(compression))
                .with_kv_separation(kv)
        })
        .with_context(|| format!("opening fjall keyspace in {}", path.display()))?;
    // An existing keyspace is opened with the options it was created with.
    if ks.is_kv_separated() != wanted.is_some() || ks.config.kv_separation_opts != wanted {
        anyhow::bail!(
            "the fjall keyspace in {} was created with key-value separation {:?}, \
             the blob flags ask for {:?}; fjall cannot change it on an existing keyspace \
             (drop --use_existing_db to start afresh)",
            path.display(),
            ks.config.kv_separation_opts,
            wanted
        );
    }
    let mut ignored = Vec::new();
    if flags.use_direct_reads {
        ignored.push("use_direct_reads: fjall has no direct IO".into());
    }
    if flags.use_direct_io_for_flush_and_compaction {
        ignored.push("use_direct_io_for_flush_and_compaction: fjall has no direct IO".into());
    }
    if flags.disable_wal {
        ignored.push("disable_wal: fjall cannot skip its journal per write".into());
    }
    if flags.async_io {
        ignored.push("async_io/async_queue_depth: fjall has no async IO".into());
    }
    ignored.push("multireadrandom: fjall has no MultiGet; a loop of get is used".into());
    let options = vec![
        format!("tuned={}", flags.lsm.tuned),
        format!("cache_size={}", flags.cache_size),
        format!("max_memtable_size={wbs}"),
        format!("bloom_bits_per_key={}", flags.bloom_bits),
        format!("compression={compression:?}"),
        format!("kv_separation={:?}", ks.config.kv_separation_opts),
        "everything else: fjall 3's defaults".to_string(),
    ];
    Ok(Opened {
        engine: Box::new(Fjall { db, ks }),
        ignored,
        options,
    })
}

impl Engine for Fjall {
    fn write(&self, batch: &[(&[u8], &[u8])], opts: WriteOpts) -> Result<()> {
        if let [(k, v)] = batch {
            self.ks.insert(*k, *v)?;
        } else {
            let mut b = self.db.batch();
            for (k, v) in batch {
                b.insert(&self.ks, *k, *v);
            }
            b.commit()?;
        }
        if opts.sync {
            self.db.persist(PersistMode::SyncData)?;
        }
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.ks.get(key)?.map(|v| v.len()))
    }

    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.ks.get(key)?.map(|v| f(&v)).is_some())
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(FjallCursor {
            ks: &self.ks,
            it: None,
            forward: true,
            cur: None,
        }))
    }

    fn flush(&self) -> Result<Option<String>> {
        self.ks.rotate_memtable_and_wait()?;
        Ok(None)
    }

    fn compact(&self) -> Result<Option<String>> {
        self.ks.major_compact()?;
        Ok(None)
    }

    fn wait_for_compaction(&self) -> Result<Option<String>> {
        while self.db.active_compactions() > 0 || self.db.outstanding_flushes() > 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Some(
            "fjall: polled active_compactions/outstanding_flushes until zero".into(),
        ))
    }

    fn stats(&self) -> String {
        format!(
            "fjall stats: tables {}, L0 tables {}, blob files {}, fragmented blob bytes {}, \
             disk space {} bytes, journals {}, compactions completed {}, cache {} of {} bytes\n",
            self.ks.table_count(),
            self.ks.l0_table_count(),
            self.ks.blob_file_count(),
            self.ks.fragmented_blob_bytes(),
            self.db.disk_space().unwrap_or(0),
            self.db.journal_count(),
            self.db.compactions_completed(),
            self.db.cache_size(),
            self.db.cache_capacity(),
        )
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db
            .persist(PersistMode::SyncAll)
            .context("closing fjall database")?;
        Ok(())
    }

    fn version(&self) -> String {
        "fjall 3".into()
    }
}

struct FjallCursor<'a> {
    ks: &'a Keyspace,
    it: Option<Iter>,
    forward: bool,
    cur: Option<(Slice, Slice)>,
}

impl FjallCursor<'_> {
    fn pull(&mut self) -> Result<()> {
        let g = match &mut self.it {
            None => None,
            Some(it) if self.forward => it.next(),
            Some(it) => it.next_back(),
        };
        self.cur = match g {
            Some(g) => Some(g.into_inner()?),
            None => None,
        };
        Ok(())
    }

    fn restart(&mut self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>, forward: bool) -> Result<()> {
        self.it = Some(self.ks.range::<Vec<u8>, _>((lo, hi)));
        self.forward = forward;
        self.pull()
    }
}

impl Cursor for FjallCursor<'_> {
    fn seek_to_first(&mut self) -> Result<()> {
        self.restart(Bound::Unbounded, Bound::Unbounded, true)
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.restart(Bound::Unbounded, Bound::Unbounded, false)
    }
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.restart(Bound::Included(key.to_vec()), Bound::Unbounded, true)
    }
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| &c.0)
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| &c.1)
    }
    fn next(&mut self) -> Result<()> {
        if self.forward {
            return self.pull();
        }
        match self.cur.take() {
            Some((k, _)) => self.restart(Bound::Excluded(k.to_vec()), Bound::Unbounded, true),
            None => Ok(()),
        }
    }
    fn prev(&mut self) -> Result<()> {
        if !self.forward {
            return self.pull();
        }
        match self.cur.take() {
            Some((k, _)) => self.restart(Bound::Unbounded, Bound::Excluded(k.to_vec()), false),
            None => Ok(()),
        }
    }
}
