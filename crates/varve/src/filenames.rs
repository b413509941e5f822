//! Names of the files in a database directory and how to parse them
//! (see `docs/db-directory.md`): `LOCK`, `LOG` / `LOG.old`, `CURRENT`, `BOOT_ID`,
//! `MANIFEST-nnnnnn`, `nnnnnn.log`, `nnnnnn.sst`, `nnnnnn.blob`, `*.tmp`.
//! Shared by the database and the version set.
//! Pure functions; thread-safe.

use std::path::{Path, PathBuf};

/// Kinds of files varve keeps in a database directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `LOCK`.
    Lock,
    /// `LOG` or `LOG.old`.
    InfoLog,
    /// `nnnnnn.log`.
    Wal(u64),
    /// `CURRENT`.
    Current,
    /// `MANIFEST-nnnnnn`.
    Manifest(u64),
    /// `nnnnnn.sst`.
    Table(u64),
    /// `nnnnnn.blob`.
    Blob(u64),
    /// A temporary file (`*.tmp`).
    Temp,
    /// `BOOT_ID` (`db/boot.rs`).
    BootId,
}

/// Name of the lock file.
pub(crate) const LOCK: &str = "LOCK";
/// Name of the subdirectory that receives files repair rejects, and the
/// unreferenced files an open sets aside after a damaged manifest tail.
pub(crate) const LOST_DIR: &str = "lost";
/// Name of the event log.
pub(crate) const INFO_LOG: &str = "LOG";
/// Name of the previous event log.
pub(crate) const INFO_LOG_OLD: &str = "LOG.old";

/// Path of WAL number `n`.
pub(crate) fn wal_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.log"))
}

/// Path of table (SST) number `n`.
pub(crate) fn table_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.sst"))
}

/// Path of blob file number `n`.
pub(crate) fn blob_file_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.blob"))
}

/// Recognises a file name of the database; `None` for foreign files.
pub(crate) fn parse(name: &str) -> Option<FileKind> {
    match name {
        LOCK => return Some(FileKind::Lock),
        INFO_LOG | INFO_LOG_OLD => return Some(FileKind::InfoLog),
        "CURRENT" => return Some(FileKind::Current),
        "BOOT_ID" => return Some(FileKind::BootId),
        _ => {}
    }
    if name.ends_with(".tmp") {
        return Some(FileKind::Temp);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return number(n).map(FileKind::Manifest);
    }
    let (stem, ext) = name.rsplit_once('.')?;
    let n = number(stem)?;
    match ext {
        "log" => Some(FileKind::Wal(n)),
        "sst" => Some(FileKind::Table(n)),
        "blob" => Some(FileKind::Blob(n)),
        _ => None,
    }
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_foreign() {
        let p = wal_path(Path::new("/d"), 12);
        assert_eq!(p, Path::new("/d/000012.log"));
        assert_eq!(parse("000012.log"), Some(FileKind::Wal(12)));
        assert_eq!(parse("1234567.log"), Some(FileKind::Wal(1_234_567)));
        assert_eq!(parse("000007.sst"), Some(FileKind::Table(7)));
        assert_eq!(parse("MANIFEST-000003"), Some(FileKind::Manifest(3)));
        assert_eq!(parse("LOCK"), Some(FileKind::Lock));
        assert_eq!(parse("x.log"), None);
        assert_eq!(parse("12.txt"), None);
        assert_eq!(parse("-1.log"), None);
        assert_eq!(parse("README"), None);
    }
}
