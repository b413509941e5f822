//! Reading the arguments of a C call: byte strings (pointer + length),
//! paths (NUL-terminated), handles and out-pointers; and [`update`], the
//! whole body of a call that only changes the object behind a handle
//! (option setters, clearing a batch).
//!
//! Owns nothing. Each function turns a raw pointer into a reference or a
//! checked wrapper once, at the top of a call, so the rest of the call is
//! safe Rust; NULL is rejected with `VARVE_INVALID_ARGUMENT` (the database
//! handle's own NULL check, `VARVE_CLOSED`, is in `db`).
//!
//! Invariant: the lifetimes returned are unbounded; callers keep them
//! within the C call (the C caller guarantees the memory for that long).
//! Thread-safety: stateless; any thread.

use std::ffi::{CStr, OsStr, c_char};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::ptr::NonNull;

use crate::status::{ErrPtr, FfiError, FfiResult, call, varve_status};

/// The `len` bytes at `ptr`; NULL is accepted only with `len == 0`.
///
/// # Safety
/// `ptr` is NULL or points to `len` readable bytes that stay valid and
/// unmodified for `'a`.
pub(crate) unsafe fn bytes<'a>(ptr: *const c_char, len: usize, what: &str) -> FfiResult<&'a [u8]> {
    if ptr.is_null() {
        if len == 0 {
            return Ok(&[]);
        }
        return Err(FfiError::invalid(format!(
            "{what} is NULL with length {len}"
        )));
    }
    // SAFETY: `ptr` is non-null and points to `len` readable bytes valid for
    // `'a` (caller's contract); u8 and c_char have the same layout.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// The `len` bytes at `ptr`, or `None` when `ptr` is NULL (an unbounded
/// bound, an unset option).
///
/// # Safety
/// As for [`bytes`].
pub(crate) unsafe fn opt_bytes<'a>(ptr: *const c_char, len: usize) -> Option<&'a [u8]> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` is non-null and points to `len` readable bytes valid for
    // `'a` (caller's contract).
    Some(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// A bound: `None` for NULL with length 0 (no bound), the `len` bytes at
/// `ptr` otherwise; NULL with a non-zero length is
/// `VARVE_INVALID_ARGUMENT` (a caller's mistake, not "no bound").
///
/// # Safety
/// As for [`bytes`].
pub(crate) unsafe fn bound<'a>(
    ptr: *const c_char,
    len: usize,
    what: &str,
) -> FfiResult<Option<&'a [u8]>> {
    if ptr.is_null() && len == 0 {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { bytes(ptr, len, what) }.map(Some)
}

/// A path from a NUL-terminated string (any bytes but NUL: paths need not
/// be UTF-8).
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated string readable for the call.
pub(crate) unsafe fn path(ptr: *const c_char, what: &str) -> FfiResult<PathBuf> {
    if ptr.is_null() {
        return Err(FfiError::invalid(format!("{what} is NULL")));
    }
    // SAFETY: `ptr` is a non-null NUL-terminated string (caller's contract).
    let s = unsafe { CStr::from_ptr(ptr) };
    if s.is_empty() {
        return Err(FfiError::invalid(format!("{what} is empty")));
    }
    Ok(PathBuf::from(OsStr::from_bytes(s.to_bytes())))
}

/// The object behind a handle.
///
/// # Safety
/// `ptr` is NULL or a live handle of type `T` created by this library,
/// not destroyed for `'a`, and used as its type's thread-safety rules
/// allow.
pub(crate) unsafe fn handle<'a, T>(ptr: *const T, what: &str) -> FfiResult<&'a T> {
    // SAFETY: `ptr` is NULL or a live, properly aligned `T` (caller's
    // contract); `as_ref` maps NULL to `None`.
    unsafe { ptr.as_ref() }.ok_or_else(|| FfiError::invalid(format!("{what} is NULL")))
}

/// The object behind a handle, for mutation.
///
/// # Safety
/// As for [`handle`], and no other reference to it exists during `'a`
/// (the handle's one-thread-at-a-time rule).
pub(crate) unsafe fn handle_mut<'a, T>(ptr: *mut T, what: &str) -> FfiResult<&'a mut T> {
    // SAFETY: `ptr` is NULL or a live `T` nobody else uses during `'a`
    // (caller's contract); `as_mut` maps NULL to `None`.
    unsafe { ptr.as_mut() }.ok_or_else(|| FfiError::invalid(format!("{what} is NULL")))
}

/// The body of a call that changes the object behind `handle` with `f`:
/// `VARVE_OK`, or `f`'s error (`f` checks before it assigns, so the object
/// is unchanged then), or `VARVE_INVALID_ARGUMENT` ("`what` is NULL") for
/// a NULL handle; the message goes to `errptr`, a panic is `VARVE_PANIC`.
///
/// # Safety
/// `handle` is as for [`handle_mut`]; `errptr` is as `ErrPtr::new`
/// requires.
pub(crate) unsafe fn update<H>(
    handle: *mut H,
    what: &str,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&mut H) -> FfiResult<()>,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (caller's contract).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `handle` is NULL or a live handle this thread alone uses
        // (caller's contract).
        f(unsafe { handle_mut(handle, what) }?)?;
        Ok(varve_status::VARVE_OK)
    })
}

/// An out-parameter: a place the call writes its result to.
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Checks `ptr` (NULL is `VARVE_INVALID_ARGUMENT`).
    ///
    /// # Safety
    /// `ptr` is NULL or valid for writing a `T` for as long as the `Out`
    /// lives (the C call).
    pub(crate) unsafe fn new(ptr: *mut T, what: &str) -> FfiResult<Out<T>> {
        NonNull::new(ptr)
            .map(Out)
            .ok_or_else(|| FfiError::invalid(format!("{what} is NULL")))
    }

    /// Checks `ptr` like [`new`](Self::new) and stores `empty` in it at
    /// once, so the caller sees `empty` (NULL, 0) whatever fails later.
    ///
    /// # Safety
    /// As for [`new`](Self::new).
    pub(crate) unsafe fn cleared(ptr: *mut T, what: &str, empty: T) -> FfiResult<Out<T>> {
        // SAFETY: forwarded contract.
        let out = unsafe { Out::new(ptr, what) }?;
        out.set(empty);
        Ok(out)
    }

    /// Writes `value` (the old content is overwritten, not dropped: out
    /// types are plain C data).
    pub(crate) fn set(&self, value: T) {
        // SAFETY: the pointer is non-null and valid for writes (the
        // contract of `new`); `write` does not read or drop the old value.
        unsafe { self.0.as_ptr().write(value) }
    }
}

/// Boxes `value` for C: the handle it gets.
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Takes back ownership of a handle (NULL: `None`).
///
/// # Safety
/// `ptr` is NULL or a handle made by [`into_handle`] for this `T`, not yet
/// destroyed, and unused by any other thread; it is invalid afterwards.
pub(crate) unsafe fn from_handle<T>(ptr: *mut T) -> Option<Box<T>> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` came from `Box::into_raw` of a `Box<T>` and is
    // reclaimed once (caller's contract).
    Some(unsafe { Box::from_raw(ptr) })
}

/// The `n` elements at `ptr`; NULL is accepted only with `n == 0`.
///
/// # Safety
/// `ptr` is NULL or points to `n` initialised `T`s valid for `'a`.
pub(crate) unsafe fn array<'a, T>(ptr: *const T, n: usize, what: &str) -> FfiResult<&'a [T]> {
    if ptr.is_null() {
        if n == 0 {
            return Ok(&[]);
        }
        return Err(FfiError::invalid(format!(
            "{what} is NULL with {n} elements"
        )));
    }
    // SAFETY: `ptr` is non-null and points to `n` initialised `T`s valid for
    // `'a` (caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// An out-array of `n` elements at `ptr`, written (never read) by the call;
/// NULL is accepted only with `n == 0`.
///
/// # Safety
/// `ptr` is NULL or valid for writing `n` `T`s for `'a`, and nothing else
/// accesses them meanwhile.
pub(crate) unsafe fn out_array<'a, T>(
    ptr: *mut T,
    n: usize,
    what: &str,
) -> FfiResult<&'a mut [std::mem::MaybeUninit<T>]> {
    if ptr.is_null() {
        if n == 0 {
            return Ok(&mut []);
        }
        return Err(FfiError::invalid(format!(
            "{what} is NULL with {n} elements"
        )));
    }
    // SAFETY: `ptr` is non-null and valid for writing `n` `T`s, used by
    // nothing else for `'a` (caller's contract); `MaybeUninit<T>` has the
    // layout of `T` and never reads the old content.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast(), n) })
}
