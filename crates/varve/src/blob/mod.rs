//! Blob files: large values kept outside the tables (`docs/blob-files.md`).
//! The tables store a [`format::BlobPointer`] in place of such a value.
//!
//! `format` is the on-disk format (pure encoding and checking),
//! `file_writer` writes a blob file front to back (compaction outputs),
//! `lane` appends writers' values through a mapping (the write path),
//! `reader` reads values by pointer and walks a file's chunks, `cache`
//! keeps a database's readers by file number. Nothing here owns threads.

// Not called by the engine yet (the blob-file work is in progress on this
// branch); the allowance goes when the write path uses it.
#![allow(dead_code)]

pub(crate) mod cache;
pub(crate) mod file_writer;
pub(crate) mod format;
pub(crate) mod lane;
pub(crate) mod reader;
