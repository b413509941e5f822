//! Read-only inspection of database files, for operators and the `varve`
//! command-line tool: decode a WAL ([`dump_wal`]), a table ([`dump_sst`]),
//! a blob file ([`dump_blob`]), a manifest ([`dump_manifest`]), and verify every checksum of every file
//! of a database directory ([`check_db`]).
//!
//! Nothing here opens the database, takes `LOCK` or writes a byte, so these
//! functions are safe to run on a database another process has open (they
//! may then see a WAL or manifest tail being written). Every function owns
//! its file handles; all are thread-safe. Results are plain data; errors
//! name the file and, for damage, the offset.

mod blob_dump;
mod check;
mod manifest_dump;
mod sst_dump;
mod wal_dump;

pub use blob_dump::{BlobChunk, BlobDump, BlobEntry, dump_blob};
pub use check::{CheckedFile, FileCheckKind, Problem, check_db, check_file};
pub use manifest_dump::{ManifestDump, ManifestRecord, dump_manifest};
pub use sst_dump::{SstDump, SstEntry, dump_sst};
pub use wal_dump::{WalDump, WalOp, WalRecord, dump_wal};

// The format types the dumps above hold, and the key decoder the `varve`
// tool prints table entries with.
pub use crate::keys::{ParsedInternalKey, ValueKind, parse_internal_key};
pub use crate::range_del::RangeTombstone;
pub use crate::sst::{BlockHandle, Footer, TableProperties};
pub use crate::version::{BlobFileEdit, FileMetaData, VersionEdit};
pub use crate::wal::TailStatus;

/// The manifest that `CURRENT` in `dir` names (read through `fs`).
pub fn current_manifest(fs: &dyn crate::fs::FileSystem, dir: &Path) -> Result<std::path::PathBuf> {
    let number = crate::version::manifest::read_current(fs, dir)?;
    Ok(crate::version::manifest::manifest_path(dir, number))
}

use std::path::Path;

use crate::error::{Error, Result};
use crate::filenames::{self, FileKind};

/// The number of the file at `path` if its name is of the kind `want`
/// picks (`FileKind::Wal`, `Table` or `Manifest`), else `InvalidArgument`
/// naming the file and the expected `pattern`.
pub(crate) fn file_number(
    path: &Path,
    want: fn(FileKind) -> Option<u64>,
    pattern: &str,
) -> Result<u64> {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(filenames::parse)
        .and_then(want)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} is not named {pattern}; the number in the name is needed to read it",
                path.display()
            ))
        })
}

/// `Some(n)` for `nnnnnn.blob`.
pub(crate) fn blob(kind: FileKind) -> Option<u64> {
    match kind {
        FileKind::Blob(n) => Some(n),
        _ => None,
    }
}

/// `Some(n)` for `nnnnnn.log`.
pub(crate) fn wal(k: FileKind) -> Option<u64> {
    if let FileKind::Wal(n) = k {
        Some(n)
    } else {
        None
    }
}

/// `Some(n)` for `nnnnnn.sst`.
pub(crate) fn table(k: FileKind) -> Option<u64> {
    if let FileKind::Table(n) = k {
        Some(n)
    } else {
        None
    }
}

/// `Some(n)` for `MANIFEST-nnnnnn`.
pub(crate) fn manifest(k: FileKind) -> Option<u64> {
    if let FileKind::Manifest(n) = k {
        Some(n)
    } else {
        None
    }
}
