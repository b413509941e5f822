//! The one error type of the library.
//!
//! Every fallible public function returns [`Result<T>`](crate::Result). Errors
//! that come from a file carry the file's path (and, for corruption, the byte
//! offset) so that an operator can find the damage without a debugger.
//! The enum is `#[non_exhaustive]`: match with a wildcard arm.

use std::path::PathBuf;

/// Errors returned by varve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system IO error on a named file or directory.
    #[error("IO error on {}: {source}", path.display())]
    Io {
        /// The file or directory the operation was on.
        path: PathBuf,
        /// The underlying OS error.
        #[source]
        source: std::io::Error,
    },
    /// Data on disk failed a checksum or does not parse.
    #[error("corruption in {} at offset {offset}: {reason}", file.display())]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset in the file where the damage was found.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// A file was written by a format version this build does not know.
    #[error("{} has format version {found}, this build reads up to {supported}", file.display())]
    UnsupportedVersion {
        /// The file.
        file: PathBuf,
        /// The version found in the file.
        found: u32,
        /// The newest version this build understands.
        supported: u32,
    },
    /// The caller passed something the engine cannot accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The database directory is locked by another `Db` (in this or another process).
    #[error("database {} is locked by another process or another open Db (lock file {})", dir.display(), lock_file.display())]
    Locked {
        /// The database directory.
        dir: PathBuf,
        /// The lock file that could not be locked.
        lock_file: PathBuf,
    },
    /// The database is missing and `create_if_missing` is off.
    #[error("database {} does not exist (create_if_missing is false)", .0.display())]
    NotFound(PathBuf),
    /// The database exists and `error_if_exists` is on.
    #[error("database {} already exists (error_if_exists is true)", .0.display())]
    AlreadyExists(PathBuf),
    /// An earlier WAL or background write failed; writes are refused until
    /// the database is reopened or, when the failure was a full disk,
    /// `Db::resume` succeeds. The message says which.
    #[error("database is poisoned by an earlier write failure: {0}")]
    Poisoned(String),
    /// The database was closed.
    #[error("database is closed")]
    Closed,
    /// The keyspace named does not exist, or was dropped.
    #[error("no keyspace {0}")]
    KeyspaceNotFound(String),
    /// A write (or flush, compaction, resume) on a database opened with
    /// `Db::open_read_only`.
    #[error("database {} is open read-only", .0.display())]
    ReadOnly(PathBuf),
}

impl Error {
    /// Builds an [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Builds an [`Error::Corruption`].
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// A copy of this error, for reporting one failure to several callers
    /// (an IO error keeps its kind and message).
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Io { path, source } => Error::Io {
                path: path.clone(),
                // An OS error stays one (same errno, same message); others
                // keep their kind and text.
                source: match source.raw_os_error() {
                    Some(code) => std::io::Error::from_raw_os_error(code),
                    None => std::io::Error::new(source.kind(), source.to_string()),
                },
            },
            Error::Corruption {
                file,
                offset,
                reason,
            } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                reason: reason.clone(),
            },
            Error::UnsupportedVersion {
                file,
                found,
                supported,
            } => Error::UnsupportedVersion {
                file: file.clone(),
                found: *found,
                supported: *supported,
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::Locked { dir, lock_file } => Error::Locked {
                dir: dir.clone(),
                lock_file: lock_file.clone(),
            },
            Error::NotFound(p) => Error::NotFound(p.clone()),
            Error::AlreadyExists(p) => Error::AlreadyExists(p.clone()),
            Error::Poisoned(m) => Error::Poisoned(m.clone()),
            Error::Closed => Error::Closed,
            Error::KeyspaceNotFound(m) => Error::KeyspaceNotFound(m.clone()),
            Error::ReadOnly(p) => Error::ReadOnly(p.clone()),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// True for an [`Error::Io`] that says the file system is out of space:
    /// ENOSPC (`ErrorKind::StorageFull`) or EDQUOT (`ErrorKind::QuotaExceeded`).
    /// These are the failures `Db::resume` recovers
    /// from once space is freed.
    pub fn is_no_space(&self) -> bool {
        match self {
            Error::Io { source, .. } => {
                matches!(
                    source.kind(),
                    std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
                ) || matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
            }
            _ => false,
        }
    }

    /// The error of an operation on `path` that the file system does not
    /// offer (`ErrorKind::Unsupported`), saying what.
    pub(crate) fn unsupported(path: &std::path::Path, what: &str) -> Error {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::Unsupported, what.to_string()),
        )
    }

    /// True for the error of an operation the file system does not offer
    /// (`ErrorKind::Unsupported`), such as in-place files on one without
    /// OS files: the caller falls back to another way.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::Unsupported)
    }
}

/// `Result` with varve's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_space_is_recognised_and_survives_duplication() {
        for code in [libc::ENOSPC, libc::EDQUOT] {
            let e = Error::io("/db/000007.log", std::io::Error::from_raw_os_error(code));
            assert!(e.is_no_space(), "{e}");
            let d = e.duplicate();
            assert!(d.is_no_space(), "{d}");
            assert_eq!(d.to_string(), e.to_string());
            match d {
                Error::Io { source, .. } => assert_eq!(source.raw_os_error(), Some(code)),
                other => panic!("duplicate changed the variant: {other}"),
            }
        }
        let full = Error::io("/db/x", std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(
            full.to_string().contains("/db/x") && full.to_string().contains("No space left"),
            "{full}"
        );
        // Kind alone (an error built with a message) counts too.
        let e = Error::io(
            "/db/x",
            std::io::Error::new(std::io::ErrorKind::StorageFull, "fallocate: disk full"),
        );
        assert!(e.is_no_space() && e.duplicate().is_no_space());
        let eio = Error::io("/db/x", std::io::Error::from_raw_os_error(libc::EIO));
        assert!(!eio.is_no_space());
        assert!(!Error::Poisoned("No space left on device".into()).is_no_space());
    }
}
