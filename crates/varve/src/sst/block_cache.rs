//! The shared block cache: parsed, checksum-verified, uncompressed data
//! blocks keyed by `(cache_id, block offset)`, split into up to 16 shards
//! chosen by an xxh3 hash of the key, each an LRU behind its own mutex,
//! charged in bytes ([`Block::charge`]: contents plus overhead). Small
//! caches use fewer shards (each at least 256 KiB) so that a shard can still
//! hold several blocks.
//!
//! `Send + Sync`; shared via `Arc` by every open table. Invariants: each
//! shard holds at most `capacity / shards` bytes, so `usage() <= capacity()`;
//! an entry larger than a shard's capacity is not cached; a block handed out
//! stays alive (it is an `Arc`) even if evicted meanwhile.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use xxhash_rust::xxh3::xxh3_64;

use super::Block;
use crate::util::lru::LruShard;

/// Most shards a cache is split into.
const MAX_SHARDS: usize = 16;

/// Smallest shard capacity worth splitting a cache for.
const MIN_SHARD_BYTES: usize = 256 << 10;

type Key = (u64, u64);

/// A sharded LRU cache of data blocks, charged in bytes.
pub struct BlockCache {
    shards: Vec<Mutex<LruShard<Key, Arc<Block>>>>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    /// The next owner id ([`BlockCache::new_owner`]).
    owners: AtomicU64,
}

impl fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage())
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding at most `capacity_bytes` of block charges.
    pub fn new(capacity_bytes: usize) -> Arc<BlockCache> {
        let num_shards = (capacity_bytes / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS);
        let per_shard = capacity_bytes / num_shards;
        Arc::new(BlockCache {
            shards: (0..num_shards)
                .map(|_| Mutex::new(LruShard::new(per_shard)))
                .collect(),
            capacity: capacity_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            owners: AtomicU64::new(1),
        })
    }

    /// A fresh owner id for a user of the cache (a database's table
    /// cache): blocks are keyed by `cache_id(owner, file number)`, so two
    /// databases sharing the cache never see each other's blocks although
    /// their file numbers repeat.
    pub fn new_owner(&self) -> u64 {
        self.owners.fetch_add(1, Ordering::Relaxed)
    }

    /// The cache id of table `number` of `owner`, or `None` for a number
    /// at or above 2^40, which could collide with another owner's (such a
    /// table is read without the cache; numbers never get there in
    /// practice).
    pub fn cache_id(owner: u64, number: u64) -> Option<u64> {
        (number < 1 << 40 && owner < 1 << 24).then_some(owner << 40 | number)
    }

    fn shard_index(&self, cache_id: u64, offset: u64) -> usize {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&cache_id.to_le_bytes());
        k[8..].copy_from_slice(&offset.to_le_bytes());
        (xxh3_64(&k) % self.shards.len() as u64) as usize
    }

    fn shard(&self, cache_id: u64, offset: u64) -> &Mutex<LruShard<Key, Arc<Block>>> {
        &self.shards[self.shard_index(cache_id, offset)]
    }

    /// The cached block of table `cache_id` at `offset`, counting a hit or miss.
    pub fn get(&self, cache_id: u64, offset: u64) -> Option<Arc<Block>> {
        let got = self.shard(cache_id, offset).lock().get(&(cache_id, offset));
        let counter = if got.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        got
    }

    /// The cached blocks of `keys` (`(cache_id, offset)` each), in order,
    /// counting hits (not misses: a caller that finds a block missing reads
    /// it through [`BlockCache::get`] again, which counts the miss once).
    /// Each shard is
    /// locked once for all of its keys, and their lookups run back to back
    /// (`LruShard::get_many`), so a batch's cache misses overlap.
    pub fn get_many(&self, keys: &[(u64, u64)]) -> Vec<Option<Arc<Block>>> {
        let mut order: Vec<(usize, usize)> = keys
            .iter()
            .enumerate()
            .map(|(i, &(id, off))| (self.shard_index(id, off), i))
            .collect();
        order.sort_unstable();
        let mut got: Vec<Option<Arc<Block>>> = Vec::with_capacity(keys.len());
        for group in order.chunk_by(|a, b| a.0 == b.0) {
            self.shards[group[0].0].lock().get_many(
                group.iter().map(|&(_, i)| &keys[i]),
                |b| b.touch(),
                &mut got,
            );
        }
        let mut out: Vec<Option<Arc<Block>>> = vec![None; keys.len()];
        let mut hits = 0;
        for (&(_, i), b) in order.iter().zip(got) {
            hits += u64::from(b.is_some());
            out[i] = b;
        }
        self.hits.fetch_add(hits, Ordering::Relaxed);
        out
    }

    /// Caches `block`, evicting least recently used blocks of its shard.
    pub fn insert(&self, cache_id: u64, offset: u64, block: Arc<Block>) {
        let charge = block.charge();
        self.shard(cache_id, offset)
            .lock()
            .insert((cache_id, offset), block, charge);
    }

    /// Caches the block `make` returns (it is called under the shard's
    /// lock) if its shard has room for `charge` bytes without evicting
    /// anything; true if it was cached. For blocks of a scan, which should
    /// not push out what others cached.
    pub fn insert_if_room(
        &self,
        cache_id: u64,
        offset: u64,
        charge: usize,
        make: impl FnOnce() -> Arc<Block>,
    ) -> bool {
        let mut shard = self.shard(cache_id, offset).lock();
        if !shard.has_room(charge) {
            return false;
        }
        shard.insert((cache_id, offset), make(), charge);
        true
    }

    /// Drops every block of table `cache_id` (when its file is deleted).
    pub fn erase_table(&self, cache_id: u64) {
        for s in &self.shards {
            s.lock().remove_if(|k| k.0 == cache_id);
        }
    }

    /// Bytes currently charged.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().usage()).sum()
    }

    /// Number of cached blocks.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// True when no block is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of shards (1 to 16, depending on the capacity).
    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    /// The configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Lookups that found their block.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{ValueKind, make_internal_key};
    use crate::sst::BlockBuilder;

    /// A block whose charge is about `size` bytes.
    fn block(size: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(16);
        b.add(
            &make_internal_key(b"k", 1, ValueKind::Value),
            &vec![7u8; size],
        );
        Arc::new(Block::parse(b.finish().to_vec(), "t", 0).expect("block"))
    }

    #[test]
    fn send_sync() {
        fn check<T: Send + Sync>() {}
        check::<BlockCache>();
        check::<crate::sst::Table>();
        fn check_send<T: Send>() {}
        check_send::<crate::sst::TableIterator>();
    }

    #[test]
    fn shard_count_follows_capacity() {
        assert_eq!(BlockCache::new(0).num_shards(), 1);
        assert_eq!(BlockCache::new(100 << 10).num_shards(), 1);
        assert_eq!(BlockCache::new(1 << 20).num_shards(), 4);
        assert_eq!(BlockCache::new(1 << 30).num_shards(), 16);
    }

    #[test]
    fn capacity_hits_misses_and_lru() {
        let b = block(1000);
        let charge = b.charge();
        for capacity in [charge * 4, 32 << 20] {
            let cache = BlockCache::new(capacity);
            let per_shard = capacity / cache.num_shards() / charge;
            assert!(per_shard >= 4);
            assert!(cache.get(1, 0).is_none());
            assert_eq!((cache.hits(), cache.misses()), (0, 1));
            cache.insert(1, 0, Arc::clone(&b));
            assert!(cache.get(1, 0).is_some());
            assert_eq!((cache.hits(), cache.misses()), (1, 1));
            // A batch: results in order, duplicates, hits counted (a miss is
            // counted by the `get` that reads the block).
            cache.insert(1, 4096, Arc::clone(&b));
            let many = cache.get_many(&[(1, 4096), (2, 0), (1, 0), (1, 4096)]);
            let present: Vec<bool> = many.iter().map(Option::is_some).collect();
            assert_eq!(present, [true, false, true, true]);
            assert!(Arc::ptr_eq(many[0].as_ref().expect("hit"), &b));
            assert_eq!((cache.hits(), cache.misses()), (4, 1));
            // A hot block touched after every insert is never evicted; usage
            // never exceeds capacity.
            let n = (per_shard * cache.num_shards() * 4) as u64;
            for off in 1..n {
                cache.insert(1, off * 4096, Arc::clone(&b));
                assert!(cache.usage() <= cache.capacity());
                assert!(cache.get(1, 0).is_some(), "hot block evicted at {off}");
            }
            assert!(cache.len() <= per_shard * cache.num_shards());
            // The oldest cold blocks are gone, the newest are present.
            assert!(cache.get(1, 4096).is_none());
            assert!(cache.get(1, (n - 1) * 4096).is_some());
            // An entry larger than a shard is not cached.
            cache.insert(2, 0, block(capacity / cache.num_shards()));
            assert!(cache.get(2, 0).is_none());
            // Dropping a table's blocks.
            cache.insert(3, 0, Arc::clone(&b));
            cache.erase_table(1);
            assert!(cache.get(1, 0).is_none() && cache.get(3, 0).is_some());
            assert_eq!(cache.usage(), charge);
            assert_eq!(cache.len(), 1);
        }
        // A zero-capacity cache caches nothing.
        let none = BlockCache::new(0);
        none.insert(1, 0, b);
        assert!(none.is_empty() && none.usage() == 0);
    }

    #[test]
    fn insert_if_room_never_evicts() {
        let c = BlockCache::new(64 << 10);
        assert_eq!(c.num_shards(), 1);
        let b = block(4000);
        let charge = b.charge();
        let mut n = 0;
        while c.insert_if_room(1, n * 4096, charge, || Arc::clone(&b)) {
            n += 1;
        }
        assert!(n > 0 && c.usage() + charge > c.capacity());
        let made = std::cell::Cell::new(false);
        assert!(!c.insert_if_room(2, 0, charge, || {
            made.set(true);
            Arc::clone(&b)
        }));
        assert!(!made.get(), "no block is made when there is no room");
        assert!(
            (0..n).all(|i| c.get(1, i * 4096).is_some()),
            "nothing evicted"
        );
        assert!(c.get(2, 0).is_none());
    }

    #[test]
    fn concurrent_get_insert() {
        let blocks: Vec<Arc<Block>> = (0..8).map(|i| block(100 * (i + 1))).collect();
        let cache = BlockCache::new(64 << 10);
        let gets = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (cache, blocks, gets) = (&cache, &blocks, &gets);
                s.spawn(move || {
                    let mut x = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                    for _ in 0..20_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let (id, off) = (x % 4, (x >> 8) % 300);
                        if x % 3 == 0 {
                            let b = &blocks[(off % 8) as usize];
                            cache.insert(id, off, Arc::clone(b));
                        } else {
                            gets.fetch_add(1, Ordering::Relaxed);
                            if let Some(b) = cache.get(id, off) {
                                assert_eq!(b.size(), blocks[(off % 8) as usize].size());
                            }
                        }
                        assert!(cache.usage() <= cache.capacity());
                    }
                });
            }
        });
        assert_eq!(cache.hits() + cache.misses(), gets.load(Ordering::Relaxed));
        assert!(cache.hits() > 0);
        assert!(cache.usage() <= cache.capacity());
    }
}
