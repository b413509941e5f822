//! [`Slot`]: one cache-padded slot: its state word, the log offset of its
//! first byte, a reuse generation and its buffer, with the lock-free steps of
//! the protocol that touch only this slot (join, release, close, free).
//!
//! Thread-safety: every method takes `&self` and may race with any other.
//! Invariants: while `Open`, JOINED only grows and never exceeds the buffer
//! capacity; RELEASED never exceeds JOINED; once `Closed`, JOINED is frozen;
//! `start` and the buffer's first JOINED bytes are stable from activation
//! until [`Slot::free`]; exactly one caller ever sees the transition to
//! "closed and fully released" (see [`Slot::release`] and [`Slot::close`]).

use super::buf::SlotBuf;
use super::state::{self, Phase};
use crate::sync::atomic::{AtomicU64, Ordering};

/// What a join attempt on one slot found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum JoinAttempt {
    /// Joined at `offset`; `closed_it` when this join crossed the threshold
    /// and closed the slot (the joiner must switch to the next slot).
    Joined {
        /// The writer's byte offset in the buffer.
        offset: u32,
        /// Whether this join closed the slot.
        closed_it: bool,
    },
    /// The slot is not open (closed or free): look for the active slot again.
    NotOpen,
    /// Open, but the record does not fit in the rest of the buffer.
    DoesNotFit,
}

/// What closing found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum CloseAttempt {
    /// The slot was not open; nothing changed.
    NotOpen,
    /// This call closed it with `joined` bytes; `complete` when all of them
    /// were already released, so the caller now owns writing the buffer.
    Closed {
        /// Final JOINED count.
        joined: u32,
        /// Whether the caller owns the write.
        complete: bool,
    },
}

/// One slot of the pool, padded to its own cache lines.
#[repr(align(128))]
#[derive(Debug)]
pub(super) struct Slot {
    /// The packed state word (see `state.rs`).
    pub(super) state: AtomicU64,
    /// Log offset of buffer byte 0; written before the slot is published
    /// `Open` (release), read after a successful join (acquire).
    start: AtomicU64,
    /// Bumped every time the slot is freed: a holder can check the slot was
    /// not recycled under it.
    generation: AtomicU64,
    /// The bytes.
    pub(super) buf: SlotBuf,
}

impl Slot {
    /// A free slot with a zeroed buffer of `capacity` bytes.
    pub(super) fn new(capacity: usize) -> Self {
        Slot {
            state: AtomicU64::new(state::FREE),
            start: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            buf: SlotBuf::new(capacity),
        }
    }

    /// Log offset of this incarnation's first byte. Meaningful only to a
    /// caller that joined (or closed) the current incarnation.
    pub(super) fn start(&self) -> u64 {
        self.start.load(Ordering::Relaxed)
    }

    /// Reuse counter (see the field).
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Makes a free slot the open one, its byte 0 at log offset `start`.
    /// Caller: the pool, under its switch lock.
    pub(super) fn activate(&self, start: u64) {
        let cur = self.state.load(Ordering::Acquire);
        assert_eq!(cur, state::FREE, "activating a slot that is not free");
        self.start.store(start, Ordering::Relaxed);
        self.state.store(state::OPEN_EMPTY, Ordering::Release);
    }

    /// Tries to join `len > 0` bytes: a CAS adding `len` to JOINED, which also
    /// closes the slot when JOINED reaches `close_at`. Losers of the CAS retry
    /// with the value they saw; no lock, no waiting.
    pub(super) fn join(&self, len: u32, close_at: u32) -> JoinAttempt {
        debug_assert!(len > 0);
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            if state::phase(cur) != Phase::Open {
                return JoinAttempt::NotOpen;
            }
            let offset = state::joined(cur);
            let end = u64::from(offset) + u64::from(len);
            if end > self.buf.capacity() as u64 {
                return JoinAttempt::DoesNotFit;
            }
            let closed_it = end >= u64::from(close_at);
            let mut new = state::add_joined(cur, len);
            if closed_it {
                new = state::with_phase(new, Phase::Closed);
            }
            // Acquire on success: the activator's `start` store is visible.
            match self
                .state
                .compare_exchange_weak(cur, new, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => return JoinAttempt::Joined { offset, closed_it },
                Err(actual) => cur = actual,
            }
        }
    }

    /// Releases `len` joined bytes (after copying them in) with one atomic
    /// add. Returns the final JOINED count to the one caller whose add
    /// completes a closed slot: it now owns writing the buffer. Release publishes this caller's
    /// copy; acquire (through the chain of read-modify-writes) gives the
    /// owner every other writer's copy.
    pub(super) fn release(&self, len: u32) -> Option<u32> {
        let old = self
            .state
            .fetch_add(state::released_delta(len), Ordering::AcqRel);
        let new = old + state::released_delta(len);
        debug_assert!(state::released(new) <= state::joined(new));
        state::is_complete(new).then(|| state::joined(new))
    }

    /// Closes the slot if it is open (CAS loop). Caller: the pool, under its
    /// switch lock. If every joined byte is already released the caller
    /// owns the write (nobody else can: no further release will come).
    pub(super) fn close(&self) -> CloseAttempt {
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            if state::phase(cur) != Phase::Open {
                return CloseAttempt::NotOpen;
            }
            let new = state::with_phase(cur, Phase::Closed);
            match self
                .state
                .compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return CloseAttempt::Closed {
                        joined: state::joined(new),
                        complete: state::is_complete(new),
                    };
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Re-opens an open, still empty slot at a new `start` (used when a
    /// direct-path record takes the log range the empty slot would have
    /// begun at). Returns false, changing nothing, if the slot is not open
    /// and empty. Caller: the pool, under its switch lock.
    pub(super) fn restart_if_empty(&self, start: u64) -> bool {
        let closed_empty = state::pack(Phase::Closed, 0, 0);
        if self
            .state
            .compare_exchange(
                state::OPEN_EMPTY,
                closed_empty,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false;
        }
        // Joiners now see `Closed` and wait; nobody holds the slot.
        self.start.store(start, Ordering::Relaxed);
        self.state.store(state::OPEN_EMPTY, Ordering::Release);
        true
    }

    /// Marks a written slot free for reuse. Caller: the owner of the write,
    /// through the pool, after the sink returned.
    pub(super) fn free(&self) {
        let cur = self.state.load(Ordering::Acquire);
        assert!(
            state::is_complete(cur),
            "freeing a slot that is not complete"
        );
        self.generation.fetch_add(1, Ordering::Relaxed);
        self.state.store(state::FREE, Ordering::Release);
    }

    /// Whether the slot is free (under the switch lock this is stable: only
    /// [`Slot::free`] makes a slot free, and it runs under the lock).
    pub(super) fn is_free(&self) -> bool {
        state::phase(self.state.load(Ordering::Acquire)) == Phase::Free
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn join_release_close_free_cycle() {
        let s = Slot::new(8);
        assert_eq!(s.join(1, 8), JoinAttempt::NotOpen);
        s.activate(100);
        assert_eq!(s.start(), 100);
        assert_eq!(
            s.join(3, 6),
            JoinAttempt::Joined {
                offset: 0,
                closed_it: false
            }
        );
        assert_eq!(s.join(6, 6), JoinAttempt::DoesNotFit);
        assert_eq!(s.release(3), None, "open slots never complete");
        assert_eq!(
            s.join(3, 6),
            JoinAttempt::Joined {
                offset: 3,
                closed_it: true
            }
        );
        assert_eq!(s.join(1, 6), JoinAttempt::NotOpen);
        assert_eq!(s.close(), CloseAttempt::NotOpen);
        assert_eq!(
            s.release(3),
            Some(6),
            "last release of a closed slot owns the write"
        );
        let g = s.generation();
        s.free();
        assert!(s.is_free());
        assert_eq!(s.generation(), g + 1);
    }

    #[test]
    fn close_with_everything_released_owns_write() {
        let s = Slot::new(8);
        s.activate(0);
        assert!(matches!(
            s.join(2, 8),
            JoinAttempt::Joined { offset: 0, .. }
        ));
        assert_eq!(s.release(2), None);
        assert_eq!(
            s.close(),
            CloseAttempt::Closed {
                joined: 2,
                complete: true
            }
        );
        s.free();
        s.activate(2);
        assert!(matches!(s.join(2, 8), JoinAttempt::Joined { .. }));
        assert_eq!(
            s.close(),
            CloseAttempt::Closed {
                joined: 2,
                complete: false
            }
        );
        assert_eq!(s.release(2), Some(2));
    }

    #[test]
    fn restart_only_when_open_and_empty() {
        let s = Slot::new(8);
        assert!(!s.restart_if_empty(5));
        s.activate(0);
        assert!(s.restart_if_empty(5));
        assert_eq!(s.start(), 5);
        assert!(matches!(s.join(1, 8), JoinAttempt::Joined { .. }));
        assert!(!s.restart_if_empty(9));
        assert_eq!(s.start(), 5);
    }
}
