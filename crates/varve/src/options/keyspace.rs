//! [`KeyspaceOptions`]: what may differ between the keyspaces of one
//! database (`docs/keyspaces.md`). Everything else (the WAL, the write
//! buffer, the sizes of blob files and their garbage collection, caches,
//! threads) is the database's, from [`Options`].
//!
//! Plain data; `Send + Sync`. Invariant: [`KeyspaceOptions::validate`]
//! accepts only settings the engine can run with, the same rules as the
//! matching [`Options`] fields.

use std::sync::Arc;
use std::time::Duration;

use super::Options;
use crate::error::{Error, Result};
use crate::sst::Compression;

/// The settings of one keyspace. [`KeyspaceOptions::from`] an [`Options`]
/// copies the database's settings, which is what the default keyspace
/// uses.
///
/// ```
/// let opts = varve::KeyspaceOptions {
///     bloom_bits_per_key: 0,
///     ttl: Some(std::time::Duration::from_secs(3600)),
///     ..varve::KeyspaceOptions::default()
/// };
/// assert!(opts.validate().is_ok());
/// ```
#[derive(Clone)]
pub struct KeyspaceOptions {
    /// Memtable bytes of this keyspace at which every keyspace's memtable
    /// is switched and flushed (flushes are atomic across keyspaces,
    /// `docs/keyspaces.md`); `None`: only the database's
    /// `Options::write_buffer_size`, which bounds all keyspaces' memtables
    /// together, switches. Takes effect from the next memtable on.
    pub write_buffer_size: Option<usize>,
    /// Uncompressed bytes per data block of this keyspace's tables.
    pub block_size: usize,
    /// Bloom filter bits per key in its tables (0: no filter).
    pub bloom_bits_per_key: u32,
    /// Block compression of its tables.
    pub compression: Compression,
    /// L0 tables that trigger a compaction of this keyspace into L1.
    pub l0_compaction_trigger: usize,
    /// Target size of its L1; each deeper level is
    /// `max_bytes_for_level_multiplier` times larger.
    pub max_bytes_for_level_base: u64,
    /// Growth factor between its levels.
    pub max_bytes_for_level_multiplier: u64,
    /// Target size of the tables its compactions write.
    pub target_file_size: u64,
    /// Values of at least this many bytes written to this keyspace go to
    /// blob files of its own, and its tables keep pointers
    /// (`docs/blob-files.md`); `None`: every value stays inline. Takes
    /// effect from the next write on; values already written stay where
    /// they are. Default: the database's `Options::min_blob_size` (4096).
    /// Each keyspace that keeps blob files has its own
    /// `Options::blob_write_lanes` write lanes (their staging slots count
    /// in `DbStats::blob_staging`).
    pub min_blob_size: Option<usize>,
    /// Entries older than this are expired: hidden from reads, snapshots
    /// included, and dropped by compaction (`None`: never). At least 1 ms;
    /// counted as `Options::ttl` is (`docs/ttl-and-filters.md`).
    pub ttl: Option<Duration>,
    /// Decides, during this keyspace's compactions, whether to keep,
    /// remove or change the newest version of a key
    /// (`docs/ttl-and-filters.md`).
    pub compaction_filter: Option<Arc<dyn crate::CompactionFilter>>,
}

impl std::fmt::Debug for KeyspaceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyspaceOptions")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("block_size", &self.block_size)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("compression", &self.compression)
            .field("l0_compaction_trigger", &self.l0_compaction_trigger)
            .field("max_bytes_for_level_base", &self.max_bytes_for_level_base)
            .field(
                "max_bytes_for_level_multiplier",
                &self.max_bytes_for_level_multiplier,
            )
            .field("target_file_size", &self.target_file_size)
            .field("min_blob_size", &self.min_blob_size)
            .field("ttl", &self.ttl)
            .field("compaction_filter", &self.compaction_filter.is_some())
            .finish()
    }
}

impl Default for KeyspaceOptions {
    /// The settings of a default [`Options`].
    fn default() -> Self {
        KeyspaceOptions::from(&Options::default())
    }
}

impl From<&Options> for KeyspaceOptions {
    fn from(o: &Options) -> Self {
        KeyspaceOptions {
            write_buffer_size: None,
            block_size: o.block_size,
            bloom_bits_per_key: o.bloom_bits_per_key,
            compression: o.compression,
            l0_compaction_trigger: o.l0_compaction_trigger,
            max_bytes_for_level_base: o.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: o.max_bytes_for_level_multiplier,
            target_file_size: o.target_file_size,
            min_blob_size: o.min_blob_size,
            ttl: o.ttl,
            compaction_filter: o.compaction_filter.clone(),
        }
    }
}

impl KeyspaceOptions {
    /// Refuses settings the engine cannot run with (`InvalidArgument`
    /// naming the field).
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::InvalidArgument(format!("KeyspaceOptions: {what}")));
        if self.write_buffer_size.is_some_and(|w| w < 4096) {
            return bad("write_buffer_size must be at least 4 KiB");
        }
        if !(256..=64 << 20).contains(&self.block_size) {
            return bad("block_size must be within 256 B..=64 MiB");
        }
        if self.l0_compaction_trigger == 0 {
            return bad("l0_compaction_trigger must be positive");
        }
        if self.max_bytes_for_level_base == 0 || self.target_file_size == 0 {
            return bad("max_bytes_for_level_base and target_file_size must be positive");
        }
        if self.max_bytes_for_level_multiplier < 2 {
            return bad("max_bytes_for_level_multiplier must be at least 2");
        }
        if self.min_blob_size == Some(0) {
            return bad("min_blob_size must be positive (None keeps every value inline)");
        }
        if self.ttl.is_some_and(|t| t < Duration::from_millis(1)) {
            return bad("ttl must be at least 1 millisecond");
        }
        Ok(())
    }
}
