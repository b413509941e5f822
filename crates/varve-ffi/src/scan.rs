//! Range calls: `varve_par_count` (count keys on several threads),
//! `varve_approximate_key_anchors` (where the bytes of a range are) and
//! `varve_split_range` (cut a range into parts of about equal bytes).
//!
//! Owns the result structs. Each is a plain C struct (`varve_anchors_t`,
//! `varve_ranges_t`) at the start of a private owner that also holds the
//! key bytes and the array it points into; the pointer handed to C is the
//! owner's, so `varve_anchors_destroy` / `varve_ranges_destroy` free it
//! all at once. Invariant: every key pointer in a result is non-NULL when
//! the key is bounded (even when empty) and stays valid until the destroy.
//!
//! Thread-safety: the calls are safe from any number of threads; a result
//! is immutable and may be read from any thread, destroyed once.

use std::ffi::c_char;

use varve::KeyRange;

use crate::args::{self, Out};
use crate::db::{db_ref, varve_db_t};
use crate::rw_options::{read_options, varve_readoptions_t};
use crate::status::{ErrPtr, FfiResult, call, guard, varve_status};

/// A range of keys `[start, end)`. A NULL `start` is unbounded below (from
/// the first key), a NULL `end` unbounded above; a non-NULL pointer with
/// length 0 is the empty key (so an empty `end` makes an empty range).
/// As input it is borrowed for the call; in a `varve_ranges_t` it points
/// into that result.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct varve_range_t {
    /// First key (inclusive), or NULL.
    pub start: *const c_char,
    /// Bytes of `start`.
    pub start_len: usize,
    /// End key (exclusive), or NULL.
    pub end: *const c_char,
    /// Bytes of `end`.
    pub end_len: usize,
}

/// One anchor: a key inside the range (not necessarily present in the
/// database) and the approximate bytes between the previous anchor (or the
/// range start) and it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct varve_anchor_t {
    /// The anchor key (not NUL-terminated).
    pub key: *const c_char,
    /// Bytes of `key`.
    pub key_len: usize,
    /// Approximate bytes in `[previous anchor or range start, key)`.
    pub bytes_before: u64,
}

/// The result of `varve_approximate_key_anchors`: `count` anchors in key
/// order, strictly inside the range. Free with `varve_anchors_destroy`.
#[repr(C)]
#[derive(Debug)]
pub struct varve_anchors_t {
    /// The anchors (NULL when `count` is 0).
    pub anchors: *const varve_anchor_t,
    /// Number of anchors.
    pub count: usize,
    /// Approximate bytes from the last anchor (or the range start) to the
    /// range end.
    pub bytes_after_last: u64,
    /// Every `bytes_before` plus `bytes_after_last`: the range's estimated
    /// bytes.
    pub total_bytes: u64,
}

/// The result of `varve_split_range`: `count` contiguous ranges in key
/// order (the first starts at the input's start, the last ends at its
/// end). Free with `varve_ranges_destroy`.
#[repr(C)]
#[derive(Debug)]
pub struct varve_ranges_t {
    /// The ranges.
    pub ranges: *const varve_range_t,
    /// Number of ranges (at least 1).
    pub count: usize,
}

/// A `varve_anchors_t` with the memory it points into.
#[repr(C)]
struct AnchorsOwner {
    /// First, so a pointer to the owner is a pointer to it.
    public: varve_anchors_t,
    _items: Vec<varve_anchor_t>,
    _keys: Vec<Vec<u8>>,
}

/// A `varve_ranges_t` with the memory it points into.
#[repr(C)]
struct RangesOwner {
    /// First, so a pointer to the owner is a pointer to it.
    public: varve_ranges_t,
    _items: Vec<varve_range_t>,
    _keys: Vec<Vec<u8>>,
}

/// Where an empty key points: valid, never read.
static EMPTY: [u8; 1] = [0];

/// A pointer to `key` that is valid even when it is empty.
fn key_ptr(key: &[u8]) -> *const c_char {
    if key.is_empty() {
        EMPTY.as_ptr().cast()
    } else {
        key.as_ptr().cast()
    }
}

/// The key range `range` describes; NULL: every key.
///
/// # Safety
/// `range` is NULL or a readable `varve_range_t` whose non-NULL keys point
/// to their lengths of readable bytes.
unsafe fn key_range(range: *const varve_range_t) -> FfiResult<KeyRange> {
    // SAFETY: `range` is NULL or readable (caller's contract).
    let Some(r) = (unsafe { range.as_ref() }) else {
        return Ok(KeyRange::all());
    };
    // SAFETY: non-NULL keys point to their lengths of bytes (caller's
    // contract).
    let (start, end) = unsafe {
        (
            args::opt_bytes(r.start, r.start_len),
            args::opt_bytes(r.end, r.end_len),
        )
    };
    Ok(KeyRange::from_bounds(
        start.map(<[u8]>::to_vec),
        end.map(<[u8]>::to_vec),
    ))
}

/// Counts the keys of `range` (intersected with the bounds of `options`)
/// visible in one snapshot (that of `options`, or one taken now), on
/// `threads` threads (0: one per CPU), the caller's included; values are
/// not read. `range` NULL: every key; `options` NULL: defaults.
///
/// # Safety
/// `db` is NULL or a live database handle; `options` is NULL or a live read
/// options handle; `range` is NULL or a readable range whose keys are
/// readable; `count_out` is writable; `errptr` is NULL or points to a
/// `char *` that is NULL or an earlier message (freed and replaced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_par_count(
    db: *mut varve_db_t,
    options: *const varve_readoptions_t,
    range: *const varve_range_t,
    threads: usize,
    count_out: *mut u64,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (out, handle, opts, range) = unsafe {
            (
                Out::cleared(count_out, "count_out", 0)?,
                db_ref(db)?,
                read_options(options)?,
                key_range(range)?,
            )
        };
        let n = handle.with(|d| Ok(d.par_count(&opts, &range, threads)?))?;
        out.set(n);
        Ok(varve_status::VARVE_OK)
    })
}

/// Anchor keys of `range` (NULL: every key): at most `max_anchors` sorted,
/// distinct keys strictly inside it, each with the approximate bytes since
/// the previous one, sampled from table indexes and memtables (no data
/// block is read). Stores the result in `*anchors_out`; free it with
/// `varve_anchors_destroy`.
///
/// # Safety
/// `db` is NULL or a live database handle; `range` as for
/// `varve_par_count`; `anchors_out` is writable; `errptr` as for
/// `varve_par_count`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_approximate_key_anchors(
    db: *mut varve_db_t,
    range: *const varve_range_t,
    max_anchors: usize,
    anchors_out: *mut *mut varve_anchors_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (out, handle, range) = unsafe {
            (
                Out::cleared(anchors_out, "anchors_out", std::ptr::null_mut())?,
                db_ref(db)?,
                key_range(range)?,
            )
        };
        let anchors = handle.with(|d| Ok(d.approximate_key_anchors(&range, max_anchors)?))?;
        let total_bytes = anchors.total_bytes();
        let keys: Vec<Vec<u8>> = anchors.anchors.iter().map(|a| a.key.clone()).collect();
        let items: Vec<varve_anchor_t> = anchors
            .anchors
            .iter()
            .zip(&keys)
            .map(|(a, k)| varve_anchor_t {
                key: key_ptr(k),
                key_len: k.len(),
                bytes_before: a.bytes_before,
            })
            .collect();
        let owner = Box::new(AnchorsOwner {
            public: varve_anchors_t {
                anchors: if items.is_empty() {
                    std::ptr::null()
                } else {
                    items.as_ptr()
                },
                count: items.len(),
                bytes_after_last: anchors.bytes_after_last,
                total_bytes,
            },
            // Moving the vectors keeps their buffers where they are.
            _items: items,
            _keys: keys,
        });
        out.set(Box::into_raw(owner).cast());
        Ok(varve_status::VARVE_OK)
    })
}

/// Frees the result of `varve_approximate_key_anchors`. NULL is a no-op.
///
/// # Safety
/// `anchors` is NULL or a pointer `varve_approximate_key_anchors` stored
/// (not a copy of the struct), not yet destroyed; it and every key in it
/// are invalid afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_anchors_destroy(anchors: *mut varve_anchors_t) {
    guard((), || {
        if !anchors.is_null() {
            // SAFETY: the pointer is the `Box<AnchorsOwner>` made above
            // (its first field, at offset 0 of a `repr(C)` struct), freed
            // once (caller's contract).
            drop(unsafe { Box::from_raw(anchors.cast::<AnchorsOwner>()) });
        }
    })
}

/// Cuts `range` (NULL: every key) into at most `parts` contiguous
/// sub-ranges of about equal bytes, at anchor keys; fewer (at least one)
/// when the range has too few anchors; `parts` 0 counts as 1. Stores the
/// result in `*ranges_out`; free it with `varve_ranges_destroy`. Each part
/// can go to `varve_par_count` or bound an iterator on its own thread.
///
/// # Safety
/// As for `varve_approximate_key_anchors`, with `ranges_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_split_range(
    db: *mut varve_db_t,
    range: *const varve_range_t,
    parts: usize,
    ranges_out: *mut *mut varve_ranges_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: the pointers are as the contract above says.
        let (out, handle, range) = unsafe {
            (
                Out::cleared(ranges_out, "ranges_out", std::ptr::null_mut())?,
                db_ref(db)?,
                key_range(range)?,
            )
        };
        let split = handle.with(|d| Ok(d.split_range(&range, parts)?))?;
        // Keys in order: start and end of each range (None: unbounded).
        let bounds: Vec<Option<Vec<u8>>> =
            split.into_iter().flat_map(|r| [r.start, r.end]).collect();
        let ptr = |b: &Option<Vec<u8>>| b.as_deref().map_or(std::ptr::null(), key_ptr);
        let len = |b: &Option<Vec<u8>>| b.as_deref().map_or(0, <[u8]>::len);
        let items: Vec<varve_range_t> = bounds
            .chunks_exact(2)
            .map(|pair| varve_range_t {
                start: ptr(&pair[0]),
                start_len: len(&pair[0]),
                end: ptr(&pair[1]),
                end_len: len(&pair[1]),
            })
            .collect();
        let keys = bounds.into_iter().flatten().collect();
        let owner = Box::new(RangesOwner {
            public: varve_ranges_t {
                ranges: items.as_ptr(),
                count: items.len(),
            },
            // Moving the vectors keeps their buffers where they are.
            _items: items,
            _keys: keys,
        });
        out.set(Box::into_raw(owner).cast());
        Ok(varve_status::VARVE_OK)
    })
}

/// Frees the result of `varve_split_range`. NULL is a no-op.
///
/// # Safety
/// `ranges` is NULL or a pointer `varve_split_range` stored (not a copy of
/// the struct), not yet destroyed; it and every key in it are invalid
/// afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_ranges_destroy(ranges: *mut varve_ranges_t) {
    guard((), || {
        if !ranges.is_null() {
            // SAFETY: the pointer is the `Box<RangesOwner>` made above (its
            // first field, at offset 0 of a `repr(C)` struct), freed once
            // (caller's contract).
            drop(unsafe { Box::from_raw(ranges.cast::<RangesOwner>()) });
        }
    })
}
