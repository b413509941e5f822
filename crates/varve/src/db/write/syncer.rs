//! The syncing thread: one thread per database batches every `sync = true`
//! writer's fdatasync, pushes a partly filled slot after an idle interval
//! and, if configured, fdatasyncs periodically.
//!
//! A sync writer first waits until its record is written (`WalLog::
//! wait_written`), then [`Syncer::request`]s and parks until the durable
//! position passes its record. The thread takes `written` before each
//! fdatasync and publishes it as durable afterwards, so all writers whose
//! records were written by then share one fdatasync; requests arriving
//! during an fdatasync are served by the next one.
//!
//! Thread-safety: `Syncer` is `Sync`; the thread holds only a `Weak` to the
//! database and exits on [`Syncer::stop`] (joined) or when the database is
//! gone. An fdatasync failure poisons the database; the log keeps the error
//! for every waiter.

use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::super::DbInner;
use super::super::stats::Counters;
use crate::{Error, Result};

#[derive(Debug, Default)]
struct Flags {
    requested: bool,
    stop: bool,
}

#[derive(Debug, Default)]
struct Mailbox {
    flags: Mutex<Flags>,
    cv: Condvar,
}

/// The syncer's mailbox and thread handle.
#[derive(Debug, Default)]
pub(crate) struct Syncer {
    mailbox: Arc<Mailbox>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Syncer {
    /// Asks for an fdatasync of the current log.
    pub(crate) fn request(&self) {
        let mut f = self.mailbox.flags.lock();
        if !f.requested {
            f.requested = true;
            self.mailbox.cv.notify_one();
        }
    }

    /// Starts the thread.
    pub(crate) fn start(
        &self,
        db: Weak<DbInner>,
        idle: Duration,
        interval: Duration,
    ) -> Result<()> {
        let mailbox = Arc::clone(&self.mailbox);
        let handle = std::thread::Builder::new()
            .name("varve-wal-sync".into())
            .spawn(move || run(&mailbox, &db, idle, interval))
            .map_err(|e| Error::io("varve-wal-sync thread", e))?;
        *self.thread.lock() = Some(handle);
        Ok(())
    }

    /// Stops and joins the thread (idempotent).
    pub(crate) fn stop(&self) {
        {
            let mut f = self.mailbox.flags.lock();
            f.stop = true;
            self.mailbox.cv.notify_all();
        }
        if let Some(h) = self.thread.lock().take() {
            let _ = h.join();
        }
    }
}

fn run(mailbox: &Mailbox, weak: &Weak<DbInner>, idle: Duration, interval: Duration) {
    let tick = match (idle.is_zero(), interval.is_zero()) {
        (false, false) => idle.min(interval),
        (false, true) => idle,
        (true, false) => interval,
        (true, true) => Duration::from_millis(100),
    };
    let mut last_sync = Instant::now();
    let mut last_push = Instant::now();
    loop {
        let requested = {
            let mut f = mailbox.flags.lock();
            if !f.requested && !f.stop {
                mailbox.cv.wait_for(&mut f, tick);
            }
            if f.stop {
                return;
            }
            std::mem::take(&mut f.requested)
        };
        // Serve requests even after the database was poisoned elsewhere (a
        // failed flush): sync writers still wait on this log, and a sync
        // that fails is kept by the log for them.
        let Some(db) = weak.upgrade() else { return };
        let log = db.writes.current();
        let now = Instant::now();
        if !idle.is_zero() && now.duration_since(last_push) >= idle {
            last_push = now;
            if let Err(e) = log.push_idle() {
                db.poison(format!("WAL write failed: {e}"));
            }
        }
        let periodic = !interval.is_zero() && now.duration_since(last_sync) >= interval;
        if requested || periodic {
            if periodic {
                // The periodic sync also covers a partly filled slot.
                if let Err(e) = log.push_idle() {
                    db.poison(format!("WAL write failed: {e}"));
                }
            }
            last_sync = now;
            match log.sync() {
                Ok(true) => Counters::add(&db.counters.wal_syncs, 1),
                Ok(false) => {}
                Err(e) => db.poison(format!("WAL sync failed: {e}")),
            }
        }
    }
}
