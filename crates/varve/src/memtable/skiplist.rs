//! A concurrent skiplist of internal entries laid out in an [`Arena`], in
//! the style of LevelDB's and RocksDB's (`InlineSkipList`) concurrent-insert
//! skiplists: inserts link a node level by level with CAS, readers never lock.
//!
//! Node layout (offsets in the arena; a node's handle is the offset of its
//! level-0 link, 4-byte aligned):
//!
//! ```text
//! node - 4*(h-1) .. node + 4   links h-1 .. 0 (u32 offsets of the next node, 0 = none)
//! node + 4                     key length  (u32, internal key: user key + 8-byte trailer)
//! node + 8                     value length (u32)
//! node + 12                    key bytes, then value bytes
//! ```
//!
//! The head node is the first allocation (links only, `MAX_HEIGHT` of them),
//! so no node handle is 0 and 0 can mean "no next node".
//!
//! Thread-safety: any number of threads may call [`SkipList::insert`] and the
//! read methods at once. A node is written completely (header, key, value and
//! its own link for a level) before it is linked at that level by a
//! `Release` CAS; every link is read with `Acquire`, so a reader that reaches a
//! node sees it fully written. Nodes are linked bottom-up, and readers only
//! ever descend, so a reader that reached a node at level `l` finds its links
//! at levels `<= l` already set. Header words are atomics (relaxed, a plain
//! load on common hardware) so that loom can check this publication.
//!
//! Invariants: every level is sorted by [`keys::compare_internal_keys`]
//! (non-strictly: an inserted duplicate internal key lands right before the
//! existing equal entries); every node linked at level `l > 0` is linked at
//! level `l - 1`; nodes are never removed or changed after publication.

use std::cmp::Ordering as CmpOrdering;

use super::arena::Arena;
use super::arena::MemTableFull;
use crate::keys::{self, TRAILER_LEN};
use crate::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Tallest node. Kept tiny under loom to bound the model's state space.
#[cfg(not(loom))]
pub(crate) const MAX_HEIGHT: usize = 12;
/// Tallest node. Kept tiny under loom to bound the model's state space.
#[cfg(loom)]
pub(crate) const MAX_HEIGHT: usize = 3;

/// Size of a link or header word.
const WORD: u32 = 4;
/// Bytes from a node handle to its key: link 0 plus two length words.
const KEY_OFFSET: u32 = 3 * WORD;
/// Node alignment (that of a word).
const NODE_ALIGN: usize = WORD as usize;

/// A search target: an internal key given as its user key and its trailer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) user_key: &'a [u8],
    pub(crate) trailer: u64,
}

impl<'a> Target<'a> {
    /// Splits an internal key the way [`keys::compare_internal_keys`] does.
    pub(crate) fn from_internal_key(ikey: &'a [u8]) -> Target<'a> {
        Target {
            user_key: keys::user_key(ikey),
            trailer: keys::trailer(ikey),
        }
    }

    /// Orders the internal key `ikey` relative to this target.
    #[inline]
    fn cmp_key(&self, ikey: &[u8]) -> CmpOrdering {
        let user_key = keys::user_key(ikey);
        // Fast path: the first 8 bytes as big-endian words order the same
        // as bytewise; most keys differ there, which saves a memcmp call.
        if let (Some(a), Some(b)) = (
            user_key.first_chunk::<8>(),
            self.user_key.first_chunk::<8>(),
        ) {
            let (a, b) = (u64::from_be_bytes(*a), u64::from_be_bytes(*b));
            if a != b {
                return a.cmp(&b);
            }
        }
        user_key
            .cmp(self.user_key)
            .then_with(|| self.trailer.cmp(&keys::trailer(ikey)))
    }
}

/// Handle of a published node of one particular [`SkipList`]: only that
/// list creates it, and it must only be passed back to that list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Node(u32);

/// The skiplist; see the module docs.
pub(crate) struct SkipList {
    arena: Arena,
    head: u32,
    /// Height of the tallest node so far (a hint: levels above the real
    /// height just have empty head links).
    max_height: AtomicUsize,
    /// Number of completed inserts.
    len: AtomicUsize,
}

impl SkipList {
    /// Arena bytes of the head node.
    pub(crate) const HEAD_SIZE: usize = MAX_HEIGHT * WORD as usize;

    /// An empty list in an arena of `capacity` bytes, clamped to
    /// `HEAD_SIZE..=arena::MAX_CAPACITY`.
    pub(crate) fn new(capacity: usize) -> SkipList {
        let arena = Arena::new(capacity.max(Self::HEAD_SIZE));
        let start = arena
            .alloc(Self::HEAD_SIZE, NODE_ALIGN)
            .expect("the arena is at least HEAD_SIZE bytes");
        SkipList {
            arena,
            head: start + WORD * (MAX_HEIGHT as u32 - 1),
            max_height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
        }
    }

    /// Upper bound of the arena bytes one insert of an internal key of
    /// `key_len` bytes and a value of `value_len` bytes uses, whatever its
    /// height: links, lengths, data and worst-case alignment padding.
    pub(crate) fn node_charge(key_len: usize, value_len: usize) -> usize {
        (MAX_HEIGHT * WORD as usize + 2 * WORD as usize + NODE_ALIGN - 1)
            .saturating_add(key_len)
            .saturating_add(value_len)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.arena.capacity()
    }

    pub(crate) fn memory_usage(&self) -> usize {
        self.arena.used()
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// The link of `node` (the head or a node of this list of height `> level`).
    #[inline]
    fn link(&self, node: u32, level: usize) -> &AtomicU32 {
        // SAFETY: `node` is the head or a node handle of this list, and
        // `level` is below its height (callers only walk levels a node was
        // reached at, or link levels they allocated); so this is one of its
        // link words, inside its allocation, only ever accessed atomically.
        unsafe { self.arena.word(node - WORD * level as u32) }
    }

    /// The internal key of a published node of this list.
    #[inline]
    fn key_at(&self, node: u32) -> &[u8] {
        // SAFETY: `node` was read from a link with Acquire (or written by this
        // thread), so its header and key bytes, written before the Release
        // CAS that linked it, are visible and never change again; the header
        // word is accessed only atomically and the key only as bytes.
        unsafe {
            let len = self.arena.word(node + WORD).load(Ordering::Relaxed);
            self.arena.slice(node + KEY_OFFSET, len)
        }
    }

    /// The internal key of `node`.
    pub(crate) fn key(&self, node: Node) -> &[u8] {
        self.key_at(node.0)
    }

    /// The value of `node`.
    pub(crate) fn value(&self, node: Node) -> &[u8] {
        // SAFETY: as in `key_at`: published node, header words read
        // atomically, value bytes immutable after publication.
        unsafe {
            let key_len = self.arena.word(node.0 + WORD).load(Ordering::Relaxed);
            let value_len = self.arena.word(node.0 + 2 * WORD).load(Ordering::Relaxed);
            self.arena.slice(node.0 + KEY_OFFSET + key_len, value_len)
        }
    }

    /// Inserts the entry `(target, value)` as a node of `height` levels
    /// (`1..=MAX_HEIGHT`). Fails, changing nothing, when the arena is full.
    /// A duplicate internal key is not detected: the new node is linked
    /// before the existing equal ones.
    pub(crate) fn insert(
        &self,
        target: Target<'_>,
        value: &[u8],
        height: usize,
    ) -> Result<(), MemTableFull> {
        debug_assert!((1..=MAX_HEIGHT).contains(&height));
        let height = height.clamp(1, MAX_HEIGHT);
        let user_key_len = u32::try_from(target.user_key.len()).map_err(|_| MemTableFull)?;
        let key_len = user_key_len
            .checked_add(TRAILER_LEN as u32)
            .ok_or(MemTableFull)?;
        let value_len = u32::try_from(value.len()).map_err(|_| MemTableFull)?;
        let size = (height * WORD as usize + 2 * WORD as usize)
            .checked_add(key_len as usize)
            .and_then(|s| s.checked_add(value_len as usize))
            .ok_or(MemTableFull)?;
        let start = self.arena.alloc(size, NODE_ALIGN).ok_or(MemTableFull)?;
        // In range: `start + size <= capacity <= u32::MAX`.
        let node = start + WORD * (height as u32 - 1);
        // SAFETY: `start..start + size` is a fresh allocation that only this
        // thread knows of until the CAS below; the two header words and the
        // byte ranges (key, then value) are disjoint parts of it.
        unsafe {
            self.arena
                .word(node + WORD)
                .store(key_len, Ordering::Relaxed);
            self.arena
                .word(node + 2 * WORD)
                .store(value_len, Ordering::Relaxed);
            self.arena.write(node + KEY_OFFSET, target.user_key);
            self.arena.write(
                node + KEY_OFFSET + user_key_len,
                &target.trailer.to_le_bytes(),
            );
            self.arena.write(node + KEY_OFFSET + key_len, value);
        }

        let list_height = self
            .max_height
            .fetch_max(height, Ordering::Relaxed)
            .max(height);
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next = [0u32; MAX_HEIGHT];
        let mut before = self.head;
        // The node a level stopped at is known to be after the target: the
        // level below does not compare it again (RocksDB's InlineSkipList).
        let mut after = 0;
        for level in (0..list_height).rev() {
            (prev[level], next[level]) = self.find_splice(target, before, after, level);
            before = prev[level];
            after = next[level];
        }
        for level in 0..height {
            loop {
                self.link(node, level).store(next[level], Ordering::Relaxed);
                match self.link(prev[level], level).compare_exchange(
                    next[level],
                    node,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    // Someone linked a node after prev: search again from
                    // prev, which is still before the new key.
                    Err(_) => {
                        (prev[level], next[level]) = self.find_splice(target, prev[level], 0, level)
                    }
                }
            }
        }
        self.len.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// From `before` (the head or a node `< target` reached at `level`),
    /// walks `level` to the last node `< target` and its successor. `after`
    /// is a node known not to be `< target` (0: none), which is not
    /// compared again.
    fn find_splice(
        &self,
        target: Target<'_>,
        mut before: u32,
        after: u32,
        level: usize,
    ) -> (u32, u32) {
        loop {
            let next = self.link(before, level).load(Ordering::Acquire);
            debug_assert!(
                next == 0
                    || next != after
                    || target.cmp_key(self.key_at(next)) != CmpOrdering::Less,
                "`after` must not be before the target"
            );
            if next != 0 && next != after && target.cmp_key(self.key_at(next)) == CmpOrdering::Less
            {
                before = next;
            } else {
                return (before, next);
            }
        }
    }

    /// Descends from the head, moving right at each level while `advance`
    /// holds for the next key (`advance` must be monotone: true for a prefix
    /// of the list). Returns the last node advanced to (the head if none)
    /// and the level-0 successor it saw.
    fn walk(&self, mut advance: impl FnMut(&[u8]) -> bool) -> (u32, u32) {
        let mut x = self.head;
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        let mut rejected = 0;
        loop {
            let next = self.link(x, level).load(Ordering::Acquire);
            if next != 0 && next != rejected && advance(self.key_at(next)) {
                x = next;
            } else if level == 0 {
                return (x, next);
            } else {
                rejected = next;
                level -= 1;
            }
        }
    }

    fn handle(&self, node: u32) -> Option<Node> {
        (node != 0 && node != self.head).then_some(Node(node))
    }

    /// The first node.
    pub(crate) fn first(&self) -> Option<Node> {
        self.handle(self.link(self.head, 0).load(Ordering::Acquire))
    }

    /// The last node.
    pub(crate) fn last(&self) -> Option<Node> {
        self.handle(self.walk(|_| true).0)
    }

    /// The node after `node`.
    pub(crate) fn next(&self, node: Node) -> Option<Node> {
        self.handle(self.link(node.0, 0).load(Ordering::Acquire))
    }

    /// The first node `>= target`.
    pub(crate) fn seek_ge(&self, target: Target<'_>) -> Option<Node> {
        self.handle(self.walk(|k| target.cmp_key(k) == CmpOrdering::Less).1)
    }

    /// The last node `<= target`.
    pub(crate) fn seek_le(&self, target: Target<'_>) -> Option<Node> {
        self.handle(self.walk(|k| target.cmp_key(k) != CmpOrdering::Greater).0)
    }

    /// The last node `< target`.
    pub(crate) fn seek_lt(&self, target: Target<'_>) -> Option<Node> {
        self.handle(self.walk(|k| target.cmp_key(k) == CmpOrdering::Less).0)
    }

    /// Checks the invariants of every level (sorted; level `l` nodes also at
    /// `l - 1`) and returns the number of level-0 nodes. Test helper: run it
    /// when no insert is in progress.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> usize {
        let height = self.max_height.load(Ordering::Relaxed);
        let mut upper: Vec<u32> = Vec::new();
        let mut count = 0;
        for level in (0..height).rev() {
            let mut nodes = Vec::new();
            let mut x = self.link(self.head, level).load(Ordering::Acquire);
            while x != 0 {
                if let Some(&p) = nodes.last() {
                    assert_ne!(
                        keys::compare_internal_keys(self.key_at(p), self.key_at(x)),
                        CmpOrdering::Greater,
                        "level {level} is sorted"
                    );
                }
                nodes.push(x);
                x = self.link(x, level).load(Ordering::Acquire);
            }
            let here: std::collections::HashSet<u32> = nodes.iter().copied().collect();
            assert!(
                upper.iter().all(|n| here.contains(n)),
                "every node of level {} is also at level {level}",
                level + 1
            );
            count = nodes.len();
            upper = nodes;
        }
        count
    }
}

/// A random height in `1..=MAX_HEIGHT`, each level with probability 1/4 of
/// the one below, from a per-thread xorshift64* generator.
#[cfg(not(loom))]
pub(crate) fn random_height(_user_key: &[u8]) -> usize {
    use std::cell::Cell;

    use crate::sync::atomic::AtomicU64;

    static SEEDS: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            (SEEDS.fetch_add(1, Ordering::Relaxed) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        );
    }
    let r = STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    });
    // P(leading_zeros >= 2k) = 4^-k.
    1 + (r.leading_zeros() as usize / 2).min(MAX_HEIGHT - 1)
}

/// Under loom the height is a fixed function of the user key (sum of its
/// bytes), so that every model execution is deterministic.
#[cfg(loom)]
pub(crate) fn random_height(user_key: &[u8]) -> usize {
    1 + user_key.iter().map(|&b| b as usize).sum::<usize>() % MAX_HEIGHT
}

#[cfg(all(test, not(loom)))]
mod cmp_tests {
    use super::*;
    use crate::keys::{ValueKind, compare_internal_keys, make_internal_key};

    /// The word-at-a-time fast path of `cmp_key` orders exactly as
    /// `compare_internal_keys`: keys shorter than a word, keys sharing
    /// their first 8 bytes, prefixes of each other, high bytes.
    #[test]
    fn cmp_key_agrees_with_internal_key_order() {
        let users: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0xff],
            b"abc".to_vec(),
            b"abcdefg".to_vec(),
            b"abcdefgh".to_vec(),
            b"abcdefgh\0".to_vec(),
            b"abcdefgi".to_vec(),
            b"abcdefghij".to_vec(),
            b"abcdefghik".to_vec(),
            vec![0x80; 8],
            vec![0x7f; 16],
            vec![0xff; 9],
            // Ordered by an early byte against their last: a word compared
            // in the wrong byte order gets these backwards.
            b"abzzzzzz".to_vec(),
            b"acaaaaaa".to_vec(),
            b"acaaaaaa-tail".to_vec(),
        ];
        let mut keys = Vec::new();
        for u in &users {
            for seq in [0u64, 1, 7] {
                keys.push(make_internal_key(u, seq, ValueKind::Value));
                keys.push(make_internal_key(u, seq, ValueKind::Deletion));
            }
        }
        for a in &keys {
            let target = Target::from_internal_key(a);
            for b in &keys {
                assert_eq!(
                    target.cmp_key(b),
                    compare_internal_keys(b, a),
                    "{b:?} against target {a:?}"
                );
            }
        }
    }
}
