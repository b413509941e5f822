//! One LRU shard: a hash map from key to the value, a "referenced" bit and a
//! slot in a slab of nodes that form a doubly linked list by index (most
//! recently inserted or rescued at the head; a hit only sets the map entry's
//! referenced bit, and eviction gives a referenced tail entry a second
//! chance by moving it to the head, as CLOCK does, so a hit touches the map
//! entry alone, no node), charged in bytes.
//!
//! Not thread-safe by itself: the block cache puts each shard behind a
//! mutex. Invariants: `usage` is the sum of the charges of the entries held
//! and, after every insert, `usage <= capacity`; every map entry names a live
//! slot and every live slot is on the list exactly once.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A fast, non-cryptographic hasher for the cache's small integer keys
/// (FxHash's multiply-rotate). Keys come from the engine, not from users,
/// so there is nothing to defend against flooding.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A hash map keyed by small integers, hashed with [`IntHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// What the map holds per key: everything a hit needs, in one place.
#[derive(Debug)]
struct Entry<V> {
    value: V,
    /// Set by a hit; an entry found set at the tail gets a second chance.
    /// (A `Cell` so that `get_many` can mark entries it holds shared.)
    referenced: Cell<bool>,
    /// The entry's node in `LruShard::nodes`.
    slot: usize,
}

const NIL: usize = usize::MAX;

#[derive(Debug)]
struct Node<K> {
    key: K,
    charge: usize,
    prev: usize,
    next: usize,
}

/// A byte-charged LRU map.
#[derive(Debug)]
pub(crate) struct LruShard<K, V> {
    map: FastMap<K, Entry<V>>,
    nodes: Vec<Node<K>>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
    usage: usize,
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> LruShard<K, V> {
    /// An empty shard holding at most `capacity` bytes of charges.
    pub(crate) fn new(capacity: usize) -> Self {
        LruShard {
            map: FastMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            usage: 0,
            capacity,
        }
    }

    /// Sum of the charges held.
    pub(crate) fn usage(&self) -> usize {
        self.usage
    }

    /// True when an entry of `charge` bytes fits without evicting any.
    pub(crate) fn has_room(&self, charge: usize) -> bool {
        self.usage.saturating_add(charge) <= self.capacity
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The value for `key`, marked as used (it survives the next eviction
    /// pass that reaches it).
    pub(crate) fn get(&mut self, key: &K) -> Option<V> {
        // A hit only marks the entry (CLOCK's second chance): relinking it
        // would touch three random nodes on every hit. Eviction moves a
        // marked tail entry back to the front instead of dropping it.
        let e = self.map.get(key)?;
        e.referenced.set(true);
        Some(e.value.clone())
    }

    /// The values of several keys at once (like [`LruShard::get`] on each,
    /// results appended to `out` in order). The map lookups run first, one
    /// after another with nothing in between, then `touch` reads each found
    /// value, then the values are cloned: independent memory loads in a row
    /// let the CPU overlap their cache misses, where `get` after `get` would
    /// wait for each in turn.
    pub(crate) fn get_many<'k>(
        &mut self,
        keys: impl Iterator<Item = &'k K>,
        touch: impl Fn(&V) -> usize,
        out: &mut Vec<Option<V>>,
    ) where
        K: 'k,
    {
        let found: Vec<Option<&Entry<V>>> = keys.map(|k| self.map.get(k)).collect();
        let mut sum = 0usize;
        for e in found.iter().flatten() {
            sum = sum.wrapping_add(touch(&e.value));
        }
        std::hint::black_box(sum);
        out.extend(found.iter().map(|e| {
            e.map(|e| {
                e.referenced.set(true);
                e.value.clone()
            })
        }));
    }

    /// Inserts or replaces `key`, then evicts least recently used entries
    /// until within capacity. An entry whose charge exceeds the capacity is
    /// not kept (any old value for the key is removed).
    pub(crate) fn insert(&mut self, key: K, value: V, charge: usize) {
        self.remove(&key);
        if charge > self.capacity {
            return;
        }
        while self.usage + charge > self.capacity && self.tail != NIL {
            let victim = self.tail;
            let k = self.nodes[victim].key.clone();
            if let Some(e) = self.map.get(&k)
                && e.referenced.replace(false)
            {
                self.unlink(victim);
                self.push_front(victim);
                continue;
            }
            self.remove(&k);
        }
        let node = Node {
            key: key.clone(),
            charge,
            prev: NIL,
            next: NIL,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.nodes[s] = node;
                s
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.push_front(slot);
        self.map.insert(
            key,
            Entry {
                value,
                referenced: Cell::new(false),
                slot,
            },
        );
        self.usage += charge;
    }

    /// Every value held, in no particular order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.map.values().map(|e| &e.value)
    }

    /// Removes the least recently used entry (no second chance); false if
    /// there was none.
    pub(crate) fn evict_lru(&mut self) -> bool {
        if self.tail == NIL {
            return false;
        }
        let k = self.nodes[self.tail].key.clone();
        self.remove(&k)
    }

    /// Removes `key`; true if it was present.
    pub(crate) fn remove(&mut self, key: &K) -> bool {
        let Some(Entry { slot, .. }) = self.map.remove(key) else {
            return false;
        };
        self.unlink(slot);
        self.usage -= self.nodes[slot].charge;
        self.free.push(slot);
        true
    }

    /// Removes every entry whose key matches `pred`.
    pub(crate) fn remove_if(&mut self, mut pred: impl FnMut(&K) -> bool) {
        let doomed: Vec<K> = self.map.keys().filter(|k| pred(k)).cloned().collect();
        for k in doomed {
            self.remove(&k);
        }
    }

    /// Keys from most to least recently used (for tests).
    #[cfg(test)]
    pub(crate) fn keys_mru(&self) -> Vec<K> {
        let mut out = Vec::new();
        let mut s = self.head;
        while s != NIL {
            out.push(self.nodes[s].key.clone());
            s = self.nodes[s].next;
        }
        out
    }

    fn unlink(&mut self, slot: usize) {
        let (prev, next) = (self.nodes[slot].prev, self.nodes[slot].next);
        if prev == NIL {
            self.head = next;
        } else {
            self.nodes[prev].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.nodes[next].prev = prev;
        }
        self.nodes[slot].prev = NIL;
        self.nodes[slot].next = NIL;
    }

    fn push_front(&mut self, slot: usize) {
        self.nodes[slot].prev = NIL;
        self.nodes[slot].next = self.head;
        if self.head != NIL {
            self.nodes[self.head].prev = slot;
        }
        self.head = slot;
        if self.tail == NIL {
            self.tail = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_order_and_capacity() {
        let mut s: LruShard<u32, u32> = LruShard::new(30);
        for k in 0..3 {
            s.insert(k, k * 10, 10);
        }
        assert_eq!(s.keys_mru(), vec![2, 1, 0]);
        // A hit only marks the entry; the list order changes at eviction.
        assert_eq!(s.get(&0), Some(0));
        assert_eq!(s.keys_mru(), vec![2, 1, 0]);
        // 0 is at the tail but was hit: it gets a second chance (moves to
        // the front) and 1, the least recently used unmarked entry, goes.
        s.insert(3, 30, 10);
        assert_eq!(s.get(&1), None);
        assert_eq!(s.keys_mru(), vec![3, 0, 2]);
        assert_eq!(s.usage(), 30);
        s.insert(4, 40, 25); // evicts 2, 0, 3
        assert_eq!(s.keys_mru(), vec![4]);
        assert_eq!(s.usage(), 25);
        s.insert(5, 50, 31); // too large: not kept
        assert_eq!(s.get(&5), None);
        s.insert(4, 41, 5); // replace
        assert_eq!(s.get(&4), Some(41));
        assert_eq!(s.usage(), 5);
        let mut out = Vec::new();
        s.get_many([4, 9, 4].iter(), |v| *v as usize, &mut out);
        assert_eq!(out, vec![Some(41), None, Some(41)]);
        s.remove_if(|&k| k == 4);
        assert_eq!(s.len(), 0);
        assert_eq!(s.usage(), 0);
        assert_eq!(s.keys_mru(), Vec::<u32>::new());
    }
}
