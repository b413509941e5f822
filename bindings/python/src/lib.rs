//! varve for Python: the extension module `varve._varve`, re-exported by
//! the pure-Python package `varve` (`python/varve/__init__.py`).
//!
//! Module map, one job each:
//! - `db`: the `Db` class (mapping protocol, writes, reads, admin);
//! - `handle`: the engine shared by a `Db` and what is made from it, and
//!   the close protocol (waits for calls in flight, ends iterators);
//! - `reads`: the reads a `Db` and a `Snapshot` share;
//! - `iter` / `cursor`: lazy iterators, refilled in batches;
//! - `snapshot`, `batch`: the `Snapshot` and `WriteBatch` classes;
//! - `bytes`: bytes-like arguments; `options`: `Db(...)` keywords;
//! - `errors`: engine errors as `varve.Error` subclasses; `stats`: dicts.
//!
//! Thread-safety: every class is frozen and `Sync`; every engine call runs
//! with the GIL released (`Handle::run`), never holding a lock while it
//! re-attaches. No `unsafe` code.

mod batch;
mod bytes;
mod cursor;
mod db;
mod errors;
mod handle;
mod iter;
mod options;
mod reads;
mod snapshot;
mod stats;

use std::path::PathBuf;

use pyo3::prelude::*;

use errors::OrRaise;

/// Deletes the database in directory ``path`` (its files, then the
/// directory if empty). Raises ``BusyError`` if it is open.
#[pyfunction]
fn destroy(py: Python<'_>, path: PathBuf) -> PyResult<()> {
    py.detach(|| varve::Db::destroy(&path, &varve::Options::default()))
        .or_raise(py)
}

/// True when this kernel lets the process use io_uring (the engine falls
/// back to plain reads otherwise).
#[pyfunction]
fn io_uring_available() -> bool {
    varve::io_uring_available()
}

/// The native part of varve; import ``varve`` instead.
#[pymodule]
fn _varve(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::init(m.py())?;
    m.add_class::<db::PyDb>()?;
    m.add_class::<batch::PyWriteBatch>()?;
    m.add_class::<snapshot::PySnapshot>()?;
    m.add_class::<iter::PyDbIterator>()?;
    m.add_function(wrap_pyfunction!(destroy, m)?)?;
    m.add_function(wrap_pyfunction!(io_uring_available, m)?)?;
    let defaults = varve::Options::default();
    m.add("DEFAULT_MIN_BLOB_SIZE", defaults.min_blob_size)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
