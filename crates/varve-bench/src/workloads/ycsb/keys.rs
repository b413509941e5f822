//! YCSB record keys: `user` followed by the decimal FNV-64 hash of the key
//! number (`CoreWorkload.buildKeyName` with `insertorder=hashed`, YCSB's
//! default, and `zeropadding=1`), so consecutive inserts land all over the
//! key space. Keys are 5 to 23 bytes, almost all 22 or 23.
//!
//! Pure functions; the caller owns the buffer.

use std::io::Write;

use super::generators::fnv_hash64;

/// Writes the key of record number `keynum` into `buf`.
pub fn key_of(keynum: u64, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(b"user");
    // Writing a number into a Vec cannot fail.
    let _ = write!(buf, "{}", fnv_hash64(keynum));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_user_and_the_hash() {
        let mut k = Vec::new();
        key_of(0, &mut k);
        assert_eq!(k, b"user6284781860667377211");
        assert_eq!(k.len(), 23);
        let lens: Vec<usize> = (0..1000)
            .map(|i| {
                key_of(i, &mut k);
                k.len()
            })
            .collect();
        assert!(lens.iter().all(|&l| (5..=23).contains(&l)));
        let mean = lens.iter().sum::<usize>() as f64 / lens.len() as f64;
        assert!(mean > 22.0, "mean key length {mean}");
    }
}
