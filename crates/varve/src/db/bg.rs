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
use std::time::{Duration, Instant};

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
    /// Where the next search for a due compaction starts among the
    /// keyspaces (round robin).
    pub next_keyspace: std::sync::atomic::AtomicU64,
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
            while !g.shutting_down && (!db.super_version().has_imms() || db.is_poisoned()) {
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

/// Flushes the oldest immutable memtables (those of the oldest WAL any
/// keyspace still needs, one per keyspace that wrote to it) into L0 tables
/// of their keyspaces, installs them with one manifest record, and so
/// retires that WAL.
pub(crate) fn flush_oldest(db: &DbInner) -> Result<()> {
    let sv = db.super_version();
    let Some(wal) = sv.oldest_imm_wal() else {
        return Ok(());
    };
    // One memtable per keyspace, all from WAL `wal`, the default first.
    let units: Vec<(u32, super::memtables::Mem)> = sv
        .trees()
        .filter_map(|(id, t)| {
            t.imms
                .last()
                .filter(|m| m.wal == wal)
                .map(|m| (id, m.clone()))
        })
        .collect();
    debug_assert!(!units.is_empty(), "the oldest WAL has a memtable");
    let mut numbers = Vec::new();
    let result = flush_units(db, &units, &mut numbers);
    let mut pending = db.pending_outputs.lock();
    for n in &numbers {
        pending.remove(n);
    }
    drop(pending);
    result?;
    // This flush's own super version must not keep what it retired.
    drop(sv);
    drop(units);
    super::obsolete::delete_obsolete_files(db);
    Ok(())
}

/// Builds one table per memtable of `units` and installs them (the table
/// numbers it took go to `numbers`, for the caller to release).
fn flush_units(
    db: &DbInner,
    units: &[(u32, super::memtables::Mem)],
    numbers: &mut Vec<u64>,
) -> Result<()> {
    let wal = units[0].1.wal;
    let started = Instant::now();
    // The memtables take no more writes: the lanes' bytes so far hold
    // every value they point to.
    let marks = super::write::blobs::marks(db);
    let mut edits: Vec<VersionEdit> = Vec::with_capacity(units.len() + 1);
    let mut bytes = 0;
    for (id, mem) in units {
        let number = db.versions.lock().new_file_number();
        db.pending_outputs.lock().insert(number);
        numbers.push(number);
        // Garbage a flush finds (a value overwritten inside the memtable)
        // is in the keyspace's own blob files.
        let mut flow = BlobFlow::default();
        let meta = build_table(
            db.fs.as_ref(),
            &db.dir,
            number,
            &mut mem.table.iter(),
            VersionFilter::new(db.snapshots.sequences())
                .with_range_tombstones(mem.table.range_tombstones())
                .with_expiry_floor(super::ttl::floor_of(db, *id)),
            db.table_options_of(*id),
            db.options.use_direct_io_for_flush_and_compaction,
            &mut flow,
        )?;
        let mut edit = VersionEdit {
            keyspace: *id,
            // The memtable's range deletions now live in the version.
            range_tombstones: mem
                .table
                .range_tombstones()
                .map(|r| r.tombstones().to_vec())
                .unwrap_or_default(),
            blob_garbage: flow.garbage(),
            ..VersionEdit::default()
        };
        Counters::add(
            &db.counters.blob_garbage_found,
            edit.blob_garbage.iter().map(|g| g.2).sum(),
        );
        if let Some(m) = meta {
            bytes += m.file_size;
            edit.add_file(0, m);
        }
        edits.push(edit);
    }
    // The tables' pointers must not outlive the values they name: once
    // the edit retires the WAL, nothing else holds those writes, so the
    // lanes' bytes up to the marks are made durable first (a flush makes
    // every write it holds durable, `sync` or not). By now those bytes are
    // mostly in chunk writes already done: the lanes' writers go on.
    let built = started.elapsed();
    super::write::blobs::sync_to_marks(db, &marks)?;
    let synced = started.elapsed();
    // A lane idle since the last flush, or slow, lets its file go, so
    // that garbage collection can rewrite the tables pointing into it.
    super::write::blobs::seal_idle(db)?;
    // A sample now covers every entry of the memtables (`db/ttl.rs`).
    super::ttl::sample(db);
    // The database-wide fields go in the default keyspace's edit, first.
    if edits[0].keyspace != 0 {
        edits.insert(0, VersionEdit::default());
    }
    let mut vs = db.versions.lock();
    // Taken under the lock: edits carry samples in sequence order.
    edits[0].time_samples = super::ttl::take_pending(db);
    vs.set_last_sequence(db.last_sequence.load(Ordering::Acquire));
    // The oldest WAL still needed is the oldest one any keyspace's
    // remaining memtables came from.
    let current = db.super_version();
    let flushed = |id: u32, m: &super::memtables::Mem| {
        units
            .iter()
            .any(|(u, f)| *u == id && Arc::ptr_eq(&f.table, &m.table))
    };
    let next_wal = current
        .trees()
        .map(|(id, t)| {
            t.imms
                .iter()
                .rev()
                .find(|m| !flushed(id, m))
                .map_or(t.mem.wal, |m| m.wal)
        })
        .min()
        .unwrap_or(current.mem.wal);
    // A keyspace dropped since the flush started has nothing to install.
    edits.retain(|e| e.keyspace == 0 || vs.current_of(e.keyspace).is_some());
    edits[0].log_number = Some(next_wal.max(vs.log_number()));
    vs.log_and_apply_group(edits)?;
    db.install(&vs, |sv| {
        let mut next = sv.clone();
        for (id, _) in units {
            let Some(version) = vs.current_of(*id) else {
                continue;
            };
            next = next.map_tree(*id, |t| SuperVersion {
                mem: t.mem.clone(),
                imms: t
                    .imms
                    .iter()
                    .filter(|m| !flushed(*id, m))
                    .cloned()
                    .collect(),
                version,
                keyspaces: Vec::new(),
            });
        }
        next
    });
    drop(vs);
    Counters::add(&db.counters.flushes, 1);
    Counters::add(&db.counters.flush_bytes, bytes);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    db.info_log.log(format!(
        "flushed memtables (WAL {wal}) of {} keyspace(s) to tables {numbers:?}: {bytes} bytes \
         in {:.1} ms (tables {:.1}, blob sync {:.1}, the rest {:.1})",
        units.len(),
        ms(started.elapsed()),
        ms(built),
        ms(synced - built),
        ms(started.elapsed() - synced),
    ));
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

/// What the compaction thread would pick next in keyspace `id` (`gc_turn`:
/// blob garbage collection's turn; nothing busy when `busy` is empty).
pub(crate) fn pick_next_in(
    db: &DbInner,
    vs: &crate::version::VersionSet,
    id: u32,
    busy: &HashSet<u64>,
    gc_turn: bool,
) -> Option<CompactionPlan> {
    let v = vs.current_of(id)?;
    let targets = match db.keyspace_state(id) {
        Some(k) if id != 0 => k.level_targets(),
        _ => db.level_targets(),
    };
    picker::pick_next(&v, &targets, busy, blob_gc_pick(db, gc_turn), |l| {
        vs.compact_pointer_of(id, l).map(<[u8]>::to_vec)
    })
}

/// Picks and runs one compaction if a level of some keyspace is due,
/// keyspaces in turn. Returns whether it ran.
pub(crate) fn run_one_compaction(db: &DbInner) -> Result<bool> {
    let _only_one = db.bg.compaction_lock.lock();
    if drop_expired_tables(db)? {
        return Ok(true);
    }
    let ids: Vec<u32> = db.super_version().trees().map(|(id, _)| id).collect();
    // Start after the keyspace that compacted last, so a busy keyspace
    // does not starve the others.
    let start = db.bg.next_keyspace.load(Ordering::Relaxed) as usize % ids.len().max(1);
    let order: Vec<u32> = ids[start..].iter().chain(&ids[..start]).copied().collect();
    let mut plan = None;
    {
        let vs = db.versions.lock();
        let busy = db.bg.being_compacted.lock().clone();
        let gc_turn = !db.bg.last_was_gc.load(Ordering::Relaxed);
        for (i, &id) in order.iter().enumerate() {
            if let Some(p) = pick_next_in(db, &vs, id, &busy, gc_turn) {
                db.bg
                    .next_keyspace
                    .store(((start + i + 1) % ids.len()) as u64, Ordering::Relaxed);
                plan = Some((id, p));
                break;
            }
        }
    }
    // Nothing due: tables still holding what range tombstones hide.
    let plan = plan.or_else(|| {
        let vs = db.versions.lock();
        let busy = db.bg.being_compacted.lock().clone();
        order.iter().find_map(|&id| {
            let v = vs.current_of(id)?;
            picker::pick_range_deleted_rewrite(&v, &busy, db.snapshots.oldest()).map(|p| (id, p))
        })
    });
    match plan {
        Some((id, plan)) => {
            db.bg.last_was_gc.store(plan.in_place, Ordering::Relaxed);
            run_plan(db, id, &plan).map(|()| true)
        }
        None => Ok(false),
    }
}

/// TTL: deletes the tables whose every entry has expired (the newest is
/// below their keyspace's floor) with one version edit per keyspace and no
/// rewrite: every read hides their entries, and older versions of those
/// keys are expired too. Tables that point into blob files are left to
/// compaction, which counts the garbage they leave. Returns whether it
/// deleted any. The caller holds `compaction_lock`.
fn drop_expired_tables(db: &DbInner) -> Result<bool> {
    let ids: Vec<u32> = db.super_version().trees().map(|(id, _)| id).collect();
    let mut dropped = false;
    for id in ids {
        let floor = super::ttl::floor_of(db, id);
        if floor == 0 {
            continue;
        }
        let mut vs = db.versions.lock();
        let Some(v) = vs.current_of(id) else {
            continue;
        };
        let busy = db.bg.being_compacted.lock().clone();
        let mut edit = VersionEdit {
            keyspace: id,
            ..VersionEdit::default()
        };
        for level in 0..crate::version::NUM_LEVELS {
            for f in v.files(level) {
                if f.largest_seq < floor && f.oldest_blob_file == 0 && !busy.contains(&f.number) {
                    edit.delete_file(level, f.number);
                }
            }
        }
        if edit.deleted_files.is_empty() {
            continue;
        }
        let n = edit.deleted_files.len();
        vs.log_and_apply(edit)?;
        db.install_tree_version(&vs, id);
        drop(vs);
        Counters::add(&db.counters.ttl_tables_dropped, n as u64);
        db.info_log.log(format!(
            "ttl: deleted {n} tables of keyspace {id} whose every entry expired (below sequence \
             {floor})"
        ));
        dropped = true;
    }
    if dropped {
        super::obsolete::delete_obsolete_files(db);
    }
    Ok(dropped)
}

/// Runs `plan` (on keyspace `id`) and installs its result. The caller
/// holds `compaction_lock`.
pub(crate) fn run_plan(db: &DbInner, id: u32, plan: &CompactionPlan) -> Result<()> {
    db.bg.being_compacted.lock().extend(plan.input_numbers());
    let result = run_plan_inner(db, id, plan);
    let mut busy = db.bg.being_compacted.lock();
    for n in plan.input_numbers() {
        busy.remove(&n);
    }
    drop(busy);
    result?;
    super::obsolete::delete_obsolete_files(db);
    Ok(())
}

fn run_plan_inner(db: &DbInner, id: u32, plan: &CompactionPlan) -> Result<()> {
    let level = plan.level;
    if plan.is_trivial_move() {
        let f = &plan.inputs[0][0];
        let mut edit = VersionEdit {
            keyspace: id,
            ..VersionEdit::default()
        };
        edit.delete_file(level, f.number);
        edit.add_file(level + 1, (**f).clone());
        edit.compact_pointers.push((level, f.largest.clone()));
        let mut vs = db.versions.lock();
        vs.log_and_apply(edit)?;
        db.install_tree_version(&vs, id);
        Counters::add(&db.counters.trivial_moves, 1);
        db.info_log.log(format!(
            "moved table {} from L{level} to L{} ({})",
            f.number,
            level + 1,
            plan.reason
        ));
        return Ok(());
    }
    let Some(version) = db.versions.lock().current_of(id) else {
        return Ok(()); // the keyspace was dropped
    };
    let ks = db.keyspace_state(id).filter(|_| id != 0);
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
        table_options: db.table_options_of(id),
        target_file_size: ks.as_ref().map_or(db.options.target_file_size, |k| {
            k.options().target_file_size
        }),
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
        expired: super::ttl::floor_of(db, id),
        user_filter: match &ks {
            Some(k) => k.options().compaction_filter.clone(),
            None => db.options.compaction_filter.clone(),
        }
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
        edit.keyspace = id;
        if !plan.in_place
            && let Some(last) = plan.inputs[0].iter().map(|f| &f.largest).max()
        {
            edit.compact_pointers.push((level, last.clone()));
        }
        let garbage: u64 = edit.blob_garbage.iter().map(|g| g.2).sum();
        let mut vs = db.versions.lock();
        if vs.current_of(id).is_none() {
            return Ok(()); // dropped meanwhile: its outputs are orphans
        }
        vs.log_and_apply(edit)?;
        db.install_tree_version(&vs, id);
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
