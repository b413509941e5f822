//! Internal keys: the user key followed by an 8-byte trailer that packs the
//! sequence number (56 bits) and the entry kind (8 bits), little-endian.
//!
//! Internal keys order by user key ascending (bytewise), then by sequence
//! number *descending*, then kind descending, so that for one user key the
//! newest entry comes first. This is the order of the memtable, of SSTables
//! and of every internal iterator. Pure functions; thread-safe.

use std::cmp::Ordering;

/// A write's position in the global order of all writes.
pub(crate) type SequenceNumber = u64;

/// The largest sequence number that fits in the trailer.
pub(crate) const MAX_SEQUENCE: SequenceNumber = (1 << 56) - 1;

/// Length of the trailer appended to every user key.
pub(crate) const TRAILER_LEN: usize = 8;

/// What an internal entry means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key is deleted as of this sequence number.
    Deletion = 0,
    /// A value.
    Value = 1,
    /// A value kept in a blob file: the entry's value is a pointer to it
    /// (`docs/blob-files.md`). Written by the engine, never by users.
    BlobIndex = 2,
}

impl ValueKind {
    /// The kind used in seek targets: the highest kind, so that a seek for
    /// `(key, seq)` lands on the first entry with sequence `<= seq`. (It
    /// was `Value` before `BlobIndex` existed; a target sorting earlier
    /// than before keeps every older index separator correct.)
    pub(crate) const FOR_SEEK: ValueKind = ValueKind::BlobIndex;

    /// Decodes a kind byte; `None` for unknown kinds.
    pub(crate) fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Deletion),
            1 => Some(ValueKind::Value),
            2 => Some(ValueKind::BlobIndex),
            _ => None,
        }
    }

    /// True for the kinds that carry a value (inline or by pointer).
    pub(crate) fn has_value(self) -> bool {
        matches!(self, ValueKind::Value | ValueKind::BlobIndex)
    }
}

/// Packs a sequence number and kind into a trailer.
pub(crate) fn pack_trailer(seq: SequenceNumber, kind: ValueKind) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE);
    (seq << 8) | kind as u64
}

/// Appends the internal key `(user_key, seq, kind)` to `dst`.
pub(crate) fn append_internal_key(
    dst: &mut Vec<u8>,
    user_key: &[u8],
    seq: SequenceNumber,
    kind: ValueKind,
) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// Builds the internal key `(user_key, seq, kind)`.
pub(crate) fn make_internal_key(user_key: &[u8], seq: SequenceNumber, kind: ValueKind) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seq, kind);
    v
}

/// Seek target that finds the newest entry of `user_key` visible at `seq`.
pub(crate) fn lookup_key(user_key: &[u8], seq: SequenceNumber) -> Vec<u8> {
    make_internal_key(user_key, seq, ValueKind::FOR_SEEK)
}

/// An internal key split into its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedInternalKey<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// The sequence number.
    pub seq: SequenceNumber,
    /// The entry kind.
    pub kind: ValueKind,
}

/// Splits an internal key; `None` if it is too short or has an unknown kind.
pub fn parse_internal_key(ikey: &[u8]) -> Option<ParsedInternalKey<'_>> {
    let split = ikey.len().checked_sub(TRAILER_LEN)?;
    let (user_key, trailer) = ikey.split_at(split);
    let trailer = u64::from_le_bytes(trailer.try_into().ok()?);
    Some(ParsedInternalKey {
        user_key,
        seq: trailer >> 8,
        kind: ValueKind::from_u8((trailer & 0xff) as u8)?,
    })
}

/// The user-key part of an internal key (the whole slice if it is too short).
#[inline]
pub(crate) fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

/// The trailer of an internal key (0 if it is too short).
pub(crate) fn trailer(ikey: &[u8]) -> u64 {
    match ikey.len().checked_sub(TRAILER_LEN) {
        Some(split) => ikey[split..]
            .try_into()
            .map(u64::from_le_bytes)
            .unwrap_or(0),
        None => 0,
    }
}

/// Total order of internal keys (see the module docs).
#[inline]
pub(crate) fn compare_internal_keys(a: &[u8], b: &[u8]) -> Ordering {
    compare_bytes(user_key(a), user_key(b)).then_with(|| trailer(b).cmp(&trailer(a)))
}

/// Byte-wise order of `a` and `b` (`a.cmp(b)`), inlined: eight bytes at a
/// time as big-endian words, then the rest. Keys are short, so this beats
/// a call to `memcmp` on the hot paths (block seeks, memtable, merges).
#[inline]
pub(crate) fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (a8, b8) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    let (ra, rb) = (a8.remainder(), b8.remainder());
    for (x, y) in a8.zip(b8) {
        let x = u64::from_be_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]]);
        let y = u64::from_be_bytes([y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7]]);
        if x != y {
            return x.cmp(&y);
        }
    }
    for (x, y) in ra.iter().zip(rb) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let k = make_internal_key(b"abc", 42, ValueKind::Deletion);
        let p = parse_internal_key(&k).expect("parses");
        assert_eq!(p.user_key, b"abc");
        assert_eq!(p.seq, 42);
        assert_eq!(p.kind, ValueKind::Deletion);
        assert!(parse_internal_key(b"short").is_none());
        let mut bad = make_internal_key(b"k", 1, ValueKind::Value);
        let last = bad.len() - TRAILER_LEN;
        bad[last] = 0x77;
        assert!(parse_internal_key(&bad).is_none());
    }

    #[test]
    fn compare_bytes_is_slice_order() {
        let samples: [&[u8]; 12] = [
            b"",
            b"a",
            b"ab",
            b"abcdefgh",
            b"abcdefgi",
            b"abcdefgh\x00",
            b"abcdefghabcdefgh",
            b"abcdefghabcdefgg\xff",
            b"\xff",
            b"\x00\x00\x00\x00\x00\x00\x00\x00\x01",
            b"0000000000012345",
            b"0000000000012346",
        ];
        for a in samples {
            for b in samples {
                assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn ordering() {
        let a1 = make_internal_key(b"a", 1, ValueKind::Value);
        let a2 = make_internal_key(b"a", 2, ValueKind::Value);
        let a2d = make_internal_key(b"a", 2, ValueKind::Deletion);
        let b1 = make_internal_key(b"b", 1, ValueKind::Value);
        let ab = make_internal_key(b"ab", 9, ValueKind::Value);
        assert_eq!(compare_internal_keys(&a2, &a1), Ordering::Less);
        assert_eq!(compare_internal_keys(&a2, &a2d), Ordering::Less);
        assert_eq!(compare_internal_keys(&a1, &ab), Ordering::Less);
        assert_eq!(compare_internal_keys(&ab, &b1), Ordering::Less);
        assert_eq!(compare_internal_keys(&a1, &a1), Ordering::Equal);
        // A lookup key sorts before every entry of that key visible at its seq.
        let lk = lookup_key(b"a", 2);
        assert_ne!(compare_internal_keys(&lk, &a2), Ordering::Greater);
        assert_eq!(compare_internal_keys(&lk, &a1), Ordering::Less);
    }
}
