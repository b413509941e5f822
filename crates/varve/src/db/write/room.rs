//! Room for a write: the graded stalls (one short delay near a stop), the
//! stops (too many immutable memtables, too many L0 files), and the
//! memtable switch that also starts a new WAL file.
//!
//! Thread-safety: [`make_room`] and [`switch_memtable`] run under the
//! write path's `switching` mutex (one switcher at a time). The switch takes
//! the write gate exclusively: every writer that took a sequence number
//! has inserted into the old memtable and placed its record in the old log
//! before the gate is granted. Invariant: the old log is fully written and
//! fdatasync'ed before the new log takes over, so a power loss can never
//! keep a newer log while losing the end of an older one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::DbInner;
use super::super::memtables::Mem;
use super::super::stats::Counters;
use super::wal_log::WalLog;
use crate::Result;
use crate::filenames::wal_path;
use crate::memtable::MemTable;

/// One short delay per write while a stop is near (LevelDB's slowdown):
/// L0 at the slowdown trigger, or one immutable memtable short of the stop.
pub(super) fn slowdown(db: &DbInner) {
    let o = &db.options;
    let sv = db.super_version();
    let counter = if sv.version.num_files(0) >= o.l0_slowdown_writes_trigger {
        &db.counters.stall_slowdowns_l0
    } else if o.max_immutable_memtables >= 2 && sv.imms.len() + 1 >= o.max_immutable_memtables {
        &db.counters.stall_slowdowns_memtables
    } else {
        return;
    };
    drop(sv);
    Counters::add(counter, 1);
    Counters::add(&db.counters.stall_micros, 1000);
    std::thread::sleep(Duration::from_millis(1));
}

/// Waits out stops and switches memtables until the current log's memtable
/// has room for `charge` bytes.
pub(super) fn make_room(db: &DbInner, charge: usize) -> Result<()> {
    let _one = db.writes.switching.lock();
    let o = &db.options;
    loop {
        db.check_writable()?;
        if db.writes.current().has_room(charge) {
            return Ok(());
        }
        let sv = db.super_version();
        let l0 = sv.version.num_files(0);
        let stop = if sv.imms.len() >= o.max_immutable_memtables {
            Some(&db.counters.stall_stops_memtables)
        } else if l0 >= o.l0_stop_writes_trigger {
            Some(&db.counters.stall_stops_l0)
        } else {
            None
        };
        drop(sv);
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
            None => {
                switch_memtable(db, charge)?;
                // Other writers may fill the fresh memtable first (the caller
                // then simply retries), but it must be able to hold the batch.
                if !db.writes.current().could_hold(charge) {
                    // A fresh memtable is sized for the batch; never loop
                    // creating logs if that ever fails to hold.
                    return Err(crate::Error::InvalidArgument(format!(
                        "a write batch needing {charge} memtable bytes does not fit a fresh memtable"
                    )));
                }
                return Ok(());
            }
        }
    }
}

/// Makes the memtable immutable, starts a fresh one (at least `need`
/// bytes) and a fresh WAL for it, and wakes the flush thread. Call with
/// `switching` held.
pub(super) fn switch_memtable(db: &DbInner, need: usize) -> Result<()> {
    let mut gate = db.writes.gate.write();
    let old = Arc::clone(&gate);
    match old.flush_and_sync() {
        Ok(true) => Counters::add(&db.counters.wal_syncs, 1),
        Ok(false) => {}
        Err(e) => {
            db.poison(format!("WAL sync before switch failed: {e}"));
            return Err(e);
        }
    }
    let number = db.versions.lock().new_file_number();
    let path = wal_path(&db.dir, number);
    let mem = Arc::new(MemTable::new(db.options.write_buffer_size.max(need)));
    let log = WalLog::create(
        db.fs.as_ref(),
        &path,
        crate::wal::LogIo::from_options(&db.options),
        number,
        Arc::clone(&mem),
    )
    .and_then(|log| db.fs.sync_dir(&db.dir).map(|()| log));
    let log = match log {
        Ok(log) => log,
        Err(e) => {
            db.poison(format!("creating WAL {} failed: {e}", path.display()));
            return Err(e);
        }
    };
    db.install_unordered(|sv| {
        sv.switched(Mem {
            table: mem,
            wal: number,
        })
    });
    *gate = Arc::new(log);
    drop(gate);
    let next = db.super_version();
    db.info_log.log(format!(
        "memtable switch: {} immutable memtables, new WAL {}",
        next.imms.len(),
        path.display()
    ));
    db.bg.kick();
    Ok(())
}
