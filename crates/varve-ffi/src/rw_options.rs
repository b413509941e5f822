//! `varve_readoptions_t` and `varve_writeoptions_t`: per-call options.
//!
//! Own a [`varve::ReadOptions`] (snapshot reference, bound copies) and a
//! [`varve::WriteOptions`]. Bounds are copied in, so the caller's buffers
//! need not outlive the setter; the snapshot is a reference of its own.
//! Calls that take them also accept NULL for the defaults.
//!
//! Thread-safety: plain data. Set from one thread at a time; once set, any
//! number of threads may pass the same options to calls concurrently.

use std::borrow::Cow;
use std::ffi::c_char;

use varve::{ReadOptions, WriteOptions};

use crate::args::{self, from_handle, into_handle};
use crate::snapshot::varve_snapshot_t;
use crate::status::{FfiResult, guard};

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

/// Applies `f` to the read options behind `ro` (nothing for NULL).
///
/// # Safety
/// `ro` is NULL or a live handle used by this thread only.
unsafe fn set_read(ro: *mut varve_readoptions_t, f: impl FnOnce(&mut ReadOptions)) {
    guard((), || {
        // SAFETY: `ro` is NULL or a live handle this thread alone uses.
        if let Ok(h) = unsafe { args::handle_mut(ro, "read options") } {
            f(&mut h.options);
        }
    })
}

/// Applies `f` to the write options behind `wo` (nothing for NULL).
///
/// # Safety
/// `wo` is NULL or a live handle used by this thread only.
unsafe fn set_write(wo: *mut varve_writeoptions_t, f: impl FnOnce(&mut WriteOptions)) {
    guard((), || {
        // SAFETY: `wo` is NULL or a live handle this thread alone uses.
        if let Ok(h) = unsafe { args::handle_mut(wo, "write options") } {
            f(&mut h.options);
        }
    })
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
/// # Safety
/// `ro` is NULL (ignored) or a live handle used by this thread only;
/// `snapshot` is NULL or a live snapshot handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_snapshot(
    ro: *mut varve_readoptions_t,
    snapshot: *const varve_snapshot_t,
) {
    let snap = guard(None, || {
        // SAFETY: `snapshot` is NULL or a live handle (contract above).
        unsafe { snapshot.as_ref() }.map(|s| s.snapshot.clone())
    });
    // SAFETY: forwarded contract for `ro`.
    unsafe { set_read(ro, |o| o.snapshot = snap) }
}

/// Iterators (and scans) start at or after this key, inclusive. The key is
/// copied; NULL removes the bound.
///
/// # Safety
/// `ro` is NULL (ignored) or a live handle used by this thread only; `key`
/// is NULL or points to `key_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_iterate_lower_bound(
    ro: *mut varve_readoptions_t,
    key: *const c_char,
    key_len: usize,
) {
    let bound = guard(None, || {
        // SAFETY: `key` is NULL or `key_len` readable bytes (contract above).
        unsafe { args::opt_bytes(key, key_len) }.map(<[u8]>::to_vec)
    });
    // SAFETY: forwarded contract for `ro`.
    unsafe { set_read(ro, |o| o.iterate_lower_bound = bound) }
}

/// Iterators (and scans) stop before this key, exclusive. The key is
/// copied; NULL removes the bound.
///
/// # Safety
/// As for `varve_readoptions_set_iterate_lower_bound`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_iterate_upper_bound(
    ro: *mut varve_readoptions_t,
    key: *const c_char,
    key_len: usize,
) {
    let bound = guard(None, || {
        // SAFETY: `key` is NULL or `key_len` readable bytes (contract above).
        unsafe { args::opt_bytes(key, key_len) }.map(<[u8]>::to_vec)
    });
    // SAFETY: forwarded contract for `ro`.
    unsafe { set_read(ro, |o| o.iterate_upper_bound = bound) }
}

/// Insert the blocks iterators and scans read into the block cache.
/// Default true; a one-off large scan may pass false.
///
/// # Safety
/// `ro` is NULL (ignored) or a live handle used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_fill_cache(ro: *mut varve_readoptions_t, v: bool) {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, |o| o.fill_cache = v) }
}

/// `varve_multi_get` looks keys up in the tables concurrently through
/// io_uring (sequentially, with the same results, where io_uring is not
/// available). Default false.
///
/// # Safety
/// `ro` is NULL (ignored) or a live handle used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_async_io(ro: *mut varve_readoptions_t, v: bool) {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, |o| o.async_io = v) }
}

/// With async IO: most lookups in flight at once. Default 32; 0 counts
/// as 1.
///
/// # Safety
/// `ro` is NULL (ignored) or a live handle used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_async_queue_depth(
    ro: *mut varve_readoptions_t,
    depth: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, |o| o.async_queue_depth = depth) }
}

/// Largest read-ahead chunk of an iterator in bytes; 0 turns read-ahead
/// off. Default 2 MiB.
///
/// # Safety
/// `ro` is NULL (ignored) or a live handle used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_readoptions_set_readahead_size(
    ro: *mut varve_readoptions_t,
    bytes: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { set_read(ro, |o| o.readahead_size = bytes) }
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
/// # Safety
/// `wo` is NULL (ignored) or a live handle used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writeoptions_set_sync(wo: *mut varve_writeoptions_t, v: bool) {
    // SAFETY: forwarded contract.
    unsafe { set_write(wo, |o| o.sync = v) }
}

/// Skip the WAL: the write lives only in memory until a flush and is lost
/// on a crash. Default false. With sync also on, writes fail with
/// `VARVE_INVALID_ARGUMENT`.
///
/// # Safety
/// `wo` is NULL (ignored) or a live handle used by this thread only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_writeoptions_set_disable_wal(
    wo: *mut varve_writeoptions_t,
    v: bool,
) {
    // SAFETY: forwarded contract.
    unsafe { set_write(wo, |o| o.disable_wal = v) }
}
