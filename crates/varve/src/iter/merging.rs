//! [`MergingIterator`]: one sorted cursor over many sorted children.
//!
//! Children are the memtables now and table files later. Internal keys are
//! unique across children (every write has its own sequence number), so the
//! merge never has to break ties. Direction changes re-position every child
//! around the current key, as LevelDB's merger does. Picking the smallest or
//! largest child is a linear scan: the number of children is small (one per
//! memtable, L0 file and level). Single-threaded (`Send`).
//!
//! Concurrent positioning ([`MergingIterator::with_concurrent_seeks`]): the
//! four seeks position every child, and each table child may have to read
//! a block; instead of one read after another, each child's seek runs as a
//! task on a fiber of the calling thread (`fiber::run_tasks`), so their
//! reads are in flight together through io_uring. Without io_uring (or
//! `VARVE_IO=sync`, or when already on a fiber) the tasks run one after
//! another: the same seeks in the same order, identical results. Each task
//! touches only its own child (a `RefCell` per child, never shared). It is
//! adaptive: a concurrent positioning faster than `CACHED_SEEK` (20 µs, no
//! disk read) makes the next 16 seeks position in order, since fibers and
//! io_uring only cost when everything is cached; an ordered positioning
//! slower than twice that switches back at once.
//!
//! Errors stop the merge at once: a child that becomes invalid because it
//! hit an error (its `status()` is an `Err`) makes the merging iterator
//! invalid for good, with that error as its status. Without this, the other
//! children would go on yielding entries and the merge would look like it
//! skipped the damaged source: deleted keys (whose tombstones were in the
//! damaged source) and older versions would come back. Errors are sticky:
//! no seek makes an errored merge valid again. The check costs nothing on
//! the hot path: a child's status is read only when that child turns
//! invalid (it ran out or failed), never per entry.

use std::cell::RefCell;
use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::internal_iter::InternalIterator;
use crate::keys::compare_internal_keys;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// Merges sorted children into one sorted cursor.
pub(crate) struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
    /// Position the children of a seek concurrently (see the module docs).
    concurrent: bool,
    /// Seeks left to position in order before trying fibers again.
    plain_left: u32,
    /// A positioning faster than this found everything cached
    /// ([`CACHED_SEEK`]; tests that check the switching widen it, so a
    /// loaded machine does not change which path a seek takes).
    cached_seek: std::time::Duration,
    /// The first error of any child; once set the merge stays invalid.
    error: Option<Error>,
}

/// After a concurrent positioning that took less than [`CACHED_SEEK`], this
/// many seeks position their children in order (fibers would only cost).
const PLAIN_AFTER_CHEAP_SEEK: u32 = 16;

/// A positioning faster than this was served from memory (block or page
/// cache): a random read from a disk takes longer.
const CACHED_SEEK: std::time::Duration = std::time::Duration::from_micros(20);

impl MergingIterator {
    /// Merges `children` (which need not be positioned).
    pub(crate) fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children,
            current: None,
            direction: Direction::Forward,
            concurrent: false,
            plain_left: 0,
            cached_seek: CACHED_SEEK,
            error: None,
        }
    }

    /// Like [`new`](Self::new); with `concurrent`, seeks position the
    /// children on fibers so their block reads overlap.
    pub(crate) fn with_concurrent_seeks(
        children: Vec<Box<dyn InternalIterator>>,
        concurrent: bool,
    ) -> Self {
        MergingIterator {
            concurrent,
            ..MergingIterator::new(children)
        }
    }

    /// Applies `f` to every child: on fibers when concurrent (and there is
    /// more than one child), else in order. Adaptive: a concurrent
    /// positioning that took less than [`CACHED_SEEK`] (no disk read: block
    /// or page cache) makes the next [`PLAIN_AFTER_CHEAP_SEEK`] seeks go in
    /// order; an ordered one that took over twice that (it waited for the
    /// disk) goes back to fibers at once.
    fn position_all(&mut self, f: &(dyn Fn(&mut dyn InternalIterator) + '_)) {
        if !self.concurrent || self.children.len() < 2 {
            self.children.iter_mut().for_each(|c| f(c.as_mut()));
            return;
        }
        let start = std::time::Instant::now();
        if self.plain_left > 0 {
            self.plain_left -= 1;
            self.children.iter_mut().for_each(|c| f(c.as_mut()));
            if start.elapsed() > 2 * self.cached_seek {
                self.plain_left = 0;
            }
            return;
        }
        let cells: Vec<RefCell<&mut Box<dyn InternalIterator>>> =
            self.children.iter_mut().map(RefCell::new).collect();
        let task = |i: usize| {
            // Task `i` is the only user of cell `i`: the borrow never fails.
            if let Some(cell) = cells.get(i)
                && let Ok(mut child) = cell.try_borrow_mut()
            {
                f(child.as_mut());
            }
        };
        crate::io::fiber::run_tasks(cells.len(), cells.len(), &task);
        drop(cells);
        if start.elapsed() < self.cached_seek {
            self.plain_left = PLAIN_AFTER_CHEAP_SEEK;
        }
    }

    /// Records the error of child `i` if it turned invalid by failing;
    /// true if the merge is now (or was already) failed (and `current` is
    /// then `None`). Off the hot path: called only for invalid children.
    #[cold]
    #[inline(never)]
    fn child_failed(&mut self, i: usize) -> bool {
        if self.error.is_some() {
            return true;
        }
        let child = &self.children[i];
        if child.valid() {
            return false;
        }
        match child.status() {
            Ok(()) => false,
            Err(e) => {
                self.error = Some(e);
                self.current = None;
                true
            }
        }
    }

    /// After every child was (re)positioned: the first failed child fails
    /// the merge.
    fn any_child_failed(&mut self) -> bool {
        (0..self.children.len()).any(|i| self.child_failed(i))
    }

    /// Points `current` at the smallest (`Less`) or largest (`Greater`)
    /// valid child. `moved` is the child that just stepped: if it turned
    /// invalid by failing, the merge fails. The status is read only on that
    /// branch (from the validity check the scan does anyway), so a step
    /// that stays valid costs no extra call.
    #[inline(always)]
    fn pick(&mut self, want: Ordering, moved: Option<usize>) {
        debug_assert!(self.error.is_none(), "a failed merge picks nothing");
        let mut best: Option<usize> = None;
        for i in 0..self.children.len() {
            let child = &self.children[i];
            if !child.valid() {
                if moved == Some(i) && self.child_failed(i) {
                    return;
                }
                continue;
            }
            best = match best {
                Some(b) if compare_internal_keys(child.key(), self.children[b].key()) != want => {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
    }

    #[inline(always)]
    fn find_smallest(&mut self, moved: Option<usize>) {
        self.pick(Ordering::Less, moved);
    }

    #[inline(always)]
    fn find_largest(&mut self, moved: Option<usize>) {
        self.pick(Ordering::Greater, moved);
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        if self.error.is_some() {
            return;
        }
        self.position_all(&|c| c.seek_to_first());
        self.direction = Direction::Forward;
        if self.any_child_failed() {
            return;
        }
        self.find_smallest(None);
    }

    fn seek_to_last(&mut self) {
        if self.error.is_some() {
            return;
        }
        self.position_all(&|c| c.seek_to_last());
        self.direction = Direction::Reverse;
        if self.any_child_failed() {
            return;
        }
        self.find_largest(None);
    }

    fn seek(&mut self, target: &[u8]) {
        if self.error.is_some() {
            return;
        }
        self.position_all(&|c| c.seek(target));
        self.direction = Direction::Forward;
        if self.any_child_failed() {
            return;
        }
        self.find_smallest(None);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.error.is_some() {
            return;
        }
        self.position_all(&|c| c.seek_for_prev(target));
        self.direction = Direction::Reverse;
        if self.any_child_failed() {
            return;
        }
        self.find_largest(None);
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Forward {
            // Every other child is positioned at or before the current key:
            // move each to the first entry after it.
            let key = self.children[cur].key().to_vec();
            for (i, child) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                child.seek(&key);
                if child.valid() && compare_internal_keys(child.key(), &key) == Ordering::Equal {
                    child.next();
                }
            }
            self.direction = Direction::Forward;
            if self.any_child_failed() {
                return;
            }
        }
        self.children[cur].next();
        self.find_smallest(Some(cur));
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
            // Every other child is positioned after the current key: move
            // each to the last entry before it.
            let key = self.children[cur].key().to_vec();
            for (i, child) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                child.seek_for_prev(&key);
                if child.valid() && compare_internal_keys(child.key(), &key) == Ordering::Equal {
                    child.prev();
                }
            }
            self.direction = Direction::Reverse;
            if self.any_child_failed() {
                return;
            }
        }
        self.children[cur].prev();
        self.find_largest(Some(cur));
    }

    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].value(),
            None => &[],
        }
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        for c in &self.children {
            c.status()?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::keys::{ValueKind, make_internal_key};

    /// A sorted vector of (internal key, value) as an iterator, for tests.
    pub(crate) struct VecIter {
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        pos: Option<usize>,
    }

    impl VecIter {
        pub(crate) fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
            entries.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            VecIter { entries, pos: None }
        }
    }

    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            self.pos.is_some()
        }
        fn seek_to_first(&mut self) {
            self.pos = (!self.entries.is_empty()).then_some(0);
        }
        fn seek_to_last(&mut self) {
            self.pos = self.entries.len().checked_sub(1);
        }
        fn seek(&mut self, t: &[u8]) {
            let i = self
                .entries
                .partition_point(|e| compare_internal_keys(&e.0, t) == Ordering::Less);
            self.pos = (i < self.entries.len()).then_some(i);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            let i = self
                .entries
                .partition_point(|e| compare_internal_keys(&e.0, t) != Ordering::Greater);
            self.pos = i.checked_sub(1);
        }
        fn next(&mut self) {
            self.pos = self.pos.map(|p| p + 1).filter(|&p| p < self.entries.len());
        }
        fn prev(&mut self) {
            self.pos = self.pos.and_then(|p| p.checked_sub(1));
        }
        fn key(&self) -> &[u8] {
            self.pos.map(|p| &self.entries[p].0[..]).unwrap_or(&[])
        }
        fn value(&self) -> &[u8] {
            self.pos.map(|p| &self.entries[p].1[..]).unwrap_or(&[])
        }
    }

    /// A child that counts the seeks it ran on a fiber; with a file, every
    /// seek reads a few bytes of it (like a table reading a block).
    struct Probe {
        inner: VecIter,
        on_fiber: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        file: Option<std::sync::Arc<std::fs::File>>,
    }

    impl Probe {
        fn note(&self) {
            if crate::io::fiber::in_fiber() {
                self.on_fiber
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if let Some(f) = &self.file {
                // A disk read's latency (the file itself is cached).
                std::thread::sleep(std::time::Duration::from_micros(50));
                let mut buf = [0u8; 8];
                let n = crate::io::fiber::fiber_aio_read(f, &mut buf, 0).expect("read");
                assert_eq!(&buf[..n], b"probe!!!");
            }
        }
    }

    impl InternalIterator for Probe {
        fn valid(&self) -> bool {
            self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            self.note();
            self.inner.seek_to_first();
        }
        fn seek_to_last(&mut self) {
            self.note();
            self.inner.seek_to_last();
        }
        fn seek(&mut self, t: &[u8]) {
            self.note();
            self.inner.seek(t);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.note();
            self.inner.seek_for_prev(t);
        }
        fn next(&mut self) {
            self.inner.next();
        }
        fn prev(&mut self) {
            self.inner.prev();
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
    }

    /// Concurrent positioning runs every child's seek on a fiber (when this
    /// thread has io_uring) and lands where the plain merge lands.
    #[test]
    fn concurrent_seeks_run_children_on_fibers_with_the_same_results() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("probe");
        std::fs::write(&path, b"probe!!!").expect("write");
        let file = std::sync::Arc::new(std::fs::File::open(&path).expect("open"));
        let on_fiber = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let children = |probe: bool| -> Vec<Box<dyn InternalIterator>> {
            (0..4u64)
                .map(|c| {
                    let entries = (0..50u64)
                        .filter(|i| i % 4 == c || i % 7 == c)
                        .map(|i| (ik(&format!("k{i:03}"), 100 * c + i), vec![c as u8]))
                        .collect();
                    let inner = VecIter::new(entries);
                    if probe {
                        Box::new(Probe {
                            inner,
                            on_fiber: std::sync::Arc::clone(&on_fiber),
                            file: Some(std::sync::Arc::clone(&file)),
                        }) as Box<dyn InternalIterator>
                    } else {
                        Box::new(inner)
                    }
                })
                .collect()
        };
        let mut plain = MergingIterator::new(children(false));
        let mut conc = MergingIterator::with_concurrent_seeks(children(true), true);
        let walk = |m: &mut MergingIterator, forward: bool| {
            let mut out = Vec::new();
            for _ in 0..15 {
                if !m.valid() {
                    break;
                }
                out.push((m.key().to_vec(), m.value().to_vec()));
                if forward {
                    m.next();
                } else {
                    m.prev();
                }
            }
            out
        };
        let mut seeks = 0;
        for i in 0..55u64 {
            let t = ik(&format!("k{i:03}"), 1000);
            match i % 4 {
                0 => {
                    plain.seek(&t);
                    conc.seek(&t);
                }
                1 => {
                    plain.seek_for_prev(&t);
                    conc.seek_for_prev(&t);
                }
                2 => {
                    plain.seek_to_first();
                    conc.seek_to_first();
                }
                _ => {
                    plain.seek_to_last();
                    conc.seek_to_last();
                }
            }
            seeks += 1;
            let forward = i % 3 != 0;
            assert_eq!(
                walk(&mut plain, forward),
                walk(&mut conc, forward),
                "seek {i}"
            );
        }
        let on = on_fiber.load(std::sync::atomic::Ordering::Relaxed);
        let uring = crate::io::uring::require_uring("concurrent seeks on fibers")
            && crate::io::uring::with_reactor(|_| ()).is_some();
        if uring {
            assert_eq!(on, 4 * seeks, "every child's seek ran on a fiber");
        } else {
            assert_eq!(on, 0, "no io_uring: the plain path");
        }
        // Children that read nothing (all cached): after one concurrent
        // positioning, the next PLAIN_AFTER_CHEAP_SEEK seeks go in order.
        let no_reads: Vec<Box<dyn InternalIterator>> = (0..3)
            .map(|_| {
                Box::new(Probe {
                    inner: VecIter::new(vec![(ik("a", 1), b"1".to_vec())]),
                    on_fiber: std::sync::Arc::clone(&on_fiber),
                    file: None,
                }) as Box<dyn InternalIterator>
            })
            .collect();
        let mut cheap = MergingIterator::with_concurrent_seeks(no_reads, true);
        // Every positioning here reads nothing; a threshold no loaded
        // machine reaches keeps the path each seek takes deterministic.
        cheap.cached_seek = std::time::Duration::from_secs(5);
        let mut counts = Vec::new();
        for _ in 0..(PLAIN_AFTER_CHEAP_SEEK + 2) {
            let before = on_fiber.load(std::sync::atomic::Ordering::Relaxed);
            cheap.seek_to_first();
            assert_eq!(cheap.value(), b"1");
            counts.push(on_fiber.load(std::sync::atomic::Ordering::Relaxed) - before);
        }
        if uring {
            let mut want = vec![3];
            want.extend(std::iter::repeat_n(0, PLAIN_AFTER_CHEAP_SEEK as usize));
            want.push(3);
            assert_eq!(counts, want);
        }
    }

    fn ik(k: &str, seq: u64) -> Vec<u8> {
        make_internal_key(k.as_bytes(), seq, ValueKind::Value)
    }

    /// A child that fails (becomes invalid with an error) once its cursor
    /// reaches entry `fail_at`, in either direction.
    struct Failing {
        inner: VecIter,
        fail_at: Vec<u8>,
        failed: bool,
    }

    impl Failing {
        fn check(&mut self) {
            if self.inner.valid() && self.inner.key() == self.fail_at.as_slice() {
                self.failed = true;
            }
        }
    }

    impl InternalIterator for Failing {
        fn valid(&self) -> bool {
            !self.failed && self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            self.inner.seek_to_first();
            self.check();
        }
        fn seek_to_last(&mut self) {
            self.inner.seek_to_last();
            self.check();
        }
        fn seek(&mut self, t: &[u8]) {
            self.inner.seek(t);
            self.check();
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.inner.seek_for_prev(t);
            self.check();
        }
        fn next(&mut self) {
            self.inner.next();
            self.check();
        }
        fn prev(&mut self) {
            self.inner.prev();
            self.check();
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
        fn status(&self) -> Result<()> {
            if self.failed {
                Err(Error::corruption("child", 7, "injected"))
            } else {
                Ok(())
            }
        }
    }

    /// Once a child fails, the merge yields nothing more (the other
    /// children's entries would look like the failed one's keys were
    /// deleted), in both directions, and no seek revives it.
    #[test]
    fn a_failed_child_stops_the_merge_for_good() {
        let walk = |forward: bool| {
            let good = VecIter::new(
                (0..20)
                    .map(|i| (ik(&format!("k{i:02}"), 1), vec![1]))
                    .collect(),
            );
            let bad = Failing {
                inner: VecIter::new(
                    (0..20)
                        .step_by(3)
                        .map(|i| (ik(&format!("k{i:02}"), 5), vec![5]))
                        .collect(),
                ),
                fail_at: ik("k09", 5),
                failed: false,
            };
            let mut m = MergingIterator::new(vec![Box::new(good), Box::new(bad)]);
            let mut seen = Vec::new();
            if forward {
                m.seek_to_first();
            } else {
                m.seek_to_last();
            }
            while m.valid() {
                seen.push(crate::keys::user_key(m.key()).to_vec());
                if forward {
                    m.next();
                } else {
                    m.prev();
                }
            }
            assert!(
                m.status().is_err(),
                "forward {forward}: the error is reported"
            );
            m.seek_to_first();
            assert!(!m.valid(), "a seek revived a failed merge");
            m.seek(&ik("k15", 9));
            assert!(!m.valid());
            seen
        };
        // Forward: the failing child moves from k06@5 onto k09@5 and fails,
        // so k07 and k08 of the good child are never yielded.
        let fwd = walk(true);
        assert_eq!(fwd.last().map(Vec::as_slice), Some(&b"k06"[..]), "{fwd:?}");
        assert_eq!(fwd.len(), 9);
        // Backward: it moves from k12@5 onto k09@5 and fails.
        let back = walk(false);
        assert_eq!(
            back.last().map(Vec::as_slice),
            Some(&b"k12"[..]),
            "{back:?}"
        );
        assert_eq!(back.len(), 11);
        assert!(back.len() < 20);
    }

    #[test]
    fn merges_and_switches_direction() {
        let a = VecIter::new(vec![
            (ik("a", 1), b"1".to_vec()),
            (ik("c", 3), b"3".to_vec()),
        ]);
        let b = VecIter::new(vec![
            (ik("b", 2), b"2".to_vec()),
            (ik("c", 4), b"4".to_vec()),
        ]);
        let empty = VecIter::new(vec![]);
        let mut m = MergingIterator::new(vec![Box::new(a), Box::new(b), Box::new(empty)]);
        m.seek_to_first();
        let mut fwd = Vec::new();
        while m.valid() {
            fwd.push(m.value().to_vec());
            m.next();
        }
        assert_eq!(
            fwd,
            vec![b"1".to_vec(), b"2".to_vec(), b"4".to_vec(), b"3".to_vec()]
        );
        m.seek_to_last();
        let mut rev = Vec::new();
        while m.valid() {
            rev.push(m.value().to_vec());
            m.prev();
        }
        assert_eq!(
            rev,
            vec![b"3".to_vec(), b"4".to_vec(), b"2".to_vec(), b"1".to_vec()]
        );
        // Zig-zag around the middle.
        m.seek(&ik("b", 9));
        assert_eq!(m.value(), b"2");
        m.prev();
        assert_eq!(m.value(), b"1");
        m.next();
        assert_eq!(m.value(), b"2");
        m.next();
        assert_eq!(m.value(), b"4");
        m.prev();
        assert_eq!(m.value(), b"2");
        m.seek_for_prev(&ik("c", 0));
        assert_eq!(m.value(), b"3");
        m.prev();
        assert_eq!(m.value(), b"4");
    }
}
