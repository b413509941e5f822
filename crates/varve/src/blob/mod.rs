//! Blob files: large values kept outside the tables (`docs/blob-files.md`).
//! The tables store a [`format::BlobPointer`] in place of such a value.
//!
//! `format` is the on-disk format (pure encoding and checking),
//! `file_writer` writes a blob file front to back (compaction outputs),
//! `lane` appends writers' values through a mapping (the write path),
//! `reader` reads values by pointer and walks a file's chunks, `cache`
//! keeps a database's readers by file number. Nothing here owns threads.

pub(crate) mod cache;
// Writes the garbage-collection outputs of compaction (the next step of
// docs/blob-files.md's plan); until then only tests and `varve::testing`.
#[allow(dead_code)]
pub(crate) mod file_writer;
pub(crate) mod format;
pub(crate) mod lane;
pub(crate) mod reader;
