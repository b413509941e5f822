//! [`InternalIterator`]: the one cursor interface every sorted source of
//! internal entries implements (memtable, data blocks, tables, levels, the
//! merge of them). A ground module: the memtable and table formats below
//! the iterators in `iter/` implement it, and everything above reads
//! through it.

use crate::error::Result;

/// A cursor over entries sorted by internal key (see [`crate::keys`]).
///
/// Implementations are single-threaded (`Send`, not `Sync`). `key()` and
/// `value()` may only be called while `valid()` is true. An implementation
/// that hits an error becomes invalid and reports it from `status()`.
pub(crate) trait InternalIterator: Send {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the last entry.
    fn seek_to_last(&mut self);
    /// Positions on the first entry whose internal key is `>= target`.
    fn seek(&mut self, target: &[u8]);
    /// Positions on the last entry whose internal key is `<= target`.
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. Requires `valid()`.
    fn prev(&mut self);
    /// The current internal key.
    fn key(&self) -> &[u8];
    /// The current value.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
