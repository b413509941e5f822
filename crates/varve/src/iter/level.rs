//! [`LevelIterator`]: one cursor over a sorted run of non-overlapping files
//! (a level L1..Ln), opening each file's iterator only when the cursor
//! reaches it.
//!
//! The files are described by their key ranges; an `open` callback turns a
//! file index into an iterator (through the table cache in the engine, a
//! vector in tests). Single-threaded (`Send`). Invariant: `files` is sorted
//! by key range and ranges do not overlap, so the file that may hold a
//! target is found by binary search on the largest keys.

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::internal_iter::InternalIterator;
use crate::keys::compare_internal_keys;

/// Opens the iterator of file `index` of the level.
pub(crate) type FileOpener = Box<dyn Fn(usize) -> Result<Box<dyn InternalIterator>> + Send>;

/// Concatenates the iterators of a level's files.
pub(crate) struct LevelIterator {
    /// Largest internal key of each file, in order.
    largest: Vec<Vec<u8>>,
    open: FileOpener,
    index: usize,
    current: Option<Box<dyn InternalIterator>>,
    error: Option<Error>,
}

impl LevelIterator {
    /// A cursor over files whose largest internal keys are `largest` (sorted).
    pub(crate) fn new(largest: Vec<Vec<u8>>, open: FileOpener) -> Self {
        LevelIterator {
            largest,
            open,
            index: 0,
            current: None,
            error: None,
        }
    }

    fn open_file(&mut self, index: usize) {
        self.index = index;
        self.current = None;
        if index >= self.largest.len() {
            return;
        }
        match (self.open)(index) {
            Ok(it) => self.current = Some(it),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
    }

    fn current_valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    /// Remembers the current file's error, if any, before leaving it.
    fn keep_error(&mut self) {
        if self.error.is_none()
            && let Some(Err(e)) = self.current.as_ref().map(|c| c.status())
        {
            self.error = Some(e);
        }
    }

    fn skip_empty_forward(&mut self) {
        while !self.current_valid() && self.error.is_none() {
            self.keep_error();
            if self.error.is_some() || self.index + 1 >= self.largest.len() {
                self.current = None;
                self.index = self.largest.len();
                return;
            }
            self.open_file(self.index + 1);
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_empty_backward(&mut self) {
        while !self.current_valid() && self.error.is_none() {
            self.keep_error();
            if self.error.is_some() || self.index == 0 || self.index > self.largest.len() {
                self.current = None;
                return;
            }
            self.open_file(self.index - 1);
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.error.is_none() && self.current_valid()
    }

    fn seek_to_first(&mut self) {
        self.open_file(0);
        if let Some(c) = self.current.as_mut() {
            c.seek_to_first();
        }
        self.skip_empty_forward();
    }

    fn seek_to_last(&mut self) {
        match self.largest.len() {
            0 => self.current = None,
            n => {
                self.open_file(n - 1);
                if let Some(c) = self.current.as_mut() {
                    c.seek_to_last();
                }
                self.skip_empty_backward();
            }
        }
    }

    fn seek(&mut self, target: &[u8]) {
        // First file whose largest key is >= target.
        let i = self
            .largest
            .partition_point(|l| compare_internal_keys(l, target) == Ordering::Less);
        self.open_file(i);
        if let Some(c) = self.current.as_mut() {
            c.seek(target);
        }
        self.skip_empty_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        // The last entry <= target is in the first file whose largest key is
        // >= target, or at the end of the file before it.
        let i = self
            .largest
            .partition_point(|l| compare_internal_keys(l, target) == Ordering::Less);
        if i == self.largest.len() {
            self.seek_to_last();
            return;
        }
        self.open_file(i);
        if let Some(c) = self.current.as_mut() {
            c.seek_for_prev(target);
        }
        self.skip_empty_backward();
    }

    fn next(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_empty_forward();
    }

    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_empty_backward();
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map(|c| c.key()).unwrap_or(&[])
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map(|c| c.value()).unwrap_or(&[])
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        match &self.current {
            Some(c) => c.status(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::iter::merging::tests::VecIter;
    use crate::keys::{ValueKind, make_internal_key};

    fn ik(k: u32) -> Vec<u8> {
        make_internal_key(format!("{k:04}").as_bytes(), 1, ValueKind::Value)
    }

    /// Files of keys [0,10) [10,20) ... with some empty files in between.
    fn level(files: Vec<Vec<u32>>, fail: Option<usize>) -> LevelIterator {
        let files: Arc<Vec<Vec<u32>>> = Arc::new(files);
        let largest = files
            .iter()
            .map(|f| f.last().map(|&k| ik(k)).unwrap_or_else(|| ik(0)))
            .collect();
        let f2 = Arc::clone(&files);
        LevelIterator::new(
            largest,
            Box::new(move |i| {
                if Some(i) == fail {
                    return Err(Error::corruption("f", 7, "injected"));
                }
                Ok(Box::new(VecIter::new(
                    f2[i].iter().map(|&k| (ik(k), vec![k as u8])).collect(),
                )) as Box<dyn InternalIterator>)
            }),
        )
    }

    fn collect_fwd(it: &mut LevelIterator) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        while it.valid() {
            v.push(it.key().to_vec());
            it.next();
        }
        v
    }

    #[test]
    fn walks_all_files_both_ways() {
        let files = vec![vec![1, 2, 3], vec![5, 8], vec![10], vec![12, 13, 14]];
        let all: Vec<Vec<u8>> = files.iter().flatten().map(|&k| ik(k)).collect();
        let mut it = level(files, None);
        it.seek_to_first();
        assert_eq!(collect_fwd(&mut it), all);
        it.seek_to_last();
        let mut rev = Vec::new();
        while it.valid() {
            rev.push(it.key().to_vec());
            it.prev();
        }
        let mut expect = all.clone();
        expect.reverse();
        assert_eq!(rev, expect);
        for t in 0..16 {
            it.seek(&ik(t));
            let want = all
                .iter()
                .find(|k| compare_internal_keys(k, &ik(t)) != Ordering::Less);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()).as_ref(),
                want,
                "seek {t}"
            );
            it.seek_for_prev(&ik(t));
            let want = all
                .iter()
                .rev()
                .find(|k| compare_internal_keys(k, &ik(t)) != Ordering::Greater);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()).as_ref(),
                want,
                "seek_for_prev {t}"
            );
        }
        // Cross a file boundary in both directions.
        it.seek(&ik(3));
        it.next();
        assert_eq!(it.key(), ik(5).as_slice());
        it.prev();
        assert_eq!(it.key(), ik(3).as_slice());
    }

    #[test]
    fn empty_level_and_open_errors() {
        let mut it = level(vec![], None);
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        let mut it = level(vec![vec![1], vec![2], vec![3]], Some(1));
        it.seek_to_first();
        assert!(it.valid());
        it.next();
        assert!(!it.valid(), "an unreadable file stops the iterator");
        assert!(it.status().is_err_and(|e| e.is_corruption()));
    }
}
