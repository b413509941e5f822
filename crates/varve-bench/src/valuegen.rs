//! Values that compress to a chosen fraction of their size, as db_bench makes them.
//!
//! Like db_bench's `RandomGenerator`: at least 1 MiB of data is built from
//! 100-byte pieces, each `ratio * 100` random printable bytes repeated to fill
//! the piece, so a compressor shrinks it to about `ratio`. Values are windows
//! into that buffer, taken in turn. Each thread owns one generator (its own
//! position); the buffer itself is the same for every thread (fixed seed),
//! so it is built once per process and shared: building 1 MiB byte by byte
//! in each of 64 threads inside the timed window cost 5% of a 4-second
//! 64-thread `fillsync` run, time that measured neither engine.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::keygen::Rng;

/// Produces compressible values.
#[derive(Debug)]
pub struct ValueGen {
    data: Arc<Vec<u8>>,
    pos: usize,
}

/// Buffers built so far, by (value size, ratio bits).
type Buffers = Mutex<HashMap<(usize, u64), Arc<Vec<u8>>>>;

/// The buffer for (`value_size`, `ratio`), built on first use.
fn shared(value_size: usize, ratio: f64) -> Arc<Vec<u8>> {
    static BUFFERS: OnceLock<Buffers> = OnceLock::new();
    let map = BUFFERS.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    Arc::clone(
        map.entry((value_size, ratio.to_bits()))
            .or_insert_with(|| Arc::new(build(value_size, ratio))),
    )
}

/// The buffer for values up to `value_size` bytes compressing to `ratio`.
fn build(value_size: usize, ratio: f64) -> Vec<u8> {
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
    data
}

impl ValueGen {
    /// A generator for values up to `value_size` bytes compressing to `ratio`.
    pub fn new(value_size: usize, ratio: f64) -> ValueGen {
        ValueGen {
            data: shared(value_size, ratio),
            pos: 0,
        }
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

    #[test]
    fn generators_share_one_buffer_but_not_a_position() {
        let mut a = ValueGen::new(100, 0.5);
        let mut b = ValueGen::new(100, 0.5);
        assert!(Arc::ptr_eq(&a.data, &b.data));
        assert_eq!(a.generate(100), b.generate(100));
        assert!(!Arc::ptr_eq(&a.data, &ValueGen::new(100, 0.25).data));
    }
}
