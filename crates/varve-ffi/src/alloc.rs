//! The `malloc` boundary: every buffer handed to C that C frees.
//!
//! Owns the copies of values (`varve_get`, `varve_multi_get`), error
//! messages and the stats text. All are allocated with the C library's
//! `malloc`, so `varve_free` (which is `free`) releases them; each is
//! followed by a NUL byte not counted in its length, so text can be
//! printed as is.
//!
//! Thread-safety: stateless; any thread (malloc is thread-safe).

use std::ffi::{c_char, c_void};

/// A `malloc`ed copy of `bytes` followed by a NUL byte, or NULL if memory
/// runs out.
pub(crate) fn malloc_bytes(bytes: &[u8]) -> *mut c_char {
    let Some(size) = bytes.len().checked_add(1) else {
        return std::ptr::null_mut();
    };
    // SAFETY: malloc has no preconditions; the result is checked for NULL.
    let p: *mut u8 = unsafe { libc::malloc(size) }.cast();
    if p.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `p` is a fresh allocation of `size = len + 1` bytes, which
    // cannot overlap `bytes`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        *p.add(bytes.len()) = 0;
    }
    p.cast()
}

/// A `malloc`ed NUL-terminated copy of `text` (interior NUL bytes become
/// `?`), or NULL if memory runs out.
pub(crate) fn malloc_string(text: &str) -> *mut c_char {
    if text.as_bytes().contains(&0) {
        malloc_bytes(text.replace('\0', "?").as_bytes())
    } else {
        malloc_bytes(text.as_bytes())
    }
}

/// Frees a buffer varve returned to the caller: a value from `varve_get`
/// or `varve_multi_get`, an error message from an `errptr`, the text of
/// `varve_stats`. NULL is a no-op. The buffers come from `malloc`, so
/// `free` works as well; this is the portable spelling.
///
/// Not for handles: each handle type has its own destroy function.
///
/// # Safety
/// `ptr` is NULL or a buffer varve returned that was not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_free(ptr: *mut c_void) {
    // SAFETY: `ptr` is NULL or came from `malloc` in this module and is
    // freed once (caller's contract); `free` does not unwind.
    unsafe { libc::free(ptr) }
}
