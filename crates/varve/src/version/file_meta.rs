//! [`FileMetaData`]: what the version set knows about one table file
//! (number, size, key range, sequence range, entry count).
//!
//! Plain immutable data, shared between versions through `Arc`; thread-safe.
//! Invariants (checked by [`FileMetaData::validate`] whenever a file enters
//! a version): `smallest` and `largest` are well-formed internal keys with
//! `smallest <= largest` in internal-key order, and
//! `smallest_seq <= largest_seq`.

use std::cmp::Ordering;

use crate::keys::{compare_bytes, compare_internal_keys, parse_internal_key, user_key};
use crate::range_del::RangeTombstone;

/// Metadata of one table file (`nnnnnn.sst`) in a version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileMetaData {
    /// The file number (the `nnnnnn` of `nnnnnn.sst`).
    pub number: u64,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Smallest internal key in the file.
    pub smallest: Vec<u8>,
    /// Largest internal key in the file.
    pub largest: Vec<u8>,
    /// Smallest sequence number of any entry in the file.
    pub smallest_seq: u64,
    /// Largest sequence number of any entry in the file.
    pub largest_seq: u64,
    /// Number of entries in the file.
    pub num_entries: u64,
    /// The smallest blob file number any of its entries points into; 0 when
    /// it holds no blob pointers (`docs/blob-files.md`).
    pub oldest_blob_file: u64,
    /// Every range tombstone with a sequence number up to this one that
    /// could hide an entry of the file was applied when it was written
    /// (the file holds no entry such a tombstone hides); 0: none known.
    /// Lets the version prune a tombstone once no table can hold what it
    /// hides (`docs/range-deletes.md`).
    pub range_cleared_seq: u64,
}

impl FileMetaData {
    /// User key of [`FileMetaData::smallest`].
    pub fn smallest_user_key(&self) -> &[u8] {
        user_key(&self.smallest)
    }

    /// User key of [`FileMetaData::largest`].
    pub fn largest_user_key(&self) -> &[u8] {
        user_key(&self.largest)
    }

    /// True if the table may hold an entry range tombstone `t` hides: it
    /// has entries older than `t`, was not written with `t` applied
    /// (`range_cleared_seq`), and its key range meets `t`'s.
    pub(crate) fn may_hold_hidden_by(&self, t: &RangeTombstone) -> bool {
        self.smallest_seq < t.seq
            && self.range_cleared_seq < t.seq
            && t.overlaps(self.smallest_user_key(), self.largest_user_key())
    }

    /// True if the file's user-key range intersects `[begin, end]`
    /// (inclusive; `None` is unbounded on that side).
    pub fn overlaps_user_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> bool {
        let before = end.is_some_and(|e| self.smallest_user_key() > e);
        let after = begin.is_some_and(|b| self.largest_user_key() < b);
        !before && !after
    }

    /// True if `key` lies inside the file's user-key range.
    pub fn contains_user_key(&self, key: &[u8]) -> bool {
        compare_bytes(self.smallest_user_key(), key).is_le()
            && compare_bytes(key, self.largest_user_key()).is_le()
    }

    /// Checks the invariants of the module docs; the error says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.number;
        if parse_internal_key(&self.smallest).is_none() {
            return Err(format!(
                "table {n}: smallest key is not a valid internal key"
            ));
        }
        if parse_internal_key(&self.largest).is_none() {
            return Err(format!(
                "table {n}: largest key is not a valid internal key"
            ));
        }
        if compare_internal_keys(&self.smallest, &self.largest) == Ordering::Greater {
            return Err(format!("table {n}: smallest key sorts after largest key"));
        }
        if self.smallest_seq > self.largest_seq {
            return Err(format!(
                "table {n}: smallest_seq {} > largest_seq {}",
                self.smallest_seq, self.largest_seq
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{ValueKind, make_internal_key};

    fn meta(a: &[u8], b: &[u8]) -> FileMetaData {
        FileMetaData {
            number: 1,
            smallest: make_internal_key(a, 5, ValueKind::Value),
            largest: make_internal_key(b, 3, ValueKind::Value),
            smallest_seq: 3,
            largest_seq: 5,
            ..FileMetaData::default()
        }
    }

    #[test]
    fn ranges_and_validation() {
        let m = meta(b"b", b"d");
        assert!(m.validate().is_ok());
        assert!(
            m.contains_user_key(b"b") && m.contains_user_key(b"c") && m.contains_user_key(b"d")
        );
        assert!(!m.contains_user_key(b"a") && !m.contains_user_key(b"e"));
        assert!(m.overlaps_user_range(None, None));
        assert!(m.overlaps_user_range(Some(b"d"), None));
        assert!(!m.overlaps_user_range(Some(b"e"), None));
        assert!(m.overlaps_user_range(None, Some(b"b")));
        assert!(!m.overlaps_user_range(None, Some(b"a")));
        assert!(meta(b"d", b"b").validate().is_err());
        let mut bad = meta(b"a", b"b");
        bad.smallest = b"short".to_vec();
        assert!(bad.validate().is_err());
        let mut bad = meta(b"a", b"b");
        bad.smallest_seq = 9;
        assert!(bad.validate().is_err());
    }
}
