//! [`ChunkWriter`]: one write of a staged chunk to its blob file at a time,
//! in the background (`docs/blob-files.md`, "Staging and direct IO").
//!
//! The write goes to io_uring with `IOSQE_ASYNC`, so a kernel worker runs
//! the direct write (its page pinning and the device kick) and the lane's
//! writer goes on staging the next chunk; where io_uring is unavailable the
//! write is done at once, as before. The caller collects the result with
//! [`ChunkWriter::wait`] before it touches the chunk's buffer again.
//!
//! Single-threaded (`&mut self`; the lane's mutex). Invariants: at most
//! one write is in flight; a write's buffer stays mapped and unchanged
//! until its completion is reaped (the `unsafe` contract of
//! [`ChunkWriter::start`], which [`super::stage::StagedFile`] keeps by
//! reusing or dropping a slot only after `wait`); dropping the writer reaps
//! a write still in flight.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use io_uring::{IoUring, opcode, squeue, types};

use crate::error::{Error, Result};

/// A write started and not yet reaped.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    ptr: *const u8,
    len: usize,
    offset: u64,
}

/// Writes chunks in the background, one at a time.
pub(crate) struct ChunkWriter {
    ring: Option<IoUring>,
    in_flight: Option<InFlight>,
}

// SAFETY: the raw pointer in `in_flight` names a buffer whose owner (the
// staged file holding this writer) moves with it; the writer never
// dereferences it, the kernel reads it until the completion is reaped.
unsafe impl Send for ChunkWriter {}

impl std::fmt::Debug for ChunkWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkWriter")
            .field("uring", &self.ring.is_some())
            .field("in_flight", &self.in_flight.map(|w| (w.offset, w.len)))
            .finish()
    }
}

impl ChunkWriter {
    /// A writer on io_uring where the kernel allows one (else writes are
    /// synchronous).
    pub(crate) fn new() -> ChunkWriter {
        ChunkWriter {
            ring: IoUring::new(2).ok(),
            in_flight: None,
        }
    }

    /// A writer that always writes synchronously (tests).
    #[cfg(test)]
    pub(crate) fn synchronous() -> ChunkWriter {
        ChunkWriter {
            ring: None,
            in_flight: None,
        }
    }

    /// True if a write is in flight.
    pub(crate) fn in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Starts writing `buf` to `file` at `offset` (synchronously without
    /// io_uring). Call with no write in flight.
    ///
    /// # Safety
    ///
    /// `buf` must stay valid and unchanged until [`wait`](Self::wait)
    /// returned or the writer was dropped.
    pub(crate) unsafe fn start(
        &mut self,
        file: &File,
        path: &Path,
        buf: &[u8],
        offset: u64,
    ) -> Result<()> {
        debug_assert!(self.in_flight.is_none(), "one write at a time");
        let Some(ring) = self.ring.as_mut() else {
            return file
                .write_all_at(buf, offset)
                .map_err(|e| Error::io(path, e));
        };
        let Ok(len) = u32::try_from(buf.len()) else {
            return file
                .write_all_at(buf, offset)
                .map_err(|e| Error::io(path, e));
        };
        let entry = opcode::Write::new(types::Fd(file.as_raw_fd()), buf.as_ptr(), len)
            .offset(offset)
            .build()
            .flags(squeue::Flags::ASYNC)
            .user_data(1);
        // SAFETY: the entry points into `buf`, which the caller keeps valid
        // and unchanged until the completion is reaped (this function's
        // contract); the fd is the caller's open file, which outlives the
        // write for the same reason. The queue is empty (one write at a
        // time), so it has room.
        let pushed = unsafe { ring.submission().push(&entry) };
        if pushed.is_err() {
            return file
                .write_all_at(buf, offset)
                .map_err(|e| Error::io(path, e));
        }
        self.in_flight = Some(InFlight {
            ptr: buf.as_ptr(),
            len: buf.len(),
            offset,
        });
        if ring.submit().is_err() {
            // `io_uring_enter` failed, so the kernel took nothing: give the
            // ring up (with the entry it holds) and write here.
            self.in_flight = None;
            self.ring = None;
            return file
                .write_all_at(buf, offset)
                .map_err(|e| Error::io(path, e));
        }
        Ok(())
    }

    /// Waits for the write in flight (if any) and returns its result; a
    /// short or failed write is finished (or done again) here.
    pub(crate) fn wait(&mut self, file: &File, path: &Path) -> Result<()> {
        let Some(w) = self.in_flight else {
            return Ok(());
        };
        let res = self.reap();
        self.in_flight = None;
        // A failed write is done again here, and its error (if it fails
        // again) is the one reported. Besides real errors this covers
        // ECANCELED: the kernel cancels a request when the thread that
        // submitted it exits, and any writer thread of the lane may be the
        // one that ended a chunk.
        let written = res.unwrap_or(0);
        if written < w.len {
            // SAFETY: `start`'s contract keeps the buffer valid and
            // unchanged until this `wait` returns.
            let rest = unsafe { std::slice::from_raw_parts(w.ptr.add(written), w.len - written) };
            file.write_all_at(rest, w.offset + written as u64)
                .map_err(|e| Error::io(path, e))?;
        }
        Ok(())
    }

    /// Blocks until the write in flight completes; the bytes it wrote.
    fn reap(&mut self) -> std::io::Result<usize> {
        let Some(ring) = self.ring.as_mut() else {
            return Err(std::io::Error::other("no io_uring"));
        };
        loop {
            if let Some(cqe) = ring.completion().next() {
                let r = cqe.result();
                return if r < 0 {
                    Err(std::io::Error::from_raw_os_error(-r))
                } else {
                    Ok(r as usize)
                };
            }
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for ChunkWriter {
    fn drop(&mut self) {
        if self.in_flight.take().is_some() {
            // The kernel may still read the buffer: wait for it, whatever
            // the result (the owner gives the bytes up or rewrites them).
            let _ = self.reap();
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
        let mut w = ChunkWriter::new();
        // SAFETY: `data` outlives the write: waited for below.
        unsafe { w.start(&file, &path, &data[..4096], 0) }.expect("start");
        w.wait(&file, &path).expect("wait");
        assert!(!w.in_flight());
        // SAFETY: `data` outlives `w`, whose drop reaps the write.
        unsafe { w.start(&file, &path, &data[4096..], 4096) }.expect("start");
        drop(w);
        assert_eq!(std::fs::read(&path).expect("read"), data);
        // Synchronous: done at start.
        let mut s = ChunkWriter::synchronous();
        // SAFETY: synchronous, nothing stays in flight.
        unsafe { s.start(&file, &path, &[7u8; 10], 0) }.expect("start");
        assert!(!s.in_flight());
        s.wait(&file, &path).expect("nothing to wait for");
        assert_eq!(std::fs::read(&path).expect("read")[..10], [7u8; 10]);
    }

    /// The thread that started a write exits before it is waited for (the
    /// kernel may cancel the request then): the wait still lands the bytes.
    #[test]
    fn a_write_started_by_a_thread_that_exited_still_lands() {
        let dir = tempfile::tempdir().expect("tmp");
        let (path, file) = scratch(&dir, "g");
        let data: Vec<u8> = (0..4 << 20).map(|i| (i % 239) as u8).collect();
        let mut w = ChunkWriter::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: `data` outlives the write: waited for below.
                unsafe { w.start(&file, &path, &data, 0) }.expect("start");
            });
        });
        w.wait(&file, &path).expect("wait");
        assert_eq!(std::fs::read(&path).expect("read"), data);
    }
}
