//! Point reads and iterator construction.
//!
//! Both pick a sequence number first (the snapshot's, or the latest
//! published one) and then the memtable set: every entry at or below that
//! sequence number is in that set (see the `Db` invariant), and entries
//! above it are invisible, so a concurrent write is seen whole or not at all.
//! Thread-safe; never blocks writers.

use std::sync::atomic::Ordering;

use super::DbInner;
use super::memtables::MemLookup;
use crate::iter::merging::MergingIterator;
use crate::{DbIterator, ReadOptions, Result};

pub(crate) fn get(db: &DbInner, key: &[u8], opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
    let seq = match &opts.snapshot {
        Some(s) => s.sequence(),
        None => db.last_sequence.load(Ordering::Acquire),
    };
    let mems = db.current_mems();
    Ok(match mems.get(key, seq) {
        MemLookup::Value(v) => Some(v),
        MemLookup::Deleted | MemLookup::Missing => None,
    })
}

pub(crate) fn iter(db: &DbInner, opts: &ReadOptions) -> DbIterator {
    let snapshot = match &opts.snapshot {
        Some(s) => s.clone(),
        None => db
            .snapshots
            .acquire(db.last_sequence.load(Ordering::Acquire)),
    };
    let mems = db.current_mems();
    let merged = MergingIterator::new(mems.iterators());
    DbIterator::new(
        Box::new(merged),
        snapshot,
        opts.iterate_lower_bound.clone(),
        opts.iterate_upper_bound.clone(),
    )
}
