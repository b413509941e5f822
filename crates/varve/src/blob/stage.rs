//! [`StagedFile`]: a write lane's blob file written in whole, page-aligned
//! chunks with `O_DIRECT`, its last [`SLOTS`] chunks staged in small
//! memory-mapped files beside it (`nnnnnn.blob.stage`, `nnnnnn.blob.stage1`
//! ..., `docs/blob-files.md`, "Staging and direct IO").
//!
//! A value is copied into the current slot's mapping (page cache: it
//! survives `kill -9`) and the slot's header records where its chunk goes
//! and how many bytes are staged. When the lane ends a chunk, the chunk's
//! direct write starts in the background ([`ChunkWriter`], whose writes
//! the lanes' `varve-blob-io` thread submits: [`ChunkRing`]) and the next
//! chunk is staged in the next slot, once the write of the chunk that slot
//! held completed: up to `SLOTS - 1` chunk writes are in flight, blob bytes
//! reach the disk once, in large aligned writes, and the page cache holds
//! only the slots. [`StagedFile::flush_partial`] waits for the writes in
//! flight and writes the staged bytes so far (rounded up to whole pages;
//! the next write of the chunk overwrites the padding), for a sync. After
//! a crash, [`apply_stage`] copies each slot's staged bytes into the blob
//! file if its staging file was written since the machine booted (the
//! header records the kernel's boot id): then its pages were in the page
//! cache the whole time and are exactly what the lane staged. After a
//! restart (a power loss) a staging file may hold any mix of old and new
//! pages, so it is ignored; no `sync` write relied on it (a sync writes the
//! staged bytes to the blob file and fdatasyncs that), and each value is
//! still checked against its pointer's CRC when read.
//!
//! Single-threaded (`&mut self`; the lane's mutex). Invariants: the blob
//! file holds every byte below the offset of the oldest chunk whose write
//! is in flight, and, with none in flight, below the current chunk's
//! offset plus its flushed bytes; staged bytes are never changed once
//! staged, and a slot is not touched while its chunk's write is in flight
//! (the `SAFETY` of [`StagedFile::end_chunk`]); the current slot is never
//! being written; each header's count covers exactly its slot's staged
//! bytes (raised after they are copied); live slots hold disjoint ranges.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::chunk_ring::ChunkRing;
use super::chunk_writer::ChunkWriter;
use super::format::PAGE;
use crate::error::{Error, Result};
use crate::io::{FileSystem, InPlaceFile, Preallocate, SharedMap};
use crate::util::coding::{decode_fixed32, decode_fixed64};

const STAGE_MAGIC: &[u8; 8] = b"varveSTG";
const STAGE_VERSION: u32 = 3;
/// Bytes of a version 3 header copy that its CRC covers.
const HEADER_LEN: usize = 84;
/// Version 2's header length (one copy, no sequence number).
const HEADER_LEN_V2: usize = 76;
/// Version 1's header length (version 2 without the flags word).
const HEADER_LEN_V1: usize = 72;
/// Where the second copy of a version 3 header starts (the first is at 0).
/// A header update writes the copy the previous update did not, so a
/// process killed in the middle of one (a torn copy fails its CRC) leaves
/// the other whole, with the previous count.
const COPY_STRIDE: usize = 128;
/// Header flag: the slot's chunk was written to the blob file (its direct
/// write completed), so an open after a crash need not copy it.
const FLAG_WRITTEN: u32 = 1;

/// Staging slots of a blob file: while one is staged into, the chunks of
/// the others may be on their way to the disk (up to `SLOTS - 1` direct
/// writes in flight).
pub(crate) const SLOTS: usize = 4;

/// What the staging files' names add to their blob file's.
const STAGE_SUFFIXES: [&str; SLOTS] = [".stage", ".stage1", ".stage2", ".stage3"];

/// The staging files of blob file `path` (`nnnnnn.blob.stage`, then
/// `nnnnnn.blob.stage1` ...).
pub(crate) fn stage_paths(blob: &Path) -> [PathBuf; SLOTS] {
    STAGE_SUFFIXES.map(|suffix| {
        let mut s = blob.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    })
}

/// True for the name of a staging file.
pub(crate) fn is_stage_file_name(name: &str) -> bool {
    STAGE_SUFFIXES.iter().any(|suffix| {
        name.strip_suffix(suffix).is_some_and(|blob| {
            matches!(
                crate::filenames::parse(blob),
                Some(crate::filenames::FileKind::Blob(_))
            )
        })
    })
}

/// A shared, writable mapping of a whole file of fixed length.
struct StageMap {
    /// Declared first: unmapped before the file is closed.
    map: SharedMap,
    file: Arc<dyn InPlaceFile>,
    path: PathBuf,
}

impl std::fmt::Debug for StageMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageMap")
            .field("path", &self.path)
            .field("len", &self.map.len())
            .finish()
    }
}

impl StageMap {
    /// Creates (or truncates) `path` on `fs` at `len` bytes (whole pages,
    /// allocated: a store into the mapping never meets a full disk) and
    /// maps it; the pages are touched once so that appends do not fault.
    fn create(fs: &dyn FileSystem, path: &Path, len: usize) -> Result<StageMap> {
        debug_assert!(len > 0 && len.is_multiple_of(PAGE));
        let file = fs.open_in_place(path, true, false)?;
        file.allocate(0, len as u64, Preallocate::Fallocate)?;
        let map = SharedMap::new(file.as_ref(), len)?;
        let mut m = StageMap {
            map,
            file,
            path: path.to_path_buf(),
        };
        m.bytes_mut().fill(0);
        Ok(m)
    }

    /// Bytes mapped.
    fn len(&self) -> usize {
        self.map.len()
    }

    /// The whole mapping.
    fn bytes(&self) -> &[u8] {
        // SAFETY: `map` maps `len` bytes of `file`, which is never shorter
        // (allocated before every map, nothing else truncates it) and lives
        // as long as `self`; `&self` forbids writes through `bytes_mut`.
        unsafe { std::slice::from_raw_parts(self.map.ptr().as_ptr(), self.map.len()) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.map.ptr().as_ptr(), self.map.len()) }
    }

    /// Grows the file and the mapping to `len` bytes, keeping the content.
    fn grow(&mut self, len: usize) -> Result<()> {
        debug_assert!(len > self.len() && len.is_multiple_of(PAGE));
        self.file
            .allocate(self.len() as u64, len as u64, Preallocate::Fallocate)?;
        // No slice into the mapping outlives a `&mut self` borrow.
        self.map.remap(len)
    }
}

/// One of a staged file's staging areas: a mapped staging file and the
/// chunk it holds.
#[derive(Debug)]
struct Slot {
    stage: StageMap,
    /// File offset of the chunk staged here (whole pages).
    base: u64,
    /// Bytes staged at `base`.
    staged: usize,
    /// Of those, bytes already written to the blob file (the current
    /// slot's partial flushes).
    flushed: usize,
    /// The slot holds a chunk of this file (readable from it until the
    /// slot is reused).
    live: bool,
    /// The chunk's write to the blob file completed (recorded in the
    /// header: an open after a crash skips the slot).
    written: bool,
    /// Sequence number of the last header update (its parity names the
    /// copy it went to).
    seq: u64,
}

impl Slot {
    /// Records `number`, `base` and `staged` in the slot's header: in the
    /// copy the previous update did not write, with the next sequence
    /// number and its CRC last. The copy is built aside and then stored;
    /// a `kill -9` in the middle of the store (a `memcpy` of a few vector
    /// stores, in any order) tears only this copy, and the open then uses
    /// the other, which the update before wrote whole (stores reach the
    /// page cache in program order, and all of them before a kill do).
    fn write_header(&mut self, number: u64, boot: &[u8; 36]) {
        self.seq += 1;
        let mut h = [0u8; HEADER_LEN + 4];
        h[..8].copy_from_slice(STAGE_MAGIC);
        h[8..12].copy_from_slice(&STAGE_VERSION.to_le_bytes());
        h[12..20].copy_from_slice(&number.to_le_bytes());
        h[20..28].copy_from_slice(&self.base.to_le_bytes());
        h[28..36].copy_from_slice(&(self.staged as u64).to_le_bytes());
        h[36..72].copy_from_slice(boot);
        let flags = if self.written { FLAG_WRITTEN } else { 0 };
        h[72..76].copy_from_slice(&flags.to_le_bytes());
        h[76..84].copy_from_slice(&self.seq.to_le_bytes());
        let c = crc32c::crc32c(&h[..HEADER_LEN]);
        h[HEADER_LEN..].copy_from_slice(&c.to_le_bytes());
        let at = (self.seq % 2) as usize * COPY_STRIDE;
        debug_assert!(COPY_STRIDE >= h.len() && at + h.len() <= PAGE);
        self.stage.bytes_mut()[at..at + h.len()].copy_from_slice(&h);
    }

    /// The staged bytes from `from` (rounded down to a page) to the end
    /// (rounded up, the padding zeroed), and their file offset.
    fn pages_from(&mut self, from: usize) -> Result<Option<(u64, &[u8])>> {
        let start = from / PAGE * PAGE;
        let end = self.staged.div_ceil(PAGE) * PAGE;
        if end <= start {
            return Ok(None);
        }
        let stage_end = PAGE + end;
        if stage_end > self.stage.len() {
            self.stage.grow(stage_end)?;
        }
        let staged = self.staged;
        self.stage.bytes_mut()[PAGE + staged..stage_end].fill(0);
        let buf = &self.stage.bytes()[PAGE + start..stage_end];
        debug_assert_eq!(
            buf.as_ptr() as usize % PAGE,
            0,
            "direct IO needs an aligned buffer"
        );
        Ok(Some((self.base + start as u64, buf)))
    }

    /// The `len` bytes at file offset `offset` if all are in this slot.
    fn range(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset.checked_sub(self.base)?).ok()?;
        let end = start.checked_add(len)?;
        (end <= self.staged).then(|| &self.stage.bytes()[PAGE + start..PAGE + end])
    }
}

/// A blob file written through [`SLOTS`] staging mappings and direct
/// writes: finished chunks are written in the background from their slots
/// while the next one is staged in the next slot.
#[derive(Debug)]
pub(crate) struct StagedFile {
    /// Declared first: a write still in flight is reaped (when dropped)
    /// before the slots' mappings go.
    writer: ChunkWriter,
    path: PathBuf,
    number: u64,
    /// Shared with the lane's syncs, which fdatasync outside its mutex.
    file: Arc<dyn InPlaceFile>,
    /// The boot id the staging headers are stamped with.
    boot: [u8; 36],
    slots: [Slot; SLOTS],
    /// The slot being staged into; the slots before it (cyclically) hold
    /// the chunks before (being written, or written) while they are live.
    cur: usize,
}

impl StagedFile {
    /// Creates blob file `path` (number `number`) and its staging
    /// files, each with room for `capacity` staged bytes (grown when a
    /// value needs more).
    /// Its chunk writes go through `ring`.
    pub(crate) fn create(
        fs: &dyn FileSystem,
        path: &Path,
        number: u64,
        capacity: usize,
        ring: &Arc<ChunkRing>,
    ) -> Result<StagedFile> {
        // Direct writes where the file system has them (not tmpfs before
        // Linux 6.6); the same aligned writes go through the page cache
        // elsewhere.
        let file = match fs.open_in_place(path, true, true) {
            Err(Error::Io { source, .. }) if source.raw_os_error() == Some(libc::EINVAL) => {
                fs.open_in_place(path, true, false)?
            }
            other => other?,
        };
        let capacity = capacity.max(PAGE).div_ceil(PAGE) * PAGE;
        let slot = |i: usize| -> Result<Slot> {
            Ok(Slot {
                stage: StageMap::create(fs, &stage_paths(path)[i], PAGE + capacity)?,
                base: 0,
                staged: 0,
                flushed: 0,
                live: i == 0,
                written: false,
                seq: 0,
            })
        };
        let mut slots = Vec::with_capacity(SLOTS);
        for i in 0..SLOTS {
            slots.push(slot(i)?);
        }
        let Ok(slots) = <[Slot; SLOTS]>::try_from(slots) else {
            unreachable!("SLOTS slots were made");
        };
        let mut f = StagedFile {
            writer: ChunkWriter::new(SLOTS - 1, ring),
            path: path.to_path_buf(),
            number,
            file,
            boot: fs.boot_id(),
            slots,
            cur: 0,
        };
        // Both copies, so that either one is whole from the start.
        let boot = f.boot;
        for s in &mut f.slots {
            s.write_header(number, &boot);
            s.write_header(number, &boot);
        }
        Ok(f)
    }

    /// The blob file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes appended so far (the file's logical length).
    pub(crate) fn len(&self) -> u64 {
        let s = &self.slots[self.cur];
        s.base + s.staged as u64
    }

    /// Bytes a reader surely finds in the blob file itself (below the
    /// chunk being written, if one is).
    pub(crate) fn readable_len(&self) -> u64 {
        if let Some(oldest) = self.writer.oldest() {
            return self.slots[oldest].base;
        }
        let s = &self.slots[self.cur];
        s.base + s.flushed as u64
    }

    /// Bytes handed to the blob file: every byte below it is in a chunk
    /// write that completed or is in flight (or was written by
    /// [`flush_partial`](Self::flush_partial)); the bytes from it on are
    /// only staged. Never less than [`readable_len`](Self::readable_len).
    pub(crate) fn handed_off_len(&self) -> u64 {
        let s = &self.slots[self.cur];
        s.base + s.flushed as u64
    }

    /// Records the chunk writes that completed, without waiting for any
    /// (raises [`readable_len`](Self::readable_len) over them).
    pub(crate) fn reap(&mut self) -> Result<()> {
        self.note_written()?;
        debug_assert!(self.readable_len() <= self.handed_off_len());
        Ok(())
    }

    /// Stages `data` after the bytes appended so far.
    pub(crate) fn append(&mut self, data: &[u8]) -> Result<()> {
        let (number, boot) = (self.number, self.boot);
        let s = &mut self.slots[self.cur];
        let end = PAGE + s.staged + data.len();
        if end > s.stage.len() {
            s.stage.grow(end.div_ceil(PAGE) * PAGE)?;
        }
        let at = PAGE + s.staged;
        s.stage.bytes_mut()[at..at + data.len()].copy_from_slice(data);
        s.staged += data.len();
        // The count is raised after the bytes are in place: a process
        // killed in between leaves the old count, which covers whole values.
        s.write_header(number, &boot);
        Ok(())
    }

    /// Waits for every chunk write in flight (each one that succeeded is
    /// recorded as written in its slot's header).
    fn wait_previous(&mut self) -> Result<()> {
        let mut first = Ok(());
        let (number, boot) = (self.number, self.boot);
        while self.writer.in_flight() > 0 {
            match self.writer.wait_oldest(self.file.as_ref(), &self.path) {
                Ok(Some(tag)) => {
                    let slot = &mut self.slots[tag];
                    slot.written = true;
                    slot.write_header(number, &boot);
                }
                Ok(None) => break,
                Err(e) => {
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            }
        }
        first
    }

    /// Ends a chunk: its staged bytes (ending on a page boundary) start on
    /// their way to the blob file, and the next chunk is staged in the
    /// next slot (once the write of the chunk that slot held completed).
    pub(crate) fn end_chunk(&mut self) -> Result<()> {
        debug_assert_eq!(
            self.slots[self.cur].staged % PAGE,
            0,
            "a chunk ends on a page boundary"
        );
        debug_assert!(
            !self.writer.is_writing(self.cur),
            "the current slot is never being written"
        );
        debug_assert!(self.writer.in_flight() < SLOTS, "one slot is current");
        let next = (self.cur + 1) % SLOTS;
        // The next slot is about to be reused: its write must be done.
        // Writes are reaped oldest first, and the next slot's chunk is the
        // oldest of all.
        while self.writer.is_writing(next) {
            if let Some(tag) = self.writer.wait_oldest(self.file.as_ref(), &self.path)? {
                self.slots[tag].written = true;
            }
        }
        let (file, path) = (Arc::clone(&self.file), self.path.clone());
        let cur = &mut self.slots[self.cur];
        let from = cur.flushed;
        let next_base = cur.base + cur.staged as u64;
        if let Some((offset, buf)) = cur.pages_from(from)? {
            // SAFETY: `buf` is this slot's mapping, which stays mapped and
            // unchanged until the write is reaped: the slot is next
            // appended to, grown or flushed only once it is current again,
            // which `end_chunk` makes it only after waiting for its write
            // (or after `wait_previous`, which waits for all of them), and
            // `writer`, declared first, reaps every write before the slots
            // are dropped.
            unsafe { self.writer.start(&file, &path, buf, offset, self.cur) }?;
        }
        cur.flushed = cur.staged;
        self.cur = next;
        let (number, boot) = (self.number, self.boot);
        let next = &mut self.slots[self.cur];
        next.base = next_base;
        next.staged = 0;
        next.flushed = 0;
        next.live = true;
        next.written = false;
        next.write_header(number, &boot);
        self.note_written()
    }

    /// Reaps the chunk writes that completed and records each in its
    /// slot's header: the open after a crash copies only the slots whose
    /// chunks may not be in the file.
    fn note_written(&mut self) -> Result<()> {
        let mut done = [false; SLOTS];
        self.writer
            .reap_completed(self.file.as_ref(), &self.path, |tag| done[tag] = true)?;
        let (number, boot) = (self.number, self.boot);
        for (slot, _) in self.slots.iter_mut().zip(done).filter(|(_, d)| *d) {
            slot.written = true;
            slot.write_header(number, &boot);
        }
        Ok(())
    }

    /// Writes the staged bytes not yet in the blob file, and waits for the
    /// chunk in flight (for a reader, a sync or a checkpoint).
    pub(crate) fn flush_partial(&mut self) -> Result<()> {
        self.wait_previous()?;
        let s = &self.slots[self.cur];
        if s.flushed < s.staged {
            let from = s.flushed;
            self.write_slot_from(self.cur, from)?;
            let s = &mut self.slots[self.cur];
            s.flushed = s.staged;
        }
        Ok(())
    }

    /// Writes slot `i`'s staged bytes from `from` (see `Slot::pages_from`)
    /// to the blob file, here and now.
    fn write_slot_from(&mut self, i: usize, from: usize) -> Result<()> {
        if let Some((offset, buf)) = self.slots[i].pages_from(from)? {
            self.file.write_at(buf, offset)?;
        }
        Ok(())
    }

    /// The blob file, to fdatasync it outside the lane's mutex after
    /// [`flush_partial`](Self::flush_partial).
    pub(crate) fn sync_handle(&self) -> Arc<dyn InPlaceFile> {
        Arc::clone(&self.file)
    }

    /// After the last chunk (which must end on a page boundary): the blob
    /// file is durable at exactly its length, returned. The staging files
    /// stay until [`remove_stage`](Self::remove_stage) (a failure here
    /// leaves every staged byte where it was).
    pub(crate) fn finish(&mut self) -> Result<u64> {
        self.end_chunk()?;
        self.wait_previous()?;
        self.file.sync_data()?;
        Ok(self.slots[self.cur].base)
    }

    /// Writes every staged byte (the last page padded) and makes the blob
    /// file durable; returns its length. For a file given up after a
    /// failure: afterwards it holds every value ever staged, including
    /// the previous chunk's, rewritten whatever became of its write.
    pub(crate) fn make_durable(&mut self) -> Result<u64> {
        let _ = self.wait_previous();
        // The slots before the current one, oldest first.
        for back in (1..SLOTS).rev() {
            let i = (self.cur + SLOTS - back) % SLOTS;
            if self.slots[i].live {
                self.write_slot_from(i, 0)?;
            }
        }
        self.slots[self.cur].flushed = 0;
        self.flush_partial()?;
        self.file.sync_data()?;
        let s = &self.slots[self.cur];
        Ok(s.base + (s.staged.div_ceil(PAGE) * PAGE) as u64)
    }

    /// The `len` bytes at file offset `offset` if all of them are still in
    /// a staging area (the current chunk or one of the `SLOTS - 1` before
    /// it), whether or not they were also written to the blob file.
    pub(crate) fn staged_range(&self, offset: u64, len: usize) -> Option<&[u8]> {
        self.slots
            .iter()
            .filter(|s| s.live)
            .find_map(|s| s.range(offset, len))
    }

    /// Closes the file and removes its staging files (once the blob file
    /// holds every staged byte durably).
    pub(crate) fn remove_stage(mut self, fs: &dyn FileSystem) -> Result<()> {
        self.wait_previous()?;
        let stages = stage_paths(&self.path);
        drop(self);
        for stage in &stages {
            fs.remove_file(stage)?;
        }
        Ok(())
    }
}

/// What [`apply_stage`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StageOutcome {
    /// No staging file.
    None,
    /// `bytes` staged bytes were copied into the blob file at `offset`.
    Applied { offset: u64, bytes: u64 },
    /// The slot's `bytes` at `offset` were in the blob file already (its
    /// chunk's write completed before the crash): nothing was copied.
    Written { offset: u64, bytes: u64 },
    /// The staging file did not check out (a power loss, or another
    /// file's); it was removed and the blob file left as it was.
    Ignored(String),
    /// One of the staging file's two header copies did not check out (for
    /// the reason given: a header update the crash interrupted); the other
    /// was used. Reported before that slot's own outcome.
    TornCopy(String),
}

/// After a crash: for each staging file of blob file `number` at `blob`,
/// copies its staged bytes into the blob file (buffered, then fdatasync)
/// when its header checks out and was written in this boot, and removes
/// it. They hold disjoint ranges (the current chunk and the ones before,
/// which may be in the file already: rewriting them writes the same
/// bytes). Returns what was done with each staging file there was.
pub(crate) fn apply_stage(
    fs: &dyn FileSystem,
    blob: &Path,
    number: u64,
) -> Result<Vec<StageOutcome>> {
    let mut outcomes = Vec::new();
    let mut present = Vec::new();
    let mut file: Option<Arc<dyn InPlaceFile>> = None;
    // What was copied (each staging file's bytes, kept rather than copied
    // again, and where its data lies in them), to copy again if the sync
    // reports an old error.
    let mut copied: Vec<Copied> = Vec::new();
    let boot = fs.boot_id();
    for (stage, bytes) in staging_files(fs, blob)? {
        let parsed = parse_stage(&bytes, number, &boot);
        if let Ok(Staged {
            torn: Some(why), ..
        }) = &parsed
        {
            outcomes.push(StageOutcome::TornCopy(why.clone()));
        }
        let outcome = match parsed {
            // A slot not yet used, or just reused: nothing to copy.
            Ok(Staged { data: [], .. }) => StageOutcome::None,
            // Its chunk is in the blob file already; the sync below makes
            // it durable with the rest.
            Ok(Staged {
                written: true,
                base,
                data,
                ..
            }) => {
                if file.is_none() {
                    file = Some(fs.open_in_place(blob, false, false)?);
                }
                StageOutcome::Written {
                    offset: base,
                    bytes: data.len() as u64,
                }
            }
            Ok(Staged { base, data, .. }) => {
                let f = match &file {
                    Some(f) => f,
                    None => file.insert(fs.open_in_place(blob, false, false)?),
                };
                f.write_at(data, base)?;
                let start = data.as_ptr() as usize - bytes.as_ptr() as usize;
                let range = start..start + data.len();
                let outcome = StageOutcome::Applied {
                    offset: base,
                    bytes: data.len() as u64,
                };
                copied.push(Copied { base, bytes, range });
                outcome
            }
            Err(why) => StageOutcome::Ignored(why),
        };
        present.push(stage);
        if outcome != StageOutcome::None {
            outcomes.push(outcome);
        }
    }
    // One fdatasync for all of them, and only then are the staging files
    // removed: a crash in between applies them again (the same bytes).
    if let Some(f) = &file {
        sync_after_crash(f.as_ref(), &copied)?;
    }
    for stage in present {
        fs.remove_file(&stage)?;
    }
    Ok(outcomes)
}

/// A staging file's bytes, whose `range` was written at `base` of its blob
/// file.
struct Copied {
    base: u64,
    bytes: Vec<u8>,
    range: std::ops::Range<usize>,
}

/// A chunk a crash left staged and not yet in its blob file: what
/// [`apply_stage`] would copy to `base`, read without writing anything
/// (for read-only opens and `varve check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnappliedChunk {
    /// The chunk's offset in the blob file.
    pub base: u64,
    /// The staged bytes.
    pub data: Vec<u8>,
}

/// The staged chunks of blob file `number` at `blob` that [`apply_stage`]
/// would copy into it, in the order it copies them (slot order; later
/// copies overwrite earlier ones where they overlap), with what it would
/// report of each staging file. Reads the staging files through `fs`;
/// writes nothing. A slot whose chunk was written already, a slot not in
/// use, and a staging file that does not check out contribute no chunk,
/// exactly as in `apply_stage`.
pub(crate) fn unapplied_chunks(
    fs: &dyn FileSystem,
    blob: &Path,
    number: u64,
) -> Result<(Vec<UnappliedChunk>, Vec<StageOutcome>)> {
    let mut chunks = Vec::new();
    let mut outcomes = Vec::new();
    let boot = fs.boot_id();
    for (_, bytes) in staging_files(fs, blob)? {
        match parse_stage(&bytes, number, &boot) {
            Ok(s) => {
                if let Some(why) = s.torn {
                    outcomes.push(StageOutcome::TornCopy(why));
                }
                if s.data.is_empty() {
                    continue;
                }
                if s.written {
                    outcomes.push(StageOutcome::Written {
                        offset: s.base,
                        bytes: s.data.len() as u64,
                    });
                } else {
                    outcomes.push(StageOutcome::Applied {
                        offset: s.base,
                        bytes: s.data.len() as u64,
                    });
                    chunks.push(UnappliedChunk {
                        base: s.base,
                        data: s.data.to_vec(),
                    });
                }
            }
            Err(why) => outcomes.push(StageOutcome::Ignored(why)),
        }
    }
    Ok((chunks, outcomes))
}

/// The staging files of blob file `blob` there are, in slot order, with
/// their bytes.
fn staging_files(fs: &dyn FileSystem, blob: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut out = Vec::new();
    for stage in stage_paths(blob) {
        match crate::io::read_file(fs, &stage) {
            Ok(b) => out.push((stage, b)),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// fdatasyncs `f` (blob file `blob`) after `copied` was written into it.
/// A writer killed with direct writes of this file in flight can leave an
/// I/O error recorded on it that nobody has seen yet: the kernel cancels
/// or fails those writes as the process dies, and it may do so a few
/// milliseconds after the process is gone (its io_uring is torn down in
/// the background). The first fdatasync on any handle after that reports
/// the error, whatever became of the bytes written since. Every such
/// write's chunk is still in a staging slot, so it is in `copied`, and a
/// late write can only put the same bytes there: on EIO the copy is
/// written again and synced once more, a few times with a short pause,
/// and a sync that succeeds after the rewrite makes it durable. An error
/// that persists (a failing device) is returned.
fn sync_after_crash(f: &dyn InPlaceFile, copied: &[Copied]) -> Result<()> {
    const ATTEMPTS: u32 = 8;
    let mut attempt = 0;
    loop {
        match f.sync_data() {
            Ok(()) => return Ok(()),
            Err(Error::Io { source, .. })
                if source.raw_os_error() == Some(libc::EIO)
                    && !copied.is_empty()
                    && attempt + 1 < ATTEMPTS =>
            {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(10 * u64::from(attempt)));
                for c in copied {
                    f.write_at(&c.bytes[c.range.clone()], c.base)?;
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// The staged chunk's file offset and bytes, if the staging file is whole
/// and belongs to blob file `number`. Versions 1 and 2 have one header at
/// offset 0; version 3 has two copies (at 0 and [`COPY_STRIDE`]) and the
/// whole one with the higher sequence number is the header.
fn parse_stage<'a>(
    bytes: &'a [u8],
    number: u64,
    boot: &[u8; 36],
) -> std::result::Result<Staged<'a>, String> {
    match copy_version(bytes, 0)? {
        STAGE_VERSION => {
            let first = parse_copy(bytes, 0, number, boot);
            let second = parse_copy(bytes, COPY_STRIDE, number, boot);
            match (first, second) {
                (Ok((a, sa)), Ok((b, sb))) => Ok(if sa >= sb { a } else { b }),
                // The other copy was torn by the crash (the update in
                // progress) or damaged: this one is the previous update.
                (Ok((a, _)), Err(why)) | (Err(why), Ok((a, _))) => Ok(Staged {
                    torn: Some(why),
                    ..a
                }),
                (Err(why), Err(_)) => Err(why),
            }
        }
        // Versions 1 and 2 (one header), or an unknown one, refused there.
        _ => parse_copy(bytes, 0, number, boot).map(|(s, _)| s),
    }
}

/// The format version of the header copy at `at`, if it has the magic.
fn copy_version(bytes: &[u8], at: usize) -> std::result::Result<u32, String> {
    let copy = bytes.get(at..).ok_or("shorter than its header")?;
    if copy.get(..8) != Some(&STAGE_MAGIC[..]) {
        return Err("not a staging file".into());
    }
    copy.get(8..12)
        .and_then(decode_fixed32)
        .ok_or_else(|| "shorter than its header".into())
}

/// The header copy at `at` of a staging file, and its sequence number (0
/// for versions 1 and 2, which have one copy).
fn parse_copy<'a>(
    bytes: &'a [u8],
    at: usize,
    number: u64,
    boot: &[u8; 36],
) -> std::result::Result<(Staged<'a>, u64), String> {
    let version = copy_version(bytes, at)?;
    let copy = bytes.get(at..).ok_or("shorter than its header")?;
    let len = match version {
        1 => HEADER_LEN_V1,
        2 => HEADER_LEN_V2,
        STAGE_VERSION => HEADER_LEN,
        v => return Err(format!("staging format version {v}")),
    };
    let h = copy.get(..len + 4).ok_or("shorter than its header")?;
    let stored = decode_fixed32(&h[len..]).ok_or("header")?;
    if crc32c::crc32c(&h[..len]) != stored {
        return Err("staging header checksum mismatch".into());
    }
    let owner = decode_fixed64(&h[12..]).ok_or("header")?;
    if owner != number {
        return Err(format!("stages blob file {owner}"));
    }
    let base = decode_fixed64(&h[20..]).ok_or("header")?;
    let staged = decode_fixed64(&h[28..]).ok_or("header")? as usize;
    if h[36..72] != boot[..] {
        return Err(
            "written before the machine restarted: its pages may not all \
                    have reached the disk"
                .into(),
        );
    }
    let flags = if version == 1 {
        0
    } else {
        decode_fixed32(&h[72..]).ok_or("header")?
    };
    let seq = if version == STAGE_VERSION {
        decode_fixed64(&h[76..]).ok_or("header")?
    } else {
        0
    };
    let data = bytes
        .get(PAGE..PAGE.checked_add(staged).ok_or("length")?)
        .ok_or("staged bytes past the end of the staging file")?;
    Ok((
        Staged {
            base,
            data,
            written: flags & FLAG_WRITTEN != 0,
            torn: None,
        },
        seq,
    ))
}

/// A staging file's chunk, as its header describes it.
struct Staged<'a> {
    /// The chunk's offset in the blob file.
    base: u64,
    /// The bytes staged.
    data: &'a [u8],
    /// The chunk's write completed: the blob file holds `data` already.
    written: bool,
    /// Why the header's other copy did not check out, if it did not (a
    /// header update a crash interrupted).
    torn: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn read(path: &Path) -> Vec<u8> {
        std::fs::read(path).expect("read")
    }

    /// Blob file `number` in `dir` with a first chunk (one page of 1s)
    /// written; its path and the staged file.
    /// What `apply_stage` reports for a file whose first chunk (one page)
    /// was written and whose next `applied` staged bytes were copied.
    fn first_page_written_then_applied(applied: u64) -> Vec<StageOutcome> {
        vec![
            StageOutcome::Written {
                offset: 0,
                bytes: PAGE as u64,
            },
            StageOutcome::Applied {
                offset: PAGE as u64,
                bytes: applied,
            },
        ]
    }

    fn after_a_first_chunk(dir: &tempfile::TempDir, number: u64) -> (PathBuf, StagedFile) {
        let path = dir.path().join(format!("{number:06}.blob"));
        let mut f = StagedFile::create(&crate::io::PosixFs, &path, number, PAGE, &ChunkRing::new())
            .expect("create");
        f.append(&[1u8; PAGE]).expect("header");
        f.end_chunk().expect("end");
        f.wait_previous().expect("written");
        (path, f)
    }

    #[test]
    fn staging_file_names() {
        let [p0, p1, p2, p3] = stage_paths(Path::new("/db/000012.blob"));
        assert_eq!(p0, Path::new("/db/000012.blob.stage"));
        assert_eq!(p1, Path::new("/db/000012.blob.stage1"));
        assert_eq!(p2, Path::new("/db/000012.blob.stage2"));
        assert_eq!(p3, Path::new("/db/000012.blob.stage3"));
        assert!(is_stage_file_name("000012.blob.stage"));
        assert!(is_stage_file_name("000012.blob.stage1"));
        assert!(is_stage_file_name("000012.blob.stage3"));
        assert!(!is_stage_file_name("000012.blob.stage4"));
        assert!(!is_stage_file_name("000012.blob"));
        assert!(!is_stage_file_name("000012.sst.stage"));
        assert!(!is_stage_file_name("notes.stage"));
    }

    #[test]
    fn chunks_go_to_the_file_and_partial_flushes_are_overwritten() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("000007.blob");
        let mut f = StagedFile::create(&crate::io::PosixFs, &path, 7, 2 * PAGE, &ChunkRing::new())
            .expect("create");
        f.append(&[1u8; PAGE]).expect("header page");
        f.end_chunk().expect("end");
        f.wait_previous().expect("written");
        assert_eq!(read(&path), vec![1u8; PAGE]);
        f.append(&[2u8; 100]).expect("value");
        assert_eq!(f.len(), PAGE as u64 + 100);
        assert_eq!(f.readable_len(), PAGE as u64);
        f.flush_partial().expect("flush");
        assert_eq!(f.readable_len(), PAGE as u64 + 100);
        let on_disk = read(&path);
        assert_eq!(on_disk.len(), 2 * PAGE, "padded to a page");
        assert_eq!(&on_disk[PAGE..PAGE + 100], &[2u8; 100]);
        // More than the capacity: the staging area grows.
        f.append(&[3u8; 3 * PAGE - 100]).expect("large value");
        f.end_chunk().expect("end");
        f.wait_previous().expect("written");
        let on_disk = read(&path);
        assert_eq!(on_disk.len(), 4 * PAGE);
        assert_eq!(&on_disk[PAGE..PAGE + 100], &[2u8; 100]);
        assert!(on_disk[PAGE + 100..].iter().all(|&b| b == 3));
        f.append(&[9u8; PAGE]).expect("footer");
        assert_eq!(f.finish().expect("finish"), 5 * PAGE as u64);
        assert!(
            stage_paths(&path).iter().all(|p| p.exists()),
            "kept until remove_stage"
        );
        f.remove_stage(&crate::io::PosixFs).expect("remove stage");
        assert!(
            stage_paths(&path).iter().all(|p| !p.exists()),
            "the staging files are removed"
        );
        assert_eq!(read(&path).len(), 5 * PAGE);
    }

    #[test]
    fn staged_bytes_are_readable_and_make_durable_writes_them_all() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, mut f) = after_a_first_chunk(&dir, 11);
        assert_eq!(
            f.staged_range(0, 10),
            Some(&[1u8; 10][..]),
            "the chunk before stays readable until its slot is reused"
        );
        f.append(&[4u8; 300]).expect("v1");
        f.append(&[5u8; 200]).expect("v2");
        let base = PAGE as u64;
        assert_eq!(f.staged_range(base, 300), Some(&[4u8; 300][..]));
        assert_eq!(f.staged_range(base + 300, 200), Some(&[5u8; 200][..]));
        assert_eq!(f.staged_range(base + 300, 201), None, "past the staged end");
        assert_eq!(f.staged_range(u64::MAX, 2), None);
        assert_eq!(read(&path).len(), PAGE, "nothing of the chunk written yet");
        assert_eq!(f.make_durable().expect("durable"), 2 * PAGE as u64);
        let on_disk = read(&path);
        assert_eq!(on_disk.len(), 2 * PAGE);
        assert_eq!(&on_disk[PAGE..PAGE + 300], &[4u8; 300]);
        assert_eq!(&on_disk[PAGE + 300..PAGE + 500], &[5u8; 200]);
        // Still staged (and readable) after the flush.
        assert_eq!(f.staged_range(base, 300), Some(&[4u8; 300][..]));
        f.remove_stage(&crate::io::PosixFs).expect("remove");
        assert!(stage_paths(&path).iter().all(|p| !p.exists()));
    }

    #[test]
    fn a_crash_leaves_staged_bytes_that_apply_stage_restores() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, mut f) = after_a_first_chunk(&dir, 9);
        f.append(&[5u8; 300]).expect("v1");
        f.append(&[6u8; 200]).expect("v2");
        // A kill -9 now: the staging mappings are in the page cache, the
        // blob file has only the first page.
        std::mem::forget(f);
        assert_eq!(read(&path).len(), PAGE);
        let out = apply_stage(&crate::io::PosixFs, &path, 9).expect("apply");
        // The chunk before, whose write completed: not copied.
        assert_eq!(out, first_page_written_then_applied(500));
        let b = read(&path);
        assert_eq!(&b[..PAGE], &[1u8; PAGE]);
        assert_eq!(&b[PAGE..PAGE + 300], &[5u8; 300]);
        assert_eq!(&b[PAGE + 300..PAGE + 500], &[6u8; 200]);
        assert_eq!(
            apply_stage(&crate::io::PosixFs, &path, 9).expect("again"),
            vec![]
        );
    }

    /// A slot whose chunk write completed is recorded as written and not
    /// copied again; one whose write may not have happened is copied; a
    /// version 1 header (no flags) is read as not written.
    #[test]
    fn only_slots_not_known_written_are_copied() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, mut f) = after_a_first_chunk(&dir, 12);
        f.append(&[7u8; 100]).expect("v");
        std::mem::forget(f);
        let [first, current, ..] = stage_paths(&path);
        let first_bytes = read(&first);
        let staged =
            parse_stage(&first_bytes, 12, &crate::io::PosixFs.boot_id()).expect("first slot");
        assert!(staged.written, "its write was waited for");
        assert!(
            !parse_stage(&read(&current), 12, &crate::io::PosixFs.boot_id())
                .expect("current")
                .written
        );
        // Zero the written chunk in the file: a copy would bring it back.
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.write_all_at(&[0u8; PAGE], 0).expect("zero");
        let out = apply_stage(&crate::io::PosixFs, &path, 12).expect("apply");
        assert_eq!(out, first_page_written_then_applied(100));
        let b = read(&path);
        assert_eq!(&b[..PAGE], &[0u8; PAGE], "the written slot was not copied");
        assert_eq!(&b[PAGE..PAGE + 100], &[7u8; 100]);

        // The same slot under a version 1 header: copied.
        let (path, mut f) = after_a_first_chunk(&dir, 13);
        f.append(&[8u8; 10]).expect("v");
        std::mem::forget(f);
        let [first, ..] = stage_paths(&path);
        let mut v1 = read(&first);
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        let c = crc32c::crc32c(&v1[..HEADER_LEN_V1]);
        v1[HEADER_LEN_V1..HEADER_LEN_V1 + 4].copy_from_slice(&c.to_le_bytes());
        std::fs::write(&first, &v1).expect("write");
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.write_all_at(&[0u8; PAGE], 0).expect("zero");
        let out = apply_stage(&crate::io::PosixFs, &path, 13).expect("apply");
        assert_eq!(
            out[0],
            StageOutcome::Applied {
                offset: 0,
                bytes: PAGE as u64
            }
        );
        assert_eq!(&read(&path)[..PAGE], &[1u8; PAGE], "copied back");
        // An unknown version is ignored, not guessed at.
        let (path, f) = after_a_first_chunk(&dir, 14);
        std::mem::forget(f);
        let [first, ..] = stage_paths(&path);
        let mut v9 = read(&first);
        v9[8..12].copy_from_slice(&9u32.to_le_bytes());
        std::fs::write(&first, &v9).expect("write");
        assert!(matches!(
            apply_stage(&crate::io::PosixFs, &path, 14).expect("apply").as_slice(),
            [StageOutcome::Ignored(why)] if why.contains("version 9")
        ));
    }

    /// Applies `change` to both header copies of a version 3 staging file
    /// and gives each its CRC again.
    fn both_copies(bytes: &[u8], change: impl Fn(&mut [u8])) -> Vec<u8> {
        let mut b = bytes.to_vec();
        for at in [0, COPY_STRIDE] {
            let h = &mut b[at..at + HEADER_LEN + 4];
            change(h);
            let c = crc32c::crc32c(&h[..HEADER_LEN]);
            h[HEADER_LEN..].copy_from_slice(&c.to_le_bytes());
        }
        b
    }

    #[test]
    fn a_damaged_or_foreign_staging_file_is_ignored() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, mut f) = after_a_first_chunk(&dir, 11);
        f.append(&[4u8; 64]).expect("v");
        std::mem::forget(f);
        // The first slot's chunk is in the file; only the current one is
        // tried here.
        let [first, stage, unused2, unused3] = stage_paths(&path);
        std::fs::remove_file(&first).expect("remove");
        for unused in [unused2, unused3] {
            assert!(
                matches!(
                    parse_stage(&read(&unused), 11, &crate::io::PosixFs.boot_id()),
                    Ok(Staged { data: [], .. })
                ),
                "nothing staged in a slot not used yet"
            );
            std::fs::remove_file(&unused).expect("remove");
        }
        let good = read(&stage);
        // Written in another boot (a power loss restarted the machine): its
        // pages may be any mix of old and new.
        let other_boot = both_copies(&good, |h| h[40] ^= 1);
        std::fs::write(&stage, &other_boot).expect("write");
        assert!(matches!(
            apply_stage(&crate::io::PosixFs, &path, 11).expect("apply").as_slice(),
            [StageOutcome::Ignored(why)] if why.contains("restarted")
        ));
        assert_eq!(read(&path).len(), PAGE, "the blob file is untouched");
        // Both copies damaged.
        let mut damaged = good.clone();
        damaged[25] ^= 1;
        damaged[COPY_STRIDE + 25] ^= 1;
        std::fs::write(&stage, &damaged).expect("write");
        assert!(matches!(
            apply_stage(&crate::io::PosixFs, &path, 11).expect("apply").as_slice(),
            [StageOutcome::Ignored(why)] if why.contains("checksum")
        ));
        // A staging file of another blob file.
        std::fs::write(&stage, &good).expect("write");
        assert!(matches!(
            apply_stage(&crate::io::PosixFs, &path, 12).expect("apply").as_slice(),
            [StageOutcome::Ignored(why)] if why.contains("stages blob file 11")
        ));
        assert_eq!(read(&path).len(), PAGE, "the blob file is untouched");
        // One copy damaged: the other is used, and the open is told. The
        // newer copy holds the append's count (64); the older one the count
        // before it (nothing staged).
        let mut applied = Vec::new();
        for at in [0, COPY_STRIDE] {
            let mut one = good.clone();
            one[at + 30] ^= 1;
            std::fs::write(&stage, &one).expect("write");
            match apply_stage(&crate::io::PosixFs, &path, 11)
                .expect("apply")
                .as_slice()
            {
                [StageOutcome::TornCopy(why), rest @ ..] if why.contains("checksum") => applied
                    .push(match rest {
                        [] => 0,
                        [StageOutcome::Applied { bytes, .. }] => *bytes,
                        other => panic!("{other:?}"),
                    }),
                other => panic!("{other:?}"),
            }
        }
        applied.sort_unstable();
        assert_eq!(applied, [0, 64]);
    }

    /// A `kill -9` in the middle of a header update, simulated at every
    /// byte: the copy being written holds a prefix (or, for a copy stored
    /// back to front, a suffix) of its new bytes and the rest of its old
    /// ones. The open applies either the count before the update or the
    /// count after it, never nothing (version 2, one header in place,
    /// ignored the whole slot: every acknowledged value staged in it was
    /// lost, which `tests/blob_crash.rs` caught about once in 800 kills).
    #[test]
    fn a_header_update_torn_anywhere_keeps_the_staged_values() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, mut f) = after_a_first_chunk(&dir, 15);
        f.append(&[4u8; 300]).expect("v1");
        let [first, stage, unused2, unused3] = stage_paths(&path);
        let before = read(&stage);
        f.append(&[5u8; 200]).expect("v2");
        let after = read(&stage);
        std::mem::forget(f);
        for p in [first, unused2, unused3] {
            std::fs::remove_file(&p).expect("remove");
        }
        let changed: Vec<usize> = (0..PAGE).filter(|&i| before[i] != after[i]).collect();
        let (lo, hi) = (changed[0], changed[changed.len() - 1]);
        assert!(
            hi - lo < HEADER_LEN + 4,
            "one update changes one copy ({lo}..={hi})"
        );
        let copy = lo / COPY_STRIDE * COPY_STRIDE;
        for k in 0..=HEADER_LEN + 4 {
            for front_to_back in [true, false] {
                let mut torn = before.clone();
                let range = if front_to_back {
                    copy..copy + k
                } else {
                    copy + HEADER_LEN + 4 - k..copy + HEADER_LEN + 4
                };
                torn[range.clone()].copy_from_slice(&after[range]);
                // The second value's bytes are staged either way.
                torn[PAGE..].copy_from_slice(&after[PAGE..]);
                let staged =
                    parse_stage(&torn, 15, &crate::io::PosixFs.boot_id()).unwrap_or_else(|e| {
                        panic!("torn after {k} bytes (front to back: {front_to_back}): {e}")
                    });
                assert_eq!(staged.base, PAGE as u64);
                let n = staged.data.len();
                assert!(
                    n == 300 || n == 500,
                    "torn after {k} bytes (front to back: {front_to_back}): {n} bytes"
                );
                assert_eq!(staged.data[..300], [4u8; 300]);
                let h = copy..copy + HEADER_LEN + 4;
                let whole = torn[h.clone()] == before[h.clone()] || torn[h.clone()] == after[h];
                assert_eq!(staged.torn.is_none(), whole, "torn after {k} bytes");
                assert_eq!(n == 500, torn[..PAGE] == after[..PAGE]);
            }
        }
        // And the open copies what the header says.
        std::fs::write(&stage, &after).expect("write");
        assert_eq!(
            apply_stage(&crate::io::PosixFs, &path, 15).expect("apply"),
            [StageOutcome::Applied {
                offset: PAGE as u64,
                bytes: 500
            }]
        );
        assert_eq!(&read(&path)[PAGE + 300..PAGE + 500], &[5u8; 200]);
    }

    /// Chunks go round the slots, each written in the background while the
    /// next are staged; a value of any of the last `SLOTS - 1` chunks reads
    /// from staging; dropping the file with writes in flight waits for them
    /// (a write's buffer is the slot's mapping, which the drop unmaps);
    /// `make_durable` rewrites every live slot.
    #[test]
    fn chunks_go_round_the_slots_and_a_drop_waits_for_the_writes_in_flight() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("000013.blob");
        let chunk = |k: usize| vec![(k % 250) as u8 + 1; 64 * PAGE];
        let mut f =
            StagedFile::create(&crate::io::PosixFs, &path, 13, 64 * PAGE, &ChunkRing::new())
                .expect("create");
        let slots = SLOTS as u64;
        for k in 0..6 {
            f.append(&chunk(k)).expect("append");
            f.end_chunk().expect("end");
            let size = (64 * PAGE) as u64;
            let k = k as u64;
            assert!(f.writer.in_flight() < SLOTS);
            for back in 0..slots - 1 {
                if let Some(j) = k.checked_sub(back) {
                    assert_eq!(
                        f.staged_range(j * size, 10),
                        Some(&chunk(j as usize)[..10]),
                        "chunk {j} is still staged after chunk {k}"
                    );
                }
            }
            if let Some(j) = k.checked_sub(slots - 1) {
                assert_eq!(f.staged_range(j * size, 10), None, "reused slot");
                assert!(
                    f.readable_len() >= (j + 1) * size,
                    "chunk {j} is in the file"
                );
            }
        }
        f.append(&[0xee; 100]).expect("partial");
        // Dropped with the last chunk's write in flight.
        drop(f);
        let on_disk = read(&path);
        assert_eq!(on_disk.len(), 6 * 64 * PAGE);
        for k in 0..6 {
            let at = k * 64 * PAGE;
            assert!(
                on_disk[at..at + 64 * PAGE]
                    .iter()
                    .all(|&b| b == chunk(k)[0]),
                "chunk {k}"
            );
        }
        // make_durable after the chunks before's writes "failed": every
        // live slot is written again, the partial one padded.
        let path = dir.path().join("000014.blob");
        let mut f = StagedFile::create(&crate::io::PosixFs, &path, 14, PAGE, &ChunkRing::new())
            .expect("create");
        for k in 0..SLOTS - 1 {
            f.append(&[k as u8 + 1; PAGE]).expect("a");
            f.end_chunk().expect("end");
        }
        f.append(&[0xcc; 10]).expect("b");
        // The file loses what the background writes put there.
        f.wait_previous().expect("written");
        std::fs::write(&path, b"").expect("truncate");
        let end = SLOTS * PAGE;
        assert_eq!(f.make_durable().expect("durable"), end as u64);
        let on_disk = read(&path);
        assert_eq!(on_disk.len(), end);
        for k in 0..SLOTS - 1 {
            assert!(
                on_disk[k * PAGE..(k + 1) * PAGE]
                    .iter()
                    .all(|&b| b == k as u8 + 1)
            );
        }
        assert_eq!(&on_disk[end - PAGE..end - PAGE + 10], &[0xcc; 10]);
    }
}
