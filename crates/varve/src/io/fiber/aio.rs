//! [`fiber_aio_read`]: `pread` that, inside a pool fiber, lets other fibers
//! run while the read is in the kernel.
//!
//! Contract (pread's): reads up to `buf.len()` bytes at `offset` and returns
//! how many; fewer only at end of file or for a read longer than the
//! kernel takes at once (callers loop, as they do for pread); `EINTR` and
//! `EAGAIN` are retried here; `EINVAL`/`EOPNOTSUPP` from io_uring are
//! retried with `pread` (whose answer stands); any other error is returned
//! for this call only. O_DIRECT callers pass aligned buffers, offsets and lengths, which
//! reach the kernel unchanged. The buffer is not touched or released before
//! its completion is taken (see `fiber` module invariants).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use super::current;
use crate::io::uring::with_reactor;

/// Reads into `buf` at `offset` like `pread`; inside a `multi_get` fiber the
/// read goes through this thread's io_uring and the fiber switches away
/// until it completes. Outside a fiber, or without io_uring, it is `pread`.
pub(crate) fn fiber_aio_read(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    let Some(me) = current::current() else {
        return pread(file, buf, offset);
    };
    if current::teardown() || current::sync_reads() {
        return pread(file, buf, offset);
    }
    let fd = file.as_raw_fd();
    loop {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        // SAFETY: `buf` is exclusively borrowed for this whole call and
        // `file` outlives it; we neither return nor touch `buf` until
        // `take` hands back the read's result below, and the pool never
        // frees or unwinds a suspended fiber's stack while its read is in
        // flight (a dropped batch drains the reactor first).
        let queued = with_reactor(|r| unsafe { r.queue_read(fd, ptr, len, offset, me.index) });
        let Some(key) = queued else {
            return pread(file, buf, offset);
        };
        let res = loop {
            me.suspend();
            match with_reactor(|r| r.take(key)) {
                Some(Some(res)) => break res,
                Some(None) => {} // not ours yet (only in teardown paths)
                None => {
                    // The reactor vanished with our buffer in it: returning
                    // could free memory the kernel still writes.
                    eprintln!("varve: io_uring reactor lost with a read in flight; aborting");
                    std::process::abort();
                }
            }
        };
        if res >= 0 {
            return Ok(res as usize);
        }
        match -res {
            libc::EINTR | libc::EAGAIN => continue,
            // A file io_uring cannot read (an unusual file system): pread
            // decides, so the result is what the synchronous path gives.
            libc::EINVAL | libc::EOPNOTSUPP => return pread(file, buf, offset),
            errno => return Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

/// `pread`, retrying `EINTR`.
fn pread(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    loop {
        match file.read_at(buf, offset) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}
