//! [`Cursor`]: the engine side of a Python iterator. It owns a
//! `varve::DbIterator` and a buffer of entries read ahead, refilled in
//! batches while detached from the interpreter, so a scan releases the GIL
//! once per batch instead of once per entry.
//!
//! Batches start small (a `next()` after creating the iterator reads
//! little) and double up to [`MAX_BATCH`] entries or [`MAX_BATCH_BYTES`].
//! A keys-only scan never asks for values, so it never reads a blob file.
//!
//! Thread-safety: the state sits in a `Mutex`; the Python side pops
//! buffered entries with `try_lock` while attached (never blocking on a
//! refill in progress) and refills while detached. One Python thread at a
//! time should use an iterator; two are safe, each entry is returned to one
//! of them. [`Cursor::invalidate`] (from `Db.close`) drops the engine
//! iterator: afterwards every call fails with `ClosedError`.
//!
//! Invariant: while `Running`, the engine iterator is positioned on the
//! next entry not yet buffered (or is invalid at the end).

use std::collections::VecDeque;

use parking_lot::Mutex;

use crate::errors::Fail;

/// The message of `ClosedError` for an invalidated cursor.
pub(crate) const CLOSED: &str = "iterator is closed (by its close() or the database's)";

/// First batch: a few entries.
const FIRST_BATCH: usize = 16;
/// Most entries read in one batch.
const MAX_BATCH: usize = 4096;
/// A batch ends after this many bytes of keys and values (and at least
/// one entry).
const MAX_BATCH_BYTES: usize = 1 << 20;

/// What each entry yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Yield {
    Keys,
    Values,
    Items,
}

/// One entry read ahead: the parts `Yield` asks for (the other is empty).
pub(crate) struct Entry {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// What a non-blocking pop found.
pub(crate) enum Pop {
    Entry(Entry),
    /// Nothing buffered, more may come: refill.
    Empty,
    /// Another thread holds the state (refilling): refill, which waits.
    Busy,
    /// The scan is over.
    Done,
    /// Closed by `Db.close()` or `close()`.
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Created, not yet positioned.
    Fresh,
    Running,
    /// Past the last entry, or stopped by an error (raised once).
    Done,
    Closed,
}

struct State {
    iter: Option<varve::DbIterator>,
    phase: Phase,
    buffer: VecDeque<Entry>,
    batch: usize,
    /// The error that ended the scan, raised once the entries read before
    /// it have been yielded.
    pending: Option<varve::Error>,
}

/// A scan in progress.
pub(crate) struct Cursor {
    what: Yield,
    reverse: bool,
    state: Mutex<State>,
}

impl Cursor {
    /// A cursor over `iter` (`None`: an empty range, done at once), walking
    /// backward when `reverse`.
    pub(crate) fn new(iter: Option<varve::DbIterator>, what: Yield, reverse: bool) -> Cursor {
        let phase = if iter.is_some() {
            Phase::Fresh
        } else {
            Phase::Done
        };
        Cursor {
            what,
            reverse,
            state: Mutex::new(State {
                iter,
                phase,
                buffer: VecDeque::new(),
                batch: FIRST_BATCH,
                pending: None,
            }),
        }
    }

    /// What each entry yields.
    pub(crate) fn what(&self) -> Yield {
        self.what
    }

    /// The next buffered entry, without blocking.
    pub(crate) fn try_pop(&self) -> Pop {
        let Some(mut st) = self.state.try_lock() else {
            return Pop::Busy;
        };
        if let Some(e) = st.buffer.pop_front() {
            return Pop::Entry(e);
        }
        match st.phase {
            Phase::Fresh | Phase::Running => Pop::Empty,
            Phase::Done if st.pending.is_some() => Pop::Empty,
            Phase::Done => Pop::Done,
            Phase::Closed => Pop::Closed,
        }
    }

    /// Reads the next batch into the buffer unless it holds entries or the
    /// scan is over. Called detached, inside `Handle::with` (the engine is
    /// open and stays open until this returns). An engine error ends the
    /// scan; it is returned once, after the entries read before it.
    pub(crate) fn refill(&self) -> Result<(), Fail> {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        if !st.buffer.is_empty() {
            return Ok(());
        }
        if let Some(e) = st.pending.take() {
            return Err(Fail::Engine(e));
        }
        let Some(iter) = st.iter.as_mut() else {
            return match st.phase {
                Phase::Closed => Err(Fail::Closed(crate::cursor::CLOSED)),
                _ => Ok(()),
            };
        };
        if st.phase == Phase::Fresh {
            if self.reverse {
                iter.seek_to_last();
            } else {
                iter.seek_to_first();
            }
            st.phase = Phase::Running;
        }
        let mut bytes = 0;
        let mut ended = false;
        while st.buffer.len() < st.batch && bytes < MAX_BATCH_BYTES {
            if !iter.valid() {
                ended = true;
                break;
            }
            let key = match self.what {
                Yield::Values => Vec::new(),
                Yield::Keys | Yield::Items => iter.key().to_vec(),
            };
            let value = match self.what {
                Yield::Keys => Vec::new(),
                // A blob value that cannot be read turns the iterator
                // invalid, with the error in its status.
                Yield::Values | Yield::Items => iter.value().to_vec(),
            };
            if !iter.valid() {
                ended = true;
                break;
            }
            bytes += key.len() + value.len();
            st.buffer.push_back(Entry { key, value });
            if self.reverse {
                iter.move_prev();
            } else {
                iter.move_next();
            }
        }
        if ended {
            st.pending = iter.status().err();
            st.iter = None;
            st.phase = Phase::Done;
            if st.buffer.is_empty()
                && let Some(e) = st.pending.take()
            {
                return Err(Fail::Engine(e));
            }
        }
        st.batch = (st.batch * 2).min(MAX_BATCH);
        Ok(())
    }

    /// Ends the scan now: drops the engine iterator (and what it pins) and
    /// the buffered entries; later calls fail with `ClosedError`.
    pub(crate) fn invalidate(&self) {
        let mut st = self.state.lock();
        st.iter = None;
        st.buffer.clear();
        st.pending = None;
        st.phase = Phase::Closed;
    }
}
