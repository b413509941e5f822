//! CRC32C checksums, masked the LevelDB way.
//!
//! A CRC stored next to data that itself contains CRCs is weak, so stored
//! checksums are *masked* (rotated and offset). Every on-disk record and
//! block of varve stores a masked CRC32C. Pure functions; thread-safe.

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C of `data`.
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Extends a CRC32C with more data.
pub(crate) fn crc32c_extend(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// Masks a CRC for storage.
pub(crate) fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
pub(crate) fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        // RFC 3720 test vector: 32 bytes of zeros.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn extend_equals_whole() {
        let a = b"hello ";
        let b = b"world";
        assert_eq!(crc32c_extend(crc32c(a), b), crc32c(b"hello world"));
    }

    #[test]
    fn mask_roundtrip_and_differs() {
        for c in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask(mask(c)), c);
            assert_ne!(mask(c), c);
        }
    }
}
