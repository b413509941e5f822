//! [`Handle`]: the open engine, shared (by `Arc`) by a `Db` object and
//! everything made from it (iterators, snapshots, write batches), so that
//! each of them keeps what it needs alive however long Python keeps it.
//!
//! Thread-safety: the engine sits in a `RwLock<Option<varve::Db>>`. Every
//! call on it ([`Handle::run`]) takes the read side for its whole duration,
//! detached from the interpreter (the GIL is released), so any number of
//! Python threads use the database at once. [`Handle::close`] takes the
//! write side: it waits for the calls in flight, invalidates every live
//! iterator (dropping its engine iterator, so nothing outlives the engine)
//! and closes the engine; later calls fail with `ClosedError`.
//!
//! Lock order (no other order exists): engine lock, then the iterator
//! registry, then one iterator's state. No lock here is ever held while
//! re-attaching to the interpreter, and the read side is never taken twice
//! by one thread (the lock is fair: a waiting writer blocks new readers).
//!
//! If Python drops the last reference without `close()`, the engine is
//! closed by its own `Drop` (errors cannot be reported then).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};
use pyo3::prelude::*;

use crate::cursor::Cursor;
use crate::errors::{Fail, OrRaise};

/// The open (or closed) engine and the iterators made from it.
pub(crate) struct Handle {
    db: RwLock<Option<varve::Db>>,
    path: PathBuf,
    read_only: bool,
    /// Live iterators, invalidated by `close`; dead entries are pruned as
    /// new ones register.
    cursors: Mutex<Vec<Weak<Cursor>>>,
}

impl Handle {
    /// Wraps an open engine.
    pub(crate) fn new(db: varve::Db, read_only: bool) -> Arc<Handle> {
        Arc::new(Handle {
            path: db.path().to_path_buf(),
            db: RwLock::new(Some(db)),
            read_only,
            cursors: Mutex::new(Vec::new()),
        })
    }

    /// The database directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// True when opened with `read_only=True`.
    pub(crate) fn read_only(&self) -> bool {
        self.read_only
    }

    /// Calls `f` on the open engine, with the GIL released for the whole
    /// call (waiting for the engine lock included); `ClosedError` once
    /// closed.
    pub(crate) fn run<T, F>(&self, py: Python<'_>, f: F) -> PyResult<T>
    where
        T: Send,
        F: Send + FnOnce(&varve::Db) -> Result<T, Fail>,
    {
        py.detach(|| self.with(f)).or_raise(py)
    }

    /// Calls `f` on the open engine. The caller is detached from the
    /// interpreter.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&varve::Db) -> Result<T, Fail>) -> Result<T, Fail> {
        let guard = self.db.read();
        match guard.as_ref() {
            Some(db) => f(db),
            None => Err(Fail::db_closed()),
        }
    }

    /// True until `close`. A hint only: the answer may be stale by the
    /// time the caller acts on it (`run` is the authority).
    pub(crate) fn is_open(&self) -> bool {
        match self.db.try_read() {
            Some(g) => g.is_some(),
            // A close holds the write side.
            None => false,
        }
    }

    /// Records `cursor` so that `close` invalidates it. Called while the
    /// engine lock's read side is held (inside `with`), so a close cannot
    /// slip in between the check that the engine is open and this.
    pub(crate) fn register(&self, cursor: &Arc<Cursor>) {
        let mut cursors = self.cursors.lock();
        cursors.retain(|c| c.strong_count() > 0);
        cursors.push(Arc::downgrade(cursor));
    }

    /// Waits for the calls in flight, invalidates the live iterators and
    /// closes the engine (syncing its WAL, releasing its lock). A no-op
    /// when already closed. The caller is detached from the interpreter.
    pub(crate) fn close(&self) -> Result<(), Fail> {
        let mut guard = self.db.write();
        let Some(db) = guard.take() else {
            return Ok(());
        };
        let cursors = std::mem::take(&mut *self.cursors.lock());
        for cursor in cursors.iter().filter_map(Weak::upgrade) {
            cursor.invalidate();
        }
        // Still holding the write side: a second `close` (or an open of the
        // same directory after it returns) waits until the lock file is free.
        let result = db.close().map_err(Fail::from);
        drop(guard);
        result
    }
}
