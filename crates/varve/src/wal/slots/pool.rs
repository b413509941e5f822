//! [`SlotPool`]: the ring of slots, the choice of the active slot, slot
//! switches, the direct path and the log-order written position.
//!
//! Thread-safety: `SlotPool` is `Sync`; every method takes `&self`.
//! The join path is lock-free: read `active`, CAS the slot's state word;
//! a CAS loser retries with the value it saw. A thread that finds no open
//! slot (a switch in progress, or the next slot of the ring still being
//! written) spins briefly ([`spin`]: CPU hints, then `yield_now`) and then
//! parks on the switch lock's condition variable, which every slot
//! activation notifies. The switch lock is taken once per slot switch, per direct
//! record, per close and per finished write — never per joined record.
//!
//! Invariants: at most one slot is `Open`, and it is `slots[active]`; slots
//! are activated in ring order, each at the log offset where the previous
//! reservation ended (so slot buffers and direct records tile the log
//! without gaps or overlap); the log ranges are reserved in `LogOrder` in
//! log order; a slot becomes free only after its bytes were written.

use super::handles::{DirectReservation, Reservation, WriteJob};
use super::order::LogOrder;
use super::shim::{Lock, spin};
#[cfg(all(test, not(loom)))]
use super::sink::SlotSink;
use super::slot::{CloseAttempt, JoinAttempt, Slot};
use super::state::{self, MAX_CAPACITY, Phase};
use crate::error::{Error, Result};
use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Shape of a [`SlotPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotConfig {
    /// Number of slots in the ring (at least 1; 4-16 in practice).
    pub slots: usize,
    /// Bytes per slot buffer (at most [`MAX_CAPACITY`]).
    pub capacity: usize,
    /// A join that brings JOINED to at least this many bytes closes the slot.
    pub close_at: usize,
    /// Records longer than this take the direct path ([`Join::TooLarge`]).
    /// Must satisfy `close_at + max_join <= capacity + 1`, so a record that
    /// is allowed to join always fits in the open slot.
    pub max_join: usize,
}

impl SlotConfig {
    /// `slots` buffers of `capacity` bytes; a slot closes once half full and
    /// records up to the other half join slots.
    pub(crate) fn new(slots: usize, capacity: usize) -> Self {
        let close_at = (capacity / 2).max(1);
        SlotConfig {
            slots,
            capacity,
            close_at,
            max_join: (capacity + 1).saturating_sub(close_at),
        }
    }

    fn validate(&self) -> Result<()> {
        let ok = self.slots >= 1
            && (1..=MAX_CAPACITY).contains(&self.capacity)
            && (1..=self.capacity).contains(&self.close_at)
            && self.max_join >= 1
            && self.close_at + self.max_join <= self.capacity + 1;
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "bad WAL slot config {self:?}: need slots >= 1, 1 <= capacity <= {MAX_CAPACITY}, \
                 1 <= close_at <= capacity, max_join >= 1, close_at + max_join <= capacity + 1"
            )))
        }
    }
}

/// The outcome of [`SlotPool::join`].
#[derive(Debug)]
#[must_use]
pub(crate) enum Join<'p> {
    /// Space in the active slot: copy the record in, then release it.
    Slot(Reservation<'p>),
    /// Longer than `max_join`: use [`SlotPool::reserve_direct`].
    TooLarge,
    /// A zero-length record: nothing to place (it has no log range).
    Empty,
    /// The pool was poisoned by a failed write ([`SlotPool::poison`]):
    /// nothing more can reach the log.
    Poisoned,
}

/// Keeps a hot shared word on its own cache lines.
#[derive(Debug)]
#[repr(align(128))]
struct Padded<T>(T);

/// State changed only under the switch lock.
#[derive(Debug)]
struct Switch {
    order: LogOrder,
    /// The `LogOrder` piece of each slot's current closed incarnation.
    slot_piece: Vec<u64>,
    /// True when `slots[active]` is still busy with its previous use: no
    /// slot is open, and whoever frees it activates it.
    waiting: bool,
}

/// A ring of log slots; see the module docs.
#[derive(Debug)]
pub(crate) struct SlotPool {
    slots: Box<[Slot]>,
    /// Index of the open slot, or of the slot that will open next. Read by
    /// every join, written once per switch.
    active: Padded<AtomicUsize>,
    /// End of the contiguous written prefix of the log.
    written: Padded<AtomicU64>,
    /// Set by [`SlotPool::poison`]; joins refuse to start or keep waiting.
    poisoned: AtomicBool,
    close_at: u32,
    max_join: usize,
    switch: Lock<Switch>,
}

impl SlotPool {
    /// A pool whose first record goes to log offset `start`.
    pub(crate) fn new(config: SlotConfig, start: u64) -> Result<Self> {
        config.validate()?;
        let slots: Box<[Slot]> = (0..config.slots)
            .map(|_| Slot::new(config.capacity))
            .collect();
        slots[0].activate(start);
        Ok(SlotPool {
            slots,
            active: Padded(AtomicUsize::new(0)),
            written: Padded(AtomicU64::new(start)),
            poisoned: AtomicBool::new(false),
            close_at: config.close_at as u32,
            max_join: config.max_join,
            switch: Lock::new(Switch {
                order: LogOrder::new(start),
                slot_piece: vec![0; config.slots],
                waiting: false,
            }),
        })
    }

    /// Claims `len` bytes of the active slot (lock-free; waits only while no
    /// slot is open). The joiner whose join reaches `close_at` closes the
    /// slot and opens the next one before returning.
    ///
    /// Do not call this while holding an uncompleted [`WriteJob`]: the pool
    /// may be waiting for exactly that write to open a slot. Returns
    /// [`Join::Poisoned`] instead of starting (or continuing) to wait once
    /// the pool is poisoned.
    pub(crate) fn join(&self, len: usize) -> Join<'_> {
        if self.is_poisoned() {
            return Join::Poisoned;
        }
        if len == 0 {
            return Join::Empty;
        }
        if len > self.max_join {
            return Join::TooLarge;
        }
        let len32 = len as u32; // max_join <= capacity <= MAX_CAPACITY
        let mut round = 0;
        loop {
            let i = self.active.0.load(Ordering::Acquire);
            let slot = &self.slots[i];
            match slot.join(len32, self.close_at) {
                JoinAttempt::Joined { offset, closed_it } => {
                    let start = slot.start();
                    let generation = slot.generation();
                    if closed_it {
                        let mut sw = self.switch.lock();
                        let joined = state::joined(slot.state.load(Ordering::Acquire));
                        self.retire_locked(&mut sw, i, joined);
                        self.advance_locked(&mut sw, i);
                    }
                    let log_offset = start + u64::from(offset);
                    return Join::Slot(Reservation::new(
                        self, i, offset, len32, log_offset, generation,
                    ));
                }
                JoinAttempt::NotOpen => {
                    if !spin(&mut round) {
                        self.wait_for_open();
                        round = 0;
                    }
                    if self.is_poisoned() {
                        return Join::Poisoned;
                    }
                }
                JoinAttempt::DoesNotFit => unreachable!("close_at + max_join <= capacity + 1"),
            }
        }
    }

    /// Closes the active slot now (idle timer, sync path) so its bytes get
    /// written. Returns the write job if every joined byte is already
    /// released; otherwise the last releaser gets it. Does nothing when the
    /// slot is empty or already closing. A caller always sees its own
    /// earlier joins, so a sync writer's record is never left behind.
    pub(crate) fn close_active(&self) -> Option<WriteJob<'_>> {
        self.close_active_before(u64::MAX)
    }

    /// [`close_active`](Self::close_active), but only if the open slot
    /// starts before log offset `end` — i.e. it holds bytes of the caller's
    /// record that ends at `end`. A writer waiting for its record to be
    /// written uses this so that it never closes a later slot early.
    pub(crate) fn close_active_before(&self, end: u64) -> Option<WriteJob<'_>> {
        let mut sw = self.switch.lock();
        if sw.waiting {
            return None;
        }
        let i = self.active.0.load(Ordering::Relaxed);
        let slot = &self.slots[i];
        if slot.state.load(Ordering::Acquire) == state::OPEN_EMPTY || slot.start() >= end {
            return None;
        }
        match slot.close() {
            CloseAttempt::NotOpen => None,
            CloseAttempt::Closed { joined, complete } => {
                self.retire_locked(&mut sw, i, joined);
                self.advance_locked(&mut sw, i);
                complete.then(|| WriteJob::new(self, i, slot.start(), joined))
            }
        }
    }

    /// Reserves the next `len` bytes of the log for a record written outside
    /// the slots. The open slot is closed first (its range precedes the
    /// record) unless it is empty, in which case it just moves past the
    /// record. Returns the reservation and, if closing the slot made it
    /// complete, that slot's write job.
    pub(crate) fn reserve_direct(
        &self,
        len: usize,
    ) -> (DirectReservation<'_>, Option<WriteJob<'_>>) {
        let len64 = len as u64;
        let mut sw = self.switch.lock();
        loop {
            if sw.waiting {
                let (piece, start) = sw.order.push(len64);
                return (DirectReservation::new(self, piece, start, len64), None);
            }
            let i = self.active.0.load(Ordering::Relaxed);
            let slot = &self.slots[i];
            let start = sw.order.reserved_end();
            if slot.restart_if_empty(start + len64) {
                self.switch.notify_all();
                let (piece, _) = sw.order.push(len64);
                return (DirectReservation::new(self, piece, start, len64), None);
            }
            match slot.close() {
                CloseAttempt::NotOpen => {
                    // A joiner closed it and is about to switch: wait for it.
                    sw = self.switch.wait(sw);
                }
                CloseAttempt::Closed { joined, complete } => {
                    self.retire_locked(&mut sw, i, joined);
                    let (piece, start) = sw.order.push(len64);
                    self.advance_locked(&mut sw, i);
                    let job = complete.then(|| WriteJob::new(self, i, slot.start(), joined));
                    return (DirectReservation::new(self, piece, start, len64), job);
                }
            }
        }
    }

    /// Marks the pool failed: a slot or direct write did not reach the log,
    /// so the written position will never pass it and the ring may never
    /// open another slot. Later joins return [`Join::Poisoned`]; handles
    /// already out can still be stepped (their bytes are simply never
    /// reported written). Called by the handles' `write_to` on a sink error.
    pub(crate) fn poison(&self) {
        let _sw = self.switch.lock();
        self.poisoned.store(true, Ordering::Relaxed);
        self.switch.notify_all();
    }

    /// Whether [`SlotPool::poison`] was called.
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Relaxed)
    }

    /// The log offset up to which every byte has been written (reported by
    /// `WriteJob::complete` / `DirectReservation::complete`). Advances in log
    /// order only, even though slots finish out of order.
    pub(crate) fn written_position(&self) -> u64 {
        self.written.0.load(Ordering::Acquire)
    }

    /// Places one record in the log and, if this call ends up owning a slot
    /// write (or the direct record), performs it through `sink`. Returns the
    /// record's log offset (`None` for an empty record). A sink error poisons
    /// the pool; a poisoned pool fails every later call.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn append<S: SlotSink + ?Sized>(
        &self,
        sink: &S,
        record: &[u8],
    ) -> std::io::Result<Option<u64>> {
        match self.join(record.len()) {
            Join::Empty => Ok(None),
            Join::Poisoned => Err(std::io::Error::other(
                "WAL slot pool poisoned by an earlier write failure",
            )),
            Join::Slot(mut r) => {
                let at = r.log_offset();
                r.copy_from(record);
                if let Some(job) = r.release() {
                    job.write_to(sink)?;
                }
                Ok(Some(at))
            }
            Join::TooLarge => {
                let (direct, job) = self.reserve_direct(record.len());
                let at = direct.log_offset();
                if let Some(job) = job {
                    job.write_to(sink)?;
                }
                direct.write_to(sink, record)?;
                Ok(Some(at))
            }
        }
    }

    /// Parks until a slot is open (or the pool is poisoned). Activations
    /// happen under the switch lock and notify, so checking under the lock
    /// cannot miss one; a spurious or early wake-up just retries the join.
    fn wait_for_open(&self) {
        let mut sw = self.switch.lock();
        loop {
            let i = self.active.0.load(Ordering::Relaxed);
            let open = state::phase(self.slots[i].state.load(Ordering::Acquire)) == Phase::Open;
            if open || self.is_poisoned() {
                return;
            }
            sw = self.switch.wait(sw);
        }
    }

    /// Opens free slot `i` at the log tail and wakes waiting joiners.
    fn activate_locked(&self, sw: &Switch, i: usize) {
        self.slots[i].activate(sw.order.reserved_end());
        self.switch.notify_all();
    }

    /// The slot at `i` (for the handles).
    pub(super) fn slot(&self, i: usize) -> &Slot {
        &self.slots[i]
    }

    /// Reserves closed slot `i`'s `joined` bytes as the next log piece.
    fn retire_locked(&self, sw: &mut Switch, i: usize, joined: u32) {
        let (piece, start) = sw.order.push(u64::from(joined));
        debug_assert_eq!(
            start,
            self.slots[i].start(),
            "slot does not start at the log tail"
        );
        sw.slot_piece[i] = piece;
    }

    /// Makes the ring slot after `i` the active one: opens it at the log
    /// tail if it is free, else leaves `waiting` for its write to finish.
    fn advance_locked(&self, sw: &mut Switch, i: usize) {
        let next = (i + 1) % self.slots.len();
        self.active.0.store(next, Ordering::Release);
        if self.slots[next].is_free() {
            self.activate_locked(sw, next);
        } else {
            sw.waiting = true;
            // Direct reservers waiting for this switch can now proceed.
            self.switch.notify_all();
        }
    }

    /// Reports slot `i`'s write done: counts its piece written, frees the
    /// slot, and opens it if the ring was waiting for it.
    pub(super) fn slot_written(&self, i: usize) {
        let mut sw = self.switch.lock();
        let piece = sw.slot_piece[i];
        let written = sw.order.complete(piece);
        self.written.0.store(written, Ordering::Release);
        self.slots[i].free();
        if sw.waiting && self.active.0.load(Ordering::Relaxed) == i {
            sw.waiting = false;
            self.activate_locked(&sw, i);
        }
    }

    /// Reports a direct record's write done.
    pub(super) fn direct_written(&self, piece: u64) {
        let mut sw = self.switch.lock();
        let written = sw.order.complete(piece);
        self.written.0.store(written, Ordering::Release);
    }
}
