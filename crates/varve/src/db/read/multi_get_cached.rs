//! The in-memory pass of `multi_get`: answers, without IO, every key whose
//! table lookup ends in a block that is already in the block cache, and
//! leaves the rest (a block to read, a table to open, anything unusual) to
//! the ordinary per-key lookup (`read::get_from_version`).
//!
//! It runs in stages over the whole batch instead of key after key, so that
//! the memory loads of different keys are independent and the CPU overlaps
//! their cache misses: (1) per key, the next table whose bloom filter and
//! index search (`Table::point_plan`) name a block; (2) one batched block
//! cache lookup (`BlockCache::get_many`, one lock per shard); (3) per key,
//! the seek in its cached block: an entry of the key itself answers it (a
//! value, or `None` for a tombstone), another key's entry sends the key to
//! the next round at the next table, exactly as `get_from_version` moves
//! on; an entry older than the key's floor (a range tombstone over it, or
//! `Options::ttl`) answers it as deleted, as in `get`. Every table skipped is one `get` skips too (newer than the read, or
//! ruled out by its filter or index), so the answers are `get`'s. Anything
//! else (a block not cached, a table not open, an entry past the block's
//! end) goes to the per-key lookup, which starts over, so its results
//! (errors included) are the same as `get`'s too; a key whose block only
//! has to be read goes with its plan (`Plan`), and the lookup starts at
//! that table and block, as `get` would after the same skips.
//!
//! Single-threaded per call; shares the caches with every other reader.

use std::collections::HashMap;
use std::sync::Arc;

use crate::db::DbInner;
use crate::error::Result;
use crate::keys::{MAX_SEQUENCE, SequenceNumber, ValueKind, lookup_key};
use crate::sst::{BlockHandle, PointPlan, Table};
use crate::version::Version;

/// One key's result.
type Lookup = Result<Option<Vec<u8>>>;

/// What the in-memory pass learnt about a key it could not answer: the
/// `files_for_get` position of the table it planned, that table, and the
/// data block to read (not in the cache), so the per-key lookup starts
/// there instead of planning again.
pub(crate) type Plan = (usize, Arc<Table>, BlockHandle);

/// Resolves what it can of `misses` (indices into `keys`) from memory into
/// `results`; returns the keys left for the per-key lookup, in order, each
/// with its plan when the only thing missing was its block.
pub(crate) fn resolve_cached<K: AsRef<[u8]>>(
    db: &DbInner,
    version: &Version,
    (keys, floors): (&[K], &[SequenceNumber]),
    seq: SequenceNumber,
    misses: &[usize],
    results: &mut [Lookup],
) -> Vec<(usize, Option<Plan>)> {
    let Some(cache) = &db.block_cache else {
        return misses.iter().map(|&i| (i, None)).collect();
    };
    let mut slow = Vec::new();
    let mut tables: HashMap<u64, Option<Arc<Table>>> = HashMap::new();
    // `(key index, files of files_for_get already searched)`; a round
    // searches every pending key's next table that may hold it.
    let mut pending: Vec<(usize, usize)> = misses.iter().map(|&i| (i, 0)).collect();
    while !pending.is_empty() {
        // Stage 1: the block each key's lookup would read next.
        let mut planned: Vec<(usize, usize, Arc<Table>, BlockHandle)> =
            Vec::with_capacity(pending.len());
        'keys: for (i, skip) in pending.drain(..) {
            let key = keys[i].as_ref();
            for (pos, (_level, file)) in version.files_for_get(key).enumerate().skip(skip) {
                if file.smallest_seq > seq {
                    continue;
                }
                let table = tables
                    .entry(file.number)
                    .or_insert_with(|| db.table_cache.get_open(file.number));
                let Some(table) = table else {
                    slow.push((i, None));
                    continue 'keys;
                };
                match table.point_plan(key) {
                    PointPlan::Absent => {}
                    PointPlan::Block(h) => {
                        match table.cache() {
                            Some((c, _)) if Arc::ptr_eq(c, cache) => {
                                planned.push((i, pos, Arc::clone(table), h));
                            }
                            _ => slow.push((i, None)),
                        }
                        continue 'keys;
                    }
                    PointPlan::Unknown => {
                        slow.push((i, None));
                        continue 'keys;
                    }
                }
            }
            results[i] = Ok(None); // no further table can hold the key
        }
        // Stage 2: one cache lookup for the whole round.
        let cache_keys: Vec<(u64, u64)> = planned
            .iter()
            .map(|(_, _, t, h)| (t.cache().map_or(0, |(_, id)| id), h.offset))
            .collect();
        let blocks = cache.get_many(&cache_keys);
        // Stage 3: the seeks in the cached blocks.
        for ((i, pos, table, handle), block) in planned.into_iter().zip(blocks) {
            let Some(block) = block else {
                slow.push((i, Some((pos, table, handle))));
                continue;
            };
            let key = keys[i].as_ref();
            let target = lookup_key(key, seq.min(MAX_SEQUENCE));
            match table.lookup_in_block(&block, handle, &target, key) {
                // Older than the key's floor: deleted (range tombstone, TTL).
                Ok(Some(Some((_, _, found)))) if found < floors[i] => results[i] = Ok(None),
                Ok(Some(Some((ValueKind::Value, v, _)))) => results[i] = Ok(Some(v)),
                Ok(Some(Some((ValueKind::Deletion, _, _)))) => results[i] = Ok(None),
                // Another key's entry: `get` moves on to the next table.
                Ok(Some(None)) => pending.push((i, pos + 1)),
                _ => slow.push((i, None)),
            }
        }
    }
    slow.sort_unstable_by_key(|s| s.0);
    slow
}
