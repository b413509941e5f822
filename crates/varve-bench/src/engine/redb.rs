//! The `redb` engine (cargo feature `redb`): redb 3, one table of
//! `&[u8] -> &[u8]` in the file `<db>/data.redb`.
//!
//! Configuration, as redb's documentation and its own comparison benchmark
//! (`crates/redb-bench/benches/lmdb_benchmark.rs`) set it up:
//! - `--cache_size` → `Builder::set_cache_size` (redb's own page cache, nine
//!   tenths for reads and one tenth for a write transaction's dirty pages;
//!   redb's default would be 1 GiB, its benchmark uses 4 GiB). redb reads the
//!   file with `pread`, so the OS page cache holds the pages too.
//! - Durability, per write: `WriteOpts::sync` → `Durability::Immediate`
//!   (redb's default: the commit slot is flipped and the file fsynced before
//!   `commit` returns); otherwise `Durability::None`, what redb's benchmark
//!   uses for its "nosync writes". redb 3 has only these two (`Eventual` and
//!   `Paranoid` are gone). Crash safety of `None`: the file stays consistent,
//!   but a `None` commit is made durable only by a later `Immediate` one, so
//!   a crash (process or power) reopens the database at the last
//!   `Immediate` commit, losing every `None` commit since (unlike RocksDB's
//!   default, whose WAL survives a process crash), and the reopen runs a
//!   full repair walk. `flush` and `close` make an empty `Immediate` commit,
//!   which makes everything before it durable. Two-phase commit and quick
//!   repair stay off (redb's defaults: they make commits slower).
//! - Writes: redb has one writer at a time (`begin_write` blocks), so each
//!   `write` call (one key, or a `--batch_size` batch) is one write
//!   transaction; concurrent writers serialise in redb. redb's docs do not
//!   recommend batching concurrent writers into one transaction (group
//!   commit), so none is done.
//! - Reads: each `get`/`get_with`/`multi_get` call is one read transaction
//!   (it sees every commit before it); a cursor is one read transaction for
//!   its whole life (a snapshot, like a RocksDB iterator) and re-opens a
//!   range when it seeks or changes direction.
//! - Flags redb cannot honour are refused or listed ignored by
//!   [`super::btree_flags::check`]; `--use_direct_reads` is ignored (redb has
//!   no direct IO). `compact` runs `Database::compact` (it shrinks the file);
//!   there is no background work to wait for.
//!
//! Thread-safety: `Database` is `Send + Sync`; it sits behind a `RwLock`
//! only because `Database::compact` takes `&mut self` (every other call
//! takes the lock shared). A cursor owns its `ReadOnlyTable` (which keeps
//! its read transaction alive) and belongs to one thread.

use std::ops::Bound;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use parking_lot::RwLock;
use redb::{
    AccessGuard, Builder, Database, Durability, Range, ReadOnlyTable, ReadableDatabase,
    TableDefinition,
};

use super::{Cursor, Engine, Opened, WriteOpts};
use crate::flags::Flags;

/// The version of the redb crate this is built with (checked against
/// Cargo.lock by a test).
pub const REDB_VERSION: &str = "3.1.3";

/// The one table every key goes to.
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("varve-bench");

type Guard = AccessGuard<'static, &'static [u8]>;

/// redb behind the benchmark trait.
pub struct Redb {
    db: RwLock<Database>,
    file: PathBuf,
    cache_size: usize,
}

/// Opens (creating if missing) a redb database in the directory `path`.
pub fn open(flags: &Flags, path: &Path) -> Result<Opened> {
    let mut ignored = super::btree_flags::check(flags, "redb")?;
    if flags.use_direct_reads {
        ignored.push(
            "use_direct_reads: redb has no direct IO (it preads through the OS page cache \
             into its own cache, --cache_size)"
                .into(),
        );
    }
    std::fs::create_dir_all(path)
        .with_context(|| format!("creating redb directory {}", path.display()))?;
    let file = path.join("data.redb");
    let cache_size = usize::try_from(flags.cache_size).context("--cache_size")?;
    let db = Builder::new()
        .set_cache_size(cache_size)
        .create(&file)
        .with_context(|| format!("opening redb database {}", file.display()))?;
    // The table must exist before a read transaction can open it.
    let txn = db.begin_write()?;
    txn.open_table(TABLE)
        .with_context(|| format!("creating the table in {}", file.display()))?;
    txn.commit()?;
    let options = vec![
        format!("cache_size={cache_size}"),
        "durability: Immediate for synced writes, None otherwise".to_string(),
        "two_phase_commit=false, quick_repair=false (redb's defaults)".to_string(),
    ];
    Ok(Opened {
        engine: Box::new(Redb {
            db: RwLock::new(db),
            file,
            cache_size,
        }),
        ignored,
        options,
    })
}

impl Redb {
    /// An empty `Durability::Immediate` commit: every commit before it is
    /// then durable.
    fn durable_commit(&self) -> Result<()> {
        let db = self.db.read();
        let mut txn = db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        txn.commit()
            .with_context(|| format!("durable commit of {}", self.file.display()))?;
        Ok(())
    }

    fn read_table(&self) -> Result<ReadOnlyTable<&'static [u8], &'static [u8]>> {
        let db = self.db.read();
        Ok(db.begin_read()?.open_table(TABLE)?)
    }
}

impl Engine for Redb {
    fn write(&self, batch: &[(&[u8], &[u8])], opts: WriteOpts) -> Result<()> {
        let db = self.db.read();
        let mut txn = db.begin_write()?;
        txn.set_durability(if opts.sync {
            Durability::Immediate
        } else {
            Durability::None
        })?;
        {
            let mut table = txn.open_table(TABLE)?;
            for (k, v) in batch {
                table.insert(*k, *v)?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.read_table()?.get(key)?.map(|v| v.value().len()))
    }

    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.read_table()?.get(key)?.map(|v| f(v.value())).is_some())
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        let table = self.read_table()?;
        keys.iter()
            .map(|k| Ok(table.get(*k)?.map(|v| v.value().len())))
            .collect()
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(RedbCursor {
            table: self.read_table()?,
            it: None,
            forward: true,
            cur: None,
        }))
    }

    fn flush(&self) -> Result<Option<String>> {
        self.durable_commit()?;
        Ok(Some(
            "redb has no memtable: made an empty Durability::Immediate commit \
             (every Durability::None commit before it is now durable)"
                .into(),
        ))
    }

    fn compact(&self) -> Result<Option<String>> {
        let mut db = self.db.write();
        let done = db.compact().with_context(|| {
            format!(
                "Database::compact of {} (it needs no live read transaction)",
                self.file.display()
            )
        })?;
        Ok(Some(format!(
            "redb: Database::compact (relocates pages to shrink the file): {}",
            if done { "compacted" } else { "nothing to do" }
        )))
    }

    fn wait_for_compaction(&self) -> Result<Option<String>> {
        Ok(Some(
            "redb has no background work: nothing to wait for".into(),
        ))
    }

    fn stats(&self) -> String {
        let db = self.db.read();
        let c = db.cache_stats();
        let tree = db
            .begin_write()
            .map_err(anyhow::Error::from)
            .and_then(|txn| {
                let s = txn.stats()?;
                txn.abort()?;
                Ok(format!(
                    "tree height {}, allocated pages {}, leaf pages {}, branch pages {}, \
                     stored bytes {}, metadata bytes {}, fragmented bytes {}, page size {}",
                    s.tree_height(),
                    s.allocated_pages(),
                    s.leaf_pages(),
                    s.branch_pages(),
                    s.stored_bytes(),
                    s.metadata_bytes(),
                    s.fragmented_bytes(),
                    s.page_size()
                ))
            })
            .unwrap_or_else(|e| format!("database stats unavailable: {e:#}"));
        let file_bytes = std::fs::metadata(&self.file).map_or(0, |m| m.len());
        format!(
            "redb stats: {tree}; file {file_bytes} bytes; cache {} of {} bytes used, \
             read hits {}, read misses {}, write hits {}, write misses {}, evictions {}\n",
            c.used_bytes(),
            self.cache_size,
            c.read_hits(),
            c.read_misses(),
            c.write_hits(),
            c.write_misses(),
            c.evictions(),
        )
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.durable_commit()?;
        drop(self.db.into_inner());
        Ok(())
    }

    fn version(&self) -> String {
        format!(
            "redb {REDB_VERSION} (cache_size {} bytes; commits Durability::Immediate with sync, \
             Durability::None without; two-phase commit and quick repair off; 4 KiB pages)",
            self.cache_size
        )
    }
}

struct RedbCursor {
    table: ReadOnlyTable<&'static [u8], &'static [u8]>,
    it: Option<Range<'static, &'static [u8], &'static [u8]>>,
    forward: bool,
    cur: Option<(Guard, Guard)>,
}

impl RedbCursor {
    fn pull(&mut self) -> Result<()> {
        let next = match &mut self.it {
            None => None,
            Some(it) if self.forward => it.next(),
            Some(it) => it.next_back(),
        };
        self.cur = next.transpose()?;
        Ok(())
    }

    fn restart(&mut self, lo: Bound<&[u8]>, hi: Bound<&[u8]>, forward: bool) -> Result<()> {
        self.cur = None;
        self.it = Some(self.table.range::<&[u8]>((lo, hi))?);
        self.forward = forward;
        self.pull()
    }
}

impl Cursor for RedbCursor {
    fn seek_to_first(&mut self) -> Result<()> {
        self.restart(Bound::Unbounded, Bound::Unbounded, true)
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.restart(Bound::Unbounded, Bound::Unbounded, false)
    }
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.restart(Bound::Included(key), Bound::Unbounded, true)
    }
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.0.value())
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.1.value())
    }
    fn next(&mut self) -> Result<()> {
        if self.forward {
            return self.pull();
        }
        match self.cur.take() {
            Some((k, _)) => self.restart(Bound::Excluded(k.value()), Bound::Unbounded, true),
            None => Ok(()),
        }
    }
    fn prev(&mut self) -> Result<()> {
        if !self.forward {
            return self.pull();
        }
        match self.cur.take() {
            Some((k, _)) => self.restart(Bound::Unbounded, Bound::Excluded(k.value()), false),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redb_matches_a_btreemap_and_survives_reopen() {
        super::super::conformance::check("redb");
    }

    #[test]
    fn redb_version_is_the_locked_one() {
        super::super::conformance::check_locked_version("redb", REDB_VERSION);
    }

    #[test]
    fn redb_refuses_blob_files() {
        let flags =
            Flags::parse_from_args(["x", "--engine=redb", "--enable_blob_files=true"]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        assert!(open(&flags, &dir.path().join("db")).is_err());
    }
}
