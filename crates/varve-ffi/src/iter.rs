//! `varve_iterator_t`: an ordered cursor over a database at one point in
//! time, with the bounds of its read options.
//!
//! Owns one [`varve::DbIterator`] (which pins its snapshot, memtables and
//! table files: it never sees later writes) and the error that broke it:
//! a panic caught during a move, or a bad seek argument. Every move
//! returns the iterator's status after it (`VARVE_OK` whether or not it
//! is on an entry, else the error `varve_iter_status` reports), computed
//! by one function ([`varve_iterator_t::status`]) for both.
//!
//! Invariants: a broken iterator stays invalid for good and reports the
//! error that broke it (the first one); the pointers `varve_iter_key` /
//! `varve_iter_value` return stay valid until the next call that moves or
//! destroys the iterator.
//! Thread-safety: one thread at a time (it may move between threads). It
//! may outlive its database handle; destroy it first all the same.

use std::ffi::c_char;

use varve::DbIterator;

use crate::args::{self, Out, from_handle, into_handle};
use crate::db::{db_ref, varve_db_t};
use crate::rw_options::{read_options, varve_readoptions_t};
use crate::status::{ErrPtr, FfiError, FfiResult, call, catch, guard, varve_status};

/// An iterator. Create with `varve_iter_create`, free with
/// `varve_iter_destroy`. One thread at a time.
pub struct varve_iterator_t {
    iter: DbIterator,
    /// A panic caught during a move, or a bad seek argument: the iterator
    /// stays invalid with this as its status.
    broken: Option<FfiError>,
}

impl varve_iterator_t {
    /// What `varve_iter_status` reports, and every move after moving:
    /// `VARVE_OK`, or the error that broke the iterator, or the engine
    /// iterator's own (IO, corruption).
    fn status(&self) -> FfiResult<varve_status> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        self.iter.status()?;
        Ok(varve_status::VARVE_OK)
    }

    /// True on an entry (not broken, engine iterator valid).
    fn valid(&self) -> bool {
        self.broken.is_none() && self.iter.valid()
    }

    /// Runs the move `f` unless the iterator is broken; a panic inside it
    /// breaks the iterator with `VARVE_PANIC`.
    fn apply(&mut self, f: impl FnOnce(&mut DbIterator)) {
        if self.broken.is_some() {
            return;
        }
        if let Err(message) = catch(|| f(&mut self.iter)) {
            self.broken = Some(FfiError::new(
                varve_status::VARVE_PANIC,
                format!("panic inside varve: {message}"),
            ));
        }
    }

    /// Breaks the iterator with `e`, unless it is broken already (the
    /// first error stays).
    fn break_with(&mut self, e: FfiError) {
        self.broken.get_or_insert(e);
    }
}

/// The body of every move ([`args::update`]): `f` on the iterator, then
/// its status (with the message in `errptr`). A NULL iterator is
/// `VARVE_INVALID_ARGUMENT`, as for `varve_iter_status`.
///
/// # Safety
/// `it` is NULL or a live iterator used by this thread only; `errptr` is
/// as `ErrPtr::new` requires.
unsafe fn move_iter(
    it: *mut varve_iterator_t,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&mut varve_iterator_t),
) -> varve_status {
    // SAFETY: `it` and `errptr` are as `args::update` requires (caller's
    // contract).
    unsafe {
        args::update(it, "iterator", errptr, |h| {
            f(h);
            h.status().map(drop)
        })
    }
}

/// A seek to `key`: for a bad key argument (NULL with a non-zero length)
/// the iterator is broken with that error instead.
///
/// # Safety
/// As for [`move_iter`], and `key` is NULL or points to `key_len`
/// readable bytes.
unsafe fn seek_iter(
    it: *mut varve_iterator_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
    seek: impl FnOnce(&mut DbIterator, &[u8]),
) -> varve_status {
    let seek_or_break = |h: &mut varve_iterator_t| {
        // SAFETY: `key` is NULL or `key_len` readable bytes (caller's
        // contract), read during this call only.
        match unsafe { args::bytes(key, key_len, "key") } {
            Ok(k) => h.apply(|i| seek(i, k)),
            Err(e) => h.break_with(e),
        }
    };
    // SAFETY: forwarded contract.
    unsafe { move_iter(it, errptr, seek_or_break) }
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
        unsafe { it.as_ref() }.is_some_and(varve_iterator_t::valid)
    })
}

/// Moves to the first key (at or after the lower bound).
///
/// Returns, like every move, the iterator's status after it: `VARVE_OK`
/// when it has no error, whether or not it is on an entry (see
/// `varve_iter_valid`); otherwise exactly what `varve_iter_status` reports
/// (`VARVE_IO_ERROR`, `VARVE_CORRUPTION`, ...; `VARVE_PANIC` for a panic
/// caught during a move; `VARVE_INVALID_ARGUMENT` for a bad seek key or a
/// NULL iterator) with its message in `*errptr`. An iterator with an
/// error stays invalid, and every later move returns the same error.
///
/// # Safety
/// `it` is NULL or a live iterator used by this thread only; `errptr` as
/// for `varve_iter_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_seek_to_first(
    it: *mut varve_iterator_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { move_iter(it, errptr, |h| h.apply(DbIterator::seek_to_first)) }
}

/// Moves to the last key (before the upper bound). Returns the status
/// after the move, as `varve_iter_seek_to_first` does.
///
/// # Safety
/// As for `varve_iter_seek_to_first`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_seek_to_last(
    it: *mut varve_iterator_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { move_iter(it, errptr, |h| h.apply(DbIterator::seek_to_last)) }
}

/// Moves to the first key `>= key` (clamped to the bounds). Returns the
/// status after the move, as `varve_iter_seek_to_first` does. A NULL key
/// with a non-zero length leaves the iterator invalid for good and
/// returns `VARVE_INVALID_ARGUMENT` (its status from then on).
///
/// # Safety
/// As for `varve_iter_seek_to_first`; `key` points to `key_len` readable
/// bytes (NULL allowed with length 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_seek(
    it: *mut varve_iterator_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { seek_iter(it, key, key_len, errptr, |i, k| i.seek(k)) }
}

/// Moves to the last key `<= key` (clamped to the bounds). Returns the
/// status after the move; a bad key as for `varve_iter_seek`.
///
/// # Safety
/// As for `varve_iter_seek`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_seek_for_prev(
    it: *mut varve_iterator_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { seek_iter(it, key, key_len, errptr, |i, k| i.seek_for_prev(k)) }
}

/// Moves to the next key; does nothing when not valid. Returns the status
/// after the move, as `varve_iter_seek_to_first` does: `VARVE_OK` past the
/// end too.
///
/// # Safety
/// As for `varve_iter_seek_to_first`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_next(
    it: *mut varve_iterator_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { move_iter(it, errptr, |h| h.apply(DbIterator::move_next)) }
}

/// Moves to the previous key; does nothing when not valid. Returns the
/// status after the move, as `varve_iter_next` does.
///
/// # Safety
/// As for `varve_iter_seek_to_first`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_iter_prev(
    it: *mut varve_iterator_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: forwarded contract.
    unsafe { move_iter(it, errptr, |h| h.apply(DbIterator::move_prev)) }
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
        if !h.valid() {
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
/// panic, a bad seek argument) with its message; `VARVE_INVALID_ARGUMENT`
/// for NULL. Every move returns the same after moving. An iterator with an
/// error stays invalid: create a new one.
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
        unsafe { args::handle(it, "iterator") }?.status()
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;
    use std::ptr;

    use super::*;
    use crate::db::{varve_close, varve_open};
    use crate::status::take_message;
    use crate::write::varve_put;

    const OK: varve_status = varve_status::VARVE_OK;
    const INVALID: varve_status = varve_status::VARVE_INVALID_ARGUMENT;

    /// A database in a fresh directory holding `keys` (value = key), and
    /// an iterator over it; both freed on drop.
    struct Fixture {
        dir: PathBuf,
        db: *mut varve_db_t,
        it: *mut varve_iterator_t,
    }

    impl Fixture {
        fn new(name: &str, keys: &[&str]) -> Fixture {
            let dir =
                std::env::temp_dir().join(format!("varve-ffi-iter-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let path = CString::new(dir.as_os_str().as_bytes()).expect("no NUL in the path");
            let mut db = ptr::null_mut();
            let mut it = ptr::null_mut();
            // SAFETY: `path` is a C string, the out-pointers and the keys
            // are valid for the calls; the handles are used by this thread.
            unsafe {
                assert_eq!(
                    varve_open(ptr::null(), path.as_ptr(), &mut db, ptr::null_mut()),
                    OK
                );
                for k in keys {
                    let (p, n) = (k.as_ptr().cast(), k.len());
                    assert_eq!(varve_put(db, ptr::null(), p, n, p, n, ptr::null_mut()), OK);
                }
                assert_eq!(
                    varve_iter_create(db, ptr::null(), &mut it, ptr::null_mut()),
                    OK
                );
            }
            Fixture { dir, db, it }
        }

        /// The key the iterator is on, if any.
        fn key(&self) -> Option<Vec<u8>> {
            let mut len = 0;
            // SAFETY: a live iterator of this thread; `len` is writable.
            let p = unsafe { varve_iter_key(self.it, &mut len) };
            // SAFETY: a non-NULL key points to `len` bytes until the next
            // move; copied at once.
            (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p.cast(), len) }.to_vec())
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            // SAFETY: live handles of this fixture, freed once.
            unsafe {
                varve_iter_destroy(self.it);
                varve_close(self.db, ptr::null_mut());
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn moves_return_ok_on_entries_and_at_the_ends() {
        let f = Fixture::new("ok", &["a", "b"]);
        let mut err = ptr::null_mut();
        // SAFETY: a live iterator of this thread; the keys are readable;
        // `err` is NULL throughout (every call succeeds).
        unsafe {
            assert_eq!(varve_iter_seek_to_first(f.it, &mut err), OK);
            assert_eq!(f.key().as_deref(), Some(&b"a"[..]));
            assert_eq!(varve_iter_next(f.it, &mut err), OK);
            assert_eq!(varve_iter_next(f.it, &mut err), OK); // past the end
            assert!(!varve_iter_valid(f.it));
            assert_eq!(varve_iter_next(f.it, &mut err), OK); // a no-op
            assert_eq!(varve_iter_seek_to_last(f.it, &mut err), OK);
            assert_eq!(f.key().as_deref(), Some(&b"b"[..]));
            assert_eq!(varve_iter_prev(f.it, &mut err), OK);
            assert_eq!(varve_iter_prev(f.it, &mut err), OK);
            assert!(!varve_iter_valid(f.it));
            assert_eq!(varve_iter_seek(f.it, c"b".as_ptr(), 1, &mut err), OK);
            assert_eq!(f.key().as_deref(), Some(&b"b"[..]));
            assert_eq!(varve_iter_seek(f.it, c"z".as_ptr(), 1, &mut err), OK);
            assert!(!varve_iter_valid(f.it));
            assert_eq!(
                varve_iter_seek_for_prev(f.it, c"az".as_ptr(), 2, &mut err),
                OK
            );
            assert_eq!(f.key().as_deref(), Some(&b"a"[..]));
            assert_eq!(varve_iter_status(f.it, &mut err), OK);
        }
        assert!(err.is_null());
    }

    #[test]
    fn a_bad_seek_key_breaks_the_iterator_and_every_later_move_says_so() {
        let f = Fixture::new("bad-key", &["a"]);
        let mut err = ptr::null_mut();
        // SAFETY: as in the test above; a NULL key with a length is the
        // error under test (never read).
        unsafe {
            assert_eq!(varve_iter_seek(f.it, ptr::null(), 5, &mut err), INVALID);
            let message = take_message(&mut err).expect("a message");
            assert!(message.contains("key is NULL"), "{message}");
            assert_eq!(varve_iter_seek_to_first(f.it, &mut err), INVALID);
            assert!(!varve_iter_valid(f.it));
            // Exactly what varve_iter_status reports.
            assert_eq!(take_message(&mut err), Some(message.clone()));
            assert_eq!(varve_iter_status(f.it, &mut err), INVALID);
            assert_eq!(take_message(&mut err), Some(message));
            assert_eq!(
                varve_iter_seek_for_prev(f.it, c"a".as_ptr(), 1, &mut err),
                INVALID
            );
            assert!(take_message(&mut err).is_some());
        }
    }

    #[test]
    fn a_panic_during_a_move_is_varve_panic_for_good() {
        let f = Fixture::new("panic", &["a"]);
        let mut err = ptr::null_mut();
        // SAFETY: as above; the move under test panics inside `apply`.
        unsafe {
            let st = move_iter(f.it, &mut err, |h| h.apply(|_| panic!("boom in a move")));
            assert_eq!(st, varve_status::VARVE_PANIC);
            let message = take_message(&mut err).expect("a message");
            assert!(message.contains("boom in a move"), "{message}");
            assert_eq!(varve_iter_next(f.it, &mut err), varve_status::VARVE_PANIC);
            assert_eq!(take_message(&mut err), Some(message.clone()));
            assert_eq!(varve_iter_status(f.it, &mut err), varve_status::VARVE_PANIC);
            assert_eq!(take_message(&mut err), Some(message));
            assert!(!varve_iter_valid(f.it));
        }
    }

    #[test]
    fn moves_on_null_report_what_varve_iter_status_reports() {
        let mut err = ptr::null_mut();
        // SAFETY: NULL iterators and readable keys; `err` as above.
        unsafe {
            let status = varve_iter_status(ptr::null(), &mut err);
            let message = take_message(&mut err).expect("a message");
            assert_eq!(status, INVALID);
            let null = ptr::null_mut();
            let moves = [
                varve_iter_seek_to_first(null, &mut err),
                varve_iter_seek_to_last(null, &mut err),
                varve_iter_seek(null, c"x".as_ptr(), 1, &mut err),
                varve_iter_seek_for_prev(null, c"x".as_ptr(), 1, &mut err),
                varve_iter_next(null, &mut err),
                varve_iter_prev(null, &mut err),
            ];
            assert_eq!(moves, [status; 6]);
            assert_eq!(take_message(&mut err), Some(message));
            // errptr NULL: the status alone.
            assert_eq!(varve_iter_next(null, ptr::null_mut()), INVALID);
        }
    }
}
