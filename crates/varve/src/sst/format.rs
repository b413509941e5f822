//! The SST on-disk framing, format version 1 (see `docs/sst-format.md`):
//! block handles, the 5-byte block trailer (compression type + masked
//! CRC32C), per-block LZ4, reading one block from a file, and the fixed
//! 80-byte footer.
//!
//! Pure functions plus one positional read; thread-safe. Invariants: a
//! block's stored checksum covers its stored contents and its type byte;
//! nothing read from disk is trusted before it is checked, and every failure
//! is an `Error::Corruption` naming the file and the block's offset. Decoding
//! never panics.

use std::path::Path;
use std::sync::Arc;

use super::block_bytes::BlockBytes;
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, RandomAccessFile};
use crate::util::checksum::{crc32c, crc32c_extend, mask, unmask};
use crate::util::coding::{decode_fixed32, decode_varint64, put_fixed32, put_varint64};

/// The table format version this build writes and the newest it reads.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The last 8 bytes of every table file.
pub(crate) const MAGIC: &[u8; 8] = b"varveSST";

/// Bytes after each block's contents: compression type u8 | masked CRC32C u32 LE.
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;

/// Size of the footer at the end of every table file.
pub(crate) const FOOTER_LEN: usize = 80;

/// Size of the footer's zero-padded area holding the three handles.
const HANDLES_AREA_LEN: usize = 64;

/// Largest encoding of a handle: two 10-byte varints.
pub(super) const MAX_HANDLE_LEN: usize = 20;

/// How a block's stored contents are compressed (the trailer's type byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Stored as is (type byte 0).
    #[default]
    None,
    /// LZ4 block format, preceded by the uncompressed length as a varint
    /// (type byte 1). Used only when it saves at least 1/8 of the block.
    Lz4,
}

impl Compression {
    /// The trailer's type byte.
    pub fn type_byte(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
        }
    }

    /// Decodes a trailer type byte; `None` for unknown types.
    pub fn from_type_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            _ => None,
        }
    }
}

/// Where a block lives: offset of its contents and their stored length
/// (excluding the 5-byte trailer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// File offset of the block's first byte.
    pub offset: u64,
    /// Stored (possibly compressed) length, trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// Appends `varint64 offset | varint64 size`.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes a handle from the start of `src`: `(handle, bytes consumed)`.
    pub fn decode(src: &[u8]) -> Option<(BlockHandle, usize)> {
        let (offset, a) = decode_varint64(src)?;
        let (size, b) = decode_varint64(src.get(a..)?)?;
        Some((BlockHandle { offset, size }, a + b))
    }

    /// Decodes a handle that must fill `src` exactly.
    pub fn decode_exact(src: &[u8]) -> Option<BlockHandle> {
        match BlockHandle::decode(src)? {
            (h, n) if n == src.len() => Some(h),
            _ => None,
        }
    }

    /// Offset just past the block's trailer, `None` on overflow.
    pub fn end(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// The masked CRC32C stored in a block trailer.
pub(super) fn block_checksum(contents: &[u8], type_byte: u8) -> u32 {
    mask(crc32c_extend(crc32c(contents), &[type_byte]))
}

/// Appends the 5-byte trailer for `contents` stored with `type_byte`.
pub(super) fn put_block_trailer(dst: &mut Vec<u8>, contents: &[u8], type_byte: u8) {
    dst.push(type_byte);
    put_fixed32(dst, block_checksum(contents, type_byte));
}

/// Compresses `raw` with LZ4 into `dst` (cleared first):
/// `varint64 uncompressed length | LZ4 block`.
pub(super) fn lz4_compress(raw: &[u8], dst: &mut Vec<u8>) {
    dst.clear();
    put_varint64(dst, raw.len() as u64);
    dst.extend_from_slice(&lz4_flex::block::compress(raw));
}

/// Largest expansion LZ4 can produce: bounds the allocation for a block whose
/// length prefix is damaged (with checksums off).
const LZ4_MAX_RATIO: u64 = 255;

/// Inverse of [`lz4_compress`]; `Err(reason)` on malformed input.
pub(super) fn lz4_decompress(stored: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let (len, n) = decode_varint64(stored).ok_or("bad LZ4 length prefix")?;
    let body = &stored[n..];
    if len > (body.len() as u64).saturating_mul(LZ4_MAX_RATIO) + 16 || len > u32::MAX as u64 {
        return Err(format!("implausible LZ4 uncompressed length {len}"));
    }
    let mut out = vec![0u8; len as usize];
    match lz4_flex::block::decompress_into(body, &mut out) {
        Ok(got) if got == out.len() => Ok(out),
        Ok(got) => Err(format!("LZ4 block decodes to {got} bytes, expected {len}")),
        Err(e) => Err(format!("bad LZ4 data: {e}")),
    }
}

/// Reads the block at `handle` and returns its uncompressed contents.
///
/// Checks that the block lies inside `[0, limit)` and that the read is
/// complete, then [`decode_block`]. Errors are `Corruption` at
/// `handle.offset` (IO errors pass through).
pub(super) fn read_block(
    file: &dyn RandomAccessFile,
    handle: BlockHandle,
    limit: u64,
    verify: bool,
) -> Result<Vec<u8>> {
    let path = file.path();
    check_handle(handle, 0, limit, path)?;
    let mut buf = vec![0u8; handle.size as usize + BLOCK_TRAILER_LEN];
    let got = file.read_at(&mut buf, handle.offset)?;
    if got != buf.len() {
        return Err(Error::corruption(
            path,
            handle.offset,
            format!("short read: {got} of {} bytes", buf.len()),
        ));
    }
    decode_block(buf, handle.offset, path, verify)
}

/// Checks that the block at `handle`, trailer included, lies in `[start, limit)`.
pub(super) fn check_handle(handle: BlockHandle, start: u64, limit: u64, path: &Path) -> Result<()> {
    match handle.end() {
        Some(end) if handle.offset >= start && end <= limit => Ok(()),
        _ => Err(Error::corruption(
            path,
            handle.offset,
            format!(
                "block handle (offset {}, size {}) outside [{start}, {limit})",
                handle.offset, handle.size
            ),
        )),
    }
}

/// The masked checksum stored in the trailer of `buf` (contents, type
/// byte, CRC) and the one computed over its contents and type byte;
/// `None` if `buf` is shorter than a trailer.
pub(crate) fn stored_checksums(buf: &[u8]) -> Option<(u32, u32)> {
    let size = buf.len().checked_sub(BLOCK_TRAILER_LEN)?;
    let stored = decode_fixed32(&buf[size + 1..])?;
    Some((stored, block_checksum(&buf[..size], buf[size])))
}

/// Checks the stored block `buf` (contents followed by the 5-byte
/// trailer, read at `offset`): the checksum (when `verify`) and the type
/// byte. Returns the contents' length and compression.
fn check_stored(
    buf: &[u8],
    offset: u64,
    path: &Path,
    verify: bool,
) -> Result<(usize, Compression)> {
    let corrupt = |reason: String| Error::corruption(path, offset, reason);
    let size = buf
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or_else(|| corrupt("block shorter than its trailer".into()))?;
    let type_byte = buf[size];
    if verify
        && let Some((stored, actual)) = stored_checksums(buf)
        && stored != actual
    {
        return Err(corrupt(format!(
            "block checksum mismatch: stored {:#010x}, computed {:#010x}",
            unmask(stored),
            unmask(actual)
        )));
    }
    match Compression::from_type_byte(type_byte) {
        Some(c) => Ok((size, c)),
        None => Err(corrupt(format!(
            "unknown block compression type {type_byte}"
        ))),
    }
}

/// Turns `buf` (stored contents followed by the 5-byte trailer, read at
/// `offset`) into the uncompressed contents: checks the checksum (when
/// `verify`), the type byte and the decompression.
pub(super) fn decode_block(
    mut buf: Vec<u8>,
    offset: u64,
    path: &Path,
    verify: bool,
) -> Result<Vec<u8>> {
    match check_stored(&buf, offset, path, verify)? {
        (size, Compression::None) => {
            buf.truncate(size);
            Ok(buf)
        }
        (size, Compression::Lz4) => {
            lz4_decompress(&buf[..size]).map_err(|r| Error::corruption(path, offset, r))
        }
    }
}

/// Like [`decode_block`] for the stored block at `chunk[start..start +
/// len]`, without copying it: an uncompressed block's contents stay a
/// range of the chunk (a compressed one is decompressed into its own
/// buffer).
pub(crate) fn decode_block_in(
    chunk: &Arc<AlignedBuf>,
    start: usize,
    len: usize,
    offset: u64,
    path: &Path,
    verify: bool,
) -> Result<BlockBytes> {
    let stored = start
        .checked_add(len)
        .and_then(|end| chunk.as_slice().get(start..end))
        .ok_or_else(|| Error::corruption(path, offset, "block outside its read-ahead chunk"))?;
    match check_stored(stored, offset, path, verify)? {
        (size, Compression::None) => BlockBytes::shared(chunk, start, size)
            .ok_or_else(|| Error::corruption(path, offset, "block outside its read-ahead chunk")),
        (size, Compression::Lz4) => lz4_decompress(&stored[..size])
            .map(BlockBytes::from)
            .map_err(|r| Error::corruption(path, offset, r)),
    }
}

/// The fixed-size record at the end of every table file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footer {
    /// The bloom filter block; size 0 means the table has no filter.
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
}

impl Footer {
    /// Encodes the 80-byte footer:
    /// `handles (64, zero padded) | masked CRC32C u32 | version u32 | magic (8)`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN);
        self.filter.encode_to(&mut out);
        self.properties.encode_to(&mut out);
        self.index.encode_to(&mut out);
        out.resize(HANDLES_AREA_LEN, 0);
        let version = FORMAT_VERSION.to_le_bytes();
        let crc = footer_checksum(&out, &version);
        put_fixed32(&mut out, crc);
        out.extend_from_slice(&version);
        out.extend_from_slice(MAGIC);
        debug_assert_eq!(out.len(), FOOTER_LEN);
        out
    }

    /// Decodes a footer read at `offset` of the file at `path`; checks magic,
    /// then checksum (over handles and version), then version
    /// (`UnsupportedVersion`), then handles.
    pub fn decode(buf: &[u8], path: &Path, offset: u64) -> Result<Footer> {
        let corrupt = |reason: &str| Error::corruption(path, offset, reason);
        if buf.len() != FOOTER_LEN {
            return Err(corrupt("file too short for a table footer"));
        }
        if &buf[72..80] != MAGIC {
            return Err(corrupt("bad table magic (not a varve SST file)"));
        }
        // The checksum covers the version: a damaged version is corruption,
        // an intact one this build does not know is a newer format.
        let stored = decode_fixed32(&buf[64..68]).unwrap_or(0);
        if stored != footer_checksum(&buf[..HANDLES_AREA_LEN], &buf[68..72]) {
            return Err(corrupt("footer checksum mismatch"));
        }
        let version = decode_fixed32(&buf[68..72]).unwrap_or(0);
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                file: path.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let area = &buf[..HANDLES_AREA_LEN];
        let mut pos = 0;
        let mut next = || -> Result<BlockHandle> {
            let (h, n) = BlockHandle::decode(&area[pos..]).ok_or_else(|| corrupt("bad handle"))?;
            pos += n;
            Ok(h)
        };
        let footer = Footer {
            filter: next()?,
            properties: next()?,
            index: next()?,
        };
        if area[pos..].iter().any(|&b| b != 0) {
            return Err(corrupt("non-zero footer padding"));
        }
        Ok(footer)
    }
}

pub(crate) fn footer_checksum(handles_area: &[u8], version: &[u8]) -> u32 {
    mask(crc32c_extend(crc32c(handles_area), version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_roundtrip() {
        for h in [
            BlockHandle::default(),
            BlockHandle {
                offset: 1 << 40,
                size: 300,
            },
            BlockHandle {
                offset: u64::MAX,
                size: u64::MAX,
            },
        ] {
            let mut buf = Vec::new();
            h.encode_to(&mut buf);
            assert!(buf.len() <= MAX_HANDLE_LEN);
            assert_eq!(BlockHandle::decode_exact(&buf), Some(h));
            assert_eq!(BlockHandle::decode_exact(&buf[..buf.len() - 1]), None);
        }
        assert_eq!(
            BlockHandle {
                offset: u64::MAX,
                size: 1
            }
            .end(),
            None
        );
    }

    #[test]
    fn footer_roundtrip_and_checks() {
        let f = Footer {
            filter: BlockHandle {
                offset: 10,
                size: 20,
            },
            properties: BlockHandle {
                offset: u64::MAX,
                size: u64::MAX,
            },
            index: BlockHandle {
                offset: 99,
                size: 1 << 33,
            },
        };
        let enc = f.encode();
        let p = Path::new("t.sst");
        assert_eq!(Footer::decode(&enc, p, 0).unwrap(), f);
        let mut bad = enc.clone();
        bad[68] = 2;
        assert!(
            Footer::decode(&bad, p, 0).unwrap_err().is_corruption(),
            "a damaged version fails the checksum"
        );
        let crc = footer_checksum(&bad[..HANDLES_AREA_LEN], &bad[68..72]);
        bad[64..68].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            Footer::decode(&bad, p, 0),
            Err(Error::UnsupportedVersion { found: 2, .. })
        ));
        for i in (0..72).chain(72..80) {
            let mut bad = enc.clone();
            bad[i] ^= 0x40;
            assert!(Footer::decode(&bad, p, 0).unwrap_err().is_corruption());
        }
    }

    #[test]
    fn lz4_roundtrip_and_garbage() {
        let raw: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        let mut c = Vec::new();
        lz4_compress(&raw, &mut c);
        assert!(c.len() < raw.len() / 4);
        assert_eq!(lz4_decompress(&c).unwrap(), raw);
        assert!(lz4_decompress(&[0xff; 3]).is_err());
        let mut huge = Vec::new();
        put_varint64(&mut huge, 1 << 40);
        assert!(lz4_decompress(&huge).is_err());
        for i in 0..c.len() {
            let mut bad = c.clone();
            bad[i] ^= 0x55;
            let _ = lz4_decompress(&bad); // must not panic
        }
    }
}
