//! Caches shared by all open tables. [`TableCache`]: open table readers by
//! file number, bounded by `max_open_files`. [`BlockCache`]: a sharded LRU of parsed
//! data blocks charged in bytes (`cache_size`). Index and filter blocks are
//! not cached here: each open [`Table`](crate::sst::Table) pins its own
//! (see [`Table::pinned_memory`](crate::sst::Table::pinned_memory)).

mod block_cache;
mod lru;
pub mod table_cache;

pub use block_cache::BlockCache;
pub use table_cache::{ScanOptions, TableCache};
