//! varve's C ABI: the functions and types declared in `include/varve.h`
//! (generated from this crate by cbindgen; `tests/header.rs` keeps it
//! current). See `docs/c-api.md` for the guide.
//!
//! Contract of every exported function:
//! - it is named `varve_*` and never unwinds into C: its body runs under
//!   `catch_unwind` (`status::call` / `status::guard`), a panic becomes
//!   `VARVE_PANIC` (or a neutral default for calls that return no status);
//! - it returns a `varve_status` and takes a trailing `char **errptr` that
//!   receives a `malloc`ed message on failure (the rule: every
//!   call returns a status), unless it has nothing to report: a
//!   constructor returning a handle, a destructor, `varve_free`,
//!   `varve_version`, `varve_status_name` and the accessors (the list and
//!   the reasons are in the header's ERRORS paragraph, `cbindgen.toml`);
//! - raw pointers are turned into references once, at the top, by the
//!   helpers of `args`; the rest of the call is safe Rust.
//!
//! Handles are boxed Rust objects behind opaque pointers; each type has a
//! create and a destroy function, and its own thread-safety rule (in its
//! module's contract and the header). Values handed to C are `malloc`ed
//! copies (`alloc`), freed with `varve_free`.
//!
//! The library must be built with `panic = "unwind"` (the default): with
//! `abort` a panic would end the process instead of becoming `VARVE_PANIC`.
//!
//! Modules, one job each: `status` (codes, panic boundary), `alloc`
//! (malloc boundary, `varve_free`), `args` (reading C arguments),
//! `options` and `rw_options` (option handles), `db` (open / close), `write`
//! (put, delete, write), `read` (get, pinned get, multi_get), `batch`,
//! `snapshot`, `iter`, `scan` (par_count, anchors, split_range), `admin`
//! (checkpoint, flush, compaction, stats).

// C naming for the exported types (`varve_db_t`, `VARVE_OK`): they are
// what the header shows.
#![allow(non_camel_case_types)]
#![warn(clippy::unwrap_used)]

// In the order the header lists them (cbindgen follows the source).
mod status;

mod alloc;

mod args;

mod options;

mod rw_options;

mod db;

mod write;

mod read;

mod batch;

mod snapshot;

mod iter;

mod scan;

mod admin;

pub use batch::varve_writebatch_t;
pub use db::varve_db_t;
pub use iter::varve_iterator_t;
pub use options::{varve_compression, varve_options_t};
pub use read::varve_pinned_t;
pub use rw_options::{varve_readoptions_t, varve_writeoptions_t};
pub use scan::{varve_anchor_t, varve_anchors_t, varve_range_t, varve_ranges_t};
pub use snapshot::varve_snapshot_t;
pub use status::varve_status;

// The header's thread-safety promises, checked by the compiler: shared
// handles are `Sync` (any threads at once), one-thread-at-a-time handles
// `Send` (they may move between threads).
const _: () = {
    const fn shared<T: Send + Sync>() {}
    const fn movable<T: Send>() {}
    shared::<varve_db_t>();
    shared::<varve_snapshot_t>();
    shared::<varve_pinned_t>();
    shared::<varve_options_t>();
    shared::<varve_readoptions_t>();
    shared::<varve_writeoptions_t>();
    movable::<varve_writebatch_t>();
    movable::<varve_iterator_t>();
};

/// The version of the library ("0.1.0"), a static NUL-terminated string.
/// Never NULL; never free it.
#[unsafe(no_mangle)]
pub extern "C" fn varve_version() -> *const std::ffi::c_char {
    const VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
    ) {
        Ok(v) => v,
        Err(_) => c"unknown",
    };
    VERSION.as_ptr()
}
