//! `Db::multi_get`: many point reads as of one sequence number, with IO
//! concurrency from fibers (after ToplingDB's fiber-based MultiGet).
//!
//! One sequence number and one read state (`SuperVersion`) serve the whole
//! batch, so the batch sees one consistent state. Memtable lookups run
//! inline; then the in-memory pass (`multi_get_cached`) answers, batch-wide
//! and without IO, the misses whose blocks are in the block cache (an
//! async batch first runs it over its first [`PROBE`] misses only: if most
//! of those need a block read, the batch is cold, and the rest skip the
//! pass — planning every key before the first read leaves the disk idle
//! for the whole pass; their fibers plan for themselves, in the ordinary
//! lookup, between other fibers' reads); every
//! other miss runs the same table lookup as `get`
//! (`read::get_from_version`; for a key whose block only has to be read,
//! from the table and block the pass planned, which is where `get` would
//! be after the same skips): with `async_io`, as a task of the calling
//! thread's fiber pool (`crate::io::fiber`), at most `async_queue_depth` at
//! once, so their block reads are in the kernel together; otherwise one
//! after another. Results come back in input order, one per key; an error
//! of one key's lookup is that key's result only. Called from inside a
//! fiber, the lookups run synchronously on that fiber (no nested pool).
//! Thread-safe like `get`; a panic in a lookup reaches the caller after
//! every read of the batch has completed.

use std::cell::RefCell;

use super::multi_get_cached::{Plan, resolve_cached};
use super::{get_from_version_after, read_sequence};
use crate::db::DbInner;
use crate::db::memtables::MemLookup;
use crate::db::ttl;
use crate::error::Result;
use crate::io::fiber;
use crate::keys::{MAX_SEQUENCE, SequenceNumber, ValueKind, lookup_key};
use crate::options::ReadOptions;

/// One key's result.
type Lookup = Result<Option<Vec<u8>>>;

/// Keys an async batch runs through the in-memory pass before it decides
/// whether the batch is cold (most of them need a block read).
const PROBE: usize = 8;

/// One result per key of `keys`, in order (see the module docs).
pub(crate) fn multi_get<K: AsRef<[u8]>>(
    db: &DbInner,
    id: u32,
    opts: &ReadOptions,
    keys: &[K],
) -> Vec<Lookup> {
    let seq = read_sequence(db, opts);
    let sv = match db.tree_state(id) {
        Ok(sv) => sv,
        Err(e) => return keys.iter().map(|_| Err(e.duplicate())).collect(),
    };
    let mut results: Vec<Lookup> = Vec::with_capacity(keys.len());
    let mut misses = Vec::new();
    // Each key's floor: an entry older than it is deleted (a range
    // tombstone over the key, or `Options::ttl`).
    let expired = ttl::floor_of(db, id);
    let floors: Vec<SequenceNumber> = keys
        .iter()
        .map(|k| sv.range_floor(k.as_ref(), seq).max(expired))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        results.push(match sv.get_from_memtables(key.as_ref(), seq, floors[i]) {
            MemLookup::Value(v) => Ok(Some(v)),
            // Read here, not on the fibers below: those search the tables.
            MemLookup::Pointer(p) => db.blobs.value(&p, &db.dir).map(Some),
            MemLookup::Deleted => Ok(None),
            MemLookup::Missing => {
                misses.push(i);
                Ok(None)
            }
        });
    }
    let rest = if opts.async_io && misses.len() > PROBE {
        // Probe: if most of the first keys need a block read, the batch is
        // cold, and the in-memory pass over the rest would only delay the
        // first reads (the disk idles while it plans every key); their
        // fibers plan for themselves, between other fibers' reads.
        let mut rest = resolve_cached(
            db,
            &sv.version,
            (keys, &floors),
            seq,
            &misses[..PROBE],
            &mut results,
        );
        if rest.len() * 2 > PROBE {
            rest.extend(misses[PROBE..].iter().map(|&i| (i, None)));
        } else {
            let later = resolve_cached(
                db,
                &sv.version,
                (keys, &floors),
                seq,
                &misses[PROBE..],
                &mut results,
            );
            rest.extend(later);
        }
        rest
    } else {
        resolve_cached(db, &sv.version, (keys, &floors), seq, &misses, &mut results)
    };
    let misses: Vec<usize> = rest.iter().map(|r| r.0).collect();
    let plans: Vec<Option<Plan>> = rest.into_iter().map(|r| r.1).collect();
    let lookup_planned = |t: usize| {
        let key = keys[misses[t]].as_ref();
        let floor = floors[misses[t]];
        let Some((pos, table, handle)) = &plans[t] else {
            return get_from_version_after(db, &sv.version, key, (seq, floor), 0);
        };
        // As `get` at that table: its first candidate block, then on.
        let target = lookup_key(key, seq.min(MAX_SEQUENCE));
        match table.get_in_block(*handle, &target, key)? {
            Some(Some((_, _, found))) if found < floor => Ok(None),
            Some(Some((ValueKind::Value, v, _))) => Ok(Some(v)),
            // On a fiber when async: the blob read goes out on io_uring.
            Some(Some((ValueKind::BlobIndex, p, _))) => db.blobs.value(&p, table.path()).map(Some),
            Some(Some((ValueKind::Deletion, _, _))) => Ok(None),
            Some(None) => get_from_version_after(db, &sv.version, key, (seq, floor), pos + 1),
            None => get_from_version_after(db, &sv.version, key, (seq, floor), *pos),
        }
    };
    if opts.async_io && misses.len() > 1 {
        let found: Vec<RefCell<Option<Lookup>>> =
            misses.iter().map(|_| RefCell::new(None)).collect();
        let task = |t: usize| {
            let r = lookup_planned(t);
            *found[t].borrow_mut() = Some(r);
        };
        fiber::run_tasks_on(
            db.options.io_engine,
            misses.len(),
            opts.async_queue_depth.max(1),
            &task,
        );
        for (t, cell) in found.into_iter().enumerate() {
            if let Some(r) = cell.into_inner() {
                results[misses[t]] = r;
            }
        }
    } else {
        for (t, &i) in misses.iter().enumerate() {
            results[i] = lookup_planned(t);
        }
    }
    results
}
