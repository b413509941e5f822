//! Administration: checkpoint, flush, manual compaction, waiting for the
//! background work, `resume` after a full disk, and the stats report.
//!
//! Owns nothing; the stats text is a `malloc`ed string the caller frees
//! with `varve_free`.
//!
//! Thread-safety: every call is safe from any number of threads, alongside
//! reads and writes.

use std::ffi::c_char;

use crate::alloc::malloc_string;
use crate::args::{self, Out};
use crate::db::{db_ref, varve_db_t};
use crate::status::{ErrPtr, FfiError, call, varve_status};

/// Writes a consistent, openable copy of the database into directory
/// `path` (which must not exist, or be empty) while writers continue:
/// tables are hard-linked where possible, logs and a fresh manifest copied,
/// everything fsynced. Open the copy with `varve_open`.
///
/// # Safety
/// `db` is NULL or a live database handle; `path` is a NUL-terminated
/// string; `errptr` is NULL or points to a `char *` that is NULL or an
/// earlier message (freed and replaced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_checkpoint(
    db: *mut varve_db_t,
    path: *const c_char,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (handle, path) = unsafe { (db_ref(db)?, args::path(path, "path")?) };
        handle.with(|d| Ok(d.checkpoint(&path)?))?;
        Ok(varve_status::VARVE_OK)
    })
}

/// Writes every memtable to table files and waits for it.
///
/// # Safety
/// `db` is NULL or a live database handle; `errptr` as for
/// `varve_checkpoint`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_flush(
    db: *mut varve_db_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `db` is NULL or a live handle (contract above).
        unsafe { db_ref(db) }?.with(|d| Ok(d.flush()?))?;
        Ok(varve_status::VARVE_OK)
    })
}

/// Compacts every table overlapping `[begin, end]` (NULL `begin` or `end`:
/// unbounded on that side) down to the deepest level holding the range,
/// after a flush; drops deleted and overwritten entries no snapshot sees.
///
/// # Safety
/// `db` is NULL or a live database handle; `begin` / `end` are NULL or
/// point to `begin_len` / `end_len` readable bytes; `errptr` as for
/// `varve_checkpoint`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_compact_range(
    db: *mut varve_db_t,
    begin: *const c_char,
    begin_len: usize,
    end: *const c_char,
    end_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (handle, begin, end) = unsafe {
            (
                db_ref(db)?,
                args::opt_bytes(begin, begin_len),
                args::opt_bytes(end, end_len),
            )
        };
        handle.with(|d| Ok(d.compact_range(begin, end)?))?;
        Ok(varve_status::VARVE_OK)
    })
}

/// Waits until no level is due for compaction and no blob file for
/// garbage collection.
///
/// # Safety
/// As for `varve_flush`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_wait_for_compactions(
    db: *mut varve_db_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `db` is NULL or a live handle (contract above).
        unsafe { db_ref(db) }?.with(|d| Ok(d.wait_for_compactions()?))?;
        Ok(varve_status::VARVE_OK)
    })
}

/// Brings writes back after a full disk poisoned the database
/// (`VARVE_NO_SPACE`, then `VARVE_POISONED`), once space is freed; a
/// no-op when the database is not poisoned. Fails with `VARVE_POISONED`
/// when only a reopen can help.
///
/// # Safety
/// As for `varve_flush`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_resume(
    db: *mut varve_db_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `db` is NULL or a live handle (contract above).
        unsafe { db_ref(db) }?.with(|d| Ok(d.resume()?))?;
        Ok(varve_status::VARVE_OK)
    })
}

/// The engine's counters and the shape of the tree as text (the report of
/// RocksDB's `rocksdb.stats` kind), in `*stats_out`: a NUL-terminated
/// `malloc`ed string the caller frees with `varve_free`.
///
/// # Safety
/// `db` is NULL or a live database handle; `stats_out` is writable;
/// `errptr` as for `varve_checkpoint`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_stats(
    db: *mut varve_db_t,
    stats_out: *mut *mut c_char,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (out, handle) = unsafe {
            (
                Out::cleared(stats_out, "stats_out", std::ptr::null_mut())?,
                db_ref(db)?,
            )
        };
        let report = handle.with(|d| Ok(d.stats().report()))?;
        let text = malloc_string(&report);
        if text.is_null() {
            return Err(FfiError::out_of_memory(report.len() + 1));
        }
        out.set(text);
        Ok(varve_status::VARVE_OK)
    })
}
