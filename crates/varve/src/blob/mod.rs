//! Blob files: large values kept outside the tables (`docs/blob-files.md`).
//! The tables store a [`format::BlobPointer`] in place of such a value.
//!
//! `format` is the on-disk format (pure encoding and checking),
//! `file_writer` writes a blob file front to back (compaction outputs),
//! `lane` appends writers' values (the write path) through `stage` (a
//! mapped staging chunk, written to the blob file with direct IO by
//! `chunk_writer`, whose writes `chunk_ring`'s thread submits) and
//! `lane_set` keeps each keyspace's lanes,
//! `reader` reads values by pointer and walks a file's chunks,
//! `value_batch` reads many values at once on fibers (a short scan's
//! look-ahead; `batch_counters` counts what it did),
//! `readahead` reads windows of a file for a scan (or takes values from
//! `shared_chunks`, the chunks concurrent scans share, through
//! `held_chunks`, the ones an iterator holds, counted against a per-shard
//! limit by `pins`), `cache`
//! keeps a database's readers by file number, and `staged_fs` reads a
//! directory as if a crash's staged chunks were in their blob files
//! (read-only opens, `varve check`). The only thread here is
//! `chunk_ring`'s `varve-blob-io`, one per keyspace's lanes once they write
//! a chunk, joined when the lanes and their files are gone.

pub(crate) mod batch_counters;
pub(crate) mod cache;
pub(crate) mod chunk_ring;
pub(crate) mod chunk_writer;
pub(crate) mod file_writer;
pub(crate) mod format;
pub(crate) mod held_chunks;
pub(crate) mod lane;
pub(crate) mod lane_set;
pub(crate) mod pins;
pub(crate) mod readahead;
pub(crate) mod reader;
pub(crate) mod shared_chunks;
pub(crate) mod stage;
pub(crate) mod staged_fs;
pub(crate) mod value_batch;
