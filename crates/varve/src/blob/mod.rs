//! Blob files: large values kept outside the tables (`docs/blob-files.md`).
//! The tables store a [`format::BlobPointer`] in place of such a value.
//!
//! `format` is the on-disk format (pure encoding and checking),
//! `file_writer` writes a blob file front to back, `reader` reads values by
//! pointer and walks a file's chunks. Nothing here owns threads.

pub(crate) mod file_writer;
pub(crate) mod format;
pub(crate) mod reader;
