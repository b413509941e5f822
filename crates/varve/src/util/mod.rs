//! Small shared helpers with no engine state: integer coding, checksums,
//! the LRU shard and the memory budget's gauges.
//! Everything here is pure and thread-safe.

pub(crate) mod checksum;
pub(crate) mod coding;
pub(crate) mod lru;
pub(crate) mod memory;
