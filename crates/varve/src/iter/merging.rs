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
//! touches only its own child (a `RefCell` per child, never shared).

use std::cell::RefCell;
use std::cmp::Ordering;

use super::InternalIterator;
use crate::Result;
use crate::keys::compare_internal_keys;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// Merges sorted children into one sorted cursor.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
    /// Position the children of a seek concurrently (see the module docs).
    concurrent: bool,
}

impl MergingIterator {
    /// Merges `children` (which need not be positioned).
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children,
            current: None,
            direction: Direction::Forward,
            concurrent: false,
        }
    }

    /// Like [`new`](Self::new); with `concurrent`, seeks position the
    /// children on fibers so their block reads overlap.
    pub fn with_concurrent_seeks(
        children: Vec<Box<dyn InternalIterator>>,
        concurrent: bool,
    ) -> Self {
        MergingIterator {
            concurrent,
            ..MergingIterator::new(children)
        }
    }

    /// Applies `f` to every child: on fibers when concurrent (and there is
    /// more than one child), else in order.
    fn position_all(&mut self, f: &(dyn Fn(&mut dyn InternalIterator) + '_)) {
        if !self.concurrent || self.children.len() < 2 {
            self.children.iter_mut().for_each(|c| f(c.as_mut()));
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
        crate::fiber::run_tasks(cells.len(), cells.len(), &task);
    }

    fn pick(&mut self, want: Ordering) {
        let mut best: Option<usize> = None;
        for (i, child) in self.children.iter().enumerate() {
            if !child.valid() {
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

    fn find_smallest(&mut self) {
        self.pick(Ordering::Less);
    }

    fn find_largest(&mut self) {
        self.pick(Ordering::Greater);
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.position_all(&|c| c.seek_to_first());
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        self.position_all(&|c| c.seek_to_last());
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        self.position_all(&|c| c.seek(target));
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.position_all(&|c| c.seek_for_prev(target));
        self.direction = Direction::Reverse;
        self.find_largest();
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
        }
        self.children[cur].next();
        self.find_smallest();
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
        }
        self.children[cur].prev();
        self.find_largest();
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

    fn ik(k: &str, seq: u64) -> Vec<u8> {
        make_internal_key(k.as_bytes(), seq, ValueKind::Value)
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
