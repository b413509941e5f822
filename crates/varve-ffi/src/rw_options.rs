//! `varve_readoptions_t` and `varve_writeoptions_t`: per-call options.
//!
//! Own a [`varve::ReadOptions`] (snapshot reference, bound copies) and a
//! [`varve::WriteOptions`]. Bounds are copied in, so the caller's buffers
//! need not outlive the setter; the snapshot is a reference of its own.
//! Calls that take them also accept NULL for the defaults.
//!
//! Every setter returns a `varve_status` (the header's rule): a NULL
//! handle, or an argument invalid on its own (a bound that is NULL with a
//! non-zero length), is `VARVE_INVALID_ARGUMENT` at once, naming the
//! option, with the option left unchanged. What depends on several
//! options (`sync` with `disable_wal`) is checked by the call that uses
//! them.
//!
//! Thread-safety: plain data. Set from one thread at a time; once set, any
//! number of threads may pass the same options to calls concurrently.

use std::borrow::Cow;
use std::ffi::c_char;

use varve::{ReadOptions, WriteOptions};

use crate::args::{self, from_handle, into_handle};
use crate::snapshot::varve_snapshot_t;
use crate::status::{FfiResult, guard, varve_status};

/// Options for reads, `varve_multi_get`, iterators and scans (snapshot,
/// iterator bounds, caching, async IO, read-ahead). Create with
/// `varve_readoptions_create`, free with `varve_readoptions_destroy`.
/// One thread at a time while being set; shared read-only use from any
/// number of threads.
pub struct varve_readoptions_t {
    pub(crate) options: ReadOptions,
}

/// Options for writes (sync, WAL). Create with
/// `varve_writeoptions_create`, free with `varve_writeoptions_destroy`.
/// One thread at a time while being set; shared read-only use from any
/// number of threads.
pub struct varve_writeoptions_t {
    pub(crate) options: WriteOptions,
}

/// The read options behind `ptr`, or the defaults for NULL.
///
/// # Safety
/// `ptr` is NULL or a live read options handle not being set concurrently.
pub(crate) unsafe fn read_options<'a>(
    ptr: *const varve_readoptions_t,
) -> FfiResult<Cow<'a, ReadOptions>> {
    if ptr.is_null() {
        return Ok(Cow::Owned(ReadOptions::default()));
    }
    // SAFETY: `ptr` is a live handle (caller's contract).
    let handle = unsafe { args::handle(ptr, "read options") }?;
    Ok(Cow::Borrowed(&handle.options))
}

/// The write options behind `ptr`, or the defaults for NULL.
///
/// # Safety
/// `ptr` is NULL or a live write options handle not being set concurrently.
pub(crate) unsafe fn write_options(ptr: *const varve_writeoptions_t) -> FfiResult<WriteOptions> {
    if ptr.is_null() {
        return Ok(WriteOptions::default());
    }
    // SAFETY: `ptr` is a live handle (caller's contract).
    let handle = unsafe { args::handle(ptr, "write options") }?;
    Ok(handle.options)
}

/// Sets read options: [`args::update`] with `f`, which takes every value.
///
/// # Safety
/// As for [`args::update`].
unsafe fn set_read(
    ro: *mut varve_readoptions_t,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&mut ReadOptions),
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe {
        args::update(ro, "read options", errptr, |h| {
            f(&mut h.options);
            Ok(())
        })
    }
}

/// Sets write options: [`args::update`] with `f`, which takes every value.
///
/// # Safety
/// As for [`args::update`].
unsafe fn set_write(
    wo: *mut varve_writeoptions_t,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&mut WriteOptions),
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe {
        args::update(wo, "write options", errptr, |h| {
            f(&mut h.options);
            Ok(())
        })
    }
}

/// Sets the iterator bound `field` (named `name` in messages) of `ro` to
/// a copy of `key`, or removes it for NULL with length 0; NULL with a
/// non-zero length is `VARVE_INVALID_ARGUMENT` and leaves it as it was.
///
/// # Safety
/// As for [`args::update`]; `key` is NULL or points to `key_len` readable
/// bytes.
unsafe fn set_bound(
    ro: *mut varve_readoptions_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
    name: &str,
    field: fn(&mut ReadOptions) -> &mut Option<Vec<u8>>,
) -> varve_status {
    let set = |h: &mut varve_readoptions_t| {
        // SAFETY: `key` is NULL or `key_len` readable bytes (caller's
        // contract), copied here.
        let bound = unsafe { args::bound(key, key_len, name) }?;
        *field(&mut h.options) = bound.map(<[u8]>::to_vec);
        Ok(())
    };
    // SAFETY: forwarded contract.
    unsafe { args::update(ro, "read options", errptr, set) }
}

/// New read options with the defaults (latest state, no bounds, fill the
/// cache, no async IO, 2 MiB read-ahead). Free with
/// `varve_readoptions_destroy`. NULL only if the library panicked.
#[unsafe(no_mangle)]
pub extern "C" fn varve_readoptions_create() -> *mut varve_readoptions_t {
    guard(std::ptr::null_mut(), || {
        into_handle(varve_readoptions_t {
            options: ReadOptions::default(),
        })
    })
}

/// Frees read options (and their snapshot reference). NULL is a no-op.
///
/// # Safety
/// `ro` is NULL or a live handle no other thread is using; it is invalid
/// afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_destroy(ro: *mut varve_readoptions_t) {
    // SAFETY: `ro` is NULL or a live handle nobody else uses.
    guard((), || drop(unsafe { from_handle(ro) }));
}

/// Read as of `snapshot` (NULL: the latest state). The options keep their
/// own reference: the snapshot handle may be released before them.
///
/// Every `varve_readoptions_set_*` returns `VARVE_OK`, or
/// `VARVE_INVALID_ARGUMENT` with a message in `*errptr` for a NULL handle
/// or an argument invalid on its own (a bound that is NULL with a non-zero
/// length), leaving the option unchanged.
///
/// # Safety
/// `ro` is NULL or a live handle used by this thread only; `snapshot` is
/// NULL or a live snapshot handle; `errptr` is NULL or points to a
/// `char *` that is NULL or an earlier message (freed and replaced). The
/// same holds for every `varve_readoptions_set_*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_snapshot(
    ro: *mut varve_readoptions_t,
    snapshot: *const varve_snapshot_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    let set = |o: &mut ReadOptions| {
        // SAFETY: `snapshot` is NULL or a live handle (contract above).
        o.snapshot = unsafe { snapshot.as_ref() }.map(|s| s.snapshot.clone());
    };
    // SAFETY: forwarded contract for `ro` and `errptr`.
    unsafe { set_read(ro, errptr, set) }
}

/// Iterators (and scans) start at or after this key, inclusive. The key is
/// copied; NULL with length 0 removes the bound, NULL with another length
/// is `VARVE_INVALID_ARGUMENT` (the bound stays as it was).
///
/// # Safety
/// As for `varve_readoptions_set_snapshot`; `key` is NULL or points to
/// `key_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_iterate_lower_bound(
    ro: *mut varve_readoptions_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe {
        set_bound(ro, key, key_len, errptr, "iterate_lower_bound", |o| {
            &mut o.iterate_lower_bound
        })
    }
}

/// Iterators (and scans) stop before this key, exclusive. The key is
/// copied; NULL with length 0 removes the bound, NULL with another length
/// is `VARVE_INVALID_ARGUMENT` (the bound stays as it was).
///
/// # Safety
/// As for `varve_readoptions_set_iterate_lower_bound`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_iterate_upper_bound(
    ro: *mut varve_readoptions_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe {
        set_bound(ro, key, key_len, errptr, "iterate_upper_bound", |o| {
            &mut o.iterate_upper_bound
        })
    }
}

/// Insert the blocks iterators and scans read into the block cache.
/// Default true; a one-off large scan may pass false.
///
/// # Safety
/// As for `varve_readoptions_set_snapshot`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_fill_cache(
    ro: *mut varve_readoptions_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, errptr, |o| o.fill_cache = v) }
}

/// `varve_multi_get` looks keys up in the tables concurrently through
/// io_uring (sequentially, with the same results, where io_uring is not
/// available). Default false.
///
/// # Safety
/// As for `varve_readoptions_set_snapshot`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_async_io(
    ro: *mut varve_readoptions_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, errptr, |o| o.async_io = v) }
}

/// With async IO: most lookups in flight at once. Default 32; 0 counts
/// as 1.
///
/// # Safety
/// As for `varve_readoptions_set_snapshot`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_async_queue_depth(
    ro: *mut varve_readoptions_t,
    depth: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, errptr, |o| o.async_queue_depth = depth) }
}

/// Largest read-ahead chunk of an iterator in bytes; 0 turns read-ahead
/// off. Default 2 MiB.
///
/// # Safety
/// As for `varve_readoptions_set_snapshot`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_readahead_size(
    ro: *mut varve_readoptions_t,
    bytes: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, errptr, |o| o.readahead_size = bytes) }
}

/// Iterators that start at the first key without bounds and walk forward
/// share one merge with the other iterators doing the same over the same
/// state at the same time (`docs/shared-passes.md`); an iterator that
/// seeks, steps back or falls behind goes on alone with the same results.
/// Default true; false gives every iterator its own merge.
///
/// # Safety
/// As for `varve_readoptions_set_snapshot`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_shared_passes(
    ro: *mut varve_readoptions_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, errptr, |o| o.shared_passes = v) }
}

/// An iterator's seek positions its sources (memtables, L0 files,
/// levels) concurrently on fibers through io_uring (one after another,
/// with the same results, where io_uring is not available). Default true.
///
/// # Safety
/// As for `varve_readoptions_set_snapshot`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_concurrent_seeks(
    ro: *mut varve_readoptions_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, errptr, |o| o.concurrent_seeks = v) }
}

/// New write options with the defaults (no sync, WAL on). Free with
/// `varve_writeoptions_destroy`. NULL only if the library panicked.
#[unsafe(no_mangle)]
pub extern "C" fn varve_writeoptions_create() -> *mut varve_writeoptions_t {
    guard(std::ptr::null_mut(), || {
        into_handle(varve_writeoptions_t {
            options: WriteOptions::default(),
        })
    })
}

/// Frees write options. NULL is a no-op.
///
/// # Safety
/// `wo` is NULL or a live handle no other thread is using; it is invalid
/// afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writeoptions_destroy(wo: *mut varve_writeoptions_t) {
    // SAFETY: `wo` is NULL or a live handle nobody else uses.
    guard((), || drop(unsafe { from_handle(wo) }));
}

/// fdatasync the WAL before the write returns, so it survives power loss
/// (without it a write survives a process crash only). Default false.
///
/// Every `varve_writeoptions_set_*` returns `VARVE_OK`, or
/// `VARVE_INVALID_ARGUMENT` with a message in `*errptr` for a NULL
/// handle. `sync` with `disable_wal` is refused by the write that uses
/// them.
///
/// # Safety
/// `wo` is NULL or a live handle used by this thread only; `errptr` is
/// NULL or points to a `char *` that is NULL or an earlier message (freed
/// and replaced). The same holds for every `varve_writeoptions_set_*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writeoptions_set_sync(
    wo: *mut varve_writeoptions_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { set_write(wo, errptr, |o| o.sync = v) }
}

/// Skip the WAL: the write lives only in memory until a flush and is lost
/// on a crash. Default false. With sync also on, writes fail with
/// `VARVE_INVALID_ARGUMENT`.
///
/// # Safety
/// As for `varve_writeoptions_set_sync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writeoptions_set_disable_wal(
    wo: *mut varve_writeoptions_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { set_write(wo, errptr, |o| o.disable_wal = v) }
}

#[cfg(test)]
mod tests {
    use std::ptr;

    use super::*;
    use crate::status::take_message;

    #[test]
    fn bound_setters_refuse_null_with_a_length() {
        let ro = varve_readoptions_create();
        let mut err = ptr::null_mut();
        // SAFETY: `ro` is a live handle used by this thread; the keys are
        // readable for their lengths; `err` is NULL or a message. The same
        // holds for every call below.
        unsafe {
            assert_eq!(
                varve_readoptions_set_iterate_lower_bound(ro, c"a".as_ptr(), 1, &mut err),
                varve_status::VARVE_OK
            );
            assert_eq!(
                varve_readoptions_set_iterate_lower_bound(ro, ptr::null(), 3, &mut err),
                varve_status::VARVE_INVALID_ARGUMENT
            );
            let message = take_message(&mut err).expect("a message");
            assert!(message.contains("iterate_lower_bound"), "{message}");
            // Unchanged by the refused call; NULL with length 0 removes it.
            assert_eq!(
                (*ro).options.iterate_lower_bound.as_deref(),
                Some(&b"a"[..])
            );
            assert_eq!(
                varve_readoptions_set_iterate_lower_bound(ro, ptr::null(), 0, &mut err),
                varve_status::VARVE_OK
            );
            assert_eq!((*ro).options.iterate_lower_bound, None);
            assert_eq!(
                varve_readoptions_set_iterate_upper_bound(ro, ptr::null(), 1, &mut err),
                varve_status::VARVE_INVALID_ARGUMENT
            );
            let message = take_message(&mut err).expect("a message");
            assert!(message.contains("iterate_upper_bound"), "{message}");
            varve_readoptions_destroy(ro);

            // NULL handles.
            assert_eq!(
                varve_readoptions_set_fill_cache(ptr::null_mut(), false, &mut err),
                varve_status::VARVE_INVALID_ARGUMENT
            );
            let message = take_message(&mut err).expect("a message");
            assert!(message.contains("read options is NULL"), "{message}");
            assert_eq!(
                varve_writeoptions_set_sync(ptr::null_mut(), true, &mut err),
                varve_status::VARVE_INVALID_ARGUMENT
            );
            let message = take_message(&mut err).expect("a message");
            assert!(message.contains("write options is NULL"), "{message}");
        }
    }
}
