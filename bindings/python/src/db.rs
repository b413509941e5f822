//! `varve.Db`: an open database with Python's mapping protocol, context
//! management, lazy iteration, batches, snapshots and administration.
//!
//! A thin shell over the shared [`Handle`]: every method that reaches the
//! engine runs through `Handle::run`, with the GIL released, so a `Db` can
//! be used from many Python threads at once and other threads run while
//! one waits on the disk. `close()` waits for the calls in flight,
//! invalidates live iterators and closes the engine; later use raises
//! `ClosedError`. Frozen class: no Python-side borrow flags, no `&mut`.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::batch::{self, PyWriteBatch};
use crate::bytes::Bytes;
use crate::cursor::Yield;
use crate::errors::OrRaise;
use crate::handle::Handle;
use crate::iter::PyDbIterator;
use crate::options::OpenArgs;
use crate::reads;
use crate::snapshot::PySnapshot;
use crate::stats;

fn write_options(sync: bool) -> varve::WriteOptions {
    varve::WriteOptions {
        sync,
        ..varve::WriteOptions::default()
    }
}

/// An open varve database: an ordered, persistent map from bytes to bytes.
///
/// Opens (by default creates) the database in directory ``path``. Options
/// left at ``None`` keep the engine's defaults. ``min_blob_size=None``
/// keeps every value inline in the tables; ``compression`` is ``'none'``
/// or ``'lz4'``; ``memory_budget`` (bytes) sizes the memtables and caches
/// from one limit; ``read_only=True`` opens an existing database without
/// changing anything (writes raise ``ReadOnlyError``); ``io_engine`` is
/// ``'io_uring'`` (the default, where the kernel has it) or ``'sync'``;
/// ``ttl`` (seconds, at least 0.001) hides and drops entries older than it
/// (never early, late by at most a few seconds).
///
/// Keys and values are ``bytes`` (any bytes-like object is accepted).
/// ``db[key]``, ``db[key] = value``, ``del db[key]``, ``key in db`` and
/// ``iter(db)`` (keys in order) work as on a dict; ``items()``, ``keys()``
/// and ``values()`` take a ``[start, stop)`` range and ``reverse``.
///
/// A ``Db`` may be shared by many threads: the GIL is released during
/// every engine call. Use it as a context manager, or call ``close()``;
/// closing waits for calls in flight and ends every iterator still open
/// (their ``next()`` then raises ``ClosedError``).
///
/// Raises ``BusyError`` if another ``Db`` has the directory open,
/// ``NotFoundError`` / ``AlreadyExistsError`` per ``create_if_missing`` /
/// ``error_if_exists``, ``InvalidArgumentError`` for bad options.
#[pyclass(frozen, mapping, name = "Db", module = "varve")]
pub(crate) struct PyDb {
    handle: Arc<Handle>,
}

#[pymethods]
impl PyDb {
    #[new]
    #[pyo3(signature = (
        path,
        *,
        create_if_missing = true,
        error_if_exists = false,
        read_only = false,
        write_buffer_size = None,
        cache_size = None,
        memory_budget = None,
        min_blob_size = Some(4096),
        blob_file_size = None,
        bloom_bits_per_key = None,
        compression = None,
        block_size = None,
        max_open_files = None,
        use_direct_reads = false,
        io_engine = None,
        ttl = None,
    ))]
    // The generated signature cannot render `Some(4096)`.
    #[pyo3(
        text_signature = "(path, *, create_if_missing=True, error_if_exists=False, \
        read_only=False, write_buffer_size=None, cache_size=None, memory_budget=None, \
        min_blob_size=4096, blob_file_size=None, bloom_bits_per_key=None, compression=None, \
        block_size=None, max_open_files=None, use_direct_reads=False, io_engine=None, \
        ttl=None)"
    )]
    // One keyword per option is what makes `help(varve.Db)` and IDEs useful.
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        create_if_missing: bool,
        error_if_exists: bool,
        read_only: bool,
        write_buffer_size: Option<usize>,
        cache_size: Option<usize>,
        memory_budget: Option<usize>,
        min_blob_size: Option<usize>,
        blob_file_size: Option<u64>,
        bloom_bits_per_key: Option<u32>,
        compression: Option<String>,
        block_size: Option<usize>,
        max_open_files: Option<usize>,
        use_direct_reads: bool,
        io_engine: Option<String>,
        ttl: Option<f64>,
    ) -> PyResult<PyDb> {
        let options = OpenArgs {
            create_if_missing,
            error_if_exists,
            write_buffer_size,
            cache_size,
            memory_budget,
            min_blob_size,
            blob_file_size,
            bloom_bits_per_key,
            compression,
            block_size,
            max_open_files,
            use_direct_reads,
            io_engine,
            ttl,
        }
        .into_options()
        .or_raise(py)?;
        let db = py
            .detach(|| {
                if read_only {
                    varve::Db::open_read_only(&path, options)
                } else {
                    varve::Db::open(&path, options)
                }
            })
            .or_raise(py)?;
        Ok(PyDb {
            handle: Handle::new(db, read_only),
        })
    }

    /// Closes the database: waits for calls in flight, ends every open
    /// iterator, syncs the write-ahead log and releases the directory's
    /// lock. Idempotent. Later use raises ``ClosedError``.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let handle = &self.handle;
        py.detach(|| handle.close()).or_raise(py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the database.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// True once ``close()`` has run.
    #[getter]
    fn closed(&self) -> bool {
        !self.handle.is_open()
    }

    /// The database directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.handle.path().to_path_buf()
    }

    /// True when opened with ``read_only=True``.
    #[getter]
    fn read_only(&self) -> bool {
        self.handle.read_only()
    }

    // ---- point reads and writes ----

    /// The value of ``key``, or ``default`` when it has none.
    #[pyo3(signature = (key, default = None))]
    fn get(&self, py: Python<'_>, key: Bytes, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        reads::get_or(py, &self.handle, None, &key, default)
    }

    /// ``db[key]``: the value; ``KeyError`` when the key has none.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        reads::get_item(py, &self.handle, None, key)
    }

    /// ``key in db``.
    fn __contains__(&self, py: Python<'_>, key: Bytes) -> PyResult<bool> {
        reads::contains(py, &self.handle, None, &key)
    }

    /// Sets ``key`` to ``value``. With ``sync=True`` the write-ahead log is
    /// fsynced first, so the write survives power loss (without it, it
    /// survives a crash of the process).
    #[pyo3(signature = (key, value, *, sync = false))]
    fn put(&self, py: Python<'_>, key: Bytes, value: Bytes, sync: bool) -> PyResult<()> {
        let opts = write_options(sync);
        self.handle
            .run(py, |db| Ok(db.put_opt(&key, &value, &opts)?))
    }

    /// ``db[key] = value``.
    fn __setitem__(&self, py: Python<'_>, key: Bytes, value: Bytes) -> PyResult<()> {
        self.put(py, key, value, false)
    }

    /// Deletes ``key``; deleting a missing key is not an error.
    #[pyo3(signature = (key, *, sync = false))]
    fn delete(&self, py: Python<'_>, key: Bytes, sync: bool) -> PyResult<()> {
        let opts = write_options(sync);
        self.handle.run(py, |db| Ok(db.delete_opt(&key, &opts)?))
    }

    /// Deletes every key in ``[start, end)`` with one range tombstone
    /// (cheap whatever the range holds). ``start > end`` raises
    /// ``InvalidArgument``; an empty range deletes nothing.
    #[pyo3(signature = (start, end, *, sync = false))]
    fn delete_range(&self, py: Python<'_>, start: Bytes, end: Bytes, sync: bool) -> PyResult<()> {
        let opts = write_options(sync);
        self.handle.run(py, |db| {
            Ok(db.delete_range_opt(start.as_ref()..end.as_ref(), &opts)?)
        })
    }

    /// ``del db[key]``: deletes the key. Unlike a dict it does not raise
    /// ``KeyError`` for a missing key (a blind delete, as in the engine).
    fn __delitem__(&self, py: Python<'_>, key: Bytes) -> PyResult<()> {
        self.delete(py, key, false)
    }

    /// The values of ``keys`` (an iterable of bytes-like keys), as a list
    /// in the same order with ``None`` for missing keys, all read as of one
    /// moment. With ``async_io`` the table lookups run concurrently through
    /// io_uring where the kernel offers it (same results either way).
    #[pyo3(signature = (keys, *, async_io = true))]
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        async_io: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        reads::multi_get(py, &self.handle, None, keys, async_io)
    }

    // ---- batches and snapshots ----

    /// A batch to fill and commit atomically::
    ///
    ///     with db.write_batch() as b:
    ///         b.put(b"k1", b"v1")
    ///         b.delete(b"k2")
    ///
    /// committed when the block ends normally, discarded if it raises.
    #[pyo3(signature = (*, sync = false))]
    fn write_batch(&self, sync: bool) -> PyWriteBatch {
        PyWriteBatch::bound(Arc::clone(&self.handle), write_options(sync))
    }

    /// Applies ``batch`` (a ``WriteBatch``) atomically; the batch is
    /// finished afterwards.
    #[pyo3(signature = (batch, *, sync = false))]
    fn write(&self, py: Python<'_>, batch: &Bound<'_, PyWriteBatch>, sync: bool) -> PyResult<()> {
        let ops = batch.get().take(py)?;
        batch::write(py, &self.handle, ops, write_options(sync))
    }

    /// A consistent read-only view of the database as of now; use it as a
    /// context manager (``with db.snapshot() as s:``) or ``release()`` it.
    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        PySnapshot::take(py, &self.handle)
    }

    // ---- iteration ----

    /// ``(key, value)`` pairs with ``start <= key < stop`` (``None``:
    /// unbounded), in key order, or descending from just below ``stop``
    /// down to ``start`` with ``reverse=True``. Lazy: entries are read in
    /// batches as you iterate, with the GIL released. The iterator sees the
    /// database as of this call. Unbounded forward iterators that walk at
    /// the same time share one merge (``shared_passes=True``, the default;
    /// see ``ReadOptions::shared_passes``); ``shared_passes=False`` gives
    /// this one its own.
    #[pyo3(signature = (start = None, stop = None, *, reverse = false, shared_passes = true))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        stop: Option<Bytes>,
        reverse: bool,
        shared_passes: bool,
    ) -> PyResult<PyDbIterator> {
        reads::scan(
            py,
            &self.handle,
            None,
            (start, stop),
            (reverse, shared_passes),
            Yield::Items,
        )
    }

    /// Keys with ``start <= key < stop``, lazily (see ``items``). Reads no
    /// values.
    #[pyo3(signature = (start = None, stop = None, *, reverse = false, shared_passes = true))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        stop: Option<Bytes>,
        reverse: bool,
        shared_passes: bool,
    ) -> PyResult<PyDbIterator> {
        reads::scan(
            py,
            &self.handle,
            None,
            (start, stop),
            (reverse, shared_passes),
            Yield::Keys,
        )
    }

    /// Values of the keys with ``start <= key < stop``, lazily (see
    /// ``items``).
    #[pyo3(signature = (start = None, stop = None, *, reverse = false, shared_passes = true))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        stop: Option<Bytes>,
        reverse: bool,
        shared_passes: bool,
    ) -> PyResult<PyDbIterator> {
        reads::scan(
            py,
            &self.handle,
            None,
            (start, stop),
            (reverse, shared_passes),
            Yield::Values,
        )
    }

    /// ``iter(db)``: every key in order.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyDbIterator> {
        self.keys(py, None, None, false, true)
    }

    /// Number of keys with ``start <= key < stop``, counted on ``threads``
    /// threads (0: one per CPU) without copying values, as of one moment.
    /// For a count over much more data than the cache holds, pass
    /// ``fill_cache=False``.
    #[pyo3(signature = (start = None, stop = None, *, threads = 0, fill_cache = true))]
    fn par_count(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        stop: Option<Bytes>,
        threads: usize,
        fill_cache: bool,
    ) -> PyResult<u64> {
        reads::par_count(py, &self.handle, None, start, stop, threads, fill_cache)
    }

    // ---- administration ----

    /// Writes a consistent, openable copy of the database into directory
    /// ``path`` (which must not exist or be empty) while writers continue;
    /// tables are hard-linked where possible.
    fn checkpoint(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        self.handle.run(py, |db| Ok(db.checkpoint(&path)?))
    }

    /// Writes every memtable to table files and waits for it.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.run(py, |db| Ok(db.flush()?))
    }

    /// Compacts the tables overlapping ``[start, stop]`` (``None``:
    /// unbounded) down to the deepest level holding the range, dropping
    /// deleted and overwritten entries no snapshot can see. Flushes first.
    #[pyo3(signature = (start = None, stop = None))]
    fn compact(&self, py: Python<'_>, start: Option<Bytes>, stop: Option<Bytes>) -> PyResult<()> {
        self.handle.run(py, |db| {
            Ok(db.compact_range(
                start.as_ref().map(AsRef::as_ref),
                stop.as_ref().map(AsRef::as_ref),
            )?)
        })
    }

    /// Waits until no compaction is due (the tree is in shape).
    fn wait_for_compactions(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.run(py, |db| Ok(db.wait_for_compactions()?))
    }

    /// Brings writes back after a full disk stopped them (``PoisonedError``),
    /// once space has been freed; a no-op otherwise.
    fn resume(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.run(py, |db| Ok(db.resume()?))
    }

    /// The engine's statistics as a text report (levels, write
    /// amplification, stalls, caches, memory).
    fn stats(&self, py: Python<'_>) -> PyResult<String> {
        self.handle.run(py, |db| Ok(db.stats().report()))
    }

    /// The engine's statistics as a dict: counters by name, ``levels`` (a
    /// list of ``{files, bytes, score}``, L0 first), ``memory`` (each part's
    /// bytes and limit) and ``open_times`` (seconds).
    fn stats_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.handle.run(py, |db| Ok(db.stats()))?;
        stats::to_dict(py, &s)
    }

    fn __repr__(&self) -> String {
        let state = if self.handle.is_open() {
            "open"
        } else {
            "closed"
        };
        let ro = if self.handle.read_only() {
            ", read-only"
        } else {
            ""
        };
        format!("<varve.Db {:?} ({state}{ro})>", self.handle.path())
    }
}
