//! [`Builder`]: applies version edits to a base [`Version`] and checks the
//! level invariants as each file is added, so that a bad edit is caught at
//! the edit that introduces it (recovery names its manifest offset).
//!
//! Single-threaded scratch state, owned by whoever builds the next version.
//! Invariants: within one edit, deletions apply before additions (a file may
//! move between levels by being deleted at one and added at another); a
//! deleted file must be present at that level; an added file must be valid
//! ([`FileMetaData::validate`]), its number must not already be in the
//! version, and in L1+ its user-key range must not touch any other file's.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound::{Included, Unbounded};
use std::sync::Arc;

use super::NUM_LEVELS;
use super::edit::VersionEdit;
use super::file_meta::FileMetaData;
use super::version::Version;

/// Accumulates edits on top of a version.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    /// L0 files by number (ordered newest first in `finish`).
    l0: HashMap<u64, Arc<FileMetaData>>,
    /// L1.. files keyed by smallest user key; index `level - 1`.
    deeper: Vec<BTreeMap<Vec<u8>, Arc<FileMetaData>>>,
    /// Level and metadata of every file in the builder, by number.
    level_of: HashMap<u64, (usize, Arc<FileMetaData>)>,
}

impl Builder {
    /// A builder starting from `base`.
    pub(crate) fn new(base: &Version) -> Builder {
        let mut b = Builder {
            l0: HashMap::new(),
            deeper: vec![BTreeMap::new(); NUM_LEVELS - 1],
            level_of: HashMap::new(),
        };
        for (level, files) in base.files.iter().enumerate() {
            for f in files {
                b.level_of.insert(f.number, (level, Arc::clone(f)));
                if level == 0 {
                    b.l0.insert(f.number, Arc::clone(f));
                } else {
                    b.deeper[level - 1].insert(f.smallest_user_key().to_vec(), Arc::clone(f));
                }
            }
        }
        b
    }

    /// Applies the file changes of `edit`; the error says which file broke
    /// which rule. On error the builder is in an unspecified state.
    pub(crate) fn apply(&mut self, edit: &VersionEdit) -> Result<(), String> {
        for &(level, number) in &edit.deleted_files {
            self.delete(level, number)?;
        }
        for (level, f) in &edit.new_files {
            self.add(*level, f)?;
        }
        Ok(())
    }

    fn delete(&mut self, level: usize, number: u64) -> Result<(), String> {
        let f = match self.level_of.get(&number) {
            Some((l, f)) if *l == level => Arc::clone(f),
            _ => return Err(format!("deleted table {number} is not in L{level}")),
        };
        self.level_of.remove(&number);
        if level == 0 {
            self.l0.remove(&number);
        } else {
            self.deeper[level - 1].remove(f.smallest_user_key());
        }
        Ok(())
    }

    fn add(&mut self, level: usize, f: &FileMetaData) -> Result<(), String> {
        if level >= NUM_LEVELS {
            return Err(format!("table {} added at level {level}", f.number));
        }
        f.validate()?;
        if let Some((l, _)) = self.level_of.get(&f.number) {
            return Err(format!("added table {} is already in L{l}", f.number));
        }
        let f = Arc::new(f.clone());
        self.level_of.insert(f.number, (level, Arc::clone(&f)));
        if level == 0 {
            self.l0.insert(f.number, f);
        } else {
            let files = &mut self.deeper[level - 1];
            let small = f.smallest_user_key();
            let below = files
                .range::<[u8], _>((Unbounded, Included(small)))
                .next_back();
            let above = files.range::<[u8], _>((Included(small), Unbounded)).next();
            for other in below.into_iter().chain(above).map(|(_, o)| o) {
                if other.overlaps_user_range(Some(small), Some(f.largest_user_key())) {
                    return Err(format!(
                        "added table {} overlaps table {} in L{level}",
                        f.number, other.number
                    ));
                }
            }
            files.insert(small.to_vec(), Arc::clone(&f));
        }
        Ok(())
    }

    /// The version holding every file of the builder.
    pub(crate) fn finish(self) -> Version {
        let mut v = Version::new();
        let mut l0: Vec<Arc<FileMetaData>> = self.l0.into_values().collect();
        l0.sort_by_key(|f| std::cmp::Reverse((f.largest_seq, f.number)));
        v.files[0] = l0;
        for (i, files) in self.deeper.into_iter().enumerate() {
            v.files[i + 1] = files.into_values().collect();
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{ValueKind, make_internal_key};

    fn meta(number: u64, a: &str, b: &str, seq: u64) -> FileMetaData {
        FileMetaData {
            number,
            file_size: 10,
            smallest: make_internal_key(a.as_bytes(), seq, ValueKind::Value),
            largest: make_internal_key(b.as_bytes(), seq, ValueKind::Value),
            smallest_seq: seq,
            largest_seq: seq,
            num_entries: 1,
            oldest_blob_file: 0,
        }
    }

    fn build(base: &Version, edit: &VersionEdit) -> Result<Version, String> {
        let mut b = Builder::new(base);
        b.apply(edit)?;
        let v = b.finish();
        v.check_invariants()?;
        Ok(v)
    }

    #[test]
    fn add_move_delete() {
        let mut e = VersionEdit::default();
        e.add_file(0, meta(1, "a", "m", 1));
        e.add_file(0, meta(2, "c", "z", 2));
        e.add_file(1, meta(3, "a", "b", 0));
        let v = build(&Version::new(), &e).expect("valid");
        let l0: Vec<u64> = v.files(0).iter().map(|f| f.number).collect();
        assert_eq!(l0, vec![2, 1], "newest first");
        // "Compaction": L0 files and the L1 file become two L1 files.
        let mut c = VersionEdit::default();
        c.delete_file(0, 1);
        c.delete_file(0, 2);
        c.delete_file(1, 3);
        c.add_file(1, meta(5, "n", "z", 2));
        c.add_file(1, meta(4, "a", "m", 2));
        let v = build(&v, &c).expect("valid compaction");
        let l1: Vec<u64> = v.files(1).iter().map(|f| f.number).collect();
        assert_eq!(l1, vec![4, 5]);
        assert_eq!(v.num_files(0), 0);
        // Trivial move to L2.
        let mut m = VersionEdit::default();
        m.delete_file(1, 5);
        m.add_file(2, meta(5, "n", "z", 2));
        let v = build(&v, &m).expect("move");
        assert_eq!(v.num_files(2), 1);

        // Errors.
        let mut bad = VersionEdit::default();
        bad.add_file(1, meta(9, "m", "p", 3)); // touches 4 ("a".."m")
        assert!(
            build(&v, &bad)
                .expect_err("overlap")
                .contains("overlaps table 4")
        );
        let mut bad = VersionEdit::default();
        bad.add_file(1, meta(9, "0", "a", 3));
        assert!(build(&v, &bad).is_err());
        let mut bad = VersionEdit::default();
        bad.delete_file(3, 4);
        assert!(build(&v, &bad).expect_err("absent").contains("not in L3"));
        let mut bad = VersionEdit::default();
        bad.add_file(0, meta(4, "a", "b", 3));
        assert!(build(&v, &bad).expect_err("dup").contains("already"));
        let mut bad = VersionEdit::default();
        bad.add_file(3, meta(10, "z", "a", 3));
        assert!(build(&v, &bad).is_err());
    }
}
