//! Values that compress to a chosen fraction of their size, as db_bench makes them.
//!
//! Like db_bench's `RandomGenerator`: at least 1 MiB of data is built from
//! 100-byte pieces, each `ratio * 100` random printable bytes repeated to fill
//! the piece, so a compressor shrinks it to about `ratio`. Values are windows
//! into that buffer, taken in turn. Each thread owns one generator.

use crate::keygen::Rng;

/// Produces compressible values.
#[derive(Debug)]
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGen {
    /// A generator for values up to `value_size` bytes compressing to `ratio`.
    pub fn new(value_size: usize, ratio: f64) -> ValueGen {
        let mut rng = Rng::new(301);
        let target = value_size.max(1 << 20);
        let mut data = Vec::with_capacity(target + 100);
        while data.len() < target {
            let raw = ((100.0 * ratio) as usize).clamp(1, 100);
            let piece: Vec<u8> = (0..raw).map(|_| b' ' + rng.below(95) as u8).collect();
            for i in 0..100 {
                data.push(piece[i % raw]);
            }
        }
        ValueGen { data, pos: 0 }
    }

    /// The next value of `len` bytes.
    pub fn generate(&mut self, len: usize) -> &[u8] {
        let at = self.next_offset(len);
        &self.data[at..at + len]
    }

    /// Where the next value of `len` bytes starts in [`ValueGen::data`]; lets
    /// a caller hold several values (a batch) at once.
    pub fn next_offset(&mut self, len: usize) -> usize {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        self.pos += len;
        self.pos - len
    }

    /// The whole generated buffer.
    pub fn data(&self) -> &[u8] {
        &self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_have_requested_length_and_repeat_pieces() {
        let mut g = ValueGen::new(100, 0.5);
        let v = g.generate(100).to_vec();
        assert_eq!(v.len(), 100);
        assert_eq!(&v[..50], &v[50..], "a piece is 50 random bytes twice");
        assert_ne!(v, g.generate(100).to_vec());
        assert_eq!(ValueGen::new(4 << 20, 0.5).generate(4 << 20).len(), 4 << 20);
    }
}
