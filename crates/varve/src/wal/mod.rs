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
mod mapped_file;
mod reader;
mod reader_v2;
pub mod record;
pub mod slots;
mod writer;

#[cfg(test)]
mod tests;

pub use mapped_file::{MappedLog, MappedLogFile};
pub use reader::{ReplayOutcome, TailStatus};
pub use reader_v2::{replay, write_log};
pub use writer::LogWriter;

use std::path::Path;
use std::sync::Arc;

use crate::Result;
use crate::io::{FileSystem, LogFile};

/// Space a mapped log starts with; it grows as records arrive. Small, so a
/// small database does not carry a large mostly-empty log and an open is
/// cheap even where allocation zero-fills (tmpfs).
const MAPPED_LOG_INITIAL: usize = 1 << 20;

/// Creates a new WAL file at `path`: mapped ([`MappedLog`]) when `mmap` is
/// asked for and the file system supports it (falling back to the file
/// system's own log file if mapping fails), the file system's otherwise.
pub fn create_log_file(fs: &dyn FileSystem, path: &Path, mmap: bool) -> Result<Arc<dyn LogFile>> {
    if mmap
        && fs.supports_mapped_logs()
        && let Ok(file) = MappedLogFile::create(path, MAPPED_LOG_INITIAL)
        && let Ok(log) = MappedLog::new(file)
    {
        return Ok(Arc::new(log));
    }
    fs.create_log_file(path)
}

/// Whether every byte of `path` from `offset` to its end is zero: the
/// preallocated space of a mapped log (see [`MappedLogFile`]), not damage.
pub fn zero_from(fs: &dyn FileSystem, path: &Path, offset: u64) -> Result<bool> {
    let mut file = fs.open_sequential(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut pos = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(true);
        }
        let skip = usize::try_from(offset.saturating_sub(pos)).unwrap_or(usize::MAX);
        if buf[..n].iter().skip(skip).any(|&b| b != 0) {
            return Ok(false);
        }
        pos += n as u64;
    }
}
