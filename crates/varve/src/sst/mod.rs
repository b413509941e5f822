//! Sorted string tables (SST files), format version 1 (`docs/sst-format.md`).
//!
//! A table is written once by [`TableBuilder`] and then read by many threads
//! through an open [`Table`]: point lookups ([`Table::get`], bloom filter
//! first) and ordered cursors ([`TableIterator`], an
//! [`InternalIterator`](crate::internal_iter::InternalIterator)). Data blocks hold
//! prefix-compressed internal keys with restart points; every block carries a
//! CRC32C, so damage on disk surfaces as `Error::Corruption`, never as a
//! wrong value or a panic. Scans read ahead ([`Readahead`]): sequential
//! block reads become large chunk reads whose size grows and carries over
//! from one table file to the next.

mod block;
mod block_builder;
mod block_bytes;
mod block_cache;
mod filter;
mod format;
mod index_search;
mod properties;
mod readahead;
mod table;
mod table_builder;
mod table_iter;

#[cfg(test)]
mod tests;

pub use block::{Block, BlockIter};
pub use block_builder::BlockBuilder;
pub use block_bytes::BlockBytes;
pub use block_cache::BlockCache;
pub use filter::{BloomFilter, FilterBuilder, filter_hash};
pub use format::{
    BLOCK_TRAILER_LEN, BlockHandle, Compression, FOOTER_LEN, FORMAT_VERSION, Footer, MAGIC,
};
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use index_search::IndexSearch;
pub use properties::TableProperties;
pub use readahead::{
    COMPACTION_READAHEAD, DEFAULT_READAHEAD, MIN_READAHEAD, Readahead, ReaderPool,
};
pub(crate) use table::PointPlan;
pub use table::{Table, TableReadOptions, verify_table};
pub use table_builder::{TableBuilder, TableBuilderOptions};
pub use table_iter::{SharedReadahead, TableIterOptions, TableIterator};
