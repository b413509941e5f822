//! Point reads and iterator construction.
//!
//! Both pick a sequence number first (the snapshot's, or the latest
//! published one) and then the read state (memtables + version): every
//! entry at or below that sequence number is in that state (see the `Db`
//! invariant), and entries above it are invisible, so a concurrent write is
//! seen whole or not at all. A point read searches memtables newest first,
//! then L0 tables newest first, then one table per deeper level; the first
//! entry found decides. Thread-safe; never blocks writers. Iterators read
//! table data ahead (`ReadOptions::readahead_size`, one read-ahead state per
//! L0 file and per level; background prefetch once sequential with
//! `ScanPrefetch`, on the database's reader pool) and position their sources for a seek
//! concurrently on fibers (`concurrent_seeks`); point reads do neither.

pub(crate) mod anchors;
pub(crate) mod api;
pub(crate) mod db_iter;
pub(crate) mod multi_get;
pub(crate) mod multi_get_cached;
pub(crate) mod par_scan;
pub(crate) mod pass_pace;
pub(crate) mod pass_source;
pub(crate) mod scan_ahead;
pub(crate) mod shared_pass;

use std::sync::Arc;

use super::DbInner;
use super::memtables::{MemLookup, SuperVersion};
use crate::blob::readahead::BlobReadahead;
use crate::db::DbIterator;
use crate::error::Result;
use crate::internal_iter::InternalIterator;
use crate::io::IoEngine;
use crate::iter::merging::MergingIterator;
use crate::keys::{SequenceNumber, ValueKind};
use crate::options::{ReadOptions, ScanPrefetch};
use crate::version::ScanOptions;
use crate::version::{NUM_LEVELS, Version};
use shared_pass::{PassKey, Source};

/// One keyspace of a database: what the read functions read from.
#[derive(Clone, Copy)]
pub(crate) struct Tree<'a> {
    pub(crate) db: &'a Arc<DbInner>,
    /// The keyspace id (0: the default keyspace).
    pub(crate) id: u32,
}

pub(crate) fn get(
    db: &DbInner,
    id: u32,
    key: &[u8],
    opts: &ReadOptions,
) -> Result<Option<Vec<u8>>> {
    let seq = read_sequence(db, opts);
    let sv = db.tree_state(id)?;
    let floor = sv.range_floor(key, seq).max(super::ttl::floor_of(db, id));
    match sv.get_from_memtables(key, seq, floor) {
        MemLookup::Value(v) => Ok(Some(v)),
        MemLookup::Pointer(p) => db.blobs.value(&p, &db.dir).map(Some),
        MemLookup::Deleted => Ok(None),
        MemLookup::Missing => get_from_version_after(db, &sv.version, key, (seq, floor), 0),
    }
}

/// The sequence number a read sees: its snapshot's, or the latest published.
pub(crate) fn read_sequence(db: &DbInner, opts: &ReadOptions) -> SequenceNumber {
    match &opts.snapshot {
        Some(s) => s.sequence(),
        None => db.writes.visible_sequence(&db.last_sequence),
    }
}

/// The table part of a point read (after the memtables missed): L0 files
/// newest first, then one file per deeper level, as of `seq`; an entry
/// older than `floor` (the key's [`SuperVersion::range_floor`]) is deleted.
/// Without the first `skip` files of `files_for_get`: for a caller that
/// already knows none of them decides the key (`multi_get`'s in-memory
/// pass). `multi_get` runs this in fibers; no lock is held across its file
/// reads.
pub(crate) fn get_from_version_after(
    db: &DbInner,
    version: &Version,
    key: &[u8],
    (seq, floor): (SequenceNumber, SequenceNumber),
    skip: usize,
) -> Result<Option<Vec<u8>>> {
    for (_level, file) in version.files_for_get(key).skip(skip) {
        if file.smallest_seq > seq {
            continue; // every entry of the file is newer than the read
        }
        let table = db.table_cache.get(file)?;
        match table.get_entry(key, seq)? {
            Some((_, _, found)) if found < floor => return Ok(None),
            Some((ValueKind::Value, v, _)) => return Ok(Some(v)),
            Some((ValueKind::BlobIndex, p, _)) => {
                return db.blobs.value(&p, table.path()).map(Some);
            }
            Some((ValueKind::Deletion, _, _)) => return Ok(None),
            None => {}
        }
    }
    Ok(None)
}

pub(crate) fn iter(db: &Arc<DbInner>, id: u32, opts: &ReadOptions) -> DbIterator {
    let snapshot = match &opts.snapshot {
        Some(s) => s.clone(),
        None => db.snapshots.acquire(read_sequence(db, opts)),
    };
    let (sv, gone) = match db.tree_state(id) {
        Ok(sv) => (sv, None),
        // A dropped keyspace: an iterator over nothing that reports it.
        Err(e) => {
            let root = db.super_version();
            let empty = Arc::new(SuperVersion {
                mem: super::memtables::Mem {
                    table: Arc::new(crate::memtable::MemTable::new(1 << 10)),
                    wal: 0,
                },
                imms: Vec::new(),
                version: Arc::new(Version::new()),
                keyspaces: Vec::new(),
            });
            drop(root);
            (empty, Some(e))
        }
    };
    let floor = super::ttl::floor_of(db, id);
    let it = build_iter(db, &sv, snapshot.clone(), opts, floor);
    if !opts.shared_passes
        || gone.is_some()
        || opts.iterate_lower_bound.is_some()
        || opts.iterate_upper_bound.is_some()
    {
        return it.with_error(gone);
    }
    // Iterators of this state, sequence number and TTL floor see the same
    // entries: they may share one merge (`shared_pass`).
    let key = PassKey {
        tree: id,
        state: Arc::as_ptr(&sv).addr(),
        seq: snapshot.sequence(),
        floor,
    };
    let passes = Arc::clone(&db.shared_passes);
    // The values a pass's window holds: an eighth of the shared chunks
    // (which its views keep resident), at least 4 MiB (copies, without
    // shared chunks).
    let window_bytes = (db.blobs.shared_budget() as u64 / 8).max(4 << 20);
    let (db, opts) = (Arc::clone(db), opts.clone());
    let make: MakeSource = Arc::new(move || {
        let main = build_iter(&db, &sv, snapshot.clone(), &opts, floor);
        let scout = build_iter(&db, &sv, snapshot.clone(), &opts, floor);
        Box::new(pass_source::PassSource::new(main, scout)) as Box<dyn Source>
    });
    it.with_share(Share {
        key,
        passes,
        window_bytes,
        make,
    })
}

/// Makes the merge a shared pass reads from.
pub(crate) type MakeSource = Arc<dyn Fn() -> Box<dyn Source> + Send + Sync>;

/// How an iterator joins a shared pass of its state.
pub(crate) struct Share {
    pub(crate) key: PassKey,
    pub(crate) passes: Arc<shared_pass::SharedPasses>,
    /// Blob value bytes a pass's window holds.
    pub(crate) window_bytes: u64,
    pub(crate) make: MakeSource,
}

/// An iterator over `sv` as of `snapshot`, with its own merge.
fn build_iter(
    db: &Arc<DbInner>,
    sv: &Arc<SuperVersion>,
    snapshot: crate::snapshot::Snapshot,
    opts: &ReadOptions,
    floor: SequenceNumber,
) -> DbIterator {
    let merged = merged_iterator(db, sv, opts);
    // A second cursor over the same state, for `next_back`.
    let sibling: Sibling = {
        let (db, sv, opts) = (Arc::clone(db), Arc::clone(sv), opts.clone());
        Arc::new(move || merged_iterator(&db, &sv, &opts))
    };
    DbIterator::new(
        merged,
        snapshot,
        opts.iterate_lower_bound.clone(),
        opts.iterate_upper_bound.clone(),
        Arc::clone(sv),
        sibling,
        (
            Arc::clone(&db.blobs),
            BlobReadahead::new(
                opts.readahead_size,
                match opts.scan_prefetch {
                    ScanPrefetch::Off => None,
                    ScanPrefetch::Adaptive | ScanPrefetch::Always => {
                        Some(Arc::clone(&db.reader_pool))
                    }
                },
            ),
            // Blob values of short scans read in batches: read-ahead too,
            // so only where read-ahead is on.
            scan_ahead::ScanAhead::new(
                opts.readahead_size > 0,
                db.options.io_engine,
                opts.async_queue_depth,
            ),
        ),
    )
    .with_expiry_floor(floor)
}

/// Makes another merged cursor over the same memtables and version.
pub(crate) type Sibling = Arc<dyn Fn() -> Box<dyn InternalIterator> + Send + Sync>;

/// The merge of every source of `sv` (memtables, each L0 file, each
/// level), reading as `opts` says.
fn merged_iterator(
    db: &DbInner,
    sv: &SuperVersion,
    opts: &ReadOptions,
) -> Box<dyn InternalIterator> {
    let scan = ScanOptions {
        readahead_size: opts.readahead_size,
        fill_cache: opts.fill_cache,
        prefetch: match opts.scan_prefetch {
            ScanPrefetch::Off => None,
            ScanPrefetch::Adaptive | ScanPrefetch::Always => Some(Arc::clone(&db.reader_pool)),
        },
        upper_bound: opts.iterate_upper_bound.clone(),
    };
    let mut children = sv.memtable_iterators();
    for f in sv.version.files(0) {
        children.push(
            db.table_cache
                .files_iterator(std::slice::from_ref(f), &scan),
        );
    }
    for level in 1..NUM_LEVELS {
        let files = sv.version.files(level);
        if !files.is_empty() {
            children.push(db.table_cache.files_iterator(files, &scan));
        }
    }
    Box::new(MergingIterator::with_concurrent_seeks(
        children,
        opts.concurrent_seeks && db.options.io_engine == IoEngine::IoUring,
    ))
}

#[cfg(test)]
mod blob_tests;
