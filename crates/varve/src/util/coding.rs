//! Fixed-width little-endian and varint integer coding, as used by every
//! on-disk format (see `docs/`). Decoders never panic on short or bad input:
//! they return `None`, and the caller turns that into a `Corruption` error
//! that names the file. Pure functions; thread-safe.

/// Appends `v` as 4 little-endian bytes.
pub(crate) fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
pub(crate) fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads 4 little-endian bytes at the start of `src`.
pub(crate) fn decode_fixed32(src: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(src.get(..4)?.try_into().ok()?))
}

/// Reads 8 little-endian bytes at the start of `src`.
pub(crate) fn decode_fixed64(src: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(src.get(..8)?.try_into().ok()?))
}

/// Appends `v` as a LEB128 varint (1 to 10 bytes).
pub(crate) fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends `v` as a LEB128 varint (1 to 5 bytes).
pub(crate) fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Number of bytes [`put_varint64`] writes for `v`.
#[cfg(test)]
pub(crate) fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a varint64 from the start of `src`: `(value, bytes consumed)`.
#[inline]
pub(crate) fn decode_varint64(src: &[u8]) -> Option<(u64, usize)> {
    // Fast path: most lengths in blocks and batches fit in one byte.
    match src.first() {
        Some(&b) if b < 0x80 => Some((u64::from(b), 1)),
        Some(_) => decode_varint64_slow(src),
        None => None,
    }
}

#[inline(never)]
fn decode_varint64_slow(src: &[u8]) -> Option<(u64, usize)> {
    let mut result = 0u64;
    for (i, &byte) in src.iter().enumerate().take(10) {
        if i == 9 && byte > 1 {
            return None; // overflows 64 bits
        }
        result |= u64::from(byte & 0x7f) << (7 * i as u32);
        if byte & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Decodes a varint32 from the start of `src`: `(value, bytes consumed)`.
#[inline]
pub(crate) fn decode_varint32(src: &[u8]) -> Option<(u32, usize)> {
    let (v, n) = decode_varint64(src)?;
    Some((u32::try_from(v).ok()?, n))
}

/// Appends a varint length followed by the bytes.
pub(crate) fn put_length_prefixed(dst: &mut Vec<u8>, data: &[u8]) {
    put_varint64(dst, data.len() as u64);
    dst.extend_from_slice(data);
}

/// Reads a length-prefixed slice from the start of `src`: `(slice, bytes consumed)`.
pub(crate) fn decode_length_prefixed(src: &[u8]) -> Option<(&[u8], usize)> {
    let (len, n) = decode_varint64(src)?;
    let len = usize::try_from(len).ok()?;
    let end = n.checked_add(len)?;
    Some((src.get(n..end)?, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_roundtrip() {
        let values = [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX,
        ];
        for v in values {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(buf.len(), varint_len(v));
            assert_eq!(decode_varint64(&buf), Some((v, buf.len())));
            // Every strict prefix is rejected rather than misread.
            for cut in 0..buf.len() {
                assert_eq!(decode_varint64(&buf[..cut]), None);
            }
        }
    }

    #[test]
    fn varint_overflow_rejected() {
        assert_eq!(decode_varint64(&[0xff; 11]), None);
        assert_eq!(
            decode_varint64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            None
        );
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::from(u32::MAX) + 1);
        assert_eq!(decode_varint32(&buf), None);
    }

    #[test]
    fn fixed_roundtrip() {
        let mut buf = Vec::new();
        put_fixed32(&mut buf, 0xdead_beef);
        put_fixed64(&mut buf, 0x0123_4567_89ab_cdef);
        assert_eq!(decode_fixed32(&buf), Some(0xdead_beef));
        assert_eq!(decode_fixed64(&buf[4..]), Some(0x0123_4567_89ab_cdef));
        assert_eq!(decode_fixed64(&buf[5..]), None);
    }

    #[test]
    fn length_prefixed() {
        let mut buf = Vec::new();
        put_length_prefixed(&mut buf, b"abc");
        assert_eq!(decode_length_prefixed(&buf), Some((&b"abc"[..], 4)));
        assert_eq!(decode_length_prefixed(&buf[..3]), None);
    }
}
