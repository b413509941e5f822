//! [`IndexSearch`]: a compact, in-memory search array over a table's index
//! block, so that a point read finds its data block without walking the
//! index block's entries.
//!
//! Built once at table open from the (already validated) index block: the
//! user keys of all index entries share a prefix `P` (their longest common
//! prefix); for each entry it keeps the 8 bytes after `P` as a big-endian
//! `u64` ("window", zero-padded) and the file offsets where the data blocks
//! start and end. Zero-padded big-endian windows are monotone: `a <= b`
//! implies `window(a) <= window(b)`, and `window(a) < window(b)` implies
//! `a < b`. So a binary search over dense `u64`s (first over every 16th
//! window, which stays in the CPU cache, then within one group of 16: few
//! cache misses, no entry decoding, no key comparison) pins the answer
//! to the entries whose window equals the target's; only those (usually
//! none or one) are compared as full internal keys, read from the index
//! block's restart points.
//!
//! Immutable after build, `Send + Sync`. Invariants: `windows.len() + 1 ==
//! bounds.len()`, entry `i`'s data block is `[bounds[i], bounds[i + 1])`
//! (trailer included), and entry `i` of the index block is its restart
//! point `i` (the search is only built for indexes with a restart per
//! entry, which is what the table builder writes; any other index keeps the
//! plain block search).

use std::cmp::Ordering;

use crate::keys::{compare_internal_keys, user_key};

use super::block::Block;
use super::format::{BLOCK_TRAILER_LEN, BlockHandle};

/// Bytes of each key kept in the search array (one `u64`).
const WINDOW: usize = 8;

/// Windows per group of the top-level array: a search first finds its
/// group in `top` (small, stays in the CPU cache), then searches the
/// group's `GROUP` windows (two cache lines).
const GROUP: usize = 16;

/// Where a point read's target lies, per [`IndexSearch::find`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexHit {
    /// The first index entry `>=` the target is entry `.0`; its data block.
    Block(usize, BlockHandle),
    /// Every index entry is `<` the target: the key is not in the table.
    PastEnd,
    /// The index block could not decide (an undecodable entry): use the
    /// ordinary block search, which reports the damage.
    Unsure,
}

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
    bounds: Vec<u64>,
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
    /// The search array of `index`, or `None` when the index does not have
    /// one restart point per entry, an entry does not decode, or the handles
    /// do not tile the data blocks from offset 0 (the table then keeps the
    /// plain block search).
    pub(crate) fn build(index: &Block) -> Option<IndexSearch> {
        let n = index.len();
        if index.num_restarts() != n {
            return None;
        }
        let entries = (0..n).map(|i| {
            let key = index.restart_key(i)?;
            let value = index.restart_value(i)?;
            Some((key, BlockHandle::decode_exact(value)?))
        });
        let mut prefix: Option<&[u8]> = None;
        let mut bounds = Vec::with_capacity(n + 1);
        bounds.push(0u64);
        for e in entries.clone() {
            let (key, h) = e?;
            let uk = user_key(key);
            let p = prefix.get_or_insert(uk);
            let common = p.iter().zip(uk).take_while(|(a, b)| a == b).count();
            *p = &p[..common];
            if bounds.last() != Some(&h.offset) {
                return None;
            }
            bounds.push(h.end()?);
        }
        let prefix = prefix.unwrap_or_default().to_vec();
        let windows = entries
            .map(|e| e.map(|(key, _)| window(&user_key(key)[prefix.len()..])))
            .collect::<Option<Vec<u64>>>()?;
        let top = windows.iter().step_by(GROUP).copied().collect();
        Some(IndexSearch {
            prefix,
            windows,
            top,
            bounds,
        })
    }

    /// Bytes held in memory.
    pub(crate) fn memory(&self) -> usize {
        self.prefix.capacity()
            + 8 * (self.windows.capacity() + self.top.capacity() + self.bounds.capacity())
    }

    /// The first entry of `index` (the block this search was built from)
    /// that is `>=` the internal key `target`, whose user key is `uk`.
    pub(crate) fn find(&self, index: &Block, target: &[u8], uk: &[u8]) -> IndexHit {
        let n = self.windows.len();
        let p = self.prefix.len();
        let head = &uk[..uk.len().min(p)];
        match head.cmp(&self.prefix[..head.len()]) {
            Ordering::Less => return self.hit(0),
            Ordering::Greater => return self.hit(n),
            // `uk` is a proper prefix of every entry's user key: smaller.
            Ordering::Equal if uk.len() < p => return self.hit(0),
            Ordering::Equal => {}
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
        // Entries before `lo` are < target, entries from `hi` on are >
        // target; compare the ties as full internal keys.
        for i in lo..hi {
            match index.restart_key(i) {
                Some(k) if compare_internal_keys(k, target) == Ordering::Less => {}
                Some(_) => return self.hit(i),
                None => return IndexHit::Unsure,
            }
        }
        self.hit(hi)
    }

    fn hit(&self, i: usize) -> IndexHit {
        match (self.bounds.get(i), self.bounds.get(i + 1)) {
            (Some(&offset), Some(&end)) => IndexHit::Block(
                i,
                BlockHandle {
                    offset,
                    size: end - offset - BLOCK_TRAILER_LEN as u64,
                },
            ),
            _ => IndexHit::PastEnd,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::iter::InternalIterator;
    use crate::keys::{ValueKind, lookup_key, make_internal_key};
    use crate::sst::BlockBuilder;

    /// An index block over `keys` (internal keys, sorted), each block 100
    /// bytes plus trailer, and its search array.
    fn index(keys: &[Vec<u8>]) -> (Arc<Block>, IndexSearch) {
        let mut b = BlockBuilder::new(1);
        let mut off = 0u64;
        for k in keys {
            let mut v = Vec::new();
            BlockHandle {
                offset: off,
                size: 100,
            }
            .encode_to(&mut v);
            b.add(k, &v);
            off += 100 + BLOCK_TRAILER_LEN as u64;
        }
        let block = Arc::new(Block::parse(b.finish().to_vec(), "t", 0).expect("parse"));
        let search = IndexSearch::build(&block).expect("search");
        (block, search)
    }

    /// What the plain block search answers.
    fn expected(block: &Arc<Block>, target: &[u8]) -> IndexHit {
        let mut it = block.iter();
        it.seek(target);
        if !it.valid() {
            return IndexHit::PastEnd;
        }
        let h = BlockHandle::decode_exact(it.value()).expect("handle");
        let i = (h.offset / (100 + BLOCK_TRAILER_LEN as u64)) as usize;
        IndexHit::Block(i, h)
    }

    fn ik(uk: &[u8], seq: u64) -> Vec<u8> {
        make_internal_key(uk, seq, ValueKind::Value)
    }

    #[test]
    fn agrees_with_the_block_search() {
        // Shared prefixes, keys longer and shorter than the window, a user
        // key split over several entries (ties), keys that are prefixes of
        // others, and bytes 0x00 / 0xff.
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
        let (block, search) = index(&keys);
        let mut probes: Vec<Vec<u8>> = uks.clone();
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
        for uk in &probes {
            for seq in [100, 50, 30, 20, 10] {
                let target = lookup_key(uk, seq);
                assert_eq!(
                    search.find(&block, &target, uk),
                    expected(&block, &target),
                    "{uk:?} @ {seq}"
                );
            }
        }
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
            let (block, search) = index(&keys);
            for j in 0..3 * n + 3 {
                let uk = format!("{j:016}");
                for seq in [10, 9, 5, 4, 1] {
                    let target = lookup_key(uk.as_bytes(), seq);
                    assert_eq!(
                        search.find(&block, &target, uk.as_bytes()),
                        expected(&block, &target),
                        "n {n} key {uk} @ {seq}"
                    );
                }
            }
        }
    }

    #[test]
    fn single_entry_and_identical_keys() {
        let (block, search) = index(&[ik(b"k", 5)]);
        assert_eq!(search.prefix, b"k");
        for uk in [&b"j"[..], b"k", b"k\x00", b"l", b""] {
            for seq in [9, 5, 1] {
                let target = lookup_key(uk, seq);
                assert_eq!(search.find(&block, &target, uk), expected(&block, &target));
            }
        }
    }

    #[test]
    fn other_indexes_keep_the_block_search() {
        // Restart interval 2: entries are not all restart points.
        let mut b = BlockBuilder::new(2);
        for (i, k) in [b"a", b"b", b"c"].iter().enumerate() {
            let mut v = Vec::new();
            BlockHandle {
                offset: i as u64 * 105,
                size: 100,
            }
            .encode_to(&mut v);
            b.add(&ik(*k, 1), &v);
        }
        let block = Block::parse(b.finish().to_vec(), "t", 0).expect("parse");
        assert!(IndexSearch::build(&block).is_none());
        // Handles that do not tile the data blocks.
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
        let block = Block::parse(b.finish().to_vec(), "t", 0).expect("parse");
        assert!(IndexSearch::build(&block).is_none());
    }
}
