//! The write-ahead log: LevelDB-style framing of records into 32 KiB blocks
//! with "recyclable" headers (every header carries the log number), a
//! FILE_HEADER record with magic and format version, the writer, and the
//! recovery reader. The format is specified in `docs/wal-format.md`.
//!
//! Thread-safety: [`LogWriter`] is `Send` and needs `&mut self` (the DB's
//! write path serialises it); [`replay`] owns its file handle. Invariants:
//! every record reaches the OS in one append; recovery either delivers an
//! exact prefix of the written records and reports where the good data ends,
//! or returns an error naming the file and offset — it never invents a record
//! and never silently skips one in the middle of the log.

pub mod format;
mod reader;
pub mod slots;
mod writer;

#[cfg(test)]
mod tests;

pub use reader::{ReplayOutcome, TailStatus, replay};
pub use writer::LogWriter;
