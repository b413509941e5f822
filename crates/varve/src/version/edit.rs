//! [`VersionEdit`]: one change to the LSM shape (files added and removed,
//! counters advanced), and its encoding as a manifest record
//! (`docs/manifest-format.md`, "Version edit").
//!
//! Plain data; thread-safe. Invariants: the encoding is a sequence of tagged
//! fields (varint tag, then a payload whose layout the tag fixes); decoding
//! never panics, rejects unknown tags, repeated scalar fields, levels
//! `>= NUM_LEVELS` and trailing garbage, and round-trips exactly
//! (`decode(encode(e)) == e`).

use super::NUM_LEVELS;
use super::file_meta::FileMetaData;
use crate::range_del::RangeTombstone;
use crate::util::coding::{
    decode_length_prefixed, decode_varint64, put_length_prefixed, put_varint64,
};

/// Field tags of the version-edit encoding (format version 7; version 1
/// has tags 1-6, later versions add the tags marked with them).
pub(crate) mod tag {
    /// `log_number`: varint64.
    pub(crate) const LOG_NUMBER: u64 = 1;
    /// `next_file_number`: varint64.
    pub(crate) const NEXT_FILE_NUMBER: u64 = 2;
    /// `last_sequence`: varint64.
    pub(crate) const LAST_SEQUENCE: u64 = 3;
    /// A compact pointer: level varint, key length-prefixed.
    pub(crate) const COMPACT_POINTER: u64 = 4;
    /// A deleted file: level varint, number varint64.
    pub(crate) const DELETED_FILE: u64 = 5;
    /// A new file: level, number, size, smallest, largest, smallest_seq,
    /// largest_seq, num_entries.
    pub(crate) const NEW_FILE: u64 = 6;
    /// The database closed cleanly: the live WAL's number and the bytes it
    /// held, both varint64 (manifest format version 2).
    pub(crate) const CLEAN_CLOSE: u64 = 7;
    /// A blob file: number, state (0 open, 1 sealed, 2 closed by the open
    /// after a crash), size, value count, value bytes, all varint64
    /// (version 3).
    pub(crate) const BLOB_FILE: u64 = 8;
    /// Garbage found in a blob file: number, values, bytes (version 3).
    pub(crate) const BLOB_GARBAGE: u64 = 9;
    /// A blob file leaves the version: number (version 3).
    pub(crate) const DELETED_BLOB_FILE: u64 = 10;
    /// A new file that points into blob files: NEW_FILE's fields, then
    /// `oldest_blob_file` varint64 (version 3).
    pub(crate) const NEW_FILE_WITH_BLOBS: u64 = 11;
    /// A range tombstone enters the version: sequence varint64, start and
    /// end length-prefixed (version 4).
    pub(crate) const RANGE_TOMBSTONE: u64 = 12;
    /// A range tombstone leaves the version: its sequence varint64
    /// (version 4).
    pub(crate) const DELETED_RANGE_TOMBSTONE: u64 = 13;
    /// A new file written with range tombstones applied: NEW_FILE's
    /// fields, then `oldest_blob_file` (0: none) and `range_cleared_seq`,
    /// both varint64 (version 4).
    pub(crate) const NEW_FILE_RANGE_CLEARED: u64 = 14;
    /// A time sample for `Options::ttl`: sequence number and unix seconds
    /// (rounded down), both varint64 (versions 4-6; read, converted to the
    /// milliseconds that bound it, never written since version 7).
    pub(crate) const TIME_SAMPLE: u64 = 15;
    /// Starts the part of a record that belongs to keyspace `id`
    /// (varint32): the file, compact-pointer and range-tombstone fields
    /// after it, up to the next KEYSPACE tag, are that keyspace's. A
    /// record without one is all the default keyspace's (version 5).
    pub(crate) const KEYSPACE: u64 = 16;
    /// A keyspace is created: id varint32, name length-prefixed (version 5).
    pub(crate) const CREATED_KEYSPACE: u64 = 17;
    /// A keyspace is dropped: id varint32 (version 5).
    pub(crate) const DROPPED_KEYSPACE: u64 = 18;
    /// The id the next created keyspace takes: varint32 (version 5).
    pub(crate) const NEXT_KEYSPACE_ID: u64 = 19;
    /// A time sample for `Options::ttl`: sequence number and unix
    /// milliseconds (rounded up), both varint64 (version 7).
    pub(crate) const TIME_SAMPLE_MS: u64 = 20;
    /// The part's keyspace's expiry floor: every entry of it below this
    /// sequence number is expired, for good (varint64, version 7).
    pub(crate) const TTL_FLOOR: u64 = 21;
}

/// What an edit says about one blob file (`docs/blob-files.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlobFileEdit {
    /// The file number (`nnnnnn.blob`).
    pub number: u64,
    /// False while a write lane still appends to it; true once its footer
    /// is written and durable.
    pub sealed: bool,
    /// Its size in bytes when sealed (0 while open).
    pub size: u64,
    /// Values in it (when sealed).
    pub value_count: u64,
    /// Bytes of values in it (when sealed).
    pub value_bytes: u64,
    /// Closed by the open after a crash left it unsealed (state 2, with
    /// `sealed`): its last chunk may have values without entries, so
    /// `value_count` is 0 (unknown) and `value_bytes` is an upper bound (the
    /// bytes after the header). It is reclaimed when no table points into
    /// it any more (`docs/blob-files.md`, "Garbage collection").
    pub crash_closed: bool,
}

impl BlobFileEdit {
    /// The record of a finished (sealed) blob file.
    pub(crate) fn sealed(meta: &crate::blob::file_writer::BlobFileMeta) -> BlobFileEdit {
        BlobFileEdit {
            number: meta.number,
            sealed: true,
            size: meta.size,
            value_count: meta.value_count,
            value_bytes: meta.value_bytes,
            crash_closed: false,
        }
    }

    /// The record of a blob file closed without its footer (state 2): by
    /// the open after a crash, or by `Db::resume` after a write to it
    /// failed. `size` bytes, the first page its header.
    pub(crate) fn crash_closed(number: u64, size: u64) -> BlobFileEdit {
        BlobFileEdit {
            number,
            sealed: true,
            crash_closed: true,
            size,
            value_count: 0,
            value_bytes: size.saturating_sub(crate::blob::format::PAGE as u64),
        }
    }
}

/// One change to the set of files and counters; every field is optional.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VersionEdit {
    /// WALs with a smaller number are obsolete (their data is in tables).
    pub log_number: Option<u64>,
    /// The next unused file number.
    pub next_file_number: Option<u64>,
    /// The largest sequence number whose write is in the WALs or tables.
    pub last_sequence: Option<u64>,
    /// Files removed: `(level, file number)`.
    pub deleted_files: Vec<(usize, u64)>,
    /// Files added: `(level, metadata)`.
    pub new_files: Vec<(usize, FileMetaData)>,
    /// Where the next round-robin compaction of a level starts (internal key).
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
    /// Written by a clean close, as the last edit: `(WAL number, bytes)` of
    /// the log that was live, whose every byte was synced. Recovery then
    /// requires that log to be readable up to that offset, so a log cut
    /// (or damaged) after a clean close is `Corruption`, not a silent loss.
    pub clean_close: Option<(u64, u64)>,
    /// Blob files created or sealed.
    pub blob_files: Vec<BlobFileEdit>,
    /// Garbage found in blob files: `(number, values, bytes)`, added to what
    /// the file had.
    pub blob_garbage: Vec<(u64, u64, u64)>,
    /// Blob files that leave the version.
    pub deleted_blob_files: Vec<u64>,
    /// Range tombstones that enter the version (a flushed memtable's).
    pub range_tombstones: Vec<RangeTombstone>,
    /// Range tombstones that leave it (nothing they could hide is left),
    /// by sequence number.
    pub deleted_range_tombstones: Vec<u64>,
    /// Time samples `(sequence, unix milliseconds)`: every entry up to
    /// that sequence number was written by then (`Options::ttl`).
    pub time_samples: Vec<(u64, u64)>,
    /// The edit's keyspace's expiry floor (`Options::ttl`): its entries
    /// below this sequence number are expired and stay so; the version
    /// keeps the largest one it was given.
    pub ttl_floor: Option<u64>,
    /// The keyspace the file, compact-pointer and range-tombstone fields
    /// belong to (0: the default keyspace). The other fields are the
    /// database's, whichever keyspace the edit names.
    pub keyspace: u32,
    /// Keyspaces created: `(id, name)`.
    pub created_keyspaces: Vec<(u32, String)>,
    /// Keyspaces dropped, by id; their files leave with them.
    pub dropped_keyspaces: Vec<u32>,
    /// The id the next created keyspace takes (ids are never reused, so a
    /// WAL record of a dropped keyspace never reaches a newer one).
    pub next_keyspace_id: Option<u32>,
}

impl VersionEdit {
    /// Records that `file` is added at `level`.
    pub fn add_file(&mut self, level: usize, file: FileMetaData) {
        self.new_files.push((level, file));
    }

    /// Records that file `number` is removed from `level`.
    pub fn delete_file(&mut self, level: usize, number: u64) {
        self.deleted_files.push((level, number));
    }

    /// Encodes the edit as a manifest record payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut dst = Vec::new();
        self.encode_to(&mut dst);
        dst
    }

    /// Encodes `edits` as one manifest record, applied all or nothing: a
    /// flush of several keyspaces, or a snapshot. Each edit after the
    /// first must name a keyspace other than the default one.
    pub fn encode_group(edits: &[VersionEdit]) -> Vec<u8> {
        debug_assert!(
            edits.iter().skip(1).all(|e| e.keyspace != 0),
            "only the first edit of a group may be the default keyspace's"
        );
        let mut dst = Vec::new();
        for e in edits {
            e.encode_to(&mut dst);
        }
        dst
    }

    fn encode_to(&self, dst: &mut Vec<u8>) {
        if self.keyspace != 0 {
            put_varint64(dst, tag::KEYSPACE);
            put_varint64(dst, u64::from(self.keyspace));
        }
        for (id, name) in &self.created_keyspaces {
            put_varint64(dst, tag::CREATED_KEYSPACE);
            put_varint64(dst, u64::from(*id));
            put_length_prefixed(dst, name.as_bytes());
        }
        for id in &self.dropped_keyspaces {
            put_varint64(dst, tag::DROPPED_KEYSPACE);
            put_varint64(dst, u64::from(*id));
        }
        if let Some(id) = self.next_keyspace_id {
            put_varint64(dst, tag::NEXT_KEYSPACE_ID);
            put_varint64(dst, u64::from(id));
        }
        let scalars = [
            (tag::LOG_NUMBER, self.log_number),
            (tag::NEXT_FILE_NUMBER, self.next_file_number),
            (tag::LAST_SEQUENCE, self.last_sequence),
        ];
        for (t, v) in scalars {
            if let Some(v) = v {
                put_varint64(dst, t);
                put_varint64(dst, v);
            }
        }
        if let Some((wal, bytes)) = self.clean_close {
            put_varint64(dst, tag::CLEAN_CLOSE);
            put_varint64(dst, wal);
            put_varint64(dst, bytes);
        }
        for (level, key) in &self.compact_pointers {
            put_varint64(dst, tag::COMPACT_POINTER);
            put_varint64(dst, *level as u64);
            put_length_prefixed(dst, key);
        }
        for (level, number) in &self.deleted_files {
            put_varint64(dst, tag::DELETED_FILE);
            put_varint64(dst, *level as u64);
            put_varint64(dst, *number);
        }
        for b in &self.blob_files {
            put_varint64(dst, tag::BLOB_FILE);
            for v in [
                b.number,
                match (b.sealed, b.crash_closed) {
                    (false, _) => 0,
                    (true, false) => 1,
                    (true, true) => 2,
                },
                b.size,
                b.value_count,
                b.value_bytes,
            ] {
                put_varint64(dst, v);
            }
        }
        for &(number, count, bytes) in &self.blob_garbage {
            put_varint64(dst, tag::BLOB_GARBAGE);
            for v in [number, count, bytes] {
                put_varint64(dst, v);
            }
        }
        for &number in &self.deleted_blob_files {
            put_varint64(dst, tag::DELETED_BLOB_FILE);
            put_varint64(dst, number);
        }
        for t in &self.range_tombstones {
            put_varint64(dst, tag::RANGE_TOMBSTONE);
            put_varint64(dst, t.seq);
            put_length_prefixed(dst, &t.start);
            put_length_prefixed(dst, &t.end);
        }
        for &seq in &self.deleted_range_tombstones {
            put_varint64(dst, tag::DELETED_RANGE_TOMBSTONE);
            put_varint64(dst, seq);
        }
        for &(seq, ms) in &self.time_samples {
            put_varint64(dst, tag::TIME_SAMPLE_MS);
            put_varint64(dst, seq);
            put_varint64(dst, ms);
        }
        if let Some(floor) = self.ttl_floor {
            put_varint64(dst, tag::TTL_FLOOR);
            put_varint64(dst, floor);
        }
        for (level, f) in &self.new_files {
            let t = if f.range_cleared_seq != 0 {
                tag::NEW_FILE_RANGE_CLEARED
            } else if f.oldest_blob_file == 0 {
                tag::NEW_FILE
            } else {
                tag::NEW_FILE_WITH_BLOBS
            };
            put_varint64(dst, t);
            put_varint64(dst, *level as u64);
            put_varint64(dst, f.number);
            put_varint64(dst, f.file_size);
            put_length_prefixed(dst, &f.smallest);
            put_length_prefixed(dst, &f.largest);
            put_varint64(dst, f.smallest_seq);
            put_varint64(dst, f.largest_seq);
            put_varint64(dst, f.num_entries);
            if t == tag::NEW_FILE_RANGE_CLEARED {
                put_varint64(dst, f.oldest_blob_file);
                put_varint64(dst, f.range_cleared_seq);
            } else if t == tag::NEW_FILE_WITH_BLOBS {
                put_varint64(dst, f.oldest_blob_file);
            }
        }
    }

    /// Decodes a manifest record payload; the error says what is wrong and
    /// at which byte of the payload.
    pub fn decode(data: &[u8]) -> Result<VersionEdit, String> {
        let mut group = Self::decode_group(data)?;
        if group.len() != 1 {
            return Err(format!(
                "a record of {} keyspaces where one edit was expected",
                group.len()
            ));
        }
        Ok(group.remove(0))
    }

    /// Decodes a manifest record payload that may hold edits of several
    /// keyspaces ([`VersionEdit::encode_group`]), in order.
    pub fn decode_group(data: &[u8]) -> Result<Vec<VersionEdit>, String> {
        let mut group = Vec::new();
        let mut edit = VersionEdit::default();
        let mut r = Cursor { data, pos: 0 };
        while r.pos < data.len() {
            let at = r.pos;
            let t = r.varint("tag")?;
            match t {
                tag::KEYSPACE => {
                    let id = r.keyspace_id()?;
                    if id == 0 {
                        return Err(format!(
                            "keyspace part for the default keyspace at byte {at}"
                        ));
                    }
                    if at != 0 {
                        group.push(std::mem::take(&mut edit));
                    }
                    edit.keyspace = id;
                }
                tag::CREATED_KEYSPACE => {
                    let id = r.keyspace_id()?;
                    let name = r.bytes("keyspace name")?;
                    let name = String::from_utf8(name)
                        .map_err(|_| format!("keyspace name at byte {at} is not UTF-8"))?;
                    if id == 0 {
                        return Err(format!("keyspace 0 created at byte {at}"));
                    }
                    edit.created_keyspaces.push((id, name));
                }
                tag::DROPPED_KEYSPACE => {
                    let id = r.keyspace_id()?;
                    if id == 0 {
                        return Err(format!("the default keyspace dropped at byte {at}"));
                    }
                    edit.dropped_keyspaces.push(id);
                }
                tag::NEXT_KEYSPACE_ID => {
                    let id = r.keyspace_id()?;
                    if edit.next_keyspace_id.replace(id).is_some() {
                        return Err(format!(
                            "next keyspace id appears twice (second at byte {at})"
                        ));
                    }
                }
                tag::LOG_NUMBER => set_once(
                    &mut edit.log_number,
                    r.varint("log number")?,
                    "log number",
                    at,
                )?,
                tag::NEXT_FILE_NUMBER => set_once(
                    &mut edit.next_file_number,
                    r.varint("next file number")?,
                    "next file number",
                    at,
                )?,
                tag::LAST_SEQUENCE => set_once(
                    &mut edit.last_sequence,
                    r.varint("last sequence")?,
                    "last sequence",
                    at,
                )?,
                tag::COMPACT_POINTER => {
                    let level = r.level()?;
                    let key = r.bytes("compact pointer key")?;
                    edit.compact_pointers.push((level, key));
                }
                tag::DELETED_FILE => {
                    let level = r.level()?;
                    let number = r.varint("deleted file number")?;
                    edit.deleted_files.push((level, number));
                }
                tag::NEW_FILE | tag::NEW_FILE_WITH_BLOBS | tag::NEW_FILE_RANGE_CLEARED => {
                    let level = r.level()?;
                    let mut f = FileMetaData {
                        number: r.varint("new file number")?,
                        file_size: r.varint("new file size")?,
                        smallest: r.bytes("new file smallest key")?,
                        largest: r.bytes("new file largest key")?,
                        smallest_seq: r.varint("new file smallest seq")?,
                        largest_seq: r.varint("new file largest seq")?,
                        num_entries: r.varint("new file entry count")?,
                        oldest_blob_file: 0,
                        range_cleared_seq: 0,
                    };
                    if t == tag::NEW_FILE_WITH_BLOBS {
                        f.oldest_blob_file = r.varint("new file oldest blob file")?;
                        if f.oldest_blob_file == 0 {
                            return Err(format!("new file at byte {at} points into blob file 0"));
                        }
                    }
                    if t == tag::NEW_FILE_RANGE_CLEARED {
                        f.oldest_blob_file = r.varint("new file oldest blob file")?;
                        f.range_cleared_seq = r.varint("new file range-cleared seq")?;
                        if f.range_cleared_seq == 0 {
                            return Err(format!("new file at byte {at} cleared up to seq 0"));
                        }
                    }
                    edit.new_files.push((level, f));
                }
                tag::CLEAN_CLOSE => {
                    if edit.clean_close.is_some() {
                        return Err(format!("clean close appears twice (second at byte {at})"));
                    }
                    let wal = r.varint("clean close WAL number")?;
                    let bytes = r.varint("clean close WAL bytes")?;
                    edit.clean_close = Some((wal, bytes));
                }
                tag::BLOB_FILE => {
                    let number = r.varint("blob file number")?;
                    let (sealed, crash_closed) = match r.varint("blob file state")? {
                        0 => (false, false),
                        1 => (true, false),
                        2 => (true, true),
                        s => return Err(format!("blob file state {s} at byte {at}")),
                    };
                    edit.blob_files.push(BlobFileEdit {
                        number,
                        sealed,
                        crash_closed,
                        size: r.varint("blob file size")?,
                        value_count: r.varint("blob file value count")?,
                        value_bytes: r.varint("blob file value bytes")?,
                    });
                }
                tag::BLOB_GARBAGE => {
                    let number = r.varint("blob garbage file number")?;
                    let count = r.varint("blob garbage values")?;
                    let bytes = r.varint("blob garbage bytes")?;
                    edit.blob_garbage.push((number, count, bytes));
                }
                tag::DELETED_BLOB_FILE => {
                    let number = r.varint("deleted blob file number")?;
                    edit.deleted_blob_files.push(number);
                }
                tag::RANGE_TOMBSTONE => {
                    let seq = r.varint("range tombstone sequence")?;
                    let start = r.bytes("range tombstone start")?;
                    let end = r.bytes("range tombstone end")?;
                    if start >= end {
                        return Err(format!("empty range tombstone at byte {at}"));
                    }
                    edit.range_tombstones
                        .push(RangeTombstone { start, end, seq });
                }
                tag::DELETED_RANGE_TOMBSTONE => {
                    let seq = r.varint("deleted range tombstone sequence")?;
                    edit.deleted_range_tombstones.push(seq);
                }
                tag::TIME_SAMPLE => {
                    let seq = r.varint("time sample sequence")?;
                    let secs = r.varint("time sample seconds")?;
                    edit.time_samples
                        .push((seq, super::time_map::from_old_seconds(secs)));
                }
                tag::TIME_SAMPLE_MS => {
                    let seq = r.varint("time sample sequence")?;
                    let ms = r.varint("time sample milliseconds")?;
                    edit.time_samples.push((seq, ms));
                }
                tag::TTL_FLOOR => {
                    set_once(&mut edit.ttl_floor, r.varint("ttl floor")?, "ttl floor", at)?
                }
                other => return Err(format!("unknown field tag {other} at byte {at}")),
            }
        }
        group.push(edit);
        Ok(group)
    }
}

fn set_once(slot: &mut Option<u64>, v: u64, what: &str, at: usize) -> Result<(), String> {
    if slot.is_some() {
        return Err(format!("{what} appears twice (second at byte {at})"));
    }
    *slot = Some(v);
    Ok(())
}

/// Reads fields from an edit payload, tracking the position for errors.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn varint(&mut self, what: &str) -> Result<u64, String> {
        let rest = self.data.get(self.pos..).unwrap_or_default();
        let (v, n) = decode_varint64(rest)
            .ok_or_else(|| format!("bad or truncated {what} at byte {}", self.pos))?;
        self.pos += n;
        Ok(v)
    }

    fn keyspace_id(&mut self) -> Result<u32, String> {
        let at = self.pos;
        let v = self.varint("keyspace id")?;
        u32::try_from(v).map_err(|_| format!("keyspace id {v} at byte {at} is not 32-bit"))
    }

    fn level(&mut self) -> Result<usize, String> {
        let at = self.pos;
        let v = self.varint("level")?;
        match usize::try_from(v) {
            Ok(l) if l < NUM_LEVELS => Ok(l),
            _ => Err(format!("level {v} at byte {at} is not below {NUM_LEVELS}")),
        }
    }

    fn bytes(&mut self, what: &str) -> Result<Vec<u8>, String> {
        let rest = self.data.get(self.pos..).unwrap_or_default();
        let (s, n) = decode_length_prefixed(rest)
            .ok_or_else(|| format!("bad or truncated {what} at byte {}", self.pos))?;
        self.pos += n;
        Ok(s.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{ValueKind, make_internal_key};
    use proptest::prelude::*;

    fn arb_meta() -> impl Strategy<Value = FileMetaData> {
        (
            any::<u64>(),
            any::<u64>(),
            proptest::collection::vec(any::<u8>(), 0..20),
            proptest::collection::vec(any::<u8>(), 0..20),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            prop_oneof![Just(0u64), any::<u64>()],
            prop_oneof![Just(0u64), any::<u64>()],
        )
            .prop_map(
                |(number, file_size, smallest, largest, a, b, num_entries, oldest, cleared)| {
                    FileMetaData {
                        number,
                        file_size,
                        smallest,
                        largest,
                        smallest_seq: a,
                        largest_seq: b,
                        num_entries,
                        oldest_blob_file: oldest,
                        range_cleared_seq: cleared,
                    }
                },
            )
    }

    fn arb_edit() -> impl Strategy<Value = VersionEdit> {
        (
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            proptest::collection::vec((0..NUM_LEVELS, any::<u64>()), 0..5),
            proptest::collection::vec((0..NUM_LEVELS, arb_meta()), 0..5),
            proptest::collection::vec(
                (0..NUM_LEVELS, proptest::collection::vec(any::<u8>(), 0..12)),
                0..3,
            ),
            proptest::option::of((any::<u64>(), any::<u64>())),
            proptest::collection::vec(
                (
                    any::<u64>(),
                    0u8..3,
                    any::<u64>(),
                    any::<u64>(),
                    any::<u64>(),
                )
                    .prop_map(|(number, state, size, value_count, value_bytes)| {
                        BlobFileEdit {
                            number,
                            sealed: state > 0,
                            crash_closed: state == 2,
                            size,
                            value_count,
                            value_bytes,
                        }
                    }),
                0..3,
            ),
            proptest::collection::vec((any::<u64>(), any::<u64>(), any::<u64>()), 0..3),
            proptest::collection::vec(any::<u64>(), 0..3),
            proptest::collection::vec(
                (
                    any::<u64>(),
                    proptest::collection::vec(any::<u8>(), 0..8),
                    proptest::collection::vec(any::<u8>(), 0..8),
                )
                    .prop_filter_map("empty range", |(seq, mut a, mut b)| {
                        if a > b {
                            std::mem::swap(&mut a, &mut b);
                        }
                        (a < b).then_some(RangeTombstone {
                            start: a,
                            end: b,
                            seq,
                        })
                    }),
                0..3,
            ),
            (
                proptest::collection::vec(any::<u64>(), 0..3),
                proptest::collection::vec((any::<u64>(), any::<u64>()), 0..3),
                0u32..3,
                proptest::collection::vec((1u32..100, "[a-z]{1,6}"), 0..3),
                proptest::collection::vec(1u32..100, 0..3),
                proptest::option::of(1u32..1000),
                proptest::option::of(any::<u64>()),
            ),
        )
            .prop_map(
                |(l, n, s, d, f, c, cc, bf, bg, bd, rt, (rd, ts, ks, ck, dk, nk, tf))| {
                    VersionEdit {
                        keyspace: ks,
                        created_keyspaces: ck,
                        dropped_keyspaces: dk,
                        next_keyspace_id: nk,
                        log_number: l,
                        next_file_number: n,
                        last_sequence: s,
                        deleted_files: d,
                        new_files: f,
                        compact_pointers: c,
                        clean_close: cc,
                        blob_files: bf,
                        blob_garbage: bg,
                        deleted_blob_files: bd,
                        range_tombstones: rt,
                        deleted_range_tombstones: rd,
                        time_samples: ts,
                        ttl_floor: tf,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn roundtrip(edit in arb_edit()) {
            let enc = edit.encode();
            prop_assert_eq!(VersionEdit::decode(&enc), Ok(edit.clone()));
            // A group of the default keyspace's edit and others' decodes
            // back to the same edits.
            let mut other = edit.clone();
            other.keyspace = 7;
            let mut first = edit.clone();
            first.keyspace = 0;
            let group = vec![first, other];
            prop_assert_eq!(
                VersionEdit::decode_group(&VersionEdit::encode_group(&group)),
                Ok(group)
            );
            // Every strict prefix either fails or decodes to something else;
            // it never panics.
            for cut in 0..enc.len() {
                let _ = VersionEdit::decode(&enc[..cut]);
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = VersionEdit::decode(&data);
        }

        #[test]
        fn flipped_bytes_never_panic(edit in arb_edit(), pos in any::<usize>(), x in 1..=255u8) {
            let mut enc = edit.encode();
            if !enc.is_empty() {
                let p = pos % enc.len();
                enc[p] ^= x;
                let _ = VersionEdit::decode(&enc);
            }
        }
    }

    #[test]
    fn rejects_bad_input() {
        let mut e = VersionEdit {
            log_number: Some(3),
            ..VersionEdit::default()
        };
        e.add_file(
            1,
            FileMetaData {
                number: 7,
                smallest: make_internal_key(b"a", 1, ValueKind::Value),
                largest: make_internal_key(b"z", 1, ValueKind::Value),
                ..FileMetaData::default()
            },
        );
        let enc = e.encode();
        // Every truncation inside a field is an error (2 = after the log number).
        assert!(VersionEdit::decode(&enc[..2]).is_ok());
        for cut in (1..enc.len()).filter(|&c| c != 2) {
            assert!(VersionEdit::decode(&enc[..cut]).is_err(), "cut {cut}");
        }
        assert_eq!(VersionEdit::decode(&[]), Ok(VersionEdit::default()));
        let err = VersionEdit::decode(&[99, 0]).expect_err("unknown tag");
        assert!(err.contains("unknown field tag 99"), "{err}");
        assert!(VersionEdit::decode(&[0]).is_err());
        // Repeated scalar.
        assert!(VersionEdit::decode(&[1, 5, 1, 6]).is_err());
        // Level out of range.
        assert!(VersionEdit::decode(&[5, NUM_LEVELS as u8, 1]).is_err());
        // Trailing partial varint.
        assert!(VersionEdit::decode(&[1, 0x80]).is_err());
        // A repeated ttl floor.
        assert!(VersionEdit::decode(&[21, 5, 21, 6]).is_err());
    }

    /// A time sample of a manifest before format 7 (whole seconds rounded
    /// down) reads as the end of its second in milliseconds, so it still
    /// bounds the writes it covered; this build writes milliseconds.
    #[test]
    fn ttl_old_second_samples_read_as_milliseconds() {
        let mut old = Vec::new();
        put_varint64(&mut old, tag::TIME_SAMPLE);
        put_varint64(&mut old, 42);
        put_varint64(&mut old, 1_700_000_000);
        let e = VersionEdit::decode(&old).expect("decode");
        assert_eq!(e.time_samples, vec![(42, 1_700_000_001_000)]);
        let enc = e.encode();
        assert_eq!(enc[0], tag::TIME_SAMPLE_MS as u8);
        assert_eq!(VersionEdit::decode(&enc), Ok(e));
    }
}
