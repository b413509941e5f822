//! Options for opening a database, writing and reading.
//!
//! Plain data; cloned freely. [`Options::validate`] rejects nonsense at open
//! with `InvalidArgument` rather than failing later.

use std::fmt;
use std::sync::Arc;

use crate::db::Snapshot;
use crate::io::{FileSystem, PosixFs};
use crate::{Error, Result};

/// Options for [`Db::open`](crate::Db::open).
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none. Default `true`.
    pub create_if_missing: bool,
    /// Fail if a database already exists. Default `false`.
    pub error_if_exists: bool,
    /// Bytes of arena a memtable holds before it becomes immutable and a new
    /// one starts. Default 64 MiB; at least 64 KiB, at most 2 GiB.
    pub write_buffer_size: usize,
    /// How many immutable memtables may wait in memory before writers stall.
    /// Default 4. (Until table files exist, immutables are never flushed and
    /// this limit is not enforced.)
    pub max_immutable_memtables: usize,
    /// Largest key accepted, in bytes. Default 64 KiB; at most 16 MiB.
    pub max_key_size: usize,
    /// Largest value accepted, in bytes. Default 256 MiB; at most 1 GiB.
    pub max_value_size: usize,
    /// Check WAL record checksums during recovery (always on) and also treat
    /// a bad record in a non-final WAL file as corruption. Default `true`.
    pub paranoid_checks: bool,
    /// The file system the database lives on. Default: the real one.
    pub fs: Arc<dyn FileSystem>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_immutable_memtables: 4,
            max_key_size: 64 << 10,
            max_value_size: 256 << 20,
            paranoid_checks: true,
            fs: Arc::new(PosixFs),
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_immutable_memtables", &self.max_immutable_memtables)
            .field("max_key_size", &self.max_key_size)
            .field("max_value_size", &self.max_value_size)
            .field("paranoid_checks", &self.paranoid_checks)
            .field("fs", &self.fs)
            .finish()
    }
}

impl Options {
    /// Checks the options for values the engine cannot work with.
    pub fn validate(&self) -> Result<()> {
        if !(64 << 10..=2 << 30).contains(&self.write_buffer_size) {
            return Err(Error::InvalidArgument(format!(
                "write_buffer_size {} is outside 64 KiB..=2 GiB",
                self.write_buffer_size
            )));
        }
        if self.max_key_size == 0 || self.max_key_size > 16 << 20 {
            return Err(Error::InvalidArgument(format!(
                "max_key_size {} is outside 1..=16 MiB",
                self.max_key_size
            )));
        }
        if self.max_value_size > 1 << 30 {
            return Err(Error::InvalidArgument(format!(
                "max_value_size {} is over 1 GiB",
                self.max_value_size
            )));
        }
        if self.max_immutable_memtables == 0 {
            return Err(Error::InvalidArgument(
                "max_immutable_memtables must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// Options for one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// fdatasync the WAL before returning, so the write survives power loss.
    /// Without it the write has reached the OS on return and survives a
    /// process crash (`kill -9`) but not a machine crash. Default `false`.
    pub sync: bool,
    /// Skip the WAL: the write lives only in the memtable until it is flushed
    /// and is lost on any crash. Default `false`.
    pub disable_wal: bool,
}

impl WriteOptions {
    /// Options with `sync = true`.
    pub fn sync() -> Self {
        WriteOptions {
            sync: true,
            disable_wal: false,
        }
    }
}

/// Options for reads and iterators.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Read as of this snapshot instead of the latest state.
    pub snapshot: Option<Snapshot>,
    /// Iterators start at or after this key (inclusive).
    pub iterate_lower_bound: Option<Vec<u8>>,
    /// Iterators stop before this key (exclusive).
    pub iterate_upper_bound: Option<Vec<u8>>,
}

impl ReadOptions {
    /// Read options pinned to `snapshot`.
    pub fn at(snapshot: &Snapshot) -> Self {
        ReadOptions {
            snapshot: Some(snapshot.clone()),
            ..ReadOptions::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        Options::default().validate().expect("defaults are valid");
    }

    #[test]
    fn rejects_bad_sizes() {
        let o = Options {
            write_buffer_size: 10,
            ..Options::default()
        };
        assert!(matches!(o.validate(), Err(Error::InvalidArgument(_))));
        let o = Options {
            max_key_size: 0,
            ..Options::default()
        };
        assert!(matches!(o.validate(), Err(Error::InvalidArgument(_))));
    }
}
