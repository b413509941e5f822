//! `varve.DbIterator`: the lazy Python iterator returned by `items()`,
//! `keys()`, `values()` and `iter()` of a `Db` or a `Snapshot`.
//!
//! Owns an `Arc` of the engine handle (so the database stays open while
//! the iterator lives, even if the `Db` object is gone) and its
//! [`Cursor`]. Entries come from the cursor's buffer while attached; an
//! empty buffer is refilled by one engine call with the GIL released.
//! Thread-safe (frozen class, state behind the cursor's lock), meant for
//! one thread at a time. After `Db.close()` or `close()` every `next()`
//! raises `ClosedError`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::cursor::{Cursor, Entry, Pop, Yield};
use crate::errors::{Fail, OrRaise};
use crate::handle::Handle;

/// A lazy iterator over a range of a database, in key order or reverse.
///
/// Made by ``Db.items()``, ``Db.keys()``, ``Db.values()``, ``iter(db)``
/// and the same methods of a ``Snapshot``. It sees the database as of its
/// creation (later writes are invisible) and reads entries in batches,
/// releasing the GIL while it reads. ``close()`` (or ``Db.close()``) ends
/// it early and frees what it holds; ``next()`` then raises ``ClosedError``.
#[pyclass(frozen, name = "DbIterator", module = "varve")]
pub(crate) struct PyDbIterator {
    // Fields drop in order: the engine iterator goes before what may be
    // the last reference to the engine.
    cursor: Arc<Cursor>,
    handle: Arc<Handle>,
}

/// Where a scan goes: `[start, stop)`, `reverse` for descending.
pub(crate) struct Scan {
    pub start: Option<Vec<u8>>,
    pub stop: Option<Vec<u8>>,
    pub reverse: bool,
    pub what: Yield,
    /// `ReadOptions::shared_passes`.
    pub shared: bool,
}

impl Scan {
    /// True when no key can be in `[start, stop)`.
    fn is_empty(&self) -> bool {
        match (&self.start, &self.stop) {
            (Some(a), Some(b)) => a >= b,
            (None, Some(b)) => b.is_empty(),
            _ => false,
        }
    }
}

impl PyDbIterator {
    /// An iterator over `scan`, as of `snapshot` (or now). Creates the
    /// engine iterator at once, with the GIL released, so the iterator sees
    /// the database as of this call.
    pub(crate) fn open(
        py: Python<'_>,
        handle: &Arc<Handle>,
        scan: Scan,
        snapshot: Option<varve::Snapshot>,
    ) -> PyResult<PyDbIterator> {
        let cursor = handle.run(py, |db| {
            let empty = scan.is_empty();
            let Scan {
                start,
                stop,
                reverse,
                what,
                shared,
            } = scan;
            let iter = (!empty).then(|| {
                db.iter_opt(&varve::ReadOptions {
                    snapshot,
                    iterate_lower_bound: start,
                    iterate_upper_bound: stop,
                    shared_passes: shared,
                    ..varve::ReadOptions::default()
                })
            });
            let cursor = Arc::new(Cursor::new(iter, what, reverse));
            handle.register(&cursor);
            Ok(cursor)
        })?;
        Ok(PyDbIterator {
            cursor,
            handle: Arc::clone(handle),
        })
    }

    fn next_entry(&self, py: Python<'_>) -> PyResult<Option<Entry>> {
        loop {
            match self.cursor.try_pop() {
                Pop::Entry(e) => return Ok(Some(e)),
                Pop::Done => return Ok(None),
                Pop::Closed => {
                    return Err(Fail::Closed(crate::cursor::CLOSED)).or_raise(py);
                }
                Pop::Empty | Pop::Busy => {
                    let cursor = &self.cursor;
                    self.handle.run(py, |_db| cursor.refill())?;
                }
            }
        }
    }
}

#[pymethods]
impl PyDbIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let Some(e) = self.next_entry(py)? else {
            return Ok(None);
        };
        let obj = match self.cursor.what() {
            Yield::Keys => PyBytes::new(py, &e.key).into_any(),
            Yield::Values => PyBytes::new(py, &e.value).into_any(),
            Yield::Items => {
                PyTuple::new(py, [PyBytes::new(py, &e.key), PyBytes::new(py, &e.value)])?.into_any()
            }
        };
        Ok(Some(obj.unbind()))
    }

    /// Ends the iteration now and frees what the iterator holds (its
    /// snapshot of the database, buffered entries). ``next()`` then raises
    /// ``ClosedError``. Idempotent.
    fn close(&self) {
        self.cursor.invalidate();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.cursor.invalidate();
        false
    }

    fn __repr__(&self) -> String {
        let what = match self.cursor.what() {
            Yield::Keys => "keys",
            Yield::Values => "values",
            Yield::Items => "items",
        };
        format!("<varve.DbIterator over {what} of {:?}>", self.handle.path())
    }
}
