//! Thin switches between `std`/`parking_lot` and loom for the pieces the slot
//! pool needs beyond atomics (those come from `crate::sync`): the backoff
//! used by spin-waits, the mutex guarding slot switches, and the byte cell of
//! the slot buffer. Under `--cfg loom` every spin is a `loom` yield so the
//! model checker can schedule the thread being waited for.
//!
//! No shared state of its own; no `unsafe`.

/// Spin-waits this many rounds with a CPU hint before yielding the thread.
#[cfg(not(loom))]
const SPINS_BEFORE_YIELD: u32 = 64;

/// One round of waiting for another thread to make progress: a CPU spin hint
/// at first, then `yield_now` (under loom: always a loom yield).
#[cfg_attr(loom, allow(unused_variables))]
pub(super) fn backoff(round: &mut u32) {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    {
        if *round < SPINS_BEFORE_YIELD {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    *round = round.saturating_add(1);
}

/// The mutex serialising slot switches and log-order bookkeeping.
#[derive(Debug, Default)]
pub(super) struct Lock<T> {
    #[cfg(not(loom))]
    inner: parking_lot::Mutex<T>,
    #[cfg(loom)]
    inner: loom::sync::Mutex<T>,
}

impl<T> Lock<T> {
    /// A new unlocked mutex.
    pub(super) fn new(value: T) -> Self {
        Lock {
            #[cfg(not(loom))]
            inner: parking_lot::Mutex::new(value),
            #[cfg(loom)]
            inner: loom::sync::Mutex::new(value),
        }
    }

    /// Locks it (no poisoning: a panic inside leaves the data as it was).
    #[cfg(not(loom))]
    pub(super) fn lock(&self) -> parking_lot::MutexGuard<'_, T> {
        self.inner.lock()
    }

    /// Locks it (loom model).
    #[cfg(loom)]
    pub(super) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The interior-mutable byte cell of slot buffers: loom's checked cell under
/// loom (so loom verifies that concurrent copies touch disjoint bytes and
/// that the writer sees every copy), `std`'s otherwise.
#[cfg(loom)]
pub(super) use loom::cell::UnsafeCell;
#[cfg(not(loom))]
pub(super) use std::cell::UnsafeCell;
