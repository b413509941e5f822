//! Errors: the binding's failure type [`Fail`] and its translation into
//! the Python exception classes of `varve/_errors.py`.
//!
//! Owns the table of those classes, loaded once when the extension module
//! is initialised ([`init`]) and read-only afterwards. Engine calls run
//! detached from the interpreter and return `Result<_, Fail>`; the caller
//! turns a `Fail` into a `PyErr` ([`OrRaise`]) once it holds the GIL again,
//! because building an exception needs it.
//!
//! Invariant: every `varve::Error` maps to `varve.Error` or one of its
//! subclasses, with the engine's message as the text; nothing here panics.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// Why a call failed.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The engine said no.
    Engine(varve::Error),
    /// Use of a closed database, a released snapshot, a finished batch or
    /// a closed iterator (`ClosedError`); the text says which.
    Closed(&'static str),
}

impl Fail {
    /// Use of a closed database.
    pub(crate) fn db_closed() -> Fail {
        Fail::Closed("database is closed")
    }
}

impl From<varve::Error> for Fail {
    fn from(e: varve::Error) -> Fail {
        Fail::Engine(e)
    }
}

/// Turns a `Result<_, Fail>` (or `varve::Result`) into a `PyResult` once
/// attached to the interpreter.
pub(crate) trait OrRaise<T> {
    /// The value, or the Python exception for the failure.
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T, E: Into<Fail>> OrRaise<T> for Result<T, E> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e.into()))
    }
}

/// The exception classes, from `varve._errors`.
struct Classes {
    error: Py<PyType>,
    corruption: Py<PyType>,
    unsupported_version: Py<PyType>,
    io: Py<PyType>,
    invalid_argument: Py<PyType>,
    busy: Py<PyType>,
    not_found: Py<PyType>,
    already_exists: Py<PyType>,
    poisoned: Py<PyType>,
    read_only: Py<PyType>,
    closed: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// Loads the exception classes from the pure-Python module
/// `varve._errors`. Fails (so the import of the extension fails) if that
/// module or one of its classes is missing.
pub(crate) fn init(py: Python<'_>) -> PyResult<()> {
    CLASSES.get_or_try_init(py, || {
        let m = py.import("varve._errors")?;
        let class = |name: &str| -> PyResult<Py<PyType>> {
            Ok(m.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        Ok::<_, PyErr>(Classes {
            error: class("Error")?,
            corruption: class("CorruptionError")?,
            unsupported_version: class("UnsupportedVersionError")?,
            io: class("VarveIOError")?,
            invalid_argument: class("InvalidArgumentError")?,
            busy: class("BusyError")?,
            not_found: class("NotFoundError")?,
            already_exists: class("AlreadyExistsError")?,
            poisoned: class("PoisonedError")?,
            read_only: class("ReadOnlyError")?,
            closed: class("ClosedError")?,
        })
    })?;
    Ok(())
}

/// The Python exception for `fail`.
pub(crate) fn to_py(py: Python<'_>, fail: Fail) -> PyErr {
    let Some(classes) = CLASSES.get(py) else {
        // Unreachable once the module is imported (`init` ran first).
        return PyRuntimeError::new_err(message(&fail));
    };
    let msg = message(&fail);
    let class = match &fail {
        Fail::Closed(_) => &classes.closed,
        Fail::Engine(e) => engine_class(classes, e),
    };
    let err = PyErr::from_type(class.bind(py).clone(), msg);
    if let Fail::Engine(varve::Error::Io { source, .. }) = &fail
        && let Some(code) = source.raw_os_error()
    {
        // OSError's `errno`, best effort. Not `filename` (nor `strerror`):
        // with those set, `str()` would no longer be the engine's message,
        // which names the file already.
        let _ = err.value(py).setattr("errno", code);
    }
    err
}

fn message(fail: &Fail) -> String {
    match fail {
        Fail::Engine(e) => e.to_string(),
        Fail::Closed(what) => (*what).to_owned(),
    }
}

fn engine_class<'c>(c: &'c Classes, e: &varve::Error) -> &'c Py<PyType> {
    use varve::Error as E;
    match e {
        E::Io { .. } => &c.io,
        E::Corruption { .. } => &c.corruption,
        E::UnsupportedVersion { .. } => &c.unsupported_version,
        E::InvalidArgument(_) => &c.invalid_argument,
        E::Locked { .. } => &c.busy,
        E::NotFound(_) => &c.not_found,
        E::AlreadyExists(_) => &c.already_exists,
        E::Poisoned(_) => &c.poisoned,
        E::Closed => &c.closed,
        E::ReadOnly(_) => &c.read_only,
        // `varve::Error` is non-exhaustive: a new kind is a plain Error.
        _ => &c.error,
    }
}
