//! Blob garbage collection inside flush and compaction
//! (`docs/blob-files.md`, "Garbage collection").
//!
//! * [`BlobFlow`] counts, per blob file, the pointers a job read and the
//!   pointers it wrote out unchanged; the difference is the garbage the job
//!   found (values overwritten, deleted, or relocated), logged as
//!   `BLOB_GARBAGE` in the job's edit.
//! * [`Relocator`] copies the values of the blob files chosen for
//!   relocation ([`relocation_set`]) into new blob files of the job, in the
//!   order the job writes its keys (key order), and hands back the new
//!   pointers. Cleanup is by ownership: files not handed out by
//!   [`Relocator::finish`] are removed when it is dropped.
//!
//! Single-threaded (one of each per sub-compaction). Invariants: a job
//! never writes out more pointers into a file than it read (checked by
//! [`BlobFlow::garbage`]); a relocated value was read and its CRC checked
//! before its new pointer is handed out.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use parking_lot::Mutex;

use crate::blob::cache::BlobReaders;
use crate::blob::file_writer::{BlobFileMeta, BlobFileWriter};
use crate::blob::format::{BlobPointer, Creator};
use crate::error::{Error, Result};
use crate::filenames::blob_file_path;
use crate::io::{FileSystem, IoEngine};
use crate::keys::{self, ValueKind};
use crate::version::Version;

/// Pointers read and written per blob file: `(count, bytes)`.
#[derive(Debug, Default, Clone)]
pub(crate) struct BlobFlow {
    read: BTreeMap<u64, (u64, u64)>,
    kept: BTreeMap<u64, (u64, u64)>,
}

impl BlobFlow {
    /// The entry (internal key, value) the job read: its pointer, counted
    /// as read, if it is a `BlobIndex` entry; corruption naming `what` (the
    /// job's input) if the pointer does not decode.
    pub(crate) fn read(
        &mut self,
        key: &[u8],
        value: &[u8],
        dir: &Path,
        what: &str,
    ) -> Result<Option<BlobPointer>> {
        match keys::parse_internal_key(key) {
            Some(k) if k.kind == ValueKind::BlobIndex => {
                let p = decode_pointer(value, dir, what)?;
                self.input(&p);
                Ok(Some(p))
            }
            _ => Ok(None),
        }
    }

    /// A pointer the job read.
    pub(crate) fn input(&mut self, p: &BlobPointer) {
        let e = self.read.entry(p.file_number).or_default();
        e.0 += 1;
        e.1 += u64::from(p.length);
    }

    /// A pointer the job wrote out unchanged.
    pub(crate) fn output(&mut self, p: &BlobPointer) {
        let e = self.kept.entry(p.file_number).or_default();
        e.0 += 1;
        e.1 += u64::from(p.length);
    }

    /// Adds another part's counts (sub-compactions).
    pub(crate) fn merge(&mut self, other: &BlobFlow) {
        for (map, from) in [(&mut self.read, &other.read), (&mut self.kept, &other.kept)] {
            for (&n, &(c, b)) in from {
                let e = map.entry(n).or_default();
                e.0 += c;
                e.1 += b;
            }
        }
    }

    /// The garbage found: `(file, values, bytes)` for every file with some.
    pub(crate) fn garbage(&self) -> Vec<(u64, u64, u64)> {
        self.read
            .iter()
            .filter_map(|(&n, &(c, b))| {
                let (kc, kb) = self.kept.get(&n).copied().unwrap_or((0, 0));
                debug_assert!(
                    kc <= c && kb <= b,
                    "blob file {n}: more pointers out than in"
                );
                let (gc, gb) = (c.saturating_sub(kc), b.saturating_sub(kb));
                (gc > 0).then_some((n, gc, gb))
            })
            .collect()
    }
}

/// When blob files are garbage-collected.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GcPolicy {
    /// Relocate a sealed file's live values once this share of its value
    /// bytes is garbage.
    pub ratio: f64,
    /// Schedule a compaction for a file at this garbage share.
    pub force_threshold: f64,
}

/// The blob files whose values a compaction of `v` relocates: sealed files
/// (crash-closed ones included, whose value bytes are an upper bound, so
/// their share is never overstated) at or above `policy.ratio` of garbage
/// (or the force threshold, if lower: a forced compaction must relocate
/// what it was picked for). Open files are never relocated (a lane still
/// appends to them).
///
/// At most about `budget` live bytes: `first` (the file a garbage
/// collection compaction was picked for) first, then by garbage share,
/// most first, while their live bytes (value bytes less garbage: an upper
/// bound of what the job copies) fit; at least one.
/// So one compaction never holds the compaction thread for long, and the
/// levels' own compactions (which find the garbage) keep their turns.
pub(crate) fn relocation_set(
    v: &Version,
    policy: &GcPolicy,
    budget: u64,
    first: Option<u64>,
) -> HashSet<u64> {
    let ratio = policy.ratio.min(policy.force_threshold);
    let mut due: Vec<_> = v
        .blob_files()
        .iter()
        .filter(|(_, b)| b.sealed && b.garbage_ratio() >= ratio)
        .collect();
    due.sort_by(|a, b| {
        (Some(*b.0) == first)
            .cmp(&(Some(*a.0) == first))
            .then(b.1.garbage_ratio().total_cmp(&a.1.garbage_ratio()))
    });
    let mut set = HashSet::new();
    let mut live = 0u64;
    for (&n, b) in due {
        let bytes = b.value_bytes.saturating_sub(b.garbage_bytes);
        if !set.is_empty() && live.saturating_add(bytes) > budget {
            break;
        }
        live = live.saturating_add(bytes);
        set.insert(n);
    }
    debug_assert!(
        first
            .is_none_or(|f| set.is_empty() || set.contains(&f) || !v.blob_files().contains_key(&f))
    );
    set
}

/// Garbage bytes over value bytes across the sealed blob files of `v`.
pub(crate) fn garbage_share(v: &Version) -> f64 {
    let (garbage, values) = garbage_and_values(v);
    if values == 0 {
        0.0
    } else {
        garbage as f64 / values as f64
    }
}

/// The garbage bytes and value bytes of the sealed blob files of `v`.
pub(crate) fn garbage_and_values(v: &Version) -> (u64, u64) {
    v.blob_files()
        .values()
        .filter(|b| b.sealed)
        .fold((0u64, 0u64), |(g, t), b| {
            (g + b.garbage_bytes, t + b.value_bytes)
        })
}

/// Every sealed blob file of `v` (what a full `compact_range` relocates).
pub(crate) fn sealed_files(v: &Version) -> HashSet<u64> {
    v.blob_files()
        .iter()
        .filter(|(_, b)| b.sealed)
        .map(|(&n, _)| n)
        .collect()
}

/// Relocation reads in flight at once.
pub(crate) const RELOCATION_READ_DEPTH: usize = 32;

/// What a relocating job needs.
#[derive(Clone, Copy)]
pub(crate) struct RelocateConfig<'a> {
    /// The database directory.
    pub dir: &'a Path,
    /// The file system.
    pub fs: &'a dyn FileSystem,
    /// Readers of the source files.
    pub readers: &'a BlobReaders,
    /// Files whose values move.
    pub relocate: &'a HashSet<u64>,
    /// A new file is started at this size.
    pub file_size: u64,
    /// Chunk size of the new files.
    pub chunk_size: usize,
    /// Write with O_DIRECT.
    pub direct: bool,
    /// How a batch of value reads is issued ([`Relocator::read_values`]).
    pub io_engine: IoEngine,
}

/// Copies values out of the files of a [`RelocateConfig`] into new blob
/// files.
pub(crate) struct Relocator<'a> {
    cfg: RelocateConfig<'a>,
    new_file_number: &'a (dyn Fn() -> u64 + Sync),
    writer: Option<BlobFileWriter>,
    done: Vec<BlobFileMeta>,
    /// Value bytes copied.
    pub(crate) bytes: u64,
    handed_out: bool,
}

impl<'a> Relocator<'a> {
    /// A relocator taking its file numbers from `new_file_number`.
    pub(crate) fn new(
        cfg: RelocateConfig<'a>,
        new_file_number: &'a (dyn Fn() -> u64 + Sync),
    ) -> Self {
        Relocator {
            cfg,
            new_file_number,
            writer: None,
            done: Vec::new(),
            bytes: 0,
            handed_out: false,
        }
    }

    /// Whether the value `p` names moves (its file is being relocated).
    pub(crate) fn moves(&self, p: &BlobPointer) -> bool {
        self.cfg.relocate.contains(&p.file_number)
    }

    /// The values `ps` name, each read with one aligned read and checked,
    /// all issued at once ([`RELOCATION_READ_DEPTH`] in flight on the
    /// fibers and io_uring, or one after another with `IoEngine::Sync`):
    /// the values of a garbage-heavy file lie scattered, and one read at a
    /// time left relocation at a fraction of the disk's random-read rate.
    pub(crate) fn read_values(&self, ps: &[BlobPointer]) -> Result<Vec<Vec<u8>>> {
        let slots: Vec<Mutex<Option<Result<Vec<u8>>>>> =
            ps.iter().map(|_| Mutex::new(None)).collect();
        let read = |i: usize| {
            let got = self
                .cfg
                .readers
                .reader(ps[i].file_number)
                .and_then(|r| r.get(&ps[i]));
            *slots[i].lock() = Some(got);
        };
        crate::io::fiber::run_tasks_on(self.cfg.io_engine, ps.len(), RELOCATION_READ_DEPTH, &read);
        slots
            .into_iter()
            .map(|slot| {
                slot.into_inner()
                    .unwrap_or_else(|| Err(Error::Poisoned("a relocation read did not run".into())))
            })
            .collect()
    }

    /// Appends `value` (read from `p`, for user key `key`) to the job's
    /// new blob file; its new pointer.
    pub(crate) fn place(
        &mut self,
        key: &[u8],
        value: &[u8],
        p: &BlobPointer,
    ) -> Result<BlobPointer> {
        debug_assert!(self.moves(p));
        if self
            .writer
            .as_ref()
            .is_some_and(|w| w.size_estimate() >= self.cfg.file_size)
        {
            self.seal_current()?;
        }
        let writer = match self.writer.as_mut() {
            Some(w) => w,
            None => {
                let number = (self.new_file_number)();
                let w = BlobFileWriter::create(
                    self.cfg.fs,
                    &blob_file_path(self.cfg.dir, number),
                    number,
                    self.cfg.chunk_size,
                    Creator::Compaction,
                    self.cfg.direct,
                )?;
                self.writer.insert(w)
            }
        };
        let moved = writer.add(key, value)?;
        debug_assert_eq!(moved.crc, p.crc, "a relocated value keeps its CRC");
        self.bytes += value.len() as u64;
        Ok(moved)
    }

    fn seal_current(&mut self) -> Result<()> {
        if let Some(w) = self.writer.take() {
            let path = w.path().to_path_buf();
            match w.finish() {
                Ok(meta) => self.done.push(meta),
                Err(e) => {
                    let _ = self.cfg.fs.remove_file(&path);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Seals the last file and hands every new file to the caller, who
    /// now owns them.
    pub(crate) fn finish(mut self) -> Result<Vec<BlobFileMeta>> {
        self.seal_current()?;
        self.handed_out = true;
        Ok(std::mem::take(&mut self.done))
    }
}

impl Drop for Relocator<'_> {
    fn drop(&mut self) {
        if self.handed_out {
            return;
        }
        let mut numbers: Vec<u64> = self.done.iter().map(|m| m.number).collect();
        if let Some(w) = self.writer.take() {
            numbers.push(w.number());
        }
        for n in numbers {
            let _ = self.cfg.fs.remove_file(&blob_file_path(self.cfg.dir, n));
        }
    }
}

/// The pointer of a `BlobIndex` entry, or corruption naming the job.
fn decode_pointer(value: &[u8], dir: &Path, what: &str) -> Result<BlobPointer> {
    BlobPointer::decode(value)
        .ok_or_else(|| Error::corruption(dir, 0, format!("malformed blob pointer in {what}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(file: u64, len: u32) -> BlobPointer {
        BlobPointer {
            file_number: file,
            offset: 4096,
            length: len,
            crc: 0,
        }
    }

    #[test]
    fn garbage_is_what_went_in_and_did_not_come_out() {
        let mut a = BlobFlow::default();
        a.input(&p(5, 100));
        a.input(&p(5, 200));
        a.output(&p(5, 200));
        a.input(&p(6, 10));
        a.output(&p(6, 10));
        let mut b = BlobFlow::default();
        b.input(&p(7, 1));
        a.merge(&b);
        assert_eq!(a.garbage(), vec![(5, 1, 100), (7, 1, 1)]);
    }
}
