//! Thin switches between `parking_lot` and loom for the pieces the slot
//! pool needs beyond atomics (those come from `crate::sync`): the bounded
//! spin used before parking, the mutex + condition variable guarding slot
//! switches, and the byte cell of the slot buffer. Under `--cfg loom` waits
//! park at once (no spin loops), so the model checker sees every wait as a
//! condition-variable wait it can schedule precisely.
//!
//! No shared state of its own; no `unsafe`.

/// Rounds of spinning (CPU hint, then `yield_now`) before a waiter parks.
#[cfg(not(loom))]
const SPIN_ROUNDS: u32 = 64;
/// Of those, the rounds that only use a CPU spin hint.
#[cfg(not(loom))]
const HINT_ROUNDS: u32 = 48;

/// One round of a spin-wait. Returns false when the caller should stop
/// spinning and park instead (under loom: at once, so models contain no
/// spin loops — loom explores a spinning thread's every stale read).
pub(super) fn spin(round: &mut u32) -> bool {
    #[cfg(loom)]
    {
        let _ = round;
        false
    }
    #[cfg(not(loom))]
    {
        if *round >= SPIN_ROUNDS {
            return false;
        }
        if *round < HINT_ROUNDS {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
        *round += 1;
        true
    }
}

#[cfg(not(loom))]
type Guard<'a, T> = parking_lot::MutexGuard<'a, T>;
#[cfg(loom)]
type Guard<'a, T> = loom::sync::MutexGuard<'a, T>;

/// The mutex serialising slot switches and log-order bookkeeping, with a
/// condition variable for threads waiting for a slot to open.
#[derive(Debug, Default)]
pub(super) struct Lock<T> {
    #[cfg(not(loom))]
    inner: parking_lot::Mutex<T>,
    #[cfg(not(loom))]
    cond: parking_lot::Condvar,
    #[cfg(loom)]
    inner: loom::sync::Mutex<T>,
    #[cfg(loom)]
    cond: loom::sync::Condvar,
}

impl<T> Lock<T> {
    /// A new unlocked mutex.
    pub(super) fn new(value: T) -> Self {
        Lock {
            #[cfg(not(loom))]
            inner: parking_lot::Mutex::new(value),
            #[cfg(not(loom))]
            cond: parking_lot::Condvar::new(),
            #[cfg(loom)]
            inner: loom::sync::Mutex::new(value),
            #[cfg(loom)]
            cond: loom::sync::Condvar::new(),
        }
    }

    /// Locks it (no poisoning: a panic inside leaves the data as it was).
    pub(super) fn lock(&self) -> Guard<'_, T> {
        #[cfg(not(loom))]
        {
            self.inner.lock()
        }
        #[cfg(loom)]
        {
            self.inner.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    /// Unlocks, sleeps until [`Lock::notify_all`], relocks.
    pub(super) fn wait<'a>(&self, guard: Guard<'a, T>) -> Guard<'a, T> {
        #[cfg(not(loom))]
        {
            let mut guard = guard;
            self.cond.wait(&mut guard);
            guard
        }
        #[cfg(loom)]
        {
            self.cond.wait(guard).unwrap_or_else(|e| e.into_inner())
        }
    }

    /// Wakes every waiter (call with the lock held to avoid lost wake-ups).
    pub(super) fn notify_all(&self) {
        self.cond.notify_all();
    }
}

/// The interior-mutable byte cell of slot buffers: loom's checked cell under
/// loom (so loom verifies that concurrent copies touch disjoint bytes and
/// that the writer sees every copy), `std`'s otherwise.
#[cfg(loom)]
pub(super) use loom::cell::UnsafeCell;
#[cfg(not(loom))]
pub(super) use std::cell::UnsafeCell;
