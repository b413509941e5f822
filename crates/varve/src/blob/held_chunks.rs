//! [`HeldChunks`]: the shared scan chunks one iterator holds, so that a
//! value in a chunk the iterator visited before is served with no lookup
//! in the pool (`docs/blob-files.md`, "Shared scan chunks").
//!
//! With lanes by key, consecutive keys of a scan sit in random places of
//! their lane's files, so a scan comes back to each chunk of the lane again
//! and again while it walks the lane's key range. A lookup in the pool
//! ([`SharedChunks`]) takes a shard's lock, probes a map and changes a
//! reference count: writes to cache lines that every scan of the database
//! writes too. A lookup here reads one slot of the iterator's own array.
//!
//! Holding a chunk keeps the pool from evicting it, so holding is bounded:
//! at most half of each of the pool's shards is held by any iterator at
//! once ([`Pins`]: a chunk held by many iterators counts once), so the
//! other half stays evictable and the scan in front can always load its
//! next chunk (a load evicts within its own shard); at most `cap` chunks (half the pool, at most [`SLOTS`]) per
//! iterator; a chunk not used for [`IDLE`] values is let go; and if a
//! load still found no chunk to evict (the pool's pressure count moved),
//! every chunk is let go at the iterator's next value. A chunk that cannot
//! be held is served all the same (through the pool, as without this
//! table).
//!
//! Single-threaded (owned by one iterator's read-ahead state). Invariants:
//! `count` is the number of occupied slots and never exceeds `cap`; each
//! occupied slot pins its chunk once ([`Pins::pin`]) and unpins it when
//! it is cleared (or, if its chunk is lent just then, when the chunk comes
//! back); a slot names the pool's chunk of its `(file, index)`, whose
//! bytes never change once resident (file numbers are never reused); a
//! slot's chunk is either in the slot or lent to the one value served
//! from it, never both.

use std::sync::Arc;

use super::pins::Pins;
use super::shared_chunks::{CHUNK, Chunk, SharedChunks};

/// Slots of the table (a power of two): direct-mapped by chunk name.
pub(crate) const SLOTS: usize = 512;
/// A held chunk unused for this many values is let go: a scan that left
/// a lane's key range lets its chunks go soon after, while a chunk of the
/// range it walks (with 128 chunks in the range, it comes back every 128
/// values on average) is kept.
pub(crate) const IDLE: u64 = 1024;
/// Values between two sweeps for idle chunks.
const SWEEP_EVERY: u64 = 256;

struct Slot {
    file: u64,
    index: u64,
    /// The chunk's address, to recognize it when it comes back.
    addr: usize,
    /// `None` while lent to the value last served.
    chunk: Option<Arc<Chunk>>,
    /// The value count at its last use.
    used: u64,
}

/// One iterator's held chunks; see the module docs.
pub(crate) struct HeldChunks {
    /// Empty until the first chunk is held.
    slots: Vec<Option<Slot>>,
    /// The pool's count of held chunks.
    pins: Arc<Pins>,
    /// Addresses of chunks let go while lent: unpinned when they come back.
    unpin_on_return: Vec<usize>,
    count: usize,
    cap: usize,
    /// Values served through [`HeldChunks::tick`].
    clock: u64,
    /// The pool's pressure count when last seen.
    pressure: u64,
    next_sweep: u64,
    /// Values served from held chunks not yet reported to the pool.
    hits: u64,
}

impl std::fmt::Debug for HeldChunks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldChunks")
            .field("count", &self.count)
            .field("cap", &self.cap)
            .finish()
    }
}

/// The slot of chunk `index` of `file`: consecutive chunks of one file
/// take consecutive slots.
fn slot_of(file: u64, index: u64) -> usize {
    (file.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ index) as usize & (SLOTS - 1)
}

impl HeldChunks {
    /// A table that holds at most half of `pool`'s chunks (at least one).
    pub(crate) fn new(pool: &SharedChunks) -> HeldChunks {
        HeldChunks {
            slots: Vec::new(),
            pins: Arc::clone(pool.pins()),
            unpin_on_return: Vec::new(),
            count: 0,
            cap: (pool.budget() / CHUNK / 2).clamp(1, SLOTS),
            clock: 0,
            pressure: pool.pressure(),
            next_sweep: SWEEP_EVERY,
            hits: 0,
        }
    }

    /// Chunks held now.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Called once per value before [`take`](Self::take): lets every chunk
    /// go if the pool's pressure count moved, and the idle ones now and
    /// then.
    pub(crate) fn tick(&mut self, pool: &SharedChunks) {
        self.clock += 1;
        let pressure = pool.pressure();
        if pressure != self.pressure {
            self.pressure = pressure;
            self.release_all();
        } else if self.clock >= self.next_sweep {
            self.next_sweep = self.clock + SWEEP_EVERY;
            self.sweep();
        }
    }

    /// The held chunk `index` of `file`, lent to the caller (give it back
    /// with [`give_back`](Self::give_back)); `None` if not held.
    pub(crate) fn take(&mut self, file: u64, index: u64) -> Option<Arc<Chunk>> {
        let clock = self.clock;
        let s = self.slots.get_mut(slot_of(file, index))?.as_mut()?;
        if s.file != file || s.index != index {
            return None;
        }
        let c = s.chunk.take()?;
        s.used = clock;
        self.hits += 1;
        Some(c)
    }

    /// Holds `c`, chunk `index` of `file` just taken from the pool, as
    /// lent to the value about to be served from it: it replaces the
    /// chunk in its slot, or is not held at all when the table is full or
    /// half the pool is held already.
    pub(crate) fn hold_lent(&mut self, file: u64, index: u64, c: &Arc<Chunk>) {
        debug_assert_eq!(
            c.start,
            index * CHUNK as u64,
            "a chunk held under its own name"
        );
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
        }
        let i = slot_of(file, index);
        if self.slots[i].is_none() && self.count >= self.cap {
            return;
        }
        if !self.pins.pin(&c.holders) {
            return;
        }
        self.clear(i);
        self.count += 1;
        self.slots[i] = Some(Slot {
            file,
            index,
            addr: Arc::as_ptr(c) as usize,
            chunk: None,
            used: self.clock,
        });
        debug_assert!(self.count <= self.cap, "never more than cap chunks held");
    }

    /// Takes back a chunk lent with [`take`](Self::take) or
    /// [`hold_lent`](Self::hold_lent); any other chunk is dropped.
    pub(crate) fn give_back(&mut self, file: u64, c: Arc<Chunk>) {
        let index = c.start / CHUNK as u64;
        let addr = Arc::as_ptr(&c) as usize;
        if let Some(Some(s)) = self.slots.get_mut(slot_of(file, index))
            && s.file == file
            && s.index == index
            && s.chunk.is_none()
            && addr == s.addr
        {
            s.chunk = Some(c);
            return;
        }
        if let Some(k) = self.unpin_on_return.iter().position(|&a| a == addr) {
            self.unpin_on_return.swap_remove(k);
            self.pins.unpin(&c.holders);
        }
    }

    /// Empties slot `i`, unpinning its chunk (now, or when it comes back
    /// if it is lent).
    fn clear(&mut self, i: usize) {
        if let Some(s) = self.slots[i].take() {
            self.count -= 1;
            match &s.chunk {
                Some(c) => self.pins.unpin(&c.holders),
                None => self.unpin_on_return.push(s.addr),
            }
        }
    }

    /// Lets go of the chunks unused for [`IDLE`] values.
    fn sweep(&mut self) {
        let clock = self.clock;
        for i in 0..self.slots.len() {
            if self.slots[i]
                .as_ref()
                .is_some_and(|s| s.used + IDLE < clock)
            {
                self.clear(i);
            }
        }
        self.pins.add_hits(std::mem::take(&mut self.hits));
    }

    /// Lets go of every chunk (one lent now is unpinned when it comes
    /// back).
    pub(crate) fn release_all(&mut self) {
        for i in 0..self.slots.len() {
            self.clear(i);
        }
        self.pins.add_hits(std::mem::take(&mut self.hits));
    }
}

impl Drop for HeldChunks {
    fn drop(&mut self) {
        self.release_all();
        debug_assert!(
            self.unpin_on_return.is_empty(),
            "a lent chunk was not given back before its table went"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Result;

    fn fill(buf: &mut [u8], start: u64) -> Result<usize> {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = ((start + i as u64) / 4096) as u8;
        }
        Ok(buf.len())
    }

    fn load(pool: &SharedChunks, file: u64, index: u64) -> Arc<Chunk> {
        pool.get(file, index, fill).expect("read").expect("room")
    }

    #[test]
    fn a_held_chunk_is_lent_and_comes_back() {
        let pool = SharedChunks::new(8 * CHUNK);
        let mut h = HeldChunks::new(&pool);
        assert_eq!(h.cap, 4);
        h.tick(&pool);
        assert!(h.take(1, 0).is_none());
        let c = load(&pool, 1, 0);
        h.hold_lent(1, 0, &c);
        assert_eq!(h.count(), 1);
        // Lent: not there until it comes back.
        assert!(h.take(1, 0).is_none());
        h.give_back(1, c);
        h.tick(&pool);
        let again = h.take(1, 0).expect("held");
        assert_eq!(again.start, 0);
        // Another chunk is not taken back in its place.
        let other = load(&pool, 1, 1);
        h.give_back(1, Arc::clone(&other));
        h.give_back(1, again);
        let back = h.take(1, 0).expect("held again");
        assert!(h.take(2, 0).is_none(), "another file");
        h.give_back(1, back);
    }

    #[test]
    fn held_chunks_are_not_evicted_and_pressure_lets_them_go() {
        // A pool of two chunks: the table holds one.
        let pool = SharedChunks::new(2 * CHUNK);
        let mut h = HeldChunks::new(&pool);
        assert_eq!(h.cap, 1);
        h.tick(&pool);
        let c = load(&pool, 1, 0);
        h.hold_lent(1, 0, &c);
        h.give_back(1, c);
        // The cap: a second chunk is served but not held.
        h.tick(&pool);
        let d = load(&pool, 1, 1);
        h.hold_lent(1, 1, &d);
        assert_eq!(h.count(), 1);
        drop(d);
        // Chunk 0 is held: a load must evict chunk 1, and with chunk 1
        // held elsewhere too the pool has no room and says so.
        let other = pool.resident(1, 1).expect("resident");
        let before = pool.pressure();
        assert!(pool.get(1, 2, fill).expect("read").is_none());
        assert_eq!(pool.pressure(), before + 1);
        drop(other);
        // The next value lets everything go, and the pool has room again.
        h.tick(&pool);
        assert_eq!(h.count(), 0);
        assert!(h.take(1, 0).is_none());
        assert!(pool.get(1, 2, fill).expect("read").is_some());
        assert!(pool.get(1, 3, fill).expect("read").is_some());
        assert!(pool.used() <= 2 * CHUNK);
    }

    /// However many iterators hold chunks, at most half the pool is held
    /// (a chunk held by several counts once), and every pin goes when the
    /// tables go.
    #[test]
    fn at_most_half_the_pool_is_held_in_all() {
        let pool = SharedChunks::new(8 * CHUNK);
        let pins = Arc::clone(pool.pins());
        assert_eq!(pins.limit(), 4);
        let mut a = HeldChunks::new(&pool);
        let mut b = HeldChunks::new(&pool);
        let hold = |h: &mut HeldChunks, i: u64| {
            h.tick(&pool);
            let c = h.take(1, i).unwrap_or_else(|| {
                let c = load(&pool, 1, i);
                h.hold_lent(1, i, &c);
                c
            });
            h.give_back(1, c);
        };
        for i in 0..3 {
            hold(&mut a, i);
            hold(&mut b, i);
        }
        assert_eq!(pins.pinned(), 3, "shared chunks count once");
        assert_eq!((a.count(), b.count()), (3, 3));
        hold(&mut b, 3);
        assert_eq!(pins.pinned(), 4);
        hold(&mut a, 4);
        assert_eq!(pins.pinned(), 4, "the limit");
        assert_eq!(a.count(), 3, "served, not held");
        // A chunk someone holds is held by one more at the limit.
        hold(&mut a, 3);
        assert_eq!((a.count(), pins.pinned()), (4, 4));
        // Four chunks are held, the other four stay evictable: loads go on.
        for i in 5..12 {
            assert!(pool.get(1, i, fill).expect("read").is_some());
        }
        drop(a);
        assert_eq!(pins.pinned(), 4, "b still holds all four");
        drop(b);
        assert_eq!(pins.pinned(), 0);
    }

    /// A chunk let go while lent is unpinned when it comes back.
    #[test]
    fn a_chunk_let_go_while_lent_is_unpinned_when_it_comes_back() {
        let pool = SharedChunks::new(8 * CHUNK);
        let pins = Arc::clone(pool.pins());
        let mut h = HeldChunks::new(&pool);
        h.tick(&pool);
        let c = load(&pool, 2, 0);
        h.hold_lent(2, 0, &c);
        assert_eq!(pins.pinned(), 1);
        h.release_all();
        assert_eq!(pins.pinned(), 1, "still lent");
        h.give_back(2, c);
        assert_eq!(pins.pinned(), 0);
        assert_eq!(h.count(), 0);
    }

    #[test]
    fn idle_chunks_are_let_go_and_hits_are_reported() {
        let pool = SharedChunks::new(16 * CHUNK);
        let mut h = HeldChunks::new(&pool);
        h.tick(&pool);
        let c = load(&pool, 3, 5);
        h.hold_lent(3, 5, &c);
        h.give_back(3, c);
        let hits_before = pool.hits();
        for _ in 0..10 {
            h.tick(&pool);
            let c = h.take(3, 5).expect("held");
            h.give_back(3, c);
        }
        for _ in 0..(IDLE + 2 * SWEEP_EVERY) {
            h.tick(&pool);
        }
        assert_eq!(h.count(), 0, "idle for more than IDLE values");
        assert!(h.take(3, 5).is_none());
        assert_eq!(pool.hits(), hits_before + 10);
        // Nothing holds the chunk now: the pool may evict it.
        assert!(pool.resident(3, 5).is_some());
    }
}
