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
//! Gathering: the thread knows how many `sync = true` writers are inside
//! `write` and how many of them already wait for durability. When asked for
//! an fdatasync while some of them are still on their way (typically the
//! writers the previous fdatasync just released, now writing their next
//! record), it waits for them, at most as long as the previous fdatasync
//! took (and never more than [`MAX_GATHER`]). Without this, an fdatasync
//! starts the moment the previous one ends and covers only the writers that
//! were left out of it, so with N busy threads each fdatasync covers about
//! N/2 of them and each writer waits for two; with it, one fdatasync covers
//! nearly all N. A lone writer never waits (everyone in `write` is already
//! waiting).
//!
//! Thread-safety: `Syncer` is `Sync`; the thread holds only a `Weak` to the
//! database and exits on [`Syncer::stop`] (joined) or when the database is
//! gone. An fdatasync failure poisons the database; the log keeps the error
//! for every waiter. After a failed *write* the thread goes on serving
//! requests for the same log: the written prefix still has sync writers
//! waiting for it to become durable.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::super::DbInner;
use super::super::stats::Counters;
use crate::error::{Error, Result};

#[derive(Debug, Default)]
struct Flags {
    requested: bool,
    stop: bool,
}

/// Longest the thread waits for sync writers still on their way.
pub(crate) const MAX_GATHER: Duration = Duration::from_millis(2);

#[derive(Debug, Default)]
struct Mailbox {
    flags: Mutex<Flags>,
    cv: Condvar,
    /// `sync = true` writers inside `write`.
    active: AtomicUsize,
    /// Those of them waiting for durability.
    waiting: AtomicUsize,
    /// Set while the thread gathers, so writers only take the lock to
    /// notify when someone listens (not twice per sync write).
    gathering: AtomicBool,
}

impl Mailbox {
    /// Whether every sync writer inside `write` waits for durability.
    fn all_waiting(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) >= self.active.load(Ordering::SeqCst)
    }

    /// Tells a gathering thread that the crowd may be complete.
    fn crowd_changed(&self) {
        // SeqCst pairs with `gather`: either this load sees `gathering`, or
        // the gatherer's first look at the counts sees this writer's change.
        if self.gathering.load(Ordering::SeqCst) && self.all_waiting() {
            let _f = self.flags.lock();
            self.cv.notify_one();
        }
    }
}

/// Counts a `sync = true` writer inside `write` while it lives.
#[derive(Debug)]
pub(crate) struct SyncWriter<'a>(&'a Mailbox);

impl Drop for SyncWriter<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        self.0.crowd_changed();
    }
}

/// Counts a sync writer waiting for durability while it lives.
#[derive(Debug)]
pub(crate) struct DurableWaiter<'a>(&'a Mailbox);

impl Drop for DurableWaiter<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
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

    /// Counts the caller as a `sync = true` writer until the guard drops.
    pub(crate) fn sync_writer(&self) -> SyncWriter<'_> {
        self.mailbox.active.fetch_add(1, Ordering::SeqCst);
        SyncWriter(&self.mailbox)
    }

    /// Counts the caller as waiting for durability until the guard drops.
    pub(crate) fn durable_waiter(&self) -> DurableWaiter<'_> {
        self.mailbox.waiting.fetch_add(1, Ordering::SeqCst);
        self.mailbox.crowd_changed();
        DurableWaiter(&self.mailbox)
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
    let mut wait = tick;
    let mut last_push = Instant::now();
    // How long the last fdatasync took: the gathering budget.
    let mut last_took = Duration::ZERO;
    loop {
        let requested = {
            let mut f = mailbox.flags.lock();
            if !f.requested && !f.stop {
                mailbox.cv.wait_for(&mut f, wait);
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
        // `Options::ttl`: samples and floors, by its own clock; wake up
        // again when it next has work, if that is before the tick.
        wait = crate::db::ttl::step(&db)
            .map_or(tick, |d| d.min(tick))
            .max(Duration::from_millis(1));
        if !idle.is_zero() && now.duration_since(last_push) >= idle {
            last_push = now;
            if let Err(e) = log.push_idle() {
                db.poison_wal(&log, "WAL write failed", &e);
            }
        }
        let periodic = !interval.is_zero() && now.duration_since(last_sync) >= interval;
        if requested || periodic {
            if periodic {
                // The periodic sync also covers a partly filled slot.
                if let Err(e) = log.push_idle() {
                    db.poison_wal(&log, "WAL write failed", &e);
                }
            }
            if requested {
                gather(mailbox, last_took.min(MAX_GATHER));
            }
            last_sync = now;
            let started = Instant::now();
            let synced = log.sync();
            last_took = started.elapsed();
            match synced {
                Ok(true) => Counters::add(&db.counters.wal_syncs, 1),
                Ok(false) => {}
                Err(e) => db.poison_wal(&log, "WAL fdatasync failed", &e),
            }
        }
    }
}

/// Waits (at most `budget`) until every sync writer inside `write` waits
/// for durability (see the module docs).
fn gather(mailbox: &Mailbox, budget: Duration) {
    if budget.is_zero() || mailbox.all_waiting() {
        return;
    }
    let until = Instant::now() + budget;
    let mut f = mailbox.flags.lock();
    mailbox.gathering.store(true, Ordering::SeqCst);
    while !f.stop && !mailbox.all_waiting() && Instant::now() < until {
        mailbox.cv.wait_until(&mut f, until);
    }
    mailbox.gathering.store(false, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathering_returns_at_once_when_everyone_waits() {
        let m = Mailbox::default();
        m.active.store(3, Ordering::SeqCst);
        m.waiting.store(3, Ordering::SeqCst);
        let t = Instant::now();
        gather(&m, Duration::from_secs(5));
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn gathering_ends_when_the_last_writer_starts_waiting() {
        let syncer = Syncer::default();
        let m = &syncer.mailbox;
        let _a = syncer.sync_writer();
        let _b = syncer.sync_writer();
        let _wa = syncer.durable_waiter();
        let t = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(30));
                // The second writer arrives: its guard notifies.
                std::mem::forget(syncer.durable_waiter());
            });
            gather(m, Duration::from_secs(5));
        });
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(25),
            "returned before the crowd was complete"
        );
        assert!(
            took < Duration::from_secs(4),
            "missed the last writer's notification"
        );
    }

    #[test]
    fn gathering_is_bounded_by_its_budget_and_a_leaving_writer_ends_it() {
        let syncer = Syncer::default();
        let m = &syncer.mailbox;
        let _a = syncer.sync_writer();
        let b = syncer.sync_writer();
        let _wa = syncer.durable_waiter();
        let t = Instant::now();
        gather(m, Duration::from_millis(40));
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(35) && took < Duration::from_secs(4));
        // A writer that leaves `write` (an error, or a disabled WAL) also
        // completes the crowd.
        let t = Instant::now();
        std::thread::scope(|s| {
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                drop(b);
            });
            gather(m, Duration::from_secs(5));
        });
        assert!(t.elapsed() < Duration::from_secs(4));
        assert!(m.all_waiting());
    }
}
