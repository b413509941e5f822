//! Range tombstones: `delete_range(start..end)` written at sequence `t`
//! hides, from every reader at sequence `>= t`, each entry of a user key in
//! `[start, end)` whose sequence is below `t` (`docs/range-deletes.md`).
//!
//! [`RangeTombstones`] keeps its tombstones in sequence order and a
//! *skyline*: disjoint key fragments, each with the newest sequence number
//! of the tombstones over it (`O(n)` fragments however the ranges nest).
//! Adding a tombstone replaces the fragments under it (amortized
//! `O(log n)`: a memtable adds one per range delete); a lookup for a reader
//! that sees the newest tombstone over the key is one search of the
//! skyline, and for an older reader (a snapshot) a walk of the tombstones
//! from the newest down. Plain data; `Send + Sync`.
//!
//! Invariants (checked by `debug_assert!`): every tombstone has
//! `start < end`; sequence numbers are unique (each write operation has
//! its own); fragments are non-empty and disjoint.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};

use crate::keys::{SequenceNumber, compare_bytes};

/// One range deletion: keys in `[start, end)`, as of sequence `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    /// First key deleted.
    pub start: Vec<u8>,
    /// First key after the deleted range (exclusive).
    pub end: Vec<u8>,
    /// The sequence number of the deletion.
    pub seq: SequenceNumber,
}

impl RangeTombstone {
    /// True when `key` is in `[start, end)`.
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        compare_bytes(&self.start, key).is_le() && compare_bytes(key, &self.end).is_lt()
    }

    /// True when `[start, end)` shares a key with the closed user-key range
    /// `[smallest, largest]`.
    pub(crate) fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        compare_bytes(&self.start, largest).is_le() && compare_bytes(smallest, &self.end).is_lt()
    }
}

/// A set of range tombstones with an index for lookups; see the module
/// docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RangeTombstones {
    /// The tombstones, by sequence number.
    list: Vec<RangeTombstone>,
    /// The skyline: disjoint fragments `start -> (end, seq)` where `seq`
    /// is the newest sequence number of the tombstones covering
    /// `[start, end)`; keys in no fragment are covered by none.
    skyline: BTreeMap<Vec<u8>, (Vec<u8>, SequenceNumber)>,
}

impl RangeTombstones {
    /// The set of `list` (any order; empty ranges are left out).
    pub(crate) fn new(mut list: Vec<RangeTombstone>) -> RangeTombstones {
        list.sort_by_key(|t| t.seq);
        let mut set = RangeTombstones::default();
        for t in list {
            set.insert(t);
        }
        set
    }

    /// Keeps only the tombstones `keep` accepts, rebuilding the skyline
    /// when any is removed (`O(n log n)`: for error paths, not per
    /// write); returns whether any was removed.
    pub(crate) fn retain(&mut self, keep: impl Fn(&RangeTombstone) -> bool) -> bool {
        if self.list.iter().all(&keep) {
            return false;
        }
        let kept: Vec<RangeTombstone> = self.list.drain(..).filter(|t| keep(t)).collect();
        *self = RangeTombstones::new(kept);
        debug_assert!(self.list.iter().all(&keep));
        true
    }

    /// Adds `t` (an empty range adds nothing). Amortized `O(log n)` plus
    /// the fragments it covers, each of which it removes: tombstones come
    /// in (nearly) ascending sequence order, and a newer one replaces the
    /// fragments under it with one.
    pub(crate) fn insert(&mut self, t: RangeTombstone) {
        if compare_bytes(&t.start, &t.end).is_ge() {
            return;
        }
        // The list stays sorted; a write that lost the race for the
        // memtable lands a few places from the end.
        let at = self.list.partition_point(|x| x.seq < t.seq);
        debug_assert!(
            self.list.get(at).is_none_or(|x| x.seq != t.seq),
            "range tombstone sequence numbers are unique"
        );
        let (a, b, seq) = (t.start.clone(), t.end.clone(), t.seq);
        self.list.insert(at, t);
        // The fragments that meet [a, b): the one starting at or before
        // `a` if it reaches past `a`, then those starting inside.
        let mut hit: Vec<(Vec<u8>, Vec<u8>, SequenceNumber)> = Vec::new();
        if let Some((s, (e, m))) = self
            .skyline
            .range::<[u8], _>((Unbounded, Included(a.as_slice())))
            .next_back()
            && compare_bytes(e, &a).is_gt()
        {
            hit.push((s.clone(), e.clone(), *m));
        }
        for (s, (e, m)) in self
            .skyline
            .range::<[u8], _>((Excluded(a.as_slice()), Excluded(b.as_slice())))
        {
            hit.push((s.clone(), e.clone(), *m));
        }
        let mut pieces: Vec<(Vec<u8>, Vec<u8>, SequenceNumber)> = Vec::new();
        let mut cursor = a.clone();
        for (s, e, m) in hit {
            self.skyline.remove(&s);
            if compare_bytes(&s, &a).is_lt() {
                pieces.push((s.clone(), a.clone(), m)); // left of the range
            }
            let lo = if compare_bytes(&s, &a).is_lt() {
                a.clone()
            } else {
                s
            };
            if compare_bytes(&cursor, &lo).is_lt() {
                pieces.push((cursor.clone(), lo.clone(), seq)); // a gap
            }
            let hi = if compare_bytes(&e, &b).is_gt() {
                b.clone()
            } else {
                e.clone()
            };
            pieces.push((lo, hi.clone(), m.max(seq)));
            if compare_bytes(&e, &b).is_gt() {
                pieces.push((b.clone(), e, m)); // right of the range
            }
            cursor = hi;
        }
        if compare_bytes(&cursor, &b).is_lt() {
            pieces.push((cursor, b, seq));
        }
        // Adjacent pieces of one sequence number become one fragment.
        let mut merged: Vec<(Vec<u8>, Vec<u8>, SequenceNumber)> = Vec::with_capacity(pieces.len());
        for p in pieces {
            match merged.last_mut() {
                Some(last) if last.2 == p.2 && last.1 == p.0 => last.1 = p.1,
                _ => merged.push(p),
            }
        }
        for (s, e, m) in merged {
            self.skyline.insert(s, (e, m));
        }
        #[cfg(debug_assertions)]
        self.check_skyline();
    }

    #[cfg(debug_assertions)]
    fn check_skyline(&self) {
        let mut prev_end: Option<&[u8]> = None;
        for (s, (e, _)) in &self.skyline {
            debug_assert!(compare_bytes(s, e).is_lt(), "empty fragment");
            if let Some(p) = prev_end {
                debug_assert!(compare_bytes(p, s).is_le(), "overlapping fragments");
            }
            prev_end = Some(e);
        }
    }

    /// True when the set holds no tombstone.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The tombstones, oldest first.
    pub(crate) fn tombstones(&self) -> &[RangeTombstone] {
        &self.list
    }

    /// The newest tombstone sequence number `<= read_seq` whose range holds
    /// `key`, or 0 when there is none: an entry of `key` with a sequence
    /// below it is deleted for a reader at `read_seq`. One skyline lookup
    /// when the newest tombstone over the key is visible to the reader (the
    /// usual case); otherwise (a reader older than it) a walk of the
    /// tombstones from the newest down.
    pub(crate) fn covering(&self, key: &[u8], read_seq: SequenceNumber) -> SequenceNumber {
        let newest = self
            .skyline
            .range::<[u8], _>((Unbounded, Included(key)))
            .next_back()
            .filter(|(_, (e, _))| compare_bytes(key, e).is_lt())
            .map_or(0, |(_, (_, m))| *m);
        if newest <= read_seq {
            return newest;
        }
        let visible = self.list.partition_point(|t| t.seq <= read_seq);
        self.list[..visible]
            .iter()
            .rev()
            .find(|t| t.contains(key))
            .map_or(0, |t| t.seq)
    }
}

/// The range tombstones of several sources (memtables and the version) as
/// one reader sees them. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct RangeView {
    sets: Vec<std::sync::Arc<RangeTombstones>>,
}

impl RangeView {
    /// A view of the non-empty sets among `sets`.
    pub(crate) fn new(sets: impl IntoIterator<Item = std::sync::Arc<RangeTombstones>>) -> Self {
        RangeView {
            sets: sets.into_iter().filter(|s| !s.is_empty()).collect(),
        }
    }

    /// True when no source has a tombstone.
    pub(crate) fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// [`RangeTombstones::covering`] over every source.
    pub(crate) fn covering(&self, key: &[u8], read_seq: SequenceNumber) -> SequenceNumber {
        self.sets
            .iter()
            .map(|s| s.covering(key, read_seq))
            .max()
            .unwrap_or(0)
    }

    /// True when the entry `(key, seq)` is deleted by a range tombstone a
    /// reader at `read_seq` sees.
    #[inline]
    pub(crate) fn hides(&self, key: &[u8], seq: SequenceNumber, read_seq: SequenceNumber) -> bool {
        !self.sets.is_empty() && self.covering(key, read_seq) > seq
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn t(start: &[u8], end: &[u8], seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: start.to_vec(),
            end: end.to_vec(),
            seq,
        }
    }

    /// The definition, by brute force.
    fn naive(list: &[RangeTombstone], key: &[u8], read_seq: u64) -> u64 {
        list.iter()
            .filter(|t| t.seq <= read_seq && t.contains(key))
            .map(|t| t.seq)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn covering_examples() {
        let set = RangeTombstones::new(vec![t(b"b", b"f", 10), t(b"d", b"h", 5), t(b"x", b"x", 7)]);
        assert_eq!(set.tombstones().len(), 2, "the empty range is left out");
        assert_eq!(set.covering(b"a", 100), 0);
        assert_eq!(set.covering(b"b", 100), 10);
        assert_eq!(set.covering(b"d", 100), 10);
        assert_eq!(set.covering(b"d", 9), 5);
        assert_eq!(set.covering(b"d", 4), 0);
        assert_eq!(set.covering(b"f", 100), 5, "end is exclusive");
        assert_eq!(set.covering(b"h", 100), 0);
        assert_eq!(set.covering(b"x", 100), 0);
        let view = RangeView::new([std::sync::Arc::new(set)]);
        assert!(view.hides(b"c", 9, 100));
        assert!(!view.hides(b"c", 11, 100), "newer than the tombstone");
        assert!(
            !view.hides(b"c", 9, 9),
            "the reader does not see the tombstone"
        );
    }

    #[test]
    fn retain_rebuilds_the_skyline_without_the_removed() {
        let mut set = RangeTombstones::new(vec![t(b"a", b"m", 3), t(b"c", b"z", 8)]);
        assert!(!set.retain(|_| true), "nothing removed");
        assert_eq!(set.covering(b"p", 100), 8);
        assert!(set.retain(|t| t.seq != 8));
        assert_eq!(set, RangeTombstones::new(vec![t(b"a", b"m", 3)]));
        assert_eq!(set.covering(b"d", 100), 3, "the older one shows again");
        assert_eq!(set.covering(b"p", 100), 0);
    }

    proptest! {
        #[test]
        fn covering_matches_the_definition(
            raw in proptest::collection::vec((0u8..8, 0u8..8), 0..12),
            probes in proptest::collection::vec((0u8..9, 0u64..20), 1..30),
        ) {
            let list: Vec<RangeTombstone> = raw
                .iter()
                .enumerate()
                .map(|(i, &(a, b))| t(&[a], &[b], i as u64 + 1))
                .collect();
            let set = RangeTombstones::new(list.clone());
            // Inserted one by one out of sequence order (a memtable's
            // concurrent writers), the index answers the same.
            let mut shuffled = RangeTombstones::default();
            let mut order: Vec<usize> = (0..list.len()).collect();
            order.reverse();
            order.rotate_left(list.len() / 3);
            for i in order {
                shuffled.insert(list[i].clone());
            }
            for &(k, read) in &probes {
                prop_assert_eq!(set.covering(&[k], read), naive(&list, &[k], read));
                prop_assert_eq!(shuffled.covering(&[k], read), naive(&list, &[k], read));
            }
        }
    }

    /// A Raft log's purges: ever longer ranges from the start. The skyline
    /// stays one fragment, so adding and looking up stay cheap.
    #[test]
    fn nested_ranges_keep_one_fragment() {
        let mut set = RangeTombstones::default();
        for i in 1..=10_000u64 {
            set.insert(t(b"", format!("log{i:08}").as_bytes(), i));
        }
        assert_eq!(set.skyline.len(), 1);
        assert_eq!(set.covering(b"log00000500", u64::MAX), 10_000);
        assert_eq!(set.covering(b"log00000500", 600), 600);
        assert_eq!(
            set.covering(b"log00000500", 500),
            0,
            "[\"\", log00000500) excludes it"
        );
        assert_eq!(set.covering(b"log00010000", u64::MAX), 0);
    }
}
