//! Small shared helpers with no engine state: integer coding, checksums,
//! the LRU shard, the memory budget's gauges and the wall clock of
//! `Options::ttl`.
//! Everything here is pure and thread-safe.

pub(crate) mod checksum;
pub(crate) mod clock;
pub(crate) mod coding;
pub(crate) mod lru;
pub(crate) mod memory;
