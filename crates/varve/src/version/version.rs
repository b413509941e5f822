//! [`Version`]: an immutable snapshot of the LSM shape — which table files
//! make up each level — and the read-side queries on it (which files may
//! hold a key, which files overlap a key range).
//!
//! Thread-safety: a `Version` is never modified after it is built; it is
//! shared through `Arc` by readers and by the [`VersionSet`](super::VersionSet).
//! Invariants (see [`Version::check_invariants`]): L0 files may overlap and
//! are ordered newest first (`largest_seq` descending, then file number
//! descending); in L1..L6 files are sorted by smallest key and their user-key
//! ranges are disjoint (a user key lives in at most one file per level); a
//! file number appears at most once in the whole version.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::NUM_LEVELS;
use super::file_meta::FileMetaData;
use crate::keys::compare_bytes;
use crate::range_del::RangeTombstones;

/// What a version knows of one blob file (`docs/blob-files.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlobFileState {
    /// Its footer is written and durable; no value is added any more.
    pub sealed: bool,
    /// Size in bytes (when sealed).
    pub size: u64,
    /// Values in it (when sealed).
    pub value_count: u64,
    /// Bytes of values in it (when sealed).
    pub value_bytes: u64,
    /// Values no live table points to any more.
    pub garbage_count: u64,
    /// Their bytes.
    pub garbage_bytes: u64,
    /// Closed by the open after a crash (see
    /// [`BlobFileEdit::crash_closed`](super::BlobFileEdit)): `value_count`
    /// is unknown (0) and `value_bytes` an upper bound.
    pub crash_closed: bool,
}

impl BlobFileState {
    /// The edit that recreates this state for blob file `number` (a
    /// manifest's or a checkpoint's snapshot), with its garbage.
    pub(crate) fn snapshot_edit(
        &self,
        number: u64,
    ) -> (super::BlobFileEdit, Option<(u64, u64, u64)>) {
        let file = super::BlobFileEdit {
            number,
            sealed: self.sealed,
            size: self.size,
            value_count: self.value_count,
            value_bytes: self.value_bytes,
            crash_closed: self.crash_closed,
        };
        let garbage = (self.garbage_count > 0 || self.garbage_bytes > 0).then_some((
            number,
            self.garbage_count,
            self.garbage_bytes,
        ));
        (file, garbage)
    }

    /// Garbage bytes over value bytes (0 for an open or empty file).
    pub(crate) fn garbage_ratio(&self) -> f64 {
        if !self.sealed || self.value_bytes == 0 {
            return 0.0;
        }
        self.garbage_bytes as f64 / self.value_bytes as f64
    }

    /// Every value it holds is garbage: no table points into it. Only known
    /// for a sealed file with exact counts.
    pub(crate) fn all_garbage(&self) -> bool {
        self.sealed && !self.crash_closed && self.garbage_count >= self.value_count
    }
}

/// An immutable set of table files per level, and the blob files their
/// values live in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Version {
    pub(super) files: [Vec<Arc<FileMetaData>>; NUM_LEVELS],
    /// Live blob files by number.
    pub(super) blobs: BTreeMap<u64, BlobFileState>,
    /// Range tombstones flushed from memtables and not yet pruned.
    pub(super) range_dels: Arc<RangeTombstones>,
    /// Time samples persisted for `Options::ttl`.
    pub(super) time_map: Arc<super::time_map::TimeMap>,
    /// The keyspace's persisted expiry floor (`Options::ttl`; 0: none):
    /// entries below it stay expired whatever the clock or TTL says later.
    pub(super) ttl_floor: u64,
}

impl Version {
    /// An empty version (no files).
    pub(crate) fn new() -> Version {
        Version::default()
    }

    /// Adds the whole state of the version to `e` (a manifest's or a
    /// checkpoint's snapshot edit, which adds the counters): every table
    /// of every level, every blob file with its garbage, every range
    /// tombstone and every time sample.
    pub(crate) fn add_state_to(&self, e: &mut super::VersionEdit) {
        for level in 0..NUM_LEVELS {
            for f in self.files(level) {
                e.add_file(level, (**f).clone());
            }
        }
        for (&number, b) in &self.blobs {
            let (file, garbage) = b.snapshot_edit(number);
            e.blob_files.push(file);
            e.blob_garbage.extend(garbage);
        }
        e.range_tombstones = self.range_dels.tombstones().to_vec();
        e.time_samples = self.time_map.samples().to_vec();
        e.ttl_floor = (self.ttl_floor > 0).then_some(self.ttl_floor);
    }

    /// The range tombstones of the version (`crate::range_del`).
    pub(crate) fn range_tombstones(&self) -> &Arc<RangeTombstones> {
        &self.range_dels
    }

    /// The persisted time samples (`Options::ttl`).
    pub(crate) fn time_map(&self) -> &super::time_map::TimeMap {
        &self.time_map
    }

    /// The persisted expiry floor (`Options::ttl`; 0: none).
    pub(crate) fn ttl_floor(&self) -> u64 {
        self.ttl_floor
    }

    /// Files of `level` in the level's order (empty for `level >= NUM_LEVELS`).
    pub(crate) fn files(&self, level: usize) -> &[Arc<FileMetaData>] {
        self.files.get(level).map_or(&[], |v| v.as_slice())
    }

    /// Number of files in `level`.
    pub(crate) fn num_files(&self, level: usize) -> usize {
        self.files(level).len()
    }

    /// Total size in bytes of the files in `level`.
    pub(crate) fn level_bytes(&self, level: usize) -> u64 {
        self.files(level).iter().map(|f| f.file_size).sum()
    }

    /// The files that may hold `user_key`, in the order a lookup searches
    /// them: overlapping L0 files newest first, then at most one file per
    /// deeper level.
    pub(crate) fn files_for_get<'a>(
        &'a self,
        user_key: &'a [u8],
    ) -> impl Iterator<Item = (usize, &'a Arc<FileMetaData>)> + 'a {
        // Lazy and allocation-free: this sits on every point read.
        let l0 = self.files[0]
            .iter()
            .filter(move |f| f.contains_user_key(user_key))
            .map(|f| (0, f));
        let deeper = (1..NUM_LEVELS).filter_map(move |level| {
            let files = &self.files[level];
            let i =
                files.partition_point(|f| compare_bytes(f.largest_user_key(), user_key).is_lt());
            files
                .get(i)
                .filter(|f| compare_bytes(f.smallest_user_key(), user_key).is_le())
                .map(|f| (level, f))
        });
        l0.chain(deeper)
    }

    /// Files of `level` whose user-key range intersects `[begin, end]`
    /// (inclusive; `None` is unbounded). In L0 the range is widened
    /// transitively: a file that overlaps the range extends it by its own
    /// range, so that the result holds every L0 file overlapping any result
    /// file (what a compaction of L0 must take together).
    pub(crate) fn overlapping_files(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<FileMetaData>> {
        let files = self.files(level);
        if level > 0 {
            let start = match begin {
                Some(b) => files.partition_point(|f| f.largest_user_key() < b),
                None => 0,
            };
            return files[start..]
                .iter()
                .take_while(|f| end.is_none_or(|e| f.smallest_user_key() <= e))
                .cloned()
                .collect();
        }
        let mut begin = begin.map(<[u8]>::to_vec);
        let mut end = end.map(<[u8]>::to_vec);
        'restart: loop {
            let mut out = Vec::new();
            for f in files {
                if !f.overlaps_user_range(begin.as_deref(), end.as_deref()) {
                    continue;
                }
                if begin.as_deref().is_some_and(|b| f.smallest_user_key() < b) {
                    begin = Some(f.smallest_user_key().to_vec());
                    continue 'restart;
                }
                if end.as_deref().is_some_and(|e| f.largest_user_key() > e) {
                    end = Some(f.largest_user_key().to_vec());
                    continue 'restart;
                }
                out.push(Arc::clone(f));
            }
            return out;
        }
    }

    /// Numbers of every table file in the version.
    pub(crate) fn live_file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.files
            .iter()
            .flatten()
            .map(|f| f.number)
            .chain(self.blobs.keys().copied())
    }

    /// The live blob files, by number.
    pub(crate) fn blob_files(&self) -> &BTreeMap<u64, BlobFileState> {
        &self.blobs
    }

    /// Total number of files in all levels.
    #[cfg(test)]
    pub(crate) fn total_files(&self) -> usize {
        self.files.iter().map(Vec::len).sum()
    }

    /// Checks the invariants of the module docs; the error names the files.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let mut seen = HashSet::new();
        for (level, files) in self.files.iter().enumerate() {
            for f in files {
                f.validate()?;
                if !seen.insert(f.number) {
                    return Err(format!("table {} appears twice (level {level})", f.number));
                }
            }
            for w in files.windows(2) {
                let (a, b) = (&w[0], &w[1]);
                if level == 0 {
                    if (a.largest_seq, a.number) < (b.largest_seq, b.number) {
                        return Err(format!(
                            "L0 tables {} and {} are not ordered newest first",
                            a.number, b.number
                        ));
                    }
                } else if a.largest_user_key() >= b.smallest_user_key() {
                    return Err(format!(
                        "L{level} tables {} and {} overlap or are out of order",
                        a.number, b.number
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{ValueKind, make_internal_key};

    /// A small deterministic PRNG (xorshift) for random layouts.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn key(i: u64) -> Vec<u8> {
        format!("k{i:03}").into_bytes()
    }

    fn meta(number: u64, a: u64, b: u64, seq: u64) -> Arc<FileMetaData> {
        Arc::new(FileMetaData {
            number,
            file_size: 100 + number,
            smallest: make_internal_key(&key(a), seq + 1, ValueKind::Value),
            largest: make_internal_key(&key(b), seq, ValueKind::Value),
            smallest_seq: seq,
            largest_seq: seq + 1,
            num_entries: 2,
            oldest_blob_file: 0,
            range_cleared_seq: 0,
        })
    }

    /// A random valid layout over keys 0..100.
    fn random_version(rng: &mut Rng) -> Version {
        let mut v = Version::new();
        let mut number = 1;
        for _ in 0..rng.below(6) {
            let a = rng.below(100);
            let b = a + rng.below(20);
            v.files[0].push(meta(number, a, b, 1000 + rng.below(50)));
            number += 1;
        }
        v.files[0].sort_by_key(|f| std::cmp::Reverse((f.largest_seq, f.number)));
        for level in 1..NUM_LEVELS {
            let mut k = rng.below(10);
            while k < 100 && rng.below(4) != 0 {
                let b = k + rng.below(8);
                v.files[level].push(meta(number, k, b, rng.below(900)));
                number += 1;
                k = b + 1 + rng.below(6);
            }
        }
        v.check_invariants().expect("generated layout is valid");
        v
    }

    #[test]
    fn queries_match_brute_force() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..300 {
            let v = random_version(&mut rng);
            for k in 0..125 {
                let uk = key(k);
                let got: Vec<(usize, u64)> =
                    v.files_for_get(&uk).map(|(l, f)| (l, f.number)).collect();
                let want: Vec<(usize, u64)> = (0..NUM_LEVELS)
                    .flat_map(|l| v.files(l).iter().map(move |f| (l, f)))
                    .filter(|(_, f)| f.contains_user_key(&uk))
                    .map(|(l, f)| (l, f.number))
                    .collect();
                assert_eq!(got, want, "key {k}");
            }
            let bounds = |rng: &mut Rng| {
                let b = (rng.below(4) != 0).then(|| key(rng.below(120)));
                let e = (rng.below(4) != 0).then(|| key(rng.below(120)));
                (b, e)
            };
            for _ in 0..20 {
                let (b, e) = bounds(&mut rng);
                for level in 0..NUM_LEVELS {
                    let got: Vec<u64> = v
                        .overlapping_files(level, b.as_deref(), e.as_deref())
                        .iter()
                        .map(|f| f.number)
                        .collect();
                    let want = brute_overlap(&v, level, b.clone(), e.clone());
                    assert_eq!(got, want, "level {level} {b:?}..={e:?}");
                }
            }
        }
    }

    /// Overlap by fix-point: widen the range until no file extends it.
    fn brute_overlap(
        v: &Version,
        level: usize,
        mut b: Option<Vec<u8>>,
        mut e: Option<Vec<u8>>,
    ) -> Vec<u64> {
        loop {
            let hits: Vec<&Arc<FileMetaData>> = v
                .files(level)
                .iter()
                .filter(|f| f.overlaps_user_range(b.as_deref(), e.as_deref()))
                .collect();
            if level > 0 {
                return hits.iter().map(|f| f.number).collect();
            }
            let nb = hits
                .iter()
                .map(|f| f.smallest_user_key().to_vec())
                .chain(b.clone())
                .min()
                .filter(|_| b.is_some());
            let ne = hits
                .iter()
                .map(|f| f.largest_user_key().to_vec())
                .chain(e.clone())
                .max()
                .filter(|_| e.is_some());
            if nb == b && ne == e {
                return hits.iter().map(|f| f.number).collect();
            }
            (b, e) = (nb, ne);
        }
    }

    #[test]
    fn invariants_catch_overlap_and_order() {
        let mut v = Version::new();
        v.files[1] = vec![meta(1, 0, 10, 1), meta(2, 10, 20, 1)];
        assert!(
            v.check_invariants()
                .expect_err("overlap")
                .contains("overlap")
        );
        v.files[1] = vec![meta(2, 11, 20, 1), meta(1, 0, 10, 1)];
        assert!(v.check_invariants().is_err());
        v.files[1] = vec![meta(1, 0, 10, 1), meta(2, 11, 20, 1)];
        v.check_invariants().expect("disjoint");
        v.files[0] = vec![meta(3, 0, 5, 1), meta(4, 0, 5, 9)];
        assert!(v.check_invariants().is_err());
        v.files[0] = vec![meta(4, 0, 5, 9), meta(3, 0, 5, 1)];
        v.check_invariants().expect("newest first");
        v.files[2] = vec![meta(4, 50, 60, 1)];
        assert!(v.check_invariants().expect_err("dup").contains("twice"));
        assert_eq!(v.level_bytes(1), 203);
        assert_eq!(v.num_files(0), 2);
        assert_eq!(v.files(NUM_LEVELS).len(), 0);
    }
}
