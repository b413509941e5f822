//! Range tombstones: `delete_range(start..end)` written at sequence `t`
//! hides, from every reader at sequence `>= t`, each entry of a user key in
//! `[start, end)` whose sequence is below `t` (`docs/range-deletes.md`).
//!
//! [`RangeTombstones`] is an immutable set of tombstones with a fragmented
//! index for lookups: the boundaries of all tombstones cut the key space
//! into disjoint fragments, and each fragment lists the sequence numbers
//! of the tombstones that cover it, newest first. [`RangeTombstones::covering`]
//! is then a binary search for the fragment and one for the newest
//! tombstone a reader can see. Plain data; `Send + Sync`.
//!
//! Invariants (checked by `debug_assert!` in [`RangeTombstones::new`]):
//! every tombstone has `start < end`; sequence numbers are unique (each
//! write operation has its own); fragments are sorted, disjoint and
//! non-empty; each fragment's sequence list is strictly descending.

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
    #[cfg(test)]
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        compare_bytes(&self.start, key).is_le() && compare_bytes(key, &self.end).is_lt()
    }

    /// True when `[start, end)` shares a key with the closed user-key range
    /// `[smallest, largest]`.
    pub(crate) fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        compare_bytes(&self.start, largest).is_le() && compare_bytes(smallest, &self.end).is_lt()
    }
}

/// An immutable, indexed set of range tombstones; see the module docs.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct RangeTombstones {
    /// The tombstones, by sequence number.
    list: Vec<RangeTombstone>,
    /// Fragment boundaries, sorted and unique: fragment `i` is
    /// `[bounds[i], bounds[i + 1])`.
    bounds: Vec<Vec<u8>>,
    /// For each fragment, the sequence numbers covering it, descending.
    seqs: Vec<Vec<SequenceNumber>>,
}

impl RangeTombstones {
    /// The set of `list` (any order; empty ranges are left out).
    pub(crate) fn new(mut list: Vec<RangeTombstone>) -> RangeTombstones {
        list.retain(|t| compare_bytes(&t.start, &t.end).is_lt());
        list.sort_by_key(|t| t.seq);
        debug_assert!(
            list.windows(2).all(|w| w[0].seq < w[1].seq),
            "range tombstone sequence numbers are unique"
        );
        let mut bounds: Vec<Vec<u8>> = list
            .iter()
            .flat_map(|t| [t.start.clone(), t.end.clone()])
            .collect();
        bounds.sort_unstable_by(|a, b| compare_bytes(a, b));
        bounds.dedup();
        let mut seqs = vec![Vec::new(); bounds.len().saturating_sub(1)];
        for t in list.iter().rev() {
            // Newest first, so each fragment's list comes out descending.
            let first = bounds.partition_point(|b| compare_bytes(b, &t.start).is_lt());
            let past = bounds.partition_point(|b| compare_bytes(b, &t.end).is_lt());
            for s in &mut seqs[first..past] {
                s.push(t.seq);
            }
        }
        debug_assert!(seqs.iter().all(|s| s.windows(2).all(|w| w[0] > w[1])));
        RangeTombstones { list, bounds, seqs }
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
    /// below it is deleted for a reader at `read_seq`.
    pub(crate) fn covering(&self, key: &[u8], read_seq: SequenceNumber) -> SequenceNumber {
        let after = self
            .bounds
            .partition_point(|b| compare_bytes(b, key).is_le());
        let Some(seqs) = after.checked_sub(1).and_then(|i| self.seqs.get(i)) else {
            return 0;
        };
        // Descending: skip the tombstones newer than the reader.
        let newer = seqs.partition_point(|&s| s > read_seq);
        seqs.get(newer).copied().unwrap_or(0)
    }

    /// The oldest tombstone sequence number above `seq` whose range holds
    /// `key`, or 0 when there is none.
    pub(crate) fn oldest_covering_after(&self, key: &[u8], seq: SequenceNumber) -> SequenceNumber {
        let after = self
            .bounds
            .partition_point(|b| compare_bytes(b, key).is_le());
        let Some(seqs) = after.checked_sub(1).and_then(|i| self.seqs.get(i)) else {
            return 0;
        };
        let newer = seqs.partition_point(|&s| s > seq);
        newer.checked_sub(1).map_or(0, |i| seqs[i])
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
            for &(k, read) in &probes {
                prop_assert_eq!(set.covering(&[k], read), naive(&list, &[k], read));
                let oldest_after = list
                    .iter()
                    .filter(|t| t.seq > read && t.contains(&[k]))
                    .map(|t| t.seq)
                    .min()
                    .unwrap_or(0);
                prop_assert_eq!(set.oldest_covering_after(&[k], read), oldest_after);
            }
        }
    }
}
