//! Background reads of [`Readahead`]: chunks the process-wide reader pool
//! reads ahead of a proven-sequential scan, and the rest of a learned run
//! read in pieces, handed to the consumer as they arrive (see the parent
//! module's docs for the policy and how their blocks are verified).
//!
//! Buffers travel to the reader pool and back through channels; a state
//! that abandons its chunks raises the job id below which the pool skips
//! them. Single-threaded on the consumer's side.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A chunk being read in the background.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) id: u64,
    pub(super) start: u64,
    pub(super) len: usize,
}

/// How long a consumer waiting for a background chunk polls for it before
/// it blocks. The chunk is at the disk and due within a few hundred µs;
/// blocking and being woken costs 40–70 µs on a VM (measured on the test
/// machine: the gap between the reader's send and the consumer's return),
/// once or twice per seek of a short scan (`docs/readahead.md`).
pub(super) const POLL_BEFORE_BLOCKING: std::time::Duration = std::time::Duration::from_millis(1);

/// Receives from `rx`: polls it (yielding the core between rounds, so a
/// runnable thread, such as the reader itself, is not kept off it) for up
/// to [`POLL_BEFORE_BLOCKING`], then blocks.
#[inline(never)]
pub(super) fn recv_polling<T>(rx: &mpsc::Receiver<T>) -> std::result::Result<T, mpsc::RecvError> {
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

impl Readahead {
    /// The first block of a run predicted to read `predicted` more bytes
    /// (a seek on an iterator whose recent runs went about as far): reads
    /// the block with up to [`learned_first`] bytes after it; at the run's
    /// first sequential access the rest of the prediction (up to `limit`)
    /// goes to the background worker as pieces of [`LEARNED_PIECE_MIN`]
    /// doubling to [`LEARNED_PIECE_MAX`], all queued at once so the disk
    /// never waits for the consumer. A run longer than predicted goes on
    /// with the ordinary policy.
    pub(super) fn read_learned_run(
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
    pub(super) fn prefetch_next(&mut self, file: &Arc<dyn RandomAccessFile>, limit: u64) {
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
                self.worker = self.pool.as_ref().and_then(Worker::new);
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
                _memory: self.memory.clone(),
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
    pub(super) fn abandon(&mut self) {
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

    /// The block `[h.offset, end)` from the first chunk being read in the
    /// background, when it starts in the current buffer's tail or inside
    /// that chunk: waits for the chunk, makes it the current buffer (a
    /// block cut by the chunk boundary is put together from both) and
    /// starts the next one. `None` when the prefetch does not serve it.
    pub(super) fn take_prefetched(
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
}
