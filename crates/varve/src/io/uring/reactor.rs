//! [`Reactor`]: one thread's io_uring, the reads it has accepted and the
//! matching of their completions.
//!
//! A read is accepted by [`Reactor::queue_read`] (state `Queued`, kept in
//! user space), pushed into the submission queue and submitted by
//! [`Reactor::poll`] (state `Submitted`), and completed when its CQE is
//! reaped (state `Done`); the reader then takes the result with
//! [`Reactor::take`], which frees the slab entry. Each read's `user_data` is
//! its [`SlabKey`] (index + generation), never a pointer.
//!
//! Invariants: at most `cq_entries` reads are submitted and unreaped at
//! once, so the completion queue cannot overflow (a deeper queue waits in
//! `queued`); every CQE is consumed; a buffer handed to the kernel is not
//! released by the reactor's owner until its read is `Done` (the `unsafe`
//! contract of `queue_read`), and [`Reactor::drain`] (also run on drop)
//! waits for every submitted read. The reactor is not `Send`: it belongs to
//! the thread that created it, like the fibers whose reads it carries.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

use io_uring::{IoUring, opcode, types};

use super::slab::{Slab, SlabKey};

/// Submission queue entries of each thread's ring. The completion queue is
/// twice as large (the kernel's default), which bounds reads in the kernel.
pub(crate) const RING_ENTRIES: u32 = 64;

/// Largest single read handed to the kernel; longer reads come back short
/// and the caller's pread loop asks for the rest (aligned for O_DIRECT).
const MAX_READ: usize = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Accepted, not yet in the submission queue.
    Queued,
    /// In the submission queue or the kernel.
    Submitted,
    /// Completed with this result (bytes read, or `-errno`).
    Done(i32),
}

#[derive(Debug)]
struct Op {
    fd: RawFd,
    buf: *mut u8,
    len: u32,
    offset: u64,
    waiter: usize,
    state: State,
}

/// One thread's io_uring and its reads (see the module docs).
pub(crate) struct Reactor {
    ring: IoUring,
    ops: Slab<Op>,
    queued: VecDeque<SlabKey>,
    /// Reads pushed to the submission queue whose CQE is not reaped yet.
    in_kernel: usize,
    max_in_kernel: usize,
    /// Scratch for waiters reaped by `drain`.
    scratch: Vec<usize>,
}

impl std::fmt::Debug for Reactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reactor")
            .field("ops", &self.ops.len())
            .field("queued", &self.queued.len())
            .field("in_kernel", &self.in_kernel)
            .finish()
    }
}

impl Reactor {
    /// A reactor with a fresh ring of [`RING_ENTRIES`] entries.
    pub(crate) fn new() -> io::Result<Reactor> {
        let ring = IoUring::new(RING_ENTRIES)?;
        let max_in_kernel = ring.params().cq_entries().max(1) as usize;
        Ok(Reactor {
            ring,
            ops: Slab::new(),
            queued: VecDeque::new(),
            in_kernel: 0,
            max_in_kernel,
            scratch: Vec::new(),
        })
    }

    /// Accepts a read of up to `len` bytes of `fd` at `offset` into `buf`,
    /// on behalf of `waiter` (returned by [`poll`](Self::poll) when it
    /// completes). Nothing reaches the kernel before the next `poll`.
    ///
    /// # Safety
    ///
    /// `buf..buf + len` must be valid for writes, and neither read, written
    /// nor freed by anyone else, and `fd` must stay open, until
    /// [`take`](Self::take) has returned `Some` for the returned key (or
    /// [`drain`](Self::drain) has returned).
    pub(crate) unsafe fn queue_read(
        &mut self,
        fd: RawFd,
        buf: *mut u8,
        len: usize,
        offset: u64,
        waiter: usize,
    ) -> SlabKey {
        let key = self.ops.insert(Op {
            fd,
            buf,
            len: len.min(MAX_READ) as u32,
            offset,
            waiter,
            state: State::Queued,
        });
        self.queued.push_back(key);
        key
    }

    /// The result of the read under `key` once it is done (bytes read or
    /// `-errno`), freeing its entry; `None` while it is still in flight.
    pub(crate) fn take(&mut self, key: SlabKey) -> Option<i32> {
        match self.ops.get_mut(key)?.state {
            State::Done(res) => {
                self.ops.remove(key);
                Some(res)
            }
            State::Queued | State::Submitted => None,
        }
    }

    /// Reads accepted and not yet taken (queued, in the kernel, or done).
    /// Also counted by the batched blob reads of scans, for their stats.
    pub(crate) fn in_flight(&self) -> usize {
        self.ops.len()
    }

    /// True when some accepted read has not completed.
    pub(crate) fn has_pending(&self) -> bool {
        self.in_kernel > 0 || !self.queued.is_empty()
    }

    /// Moves queued reads into the submission queue while the kernel may
    /// take more, submitting whenever the submission queue fills up.
    fn push_queued(&mut self) {
        while self.in_kernel < self.max_in_kernel {
            let Some(&key) = self.queued.front() else {
                return;
            };
            let Some(op) = self.ops.get_mut(key) else {
                self.queued.pop_front();
                continue;
            };
            let entry = opcode::Read::new(types::Fd(op.fd), op.buf, op.len)
                .offset(op.offset)
                .build()
                .user_data(key.to_user_data());
            // SAFETY: the entry points at a buffer and fd that the caller of
            // `queue_read` keeps valid until the read is taken (its safety
            // contract); the entry stays in the slab until its CQE is reaped.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_err() {
                // Submission queue full: hand it to the kernel and go on.
                self.submit(false);
                continue;
            }
            if let Some(op) = self.ops.get_mut(key) {
                op.state = State::Submitted;
            }
            self.in_kernel += 1;
            self.queued.pop_front();
        }
    }

    /// `io_uring_enter`, waiting for one completion when `wait`. Transient
    /// errors return (the caller polls again); anything else means the ring
    /// is unusable while the kernel may own our buffers, so the process
    /// aborts rather than risk memory corruption.
    fn submit(&mut self, wait: bool) {
        let res = if wait {
            self.ring.submit_and_wait(1)
        } else {
            self.ring.submit()
        };
        if let Err(e) = res {
            match e.raw_os_error() {
                Some(libc::EINTR | libc::EAGAIN | libc::EBUSY) => {}
                _ => {
                    eprintln!("varve: io_uring_enter failed with reads in flight: {e}; aborting");
                    std::process::abort();
                }
            }
        }
    }

    /// Consumes every ready CQE, marking its read done and collecting its waiter.
    fn reap(&mut self, ready: &mut Vec<usize>) {
        let mut done = Vec::new();
        for cqe in self.ring.completion() {
            done.push((cqe.user_data(), cqe.result()));
        }
        for (data, res) in done {
            if let Some(op) = self.ops.get_mut(SlabKey::from_user_data(data))
                && op.state == State::Submitted
            {
                op.state = State::Done(res);
                self.in_kernel -= 1;
                ready.push(op.waiter);
            }
        }
    }

    /// Submits the queued reads once at least `min_queued` are waiting in
    /// user space (never waits), then appends the waiters of the reads
    /// completed so far. The scheduler calls it between fibers, so a read
    /// reaches the kernel, and a completed read's fiber the run queue,
    /// without waiting for every other runnable fiber to run first.
    pub(crate) fn submit_queued(&mut self, min_queued: usize, ready: &mut Vec<usize>) {
        if self.queued.len() >= min_queued.max(1) {
            self.push_queued();
            if !self.ring.submission().is_empty() {
                self.submit(false);
            }
        }
        if !self.ring.completion().is_empty() {
            self.reap(ready);
        }
    }

    /// Submits every queued read the kernel can take; if none has completed
    /// yet and some are in flight, waits for at least one. Appends the
    /// waiters of all completed reads (whatever is ready, not the whole batch).
    pub(crate) fn poll(&mut self, ready: &mut Vec<usize>) {
        self.push_queued();
        if self.ring.completion().is_empty() && self.in_kernel > 0 {
            self.submit(true);
        } else if !self.ring.submission().is_empty() {
            self.submit(false);
        }
        // Interrupted or a transient error: nothing reaped, the next poll retries.
        self.reap(ready);
    }

    /// Submits and waits until no accepted read is queued or in the kernel
    /// (each ends `Done`, to be taken by its reader).
    pub(crate) fn drain(&mut self) {
        let mut scratch = std::mem::take(&mut self.scratch);
        while self.has_pending() {
            self.push_queued();
            if self.in_kernel > 0 {
                self.submit(true);
            }
            self.reap(&mut scratch);
            scratch.clear();
        }
        self.scratch = scratch;
    }
}

impl Drop for Reactor {
    fn drop(&mut self) {
        // The safety net: no buffer may be written after its owner is gone.
        self.drain();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn more_reads_than_ring_entries_all_complete() {
        let mut r = match Reactor::new() {
            Ok(r) => r,
            Err(e) => {
                crate::io::uring::skip_or_fail(
                    "the reactor's many-reads test",
                    &format!("no io_uring ring: {e}"),
                );
                return;
            }
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).expect("write");
        let f = std::fs::File::open(&p).expect("open");
        let n = RING_ENTRIES as usize * 5;
        let mut bufs = vec![[0u8; 16]; n];
        let keys: Vec<SlabKey> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| {
                // SAFETY: `bufs` and `f` outlive every read: all are taken
                // below before either is dropped.
                unsafe { r.queue_read(f.as_raw_fd(), b.as_mut_ptr(), 16, (i * 97) as u64, i) }
            })
            .collect();
        assert_eq!(r.in_flight(), n);
        let mut ready = Vec::new();
        while ready.len() < n {
            r.poll(&mut ready);
        }
        ready.sort_unstable();
        assert_eq!(ready, (0..n).collect::<Vec<_>>());
        for (i, k) in keys.into_iter().enumerate() {
            assert_eq!(r.take(k), Some(16));
            assert_eq!(&bufs[i][..], &data[i * 97..i * 97 + 16]);
        }
        assert_eq!(r.in_flight(), 0);
    }

    #[test]
    fn read_at_end_of_file_is_short_and_drain_completes_everything() {
        let mut r = match Reactor::new() {
            Ok(r) => r,
            Err(e) => {
                crate::io::uring::skip_or_fail(
                    "the reactor's short-read test",
                    &format!("no io_uring ring: {e}"),
                );
                return;
            }
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").expect("write");
        let f = std::fs::File::open(&p).expect("open");
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        // SAFETY: `a`, `b` and `f` outlive the reads (drained and taken below).
        let (ka, kb) = unsafe {
            (
                r.queue_read(f.as_raw_fd(), a.as_mut_ptr(), 64, 6, 0),
                r.queue_read(f.as_raw_fd(), b.as_mut_ptr(), 64, 100, 1),
            )
        };
        r.drain();
        assert!(!r.has_pending());
        assert_eq!(r.take(ka), Some(4));
        assert_eq!(&a[..4], b"6789");
        assert_eq!(r.take(kb), Some(0), "past the end: zero bytes");
        assert_eq!(r.take(kb), None, "a taken key is stale");
        assert_eq!(r.in_flight(), 0);
    }
}
