//! [`WriteBatch`]: an ordered list of puts and deletes applied atomically.
//!
//! The batch keeps its encoded form (the WAL payload) as it is built, so a
//! write costs no second encoding. Layout (format in `docs/write-batch.md`):
//! `sequence: u64 LE | count: u32 LE | records...`, each record
//! `kind: u8 | varint key_len | key | (varint value_len | value)?`; a range
//! deletion is kind 3 with its end key as the value. A keyspace marker
//! (kind 4, `varint32 id`, format version 3) says that the records after
//! it, up to the next marker, belong to keyspace `id`; records before any
//! marker belong to the default keyspace. Markers are not counted.
//! Not thread-safe while being built; immutable once handed to `Db::write`.

use crate::keys::{MAX_SEQUENCE, SequenceNumber, ValueKind};
use crate::util::coding::{
    decode_fixed32, decode_fixed64, decode_length_prefixed, put_length_prefixed,
};

/// Record kind of a range deletion (batch format version 2). It is a batch
/// record only: the engine keeps range tombstones apart from internal keys
/// (`crate::range_del`), so it is not a [`ValueKind`].
pub(crate) const RANGE_DELETION: u8 = 3;

/// Record kind of a keyspace marker (batch format version 3): not an
/// operation; the records after it belong to the keyspace it names.
pub(crate) const KEYSPACE_MARKER: u8 = 4;

/// Bytes of the batch header (sequence + count).
pub(crate) const HEADER_LEN: usize = 12;

/// One operation of a batch, borrowed from its encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Set `key` to `value`.
    Put {
        /// The key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
    },
    /// Delete `key`.
    Delete {
        /// The key.
        key: &'a [u8],
    },
    /// Set `key` to a value kept in a blob file (`docs/blob-files.md`):
    /// the engine writes this in place of a large [`Put`](Self::Put).
    PutBlob {
        /// The key.
        key: &'a [u8],
        /// The encoded pointer to the value.
        pointer: &'a [u8],
    },
    /// Delete every key in `[start, end)`.
    DeleteRange {
        /// The first key deleted.
        start: &'a [u8],
        /// The first key after the range (exclusive).
        end: &'a [u8],
    },
}

impl BatchOp<'_> {
    /// The operation's key (a range deletion's start).
    pub fn key(&self) -> &[u8] {
        match self {
            BatchOp::Put { key, .. } | BatchOp::Delete { key } | BatchOp::PutBlob { key, .. } => {
                key
            }
            BatchOp::DeleteRange { start, .. } => start,
        }
    }
}

/// An atomic group of puts and deletes.
///
/// ```
/// let mut batch = varve::WriteBatch::new();
/// batch.put(b"k1", b"v1");
/// batch.delete(b"k0");
/// assert_eq!(batch.len(), 2);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    /// The keyspace the next record belongs to unless a marker says
    /// otherwise (the last marker written; 0 before any).
    keyspace: u32,
    /// Some record belongs to a keyspace other than the default one.
    multi: bool,
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("count", &self.count)
            .field("bytes", &self.rep.len())
            .finish()
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
            count: 0,
            keyspace: 0,
            multi: false,
        }
    }

    /// An empty batch with room for one entry of a `key_len`-byte key and a
    /// `value_len`-byte value, so that adding it allocates once (a single
    /// `put` is on every write's path).
    pub(crate) fn for_one(key_len: usize, value_len: usize) -> Self {
        // A keyspace marker (kind byte and a varint32), kind byte, two
        // varint32 lengths (at most 5 bytes each).
        let mut rep = Vec::with_capacity(HEADER_LEN + 6 + 1 + 5 + key_len + 5 + value_len);
        rep.resize(HEADER_LEN, 0);
        WriteBatch {
            rep,
            count: 0,
            keyspace: 0,
            multi: false,
        }
    }

    /// Makes the next record belong to keyspace `id` (writes a marker when
    /// it changes).
    pub(crate) fn select_keyspace(&mut self, id: u32) {
        if id != self.keyspace {
            self.rep.push(KEYSPACE_MARKER);
            crate::util::coding::put_varint64(&mut self.rep, u64::from(id));
            self.keyspace = id;
            self.multi |= id != 0;
        }
    }

    /// Whether some record belongs to a keyspace other than the default.
    pub(crate) fn has_keyspaces(&self) -> bool {
        self.multi
    }

    /// Adds `key = value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.put_to(0, key.as_ref(), value.as_ref());
    }

    /// Adds `key = value` in keyspace `id`.
    pub(crate) fn put_to(&mut self, id: u32, key: &[u8], value: &[u8]) {
        self.select_keyspace(id);
        self.rep.push(ValueKind::Value as u8);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self.bump();
    }

    /// Adds a deletion of `key` in keyspace `id`.
    pub(crate) fn delete_to(&mut self, id: u32, key: &[u8]) {
        self.select_keyspace(id);
        self.rep.push(ValueKind::Deletion as u8);
        put_length_prefixed(&mut self.rep, key);
        self.bump();
    }

    /// Adds a deletion of `start..end` in keyspace `id`.
    pub(crate) fn delete_range_to(&mut self, id: u32, start: &[u8], end: &[u8]) {
        self.select_keyspace(id);
        self.rep.push(RANGE_DELETION);
        put_length_prefixed(&mut self.rep, start);
        put_length_prefixed(&mut self.rep, end);
        self.bump();
    }

    /// Adds `key` with a value kept in a blob file (`pointer` is the
    /// encoded [`crate::blob::format::BlobPointer`]).
    #[cfg(test)]
    pub(crate) fn put_blob_index(&mut self, key: &[u8], pointer: &[u8]) {
        self.put_blob_index_to(0, key, pointer);
    }

    /// [`put_blob_index`](Self::put_blob_index) in keyspace `id`.
    pub(crate) fn put_blob_index_to(&mut self, id: u32, key: &[u8], pointer: &[u8]) {
        self.select_keyspace(id);
        self.rep.push(ValueKind::BlobIndex as u8);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, pointer);
        self.bump();
    }

    /// Adds a deletion of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.delete_to(0, key.as_ref());
    }

    /// Adds a deletion of every key in `range` (`start..end`: `end` is not
    /// deleted; an empty range deletes nothing, and `Db::write` refuses
    /// `start > end`). It is one record, whatever the range holds.
    ///
    /// ```
    /// let mut batch = varve::WriteBatch::new();
    /// batch.delete_range(b"user/".as_slice()..b"user0".as_slice());
    /// assert_eq!(batch.len(), 1);
    /// ```
    pub fn delete_range<K: AsRef<[u8]>>(&mut self, range: std::ops::Range<K>) {
        self.delete_range_to(0, range.start.as_ref(), range.end.as_ref());
    }

    fn bump(&mut self) {
        self.count += 1;
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
        self.count = 0;
        self.keyspace = 0;
        self.multi = false;
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Size of the encoded batch in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.rep.len()
    }

    /// The operations, in order.
    pub fn iter(&self) -> impl Iterator<Item = BatchOp<'_>> {
        // A batch built through the API always decodes; `decode_ops` only
        // fails on bytes that came from disk, which go through `from_encoded`.
        decode_ops(&self.rep[HEADER_LEN..])
            .map_while(Result::ok)
            .map(|(_, op)| op)
    }

    /// The operations, in order, each with its keyspace id.
    pub(crate) fn iter_in(&self) -> impl Iterator<Item = (u32, BatchOp<'_>)> {
        decode_ops(&self.rep[HEADER_LEN..]).map_while(Result::ok)
    }

    /// The encoding, with the sequence number stamped by [`set_sequence`](Self::set_sequence).
    pub(crate) fn encoded(&self) -> &[u8] {
        &self.rep
    }

    /// The sequence number of the batch's first operation.
    pub(crate) fn sequence(&self) -> SequenceNumber {
        decode_fixed64(&self.rep).unwrap_or(0)
    }

    /// Stamps the sequence number of the first operation.
    pub(crate) fn set_sequence(&mut self, seq: SequenceNumber) {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
    }

    /// Appends every operation of `other` (tests; the slot write path never
    /// merges batches).
    #[cfg(test)]
    pub(crate) fn append(&mut self, other: &WriteBatch) {
        self.select_keyspace(0);
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
        self.keyspace = other.keyspace;
        self.multi |= other.multi;
        self.count += other.count;
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
    }

    /// Parses a batch read from the WAL, checking that the header's count
    /// matches the records, that every record is well-formed, and that the
    /// sequence numbers (`sequence..sequence + count`, and `sequence` itself
    /// for an empty batch) stay within [`MAX_SEQUENCE`] (an internal key
    /// keeps 56 bits of sequence).
    pub(crate) fn from_encoded(data: &[u8]) -> Result<WriteBatch, String> {
        if data.len() < HEADER_LEN {
            return Err(format!(
                "write batch of {} bytes is shorter than its header",
                data.len()
            ));
        }
        let sequence = decode_fixed64(data).ok_or("short batch header")?;
        let count = decode_fixed32(&data[8..]).ok_or("short batch header")?;
        if sequence.saturating_add(u64::from(count.max(1)) - 1) > MAX_SEQUENCE {
            return Err(format!(
                "write batch of {count} records at sequence {sequence} passes the largest \
                 sequence number {MAX_SEQUENCE}"
            ));
        }
        let mut seen = 0u32;
        let (mut keyspace, mut multi) = (0, false);
        for op in decode_ops(&data[HEADER_LEN..]) {
            keyspace = op?.0;
            multi |= keyspace != 0;
            seen += 1;
        }
        if seen != count {
            return Err(format!(
                "write batch header says {count} records, found {seen}"
            ));
        }
        Ok(WriteBatch {
            rep: data.to_vec(),
            count,
            keyspace,
            multi,
        })
    }
}

/// Decodes the records after the header, each with its keyspace. A marker
/// that no record follows is an error.
fn decode_ops(mut data: &[u8]) -> impl Iterator<Item = Result<(u32, BatchOp<'_>), String>> {
    let mut keyspace = 0u32;
    std::iter::from_fn(move || {
        let parsed = (|| {
            while data.first() == Some(&KEYSPACE_MARKER) {
                let (id, n) = crate::util::coding::decode_varint64(&data[1..])
                    .ok_or("truncated keyspace marker")?;
                keyspace = u32::try_from(id).map_err(|_| format!("keyspace id {id} too large"))?;
                data = &data[1 + n..];
                if data.is_empty() {
                    return Err("a keyspace marker ends the batch".to_string());
                }
            }
            let Some((&tag, rest)) = data.split_first() else {
                return Ok(None);
            };
            let (key, n) = decode_length_prefixed(rest).ok_or("truncated key")?;
            let rest = &rest[n..];
            if tag == RANGE_DELETION {
                let (end, m) = decode_length_prefixed(rest).ok_or("truncated range end")?;
                return Ok(Some((BatchOp::DeleteRange { start: key, end }, &rest[m..])));
            }
            let kind =
                ValueKind::from_u8(tag).ok_or_else(|| format!("unknown record kind {tag}"))?;
            match kind {
                ValueKind::Value => {
                    let (value, m) = decode_length_prefixed(rest).ok_or("truncated value")?;
                    Ok(Some((BatchOp::Put { key, value }, &rest[m..])))
                }
                ValueKind::Deletion => Ok(Some((BatchOp::Delete { key }, rest))),
                ValueKind::BlobIndex => {
                    let (pointer, m) = decode_length_prefixed(rest).ok_or("truncated pointer")?;
                    Ok(Some((BatchOp::PutBlob { key, pointer }, &rest[m..])))
                }
            }
        })();
        match parsed {
            Ok(None) => None,
            Ok(Some((op, rest))) => {
                data = rest;
                Some(Ok((keyspace, op)))
            }
            Err(e) => {
                data = &[];
                Some(Err(e))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_and_iterate() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.delete(b"b");
        b.put(b"", b"");
        b.delete_range(b"c"..b"f");
        b.set_sequence(77);
        let ops: Vec<_> = b.iter().collect();
        assert_eq!(
            ops,
            vec![
                BatchOp::Put {
                    key: b"a",
                    value: b"1"
                },
                BatchOp::Delete { key: b"b" },
                BatchOp::Put {
                    key: b"",
                    value: b""
                },
                BatchOp::DeleteRange {
                    start: b"c",
                    end: b"f"
                },
            ]
        );
        let parsed = WriteBatch::from_encoded(b.encoded()).expect("parses");
        assert_eq!(parsed.sequence(), 77);
        assert_eq!(parsed.len(), 4);
        let enc = b.encoded();
        for cut in HEADER_LEN..enc.len() {
            assert!(WriteBatch::from_encoded(&enc[..cut]).is_err(), "cut {cut}");
        }
        assert_eq!(parsed, b);
    }

    #[test]
    fn append_merges() {
        let mut a = WriteBatch::new();
        a.put(b"x", b"1");
        let mut b = WriteBatch::new();
        b.delete(b"y");
        b.put(b"z", b"2");
        a.append(&b);
        assert_eq!(a.len(), 3);
        assert_eq!(WriteBatch::from_encoded(a.encoded()).expect("ok").len(), 3);
    }

    #[test]
    fn rejects_damage() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        let enc = b.encoded().to_vec();
        for cut in 0..enc.len() {
            assert!(WriteBatch::from_encoded(&enc[..cut]).is_err(), "cut {cut}");
        }
        let mut bad = enc.clone();
        bad[HEADER_LEN] = 9;
        assert!(WriteBatch::from_encoded(&bad).is_err());
        let mut bad = enc;
        bad[8] = 2;
        assert!(WriteBatch::from_encoded(&bad).is_err());
    }

    /// Found by the `write_batch` fuzz target
    /// (`fuzz/regressions/write_batch/sequence-past-56-bits`): a batch whose
    /// sequence numbers do not fit an internal key's 56 bits used to decode,
    /// and recovery then packed a truncated sequence into the memtable (a
    /// debug assertion in debug builds).
    #[test]
    fn rejects_sequences_past_the_56_bit_limit() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        b.delete(b"d");
        for (seq, ok) in [
            (MAX_SEQUENCE - 1, true),
            (MAX_SEQUENCE, false),
            (MAX_SEQUENCE + 1, false),
            (0x4100_0000_0000_0001, false),
            (u64::MAX, false),
        ] {
            b.set_sequence(seq);
            assert_eq!(
                WriteBatch::from_encoded(b.encoded()).is_ok(),
                ok,
                "{seq:#x}"
            );
        }
        // An empty batch consumes no sequence number, but its sequence
        // must still be one (recovery counts from it).
        let mut empty = WriteBatch::new();
        empty.set_sequence(MAX_SEQUENCE);
        assert!(WriteBatch::from_encoded(empty.encoded()).is_ok());
        empty.set_sequence(u64::MAX);
        assert!(WriteBatch::from_encoded(empty.encoded()).is_err());
    }
}
