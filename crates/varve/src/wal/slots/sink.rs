//! [`SlotSink`]: the one IO boundary of the slot pool. The pool never
//! touches a file; whoever owns a [`WriteJob`](super::WriteJob) or a
//! [`DirectReservation`](super::DirectReservation) hands the bytes to a sink.
//!
//! Contract: `write_at_log_offset` may be called from many threads at once
//! and, because slots finish out of order, with offsets in any order; each
//! log byte is written exactly once. Returning `Ok` means the bytes reached
//! the OS (they survive `kill -9`). Callers learn which prefix of the log is
//! written, in log order, from
//! [`SlotPool::written_position`](super::SlotPool::written_position).

use std::io;

/// Positional writes of log bytes (e.g. `pwrite` at `file base + log offset`).
pub(crate) trait SlotSink: Sync {
    /// Writes `bytes` at `log_offset` of the log. Called at most once per
    /// log range, possibly out of order and concurrently.
    fn write_at_log_offset(&self, log_offset: u64, bytes: &[u8]) -> io::Result<()>;
}
