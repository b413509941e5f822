//! [`BlobReadahead`]: read-ahead of blob values for one iterator
//! (`docs/blob-files.md`, "Reads").
//!
//! A scan in key order over values that compaction relocated reads a blob
//! file front to back. Once two values in a row lie forward of each other
//! in the same file, the iterator reads a window of the file (64 KiB,
//! doubling to `max`) and serves the next values from it, each checked
//! against its pointer's CRC; with a reader pool, the next window is read
//! on a pool thread while this one is served. Anything else (another file,
//! a step back, a value larger than the window, a lane's open file) is one
//! aligned read per value, as for `get`.
//!
//! Single-threaded (owned by one iterator). Invariants: a value is served
//! from a window only if the window holds all of its bytes; a window is
//! never read from a file a write lane still appends to.

use std::sync::Arc;

use super::cache::BlobReaders;
use super::format::{BlobPointer, PAGE, value_from_span};
use crate::error::{Error, Result};
use crate::io::AlignedBuf;
use crate::sst::{PrefetchJob, PrefetchWorker, ReaderPool};

/// Smallest window.
const FIRST_WINDOW: usize = 64 << 10;
/// A gap up to this size between two values still counts as forward
/// (chunk entries and trailers, values of deleted keys).
const MAX_GAP: u64 = 1 << 20;

struct Window {
    file: u64,
    start: u64,
    buf: Arc<AlignedBuf>,
    got: usize,
}

struct Pending {
    id: u64,
    file: u64,
    start: u64,
    len: usize,
}

/// One iterator's blob read-ahead state.
pub(crate) struct BlobReadahead {
    max: usize,
    pool: Option<Arc<ReaderPool>>,
    worker: Option<PrefetchWorker>,
    window: Option<Window>,
    pending: Option<Pending>,
    next_id: u64,
    /// The file and end offset of the last value read.
    last: (u64, u64),
    /// Values read in a row, each forward of the one before in one file.
    run: u32,
    size: usize,
}

impl std::fmt::Debug for BlobReadahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobReadahead")
            .field("max", &self.max)
            .field("run", &self.run)
            .field("size", &self.size)
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
            window: None,
            pending: None,
            next_id: 1,
            last: (0, 0),
            run: 0,
            size: 0,
        }
    }

    /// The value `raw` (an encoded pointer) names.
    pub(crate) fn value(&mut self, readers: &BlobReaders, raw: &[u8]) -> Result<Vec<u8>> {
        let p = BlobPointer::decode(raw)
            .ok_or_else(|| Error::corruption(readers.dir(), 0, "malformed blob pointer"))?;
        let end = p.offset + u64::from(p.length);
        let forward = p.file_number == self.last.0
            && p.offset >= self.last.1
            && p.offset - self.last.1 <= MAX_GAP;
        self.run = if forward { self.run + 1 } else { 0 };
        self.last = (p.file_number, end);
        if let Some(v) = self.serve(readers, &p)? {
            return Ok(v);
        }
        if self.max == 0 || self.run < 2 || readers.is_being_written(p.file_number) {
            return readers.value_of(&p);
        }
        self.size = (self.size * 2).clamp(FIRST_WINDOW, self.max.max(FIRST_WINDOW));
        let start = p.offset / PAGE as u64 * PAGE as u64;
        let len = (end - start).div_ceil(PAGE as u64) as usize * PAGE;
        let len = len.max(self.size);
        let w = match self.take_pending(p.file_number, start, end) {
            Some(w) => w,
            None => {
                let reader = readers.reader(p.file_number)?;
                let mut buf = AlignedBuf::new(len);
                let got = reader.read_into(buf.as_mut_slice(), start)?;
                Window {
                    file: p.file_number,
                    start,
                    buf: Arc::new(buf),
                    got,
                }
            }
        };
        let full = w.got == w.buf.as_slice().len();
        // The next window overlaps this one's tail, so that a value that
        // straddles the boundary is whole in it.
        let overlap = (w.got / 2).min(FIRST_WINDOW) / PAGE * PAGE;
        let next_start = w.start + (w.got - overlap) as u64;
        self.window = Some(w);
        if full {
            self.prefetch(readers, p.file_number, next_start);
        }
        match self.serve(readers, &p)? {
            Some(v) => Ok(v),
            None => readers.value_of(&p),
        }
    }

    /// The value from the current window, if it holds all of it.
    fn serve(&self, readers: &BlobReaders, p: &BlobPointer) -> Result<Option<Vec<u8>>> {
        let Some(w) = &self.window else {
            return Ok(None);
        };
        let end = p.offset + u64::from(p.length);
        if w.file != p.file_number || p.offset < w.start || end > w.start + w.got as u64 {
            return Ok(None);
        }
        let path = readers.path_of(p.file_number);
        let span = &w.buf.as_slice()[..w.got];
        Ok(Some(value_from_span(p, span, w.start, &path)?.to_vec()))
    }

    /// The prefetched window if it starts where this one must and covers
    /// `end`; else the prefetch is abandoned.
    fn take_pending(&mut self, file: u64, start: u64, end: u64) -> Option<Window> {
        let pending = self.pending.take()?;
        let worker = self.worker.as_ref()?;
        let usable = pending.file == file
            && pending.start <= start
            && end <= pending.start + pending.len as u64;
        if !usable {
            worker
                .cancel_below
                .store(pending.id + 1, std::sync::atomic::Ordering::Release);
            return None;
        }
        loop {
            let done = worker.done.recv().ok()?;
            if done.id != pending.id {
                continue; // an abandoned one
            }
            let got = done.got.ok()?;
            if pending.start + (got as u64) < end {
                return None; // short: the synchronous read finds out why
            }
            return Some(Window {
                file,
                start: pending.start,
                buf: done.buf,
                got,
            });
        }
    }

    /// Starts reading the next window on the pool.
    fn prefetch(&mut self, readers: &BlobReaders, file: u64, start: u64) {
        let Some(pool) = &self.pool else {
            return;
        };
        if self.worker.is_none() {
            self.worker = PrefetchWorker::new(pool);
        }
        let (Some(worker), Ok(reader)) = (&self.worker, readers.reader(file)) else {
            return;
        };
        let len = (self.size * 2).min(self.max.max(FIRST_WINDOW));
        let id = self.next_id;
        self.next_id += 1;
        let job = PrefetchJob {
            id,
            file: reader.file(),
            start,
            buf: AlignedBuf::new(len),
            bounds: None,
            early: true,
        };
        if worker.send(job) {
            self.pending = Some(Pending {
                id,
                file,
                start,
                len,
            });
        }
    }
}
