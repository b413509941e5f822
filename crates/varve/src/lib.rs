//! varve: an embedded, persistent, ordered key-value store built for NVMe
//! SSDs and Linux io_uring.
//!
//! Open a [`Db`], write with [`Db::put`] / [`Db::delete`] / [`Db::write`],
//! read with [`Db::get`], iterate in key order with [`Db::iter`], take
//! consistent views with [`Db::snapshot`]. Every write acknowledged by these
//! calls has reached the operating system and survives a crash of the
//! process; with [`WriteOptions::sync`] it also survives power loss.
//!
//! The data path (see `ARCHITECTURE.md`): a write goes to the write-ahead log
//! (`wal`), then to the memtable (`memtable`); reads merge memtables
//! (`iter`) and apply snapshot visibility (`db`).

#![deny(missing_docs)]
#![warn(unreachable_pub)]
#![warn(clippy::unwrap_used)]

// The layers, bottom up (imports point down; see ARCHITECTURE.md).
mod error;
mod filenames;
mod internal_iter;
mod keys;
mod range_del;
mod snapshot;
mod sync;
mod util;

mod io;

mod batch;
mod wal;

mod blob;
mod memtable;
mod sst;

mod iter;
mod version;

mod compaction;

mod options;

mod db;

pub mod tools;

#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;

pub use batch::WriteBatch;
pub use compaction::{CompactionFilter, FilterDecision};
pub use db::{
    Anchor, Anchors, ChunkInfo, Db, DbDebug, DbIterator, DbStats, KeyRange, Keyspace,
    KeyspaceStats, LevelStats, MAX_KEYSPACE_NAME, MemoryStats, OpenTimes, RecoveryReport,
    RepairReport, Snapshot, TruncatedTail,
};
pub use error::{Error, Result};
pub use io::{IoEngine, io_uring_available};
pub use options::{
    DEFAULT_ASYNC_QUEUE_DEPTH, KeyspaceOptions, Options, ReadOptions, ScanPrefetch, WriteOptions,
};
pub use sst::BlockCache;
pub use sst::{Compression, ReaderPool};
pub use version::ManifestTail;
pub use wal::WalWriter;

/// The file system a database lives on ([`Options::fs`]): the traits to
/// implement for another one, and the real one ([`PosixFs`](fs::PosixFs)).
pub mod fs {
    pub use crate::io::{
        FileLock, FileSystem, InPlaceFile, LogFile, PosixFs, Preallocate, RandomAccessFile,
        SequentialFile, WritableFile,
    };
}

/// Test support (the `testing` feature): a fault-injecting file system
/// that simulates power loss, short writes, full disks and read faults,
/// a count of io_uring reads in flight, and a clock set by hand for
/// `Options::clock` (`Options::ttl`). Not for production use.
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::io::fiber::in_flight_reads;
    pub use crate::io::uring::{require_uring, skip_or_fail};
    pub use crate::io::{FaultInjectingFs, ReadFault, ReadRecord};
    pub use crate::util::clock::{Clock, ManualClock};
    pub use crate::wal::UringLog;

    /// Writes a complete WAL (current format) numbered `number` at `path`
    /// holding `records` (encoded write batches), and syncs it.
    pub fn write_wal(
        fs: &dyn crate::fs::FileSystem,
        path: &std::path::Path,
        number: u64,
        records: &[&[u8]],
    ) -> crate::Result<()> {
        let mut file = fs.create_writable(path)?;
        crate::wal::write_log(file.as_mut(), number, records)?;
        file.sync_data()
    }

    /// The WAL record of `batch` stamped with sequence numbers from
    /// `sequence` (an encoded write batch, for [`write_wal`]).
    pub fn wal_record(batch: &crate::WriteBatch, sequence: u64) -> Vec<u8> {
        let mut batch = batch.clone();
        batch.set_sequence(sequence);
        batch.encoded().to_vec()
    }

    /// Writes a sealed blob file numbered `number` at `path` holding
    /// `values` (key, value) in chunks of about `chunk_size` bytes; returns
    /// each value's file offset.
    pub fn write_blob_file(
        fs: &dyn crate::fs::FileSystem,
        path: &std::path::Path,
        number: u64,
        chunk_size: usize,
        values: &[(&[u8], &[u8])],
    ) -> crate::Result<Vec<u64>> {
        use crate::blob::file_writer::BlobFileWriter;
        use crate::blob::format::Creator;
        let mut w =
            BlobFileWriter::create(fs, path, number, chunk_size, Creator::Compaction, false)?;
        let mut offsets = Vec::with_capacity(values.len());
        for (k, v) in values {
            offsets.push(w.add(k, v)?.offset);
        }
        w.finish()?;
        Ok(offsets)
    }
}

/// The README's examples, compiled as doctests so they stay true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
