//! WAL log slots (WiredTiger's wait-free log consolidation): many
//! writers place their records into a shared buffer with no lock, and one of
//! them writes the whole buffer to the log in one call.
//!
//! A [`SlotPool`] is a ring of cache-padded slots. Each slot has a byte
//! buffer and one atomic 64-bit state word packing its phase (free / open /
//! closed), the JOINED byte count and the RELEASED byte count (`state`).
//! A writer *joins* the open slot with a CAS that adds its record length to
//! JOINED (the old JOINED is its offset), *copies* its record in without a
//! lock, and *releases* with an atomic add to RELEASED. The join that reaches
//! the close threshold also closes the slot and opens the next one; the
//! release that makes RELEASED equal JOINED on a closed slot returns a
//! [`WriteJob`]: its owner writes the buffer through a [`SlotSink`] — the only
//! IO boundary — and completes the job, freeing the slot. Slots finish out of
//! order; [`SlotPool::written_position`] advances in log order only. Records
//! longer than a slot allows take the direct path
//! ([`SlotPool::reserve_direct`]), ordered with the slots.
//!
//! Thread-safety: the pool is `Sync`; handles are owned by one thread.
//! The protocol and its invariants are in `docs/wal-slots.md`; `unsafe` is
//! confined to `buf.rs` and the two handle methods that touch the buffer.

mod buf;
mod handles;
mod order;
mod pool;
mod shim;
mod sink;
mod slot;
pub(crate) mod state;

pub(crate) use handles::{DirectReservation, WriteJob};
pub(crate) use pool::{Join, SlotConfig, SlotPool};
pub(crate) use sink::SlotSink;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
