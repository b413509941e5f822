//! Read-only inspection of database files, for operators and the `varve`
//! command-line tool: decode a WAL ([`dump_wal`]), a table ([`dump_sst`]),
//! a manifest ([`dump_manifest`]), and verify every checksum of every file
//! of a database directory ([`check_db`]).
//!
//! Nothing here opens the database, takes `LOCK` or writes a byte, so these
//! functions are safe to run on a database another process has open (they
//! may then see a WAL or manifest tail being written). Every function owns
//! its file handles; all are thread-safe. Results are plain data; errors
//! name the file and, for damage, the offset.

mod check;
mod manifest_dump;
mod sst_dump;
mod wal_dump;

pub use check::{CheckedFile, FileCheckKind, Problem, check_db, check_file};
pub use manifest_dump::{ManifestDump, ManifestRecord, dump_manifest};
pub use sst_dump::{SstDump, SstEntry, dump_sst};
pub use wal_dump::{WalDump, WalOp, WalRecord, dump_wal};

use std::path::Path;

use crate::{Error, Result};

/// The number in a file name `nnnnnn<suffix>` or `<prefix>nnnnnn`
/// (e.g. `000012.log`, `MANIFEST-000003`), or `InvalidArgument` naming it.
pub(crate) fn file_number(path: &Path, prefix: &str, suffix: &str) -> Result<u64> {
    let bad = || {
        Error::InvalidArgument(format!(
            "{} is not named {prefix}nnnnnn{suffix}; the number in the name is needed to read it",
            path.display()
        ))
    };
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(bad)?;
    let digits = name
        .strip_prefix(prefix)
        .and_then(|n| n.strip_suffix(suffix))
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(bad)?;
    digits.parse().map_err(|_| bad())
}
