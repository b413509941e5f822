//! Tests of the SST module: blocks, whole tables against a model, and
//! byte-by-byte corruption. Shared helpers live here: a deterministic RNG,
//! an in-memory `RandomAccessFile`, random entry sets and a table writer.

mod block;
mod corruption;
mod table;

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Result;
use crate::internal_iter::InternalIterator;
use crate::io::{FileSystem, PosixFs, RandomAccessFile};
use crate::keys::{
    SequenceNumber, ValueKind, compare_internal_keys, make_internal_key, parse_internal_key,
};

use super::{Table, TableBuilder, TableBuilderOptions, TableProperties, TableReadOptions};

/// splitmix64: small, deterministic, good enough for test data.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub(super) fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// An in-memory file, so corruption tests can patch bytes cheaply.
#[derive(Debug)]
pub(super) struct MemFile {
    pub(super) data: Vec<u8>,
    pub(super) path: PathBuf,
}

/// `pread` semantics over `data`: copies what lies at `offset` into `buf`
/// and returns the byte count (short only at the end). Shared by the
/// in-memory test files of `sst`.
pub(super) fn read_from(data: &[u8], buf: &mut [u8], offset: u64) -> usize {
    let start = usize::try_from(offset).map_or(data.len(), |o| o.min(data.len()));
    let n = buf.len().min(data.len() - start);
    buf[..n].copy_from_slice(&data[start..start + n]);
    n
}

impl RandomAccessFile for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        Ok(read_from(&self.data, buf, offset))
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

pub(super) type Entry = (Vec<u8>, Vec<u8>);

/// Sorted, distinct internal keys: `users` user keys (`prefix` + number,
/// with gaps so that absent keys exist), 1-4 versions each with distinct
/// sequence numbers, ~15% tombstones, values of 0..max_value bytes.
pub(super) fn random_entries(rng: &mut Rng, users: usize, max_value: usize) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut seq: SequenceNumber = 1;
    for u in 0..users {
        let ukey = format!("user{:06}", u * 2 + 1).into_bytes();
        let versions = 1 + rng.below(4);
        for _ in 0..versions {
            seq += 1 + rng.below(3);
            let kind = if rng.below(100) < 15 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let value = if kind == ValueKind::Deletion {
                Vec::new()
            } else {
                let len = rng.below(max_value as u64 + 1) as usize;
                // Compressible: a few distinct bytes.
                (0..len).map(|_| b'a' + rng.below(4) as u8).collect()
            };
            out.push((make_internal_key(&ukey, seq, kind), value));
        }
    }
    out.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
    out
}

/// Writes `entries` with `opts` into `dir/name` through `PosixFs`; returns
/// the path and properties.
pub(super) fn write_table(
    dir: &Path,
    name: &str,
    entries: &[Entry],
    opts: TableBuilderOptions,
) -> (PathBuf, TableProperties) {
    let path = dir.join(name);
    let file = PosixFs.create_writable(&path).expect("create");
    let mut b = TableBuilder::new(file, opts);
    for (k, v) in entries {
        b.add(k, v).expect("add");
    }
    assert_eq!(b.num_entries(), entries.len() as u64);
    let props = b.finish().expect("finish");
    (path, props)
}

/// Opens the table at `path` through `PosixFs`.
pub(super) fn open_table(path: &Path, opts: TableReadOptions) -> Result<Arc<Table>> {
    let file = PosixFs.open_random_access(path)?;
    let size = PosixFs.file_size(path)?;
    Table::open(file, size, opts)
}

/// The model answer of `Table::get`.
pub(super) fn model_get(
    entries: &[Entry],
    user_key: &[u8],
    seq: SequenceNumber,
) -> Option<(ValueKind, Vec<u8>)> {
    entries.iter().find_map(|(k, v)| {
        let p = parse_internal_key(k)?;
        (p.user_key == user_key && p.seq <= seq).then(|| (p.kind, v.clone()))
    })
}

/// Index of the first entry `>= target` (entries.len() if none).
pub(super) fn model_seek(entries: &[Entry], target: &[u8]) -> usize {
    entries.partition_point(|(k, _)| compare_internal_keys(k, target) == Ordering::Less)
}

/// Collects an iterator from the first entry forwards.
pub(super) fn collect_forward(it: &mut dyn InternalIterator) -> Vec<Entry> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

/// Collects an iterator from the last entry backwards.
pub(super) fn collect_backward(it: &mut dyn InternalIterator) -> Vec<Entry> {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    out
}

/// Checks seek / seek_for_prev / next / prev of `it` against `entries`
/// for `rounds` random targets (present keys and keys between them).
pub(super) fn check_seeks(
    it: &mut dyn InternalIterator,
    entries: &[Entry],
    rng: &mut Rng,
    rounds: usize,
) {
    let at = |it: &dyn InternalIterator, i: usize| {
        if i < entries.len() {
            assert!(it.valid(), "expected entry {i}");
            assert_eq!(it.key(), &entries[i].0[..]);
            assert_eq!(it.value(), &entries[i].1[..]);
        } else {
            assert!(!it.valid(), "expected end");
        }
    };
    for _ in 0..rounds {
        let target = match rng.below(3) {
            0 if !entries.is_empty() => entries[rng.below(entries.len() as u64) as usize].0.clone(),
            _ => {
                let u = rng.below(entries.len() as u64 + 2);
                let ukey = format!("user{:06}", u).into_bytes();
                make_internal_key(&ukey, rng.below(1 << 12), ValueKind::Value)
            }
        };
        let mut i = model_seek(entries, &target);
        it.seek(&target);
        at(it, i);
        // seek_for_prev: last entry <= target.
        let j = if i < entries.len()
            && compare_internal_keys(&entries[i].0, &target) == Ordering::Equal
        {
            i as isize
        } else {
            i as isize - 1
        };
        it.seek_for_prev(&target);
        if j < 0 {
            assert!(!it.valid());
        } else {
            at(it, j as usize);
            i = j as usize;
            // Random walk mixing next and prev.
            for _ in 0..8 {
                if !it.valid() {
                    break;
                }
                if rng.below(2) == 0 {
                    it.next();
                    i += 1;
                    at(it, i);
                } else if i == 0 {
                    it.prev();
                    assert!(!it.valid());
                    break;
                } else {
                    it.prev();
                    i -= 1;
                    at(it, i);
                }
            }
        }
    }
}
