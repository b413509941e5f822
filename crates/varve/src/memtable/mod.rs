//! The memtable: recent writes, sorted by internal key, in memory.
//!
//! PLACEHOLDER implementation (a locked BTreeMap) that fixes the API the
//! rest of the engine uses; the arena skiplist replaces it.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::iter::InternalIterator;
use crate::keys::{self, SequenceNumber, ValueKind};

/// Returned by [`MemTable::add`] when the arena has no room left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("memtable is full")]
pub struct MemTableFull;

#[derive(Clone, PartialEq, Eq)]
struct IKey(Vec<u8>);
impl Ord for IKey {
    fn cmp(&self, o: &Self) -> Ordering {
        keys::compare_internal_keys(&self.0, &o.0)
    }
}
impl PartialOrd for IKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// A sorted in-memory table of internal entries with a fixed byte capacity.
pub struct MemTable {
    map: RwLock<BTreeMap<IKey, Vec<u8>>>,
    used: std::sync::atomic::AtomicUsize,
    capacity: usize,
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl MemTable {
    /// A memtable whose arena holds `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        MemTable {
            map: RwLock::new(BTreeMap::new()),
            used: Default::default(),
            capacity,
        }
    }
    /// Upper bound of the arena bytes one entry uses.
    pub fn entry_charge(user_key_len: usize, value_len: usize) -> usize {
        user_key_len + value_len + 8 + 64
    }
    /// Arena capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// Arena bytes in use.
    pub fn memory_usage(&self) -> usize {
        self.used.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Arena bytes still free.
    pub fn remaining(&self) -> usize {
        self.capacity.saturating_sub(self.memory_usage())
    }
    /// Inserts an entry. Safe to call from many threads at once.
    pub fn add(
        &self,
        seq: SequenceNumber,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<(), MemTableFull> {
        let c = Self::entry_charge(user_key.len(), value.len());
        if c > self.remaining() {
            return Err(MemTableFull);
        }
        self.used.fetch_add(c, std::sync::atomic::Ordering::Relaxed);
        self.map.write().insert(
            IKey(keys::make_internal_key(user_key, seq, kind)),
            value.to_vec(),
        );
        Ok(())
    }
    /// The newest entry of `user_key` with sequence `<= seq`.
    pub fn get(&self, user_key: &[u8], seq: SequenceNumber) -> Option<(ValueKind, Vec<u8>)> {
        let map = self.map.read();
        let (k, v) = map.range(IKey(keys::lookup_key(user_key, seq))..).next()?;
        let p = keys::parse_internal_key(&k.0)?;
        (p.user_key == user_key).then(|| (p.kind, v.clone()))
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.read().len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A cursor over the entries that keeps the memtable alive.
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator {
            mem: Arc::clone(self),
            cur: None,
        }
    }
}

/// Cursor over a memtable; implements [`InternalIterator`].
pub struct MemTableIterator {
    mem: Arc<MemTable>,
    cur: Option<(Vec<u8>, Vec<u8>)>,
}

impl MemTableIterator {
    fn set(&mut self, e: Option<(&IKey, &Vec<u8>)>) {
        self.cur = e.map(|(k, v)| (k.0.clone(), v.clone()));
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        let m = Arc::clone(&self.mem);
        let map = m.map.read();
        self.set(map.iter().next());
    }
    fn seek_to_last(&mut self) {
        let m = Arc::clone(&self.mem);
        let map = m.map.read();
        self.set(map.iter().next_back());
    }
    fn seek(&mut self, target: &[u8]) {
        let m = Arc::clone(&self.mem);
        let map = m.map.read();
        self.set(map.range(IKey(target.to_vec())..).next());
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let m = Arc::clone(&self.mem);
        let map = m.map.read();
        self.set(map.range(..=IKey(target.to_vec())).next_back());
    }
    fn next(&mut self) {
        let m = Arc::clone(&self.mem);
        let map = m.map.read();
        let k = self.cur.take().map(|c| c.0).unwrap_or_default();
        self.set(
            map.range((Bound::Excluded(IKey(k)), Bound::Unbounded))
                .next(),
        );
    }
    fn prev(&mut self) {
        let m = Arc::clone(&self.mem);
        let map = m.map.read();
        let k = self.cur.take().map(|c| c.0).unwrap_or_default();
        self.set(
            map.range((Bound::Unbounded, Bound::Excluded(IKey(k))))
                .next_back(),
        );
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|c| &c.0[..]).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|c| &c.1[..]).unwrap_or(&[])
    }
}
