//! The write calls: `varve_put`, `varve_delete`, `varve_delete_range`,
//! `varve_write`.
//!
//! Owns nothing: each call copies the caller's bytes into the engine and
//! returns once the write is acknowledged (in the OS; on disk with
//! `sync`).
//!
//! Thread-safety: any number of threads may write through one database
//! handle at once (the batch of `varve_write` is one thread's at a time).

use std::ffi::c_char;

use crate::args;
use crate::batch::varve_writebatch_t;
use crate::db::{db_ref, varve_db_t};
use crate::rw_options::{varve_writeoptions_t, write_options};
use crate::status::{ErrPtr, call, varve_status};

/// Sets `key` to `value`. `options` NULL: defaults.
///
/// # Safety
/// `db` is NULL or a live database handle; `options` is NULL or a live
/// write options handle; `key` / `value` point to `key_len` / `value_len`
/// readable bytes (NULL allowed with length 0); `errptr` is NULL or points
/// to a `char *` that is NULL or an earlier message (freed and replaced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_put(
    db: *mut varve_db_t,
    options: *const varve_writeoptions_t,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (handle, opts, key, value) = unsafe {
            (
                db_ref(db)?,
                write_options(options)?,
                args::bytes(key, key_len, "key")?,
                args::bytes(value, value_len, "value")?,
            )
        };
        handle.with(|d| Ok(d.put_opt(key, value, &opts)?))?;
        Ok(varve_status::VARVE_OK)
    })
}

/// Deletes `key` (not an error if it is absent). `options` NULL: defaults.
///
/// # Safety
/// As for `varve_put`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_delete(
    db: *mut varve_db_t,
    options: *const varve_writeoptions_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (handle, opts, key) = unsafe {
            (
                db_ref(db)?,
                write_options(options)?,
                args::bytes(key, key_len, "key")?,
            )
        };
        handle.with(|d| Ok(d.delete_opt(key, &opts)?))?;
        Ok(varve_status::VARVE_OK)
    })
}

/// Deletes every key in `[start, end)` with one range tombstone (O(1)
/// whatever the range holds). `start > end` is
/// `VARVE_INVALID_ARGUMENT`; an empty range deletes nothing. `options`
/// NULL: defaults.
///
/// # Safety
/// As for `varve_put` (`start` and `end` as its key and value).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_delete_range(
    db: *mut varve_db_t,
    options: *const varve_writeoptions_t,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (handle, opts, start, end) = unsafe {
            (
                db_ref(db)?,
                write_options(options)?,
                args::bytes(start, start_len, "start")?,
                args::bytes(end, end_len, "end")?,
            )
        };
        handle.with(|d| Ok(d.delete_range_opt(start..end, &opts)?))?;
        Ok(varve_status::VARVE_OK)
    })
}

/// Applies every operation of `batch` atomically: readers see all of it or
/// none of it. The batch is left unchanged (reuse it or clear it).
///
/// # Safety
/// As for `varve_put`; `batch` is a live batch no other thread is
/// changing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_write(
    db: *mut varve_db_t,
    options: *const varve_writeoptions_t,
    batch: *const varve_writebatch_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (handle, opts, batch) = unsafe {
            (
                db_ref(db)?,
                write_options(options)?,
                args::handle(batch, "batch")?,
            )
        };
        handle.with(|d| Ok(d.write_opt(batch.batch.clone(), &opts)?))?;
        Ok(varve_status::VARVE_OK)
    })
}
