//! Opening and destroying a database directory.
//!
//! Open order: validate options, check the path, take `LOCK`, read the
//! manifest (or create one), replay the WALs it still needs into memtables,
//! write those to L0 tables, start a new WAL (file, header, directory
//! fsync), record tables + new log number in one manifest edit, and only
//! then delete what that edit retired (old WALs, old manifests, orphan
//! tables of a crashed flush or compaction). A crash anywhere in between
//! leaves a database that opens the same way again.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use parking_lot::{Mutex, RwLock};

use super::bg::Background;
use super::info_log::InfoLog;
use super::keyspace_state::{KeyspaceState, KeyspaceStates};
use super::lock::take_lock;
use super::memtables::{Mem, SuperVersion};
use super::recovery::OpenTimes;
use super::stats::Counters;
use super::write::{WalLog, WritePath};
use super::{DbInner, recovery, table_options};
use crate::blob::cache::BlobReaders;
use crate::blob::lane::{BlobWriteLanes, LaneOptions};
use crate::blob::lane_set::BlobLaneSet;
use crate::blob::stage::{StageOutcome, apply_stage, is_stage_file_name};
use crate::compaction::blob_gc::BlobFlow;
use crate::compaction::filter::VersionFilter;
use crate::compaction::flush::build_table;
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind, LOCK, LOST_DIR, blob_file_path, wal_path};
use crate::memtable::MemTable;
use crate::options::memory::MemoryPlan;
use crate::options::{KeyspaceOptions, Options};
use crate::snapshot::SnapshotList;
use crate::sst::{BlockCache, ReaderPool};
use crate::util::memory::MemoryGauge;
use crate::version::DEFAULT_KEYSPACE_NAME;
use crate::version::TableCache;
use crate::version::{BlobFileEdit, VersionEdit, VersionSet};
use std::time::Instant;

pub(crate) fn open(dir: &Path, options: Options) -> Result<DbInner> {
    let started = Instant::now();
    let (options, memory_plan) = options.planned()?;
    options.validate()?;
    let fs = Arc::clone(&options.fs);
    if fs.exists(dir)? {
        if !fs.is_dir(dir)? {
            return Err(Error::InvalidArgument(format!(
                "{} exists and is not a directory",
                dir.display()
            )));
        }
    } else if options.create_if_missing {
        fs.create_dir_all(dir)?;
    } else {
        return Err(Error::NotFound(dir.to_path_buf()));
    }

    let lock_path = dir.join(LOCK);
    let lock = take_lock(fs.as_ref(), dir, &lock_path)?;

    let current = crate::version::manifest::current_path(dir);
    let exists = fs.exists(&current)?;
    if exists && options.error_if_exists {
        return Err(Error::AlreadyExists(dir.to_path_buf()));
    }
    if !exists {
        check_no_database_files(fs.as_ref(), dir)?;
        if !options.create_if_missing {
            return Err(Error::NotFound(dir.to_path_buf()));
        }
    }

    if options.use_direct_reads || options.use_direct_io_for_flush_and_compaction {
        probe_direct_io(fs.as_ref(), dir)?;
    }
    let info_log = InfoLog::open(fs.as_ref(), dir);
    info_log.log(format!(
        "opening {} ({})",
        dir.display(),
        if exists { "existing" } else { "new" }
    ));
    if let Some(plan) = &memory_plan {
        info_log.log(plan.to_string());
    }
    let mut times = OpenTimes::default();
    let t = Instant::now();
    let mut versions = if exists {
        VersionSet::recover_checked(Arc::clone(&fs), dir, false)?
    } else {
        VersionSet::create(Arc::clone(&fs), dir)?
    };
    times.manifest = t.elapsed();
    if let Some(tail) = versions.recovered_tail() {
        info_log.log(format!("recovery: ignored torn manifest tail {tail:?}"));
    }
    let t = Instant::now();
    let blob_sizes = apply_staged_blob_bytes(fs.as_ref(), dir, &versions, &info_log)?;
    times.blob_staging = t.elapsed();
    let t = Instant::now();
    let recovered = recovery::recover(
        fs.as_ref(),
        dir,
        &options,
        &info_log,
        &mut versions,
        false,
        Some(&blob_sizes),
    )?;
    times.wal_replay = t.elapsed();

    let (table_cache, block_cache) = caches(dir, &options, memory_plan.as_ref());

    // Replayed memtables become L0 tables of their keyspaces, oldest
    // first, all installed by one manifest record.
    let t = Instant::now();
    // One edit per keyspace (the default keyspace's first): its
    // recovered tables, the garbage they found in its blob files, and its
    // blob files a crash left open, closed.
    let mut tree_edits: BTreeMap<u32, VersionEdit> = versions
        .trees()
        .map(|(id, _)| {
            let edit = VersionEdit {
                keyspace: id,
                ..VersionEdit::default()
            };
            (id, edit)
        })
        .collect();
    let states = keyspace_states(&options, &versions);
    for (id, mems) in &recovered.memtables {
        let mut ks_edit = VersionEdit {
            keyspace: *id,
            ..VersionEdit::default()
        };
        let mut flow = BlobFlow::default();
        let table_opts = match states.get(id) {
            Some(k) if *id != 0 => k.table_options(),
            _ => table_options(&options),
        };
        for mem in mems {
            let number = versions.new_file_number();
            let meta = build_table(
                fs.as_ref(),
                dir,
                number,
                &mut mem.iter(),
                VersionFilter::new(Vec::new()).with_range_tombstones(mem.range_tombstones()),
                table_opts.clone(),
                options.use_direct_io_for_flush_and_compaction,
                &mut flow,
            )?;
            if let Some(r) = mem.range_tombstones() {
                ks_edit
                    .range_tombstones
                    .extend(r.tombstones().iter().cloned());
            }
            if let Some(meta) = meta {
                info_log.log(format!(
                    "recovery: wrote {} entries to table {number} (keyspace {id})",
                    meta.num_entries
                ));
                ks_edit.add_file(0, meta);
            }
        }
        ks_edit.blob_garbage = flow.garbage();
        tree_edits.insert(*id, ks_edit);
    }

    times.recovery_tables = t.elapsed();
    close_crash_open_blob_files(fs.as_ref(), dir, &versions, &info_log, &mut tree_edits)?;
    // Only edits that change something go in (and the default keyspace's,
    // which carries the log number).
    let mut group: Vec<VersionEdit> = tree_edits
        .into_values()
        .filter(|e| {
            e.keyspace == 0
                || *e
                    != VersionEdit {
                        keyspace: e.keyspace,
                        ..VersionEdit::default()
                    }
        })
        .collect();

    // A new database's first WAL takes the number its manifest reserved.
    let log_number = if exists {
        versions.new_file_number()
    } else {
        versions.log_number()
    };
    // This boot, before any record of it reaches a WAL (made durable by
    // the directory sync after the new log).
    super::boot::record(fs.as_ref(), dir)?;
    let log_path = wal_path(dir, log_number);
    let mem_table = Arc::new(MemTable::new(options.write_buffer_size));
    let keyspace_mems: Vec<(u32, Arc<MemTable>)> = versions
        .keyspaces()
        .into_iter()
        .map(|(id, _)| (id, Arc::new(MemTable::new(options.write_buffer_size))))
        .collect();
    let log = WalLog::create(
        fs.as_ref(),
        &log_path,
        options.wal_writer,
        log_number,
        Arc::clone(&mem_table),
    )?
    .with_blob_budget(options.max_memtable_blob_bytes)
    .with_keyspace_mems(keyspace_mems.clone());
    fs.sync_dir(dir)?;
    group[0].log_number = Some(log_number);
    versions.set_last_sequence(recovered.last_sequence.max(versions.last_sequence()));
    versions.log_and_apply_group(group)?;
    let mut report = recovered.report;
    if let Some(tail) = versions.recovered_tail() {
        // The manifest lost its tail: files it does not name may be the
        // outputs of that lost edit. They are not needed (the checks of
        // recovery proved it), but they are kept, not deleted.
        report.lost = move_unreferenced_to_lost(fs.as_ref(), dir, &versions)?;
        info_log.log(format!(
            "recovery: moved {} unreferenced files to {}/ after the damaged manifest tail \
             at {}:{}",
            report.lost.len(),
            LOST_DIR,
            tail.file.display(),
            tail.offset
        ));
    }
    let last_sequence = versions.last_sequence();
    let mem = Mem {
        table: mem_table,
        wal: log_number,
    };
    let keyspaces = keyspace_mems
        .into_iter()
        .map(|(id, table)| {
            let mem = Mem {
                table,
                wal: log_number,
            };
            (id, mem, Vec::new())
        })
        .collect();
    let db = assemble(Assembly {
        dir,
        lock: Some(lock),
        versions,
        mem,
        imms: Vec::new(),
        keyspaces,
        last_sequence,
        log,
        info_log,
        report,
        options,
        table_cache,
        block_cache,
        read_only: false,
        memory_plan,
    });
    super::obsolete::delete_obsolete_files(&db);
    times.total = started.elapsed();
    db.info_log.log(format!(
        "opened in {}: last sequence {last_sequence}, {} records replayed, new WAL {}",
        times,
        db.recovery.records,
        log_path.display()
    ));
    let mut db = db;
    db.recovery.open_times = times;
    Ok(db)
}

/// The parts of a `DbInner` that differ between open modes.
struct Assembly<'a> {
    dir: &'a Path,
    /// `None` only for `varve check`'s unlocked view.
    lock: Option<Box<dyn crate::io::FileLock>>,
    versions: VersionSet,
    mem: Mem,
    imms: Vec<Mem>,
    /// The other keyspaces' memtables: `(id, current, immutable newest
    /// first)`, sorted by id.
    keyspaces: Vec<(u32, Mem, Vec<Mem>)>,
    last_sequence: u64,
    log: WalLog,
    info_log: InfoLog,
    report: recovery::RecoveryReport,
    options: Options,
    table_cache: Arc<TableCache>,
    block_cache: Option<Arc<BlockCache>>,
    read_only: bool,
    memory_plan: Option<MemoryPlan>,
}

/// Before the WALs are replayed: the values a crash left in the staging
/// area of each blob file still open (in the page cache after a `kill -9`)
/// go into the file. Returns what recovery's pointer check needs: every
/// listed blob file's size (sealed: as recorded; open: on disk now, 0 if
/// it was never created).
fn apply_staged_blob_bytes(
    fs: &dyn crate::io::FileSystem,
    dir: &Path,
    versions: &VersionSet,
    info_log: &InfoLog,
) -> Result<recovery::BlobSizes> {
    let (mut sizes, open) = sealed_and_open_blob_files(versions);
    if !open.is_empty() {
        // One blob file per task, a few at a time: each copies its staging
        // files in and fdatasyncs once, and with many lanes (one open file
        // each) the syncs overlap instead of queueing.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let workers = open.len().min(64);
        let mut results: Vec<(u64, Result<Vec<StageOutcome>>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    s.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(&number) = open.get(i) else {
                                return done;
                            };
                            let path = blob_file_path(dir, number);
                            done.push((number, apply_stage(fs, &path, number)));
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        results.sort_by_key(|(n, _)| *n);
        if results.len() != open.len() {
            return Err(Error::io(
                dir,
                std::io::Error::other("a thread applying staged blob bytes panicked"),
            ));
        }
        for (number, outcomes) in results {
            for outcome in outcomes? {
                match outcome {
                    StageOutcome::None => {}
                    StageOutcome::Applied { offset, bytes } => info_log.log(format!(
                        "recovery: wrote {bytes} staged bytes into blob file {number} at {offset}"
                    )),
                    StageOutcome::Written { offset, bytes } => info_log.log(format!(
                        "recovery: {bytes} staged bytes of blob file {number} at {offset} were \
                         written already"
                    )),
                    StageOutcome::Ignored(why) => info_log.log(format!(
                        "recovery: ignored a staging file of blob file {number}: {why}"
                    )),
                    StageOutcome::TornCopy(why) => info_log.log(format!(
                        "recovery: a staging file of blob file {number} had one header copy \
                         torn by the crash ({why}); used the other"
                    )),
                }
            }
        }
    }
    open_blob_sizes(fs, dir, &open, &mut sizes)?;
    Ok(sizes)
}

/// Adds to `sizes` the size on `fs` of each blob file of `open` (0 for one
/// never created), as unsealed.
fn open_blob_sizes(
    fs: &dyn crate::io::FileSystem,
    dir: &Path,
    open: &[u64],
    sizes: &mut recovery::BlobSizes,
) -> Result<()> {
    for &number in open {
        let path = blob_file_path(dir, number);
        let size = match fs.file_size(&path) {
            Ok(size) => size,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        sizes.insert(number, (size, false));
    }
    Ok(())
}

/// The blob files of `versions`: the sealed ones with their recorded sizes
/// in `sizes`, and the numbers of the ones a crash may have left open.
pub(crate) fn sealed_and_open_blob_files(versions: &VersionSet) -> (recovery::BlobSizes, Vec<u64>) {
    let mut sizes = recovery::BlobSizes::new();
    let mut open = Vec::new();
    for (_, v) in versions.trees() {
        for (&number, b) in v.blob_files() {
            if b.sealed {
                sizes.insert(number, (b.size, true));
            } else {
                open.push(number);
            }
        }
    }
    (sizes, open)
}

/// For a read-only open: the directory as a read-write open would leave it
/// once it applied the staged chunks of the blob files a crash left open
/// (`StagedOverlayFs`; nothing is written), and the blob sizes recovery's
/// pointer check needs, the same a read-write open computes.
pub(crate) fn staged_view(
    fs: &Arc<dyn crate::io::FileSystem>,
    dir: &Path,
    versions: &VersionSet,
) -> Result<(Arc<dyn crate::io::FileSystem>, recovery::BlobSizes)> {
    let (mut sizes, open) = sealed_and_open_blob_files(versions);
    let (view, _) = crate::blob::staged_fs::StagedOverlayFs::over(fs, dir, &open)?;
    let view = view.unwrap_or_else(|| Arc::clone(fs));
    open_blob_sizes(view.as_ref(), dir, &open, &mut sizes)?;
    Ok((view, sizes))
}

/// Closes the blob files a crash left open (in `edit`, which also names
/// the L0 tables the replayed memtables became): no lane appends to them
/// again, and every pointer into them is in a table now. Their staged
/// values went into them before the replay (`apply_staged_blob_bytes`);
/// each is made durable at the length it has and recorded as state 2 (its
/// last chunk may hold values without entries, so only a byte bound is
/// known). A file that was logged but never created is dropped; staging
/// files of sealed files are removed.
/// `fs.truncate` (which syncs) of a blob file a crash left open. The
/// staged bytes were already copied in and synced (`apply_stage`), but
/// direct writes the dead writer had in flight may still complete, with
/// an error the next sync reports, a few milliseconds after the process is
/// gone; they can only write the bytes that are already there. So an EIO
/// is retried a few times, with a pause; one that persists is returned.
fn truncate_after_crash(fs: &dyn crate::io::FileSystem, path: &Path, size: u64) -> Result<()> {
    let mut attempt = 0u64;
    loop {
        match fs.truncate(path, size) {
            Err(Error::Io { source, .. })
                if source.raw_os_error() == Some(libc::EIO) && attempt < 4 =>
            {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(20 * attempt));
            }
            other => return other,
        }
    }
}

fn close_crash_open_blob_files(
    fs: &dyn crate::io::FileSystem,
    dir: &Path,
    versions: &VersionSet,
    info_log: &InfoLog,
    edits: &mut BTreeMap<u32, VersionEdit>,
) -> Result<()> {
    let files = versions
        .trees()
        .flat_map(|(id, v)| v.blob_files().iter().map(move |(&n, b)| (id, n, b.sealed)))
        .collect::<Vec<_>>();
    for (id, number, sealed) in files {
        if sealed {
            continue;
        }
        let Some(edit) = edits.get_mut(&id) else {
            debug_assert!(false, "every tree has an edit");
            continue;
        };
        let size = match fs.file_size(&blob_file_path(dir, number)) {
            Ok(size) => size,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                info_log.log(format!(
                    "recovery: blob file {number} was logged but never created; dropped"
                ));
                edit.deleted_blob_files.push(number);
                continue;
            }
            Err(e) => return Err(e),
        };
        // A crash while the lane was creating it: not even its header
        // reached the file (or its staging), so no value is in it and no
        // pointer can name one (the replay ended at any that did). Kept, it
        // would be a sealed file without a header, which `varve check`
        // rightly calls damaged; it is dropped like one never created, and
        // the file goes with the obsolete files.
        if size < crate::blob::format::PAGE as u64 {
            info_log.log(format!(
                "recovery: blob file {number} was being created by a crash ({size} bytes, no \
                 header); dropped"
            ));
            edit.deleted_blob_files.push(number);
            continue;
        }
        // The tables in `edit` point into it and the WALs that also did
        // are about to be retired: its bytes must be durable first (a
        // kill -9 leaves them in the page cache only). Truncating to the
        // length it has syncs it.
        truncate_after_crash(fs, &blob_file_path(dir, number), size)?;
        info_log.log(format!(
            "recovery: closed blob file {number} left open by a crash ({size} bytes)"
        ));
        edit.blob_files
            .push(BlobFileEdit::crash_closed(number, size));
    }
    // A staging file left behind by a crash after its file was sealed.
    for name in fs.list_dir(dir)? {
        if is_stage_file_name(&name) {
            info_log.log(format!(
                "recovery: removed {name}, left by a sealed blob file"
            ));
            fs.remove_file(&dir.join(&name))?;
        }
    }
    Ok(())
}

/// The in-memory state of every keyspace the version set has, with the
/// database's settings until `Db::keyspace` gives its own.
fn keyspace_states(options: &Options, versions: &VersionSet) -> KeyspaceStates {
    std::iter::once((0, DEFAULT_KEYSPACE_NAME.to_string()))
        .chain(versions.keyspaces())
        .map(|(id, name)| {
            // Until `Db::keyspace` gives a keyspace its options, it runs
            // with the database's table and level settings, but never with
            // the default keyspace's TTL or filter: those only remove data,
            // and must not remove another keyspace's.
            let mut o = KeyspaceOptions::from(options);
            if id != 0 {
                o.ttl = None;
                o.compaction_filter = None;
            }
            (id, Arc::new(KeyspaceState::new(id, name, o)))
        })
        .collect()
}

/// Write lanes for a keyspace whose values of at least `min` bytes go to
/// blob files in `dir`, sized by the database's options; with a memory
/// budget their staging slots come from `room`, its blob-staging part.
pub(crate) fn blob_lanes(
    options: &Options,
    dir: &Path,
    min: usize,
    room: Option<&Arc<MemoryGauge>>,
) -> BlobWriteLanes {
    BlobWriteLanes::with_room(
        &options.fs,
        dir,
        options.blob_write_lanes,
        min,
        LaneOptions {
            file_size: options.blob_file_size,
            by_key: options.blob_lanes_by_key,
            ..LaneOptions::default()
        },
        room.cloned(),
    )
}

fn assemble(a: Assembly<'_>) -> DbInner {
    // With a budget, every keyspace's lanes share its blob-staging part.
    let room = a.memory_plan.map(|p| MemoryGauge::new(p.blob_staging));
    let blob_lanes = Arc::new(BlobLaneSet::with_room(
        match a.options.min_blob_size {
            Some(min) if !a.read_only => {
                Some(Arc::new(blob_lanes(&a.options, a.dir, min, room.as_ref())))
            }
            _ => None,
        },
        room.clone(),
    ));
    let version = a.versions.current();
    let keyspace_trees: Vec<(u32, Arc<SuperVersion>)> = a
        .keyspaces
        .into_iter()
        .map(|(id, mem, imms)| {
            let version = a
                .versions
                .current_of(id)
                .unwrap_or_else(|| Arc::new(crate::version::Version::new()));
            let sv = SuperVersion {
                mem,
                imms,
                version,
                keyspaces: Vec::new(),
            };
            (id, Arc::new(sv))
        })
        .collect();
    let live_versions = a.versions.trees().map(|(_, v)| Arc::downgrade(v)).collect();
    let reader_pool = a
        .options
        .reader_pool
        .clone()
        .unwrap_or_else(|| ReaderPool::with_engine(0, a.options.io_engine));
    let sv = SuperVersion {
        mem: a.mem,
        imms: a.imms,
        version: Arc::clone(&version),
        keyspaces: keyspace_trees,
    };
    let shared_passes = Arc::new(super::read::shared_pass::SharedPasses::new(
        a.table_cache.readahead_gauge().cloned(),
    ));
    DbInner {
        dir: a.dir.to_path_buf(),
        fs: Arc::clone(&a.options.fs),
        lock: Mutex::new(a.lock),
        write_pressure: AtomicU64::new(super::inner::write_pressure(&sv)),
        state: RwLock::new(Arc::new(sv)),
        keyspaces: RwLock::new(keyspace_states(&a.options, &a.versions)),
        versions: Mutex::new(a.versions),
        live_versions: Mutex::new(live_versions),
        pending_outputs: Mutex::new(HashSet::new()),
        table_cache: a.table_cache,
        blobs: Arc::new(
            BlobReaders::new(
                Arc::clone(&a.options.fs),
                a.dir,
                a.options.use_direct_reads,
                Arc::clone(&blob_lanes),
            )
            .with_shared_chunks(a.options.shared_scan_bytes, Some(Arc::clone(&reader_pool))),
        ),
        blob_lanes,
        block_cache: a.block_cache,
        reader_pool,
        bg: Background::default(),
        counters: Counters::default(),
        last_sequence: AtomicU64::new(a.last_sequence),
        snapshots: Arc::new(SnapshotList::default()),
        writes: WritePath::new(a.log, a.last_sequence),
        poisoned: Mutex::new(None),
        is_poisoned: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        read_only: a.read_only,
        info_log: a.info_log,
        recovery: a.report,
        deletions_paused: std::sync::atomic::AtomicUsize::new(0),
        obsolete_kept: std::sync::atomic::AtomicBool::new(false),
        ttl_floor: AtomicU64::new(0),
        shared_passes,
        time_samples: Default::default(),
        options: a.options,
        memory_plan: a.memory_plan,
    }
}

fn caches(
    dir: &Path,
    options: &Options,
    plan: Option<&MemoryPlan>,
) -> (Arc<TableCache>, Option<Arc<BlockCache>>) {
    let block_cache = match &options.block_cache {
        Some(shared) => Some(Arc::clone(shared)),
        None => (options.cache_size > 0).then(|| BlockCache::new(options.cache_size)),
    };
    let mut table_cache = TableCache::new(
        dir.to_path_buf(),
        Arc::clone(&options.fs),
        block_cache.clone(),
        options.max_open_files,
        options.use_direct_reads,
        options.pinned_blob_tables_size,
    );
    if let Some(plan) = plan {
        table_cache = table_cache.with_memory_budget(plan.table_metadata, plan.readahead);
    }
    (Arc::new(table_cache), block_cache)
}

/// What a read-only open recovers, before it builds the database: the
/// version set, the directory's view with the staged chunks of crash-open
/// blob files in place, and the replayed WALs.
pub(crate) struct ReadOnlyState {
    pub versions: VersionSet,
    pub view: Arc<dyn crate::io::FileSystem>,
    pub recovered: recovery::Recovered,
}

/// Recovers `dir` as a read-write open would, writing nothing and taking
/// no lock: the manifest replayed and checked against the directory
/// (`VersionSet::recover_checked`), the blob files a crash left open read
/// with their staged chunks in place (`StagedOverlayFs`), the WALs replayed
/// with the same pointer check (a record pointing past an open blob file's
/// end ends the replay). `Db::open_read_only` builds on it, and `varve
/// check` takes its verdict from it, so both refuse exactly what a
/// read-write open refuses.
pub(crate) fn recover_read_only_state(
    fs: &Arc<dyn crate::io::FileSystem>,
    dir: &Path,
    options: &Options,
    info_log: &InfoLog,
) -> Result<ReadOnlyState> {
    let mut versions = VersionSet::recover_checked(Arc::clone(fs), dir, true)?;
    let (view, sizes) = staged_view(fs, dir, &versions)?;
    let recovered = recovery::recover(
        view.as_ref(),
        dir,
        options,
        info_log,
        &mut versions,
        true,
        Some(&sizes),
    )?;
    Ok(ReadOnlyState {
        versions,
        view,
        recovered,
    })
}

/// Opens an existing database without writing anything (see
/// `Db::open_read_only`): replayed WAL data stays in memtables, and the
/// values a crash left staged are read from the staging files.
pub(crate) fn open_read_only(dir: &Path, options: Options) -> Result<DbInner> {
    open_read_only_locked(dir, options, true)
}

/// `open_read_only`, taking `LOCK` or (for `varve check`, which must run
/// beside a process that has the database open, and reads through the
/// result only to tell whether a read fails) not.
pub(crate) fn open_read_only_locked(dir: &Path, options: Options, lock: bool) -> Result<DbInner> {
    let (mut options, memory_plan) = options.planned()?;
    options.validate()?;
    let fs = Arc::clone(&options.fs);
    if !fs.is_dir(dir)? {
        return Err(Error::NotFound(dir.to_path_buf()));
    }
    if !fs.exists(&crate::version::manifest::current_path(dir))? {
        check_no_database_files(fs.as_ref(), dir)?;
        return Err(Error::NotFound(dir.to_path_buf()));
    }
    let lock_path = dir.join(LOCK);
    let lock = if lock {
        Some(take_lock(fs.as_ref(), dir, &lock_path)?)
    } else {
        None
    };
    let info_log = InfoLog::disabled();
    let started = Instant::now();
    let mut times = OpenTimes::default();
    let ReadOnlyState {
        versions,
        view,
        recovered,
    } = recover_read_only_state(&fs, dir, &options, &info_log)?;
    times.manifest = started.elapsed();
    let t = Instant::now();
    options.fs = view;
    let last_sequence = recovered.last_sequence.max(versions.last_sequence());
    // Each keyspace's replayed memtables, newest first; the newest is the
    // mutable one (no write ever reaches it).
    let trees_of = |id: u32| -> (Mem, Vec<Mem>) {
        let mut tables: Vec<Mem> = recovered
            .memtables
            .iter()
            .find(|(k, _)| *k == id)
            .map(|(_, mems)| mems.as_slice())
            .unwrap_or_default()
            .iter()
            .rev()
            .map(|t| Mem {
                table: Arc::clone(t),
                wal: 0,
            })
            .collect();
        let mem = if tables.is_empty() {
            Mem {
                table: Arc::new(MemTable::new(64 << 10)),
                wal: 0,
            }
        } else {
            tables.remove(0)
        };
        (mem, tables)
    };
    let (mem, tables) = trees_of(0);
    let keyspaces: Vec<(u32, Mem, Vec<Mem>)> = versions
        .keyspaces()
        .into_iter()
        .map(|(id, _)| {
            let (m, imms) = trees_of(id);
            (id, m, imms)
        })
        .collect();
    let log = WalLog::discard(dir, Arc::clone(&mem.table))?;
    let (table_cache, block_cache) = caches(dir, &options, memory_plan.as_ref());
    times.wal_replay = t.elapsed();
    let mut db = assemble(Assembly {
        dir,
        lock,
        versions,
        mem,
        imms: tables,
        keyspaces,
        last_sequence,
        log,
        info_log,
        report: recovered.report,
        options,
        table_cache,
        block_cache,
        read_only: true,
        memory_plan,
    });
    times.total = started.elapsed();
    db.recovery.open_times = times;
    Ok(db)
}

/// For a directory without `CURRENT`: `Corruption` naming `CURRENT` if it
/// holds data files (WALs, tables, blob files: a database whose `CURRENT`
/// was lost, which `repair` can rebuild), so that neither open mode treats
/// such a directory as empty. A manifest alone holds no data: it is what a
/// crash while creating a database leaves (the first manifest is written
/// before `CURRENT` names it, and the first WAL after), and the directory
/// is then a new database.
fn check_no_database_files(fs: &dyn crate::io::FileSystem, dir: &Path) -> Result<()> {
    let mut found: Vec<String> = fs
        .list_dir(dir)?
        .into_iter()
        .filter(|n| {
            matches!(
                filenames::parse(n),
                Some(FileKind::Wal(_) | FileKind::Table(_) | FileKind::Blob(_))
            )
        })
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    Err(Error::corruption(
        crate::version::manifest::current_path(dir),
        0,
        format!(
            "CURRENT is missing but the directory holds database files ({}); run `varve repair`",
            found.join(", ")
        ),
    ))
}

/// Moves every table and blob file of `dir` that the current version does
/// not reference into `lost/`; returns (name, why) for each.
fn move_unreferenced_to_lost(
    fs: &dyn crate::io::FileSystem,
    dir: &Path,
    versions: &VersionSet,
) -> Result<Vec<(String, String)>> {
    let live = versions.live_files();
    let mut moved = Vec::new();
    let lost = dir.join(LOST_DIR);
    let mut names = fs.list_dir(dir)?;
    names.sort();
    for name in names {
        let unreferenced = match filenames::parse(&name) {
            Some(FileKind::Table(n) | FileKind::Blob(n)) => !live.contains(&n),
            _ => false,
        };
        if unreferenced {
            fs.create_dir_all(&lost)?;
            fs.rename(&dir.join(&name), &lost.join(&name))?;
            moved.push((
                name,
                "not referenced by the manifest, whose tail was damaged".to_string(),
            ));
        }
    }
    if !moved.is_empty() {
        fs.sync_dir(&lost)?;
        fs.sync_dir(dir)?;
    }
    Ok(moved)
}

/// Fails with a clear error if the file system of `dir` refuses O_DIRECT.
fn probe_direct_io(fs: &dyn crate::io::FileSystem, dir: &Path) -> Result<()> {
    let probe = dir.join("DIRECT_IO_PROBE.tmp");
    let result = (|| {
        let mut w = fs.create_writable_direct(&probe)?;
        w.append(&[0u8; crate::io::DIRECT_IO_ALIGN])?;
        w.sync_data()?;
        let r = fs.open_random_access_direct(&probe)?;
        let mut buf = [0u8; 16];
        r.read_at(&mut buf, 0).map(|_| ())
    })();
    let _ = fs.remove_file(&probe);
    result.map_err(|e| {
        Error::InvalidArgument(format!(
            "use_direct_reads / use_direct_io_for_flush_and_compaction: the file system of {} refuses O_DIRECT ({e})",
            dir.display()
        ))
    })
}

pub(crate) fn destroy(dir: &Path, options: &Options) -> Result<()> {
    let fs = &options.fs;
    if !fs.exists(dir)? {
        return Ok(());
    }
    if !fs.is_dir(dir)? {
        return Err(Error::InvalidArgument(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let lock_path = dir.join(LOCK);
    let lock = take_lock(fs.as_ref(), dir, &lock_path)?;
    for name in fs.list_dir(dir)? {
        match filenames::parse(&name) {
            None | Some(FileKind::Lock) => {}
            Some(_) => fs.remove_file(&dir.join(&name))?,
        }
    }
    fs.remove_file(&lock_path)?;
    drop(lock);
    // Foreign files keep the directory; that is not an error.
    let _ = fs.remove_dir(dir);
    Ok(())
}
