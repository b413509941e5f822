//! `varve_options_t`: the options a database is opened with.
//!
//! Owns a [`varve::Options`] plus the first invalid setting seen (a
//! compression code that is no `varve_compression`), which `varve_open`
//! reports as `VARVE_INVALID_ARGUMENT`: setters return nothing, like
//! RocksDB's, and every range check happens at open ([`Options::validate`]).
//!
//! Thread-safety: plain data. Set it from one thread at a time; once set,
//! any number of threads may open databases with it concurrently (open
//! only reads it). Open copies it: the handle may be destroyed right after.

use std::borrow::Cow;
use std::ffi::c_int;

use varve::{Compression, Options};

use crate::args::{self, from_handle, into_handle};
use crate::status::{FfiError, FfiResult, guard};

/// Options for opening a database (RocksDB's `rocksdb_options_t`).
/// Create with `varve_options_create`, free with `varve_options_destroy`.
/// One thread at a time while being set; read-only use (open) from any
/// number of threads.
pub struct varve_options_t {
    options: Options,
    /// The first setter argument that was out of its domain.
    invalid: Option<String>,
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

impl varve_options_t {
    /// The options to open with, or the invalid setting.
    pub(crate) fn checked(&self) -> FfiResult<&Options> {
        match &self.invalid {
            Some(why) => Err(FfiError::invalid(why.clone())),
            None => Ok(&self.options),
        }
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
    handle.checked().map(Cow::Borrowed)
}

/// Applies `f` to the options behind `opts` (nothing for NULL).
///
/// # Safety
/// `opts` is NULL or a live options handle used by this thread only.
unsafe fn set(opts: *mut varve_options_t, f: impl FnOnce(&mut varve_options_t)) {
    guard((), || {
        // SAFETY: `opts` is NULL or a live handle this thread alone uses
        // (caller's contract).
        if let Ok(o) = unsafe { args::handle_mut(opts, "options") } {
            f(o);
        }
    })
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
            invalid: None,
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
/// # Safety
/// `opts` is NULL (ignored) or a live options handle used by this thread
/// only. The same holds for every `varve_options_set_*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_create_if_missing(opts: *mut varve_options_t, v: bool) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.create_if_missing = v) }
}

/// Fail the open with `VARVE_ALREADY_EXISTS` if a database exists.
/// Default false.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_error_if_exists(opts: *mut varve_options_t, v: bool) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.error_if_exists = v) }
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
) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.write_buffer_size = bytes) }
}

/// Bytes of the block cache; 0 disables it. Default 64 MiB. Replaced by
/// the plan of `varve_options_set_memory_budget`.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_cache_size(opts: *mut varve_options_t, bytes: usize) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.cache_size = bytes) }
}

/// One memory budget for the whole database (at least 16 MiB): memtables,
/// block cache, pinned tables and scan buffers are sized from it, replacing
/// `write_buffer_size` and `cache_size` (see docs/memory.md). 0 (the
/// default) means no budget: each part is sized by its own option.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_memory_budget(opts: *mut varve_options_t, bytes: usize) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe {
        set(opts, |o| {
            o.options.memory_budget = (bytes > 0).then_some(bytes)
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
pub unsafe extern "C" fn varve_options_set_min_blob_size(opts: *mut varve_options_t, bytes: usize) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe {
        set(opts, |o| {
            o.options.min_blob_size = (bytes > 0).then_some(bytes)
        })
    }
}

/// A blob write lane seals its file at this size (1 MiB ..= 1 TiB,
/// checked at open). Default 256 MiB.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_blob_file_size(opts: *mut varve_options_t, bytes: u64) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.blob_file_size = bytes) }
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
) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.blob_write_lanes = lanes) }
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
) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.blob_lanes_by_key = on != 0) }
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
) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.bloom_bits_per_key = bits) }
}

/// Block compression: a `varve_compression` value. Default
/// `VARVE_COMPRESSION_NONE`. Any other number makes `varve_open` fail with
/// `VARVE_INVALID_ARGUMENT`.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_compression(
    opts: *mut varve_options_t,
    compression: c_int,
) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe {
        set(opts, |o| match compression {
            0 => o.options.compression = Compression::None,
            1 => o.options.compression = Compression::Lz4,
            other => {
                o.invalid.get_or_insert_with(|| {
                    format!(
                        "compression {other} is not a varve_compression value \
                         (VARVE_COMPRESSION_NONE = 0, VARVE_COMPRESSION_LZ4 = 1)"
                    )
                });
            }
        })
    }
}

/// Most table files kept open at once (at least 16, checked at open).
/// Default 1000.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_max_open_files(opts: *mut varve_options_t, n: usize) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.max_open_files = n) }
}

/// Read table data with O_DIRECT, bypassing the page cache. Default false.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_use_direct_reads(opts: *mut varve_options_t, v: bool) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.use_direct_reads = v) }
}

/// Treat a bad record in a WAL that is not the last one as corruption
/// (instead of dropping the rest of that log). Default true.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_paranoid_checks(opts: *mut varve_options_t, v: bool) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.paranoid_checks = v) }
}

/// Target uncompressed size of a table data block (256 B ..= 64 MiB,
/// checked at open). Default 4 KiB.
///
/// # Safety
/// As for `varve_options_set_create_if_missing`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_options_set_block_size(opts: *mut varve_options_t, bytes: usize) {
    // SAFETY: forwarded contract (see # Safety).
    unsafe { set(opts, |o| o.options.block_size = bytes) }
}
