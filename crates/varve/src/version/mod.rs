//! Versions and the manifest: which table files make up each level of the
//! LSM tree, and the durable log of changes to that set.
//!
//! [`FileMetaData`] describes one table; a [`VersionEdit`] is one change
//! (files added/removed, counters advanced); a [`Version`] is an immutable
//! snapshot of the levels; the [`VersionSet`] owns the current version, the
//! counters and the manifest (`MANIFEST-nnnnnn` in WAL framing, named by
//! `CURRENT`). Format: `docs/manifest-format.md`. Leveled layout: L0 files
//! may overlap (searched newest first); L1..L6 each hold files with disjoint,
//! sorted user-key ranges. Thread-safety: `Version` and `FileMetaData` are
//! immutable and shared through `Arc`; `VersionSet` is `Send` and used under
//! the DB's mutex. Files are deleted (by the DB) only after the edit that
//! retires them is durable.

mod builder;
mod edit;
mod file_meta;
pub(crate) mod manifest;
mod recover;
mod table_cache;
pub(crate) mod time_map;
#[allow(clippy::module_inception)]
mod version;
mod version_set;

#[cfg(test)]
mod tests;

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use builder::Builder;
pub use edit::{BlobFileEdit, VersionEdit};
pub use file_meta::FileMetaData;
pub(crate) use table_cache::{ScanOptions, TableCache};
pub(crate) use version::Version;
pub use version_set::ManifestTail;
pub(crate) use version_set::{DEFAULT_KEYSPACE_NAME, VersionSet};

/// Number of levels of the LSM tree (L0..L6).
pub(crate) const NUM_LEVELS: usize = 7;
