//! `varve_db_t`: an open database, and its life cycle (open, open
//! read-only, shutdown, close, destroy).
//!
//! Owns the [`varve::Db`] inside an `RwLock<Option<Db>>`. Every call on the
//! database holds the read lock for its duration ([`varve_db_t::with`]), so
//! calls run concurrently; `varve_shutdown` takes the write lock, which
//! waits for the calls in flight, closes the database and leaves `None`:
//! from then on every call returns `VARVE_CLOSED` instead of touching freed
//! memory. `varve_close` does the same and then frees the handle.
//!
//! Invariant: the handle's memory lives from `varve_open` to `varve_close`;
//! the database inside lives from `varve_open` to the first of
//! `varve_shutdown` / `varve_close`.
//! Thread-safety: `varve_db_t` is shared by any number of threads; only
//! `varve_close` needs every other thread to be done with the handle.

use std::ffi::c_char;
use std::path::Path;
use std::sync::{PoisonError, RwLock};

use varve::Db;

use crate::args::{self, Out, from_handle, into_handle};
use crate::options::{options_or_default, varve_options_t};
use crate::status::{ErrPtr, FfiError, FfiResult, call, varve_status};

/// An open database. Safe to use from any number of threads at once.
/// Closed with `varve_shutdown` (handle kept, later calls return
/// `VARVE_CLOSED`) and/or `varve_close` (handle freed).
pub struct varve_db_t {
    db: RwLock<Option<Db>>,
}

impl varve_db_t {
    /// Runs `f` on the open database, holding the read lock (a concurrent
    /// shutdown waits for it); `VARVE_CLOSED` after a shutdown.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&Db) -> FfiResult<T>) -> FfiResult<T> {
        let guard = self.db.read().unwrap_or_else(PoisonError::into_inner);
        match guard.as_ref() {
            Some(db) => f(db),
            None => Err(closed()),
        }
    }

    /// Closes the database if it is open: waits for the calls in flight,
    /// syncs the WAL and releases the lock.
    fn shutdown(&self) -> FfiResult<()> {
        let mut guard = self.db.write().unwrap_or_else(PoisonError::into_inner);
        match guard.take() {
            Some(db) => db.close().map_err(FfiError::from),
            None => Ok(()),
        }
    }
}

fn closed() -> FfiError {
    FfiError::new(
        varve_status::VARVE_CLOSED,
        "the database handle is closed (varve_shutdown was called on it)",
    )
}

/// The database handle behind `ptr`; NULL is `VARVE_CLOSED`.
///
/// # Safety
/// `ptr` is NULL or a live handle from `varve_open` (not yet passed to
/// `varve_close`), valid for `'a`.
pub(crate) unsafe fn db_ref<'a>(ptr: *const varve_db_t) -> FfiResult<&'a varve_db_t> {
    // SAFETY: `ptr` is NULL or a live handle (caller's contract).
    unsafe { ptr.as_ref() }
        .ok_or_else(|| FfiError::new(varve_status::VARVE_CLOSED, "the database handle is NULL"))
}

/// Shared body of the two opens.
///
/// # Safety
/// As for `varve_open`.
unsafe fn open_with(
    options: *const varve_options_t,
    path: *const c_char,
    db_out: *mut *mut varve_db_t,
    errptr: *mut *mut c_char,
    open: fn(&Path, varve::Options) -> varve::Result<Db>,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (`varve_open`'s
    // contract).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as `varve_open`'s contract says.
        let (out, path, options) = unsafe {
            (
                Out::cleared(db_out, "db_out", std::ptr::null_mut())?,
                args::path(path, "path")?,
                options_or_default(options)?,
            )
        };
        let db = open(&path, options.into_owned())?;
        out.set(into_handle(varve_db_t {
            db: RwLock::new(Some(db)),
        }));
        Ok(varve_status::VARVE_OK)
    })
}

/// Opens (by default creating) the database in directory `path` and stores
/// its handle in `*db_out` (NULL on failure). `options` NULL: defaults.
///
/// Errors: `VARVE_BUSY` if another opener holds the directory's lock (this
/// process or another), `VARVE_NOT_FOUND` / `VARVE_ALREADY_EXISTS` per
/// `create_if_missing` / `error_if_exists`, `VARVE_CORRUPTION` naming the
/// damaged file, `VARVE_IO_ERROR` naming the path, `VARVE_INVALID_ARGUMENT`
/// for bad options.
///
/// # Safety
/// `options` is NULL or a live options handle; `path` is a NUL-terminated
/// string; `db_out` is writable; `errptr` is NULL or points to a `char *`
/// that is NULL or an earlier message (freed and replaced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_open(
    options: *const varve_options_t,
    path: *const c_char,
    db_out: *mut *mut varve_db_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: the arguments are as this function's contract says.
    unsafe { open_with(options, path, db_out, errptr, |p, o| Db::open(p, o)) }
}

/// Opens an existing database without changing its directory: reads,
/// iterators, snapshots, scans and stats work; writes, flush and
/// compaction fail with `VARVE_READ_ONLY` or `VARVE_INVALID_ARGUMENT`. The
/// lock is taken as for `varve_open` (`VARVE_BUSY` if it is open
/// elsewhere: take a checkpoint there instead).
///
/// # Safety
/// As for `varve_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_open_read_only(
    options: *const varve_options_t,
    path: *const c_char,
    db_out: *mut *mut varve_db_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: the arguments are as this function's contract says.
    unsafe {
        open_with(options, path, db_out, errptr, |p, o| {
            Db::open_read_only(p, o)
        })
    }
}

/// Closes the database but keeps the handle: waits for calls in flight
/// on other threads, syncs the WAL, releases the directory lock. Every
/// later call on the handle returns `VARVE_CLOSED`; a second shutdown
/// returns `VARVE_OK`. Free the handle with `varve_close` afterwards.
///
/// Use it when other threads may still hold the handle: shut down, let
/// them see `VARVE_CLOSED`, join them, then `varve_close`.
///
/// # Safety
/// `db` is NULL or a live handle from `varve_open` (not yet passed to
/// `varve_close`); `errptr` as for `varve_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_shutdown(
    db: *mut varve_db_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `db` is NULL or a live handle (contract above).
        unsafe { db_ref(db) }?.shutdown()?;
        Ok(varve_status::VARVE_OK)
    })
}

/// Closes the database (as `varve_shutdown`, a no-op if it was shut down
/// already) and frees the handle, whatever the status: the handle is
/// invalid afterwards, even on error. NULL is a no-op returning
/// `VARVE_OK`. Iterators and snapshots made from it stay memory-safe to
/// use and destroy, but should be destroyed first.
///
/// # Safety
/// `db` is NULL or a live handle from `varve_open` that no other thread is
/// using or will use; `errptr` as for `varve_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_close(
    db: *mut varve_db_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `db` is NULL or a live handle from `varve_open` that no
        // other thread uses (contract above); it is freed once, here.
        let Some(handle) = (unsafe { from_handle(db) }) else {
            return Ok(varve_status::VARVE_OK);
        };
        handle.shutdown()?;
        Ok(varve_status::VARVE_OK)
    })
}

/// Deletes the database in `path` (its files, then the directory if
/// empty). Fails with `VARVE_BUSY` while it is open. `options` NULL:
/// defaults.
///
/// # Safety
/// `options` is NULL or a live options handle; `path` is a NUL-terminated
/// string; `errptr` as for `varve_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_destroy(
    options: *const varve_options_t,
    path: *const c_char,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `path` and `options` are as the contract above says.
        let (path, options) = unsafe { (args::path(path, "path")?, options_or_default(options)?) };
        Db::destroy(&path, &options)?;
        Ok(varve_status::VARVE_OK)
    })
}
