//! Administration on [`Db`]: flush, manual compaction, waiting for the
//! background work, statistics, checkpoints, repair, `resume` after a full
//! disk, and the [`DbDebug`] view of internals for tools and tests.
//! Thread-safe, like `Db`.

use std::path::Path;

use super::debug::DbDebug;
use super::{Db, DbStats, RepairReport, bg, checkpoint, repair, resume};
use crate::compaction::picker;
use crate::error::Result;
use crate::options::Options;

impl Db {
    /// Writes every memtable to L0 table files and waits for it; afterwards
    /// every write so far is in a table and no WAL is needed to recover it.
    pub fn flush(&self) -> Result<()> {
        self.inner.writes.flush_memtable(&self.inner)
    }

    /// Makes every write that has returned so far durable, as if each had
    /// been made with `sync = true` (RocksDB's `SyncWAL`): the blob values
    /// they point to, then the WAL. For writers that write with
    /// `sync = false` and choose their own points of durability: a group
    /// commit of many writes with one fdatasync, or a Raft log that
    /// acknowledges appends once durable (`varve-raft`). Writes that return
    /// while it runs may or may not be covered.
    ///
    /// Errors: as a failed `sync` write (the database is poisoned).
    pub fn sync_wal(&self) -> Result<()> {
        self.inner.check_writable()?;
        super::write::sync_acknowledged(&self.inner)
    }

    /// Compacts every table overlapping `[begin, end]` (user keys; `None`
    /// is unbounded) down to the deepest level holding the range, after a
    /// flush. Drops deleted and overwritten entries no snapshot can see,
    /// every entry a range tombstone hides from all snapshots and every
    /// expired one (`Options::ttl`); tables of the deepest level that may
    /// hold such entries are rewritten in place, and with a compaction
    /// filter every table of the range is.
    /// With blob files (and their garbage collection on), the write lanes'
    /// open files are sealed and the last step copies every value of the
    /// range into new blob files in key order (`docs/blob-files.md`).
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.flush()?;
        compact_range_in(&self.inner, 0, begin, end)
    }

    /// Waits until no level is due for compaction (the tree is in shape) and
    /// no blob file is due for garbage collection.
    pub fn wait_for_compactions(&self) -> Result<()> {
        let db = &self.inner;
        if db.read_only {
            return Ok(()); // nothing ever changes
        }
        loop {
            db.check_writable()?;
            // Due: whatever the compaction thread would pick on either
            // turn with nothing busy (one definition, `picker::pick_next`;
            // a second, hand-written one once disagreed with it and the
            // wait never ended).
            let due = {
                let vs = db.versions.lock();
                let ids: Vec<u32> = vs.trees().map(|(id, _)| id).collect();
                let none = std::collections::HashSet::new();
                ids.into_iter()
                    .any(|id| bg::pick_next_in(db, &vs, id, &none, false).is_some())
            };
            if !due && !db.super_version().has_imms() {
                // Take the lock once so a running job has finished.
                drop(db.bg.compaction_lock.lock());
                return Ok(());
            }
            db.bg.kick();
            db.bg.wait_progress(std::time::Duration::from_millis(50));
        }
    }

    /// The engine's counters and the shape of the tree.
    pub fn stats(&self) -> DbStats {
        let db = &self.inner;
        let sv = db.super_version();
        let mut s = DbStats::from_counters(&db.counters);
        s.open_times = db.recovery.open_times;
        if let Some(c) = db.blobs.shared() {
            let r = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            s.shared_scan_budget = c.budget() as u64;
            s.shared_scan_bytes = c.used() as u64;
            s.shared_scan_loads = r(&c.counters.loads);
            s.shared_scan_hits = c.hits();
            s.shared_scan_no_room = r(&c.counters.no_room);
            s.shared_scan_reloads = r(&c.counters.reloads);
            s.shared_scan_paced = r(&c.counters.paced);
        }
        [
            s.scan_batches,
            s.scan_batch_values,
            s.scan_batch_reads,
            s.scan_batch_bytes,
            s.scan_batch_most_in_flight,
        ] = db.blobs.batches.snapshot();
        {
            let c = &db.shared_passes.counters;
            let r = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            s.shared_passes = r(&c.passes);
            s.shared_pass_joins = r(&c.joined);
            s.shared_pass_segments = r(&c.segments);
            s.shared_pass_behind = r(&c.behind);
            s.shared_pass_paced = r(&c.paced);
            s.shared_pass_refused = r(&c.refused);
            s.shared_pass_bytes = r(&c.bytes);
        }
        s.open_records_replayed = db.recovery.records;
        s.levels = DbStats::levels_of(
            &sv.version,
            &picker::level_scores(&sv.version, &db.level_targets()),
        );
        if let Some(c) = &db.block_cache {
            s.block_cache_hits = c.hits();
            s.block_cache_misses = c.misses();
            s.block_cache_usage = c.usage() as u64;
            s.block_cache_capacity = c.capacity() as u64;
        }
        s.open_tables = db.table_cache.open_tables() as u64;
        s.pinned_table_memory = db.table_cache.pinned_memory() as u64;
        let (pinned, budget) = db.table_cache.pinned_blob_tables();
        s.pinned_blob_table_bytes = pinned as u64;
        s.pinned_blob_table_budget = budget as u64;
        s.memtable_bytes = sv.memtable_usage() as u64;
        s.immutable_memtables = sv.imms.len() as u64;
        s.range_tombstones = sv.version.range_tombstones().tombstones().len() as u64;
        s.memtable_range_tombstones = std::iter::once(&sv.mem)
            .chain(&sv.imms)
            .filter_map(|m| m.table.range_tombstones())
            .map(|r| r.tombstones().len() as u64)
            .sum();
        for (_, t) in sv.trees() {
            s.add_blob_files(&t.version);
        }
        for (id, t) in sv.trees().skip(1) {
            let Some(k) = db.keyspace_state(id) else {
                continue;
            };
            s.keyspaces.push(super::stats::KeyspaceStats {
                name: k.name.clone(),
                id,
                levels: DbStats::levels_of(
                    &t.version,
                    &picker::level_scores(&t.version, &k.level_targets()),
                ),
                memtable_bytes: (t.mem.table.memory_usage()
                    + t.imms.iter().map(|m| m.table.memory_usage()).sum::<usize>())
                    as u64,
                range_tombstones: t.version.range_tombstones().tombstones().len() as u64,
                blob_files: t.version.blob_files().len() as u64,
                blob_file_bytes: t.version.blob_files().values().map(|b| b.size).sum(),
                blob_garbage_bytes: t
                    .version
                    .blob_files()
                    .values()
                    .map(|b| b.garbage_bytes)
                    .sum(),
            });
        }
        s.memory = memory_stats(db, &s);
        s
    }

    /// Writes a consistent, openable copy of this database into `target`
    /// while writers continue: tables are hard-linked (copied where links
    /// are impossible), the live WALs and a fresh manifest are copied and
    /// written, everything is fsynced. The copy holds every write
    /// acknowledged before the call (except `disable_wal` writes still in
    /// a memtable) and a sequence-order prefix of later ones.
    ///
    /// Errors: `InvalidArgument` if `target` exists and is not an empty
    /// directory (or is this database); IO errors name the file.
    pub fn checkpoint(&self, target: impl AsRef<Path>) -> Result<()> {
        checkpoint::checkpoint(&self.inner, target.as_ref())
    }

    /// Rebuilds the (closed) database in `path` from the table and WAL
    /// files present, when its manifest or `CURRENT` is lost or damaged:
    /// every good table and WAL is merged into new tables (written with
    /// `options`' table settings, through `options.fs`), and whatever fails
    /// its checksums is moved to `path/lost/` (see `docs/cli.md`).
    ///
    /// Errors: `Locked` if the database is open, `NotFound` if `path` is
    /// not a directory, IO errors naming the file.
    pub fn repair(path: impl AsRef<Path>, options: &Options) -> Result<RepairReport> {
        repair::repair(path.as_ref(), options)
    }

    /// Brings back writes after a full disk poisoned the database, once
    /// space has been freed; a no-op when the database is not poisoned.
    ///
    /// varve does not retry on its own: it cannot tell when space comes
    /// back, and retrying against a full disk would only repeat the failing
    /// IO. The application calls `resume` when it has freed space (or at
    /// intervals); until then writes fail with `Error::Poisoned`, whose
    /// message names the failure and says whether `resume` can help, and
    /// reads keep working. See `docs/errors.md`.
    ///
    /// What it does, holding the write path's locks so no write is in
    /// flight: if the manifest failed, starts a new one holding a snapshot
    /// of the current state; if the WAL failed, cuts it to the end of its
    /// last record that reached the file (every acknowledged write is
    /// there) and drops the writes that failed from the memtable; starts a
    /// fresh WAL, accepts writes again, and waits until every memtable is
    /// flushed to L0, so the old WALs are retired by a normal manifest
    /// edit. Background flushes and compactions stopped by the failure
    /// restart.
    ///
    /// Writes that failed are never visible afterwards. Between the
    /// failure and `resume`, reads may still see a write whose WAL write
    /// failed (the write path publishes a batch before its bytes reach the
    /// file); `resume` (or a reopen) removes it.
    ///
    /// Errors: `Error::Poisoned` saying "reopen" when the failure was not a
    /// full disk (an IO error such as EIO, a failed fdatasync of the WAL,
    /// whose effect on the file is unknown) — only a reopen recovers from
    /// those; the IO error (ENOSPC) if the disk is still too full for one
    /// of the steps, in which case the database stays poisoned and
    /// `resume` may be called again later; `Error::Closed` after `close`.
    pub fn resume(&self) -> Result<()> {
        resume::resume(&self.inner)
    }

    /// A view of internals (the files of each level, sequence numbers,
    /// snapshots, memtable usage, what recovery did), for tools, tests and
    /// curious operators. Nothing in it is needed to use the database.
    pub fn debug(&self) -> DbDebug<'_> {
        DbDebug::new(&self.inner)
    }
}

/// Each part's memory and limit (see [`MemoryStats`](super::MemoryStats)),
/// from the stats already gathered in `s` and the parts' own gauges.
fn memory_stats(db: &super::DbInner, s: &DbStats) -> super::MemoryStats {
    let o = &db.options;
    let plan = db.memory_plan;
    let mut m = super::MemoryStats {
        budget: plan.map_or(0, |p| p.budget) as u64,
        memtables: s.memtable_bytes,
        memtables_limit: plan.map_or(o.write_buffer_size * (o.max_immutable_memtables + 1), |p| {
            p.memtables
        }) as u64,
        block_cache: s.block_cache_usage,
        block_cache_limit: s.block_cache_capacity,
        pinned_blob_tables: s.pinned_blob_table_bytes,
        pinned_blob_tables_limit: s.pinned_blob_table_budget,
        table_metadata: s.pinned_table_memory,
        table_metadata_limit: db.table_cache.metadata_budget().unwrap_or(0) as u64,
        shared_scan: s.shared_scan_bytes,
        shared_scan_limit: s.shared_scan_budget,
        blob_staging: db.blob_lanes.staging_bytes() as u64,
        // With a budget, the plan counted the same (`LaneOptions::staging_bytes`).
        blob_staging_limit: db.blob_lanes.staging_limit() as u64,
        blob_staging_refused: db.blob_lanes.room().map_or(0, |r| r.refused()) as u64,
        reserve: plan.map_or(0, |p| p.reserve) as u64,
        ..super::MemoryStats::default()
    };
    if let Some(g) = db.table_cache.readahead_gauge() {
        m.readahead = g.used() as u64;
        m.readahead_limit = g.limit() as u64;
        m.readahead_peak = g.peak() as u64;
        m.readahead_refused = g.refused() as u64;
    }
    m
}

/// [`Db::compact_range`] on keyspace `id`, after the caller's flush.
pub(crate) fn compact_range_in(
    db: &super::DbInner,
    id: u32,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    // The lanes' open files are sealed first (the next writes open new
    // ones), so that the last step can relocate every value of the
    // range into key order, not only those in sealed files.
    if let Some(lanes) = db.blob_lanes.of(id)
        && db.options.enable_blob_garbage_collection
    {
        lanes.seal(&super::write::blobs::VersionFiles::of(db, id))?;
    }
    let _only_one = db.bg.compaction_lock.lock();
    let deepest = {
        let Some(v) = db.versions.lock().current_of(id) else {
            return Ok(());
        };
        (0..crate::version::NUM_LEVELS)
            .rev()
            .find(|&l| !v.overlapping_files(l, begin, end).is_empty())
    };
    let Some(deepest) = deepest else {
        return Ok(());
    };
    let last = deepest.max(1) - 1;
    for level in 0..=last {
        db.check_writable()?;
        let plan = {
            let vs = db.versions.lock();
            let busy = db.bg.being_compacted.lock().clone();
            vs.current_of(id)
                .and_then(|v| picker::pick_range(&v, level, begin, end, &busy))
        };
        if let Some(plan) = plan {
            bg::run_plan(db, id, &plan).inspect_err(|e| db.poison_err("compaction failed", e))?;
        }
    }
    // The range now lies in one level. Its tables are rewritten in
    // place where that drops something or a compaction filter must see
    // them: entries a range tombstone hides (they were there before
    // it; the version then drops the tombstones nothing is left to
    // hide from), entries `Options::ttl` expired, or every table when
    // there is a compaction filter (as RocksDB's bottommost rewrite
    // with a filter).
    {
        db.check_writable()?;
        let expired = super::ttl::floor_of(db, id);
        let filter = match db.keyspace_state(id) {
            Some(k) if id != 0 => k.options().compaction_filter.is_some(),
            _ => db.options.compaction_filter.is_some(),
        };
        let plan = {
            let vs = db.versions.lock();
            let Some(v) = vs.current_of(id) else {
                return Ok(());
            };
            let busy = db.bg.being_compacted.lock().clone();
            let files = v.overlapping_files(last + 1, begin, end);
            picker::pick_bottom_rewrite(&v, last + 1, files, &busy, |f| {
                filter || f.smallest_seq < expired || picker::may_hold_range_deleted(&v, f)
            })
        };
        if let Some(plan) = plan {
            bg::run_plan(db, id, &plan).inspect_err(|e| db.poison_err("compaction failed", e))?;
        }
    }
    // With blob files, one more step
    // rewrites its tables in place and copies every value they point
    // to into new blob files in key order, so a scan of the range reads
    // blob files front to back afterwards.
    if db.options.enable_blob_garbage_collection {
        db.check_writable()?;
        let plan = {
            let vs = db.versions.lock();
            let Some(v) = vs.current_of(id) else {
                return Ok(());
            };
            let busy = db.bg.being_compacted.lock().clone();
            v.blob_files()
                .values()
                .any(|b| b.sealed)
                .then(|| {
                    let files = v.overlapping_files(last + 1, begin, end);
                    picker::pick_range_relocation(&v, last + 1, files, &busy)
                })
                .flatten()
        };
        if let Some(plan) = plan {
            bg::run_plan(db, id, &plan).inspect_err(|e| db.poison_err("compaction failed", e))?;
        }
    }
    db.bg.kick();
    Ok(())
}
