//! The `varve` engine: the library under test, through its public API only.
//!
//! Flags map onto `varve::Options` / `WriteOptions`; flags varve cannot honor
//! yet (block cache, bloom filters, direct IO, compression, async IO, batched
//! MultiGet, compaction) are reported by [`open`] as ignored, and the
//! workloads that need them say what they did instead (a loop of `get` for
//! multireadrandom, `flush` for compact). `Db` is `Send + Sync`; cursors wrap
//! a `DbIterator` each.

use std::path::Path;

use anyhow::{Context, Result};

use super::{Cursor, Engine, Opened, WriteOpts};
use crate::flags::Flags;

/// varve behind the benchmark trait.
pub struct Varve {
    db: varve::Db,
}

/// Opens (creating if missing) a varve database at `path`.
pub fn open(flags: &Flags, path: &Path) -> Result<Opened> {
    let options = varve::Options {
        create_if_missing: true,
        error_if_exists: false,
        write_buffer_size: flags.write_buffer_size,
        max_key_size: flags
            .key_size
            .max(8)
            .max(varve::Options::default().max_key_size),
        max_value_size: flags
            .value_size
            .max(varve::Options::default().max_value_size),
        ..Default::default()
    };
    let db = varve::Db::open(path, options)
        .with_context(|| format!("opening varve database at {}", path.display()))?;
    let mut ignored = vec![
        format!(
            "cache_size={}: varve has no block cache yet",
            flags.cache_size
        ),
        "multireadrandom: varve has no multi_get yet; a loop of get is used".to_string(),
        "compact/waitforcompaction: varve has no compaction yet; flush is called".to_string(),
    ];
    if flags.bloom_bits >= 0 {
        ignored.push(format!(
            "bloom_bits={}: varve has no bloom filters yet",
            flags.bloom_bits
        ));
    }
    if flags.use_direct_reads {
        ignored.push("use_direct_reads: varve has no table files or direct IO yet".into());
    }
    if flags.use_direct_io_for_flush_and_compaction {
        ignored.push("use_direct_io_for_flush_and_compaction: varve has no direct IO yet".into());
    }
    if flags.compression_type != "none" {
        ignored.push(format!(
            "compression_type={}: varve has no block compression yet",
            flags.compression_type
        ));
    }
    if flags.async_io {
        ignored.push("async_io: varve has no async IO option yet".into());
    }
    if flags.async_io {
        ignored.push(format!(
            "async_queue_depth={}: no varve option yet",
            flags.async_queue_depth
        ));
    }
    if flags.multiread_batched {
        ignored.push("multiread_batched: varve has no multi_get yet".into());
    }
    Ok(Opened {
        engine: Box::new(Varve { db }),
        ignored,
    })
}

impl Engine for Varve {
    fn write(&self, batch: &[(&[u8], &[u8])], opts: WriteOpts) -> Result<()> {
        let wo = varve::WriteOptions {
            sync: opts.sync,
            disable_wal: opts.disable_wal,
        };
        if let [(k, v)] = batch {
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
        Ok(self.db.get(key)?.map(|v| v.len()))
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(VarveCursor { it: self.db.iter() }))
    }

    fn flush(&self) -> Result<Option<String>> {
        self.db.flush()?;
        Ok(Some(
            "varve: flush syncs the WAL (no table files yet; memtables stay in memory)".into(),
        ))
    }

    fn compact(&self) -> Result<Option<String>> {
        self.db.flush()?;
        Ok(Some(
            "varve has no compaction yet: called flush instead".into(),
        ))
    }

    fn wait_for_compaction(&self) -> Result<Option<String>> {
        self.db.flush()?;
        Ok(Some(
            "varve has no compaction yet: called flush instead".into(),
        ))
    }

    fn stats(&self) -> String {
        format!(
            "varve stats: latest_sequence {}, memtable_usage {} bytes, live_snapshots {}\n",
            self.db.latest_sequence(),
            self.db.memtable_usage(),
            self.db.live_snapshots()
        )
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
