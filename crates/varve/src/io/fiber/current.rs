//! Which fiber, if any, is running on this thread, and how it switches back
//! to the scheduler.
//!
//! `CURRENT` is set by a fiber when it starts a task and again every time it
//! is resumed after a switch, and cleared by the scheduler every time
//! control comes back to it, so it names the running fiber or nothing.
//! `TEARDOWN` is set while a batch being dropped finishes its fibers: reads
//! then run synchronously. `SYNC_READS` counts the [`SyncReads`] guards
//! alive on the thread: while one lives, reads run synchronously too, so
//! the fiber holding it never switches away (what a fiber may hold a lock
//! other fibers of its thread wait for across a read needs). Per thread;
//! nothing here is shared.

use std::cell::Cell;

use corosensei::Yielder;

/// The yielder type of pool fibers (no values pass through switches).
pub(crate) type FiberYielder = Yielder<(), ()>;

/// A running fiber: its yielder (on its own stack) and its index in the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Current {
    yielder: *const FiberYielder,
    /// The fiber's index in its batch (what the reactor reports back).
    pub(crate) index: usize,
}

thread_local! {
    static CURRENT: Cell<Option<Current>> = const { Cell::new(None) };
    static TEARDOWN: Cell<bool> = const { Cell::new(false) };
    static SYNC_READS: Cell<u32> = const { Cell::new(0) };
}

/// While alive, every read of this thread runs synchronously (no fiber
/// switch): held around work that holds a lock fibers of this thread
/// might block on.
#[derive(Debug)]
pub(crate) struct SyncReads(());

impl SyncReads {
    /// Starts a synchronous-reads section (sections nest).
    pub(crate) fn enter() -> SyncReads {
        let _ = SYNC_READS.try_with(|c| c.set(c.get() + 1));
        SyncReads(())
    }
}

impl Drop for SyncReads {
    fn drop(&mut self) {
        let _ = SYNC_READS.try_with(|c| {
            debug_assert!(c.get() > 0, "a SyncReads section ended twice");
            c.set(c.get().saturating_sub(1));
        });
    }
}

/// Whether a [`SyncReads`] section is open on this thread.
pub(crate) fn sync_reads() -> bool {
    SYNC_READS.try_with(|c| c.get() > 0).unwrap_or(false)
}

/// The fiber running now, if any.
pub(crate) fn current() -> Option<Current> {
    CURRENT.try_with(Cell::get).ok().flatten()
}

/// True when called from inside a pool fiber (a nested `multi_get` then
/// runs its lookups synchronously on that fiber).
pub(crate) fn in_fiber() -> bool {
    current().is_some()
}

/// Marks that control is back on the scheduler (no fiber running).
pub(crate) fn clear() {
    let _ = CURRENT.try_with(|c| c.set(None));
}

/// Whether a dropped batch is finishing its fibers (reads go synchronous).
pub(crate) fn teardown() -> bool {
    TEARDOWN.try_with(Cell::get).unwrap_or(false)
}

pub(crate) fn set_teardown(on: bool) {
    let _ = TEARDOWN.try_with(|c| c.set(on));
}

impl Current {
    /// The fiber whose closure received `yielder`, at `index` in its batch.
    pub(crate) fn new(yielder: &FiberYielder, index: usize) -> Current {
        Current { yielder, index }
    }

    /// Records that this fiber is the one running.
    pub(crate) fn enter(self) {
        let _ = CURRENT.try_with(|c| c.set(Some(self)));
    }

    /// Switches back to the scheduler; returns when the scheduler resumes
    /// this fiber. Panics if this fiber is not the one running.
    pub(crate) fn suspend(self) {
        assert_eq!(
            current(),
            Some(self),
            "a fiber can only suspend itself while it runs"
        );
        // SAFETY: `self` is the running fiber (checked above: `CURRENT` is
        // set only by a fiber's own code and cleared whenever control
        // returns to the scheduler), so we are executing inside that
        // fiber's closure, whose `&FiberYielder` argument lives on the
        // fiber's stack for the closure's whole run.
        let yielder = unsafe { &*self.yielder };
        yielder.suspend(());
        self.enter();
    }
}
