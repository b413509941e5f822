//! varve: an embedded, persistent, ordered key-value store built for NVMe
//! SSDs and Linux io_uring.
//!
//! Open a [`Db`], write with [`Db::put`] / [`Db::delete`] / [`Db::write`],
//! read with [`Db::get`], iterate in key order with [`Db::iter`], take
//! consistent views with [`Db::snapshot`]. Every write acknowledged by these
//! calls has reached the operating system and survives a crash of the
//! process; with [`WriteOptions::sync`] it also survives power loss.
//!
//! The data path (see `DESIGN.md`): a write goes to the write-ahead log
//! (`wal`), then to the memtable (`memtable`); reads merge memtables
//! (`iter`) and apply snapshot visibility (`db`).

#![deny(missing_docs)]

pub mod batch;
pub mod compaction;
pub mod db;
mod error;
pub(crate) mod filenames;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub(crate) mod internal_iter;
pub mod io;
pub mod iter;
pub mod keys;
pub mod memtable;
mod options;
pub(crate) mod snapshot;
pub mod sst;
pub(crate) mod sync;
pub mod tools;
pub mod util;
pub mod version;
pub mod wal;

pub use batch::WriteBatch;
pub use db::{Anchor, Anchors, ChunkInfo, Db, DbIterator, KeyRange, Snapshot};
pub use error::{Error, Result};
pub use io::IoEngine;
pub use options::{DEFAULT_ASYNC_QUEUE_DEPTH, Options, ReadOptions, ScanPrefetch, WriteOptions};
pub use sst::{BlockCache, Compression, ReaderPool};
pub use wal::WalWriter;

/// The README's examples, compiled as doctests so they stay true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
