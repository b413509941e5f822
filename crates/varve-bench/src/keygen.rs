//! Keys and the random numbers that choose them, as db_bench makes them.
//!
//! A key is the 8-byte big-endian encoding of its number followed by ASCII
//! `'0'` padding up to `key_size` (db_bench's `GenerateKeyFromInt`; shorter
//! keys keep the low-order bytes). [`KeyGen`] yields key numbers in one of
//! db_bench's write modes. [`Rng`] is SplitMix64: tiny, fast, deterministic
//! for a seed, and the same for every engine. Nothing here is shared between
//! threads; each thread owns its generators.

/// SplitMix64 pseudo-random generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n == 0`), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Writes key number `v` into `buf` (resized to `key_size`), db_bench style.
pub fn make_key(v: u64, key_size: usize, buf: &mut Vec<u8>) {
    buf.clear();
    let be = v.to_be_bytes();
    let n = key_size.min(8);
    buf.extend_from_slice(&be[8 - n..]);
    buf.resize(key_size, b'0');
}

/// The order in which a write workload visits key numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// 0, 1, 2, ... (fillseq).
    Sequential,
    /// Uniform in `0..num`, with repeats (fillrandom, overwrite).
    Random,
    /// A random permutation of `0..num` (filluniquerandom).
    UniqueRandom,
}

/// Yields key numbers for a write workload.
#[derive(Debug)]
pub struct KeyGen {
    mode: WriteMode,
    num: u64,
    next: u64,
    perm: Vec<u64>,
}

impl KeyGen {
    /// A generator over the key space `0..num`; `rng` shuffles the permutation.
    pub fn new(mode: WriteMode, num: u64, rng: &mut Rng) -> KeyGen {
        let mut perm = Vec::new();
        if mode == WriteMode::UniqueRandom {
            perm = (0..num).collect();
            for i in (1..perm.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                perm.swap(i, j);
            }
        }
        KeyGen {
            mode,
            num,
            next: 0,
            perm,
        }
    }

    /// The next key number.
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        match self.mode {
            WriteMode::Sequential => {
                let v = self.next;
                self.next += 1;
                v
            }
            WriteMode::Random => rng.below(self.num),
            WriteMode::UniqueRandom => {
                let v = if self.perm.is_empty() {
                    0
                } else {
                    self.perm[(self.next % self.perm.len() as u64) as usize]
                };
                self.next += 1;
                v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_big_endian_then_zero_padded() {
        let mut k = Vec::new();
        make_key(0x0102, 16, &mut k);
        assert_eq!(&k[..8], &[0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(&k[8..], b"00000000");
        make_key(0x0102, 4, &mut k);
        assert_eq!(k, vec![0, 0, 1, 2]);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        make_key(255, 16, &mut a);
        make_key(256, 16, &mut b);
        assert!(a < b, "byte order follows number order");
    }

    #[test]
    fn unique_random_is_a_permutation() {
        let mut rng = Rng::new(7);
        let mut g = KeyGen::new(WriteMode::UniqueRandom, 1000, &mut rng);
        let mut seen: Vec<u64> = (0..1000).map(|_| g.next(&mut rng)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = Rng::new(1);
        assert!((0..10_000).all(|_| rng.below(13) < 13));
        assert_eq!(rng.below(0), 0);
    }
}
