//! Blob files: large values kept outside the tables (`docs/blob-files.md`).
//! The tables store a [`format::BlobPointer`] in place of such a value.
//!
//! `format` is the on-disk format (pure encoding and checking). Nothing here
//! owns threads or files yet.

pub(crate) mod format;
