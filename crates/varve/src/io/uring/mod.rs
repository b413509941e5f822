//! The io_uring reactor behind `fiber_aio_read`: one ring per thread,
//! created on first use and never shared (`thread_local!`), so no lock or
//! atomic guards it and fibers, which never leave their thread, always find
//! the ring their reads were queued on.
//!
//! Whether io_uring may be used is decided once per process
//! ([`io_uring_available`], a `OnceLock`): no if the environment variable
//! `VARVE_IO=sync` is set, if the kernel or a seccomp filter refuses
//! `io_uring_setup`, or if the kernel does not support `IORING_OP_READ`. A
//! thread whose own ring cannot be created also falls back. Falling back
//! means plain `pread`, with identical results.
//!
//! `unsafe` here is confined to `reactor` (pushing entries that point at
//! caller buffers); see its module docs for the invariants.

mod reactor;
mod slab;

use std::cell::RefCell;
use std::sync::OnceLock;

pub(crate) use reactor::Reactor;

static AVAILABLE: OnceLock<bool> = OnceLock::new();

/// Whether this process uses io_uring for reads inside fibers (`multi_get`
/// with `async_io`, iterator seeks with `concurrent_seeks`; probed once;
/// `VARVE_IO=sync` turns it off).
pub fn io_uring_available() -> bool {
    *AVAILABLE.get_or_init(probe)
}

/// For tests that need io_uring (or O_DIRECT): true if it may be used.
/// Where it may not, the test must not pass silently: with the environment
/// variable `VARVE_REQUIRE_URING=1` (CI sets it) this panics, naming `what`;
/// otherwise it prints that `what` was skipped and returns false.
#[cfg(any(test, feature = "testing"))]
pub fn require_uring(what: &str) -> bool {
    if io_uring_available() {
        return true;
    }
    skip_or_fail(what, "io_uring is unavailable here (or VARVE_IO=sync)");
    false
}

/// For tests: reports that `what` could not run because of `why` — a panic
/// with `VARVE_REQUIRE_URING=1`, else a printed "skipped" line.
#[cfg(any(test, feature = "testing"))]
pub fn skip_or_fail(what: &str, why: &str) {
    if std::env::var("VARVE_REQUIRE_URING").as_deref() == Ok("1") {
        panic!("{what}: {why}, and VARVE_REQUIRE_URING=1 requires it");
    }
    eprintln!("SKIPPED {what}: {why} (set VARVE_REQUIRE_URING=1 to make this a failure)");
}

fn probe() -> bool {
    if std::env::var_os("VARVE_IO").is_some_and(|v| v == "sync") {
        return false;
    }
    let Ok(ring) = io_uring::IoUring::new(4) else {
        return false;
    };
    let mut probe = io_uring::Probe::new();
    if ring.submitter().register_probe(&mut probe).is_err() {
        return false;
    }
    probe.is_supported(io_uring::opcode::Read::CODE)
}

enum ThreadReactor {
    Untried,
    Ready(Box<Reactor>),
    Unavailable,
}

thread_local! {
    static REACTOR: RefCell<ThreadReactor> = const { RefCell::new(ThreadReactor::Untried) };
}

/// Runs `f` on this thread's reactor, creating it on first use; `None` when
/// io_uring is unavailable (or the thread is shutting down). `f` must not
/// switch fibers (the reactor is borrowed while it runs).
pub(crate) fn with_reactor<R>(f: impl FnOnce(&mut Reactor) -> R) -> Option<R> {
    REACTOR
        .try_with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            if matches!(*slot, ThreadReactor::Untried) {
                *slot = match io_uring_available().then(Reactor::new) {
                    Some(Ok(r)) => ThreadReactor::Ready(Box::new(r)),
                    _ => ThreadReactor::Unavailable,
                };
            }
            match &mut *slot {
                ThreadReactor::Ready(r) => Some(f(r)),
                _ => None,
            }
        })
        .ok()
        .flatten()
}

/// Reads this thread's reactor has accepted and their readers have not yet
/// collected (0 without io_uring). After `multi_get` returns, or unwinds
/// from a panic, this is 0.
#[cfg(any(test, feature = "testing"))]
pub fn in_flight_reads() -> usize {
    REACTOR
        .try_with(|cell| match cell.try_borrow().as_deref() {
            Ok(ThreadReactor::Ready(r)) => r.in_flight(),
            _ => 0,
        })
        .unwrap_or(0)
}
