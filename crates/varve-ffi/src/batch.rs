//! `varve_writebatch_t`: puts and deletes applied atomically by
//! `varve_write`.
//!
//! Owns one [`varve::WriteBatch`]; keys and values are copied in.
//! `varve_write` applies a copy, so the batch is unchanged and reusable
//! (clear it to start over).
//!
//! Thread-safety: one thread at a time (it may move between threads).

use std::ffi::c_char;

use varve::WriteBatch;

use crate::args::{self, from_handle, into_handle};
use crate::status::{guard, varve_status};

/// A write batch. Create with `varve_writebatch_create`, free with
/// `varve_writebatch_destroy`. One thread at a time.
pub struct varve_writebatch_t {
    pub(crate) batch: WriteBatch,
}

/// A new, empty batch. NULL only if the library panicked.
#[unsafe(no_mangle)]
pub extern "C" fn varve_writebatch_create() -> *mut varve_writebatch_t {
    guard(std::ptr::null_mut(), || {
        into_handle(varve_writebatch_t {
            batch: WriteBatch::new(),
        })
    })
}

/// Frees a batch. NULL is a no-op.
///
/// # Safety
/// `batch` is NULL or a live batch no other thread is using; it is invalid
/// afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writebatch_destroy(batch: *mut varve_writebatch_t) {
    // SAFETY: `batch` is NULL or a live handle nobody else uses.
    guard((), || drop(unsafe { from_handle(batch) }));
}

/// Adds `key = value` (both copied). Key and value limits are checked by
/// `varve_write`.
///
/// # Safety
/// `batch` is NULL or a live batch used by this thread only; `key` and
/// `value` point to `key_len` / `value_len` readable bytes (NULL allowed
/// with length 0); `errptr` is NULL or points to a `char *` that is NULL
/// or an earlier message (freed and replaced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writebatch_put(
    batch: *mut varve_writebatch_t,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    let add = |b: &mut varve_writebatch_t| {
        // SAFETY: the byte pointers are as the contract above says.
        let (key, value) = unsafe {
            (
                args::bytes(key, key_len, "key")?,
                args::bytes(value, value_len, "value")?,
            )
        };
        b.batch.put(key, value);
        Ok(())
    };
    // SAFETY: `batch` and `errptr` are as `args::update` requires
    // (contract above).
    unsafe { args::update(batch, "batch", errptr, add) }
}

/// Adds a deletion of `key` (copied).
///
/// # Safety
/// As for `varve_writebatch_put`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writebatch_delete(
    batch: *mut varve_writebatch_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    let add = |b: &mut varve_writebatch_t| {
        // SAFETY: the byte pointers are as the contract above says.
        let key = unsafe { args::bytes(key, key_len, "key")? };
        b.batch.delete(key);
        Ok(())
    };
    // SAFETY: `batch` and `errptr` are as `args::update` requires
    // (contract above).
    unsafe { args::update(batch, "batch", errptr, add) }
}

/// Adds a deletion of every key in `[start, end)` (both copied): one
/// record, whatever the range holds. `varve_write` refuses `start > end`.
///
/// # Safety
/// As for `varve_writebatch_put` (`start` and `end` as its key and value).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writebatch_delete_range(
    batch: *mut varve_writebatch_t,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    let add = |b: &mut varve_writebatch_t| {
        // SAFETY: the byte pointers are as the contract above says.
        let (start, end) = unsafe {
            (
                args::bytes(start, start_len, "start")?,
                args::bytes(end, end_len, "end")?,
            )
        };
        b.batch.delete_range(start..end);
        Ok(())
    };
    // SAFETY: `batch` and `errptr` are as `args::update` requires
    // (contract above).
    unsafe { args::update(batch, "batch", errptr, add) }
}

/// Removes every operation. A NULL batch is `VARVE_INVALID_ARGUMENT`.
///
/// # Safety
/// `batch` is NULL or a live batch used by this thread only; `errptr` as
/// for `varve_writebatch_put`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writebatch_clear(
    batch: *mut varve_writebatch_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `batch` and `errptr` are as `args::update` requires
    // (contract above).
    unsafe {
        args::update(batch, "batch", errptr, |b| {
            b.batch.clear();
            Ok(())
        })
    }
}

/// Number of operations in the batch; 0 for NULL. An accessor without a
/// status: it cannot fail otherwise.
///
/// # Safety
/// `batch` is NULL or a live batch not being changed by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writebatch_count(batch: *const varve_writebatch_t) -> usize {
    guard(0, || {
        // SAFETY: `batch` is NULL or a live handle (contract above).
        unsafe { args::handle(batch, "batch") }.map_or(0, |b| b.batch.len())
    })
}

#[cfg(test)]
mod tests {
    use std::ptr;

    use super::*;
    use crate::status::take_message;

    #[test]
    fn clear_returns_a_status() {
        let b = varve_writebatch_create();
        let mut err = ptr::null_mut();
        // SAFETY: `b` is a live batch used by this thread; the key and
        // value are readable; `err` is NULL or a message.
        unsafe {
            let put = varve_writebatch_put(b, c"k".as_ptr(), 1, c"v".as_ptr(), 1, &mut err);
            assert_eq!(put, varve_status::VARVE_OK);
            assert_eq!(varve_writebatch_clear(b, &mut err), varve_status::VARVE_OK);
            assert_eq!(varve_writebatch_count(b), 0);
            assert!(err.is_null());
            assert_eq!(
                varve_writebatch_clear(ptr::null_mut(), &mut err),
                varve_status::VARVE_INVALID_ARGUMENT
            );
            let message = take_message(&mut err).expect("a message");
            assert!(message.contains("batch is NULL"), "{message}");
            varve_writebatch_destroy(b);
        }
    }
}
