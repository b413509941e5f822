//! [`ChunkWriter`]: the writes of staged chunks to their blob file, up to
//! a fixed number in flight at once, in the background
//! (`docs/blob-files.md`, "Staging and direct IO").
//!
//! Each write goes to io_uring with `IOSQE_ASYNC`, so a kernel worker runs
//! the direct write (its page pinning and the device kick) and the lane's
//! writer goes on staging the next chunk; where io_uring is unavailable the
//! write is done at once, as before. Writes are reaped oldest first
//! ([`ChunkWriter::wait_oldest`]) or all together ([`ChunkWriter::wait`]),
//! and the caller collects a write's result before it touches that write's
//! buffer again.
//!
//! Single-threaded (`&mut self`; the lane's mutex). Invariants: at most
//! `depth` writes are in flight, kept in the order they started; a write's
//! buffer stays mapped and unchanged until its completion is reaped (the
//! `unsafe` contract of [`ChunkWriter::start`], which
//! [`super::stage::StagedFile`] keeps by reusing or dropping a slot only
//! after its write was waited for); a write that failed or came up short is
//! finished synchronously before `wait` reports it done; dropping the
//! writer reaps every write still in flight.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use io_uring::{IoUring, opcode, squeue, types};

use crate::error::{Error, Result};

/// A write started and not yet reaped.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// The io_uring `user_data` of the write.
    id: u64,
    /// The caller's name for the write (a staging slot).
    tag: usize,
    ptr: *const u8,
    len: usize,
    offset: u64,
    /// The completion's result once reaped from the ring (completions may
    /// arrive out of order).
    result: Option<i32>,
}

/// Writes chunks in the background, up to `depth` at a time.
pub(crate) struct ChunkWriter {
    ring: Option<IoUring>,
    depth: usize,
    next_id: u64,
    in_flight: VecDeque<InFlight>,
}

// SAFETY: the raw pointers in `in_flight` name buffers whose owner (the
// staged file holding this writer) moves with it; the writer dereferences
// one only in `wait`, after the kernel completed its write, and the kernel
// reads them until the completions are reaped.
unsafe impl Send for ChunkWriter {}

impl std::fmt::Debug for ChunkWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkWriter")
            .field("uring", &self.ring.is_some())
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
    /// A writer of up to `depth` (at least 1) writes at once, on io_uring
    /// where the kernel allows one (else writes are synchronous).
    pub(crate) fn new(depth: usize) -> ChunkWriter {
        let depth = depth.max(1);
        let entries = u32::try_from(depth.next_power_of_two()).unwrap_or(u32::MAX);
        ChunkWriter {
            ring: IoUring::new(entries).ok(),
            depth,
            next_id: 1,
            in_flight: VecDeque::with_capacity(depth),
        }
    }

    /// A writer that always writes synchronously (tests).
    #[cfg(test)]
    pub(crate) fn synchronous() -> ChunkWriter {
        ChunkWriter {
            ring: None,
            depth: 1,
            next_id: 1,
            in_flight: VecDeque::new(),
        }
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
        file: &File,
        path: &Path,
        buf: &[u8],
        offset: u64,
        tag: usize,
    ) -> Result<()> {
        debug_assert!(self.in_flight.len() < self.depth, "at most depth writes");
        let sync = |buf: &[u8]| {
            file.write_all_at(buf, offset)
                .map_err(|e| Error::io(path, e))
        };
        if self.in_flight.len() >= self.depth {
            return sync(buf);
        }
        let Some(ring) = self.ring.as_mut() else {
            return sync(buf);
        };
        let Ok(len) = u32::try_from(buf.len()) else {
            return sync(buf);
        };
        let id = self.next_id;
        self.next_id += 1;
        let entry = opcode::Write::new(types::Fd(file.as_raw_fd()), buf.as_ptr(), len)
            .offset(offset)
            .build()
            .flags(squeue::Flags::ASYNC)
            .user_data(id);
        // SAFETY: the entry points into `buf`, which the caller keeps valid
        // and unchanged until the completion is reaped (this function's
        // contract); the fd is the caller's open file, which outlives the
        // write for the same reason. Every entry pushed is submitted at
        // once, so the queue (depth entries) has room for this one.
        let pushed = unsafe { ring.submission().push(&entry) };
        if pushed.is_err() {
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
        // If `io_uring_enter` fails the entry stays queued, and the next
        // wait submits it: it is in flight either way.
        let _ = ring.submit();
        Ok(())
    }

    /// Waits for the oldest write in flight (if any) and returns its tag;
    /// a short or failed write is finished (or done again) here.
    pub(crate) fn wait_oldest(&mut self, file: &File, path: &Path) -> Result<Option<usize>> {
        if self.in_flight.is_empty() {
            return Ok(None);
        }
        let res = self.reap_oldest();
        let Some(w) = self.in_flight.pop_front() else {
            return Ok(None);
        };
        // A failed write is done again here, and its error (if it fails
        // again) is the one reported. Besides real errors this covers
        // ECANCELED: the kernel cancels a request when the thread that
        // submitted it exits, and any writer thread of the lane may be the
        // one that ended a chunk.
        let written = res.unwrap_or(0).min(w.len);
        if written < w.len {
            // SAFETY: `start`'s contract keeps the buffer valid and
            // unchanged until this wait returns.
            let rest = unsafe { std::slice::from_raw_parts(w.ptr.add(written), w.len - written) };
            file.write_all_at(rest, w.offset + written as u64)
                .map_err(|e| Error::io(path, e))?;
        }
        Ok(Some(w.tag))
    }

    /// Reaps, without waiting, the oldest writes that already completed
    /// (a short or failed one is finished here, as in
    /// [`wait_oldest`](Self::wait_oldest)), calling `done` with each tag,
    /// oldest first.
    pub(crate) fn reap_completed(
        &mut self,
        file: &File,
        path: &Path,
        mut done: impl FnMut(usize),
    ) -> Result<()> {
        let Some(ring) = self.ring.as_mut() else {
            return Ok(());
        };
        for cqe in ring.completion() {
            if let Some(w) = self.in_flight.iter_mut().find(|w| w.id == cqe.user_data()) {
                w.result = Some(cqe.result());
            }
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
    pub(crate) fn wait(&mut self, file: &File, path: &Path) -> Result<()> {
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

    /// Blocks until the oldest write in flight completed; the bytes it
    /// wrote.
    fn reap_oldest(&mut self) -> std::io::Result<usize> {
        let Some(ring) = self.ring.as_mut() else {
            return Err(std::io::Error::other("no io_uring"));
        };
        loop {
            for cqe in ring.completion() {
                if let Some(w) = self.in_flight.iter_mut().find(|w| w.id == cqe.user_data()) {
                    w.result = Some(cqe.result());
                }
            }
            if let Some(r) = self.in_flight.front().and_then(|w| w.result) {
                return if r < 0 {
                    Err(std::io::Error::from_raw_os_error(-r))
                } else {
                    Ok(r as usize)
                };
            }
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // Out of resources or a full completion queue for now.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EBUSY)) => {
                    std::thread::yield_now();
                }
                Err(e) => return Err(e),
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
    fn scratch(dir: &tempfile::TempDir, name: &str) -> (std::path::PathBuf, File) {
        let path = dir.path().join(name);
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("open");
        (path, file)
    }

    #[test]
    fn a_write_in_flight_lands_once_waited_for_or_dropped() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, file) = scratch(&dir, "f");
        let data: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let mut w = ChunkWriter::new(2);
        // SAFETY: `data` outlives the write: waited for below.
        unsafe { w.start(&file, &path, &data[..4096], 0, 0) }.expect("start");
        w.wait(&file, &path).expect("wait");
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
        s.wait(&file, &path).expect("nothing to wait for");
        assert_eq!(std::fs::read(&path).expect("read")[..10], [7u8; 10]);
    }

    /// Completed writes are reaped without waiting, oldest first, and
    /// only those: a later write that completed waits for the ones before.
    #[test]
    fn completed_writes_are_reaped_without_waiting_in_order() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, file) = scratch(&dir, "h");
        let data: Vec<u8> = (0..3 * 4096).map(|i| (i % 241) as u8).collect();
        let mut w = ChunkWriter::new(3);
        for i in 0..3 {
            let chunk = &data[i * 4096..(i + 1) * 4096];
            // SAFETY: `data` outlives `w` (reaped below or by its drop).
            unsafe { w.start(&file, &path, chunk, (i * 4096) as u64, i) }.expect("start");
        }
        let mut reaped = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while reaped.len() < 3 && std::time::Instant::now() < deadline {
            w.reap_completed(&file, &path, |tag| reaped.push(tag))
                .expect("reap");
            assert_eq!(w.in_flight(), 3 - reaped.len());
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(reaped, vec![0, 1, 2], "all reaped, oldest first");
        assert_eq!(std::fs::read(&path).expect("read"), data);
        // Nothing in flight: nothing to do.
        w.reap_completed(&file, &path, |_| panic!("nothing was in flight"))
            .expect("reap");
    }

    /// The thread that started a write exits before it is waited for (the
    /// kernel may cancel the request then): the wait still lands the bytes.
    #[test]
    fn a_write_started_by_a_thread_that_exited_still_lands() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, file) = scratch(&dir, "g");
        let data: Vec<u8> = (0..4 << 20).map(|i| (i % 239) as u8).collect();
        let mut w = ChunkWriter::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: `data` outlives the write: waited for below.
                unsafe { w.start(&file, &path, &data, 0, 0) }.expect("start");
            });
        });
        w.wait(&file, &path).expect("wait");
        assert_eq!(std::fs::read(&path).expect("read"), data);
    }
}
