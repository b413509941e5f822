//! `varve.Snapshot`: a consistent read-only view of a database at one
//! moment, usable as a context manager (released on exit).
//!
//! Holds an `Arc` of the engine handle and the engine's snapshot (a cheap,
//! thread-safe pin of one sequence number) behind a `Mutex` that is only
//! locked briefly while attached, to copy or drop it. Reads clone the pin
//! and run like the database's, GIL released. After `release()` every read
//! raises `ClosedError`; after `Db.close()` too (the database is closed).

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::bytes::Bytes;
use crate::cursor::Yield;
use crate::errors::{Fail, OrRaise};
use crate::handle::Handle;
use crate::iter::PyDbIterator;
use crate::reads;

/// A consistent, read-only view of the database at one moment.
///
/// Made by ``db.snapshot()``. Reads through it see exactly the writes made
/// before it was taken. Use it as a context manager, or call
/// ``release()``: until then the engine keeps every version it can see
/// (compaction cannot drop them).
///
/// It supports ``s[key]``, ``key in s``, ``s.get()``, ``s.multi_get()``,
/// ``s.items()``, ``s.keys()``, ``s.values()``, ``iter(s)`` and
/// ``s.par_count()``, with the same arguments as on ``Db``.
#[pyclass(frozen, mapping, name = "Snapshot", module = "varve")]
pub(crate) struct PySnapshot {
    // Fields drop in order: the pin goes before what may be the last
    // reference to the engine.
    pin: Mutex<Option<varve::Snapshot>>,
    handle: Arc<Handle>,
}

impl PySnapshot {
    /// Takes a snapshot of `handle` now.
    pub(crate) fn take(py: Python<'_>, handle: &Arc<Handle>) -> PyResult<PySnapshot> {
        let pin = handle.run(py, |db| Ok(db.snapshot()))?;
        Ok(PySnapshot {
            pin: Mutex::new(Some(pin)),
            handle: Arc::clone(handle),
        })
    }

    fn pin(&self, py: Python<'_>) -> PyResult<varve::Snapshot> {
        self.pin
            .lock()
            .clone()
            .ok_or(Fail::Closed("snapshot is released"))
            .or_raise(py)
    }
}

#[pymethods]
impl PySnapshot {
    /// The value of ``key`` as of the snapshot, or ``default``.
    #[pyo3(signature = (key, default = None))]
    fn get(&self, py: Python<'_>, key: Bytes, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        reads::get_or(py, &self.handle, Some(self.pin(py)?), &key, default)
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        reads::get_item(py, &self.handle, Some(self.pin(py)?), key)
    }

    fn __contains__(&self, py: Python<'_>, key: Bytes) -> PyResult<bool> {
        reads::contains(py, &self.handle, Some(self.pin(py)?), &key)
    }

    /// The values of ``keys`` as of the snapshot (see ``Db.multi_get``).
    #[pyo3(signature = (keys, *, async_io = true))]
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        async_io: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        reads::multi_get(py, &self.handle, Some(self.pin(py)?), keys, async_io)
    }

    /// ``(key, value)`` pairs of ``[start, stop)`` as of the snapshot,
    /// lazily (see ``Db.items``).
    #[pyo3(signature = (start = None, stop = None, *, reverse = false, shared_passes = true))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        stop: Option<Bytes>,
        reverse: bool,
        shared_passes: bool,
    ) -> PyResult<PyDbIterator> {
        let pin = Some(self.pin(py)?);
        reads::scan(
            py,
            &self.handle,
            pin,
            (start, stop),
            (reverse, shared_passes),
            Yield::Items,
        )
    }

    /// Keys of ``[start, stop)`` as of the snapshot, lazily.
    #[pyo3(signature = (start = None, stop = None, *, reverse = false, shared_passes = true))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        stop: Option<Bytes>,
        reverse: bool,
        shared_passes: bool,
    ) -> PyResult<PyDbIterator> {
        let pin = Some(self.pin(py)?);
        reads::scan(
            py,
            &self.handle,
            pin,
            (start, stop),
            (reverse, shared_passes),
            Yield::Keys,
        )
    }

    /// Values of ``[start, stop)`` as of the snapshot, lazily.
    #[pyo3(signature = (start = None, stop = None, *, reverse = false, shared_passes = true))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        stop: Option<Bytes>,
        reverse: bool,
        shared_passes: bool,
    ) -> PyResult<PyDbIterator> {
        let pin = Some(self.pin(py)?);
        reads::scan(
            py,
            &self.handle,
            pin,
            (start, stop),
            (reverse, shared_passes),
            Yield::Values,
        )
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PyDbIterator> {
        self.keys(py, None, None, false, true)
    }

    /// Number of keys in ``[start, stop)`` as of the snapshot (see
    /// ``Db.par_count``).
    #[pyo3(signature = (start = None, stop = None, *, threads = 0, fill_cache = true))]
    fn par_count(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        stop: Option<Bytes>,
        threads: usize,
        fill_cache: bool,
    ) -> PyResult<u64> {
        let pin = Some(self.pin(py)?);
        reads::par_count(py, &self.handle, pin, start, stop, threads, fill_cache)
    }

    /// The sequence number the snapshot sees up to (inclusive).
    #[getter]
    fn sequence(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.pin(py)?.sequence())
    }

    /// True once released.
    #[getter]
    fn released(&self) -> bool {
        self.pin.lock().is_none()
    }

    /// Releases the snapshot (idempotent). Iterators already made from it
    /// keep their view until they end.
    fn release(&self) {
        self.pin.lock().take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Releases the snapshot.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.release();
        false
    }

    fn __repr__(&self) -> String {
        match self.pin.lock().as_ref() {
            Some(p) => format!("<varve.Snapshot at sequence {}>", p.sequence()),
            None => "<varve.Snapshot (released)>".to_owned(),
        }
    }
}
