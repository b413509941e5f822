//! The blob file on-disk format, version 1 (`docs/blob-files.md`): the
//! 4 KiB header and footer pages, chunks (values back to back, then their
//! entries and a 16-byte trailer, padded to whole pages), and the pointer a
//! table stores in place of a value.
//!
//! Pure functions and plain values; thread-safe. Invariants: every chunk,
//! header and footer is a whole number of [`PAGE`]s; a chunk's trailer CRC
//! covers its entries and the trailer's own fields, and every value's CRC
//! is in its entry and in its pointer; nothing read from disk is trusted
//! before it is checked, and every failure is `Error::Corruption` naming the
//! file and offset (or `Error::UnsupportedVersion`). Decoding never panics.

use std::path::Path;

use crate::error::{Error, Result};
use crate::util::checksum::{crc32c, mask, unmask};
use crate::util::coding::{
    decode_fixed32, decode_fixed64, decode_varint32, decode_varint64, put_fixed32, put_fixed64,
    put_varint32, put_varint64,
};

/// The blob format version this build writes and the newest it reads.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Alignment and size unit of everything in a blob file.
pub(crate) const PAGE: usize = 4096;

/// First 8 bytes of a blob file.
pub(crate) const HEADER_MAGIC: &[u8; 8] = b"varveBLB";

/// First 8 bytes of a sealed blob file's last page.
pub(crate) const FOOTER_MAGIC: &[u8; 8] = b"varveBLF";

/// Bytes at the end of every chunk: entries length, value count, values
/// length (u32 each), masked CRC32C.
pub(crate) const TRAILER_LEN: usize = 16;

/// Where the CRC of a header or footer page sits (it covers the bytes
/// before it).
const PAGE_CRC_AT: usize = PAGE - 4;

/// Who wrote a blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Creator {
    /// A write lane: values in arrival order.
    WriteLane,
    /// A compaction (garbage collection): values in key order.
    Compaction,
}

impl Creator {
    fn to_u8(self) -> u8 {
        match self {
            Creator::WriteLane => 1,
            Creator::Compaction => 2,
        }
    }

    fn from_u8(b: u8) -> Option<Creator> {
        match b {
            1 => Some(Creator::WriteLane),
            2 => Some(Creator::Compaction),
            _ => None,
        }
    }
}

/// The first page of a blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlobHeader {
    /// The file's number (its name is `nnnnnn.blob`).
    pub file_number: u64,
    /// The chunk size its writer aimed at (a chunk holding one large value
    /// is bigger).
    pub chunk_size: u32,
    /// Who wrote it.
    pub creator: Creator,
}

impl BlobHeader {
    /// The header page.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut page = Vec::with_capacity(PAGE);
        page.extend_from_slice(HEADER_MAGIC);
        put_fixed32(&mut page, FORMAT_VERSION);
        put_fixed64(&mut page, self.file_number);
        put_fixed32(&mut page, self.chunk_size);
        page.push(self.creator.to_u8());
        seal_page(page)
    }

    /// Decodes and checks the header page of `path`.
    pub(crate) fn decode(page: &[u8], path: &Path) -> Result<BlobHeader> {
        if page.len() < PAGE || &page[..8] != HEADER_MAGIC {
            return Err(Error::corruption(
                path,
                0,
                "not a blob file (bad header magic)",
            ));
        }
        check_page(page, path, 0, "blob header")?;
        let version = decode_fixed32(&page[8..]).unwrap_or(0);
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                file: path.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let bad = || Error::corruption(path, 0, "malformed blob header");
        let file_number = decode_fixed64(&page[12..]).ok_or_else(bad)?;
        let chunk_size = decode_fixed32(&page[20..]).ok_or_else(bad)?;
        let creator = Creator::from_u8(page[24]).ok_or_else(bad)?;
        Ok(BlobHeader {
            file_number,
            chunk_size,
            creator,
        })
    }
}

/// The last page of a sealed blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlobFooter {
    /// Chunks in the file.
    pub chunk_count: u64,
    /// Values in the file.
    pub value_count: u64,
    /// Bytes of values in the file (entries, padding and pages excluded).
    pub value_bytes: u64,
}

impl BlobFooter {
    /// The footer page.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut page = Vec::with_capacity(PAGE);
        page.extend_from_slice(FOOTER_MAGIC);
        put_fixed64(&mut page, self.chunk_count);
        put_fixed64(&mut page, self.value_count);
        put_fixed64(&mut page, self.value_bytes);
        seal_page(page)
    }

    /// Decodes the footer page at `offset` of `path`; `Ok(None)` when the
    /// page is not a footer (a file still being written, or cut).
    pub(crate) fn decode(page: &[u8], path: &Path, offset: u64) -> Result<Option<BlobFooter>> {
        if page.len() < PAGE || &page[..8] != FOOTER_MAGIC {
            return Ok(None);
        }
        check_page(page, path, offset, "blob footer")?;
        let bad = || Error::corruption(path, offset, "malformed blob footer");
        Ok(Some(BlobFooter {
            chunk_count: decode_fixed64(&page[8..]).ok_or_else(bad)?,
            value_count: decode_fixed64(&page[16..]).ok_or_else(bad)?,
            value_bytes: decode_fixed64(&page[24..]).ok_or_else(bad)?,
        }))
    }
}

/// Zero-pads `page` to [`PAGE`] bytes and stores the masked CRC of the
/// bytes before [`PAGE_CRC_AT`] there.
fn seal_page(mut page: Vec<u8>) -> Vec<u8> {
    debug_assert!(page.len() <= PAGE_CRC_AT);
    page.resize(PAGE_CRC_AT, 0);
    let crc = mask(crc32c(&page));
    put_fixed32(&mut page, crc);
    debug_assert_eq!(page.len(), PAGE);
    page
}

fn check_page(page: &[u8], path: &Path, offset: u64, what: &str) -> Result<()> {
    let stored = decode_fixed32(&page[PAGE_CRC_AT..]).unwrap_or(0);
    if unmask(stored) != crc32c(&page[..PAGE_CRC_AT]) {
        return Err(Error::corruption(
            path,
            offset,
            format!("{what} checksum mismatch"),
        ));
    }
    Ok(())
}

/// The masked CRC32C of a value, as stored in its entry and its pointer.
pub(crate) fn value_crc(value: &[u8]) -> u32 {
    mask(crc32c(value))
}

/// What a table stores in place of a value that lives in a blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlobPointer {
    /// The blob file's number.
    pub file_number: u64,
    /// File offset of the value's first byte.
    pub offset: u64,
    /// The value's length.
    pub length: u32,
    /// [`value_crc`] of the value.
    pub crc: u32,
}

/// Longest encoding of a [`BlobPointer`].
pub(crate) const MAX_POINTER_LEN: usize = 10 + 10 + 5 + 4;

impl BlobPointer {
    /// Appends `varint64 file | varint64 offset | varint32 length | u32 crc`.
    pub(crate) fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.file_number);
        put_varint64(dst, self.offset);
        put_varint32(dst, self.length);
        put_fixed32(dst, self.crc);
    }

    /// The encoding as a new vector.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(MAX_POINTER_LEN);
        self.encode_to(&mut v);
        v
    }

    /// Decodes a whole pointer; `None` if `src` is not exactly one.
    pub(crate) fn decode(src: &[u8]) -> Option<BlobPointer> {
        let (file_number, a) = decode_varint64(src)?;
        let (offset, b) = decode_varint64(src.get(a..)?)?;
        let (length, c) = decode_varint32(src.get(a + b..)?)?;
        let rest = src.get(a + b + c..)?;
        if rest.len() != 4 {
            return None;
        }
        let crc = decode_fixed32(rest)?;
        Some(BlobPointer {
            file_number,
            offset,
            length,
            crc,
        })
    }

    /// The page-aligned file range `(start, len)` that holds the value: one
    /// direct-IO read of it returns the value at `offset - start`.
    pub(crate) fn aligned_span(&self) -> (u64, usize) {
        let page = PAGE as u64;
        let start = self.offset / page * page;
        let end = (self.offset + u64::from(self.length)).div_ceil(page) * page;
        (start, (end - start) as usize)
    }
}

/// One value's entry in its chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChunkEntry {
    /// The user key the value was written for.
    pub key: Vec<u8>,
    /// Offset of the value inside the chunk.
    pub value_offset: u32,
    /// The value's length.
    pub value_len: u32,
    /// [`value_crc`] of the value.
    pub crc: u32,
}

/// The bookkeeping of one chunk whose values are stored elsewhere (a
/// mapped file they were appended to): their entries and total length, and
/// the bytes that close the chunk.
#[derive(Debug, Default)]
pub(crate) struct ChunkEntries {
    entries: Vec<u8>,
    values_len: usize,
    count: u32,
}

impl ChunkEntries {
    /// True when no value was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Values added so far.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// Bytes of values added so far: the offset the next value gets.
    pub(crate) fn values_len(&self) -> usize {
        self.values_len
    }

    /// The size of the closed chunk if one more value of `key_len` and
    /// `value_len` bytes were added.
    pub(crate) fn size_with(&self, key_len: usize, value_len: usize) -> usize {
        let entry = 5 + key_len + 5 + 4;
        padded(self.values_len + value_len + self.entries.len() + entry + TRAILER_LEN)
    }

    /// The size the chunk has if closed now.
    pub(crate) fn size(&self) -> usize {
        padded(self.values_len + self.entries.len() + TRAILER_LEN)
    }

    /// Records a value of `value_len` bytes with CRC `crc` written for
    /// `key`; returns its offset inside the chunk.
    pub(crate) fn add(&mut self, key: &[u8], value_len: usize, crc: u32) -> u32 {
        let offset = self.values_len as u32;
        self.values_len += value_len;
        put_varint32(&mut self.entries, key.len() as u32);
        self.entries.extend_from_slice(key);
        put_varint32(&mut self.entries, value_len as u32);
        put_fixed32(&mut self.entries, crc);
        self.count += 1;
        offset
    }

    /// The bytes that follow the values to close the chunk (padding,
    /// entries, trailer); empty afterwards.
    pub(crate) fn close(&mut self) -> Vec<u8> {
        let size = self.size();
        let mut tail = vec![0u8; size - self.values_len - self.entries.len() - TRAILER_LEN];
        tail.extend_from_slice(&self.entries);
        let mut trailer = Vec::with_capacity(TRAILER_LEN);
        put_fixed32(&mut trailer, self.entries.len() as u32);
        put_fixed32(&mut trailer, self.count);
        put_fixed32(&mut trailer, self.values_len as u32);
        let crc = crc32c_of(&self.entries, &trailer);
        put_fixed32(&mut trailer, crc);
        tail.extend_from_slice(&trailer);
        debug_assert_eq!((self.values_len + tail.len()) % PAGE, 0);
        *self = ChunkEntries::default();
        tail
    }
}

/// Builds one chunk in memory: values back to back, then their entries and
/// the trailer, padded to whole pages. (For `BlobFileWriter`, see there.)
#[derive(Debug, Default)]
pub(crate) struct ChunkBuilder {
    values: Vec<u8>,
    entries: ChunkEntries,
}

impl ChunkBuilder {
    /// An empty builder.
    pub(crate) fn new() -> ChunkBuilder {
        ChunkBuilder::default()
    }

    /// True when no value was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Values added so far.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u32 {
        self.entries.count()
    }

    /// See [`ChunkEntries::size_with`].
    pub(crate) fn size_with(&self, key_len: usize, value_len: usize) -> usize {
        self.entries.size_with(key_len, value_len)
    }

    /// See [`ChunkEntries::size`].
    pub(crate) fn size(&self) -> usize {
        self.entries.size()
    }

    /// Adds a value; returns its offset inside the chunk and its CRC.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> (u32, u32) {
        let crc = value_crc(value);
        self.values.extend_from_slice(value);
        (self.entries.add(key, value.len(), crc), crc)
    }

    /// The finished chunk (a whole number of pages); the builder is empty
    /// afterwards.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut chunk = std::mem::take(&mut self.values);
        chunk.extend_from_slice(&self.entries.close());
        debug_assert_eq!(chunk.len() % PAGE, 0);
        chunk
    }
}

/// `len` rounded up to whole pages.
fn padded(len: usize) -> usize {
    len.div_ceil(PAGE) * PAGE
}

fn crc32c_of(entries: &[u8], trailer_fields: &[u8]) -> u32 {
    let crc = crate::util::checksum::crc32c_extend(crc32c(entries), trailer_fields);
    mask(crc)
}

/// The trailer at the end of `chunk` (a whole number of pages starting at
/// file offset `offset` of `path`), checked: the entries of its values.
/// Does not read or check the values themselves (see [`check_values`]).
pub(crate) fn parse_chunk(chunk: &[u8], path: &Path, offset: u64) -> Result<Vec<ChunkEntry>> {
    let bad = |why: &str| Error::corruption(path, offset, format!("blob chunk: {why}"));
    if chunk.len() < PAGE || !chunk.len().is_multiple_of(PAGE) {
        return Err(bad("not a whole number of pages"));
    }
    let t = &chunk[chunk.len() - TRAILER_LEN..];
    let fields = |i: usize| decode_fixed32(&t[4 * i..]).unwrap_or(0) as usize;
    let (entries_len, count, values_len) = (fields(0), fields(1), fields(2));
    let stored_crc = fields(3) as u32;
    if values_len + entries_len + TRAILER_LEN > chunk.len() {
        return Err(bad("trailer lengths exceed the chunk"));
    }
    let entries_at = chunk.len() - TRAILER_LEN - entries_len;
    let entries = &chunk[entries_at..entries_at + entries_len];
    if crc32c_of(entries, &t[..12]) != stored_crc {
        return Err(bad("trailer checksum mismatch"));
    }
    if padded(values_len + entries_len + TRAILER_LEN) != chunk.len() {
        return Err(bad("trailer lengths do not fill the chunk"));
    }
    let mut out = Vec::with_capacity(count.min(entries_len / 6));
    let mut pos = 0usize;
    let mut value_offset = 0usize;
    for _ in 0..count {
        let rest = entries.get(pos..).ok_or_else(|| bad("entries cut short"))?;
        let (key_len, a) = decode_varint32(rest).ok_or_else(|| bad("bad key length"))?;
        let key_end = a + key_len as usize;
        let key = rest
            .get(a..key_end)
            .ok_or_else(|| bad("key past the entries"))?;
        let (value_len, b) = decode_varint32(rest.get(key_end..).unwrap_or(&[]))
            .ok_or_else(|| bad("bad value length"))?;
        let crc = rest
            .get(key_end + b..)
            .and_then(decode_fixed32)
            .ok_or_else(|| bad("entry cut short"))?;
        out.push(ChunkEntry {
            key: key.to_vec(),
            value_offset: value_offset as u32,
            value_len,
            crc,
        });
        value_offset += value_len as usize;
        pos += key_end + b + 4;
    }
    if pos != entries_len || value_offset != values_len {
        return Err(bad("entries do not match the trailer"));
    }
    Ok(out)
}

/// Checks every value of a parsed chunk against its entry's CRC.
pub(crate) fn check_values(
    chunk: &[u8],
    entries: &[ChunkEntry],
    path: &Path,
    offset: u64,
) -> Result<()> {
    for e in entries {
        let start = e.value_offset as usize;
        let value = chunk
            .get(start..start + e.value_len as usize)
            .ok_or_else(|| Error::corruption(path, offset, "blob value past its chunk"))?;
        if value_crc(value) != e.crc {
            return Err(Error::corruption(
                path,
                offset + start as u64,
                "blob value checksum mismatch",
            ));
        }
    }
    Ok(())
}

/// The value a pointer names, cut from `span` (the bytes read at
/// `span_offset` of `path`) and checked against the pointer's CRC.
pub(crate) fn value_from_span<'a>(
    p: &BlobPointer,
    span: &'a [u8],
    span_offset: u64,
    path: &Path,
) -> Result<&'a [u8]> {
    let start = p
        .offset
        .checked_sub(span_offset)
        .ok_or_else(|| Error::corruption(path, p.offset, "blob read before the value"))?;
    let start = start as usize;
    let value = span
        .get(start..start + p.length as usize)
        .ok_or_else(|| Error::corruption(path, p.offset, "blob value past the end of the file"))?;
    if value_crc(value) != p.crc {
        return Err(Error::corruption(
            path,
            p.offset,
            "blob value does not match its pointer's checksum",
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests;
