//! The WAL's on-disk format, version 1 (see `docs/wal-format.md`): the
//! constants, the record types, and encoding/decoding of the 11-byte record
//! header and of the file-header payload.
//!
//! Pure functions and constants; thread-safe. Invariants: a physical record
//! (header + payload) never crosses a block boundary, so a payload length
//! always fits in the header's `u16`; the stored checksum is the masked
//! CRC32C of `type byte | log-number bytes | payload`. Decoding never panics:
//! short input yields `None`.

use crate::util::checksum::{crc32c, crc32c_extend, mask};
use crate::util::coding::{decode_fixed32, decode_fixed64};

/// Size of a block; physical records never cross a block boundary.
pub(crate) const BLOCK_SIZE: usize = 32 * 1024;

/// Size of a record header: CRC (4) | length (2) | type (1) | log number low bits (4).
pub(crate) const HEADER_SIZE: usize = 11;

/// The version of the block framing ([`LogWriter`](super::LogWriter), used by
/// the manifest and by WALs of older databases). WALs this build writes are
/// version [`WAL_FORMAT_V2`](super::record::WAL_FORMAT_V2).
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The first 8 bytes of the file-header payload.
pub(crate) const MAGIC: &[u8; 8] = b"varveWAL";

/// Length of the version-1 file-header payload: magic | version u32 | log number u64.
pub(crate) const FILE_HEADER_PAYLOAD_LEN: usize = 8 + 4 + 8;

/// Smallest block size the writer and reader accept (tests use small blocks).
pub(crate) const MIN_BLOCK_SIZE: usize = 64;

/// Largest block size whose fragments still fit a `u16` length.
pub(crate) const MAX_BLOCK_SIZE: usize = HEADER_SIZE + u16::MAX as usize;

/// The type byte of a record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum RecordType {
    /// Unused / preallocated space; never written as a record.
    Zero = 0,
    /// A whole payload in one physical record.
    Full = 1,
    /// The first fragment of a payload.
    First = 2,
    /// An inner fragment of a payload.
    Middle = 3,
    /// The last fragment of a payload.
    Last = 4,
    /// The file header, the first record of every log.
    FileHeader = 5,
}

impl RecordType {
    /// Decodes a type byte; `None` for bytes no version-1 writer produces.
    pub(crate) fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            0 => RecordType::Zero,
            1 => RecordType::Full,
            2 => RecordType::First,
            3 => RecordType::Middle,
            4 => RecordType::Last,
            5 => RecordType::FileHeader,
            _ => return None,
        })
    }
}

/// A decoded record header (not yet verified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// The stored (masked) CRC32C.
    pub masked_crc: u32,
    /// Payload length in bytes.
    pub len: u16,
    /// The raw type byte.
    pub kind: u8,
    /// Low 32 bits of the log number that wrote the record.
    pub log_low: u32,
}

/// The low 32 bits of a log number, as stored in every record header.
pub(crate) fn log_low(log_number: u64) -> u32 {
    log_number as u32
}

/// Unmasked CRC32C over `type | log_low (LE) | payload`.
pub(crate) fn record_crc(kind: u8, log_low: u32, payload: &[u8]) -> u32 {
    let mut prefix = [0u8; 5];
    prefix[0] = kind;
    prefix[1..].copy_from_slice(&log_low.to_le_bytes());
    crc32c_extend(crc32c(&prefix), payload)
}

/// Appends the header for `payload` to `dst`. `len` must be `payload.len()`.
pub(crate) fn put_header(
    dst: &mut Vec<u8>,
    kind: RecordType,
    log_low: u32,
    payload: &[u8],
    len: u16,
) {
    let crc = mask(record_crc(kind as u8, log_low, payload));
    dst.extend_from_slice(&crc.to_le_bytes());
    dst.extend_from_slice(&len.to_le_bytes());
    dst.push(kind as u8);
    dst.extend_from_slice(&log_low.to_le_bytes());
}

/// Decodes the header at the start of `src`; `None` if `src` is too short.
pub(crate) fn decode_header(src: &[u8]) -> Option<Header> {
    let h = src.get(..HEADER_SIZE)?;
    Some(Header {
        masked_crc: decode_fixed32(h)?,
        len: u16::from_le_bytes([h[4], h[5]]),
        kind: h[6],
        log_low: decode_fixed32(&h[7..])?,
    })
}

/// The file-header payload: magic | version (u32 LE) | log number (u64 LE).
pub(crate) fn file_header_payload(version: u32, log_number: u64) -> [u8; FILE_HEADER_PAYLOAD_LEN] {
    let mut p = [0u8; FILE_HEADER_PAYLOAD_LEN];
    p[..8].copy_from_slice(MAGIC);
    p[8..12].copy_from_slice(&version.to_le_bytes());
    p[12..].copy_from_slice(&log_number.to_le_bytes());
    p
}

/// Why a checksum-valid file-header payload was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileHeaderError {
    /// The payload does not start with [`MAGIC`] (or is shorter than magic + version).
    BadMagic,
    /// A version this build does not read.
    Version(u32),
    /// Version 1 but the payload is not [`FILE_HEADER_PAYLOAD_LEN`] bytes.
    BadLength(usize),
}

/// Parses a file-header payload; returns the full log number it names.
/// Magic and version are checked first: they are the part every version keeps.
pub(crate) fn parse_file_header(payload: &[u8]) -> Result<u64, FileHeaderError> {
    if payload.get(..8) != Some(&MAGIC[..]) {
        return Err(FileHeaderError::BadMagic);
    }
    let version = decode_fixed32(&payload[8..]).ok_or(FileHeaderError::BadMagic)?;
    if version != FORMAT_VERSION {
        return Err(FileHeaderError::Version(version));
    }
    if payload.len() != FILE_HEADER_PAYLOAD_LEN {
        return Err(FileHeaderError::BadLength(payload.len()));
    }
    decode_fixed64(&payload[12..]).ok_or(FileHeaderError::BadLength(payload.len()))
}

/// Parses a file-header payload of any version this build reads (1 or 2);
/// returns the version and the full log number it names.
pub(crate) fn parse_file_header_any(payload: &[u8]) -> Result<(u32, u64), FileHeaderError> {
    if payload.get(..8) != Some(&MAGIC[..]) {
        return Err(FileHeaderError::BadMagic);
    }
    let version = decode_fixed32(&payload[8..]).ok_or(FileHeaderError::BadMagic)?;
    if version != FORMAT_VERSION && version != super::record::WAL_FORMAT_V2 {
        return Err(FileHeaderError::Version(version));
    }
    if payload.len() != FILE_HEADER_PAYLOAD_LEN {
        return Err(FileHeaderError::BadLength(payload.len()));
    }
    let n = decode_fixed64(&payload[12..]).ok_or(FileHeaderError::BadLength(payload.len()))?;
    Ok((version, n))
}

/// The whole FILE_HEADER record (block framing, 31 bytes) of a log of
/// format `version` numbered `log_number`.
pub(crate) fn file_header_record(version: u32, log_number: u64) -> Vec<u8> {
    let payload = file_header_payload(version, log_number);
    let mut out = Vec::with_capacity(FILE_HEADER_RECORD_LEN);
    put_header(
        &mut out,
        RecordType::FileHeader,
        log_low(log_number),
        &payload,
        FILE_HEADER_PAYLOAD_LEN as u16,
    );
    out.extend_from_slice(&payload);
    out
}

/// Length of the whole FILE_HEADER record: header + payload.
pub(crate) const FILE_HEADER_RECORD_LEN: usize = HEADER_SIZE + FILE_HEADER_PAYLOAD_LEN;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::checksum::unmask;

    #[test]
    fn header_roundtrip() {
        let mut buf = Vec::new();
        put_header(&mut buf, RecordType::First, 0xdead_beef, b"abc", 3);
        assert_eq!(buf.len(), HEADER_SIZE);
        let h = decode_header(&buf).expect("header");
        assert_eq!(h.len, 3);
        assert_eq!(h.kind, RecordType::First as u8);
        assert_eq!(h.log_low, 0xdead_beef);
        assert_eq!(unmask(h.masked_crc), record_crc(2, 0xdead_beef, b"abc"));
        assert_eq!(decode_header(&buf[..HEADER_SIZE - 1]), None);
    }

    #[test]
    fn file_header_parse() {
        let p = file_header_payload(FORMAT_VERSION, 7 << 40);
        assert_eq!(parse_file_header(&p), Ok(7 << 40));
        assert_eq!(
            parse_file_header(&file_header_payload(9, 1)),
            Err(FileHeaderError::Version(9))
        );
        assert_eq!(
            parse_file_header(b"varveWA"),
            Err(FileHeaderError::BadMagic)
        );
        assert_eq!(
            parse_file_header(b"varveWAL\x01\x00"),
            Err(FileHeaderError::BadMagic)
        );
        assert_eq!(
            parse_file_header(&p[..15]),
            Err(FileHeaderError::BadLength(15))
        );
        for b in 0..=255u8 {
            let t = RecordType::from_u8(b);
            assert_eq!(t.is_some(), b <= 5);
            assert_eq!(t.map(|t| t as u8), t.map(|_| b));
        }
    }
}
