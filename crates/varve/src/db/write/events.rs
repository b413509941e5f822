//! [`Events`]: park/notify for the positions of a WAL (written, durable)
//! and its failure. Thread-safe.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Park/notify for position changes (written, durable, failure).
///
/// Built on `std::sync::Condvar`, whose `notify_all` wakes every parked
/// thread with one futex call, not on `parking_lot`'s, which requeues them
/// onto the mutex and wakes them one after another as each releases it: with
/// 64 sync writers parked, that chain of hand-offs took longer than the
/// fdatasync it followed.
#[derive(Debug, Default)]
pub(crate) struct Events {
    lock: std::sync::Mutex<()>,
    cv: std::sync::Condvar,
    waiters: AtomicUsize,
    /// Bumped by every notify, so a waiter can tell that something happened
    /// since it last looked.
    epoch: AtomicU64,
}

impl Events {
    /// The current notify count.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Wakes every parked waiter (cheap when nobody waits).
    pub(crate) fn notify(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            // Taking the lock orders this notify after any waiter's check of
            // `ready` (it checks under the lock), so no wake-up is lost.
            drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
            self.cv.notify_all();
        }
    }

    /// Parks until notified (or `max` passes) unless `ready()` already holds.
    pub(crate) fn park(&self, ready: impl Fn() -> bool, max: Duration) {
        let g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let g = if ready() {
            g
        } else {
            match self.cv.wait_timeout(g, max) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            }
        };
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        drop(g);
    }
}
