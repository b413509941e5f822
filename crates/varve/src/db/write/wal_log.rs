//! [`WalLog`]: one WAL file (format version 2) with its slot pool, its
//! memtable budget and its written / durable positions.
//!
//! Writers *place* their record into the slot pool (join, copy, release)
//! while holding the write gate shared, and afterwards write whatever slot
//! or direct record they ended up owning through the [`OrderedSink`]. The
//! sink hands bytes to the file with `pwrite` at file offset = log offset
//! (the pool's log offsets already include the 31-byte file header), and
//! does so in log order: a slot that finished early waits for the slots
//! before it. So the file only ever holds a prefix of the log — after
//! `kill -9` there is never a hole followed by records, and recovery's rule
//! "a bad record followed by a good one is corruption" still holds.
//!
//! Positions: `written` (the pool's `written_position`: every byte below it
//! reached the OS) and `durable` (every byte below it was fdatasync'ed; the
//! syncer takes `written` before fdatasync and publishes it after). Both
//! only grow. Waiters spin briefly, then park on [`Events`], which every
//! advance and every failure notifies.
//!
//! Failure: the first failed write (or fdatasync) *stops* the log at a log
//! offset `stopped_at` — the end of what the sink had handed to the file, a
//! record boundary. Nothing at or past it ever reaches the file; every
//! byte below it did. So a record ending at or below the stop point is
//! still acknowledged (its writer waits for `written`, and for `durable`:
//! the syncer keeps fdatasyncing the prefix after a failed write), and
//! every writer whose record ends past it gets the error and reports its
//! sequence range and record length (`record_lost`). Once the lost bytes
//! add up to `placed_end - stopped_at`, every failed writer has reported,
//! and `Db::resume` can drop exactly those sequence ranges from the
//! memtable (`lost_ranges`). An fdatasync failure is kept apart
//! (`sync_failed`): after it the page cache's state is unknown and the log
//! is not resumable.
//!
//! Thread-safety: `WalLog` is `Sync`. Invariants: a record is acknowledged
//! only when `written` (sync = false) or `durable` (sync = true) passes its
//! end; `written` never passes `stopped_at`; the first IO failure is kept
//! and returned to every writer whose record ends past `stopped_at` (and,
//! after an fdatasync failure, to every writer still waiting for
//! durability); after it nothing more reaches the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::events::Events;
use super::ordered_sink::OrderedSink;
use super::wal_lost::LostWrites;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::io::{FileSystem, LogFile};
use crate::memtable::MemTable;
use crate::wal::format::{self, FILE_HEADER_RECORD_LEN};
use crate::wal::record::{self, RECORD_HEADER_SIZE, WAL_FORMAT_V2};
use crate::wal::slots::{DirectReservation, Join, SlotConfig, SlotPool, WriteJob};

/// Slots in each log's ring.
pub(crate) const SLOTS: usize = 8;
/// Most bytes per slot buffer; a slot closes when half full, records
/// longer than the other half take the direct path. Small memtables get
/// smaller slots (an eighth of the memtable, at least 4 KiB).
pub(crate) const SLOT_CAPACITY: usize = 256 << 10;

/// Slot buffer size for a memtable of `mem_capacity` bytes.
fn slot_capacity(mem_capacity: usize) -> usize {
    (mem_capacity / 8).clamp(4 << 10, SLOT_CAPACITY)
}

/// A record placed in the log whose bytes may still have to be written by
/// the placing thread (see [`WalLog::finish`]).
#[must_use]
pub(crate) struct Placed<'a> {
    /// Log offset just past the record.
    pub(crate) end: u64,
    job: Option<WriteJob<'a>>,
    direct: Option<(DirectReservation<'a>, Vec<u8>)>,
}

/// One WAL file and its slots; see the module docs.
#[derive(Debug)]
pub(crate) struct WalLog {
    /// The log's file number.
    pub(crate) number: u64,
    /// The memtable this log's records of the default keyspace go to.
    pub(crate) mem: Arc<MemTable>,
    /// The memtables of the other keyspaces, by id; each as large as
    /// `mem`, all fresh when the log is created (a keyspace created or
    /// dropped switches logs).
    pub(crate) keyspace_mems: Vec<(u32, Arc<MemTable>)>,
    /// For each of `keyspace_mems`, the arena bytes at which that
    /// keyspace's memtable asks for a switch
    /// (`KeyspaceOptions::write_buffer_size`; `usize::MAX`: none of its own).
    pub(crate) keyspace_limits: Vec<usize>,
    /// Memtable bytes writers may reserve, across all keyspaces (entry
    /// charges are upper bounds, so reserved inserts never fail). The
    /// memtables are always fresh when their log is created.
    pub(super) budget: usize,
    pub(super) reserved: AtomicUsize,
    /// Blob value bytes the memtable's pointers may reference
    /// (`Options::max_memtable_blob_bytes`; unbounded until
    /// [`with_blob_budget`](Self::with_blob_budget)). A fresh memtable
    /// takes one write whatever it references.
    pub(super) blob_budget: u64,
    pub(super) blob_reserved: AtomicU64,
    /// Set by the first reservation that took the room or the blob bytes
    /// past 7/8 of the budget ([`try_reserve`](Self::try_reserve)).
    high_water: AtomicBool,
    pub(super) pool: SlotPool,
    pub(super) sink: OrderedSink,
    /// Largest end offset of any record placed so far.
    pub(super) end: AtomicU64,
    pub(super) durable: AtomicU64,
    /// Notified after every sink write and on failure (write waiters).
    pub(crate) events: Events,
    /// Notified when the durable position advances and on failure (sync
    /// waiters), so they are not woken by every slot write.
    pub(super) durable_events: Events,
    /// An fdatasync failed (see the module docs: not resumable).
    pub(super) sync_failed: AtomicBool,
    /// What the writers whose records were lost reported (error path only).
    lost: LostWrites,
    /// Set by `Db::resume` when it replaced this log: failures still
    /// reported on it no longer poison the database.
    pub(super) retired: AtomicBool,
    pub(super) path: PathBuf,
}

impl WalLog {
    /// Creates log file `number` in `dir` (its FILE_HEADER written; the
    /// caller syncs the directory) feeding memtable `mem`; memory-mapped
    /// written the way `io` says (see `wal::create_log_file`).
    pub(crate) fn create(
        fs: &dyn FileSystem,
        path: &Path,
        io: crate::wal::WalWriter,
        number: u64,
        mem: Arc<MemTable>,
    ) -> Result<WalLog> {
        let file = crate::wal::create_log_file(fs, path, io)?;
        file.write_at(0, &format::file_header_record(WAL_FORMAT_V2, number))?;
        // The header is durable from the start (`durable` begins after it):
        // a log that is switched away from before any record reaches it
        // (a keyspace created or dropped right after the switch that made
        // it) is never synced again, and a power loss must not leave it
        // torn with newer logs after it, which recovery rightly calls
        // corruption.
        file.sync_data()?;
        Self::with_file(file, number, mem)
    }

    /// A log that writes nothing (read-only databases refuse writes before
    /// they reach it).
    pub(crate) fn discard(dir: &Path, mem: Arc<MemTable>) -> Result<WalLog> {
        let file: Arc<dyn LogFile> = Arc::new(DiscardLog {
            path: dir.join("(read-only: no WAL)"),
        });
        Self::with_file(file, 0, mem)
    }

    fn with_file(file: Arc<dyn LogFile>, number: u64, mem: Arc<MemTable>) -> Result<WalLog> {
        let start = FILE_HEADER_RECORD_LEN as u64;
        let config = SlotConfig::new(SLOTS, slot_capacity(mem.capacity()));
        let pool = SlotPool::new(config, start)?;
        Ok(WalLog {
            number,
            // Entry charges include the head node's share, so a fresh
            // memtable accepts entries whose charges sum to its capacity.
            budget: mem.capacity(),
            mem,
            keyspace_mems: Vec::new(),
            keyspace_limits: Vec::new(),
            reserved: AtomicUsize::new(0),
            blob_budget: u64::MAX,
            blob_reserved: AtomicU64::new(0),
            high_water: AtomicBool::new(false),
            pool,
            path: file.path().to_path_buf(),
            sink: OrderedSink {
                file,
                next: Mutex::new(start),
                cv: Condvar::new(),
                busy: AtomicUsize::new(0),
                failure: Mutex::new(None),
                failed: AtomicBool::new(false),
                stopped_at: AtomicU64::new(u64::MAX),
            },
            end: AtomicU64::new(start),
            durable: AtomicU64::new(start),
            events: Events::default(),
            durable_events: Events::default(),
            sync_failed: AtomicBool::new(false),
            lost: LostWrites::default(),
            retired: AtomicBool::new(false),
        })
    }

    /// This log with memtables for the keyspaces other than the default
    /// one (sorted by id, each of `mem`'s capacity).
    pub(crate) fn with_keyspace_mems(mut self, mems: Vec<(u32, Arc<MemTable>)>) -> WalLog {
        debug_assert!(
            mems.windows(2).all(|w| w[0].0 < w[1].0) && mems.iter().all(|(id, _)| *id != 0),
            "keyspace memtables sorted by id, without the default keyspace"
        );
        debug_assert!(
            mems.iter().all(|(_, m)| m.capacity() >= self.budget),
            "every keyspace's memtable can take the whole budget"
        );
        self.keyspace_limits = vec![usize::MAX; mems.len()];
        self.keyspace_mems = mems;
        self
    }

    /// This log with `limits[i]` the write buffer of `keyspace_mems[i]`.
    pub(crate) fn with_keyspace_limits(mut self, limits: Vec<usize>) -> WalLog {
        debug_assert_eq!(limits.len(), self.keyspace_mems.len());
        self.keyspace_limits = limits;
        self
    }

    /// Makes the next reservation fail (so the next writer switches
    /// memtables) once a keyspace's memtable has reached its own write
    /// buffer. Called after a write to a keyspace other than the default.
    pub(crate) fn check_keyspace_limits(&self) {
        let full = self
            .keyspace_mems
            .iter()
            .zip(&self.keyspace_limits)
            .any(|((_, m), &limit)| limit != usize::MAX && m.memory_usage() >= limit);
        if full {
            self.reserved.fetch_max(self.budget, Ordering::Relaxed);
        }
    }

    /// Takes the entries of the write with sequences `first..=last` out of
    /// view in every memtable of this log (`MemTable::hide`): it failed
    /// after it was inserted, and its writer is about to get the error.
    pub(crate) fn hide(&self, first: u64, last: u64) {
        self.mem.hide(first, last);
        for (_, mem) in &self.keyspace_mems {
            mem.hide(first, last);
        }
    }

    /// The memtable of keyspace `id` in this log (`None`: no such keyspace).
    pub(crate) fn mem_of(&self, id: u32) -> Option<&MemTable> {
        if id == 0 {
            return Some(&self.mem);
        }
        self.keyspace_mems
            .binary_search_by_key(&id, |(k, _)| *k)
            .ok()
            .map(|i| &*self.keyspace_mems[i].1)
    }

    /// This log with its memtable's pointers limited to `bytes` of blob
    /// values.
    pub(crate) fn with_blob_budget(mut self, bytes: u64) -> WalLog {
        debug_assert!(
            bytes > 0,
            "a zero blob budget would refuse every blob write"
        );
        self.blob_budget = bytes;
        self
    }

    /// Reserves `charge` memtable bytes and `blob` referenced blob bytes
    /// (a write's pointers); `None` (nothing reserved) when either does
    /// not fit. The first write with blob bytes always fits them.
    ///
    /// `Some(true)` for exactly one reservation per log: the first whose
    /// bytes took the reserved room or blob bytes to 7/8 of the budget,
    /// the moment to make the next log ahead of the switch
    /// (`room::prepare_switch`). It is read off the `fetch_add`s the
    /// reservation makes anyway; the flag is touched only by a crossing.
    pub(crate) fn try_reserve(&self, charge: usize, blob: u64) -> Option<bool> {
        let before = self.reserved.fetch_add(charge, Ordering::Relaxed);
        let after = before.saturating_add(charge);
        if after > self.budget {
            self.reserved.fetch_sub(charge, Ordering::Relaxed);
            return None;
        }
        let mark = self.budget - self.budget / 8;
        let mut crossed = before < mark && after >= mark;
        if blob > 0 {
            let before = self.blob_reserved.fetch_add(blob, Ordering::Relaxed);
            let after = before.saturating_add(blob);
            if before > 0 && after > self.blob_budget {
                self.blob_reserved.fetch_sub(blob, Ordering::Relaxed);
                self.reserved.fetch_sub(charge, Ordering::Relaxed);
                return None;
            }
            let mark = self.blob_budget - self.blob_budget / 8;
            crossed |= before < mark && after >= mark;
        }
        Some(crossed && !self.high_water.swap(true, Ordering::Relaxed))
    }

    /// Gives back a reservation whose write did not happen.
    pub(crate) fn release(&self, charge: usize, blob: u64) {
        self.reserved.fetch_sub(charge, Ordering::Relaxed);
        self.blob_reserved.fetch_sub(blob, Ordering::Relaxed);
    }

    /// Whether `charge` more memtable bytes and `blob` more referenced blob
    /// bytes would fit (no reservation).
    pub(crate) fn has_room(&self, charge: usize, blob: u64) -> bool {
        let blob_before = self.blob_reserved.load(Ordering::Relaxed);
        self.reserved.load(Ordering::Relaxed).saturating_add(charge) <= self.budget
            && (blob == 0
                || blob_before == 0
                || blob_before.saturating_add(blob) <= self.blob_budget)
    }

    /// Blob value bytes the memtable's pointers reference (reserved).
    pub(crate) fn blob_bytes(&self) -> u64 {
        self.blob_reserved.load(Ordering::Relaxed)
    }

    /// Whether `charge` bytes fit this log's memtable at all.
    pub(crate) fn could_hold(&self, charge: usize) -> bool {
        charge <= self.budget
    }

    /// The log offset from which nothing reaches the file, once the log
    /// failed.
    pub(crate) fn stopped_at(&self) -> Option<u64> {
        self.sink.stopped_at()
    }

    /// The log file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Marks the log replaced by `Db::resume`.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    /// Whether `Db::resume` replaced this log.
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Joins the log with `payload` framed as one record (lock-free; call
    /// under the write gate). The returned [`Placed`] must be passed to
    /// [`finish`](Self::finish) — after leaving the gate.
    pub(crate) fn place(&self, payload: &[u8]) -> Result<Placed<'_>> {
        if payload.len() > record::MAX_RECORD_PAYLOAD {
            return Err(Error::InvalidArgument(format!(
                "write batch of {} bytes exceeds the WAL record limit {}",
                payload.len(),
                record::MAX_RECORD_PAYLOAD
            )));
        }
        let low = format::log_low(self.number);
        let len = record::encoded_len(payload.len());
        let header = record::header(low, payload);
        let placed = match self.pool.join(len) {
            Join::Slot(mut r) => {
                r.write_at(0, &header);
                r.write_at(RECORD_HEADER_SIZE, payload);
                let end = r.log_offset() + len as u64;
                Placed {
                    end,
                    job: r.release(),
                    direct: None,
                }
            }
            Join::TooLarge => {
                let (d, job) = self.pool.reserve_direct(len);
                let mut bytes = Vec::with_capacity(len);
                bytes.extend_from_slice(&header);
                bytes.extend_from_slice(payload);
                Placed {
                    end: d.log_offset() + len as u64,
                    job,
                    direct: Some((d, bytes)),
                }
            }
            Join::Empty => unreachable!("a framed record is never empty"),
            Join::Poisoned => return Err(self.failure().unwrap_or_else(|| self.poisoned())),
        };
        self.end.fetch_max(placed.end, Ordering::AcqRel);
        Ok(placed)
    }

    pub(super) fn poisoned(&self) -> Error {
        Error::Poisoned(format!("WAL {} failed earlier", self.path.display()))
    }

    /// Writes what `placed` left to this thread (a slot it released last,
    /// a direct record). Never waits for anything but earlier log bytes.
    pub(crate) fn finish(&self, placed: Placed<'_>) -> Result<()> {
        if let Some(job) = placed.job {
            self.write_job(job)?;
        }
        if let Some((d, bytes)) = placed.direct {
            let r = d.write_to(&self.sink, &bytes);
            self.events.notify();
            if r.is_err() {
                self.wake_after_failure();
                return Err(self.failure().unwrap_or_else(|| self.poisoned()));
            }
        }
        Ok(())
    }

    /// Writes one slot through the ordered sink and wakes waiters.
    fn write_job(&self, job: WriteJob<'_>) -> Result<()> {
        let r = job.write_to(&self.sink);
        self.events.notify();
        match r {
            Ok(()) => Ok(()),
            Err(_) => {
                self.wake_after_failure();
                Err(self.failure().unwrap_or_else(|| self.poisoned()))
            }
        }
    }

    /// Log offset below which every byte reached the OS.
    pub(crate) fn written(&self) -> u64 {
        self.pool.written_position()
    }

    /// Log offset below which every byte is durable.
    pub(crate) fn durable(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Largest end of any record placed so far.
    pub(crate) fn placed_end(&self) -> u64 {
        self.end.load(Ordering::Acquire)
    }

    /// The `kill -9` rule: returns once every byte below `end` reached the
    /// OS. While the sink is idle and the open slot holds part of the
    /// caller's record, the caller closes that slot and writes it itself
    /// (natural group commit: slots fill while a write is in progress).
    pub(crate) fn wait_written(&self, end: u64) -> Result<()> {
        let mut round = 0u32;
        loop {
            let seen = self.events.epoch();
            if self.written() >= end {
                return Ok(());
            }
            // A record below the stop point was handed to the file; its
            // piece is about to be marked written.
            if let Some(e) = self.lost_at(end) {
                return Err(e);
            }
            if self.sink.busy.load(Ordering::SeqCst) == 0
                && let Some(job) = self.pool.close_active_before(end)
            {
                self.write_job(job)?;
                continue;
            }
            round += 1;
            if round < 32 {
                std::hint::spin_loop();
            } else if round < 40 {
                std::thread::yield_now();
            } else {
                // Every sink write and failure notifies, so a wake-up means
                // the sink may be idle now or our bytes may be written.
                self.events
                    .park(|| self.events.epoch() != seen, Duration::from_millis(1));
            }
        }
    }

    /// Waits until every byte below `end` is durable; `request` asks the
    /// syncer for an fdatasync (called again while waiting).
    pub(crate) fn wait_durable(&self, end: u64, request: impl Fn()) -> Result<()> {
        let mut round = 0u32;
        loop {
            let seen = self.durable_events.epoch();
            if self.durable() >= end {
                return Ok(());
            }
            if self.sync_failed() {
                return Err(self.failure().unwrap_or_else(|| self.poisoned()));
            }
            if let Some(e) = self.lost_at(end) {
                return Err(e);
            }
            if round.is_multiple_of(64) {
                request();
            }
            round += 1;
            if round < 16 {
                std::hint::spin_loop();
            } else {
                self.durable_events.park(
                    || self.durable_events.epoch() != seen,
                    Duration::from_millis(2),
                );
            }
        }
    }

    /// Pushes the open slot if it holds anything (the idle timer). Does
    /// nothing once the log stopped (the slot could never be written).
    pub(crate) fn push_idle(&self) -> Result<()> {
        if self.sink.stopped_at().is_none()
            && self.sink.busy.load(Ordering::SeqCst) == 0
            && let Some(job) = self.pool.close_active()
        {
            self.write_job(job)?;
        }
        Ok(())
    }

    /// fdatasyncs what is written now and publishes it as durable. Returns
    /// whether an fdatasync was issued. Keeps working after a failed write
    /// (the written prefix still becomes durable for the writers whose
    /// records it holds); after a failed fdatasync it returns that error.
    pub(crate) fn sync(&self) -> Result<bool> {
        if self.sync_failed() {
            return Err(self.failure().unwrap_or_else(|| self.poisoned()));
        }
        let w = self.written();
        debug_assert!(
            self.sink.stopped_at().is_none_or(|at| w <= at),
            "written past the stop point"
        );
        if w <= self.durable() {
            return Ok(false);
        }
        match self.sink.file.sync_data() {
            Ok(()) => {
                self.durable.fetch_max(w, Ordering::AcqRel);
                self.durable_events.notify();
                Ok(true)
            }
            Err(e) => {
                self.fail_sync(&e);
                Err(e)
            }
        }
    }

    /// Writes and syncs every record placed so far (the caller keeps new
    /// records out, e.g. by holding the write gate, for a complete seal).
    pub(crate) fn flush_and_sync(&self) -> Result<bool> {
        let end = self.placed_end();
        self.wait_written(end)?;
        self.sync()
    }
}

/// The failure path (nothing here runs on the success path).
impl WalLog {
    /// The first IO failure, if any. The recorded failure is read first:
    /// the sink records it before it sets the stop point and the `failed`
    /// flag, so a writer that saw the stop point (`lost_at`) always finds
    /// it here, even before the flag is set. (Reading the flag first let
    /// such a writer report a generic failure, which is not resumable,
    /// instead of the full disk: `tests/enospc.rs` caught it about once in
    /// 60 runs.)
    pub(crate) fn failure(&self) -> Option<Error> {
        if let Some(e) = self.sink.failure.lock().as_ref() {
            return Some(e.duplicate());
        }
        if !self.sink.failed.load(Ordering::Acquire) && !self.pool.is_poisoned() {
            return None;
        }
        Some(Error::Poisoned(format!(
            "WAL {} failed earlier",
            self.path.display()
        )))
    }

    /// An fdatasync failed: stops the log where the sink is (nothing more
    /// is written; what was written may or may not be durable).
    pub(super) fn fail_sync(&self, e: &Error) {
        self.sync_failed.store(true, Ordering::Release);
        {
            let next = self.sink.next.lock();
            self.sink.fail_at(*next, e);
        }
        self.wake_after_failure();
    }

    /// Poisons the pool (no more joins) and wakes every kind of waiter.
    pub(super) fn wake_after_failure(&self) {
        self.pool.poison();
        self.sink.cv.notify_all();
        self.events.notify();
        self.durable_events.notify();
    }

    /// The error for a writer whose record ends at `end`, if it can never
    /// be written: it ends past the stop point, or the pool was poisoned
    /// without one (a handle dropped unwritten).
    pub(super) fn lost_at(&self, end: u64) -> Option<Error> {
        match self.sink.stopped_at() {
            Some(at) if end > at => Some(self.failure().unwrap_or_else(|| self.poisoned())),
            Some(_) => None,
            None if self.pool.is_poisoned() => {
                Some(self.failure().unwrap_or_else(|| self.poisoned()))
            }
            None => None,
        }
    }

    /// Whether an fdatasync of this log failed.
    pub(crate) fn sync_failed(&self) -> bool {
        self.sync_failed.load(Ordering::Acquire)
    }

    /// Called (error path only) by a writer whose write failed: if its
    /// record — sequences `first..=last`, `len` bytes ending at `end` —
    /// lies past the stop point, it never reached the file: it is hidden
    /// in the memtables before its writer sees the error, and resume drops
    /// those sequences for good.
    pub(crate) fn record_lost(&self, first: u64, last: u64, end: u64, len: u64) {
        if self.sink.stopped_at().is_some_and(|at| end > at) {
            self.hide(first, last);
            self.lost.record(first, last, len);
        }
    }

    /// Waits (at most `max`) until every writer whose record lies past the
    /// stop point has reported it, then returns their sequence ranges.
    /// Call with the write gate held exclusively (no record is being
    /// placed) on a log that stopped.
    pub(crate) fn lost_ranges(&self, max: Duration) -> Result<Vec<(u64, u64)>> {
        let Some(at) = self.sink.stopped_at() else {
            return Ok(Vec::new());
        };
        // Records tile the log, so the bytes past the stop point are
        // exactly the lost records.
        let expected = self.placed_end().saturating_sub(at);
        self.lost.wait_for(expected, max, &self.path)
    }
}

/// The log file of a read-only database: accepts nothing is ever written.
#[derive(Debug)]
struct DiscardLog {
    path: PathBuf,
}

impl LogFile for DiscardLog {
    fn write_at(&self, _offset: u64, _data: &[u8]) -> Result<()> {
        Ok(())
    }
    fn sync_data(&self) -> Result<()> {
        Ok(())
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    /// A log file in memory with room for `room` bytes: a write that would
    /// end past it fails with ENOSPC and writes nothing.
    #[derive(Debug)]
    struct SmallDisk {
        bytes: Mutex<Vec<u8>>,
        room: u64,
        path: PathBuf,
    }

    impl LogFile for SmallDisk {
        fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
            if offset + data.len() as u64 > self.room {
                return Err(Error::io(
                    &self.path,
                    io::Error::from_raw_os_error(libc::ENOSPC),
                ));
            }
            let mut b = self.bytes.lock();
            let end = offset as usize + data.len();
            if b.len() < end {
                b.resize(end, 0);
            }
            b[offset as usize..end].copy_from_slice(data);
            Ok(())
        }
        fn sync_data(&self) -> Result<()> {
            Ok(())
        }
        fn path(&self) -> &Path {
            &self.path
        }
    }

    /// Payload bytes of a 100-byte record.
    const PAYLOAD: usize = 100 - RECORD_HEADER_SIZE;

    fn log_with_room(room: u64) -> WalLog {
        let disk = Arc::new(SmallDisk {
            bytes: Mutex::new(Vec::new()),
            room: FILE_HEADER_RECORD_LEN as u64 + room,
            path: PathBuf::from("/test/000009.log"),
        });
        WalLog::with_file(disk, 9, Arc::new(MemTable::new(1 << 20))).expect("log")
    }

    /// One write of a 100-byte record, as the write path does it (place,
    /// finish, wait until written); on failure reports it lost. Returns
    /// the record's end and whether it was acknowledged.
    fn write_one(log: &WalLog, id: u64) -> (u64, bool) {
        let placed = match log.place(&[id as u8; PAYLOAD]) {
            Ok(p) => p,
            Err(_) => return (0, false),
        };
        let end = placed.end;
        let ok = log.finish(placed).and_then(|()| log.wait_written(end));
        if ok.is_err() {
            log.record_lost(id, id, end, 100);
        }
        (end, ok.is_ok())
    }

    #[test]
    fn a_full_disk_stops_the_log_at_a_record_boundary() {
        let log = log_with_room(300);
        for id in 0..3 {
            assert!(write_one(&log, id).1, "record {id} fits");
        }
        let placed = log.place(&[7u8; PAYLOAD]).expect("place");
        let end = placed.end;
        log.finish(placed).expect("nothing of its own to write");
        let err = log.wait_written(end).expect_err("no room");
        assert!(
            err.is_no_space() && err.to_string().contains("000009.log"),
            "{err}"
        );
        log.record_lost(3, 3, end, 100);
        let at = FILE_HEADER_RECORD_LEN as u64 + 300;
        assert_eq!(log.stopped_at(), Some(at));
        assert_eq!(log.written(), at);
        assert!(log.place(b"later").is_err(), "nothing joins a stopped log");
        // The written prefix still becomes durable for its sync writers.
        assert!(log.sync().expect("sync after a failed write"));
        assert_eq!(log.durable(), at);
        log.wait_durable(at, || {}).expect("below the stop point");
        assert!(log.wait_durable(end, || {}).is_err());
        assert!(!log.sync_failed());
        assert_eq!(
            log.lost_ranges(Duration::from_secs(1)).expect("reported"),
            vec![(3, 3)]
        );
    }

    #[test]
    fn every_record_past_the_stop_point_fails_and_is_reported() {
        for room in [0, 2000, 20_000, 100_000] {
            let log = log_with_room(room);
            let results: Vec<(u64, u64, bool)> = std::thread::scope(|s| {
                let log = &log;
                let handles: Vec<_> = (0..8u64)
                    .map(|t| {
                        s.spawn(move || {
                            (0..50u64)
                                .map(|i| {
                                    let id = t * 1000 + i;
                                    let (end, ok) = write_one(log, id);
                                    (id, end, ok)
                                })
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().expect("writer"))
                    .collect()
            });
            let at = log.stopped_at().unwrap_or(u64::MAX);
            let acked = results.iter().filter(|r| r.2).count() as u64;
            for &(id, end, ok) in &results {
                if ok {
                    assert!(end <= at, "record {id} acknowledged past the stop point");
                } else if end > 0 {
                    assert!(end > at, "record {id} failed below the stop point");
                }
            }
            if room >= 8 * 50 * 100 {
                assert_eq!(acked, 400, "everything fits");
            } else {
                assert_eq!(
                    at,
                    FILE_HEADER_RECORD_LEN as u64 + acked * 100,
                    "room {room}"
                );
                let lost = log
                    .lost_ranges(Duration::from_secs(5))
                    .expect("all reported");
                let placed_and_failed = results.iter().filter(|r| !r.2 && r.1 > 0).count();
                assert_eq!(lost.len(), placed_and_failed, "room {room}");
            }
        }
    }
}
