//! The handles a writer holds between the protocol steps: [`Reservation`]
//! (joined space in a slot: copy, then release), [`WriteJob`] (the duty to
//! write one complete slot, then report it) and [`DirectReservation`] (a log
//! range for a record written outside the slots).
//!
//! Thread-safety: each handle is owned by one thread at a time (`Send`, not
//! `Clone`); its consuming method (`release`, `complete`, `write_to`) is the
//! protocol step, so a step cannot be taken twice. Invariants: a live
//! `Reservation` keeps its slot from being written or reused (its bytes are
//! not released yet); a live `WriteJob` keeps its slot from being reused
//! (only `complete` frees it). Dropping a handle without its step stalls the
//! log at that range (the written position never passes it); the engine
//! treats that like a failed write and poisons the log.

use std::io;

use super::pool::SlotPool;
use super::sink::SlotSink;

/// Space joined in a slot: `len` bytes at `log_offset` of the log.
#[derive(Debug)]
#[must_use = "a reservation must be filled and released, or the log stalls"]
pub(crate) struct Reservation<'p> {
    pool: &'p SlotPool,
    slot: usize,
    offset: u32,
    len: u32,
    log_offset: u64,
    generation: u64,
}

impl<'p> Reservation<'p> {
    pub(super) fn new(
        pool: &'p SlotPool,
        slot: usize,
        offset: u32,
        len: u32,
        log_offset: u64,
        generation: u64,
    ) -> Self {
        Reservation {
            pool,
            slot,
            offset,
            len,
            log_offset,
            generation,
        }
    }

    /// Where the record starts in the log.
    pub(crate) fn log_offset(&self) -> u64 {
        self.log_offset
    }

    /// The record's length in bytes (never zero).
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Always false: empty records do not join (see [`super::Join::Empty`]).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Index of the slot holding the record (for diagnostics and tests).
    #[cfg(test)]
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }

    /// Copies `src` to byte `at` of the reserved space. Panics if it does
    /// not fit inside the reservation.
    pub(crate) fn write_at(&mut self, at: usize, src: &[u8]) {
        let end = at
            .checked_add(src.len())
            .expect("reservation range overflows");
        assert!(
            end <= self.len(),
            "write {at}..{end} past a {}-byte reservation",
            self.len
        );
        let buf = &self.pool.slot(self.slot).buf;
        // SAFETY: `[offset, offset + len)` of this slot incarnation was handed
        // to this reservation alone by the JOINED CAS (successive joins get
        // disjoint ranges), and `[at, end)` lies inside it. Nobody reads it
        // yet: the slot is written only once RELEASED == JOINED, which needs
        // this reservation's release, and `release` consumes `self`. The
        // slot cannot be reused under us for the same reason, and its
        // previous incarnation's write finished before it was re-activated
        // (free + activate under the switch lock, then our acquire CAS).
        unsafe { buf.write(self.offset as usize + at, src) };
    }

    /// Copies the whole record. Panics unless `src.len() == self.len()`.
    #[cfg(test)]
    pub(crate) fn copy_from(&mut self, src: &[u8]) {
        assert_eq!(
            src.len(),
            self.len(),
            "record length differs from the reservation"
        );
        self.write_at(0, src);
    }

    /// Hands the bytes back (one atomic add). Returns the slot's write job
    /// if this was the last release of a closed slot.
    pub(crate) fn release(self) -> Option<WriteJob<'p>> {
        let slot = self.pool.slot(self.slot);
        // Cheap check that the protocol never recycles a held slot (loom
        // and the stress tests rely on it).
        assert_eq!(slot.generation(), self.generation, "slot reused while held");
        slot.release(self.len)
            .map(|joined| WriteJob::new(self.pool, self.slot, slot.start(), joined))
    }
}

/// The duty to write one complete slot: its bytes belong at `log_offset`.
#[derive(Debug)]
#[must_use = "a write job must be written and completed, or the log stalls"]
pub(crate) struct WriteJob<'p> {
    pool: &'p SlotPool,
    slot: usize,
    log_offset: u64,
    len: u32,
}

impl<'p> WriteJob<'p> {
    pub(super) fn new(pool: &'p SlotPool, slot: usize, log_offset: u64, len: u32) -> Self {
        WriteJob {
            pool,
            slot,
            log_offset,
            len,
        }
    }

    /// Where the slot's bytes go in the log.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn log_offset(&self) -> u64 {
        self.log_offset
    }

    /// How many bytes the slot holds.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Index of the slot (for diagnostics and tests).
    #[cfg(test)]
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }

    /// Calls `f` with the slot's bytes.
    pub(crate) fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let buf = &self.pool.slot(self.slot).buf;
        // SAFETY: a job exists only for a slot that is closed (no more joins)
        // with RELEASED == JOINED, and exactly one caller gets it. Every
        // writer's copy happens-before its release (release ordering), and
        // the job was created after an acquire read of the final count, so
        // all copies happen-before this read. No write can start until the
        // slot is freed, which only `complete(self)` does — impossible while
        // `&self` is borrowed here.
        unsafe { buf.with_prefix(self.len as usize, f) }
    }

    /// Reports the bytes written: the slot is freed for reuse and the
    /// written position may advance.
    pub(crate) fn complete(self) {
        self.pool.slot_written(self.slot);
    }

    /// Writes the bytes through `sink`, then [`complete`](Self::complete)s.
    /// On error the job is dropped uncompleted (the written position never
    /// passes this range) and the pool is poisoned.
    pub(crate) fn write_to<S: SlotSink + ?Sized>(self, sink: &S) -> io::Result<()> {
        if let Err(e) = self.with_bytes(|bytes| sink.write_at_log_offset(self.log_offset, bytes)) {
            self.pool.poison();
            return Err(e);
        }
        self.complete();
        Ok(())
    }
}

/// A log range for a record written outside the slots.
#[derive(Debug)]
#[must_use = "a direct reservation must be written and completed, or the log stalls"]
pub(crate) struct DirectReservation<'p> {
    pool: &'p SlotPool,
    piece: u64,
    log_offset: u64,
    len: u64,
}

impl<'p> DirectReservation<'p> {
    pub(super) fn new(pool: &'p SlotPool, piece: u64, log_offset: u64, len: u64) -> Self {
        DirectReservation {
            pool,
            piece,
            log_offset,
            len,
        }
    }

    /// Where the record starts in the log.
    pub(crate) fn log_offset(&self) -> u64 {
        self.log_offset
    }

    /// The record's length in bytes.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Reports the record written (by the caller, at `log_offset`).
    pub(crate) fn complete(self) {
        self.pool.direct_written(self.piece);
    }

    /// Writes `record` through `sink`, then completes. Panics unless
    /// `record.len() == self.len()`. On error: as [`WriteJob::write_to`].
    pub(crate) fn write_to<S: SlotSink + ?Sized>(self, sink: &S, record: &[u8]) -> io::Result<()> {
        assert_eq!(
            record.len() as u64,
            self.len,
            "record length differs from the reservation"
        );
        if let Err(e) = sink.write_at_log_offset(self.log_offset, record) {
            self.pool.poison();
            return Err(e);
        }
        self.complete();
        Ok(())
    }
}
