//! [`BlobLane`]: one write lane of the blob write path
//! (`docs/blob-files.md`, "Staging and direct IO"). Writers copy each value
//! into the staging mapping of the lane's open blob file
//! ([`StagedFile`]) and get a [`BlobPointer`] back; at a chunk's end the
//! lane appends the chunk's entries and trailer and the whole chunk goes to
//! the blob file with one direct write, in the background while the next
//! chunk is staged (submitted by the lanes' `varve-blob-io` thread,
//! [`ChunkRing`], one per [`BlobWriteLanes`], never by the writer, whose
//! thread may exit with the write in flight); at `file_size` it seals the file
//! (footer, fdatasync) and opens the next one. On a file system whose
//! paths are not OS files (the fault-injecting one) it appends through
//! `WritableFile` instead.
//!
//! Thread-safety: `Send + Sync`; one mutex per lane, held for the copy of
//! one value (and, once per chunk, to start its direct write). `fdatasync` runs on a
//! second handle, outside the mutex ([`BlobLane::sync`]). Invariants: a
//! pointer is returned only after its value was copied into the staging
//! mapping (page cache: it survives `kill -9`); the open file always holds
//! its header and whole chunks, the staging slots the current chunk and
//! the ones before it whose writes may be in flight; a file's number is registered (through [`BlobFiles`]) before any pointer
//! into it is handed out; `readable` never claims bytes the blob file does
//! not hold.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::chunk_ring::ChunkRing;
use super::file_writer::BlobFileMeta;
use super::format::{BlobFooter, BlobHeader, BlobPointer, ChunkEntries, Creator, PAGE, value_crc};
use super::stage::StagedFile;
use crate::error::{Error, Result};
use crate::filenames::blob_file_path;
use crate::io::{FileSystem, InPlaceFile, WritableFile};
use crate::util::memory::{MemoryGauge, Reservation};

/// Where a lane gets file numbers and reports sealed files (the version
/// set, in the engine).
pub(crate) trait BlobFiles: Send + Sync {
    /// A fresh file number, recorded as an open blob file before it is
    /// returned.
    fn open_blob_file(&self) -> Result<u64>;
    /// A lane sealed a file: it is complete and durable.
    fn sealed_blob_file(&self, meta: BlobFileMeta) -> Result<()>;
    /// A file given up after a failure holds every value staged for it
    /// durably, in `size` bytes, no lane appends to it again, and the
    /// tables point to every value of it still in use: it is closed
    /// without a footer (state 2, like a file a crash left open).
    fn closed_failed_blob_file(&self, number: u64, size: u64) -> Result<()>;
}

/// The calling thread's own lane number (before reducing it modulo the
/// lane count): a hash of its thread id, computed once per thread.
fn home_lane() -> usize {
    thread_local! {
        static HOME: usize = {
            use std::hash::{Hash, Hasher};
            let mut h = std::hash::DefaultHasher::new();
            std::thread::current().id().hash(&mut h);
            h.finish() as usize
        };
    }
    HOME.with(|h| *h)
}

/// The lane of key `key` among `lanes` when lanes split the key space:
/// its first 8 bytes (big-endian, zero-padded) scaled to `0..lanes`, so
/// lane `i` takes the `i`-th of `lanes` equal slices of the 64-bit space
/// and keys in order map to lanes in order.
pub(crate) fn key_lane(key: &[u8], lanes: usize) -> usize {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    let lane = (u128::from(u64::from_be_bytes(b)) * lanes as u128) >> 64;
    debug_assert!((lane as usize) < lanes.max(1));
    lane as usize
}

/// Sizes of a lane's chunks and files, and how writers pick lanes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaneOptions {
    /// A chunk is closed before a value would make it larger (whole pages).
    pub chunk_size: usize,
    /// A file is sealed once it reaches this size.
    pub file_size: u64,
    /// Lanes split the key space ([`key_lane`]) instead of taking the
    /// writer's own or first free lane.
    pub by_key: bool,
}

impl LaneOptions {
    /// Page-cache bytes one lane's staging slots map while it has a file
    /// open: [`SLOTS`](super::stage::SLOTS) files of a header page and a
    /// chunk plus a page (a slot grows past it only for a value larger
    /// than a chunk, while that value is staged).
    pub(crate) fn staging_bytes(&self) -> usize {
        super::stage::SLOTS * (self.chunk_size + 2 * PAGE)
    }
}

impl Default for LaneOptions {
    fn default() -> Self {
        LaneOptions {
            // One direct write per 1 MiB: a 1M-value fill of 4 KiB values
            // ran 18% faster than with 256 KiB chunks (fewer writes, each
            // pinning pages and kicking the device once) and no faster
            // with 2 MiB; a lane's staging slots stay 4 MiB of the page
            // cache.
            chunk_size: 1 << 20,
            file_size: 256 << 20,
            by_key: false,
        }
    }
}

/// How far a lane had appended when a flush began: what the flush must
/// make durable before its tables' pointers may outlive the WAL
/// ([`BlobLane::sync_to`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// The lane holds a file given up after a failure: its values are made
    /// durable as [`BlobLane::sync`] does.
    Failed,
    /// The bytes below `len` of open file `number` (the file's length
    /// then).
    At { number: u64, len: u64 },
}

/// How long [`BlobLane::sync_to`] lets the lane go between looks at the
/// chunk writes it waits for.
const MARK_POLL: std::time::Duration = std::time::Duration::from_micros(500);

/// One write lane.
#[derive(Debug)]
pub(crate) struct BlobLane {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    opts: LaneOptions,
    open: Mutex<Option<OpenFile>>,
    /// Files given up after a failed write or sync (see
    /// [`BlobLane::close_failed`]): kept, with their staging areas, so that
    /// their values stay readable and nothing acknowledged is lost.
    failed: Mutex<Vec<OpenFile>>,
    /// `failed` is not empty: every blob read asks every lane for staged
    /// bytes, and only this load stands between it and the mutex.
    has_failed: std::sync::atomic::AtomicBool,
    /// A put failed since the last [`reopen_after_failure`](BlobLane::reopen_after_failure).
    put_failed: std::sync::atomic::AtomicBool,
    /// The open file's number (0: none) and how many of its bytes the
    /// blob file itself holds: a read past that takes the staged bytes
    /// ([`BlobLane::staged_value`]).
    readable: (AtomicU64, AtomicU64),
    /// Writers in the lane or waiting for its mutex
    /// ([`BlobWriteLanes::put`]): another writer moves on to a lane
    /// without one. Holders that are not writers (a sync, a reader of
    /// staged bytes) do not count: they hold the mutex briefly, and a
    /// writer that left its lane for each of them would trickle values
    /// into another lane's file and keep it open.
    writers: AtomicUsize,
    /// Value bytes appended by this lane since it was made (written under
    /// the mutex): the lanes' sum is how far the keyspace's writes moved
    /// on while a file stayed open ([`BlobLane::seal_if_idle`]).
    appended: AtomicU64,
    /// With `Options::memory_budget`: the blob-staging part, shared by the
    /// lanes of every keyspace. A lane reserves its staging slots from it
    /// before it opens a file and gives them back when the file is gone;
    /// a value that finds no room stays inline (`None` from a put).
    room: Option<Arc<MemoryGauge>>,
    /// Submits the chunk writes of this lane's files (and of the other
    /// lanes of its keyspace) on its own thread.
    ring: Arc<ChunkRing>,
}

/// A writer's place in a lane: counted in `BlobLane::writers` until
/// dropped.
struct InLane<'a>(&'a AtomicUsize);

impl Drop for InLane<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How a lane appends to its file.
#[derive(Debug)]
enum LaneFile {
    /// Staged in a mapping, written in whole chunks with direct IO (OS
    /// files: the fast path).
    Staged(Box<StagedFile>),
    /// Plain appends through the database's file system, for one whose
    /// paths are not OS files (the fault-injecting one in tests).
    Plain(Box<dyn WritableFile>),
}

impl LaneFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        match self {
            LaneFile::Staged(f) => f.append(data),
            LaneFile::Plain(f) => f.append(data),
        }
    }

    fn len(&self) -> u64 {
        match self {
            LaneFile::Staged(f) => f.len(),
            LaneFile::Plain(f) => f.len(),
        }
    }

    /// The appended bytes end a chunk (on a page boundary).
    fn end_chunk(&mut self) -> Result<()> {
        match self {
            LaneFile::Staged(f) => f.end_chunk(),
            LaneFile::Plain(_) => Ok(()),
        }
    }

    /// Bytes a reader of the blob file finds there.
    fn readable_len(&self) -> u64 {
        match self {
            LaneFile::Staged(f) => f.readable_len(),
            LaneFile::Plain(f) => f.len(),
        }
    }

    /// The `len` bytes at `offset` if they are still staged (a plain file
    /// holds every appended byte).
    fn staged(&self, offset: u64, len: usize) -> Option<&[u8]> {
        match self {
            LaneFile::Staged(f) => f.staged_range(offset, len),
            LaneFile::Plain(_) => None,
        }
    }

    /// Every appended byte written and durable; the file's length.
    fn make_durable(&mut self) -> Result<u64> {
        match self {
            LaneFile::Staged(f) => f.make_durable(),
            LaneFile::Plain(f) => {
                f.sync_data()?;
                Ok(f.len())
            }
        }
    }
}

#[derive(Debug)]
struct OpenFile {
    file: LaneFile,
    number: u64,
    chunk: ChunkEntries,
    /// File offset of the current chunk.
    chunk_start: u64,
    chunks: u64,
    values: u64,
    /// `values` at the last [`BlobLane::seal_if_idle`]: unchanged since,
    /// the lane is idle.
    values_at_mark: u64,
    /// The lanes' appended bytes at the first [`BlobLane::seal_if_idle`]
    /// that found this file open (`None`: none has yet).
    lanes_appended_at_first_mark: Option<u64>,
    value_bytes: u64,
    /// Bytes known durable (fdatasynced): a sync with nothing appended
    /// since does no IO.
    synced: u64,
    /// The staging slots' share of the memory budget, held for as long as
    /// the file is (open, or kept after a failure); given back on drop.
    _staging: Option<Reservation>,
}

impl OpenFile {
    fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        opts: &LaneOptions,
        staging: Option<Reservation>,
        ring: &Arc<ChunkRing>,
    ) -> Result<OpenFile> {
        let path = blob_file_path(dir, number);
        // Staged and written in place on every file system that has
        // in-place files (the OS's, and the fault-injecting one over it);
        // plain appends elsewhere.
        let staged = StagedFile::create(fs, &path, number, opts.chunk_size + PAGE, ring);
        let mut file = match staged {
            Ok(f) => LaneFile::Staged(Box::new(f)),
            Err(e) if e.is_unsupported() => LaneFile::Plain(fs.create_writable(&path)?),
            Err(e) => return Err(e),
        };
        // The directory entry is durable before any pointer into the file
        // can be (a synced write's pointer relies on the file existing).
        fs.sync_dir(dir)?;
        let header = BlobHeader {
            file_number: number,
            chunk_size: opts.chunk_size as u32,
            creator: Creator::WriteLane,
        };
        file.append(&header.encode())?;
        file.end_chunk()?;
        Ok(OpenFile {
            file,
            number,
            chunk: ChunkEntries::default(),
            chunk_start: PAGE as u64,
            chunks: 0,
            values: 0,
            values_at_mark: 0,
            lanes_appended_at_first_mark: None,
            value_bytes: 0,
            synced: 0,
            _staging: staging,
        })
    }

    fn close_chunk(&mut self) -> Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let tail = self.chunk.close();
        self.file.append(&tail)?;
        self.file.end_chunk()?;
        self.chunks += 1;
        self.chunk_start = self.file.len();
        debug_assert_eq!(self.chunk_start % PAGE as u64, 0);
        Ok(())
    }

    /// Closes the last chunk, appends the footer, makes the file durable at
    /// exactly its length. On failure every staged byte stays staged (the
    /// file goes to the lane's failed files).
    fn seal(&mut self) -> Result<BlobFileMeta> {
        self.close_chunk()?;
        let footer = BlobFooter {
            chunk_count: self.chunks,
            value_count: self.values,
            value_bytes: self.value_bytes,
        };
        self.file.append(&footer.encode())?;
        let size = self.file.len();
        match &mut self.file {
            LaneFile::Plain(f) => f.sync_data()?,
            LaneFile::Staged(f) => {
                let written = f.finish()?;
                debug_assert_eq!(written, size);
            }
        }
        Ok(BlobFileMeta {
            number: self.number,
            size,
            value_count: self.values,
            value_bytes: self.value_bytes,
        })
    }

    /// Closes a file whose bytes are durable: its staging file goes.
    fn discard(self, fs: &dyn FileSystem) -> Result<()> {
        match self.file {
            LaneFile::Staged(f) => f.remove_stage(fs),
            LaneFile::Plain(_) => Ok(()),
        }
    }
}

impl BlobLane {
    /// A lane writing blob files into `dir`. It opens its first file on
    /// the first value.
    #[cfg(test)]
    pub(crate) fn new(fs: Arc<dyn FileSystem>, dir: &Path, opts: LaneOptions) -> BlobLane {
        BlobLane::with_room(fs, dir, opts, None, &ChunkRing::new())
    }

    /// A lane whose staging slots are reserved from `room` (the memory
    /// budget's blob-staging part) while it has a file, and whose chunk
    /// writes go through `ring` (shared by the lanes of a keyspace).
    pub(crate) fn with_room(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        opts: LaneOptions,
        room: Option<Arc<MemoryGauge>>,
        ring: &Arc<ChunkRing>,
    ) -> BlobLane {
        BlobLane {
            fs,
            dir: dir.to_path_buf(),
            opts,
            open: Mutex::new(None),
            failed: Mutex::new(Vec::new()),
            has_failed: std::sync::atomic::AtomicBool::new(false),
            put_failed: std::sync::atomic::AtomicBool::new(false),
            readable: (AtomicU64::new(0), AtomicU64::new(0)),
            writers: AtomicUsize::new(0),
            appended: AtomicU64::new(0),
            room,
            ring: Arc::clone(ring),
        }
    }

    /// The memory budget's share for a new file's staging slots:
    /// `Some(None)` without a budget, `None` when the budget has no room.
    fn reserve_staging(&self) -> Option<Option<Reservation>> {
        match &self.room {
            Some(room) => room.try_reserve(self.opts.staging_bytes()).map(Some),
            None => Some(None),
        }
    }

    /// Enters the lane as a writer if no other writer is in it.
    fn enter_if_free(&self) -> Option<InLane<'_>> {
        self.writers
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
            .ok()
            .map(|_| InLane(&self.writers))
    }

    /// Enters the lane as a writer, however many are in it.
    fn enter(&self) -> InLane<'_> {
        self.writers.fetch_add(1, Ordering::AcqRel);
        InLane(&self.writers)
    }

    /// Records what a reader of the open file finds in it (under the
    /// mutex). The length is stored before the number, so a reader that
    /// sees the new number never sees the old file's length.
    fn publish(&self, open: Option<&OpenFile>) {
        let (number, len) = open.map_or((0, 0), |f| (f.number, f.file.readable_len()));
        self.readable.1.store(len, Ordering::Release);
        self.readable.0.store(number, Ordering::Release);
    }

    /// The bytes of the value `p` names if this lane still stages them
    /// (its open file's current chunk, or a file given up after a
    /// failure); `None` when the blob file itself holds them. A reader
    /// never writes.
    pub(crate) fn staged_value(&self, p: &BlobPointer) -> Option<Vec<u8>> {
        let len = p.length as usize;
        if self.readable.0.load(Ordering::Acquire) == p.file_number {
            // (A damaged pointer must not overflow: it then is not staged.)
            let end = p.offset.saturating_add(u64::from(p.length));
            if self.readable.1.load(Ordering::Acquire) >= end {
                return None;
            }
            let open = self.open.lock();
            if let Some(f) = open.as_ref()
                && f.number == p.file_number
            {
                return f.file.staged(p.offset, len).map(<[u8]>::to_vec);
            }
        }
        // Set before a file is given up and published gone (Release, read
        // after the Acquire loads above): a reader that no longer sees the
        // file open sees it here.
        if !self.has_failed.load(Ordering::Acquire) {
            return None;
        }
        let failed = self.failed.lock();
        failed
            .iter()
            .find(|f| f.number == p.file_number)
            .and_then(|f| f.file.staged(p.offset, len).map(<[u8]>::to_vec))
    }

    /// Gives up the open file after a failed step (its bookkeeping may be
    /// behind its bytes): it goes to the failed files, keeping its staged
    /// values readable, until [`close_failed`](Self::close_failed).
    fn give_up(&self, open: &mut Option<OpenFile>) {
        if let Some(f) = open.take() {
            self.failed.lock().push(f);
            self.has_failed.store(true, Ordering::Release);
        }
        self.publish(None);
    }

    /// Makes every given-up file's values durable (each file once: no
    /// value is appended to it after the give-up); see [`sync`](Self::sync).
    fn sync_failed_files(&self) -> Result<()> {
        let mut failed = self.failed.lock();
        for f in failed.iter_mut() {
            let len = f.file.len();
            if f.synced < len {
                f.file.make_durable()?;
                f.synced = len;
            }
        }
        Ok(())
    }

    /// Closes the files given up after failures (`Db::resume`, once the
    /// disk has room): each is written out from its staging area and made
    /// durable; returns their numbers and sizes. Stops at the first
    /// failure, keeping that file and the rest for the next call.
    pub(crate) fn close_failed(&self) -> Result<Vec<(u64, u64)>> {
        let mut failed = self.failed.lock();
        let mut closed = Vec::new();
        while let Some(f) = failed.last_mut() {
            let size = f.file.make_durable()?;
            let number = f.number;
            if let Some(f) = failed.pop() {
                // Durable: the staging file has done its job (one left
                // behind is removed by the next open).
                let _ = f.discard(self.fs.as_ref());
            }
            closed.push((number, size));
        }
        // Under the mutex, so no give_up's store can be lost.
        self.has_failed.store(false, Ordering::Release);
        Ok(closed)
    }

    /// Appends `value` (written for `key`); returns its pointer once the
    /// value is in the page cache of its blob file. (Tests: a lane without
    /// a memory budget always has room.)
    #[cfg(test)]
    pub(crate) fn put(
        &self,
        files: &dyn BlobFiles,
        key: &[u8],
        value: &[u8],
    ) -> Result<BlobPointer> {
        let crc = value_crc(value);
        self.put_in(&mut self.open.lock(), files, key, value, crc)?
            .ok_or_else(|| Error::InvalidArgument("no staging room".into()))
    }

    /// [`put`](Self::put) under the lane's mutex (`open`); `None` (nothing
    /// done, nothing failed) when the lane needs a new file and the memory
    /// budget has no room for its staging slots.
    fn put_in(
        &self,
        open: &mut Option<OpenFile>,
        files: &dyn BlobFiles,
        key: &[u8],
        value: &[u8],
        crc: u32,
    ) -> Result<Option<BlobPointer>> {
        debug_assert_eq!(crc, value_crc(value));
        let put = self.put_locked(open, files, key, value, crc);
        if put.is_err() {
            // A failed step may leave the file's bookkeeping behind its
            // bytes: the lane gives the file up. Its values so far stay in
            // the file and its staging area; `Db::resume` (or, after a
            // crash, the next open) writes them out and closes it.
            self.give_up(open);
            self.put_failed.store(true, Ordering::Release);
        }
        put
    }

    fn put_locked(
        &self,
        open: &mut Option<OpenFile>,
        files: &dyn BlobFiles,
        key: &[u8],
        value: &[u8],
        crc: u32,
    ) -> Result<Option<BlobPointer>> {
        let full = open.as_ref().is_some_and(|f| {
            f.values > 0
                && f.chunk_start + (f.chunk.size_with(key.len(), value.len()) as u64)
                    > self.opts.file_size
        });
        if full && let Some((_, f)) = self.seal_locked(open, files)? {
            // Sealed and recorded: a staging file left by a failure here
            // is removed by the next open.
            let _ = f.discard(self.fs.as_ref());
        }
        let f = match open.as_mut() {
            Some(f) => f,
            None => {
                // The staging slots' room first: without it the value stays
                // inline and no file is registered.
                let Some(staging) = self.reserve_staging() else {
                    return Ok(None);
                };
                open.insert(OpenFile::create(
                    self.fs.as_ref(),
                    &self.dir,
                    files.open_blob_file()?,
                    &self.opts,
                    staging,
                    &self.ring,
                )?)
            }
        };
        if !f.chunk.is_empty() && f.chunk.size_with(key.len(), value.len()) > self.opts.chunk_size {
            f.close_chunk()?;
        }
        debug_assert_eq!(f.file.len(), f.chunk_start + f.chunk.values_len() as u64);
        f.file.append(value)?;
        let offset = f.chunk.add(key, value.len(), crc);
        f.values += 1;
        f.value_bytes += value.len() as u64;
        // Written only under the mutex: a plain add, read by `seal_idle`.
        self.appended.store(
            self.appended.load(Ordering::Relaxed) + value.len() as u64,
            Ordering::Relaxed,
        );
        let p = BlobPointer {
            file_number: f.number,
            offset: f.chunk_start + u64::from(offset),
            length: value.len() as u32,
            crc,
        };
        self.publish(open.as_ref());
        Ok(Some(p))
    }

    /// Makes every value appended so far durable (the open file's
    /// `fdatasync`, run outside the lane's mutex). Sealed files are durable
    /// already.
    ///
    /// A file the lane gave up after a failed step is made durable too
    /// (its values appended before the failure, once): a `sync` write
    /// placed after a record pointing into it relies on them, and recovery
    /// ends the replay at a record whose value a power loss took. If that
    /// fails (the disk is still full, the machine is going down), so does
    /// the sync.
    pub(crate) fn sync(&self) -> Result<()> {
        let mut open = self.open.lock();
        // Under the mutex: a give-up that happened before this sync is
        // seen here (it sets the flag under the same mutex).
        if self.has_failed.load(Ordering::Acquire) {
            self.sync_failed_files()?;
        }
        let Some(f) = open.as_mut() else {
            return Ok(());
        };
        let (number, len) = (f.number, f.file.len());
        if len <= f.synced {
            return Ok(()); // nothing appended since the last sync
        }
        let handle = match &mut f.file {
            LaneFile::Staged(s) => s
                .flush_partial()
                .map(|()| Some((s.sync_handle(), s.path().to_path_buf()))),
            // No second handle to sync through: under the mutex.
            LaneFile::Plain(w) => w.sync_data().map(|()| {
                f.synced = len;
                None
            }),
        };
        let handle = match handle {
            Ok(h) => h,
            Err(e) => {
                self.give_up(&mut open);
                return Err(e);
            }
        };
        self.publish(open.as_ref());
        drop(open);
        match handle {
            Some((h, path)) => self.sync_file_outside(&h, &path, number, len),
            None => Ok(()),
        }
    }

    /// `fdatasync`s open file `number` through its second handle `h`,
    /// outside the lane's mutex, once its bytes below `len` are written:
    /// on success they are recorded durable, on failure the file is given
    /// up (if still open).
    fn sync_file_outside(
        &self,
        h: &Arc<dyn InPlaceFile>,
        path: &Path,
        number: u64,
        len: u64,
    ) -> Result<()> {
        let _ = path;
        let synced = h.sync_data();
        let mut open = self.open.lock();
        match synced {
            Ok(()) => {
                if let Some(f) = open.as_mut()
                    && f.number == number
                {
                    f.synced = f.synced.max(len);
                }
                Ok(())
            }
            Err(e) => {
                if open.as_ref().is_some_and(|f| f.number == number) {
                    self.give_up(&mut open);
                }
                Err(e)
            }
        }
    }

    /// Where the lane's appended bytes end now, if any of them is not
    /// durable yet (`None`: nothing to sync).
    pub(crate) fn mark(&self) -> Option<Mark> {
        let open = self.open.lock();
        // Under the mutex, as in `sync`: a give-up before this is seen.
        if self.has_failed.load(Ordering::Acquire) {
            return Some(Mark::Failed);
        }
        let f = open.as_ref()?;
        let len = f.file.len();
        (len > f.synced).then_some(Mark::At {
            number: f.number,
            len,
        })
    }

    /// Makes the bytes below `mark` durable, as [`sync`](Self::sync) makes
    /// every appended byte, but without holding up the lane's writers
    /// while the disk works.
    ///
    /// `sync` takes the lane's mutex for the writes in flight and for a
    /// direct write of the partial chunk, and the lane's writers wait all
    /// that time. A flush needs only the bytes appended before it began,
    /// which by the time its tables are built are usually in chunk writes
    /// that completed or are on their way. So: while the marked bytes are
    /// all handed to the blob file, look (briefly, under the mutex) at the
    /// writes that completed, let the lane go and look again in
    /// [`MARK_POLL`]; once they are all written, `fdatasync` the file
    /// outside the mutex. Marked bytes that are still only staged (a slow
    /// lane), a file given up after a failure and a plain (not staged)
    /// file take `sync` itself. A file sealed since the mark was made
    /// durable by its seal.
    pub(crate) fn sync_to(&self, mark: Mark) -> Result<()> {
        let Mark::At { number, len } = mark else {
            return self.sync();
        };
        let (handle, path) = loop {
            let mut open = self.open.lock();
            if self.has_failed.load(Ordering::Acquire) {
                drop(open);
                return self.sync();
            }
            let Some(f) = open.as_mut() else {
                return Ok(()); // sealed (durable) since the mark
            };
            if f.number != number || f.synced >= len {
                return Ok(());
            }
            let LaneFile::Staged(s) = &mut f.file else {
                drop(open);
                return self.sync();
            };
            if let Err(e) = s.reap() {
                self.give_up(&mut open);
                return Err(e);
            }
            if s.readable_len() >= len {
                let h = (s.sync_handle(), s.path().to_path_buf());
                self.publish(open.as_ref());
                break h;
            }
            if s.handed_off_len() < len {
                drop(open);
                return self.sync();
            }
            self.publish(open.as_ref());
            drop(open);
            std::thread::sleep(MARK_POLL);
        };
        self.sync_file_outside(&handle, &path, number, len)
    }

    /// After a put failed: opens the lane's next file now (registered, its
    /// staging slots allocated), so that `Db::resume` fails while the disk
    /// still has no room for it instead of letting writes meet the same
    /// failure again. Nothing to do for a lane whose puts did not fail.
    pub(crate) fn reopen_after_failure(&self, files: &dyn BlobFiles) -> Result<()> {
        if !self.put_failed.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut open = self.open.lock();
        // Without room in the memory budget for its staging slots the lane
        // stays without a file (the next put tries again, or keeps its
        // value inline).
        if open.is_none()
            && let Some(staging) = self.reserve_staging()
        {
            let number = files.open_blob_file()?;
            *open = Some(OpenFile::create(
                self.fs.as_ref(),
                &self.dir,
                number,
                &self.opts,
                staging,
                &self.ring,
            )?);
            self.publish(open.as_ref());
        }
        self.put_failed.store(false, Ordering::Release);
        Ok(())
    }

    /// Page-cache bytes this lane's staging slots map now: a full set
    /// while it has a file open (and one per file kept after a failure).
    pub(crate) fn staging_bytes(&self) -> usize {
        let open = usize::from(self.readable.0.load(Ordering::Acquire) != 0);
        let failed = if self.has_failed.load(Ordering::Acquire) {
            self.failed.lock().len()
        } else {
            0
        };
        (open + failed) * self.opts.staging_bytes()
    }

    /// True if this lane appends to blob file `number`.
    pub(crate) fn is_open_file(&self, number: u64) -> bool {
        self.readable.0.load(Ordering::Acquire) == number
    }

    /// True if blob file `number` is one this lane gave up after a failure
    /// (its values may be only in its staging area).
    pub(crate) fn is_failed_file(&self, number: u64) -> bool {
        self.has_failed.load(Ordering::Acquire)
            && self.failed.lock().iter().any(|f| f.number == number)
    }

    /// Seals the open file if no value was appended to it since the last
    /// call (each flush calls it), or if it is slow: the lanes together
    /// (`lanes_appended`, the sum of their [`appended`](Self::appended_bytes))
    /// appended more than `slow_after` bytes since the first call that
    /// found it open. Either file would otherwise stay open for as long as
    /// the trickle into it lasts, and a table whose oldest blob file is
    /// open is never rewritten by garbage collection
    /// (`compaction::picker::pick_blob_gc`): collection stalled at 64%
    /// garbage after a sustained overwrite, first behind an idle lane's
    /// file, then behind one that got a value now and then.
    pub(crate) fn seal_if_idle(
        &self,
        files: &dyn BlobFiles,
        lanes_appended: u64,
        slow_after: u64,
    ) -> Result<Option<BlobFileMeta>> {
        {
            let mut open = self.open.lock();
            let Some(f) = open.as_mut() else {
                return Ok(None);
            };
            let idle = f.values == f.values_at_mark;
            f.values_at_mark = f.values;
            let first = *f.lanes_appended_at_first_mark.get_or_insert(lanes_appended);
            debug_assert!(first <= lanes_appended, "the lanes' bytes only grow");
            let slow = lanes_appended.saturating_sub(first) > slow_after;
            if !idle && !slow {
                return Ok(None);
            }
        }
        // A value appended since is sealed with the file (the next put
        // opens a new one).
        self.seal(files)
    }

    /// Value bytes this lane appended since it was made.
    pub(crate) fn appended_bytes(&self) -> u64 {
        self.appended.load(Ordering::Relaxed)
    }

    /// Seals the open file (at close); `None` when the lane has none.
    pub(crate) fn seal(&self, files: &dyn BlobFiles) -> Result<Option<BlobFileMeta>> {
        let mut open = self.open.lock();
        let Some((meta, f)) = self.seal_locked(&mut open, files)? else {
            return Ok(None);
        };
        f.discard(self.fs.as_ref())?;
        Ok(Some(meta))
    }

    /// Seals the file `open` holds (footer, durable) and records it as
    /// sealed; then the lane has no open file, and the sealed file (its
    /// staging files still there) is returned for the caller to discard.
    /// The one place a lane seals, under its mutex. Any failure gives the
    /// file up: once the footer may be written, no value may be appended
    /// after it (a seal whose record failed, with the file kept open, had
    /// the next put append behind the footer), and `Db::resume` or the next
    /// open closes it.
    fn seal_locked(
        &self,
        open: &mut Option<OpenFile>,
        files: &dyn BlobFiles,
    ) -> Result<Option<(BlobFileMeta, OpenFile)>> {
        let Some(f) = open.as_mut() else {
            return Ok(None);
        };
        let sealed = f
            .seal()
            .and_then(|meta| files.sealed_blob_file(meta).map(|()| meta));
        let meta = match sealed {
            Ok(meta) => meta,
            Err(e) => {
                self.give_up(open);
                return Err(e);
            }
        };
        self.publish(None);
        Ok(open.take().map(|f| (meta, f)))
    }
}

/// Most threads [`BlobWriteLanes::sync_to_marks`] syncs lanes with.
const SYNC_THREADS: usize = 16;

/// Runs `job` on every item, on up to [`SYNC_THREADS`] threads at once
/// (this one and scoped helpers): the jobs' waits for the disk overlap.
/// Every item is taken even when a job fails; the first error is
/// returned. A helper that cannot be started leaves its share to the
/// others.
fn on_threads<T: Sync>(items: &[T], job: impl Fn(&T) -> Result<()> + Sync) -> Result<()> {
    if items.len() < 2 {
        return items.iter().try_for_each(job);
    }
    let next = AtomicUsize::new(0);
    let first: Mutex<Option<Error>> = Mutex::new(None);
    let work = || {
        while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
            if let Err(e) = job(item) {
                first.lock().get_or_insert(e);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..items.len().min(SYNC_THREADS) {
            let helper = std::thread::Builder::new()
                .name("varve-blob-sync".into())
                .spawn_scoped(s, work);
            if helper.is_err() {
                break;
            }
        }
        work();
    });
    debug_assert!(
        next.load(Ordering::Relaxed) >= items.len(),
        "every item was taken"
    );
    first.into_inner().map_or(Ok(()), Err)
}

/// The write lanes of a database: a writer takes the lane of its thread.
#[derive(Debug)]
pub(crate) struct BlobWriteLanes {
    lanes: Vec<BlobLane>,
    /// Values of at least this many bytes go to blob files (`usize::MAX`:
    /// none); a keyspace's options may change it while it is open.
    min_size: std::sync::atomic::AtomicUsize,
    /// Lanes split the key space (`LaneOptions::by_key`).
    by_key: bool,
    /// Files [`close_failed`](BlobWriteLanes::close_failed) wrote out,
    /// not yet recorded as closed ([`record_closed`](BlobWriteLanes::record_closed)).
    closed: Mutex<Vec<(u64, u64)>>,
}

impl BlobWriteLanes {
    /// Page-cache bytes the lanes' staging slots map now.
    pub(crate) fn staging_bytes(&self) -> usize {
        self.lanes.iter().map(BlobLane::staging_bytes).sum()
    }

    /// The most the lanes' staging slots map: every lane with a file open
    /// (files kept after a failed write come on top, until closed).
    pub(crate) fn staging_limit(&self) -> usize {
        self.lanes.iter().map(|l| l.opts.staging_bytes()).sum()
    }

    /// `count` lanes writing blob files into `dir`, for values of at least
    /// `min_size` bytes.
    #[cfg(test)]
    pub(crate) fn new(
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        count: usize,
        min_size: usize,
        opts: LaneOptions,
    ) -> Self {
        BlobWriteLanes::with_room(fs, dir, count, min_size, opts, None)
    }

    /// [`new`](Self::new), with each lane's staging slots reserved from
    /// `room` (the memory budget's blob-staging part, shared by every
    /// keyspace's lanes) while it has a file.
    pub(crate) fn with_room(
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        count: usize,
        min_size: usize,
        opts: LaneOptions,
        room: Option<Arc<MemoryGauge>>,
    ) -> Self {
        // One thread submits the chunk writes of all the lanes (started on
        // the first one, joined once the lanes and their files are gone).
        let ring = ChunkRing::new();
        BlobWriteLanes {
            lanes: (0..count.max(1))
                .map(|_| BlobLane::with_room(Arc::clone(fs), dir, opts, room.clone(), &ring))
                .collect(),
            min_size: std::sync::atomic::AtomicUsize::new(min_size),
            by_key: opts.by_key,
            closed: Mutex::new(Vec::new()),
        }
    }

    /// True if a value of `len` bytes goes to a blob file.
    pub(crate) fn takes(&self, len: usize) -> bool {
        len >= self.min_size.load(Ordering::Relaxed)
    }

    /// The smallest value that goes to a blob file (`usize::MAX`: none).
    pub(crate) fn min_size(&self) -> usize {
        self.min_size.load(Ordering::Relaxed)
    }

    /// From now on values of at least `min_size` bytes go to blob files
    /// (`None`: no value does; the open files stay until sealed).
    pub(crate) fn set_min_size(&self, min_size: Option<usize>) {
        self.min_size
            .store(min_size.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// Appends `value` through the calling thread's lane; `None` when that
    /// lane needs a new file and the memory budget has no room for its
    /// staging slots (the caller keeps the value inline).
    pub(crate) fn put(
        &self,
        files: &dyn BlobFiles,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<BlobPointer>> {
        // The CRC is computed before any lane's mutex is taken.
        let crc = value_crc(value);
        let n = self.lanes.len();
        if self.by_key {
            // The lane of the key's slice, and no other: the values of
            // nearby keys stay together.
            let lane = &self.lanes[key_lane(key, n)];
            return lane.put_in(&mut lane.open.lock(), files, key, value, crc);
        }
        // A thread starts at its own lane (its values stay together while
        // no other thread competes for it) and takes the first lane no
        // other writer is in: a writer does not queue behind another one
        // that waits for a chunk write while a lane is idle. With a writer
        // in every lane it waits for its own. A lane's mutex held by a
        // sync or a reader is waited for: leaving for another lane then
        // would trickle values into that lane's file.
        let home = home_lane() % n;
        for k in 0..n {
            let lane = &self.lanes[(home + k) % n];
            if let Some(_writer) = lane.enter_if_free() {
                return lane.put_in(&mut lane.open.lock(), files, key, value, crc);
            }
        }
        let lane = &self.lanes[home];
        let _writer = lane.enter();
        lane.put_in(&mut lane.open.lock(), files, key, value, crc)
    }

    /// Makes every value appended so far durable.
    pub(crate) fn sync(&self) -> Result<()> {
        self.lanes.iter().try_for_each(BlobLane::sync)
    }

    /// Each lane's [`BlobLane::mark`], in lane order.
    pub(crate) fn marks(&self) -> Vec<Option<Mark>> {
        self.lanes.iter().map(BlobLane::mark).collect()
    }

    /// Makes the bytes below each lane's mark durable
    /// ([`BlobLane::sync_to`]), up to [`SYNC_THREADS`] lanes at once: their
    /// waits for the disk overlap, and the file system commits their
    /// `fdatasync`s together instead of one after another. For a flush,
    /// with the marks taken when it began; a `sync` writer keeps the
    /// sequential [`sync`](Self::sync) (64 of them at once must not start
    /// a thousand threads). Every marked lane is synced even when one
    /// fails (each failure is the lane's own); the first error is
    /// returned.
    pub(crate) fn sync_to_marks(&self, marks: &[Option<Mark>]) -> Result<()> {
        debug_assert_eq!(marks.len(), self.lanes.len(), "one mark per lane");
        let marked: Vec<(&BlobLane, Mark)> = self
            .lanes
            .iter()
            .zip(marks)
            .filter_map(|(lane, m)| m.map(|m| (lane, m)))
            .collect();
        on_threads(&marked, |(lane, mark)| lane.sync_to(*mark))
    }

    /// True if a lane still appends to blob file `number`, or gave it up
    /// after a failure: either way the file may not hold all its values
    /// (they are read from the staging area, [`staged_value`](Self::staged_value)).
    pub(crate) fn is_open(&self, number: u64) -> bool {
        self.lanes
            .iter()
            .any(|l| l.is_open_file(number) || l.is_failed_file(number))
    }

    /// The value `p` names if a lane still stages it (see
    /// [`BlobLane::staged_value`]).
    pub(crate) fn staged_value(&self, p: &BlobPointer) -> Option<Vec<u8>> {
        self.lanes.iter().find_map(|l| l.staged_value(p))
    }

    /// Writes out every file a lane gave up after a failure (see
    /// [`BlobLane::close_failed`]); the number written out. Their
    /// pointers may still be in memtables only: they are recorded closed
    /// by [`record_closed`](Self::record_closed), once flushed.
    pub(crate) fn close_failed(&self) -> Result<usize> {
        let mut n = 0;
        for lane in &self.lanes {
            let closed = lane.close_failed()?;
            n += closed.len();
            self.closed.lock().extend(closed);
        }
        Ok(n)
    }

    /// Opens the next file of every lane whose put failed (see
    /// [`BlobLane::reopen_after_failure`]).
    pub(crate) fn reopen_after_failure(&self, files: &dyn BlobFiles) -> Result<()> {
        self.lanes
            .iter()
            .try_for_each(|l| l.reopen_after_failure(files))
    }

    /// Records the files [`close_failed`](Self::close_failed) wrote out
    /// as closed, once every memtable that may point into them is flushed
    /// (a closed file nothing points to is dropped); the number recorded.
    pub(crate) fn record_closed(&self, files: &dyn BlobFiles) -> Result<usize> {
        let mut closed = self.closed.lock();
        let mut n = 0;
        while let Some(&(number, size)) = closed.last() {
            files.closed_failed_blob_file(number, size)?;
            closed.pop();
            n += 1;
        }
        Ok(n)
    }

    /// Seals the open file of every lane idle since the last call, or
    /// slow: open while the lanes appended more than twice a file per lane
    /// ([`BlobLane::seal_if_idle`]). A lane that shares the writes evenly
    /// fills its file in about one file per lane of the lanes' bytes.
    pub(crate) fn seal_idle(&self, files: &dyn BlobFiles) -> Result<()> {
        let appended = self.lanes.iter().map(BlobLane::appended_bytes).sum();
        let slow_after = 2 * self.lanes.len() as u64 * self.file_size();
        for lane in &self.lanes {
            lane.seal_if_idle(files, appended, slow_after)?;
        }
        Ok(())
    }

    /// The size at which a lane seals its file.
    fn file_size(&self) -> u64 {
        self.lanes.first().map_or(0, |l| l.opts.file_size)
    }

    /// Seals every lane's open file (at close).
    pub(crate) fn seal(&self, files: &dyn BlobFiles) -> Result<()> {
        for lane in &self.lanes {
            lane.seal(files)?;
        }
        Ok(())
    }

    /// Lets go of every file a lane still has open or gave up, without
    /// writing it out: for the lanes of a dropped keyspace, whose files
    /// nothing will read again (their staging files go too).
    pub(crate) fn abandon(&self) {
        for lane in &self.lanes {
            let mut open = lane.open.lock();
            lane.publish(None);
            let failed = std::mem::take(&mut *lane.failed.lock());
            lane.has_failed.store(false, Ordering::Release);
            for f in open.take().into_iter().chain(failed) {
                // A staging file left behind is removed by the next open.
                let _ = f.discard(lane.fs.as_ref());
            }
        }
    }
}

#[cfg(test)]
mod tests;
