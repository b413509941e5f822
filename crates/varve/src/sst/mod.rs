//! Sorted string tables (SST files), format version 1 (`docs/sst-format.md`).
//!
//! A table is written once by [`TableBuilder`] and then read by many threads
//! through an open [`Table`]: point lookups ([`Table::get`], bloom filter
//! first) and ordered cursors (`TableIterator`, an
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
mod pinned;
mod properties;
mod readahead;
mod table;
mod table_builder;
mod table_iter;
mod verify;

#[cfg(test)]
mod tests;

pub(crate) use block::Block;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use block_builder::BlockBuilder;
pub use block_cache::BlockCache;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use filter::{BloomFilter, FilterBuilder};
pub(crate) use format::FOOTER_LEN;
pub use format::{BlockHandle, Compression, Footer};
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use index_search::IndexSearch;
pub(crate) use pinned::PinBudget;
pub use properties::TableProperties;
pub use readahead::ReaderPool;
pub(crate) use readahead::buffers::{
    pool_give as give_chunk_buffer, pool_take as take_chunk_buffer,
};
pub(crate) use readahead::prefetch_worker::{Job as PrefetchJob, Worker as PrefetchWorker};
pub(crate) use readahead::{COMPACTION_READAHEAD, DEFAULT_READAHEAD, Readahead};
pub(crate) use table::PointPlan;
pub(crate) use table::{Table, TableReadOptions};
pub(crate) use table_builder::{TableBuilder, TableBuilderOptions};
pub(crate) use table_iter::TableIterOptions;
#[cfg(test)]
pub(crate) use table_iter::TableIterator;
pub(crate) use verify::{verify_table, verify_table_with};
