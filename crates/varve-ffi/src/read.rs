//! Point reads: `varve_get` (a `malloc`ed copy), `varve_get_pinned` (the
//! engine's own buffer behind a `varve_pinned_t`, no second copy) and
//! `varve_multi_get` (many keys as of one sequence number).
//!
//! Owns `varve_pinned_t`, which holds one value. A missing key is
//! `VARVE_NOT_FOUND` with no message; the out-pointers are then NULL / 0.
//!
//! Thread-safety: any number of threads may read through one database
//! handle; a pinned value is immutable and may be read from any thread.

use std::ffi::c_char;

use crate::alloc::{malloc_bytes, malloc_string};
use crate::args::{self, Out, from_handle, into_handle};
use crate::db::{db_ref, varve_db_t};
use crate::rw_options::{read_options, varve_readoptions_t};
use crate::status::{ErrPtr, FfiError, call, guard, status_of, varve_status};

/// One value returned by `varve_get_pinned`, held without a further copy.
/// Read it with `varve_pinned_value`, free it with `varve_pinned_destroy`.
/// Immutable: any threads.
pub struct varve_pinned_t {
    value: Vec<u8>,
}

/// Reads `key`. Found: `VARVE_OK`, `*value_out` is a `malloc`ed copy of
/// the value (followed by a NUL byte not counted in `*value_len_out`) that
/// the caller frees with `varve_free`. Absent: `VARVE_NOT_FOUND`,
/// `*value_out` NULL, no message. `options` NULL: defaults (latest state).
///
/// # Safety
/// `db` is NULL or a live database handle; `options` is NULL or a live read
/// options handle; `key` points to `key_len` readable bytes (NULL allowed
/// with length 0); `value_out` and `value_len_out` are writable; `errptr`
/// is NULL or points to a `char *` that is NULL or an earlier message
/// (freed and replaced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_get(
    db: *mut varve_db_t,
    options: *const varve_readoptions_t,
    key: *const c_char,
    key_len: usize,
    value_out: *mut *mut c_char,
    value_len_out: *mut usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the out-pointers are as the contract above says.
        let (out, out_len) = unsafe {
            (
                Out::new(value_out, "value_out")?,
                Out::new(value_len_out, "value_len_out")?,
            )
        };
        out.set(std::ptr::null_mut());
        out_len.set(0);
        // SAFETY: the other pointers are as the contract above says.
        let (handle, opts, key) = unsafe {
            (
                db_ref(db)?,
                read_options(options)?,
                args::bytes(key, key_len, "key")?,
            )
        };
        let Some(value) = handle.with(|d| Ok(d.get_opt(key, &opts)?))? else {
            return Ok(varve_status::VARVE_NOT_FOUND);
        };
        let copy = malloc_bytes(&value);
        if copy.is_null() {
            return Err(FfiError::out_of_memory(value.len() + 1));
        }
        out.set(copy);
        out_len.set(value.len());
        Ok(varve_status::VARVE_OK)
    })
}

/// Reads `key` like `varve_get`, but hands over the value buffer the
/// engine read into instead of copying it again: `*pinned_out` is a handle
/// (NULL when the key is absent, `VARVE_NOT_FOUND`) read with
/// `varve_pinned_value` and freed with `varve_pinned_destroy`.
///
/// # Safety
/// As for `varve_get`, with `pinned_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_get_pinned(
    db: *mut varve_db_t,
    options: *const varve_readoptions_t,
    key: *const c_char,
    key_len: usize,
    pinned_out: *mut *mut varve_pinned_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `pinned_out` is writable (contract above).
        let out = unsafe { Out::new(pinned_out, "pinned_out") }?;
        out.set(std::ptr::null_mut());
        // SAFETY: the other pointers are as the contract above says.
        let (handle, opts, key) = unsafe {
            (
                db_ref(db)?,
                read_options(options)?,
                args::bytes(key, key_len, "key")?,
            )
        };
        let Some(value) = handle.with(|d| Ok(d.get_opt(key, &opts)?))? else {
            return Ok(varve_status::VARVE_NOT_FOUND);
        };
        out.set(into_handle(varve_pinned_t { value }));
        Ok(varve_status::VARVE_OK)
    })
}

/// The bytes of a pinned value and their count in `*len` (if `len` is not
/// NULL). The pointer is valid until `varve_pinned_destroy`; the bytes are
/// not NUL-terminated. NULL (and 0) for a NULL handle.
///
/// # Safety
/// `pinned` is NULL or a live pinned handle; `len` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_pinned_value(
    pinned: *const varve_pinned_t,
    len: *mut usize,
) -> *const c_char {
    guard(std::ptr::null(), || {
        // SAFETY: `pinned` is NULL or a live handle (contract above).
        let value = unsafe { pinned.as_ref() }.map(|p| p.value.as_slice());
        // SAFETY: `len` is NULL or writable (contract above).
        if let Ok(out) = unsafe { Out::new(len, "len") } {
            out.set(value.map_or(0, <[u8]>::len));
        }
        value.map_or(std::ptr::null(), |v| v.as_ptr().cast())
    })
}

/// Frees a pinned value. NULL is a no-op.
///
/// # Safety
/// `pinned` is NULL or a live pinned handle no other thread is using; it
/// (and the pointer `varve_pinned_value` returned) is invalid afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_pinned_destroy(pinned: *mut varve_pinned_t) {
    // SAFETY: `pinned` is NULL or a live handle nobody else uses.
    guard((), || drop(unsafe { from_handle(pinned) }));
}

/// Looks up `n` keys as of one sequence number (the snapshot of `options`,
/// or now). For each key `i`, `statuses[i]` is `VARVE_OK` (and
/// `values[i]` a `malloc`ed copy freed with `varve_free`, NUL-terminated,
/// `value_lens[i]` its length), `VARVE_NOT_FOUND` (`values[i]` NULL), or an
/// error of that key alone (`values[i]` NULL; its message in `errs[i]` when
/// `errs` is not NULL, else dropped). `errs[i]` is written for every key
/// (NULL unless an error), never freed first. With async IO in `options`
/// the table lookups run concurrently through io_uring.
///
/// Returns `VARVE_OK` when every key has its result; an error (closed
/// handle, NULL arrays, out of memory, panic) means no output was written
/// except `statuses`, which then all hold that error.
///
/// # Safety
/// `db` is NULL or a live database handle; `options` is NULL or a live read
/// options handle; `keys` and `key_lens` hold `n` entries, `keys[i]`
/// pointing to `key_lens[i]` readable bytes; `values`, `value_lens` and
/// `statuses` are writable arrays of `n` entries; `errs` is NULL or one
/// too; `errptr` as for `varve_get`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_multi_get(
    db: *mut varve_db_t,
    options: *const varve_readoptions_t,
    n: usize,
    keys: *const *const c_char,
    key_lens: *const usize,
    values: *mut *mut c_char,
    value_lens: *mut usize,
    statuses: *mut varve_status,
    errs: *mut *mut c_char,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    // SAFETY: the pointers are as the contract above says; the arrays are
    // used only within this call.
    let arrays = unsafe {
        (|| {
            Ok::<_, FfiError>((
                args::array(keys, n, "keys")?,
                args::array(key_lens, n, "key_lens")?,
                args::out_array(values, n, "values")?,
                args::out_array(value_lens, n, "value_lens")?,
                match errs.is_null() {
                    true => None,
                    false => Some(args::out_array(errs, n, "errs")?),
                },
            ))
        })()
    };
    // SAFETY: `statuses` is NULL or a writable array of `n` (contract).
    let mut status_out = unsafe { args::out_array(statuses, n, "statuses") };
    let status = call(errptr, || {
        let (keys, key_lens, values, value_lens, mut errs) = arrays?;
        let statuses = match &mut status_out {
            Ok(s) => s,
            Err(e) => return Err(FfiError::invalid(e.message.clone())),
        };
        let keys = keys
            .iter()
            .zip(key_lens)
            .enumerate()
            .map(|(i, (&k, &len))| {
                // SAFETY: `keys[i]` points to `key_lens[i]` readable bytes
                // (contract above).
                unsafe { args::bytes(k, len, &format!("keys[{i}]")) }
            })
            .collect::<Result<Vec<&[u8]>, FfiError>>()?;
        // SAFETY: `db` and `options` are as the contract above says.
        let (handle, opts) = unsafe { (db_ref(db)?, read_options(options)?) };
        let results = handle.with(|d| Ok(d.multi_get(&opts, &keys)))?;
        // Copy every value first, so that running out of memory leaves no
        // half-written output.
        let mut copies = Vec::with_capacity(n);
        for r in &results {
            let copy = match r {
                Ok(Some(v)) => {
                    let c = malloc_bytes(v);
                    if c.is_null() {
                        for c in copies {
                            // SAFETY: each was malloc'ed above and not
                            // handed out.
                            unsafe { libc::free(c) };
                        }
                        return Err(FfiError::out_of_memory(v.len() + 1));
                    }
                    c
                }
                _ => std::ptr::null_mut(),
            };
            copies.push(copy.cast::<libc::c_void>());
        }
        for (i, (r, copy)) in results.iter().zip(copies).enumerate() {
            values[i].write(copy.cast());
            let (status, len, message) = match r {
                Ok(Some(v)) => (varve_status::VARVE_OK, v.len(), None),
                Ok(None) => (varve_status::VARVE_NOT_FOUND, 0, None),
                Err(e) => (status_of(e), 0, Some(e.to_string())),
            };
            value_lens[i].write(len);
            statuses[i].write(status);
            if let Some(errs) = &mut errs {
                errs[i].write(message.map_or(std::ptr::null_mut(), |m| malloc_string(&m)));
            }
        }
        Ok(varve_status::VARVE_OK)
    });
    if status != varve_status::VARVE_OK
        && let Ok(out) = status_out
    {
        for s in out {
            s.write(status);
        }
    }
    status
}
