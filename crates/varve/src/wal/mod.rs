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

pub(crate) mod format;
mod mapped_file;
mod reader;
mod reader_v2;
pub(crate) mod record;
pub(crate) mod slots;
mod uring_log;
mod writer;

#[cfg(test)]
mod tests;

pub(crate) use mapped_file::{MappedLog, MappedLogFile};
pub use reader::TailStatus;
pub(crate) use reader_v2::{Holes, replay, replay_with, write_log};
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub use uring_log::UringLog;
pub(crate) use writer::LogWriter;

use std::path::Path;
use std::sync::Arc;

use crate::io::Preallocate;

use crate::error::Result;
use crate::io::{FileSystem, LogFile};

/// Space a mapped log starts with; it grows as records arrive. Small, so a
/// small database does not carry a large mostly-empty log and an open is
/// cheap even where allocation zero-fills (tmpfs).
const MAPPED_LOG_INITIAL: usize = 1 << 20;

/// How the write-ahead log's bytes reach its file
/// ([`Options::wal_writer`](crate::Options::wal_writer)). Every writer
/// gives the same guarantees: an acknowledged write has reached the
/// operating system and survives `kill -9`, and a `sync` write is
/// fdatasynced before it returns. The writers differ in cost; see
/// `docs/wal-format.md` for the measurements behind the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalWriter {
    /// A shared memory mapping of preallocated (`fallocate`d) file space:
    /// a write group is one `memcpy`. It halves the cost of a small
    /// unsynced write. The default.
    #[default]
    Mapped,
    /// A mapping of space preallocated by writing zeros once: later
    /// fdatasyncs write only data, never an extent conversion (what
    /// recycling log files buys RocksDB). Each fdatasync measured about 3x
    /// longer here, so it is not the default.
    MappedZeroFilled,
    /// One thread owns an io_uring; a write and the fdatasync behind it go
    /// to the kernel as one linked chain. Falls back to plain writes where
    /// io_uring cannot be set up.
    IoUring,
    /// One `pwrite` per write group.
    Plain,
}

/// Creates a new WAL file at `path` written the way `io` says: a mapped
/// log through the file system's in-place files
/// ([`FileSystem::open_in_place`], which the fault-injecting file system
/// tracks too), the io_uring log where the file system's paths are the
/// operating system's ([`FileSystem::uses_os_files`]); otherwise, or if
/// that way cannot be set up here, the file system's own log file. A full
/// disk while preallocating a mapped log is returned as the error
/// (ENOSPC), not answered by falling back.
pub(crate) fn create_log_file(
    fs: &dyn FileSystem,
    path: &Path,
    io: WalWriter,
) -> Result<Arc<dyn LogFile>> {
    match io {
        WalWriter::Mapped | WalWriter::MappedZeroFilled => {
            let how = if io == WalWriter::Mapped {
                Preallocate::Fallocate
            } else {
                Preallocate::ZeroFill
            };
            match MappedLogFile::create_with(fs, path, MAPPED_LOG_INITIAL, how) {
                Ok(file) => {
                    if let Ok(log) = MappedLog::new(file) {
                        return Ok(Arc::new(log));
                    }
                }
                // A full disk is the answer, not a reason to try another
                // way (which would fail later, less clearly).
                Err(e) if e.is_no_space() => return Err(e),
                Err(_) => {}
            }
        }
        WalWriter::IoUring if fs.uses_os_files() => {
            if let Ok(log) = UringLog::new(crate::io::create_truncated(path)?, path) {
                return Ok(Arc::new(log));
            }
        }
        WalWriter::IoUring | WalWriter::Plain => {}
    }
    fs.create_log_file(path)
}

/// Whether every byte of `path` from `offset` to its end is zero: the
/// preallocated space of a mapped log (see [`MappedLogFile`]), not damage.
pub(crate) fn zero_from(fs: &dyn FileSystem, path: &Path, offset: u64) -> Result<bool> {
    let file = fs.open_random_access(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut pos = offset;
    loop {
        let n = file.read_at(&mut buf, pos)?;
        if n == 0 {
            return Ok(true);
        }
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        pos += n as u64;
    }
}
