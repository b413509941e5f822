//! The write-ahead log. Version 2 (what the engine writes): a FILE_HEADER
//! record with magic and format version, then position-independent records
//! (`record`) placed by the log slots (`slots`). Version 1 (the manifest,
//! and WALs of older databases): LevelDB-style framing into 32 KiB blocks
//! with "recyclable" headers, written by [`LogWriter`]. [`replay`] reads
//! both. The formats are specified in `docs/wal-format.md`.
//!
//! Thread-safety: [`LogWriter`] is `Send` and needs `&mut self`; the slot
//! pool is `Sync`; [`replay`] owns its file handle. Invariants:
//! every record reaches the OS in one append; recovery either delivers an
//! exact prefix of the written records and reports where the good data ends,
//! or returns an error naming the file and offset — it never invents a record
//! and never silently skips one in the middle of the log.

pub mod format;
mod reader;
mod reader_v2;
pub mod record;
pub mod slots;
mod writer;

#[cfg(test)]
mod tests;

pub use reader::{ReplayOutcome, TailStatus};
pub use reader_v2::{replay, write_log};
pub use writer::LogWriter;
