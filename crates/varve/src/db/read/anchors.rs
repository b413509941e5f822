//! Anchor keys: a cheap, approximate map of where the bytes of a key range
//! are, and the splitting of a range into parts of about equal bytes.
//!
//! This module owns [`KeyRange`], [`Anchor`], [`Anchors`], the sampling
//! behind [`Db::approximate_key_anchors`](crate::Db::approximate_key_anchors)
//! and the cutting behind [`Db::split_range`](crate::Db::split_range).
//!
//! # Sampling (no data block reads)
//!
//! One read state (memtables + version) is taken and every source that may
//! hold keys of the range gives weighted samples `(user key, bytes)`, where
//! the bytes are those of entries at or before the key and after the
//! source's previous sample:
//!
//! - every table file (all levels, L0 included) whose key range overlaps the
//!   range: one sample per data block, keyed by the user key of the block's
//!   index separator (`>=` every key of the block), weighted by the block's
//!   size scaled by `file_size / data_end` so that a file's samples add up to
//!   its whole size (index, filter and footer included). Only the pinned
//!   index is read ([`Table::index_samples`](crate::sst::Table::index_samples)).
//!   A file with more than `MAX_SAMPLES_PER_FILE` (256) blocks gives one
//!   sample per group of consecutive blocks, keyed by the group's last
//!   separator, so the samples of a large database stay few.
//!   A block that straddles the range start counts half; a block that
//!   straddles the range end counts half, in the remainder after the last
//!   anchor.
//! - every memtable: its entries inside the range are walked with the
//!   memtable cursor (memory only, O(entries in range)) and every k-th entry
//!   becomes a sample, k chosen so that a sample stands for about one
//!   `block_size` of arena; an entry weighs `memory_usage / len` bytes.
//!   Entries after the last sample go to the remainder.
//!
//! Samples are merged, sorted and deduplicated (equal keys add up). Keys at
//! or before the range start are not anchors (a cut there would make an
//! empty part); their bytes are carried into the next anchor. When more than
//! `max_anchors` remain, anchors are kept at about equal byte spacing and the
//! bytes of dropped samples are added to the next kept anchor (or the
//! remainder), so the total never changes.
//!
//! Invariants of an [`Anchors`] value: anchor keys are strictly increasing,
//! strictly greater than the range start (or than the empty key when the
//! start is unbounded) and strictly less than the range end; there are at
//! most `max_anchors` of them; `total_bytes()` estimates the range's bytes
//! in tables plus memtables (every version of every key counts, as a scan
//! reads them all).
//!
//! Accuracy: exact for the whole key space of a database without memtable
//! data (the file sizes); for a sub-range off by at most about one block per
//! overlapping file at each end, plus the skew of a memtable's average entry
//! size. Values are stored inline, so bytes follow the data.
//!
//! Thread-safety: pure functions over a pinned read state; safe to call from
//! any number of threads while writes, flushes and compactions run.

use crate::db::DbInner;
use crate::db::memtables::SuperVersion;
use crate::error::Result;
use crate::internal_iter::InternalIterator;
use crate::keys::{self, MAX_SEQUENCE};
use crate::version::{FileMetaData, NUM_LEVELS};

/// Most samples taken from one table file (more blocks are grouped).
const MAX_SAMPLES_PER_FILE: usize = 256;

/// A range of user keys: `start` inclusive, `end` exclusive; `None` is
/// unbounded on that side. A range with `start >= end` is empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct KeyRange {
    /// First key of the range (inclusive); `None`: from the first key.
    pub start: Option<Vec<u8>>,
    /// End of the range (exclusive); `None`: to the last key.
    pub end: Option<Vec<u8>>,
}

impl KeyRange {
    /// Every key.
    pub fn all() -> KeyRange {
        KeyRange::default()
    }

    /// `[start, end)`.
    pub fn new(start: impl Into<Vec<u8>>, end: impl Into<Vec<u8>>) -> KeyRange {
        KeyRange {
            start: Some(start.into()),
            end: Some(end.into()),
        }
    }

    /// A range from optional bounds (`None` is unbounded).
    pub fn from_bounds(start: Option<Vec<u8>>, end: Option<Vec<u8>>) -> KeyRange {
        KeyRange { start, end }
    }

    /// True when `key` is inside the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.start.as_deref().is_none_or(|s| key >= s)
            && self.end.as_deref().is_none_or(|e| key < e)
    }

    /// True when no key can be inside the range (`start >= end`).
    pub fn is_empty(&self) -> bool {
        matches!((&self.start, &self.end), (Some(s), Some(e)) if s >= e)
            || self.end.as_deref() == Some(&[][..])
    }

    /// The keys inside both ranges.
    pub fn intersect(&self, other: &KeyRange) -> KeyRange {
        let start = match (&self.start, &other.start) {
            (Some(a), Some(b)) => Some(a.max(b).clone()),
            (a, b) => a.clone().or_else(|| b.clone()),
        };
        let end = match (&self.end, &other.end) {
            (Some(a), Some(b)) => Some(a.min(b).clone()),
            (a, b) => a.clone().or_else(|| b.clone()),
        };
        KeyRange { start, end }
    }

    /// The lower bound as a key (the empty key, the smallest, when unbounded).
    fn lower(&self) -> &[u8] {
        self.start.as_deref().unwrap_or(&[])
    }

    /// True when `key` is at or after the end.
    fn past_end(&self, key: &[u8]) -> bool {
        self.end.as_deref().is_some_and(|e| key >= e)
    }
}

/// One anchor key and the approximate bytes between the previous anchor (or
/// the range start) and it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Anchor {
    /// A user key inside the range (not necessarily a key present in the
    /// database: table index separators may be shortened keys).
    pub key: Vec<u8>,
    /// Approximate bytes of table and memtable data in
    /// `[previous anchor or range start, key)`.
    pub bytes_before: u64,
}

/// Anchors of a range, see [`Db::approximate_key_anchors`](crate::Db::approximate_key_anchors).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Anchors {
    /// Sorted, distinct, strictly inside the range (after its start, before
    /// its end).
    pub anchors: Vec<Anchor>,
    /// Approximate bytes from the last anchor (or the range start when there
    /// are no anchors) to the range end.
    pub bytes_after_last: u64,
}

impl Anchors {
    /// Estimated bytes of the whole range: every `bytes_before` plus
    /// `bytes_after_last`.
    pub fn total_bytes(&self) -> u64 {
        self.anchors
            .iter()
            .map(|a| a.bytes_before)
            .fold(self.bytes_after_last, u64::saturating_add)
    }
}

/// Weighted samples of one read state, before merging.
#[derive(Default)]
struct Samples {
    /// `(user key, bytes at or before it since the source's previous sample)`.
    points: Vec<(Vec<u8>, u64)>,
    /// Bytes after every source's last sample, up to the range end.
    tail: u64,
}

/// Anchors of `range` with at most `max_anchors` anchors (see module docs).
pub(crate) fn approximate_key_anchors(
    db: &DbInner,
    id: u32,
    range: &KeyRange,
    max_anchors: usize,
) -> Result<Anchors> {
    if range.is_empty() {
        return Ok(Anchors::default());
    }
    let sv = db.tree_state(id)?;
    let mut samples = Samples::default();
    sample_tables(db, &sv, range, &mut samples)?;
    sample_memtables(&sv, range, db.options.block_size, &mut samples);
    Ok(thin(merge(samples, range), max_anchors))
}

/// At most `parts` contiguous sub-ranges of `range` of about equal bytes,
/// each with its estimated bytes.
pub(crate) fn split_weighted(
    db: &DbInner,
    id: u32,
    range: &KeyRange,
    parts: usize,
) -> Result<Vec<(KeyRange, u64)>> {
    let parts = parts.max(1);
    let anchors = approximate_key_anchors(db, id, range, parts.saturating_mul(8).max(64))?;
    Ok(split_anchors(&anchors, range, parts))
}

/// [`split_weighted`] without the weights.
pub(crate) fn split_range(
    db: &DbInner,
    id: u32,
    range: &KeyRange,
    parts: usize,
) -> Result<Vec<KeyRange>> {
    Ok(split_weighted(db, id, range, parts)?
        .into_iter()
        .map(|(r, _)| r)
        .collect())
}

/// Cuts `range` at up to `parts - 1` anchors whose byte positions are
/// nearest to `total * j / parts`. Always at least one part; contiguous;
/// the first starts at `range.start`, the last ends at `range.end`.
pub(crate) fn split_anchors(
    anchors: &Anchors,
    range: &KeyRange,
    parts: usize,
) -> Vec<(KeyRange, u64)> {
    let parts = parts.max(1);
    let total = anchors.total_bytes();
    // before[i]: bytes before anchor i's key.
    let mut before = Vec::with_capacity(anchors.anchors.len());
    let mut acc = 0u64;
    for a in &anchors.anchors {
        acc = acc.saturating_add(a.bytes_before);
        before.push(acc);
    }
    let mut cuts: Vec<usize> = Vec::with_capacity(parts - 1);
    for j in 1..parts {
        let target = (u128::from(total) * j as u128 / parts as u128) as u64;
        let min = cuts.last().map_or(0, |&c| c + 1);
        if min >= before.len() {
            break;
        }
        let p = min + before[min..].partition_point(|&b| b < target);
        let pick = if p >= before.len() {
            before.len() - 1
        } else if p > min && target - before[p - 1] < before[p] - target {
            p - 1
        } else {
            p
        };
        cuts.push(pick.max(min));
    }
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = range.start.clone();
    let mut start_bytes = 0u64;
    for &c in &cuts {
        let key = anchors.anchors[c].key.clone();
        out.push((
            KeyRange::from_bounds(start, Some(key.clone())),
            before[c] - start_bytes,
        ));
        start = Some(key);
        start_bytes = before[c];
    }
    out.push((
        KeyRange::from_bounds(start, range.end.clone()),
        total - start_bytes,
    ));
    out
}

/// Samples of every table file overlapping `range`, from its index.
fn sample_tables(
    db: &DbInner,
    sv: &SuperVersion,
    range: &KeyRange,
    out: &mut Samples,
) -> Result<()> {
    for level in 0..NUM_LEVELS {
        for file in sv.version.files(level) {
            if file.largest_user_key() < range.lower() || range.past_end(file.smallest_user_key()) {
                continue;
            }
            sample_table(db, file, range, out)?;
        }
    }
    Ok(())
}

fn sample_table(
    db: &DbInner,
    file: &FileMetaData,
    range: &KeyRange,
    out: &mut Samples,
) -> Result<()> {
    let table = db.table_cache.get(file)?;
    let blocks = table.index_samples();
    let data_end = blocks.last().map_or(0, |(_, end)| *end);
    if data_end == 0 {
        return Ok(());
    }
    let scale = |b: u64| (u128::from(b) * u128::from(file.file_size) / u128::from(data_end)) as u64;
    // Consecutive blocks are grouped so a file gives a bounded number of
    // samples; a group's sample is its last block's separator.
    let group = blocks.len().div_ceil(MAX_SAMPLES_PER_FILE).max(1);
    let mut pending: Option<(&[u8], u64)> = None;
    let mut prev_end = 0u64;
    let mut lower: &[u8] = file.smallest_user_key();
    for (i, (sep, end)) in blocks.iter().enumerate() {
        let upper = keys::user_key(sep);
        let mut bytes = scale(end.saturating_sub(prev_end));
        prev_end = *end;
        let block_lower = std::mem::replace(&mut lower, upper);
        if upper < range.lower() {
            continue; // the whole block is before the range
        }
        if range.past_end(block_lower) {
            break; // this block and every later one are after the range
        }
        if range.start.is_some() && block_lower < range.lower() {
            bytes /= 2; // straddles the start
        }
        if range.past_end(upper) {
            out.tail = out.tail.saturating_add(bytes / 2); // straddles the end
            break;
        }
        let sum = pending.map_or(0, |(_, b)| b).saturating_add(bytes);
        pending = Some((upper, sum));
        if (i + 1) % group == 0 {
            out.points.push((upper.to_vec(), sum));
            pending = None;
        }
    }
    if let Some((key, bytes)) = pending {
        out.points.push((key.to_vec(), bytes));
    }
    Ok(())
}

/// Samples of every memtable's entries inside `range`.
fn sample_memtables(sv: &SuperVersion, range: &KeyRange, block_size: usize, out: &mut Samples) {
    for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        let len = m.table.len();
        if len == 0 {
            continue;
        }
        let per_entry = (m.table.memory_usage() / len).max(1) as u64;
        let every = (block_size as u64 / per_entry).max(1);
        let mut it = m.table.iter();
        match &range.start {
            Some(s) => it.seek(&keys::lookup_key(s, MAX_SEQUENCE)),
            None => it.seek_to_first(),
        }
        let mut since = 0u64;
        while it.valid() {
            let key = keys::user_key(it.key());
            if range.past_end(key) {
                break;
            }
            since += 1;
            if since == every {
                out.points.push((key.to_vec(), since * per_entry));
                since = 0;
            }
            it.next();
        }
        out.tail = out.tail.saturating_add(since * per_entry);
    }
}

/// Sorts and deduplicates the samples into anchors strictly inside `range`.
fn merge(mut samples: Samples, range: &KeyRange) -> Anchors {
    samples.points.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut anchors: Vec<Anchor> = Vec::with_capacity(samples.points.len());
    let mut carry = 0u64;
    let mut tail = samples.tail;
    for (key, bytes) in samples.points {
        if key.as_slice() <= range.lower() {
            carry = carry.saturating_add(bytes);
        } else if range.past_end(&key) {
            tail = tail.saturating_add(bytes);
        } else if let Some(last) = anchors.last_mut().filter(|a| a.key == key) {
            last.bytes_before = last.bytes_before.saturating_add(bytes);
        } else {
            anchors.push(Anchor {
                key,
                bytes_before: bytes.saturating_add(std::mem::take(&mut carry)),
            });
        }
    }
    Anchors {
        anchors,
        bytes_after_last: tail.saturating_add(carry),
    }
}

/// Keeps at most `max` anchors at about equal byte spacing; the bytes of a
/// dropped anchor move to the next kept one (or the remainder).
fn thin(all: Anchors, max: usize) -> Anchors {
    if all.anchors.len() <= max {
        return all;
    }
    let total = u128::from(all.total_bytes());
    let target = |j: usize| (total * j as u128 / (max as u128 + 1)) as u64;
    let mut kept = Vec::with_capacity(max);
    let mut pending = 0u64;
    let mut cum = 0u64;
    let mut j = 1;
    for a in all.anchors {
        cum = cum.saturating_add(a.bytes_before);
        pending = pending.saturating_add(a.bytes_before);
        if j <= max && cum >= target(j) {
            kept.push(Anchor {
                key: a.key,
                bytes_before: std::mem::take(&mut pending),
            });
            while j <= max && cum >= target(j) {
                j += 1;
            }
        }
    }
    Anchors {
        anchors: kept,
        bytes_after_last: all.bytes_after_last.saturating_add(pending),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchors(points: &[(&str, u64)], after: u64) -> Anchors {
        Anchors {
            anchors: points
                .iter()
                .map(|(k, b)| Anchor {
                    key: k.as_bytes().to_vec(),
                    bytes_before: *b,
                })
                .collect(),
            bytes_after_last: after,
        }
    }

    #[test]
    fn merge_sorts_dedups_and_clips() {
        let s = Samples {
            points: vec![
                (b"m".to_vec(), 5),
                (b"c".to_vec(), 1),
                (b"a".to_vec(), 2),
                (b"m".to_vec(), 5),
                (b"z".to_vec(), 7),
            ],
            tail: 3,
        };
        let a = merge(s, &KeyRange::new("c", "x"));
        assert_eq!(a, anchors(&[("m", 13)], 10));
    }

    #[test]
    fn thin_keeps_total_and_limit() {
        let all = anchors(&[("a", 10), ("b", 10), ("c", 10), ("d", 10), ("e", 10)], 10);
        for max in 0..7 {
            let t = thin(all.clone(), max);
            assert!(t.anchors.len() <= max, "{max}: {t:?}");
            assert_eq!(t.total_bytes(), 60);
        }
        let t = thin(all, 2);
        assert_eq!(t, anchors(&[("b", 20), ("d", 20)], 20));
    }

    #[test]
    fn split_is_contiguous() {
        let a = anchors(&[("b", 10), ("d", 10), ("f", 10)], 10);
        let r = KeyRange::from_bounds(None, Some(b"z".to_vec()));
        let parts = split_anchors(&a, &r, 2);
        assert_eq!(
            parts,
            vec![
                (KeyRange::from_bounds(None, Some(b"d".to_vec())), 20),
                (KeyRange::new("d", "z"), 20),
            ]
        );
        for n in 1..10 {
            let parts = split_anchors(&a, &r, n);
            assert!(parts.len() <= n.min(4));
            assert_eq!(parts[0].0.start, None);
            assert_eq!(parts.last().map(|p| p.0.end.clone()), Some(r.end.clone()));
            for w in parts.windows(2) {
                assert_eq!(w[0].0.end, w[1].0.start);
            }
            assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), 40);
        }
    }

    #[test]
    fn ranges() {
        assert!(KeyRange::new("b", "b").is_empty());
        assert!(KeyRange::from_bounds(None, Some(vec![])).is_empty());
        assert!(!KeyRange::all().is_empty());
        let r =
            KeyRange::new("b", "d").intersect(&KeyRange::from_bounds(None, Some(b"c".to_vec())));
        assert_eq!(r, KeyRange::new("b", "c"));
        assert!(r.contains(b"b") && !r.contains(b"c"));
    }
}
