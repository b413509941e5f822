//! `varve.WriteBatch`: puts and deletes applied atomically.
//!
//! Either bound to a database (`db.write_batch()`, committed by `commit()`
//! or on leaving a `with` block normally, discarded if the block raises)
//! or free-standing (`varve.WriteBatch()`, applied by `db.write(batch)`).
//! Owns a `varve::WriteBatch` behind a `Mutex` (held only while attached,
//! for in-memory edits); the commit takes the operations out and writes
//! them with the GIL released. Once committed or discarded the batch is
//! finished: further use raises `ClosedError`.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::bytes::Bytes;
use crate::errors::{Fail, OrRaise};
use crate::handle::Handle;

const FINISHED: &str = "write batch is already committed or discarded";

/// A group of puts and deletes applied atomically: readers see all of it
/// or none of it.
///
/// ``with db.write_batch() as b:`` commits on normal exit and discards the
/// operations if the block raises. ``WriteBatch()`` makes a free-standing
/// batch for ``db.write(batch)``. Operations apply in the order given (a
/// later put of a key wins over an earlier delete of it).
#[pyclass(frozen, name = "WriteBatch", module = "varve")]
pub(crate) struct PyWriteBatch {
    ops: Mutex<Option<varve::WriteBatch>>,
    /// Where `commit` writes (`None`: free-standing).
    target: Option<(Arc<Handle>, varve::WriteOptions)>,
}

impl PyWriteBatch {
    /// An empty batch committed to `handle` with `opts`.
    pub(crate) fn bound(handle: Arc<Handle>, opts: varve::WriteOptions) -> PyWriteBatch {
        PyWriteBatch {
            ops: Mutex::new(Some(varve::WriteBatch::new())),
            target: Some((handle, opts)),
        }
    }

    /// The operations, leaving the batch finished.
    pub(crate) fn take(&self, py: Python<'_>) -> PyResult<varve::WriteBatch> {
        self.ops
            .lock()
            .take()
            .ok_or(Fail::Closed(FINISHED))
            .or_raise(py)
    }

    fn edit(&self, py: Python<'_>, f: impl FnOnce(&mut varve::WriteBatch)) -> PyResult<()> {
        match self.ops.lock().as_mut() {
            Some(b) => {
                f(b);
                Ok(())
            }
            None => Err(Fail::Closed(FINISHED)).or_raise(py),
        }
    }
}

/// Writes `batch` to `handle` with the GIL released.
pub(crate) fn write(
    py: Python<'_>,
    handle: &Handle,
    batch: varve::WriteBatch,
    opts: varve::WriteOptions,
) -> PyResult<()> {
    handle.run(py, |db| Ok(db.write_opt(batch, &opts)?))
}

#[pymethods]
impl PyWriteBatch {
    /// An empty, free-standing batch (apply it with ``db.write(batch)``).
    #[new]
    fn new() -> PyWriteBatch {
        PyWriteBatch {
            ops: Mutex::new(Some(varve::WriteBatch::new())),
            target: None,
        }
    }

    /// Sets ``key`` to ``value`` when the batch is applied.
    fn put(&self, py: Python<'_>, key: Bytes, value: Bytes) -> PyResult<()> {
        self.edit(py, |b| b.put(&key, &value))
    }

    /// Deletes ``key`` when the batch is applied.
    fn delete(&self, py: Python<'_>, key: Bytes) -> PyResult<()> {
        self.edit(py, |b| b.delete(&key))
    }

    /// Deletes every key in ``[start, end)`` when the batch is applied
    /// (one record, whatever the range holds).
    fn delete_range(&self, py: Python<'_>, start: Bytes, end: Bytes) -> PyResult<()> {
        self.edit(py, |b| b.delete_range(start.as_ref()..end.as_ref()))
    }

    fn __setitem__(&self, py: Python<'_>, key: Bytes, value: Bytes) -> PyResult<()> {
        self.put(py, key, value)
    }

    fn __delitem__(&self, py: Python<'_>, key: Bytes) -> PyResult<()> {
        self.delete(py, key)
    }

    /// Drops every operation; the batch stays usable.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.edit(py, varve::WriteBatch::clear)
    }

    /// Number of operations (0 once committed or discarded).
    fn __len__(&self) -> usize {
        self.ops.lock().as_ref().map_or(0, varve::WriteBatch::len)
    }

    /// Bytes of the encoded operations.
    #[getter]
    fn size_in_bytes(&self) -> usize {
        self.ops
            .lock()
            .as_ref()
            .map_or(0, varve::WriteBatch::size_in_bytes)
    }

    /// True once committed or discarded.
    #[getter]
    fn finished(&self) -> bool {
        self.ops.lock().is_none()
    }

    /// Applies the operations atomically to the database the batch came
    /// from (``db.write_batch()``); the batch is finished afterwards. A
    /// free-standing batch is applied with ``db.write(batch)`` instead.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let Some((handle, opts)) = &self.target else {
            return Err(Fail::Engine(varve::Error::InvalidArgument(
                "a free-standing WriteBatch is applied with db.write(batch)".into(),
            )))
            .or_raise(py);
        };
        let batch = self.take(py)?;
        write(py, handle, batch, *opts)
    }

    /// Drops the operations without applying them; the batch is finished.
    fn discard(&self) {
        self.ops.lock().take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commits when the block ended normally, discards when it raised
    /// (a free-standing batch is left as it is).
    #[pyo3(signature = (*args))]
    fn __exit__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        let raised = args.get_item(0).is_ok_and(|t| !t.is_none());
        if self.target.is_none() {
            // Free-standing: `db.write(batch)` applies it, not the block.
        } else if raised {
            self.discard();
        } else if !self.finished() {
            self.commit(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        match self.ops.lock().as_ref() {
            Some(b) => format!("<varve.WriteBatch of {} operations>", b.len()),
            None => "<varve.WriteBatch (finished)>".to_owned(),
        }
    }
}
