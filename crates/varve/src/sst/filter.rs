//! The per-table bloom filter over user keys (see `docs/sst-format.md`).
//!
//! Layout: `bitmap (nbits / 8 bytes) | k u8`, the bitmap a whole number of
//! 64-byte blocks (cache lines). A key's probes all land in one block, so a
//! lookup costs one cache miss however large the filter: with
//! `h = xxh3_64(user_key)`, the block is `((h >> 32) * nblocks) >> 32`, and
//! probe `i` (0..k) tests bit `(a + i * b) mod 512` of that block, where
//! `a = h & 511` and `b = ((h >> 9) & 511) | 1` (bit `x` of a block is bit
//! `x % 8` of its byte `x / 8`). `k = round(bits_per_key * ln 2)` clamped to
//! 1..=30; `nbits = max(512, n * bits_per_key)` rounded up to a multiple of
//! 512. [`FilterBuilder`] is single-threaded; [`BloomFilter`] is
//! immutable and shared. Invariant: no false negatives.

use xxhash_rust::xxh3::xxh3_64;

/// Hash of a user key, as stored in the filter.
pub(crate) fn filter_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// Largest number of probes a version-1 filter may use.
pub(super) const MAX_PROBES: u8 = 30;

/// Collects the hashes of a table's distinct user keys.
#[derive(Debug)]
pub(crate) struct FilterBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl FilterBuilder {
    /// A builder with `bits_per_key` (> 0) bits of filter per key.
    pub(crate) fn new(bits_per_key: u32) -> Self {
        FilterBuilder {
            bits_per_key: bits_per_key.max(1),
            hashes: Vec::new(),
        }
    }

    /// Adds a user key (callers skip consecutive duplicates).
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        self.hashes.push(filter_hash(user_key));
    }

    /// Encodes the filter block contents.
    pub(crate) fn finish(&self) -> Vec<u8> {
        let k = ((f64::from(self.bits_per_key) * std::f64::consts::LN_2).round() as u64)
            .clamp(1, u64::from(MAX_PROBES)) as u8;
        let nbits = (self.hashes.len() as u64 * u64::from(self.bits_per_key))
            .max(BLOCK_BITS)
            .next_multiple_of(BLOCK_BITS);
        let mut out = vec![0u8; (nbits / 8) as usize];
        let nblocks = nbits / BLOCK_BITS;
        for &h in &self.hashes {
            let base = block_of(h, nblocks) * BLOCK_BYTES;
            for bit in probes(h, k) {
                out[base + bit / 8] |= 1 << (bit % 8);
            }
        }
        out.push(k);
        out
    }
}

/// Bits in one filter block: a 64-byte cache line.
const BLOCK_BITS: u64 = 512;
const BLOCK_BYTES: usize = 64;

/// The block a key's probes land in, from the hash's upper 32 bits
/// (multiply-shift range reduction, no division).
#[inline]
fn block_of(h: u64, nblocks: u64) -> usize {
    (((h >> 32) * nblocks) >> 32) as usize
}

/// The `k` bit positions inside the block, from the hash's lower 32 bits:
/// `(a + i*b) mod 512` with `b` odd, so the positions are distinct.
#[inline]
fn probes(h: u64, k: u8) -> impl Iterator<Item = usize> {
    let a = (h & 511) as usize;
    let b = (((h >> 9) & 511) | 1) as usize;
    (0..usize::from(k)).map(move |i| (a + i * b) & 511)
}

/// A decoded filter, immutable and shared by all readers of a table.
#[derive(Debug)]
pub(crate) struct BloomFilter {
    bits: Vec<u8>,
    k: u8,
}

impl BloomFilter {
    /// Decodes filter block contents; `Err(reason)` if malformed.
    pub(crate) fn decode(mut data: Vec<u8>) -> Result<BloomFilter, String> {
        let k = data.pop().ok_or("empty filter block")?;
        if k == 0 || k > MAX_PROBES {
            return Err(format!("filter has {k} probes (allowed 1..={MAX_PROBES})"));
        }
        if data.is_empty() || !data.len().is_multiple_of(BLOCK_BYTES) {
            return Err(format!(
                "filter bitmap of {} bytes is not a whole number of {BLOCK_BYTES}-byte blocks",
                data.len()
            ));
        }
        Ok(BloomFilter { bits: data, k })
    }

    /// False only if the key is certainly absent.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(filter_hash(user_key))
    }

    /// [`may_contain`](Self::may_contain) for a precomputed [`filter_hash`].
    pub(crate) fn may_contain_hash(&self, h: u64) -> bool {
        let nblocks = (self.bits.len() / BLOCK_BYTES) as u64;
        let base = block_of(h, nblocks) * BLOCK_BYTES;
        let Some(block) = self.bits.get(base..base + BLOCK_BYTES) else {
            return true; // unreachable for a decoded filter; never a false negative
        };
        probes(h, self.k).all(|bit| block[bit / 8] & (1 << (bit % 8)) != 0)
    }

    /// Bytes of memory the filter holds.
    pub(crate) fn memory(&self) -> usize {
        self.bits.capacity() + std::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(n: u32, bits: u32) -> BloomFilter {
        let mut b = FilterBuilder::new(bits);
        for i in 0..n {
            b.add(format!("key{i:08}").as_bytes());
        }
        BloomFilter::decode(b.finish()).unwrap()
    }

    #[test]
    fn no_false_negatives_and_low_fp_rate() {
        let f = build(10_000, 10);
        for i in 0..10_000u32 {
            assert!(f.may_contain(format!("key{i:08}").as_bytes()));
        }
        let fp = (0..10_000u32)
            .filter(|i| f.may_contain(format!("absent{i:08}").as_bytes()))
            .count();
        let rate = fp as f64 / 10_000.0;
        assert!(rate < 0.03, "false-positive rate {rate}");
        assert!(rate > 0.001, "suspiciously low false-positive rate {rate}");
    }

    #[test]
    fn empty_and_small_filters() {
        let f = build(0, 10);
        assert!(!f.may_contain(b"x"));
        let f = build(1, 1);
        assert!(f.may_contain(b"key00000000"));
        assert!(BloomFilter::decode(vec![]).is_err());
        assert!(BloomFilter::decode(vec![0]).is_err());
        assert!(BloomFilter::decode(vec![0xff, 31]).is_err());
        assert!(BloomFilter::decode(vec![0xff, 0]).is_err());
    }
}
