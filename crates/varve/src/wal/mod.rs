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
mod mapped_file;
mod reader;
pub mod slots;
mod writer;

#[cfg(test)]
mod tests;

pub use mapped_file::MappedLogFile;
pub use reader::{ReplayOutcome, TailStatus, replay};
pub use writer::LogWriter;

use std::path::Path;

use crate::Result;
use crate::io::{FileSystem, WritableFile};

/// Space a mapped log starts with; it grows as records arrive. Small, so a
/// small database does not carry a large mostly-empty log and an open is
/// cheap even where allocation zero-fills (tmpfs).
const MAPPED_LOG_INITIAL: usize = 1 << 20;

/// Creates a new WAL file at `path`: mapped when `mmap` is asked for and the
/// file system supports it (falling back to plain appends if mapping fails),
/// plain appends otherwise.
pub fn create_log_file(
    fs: &dyn FileSystem,
    path: &Path,
    mmap: bool,
) -> Result<Box<dyn WritableFile>> {
    if mmap
        && fs.supports_mapped_logs()
        && let Ok(file) = MappedLogFile::create(path, MAPPED_LOG_INITIAL)
    {
        return Ok(Box::new(file));
    }
    fs.create_writable(path)
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
