//! [`BlobReadahead`]: read-ahead of blob values for one iterator
//! (`docs/blob-files.md`, "Reads"). An iterator with its own merge asks
//! it only once its scan has proven long (`db/read/scan_ahead.rs` reads
//! the values of short scans in batches, and asks [`BlobReadahead`] only
//! for values of chunks already in memory until then); an iterator of a
//! shared pass asks it for every value it reads.
//!
//! A scan in key order over values that compaction relocated reads each
//! blob file front to back, but the values of one key range may sit in a
//! few files at once (the relocated ones, and files not relocated yet). So
//! the state is kept per file, for the last [`STREAMS`] files read: once
//! two values in a row of one file lie just after each other (at most
//! [`MAX_GAP`] apart), the iterator reads a window of that file (64 KiB,
//! doubling to `max`) and serves its next values from it, each checked
//! against its pointer's CRC; with a reader pool, the file's next two
//! windows are read on pool threads while this one is served, each
//! overlapping the tail of the one before so a value on the boundary is
//! whole in one of them. Anything else
//! (a value out of order, a step back, a value larger than the window, a
//! lane's open file) is one aligned read per value, as for `get`.
//!
//! Window buffers come from (and go back to) the table read-ahead's
//! per-thread buffer pool, so a scan does not allocate and zero a new
//! window for every step; a dropped state cancels its prefetches that the
//! pool has not started.
//!
//! Single-threaded (owned by one iterator). Invariants: a value is served
//! from a window only if the window holds all of its bytes; a window is
//! never read from a file a write lane still appends to; at most
//! `STREAMS` windows and as many prefetches are held.

use std::sync::Arc;

use super::cache::BlobReaders;
use super::format::{BlobPointer, PAGE, value_crc, value_from_span};
use super::held_chunks::HeldChunks;
use super::shared_chunks::{CHUNK, Chunk, SharedChunks};
use crate::error::{Error, Result};
use crate::io::AlignedBuf;
use crate::sst::{PrefetchJob, PrefetchWorker, ReaderPool, give_chunk_buffer, take_chunk_buffer};

/// Smallest window.
const FIRST_WINDOW: usize = 64 << 10;
/// Two values of one file this close count as in order (chunk entries and
/// trailers, or a few values of other keys, lie between them).
const MAX_GAP: u64 = 64 << 10;
/// Files whose read-ahead state an iterator keeps.
const STREAMS: usize = 4;
/// Windows of one file read ahead on the pool at once: with two in
/// flight the disk always has the next read queued while one completes.
const DEPTH: usize = 2;
/// Chunks after a missed shared chunk that are read ahead in the
/// background.
const AHEAD: u64 = 2;
/// With shared scan chunks, an iterator of a shared pass loads chunks
/// only after this many values: a long scan shares, a short one reads
/// exactly its values and only uses chunks already resident. An iterator
/// with its own merge is told instead, by its short-scan look-ahead
/// (`db/read/scan_ahead.rs`), once its scan has proven long
/// ([`BlobReadahead::set_long`]); until then it does not call
/// [`BlobReadahead::value`].
const SHARED_AFTER: u64 = 64;

/// Where the window after one of `len` bytes at `start` begins: its tail
/// is read again, so that a value that straddles the boundary is whole in
/// one of them.
fn next_window(start: u64, len: usize) -> u64 {
    let overlap = (len / 2).min(FIRST_WINDOW) / PAGE * PAGE;
    start + (len - overlap) as u64
}

struct Window {
    start: u64,
    buf: Arc<AlignedBuf>,
    got: usize,
}

/// A blob value an iterator read: its own bytes, or a view into a shared
/// chunk, which stays resident (and is never evicted) while the view lives.
pub(crate) enum BlobValue {
    /// Bytes of its own.
    Owned(Vec<u8>),
    /// `len` bytes at `at` of a shared chunk of blob file `file` (checked:
    /// within it, and against the pointer's CRC).
    Shared {
        file: u64,
        chunk: Arc<Chunk>,
        at: usize,
        len: usize,
    },
}

impl BlobValue {
    /// A second view of a value in a shared chunk (`None` for bytes of
    /// its own, which are not copied).
    pub(crate) fn share(&self) -> Option<BlobValue> {
        match self {
            BlobValue::Owned(_) => None,
            BlobValue::Shared {
                file,
                chunk,
                at,
                len,
            } => Some(BlobValue::Shared {
                file: *file,
                chunk: Arc::clone(chunk),
                at: *at,
                len: *len,
            }),
        }
    }

    /// The value's bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            BlobValue::Owned(v) => v,
            BlobValue::Shared { chunk, at, len, .. } => &chunk.bytes()[*at..*at + *len],
        }
    }
}

impl std::fmt::Debug for BlobValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlobValue::Owned(v) => write!(f, "Owned({} bytes)", v.len()),
            BlobValue::Shared {
                file,
                chunk,
                at,
                len,
            } => {
                write!(
                    f,
                    "Shared({len} bytes at {} of file {file})",
                    chunk.start + *at as u64
                )
            }
        }
    }
}

struct Pending {
    id: u64,
    start: u64,
    len: usize,
}

/// The read-ahead state of one blob file.
struct Stream {
    file: u64,
    /// End offset of the last value read from the file.
    last_end: u64,
    /// Values read in a row, each just after the one before.
    run: u32,
    size: usize,
    window: Option<Window>,
    /// Windows being read on the pool, in file order.
    pending: std::collections::VecDeque<Pending>,
    /// When it was last used (for replacing the least recent).
    used: u64,
}

/// A window buffer of `len` bytes: a pooled one when the thread has one.
fn buffer(len: usize) -> AlignedBuf {
    match take_chunk_buffer(len) {
        Some(mut b) => {
            b.resize(len);
            b
        }
        None => AlignedBuf::new(len),
    }
}

/// Gives a window's buffer back to the pool once nothing else holds it.
fn recycle(buf: Arc<AlignedBuf>) {
    if let Ok(b) = Arc::try_unwrap(buf) {
        give_chunk_buffer(b);
    }
}

/// One iterator's blob read-ahead state.
pub(crate) struct BlobReadahead {
    max: usize,
    pool: Option<Arc<ReaderPool>>,
    worker: Option<PrefetchWorker>,
    streams: Vec<Stream>,
    /// Prefetches that arrived while another was awaited.
    arrived: Vec<(u64, Arc<AlignedBuf>, Result<usize>)>,
    next_id: u64,
    clock: u64,
    /// Values this iterator read (for [`SHARED_AFTER`]).
    values: u64,
    /// The shared chunks this iterator holds (made at its first value
    /// through the pool): a value in one of them is served without a
    /// lookup in the pool, whose locks and counters every scan contends
    /// for.
    held: Option<HeldChunks>,
    /// Loads of shared chunks pace (see [`Self::set_pacing`]).
    pace: bool,
    /// The scan has proven long: shared chunks are loaded from the first
    /// value asked for (see [`SHARED_AFTER`]).
    long: bool,
}

impl std::fmt::Debug for BlobReadahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobReadahead")
            .field("max", &self.max)
            .field("streams", &self.streams.len())
            .finish()
    }
}

impl BlobReadahead {
    /// Windows of up to `max` bytes (0: no read-ahead), the next one read
    /// on `pool` when given.
    pub(crate) fn new(max: usize, pool: Option<Arc<ReaderPool>>) -> BlobReadahead {
        BlobReadahead {
            max,
            pool,
            worker: None,
            streams: Vec::new(),
            arrived: Vec::new(),
            next_id: 1,
            clock: 0,
            values: 0,
            held: None,
            pace: true,
            long: false,
        }
    }

    /// The scan has proven long (its look-ahead says so): from now on
    /// values come through [`Self::value`], which reads windows or loads
    /// shared chunks at once; `false` when a new (short) run starts.
    pub(crate) fn set_long(&mut self, long: bool) {
        self.long = long;
    }

    /// The value `p` from a shared chunk that is already in memory (one
    /// this iterator holds, or one resident in the pool), with no IO;
    /// `None` when there is none (or no pool).
    pub(crate) fn resident_value(
        &mut self,
        readers: &BlobReaders,
        p: &BlobPointer,
    ) -> Result<Option<BlobValue>> {
        if self.max == 0 {
            return Ok(None);
        }
        let Some(shared) = readers.shared() else {
            return Ok(None);
        };
        let held = self.held.get_or_insert_with(|| HeldChunks::new(shared));
        shared_value(shared, readers, p, (false, self.pace), held)
    }

    /// Whether loads of shared chunks pace (wait a moment while other
    /// scans load again) and chunks are held: yes for a scan of its own,
    /// no in a shared pass (whose window keeps its chunks).
    pub(crate) fn set_pacing(&mut self, pace: bool) {
        self.pace = pace;
    }

    /// True when this state reads ahead (a window size and a pool).
    pub(crate) fn reads_ahead(&self) -> bool {
        self.max > 0 && self.pool.is_some()
    }

    /// Takes back a value this state served, once the caller is done
    /// with it: if it lent a held chunk, the chunk is held again.
    pub(crate) fn recycle(&mut self, v: BlobValue) {
        if let (BlobValue::Shared { file, chunk, .. }, Some(h)) = (v, self.held.as_mut()) {
            h.give_back(file, chunk);
        }
    }

    /// The value `raw` (an encoded pointer) names.
    pub(crate) fn value(&mut self, readers: &BlobReaders, raw: &[u8]) -> Result<BlobValue> {
        let p = BlobPointer::decode(raw)
            .ok_or_else(|| Error::corruption(readers.dir(), 0, "malformed blob pointer"))?;
        if self.max == 0 {
            return readers.value_of(&p).map(BlobValue::Owned);
        }
        if let Some(shared) = readers.shared() {
            // The database's shared chunks replace this iterator's own
            // windows: the memory is the pool's, bounded however many
            // iterators there are.
            self.values += 1;
            let load = self.long || self.values > SHARED_AFTER;
            let held = self.held.get_or_insert_with(|| HeldChunks::new(shared));
            return match shared_value(shared, readers, &p, (load, self.pace), held)? {
                Some(v) => Ok(v),
                None => readers.value_of(&p).map(BlobValue::Owned),
            };
        }
        if readers.is_being_written(p.file_number) {
            return readers.value_of(&p).map(BlobValue::Owned);
        }
        let end = p.offset + u64::from(p.length);
        let i = self.stream(p.file_number);
        let s = &mut self.streams[i];
        let in_order = p.offset >= s.last_end && p.offset - s.last_end <= MAX_GAP;
        s.run = if in_order { s.run + 1 } else { 0 };
        s.last_end = end;
        if let Some(v) = serve(s, readers, &p)? {
            return Ok(BlobValue::Owned(v));
        }
        if s.run < 2 {
            return readers.value_of(&p).map(BlobValue::Owned);
        }
        s.size = (s.size * 2).clamp(FIRST_WINDOW, self.max.max(FIRST_WINDOW));
        let start = p.offset / PAGE as u64 * PAGE as u64;
        let need = (end - start).div_ceil(PAGE as u64) as usize * PAGE;
        let window = match self.take_pending(i, start, end) {
            Some(w) => w,
            None => {
                let len = need.max(self.streams[i].size);
                let mut buf = buffer(len);
                let got = readers
                    .reader(p.file_number)?
                    .read_into(buf.as_mut_slice(), start)?;
                Window {
                    start,
                    buf: Arc::new(buf),
                    got,
                }
            }
        };
        let full = window.got == window.buf.as_slice().len();
        let mut next = next_window(window.start, window.got);
        if let Some(old) = self.streams[i].window.replace(window) {
            recycle(old.buf);
        }
        if full {
            if let Some(last) = self.streams[i].pending.back() {
                next = next_window(last.start, last.len);
            }
            while self.streams[i].pending.len() < DEPTH && self.prefetch(readers, i, next) {
                let last = self.streams[i].pending.back().map(|p| (p.start, p.len));
                match last {
                    Some((start, len)) => next = next_window(start, len),
                    None => break,
                }
            }
        }
        match serve(&self.streams[i], readers, &p)? {
            Some(v) => Ok(BlobValue::Owned(v)),
            None => readers.value_of(&p).map(BlobValue::Owned),
        }
    }

    /// The index of `file`'s stream, made (replacing the least recently
    /// used one) if there is none.
    fn stream(&mut self, file: u64) -> usize {
        self.clock += 1;
        let now = self.clock;
        if let Some(i) = self.streams.iter().position(|s| s.file == file) {
            self.streams[i].used = now;
            return i;
        }
        let fresh = Stream {
            file,
            last_end: 0,
            run: 0,
            size: 0,
            window: None,
            pending: std::collections::VecDeque::new(),
            used: now,
        };
        if self.streams.len() < STREAMS {
            self.streams.push(fresh);
            return self.streams.len() - 1;
        }
        let i = self
            .streams
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.used)
            .map_or(0, |(i, _)| i);
        // A prefetch of the replaced stream still arrives; it is recycled
        // then (see `take_pending`).
        if let Some(w) = std::mem::replace(&mut self.streams[i], fresh).window {
            recycle(w.buf);
        }
        i
    }

    /// Stream `i`'s prefetched window if it covers `start..end`.
    fn take_pending(&mut self, i: usize, start: u64, end: u64) -> Option<Window> {
        let pending = self.streams[i].pending.pop_front()?;
        if !(pending.start <= start && end <= pending.start + pending.len as u64) {
            // Off the expected path: the answers are dropped as they arrive.
            self.streams[i].pending.clear();
            return None;
        }
        let (buf, got) = loop {
            if let Some(k) = self.arrived.iter().position(|a| a.0 == pending.id) {
                let (_, buf, got) = self.arrived.swap_remove(k);
                break (buf, got);
            }
            let done = self.worker.as_ref()?.done.recv().ok()?;
            let live = self
                .streams
                .iter()
                .any(|s| s.pending.iter().any(|p| p.id == done.id));
            if done.id == pending.id {
                break (done.buf, done.got);
            }
            if live {
                self.arrived.push((done.id, done.buf, done.got));
            } else {
                recycle(done.buf);
            }
        };
        let got = got.ok()?;
        if pending.start + (got as u64) < end {
            return None; // short: the synchronous read finds out why
        }
        Some(Window {
            start: pending.start,
            buf,
            got,
        })
    }

    /// Starts reading a window of stream `i` at `start` on the pool;
    /// false if it could not be queued.
    fn prefetch(&mut self, readers: &BlobReaders, i: usize, start: u64) -> bool {
        let Some(pool) = &self.pool else {
            return false;
        };
        if self.worker.is_none() {
            self.worker = PrefetchWorker::new(pool);
        }
        let s = &self.streams[i];
        let (Some(worker), Ok(reader)) = (&self.worker, readers.reader(s.file)) else {
            return false;
        };
        let len = (s.size * 2).min(self.max.max(FIRST_WINDOW));
        let id = self.next_id;
        self.next_id += 1;
        let job = PrefetchJob {
            id,
            file: reader.file(),
            start,
            buf: buffer(len),
            bounds: None,
            early: true,
            _memory: None,
        };
        if !worker.send(job) {
            return false;
        }
        self.streams[i]
            .pending
            .push_back(Pending { id, start, len });
        true
    }
}

/// The value `p` from the shared chunk that holds all of it: one the
/// iterator holds (`held`), a resident one, or (with `load`) one read now;
/// a chunk found in the pool is held from then on (while `held` has room).
/// `None` for a value across a chunk boundary, in a file a lane still
/// writes, or when the pool has no room: the caller reads it alone.
fn shared_value(
    shared: &SharedChunks,
    readers: &BlobReaders,
    p: &BlobPointer,
    (load, pace): (bool, bool),
    held: &mut HeldChunks,
) -> Result<Option<BlobValue>> {
    let chunk = CHUNK as u64;
    let index = p.offset / chunk;
    let end = p.offset + u64::from(p.length);
    if end > (index + 1) * chunk {
        return Ok(None);
    }
    held.tick(shared);
    // Chunks never change once resident and file numbers are never reused,
    // so a held chunk is the pool's chunk `index` still (and its file was
    // sealed when it was first taken). It is taken (lent to the value),
    // not cloned.
    let c = match held.take(p.file_number, index) {
        Some(c) => c,
        None => {
            if readers.is_being_written(p.file_number) {
                return Ok(None);
            }
            let c = if load {
                let fetched = shared.fetch(p.file_number, index, pace, |buf, start| {
                    readers.reader(p.file_number)?.read_into(buf, start)
                })?;
                if let Some((_, true)) = &fetched {
                    // A miss: the chunks after it are read ahead, so the
                    // scan in front does not wait for each of them in turn.
                    for ahead in 1..=AHEAD {
                        readers.prefetch_shared(p.file_number, index + ahead, pace);
                    }
                }
                fetched.map(|(c, _)| c)
            } else {
                shared.resident(p.file_number, index)
            };
            let Some(c) = c else {
                return Ok(None);
            };
            // In a shared pass (no pacing) the pass's window keeps the
            // chunks it needs; holding them here too would pin half the
            // pool for one iterator.
            if pace {
                held.hold_lent(p.file_number, index, &c);
            }
            c
        }
    };
    // A value another scan already checked against the same pointer needs
    // no second CRC (the chunk's bytes never change).
    let at = (p.offset - c.start) as usize;
    let len = p.length as usize;
    let whole = c.bytes().len() >= at + len;
    if !(whole && c.is_checked(at, len, p.crc)) {
        let ok = c
            .bytes()
            .get(at..at + len)
            .is_some_and(|v| value_crc(v) == p.crc);
        if !ok {
            // The same check as any read, now for its error (the path is
            // only made here, not for every value checked). The chunk goes
            // back to the table first: no value is served from it.
            let err = value_from_span(p, c.bytes(), c.start, &readers.path_of(p.file_number))
                .err()
                .unwrap_or_else(|| {
                    Error::corruption(
                        readers.path_of(p.file_number),
                        p.offset,
                        "blob value does not match its pointer's checksum",
                    )
                });
            held.give_back(p.file_number, c);
            return Err(err);
        }
        c.mark_checked(at, len, p.crc);
    }
    // No copy: the iterator holds the chunk (resident, unevictable) while
    // it stays on this value.
    Ok(Some(BlobValue::Shared {
        file: p.file_number,
        chunk: c,
        at,
        len,
    }))
}

/// The value from stream `s`'s window, if the window holds all of it.
fn serve(s: &Stream, readers: &BlobReaders, p: &BlobPointer) -> Result<Option<Vec<u8>>> {
    let Some(w) = &s.window else {
        return Ok(None);
    };
    let end = p.offset + u64::from(p.length);
    if p.offset < w.start || end > w.start + w.got as u64 {
        return Ok(None);
    }
    let path = readers.path_of(p.file_number);
    let span = &w.buf.as_slice()[..w.got];
    Ok(Some(value_from_span(p, span, w.start, &path)?.to_vec()))
}

impl Drop for BlobReadahead {
    /// The pool skips the prefetches it has not started; the windows go
    /// back to the thread's buffer pool.
    fn drop(&mut self) {
        if let Some(w) = &self.worker {
            w.cancel_below
                .store(self.next_id, std::sync::atomic::Ordering::Release);
        }
        for s in self.streams.drain(..) {
            if let Some(w) = s.window {
                recycle(w.buf);
            }
        }
        for (_, buf, _) in self.arrived.drain(..) {
            recycle(buf);
        }
    }
}
