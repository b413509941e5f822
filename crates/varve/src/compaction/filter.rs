//! [`VersionFilter`]: which versions of a key a compaction (or flush) may
//! drop without changing what any reader sees.
//!
//! Live snapshots cut the sequence numbers into *stripes*: stripe `i` holds
//! the sequence numbers in `(snapshots[i-1], snapshots[i]]`, the last stripe
//! everything newer than the newest snapshot. A reader at snapshot `S` sees
//! the newest version with sequence `<= S`, so within one stripe only the
//! newest version of a key can ever be seen: older ones are dropped. A
//! tombstone in the oldest stripe hides the key from every reader; if no
//! deeper level can hold the key (`bottommost`), nothing is left to hide and
//! the tombstone is dropped too. A range tombstone at `t` hides an entry
//! at `s < t` from every reader when no snapshot lies in `[s, t)` (the two
//! are in one stripe): such an entry is dropped as well (the tombstone
//! itself lives in the version, see `crate::range_del`).
//!
//! Feed it internal keys in sorted order (user key ascending, sequence
//! descending). Single-threaded.

use std::sync::Arc;

use crate::keys::{self, SequenceNumber, ValueKind};
use crate::range_del::RangeTombstones;

/// Decides, for a sorted stream of internal keys, which to keep.
#[derive(Debug)]
pub(crate) struct VersionFilter {
    snapshots: Vec<SequenceNumber>,
    current_key: Vec<u8>,
    has_current: bool,
    last_stripe: Option<usize>,
    dropped: u64,
    /// Range tombstones whose covered entries may be dropped.
    ranges: Option<Arc<RangeTombstones>>,
    /// `Options::ttl`: entries below this sequence number are expired.
    expired: SequenceNumber,
    /// The entry last kept is its key's newest in the stream and newer
    /// than every snapshot: a user compaction filter may change it.
    filterable: bool,
}

impl VersionFilter {
    /// A filter for the given live snapshots (any order).
    pub(crate) fn new(mut snapshots: Vec<SequenceNumber>) -> Self {
        snapshots.sort_unstable();
        snapshots.dedup();
        VersionFilter {
            snapshots,
            current_key: Vec::new(),
            has_current: false,
            last_stripe: None,
            dropped: 0,
            ranges: None,
            expired: 0,
            filterable: false,
        }
    }

    /// Also drops every entry below sequence number `floor` (expired by
    /// `Options::ttl`: hidden from every reader, so are all older
    /// versions).
    pub(crate) fn with_expiry_floor(mut self, floor: SequenceNumber) -> Self {
        self.expired = floor;
        self
    }

    /// True when the entry `keep` last kept is the newest of its key in
    /// the stream and newer than every live snapshot: no snapshot reader
    /// can see it, so a user compaction filter may remove or change it.
    pub(crate) fn filterable(&self) -> bool {
        self.filterable
    }

    /// Also drops the entries `ranges` deletes for every reader.
    pub(crate) fn with_range_tombstones(mut self, ranges: Option<Arc<RangeTombstones>>) -> Self {
        self.ranges = ranges.filter(|r| !r.is_empty());
        self
    }

    fn stripe(&self, seq: SequenceNumber) -> usize {
        self.snapshots.partition_point(|&s| s < seq)
    }

    /// Whether to keep the entry with internal key `ikey`. `bottommost`
    /// tells whether no deeper level can hold this user key (it is only
    /// asked about tombstones). Malformed keys are kept (the caller reports
    /// corruption).
    pub(crate) fn keep(&mut self, ikey: &[u8], bottommost: impl FnOnce(&[u8]) -> bool) -> bool {
        self.filterable = false;
        let Some(p) = keys::parse_internal_key(ikey) else {
            return true;
        };
        if !self.has_current || p.user_key != self.current_key.as_slice() {
            self.current_key.clear();
            self.current_key.extend_from_slice(p.user_key);
            self.has_current = true;
            self.last_stripe = None;
        }
        if p.seq < self.expired {
            self.dropped += 1;
            return false; // expired, and so is every older version
        }
        let stripe = self.stripe(p.seq);
        let newest = self.last_stripe.is_none();
        if self.last_stripe == Some(stripe) {
            self.dropped += 1;
            return false; // a newer version in the same stripe hides it
        }
        self.last_stripe = Some(stripe);
        if let Some(r) = &self.ranges {
            // A tombstone newer than the entry with no snapshot between
            // the two: every reader that sees the entry sees it. Those are
            // the tombstones up to the first snapshot at or above the
            // entry (its stripe's end).
            let stripe_end = self
                .snapshots
                .get(stripe)
                .copied()
                .unwrap_or(SequenceNumber::MAX);
            if r.covering(p.user_key, stripe_end) > p.seq {
                self.dropped += 1;
                return false;
            }
        }
        if p.kind == ValueKind::Deletion && stripe == 0 && bottommost(p.user_key) {
            self.dropped += 1;
            return false;
        }
        self.filterable = newest && stripe == self.snapshots.len() && p.kind.has_value();
        true
    }

    /// [`range_cleared`] for the entries this filter was fed (its
    /// snapshots and range tombstones).
    pub(crate) fn range_cleared(&self, newest: SequenceNumber) -> Option<SequenceNumber> {
        range_cleared(&self.snapshots, self.ranges.as_deref()?, newest)
    }

    /// Entries dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// The sequence number `C` recorded as a table's `range_cleared_seq`:
/// every range tombstone up to `C` was applied to the entries written,
/// whose newest is `newest`. No snapshot is older than `C`, and every
/// tombstone up to `C` is in `ranges` (or hides none of the entries):
/// that holds for `C` up to the newer of `newest` and the newest tombstone
/// of `ranges` when `ranges` holds every tombstone older than the entries
/// (the memtable's own for a flush, the version's for a compaction:
/// memtables are flushed in order). `None` without tombstones.
pub(crate) fn range_cleared(
    snapshots: &[SequenceNumber],
    ranges: &RangeTombstones,
    newest: SequenceNumber,
) -> Option<SequenceNumber> {
    let newest_tombstone = ranges.tombstones().last()?.seq;
    let oldest_snapshot = snapshots
        .iter()
        .min()
        .copied()
        .unwrap_or(SequenceNumber::MAX);
    Some(newest.max(newest_tombstone).min(oldest_snapshot)).filter(|&c| c > 0)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::keys::{MAX_SEQUENCE, compare_internal_keys, make_internal_key};

    type Versions = Vec<(u8, SequenceNumber, bool)>; // key, seq, is_put

    /// What a reader at `view` sees for every key.
    fn visible(
        entries: &[(u8, SequenceNumber, bool)],
        view: SequenceNumber,
    ) -> BTreeMap<u8, Option<SequenceNumber>> {
        let mut out = BTreeMap::new();
        let mut sorted = entries.to_vec();
        sorted.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        for (k, seq, put) in sorted {
            if seq <= view && !out.contains_key(&k) {
                out.insert(k, put.then_some(seq));
            }
        }
        out.retain(|_, v| v.is_some());
        out
    }

    fn run(entries: &Versions, snapshots: &[SequenceNumber], bottommost: bool) -> Versions {
        let mut ikeys: Vec<(Vec<u8>, (u8, SequenceNumber, bool))> = entries
            .iter()
            .map(|&(k, s, put)| {
                let kind = if put {
                    ValueKind::Value
                } else {
                    ValueKind::Deletion
                };
                (make_internal_key(&[k], s, kind), (k, s, put))
            })
            .collect();
        ikeys.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        let mut f = VersionFilter::new(snapshots.to_vec());
        ikeys
            .into_iter()
            .filter(|(ik, _)| f.keep(ik, |_| bottommost))
            .map(|(_, e)| e)
            .collect()
    }

    proptest! {
        #[test]
        fn every_view_is_unchanged(
            raw in proptest::collection::vec((0u8..6, any::<bool>()), 0..60),
            snaps in proptest::collection::vec(1u64..70, 0..5),
            bottommost in any::<bool>(),
        ) {
            // Unique sequence numbers, as in the engine.
            let entries: Versions = raw.iter().enumerate().map(|(i, &(k, put))| (k, i as u64 + 1, put)).collect();
            let kept = run(&entries, &snaps, bottommost);
            for view in snaps.iter().copied().chain([MAX_SEQUENCE]) {
                prop_assert_eq!(visible(&entries, view), visible(&kept, view), "view {}", view);
            }
            if !bottommost {
                // Deeper levels may hold older data: a tombstone some reader
                // sees must survive, or that data would come back.
                for view in snaps.iter().copied().chain([MAX_SEQUENCE]) {
                    for k in 0u8..6 {
                        let newest = entries.iter().filter(|e| e.0 == k && e.1 <= view).max_by_key(|e| e.1);
                        if let Some(&(_, s, false)) = newest {
                            prop_assert!(kept.contains(&(k, s, false)), "visible tombstone {k}@{s} dropped");
                        }
                    }
                }
            }
        }
    }

    /// What a reader at `view` sees when `ranges` (start, end, seq) are
    /// range tombstones too.
    fn visible_with_ranges(
        entries: &[(u8, SequenceNumber, bool)],
        ranges: &[(u8, u8, SequenceNumber)],
        view: SequenceNumber,
    ) -> BTreeMap<u8, Option<SequenceNumber>> {
        let mut out = visible(entries, view);
        out.retain(|&k, s| {
            let s = s.unwrap_or(0);
            !ranges
                .iter()
                .any(|&(a, b, t)| a <= k && k < b && s < t && t <= view)
        });
        out
    }

    proptest! {
        #[test]
        fn range_tombstones_drop_only_what_no_reader_sees(
            raw in proptest::collection::vec((0u8..6, 0u8..4), 0..60),
            snaps in proptest::collection::vec(1u64..70, 0..4),
            bottommost in any::<bool>(),
        ) {
            // Kind 0-1 put, 2 delete, 3 a range tombstone over k..k+2.
            let mut entries: Versions = Vec::new();
            let mut ranges = Vec::new();
            for (i, &(k, kind)) in raw.iter().enumerate() {
                let seq = i as u64 + 1;
                match kind {
                    3 => ranges.push((k, k + 2, seq)),
                    _ => entries.push((k, seq, kind < 2)),
                }
            }
            let set = Arc::new(RangeTombstones::new(
                ranges
                    .iter()
                    .map(|&(a, b, seq)| crate::range_del::RangeTombstone {
                        start: vec![a],
                        end: vec![b],
                        seq,
                    })
                    .collect(),
            ));
            let mut ikeys: Vec<(Vec<u8>, (u8, SequenceNumber, bool))> = entries
                .iter()
                .map(|&(k, s, put)| {
                    let kind = if put { ValueKind::Value } else { ValueKind::Deletion };
                    (make_internal_key(&[k], s, kind), (k, s, put))
                })
                .collect();
            ikeys.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            let mut f = VersionFilter::new(snaps.clone()).with_range_tombstones(Some(set));
            let kept: Versions = ikeys
                .into_iter()
                .filter(|(ik, _)| f.keep(ik, |_| bottommost))
                .map(|(_, e)| e)
                .collect();
            for view in snaps.iter().copied().chain([MAX_SEQUENCE]) {
                prop_assert_eq!(
                    visible_with_ranges(&entries, &ranges, view),
                    visible_with_ranges(&kept, &ranges, view),
                    "view {}", view
                );
            }
            if snaps.is_empty() {
                // Nothing a tombstone covers survives without snapshots.
                for &(k, s, _) in &kept {
                    prop_assert!(
                        !ranges.iter().any(|&(a, b, t)| a <= k && k < b && s < t),
                        "{}@{} is covered but kept", k, s
                    );
                }
            }
        }
    }

    #[test]
    fn drops_shadowed_versions_and_bottom_tombstones() {
        // key 1: put@5, put@3, del@2 ; no snapshots: only put@5 stays.
        let entries = vec![(1, 5, true), (1, 3, true), (1, 2, false), (2, 4, false)];
        assert_eq!(run(&entries, &[], true), vec![(1, 5, true)]);
        // Not bottommost: the tombstone of key 2 must stay.
        assert_eq!(run(&entries, &[], false), vec![(1, 5, true), (2, 4, false)]);
        // A snapshot at 3 keeps put@3 (its view) but not del@2; the
        // tombstone of key 2 is newer than the snapshot, so it is kept
        // (conservative: only tombstones every reader sees are dropped).
        assert_eq!(
            run(&entries, &[3], true),
            vec![(1, 5, true), (1, 3, true), (2, 4, false)]
        );
    }
}
