//! Decoding one manifest file into its version edits ([`dump_manifest`]).
//! Read-only; thread-safe. Checks the header and every record checksum as
//! recovery does.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::version::VersionEdit;
use crate::version::manifest::read_manifest;
use crate::wal::TailStatus;

/// One version edit and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestRecord {
    /// Offset of the record in the file.
    pub offset: u64,
    /// The edit (the first is the snapshot of the whole state).
    pub edit: VersionEdit,
}

/// What [`dump_manifest`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestDump {
    /// The file.
    pub file: PathBuf,
    /// The edits in order.
    pub records: Vec<ManifestRecord>,
    /// How the file ended.
    pub tail: TailStatus,
}

/// Decodes the manifest at `path` (named `MANIFEST-nnnnnn`).
pub fn dump_manifest(fs: &dyn FileSystem, path: &Path) -> Result<ManifestDump> {
    let number = super::file_number(path, super::manifest, "MANIFEST-nnnnnn")?;
    let dir = path.parent().ok_or_else(|| {
        Error::InvalidArgument(format!("{} has no parent directory", path.display()))
    })?;
    let mut records = Vec::new();
    let outcome = read_manifest(fs, dir, number, |edit, offset| {
        records.push(ManifestRecord { offset, edit });
        Ok(())
    })?;
    Ok(ManifestDump {
        file: path.to_path_buf(),
        records,
        tail: outcome.tail,
    })
}
