//! [`BlobLaneSet`]: the write lanes of every keyspace that keeps large
//! values in blob files (`docs/keyspaces.md`, "Blob files"). Each keyspace
//! has lanes of its own, because a blob file belongs to one keyspace's
//! tree: that tree's compactions count its garbage and relocate its
//! values. The default keyspace's lanes are fixed at open; another
//! keyspace's are added when a handle asks for blob files
//! (`KeyspaceOptions::min_blob_size`) and removed when it is dropped.
//!
//! Thread-safety: `Send + Sync`. The default lanes are read without a
//! lock (the write path's common case); the others sit behind a read-write
//! lock held only to look up, add or remove a keyspace's lanes, never
//! across IO (callers get `Arc`s). Invariant: at most one set of lanes per
//! keyspace id, so a blob file number is appended to by one lane only.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::RwLock;

use super::format::BlobPointer;
use super::lane::BlobWriteLanes;
use crate::util::memory::MemoryGauge;

/// The write lanes of a database, by keyspace id.
#[derive(Debug)]
pub(crate) struct BlobLaneSet {
    /// The default keyspace's lanes (`None`: it keeps every value inline,
    /// or the database is read-only).
    default: Option<Arc<BlobWriteLanes>>,
    /// The other keyspaces' lanes.
    others: RwLock<BTreeMap<u32, Arc<BlobWriteLanes>>>,
    /// `others` is not empty: readers skip its lock otherwise.
    has_others: AtomicBool,
    /// The smallest threshold of any keyspace's lanes (`usize::MAX`:
    /// none): a smaller value needs no lookup ([`may_take`](Self::may_take)).
    min_any: AtomicUsize,
    /// With `Options::memory_budget`: its blob-staging part, which every
    /// keyspace's lanes reserve their staging slots from.
    room: Option<Arc<MemoryGauge>>,
}

impl BlobLaneSet {
    /// A set with the default keyspace's `default` lanes.
    #[cfg(test)]
    pub(crate) fn new(default: Option<Arc<BlobWriteLanes>>) -> BlobLaneSet {
        BlobLaneSet::with_room(default, None)
    }

    /// A set whose lanes reserve their staging slots from `room` (the
    /// memory budget's blob-staging part; `default` was made with it).
    pub(crate) fn with_room(
        default: Option<Arc<BlobWriteLanes>>,
        room: Option<Arc<MemoryGauge>>,
    ) -> BlobLaneSet {
        BlobLaneSet {
            min_any: AtomicUsize::new(default.as_ref().map_or(usize::MAX, |l| l.min_size())),
            default,
            others: RwLock::new(BTreeMap::new()),
            has_others: AtomicBool::new(false),
            room,
        }
    }

    /// The memory budget's blob-staging part, if there is a budget.
    pub(crate) fn room(&self) -> Option<&Arc<MemoryGauge>> {
        self.room.as_ref()
    }

    /// False if no keyspace's lanes take a value of `len` bytes: the write
    /// path's check before it looks up a keyspace's lanes (a plain load).
    pub(crate) fn may_take(&self, len: usize) -> bool {
        len >= self.min_any.load(Ordering::Relaxed)
    }

    /// Recomputes `min_any` (under the `others` write lock).
    fn update_min(&self, others: &BTreeMap<u32, Arc<BlobWriteLanes>>) {
        let min = self
            .default
            .iter()
            .chain(others.values())
            .map(|l| l.min_size())
            .min()
            .unwrap_or(usize::MAX);
        self.min_any.store(min, Ordering::Relaxed);
    }

    /// The default keyspace's lanes.
    pub(crate) fn default_lanes(&self) -> Option<&Arc<BlobWriteLanes>> {
        self.default.as_ref()
    }

    /// Keyspace `id`'s lanes, if it has any.
    pub(crate) fn of(&self, id: u32) -> Option<Arc<BlobWriteLanes>> {
        if id == 0 {
            return self.default.clone();
        }
        if !self.has_others.load(Ordering::Acquire) {
            return None;
        }
        self.others.read().get(&id).cloned()
    }

    /// Sets keyspace `id`'s threshold to `min` (`None`: no value goes to
    /// its blob files from now on); lanes are made with `make` the first
    /// time it has one (`id` is not the default keyspace, whose lanes are
    /// fixed at open).
    pub(crate) fn configure(
        &self,
        id: u32,
        min: Option<usize>,
        make: impl FnOnce(usize) -> BlobWriteLanes,
    ) {
        debug_assert_ne!(id, 0, "the default keyspace's lanes are fixed at open");
        let mut others = self.others.write();
        match (others.get(&id), min) {
            (Some(lanes), min) => lanes.set_min_size(min),
            (None, Some(min)) => {
                others.insert(id, Arc::new(make(min)));
                self.has_others.store(true, Ordering::Release);
            }
            (None, None) => {}
        }
        self.update_min(&others);
    }

    /// Removes keyspace `id`'s lanes (it was dropped); they are returned
    /// for the caller to let go of their files.
    pub(crate) fn remove(&self, id: u32) -> Option<Arc<BlobWriteLanes>> {
        let mut others = self.others.write();
        let lanes = others.remove(&id);
        self.has_others.store(!others.is_empty(), Ordering::Release);
        self.update_min(&others);
        lanes
    }

    /// Calls `f` with every keyspace's lanes, the default keyspace's
    /// first, stopping at the first error. The default keyspace's lanes
    /// cost no lock or allocation (a `sync` write calls this); the others
    /// are taken out of the lock first, so `f` may block.
    pub(crate) fn try_for_each<E>(
        &self,
        mut f: impl FnMut(u32, &BlobWriteLanes) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(l) = &self.default {
            f(0, l)?;
        }
        if self.has_others.load(Ordering::Acquire) {
            let others: Vec<(u32, Arc<BlobWriteLanes>)> = self
                .others
                .read()
                .iter()
                .map(|(&id, l)| (id, Arc::clone(l)))
                .collect();
            for (id, l) in &others {
                f(*id, l)?;
            }
        }
        Ok(())
    }

    /// True if no keyspace has lanes.
    pub(crate) fn is_empty(&self) -> bool {
        self.default.is_none() && !self.has_others.load(Ordering::Acquire)
    }

    /// True if some lane still appends to blob file `number` or gave it up
    /// after a failure ([`BlobWriteLanes::is_open`]).
    pub(crate) fn is_open(&self, number: u64) -> bool {
        self.default.as_ref().is_some_and(|l| l.is_open(number))
            || (self.has_others.load(Ordering::Acquire)
                && self.others.read().values().any(|l| l.is_open(number)))
    }

    /// The value `p` names if some lane still stages it.
    pub(crate) fn staged_value(&self, p: &BlobPointer) -> Option<Vec<u8>> {
        if let Some(v) = self.default.as_ref().and_then(|l| l.staged_value(p)) {
            return Some(v);
        }
        if !self.has_others.load(Ordering::Acquire) {
            return None;
        }
        self.others.read().values().find_map(|l| l.staged_value(p))
    }

    /// Page-cache bytes every lane's staging slots map now.
    pub(crate) fn staging_bytes(&self) -> usize {
        let mut sum = 0;
        let _ = self.try_for_each(|_, l| {
            sum += l.staging_bytes();
            Ok::<(), ()>(())
        });
        sum
    }

    /// The most every lane's staging slots map: the memory budget's
    /// blob-staging part, or without a budget every lane with a file open.
    pub(crate) fn staging_limit(&self) -> usize {
        if let Some(room) = &self.room {
            return room.limit();
        }
        let mut sum = 0;
        let _ = self.try_for_each(|_, l| {
            sum += l.staging_limit();
            Ok::<(), ()>(())
        });
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::lane::LaneOptions;
    use crate::io::{FileSystem, PosixFs};

    fn lanes_at(dir: &std::path::Path, min: usize) -> BlobWriteLanes {
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        BlobWriteLanes::new(&fs, dir, 2, min, LaneOptions::default())
    }

    fn lanes(dir: &std::path::Path) -> BlobWriteLanes {
        lanes_at(dir, 100)
    }

    #[test]
    fn keyspaces_get_their_own_lanes_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let set = BlobLaneSet::new(Some(Arc::new(lanes(dir.path()))));
        assert!(set.of(0).is_some());
        assert!(set.of(3).is_none());
        assert!(set.may_take(100) && !set.may_take(99));
        set.configure(3, Some(10), |m| lanes_at(dir.path(), m));
        let a = set.of(3).expect("lanes");
        assert!(set.may_take(10) && a.takes(10));
        set.configure(3, Some(50), |_| panic!("made twice"));
        assert!(Arc::ptr_eq(&a, &set.of(3).expect("lanes")));
        assert!(!set.may_take(49) && !a.takes(49));
        set.configure(4, None, |_| panic!("no lanes without a threshold"));
        assert!(set.of(4).is_none());
        assert_eq!(
            {
                let mut ids = Vec::new();
                let _ = set.try_for_each(|id, _| {
                    ids.push(id);
                    Ok::<(), ()>(())
                });
                ids
            },
            vec![0, 3]
        );
        assert!(set.remove(3).is_some());
        assert!(set.of(3).is_none());
        assert!(!set.may_take(99), "the default lanes' threshold again");
        assert!(!set.is_empty());
        assert!(BlobLaneSet::new(None).is_empty());
    }

    #[test]
    fn a_threshold_change_applies_to_the_next_value() {
        let dir = tempfile::tempdir().expect("temp dir");
        let l = lanes(dir.path());
        assert!(l.takes(100) && !l.takes(99));
        l.set_min_size(Some(10));
        assert!(l.takes(10));
        l.set_min_size(None);
        assert!(!l.takes(usize::MAX - 1));
    }
}
