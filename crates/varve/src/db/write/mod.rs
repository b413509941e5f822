//! The write path: WiredTiger-style log slots (`wal::slots`) in front of
//! the concurrent memtable, with no leader and no queue.
//!
//! A write (see [`write()`]): validate; one short delay if a stall is near
//! (`room`); take the *write gate* shared and reserve the batch's memtable
//! charge in the current log (else switch memtables, `room`); take a
//! sequence range with one `fetch_add` (`sequencer`); encode the batch with
//! it; join/copy/release the record into the open slot (`wal_log`); insert
//! into the memtable concurrently with other writers; complete the sequence
//! range; leave the gate. Then, outside the gate: write the slot (or direct
//! record) this writer ended up owning, raise the acknowledged floor that
//! reads wait for (read-your-writes without a writer-side wait, see
//! `sequencer`), wait until its record reached the OS (the
//! `kill -9` rule — closing and writing the open slot itself when the sink
//! is idle), and for `sync = true` until the syncer (`syncer`) made it
//! durable.
//!
//! Invariants: a reader never sees part of a batch, nor a sequence number
//! without every smaller one (`sequencer`). A write acknowledged with
//! `sync = false` has reached the OS; with `sync = true` it was
//! fdatasync'ed. A write that depends on an earlier one it observed was
//! placed in the log after it (the earlier write joined its slot before it
//! was published), and the file only ever holds a prefix of the log, so an
//! acknowledged write never survives a crash without the writes it
//! depended on. A WAL failure poisons the database: the log stops at the
//! end of what reached the file (`wal_log`); writers whose records end
//! before that point are still acknowledged, those whose records end past
//! it get the IO error (all writers of a failed slot, and every later
//! one) and report their sequence ranges, which are hidden in the
//! memtable (`MemTable::hide`) before the writer sees its error and which
//! `Db::resume` drops from it; later writes get `Error::Poisoned`. A batch
//! is inserted and published before its bytes reach the file, so a read
//! *concurrent* with a write that then fails may see it; no read that
//! starts after the error was returned does, and it never becomes durable.
//! A `sync` write whose blob values could not be made durable (the lanes'
//! sync failed after its record was placed) fails the same way: it
//! poisons the database, is hidden, and its sequence range is kept in
//! `failed_writes`, which `Db::resume` also drops from the memtable (its
//! record stays in the old log: a crash before resume's flush may bring
//! it back, with its values, which resume made durable). A write whose
//! fdatasync failed is not hidden: what the file holds is unknown, and
//! only a reopen (which replays it) can tell. The error path
//! adds only branches: nothing on the success path changed for it. Thread-safety: any number of threads may call
//! [`write()`] at once.

pub(crate) mod blobs;
mod events;
mod ordered_sink;
mod room;
mod sequencer;
mod syncer;
mod wal_log;
mod wal_lost;

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use super::DbInner;
use super::memtables::insert_batch;
use super::stats::Counters;
use crate::batch::BatchOp;
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::WriteOptions;
pub(crate) use room::{restart_log, switch_keyspaces};
pub(crate) use sequencer::Sequencer;
pub(crate) use wal_log::WalLog;

/// The write path's shared state (one per database).
#[derive(Debug)]
pub(crate) struct WritePath {
    /// The current log (and its memtable). Writers hold it shared from
    /// reserving memtable room until their insert; a memtable switch holds
    /// it exclusively.
    gate: RwLock<Arc<WalLog>>,
    /// One memtable switch (or stall, or switch preparation) at a time.
    switching: Mutex<()>,
    /// The next log, made ahead of the switch away from the current one
    /// (`room::prepare_switch`); only changed under `switching`.
    prepared: Mutex<Option<room::Prepared>>,
    seq: Sequencer,
    syncer: syncer::Syncer,
    /// Sequence ranges of writes placed in the current log that failed
    /// for a reason other than the log (a blob lane's sync); `Db::resume`
    /// drops them from the memtable.
    failed_writes: Mutex<Vec<(u64, u64)>>,
    /// Held shared by a `sync` writer while it syncs the blob lanes and
    /// records a failure; `Db::resume` holds it exclusively, so that no
    /// write fails that way while it takes the failed ones out.
    lane_syncs: RwLock<()>,
}

impl WritePath {
    /// The write path of a database whose current log is `log` and whose
    /// last published sequence is `last_sequence`.
    pub(crate) fn new(log: WalLog, last_sequence: u64) -> WritePath {
        WritePath {
            gate: RwLock::new(Arc::new(log)),
            switching: Mutex::new(()),
            prepared: Mutex::new(None),
            seq: Sequencer::new(last_sequence),
            syncer: syncer::Syncer::default(),
            failed_writes: Mutex::new(Vec::new()),
            lane_syncs: RwLock::new(()),
        }
    }

    /// The sequence a read may use: the published one, once it covers every
    /// acknowledged write (see `sequencer`).
    pub(crate) fn visible_sequence(&self, published: &std::sync::atomic::AtomicU64) -> u64 {
        self.seq.visible(published)
    }

    /// Holds off memtable switches (and other resumes) while it lives:
    /// `Db::resume` takes it before [`restart_log`].
    pub(crate) fn switching(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.switching.lock()
    }

    /// Excludes `sync` writers from syncing the blob lanes (for
    /// `Db::resume`; see `lane_syncs`).
    pub(crate) fn no_lane_syncs(&self) -> parking_lot::RwLockWriteGuard<'_, ()> {
        self.lane_syncs.write()
    }

    /// The current log.
    pub(crate) fn current(&self) -> Arc<WalLog> {
        Arc::clone(&self.gate.read())
    }

    /// Starts the syncing thread (idle push, batched and periodic fdatasync).
    pub(crate) fn start(db: &Arc<DbInner>) -> Result<()> {
        let o = &db.options;
        let weak: Weak<DbInner> = Arc::downgrade(db);
        db.writes
            .syncer
            .start(weak, o.wal_idle_flush_interval, o.wal_sync_interval)
    }

    /// Waits until no writer is between taking the write gate and leaving
    /// it. Called by close after `closed` is set: a writer inside has
    /// placed its record (the close's WAL sync then covers it), and every
    /// later one sees `closed` once it has the gate, and fails.
    pub(crate) fn drain_writers(&self) {
        drop(self.gate.write());
    }

    /// Stops the syncing thread.
    pub(crate) fn stop(&self) {
        self.syncer.stop();
    }

    /// Removes the next log made ahead of a switch, if any (at close: no
    /// empty log newer than the live one stays behind).
    pub(crate) fn discard_prepared(&self, db: &DbInner) {
        let _one = self.switching.lock();
        room::discard_prepared(db);
    }

    /// Writes and fdatasyncs every record placed in the current log.
    pub(crate) fn sync_wal(&self, db: &DbInner) -> Result<()> {
        sync_log(db, &self.current())
    }

    /// Makes the current memtable immutable (if it holds anything) and waits
    /// until every immutable memtable is flushed.
    pub(crate) fn flush_memtable(&self, db: &DbInner) -> Result<()> {
        db.check_writable()?;
        {
            let _one = self.switching.lock();
            if !db.super_version().mems_empty() {
                room::switch_memtable(db, 0)?;
            }
        }
        db.bg.kick();
        while db.super_version().has_imms() {
            db.check_writable()?;
            db.bg.wait_progress(Duration::from_millis(50));
        }
        Ok(())
    }
}

/// Checks one entry against the size limits of the options.
fn check_entry(db: &DbInner, key: &[u8], value_len: usize) -> Result<()> {
    let o = &db.options;
    if key.is_empty() {
        return Err(Error::InvalidArgument("empty keys are not allowed".into()));
    }
    if key.len() > o.max_key_size {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes exceeds max_key_size {}",
            key.len(),
            o.max_key_size
        )));
    }
    if value_len > o.max_value_size {
        return Err(Error::InvalidArgument(format!(
            "value of {value_len} bytes exceeds max_value_size {}",
            o.max_value_size
        )));
    }
    Ok(())
}

/// Refuses a range delete whose start is after its end, or whose bounds
/// are longer than `max_key_size`.
fn check_range(db: &DbInner, start: &[u8], end: &[u8]) -> Result<()> {
    if start > end {
        return Err(Error::InvalidArgument(format!(
            "delete_range start {start:?} is after its end {end:?}"
        )));
    }
    let max = db.options.max_key_size;
    if start.len().max(end.len()) > max {
        return Err(Error::InvalidArgument(format!(
            "delete_range bound of {} bytes exceeds max_key_size {max}",
            start.len().max(end.len())
        )));
    }
    Ok(())
}

/// Checks the batch against the size limits of the options and returns the
/// memtable bytes it needs.
fn validate(db: &DbInner, batch: &WriteBatch) -> Result<usize> {
    let mut charge = 0;
    for op in batch.iter() {
        let key = op.key();
        let value_len = match op {
            BatchOp::Put { value, .. } => value.len(),
            BatchOp::Delete { .. } => 0,
            BatchOp::PutBlob { pointer, .. } => pointer.len(),
            BatchOp::DeleteRange { start, end } => {
                // No entry is stored under either bound: an empty start
                // (from the first key) is fine.
                check_range(db, start, end)?;
                charge += MemTable::entry_charge(start.len(), end.len());
                continue;
            }
        };
        check_entry(db, key, value_len)?;
        charge += MemTable::entry_charge(key.len(), value_len);
    }
    Ok(charge)
}

/// [`Db::sync_wal`](crate::Db::sync_wal): every blob value an acknowledged
/// write points to, then the WAL that holds those writes, made durable
/// (the order of a `sync` write, `docs/blob-files.md`, "Ordering"). Logs
/// before the current one were synced when they were switched away from.
pub(crate) fn sync_acknowledged(db: &DbInner) -> Result<()> {
    if !db.blob_lanes.is_empty() {
        let _syncing = db.writes.lane_syncs.read();
        blobs::sync_all(db).inspect_err(|e| db.poison_err("blob file sync failed", e))?;
    }
    db.writes.sync_wal(db)
}

/// Refuses write options that contradict each other.
fn check_write_options(opts: &WriteOptions) -> Result<()> {
    if opts.sync && opts.disable_wal {
        return Err(Error::InvalidArgument(
            "WriteOptions: sync with disable_wal has nothing to sync (the write would not \
             survive a crash); choose one"
                .into(),
        ));
    }
    Ok(())
}

/// A single put in keyspace `id` (`Db::put_opt`, `Keyspace::put_opt`): a
/// value that goes to a blob file is staged straight from the caller's
/// slice, not copied into a batch first, and the batch holds only its
/// pointer; other puts are a batch of one.
pub(crate) fn put(
    db: &DbInner,
    id: u32,
    key: &[u8],
    value: &[u8],
    opts: &WriteOptions,
) -> Result<()> {
    // A plain load rules out most values before any lookup; the default
    // keyspace's lanes are borrowed, another keyspace's looked up.
    let other;
    let lanes = if !db.blob_lanes.may_take(value.len()) {
        None
    } else if id == 0 {
        db.blob_lanes.default_lanes()
    } else {
        other = db.blob_lanes.of(id);
        other.as_ref()
    };
    if let Some(lanes) = lanes
        && lanes.takes(value.len())
    {
        check_write_options(opts)?;
        check_entry(db, key, value.len())?;
        db.check_writable()?;
        if let Some(batch) = blobs::separate_put(db, id, lanes, key, value)? {
            let charge = super::memtables::batch_charge(&batch);
            return apply(db, batch, charge, value.len() as u64, opts);
        }
        // No room in the memory budget for a lane's staging: inline,
        // without checking again or asking the lanes a second time.
        let batch = inline_put(id, key, value);
        let charge = super::memtables::batch_charge(&batch);
        return apply(db, batch, charge, 0, opts);
    }
    write(db, inline_put(id, key, value), opts)
}

/// A batch of one put with its value inline.
fn inline_put(id: u32, key: &[u8], value: &[u8]) -> WriteBatch {
    let mut batch = WriteBatch::for_one(key.len(), value.len());
    batch.put_to(id, key, value);
    batch
}

/// Applies `batch` atomically (see the module docs).
pub(crate) fn write(db: &DbInner, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
    check_write_options(opts)?;
    let mut charge = validate(db, &batch)?;
    db.check_writable()?;
    if batch.is_empty() {
        return Ok(());
    }
    // Large values go to blob files first; the batch then carries pointers
    // (and charges the memtable for them, not for the values).
    let mut batch = batch;
    let mut blob_bytes = 0;
    if let Some((separated, moved)) = blobs::separate(db, &batch)? {
        charge = super::memtables::batch_charge(&separated);
        batch = separated;
        blob_bytes = moved;
    }
    apply(db, batch, charge, blob_bytes, opts)
}

/// Applies a checked, non-empty `batch` whose large values are already in
/// blob files: `charge` memtable bytes, pointers to `blob_bytes` of values.
fn apply(
    db: &DbInner,
    mut batch: WriteBatch,
    charge: usize,
    blob_bytes: u64,
    opts: &WriteOptions,
) -> Result<()> {
    debug_assert!(!batch.is_empty());
    room::slowdown(db);
    let wp = &db.writes;
    let _counted = opts.sync.then(|| wp.syncer.sync_writer());
    let count = batch.len() as u64;
    let (log, gate, high_water) = loop {
        let gate = wp.gate.read();
        if let Some(high_water) = gate.try_reserve(charge, blob_bytes) {
            break (Arc::clone(&gate), gate, high_water);
        }
        drop(gate);
        room::make_room(db, charge, blob_bytes)?;
    };
    // A close that began since the check (a `Keyspace` handle may write
    // from another thread) drains the gate and then syncs the log: a
    // record placed now would never be synced.
    if db.closed.load(std::sync::atomic::Ordering::Acquire) {
        log.release(charge, blob_bytes);
        drop(gate);
        return Err(Error::Closed);
    }
    // Every keyspace the batch writes must have a memtable in this log (a
    // keyspace dropped since the caller took its handle has none).
    if batch.has_keyspaces()
        && let Some((id, _)) = batch.iter_in().find(|(id, _)| log.mem_of(*id).is_none())
    {
        log.release(charge, blob_bytes);
        drop(gate);
        return Err(Error::KeyspaceNotFound(format!("keyspace {id} (dropped)")));
    }
    // Inside the gate: sequence, log placement, memtable insert.
    let first = wp.seq.assign(&db.last_sequence, count)?;
    let last = first + count - 1;
    batch.set_sequence(first);
    let placed = if opts.disable_wal {
        None
    } else {
        match log.place(batch.encoded()) {
            Ok(p) => Some(p),
            Err(e) => {
                wp.seq.complete(&db.last_sequence, first, last);
                drop(gate);
                db.poison_wal(&log, wal_failure(&log), &e);
                return Err(e);
            }
        }
    };
    let inserted = insert_batch(|id| log.mem_of(id), &batch, first);
    if batch.has_keyspaces() {
        log.check_keyspace_limits();
    }
    wp.seq.complete(&db.last_sequence, first, last);
    drop(gate);
    if inserted.is_err() {
        // The charge was reserved, so this is a bug; stop accepting writes.
        let why = "memtable rejected an entry it had room for".to_string();
        db.poison(why.clone());
        return Err(Error::Poisoned(why));
    }
    Counters::add(
        &db.counters.user_bytes,
        (batch.size_in_bytes() - crate::batch::HEADER_LEN) as u64,
    );
    Counters::add(&db.counters.user_writes, 1);

    // Outside the gate: write what this thread owns first (others may be
    // waiting for exactly that slot), then wait.
    let record_len = crate::wal::record::encoded_len(batch.encoded().len()) as u64;
    let end = match placed {
        None => None,
        Some(p) => {
            let end = p.end;
            Counters::add(&db.counters.wal_bytes, record_len);
            if let Err(e) = log.finish(p) {
                return Err(failed(db, &log, (first, last), end, record_len, e));
            }
            Some(end)
        }
    };
    // Read-your-writes: reads wait for the published sequence to cover
    // this write (see `sequencer`), so the writer itself does not wait.
    wp.seq.acknowledge(last);
    // The writer that filled the log to its high-water mark makes the
    // next one, so that the switch holds the writers only for the old
    // log's tail.
    if high_water {
        room::prepare_switch(db, &log);
    }
    let Some(end) = end else {
        return Ok(());
    };
    if let Err(e) = log.wait_written(end) {
        return Err(failed(db, &log, (first, last), end, record_len, e));
    }
    // The blob values this write points to are made durable before the
    // WAL record that points to them (docs/blob-files.md, "Ordering").
    if opts.sync && !db.blob_lanes.is_empty() {
        let _syncing = wp.lane_syncs.read();
        if let Err(e) = blobs::sync_all(db) {
            wp.failed_writes.lock().push((first, last));
            log.hide(first, last);
            db.poison_err("blob file sync failed", &e);
            return Err(e);
        }
    }
    if opts.sync
        && let Err(e) = {
            let _waiting = wp.syncer.durable_waiter();
            log.wait_durable(end, || wp.syncer.request())
        }
    {
        return Err(failed(db, &log, (first, last), end, record_len, e));
    }
    Ok(())
}

/// Writes and fdatasyncs every record placed in `log` so far, counting
/// the fdatasync; a failure poisons the database.
pub(super) fn sync_log(db: &DbInner, log: &WalLog) -> Result<()> {
    match log.flush_and_sync() {
        Ok(true) => {
            Counters::add(&db.counters.wal_syncs, 1);
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(e) => {
            db.poison_wal(log, wal_failure(log), &e);
            Err(e)
        }
    }
}

/// The error path of a write whose record (sequences `seqs`, `len` bytes
/// ending at log offset `end`) was placed in `log`: reports it lost if it
/// never reached the file, poisons the database, returns the error.
#[cold]
#[inline(never)]
fn failed(db: &DbInner, log: &WalLog, seqs: (u64, u64), end: u64, len: u64, e: Error) -> Error {
    log.record_lost(seqs.0, seqs.1, end, len);
    db.poison_wal(log, wal_failure(log), &e);
    e
}

/// What failed, for the poison message.
fn wal_failure(log: &WalLog) -> &'static str {
    if log.sync_failed() {
        "WAL fdatasync failed"
    } else {
        "WAL write failed"
    }
}
