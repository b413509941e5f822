//! [`IndexSearch`]: a compact, in-memory search array over a table's index
//! block, so that a point read finds its data block without touching the
//! index block.
//!
//! Built once at table open from the (already validated) index block: the
//! user keys of all index entries share a prefix `P` (their longest common
//! prefix); for each entry it keeps the 8 bytes after `P` as a big-endian
//! `u64` ("window", zero-padded) and the file offsets where the data blocks
//! start and end. Zero-padded big-endian windows are monotone: `a <= b`
//! implies `window(a) <= window(b)`, and `window(a) < window(b)` implies
//! `a < b`. So a binary search over dense `u64`s (first over every 16th
//! window, which stays in the CPU cache, then within one group of 16: few
//! cache misses, no entry decoding, no key comparison) narrows the first
//! index entry `>=` a target to `lo..=hi`: entries before `lo` are smaller
//! than the target's user key, entry `hi` (if any) is larger, and the
//! entries in between (usually none) have the target's window. The reader
//! then searches data blocks `lo, lo + 1, ...` and stops at the first that
//! holds an entry `>=` the target: every entry of a block is `<=` its index
//! separator, so a block whose separator is `<` the target holds nothing
//! `>=` it.
//!
//! Immutable after build, `Send + Sync`. Invariants: `windows.len() + 1 ==
//! bounds.len()`; entry `i`'s data block is `[bounds[i], bounds[i + 1])`,
//! trailer included; `top[k] == windows[GROUP * k]`.

use std::sync::Arc;

use crate::internal_iter::InternalIterator;
use crate::keys::user_key;

use super::block::Block;
use super::format::{BLOCK_TRAILER_LEN, BlockHandle};

/// Bytes of each key kept in the search array (one `u64`).
const WINDOW: usize = 8;

/// Windows per group of the top-level array: a search first finds its
/// group in `top` (small, stays in the CPU cache), then searches the
/// group's `GROUP` windows (two cache lines).
const GROUP: usize = 16;

/// The search array of one index block (see the module docs).
#[derive(Debug)]
pub(crate) struct IndexSearch {
    /// Common prefix of every index entry's user key.
    prefix: Vec<u8>,
    /// Per entry: the 8 bytes of its user key after `prefix`, big-endian.
    windows: Vec<u64>,
    /// `windows[GROUP * k]` for every group `k`.
    top: Vec<u64>,
    /// `bounds[i]..bounds[i + 1]`: entry `i`'s data block, trailer included.
    /// Shared with background read-ahead readers, which use it to verify
    /// the blocks a chunk holds whole (`sst::readahead::chunk_check`).
    bounds: Arc<[u64]>,
}

/// The `WINDOW` bytes of `rest` as a big-endian `u64`, zero-padded.
#[inline]
fn window(rest: &[u8]) -> u64 {
    let mut w = [0u8; WINDOW];
    let n = rest.len().min(WINDOW);
    w[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(w)
}

impl IndexSearch {
    /// The search array of `index`, or `None` when an entry does not decode
    /// or the handles do not tile the data blocks from offset 0 (the table
    /// then keeps the plain block search; `Table::open` has already
    /// rejected such an index).
    pub(crate) fn build(index: &Arc<Block>) -> Option<IndexSearch> {
        // The entries are sorted, so the common prefix of all user keys is
        // that of the first and the last (an unsorted index, which only a
        // checksum collision could bring, gives wrong answers, as the block
        // search would, and never a panic).
        let mut it = index.iter();
        it.seek_to_last();
        let last = it.valid().then(|| user_key(it.key()).to_vec());
        it.seek_to_first();
        let p = match (&last, it.valid()) {
            (Some(l), true) => {
                let f = user_key(it.key());
                f.iter().zip(l).take_while(|(a, b)| a == b).count()
            }
            _ => 0,
        };
        let prefix = last.map(|mut l| {
            l.truncate(p);
            l
        });
        let mut bounds = Vec::with_capacity(index.len() + 1);
        let mut windows = Vec::with_capacity(index.len());
        bounds.push(0u64);
        while it.valid() {
            let h = BlockHandle::decode_exact(it.value())?;
            if bounds.last() != Some(&h.offset) {
                return None;
            }
            bounds.push(h.end()?);
            windows.push(window(user_key(it.key()).get(p..)?));
            it.next();
        }
        it.status().ok()?;
        let top = windows.iter().step_by(GROUP).copied().collect();
        Some(IndexSearch {
            prefix: prefix.unwrap_or_default(),
            windows,
            top,
            bounds: bounds.into(),
        })
    }

    /// Bytes held in memory.
    pub(crate) fn memory(&self) -> usize {
        self.prefix.capacity()
            + 8 * (self.windows.capacity() + self.top.capacity() + self.bounds.len())
    }

    /// Number of index entries (data blocks).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.windows.len()
    }

    /// `(lo, hi)`: the first index entry `>=` any internal key with user
    /// key `uk` is one of `lo..=hi` (`hi == len()`: possibly none).
    pub(crate) fn find(&self, uk: &[u8]) -> (usize, usize) {
        let n = self.windows.len();
        let p = self.prefix.len();
        let head = &uk[..uk.len().min(p)];
        match head.cmp(&self.prefix[..head.len()]) {
            std::cmp::Ordering::Less => return (0, 0),
            std::cmp::Ordering::Greater => return (n, n),
            // `uk` is a proper prefix of every entry's user key: smaller.
            std::cmp::Ordering::Equal if uk.len() < p => return (0, 0),
            std::cmp::Ordering::Equal => {}
        }
        let t = window(&uk[p..]);
        // Group `g` is the first whose first window is >= t, so the first
        // window >= t is in group `g - 1` or is group `g`'s first.
        let g = self.top.partition_point(|&w| w < t);
        let start = g.saturating_sub(1) * GROUP;
        let end = (g * GROUP).min(n);
        let lo = start
            + self
                .windows
                .get(start..end)
                .map_or(0, |ws| ws.partition_point(|&w| w < t));
        let mut hi = lo;
        while hi < n && self.windows[hi] == t {
            hi += 1;
        }
        (lo, hi)
    }

    /// Where every data block starts, then where the last one ends.
    pub(crate) fn bounds(&self) -> &Arc<[u64]> {
        &self.bounds
    }

    /// The data block of index entry `i`; `None` if `i >= len()`.
    pub(crate) fn handle(&self, i: usize) -> Option<BlockHandle> {
        let (&offset, &end) = (self.bounds.get(i)?, self.bounds.get(i + 1)?);
        Some(BlockHandle {
            offset,
            size: end.checked_sub(offset + BLOCK_TRAILER_LEN as u64)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::keys::{ValueKind, lookup_key, make_internal_key};
    use crate::sst::BlockBuilder;

    const STRIDE: u64 = 100 + BLOCK_TRAILER_LEN as u64;

    /// An index block over `keys` (internal keys, sorted), each data block
    /// 100 bytes plus trailer, and its search array.
    fn index(keys: &[Vec<u8>]) -> (Arc<Block>, IndexSearch) {
        let mut b = BlockBuilder::new(1);
        for (i, k) in keys.iter().enumerate() {
            let mut v = Vec::new();
            BlockHandle {
                offset: i as u64 * STRIDE,
                size: 100,
            }
            .encode_to(&mut v);
            b.add(k, &v);
        }
        let block = Arc::new(Block::parse(b.finish().to_vec(), "t", 0).expect("parse"));
        let search = IndexSearch::build(&block).expect("search");
        assert_eq!(search.len(), keys.len());
        for i in 0..keys.len() {
            let h = search.handle(i).expect("handle");
            assert_eq!((h.offset, h.size), (i as u64 * STRIDE, 100));
        }
        assert!(search.handle(keys.len()).is_none());
        (block, search)
    }

    /// The plain block search's answer: the first entry `>= target`.
    fn expected(block: &Arc<Block>, target: &[u8]) -> usize {
        let mut it = block.iter();
        it.seek(target);
        if !it.valid() {
            return block.len();
        }
        let h = BlockHandle::decode_exact(it.value()).expect("handle");
        (h.offset / STRIDE) as usize
    }

    fn ik(uk: &[u8], seq: u64) -> Vec<u8> {
        make_internal_key(uk, seq, ValueKind::Value)
    }

    /// `find` brackets the block search's answer for every probe and seq.
    fn check(keys: &[Vec<u8>], probes: &[Vec<u8>], max_spread: usize) {
        let (block, search) = index(keys);
        for uk in probes {
            let (lo, hi) = search.find(uk);
            assert!(hi - lo <= max_spread, "{uk:?}: {lo}..={hi}");
            for seq in [100, 50, 30, 20, 10, 9, 5, 4, 1] {
                let j = expected(&block, &lookup_key(uk, seq));
                assert!(lo <= j && j <= hi, "{uk:?} @ {seq}: {j} not in {lo}..={hi}");
            }
        }
    }

    #[test]
    fn brackets_the_block_search() {
        // Shared prefixes, keys longer and shorter than the window, a user
        // key split over several entries, keys that are prefixes of others,
        // and bytes 0x00 / 0xff.
        let mut uks: Vec<Vec<u8>> = vec![
            b"pre".to_vec(),
            b"pre\x00".to_vec(),
            b"pre\x00\x00".to_vec(),
            b"pre0000000000001".to_vec(),
            b"pre00000000000010".to_vec(),
            b"pre0000000000002".to_vec(),
            b"pre00000000abc".to_vec(),
            b"pre1".to_vec(),
            b"pre1\xff\xff\xff\xff\xff\xff\xff\xff".to_vec(),
            b"pre2".to_vec(),
        ];
        uks.sort();
        let mut keys = Vec::new();
        for (i, uk) in uks.iter().enumerate() {
            keys.push(ik(uk, 50));
            if i % 3 == 0 {
                keys.push(ik(uk, 20)); // same user key, older entry
            }
        }
        let mut probes = uks.clone();
        probes.extend([
            b"".to_vec(),
            b"a".to_vec(),
            b"pr".to_vec(),
            b"prf".to_vec(),
            b"pre00000000000005".to_vec(),
            b"pre00000000000009".to_vec(),
            b"pre3".to_vec(),
            b"zzz".to_vec(),
        ]);
        check(&keys, &probes, keys.len());
    }

    #[test]
    fn many_groups() {
        // db_bench-like keys (zero-padded numbers), every 3rd number, with
        // some user keys split over two entries: many groups of `GROUP`.
        for n in [1usize, GROUP - 1, GROUP, GROUP + 1, 5 * GROUP + 3, 300] {
            let mut keys = Vec::new();
            for i in 0..n {
                let uk = format!("{:016}", 3 * i);
                keys.push(ik(uk.as_bytes(), 9));
                if i % 7 == 0 {
                    keys.push(ik(uk.as_bytes(), 4));
                }
            }
            let probes: Vec<Vec<u8>> = (0..3 * n + 3)
                .map(|j| format!("{j:016}").into_bytes())
                .collect();
            // A window covers the whole key here: the spread is the user
            // key's own entries.
            check(&keys, &probes, 2);
        }
    }

    #[test]
    fn single_entry_and_empty_index() {
        let keys = [ik(b"k", 5)];
        let (_, search) = index(&keys);
        assert_eq!(search.prefix, b"k");
        let probes = [&b"j"[..], b"k", b"k\x00", b"l", b""].map(|p| p.to_vec());
        check(&keys, &probes, 1);
        let (_, empty) = index(&[]);
        assert_eq!(empty.find(b"k"), (0, 0));
        assert!(empty.handle(0).is_none());
    }

    #[test]
    fn handles_that_do_not_tile_keep_the_block_search() {
        let mut b = BlockBuilder::new(1);
        for (i, k) in [b"a", b"b"].iter().enumerate() {
            let mut v = Vec::new();
            BlockHandle {
                offset: i as u64 * 500,
                size: 100,
            }
            .encode_to(&mut v);
            b.add(&ik(*k, 1), &v);
        }
        let block = Arc::new(Block::parse(b.finish().to_vec(), "t", 0).expect("parse"));
        assert!(IndexSearch::build(&block).is_none());
    }
}
