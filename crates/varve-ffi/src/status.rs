//! Status codes and the panic boundary.
//!
//! Owns [`varve_status`] (the C enum every fallible call returns), the
//! mapping from [`varve::Error`] to it, and the two wrappers every
//! `extern "C"` body runs inside: [`call`] (fallible calls: status plus a
//! message in `*errptr`) and [`guard`] (infallible accessors: a default
//! value). Both run their closure under [`std::panic::catch_unwind`], so no
//! panic ever unwinds into C: it becomes [`varve_status::VARVE_PANIC`]
//! with the panic's message.
//!
//! Invariants: a non-OK status other than `VARVE_NOT_FOUND` for a missing
//! key always comes with a message when the caller passed an `errptr`; a
//! message is a NUL-terminated `malloc` buffer (see `alloc`).
//! Thread-safety: stateless; any thread.

use std::any::Any;
use std::ffi::{c_char, c_int};
use std::panic::{self, AssertUnwindSafe};

use crate::alloc;

/// Outcome of a call. `VARVE_OK` (0) is success; every other value is a
/// failure whose message, if the call takes an `errptr`, is in `*errptr`.
///
/// `VARVE_NOT_FOUND` returned by `varve_get`, `varve_get_pinned` (and per
/// key by `varve_multi_get`) for a key that is absent is not an error: no
/// message is written then.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum varve_status {
    /// Success.
    VARVE_OK = 0,
    /// The key is absent (get), or the database does not exist and
    /// `create_if_missing` is off (open).
    VARVE_NOT_FOUND = 1,
    /// Data on disk failed a checksum or does not parse; the message names
    /// the file and the offset.
    VARVE_CORRUPTION = 2,
    /// A file was written by a newer format version than this build reads.
    VARVE_NOT_SUPPORTED = 3,
    /// A bad argument: an option out of range, a NULL pointer where data
    /// is required, a key too long, ...
    VARVE_INVALID_ARGUMENT = 4,
    /// An operating-system IO error; the message names the file.
    VARVE_IO_ERROR = 5,
    /// The database directory is locked by another opener (this process or
    /// another one); the message names the lock file.
    VARVE_BUSY = 6,
    /// The database exists and `error_if_exists` is on.
    VARVE_ALREADY_EXISTS = 7,
    /// An IO error that says the disk (or quota) is full. Once space is
    /// freed, `varve_resume` brings writes back.
    VARVE_NO_SPACE = 8,
    /// An earlier write failure poisoned the database: writes are refused,
    /// reads go on. The message says whether `varve_resume` can help or
    /// only a reopen.
    VARVE_POISONED = 9,
    /// A write, flush or compaction on a database opened read-only.
    VARVE_READ_ONLY = 10,
    /// The database handle is NULL, or was closed with `varve_shutdown`.
    VARVE_CLOSED = 11,
    /// The library panicked (a bug in varve); the message is the panic's.
    /// The call had no effect that can be relied on, but the process and
    /// the other handles are intact.
    VARVE_PANIC = 12,
    /// Memory for a result could not be allocated.
    VARVE_OUT_OF_MEMORY = 13,
    /// An error this version of the C API does not know how to classify.
    VARVE_UNKNOWN = 14,
}

/// A failed call: its status and message.
#[derive(Debug, Clone)]
pub(crate) struct FfiError {
    pub(crate) status: varve_status,
    pub(crate) message: String,
}

/// What a call body returns: a status for success (`VARVE_OK`, or
/// `VARVE_NOT_FOUND` for a missing key) or an error with a message.
pub(crate) type FfiResult<T> = Result<T, FfiError>;

impl FfiError {
    pub(crate) fn new(status: varve_status, message: impl Into<String>) -> Self {
        FfiError {
            status,
            message: message.into(),
        }
    }

    /// `VARVE_INVALID_ARGUMENT` with `message`.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        FfiError::new(varve_status::VARVE_INVALID_ARGUMENT, message)
    }

    /// `VARVE_OUT_OF_MEMORY` for a buffer of `bytes`.
    pub(crate) fn out_of_memory(bytes: usize) -> Self {
        FfiError::new(
            varve_status::VARVE_OUT_OF_MEMORY,
            format!("out of memory: could not allocate {bytes} bytes"),
        )
    }

    fn panic(payload: &(dyn Any + Send)) -> Self {
        FfiError::new(
            varve_status::VARVE_PANIC,
            format!("panic inside varve: {}", panic_message(payload)),
        )
    }
}

impl From<varve::Error> for FfiError {
    fn from(e: varve::Error) -> Self {
        FfiError::new(status_of(&e), e.to_string())
    }
}

/// The status code of a varve error.
pub(crate) fn status_of(e: &varve::Error) -> varve_status {
    use varve::Error as E;
    use varve_status as S;
    match e {
        E::Io { .. } if e.is_no_space() => S::VARVE_NO_SPACE,
        E::Io { .. } => S::VARVE_IO_ERROR,
        E::Corruption { .. } => S::VARVE_CORRUPTION,
        E::UnsupportedVersion { .. } => S::VARVE_NOT_SUPPORTED,
        E::InvalidArgument(_) => S::VARVE_INVALID_ARGUMENT,
        E::Locked { .. } => S::VARVE_BUSY,
        E::NotFound(_) => S::VARVE_NOT_FOUND,
        E::AlreadyExists(_) => S::VARVE_ALREADY_EXISTS,
        E::Poisoned(_) => S::VARVE_POISONED,
        E::Closed => S::VARVE_CLOSED,
        E::ReadOnly(_) => S::VARVE_READ_ONLY,
        _ => S::VARVE_UNKNOWN,
    }
}

/// The text of a panic payload (`&str` or `String`; anything else is
/// described as such).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

/// Where a fallible call stores its error message: the caller's `errptr`.
pub(crate) struct ErrPtr(*mut *mut c_char);

impl ErrPtr {
    /// Wraps the `errptr` argument of a call.
    ///
    /// # Safety
    /// `errptr` is NULL or points to a writable `char *` that is NULL or
    /// holds a message from an earlier call (it is freed and replaced), for
    /// the duration of the call.
    pub(crate) unsafe fn new(errptr: *mut *mut c_char) -> ErrPtr {
        ErrPtr(errptr)
    }

    /// Stores a copy of `message` (freeing what was there). Nothing happens
    /// when the pointer is NULL or memory runs out.
    pub(crate) fn set(&self, message: &str) {
        if self.0.is_null() {
            return;
        }
        let copy = alloc::malloc_string(message);
        // SAFETY: the pointer is non-null and points to a writable `char *`
        // that is NULL or a malloc'ed message (the contract of `new`);
        // freeing NULL is a no-op.
        unsafe {
            libc::free((*self.0).cast());
            *self.0 = copy;
        }
    }
}

/// Runs the body of a fallible call: its status on success, otherwise the
/// error's (or `VARVE_PANIC` if it panicked) with the message stored in
/// `errptr`.
pub(crate) fn call(errptr: ErrPtr, body: impl FnOnce() -> FfiResult<varve_status>) -> varve_status {
    let error = match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => return status,
        Ok(Err(e)) => e,
        Err(payload) => FfiError::panic(payload.as_ref()),
    };
    errptr.set(&error.message);
    error.status
}

/// Runs the body of an infallible call; `default` if it panicked.
pub(crate) fn guard<T>(default: T, body: impl FnOnce() -> T) -> T {
    panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or(default)
}

/// Runs `body`, turning a panic into its message.
pub(crate) fn catch<T>(body: impl FnOnce() -> T) -> Result<T, String> {
    panic::catch_unwind(AssertUnwindSafe(body)).map_err(|p| panic_message(p.as_ref()))
}

/// A static, NUL-terminated name for a status code ("VARVE_OK", ...), or
/// "VARVE_UNKNOWN_STATUS" for a value that is none. Never NULL; never free it.
#[unsafe(no_mangle)]
pub extern "C" fn varve_status_name(status: c_int) -> *const c_char {
    guard(c"VARVE_UNKNOWN_STATUS".as_ptr(), || {
        let name = match status {
            0 => c"VARVE_OK",
            1 => c"VARVE_NOT_FOUND",
            2 => c"VARVE_CORRUPTION",
            3 => c"VARVE_NOT_SUPPORTED",
            4 => c"VARVE_INVALID_ARGUMENT",
            5 => c"VARVE_IO_ERROR",
            6 => c"VARVE_BUSY",
            7 => c"VARVE_ALREADY_EXISTS",
            8 => c"VARVE_NO_SPACE",
            9 => c"VARVE_POISONED",
            10 => c"VARVE_READ_ONLY",
            11 => c"VARVE_CLOSED",
            12 => c"VARVE_PANIC",
            13 => c"VARVE_OUT_OF_MEMORY",
            14 => c"VARVE_UNKNOWN",
            _ => c"VARVE_UNKNOWN_STATUS",
        };
        name.as_ptr()
    })
}

/// Test hook: panics inside the library, to prove that a panic comes back
/// as `VARVE_PANIC` with its message in `*errptr` instead of aborting the
/// process. Always returns `VARVE_PANIC`. (The panic's message is also
/// printed to stderr by Rust's default panic hook.)
///
/// # Safety
/// `errptr` is NULL or points to a `char *` that is NULL or a message from
/// an earlier call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_test_panic(errptr: *mut *mut c_char) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (this function's
    // contract).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        panic!("varve_test_panic: a deliberate panic inside the library")
    })
}

/// Test helper: the message a call stored in `*slot`, freed, with `*slot`
/// reset to NULL; `None` when there is none.
#[cfg(test)]
pub(crate) fn take_message(slot: &mut *mut c_char) -> Option<String> {
    if slot.is_null() {
        return None;
    }
    // SAFETY: a non-NULL `*slot` is a NUL-terminated message `ErrPtr::set`
    // malloc'ed; it is read, then freed once and forgotten.
    let text = unsafe { std::ffi::CStr::from_ptr(*slot) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: as above.
    unsafe { libc::free((*slot).cast()) };
    *slot = std::ptr::null_mut();
    Some(text)
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn every_error_variant_has_its_status() {
        use varve::Error as E;
        use varve_status as S;
        let p = || PathBuf::from("/db/000001.sst");
        let io = |code| E::io(p(), std::io::Error::from_raw_os_error(code));
        let cases = [
            (io(libc::EIO), S::VARVE_IO_ERROR),
            (io(libc::ENOSPC), S::VARVE_NO_SPACE),
            (E::corruption(p(), 7, "bad"), S::VARVE_CORRUPTION),
            (
                E::UnsupportedVersion {
                    file: p(),
                    found: 9,
                    supported: 1,
                },
                S::VARVE_NOT_SUPPORTED,
            ),
            (E::InvalidArgument("x".into()), S::VARVE_INVALID_ARGUMENT),
            (
                E::Locked {
                    dir: p(),
                    lock_file: p(),
                },
                S::VARVE_BUSY,
            ),
            (E::NotFound(p()), S::VARVE_NOT_FOUND),
            (E::AlreadyExists(p()), S::VARVE_ALREADY_EXISTS),
            (E::Poisoned("x".into()), S::VARVE_POISONED),
            (E::Closed, S::VARVE_CLOSED),
            (E::ReadOnly(p()), S::VARVE_READ_ONLY),
        ];
        for (error, status) in cases {
            let f = FfiError::from(error);
            assert_eq!(f.status, status, "{}", f.message);
        }
        let f = FfiError::from(E::corruption(p(), 7, "bad"));
        assert!(f.message.contains("/db/000001.sst") && f.message.contains("offset 7"));
    }

    #[test]
    fn status_names_match_the_constants() {
        for code in 0..=14 {
            // SAFETY: `varve_status_name` returns a static C string.
            let name = unsafe { CStr::from_ptr(varve_status_name(code)) };
            let name = name.to_str().expect("ASCII");
            assert!(name.starts_with("VARVE_") && name != "VARVE_UNKNOWN_STATUS");
        }
        assert_eq!(format!("{:?}", varve_status::VARVE_BUSY), "VARVE_BUSY");
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(varve_status_name(15)) };
        assert_eq!(unknown.to_str().expect("ASCII"), "VARVE_UNKNOWN_STATUS");
    }

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let mut message: *mut c_char = std::ptr::null_mut();
        // SAFETY: `message` is a writable NULL `char *`.
        let errptr = unsafe { ErrPtr::new(&mut message) };
        let status = call(errptr, || panic!("boom"));
        assert_eq!(status, varve_status::VARVE_PANIC);
        // SAFETY: `call` stored a NUL-terminated malloc'ed message.
        let text = unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned();
        assert!(text.contains("boom"), "{text}");
        // SAFETY: the message came from malloc and is freed once.
        unsafe { libc::free(message.cast()) };
        assert_eq!(guard(5, || panic!("quiet")), 5);
    }
}
