//! `varve_options_t`: the options a database is opened with.
//!
//! Owns a [`varve::Options`], nothing else. Every setter returns a
//! `varve_status` (the header's rule) and checks what it can judge on its
//! own: a NULL handle and a value outside its argument's domain (a
//! compression code that is no `varve_compression`) are
//! `VARVE_INVALID_ARGUMENT` at once, naming the option, with the option
//! left unchanged. Numeric ranges are checked at open, by
//! [`Options::validate`] as a whole: that keeps the limits in one place,
//! and some depend on other fields (a memory budget replaces
//! `write_buffer_size` and `cache_size` before the check).
//!
//! Invariant: a handle always holds options a setter accepted; only
//! [`Options::validate`] at open can still refuse them.
//! Thread-safety: plain data. Set it from one thread at a time; once set,
//! any number of threads may open databases with it concurrently (open
//! only reads it). Open copies it: the handle may be destroyed right after.

use std::borrow::Cow;
use std::ffi::{c_char, c_int};

use varve::{Compression, Options};

use crate::args::{self, from_handle, into_handle};
use crate::status::{FfiError, FfiResult, guard, varve_status};

/// Options for opening a database (RocksDB's `rocksdb_options_t`).
/// Create with `varve_options_create`, free with `varve_options_destroy`.
/// One thread at a time while being set; read-only use (open) from any
/// number of threads.
pub struct varve_options_t {
    options: Options,
}

/// Block compression codes for `varve_options_set_compression`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum varve_compression {
    /// Blocks stored as is (the default).
    VARVE_COMPRESSION_NONE = 0,
    /// LZ4, kept only where it saves at least 1/8 of a block.
    VARVE_COMPRESSION_LZ4 = 1,
}

/// The compression a `varve_compression` code stands for; any other
/// number is `VARVE_INVALID_ARGUMENT`.
fn compression_of(code: c_int) -> FfiResult<Compression> {
    match code {
        0 => Ok(Compression::None),
        1 => Ok(Compression::Lz4),
        other => Err(FfiError::invalid(format!(
            "compression {other} is not a varve_compression value \
             (VARVE_COMPRESSION_NONE = 0, VARVE_COMPRESSION_LZ4 = 1)"
        ))),
    }
}

/// The options behind `ptr`, or the defaults for NULL.
///
/// # Safety
/// `ptr` is NULL or a live options handle not being set concurrently.
pub(crate) unsafe fn options_or_default<'a>(
    ptr: *const varve_options_t,
) -> FfiResult<Cow<'a, Options>> {
    if ptr.is_null() {
        return Ok(Cow::Owned(Options::default()));
    }
    // SAFETY: `ptr` is a live options handle (caller's contract).
    let handle = unsafe { args::handle(ptr, "options") }?;
    Ok(Cow::Borrowed(&handle.options))
}

/// The body of a setter that checks its value: [`args::update`] on the
/// options behind `opts`.
///
/// # Safety
/// As for [`args::update`].
unsafe fn try_set(
    opts: *mut varve_options_t,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&mut Options) -> FfiResult<()>,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { args::update(opts, "options", errptr, |h| f(&mut h.options)) }
}

/// The body of a setter whose every value is in its domain.
///
/// # Safety
/// As for [`args::update`].
unsafe fn set(
    opts: *mut varve_options_t,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&mut Options),
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe {
        try_set(opts, errptr, |o| {
            f(o);
            Ok(())
        })
    }
}

/// New options with varve's defaults (`create_if_missing` on, 64 MiB
/// memtables and block cache, blob files for values of 4 KiB and more, no
/// compression, ...). Free with `varve_options_destroy`. NULL only if the
/// library panicked.
#[unsafe(no_mangle)]
pub extern "C" fn varve_options_create() -> *mut varve_options_t {
    guard(std::ptr::null_mut(), || {
        into_handle(varve_options_t {
            options: Options::default(),
        })
    })
}

/// Frees options made by `varve_options_create`. NULL is a no-op.
///
/// # Safety
/// `opts` is NULL or a live options handle no other thread is using; it is
/// invalid afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_destroy(opts: *mut varve_options_t) {
    // SAFETY: `opts` is NULL or a live handle from `varve_options_create`
    // that nobody else uses (this function's contract).
    guard((), || drop(unsafe { from_handle(opts) }));
}

/// Create the database if the directory holds none. Default true.
///
/// Every `varve_options_set_*` returns `VARVE_OK`, or
/// `VARVE_INVALID_ARGUMENT` with a message in `*errptr` for a NULL handle
/// or a value outside the argument's domain (a compression code that is
/// no `varve_compression`), leaving the option unchanged. Numeric ranges
/// (marked "checked at open") are checked by `varve_open` and
/// `varve_open_read_only` over all the options together, since some
/// depend on others: a memory budget replaces `write_buffer_size` and
/// `cache_size`.
///
/// # Safety
/// `opts` is NULL or a live options handle used by this thread only;
/// `errptr` is NULL or points to a `char *` that is NULL or an earlier
/// message (freed and replaced). The same holds for every
/// `varve_options_set_*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_create_if_missing(
    opts: *mut varve_options_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.create_if_missing = v) }
}

/// Fail the open with `VARVE_ALREADY_EXISTS` if a database exists.
/// Default false.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_error_if_exists(
    opts: *mut varve_options_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.error_if_exists = v) }
}

/// Bytes of one memtable (64 KiB ..= 2 GiB, checked at open). Default
/// 64 MiB. Replaced by the plan of `varve_options_set_memory_budget`.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_write_buffer_size(
    opts: *mut varve_options_t,
    bytes: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.write_buffer_size = bytes) }
}

/// Bytes of the block cache; 0 disables it. Default 64 MiB. Replaced by
/// the plan of `varve_options_set_memory_budget`.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_cache_size(
    opts: *mut varve_options_t,
    bytes: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.cache_size = bytes) }
}

/// One memory budget for the whole database (at least 16 MiB, checked at
/// open): memtables, block cache, pinned tables and scan buffers are sized
/// from it, replacing `write_buffer_size` and `cache_size` (see
/// docs/memory.md). 0 (the default) means no budget: each part is sized
/// by its own option.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_memory_budget(
    opts: *mut varve_options_t,
    bytes: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe {
        set(opts, errptr, |o| {
            o.memory_budget = (bytes > 0).then_some(bytes)
        })
    }
}

/// Values of at least `bytes` bytes are written to blob files and the
/// tables keep a pointer to them. Default 4096. **0 turns blob files off**
/// (every value stays inline in the tables); to send every non-empty value
/// to blob files pass 1.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_min_blob_size(
    opts: *mut varve_options_t,
    bytes: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe {
        set(opts, errptr, |o| {
            o.min_blob_size = (bytes > 0).then_some(bytes)
        })
    }
}

/// A blob write lane seals its file at this size (1 MiB ..= 1 TiB,
/// checked at open). Default 256 MiB.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_blob_file_size(
    opts: *mut varve_options_t,
    bytes: u64,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.blob_file_size = bytes) }
}

/// Write lanes (concurrent blob files) for blob values (1 ..= 256,
/// checked at open). Default 4.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_blob_write_lanes(
    opts: *mut varve_options_t,
    lanes: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.blob_write_lanes = lanes) }
}

/// Non-zero: blob write lanes split the key space (lane `i` takes the
/// keys whose first 8 bytes fall in the `i`-th equal slice) instead of
/// serving writer threads, so the values of a key range sit together and
/// key-ordered scans read each lane's files once. Suits keys spread evenly
/// over their first 8 bytes (hashes, random ids). Default 0.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_blob_lanes_by_key(
    opts: *mut varve_options_t,
    on: c_int,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.blob_lanes_by_key = on != 0) }
}

/// Bloom filter bits per key; 0: no filter. Default 10 (~1% false
/// positives).
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_bloom_bits_per_key(
    opts: *mut varve_options_t,
    bits: u32,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.bloom_bits_per_key = bits) }
}

/// Block compression: a `varve_compression` value. Default
/// `VARVE_COMPRESSION_NONE`. Any other number is `VARVE_INVALID_ARGUMENT`
/// (the compression set before stays).
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_compression(
    opts: *mut varve_options_t,
    compression: c_int,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe {
        try_set(opts, errptr, |o| {
            o.compression = compression_of(compression)?;
            Ok(())
        })
    }
}

/// Most table files kept open at once (at least 16, checked at open).
/// Default 1000.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_max_open_files(
    opts: *mut varve_options_t,
    n: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.max_open_files = n) }
}

/// Read table data with O_DIRECT, bypassing the page cache. Default false.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_use_direct_reads(
    opts: *mut varve_options_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.use_direct_reads = v) }
}

/// Treat a bad record in a WAL that is not the last one as corruption
/// (instead of dropping the rest of that log). Default true.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_paranoid_checks(
    opts: *mut varve_options_t,
    v: bool,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.paranoid_checks = v) }
}

/// Target uncompressed size of a table data block (256 B ..= 64 MiB,
/// checked at open). Default 4 KiB.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_block_size(
    opts: *mut varve_options_t,
    bytes: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, errptr, |o| o.block_size = bytes) }
}

#[cfg(test)]
mod tests {
    use std::ptr;

    use super::*;
    use crate::status::take_message;

    #[test]
    fn setters_return_a_status() {
        let opts = varve_options_create();
        let mut err = ptr::null_mut();
        // SAFETY: `opts` is a live handle used by this thread; `err` is a
        // NULL `char *`. The same holds for every call below.
        unsafe {
            assert_eq!(
                varve_options_set_compression(opts, 1, &mut err),
                varve_status::VARVE_OK
            );
            assert_eq!(
                varve_options_set_write_buffer_size(opts, 1 << 20, &mut err),
                varve_status::VARVE_OK
            );
            assert!(err.is_null());

            // Out of its domain: refused at once, naming the option, and
            // the compression set before stays.
            assert_eq!(
                varve_options_set_compression(opts, 7, &mut err),
                varve_status::VARVE_INVALID_ARGUMENT
            );
            let message = take_message(&mut err).expect("a message");
            assert!(message.contains("compression 7"), "{message}");
            assert_eq!((*opts).options.compression, Compression::Lz4);

            // A range is checked at open, not by the setter.
            assert_eq!(
                varve_options_set_block_size(opts, 1, ptr::null_mut()),
                varve_status::VARVE_OK
            );
            assert_eq!((*opts).options.block_size, 1);

            // A NULL handle.
            assert_eq!(
                varve_options_set_cache_size(ptr::null_mut(), 1, &mut err),
                varve_status::VARVE_INVALID_ARGUMENT
            );
            let message = take_message(&mut err).expect("a message");
            assert!(message.contains("options is NULL"), "{message}");
            varve_options_destroy(opts);
        }
    }
}
