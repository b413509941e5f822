//! The write path: a group-commit queue in front of the WAL and memtable.
//!
//! Writers enqueue themselves; the writer at the head of the queue becomes
//! the *leader*, takes the following compatible writers as its group, and
//! alone (no lock held on the queue) appends one merged WAL record, syncs it
//! if any member asked for `sync`, inserts every member's batch into the
//! memtable, and finally publishes the group's last sequence number. Then it
//! wakes the members with the group's result and hands leadership to the
//! next head. (The lock-free slot WAL of a later issue replaces this queue.)
//!
//! Invariants: sequence numbers are assigned in queue order and published in
//! that order, after the memtable holds every entry up to them, so a reader
//! never sees part of a batch. A WAL failure poisons the database: the
//! failing group gets the error and every later write `Error::Poisoned`.
//! Thread-safety: any number of threads may call [`write`] at once.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::DbInner;
use super::memtables::{Mem, SuperVersion, insert_batch};
use super::stats::Counters;
use crate::batch::BatchOp;
use crate::filenames::wal_path;
use crate::keys::MAX_SEQUENCE;
use crate::memtable::MemTable;
use crate::wal::LogWriter;
use crate::{Error, Result, WriteBatch, WriteOptions};

/// Most bytes of batches merged into one group.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// One waiting write.
struct Writer {
    batch: Mutex<WriteBatch>,
    /// Upper bound of the memtable bytes the batch needs (from `validate`).
    charge: usize,
    sync: bool,
    disable_wal: bool,
    done: AtomicBool,
    result: Mutex<Option<Result<()>>>,
    cv: Condvar,
}

/// The queue of writers and the WAL only the leader touches.
pub(crate) struct WriteQueue {
    queue: Mutex<VecDeque<Arc<Writer>>>,
    wal: Mutex<WalState>,
}

/// The open WAL and the scratch batch used to merge a group.
pub(crate) struct WalState {
    pub(crate) log: LogWriter,
    scratch: WriteBatch,
}

impl WriteQueue {
    pub(crate) fn new(log: LogWriter) -> Self {
        WriteQueue {
            queue: Mutex::new(VecDeque::new()),
            wal: Mutex::new(WalState {
                log,
                scratch: WriteBatch::new(),
            }),
        }
    }

    /// fdatasyncs the current WAL.
    pub(crate) fn sync_wal(&self, db: &DbInner) -> Result<()> {
        let mut wal = self.wal.lock();
        wal.log
            .sync()
            .inspect_err(|e| db.poison(format!("WAL sync failed: {e}")))?;
        Counters::add(&db.counters.wal_syncs, 1);
        Ok(())
    }

    /// Makes the current memtable immutable (if it holds anything) and waits
    /// until every immutable memtable is flushed.
    pub(crate) fn flush_memtable(&self, db: &DbInner) -> Result<()> {
        db.check_writable()?;
        {
            let mut wal = self.wal.lock();
            if !db.super_version().mem.table.is_empty() {
                switch_memtable(db, &mut wal, 0)?;
            }
        }
        db.bg.kick();
        while !db.super_version().imms.is_empty() {
            db.check_writable()?;
            db.bg.wait_progress(Duration::from_millis(50));
        }
        Ok(())
    }
}

/// Checks the batch against the size limits of the options and returns the
/// memtable bytes it needs (so the leader need not decode it again).
fn validate(db: &DbInner, batch: &WriteBatch) -> Result<usize> {
    let o = &db.options;
    let mut charge = 0;
    for op in batch.iter() {
        let key = op.key();
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
        let value_len = match op {
            BatchOp::Put { value, .. } => value.len(),
            BatchOp::Delete { .. } => 0,
        };
        if value_len > o.max_value_size {
            return Err(Error::InvalidArgument(format!(
                "value of {value_len} bytes exceeds max_value_size {}",
                o.max_value_size
            )));
        }
        charge += MemTable::entry_charge(key.len(), value_len);
    }
    Ok(charge)
}

/// Applies `batch` atomically (see the module docs).
pub(crate) fn write(db: &DbInner, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
    let charge = validate(db, &batch)?;
    db.check_writable()?;
    if batch.is_empty() {
        return Ok(());
    }
    let me = Arc::new(Writer {
        batch: Mutex::new(batch),
        charge,
        sync: opts.sync && !opts.disable_wal,
        disable_wal: opts.disable_wal,
        done: AtomicBool::new(false),
        result: Mutex::new(None),
        cv: Condvar::new(),
    });
    let mut queue = db.writes.queue.lock();
    queue.push_back(Arc::clone(&me));
    loop {
        if me.done.load(Ordering::Acquire) {
            return me.result.lock().take().unwrap_or(Ok(()));
        }
        if queue.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
            break;
        }
        me.cv.wait(&mut queue);
    }

    // Leader: take a group of compatible writers from the head.
    let group = build_group(&queue);
    drop(queue);
    let result = commit_group(db, &group);

    let mut queue = db.writes.queue.lock();
    for (i, w) in group.iter().enumerate() {
        let popped = queue.pop_front();
        debug_assert!(popped.is_some_and(|p| Arc::ptr_eq(&p, w)));
        if i > 0 {
            *w.result.lock() = Some(match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(e.duplicate()),
            });
            w.done.store(true, Ordering::Release);
            w.cv.notify_one();
        }
    }
    if let Some(next) = queue.front() {
        next.cv.notify_one();
    }
    result
}

fn build_group(queue: &VecDeque<Arc<Writer>>) -> Vec<Arc<Writer>> {
    let leader = &queue[0];
    let first = leader.batch.lock().size_in_bytes();
    // Keep a small write from waiting for a large group (LevelDB's rule).
    let max = if first <= 128 << 10 {
        first + (128 << 10)
    } else {
        MAX_GROUP_BYTES
    };
    let mut size = first;
    let mut group = vec![Arc::clone(leader)];
    for w in queue.iter().skip(1) {
        if w.disable_wal != leader.disable_wal || (w.sync && !leader.sync) {
            break;
        }
        size += w.batch.lock().size_in_bytes();
        if size > max {
            break;
        }
        group.push(Arc::clone(w));
    }
    group
}

/// WAL append (+ sync), memtable insert, publish. Called by the leader only.
fn commit_group(db: &DbInner, group: &[Arc<Writer>]) -> Result<()> {
    let mut wal = db.writes.wal.lock();
    db.check_writable()?;
    let leader = &group[0];
    let sync = leader.sync;
    let disable_wal = leader.disable_wal;

    let count: u64 = group.iter().map(|w| w.batch.lock().len() as u64).sum();
    let charge: usize = group.iter().map(|w| w.charge).sum();
    let first_seq = db.last_sequence.load(Ordering::Relaxed) + 1;
    let last_seq = first_seq + count - 1;
    if last_seq > MAX_SEQUENCE {
        return Err(Error::InvalidArgument("sequence numbers exhausted".into()));
    }

    let sv = make_room(db, &mut wal, charge)?;

    if !disable_wal {
        let WalState { log, scratch } = &mut *wal;
        let before = log.file_size();
        let appended = if group.len() == 1 {
            let mut b = leader.batch.lock();
            b.set_sequence(first_seq);
            log.add_record(b.encoded())
        } else {
            scratch.clear();
            for w in group {
                scratch.append(&w.batch.lock());
            }
            scratch.set_sequence(first_seq);
            log.add_record(scratch.encoded())
        };
        Counters::add(
            &db.counters.wal_bytes,
            log.file_size().saturating_sub(before),
        );
        if let Err(e) = appended {
            db.poison(format!("WAL append failed: {e}"));
            return Err(e);
        }
        if sync && let Err(e) = log.sync() {
            db.poison(format!("WAL sync failed: {e}"));
            return Err(e);
        }
    }

    let mut seq = first_seq;
    for w in group {
        let b = w.batch.lock();
        Counters::add(
            &db.counters.user_bytes,
            (b.size_in_bytes() - crate::batch::HEADER_LEN) as u64,
        );
        Counters::add(&db.counters.user_writes, 1);
        if insert_batch(&sv.mem.table, &b, seq).is_err() {
            // entry_charge is an upper bound, so this is a bug; the WAL
            // already holds the batch, so stop accepting writes.
            let why = "memtable rejected an entry it had room for".to_string();
            db.poison(why.clone());
            return Err(Error::Poisoned(why));
        }
        seq += b.len() as u64;
    }
    db.last_sequence.store(last_seq, Ordering::Release);
    Ok(())
}

/// Waits out write stalls and switches memtables until the current one has
/// room for `charge` bytes (LevelDB's MakeRoomForWrite): one 1 ms delay when
/// L0 reaches the slowdown trigger, a stop while too many memtables wait for
/// a flush or L0 reaches the stop trigger.
fn make_room(db: &DbInner, wal: &mut WalState, charge: usize) -> Result<Arc<SuperVersion>> {
    let o = &db.options;
    let mut delayed = false;
    loop {
        db.check_writable()?;
        let sv = db.super_version();
        let l0 = sv.version.num_files(0);
        // Graded stall: one short delay per write while a stop is near.
        let slowdown = if l0 >= o.l0_slowdown_writes_trigger {
            Some(&db.counters.stall_slowdowns_l0)
        } else if o.max_immutable_memtables >= 2 && sv.imms.len() + 1 >= o.max_immutable_memtables {
            Some(&db.counters.stall_slowdowns_memtables)
        } else {
            None
        };
        if let (false, Some(counter)) = (delayed, slowdown) {
            Counters::add(counter, 1);
            Counters::add(&db.counters.stall_micros, 1000);
            std::thread::sleep(Duration::from_millis(1));
            delayed = true;
            continue;
        }
        if sv.mem.table.remaining() >= charge {
            return Ok(sv);
        }
        let stop = if sv.imms.len() >= o.max_immutable_memtables {
            Some(&db.counters.stall_stops_memtables)
        } else if l0 >= o.l0_stop_writes_trigger {
            Some(&db.counters.stall_stops_l0)
        } else {
            None
        };
        match stop {
            Some(counter) => {
                Counters::add(counter, 1);
                let start = Instant::now();
                db.bg.kick();
                db.bg.wait_progress(Duration::from_millis(100));
                Counters::add(
                    &db.counters.stall_micros,
                    start.elapsed().as_micros() as u64,
                );
            }
            None => return switch_memtable(db, wal, charge),
        }
    }
}

/// Makes the memtable immutable, starts a fresh one (at least `need` bytes)
/// and a fresh WAL for it, and wakes the flush thread. The old WAL is synced
/// first so that a power loss can never keep a newer log while losing the
/// end of an older one.
fn switch_memtable(db: &DbInner, wal: &mut WalState, need: usize) -> Result<Arc<SuperVersion>> {
    let capacity = db.options.write_buffer_size.max(need);
    if let Err(e) = wal.log.sync() {
        db.poison(format!("WAL sync before switch failed: {e}"));
        return Err(e);
    }
    let number = db.versions.lock().new_file_number();
    let path = wal_path(&db.dir, number);
    let new_log = crate::wal::create_log_file(db.fs.as_ref(), &path, db.options.wal_mmap)
        .and_then(|f| LogWriter::new(f, number))
        .and_then(|log| db.fs.sync_dir(&db.dir).map(|()| log));
    let new_log = match new_log {
        Ok(log) => log,
        Err(e) => {
            db.poison(format!("creating WAL {} failed: {e}", path.display()));
            return Err(e);
        }
    };
    wal.log = new_log;
    let fresh = Mem {
        table: Arc::new(MemTable::new(capacity)),
        wal: number,
    };
    db.install_unordered(|sv| sv.switched(fresh));
    let next = db.super_version();
    db.info_log.log(format!(
        "memtable switch: {} immutable memtables, new WAL {}",
        next.imms.len(),
        path.display()
    ));
    db.bg.kick();
    Ok(next)
}
