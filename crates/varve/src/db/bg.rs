//! Background work: one thread flushes immutable memtables to L0, one runs
//! compactions. Both install their results through the manifest and then
//! delete the files their edit retired. A third, short-lived thread opens
//! the live tables once after open (`Options::warm_table_cache`).
//!
//! Coordination: `state` (a mutex) with `work` (wakes the threads) and
//! `progress` (wakes writers stalled on memtables or L0, and `flush()` /
//! `compact_range` callers). Only one compaction runs at a time
//! (`compaction_lock`), whether background or manual. An error in a flush or
//! compaction poisons the database (writes fail, reads go on) and both
//! threads idle until it is lifted; a full disk (ENOSPC) is lifted by
//! `Db::resume`, after which they pick up where they stopped. A failed
//! flush or compaction removes the tables it was writing and installs
//! nothing, so it damages nothing; a failed manifest write leaves the
//! tables it named on disk (the edit may be durable) until a restarted
//! manifest or a reopen decides.
//! Lock order: `versions` before `state` (the super-version lock).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::DbInner;
use super::memtables::SuperVersion;
use super::stats::Counters;
use crate::blob::lane::LaneOptions;
use crate::compaction::blob_gc::{self, BlobFlow, GcPolicy, RelocateConfig};
use crate::compaction::filter::VersionFilter;
use crate::compaction::flush::build_table;
use crate::compaction::job::{self, JobContext};
use crate::compaction::picker::{self, CompactionPlan};
use crate::error::Result;
use crate::version::VersionEdit;

#[derive(Debug, Default)]
pub(crate) struct BgState {
    pub shutting_down: bool,
}

/// Threads and the conditions they wait on.
#[derive(Default)]
pub(crate) struct Background {
    pub state: Mutex<BgState>,
    pub work: Condvar,
    pub progress: Condvar,
    pub compaction_lock: Mutex<()>,
    pub being_compacted: Mutex<HashSet<u64>>,
    /// The last compaction was one for blob garbage (under garbage
    /// pressure the two kinds take turns).
    pub last_was_gc: std::sync::atomic::AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Background {
    /// Wakes the background threads.
    pub(crate) fn kick(&self) {
        let _g = self.state.lock();
        self.work.notify_all();
    }

    /// Wakes everyone waiting for background progress.
    pub(crate) fn progressed(&self) {
        let _g = self.state.lock();
        self.progress.notify_all();
    }

    /// Waits (at most `timeout`) for background progress.
    pub(crate) fn wait_progress(&self, timeout: Duration) {
        let mut g = self.state.lock();
        if !g.shutting_down {
            self.progress.wait_for(&mut g, timeout);
        }
    }
}

/// Starts the flush and compaction threads.
pub(crate) fn start(db: &Arc<DbInner>) -> Result<()> {
    let mut threads = db.bg.threads.lock();
    let warm = db
        .options
        .warm_table_cache
        .then_some(("varve-warm", warm_tables as fn(&DbInner)));
    for (name, body) in [
        ("varve-flush", flush_loop as fn(&DbInner)),
        ("varve-compact", compaction_loop),
    ]
    .into_iter()
    .chain(warm)
    {
        let worker = Arc::clone(db);
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(&worker))
            .map_err(|e| crate::error::Error::io(&db.dir, e))?;
        threads.push(handle);
    }
    Ok(())
}

/// Stops the threads (a running job finishes first) and joins them.
pub(crate) fn stop(db: &DbInner) {
    {
        let mut g = db.bg.state.lock();
        g.shutting_down = true;
        db.bg.work.notify_all();
        db.bg.progress.notify_all();
    }
    let threads = std::mem::take(&mut *db.bg.threads.lock());
    for t in threads {
        let _ = t.join();
    }
}

fn shutting_down(db: &DbInner) -> bool {
    db.bg.state.lock().shutting_down
}

/// Tables opened at once while warming the table cache: their index and
/// filter reads go to the disk together (fibers on io_uring).
const WARM_DEPTH: usize = 8;

/// Opens the tables of the current version, newest levels first, at most
/// as many as the table cache holds, [`WARM_DEPTH`] at a time; opens no
/// more once shutdown begins. The version is held meanwhile, so none of
/// its files is deleted under it. Errors are ignored: a read that needs
/// the table opens it again and reports them.
fn warm_tables(db: &DbInner) {
    let version = Arc::clone(&db.super_version().version);
    let files: Vec<_> = (0..crate::version::NUM_LEVELS)
        .flat_map(|level| version.files(level).iter().cloned())
        .take(db.options.max_open_files)
        .collect();
    let open = |i: usize| {
        if let Some(file) = files.get(i)
            && !shutting_down(db)
        {
            let _ = db.table_cache.get(file);
        }
    };
    crate::io::fiber::run_tasks_on(db.options.io_engine, files.len(), WARM_DEPTH, &open);
}

fn flush_loop(db: &DbInner) {
    loop {
        {
            let mut g = db.bg.state.lock();
            while !g.shutting_down && (db.super_version().imms.is_empty() || db.is_poisoned()) {
                db.bg.work.wait_for(&mut g, Duration::from_millis(500));
            }
            if g.shutting_down {
                return;
            }
        }
        if let Err(e) = flush_oldest(db) {
            db.poison_err("flush failed", &e);
        }
        db.bg.progressed();
        db.bg.kick();
    }
}

/// Flushes the oldest immutable memtable into an L0 table and installs it.
pub(crate) fn flush_oldest(db: &DbInner) -> Result<()> {
    let sv = db.super_version();
    let Some(oldest) = sv.imms.last().cloned() else {
        return Ok(());
    };
    let number = db.versions.lock().new_file_number();
    db.pending_outputs.lock().insert(number);
    let mut flow = BlobFlow::default();
    let built = build_table(
        db.fs.as_ref(),
        &db.dir,
        number,
        &mut oldest.table.iter(),
        VersionFilter::new(db.snapshots.sequences())
            .with_range_tombstones(oldest.table.range_tombstones())
            .with_expiry_floor(super::ttl::floor(db)),
        db.table_options(),
        db.options.use_direct_io_for_flush_and_compaction,
        &mut flow,
    );
    // The table's pointers must not outlive the values they name: once
    // the edit retires the WAL, nothing else holds those writes, so the
    // lanes' files are made durable first (a flush makes every write it
    // holds durable, `sync` or not).
    let built = built.and_then(|meta| {
        if let Some(lanes) = &db.blob_lanes {
            lanes.sync()?;
        }
        Ok(meta)
    });
    let result = built.and_then(|meta| {
        // A sample now covers every entry of the memtable (`db/ttl.rs`).
        super::ttl::sample(db);
        let mut edit = VersionEdit {
            blob_garbage: flow.garbage(),
            time_samples: super::ttl::take_pending(db),
            // The memtable's range deletions now live in the version.
            range_tombstones: oldest
                .table
                .range_tombstones()
                .map(|r| r.tombstones().to_vec())
                .unwrap_or_default(),
            ..VersionEdit::default()
        };
        Counters::add(
            &db.counters.blob_garbage_found,
            edit.blob_garbage.iter().map(|g| g.2).sum(),
        );
        let bytes = meta.as_ref().map(|m| m.file_size).unwrap_or(0);
        if let Some(m) = meta {
            edit.add_file(0, m);
        }
        let mut vs = db.versions.lock();
        vs.set_last_sequence(db.last_sequence.load(Ordering::Acquire));
        // The WAL after the flushed memtable's is the oldest one still needed.
        let current = db.super_version();
        let idx = current
            .imms
            .iter()
            .position(|m| Arc::ptr_eq(&m.table, &oldest.table));
        let next_wal = match idx {
            Some(0) | None => current.mem.wal,
            Some(i) => current.imms[i - 1].wal,
        };
        edit.log_number = Some(next_wal.max(vs.log_number()));
        vs.log_and_apply(edit)?;
        db.install(&vs, |sv| SuperVersion {
            mem: sv.mem.clone(),
            imms: sv
                .imms
                .iter()
                .filter(|m| !Arc::ptr_eq(&m.table, &oldest.table))
                .cloned()
                .collect(),
            version: vs.current(),
        });
        drop(vs);
        Counters::add(&db.counters.flushes, 1);
        Counters::add(&db.counters.flush_bytes, bytes);
        db.info_log.log(format!(
            "flushed memtable (WAL {}) to table {number}: {bytes} bytes",
            oldest.wal
        ));
        Ok(())
    });
    db.pending_outputs.lock().remove(&number);
    result?;
    // This flush's own super version must not keep what it retired.
    drop(sv);
    drop(oldest);
    super::obsolete::delete_obsolete_files(db);
    Ok(())
}

fn compaction_loop(db: &DbInner) {
    loop {
        if shutting_down(db) {
            return;
        }
        let ran = if db.is_poisoned() {
            Ok(false)
        } else {
            run_one_compaction(db)
        };
        match ran {
            Ok(true) => {
                db.bg.progressed();
                continue;
            }
            Ok(false) => super::obsolete::retry_if_kept(db),
            Err(e) => db.poison_err("compaction failed", &e),
        }
        let mut g = db.bg.state.lock();
        if g.shutting_down {
            return;
        }
        db.bg.work.wait_for(&mut g, Duration::from_millis(500));
    }
}

/// Live bytes one compaction relocates at most, in blob files' worth
/// (`blob_gc::relocation_set`).
const RELOCATION_BUDGET_FILES: u64 = 2;

/// The blob garbage-collection thresholds of the options.
pub(crate) fn gc_policy(db: &DbInner) -> GcPolicy {
    GcPolicy {
        ratio: db.options.blob_garbage_collection_ratio,
        force_threshold: db.options.blob_garbage_collection_force_threshold,
    }
}

/// How blob garbage collection takes part in picking (`None`: it is off).
pub(crate) fn blob_gc_pick(db: &DbInner, gc_turn: bool) -> Option<picker::BlobGcPick> {
    db.options
        .enable_blob_garbage_collection
        .then(|| picker::BlobGcPick {
            policy: gc_policy(db),
            gc_turn,
        })
}

/// Picks and runs one compaction if a level is due. Returns whether it ran.
pub(crate) fn run_one_compaction(db: &DbInner) -> Result<bool> {
    let _only_one = db.bg.compaction_lock.lock();
    if drop_expired_tables(db)? {
        return Ok(true);
    }
    let plan = {
        let vs = db.versions.lock();
        let busy = db.bg.being_compacted.lock().clone();
        let gc = blob_gc_pick(db, !db.bg.last_was_gc.load(Ordering::Relaxed));
        picker::pick_next(&vs.current(), &db.level_targets(), &busy, gc, |l| {
            vs.compact_pointer(l).map(<[u8]>::to_vec)
        })
    };
    // Nothing due: tables still holding what range tombstones hide.
    let plan = plan.or_else(|| {
        let vs = db.versions.lock();
        let busy = db.bg.being_compacted.lock().clone();
        picker::pick_range_deleted_rewrite(&vs.current(), &busy, db.snapshots.oldest())
    });
    match plan {
        Some(plan) => {
            db.bg.last_was_gc.store(plan.in_place, Ordering::Relaxed);
            run_plan(db, &plan).map(|()| true)
        }
        None => Ok(false),
    }
}

/// `Options::ttl`: deletes the tables whose every entry has expired (the
/// newest is below the floor) with one version edit and no rewrite: every
/// read hides their entries, and older versions of those keys are expired
/// too. Tables that point into blob files are left to compaction, which
/// counts the garbage they leave. Returns whether it deleted any. The
/// caller holds `compaction_lock`.
fn drop_expired_tables(db: &DbInner) -> Result<bool> {
    let floor = super::ttl::floor(db);
    if floor == 0 {
        return Ok(false);
    }
    let mut vs = db.versions.lock();
    let v = vs.current();
    let busy = db.bg.being_compacted.lock().clone();
    let mut edit = VersionEdit::default();
    for level in 0..crate::version::NUM_LEVELS {
        for f in v.files(level) {
            if f.largest_seq < floor && f.oldest_blob_file == 0 && !busy.contains(&f.number) {
                edit.delete_file(level, f.number);
            }
        }
    }
    if edit.deleted_files.is_empty() {
        return Ok(false);
    }
    let n = edit.deleted_files.len();
    vs.log_and_apply(edit)?;
    db.install(&vs, |sv| SuperVersion {
        version: vs.current(),
        ..sv.clone()
    });
    drop(vs);
    Counters::add(&db.counters.ttl_tables_dropped, n as u64);
    db.info_log.log(format!(
        "ttl: deleted {n} tables whose every entry expired (below sequence {floor})"
    ));
    super::obsolete::delete_obsolete_files(db);
    Ok(true)
}

/// Runs `plan` and installs its result. The caller holds `compaction_lock`.
pub(crate) fn run_plan(db: &DbInner, plan: &CompactionPlan) -> Result<()> {
    db.bg.being_compacted.lock().extend(plan.input_numbers());
    let result = run_plan_inner(db, plan);
    let mut busy = db.bg.being_compacted.lock();
    for n in plan.input_numbers() {
        busy.remove(&n);
    }
    drop(busy);
    result?;
    super::obsolete::delete_obsolete_files(db);
    Ok(())
}

fn run_plan_inner(db: &DbInner, plan: &CompactionPlan) -> Result<()> {
    let level = plan.level;
    if plan.is_trivial_move() {
        let f = &plan.inputs[0][0];
        let mut edit = VersionEdit::default();
        edit.delete_file(level, f.number);
        edit.add_file(level + 1, (**f).clone());
        edit.compact_pointers.push((level, f.largest.clone()));
        let mut vs = db.versions.lock();
        vs.log_and_apply(edit)?;
        db.install(&vs, |sv| SuperVersion {
            version: vs.current(),
            ..sv.clone()
        });
        Counters::add(&db.counters.trivial_moves, 1);
        db.info_log.log(format!(
            "moved table {} from L{level} to L{} ({})",
            f.number,
            level + 1,
            plan.reason
        ));
        return Ok(());
    }
    let version = db.versions.lock().current();
    let relocate = if !db.options.enable_blob_garbage_collection {
        HashSet::new()
    } else if plan.relocate_all {
        blob_gc::sealed_files(&version)
    } else if plan.level == 0 {
        // L0 compactions drop the overwritten pointers, which is how
        // garbage becomes known: they never wait for relocation.
        HashSet::new()
    } else {
        blob_gc::relocation_set(
            &version,
            &gc_policy(db),
            RELOCATION_BUDGET_FILES.saturating_mul(db.options.blob_file_size),
            plan.gc_blob_file,
        )
    };
    let ctx = JobContext {
        dir: &db.dir,
        fs: db.fs.as_ref(),
        table_cache: &db.table_cache,
        version: &version,
        snapshots: db.snapshots.sequences(),
        table_options: db.table_options(),
        target_file_size: db.options.target_file_size,
        direct_writes: db.options.use_direct_io_for_flush_and_compaction,
        relocate: Some(RelocateConfig {
            dir: &db.dir,
            fs: db.fs.as_ref(),
            readers: &db.blobs,
            relocate: &relocate,
            file_size: db.options.blob_file_size,
            chunk_size: LaneOptions::default().chunk_size,
            direct: db.options.use_direct_io_for_flush_and_compaction,
            io_engine: db.options.io_engine,
        }),
        expired: super::ttl::floor(db),
        user_filter: db
            .options
            .compaction_filter
            .clone()
            .map(|f| (f, &*db.blobs)),
    };
    let outputs = Mutex::new(Vec::new());
    let new_file_number = || {
        let n = db.versions.lock().new_file_number();
        db.pending_outputs.lock().insert(n);
        outputs.lock().push(n);
        n
    };
    let ran = job::run(plan, &ctx, db.options.max_subcompactions, &new_file_number);
    let installed = ran.and_then(|(mut edit, stats)| {
        if !plan.in_place
            && let Some(last) = plan.inputs[0].iter().map(|f| &f.largest).max()
        {
            edit.compact_pointers.push((level, last.clone()));
        }
        let garbage: u64 = edit.blob_garbage.iter().map(|g| g.2).sum();
        let mut vs = db.versions.lock();
        vs.log_and_apply(edit)?;
        db.install(&vs, |sv| SuperVersion {
            version: vs.current(),
            ..sv.clone()
        });
        drop(vs);
        Counters::add(&db.counters.compactions, 1);
        Counters::add(&db.counters.subcompactions, stats.subcompactions as u64);
        Counters::add(&db.counters.compaction_bytes_read, stats.bytes_read);
        Counters::add(&db.counters.compaction_bytes_written, stats.bytes_written);
        Counters::add(&db.counters.blob_garbage_found, garbage);
        Counters::add(&db.counters.blob_gc_bytes_relocated, stats.relocated_bytes);
        Counters::add(
            &db.counters.blob_gc_files_written,
            stats.blob_outputs.len() as u64,
        );
        if plan.in_place {
            Counters::add(&db.counters.blob_gc_compactions, 1);
        }
        if !stats.blob_outputs.is_empty() || garbage > 0 {
            db.info_log.log(format!(
                "compaction blob GC: {garbage} B garbage found, {} B relocated into blob files {:?}",
                stats.relocated_bytes,
                stats.blob_outputs.iter().map(|b| b.number).collect::<Vec<_>>()
            ));
        }
        db.info_log.log(format!(
            "compacted L{level}->L{}: {} + {} files, read {} B, wrote {} B in {} files ({} sub-compactions), dropped {} entries ({})",
            plan.output_level(),
            plan.inputs[0].len(),
            plan.inputs[1].len(),
            stats.bytes_read,
            stats.bytes_written,
            stats.outputs.len(),
            stats.subcompactions,
            stats.entries_dropped,
            plan.reason
        ));
        Ok(())
    });
    let mut pending = db.pending_outputs.lock();
    for n in outputs.into_inner() {
        pending.remove(&n);
    }
    drop(pending);
    installed
}
