//! The `lmdb` engine (cargo feature `lmdb`): LMDB through the heed crate,
//! the unnamed database of an environment in the directory `<db>`.
//!
//! Configuration, as LMDB's documentation (lmdb.h, `mdb_env_open` and
//! `mdb_env_set_mapsize`) and heed's recommend, and as redb's comparison
//! benchmark sets LMDB up:
//! - Map size (`mdb_env_set_mapsize`: "as large as possible, to accommodate
//!   future growth"): `--lmdb_map_size`, else 4 x `--num` x (key + value
//!   bytes) and at least 4 GiB (redb's benchmark uses 4 GiB). It is address
//!   space only: the file grows as pages are used. A full map is an error
//!   naming the flag.
//! - Durability, per write: `WriteOpts::sync` → LMDB's default commit (data
//!   pages fdatasync'ed, then the meta page written through the O_DSYNC
//!   descriptor: durable when `commit` returns); otherwise `MDB_NOSYNC`, as
//!   redb's benchmark does for its "nosync writes": no flush at commit. LMDB
//!   documents `MDB_NOSYNC` as keeping atomicity, consistency and isolation
//!   (not durability) when the file system preserves write order and
//!   `MDB_WRITEMAP` is off, else a system crash can corrupt the database; a
//!   process crash loses nothing (the pages are in the OS's cache), which is
//!   RocksDB's default (WAL written, not synced). The environment opens with
//!   `MDB_NOSYNC` unless `--sync`; a write of the other kind switches it
//!   with `mdb_env_set_flags` ("may be changed at any time") under the
//!   writer lock, so only one thread ever calls it. `flush` and `close`
//!   call `mdb_env_sync(force)`. `MDB_NOMETASYNC` (one sync per commit
//!   instead of two) is not used: it is neither durable nor fast.
//! - Not used: `MDB_WRITEMAP` (lmdb.h: faster only while the database fits
//!   in RAM, slower beyond, and with `MDB_NOSYNC` it loses the consistency
//!   guarantee), `MDB_MAPASYNC` (WRITEMAP only), `MDB_NOTLS` (reader slots
//!   stay tied to threads, LMDB's default and the cheaper one: a read
//!   transaction reuses its thread's slot without taking the reader mutex;
//!   so a thread has at most one read transaction at a time, and a `get` on
//!   a thread whose cursor is alive fails with MDB_BAD_RSLOT).
//!   `MDB_NORDAHEAD` ("may help random read performance when the DB is
//!   larger than RAM") is set with `--use_direct_reads`, the nearest LMDB
//!   has to direct IO (it has none: it reads through its memory map, the OS
//!   page cache; noted as ignored). Max readers: at least 126 (LMDB's
//!   default), two per `--threads`/`--scan_threads` thread beyond that.
//! - Writes: LMDB has one writer at a time, so each `write` call (one key,
//!   or a `--batch_size` batch) is one write transaction; concurrent
//!   writers serialise. LMDB's docs do not recommend batching concurrent
//!   writers into one transaction (group commit), so none is done.
//! - Reads: each `get`/`get_with`/`multi_get` call is one read transaction;
//!   a cursor is one read transaction for its life (a snapshot) and
//!   re-opens a range when it seeks or changes direction.
//! - LMDB has no cache of its own (`--cache_size` is noted ignored), no
//!   compaction and no background work; flags it cannot honour are refused
//!   or listed ignored by [`super::btree_flags::check`].
//!
//! Thread-safety: `Env` and `Database` are `Send + Sync`; writers hold
//! `Lmdb::writer` (which also records whether `MDB_NOSYNC` is on) for the
//! whole transaction. A cursor owns its read transaction (a `self_cell`
//! pairs it with the range that borrows it) and belongs to one thread.

use std::ops::Bound;
use std::path::Path;

use anyhow::{Context, Result};
use heed::types::Bytes;
use heed::{
    Database, Env, EnvFlags, EnvOpenOptions, FlagSetMode, RoRange, RoRevRange, RoTxn, WithTls,
};
use parking_lot::Mutex;

use super::{Cursor, Engine, Opened, WriteOpts};
use crate::flags::Flags;

/// The version of the heed crate this is built with (checked against
/// Cargo.lock by a test).
pub const HEED_VERSION: &str = "0.22.1";

/// LMDB's own default number of reader slots.
const DEFAULT_MAX_READERS: u32 = 126;

type Db = Database<Bytes, Bytes>;

/// LMDB behind the benchmark trait.
pub struct Lmdb {
    env: Env,
    db: Db,
    /// The writer lock; true while the environment has `MDB_NOSYNC` set.
    writer: Mutex<bool>,
    /// What `version()` prints: every option the environment runs with.
    options: String,
}

/// The map size `--lmdb_map_size` asks for, or the default.
fn map_size(flags: &Flags) -> Result<usize> {
    const MIB: u64 = 1 << 20;
    let want = match flags.lmdb_map_size {
        Some(n) => n,
        None => {
            let pair = (flags.key_size + flags.value_size) as u64;
            flags
                .num()
                .saturating_mul(pair)
                .saturating_mul(4)
                .max(4 << 30)
        }
    };
    // A multiple of the OS page size, as mdb_env_set_mapsize requires.
    let rounded = want.div_ceil(MIB).saturating_mul(MIB);
    usize::try_from(rounded).context("--lmdb_map_size does not fit this platform's usize")
}

/// Opens (creating if missing) an LMDB environment in the directory `path`.
pub fn open(flags: &Flags, path: &Path) -> Result<Opened> {
    let mut ignored = super::btree_flags::check(flags, "lmdb")?;
    ignored.push(
        "cache_size: LMDB has no cache of its own (it reads the OS page cache through its memory map)"
            .into(),
    );
    if flags.use_direct_reads {
        ignored.push(
            "use_direct_reads: LMDB has no direct IO (it reads through its memory map); \
             MDB_NORDAHEAD is set instead"
                .into(),
        );
    }
    std::fs::create_dir_all(path)
        .with_context(|| format!("creating LMDB directory {}", path.display()))?;
    let map = map_size(flags)?;
    let threads = flags.threads.max(flags.scan_threads) as u32;
    let readers = DEFAULT_MAX_READERS.max(threads.saturating_mul(2).saturating_add(8));
    let mut env_flags = EnvFlags::empty();
    if !flags.sync {
        env_flags |= EnvFlags::NO_SYNC;
    }
    if flags.use_direct_reads {
        env_flags |= EnvFlags::NO_READ_AHEAD;
    }
    let mut opts = EnvOpenOptions::new();
    opts.map_size(map).max_readers(readers).max_dbs(0);
    // SAFETY: NO_SYNC gives up durability only (documented in the module
    // contract); it has no effect on memory safety in this process.
    unsafe { opts.flags(env_flags) };
    // SAFETY: heed's contract for the memory map: nothing else modifies the
    // files of this directory while the environment is open (varve-bench
    // owns the database directory) and heed refuses a second open of the
    // same path in this process; LMDB's lock file guards other processes.
    let env = unsafe { opts.open(path) }
        .with_context(|| format!("opening LMDB environment {}", path.display()))?;
    let mut txn = env.write_txn()?;
    let db: Db = env
        .create_database(&mut txn, None)
        .with_context(|| format!("opening the unnamed database in {}", path.display()))?;
    txn.commit()?;
    let options = format!(
        "map_size {map} bytes, max_readers {readers}, flags {:?} (NO_SYNC toggled per write: \
         off for synced writes); no WRITEMAP, NOMETASYNC or NOTLS",
        env_flags
    );
    let listed = vec![
        format!("map_size={map}"),
        format!("max_readers={readers}"),
        format!("flags={env_flags:?}"),
        "NO_SYNC toggled per write (off for synced writes)".to_string(),
        "WRITEMAP, NOMETASYNC, MAPASYNC, NOTLS: off (LMDB's defaults)".to_string(),
    ];
    Ok(Opened {
        engine: Box::new(Lmdb {
            env,
            db,
            writer: Mutex::new(!flags.sync),
            options,
        }),
        ignored,
        options: listed,
    })
}

/// Adds a hint to LMDB's "map full" error.
fn map_full_hint(e: heed::Error) -> anyhow::Error {
    if matches!(e, heed::Error::Mdb(heed::MdbError::MapFull)) {
        anyhow::Error::from(e)
            .context("the LMDB map is full: give a larger --lmdb_map_size (bytes)")
    } else {
        e.into()
    }
}

impl Engine for Lmdb {
    fn write(&self, batch: &[(&[u8], &[u8])], opts: WriteOpts) -> Result<()> {
        let mut nosync = self.writer.lock();
        if *nosync == opts.sync {
            let mode = if opts.sync {
                FlagSetMode::Disable
            } else {
                FlagSetMode::Enable
            };
            // SAFETY: only a holder of `writer` calls set_flags, so one
            // thread at a time (LMDB's and heed's requirement); NO_SYNC only
            // changes durability.
            unsafe { self.env.set_flags(EnvFlags::NO_SYNC, mode) }?;
            *nosync = !opts.sync;
        }
        let mut txn = self.env.write_txn().map_err(map_full_hint)?;
        for (k, v) in batch {
            self.db.put(&mut txn, k, v).map_err(map_full_hint)?;
        }
        txn.commit().map_err(map_full_hint)?;
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        let txn = self.env.read_txn()?;
        Ok(self.db.get(&txn, key)?.map(<[u8]>::len))
    }

    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let txn = self.env.read_txn()?;
        Ok(self.db.get(&txn, key)?.map(f).is_some())
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        let txn = self.env.read_txn()?;
        keys.iter()
            .map(|k| Ok(self.db.get(&txn, k)?.map(<[u8]>::len)))
            .collect()
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>> {
        let txn = self.env.clone().static_read_txn()?;
        let snap = Snapshot::new(txn, |_| Pos {
            walk: Walk::Done,
            cur: None,
        });
        Ok(Box::new(LmdbCursor {
            db: self.db,
            snap: Some(snap),
        }))
    }

    fn flush(&self) -> Result<Option<String>> {
        self.env.force_sync()?;
        Ok(Some(
            "LMDB has no memtable: mdb_env_sync(force) made every commit durable".into(),
        ))
    }

    fn compact(&self) -> Result<Option<String>> {
        Ok(Some(
            "LMDB has no compaction (its B-tree reuses freed pages); nothing done".into(),
        ))
    }

    fn wait_for_compaction(&self) -> Result<Option<String>> {
        Ok(Some(
            "LMDB has no background work: nothing to wait for".into(),
        ))
    }

    fn stats(&self) -> String {
        let s = self.env.stat();
        let i = self.env.info();
        let file = self.env.real_disk_size().unwrap_or(0);
        format!(
            "lmdb stats: entries {}, depth {}, branch pages {}, leaf pages {}, overflow pages {}, \
             page size {}; map {} bytes, last page {}, last txn {}, readers {} of {}; \
             file {file} bytes\n",
            s.entries,
            s.depth,
            s.branch_pages,
            s.leaf_pages,
            s.overflow_pages,
            s.page_size,
            i.map_size,
            i.last_page_number,
            i.last_txn_id,
            i.number_of_readers,
            i.maximum_number_of_readers,
        )
    }

    fn close(self: Box<Self>) -> Result<()> {
        let Lmdb { env, .. } = *self;
        env.force_sync()
            .with_context(|| format!("syncing LMDB environment {}", env.path().display()))?;
        // Waits until the last handle is gone (cursors borrow the engine,
        // so none is left), so the same path can be opened again.
        env.prepare_for_closing().wait();
        Ok(())
    }

    fn version(&self) -> String {
        format!(
            "{} (heed {HEED_VERSION}, bundled by lmdb-master-sys; {})",
            heed::lmdb_version().string,
            self.options
        )
    }
}

/// Where a cursor's range runs: forward, backward, or nowhere yet.
enum Walk<'t> {
    Fwd(RoRange<'t, Bytes, Bytes>),
    Rev(RoRevRange<'t, Bytes, Bytes>),
    Done,
}

/// A range over a read transaction and the entry it stands at.
struct Pos<'t> {
    walk: Walk<'t>,
    cur: Option<(&'t [u8], &'t [u8])>,
}

/// What `open_walk` should open.
enum Want<'k> {
    Fwd(Bound<&'k [u8]>),
    Rev(Bound<&'k [u8]>),
}

self_cell::self_cell!(
    struct Snapshot {
        owner: RoTxn<'static, WithTls>,
        #[covariant]
        dependent: Pos,
    }
);

/// Opens the range `want` over `txn` and steps onto its first entry.
fn start<'t>(db: Db, txn: &'t RoTxn<'static, WithTls>, want: Want<'_>) -> Result<Pos<'t>> {
    let mut walk = match want {
        Want::Fwd(lo) => Walk::Fwd(db.range(txn, &(lo, Bound::Unbounded))?),
        Want::Rev(hi) => Walk::Rev(db.rev_range(txn, &(Bound::Unbounded, hi))?),
    };
    let cur = step(&mut walk)?;
    Ok(Pos { walk, cur })
}

fn step<'t>(walk: &mut Walk<'t>) -> Result<Option<(&'t [u8], &'t [u8])>> {
    Ok(match walk {
        Walk::Fwd(it) => it.next().transpose()?,
        Walk::Rev(it) => it.next().transpose()?,
        Walk::Done => None,
    })
}

struct LmdbCursor {
    db: Db,
    /// Always `Some` between calls (taken only while a range is re-opened).
    snap: Option<Snapshot>,
}

impl LmdbCursor {
    fn restart(&mut self, want: Want<'_>) -> Result<()> {
        let snap = self
            .snap
            .take()
            .context("LMDB cursor lost its transaction after an earlier error")?;
        let txn = snap.into_owner();
        self.snap = Some(Snapshot::try_new(txn, |t| start(self.db, t, want))?);
        Ok(())
    }

    fn cur(&self) -> Option<(&[u8], &[u8])> {
        self.snap.as_ref().and_then(|s| s.borrow_dependent().cur)
    }

    fn forward(&self) -> bool {
        self.snap
            .as_ref()
            .is_some_and(|s| matches!(s.borrow_dependent().walk, Walk::Fwd(_)))
    }

    fn pull(&mut self) -> Result<()> {
        match &mut self.snap {
            Some(s) => s.with_dependent_mut(|_, pos| {
                pos.cur = step(&mut pos.walk)?;
                Ok(())
            }),
            None => Ok(()),
        }
    }
}

impl Cursor for LmdbCursor {
    fn seek_to_first(&mut self) -> Result<()> {
        self.restart(Want::Fwd(Bound::Unbounded))
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.restart(Want::Rev(Bound::Unbounded))
    }
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.restart(Want::Fwd(Bound::Included(key)))
    }
    fn valid(&self) -> bool {
        self.cur().is_some()
    }
    fn key(&self) -> &[u8] {
        self.cur().map_or(&[], |c| c.0)
    }
    fn value(&self) -> &[u8] {
        self.cur().map_or(&[], |c| c.1)
    }
    fn next(&mut self) -> Result<()> {
        if self.forward() {
            return self.pull();
        }
        match self.cur().map(|(k, _)| k.to_vec()) {
            Some(k) => self.restart(Want::Fwd(Bound::Excluded(&k))),
            None => Ok(()),
        }
    }
    fn prev(&mut self) -> Result<()> {
        if !self.forward() {
            return self.pull();
        }
        match self.cur().map(|(k, _)| k.to_vec()) {
            Some(k) => self.restart(Want::Rev(Bound::Excluded(&k))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lmdb_matches_a_btreemap_and_survives_reopen() {
        super::super::conformance::check("lmdb");
    }

    #[test]
    fn lmdb_version_is_the_locked_one() {
        super::super::conformance::check_locked_version("heed", HEED_VERSION);
    }

    #[test]
    fn lmdb_map_size_default_and_flag() {
        let f = Flags::parse_from_args(["x", "--num=1000"]).unwrap();
        assert_eq!(map_size(&f).unwrap(), 4 << 30, "at least 4 GiB");
        let f = Flags::parse_from_args(["x", "--num=100000000", "--value_size=1000"]).unwrap();
        let got = map_size(&f).unwrap() as u64;
        let want = 100_000_000 * (16 + 1000) * 4;
        assert!(
            got >= want && got < want + (1 << 20) && got.is_multiple_of(1 << 20),
            "{got}"
        );
        let f = Flags::parse_from_args(["x", "--lmdb_map_size=1000"]).unwrap();
        assert_eq!(map_size(&f).unwrap(), 1 << 20, "rounded up to a whole MiB");
    }

    #[test]
    fn lmdb_map_full_names_the_flag() {
        let f = Flags::parse_from_args(["x", "--engine=lmdb", "--lmdb_map_size=1048576"]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let opened = open(&f, &dir.path().join("db")).unwrap();
        let value = vec![7u8; 4000];
        let err = (0..1000u32)
            .find_map(|i| {
                let k = i.to_be_bytes();
                opened
                    .engine
                    .write(&[(&k, &value)], WriteOpts::default())
                    .err()
            })
            .expect("a 1 MiB map fills up");
        assert!(format!("{err:#}").contains("--lmdb_map_size"), "{err:#}");
        opened.engine.close().unwrap();
    }
}
