//! `varve_snapshot_t`: a consistent view of a database at one moment.
//!
//! Owns one [`varve::Snapshot`] (a reference-counted pin of a sequence
//! number). Read options that are given the snapshot hold their own
//! reference, so releasing the handle early is safe: the view stays pinned
//! until the last holder lets go.
//!
//! Thread-safety: immutable; any number of threads may use one snapshot at
//! once. It may outlive its database handle (it then pins nothing useful).

use std::ffi::c_char;

use varve::Snapshot;

use crate::args::{Out, from_handle, into_handle};
use crate::db::{self, varve_db_t};
use crate::status::{ErrPtr, call, guard, varve_status};

/// A point-in-time view of a database. Create with
/// `varve_snapshot_create`, use through `varve_readoptions_set_snapshot`,
/// free with `varve_snapshot_release`. Immutable: any threads.
pub struct varve_snapshot_t {
    pub(crate) snapshot: Snapshot,
}

/// Takes a snapshot of `db` as of now into `*snapshot_out`. Reads and
/// iterators whose read options carry it see exactly the writes made
/// before this call, until it is released.
///
/// # Safety
/// `db` is NULL or a live database handle; `snapshot_out` is NULL or
/// writable; `errptr` is NULL or points to a `char *` that is NULL or an
/// earlier message (freed and replaced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_snapshot_create(
    db: *mut varve_db_t,
    snapshot_out: *mut *mut varve_snapshot_t,
    errptr: *mut *mut c_char,
) -> varve_status {
    // SAFETY: `errptr` is as `ErrPtr::new` requires (contract above).
    let errptr = unsafe { ErrPtr::new(errptr) };
    call(errptr, || {
        // SAFETY: `db` and `snapshot_out` are as the contract above says.
        let (out, handle) = unsafe {
            (
                Out::cleared(snapshot_out, "snapshot_out", std::ptr::null_mut())?,
                db::db_ref(db)?,
            )
        };
        let snapshot = handle.with(|d| Ok(d.snapshot()))?;
        out.set(into_handle(varve_snapshot_t { snapshot }));
        Ok(varve_status::VARVE_OK)
    })
}

/// Releases a snapshot. NULL is a no-op. Read options it was set on keep
/// their own reference until they are destroyed or reset.
///
/// # Safety
/// `snapshot` is NULL or a live snapshot handle no other thread is using;
/// it is invalid afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_snapshot_release(snapshot: *mut varve_snapshot_t) {
    // SAFETY: `snapshot` is NULL or a live handle from
    // `varve_snapshot_create` that nobody else uses (contract above).
    guard((), || drop(unsafe { from_handle(snapshot) }));
}

/// The sequence number the snapshot sees up to (inclusive); 0 for NULL.
///
/// # Safety
/// `snapshot` is NULL or a live snapshot handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn varve_snapshot_sequence(snapshot: *const varve_snapshot_t) -> u64 {
    guard(0, || {
        // SAFETY: `snapshot` is NULL or a live handle (contract above).
        unsafe { snapshot.as_ref() }.map_or(0, |s| s.snapshot.sequence())
    })
}
