//! [`MemTable`]: the engine-facing memtable. It encodes each entry as an
//! internal key (user key + trailer, see [`crate::keys`]) and a value in one
//! skiplist node, answers point lookups at a sequence number, and provides a
//! cursor ([`MemTableIterator`]) over the entries in internal-key order.
//!
//! Thread-safety: `MemTable` is `Send + Sync`; `add` may run on many threads
//! at once while any number of `get`s and iterators read, without locks.
//! Entries are immutable once added, and the arena lives as long as the
//! memtable, so `get`, `key()` and `value()` borrow straight from the arena.
//!
//! Invariants: `memory_usage() <= capacity()`; an `add` that returns
//! [`MemTableFull`] changed nothing; an `add` of `(k, v)` consumes at most
//! `entry_charge(k.len(), v.len())` bytes.
//!
//! Hidden entries: a write that failed after its entries were added (its
//! log or its blob values could not be made durable) is taken out of view
//! with [`MemTable::hide`] before its writer sees the error. `get` and
//! every iterator made after `hide` returned skip the entries of hidden
//! sequence ranges (an iterator made before keeps the view it started
//! with); so does a flush, which iterates. [`MemTable::iter_all`] still
//! shows them, for `Db::resume`'s copy that counts what it leaves out.
//! A hidden write's range deletions leave the set `range_floor` and
//! `range_tombstones` answer from (their sequence numbers stay in
//! `range_deletion_seqs`, which resume counts).
//! Until the first `hide`, reads pay one atomic load per `get` or
//! iterator, nothing per step.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use super::arena::MemTableFull;
use super::skiplist::{self, Node, SkipList, Target};
use crate::internal_iter::InternalIterator;
use crate::keys::{self, MAX_SEQUENCE, SequenceNumber, TRAILER_LEN, ValueKind};
use crate::range_del::{RangeTombstone, RangeTombstones};

/// A sorted in-memory table of internal entries with a fixed byte capacity.
pub(crate) struct MemTable {
    list: SkipList,
    /// Range deletions written to this memtable (each added in amortized
    /// `O(log n)` under the write lock; point reads look up under the read
    /// lock).
    range_dels: RwLock<RangeDels>,
    /// A copy of `range_dels` for iterators and flushes, made on demand
    /// and dropped by the next range deletion.
    range_dels_copy: RwLock<Option<Arc<RangeTombstones>>>,
    /// Set (Release) once `range_dels` is non-empty, before the deletion's
    /// sequence number is published: a reader that sees the number sees
    /// the flag, and a reader that sees no flag skips the lock.
    has_range_dels: AtomicBool,
    /// Sequence ranges (inclusive) of failed writes that reads skip
    /// (`hide`); replaced whole, never changed in place.
    hidden: RwLock<Arc<[(SequenceNumber, SequenceNumber)]>>,
    /// Set (Release) once `hidden` is non-empty; a reader that sees no
    /// flag skips the lock.
    has_hidden: AtomicBool,
}

/// The range deletions of a memtable: what reads see, and the sequence
/// number of every range deletion ever added (empty and hidden ones too),
/// which is what `Db::resume` counts when it leaves failed writes out.
#[derive(Default)]
struct RangeDels {
    /// The visible tombstones: neither empty nor hidden.
    visible: RangeTombstones,
    /// One sequence number per `add_range_deletion`, in the order added.
    seqs: Vec<SequenceNumber>,
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("capacity", &self.capacity())
            .field("memory_usage", &self.memory_usage())
            .field("len", &self.len())
            .finish()
    }
}

impl MemTable {
    /// A memtable whose arena is one allocation of `capacity` bytes.
    ///
    /// The capacity is clamped to the range the arena supports: at least
    /// the head node (a few dozen bytes, which count as used) and at most
    /// `u32::MAX` bytes (arena offsets are `u32`).
    pub(crate) fn new(capacity: usize) -> Self {
        MemTable {
            list: SkipList::new(capacity),
            range_dels: RwLock::default(),
            range_dels_copy: RwLock::default(),
            has_range_dels: AtomicBool::new(false),
            hidden: RwLock::new(Arc::from([])),
            has_hidden: AtomicBool::new(false),
        }
    }

    /// Takes the entries with sequence numbers in `first..=last` out of
    /// view for every `get` and every iterator made after this returns
    /// (see the module docs). They keep their arena space.
    pub(crate) fn hide(&self, first: SequenceNumber, last: SequenceNumber) {
        assert!(first <= last, "hide: empty range {first}..={last}");
        let mut hidden = self.hidden.write().unwrap_or_else(PoisonError::into_inner);
        let mut ranges: Vec<_> = hidden.iter().copied().collect();
        ranges.push((first, last));
        ranges.sort_unstable();
        // Overlapping ranges merged, so `is_hidden`'s search of the one
        // range starting at or below a sequence is enough.
        let mut merged: Vec<(SequenceNumber, SequenceNumber)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match merged.last_mut() {
                Some(m) if a <= m.1.saturating_add(1) => m.1 = m.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        debug_assert!(merged.windows(2).all(|w| w[0].1 < w[1].0));
        *hidden = Arc::from(merged);
        self.has_hidden.store(true, Ordering::Release);
        drop(hidden);
        // The write's range deletions leave the set reads consult (an
        // error path: the set is rebuilt without them).
        let mut dels = self
            .range_dels
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if dels.visible.retain(|t| !(first..=last).contains(&t.seq)) {
            *self
                .range_dels_copy
                .write()
                .unwrap_or_else(PoisonError::into_inner) = None;
        }
    }

    /// The hidden ranges, sorted, if there are any.
    fn hidden(&self) -> Option<Arc<[(SequenceNumber, SequenceNumber)]>> {
        if !self.has_hidden.load(Ordering::Acquire) {
            return None;
        }
        Some(Arc::clone(
            &self.hidden.read().unwrap_or_else(PoisonError::into_inner),
        ))
    }

    /// Upper bound of the arena bytes one `add` of a `user_key_len`-byte key
    /// and a `value_len`-byte value uses (tallest node, length words,
    /// trailer, alignment padding). An `add` never uses more.
    ///
    /// The bound also covers the head node, so a fresh `MemTable::new(n)`
    /// with `n >=` the sum of the charges of some entries accepts them all
    /// (up to the `u32::MAX` capacity limit). This costs one head node
    /// (a few dozen bytes) of slack when deciding to switch memtables.
    pub(crate) fn entry_charge(user_key_len: usize, value_len: usize) -> usize {
        SkipList::node_charge(user_key_len.saturating_add(TRAILER_LEN), value_len)
            .saturating_add(SkipList::HEAD_SIZE)
    }

    /// Arena capacity in bytes.
    pub(crate) fn capacity(&self) -> usize {
        self.list.capacity()
    }

    /// Arena bytes handed out so far: the head node and every entry,
    /// alignment padding included.
    pub(crate) fn memory_usage(&self) -> usize {
        self.list.memory_usage()
    }

    /// Arena bytes still free (for `memtable/tests.rs`, which a loom
    /// build leaves out).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn remaining(&self) -> usize {
        self.capacity().saturating_sub(self.memory_usage())
    }

    /// Inserts an entry. Safe to call from many threads at once.
    ///
    /// Returns [`MemTableFull`], changing nothing, when the entry does not
    /// fit in the remaining arena. `seq` must be at most
    /// [`keys::MAX_SEQUENCE`]. Adding an internal key `(user_key, seq, kind)`
    /// that is already present (the engine never does: sequence numbers are
    /// unique) keeps both entries side by side; `get` and iteration then see
    /// either one first, and `prev` from one skips the other.
    pub(crate) fn add(
        &self,
        seq: SequenceNumber,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<(), MemTableFull> {
        let target = Target {
            user_key,
            trailer: keys::pack_trailer(seq, kind),
        };
        self.list
            .insert(target, value, skiplist::random_height(user_key))
    }

    /// Records a range deletion of `[start, end)` at `seq` (see
    /// [`crate::range_del`]). Takes no arena space; an empty range is kept
    /// out of lookups but still makes the memtable non-empty (its flush
    /// then records nothing).
    pub(crate) fn add_range_deletion(&self, seq: SequenceNumber, start: &[u8], end: &[u8]) {
        let mut dels = self
            .range_dels
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        dels.visible.insert(RangeTombstone {
            start: start.to_vec(),
            end: end.to_vec(),
            seq,
        });
        dels.seqs.push(seq);
        *self
            .range_dels_copy
            .write()
            .unwrap_or_else(PoisonError::into_inner) = None;
        self.has_range_dels.store(true, Ordering::Release);
    }

    /// The newest range deletion over `user_key` a reader at `seq` sees
    /// (0: none), as [`RangeTombstones::covering`].
    pub(crate) fn range_floor(&self, user_key: &[u8], seq: SequenceNumber) -> SequenceNumber {
        if !self.has_range_dels.load(Ordering::Acquire) {
            return 0;
        }
        self.range_dels
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .visible
            .covering(user_key, seq)
    }

    /// The sequence number of every range deletion added to this memtable,
    /// empty and hidden ones included, in the order added (for resume's
    /// count of the entries it leaves out).
    pub(crate) fn range_deletion_seqs(&self) -> Vec<SequenceNumber> {
        if !self.has_range_dels.load(Ordering::Acquire) {
            return Vec::new();
        }
        self.range_dels
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .seqs
            .clone()
    }

    /// A copy of the range deletions of this memtable, if it has any (made
    /// once per change: iterators and the flush share it).
    pub(crate) fn range_tombstones(&self) -> Option<Arc<RangeTombstones>> {
        if !self.has_range_dels.load(Ordering::Acquire) {
            return None;
        }
        if let Some(copy) = &*self
            .range_dels_copy
            .read()
            .unwrap_or_else(PoisonError::into_inner)
        {
            return Some(Arc::clone(copy));
        }
        // Made and stored under the tombstones' read lock: a deletion
        // (which holds their write lock while it clears the copy) cannot
        // slip between, so no stale copy outlives a deletion.
        let tombstones = self
            .range_dels
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let copy = Arc::new(tombstones.visible.clone());
        *self
            .range_dels_copy
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&copy));
        drop(tombstones);
        Some(copy)
    }

    /// The newest entry of `user_key` with sequence `<= seq` (a `seq` above
    /// [`keys::MAX_SEQUENCE`] means "any"), borrowed from the arena.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn get(&self, user_key: &[u8], seq: SequenceNumber) -> Option<(ValueKind, &[u8])> {
        self.get_entry(user_key, seq)
            .map(|(kind, value, _)| (kind, value))
    }

    /// [`MemTable::get`] with the entry's sequence number.
    pub(crate) fn get_entry(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Option<(ValueKind, &[u8], SequenceNumber)> {
        let target = Target {
            user_key,
            trailer: keys::pack_trailer(seq.min(MAX_SEQUENCE), ValueKind::FOR_SEEK),
        };
        let mut node = self.list.seek_ge(target)?;
        let mut parsed = keys::parse_internal_key(self.list.key(node))?;
        if let Some(hidden) = self.hidden() {
            // Older entries of the key follow in internal-key order.
            while parsed.user_key == user_key && is_hidden(&hidden, parsed.seq) {
                node = self.list.next(node)?;
                parsed = keys::parse_internal_key(self.list.key(node))?;
            }
        }
        (parsed.user_key == user_key).then(|| (parsed.kind, self.list.value(node), parsed.seq))
    }

    /// Number of entries (completed `add`s).
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// True when it holds no entry and no range deletion.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0 && !self.has_range_dels.load(Ordering::Acquire)
    }

    /// A cursor over the entries that keeps the memtable alive. It starts
    /// unpositioned; entries added while it exists may or may not be seen.
    pub(crate) fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator {
            mem: Arc::clone(self),
            node: None,
            hidden: self.hidden(),
        }
    }

    /// [`MemTable::iter`] that also shows hidden entries (for resume's
    /// copy, which counts the entries it leaves out).
    pub(crate) fn iter_all(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator {
            mem: Arc::clone(self),
            node: None,
            hidden: None,
        }
    }

    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> usize {
        self.list.check_invariants()
    }
}

/// Cursor over a memtable; implements [`InternalIterator`]. `next` is O(1),
/// seeks and `prev` are O(log n) searches.
pub(crate) struct MemTableIterator {
    mem: Arc<MemTable>,
    /// Current node; always a node of `mem.list`, never a hidden one.
    node: Option<Node>,
    /// The memtable's hidden ranges when the cursor was made (`None`: show
    /// every entry).
    hidden: Option<Arc<[(SequenceNumber, SequenceNumber)]>>,
}

/// Whether `seq` lies in one of the sorted inclusive `ranges`.
fn is_hidden(ranges: &[(SequenceNumber, SequenceNumber)], seq: SequenceNumber) -> bool {
    let i = ranges.partition_point(|&(first, _)| first <= seq);
    i > 0 && ranges[i - 1].1 >= seq
}

impl MemTableIterator {
    /// Whether the current node is one of a hidden write.
    fn on_hidden(&self) -> bool {
        match (&self.hidden, self.node) {
            (Some(h), Some(n)) => {
                keys::parse_internal_key(self.mem.list.key(n)).is_some_and(|p| is_hidden(h, p.seq))
            }
            _ => false,
        }
    }

    /// Moves forward past hidden entries.
    fn skip_forward(&mut self) {
        while self.on_hidden() {
            self.node = self.node.and_then(|n| self.mem.list.next(n));
        }
    }

    /// Moves backward past hidden entries.
    fn skip_backward(&mut self) {
        while self.on_hidden() {
            self.step_back();
        }
    }

    fn step_back(&mut self) {
        let list = &self.mem.list;
        self.node = self
            .node
            .and_then(|n| list.seek_lt(Target::from_internal_key(list.key(n))));
    }
}

impl std::fmt::Debug for MemTableIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTableIterator")
            .field("mem", &self.mem)
            .field("valid", &self.valid())
            .finish()
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.node.is_some()
    }
    fn seek_to_first(&mut self) {
        self.node = self.mem.list.first();
        self.skip_forward();
    }
    fn seek_to_last(&mut self) {
        self.node = self.mem.list.last();
        self.skip_backward();
    }
    fn seek(&mut self, target: &[u8]) {
        self.node = self.mem.list.seek_ge(Target::from_internal_key(target));
        self.skip_forward();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.node = self.mem.list.seek_le(Target::from_internal_key(target));
        self.skip_backward();
    }
    fn next(&mut self) {
        self.node = self.node.and_then(|n| self.mem.list.next(n));
        self.skip_forward();
    }
    fn prev(&mut self) {
        self.step_back();
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        self.node.map_or(&[], |n| self.mem.list.key(n))
    }
    fn value(&self) -> &[u8] {
        self.node.map_or(&[], |n| self.mem.list.value(n))
    }
}
