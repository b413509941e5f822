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
use super::time_map::TimeMap;
use super::version::{BlobFileState, Version};
use crate::range_del::{RangeTombstone, RangeTombstones};

/// Accumulates edits on top of a version.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    /// L0 files by number (ordered newest first in `finish`).
    l0: HashMap<u64, Arc<FileMetaData>>,
    /// L1.. files keyed by smallest user key; index `level - 1`.
    deeper: Vec<BTreeMap<Vec<u8>, Arc<FileMetaData>>>,
    /// Level and metadata of every file in the builder, by number.
    level_of: HashMap<u64, (usize, Arc<FileMetaData>)>,
    /// Live blob files.
    blobs: BTreeMap<u64, BlobFileState>,
    /// Range tombstones by sequence number.
    range_dels: BTreeMap<u64, RangeTombstone>,
    /// Time samples for `Options::ttl`.
    time_map: TimeMap,
    /// The expiry floor (`Options::ttl`): the largest one given.
    ttl_floor: u64,
}

impl Builder {
    /// A builder starting from `base`.
    pub(crate) fn new(base: &Version) -> Builder {
        let mut b = Builder {
            l0: HashMap::new(),
            deeper: vec![BTreeMap::new(); NUM_LEVELS - 1],
            level_of: HashMap::new(),
            blobs: base.blobs.clone(),
            range_dels: base
                .range_dels
                .tombstones()
                .iter()
                .map(|t| (t.seq, t.clone()))
                .collect(),
            time_map: (*base.time_map).clone(),
            ttl_floor: base.ttl_floor,
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
        self.apply_blobs(edit)?;
        for &seq in &edit.deleted_range_tombstones {
            if self.range_dels.remove(&seq).is_none() {
                return Err(format!("deleted range tombstone {seq} is not live"));
            }
        }
        for &(seq, ms) in &edit.time_samples {
            self.time_map.add(seq, ms);
        }
        if let Some(f) = edit.ttl_floor {
            self.ttl_floor = self.ttl_floor.max(f);
        }
        for t in &edit.range_tombstones {
            if t.start >= t.end {
                return Err(format!("range tombstone {} is empty", t.seq));
            }
            if self.range_dels.insert(t.seq, t.clone()).is_some() {
                return Err(format!("range tombstone {} is added twice", t.seq));
            }
        }
        Ok(())
    }

    /// The range tombstones nothing is left to hide from: no table whose
    /// key range meets the tombstone's can hold an entry it hides (the
    /// table's entries are all newer, or the table was written with every
    /// tombstone up to this one applied: `range_cleared_seq`). Every older
    /// entry is in a table by then: a tombstone enters the version when its
    /// memtable is flushed, after every older memtable. Removing them
    /// changes no read.
    pub(crate) fn spent_range_tombstones(&self) -> Vec<u64> {
        self.range_dels
            .values()
            .filter(|t| !self.level_of.values().any(|(_, f)| f.may_hold_hidden_by(t)))
            .map(|t| t.seq)
            .collect()
    }

    /// Removes the range tombstones `seqs` (from [`Builder::spent_range_tombstones`]).
    pub(crate) fn remove_range_tombstones(&mut self, seqs: &[u64]) {
        for s in seqs {
            self.range_dels.remove(s);
        }
    }

    /// The blob-file part of an edit: files created (open) or sealed,
    /// garbage added, files removed.
    fn apply_blobs(&mut self, edit: &VersionEdit) -> Result<(), String> {
        for b in &edit.blob_files {
            if self.level_of.contains_key(&b.number) {
                return Err(format!("blob file {} has a table's number", b.number));
            }
            match self.blobs.get_mut(&b.number) {
                None => {
                    self.blobs.insert(
                        b.number,
                        BlobFileState {
                            sealed: b.sealed,
                            size: b.size,
                            value_count: b.value_count,
                            value_bytes: b.value_bytes,
                            crash_closed: b.crash_closed,
                            ..BlobFileState::default()
                        },
                    );
                }
                Some(s) if !s.sealed && b.sealed => {
                    s.sealed = true;
                    s.size = b.size;
                    s.value_count = b.value_count;
                    s.value_bytes = b.value_bytes;
                    s.crash_closed = b.crash_closed;
                    check_garbage(b.number, s)?;
                }
                Some(_) => {
                    return Err(format!("blob file {} is added twice", b.number));
                }
            }
        }
        for &(number, count, bytes) in &edit.blob_garbage {
            let s = self
                .blobs
                .get_mut(&number)
                .ok_or_else(|| format!("garbage in blob file {number}, which is not live"))?;
            s.garbage_count = s.garbage_count.saturating_add(count);
            s.garbage_bytes = s.garbage_bytes.saturating_add(bytes);
            check_garbage(number, s)?;
        }
        for number in &edit.deleted_blob_files {
            if self.blobs.remove(number).is_none() {
                return Err(format!("deleted blob file {number} is not live"));
            }
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
        if self.blobs.contains_key(&f.number) {
            return Err(format!("added table {} has a blob file's number", f.number));
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

    /// The version holding every file of the builder. A blob file nothing
    /// can point into any more leaves it (the obsolete-file pass deletes it
    /// once no older version lists it): a sealed file whose every value is
    /// garbage, and a file closed after a crash (state 2) when every
    /// table's oldest blob file is newer. Only tables can point into the
    /// latter: the open flushed every replayed memtable before closing it,
    /// and later writes go to new files. Both rules depend on the version
    /// alone, so replaying the same edits removes a file at the same point.
    pub(crate) fn finish(self) -> Version {
        let mut v = Version::new();
        let mut l0: Vec<Arc<FileMetaData>> = self.l0.into_values().collect();
        l0.sort_by_key(|f| std::cmp::Reverse((f.largest_seq, f.number)));
        v.files[0] = l0;
        for (i, files) in self.deeper.into_iter().enumerate() {
            v.files[i + 1] = files.into_values().collect();
        }
        v.blobs = self.blobs;
        v.range_dels = Arc::new(RangeTombstones::new(
            self.range_dels.into_values().collect(),
        ));
        v.time_map = Arc::new(self.time_map);
        v.ttl_floor = self.ttl_floor;
        let oldest_pointed_to = if v.blobs.values().any(|b| b.crash_closed) {
            v.files
                .iter()
                .flatten()
                .map(|f| f.oldest_blob_file)
                .filter(|&n| n != 0)
                .min()
                .unwrap_or(u64::MAX)
        } else {
            u64::MAX
        };
        let unreachable = |n: u64, b: &BlobFileState| {
            b.all_garbage() || (b.crash_closed && n < oldest_pointed_to)
        };
        v.blobs.retain(|&n, b| !unreachable(n, b));
        v
    }
}

/// A sealed blob file never has more garbage than values (its counts are
/// exact; a crash-closed file's byte count is an upper bound).
fn check_garbage(number: u64, s: &BlobFileState) -> Result<(), String> {
    let over = s.sealed
        && (s.garbage_bytes > s.value_bytes
            || (!s.crash_closed && s.garbage_count > s.value_count));
    if over {
        return Err(format!("blob file {number} has more garbage than values"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{ValueKind, make_internal_key};
    use crate::version::edit::BlobFileEdit;

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
            range_cleared_seq: 0,
        }
    }

    fn build(base: &Version, edit: &VersionEdit) -> Result<Version, String> {
        let mut b = Builder::new(base);
        b.apply(edit)?;
        let v = b.finish();
        v.check_invariants()?;
        Ok(v)
    }

    fn blob(number: u64, sealed: bool) -> BlobFileEdit {
        BlobFileEdit {
            number,
            sealed,
            size: if sealed { 8192 } else { 0 },
            value_count: if sealed { 10 } else { 0 },
            value_bytes: if sealed { 4000 } else { 0 },
            crash_closed: false,
        }
    }

    #[test]
    fn a_blob_file_leaves_when_all_its_values_are_garbage() {
        let v = build(
            &Version::new(),
            &VersionEdit {
                blob_files: vec![blob(5, true)],
                blob_garbage: vec![(5, 9, 3900)],
                ..VersionEdit::default()
            },
        )
        .expect("seal");
        assert!(v.blob_files().contains_key(&5), "one value still live");
        let v = build(
            &v,
            &VersionEdit {
                blob_garbage: vec![(5, 1, 100)],
                ..VersionEdit::default()
            },
        )
        .expect("last value");
        assert!(!v.blob_files().contains_key(&5), "all garbage: it leaves");
        // Open files stay however much garbage they have (the lane still
        // appends); a crash-closed file has no count to reach.
        let open = build(
            &Version::new(),
            &VersionEdit {
                blob_files: vec![blob(6, false)],
                blob_garbage: vec![(6, 3, 30)],
                ..VersionEdit::default()
            },
        )
        .expect("open");
        assert!(open.blob_files().contains_key(&6));
        let crashed = BlobFileEdit {
            number: 7,
            sealed: true,
            crash_closed: true,
            size: 8192,
            value_count: 0,
            value_bytes: 4096,
        };
        // A table points into it (its oldest blob file).
        let mut edit = VersionEdit {
            blob_files: vec![crashed],
            blob_garbage: vec![(7, 5, 4096)],
            ..VersionEdit::default()
        };
        edit.add_file(
            1,
            FileMetaData {
                oldest_blob_file: 7,
                range_cleared_seq: 0,
                ..meta(20, "a", "b", 1)
            },
        );
        let v = build(&Version::new(), &edit).expect("crash-closed: counts unknown, bytes bound");
        assert!(v.blob_files().contains_key(&7));
        assert!(
            build(
                &v,
                &VersionEdit {
                    blob_garbage: vec![(7, 1, 1)],
                    ..VersionEdit::default()
                }
            )
            .is_err(),
            "more garbage bytes than the bound"
        );
        // Once no table points into it, it leaves the version.
        let mut gone = VersionEdit::default();
        gone.delete_file(1, 20);
        let v = build(&v, &gone).expect("table gone");
        assert!(!v.blob_files().contains_key(&7), "nothing points into it");
    }

    #[test]
    fn blob_files_open_seal_collect_garbage_and_leave() {
        let open = VersionEdit {
            blob_files: vec![blob(5, false)],
            ..VersionEdit::default()
        };
        let v = build(&Version::new(), &open).expect("open");
        assert!(!v.blob_files()[&5].sealed);
        assert!(v.live_file_numbers().any(|n| n == 5));
        let seal = VersionEdit {
            blob_files: vec![blob(5, true)],
            blob_garbage: vec![(5, 4, 1000)],
            ..VersionEdit::default()
        };
        let v = build(&v, &seal).expect("seal");
        let b = v.blob_files()[&5];
        assert!(b.sealed);
        assert_eq!((b.size, b.value_count, b.value_bytes), (8192, 10, 4000));
        assert_eq!((b.garbage_count, b.garbage_bytes), (4, 1000));

        // Broken edits are refused with a reason.
        let twice = VersionEdit {
            blob_files: vec![blob(5, true)],
            ..VersionEdit::default()
        };
        assert!(build(&v, &twice).is_err(), "sealed twice");
        let too_much = VersionEdit {
            blob_garbage: vec![(5, 7, 10)],
            ..VersionEdit::default()
        };
        assert!(build(&v, &too_much).is_err(), "more garbage than values");
        let unknown = VersionEdit {
            blob_garbage: vec![(6, 1, 1)],
            ..VersionEdit::default()
        };
        assert!(
            build(&v, &unknown).is_err(),
            "garbage in a file that is not live"
        );
        let mut clash = VersionEdit::default();
        clash.add_file(0, meta(5, "a", "b", 1));
        assert!(
            build(&v, &clash).is_err(),
            "a table with a blob file's number"
        );

        let gone = VersionEdit {
            deleted_blob_files: vec![5],
            ..VersionEdit::default()
        };
        let v = build(&v, &gone).expect("delete");
        assert!(v.blob_files().is_empty());
        assert!(build(&v, &gone).is_err(), "deleted twice");
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
