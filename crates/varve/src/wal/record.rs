//! WAL format version 2: position-independent record framing (see
//! `docs/wal-format.md`). Every record is framed on its own, so its encoded
//! size (`RECORD_HEADER_SIZE + payload length`) is known before it is placed
//! anywhere in the log — which lets writers join a log slot
//! (`wal::slots`) with the final size of their record.
//!
//! Pure functions and constants; thread-safe. Invariants: the stored
//! checksum is the masked CRC32C of the header bytes after the checksum
//! (length, type, log number) followed by the payload, so every header field
//! is covered; decoding never panics (short input yields `None`).

use crate::util::checksum::{crc32c, crc32c_extend, mask, unmask};
use crate::util::coding::decode_fixed32;

/// The WAL format version whose data records use this framing. (The file
/// header at offset 0 keeps the version-1 framing, see `format.rs`.)
pub(crate) const WAL_FORMAT_V2: u32 = 2;

/// Size of a version-2 record header:
/// CRC (4) | length u32 (4) | type (1) | log number low 32 bits (4).
pub(crate) const RECORD_HEADER_SIZE: usize = 13;

/// Type byte of a data record (a whole payload: version 2 never fragments).
pub(crate) const TYPE_DATA: u8 = 1;

/// Largest payload a version-2 record may carry (1 GiB).
pub(crate) const MAX_RECORD_PAYLOAD: usize = 1 << 30;

/// Encoded size of a record carrying `payload_len` bytes.
pub(crate) fn encoded_len(payload_len: usize) -> usize {
    RECORD_HEADER_SIZE + payload_len
}

/// The record header for `payload` written by log `log_low`.
/// `payload.len()` must be at most [`MAX_RECORD_PAYLOAD`].
pub(crate) fn header(log_low: u32, payload: &[u8]) -> [u8; RECORD_HEADER_SIZE] {
    let mut h = [0u8; RECORD_HEADER_SIZE];
    h[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[8] = TYPE_DATA;
    h[9..13].copy_from_slice(&log_low.to_le_bytes());
    let crc = mask(crc32c_extend(crc32c(&h[4..]), payload));
    h[..4].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Appends the whole framed record (header + payload) to `dst`.
pub(crate) fn encode(dst: &mut Vec<u8>, log_low: u32, payload: &[u8]) {
    dst.extend_from_slice(&header(log_low, payload));
    dst.extend_from_slice(payload);
}

/// Why the bytes at some offset are not a valid record of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RecordError {
    /// Fewer than [`RECORD_HEADER_SIZE`] bytes left.
    ShortHeader,
    /// Type byte 0: unused, zero-filled or preallocated space.
    Zero,
    /// A type byte no version-2 writer produces.
    UnknownType(u8),
    /// The length runs past the end of the file (or the format limit).
    TooLong(u32),
    /// The checksum does not match.
    Checksum,
    /// A valid record of another log (stale data of a reused file).
    OtherLog(u32),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::ShortHeader => write!(f, "file ends inside a record header"),
            RecordError::Zero => write!(f, "zero-type header (unused or preallocated space)"),
            RecordError::UnknownType(t) => write!(f, "unknown record type {t}"),
            RecordError::TooLong(n) => write!(f, "record length {n} extends beyond the file"),
            RecordError::Checksum => write!(f, "record checksum mismatch"),
            RecordError::OtherLog(l) => write!(
                f,
                "record carries log number low bits {l:#x} (stale data from a reused file?)"
            ),
        }
    }
}

/// Decodes the record at the start of `src` for log `log_low`; returns its
/// payload and total encoded length.
pub(crate) fn decode(src: &[u8], log_low: u32) -> Result<(&[u8], usize), RecordError> {
    let h = src
        .get(..RECORD_HEADER_SIZE)
        .ok_or(RecordError::ShortHeader)?;
    let kind = h[8];
    if kind == 0 {
        return Err(RecordError::Zero);
    }
    if kind != TYPE_DATA {
        return Err(RecordError::UnknownType(kind));
    }
    let len32 = decode_fixed32(&h[4..]).ok_or(RecordError::ShortHeader)?;
    let len = len32 as usize;
    if len > MAX_RECORD_PAYLOAD {
        return Err(RecordError::TooLong(len32));
    }
    let payload = src
        .get(RECORD_HEADER_SIZE..RECORD_HEADER_SIZE + len)
        .ok_or(RecordError::TooLong(len32))?;
    let stored = decode_fixed32(h).ok_or(RecordError::ShortHeader)?;
    if unmask(stored) != crc32c_extend(crc32c(&h[4..]), payload) {
        return Err(RecordError::Checksum);
    }
    let low = decode_fixed32(&h[9..]).ok_or(RecordError::ShortHeader)?;
    if low != log_low {
        return Err(RecordError::OtherLog(low));
    }
    Ok((payload, RECORD_HEADER_SIZE + len))
}

/// True if a valid record of log `log_low` starts at any offset of
/// `src[from..]` (the scan that tells a torn tail from corruption). Cheap
/// filters (type byte, log-number bytes) run before the checksum.
pub(crate) fn valid_record_follows(src: &[u8], from: usize, log_low: u32) -> bool {
    let want = log_low.to_le_bytes();
    let Some(last) = src.len().checked_sub(RECORD_HEADER_SIZE) else {
        return false;
    };
    let mut q = from;
    while q <= last {
        if src[q + 8] == TYPE_DATA
            && src[q + 9..q + 13] == want
            && decode(&src[q..], log_low).is_ok()
        {
            return true;
        }
        q += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_every_field_is_covered() {
        let mut buf = Vec::new();
        encode(&mut buf, 0xabcd_0001, b"hello");
        assert_eq!(buf.len(), encoded_len(5));
        assert_eq!(decode(&buf, 0xabcd_0001), Ok((&b"hello"[..], buf.len())));
        assert_eq!(decode(&buf, 7), Err(RecordError::OtherLog(0xabcd_0001)));
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut b = buf.clone();
                b[i] ^= 1 << bit;
                assert!(decode(&b, 0xabcd_0001).is_err(), "flip {i}/{bit} accepted");
            }
        }
        for cut in 0..buf.len() {
            assert!(decode(&buf[..cut], 0xabcd_0001).is_err());
        }
        assert_eq!(decode(&[0u8; 13], 0), Err(RecordError::Zero));
        assert!(valid_record_follows(
            &[&[0u8; 7][..], &buf].concat(),
            0,
            0xabcd_0001
        ));
        assert!(!valid_record_follows(&buf, 1, 0xabcd_0001));
    }

    #[test]
    fn empty_payload() {
        let mut buf = Vec::new();
        encode(&mut buf, 3, b"");
        assert_eq!(decode(&buf, 3), Ok((&b""[..], RECORD_HEADER_SIZE)));
    }
}
