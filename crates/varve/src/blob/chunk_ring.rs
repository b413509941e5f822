//! [`ChunkRing`]: the one thread (`varve-blob-io`) that submits and reaps
//! the direct chunk writes of a set of write lanes (one keyspace's
//! [`super::lane::BlobWriteLanes`]), so that no write depends on the
//! thread that asked for it staying alive (`docs/blob-files.md`, "Chunk
//! writes").
//!
//! Why a thread: io_uring ties a request to the task that submitted it.
//! Its kernel workers (io-wq) belong to that task and go when it exits,
//! and the kernel then cancels what the task left behind. Issue #50 saw
//! that go wrong: a lane's writers were short-lived scoped threads, three
//! chunk writes were taken by the kernel (SQ head 3) and none ever
//! completed (CQ tail 0, no io-wq workers left), and the next writer of
//! the lane waited for the oldest of them forever. A lane's writers are
//! the application's threads, which come and go (a pool that shrinks,
//! `spawn_blocking`), so no lane may hand its writes to them. Here every
//! write is submitted by this thread, which outlives every write it took.
//!
//! Protocol: a [`ChunkWriter`](super::chunk_writer::ChunkWriter) sends a
//! [`WriteRequest`] (file, buffer, offset, its own id, and where to report)
//! over a channel and bumps an eventfd. The thread keeps a one-shot poll
//! of the eventfd in its ring, so a single `io_uring_enter` waits for
//! either a write's completion or a new request; it reads the eventfd,
//! drains the channel, pushes the writes (at most [`MAX_IN_KERNEL`] in the
//! kernel at once, the rest wait in order in user space), and sends each
//! completion's result (bytes written or `-errno`) back on the request's
//! reply channel. The thread starts on the first write (a keyspace whose
//! lanes never end a chunk has none) and is joined when the last handle
//! (the lanes and every staged file) is dropped; by then no write is in
//! flight, because each `ChunkWriter` waits for its writes before it lets
//! go of its handle.
//!
//! Invariants: a request's buffer and file stay valid until its result is
//! sent (the `unsafe` contract of [`ChunkRing::submit`]; the request holds
//! an `Arc` of the file); the thread never ends with a write in the kernel
//! (it aborts the process if `io_uring_enter` fails then, or if it
//! panics, as the fiber reactor and the io_uring WAL do: the kernel may
//! still read the buffer); at most [`MAX_IN_KERNEL`] writes plus the poll
//! are in the kernel, fewer than the completion queue's entries, so no
//! completion is dropped. Without io_uring (or when the thread cannot
//! start) [`ChunkRing::submit`] hands the request back and the caller
//! writes synchronously.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use io_uring::{IoUring, opcode, squeue, types};

use crate::io::InPlaceFile;

/// Submission queue entries of the ring (the completion queue has twice
/// as many).
const RING_ENTRIES: u32 = 64;

/// Most writes in the kernel at once; the poll of the eventfd is one more
/// entry, and all of them fit in the completion queue.
const MAX_IN_KERNEL: usize = 2 * RING_ENTRIES as usize - 1;

/// The poll's `user_data`; writes use their own sequence numbers.
const WAKE: u64 = u64::MAX;

/// One chunk write, as a writer hands it to the thread.
pub(crate) struct WriteRequest {
    /// Keeps the file open until the write completed.
    pub(crate) file: Arc<dyn InPlaceFile>,
    pub(crate) ptr: *const u8,
    pub(crate) len: u32,
    pub(crate) offset: u64,
    /// The writer's id of the write, sent back with its result.
    pub(crate) id: u64,
    /// Where the result goes: `(id, bytes written or -errno)`.
    pub(crate) reply: Sender<(u64, i32)>,
}

// SAFETY: `ptr` names a buffer that the requester keeps valid and
// unchanged until the result is sent (the contract of `ChunkRing::submit`);
// only the kernel reads it, on behalf of the thread the request moves to.
unsafe impl Send for WriteRequest {}

/// The running thread and the ways to reach it.
struct Running {
    requests: Option<Sender<WriteRequest>>,
    wake: Arc<OwnedFd>,
    thread: Option<JoinHandle<()>>,
    /// The ring failed (`io_uring_enter` refused with nothing in the
    /// kernel): the thread finished what it had and ended; later writes
    /// are synchronous.
    broken: Arc<AtomicBool>,
}

impl Running {
    fn start() -> std::io::Result<Running> {
        let ring = IoUring::new(RING_ENTRIES)?;
        // SAFETY: plain syscall; the result is checked before it is used.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor this function owns.
        let wake = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        let (tx, rx) = mpsc::channel();
        let broken = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("varve-blob-io".into())
            .spawn({
                let wake = Arc::clone(&wake);
                let broken = Arc::clone(&broken);
                move || {
                    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        Thread::new(ring, rx, wake, broken).run()
                    }));
                    if run.is_err() {
                        // The kernel may still read buffers this thread took.
                        eprintln!("varve: the blob write thread panicked; aborting");
                        std::process::abort();
                    }
                }
            })?;
        Ok(Running {
            requests: Some(tx),
            wake,
            thread: Some(thread),
            broken,
        })
    }

    /// Wakes the thread (a new request, or the channel closed).
    fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live `u64` to our eventfd. It can
        // fail only with EAGAIN (the counter near overflow: the thread is
        // woken anyway), so the result is not needed.
        let _ = unsafe {
            libc::write(
                self.wake.as_raw_fd(),
                (&raw const one).cast::<libc::c_void>(),
                8,
            )
        };
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Closing the channel and waking the thread ends it once the
        // writes it took are done (none: every writer waited for its own).
        self.requests = None;
        self.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The chunk writes of a set of lanes, submitted by one thread (see the
/// module docs). Shared (`Arc`) by the lanes and their staged files.
pub(crate) struct ChunkRing {
    running: OnceLock<Option<Running>>,
}

impl std::fmt::Debug for ChunkRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.running.get() {
            None => "not started",
            Some(None) => "unavailable",
            Some(Some(r)) if r.broken.load(Ordering::Relaxed) => "broken",
            Some(Some(_)) => "running",
        };
        f.debug_struct("ChunkRing").field("thread", &state).finish()
    }
}

impl ChunkRing {
    /// A ring whose thread starts on the first write.
    pub(crate) fn new() -> Arc<ChunkRing> {
        Arc::new(ChunkRing {
            running: OnceLock::new(),
        })
    }

    /// A ring that never starts: every write is synchronous (tests).
    #[cfg(test)]
    pub(crate) fn synchronous() -> Arc<ChunkRing> {
        let ring = ChunkRing::new();
        let _ = ring.running.set(None);
        ring
    }

    /// Hands `req` to the thread, which writes it and sends the result to
    /// `req.reply`; `Err(req)` if there is no thread (no io_uring, or it
    /// could not start or broke), for the caller to write it itself.
    ///
    /// # Safety
    ///
    /// `req.ptr` must point to `req.len` bytes that stay valid and
    /// unchanged until the result arrived on `req.reply`.
    pub(crate) unsafe fn submit(&self, req: WriteRequest) -> Result<(), WriteRequest> {
        let Some(r) = self.running.get_or_init(|| Running::start().ok()) else {
            return Err(req);
        };
        if r.broken.load(Ordering::Acquire) {
            return Err(req);
        }
        let Some(tx) = &r.requests else {
            return Err(req);
        };
        // The thread may have broken just now: it then still drains the
        // channel and writes what it finds there synchronously, so a
        // request it accepted is never lost.
        tx.send(req).map_err(|e| e.0)?;
        r.wake();
        Ok(())
    }

    /// True if the thread runs (writes go through io_uring).
    #[cfg(test)]
    pub(crate) fn running(&self) -> bool {
        self.alive()
            && self.running.get().is_some_and(|r| {
                r.as_ref()
                    .is_some_and(|r| !r.broken.load(Ordering::Acquire))
            })
    }

    /// False once the thread ended (it broke): a writer waiting for a
    /// result that can no longer come stops waiting.
    pub(crate) fn alive(&self) -> bool {
        match self.running.get() {
            Some(Some(r)) => r.thread.as_ref().is_some_and(|t| !t.is_finished()),
            _ => false,
        }
    }
}

/// The thread's state.
struct Thread {
    ring: IoUring,
    requests: Receiver<WriteRequest>,
    /// Connected: the ring's owner still exists.
    open: bool,
    wake: Arc<OwnedFd>,
    /// The poll of `wake` is in the kernel.
    poll_armed: bool,
    /// Received, not yet in the kernel (it had `MAX_IN_KERNEL` already).
    waiting: VecDeque<WriteRequest>,
    /// In the kernel, by `user_data`.
    in_kernel: HashMap<u64, WriteRequest>,
    next: u64,
    broken: Arc<AtomicBool>,
}

impl Thread {
    fn new(
        ring: IoUring,
        requests: Receiver<WriteRequest>,
        wake: Arc<OwnedFd>,
        broken: Arc<AtomicBool>,
    ) -> Thread {
        Thread {
            ring,
            requests,
            open: true,
            wake,
            poll_armed: false,
            waiting: VecDeque::new(),
            in_kernel: HashMap::new(),
            next: 0,
            broken,
        }
    }

    fn run(mut self) {
        loop {
            self.take_requests();
            self.push();
            if !self.open && self.waiting.is_empty() && self.in_kernel.is_empty() {
                // The poll (if armed) holds no buffer: the ring's close
                // cancels it.
                return;
            }
            if let Err(e) = self.ring.submit_and_wait(1) {
                match e.raw_os_error() {
                    Some(libc::EINTR) => {}
                    Some(libc::EAGAIN | libc::EBUSY) => std::thread::yield_now(),
                    _ if self.in_kernel.is_empty() => return self.fail(),
                    _ => {
                        eprintln!(
                            "varve: io_uring_enter failed with blob chunk writes in flight: {e}; aborting"
                        );
                        std::process::abort();
                    }
                }
            }
            self.reap();
        }
    }

    /// Drains the channel into `waiting` (and notes a closed one).
    fn take_requests(&mut self) {
        loop {
            match self.requests.try_recv() {
                Ok(req) => self.waiting.push_back(req),
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => {
                    self.open = false;
                    return;
                }
            }
        }
    }

    /// Arms the poll and pushes waiting writes, as far as the queues allow.
    fn push(&mut self) {
        if self.open && !self.poll_armed {
            let poll = opcode::PollAdd::new(types::Fd(self.wake.as_raw_fd()), libc::POLLIN as u32)
                .build()
                .user_data(WAKE);
            // SAFETY: a poll holds no buffer; the eventfd lives as long as
            // the thread (`self.wake`), longer than the ring.
            if unsafe { self.ring.submission().push(&poll) }.is_ok() {
                self.poll_armed = true;
            }
        }
        while self.in_kernel.len() < MAX_IN_KERNEL {
            let Some(req) = self.waiting.pop_front() else {
                break;
            };
            let id = self.next;
            self.next += 1;
            let entry =
                opcode::Write::new(types::Fd(req.file.os_file().as_raw_fd()), req.ptr, req.len)
                    .offset(req.offset)
                    .build()
                    .flags(squeue::Flags::ASYNC)
                    .user_data(id);
            // SAFETY: the buffer stays valid and unchanged until the
            // result is sent (the contract of `ChunkRing::submit`), which
            // happens only after this entry's completion is reaped; the
            // request, kept in `in_kernel` until then, holds the file.
            if unsafe { self.ring.submission().push(&entry) }.is_err() {
                // The submission queue is full: submitted at the next enter.
                self.waiting.push_front(req);
                break;
            }
            self.in_kernel.insert(id, req);
        }
    }

    /// Handles every completion in the queue.
    fn reap(&mut self) {
        let done: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (id, res) in done {
            if id == WAKE {
                self.poll_armed = false;
                let mut n = 0u64;
                // SAFETY: reads 8 bytes into a live `u64` from our
                // nonblocking eventfd; EAGAIN (already reset) is fine.
                let _ = unsafe {
                    libc::read(
                        self.wake.as_raw_fd(),
                        (&raw mut n).cast::<libc::c_void>(),
                        8,
                    )
                };
                continue;
            }
            if let Some(req) = self.in_kernel.remove(&id) {
                // A writer that went away no longer needs the result.
                let _ = req.reply.send((req.id, res));
            }
        }
    }

    /// The ring refused work with no write in the kernel: later writes are
    /// synchronous (writers see `broken`), and the ones already taken, or
    /// sent before a writer saw `broken`, are done here, until the ring's
    /// owner closes the channel.
    fn fail(self) {
        self.broken.store(true, Ordering::Release);
        let Thread {
            requests, waiting, ..
        } = self;
        for req in waiting.into_iter().chain(requests.iter()) {
            // SAFETY: the request's contract keeps the buffer valid and
            // unchanged until its result is sent, below.
            let buf = unsafe { std::slice::from_raw_parts(req.ptr, req.len as usize) };
            let res =
                match std::os::unix::fs::FileExt::write_all_at(req.file.os_file(), buf, req.offset)
                {
                    Ok(()) => i32::try_from(req.len).unwrap_or(i32::MAX),
                    Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
                };
            let _ = req.reply.send((req.id, res));
        }
    }
}

/// For tests of the write path: runs `f` on a thread of its own and waits
/// at most `limit` for it, so that a hung write fails the test, naming
/// `what`, instead of stopping the test binary (the hung thread is left
/// behind; the binary's exit ends it).
#[cfg(test)]
pub(crate) fn within<T: Send + 'static>(
    limit: std::time::Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what} did not finish within {limit:?}: a blob chunk write hung (issue #50)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            panic!("{what} panicked (its message is above)")
        }
    }
}
