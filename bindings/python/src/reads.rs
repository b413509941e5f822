//! The reads a `Db` and a `Snapshot` share: point reads, `multi_get`,
//! scans and `par_count`, each as of a snapshot (or the latest state).
//!
//! Stateless functions over a [`Handle`]; every engine call runs with the
//! GIL released. Values cross back to Python as `bytes`.

use std::sync::Arc;

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::bytes::Bytes;
use crate::cursor::Yield;
use crate::handle::Handle;
use crate::iter::{PyDbIterator, Scan};

fn read_options(snapshot: Option<varve::Snapshot>) -> varve::ReadOptions {
    varve::ReadOptions {
        snapshot,
        ..varve::ReadOptions::default()
    }
}

/// The value of `key`, or `None`.
pub(crate) fn get(
    py: Python<'_>,
    handle: &Handle,
    snapshot: Option<varve::Snapshot>,
    key: &Bytes,
) -> PyResult<Option<Vec<u8>>> {
    let opts = read_options(snapshot);
    handle.run(py, |db| Ok(db.get_opt(key, &opts)?))
}

/// `get` with a default for a missing key.
pub(crate) fn get_or(
    py: Python<'_>,
    handle: &Handle,
    snapshot: Option<varve::Snapshot>,
    key: &Bytes,
    default: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    Ok(match get(py, handle, snapshot, key)? {
        Some(v) => PyBytes::new(py, &v).into_any().unbind(),
        None => default.unwrap_or_else(|| py.None()),
    })
}

/// The value of `key`; `KeyError` when absent (`obj[key]`).
pub(crate) fn get_item<'py>(
    py: Python<'py>,
    handle: &Handle,
    snapshot: Option<varve::Snapshot>,
    key: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let k: Bytes = key.extract()?;
    match get(py, handle, snapshot, &k)? {
        Some(v) => Ok(PyBytes::new(py, &v)),
        None => Err(PyKeyError::new_err(key.clone().unbind())),
    }
}

/// True when `key` has a value (`key in obj`).
pub(crate) fn contains(
    py: Python<'_>,
    handle: &Handle,
    snapshot: Option<varve::Snapshot>,
    key: &Bytes,
) -> PyResult<bool> {
    Ok(get(py, handle, snapshot, key)?.is_some())
}

/// The values of `keys` (any iterable of bytes-like objects), one per key
/// in order, `None` where absent, as of one sequence number. The first
/// key whose lookup failed raises its error.
pub(crate) fn multi_get<'py>(
    py: Python<'py>,
    handle: &Handle,
    snapshot: Option<varve::Snapshot>,
    keys: &Bound<'py, PyAny>,
    async_io: bool,
) -> PyResult<Bound<'py, PyList>> {
    let keys = keys
        .try_iter()?
        .map(|k| k?.extract::<Bytes>())
        .collect::<PyResult<Vec<Bytes>>>()?;
    let opts = varve::ReadOptions {
        async_io,
        ..read_options(snapshot)
    };
    let found = handle.run(py, |db| {
        db.multi_get(&opts, &keys)
            .into_iter()
            .collect::<varve::Result<Vec<_>>>()
            .map_err(Into::into)
    })?;
    PyList::new(
        py,
        found.into_iter().map(|v| match v {
            Some(v) => PyBytes::new(py, &v).into_any(),
            None => py.None().into_bound(py),
        }),
    )
}

/// A lazy iterator over `[start, stop)`, backward with `reverse`, in a
/// shared pass with `shared` (`ReadOptions::shared_passes`).
pub(crate) fn scan(
    py: Python<'_>,
    handle: &Arc<Handle>,
    snapshot: Option<varve::Snapshot>,
    (start, stop): (Option<Bytes>, Option<Bytes>),
    (reverse, shared): (bool, bool),
    what: Yield,
) -> PyResult<PyDbIterator> {
    let scan = Scan {
        start: crate::bytes::bound(start),
        stop: crate::bytes::bound(stop),
        reverse,
        what,
        shared,
    };
    PyDbIterator::open(py, handle, scan, snapshot)
}

/// Number of keys in `[start, stop)`, counted on `threads` threads.
pub(crate) fn par_count(
    py: Python<'_>,
    handle: &Handle,
    snapshot: Option<varve::Snapshot>,
    start: Option<Bytes>,
    stop: Option<Bytes>,
    threads: usize,
    fill_cache: bool,
) -> PyResult<u64> {
    let range = varve::KeyRange::from_bounds(crate::bytes::bound(start), crate::bytes::bound(stop));
    let opts = varve::ReadOptions {
        fill_cache,
        ..read_options(snapshot)
    };
    handle.run(py, |db| {
        if range.is_empty() {
            return Ok(0);
        }
        Ok(db.par_count(&opts, &range, threads)?)
    })
}
