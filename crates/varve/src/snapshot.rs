//! Snapshots: consistent point-in-time views.
//!
//! A [`Snapshot`] pins a sequence number; reads and iterators that use it
//! see exactly the writes with smaller or equal sequence numbers. Live
//! snapshots are counted in a [`SnapshotList`] so that compaction can keep
//! every version some snapshot still sees. Cloning a `Snapshot` is cheap
//! (an `Arc`); the pin is released when the last clone drops.
//! Thread-safe.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::keys::SequenceNumber;

/// The set of live snapshots, by sequence number.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SequenceNumber, usize>>,
}

impl SnapshotList {
    /// Pins `seq` and returns the snapshot handle.
    pub(crate) fn acquire(self: &Arc<Self>, seq: SequenceNumber) -> Snapshot {
        *self.live.lock().entry(seq).or_insert(0) += 1;
        Snapshot {
            inner: Arc::new(Pin {
                seq,
                list: Arc::clone(self),
            }),
        }
    }

    /// The oldest pinned sequence number, if any snapshot is live
    /// (compaction keeps every version it can see).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn oldest(&self) -> Option<SequenceNumber> {
        self.live.lock().keys().next().copied()
    }

    /// Every pinned sequence number, ascending.
    pub(crate) fn sequences(&self) -> Vec<SequenceNumber> {
        self.live.lock().keys().copied().collect()
    }

    /// Number of live snapshots.
    pub(crate) fn len(&self) -> usize {
        self.live.lock().values().sum()
    }

    /// True when no snapshot is live.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        self.live.lock().is_empty()
    }

    fn release(&self, seq: SequenceNumber) {
        let mut live = self.live.lock();
        if let Some(n) = live.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seq);
            }
        }
    }
}

struct Pin {
    seq: SequenceNumber,
    list: Arc<SnapshotList>,
}

impl Drop for Pin {
    fn drop(&mut self) {
        self.list.release(self.seq);
    }
}

/// A consistent, read-only view of the database at one moment.
///
/// Obtained from `Db::snapshot`; pass it to reads
/// through `ReadOptions::snapshot`. Released on drop.
#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<Pin>,
}

impl Snapshot {
    /// The sequence number the snapshot sees up to (inclusive).
    pub fn sequence(&self) -> SequenceNumber {
        self.inner.seq
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("sequence", &self.inner.seq)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_and_releases() {
        let list = Arc::new(SnapshotList::default());
        let a = list.acquire(5);
        let b = list.acquire(3);
        let b2 = b.clone();
        assert_eq!(list.oldest(), Some(3));
        assert_eq!(list.len(), 2);
        drop(b);
        assert_eq!(list.oldest(), Some(3));
        drop(b2);
        assert_eq!(list.oldest(), Some(5));
        assert_eq!(a.sequence(), 5);
        drop(a);
        assert!(list.is_empty());
    }
}
