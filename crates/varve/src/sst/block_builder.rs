//! Builds the uncompressed contents of one block: prefix-compressed entries
//! followed by the restart array (see `docs/sst-format.md`).
//!
//! Entry: `varint32 shared | varint32 non_shared | varint32 value_len |
//! key[shared..] | value`. Every `restart_interval`-th entry is a restart
//! point: it stores its whole key (`shared = 0`) and its offset goes to the
//! restart array, `u32 LE` each, then `u32 LE` count. Single-threaded, owned
//! by one table builder. Invariant: keys are added in strictly increasing
//! internal-key order (checked by `debug_assert`).

use crate::keys::compare_internal_keys;
use crate::util::coding::{put_fixed32, put_varint32};

/// Accumulates entries of one block.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    counter: usize,
    entries: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    /// A builder putting a restart point every `restart_interval` entries
    /// (at least 1).
    pub(crate) fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            counter: 0,
            entries: 0,
            last_key: Vec::new(),
        }
    }

    /// Forgets everything added, keeping the allocations.
    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.entries = 0;
        self.last_key.clear();
    }

    /// True when nothing was added since the last reset.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Number of entries added.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries
    }

    /// Size [`finish`](Self::finish) would return now.
    pub(crate) fn current_size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Adds an entry. `key` must sort after every key added before.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(
            self.entries == 0 || compare_internal_keys(&self.last_key, key).is_lt(),
            "block keys must be strictly increasing"
        );
        let mut shared = 0;
        if self.counter < self.restart_interval {
            shared = self
                .last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        let non_shared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.entries += 1;
    }

    /// Appends the restart array and returns the finished contents; call
    /// [`reset`](Self::reset) before reusing the builder.
    pub(crate) fn finish(&mut self) -> &[u8] {
        for &r in &self.restarts {
            put_fixed32(&mut self.buf, r);
        }
        put_fixed32(&mut self.buf, self.restarts.len() as u32);
        &self.buf
    }
}
