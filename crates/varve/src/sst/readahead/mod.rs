//! [`Readahead`]: scan read-ahead for data blocks. An iterator whose block
//! reads are sequential reads one large chunk per `read_at` instead of one
//! block, and serves the following blocks from it.
//!
//! Policy (see `docs/readahead.md`): a block read is *sequential* when it
//! starts where the previous block of the same file ended, or at offset 0 of
//! a new file right after the previous file was read to the end of its data
//! blocks. A sequential miss reads `next_size` bytes (starting at
//! [`MIN_READAHEAD`], doubling after every chunk up to the iterator's
//! maximum); any other miss reads just the block and resets `next_size` to
//! the minimum. The size therefore survives moving on to the next table
//! file of a level (the state is shared by all table iterators of one level
//! iterator). A chunk never extends past `limit`, which the caller sets to
//! the end of the block holding the iterator's upper bound (or the end of
//! the table's data blocks); with O_DIRECT files the chunk is widened to the
//! file's alignment and read into an aligned buffer, so the file needs no
//! bounce copy. Every block served from the buffer is checksummed like a
//! block read on its own, so damage is still `Error::Corruption`.
//!
//! Background prefetch (when enabled): once a synchronous sequential chunk
//! of the full maximum size has been read — the iterator has proven
//! sequential, having read about twice the maximum in order — the
//! process-wide reader pool (`prefetch_worker`) reads the following
//! chunks, up to [`PREFETCH_DEPTH`] in flight back to back, while the
//! consumer decodes the current one. Any
//! non-sequential access abandons them; the worker skips abandoned chunks
//! it has not started yet. Short scans and point seeks never get there, so
//! they pay nothing for it.
//!
//! Learned runs (prefetch on): the state remembers how far its recent runs
//! after a non-sequential access went ([`RunHistory`]). When they predict
//! a run, a seek's miss reads its block with the first half of the
//! prediction after it ([`learned_first`]), in the same round trip as the
//! other levels' positioning reads, and at the run's first sequential
//! access the rest of the prediction goes to the reader pool at once,
//! while the consumer decodes the first half, as pieces of
//! [`LEARNED_PIECE_MIN`] doubling to [`LEARNED_PIECE_MAX`] (read
//! concurrently by a pool thread). A run longer than predicted continues with
//! the growing policy.
//!
//! Checksums: a block served from a chunk read here is verified when it is
//! served. A chunk read in the background carries its table's block bounds
//! (when blocks are verified at all), and its reader verifies the blocks it
//! holds whole (`chunk_check`); those are served without a second check.
//! A piece of a learned run is handed over before its check and checked
//! while it is served: the reader raises a watermark block by block, and a
//! block beyond it is waited for briefly, then verified here. The
//! watermark belongs to the buffer it came with and is dropped whenever
//! the buffer is read into again, so a block is never served on the word
//! of another read.
//!
//! Blocks served from a chunk borrow it ([`BlockBytes`]): the chunk buffer
//! is an `Arc`, rewritten only when no block refers to it (else a spare,
//! or a retired buffer whose blocks are gone, takes its place), so a
//! block's bytes never change under it.
//!
//! Thread-safety: a `Readahead` belongs to one iterator (`Send`, not shared
//! between scans); table iterators of one level share it through an
//! `Arc<Mutex<_>>` that is never contended. With prefetch on, the threads
//! of the reader pool read chunks into buffers that are moved to them and
//! back through channels (nothing shared but the state's atomic job id
//! below which jobs are skipped); answers that arrive after the state is
//! dropped are dropped with their buffers. Invariants:
//! `buf_valid` bytes of `buf` hold the file `file` from `buf_start` on;
//! `pending` chunks are contiguous and start where the buffer ends.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};

use crate::io::{AlignedBuf, DIRECT_IO_ALIGN, RandomAccessFile};
use crate::{Error, Result};

use super::block_bytes::BlockBytes;
use super::chunk_check::Verified;
use super::format::{BlockHandle, check_handle, decode_block, decode_block_in, read_block};
use super::prefetch_worker::{Done, Job, Worker};
use super::run_history::RunHistory;

/// First read-ahead chunk after a non-sequential read.
pub const MIN_READAHEAD: usize = 16 << 10;

/// Default largest read-ahead chunk of a user iterator
/// ([`ReadOptions::readahead_size`](crate::ReadOptions::readahead_size)).
pub const DEFAULT_READAHEAD: usize = 2 << 20;

/// Read-ahead chunk of compaction inputs, which are read whole and in order.
pub const COMPACTION_READAHEAD: usize = 2 << 20;

/// Read-ahead state of one iterator (see the module docs).
#[derive(Debug)]
pub struct Readahead {
    max: usize,
    /// Read the next chunks in the background once a sequential chunk of
    /// `max` bytes has been read.
    prefetch: bool,
    next_size: usize,
    /// The file of the last block access, kept alive so its identity holds.
    file: Option<Arc<dyn RandomAccessFile>>,
    /// End of `file`'s data blocks.
    file_data_end: u64,
    /// End (trailer included) of the last block accessed in `file`.
    last_end: u64,
    /// The current chunk; blocks served from it share it (see
    /// [`BlockBytes`]), so it is only written again when no block refers
    /// to it any more (else a fresh buffer replaces it).
    buf: Arc<AlignedBuf>,
    buf_start: u64,
    buf_valid: usize,
    chunk_reads: u64,
    chunk_bytes: u64,
    /// Background reader of the next chunk (started on first use).
    worker: Option<Worker>,
    /// The chunks the worker is reading for this state, in file order, at
    /// most [`PREFETCH_DEPTH`]; each starts where the one before ends.
    pending: VecDeque<Pending>,
    /// Buffers to hand to the worker (earlier chunks').
    spare: Vec<AlignedBuf>,
    /// Chunk buffers that blocks still referred to when they were
    /// replaced: they become spares once no block does.
    retired: Vec<Arc<AlignedBuf>>,
    /// Tags jobs, so results of abandoned prefetches are recognized.
    next_job: u64,
    /// Pending chunks that finished before the ones ahead of them.
    arrived: Vec<Done>,
    /// How far recent runs after a seek went.
    runs: RunHistory,
    /// Block bounds of `file`'s table when blocks are verified: background
    /// chunks carry them, and their reader verifies the blocks they hold.
    bounds: Option<Arc<[u64]>>,
    /// Blocks of the current buffer whose checksums its background reader
    /// verified (none for a chunk read here).
    buf_verified: Verified,
    /// Blocks served without a checksum check here because the background
    /// reader of their chunk had verified them.
    vouched: u64,
    /// A learned run is being read ahead (its next piece's size, and where
    /// the pieces stop).
    learned: Option<Learned>,
}

/// Read-ahead of a run whose length was predicted from earlier runs.
#[derive(Debug, Clone, Copy)]
struct Learned {
    /// The pieces have been handed to the worker (they are, at the run's
    /// first sequential access: a seek that reads nothing past its block
    /// costs no background read).
    started: bool,
    /// Size of the next piece handed to the worker.
    piece: usize,
    /// No piece extends past this offset (beyond the file's alignment).
    end: u64,
}

/// Fewest bytes after the seek's block read with it when a run is
/// predicted (see [`learned_first`]).
pub const LEARNED_FIRST_MIN: usize = 32 << 10;

/// Most bytes after the seek's block read with it when a run is predicted.
pub const LEARNED_FIRST_MAX: usize = 256 << 10;

/// Bytes after the seek's block read with it (synchronously, in the seek's
/// positioning round trip) for a run predicted to read `predicted` bytes
/// after it: half the prediction, within [`LEARNED_FIRST_MIN`] and
/// [`LEARNED_FIRST_MAX`]. The rest goes to the background as soon as the
/// run goes on, and arrives while the consumer decodes the first half
/// (measured in `docs/readahead.md`: a quarter of the prediction, 32 KiB,
/// left the consumer idle for most of the pieces' read; three quarters
/// left the disk idle while it decoded).
pub fn learned_first(predicted: u64) -> u64 {
    (predicted / 2).clamp(LEARNED_FIRST_MIN as u64, LEARNED_FIRST_MAX as u64)
}

/// First background piece of a predicted run; pieces double up to
/// [`LEARNED_PIECE_MAX`].
pub const LEARNED_PIECE_MIN: usize = 64 << 10;

/// Largest background piece of a predicted run.
pub const LEARNED_PIECE_MAX: usize = 256 << 10;

/// Most pieces of a predicted run in flight at once.
pub const LEARNED_DEPTH: usize = 16;

/// Smallest maximum chunk for which background prefetch is used.
pub const PREFETCH_MIN: usize = 256 << 10;

/// Most chunks read in the background for one state at once: the worker
/// reads them back to back, so the disk does not idle while the consumer
/// swaps buffers.
pub const PREFETCH_DEPTH: usize = 2;

/// Most spare buffers kept for background chunks.
const SPARE_KEEP: usize = 4;

/// Chunk buffers a thread keeps between read-ahead states, and their total
/// bytes: a scan cut into many short ranges (`par_count` chunks, bounded
/// iterators) would otherwise allocate and zero its growing chunk buffers
/// again for every range.
const POOL_KEEP: usize = 8;
const POOL_BYTES: usize = 16 << 20;

thread_local! {
    static CHUNK_POOL: std::cell::RefCell<Vec<AlignedBuf>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A pooled buffer of this thread holding at least `len` bytes.
fn pool_take(len: usize) -> Option<AlignedBuf> {
    CHUNK_POOL
        .try_with(|pool| {
            let mut pool = pool.try_borrow_mut().ok()?;
            let i = pool.iter().position(|b| b.capacity() >= len)?;
            Some(pool.swap_remove(i))
        })
        .ok()
        .flatten()
}

/// Gives `buf` to this thread's pool if it is within the bounds (else it
/// is freed).
fn pool_give(buf: AlignedBuf) {
    let _ = CHUNK_POOL.try_with(|pool| {
        if let Ok(mut pool) = pool.try_borrow_mut() {
            let total: usize = pool.iter().map(AlignedBuf::capacity).sum();
            if buf.capacity() >= MIN_READAHEAD
                && pool.len() < POOL_KEEP
                && total + buf.capacity() <= POOL_BYTES
            {
                pool.push(buf);
            }
        }
    });
}

/// A chunk being read in the background.
#[derive(Debug)]
struct Pending {
    id: u64,
    start: u64,
    len: usize,
}

fn short(file: &Arc<dyn RandomAccessFile>, offset: u64, start: u64, got: usize, end: u64) -> Error {
    Error::corruption(
        file.path(),
        offset,
        format!("short read: {got} bytes at {start}, block ends at {end}"),
    )
}

/// How long a consumer waiting for a background chunk polls for it before
/// it blocks. The chunk is at the disk and due within a few hundred µs;
/// blocking and being woken costs 40–70 µs on a VM (measured on the test
/// machine: the gap between the reader's send and the consumer's return),
/// once or twice per seek of a short scan (`docs/readahead.md`).
const POLL_BEFORE_BLOCKING: std::time::Duration = std::time::Duration::from_millis(1);

/// Receives from `rx`: polls it (yielding the core between rounds, so a
/// runnable thread, such as the reader itself, is not kept off it) for up
/// to [`POLL_BEFORE_BLOCKING`], then blocks.
#[inline(never)]
fn recv_polling<T>(rx: &mpsc::Receiver<T>) -> std::result::Result<T, mpsc::RecvError> {
    let start = std::time::Instant::now();
    loop {
        for _ in 0..64 {
            match rx.try_recv() {
                Ok(v) => return Ok(v),
                Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
                Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        if start.elapsed() >= POLL_BEFORE_BLOCKING {
            return rx.recv();
        }
        std::thread::yield_now();
    }
}

fn same_file(a: &Arc<dyn RandomAccessFile>, b: &Arc<dyn RandomAccessFile>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// Cancels the state's chunks the reader pool has not started, and hands
/// the state's buffers that no block refers to to this thread's pool, for
/// the next read-ahead state.
impl Drop for Readahead {
    fn drop(&mut self) {
        // The pool skips this state's jobs that it has not started.
        self.abandon();
        let bufs = std::mem::take(&mut self.spare);
        let retired = std::mem::take(&mut self.retired);
        let current = std::mem::replace(&mut self.buf, Arc::new(AlignedBuf::new(0)));
        for buf in bufs {
            pool_give(buf);
        }
        for old in retired.into_iter().chain(std::iter::once(current)) {
            if let Ok(buf) = Arc::try_unwrap(old) {
                pool_give(buf);
            }
        }
    }
}

impl Readahead {
    /// State for chunks of at most `max` bytes (at least one block is always
    /// read; `max` below [`MIN_READAHEAD`] caps the first chunk too).
    pub fn new(max: usize) -> Readahead {
        Readahead::with_prefetch(max, false)
    }

    /// Like [`new`](Self::new); with `prefetch`, once the chunks have grown
    /// to `max` (at least `PREFETCH_MIN` (256 KiB)), the reader pool reads the next
    /// chunk while the current one is consumed.
    pub fn with_prefetch(max: usize, prefetch: bool) -> Readahead {
        Readahead {
            max,
            prefetch: prefetch && max >= PREFETCH_MIN,
            next_size: MIN_READAHEAD.min(max),
            file: None,
            file_data_end: 0,
            last_end: 0,
            buf: Arc::new(AlignedBuf::new(0)),
            buf_start: 0,
            buf_valid: 0,
            chunk_reads: 0,
            chunk_bytes: 0,
            worker: None,
            pending: VecDeque::new(),
            spare: Vec::new(),
            retired: Vec::new(),
            next_job: 0,
            arrived: Vec::new(),
            runs: RunHistory::new(),
            learned: None,
            bounds: None,
            buf_verified: Verified::none(),
            vouched: 0,
        }
    }

    /// Size of the next sequential chunk.
    pub fn next_size(&self) -> usize {
        self.next_size
    }

    /// Read-ahead chunks read so far and their bytes.
    pub fn chunk_stats(&self) -> (u64, u64) {
        (self.chunk_reads, self.chunk_bytes)
    }

    /// Blocks served whose checksum the background reader of their chunk
    /// verified (so they were not verified again when served).
    pub fn vouched_blocks(&self) -> u64 {
        self.vouched
    }

    fn is_sequential(&self, file: &Arc<dyn RandomAccessFile>, offset: u64) -> bool {
        match &self.file {
            Some(f) if same_file(f, file) => offset == self.last_end,
            Some(_) => offset == 0 && self.last_end == self.file_data_end,
            None => false,
        }
    }

    /// Records an access to the block at `handle` that needed no file read
    /// (a block cache hit): it continues or breaks the sequence like a read.
    pub fn note_access(&mut self, file: &Arc<dyn RandomAccessFile>, data_end: u64, h: BlockHandle) {
        if !self.track_run(file, h) {
            self.next_size = MIN_READAHEAD.min(self.max);
        }
        self.set_last(file, data_end, h);
    }

    /// Counts the access to `h` in the run history; true if sequential.
    fn track_run(&mut self, file: &Arc<dyn RandomAccessFile>, h: BlockHandle) -> bool {
        let sequential = self.is_sequential(file, h.offset);
        if sequential {
            let len = h.end().unwrap_or(u64::MAX) - h.offset;
            self.runs.extend(len);
        } else {
            self.runs.start();
            self.learned = None;
        }
        sequential
    }

    /// Bytes the next run after a seek is predicted to read past its first
    /// block (0: no prediction, or background prefetch is off).
    pub fn predicted_run(&self) -> u64 {
        if self.prefetch {
            self.runs.predicted().min(self.max as u64)
        } else {
            0
        }
    }

    /// Keeps `bounds` for the background chunks of the current file.
    fn set_bounds(&mut self, bounds: Option<&Arc<[u64]>>) {
        let same = match (&self.bounds, bounds) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            self.bounds = bounds.cloned();
        }
    }

    fn set_last(&mut self, file: &Arc<dyn RandomAccessFile>, data_end: u64, h: BlockHandle) {
        if !self.file.as_ref().is_some_and(|f| same_file(f, file)) {
            self.file = Some(Arc::clone(file));
            self.buf_valid = 0;
            self.buf_verified = Verified::none();
            self.abandon();
        }
        self.file_data_end = data_end;
        self.last_end = h.end().unwrap_or(u64::MAX);
    }

    /// The uncompressed contents of the block at `h` in `file` (whose data
    /// blocks end at `data_end`), from the buffer or the file. Chunks never
    /// extend past `limit` (clamped to `[block end, data_end]`) beyond the
    /// file's alignment. With `verify` and the table's block `bounds`
    /// (where each data block starts, then where the last ends), chunks
    /// read in the background are verified by their reader, and the
    /// blocks it vouches for are not verified again here.
    pub fn read_block(
        &mut self,
        file: &Arc<dyn RandomAccessFile>,
        data_end: u64,
        h: BlockHandle,
        limit: u64,
        verify: bool,
        bounds: Option<&Arc<[u64]>>,
    ) -> Result<BlockBytes> {
        let path = file.path();
        check_handle(h, 0, data_end, path)?;
        self.set_bounds(if verify { bounds } else { None });
        let end = h.end().unwrap_or(u64::MAX);
        let sequential = self.track_run(file, h);
        let same = self.file.as_ref().is_some_and(|f| same_file(f, file));
        if same && sequential && self.learned.is_some_and(|l| !l.started) {
            // The first sequential access of a predicted run: the pieces
            // after what the seek read start here (a run that stops at
            // its seek's block reads nothing more).
            self.prefetch_next(file, limit.min(data_end));
        }
        if same && self.buffered(h.offset, end) {
            self.set_last(file, data_end, h);
            return self.decode_buffered(file, h, end, verify);
        }
        if same
            && let Some(block) = self.take_prefetched(file, h, end, limit.min(data_end), verify)?
        {
            self.set_last(file, data_end, h);
            return Ok(block);
        }
        self.abandon();
        self.learned = None;
        self.set_last(file, data_end, h);
        let predicted = if sequential { 0 } else { self.predicted_run() };
        if predicted > 0 && end < limit.min(data_end) {
            self.next_size = MIN_READAHEAD.min(self.max);
            return self.read_learned_run(file, h, end, limit.min(data_end), predicted, verify);
        }
        let want_end = h
            .offset
            .saturating_add(self.next_size as u64)
            .min(limit.min(data_end))
            .max(end);
        if !sequential || want_end == end {
            if !sequential {
                self.next_size = MIN_READAHEAD.min(self.max);
            }
            return read_block(file.as_ref(), h, data_end, verify).map(BlockBytes::from);
        }
        let (start, _stop, _len, got) = self.read_chunk(file, h.offset, want_end)?;
        let size = self.next_size;
        self.next_size = self.next_size.saturating_mul(2).min(self.max);
        if !self.buffered(h.offset, end) {
            return Err(Error::corruption(
                path,
                h.offset,
                format!("short read: {got} bytes at {start}, block ends at {end}"),
            ));
        }
        if self.prefetch && size == self.max {
            self.prefetch_next(file, limit.min(data_end));
        }
        self.decode_buffered(file, h, end, verify)
    }

    /// The first block of a run predicted to read `predicted` more bytes
    /// (a seek on an iterator whose recent runs went about as far): reads
    /// the block with up to [`learned_first`] bytes after it; at the run's
    /// first sequential access the rest of the prediction (up to `limit`)
    /// goes to the background worker as pieces of [`LEARNED_PIECE_MIN`]
    /// doubling to [`LEARNED_PIECE_MAX`], all queued at once so the disk
    /// never waits for the consumer. A run longer than predicted goes on
    /// with the ordinary policy.
    fn read_learned_run(
        &mut self,
        file: &Arc<dyn RandomAccessFile>,
        h: BlockHandle,
        end: u64,
        limit: u64,
        predicted: u64,
        verify: bool,
    ) -> Result<BlockBytes> {
        let run_end = end.saturating_add(predicted).min(limit);
        // Most recent runs went on past their seek: read the first part of
        // the run with the block. Else (a level whose seeks often land where the
        // scan reads nothing more of it) just the block: the pieces start
        // only if the run does.
        let first = if self.runs.mostly_nonempty() {
            learned_first(predicted)
        } else {
            0
        };
        let first_end = end.saturating_add(first).min(run_end);
        let (start, stop, len, got) = self.read_chunk(file, h.offset, first_end)?;
        if !self.buffered(h.offset, end) {
            return Err(short(file, h.offset, start, got, end));
        }
        if got == len && stop < run_end {
            self.learned = Some(Learned {
                started: false,
                piece: LEARNED_PIECE_MIN,
                end: run_end,
            });
        }
        self.decode_buffered(file, h, end, verify)
    }

    /// Starts reading the chunks after the current buffer (and after the
    /// chunks already pending) in the background, up to [`PREFETCH_DEPTH`]
    /// in flight, if the buffer was read whole and the data (up to `limit`)
    /// goes on. Each chunk is `next_size` bytes, which keeps doubling up to
    /// the maximum.
    fn prefetch_next(&mut self, file: &Arc<dyn RandomAccessFile>, limit: u64) {
        let (depth, limit) = match &mut self.learned {
            Some(l) => {
                l.started = true;
                (LEARNED_DEPTH, limit.min(l.end))
            }
            None => (PREFETCH_DEPTH, limit),
        };
        while self.pending.len() < depth {
            let start = match self.pending.back() {
                Some(p) => p.start + p.len as u64,
                None if self.buf_valid == self.buf.as_slice().len() => {
                    self.buf_start + self.buf_valid as u64
                }
                None => return,
            };
            if start >= limit {
                return;
            }
            let size = match self.learned {
                Some(l) => l.piece,
                None => self.next_size,
            };
            let stop = match file.direct_alignment() {
                Some(a) if a > 0 && DIRECT_IO_ALIGN.is_multiple_of(a) => {
                    let a = a as u64;
                    if !start.is_multiple_of(a) {
                        return;
                    }
                    start.saturating_add(size as u64).min(limit).div_ceil(a) * a
                }
                _ => start.saturating_add(size as u64).min(limit),
            };
            let Ok(len) = usize::try_from(stop - start) else {
                return;
            };
            if self.worker.is_none() {
                self.worker = Worker::new();
                if self.worker.is_none() {
                    return;
                }
            }
            let mut buf = self.take_spare(len);
            buf.resize(len);
            let Some(worker) = &self.worker else {
                return;
            };
            let id = self.next_job;
            self.next_job += 1;
            let job = Job {
                id,
                file: Arc::clone(file),
                start,
                buf,
                bounds: self.bounds.clone(),
                early: self.learned.is_some(),
            };
            if !worker.send(job) {
                self.worker = None;
                self.abandon();
                return;
            }
            self.pending.push_back(Pending { id, start, len });
            match &mut self.learned {
                Some(l) => l.piece = l.piece.saturating_mul(2).min(LEARNED_PIECE_MAX),
                None => self.next_size = self.next_size.saturating_mul(2).min(self.max),
            }
        }
    }

    /// Forgets the chunks being read in the background; the worker skips
    /// those it has not started.
    fn abandon(&mut self) {
        for d in std::mem::take(&mut self.arrived) {
            self.retire(d.buf);
        }
        if self.pending.is_empty() {
            return;
        }
        self.pending.clear();
        if let Some(w) = &self.worker {
            w.cancel_below.store(self.next_job, Ordering::Release);
        }
    }

    /// Keeps `buf` for a later chunk: at most [`SPARE_KEEP`] spares of at
    /// most two full-size chunks' bytes together (the memory bound of
    /// `docs/readahead.md`), preferring the larger buffers (chunks grow,
    /// rarely shrink); the rest are freed.
    fn keep_spare(&mut self, buf: AlignedBuf) {
        let budget = 2 * (self.max.max(LEARNED_PIECE_MAX) + (16 << 10));
        let cap = buf.capacity();
        if cap > budget {
            return;
        }
        let mut total: usize = self.spare.iter().map(|b| b.capacity()).sum();
        // Make room by dropping smaller spares; a buffer no larger than
        // every spare is the one dropped.
        while self.spare.len() >= SPARE_KEEP || total + cap > budget {
            let Some((i, small)) = self
                .spare
                .iter()
                .enumerate()
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, b)| (i, b.capacity()))
            else {
                break;
            };
            if small >= cap {
                return;
            }
            self.spare.swap_remove(i);
            total -= small;
        }
        self.spare.push(buf);
    }

    /// Keeps the replaced chunk buffer `old` for reuse: a spare now if no
    /// block refers to it, else once none does (at most [`SPARE_KEEP`]
    /// wait; older ones are left to their blocks).
    fn retire(&mut self, old: Arc<AlignedBuf>) {
        match Arc::try_unwrap(old) {
            Ok(buf) => self.keep_spare(buf),
            Err(old) => {
                if self.retired.len() >= SPARE_KEEP {
                    self.retired.remove(0);
                }
                self.retired.push(old);
            }
        }
    }

    /// A buffer for a chunk of `len` bytes: a spare that holds it without
    /// reallocating if there is one (retired buffers no block refers to
    /// any more count), else a new one of at least [`LEARNED_PIECE_MAX`]
    /// (so pieces growing to that size do not reallocate).
    fn take_spare(&mut self, len: usize) -> AlignedBuf {
        self.reclaim_retired();
        match self.spare.iter().position(|b| b.capacity() >= len) {
            Some(i) => self.spare.swap_remove(i),
            None => pool_take(len).unwrap_or_else(|| AlignedBuf::new(len.max(LEARNED_PIECE_MAX))),
        }
    }

    /// Retired buffers no block refers to any more become spares.
    fn reclaim_retired(&mut self) {
        let mut i = 0;
        while i < self.retired.len() {
            if Arc::strong_count(&self.retired[i]) == 1 {
                let old = self.retired.swap_remove(i);
                if let Ok(buf) = Arc::try_unwrap(old) {
                    self.keep_spare(buf);
                }
            } else {
                i += 1;
            }
        }
    }

    /// The block `[h.offset, end)` from the first chunk being read in the
    /// background, when it starts in the current buffer's tail or inside
    /// that chunk: waits for the chunk, makes it the current buffer (a
    /// block cut by the chunk boundary is put together from both) and
    /// starts the next one. `None` when the prefetch does not serve it.
    fn take_prefetched(
        &mut self,
        file: &Arc<dyn RandomAccessFile>,
        h: BlockHandle,
        end: u64,
        limit: u64,
        verify: bool,
    ) -> Result<Option<BlockBytes>> {
        let Some(p) = self.pending.front() else {
            return Ok(None);
        };
        let cur_end = self.buf_start + self.buf_valid as u64;
        let in_tail = h.offset >= self.buf_start && h.offset < cur_end && cur_end == p.start;
        let in_chunk = h.offset >= p.start && h.offset < p.start + p.len as u64;
        if !in_tail && !in_chunk {
            return Ok(None);
        }
        let (id, start, len) = (p.id, p.start, p.len);
        self.pending.pop_front();
        let parked = self.arrived.iter().position(|d| d.id == id);
        let done = loop {
            if let Some(i) = parked {
                break self.arrived.swap_remove(i);
            }
            let Some(worker) = &self.worker else {
                self.abandon();
                return Ok(None);
            };
            // A piece of a learned run (a short scan after a seek) is
            // polled for; a long scan's chunks are waited for blocking.
            let next = if self.learned.is_some() {
                recv_polling(&worker.done)
            } else {
                worker.done.recv()
            };
            match next {
                Ok(d) if d.id == id => break d,
                // A later chunk finished first (chunks are read together).
                Ok(early) if self.pending.iter().any(|p| p.id == early.id) => {
                    self.arrived.push(early)
                }
                Ok(stale) => self.retire(stale.buf),
                Err(_) => {
                    self.worker = None;
                    self.abandon();
                    return Ok(None);
                }
            }
        };
        let got = match done.got {
            Ok(got) => got,
            Err(e) => {
                self.abandon();
                return Err(e);
            }
        };
        self.chunk_reads += 1;
        self.chunk_bytes += got as u64;
        let tail = if in_tail {
            let s = (h.offset - self.buf_start) as usize;
            Some(self.buf.as_slice()[s..self.buf_valid].to_vec())
        } else {
            None
        };
        let old = std::mem::replace(&mut self.buf, done.buf);
        self.retire(old);
        self.buf_start = start;
        self.buf_valid = got;
        self.buf_verified = done.verified;
        if got < len {
            // A short chunk: the chunks after it start past its end.
            self.abandon();
        }
        if end > start + got as u64 {
            if got < len {
                return Err(short(file, h.offset, start, got, end));
            }
            // A block larger than what is left of the chunk: read it alone.
            self.abandon();
            let block = read_block(file.as_ref(), h, end, verify)?;
            return Ok(Some(block.into()));
        }
        self.prefetch_next(file, limit);
        match tail {
            Some(mut bytes) => {
                bytes.extend_from_slice(&self.buf.as_slice()[..(end - start) as usize]);
                decode_block(bytes, h.offset, file.path(), verify).map(|b| Some(b.into()))
            }
            None => self.decode_buffered(file, h, end, verify).map(Some),
        }
    }

    fn buffered(&self, offset: u64, end: u64) -> bool {
        offset >= self.buf_start && end <= self.buf_start + self.buf_valid as u64
    }

    fn decode_buffered(
        &mut self,
        file: &Arc<dyn RandomAccessFile>,
        h: BlockHandle,
        end: u64,
        verify: bool,
    ) -> Result<BlockBytes> {
        let s = (h.offset - self.buf_start) as usize;
        let e = (end - self.buf_start) as usize;
        // The background reader of this very buffer verified the block
        // (or is about to: it checks the chunk while we serve it).
        let vouched = verify && self.buf_verified.wait_for(h.offset, end);
        self.vouched += u64::from(vouched);
        let verify = verify && !vouched;
        decode_block_in(&self.buf, s, e - s, h.offset, file.path(), verify)
    }

    /// Reads `[offset, want_end)`, widened to the file's O_DIRECT alignment,
    /// into the chunk buffer and makes it the current buffer; returns the
    /// chunk's start and end, the bytes asked for and the bytes read.
    fn read_chunk(
        &mut self,
        file: &Arc<dyn RandomAccessFile>,
        offset: u64,
        want_end: u64,
    ) -> Result<(u64, u64, usize, usize)> {
        let path = file.path();
        let (start, stop) = match file.direct_alignment() {
            Some(a) if a > 0 && DIRECT_IO_ALIGN.is_multiple_of(a) => {
                let a = a as u64;
                (offset / a * a, want_end.div_ceil(a) * a)
            }
            _ => (offset, want_end),
        };
        let len = usize::try_from(stop - start)
            .map_err(|_| Error::corruption(path, offset, "read-ahead chunk too large"))?;
        self.buf_valid = 0;
        self.buf_verified = Verified::none();
        let got = file.read_at(self.writable_buf(len, path, offset)?, start)?;
        self.buf_start = start;
        self.buf_valid = got;
        self.chunk_reads += 1;
        self.chunk_bytes += got as u64;
        Ok((start, stop, len, got))
    }

    /// The current chunk buffer, `len` bytes long, for a new read: the same
    /// allocation when no block refers to it, else a spare or a new one.
    fn writable_buf(&mut self, len: usize, path: &Path, offset: u64) -> Result<&mut [u8]> {
        // Borrowed by a block, or too small (chunks grow): take a spare or
        // pooled buffer rather than allocating and zeroing a new one.
        let replace = Arc::get_mut(&mut self.buf).is_none_or(|b| b.capacity() < len);
        if replace {
            let fresh = Arc::new(self.take_spare(len));
            let old = std::mem::replace(&mut self.buf, fresh);
            self.retire(old);
        }
        match Arc::get_mut(&mut self.buf) {
            Some(b) => {
                b.resize(len);
                Ok(b.as_mut_slice())
            }
            // Unreachable: the buffer was just made unique.
            None => Err(Error::corruption(path, offset, "read-ahead buffer in use")),
        }
    }
}

#[cfg(test)]
mod tests;
