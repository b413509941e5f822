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

pub(crate) mod buffers;
pub(crate) mod chunk_check;
mod prefetch;
pub(crate) mod prefetch_worker;
mod run_history;

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};

use crate::error::{Error, Result};
use crate::io::{AlignedBuf, DIRECT_IO_ALIGN, RandomAccessFile};
use crate::util::memory::{MemoryGauge, Reservation};

use super::block_bytes::BlockBytes;
use super::format::{BlockHandle, check_handle, decode_block, decode_block_in, read_block};
use buffers::pool_give;
use chunk_check::Verified;
use prefetch::Pending;
pub use prefetch_worker::ReaderPool;
use prefetch_worker::{Done, Job, Worker};
use run_history::RunHistory;

/// First read-ahead chunk after a non-sequential read.
pub(crate) const MIN_READAHEAD: usize = 16 << 10;

/// Default largest read-ahead chunk of a user iterator
/// (`ReadOptions::readahead_size`).
pub(crate) const DEFAULT_READAHEAD: usize = 2 << 20;

/// Read-ahead chunk of compaction inputs, which are read whole and in order.
pub(crate) const COMPACTION_READAHEAD: usize = 2 << 20;

/// Read-ahead state of one iterator (see the module docs).
#[derive(Debug)]
pub(crate) struct Readahead {
    max: usize,
    /// Read the next chunks in the background, on this pool, once a
    /// sequential chunk of `max` bytes has been read.
    pool: Option<Arc<ReaderPool>>,
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
    /// The memory budget's read-ahead part (`Options::memory_budget`):
    /// the state reserves [`memory_bound`] of the chunk size it reads
    /// with as its chunks grow (from [`MIN_BUDGETED`] up to `max`), so
    /// it holds a reservation for what it uses, not for `max` from its
    /// first chunk. Where the part has no room for a larger chunk it
    /// keeps reading at the size it holds; with no room for even
    /// [`MIN_BUDGETED`] it reads block by block. `None`: no budget.
    gauge: Option<Arc<MemoryGauge>>,
    /// The reservation held (shared with the background reads in flight,
    /// so it outlives the state until their buffers are gone; it only
    /// grows while no background read shares it).
    memory: Option<Arc<Reservation>>,
    /// With a budget: the largest chunk `memory` covers (`memory_bound`
    /// of it is reserved); 0 before the first reservation. Never above
    /// `max`; never shrinks.
    allowed: usize,
    /// Block reads until a state that found no room asks again.
    admit_after: u32,
}

/// The most bytes of chunk buffers one state holds with chunks of at most
/// `max` bytes: the current buffer, two chunks' worth in flight (two
/// prefetched chunks, or a learned run's pieces, which add up to at most
/// `max`), two of spares and four retired buffers that blocks still
/// borrow; each buffer is at most `max` plus the file's alignment on both
/// sides, rounded up here to `max + 64 KiB`. (Found by reading the paths
/// that allocate: `take_spare`, `keep_spare`, `retire`, `prefetch_next`;
/// `held_bytes` checks it in debug builds.)
pub(crate) fn memory_bound(max: usize) -> usize {
    10 * (max + (64 << 10))
}

/// Smallest `max` a budgeted state reads ahead with; below it the state
/// reads one block at a time (and holds no chunk buffer).
pub(crate) const MIN_BUDGETED: usize = 64 << 10;

/// Reads a budgeted state that found less room than it asked for makes
/// (block by block, or at the chunk size it holds) before it asks again.
const ADMIT_RETRY: u32 = 64;

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
pub(super) const LEARNED_FIRST_MIN: usize = 32 << 10;

/// Most bytes after the seek's block read with it when a run is predicted.
pub(super) const LEARNED_FIRST_MAX: usize = 256 << 10;

/// Bytes after the seek's block read with it (synchronously, in the seek's
/// positioning round trip) for a run predicted to read `predicted` bytes
/// after it: half the prediction, within [`LEARNED_FIRST_MIN`] and
/// [`LEARNED_FIRST_MAX`]. The rest goes to the background as soon as the
/// run goes on, and arrives while the consumer decodes the first half
/// (measured in `docs/readahead.md`: a quarter of the prediction, 32 KiB,
/// left the consumer idle for most of the pieces' read; three quarters
/// left the disk idle while it decoded).
pub(super) fn learned_first(predicted: u64) -> u64 {
    (predicted / 2).clamp(LEARNED_FIRST_MIN as u64, LEARNED_FIRST_MAX as u64)
}

/// First background piece of a predicted run; pieces double up to
/// [`LEARNED_PIECE_MAX`].
pub(super) const LEARNED_PIECE_MIN: usize = 64 << 10;

/// Largest background piece of a predicted run.
pub(super) const LEARNED_PIECE_MAX: usize = 256 << 10;

/// Most pieces of a predicted run in flight at once.
pub(super) const LEARNED_DEPTH: usize = 16;

/// Smallest maximum chunk for which background prefetch is used.
pub(super) const PREFETCH_MIN: usize = 256 << 10;

/// Most chunks read in the background for one state at once: the worker
/// reads them back to back, so the disk does not idle while the consumer
/// swaps buffers.
pub(super) const PREFETCH_DEPTH: usize = 2;

fn short(file: &Arc<dyn RandomAccessFile>, offset: u64, start: u64, got: usize, end: u64) -> Error {
    Error::corruption(
        file.path(),
        offset,
        format!("short read: {got} bytes at {start}, block ends at {end}"),
    )
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
        // A budgeted state's buffers are freed with it: a thread's pool
        // would keep them outside any reservation.
        if self.gauge.is_some() {
            return;
        }
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
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn new(max: usize) -> Readahead {
        Readahead::with_prefetch(max, None)
    }

    /// Like `new`; with a `pool`, once the chunks have grown
    /// to `max` (at least `PREFETCH_MIN` (256 KiB)), the pool reads the
    /// next chunk while the current one is consumed.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn with_prefetch(max: usize, pool: Option<Arc<ReaderPool>>) -> Readahead {
        Readahead::with_budget(max, pool, None)
    }

    /// Like `with_prefetch`, within the memory budget's read-ahead part
    /// `gauge` when given (see the field `gauge`).
    pub(crate) fn with_budget(
        max: usize,
        pool: Option<Arc<ReaderPool>>,
        gauge: Option<Arc<MemoryGauge>>,
    ) -> Readahead {
        Readahead {
            max,
            pool: pool.filter(|_| max >= PREFETCH_MIN),
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
            gauge,
            memory: None,
            allowed: 0,
            admit_after: 0,
        }
    }

    /// Whether the state may read a chunk of `size` bytes now (after
    /// which `next_size` is at most what it may read): always without a
    /// budget. With one, the state's reservation grows to cover `size`
    /// (at least [`MIN_BUDGETED`], at most `max`), or to the largest
    /// halving of it that fits; where nothing larger fits it reads at the
    /// size it already holds (`next_size` is lowered to it). A state the
    /// part could not give all it asked for asks again only after
    /// [`ADMIT_RETRY`] more reads: one that holds nothing reads them
    /// block by block, one that holds some reads them at that size.
    fn admit(&mut self, size: usize) -> bool {
        let Some(gauge) = self.gauge.clone() else {
            return true;
        };
        if self.max < MIN_BUDGETED {
            return false;
        }
        let want = size.clamp(MIN_BUDGETED, self.max);
        if self.allowed < want {
            if self.admit_after > 0 {
                self.admit_after -= 1;
            } else {
                self.grow(&gauge, want);
                if self.allowed < want {
                    self.admit_after = ADMIT_RETRY;
                }
            }
        }
        debug_assert!(
            self.memory.as_ref().map_or(0, |r| r.bytes())
                == if self.allowed == 0 {
                    0
                } else {
                    memory_bound(self.allowed)
                },
            "the reservation covers exactly the chunks allowed"
        );
        if self.allowed == 0 {
            return false;
        }
        debug_assert!(self.allowed >= MIN_BUDGETED && self.allowed <= self.max);
        self.next_size = self.next_size.min(self.allowed);
        true
    }

    /// Whether the state may read chunks of its full `max` (what a learned
    /// run's pieces and background prefetch need): [`admit`](Self::admit)
    /// for `max`, granted in full.
    fn admit_full(&mut self) -> bool {
        self.admit(self.max) && (self.gauge.is_none() || self.allowed >= self.max)
    }

    /// Grows the reservation (or takes the first) to cover chunks of
    /// `want` bytes, halving `want` while that does not fit, never below
    /// what is held or [`MIN_BUDGETED`]. A reservation a background read
    /// shares is not grown.
    fn grow(&mut self, gauge: &Arc<MemoryGauge>, want: usize) {
        let mut target = want;
        while target > self.allowed && target >= MIN_BUDGETED {
            let got = match &mut self.memory {
                None => gauge
                    .try_reserve(memory_bound(target))
                    .map(|r| self.memory = Some(Arc::new(r)))
                    .is_some(),
                Some(held) => match Arc::get_mut(held) {
                    Some(r) => r.resize(memory_bound(target)),
                    None => return,
                },
            };
            if got {
                self.allowed = target;
                return;
            }
            target /= 2;
        }
    }

    /// The largest chunk this state's buffers are sized for: `max`, or
    /// with a budget what its reservation covers.
    fn chunk_cap(&self) -> usize {
        if self.gauge.is_some() {
            self.allowed
        } else {
            self.max
        }
    }

    /// Bytes of chunk buffers this state holds (debug check of
    /// [`memory_bound`]).
    fn held_bytes(&self) -> usize {
        self.buf.capacity()
            + self.spare.iter().map(AlignedBuf::capacity).sum::<usize>()
            + self.retired.iter().map(|b| b.capacity()).sum::<usize>()
            + self.pending.iter().map(|p| p.len).sum::<usize>()
    }

    /// In debug builds: a budgeted state holds no more than it reserved.
    fn debug_check_bound(&self) {
        if let Some(r) = &self.memory {
            debug_assert!(
                self.held_bytes() <= r.bytes(),
                "read-ahead state holds {} bytes, reserved {}",
                self.held_bytes(),
                r.bytes()
            );
        }
    }

    /// Size of the next sequential chunk.
    #[cfg(test)]
    pub(crate) fn next_size(&self) -> usize {
        self.next_size
    }

    /// Read-ahead chunks read so far and their bytes.
    #[cfg(test)]
    pub(crate) fn chunk_stats(&self) -> (u64, u64) {
        (self.chunk_reads, self.chunk_bytes)
    }

    /// Blocks served whose checksum the background reader of their chunk
    /// verified (so they were not verified again when served).
    #[cfg(test)]
    pub(crate) fn vouched_blocks(&self) -> u64 {
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
    pub(crate) fn note_access(
        &mut self,
        file: &Arc<dyn RandomAccessFile>,
        data_end: u64,
        h: BlockHandle,
    ) {
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
    pub(crate) fn predicted_run(&self) -> u64 {
        if self.pool.is_some() {
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
    pub(crate) fn read_block(
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
        if predicted > 0 && end < limit.min(data_end) && self.admit_full() {
            self.next_size = MIN_READAHEAD.min(self.max);
            return self.read_learned_run(file, h, end, limit.min(data_end), predicted, verify);
        }
        let want_end = h
            .offset
            .saturating_add(self.next_size as u64)
            .min(limit.min(data_end))
            .max(end);
        if !sequential || want_end == end || !self.admit(self.next_size) {
            if !sequential {
                self.next_size = MIN_READAHEAD.min(self.max);
            }
            return read_block(file.as_ref(), h, data_end, verify).map(BlockBytes::from);
        }
        // Admission may have lowered `max` (and so `next_size`).
        let want_end = want_end.min(h.offset.saturating_add(self.next_size as u64).max(end));
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
        if self.pool.is_some() && size == self.max {
            self.prefetch_next(file, limit.min(data_end));
        }
        self.decode_buffered(file, h, end, verify)
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
}

#[cfg(test)]
mod tests;
