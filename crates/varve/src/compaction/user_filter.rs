//! [`CompactionFilter`]: a user's hook that keeps, removes or rewrites
//! values while compaction rewrites them (`docs/ttl-and-filters.md`).
//!
//! The engine calls it only for the newest version of a key in the
//! compaction, and only when that version is newer than every live
//! snapshot, so no snapshot reader can tell: snapshots see older versions,
//! which are left alone. A removal becomes a tombstone with the value's
//! sequence number (older versions stay hidden from current readers; the
//! tombstone goes at the bottom like any other); a new value keeps the
//! sequence number. Values kept in blob files are read for it; a new value
//! is written inline. The filter runs on compaction threads, concurrently:
//! it must be `Send + Sync` and should be fast. It does not run at flush,
//! and it is not called for tombstones or for entries nothing can see any
//! more (shadowed, range-deleted or expired).

/// What a [`CompactionFilter`] decides for one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterDecision {
    /// Keep the value as it is.
    Keep,
    /// Delete the key (as a `delete` written when the value was).
    Remove,
    /// Replace the value (as a `put` written when the value was).
    ChangeValue(Vec<u8>),
}

/// Decides, during compaction, what happens to values; see the module
/// docs for when it is called.
///
/// ```
/// use varve::{CompactionFilter, FilterDecision};
///
/// /// Drops every value that starts with `tmp:`.
/// struct DropTemporary;
///
/// impl CompactionFilter for DropTemporary {
///     fn name(&self) -> &str {
///         "drop-temporary"
///     }
///     fn filter(&self, _key: &[u8], value: &[u8]) -> FilterDecision {
///         if value.starts_with(b"tmp:") {
///             FilterDecision::Remove
///         } else {
///             FilterDecision::Keep
///         }
///     }
/// }
/// ```
pub trait CompactionFilter: Send + Sync {
    /// A name for the info log.
    fn name(&self) -> &str;
    /// The decision for the newest `value` of `key`.
    fn filter(&self, key: &[u8], value: &[u8]) -> FilterDecision;
}
