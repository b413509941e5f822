//! `varve_iterator_t`: an ordered cursor over a database at one point in
//! time, with the bounds of its read options.
//!
//! Owns one [`varve::DbIterator`] (which pins its snapshot, memtables and
//! table files: it never sees later writes) and the message of a panic
//! caught inside it. Movement calls return nothing, as in RocksDB: errors
//! show in `varve_iter_status`, and a panic during a move leaves the
//! iterator invalid for good with `VARVE_PANIC` as its status.
//!
//! Invariant: the pointers `varve_iter_key` / `varve_iter_value` return
//! stay valid until the next call that moves or destroys the iterator.
//! Thread-safety: one thread at a time (it may move between threads). It
//! may outlive its database handle; destroy it first all the same.

use std::ffi::c_char;

use varve::DbIterator;

use crate::args::{self, Out, from_handle, into_handle};
use crate::db::{db_ref, varve_db_t};
use crate::rw_options::{read_options, varve_readoptions_t};
use crate::status::{ErrPtr, FfiError, call, catch, guard, varve_status};

/// An iterator. Create with `varve_iter_create`, free with
/// `varve_iter_destroy`. One thread at a time.
pub struct varve_iterator_t {
    iter: DbIterator,
    /// A panic caught during a move, or a bad seek argument: the iterator
    /// stays invalid with this as its status.
    broken: Option<FfiError>,
}

/// Runs `f` on the iterator unless it is NULL or broken; a panic breaks
/// it.
///
/// # Safety
/// `it` is NULL or a live iterator used by this thread only.
unsafe fn with_iter(it: *mut varve_iterator_t, f: impl FnOnce(&mut DbIterator)) {
    guard((), || {
        // SAFETY: `it` is NULL or a live iterator this thread alone uses.
        let Ok(h) = (unsafe { args::handle_mut(it, "iterator") }) else {
            return;
        };
        if h.broken.is_none()
            && let Err(message) = catch(|| f(&mut h.iter))
        {
            h.broken = Some(FfiError::new(
                varve_status::VARVE_PANIC,
                format!("panic inside varve: {message}"),
            ));
        }
    })
}

/// Creates an iterator over `db` as of now (or the snapshot of `options`),
/// limited to `[lower, upper)` when `options` has bounds, into `*iter_out`.
/// It is not positioned: call a seek first. `options` NULL: defaults.
///
/// # Safety
/// `db` is NULL or a live database handle; `options` is NULL or a live read
/// options handle; `iter_out` is writable; `errptr` is NULL or points to a
/// `char *` that is NULL or an earlier message (freed and replaced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_create(
    db: *mut varve_db_t,
    options: *const varve_readoptions_t,
    iter_out: *mut *mut varve_iterator_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (out, handle, opts) = unsafe {
            (
                Out::cleared(iter_out, "iter_out", std::ptr::null_mut())?,
                db_ref(db)?,
                read_options(options)?,
            )
        };
        let iter = handle.with(|d| Ok(d.iter_opt(&opts)))?;
        out.set(into_handle(varve_iterator_t { iter, broken: None }));
        Ok(varve_status::VARVE_OK)
    })
}

/// Frees an iterator (and its pin on the database state). NULL is a no-op.
///
/// # Safety
/// `it` is NULL or a live iterator no other thread is using; it is invalid
/// afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_destroy(it: *mut varve_iterator_t) {
    // SAFETY: `it` is NULL or a live handle nobody else uses.
    guard((), || drop(unsafe { from_handle(it) }));
}

/// True when the iterator is on an entry. False for NULL, past either end,
/// and after an error (see `varve_iter_status`).
///
/// # Safety
/// `it` is NULL or a live iterator used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_valid(it: *const varve_iterator_t) -> bool {
    guard(false, || {
        // SAFETY: `it` is NULL or a live iterator (contract above).
        unsafe { it.as_ref() }.is_some_and(|h| h.broken.is_none() && h.iter.valid())
    })
}

/// Moves to the first key (at or after the lower bound).
///
/// # Safety
/// `it` is NULL (ignored) or a live iterator used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_seek_to_first(it: *mut varve_iterator_t) {
    // SAFETY: forwarded contract.
    unsafe { with_iter(it, DbIterator::seek_to_first) }
}

/// Moves to the last key (before the upper bound).
///
/// # Safety
/// `it` is NULL (ignored) or a live iterator used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_seek_to_last(it: *mut varve_iterator_t) {
    // SAFETY: forwarded contract.
    unsafe { with_iter(it, DbIterator::seek_to_last) }
}

/// Moves to the first key `>= key` (clamped to the bounds). A NULL key
/// with a non-zero length leaves the iterator invalid with
/// `VARVE_INVALID_ARGUMENT` as its status.
///
/// # Safety
/// `it` is NULL (ignored) or a live iterator used by this thread only;
/// `key` points to `key_len` readable bytes (NULL allowed with length 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_seek(
    it: *mut varve_iterator_t,
    key: *const c_char,
    key_len: usize,
) {
    // SAFETY: `key` is as the contract above says.
    let key = unsafe { args::bytes(key, key_len, "key") };
    // SAFETY: forwarded contract.
    unsafe { seek_with(it, key, |i, k| i.seek(k)) }
}

/// Moves to the last key `<= key` (clamped to the bounds).
///
/// # Safety
/// As for `varve_iter_seek`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_seek_for_prev(
    it: *mut varve_iterator_t,
    key: *const c_char,
    key_len: usize,
) {
    // SAFETY: `key` is as the contract above says.
    let key = unsafe { args::bytes(key, key_len, "key") };
    // SAFETY: forwarded contract.
    unsafe { seek_with(it, key, |i, k| i.seek_for_prev(k)) }
}

/// A seek to `key`, or, for a bad key argument, an iterator left invalid
/// with that error as its status.
///
/// # Safety
/// `it` is NULL or a live iterator used by this thread only.
unsafe fn seek_with(
    it: *mut varve_iterator_t,
    key: Result<&[u8], FfiError>,
    seek: impl FnOnce(&mut DbIterator, &[u8]),
) {
    match key {
        // SAFETY: forwarded contract.
        Ok(k) => unsafe { with_iter(it, |i| seek(i, k)) },
        Err(e) => guard((), || {
            // SAFETY: `it` is NULL or a live iterator this thread alone uses.
            if let Ok(h) = unsafe { args::handle_mut(it, "iterator") } {
                h.broken.get_or_insert(e);
            }
        }),
    }
}

/// Moves to the next key. Does nothing when not valid.
///
/// # Safety
/// `it` is NULL (ignored) or a live iterator used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_next(it: *mut varve_iterator_t) {
    // SAFETY: forwarded contract.
    unsafe { with_iter(it, DbIterator::move_next) }
}

/// Moves to the previous key. Does nothing when not valid.
///
/// # Safety
/// `it` is NULL (ignored) or a live iterator used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_prev(it: *mut varve_iterator_t) {
    // SAFETY: forwarded contract.
    unsafe { with_iter(it, DbIterator::move_prev) }
}

/// The current key and its length in `*len` (if `len` is not NULL); NULL
/// and 0 when not valid. Valid until the iterator moves or is destroyed;
/// not NUL-terminated.
///
/// # Safety
/// `it` is NULL or a live iterator used by this thread only; `len` is NULL
/// or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_key(
    it: *const varve_iterator_t,
    len: *mut usize,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { entry(it, len, DbIterator::key) }
}

/// The current value and its length in `*len` (if `len` is not NULL); NULL
/// and 0 when not valid. A value kept in a blob file is read here; if that
/// read fails the iterator turns invalid and `varve_iter_status` has the
/// error. Valid until the iterator moves or is destroyed; not
/// NUL-terminated.
///
/// # Safety
/// As for `varve_iter_key`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_value(
    it: *const varve_iterator_t,
    len: *mut usize,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { entry(it, len, DbIterator::value) }
}

/// The key or value of the current entry (`part`), NULL / 0 when invalid.
///
/// # Safety
/// As for `varve_iter_key`.
unsafe fn entry(
    it: *const varve_iterator_t,
    len: *mut usize,
    part: fn(&DbIterator) -> &[u8],
) -> *const c_char {
    // SAFETY: `len` is NULL or writable (caller's contract).
    let len = unsafe { Out::new(len, "len") }.ok();
    if let Some(l) = &len {
        l.set(0);
    }
    guard(std::ptr::null(), || {
        // SAFETY: `it` is NULL or a live iterator (caller's contract).
        let Some(h) = (unsafe { it.as_ref() }) else {
            return std::ptr::null();
        };
        if h.broken.is_some() || !h.iter.valid() {
            return std::ptr::null();
        }
        let bytes = part(&h.iter);
        // The value read may have failed (the iterator turned invalid).
        if !h.iter.valid() {
            return std::ptr::null();
        }
        if let Some(l) = &len {
            l.set(bytes.len());
        }
        bytes.as_ptr().cast()
    })
}

/// `VARVE_OK`, or the first error the iterator met (IO, corruption, a
/// panic, a bad seek argument) with its message. An iterator with an error
/// stays invalid: create a new one.
///
/// # Safety
/// `it` is NULL or a live iterator used by this thread only; `errptr` as
/// for `varve_iter_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_status(
    it: *const varve_iterator_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `it` is NULL or a live iterator (contract above).
        let h = unsafe { args::handle(it, "iterator") }?;
        if let Some(e) = &h.broken {
            return Err(e.clone());
        }
        h.iter.status()?;
        Ok(varve_status::VARVE_OK)
    })
}
