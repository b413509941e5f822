//! [`ChunkWriter`]: the writes of staged chunks to their blob file, up to
//! a fixed number in flight at once, in the background
//! (`docs/blob-files.md`, "Chunk writes").
//!
//! Each write is handed to the lanes' [`ChunkRing`], whose one long-lived
//! thread (`varve-blob-io`) submits it to io_uring with `IOSQE_ASYNC` (a
//! kernel worker does the direct write's page pinning and device kick) and
//! sends its result back on this writer's channel; the lane's writer goes
//! on staging the next chunk. A write never belongs to the thread that
//! asked for it, so one that exits with its chunk in flight leaves nothing
//! behind (issue #50: writes submitted by threads that had exited never
//! completed, and the lane hung). Where io_uring is unavailable the write
//! is done at once, as before. Writes are reaped oldest first
//! ([`ChunkWriter::wait_oldest`]) or all together ([`ChunkWriter::wait`]),
//! and the caller collects a write's result before it touches that write's
//! buffer again.
//!
//! Single-threaded (`&mut self`; the lane's mutex), and `Send`: any thread
//! may start, wait for or reap a write. Invariants: at most `depth` writes
//! are in flight, kept in the order they started; a write's buffer stays
//! mapped and unchanged until its result came back (the `unsafe` contract
//! of [`ChunkWriter::start`], which [`super::stage::StagedFile`] keeps by
//! reusing or dropping a slot only after its write was waited for); a
//! write that failed or came up short (ECANCELED included) is finished
//! synchronously before `wait` reports it done; dropping the writer waits
//! for every write still in flight, and only then lets go of its
//! [`ChunkRing`] handle.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};

use super::chunk_ring::{ChunkRing, WriteRequest};
use crate::error::Result;
use crate::io::InPlaceFile;

/// How long a wait for a result blocks before it checks that the ring's
/// thread still runs (it always does while a writer holds the ring; this
/// only keeps an impossible loss from hanging a lane).
const RESULT_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// A write started and not yet reaped.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// The write's id, sent back with its result.
    id: u64,
    /// The caller's name for the write (a staging slot).
    tag: usize,
    ptr: *const u8,
    len: usize,
    offset: u64,
    /// The write's result once it came back (results may arrive out of
    /// order).
    result: Option<i32>,
}

/// Writes chunks in the background, up to `depth` at a time.
pub(crate) struct ChunkWriter {
    ring: Arc<ChunkRing>,
    depth: usize,
    next_id: u64,
    in_flight: VecDeque<InFlight>,
    /// Results of this writer's writes: the ring's thread holds a clone
    /// of `reply` for each write it has.
    reply: Sender<(u64, i32)>,
    results: Receiver<(u64, i32)>,
}

// SAFETY: the raw pointers in `in_flight` name buffers whose owner (the
// staged file holding this writer) moves with it; the writer dereferences
// one only in `wait_oldest`, after the write's result came back, and the
// kernel reads them (for the ring's thread) until then.
unsafe impl Send for ChunkWriter {}

impl std::fmt::Debug for ChunkWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkWriter")
            .field("ring", &self.ring)
            .field("depth", &self.depth)
            .field(
                "in_flight",
                &self
                    .in_flight
                    .iter()
                    .map(|w| (w.offset, w.len))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ChunkWriter {
    /// A writer of up to `depth` (at least 1) writes at once through
    /// `ring` (synchronous where it has no thread).
    pub(crate) fn new(depth: usize, ring: &Arc<ChunkRing>) -> ChunkWriter {
        let (reply, results) = mpsc::channel();
        ChunkWriter {
            ring: Arc::clone(ring),
            depth: depth.max(1),
            next_id: 1,
            in_flight: VecDeque::with_capacity(depth),
            reply,
            results,
        }
    }

    /// A writer that always writes synchronously (tests).
    #[cfg(test)]
    pub(crate) fn synchronous() -> ChunkWriter {
        ChunkWriter::new(1, &ChunkRing::synchronous())
    }

    /// How many writes are in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// The tag of the oldest write in flight.
    pub(crate) fn oldest(&self) -> Option<usize> {
        self.in_flight.front().map(|w| w.tag)
    }

    /// True if a write tagged `tag` is in flight.
    pub(crate) fn is_writing(&self, tag: usize) -> bool {
        self.in_flight.iter().any(|w| w.tag == tag)
    }

    /// Starts writing `buf` to `file` at `offset` (synchronously without
    /// io_uring), under the caller's `tag`. Call with fewer than `depth`
    /// writes in flight.
    ///
    /// # Safety
    ///
    /// `buf` must stay valid and unchanged until the write was waited for
    /// ([`wait_oldest`](Self::wait_oldest) returned its tag, or
    /// [`wait`](Self::wait) returned) or the writer was dropped.
    pub(crate) unsafe fn start(
        &mut self,
        file: &Arc<dyn InPlaceFile>,
        path: &Path,
        buf: &[u8],
        offset: u64,
        tag: usize,
    ) -> Result<()> {
        debug_assert!(self.in_flight.len() < self.depth, "at most depth writes");
        let _ = path;
        let sync = |buf: &[u8]| file.write_at(buf, offset);
        if self.in_flight.len() >= self.depth {
            return sync(buf);
        }
        // A result is `i32` bytes.
        let Some(len) = u32::try_from(buf.len())
            .ok()
            .filter(|&l| i32::try_from(l).is_ok())
        else {
            return sync(buf);
        };
        // A file system that injects faults sees the write here.
        file.check_write(u64::from(len))?;
        let id = self.next_id;
        self.next_id += 1;
        let req = WriteRequest {
            file: Arc::clone(file),
            ptr: buf.as_ptr(),
            len,
            offset,
            id,
            reply: self.reply.clone(),
        };
        // SAFETY: `buf` stays valid and unchanged until this write's
        // result came back: this function's contract, and the drop waits
        // for every result.
        if unsafe { self.ring.submit(req) }.is_err() {
            return sync(buf);
        }
        self.in_flight.push_back(InFlight {
            id,
            tag,
            ptr: buf.as_ptr(),
            len: buf.len(),
            offset,
            result: None,
        });
        Ok(())
    }

    /// Waits for the oldest write in flight (if any) and returns its tag;
    /// a short or failed write is finished (or done again) here.
    pub(crate) fn wait_oldest(
        &mut self,
        file: &dyn InPlaceFile,
        path: &Path,
    ) -> Result<Option<usize>> {
        if self.in_flight.is_empty() {
            return Ok(None);
        }
        let res = self.reap_oldest();
        let Some(w) = self.in_flight.pop_front() else {
            return Ok(None);
        };
        // A failed write is done again here, and its error (if it fails
        // again) is the one reported. Besides real errors this covers
        // ECANCELED, should the kernel ever cancel a write (the ring's
        // thread, which submitted it, outlives it, so none is expected).
        let written = res.unwrap_or(0).min(w.len);
        if written < w.len {
            // SAFETY: `start`'s contract keeps the buffer valid and
            // unchanged until this wait returns.
            let rest = unsafe { std::slice::from_raw_parts(w.ptr.add(written), w.len - written) };
            let _ = path;
            file.write_at(rest, w.offset + written as u64)?;
        }
        Ok(Some(w.tag))
    }

    /// Reaps, without waiting, the oldest writes that already completed
    /// (a short or failed one is finished here, as in
    /// [`wait_oldest`](Self::wait_oldest)), calling `done` with each tag,
    /// oldest first.
    pub(crate) fn reap_completed(
        &mut self,
        file: &dyn InPlaceFile,
        path: &Path,
        mut done: impl FnMut(usize),
    ) -> Result<()> {
        while let Ok((id, res)) = self.results.try_recv() {
            self.note(id, res);
        }
        while self.in_flight.front().is_some_and(|w| w.result.is_some()) {
            if let Some(tag) = self.wait_oldest(file, path)? {
                done(tag);
            }
        }
        Ok(())
    }

    /// Waits for every write in flight; the first error, after all were
    /// waited for.
    #[cfg(test)]
    pub(crate) fn wait(&mut self, file: &dyn InPlaceFile, path: &Path) -> Result<()> {
        let mut first = Ok(());
        while !self.in_flight.is_empty() {
            if let Err(e) = self.wait_oldest(file, path)
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }

    /// Records a result that came back.
    fn note(&mut self, id: u64, res: i32) {
        if let Some(w) = self.in_flight.iter_mut().find(|w| w.id == id) {
            w.result = Some(res);
        }
    }

    /// Blocks until the oldest write in flight completed; the bytes it
    /// wrote.
    fn reap_oldest(&mut self) -> std::io::Result<usize> {
        loop {
            if let Some(r) = self.in_flight.front().and_then(|w| w.result) {
                return if r < 0 {
                    Err(std::io::Error::from_raw_os_error(-r))
                } else {
                    Ok(r as usize)
                };
            }
            match self.results.recv_timeout(RESULT_POLL) {
                Ok((id, res)) => self.note(id, res),
                Err(RecvTimeoutError::Timeout) if self.ring.alive() => {}
                // Cannot happen while this writer holds the ring (its
                // thread ends only when the last holder is gone, and a
                // panic there aborts): with no thread there is no write
                // in the kernel either, and the caller writes it again.
                Err(_) => {
                    return Err(std::io::Error::other(
                        "the blob write thread ended before the write's result came",
                    ));
                }
            }
        }
    }
}

impl Drop for ChunkWriter {
    fn drop(&mut self) {
        // The kernel may still read the buffers: wait for every write,
        // whatever the result (the owner gives the bytes up or rewrites
        // them).
        while !self.in_flight.is_empty() {
            let _ = self.reap_oldest();
            self.in_flight.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new empty file `name` in `dir`, open for reading and writing.
    fn scratch(dir: &tempfile::TempDir, name: &str) -> (std::path::PathBuf, Arc<dyn InPlaceFile>) {
        let path = dir.path().join(name);
        let file = crate::io::PosixInPlace::open(&path, true, false).expect("open");
        (path, Arc::new(file))
    }

    #[test]
    fn a_write_in_flight_lands_once_waited_for_or_dropped() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, file) = scratch(&dir, "f");
        let data: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let mut w = ChunkWriter::new(2, &ChunkRing::new());
        // SAFETY: `data` outlives the write: waited for below.
        unsafe { w.start(&file, &path, &data[..4096], 0, 0) }.expect("start");
        w.wait(file.as_ref(), &path).expect("wait");
        assert_eq!(w.in_flight(), 0);
        // SAFETY: `data` outlives `w`, whose drop reaps the write.
        unsafe { w.start(&file, &path, &data[4096..], 4096, 1) }.expect("start");
        drop(w);
        assert_eq!(std::fs::read(&path).expect("read"), data);
        // Synchronous: done at start.
        let mut s = ChunkWriter::synchronous();
        // SAFETY: synchronous, nothing stays in flight.
        unsafe { s.start(&file, &path, &[7u8; 10], 0, 0) }.expect("start");
        assert_eq!(s.in_flight(), 0);
        s.wait(file.as_ref(), &path).expect("nothing to wait for");
        assert_eq!(std::fs::read(&path).expect("read")[..10], [7u8; 10]);
    }

    /// Completed writes are reaped without waiting, oldest first, and
    /// only those: a later write that completed waits for the ones before.
    #[test]
    fn completed_writes_are_reaped_without_waiting_in_order() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, file) = scratch(&dir, "h");
        let data: Vec<u8> = (0..3 * 4096).map(|i| (i % 241) as u8).collect();
        let mut w = ChunkWriter::new(3, &ChunkRing::new());
        for i in 0..3 {
            let chunk = &data[i * 4096..(i + 1) * 4096];
            // SAFETY: `data` outlives `w` (reaped below or by its drop).
            unsafe { w.start(&file, &path, chunk, (i * 4096) as u64, i) }.expect("start");
        }
        let mut reaped = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while reaped.len() < 3 && std::time::Instant::now() < deadline {
            w.reap_completed(file.as_ref(), &path, |tag| reaped.push(tag))
                .expect("reap");
            assert_eq!(w.in_flight(), 3 - reaped.len());
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(reaped, vec![0, 1, 2], "all reaped, oldest first");
        assert_eq!(std::fs::read(&path).expect("read"), data);
        // Nothing in flight: nothing to do.
        w.reap_completed(file.as_ref(), &path, |_| panic!("nothing was in flight"))
            .expect("reap");
    }

    /// The thread that started a write exits before it is waited for (the
    /// kernel may cancel the request then): the wait still lands the bytes.
    #[test]
    fn a_write_started_by_a_thread_that_exited_still_lands() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, file) = scratch(&dir, "g");
        let data: Vec<u8> = (0..4 << 20).map(|i| (i % 239) as u8).collect();
        let mut w = ChunkWriter::new(2, &ChunkRing::new());
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: `data` outlives the write: waited for below.
                unsafe { w.start(&file, &path, &data, 0, 0) }.expect("start");
            });
        });
        w.wait(file.as_ref(), &path).expect("wait");
        assert_eq!(std::fs::read(&path).expect("read"), data);
    }

    /// Issue #50: threads that start chunk writes and exit at once, with
    /// their writes in flight, round after round; the writes are waited
    /// for by other threads, and later writes from yet other threads
    /// complete too. Direct writes on the build disk, like a lane's.
    #[test]
    fn writes_of_threads_that_exited_complete_and_so_do_later_ones() {
        crate::blob::chunk_ring::within(
            std::time::Duration::from_secs(120),
            "chunk writes started by short-lived threads",
            || {
                const CHUNK: usize = 1 << 20;
                const PLACES: usize = 16;
                let dir = tempfile::tempdir_in(".").expect("tempdir on the build disk");
                let path = dir.path().join("exits");
                let open = |direct: bool| crate::io::PosixInPlace::open(&path, true, direct);
                let file: Arc<dyn InPlaceFile> =
                    Arc::new(open(true).or_else(|_| open(false)).expect("open"));
                // One page-aligned buffer that never changes: any number of
                // writes may read it at once.
                let layout = std::alloc::Layout::from_size_align(CHUNK, 4096).expect("layout");
                // SAFETY: the layout has a non-zero size; freed below, after
                // every write was waited for.
                let ptr = unsafe { std::alloc::alloc(layout) };
                assert!(!ptr.is_null());
                // SAFETY: `ptr` is a fresh allocation of `CHUNK` bytes.
                let buf = unsafe { std::slice::from_raw_parts_mut(ptr, CHUNK) };
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = (i % 253) as u8;
                }
                let buf: &[u8] = buf;
                let ring = ChunkRing::new();
                let w = parking_lot::Mutex::new(ChunkWriter::new(3, &ring));
                let mut n = 0usize;
                for _round in 0..200 {
                    std::thread::scope(|s| {
                        for _ in 0..4 {
                            let offset = ((n % PLACES) * CHUNK) as u64;
                            n += 1;
                            let (w, file, path) = (&w, &file, &path);
                            s.spawn(move || {
                                let mut w = w.lock();
                                while w.in_flight() >= 3 {
                                    w.wait_oldest(file.as_ref(), path).expect("wait");
                                }
                                // SAFETY: `buf` is never changed and outlives
                                // every write (all waited for below).
                                unsafe { w.start(file, path, buf, offset, n) }.expect("start");
                            });
                        }
                    });
                }
                // Later writes, from a thread that stays.
                let mut w = w.into_inner();
                for k in 0..8 {
                    while w.in_flight() >= 3 {
                        w.wait_oldest(file.as_ref(), &path).expect("wait");
                    }
                    let offset = ((k % PLACES) * CHUNK) as u64;
                    // SAFETY: as above.
                    unsafe { w.start(&file, &path, buf, offset, k) }.expect("start");
                }
                w.wait(file.as_ref(), &path).expect("wait all");
                drop(w);
                if !ring.running() {
                    crate::io::uring::skip_or_fail(
                        "chunk writes of threads that exited",
                        "the chunk ring's thread did not start (no io_uring): the writes were synchronous",
                    );
                }
                let on_disk = std::fs::read(&path).expect("read");
                assert_eq!(on_disk.len(), PLACES * CHUNK);
                for (i, c) in on_disk.chunks(CHUNK).enumerate() {
                    assert!(c == buf, "chunk {i} holds what was written");
                }
                // SAFETY: allocated above with `layout`; no write is in flight.
                unsafe { std::alloc::dealloc(ptr, layout) };
            },
        );
    }
}
