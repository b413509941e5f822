//! The shared block cache: parsed, checksum-verified, uncompressed data
//! blocks keyed by `(cache_id, block offset)`, 16 shards chosen by an xxh3
//! hash of the key, each an LRU behind its own mutex, charged in bytes
//! ([`Block::charge`]: contents plus overhead).
//!
//! `Send + Sync`; shared via `Arc` by every open table. Invariants: each
//! shard holds at most `capacity / 16` bytes, so `usage() <= capacity()`; an
//! entry larger than a shard's capacity is not cached; a block handed out
//! stays alive (it is an `Arc`) even if evicted meanwhile.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use xxhash_rust::xxh3::xxh3_64;

use super::lru::LruShard;
use crate::sst::Block;

const NUM_SHARDS: usize = 16;

type Key = (u64, u64);

/// A sharded LRU cache of data blocks, charged in bytes.
pub struct BlockCache {
    shards: Vec<Mutex<LruShard<Key, Arc<Block>>>>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
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
        let per_shard = capacity_bytes / NUM_SHARDS;
        Arc::new(BlockCache {
            shards: (0..NUM_SHARDS)
                .map(|_| Mutex::new(LruShard::new(per_shard)))
                .collect(),
            capacity: capacity_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
    }

    fn shard(&self, cache_id: u64, offset: u64) -> &Mutex<LruShard<Key, Arc<Block>>> {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&cache_id.to_le_bytes());
        k[8..].copy_from_slice(&offset.to_le_bytes());
        &self.shards[(xxh3_64(&k) % NUM_SHARDS as u64) as usize]
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

    /// Caches `block`, evicting least recently used blocks of its shard.
    pub fn insert(&self, cache_id: u64, offset: u64, block: Arc<Block>) {
        let charge = block.charge();
        self.shard(cache_id, offset)
            .lock()
            .insert((cache_id, offset), block, charge);
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
