//! [`Bytes`]: a key or value passed in from Python.
//!
//! Accepts every bytes-like object: `bytes` is borrowed without a copy,
//! `bytearray` is copied (it may change under us once the GIL is
//! released), anything else that exports the buffer protocol
//! (`memoryview`, `array.array`, NumPy arrays, ...) is copied once, by
//! `memoryview(obj).tobytes()`. `str` is refused with a hint to encode it:
//! keys and values are bytes, never text.
//!
//! A `Bytes` is `Send + Sync` and owns (or keeps alive) its data, so it can
//! be read by engine calls running detached from the interpreter.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

/// Bytes from a Python bytes-like object.
pub(crate) enum Bytes {
    /// A `bytes` object, kept alive and read in place.
    Shared(PyBackedBytes),
    /// A copy (of a `bytearray` or another buffer).
    Owned(Vec<u8>),
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            Bytes::Shared(b) => b,
            Bytes::Owned(v) => v,
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Bytes {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(Bytes::Shared(PyBackedBytes::from(b.to_owned())));
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Ok(Bytes::Owned(b.to_vec()));
        }
        let type_name = || {
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".to_owned())
        };
        if obj.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "expected a bytes-like object, not 'str' (encode it first, e.g. s.encode())",
            ));
        }
        let view = PyMemoryView::from(&obj.to_owned()).map_err(|_| {
            PyTypeError::new_err(format!(
                "expected a bytes-like object (bytes, bytearray, memoryview), not '{}'",
                type_name()
            ))
        })?;
        let copy = view.call_method0("tobytes")?.cast_into::<PyBytes>()?;
        Ok(Bytes::Shared(PyBackedBytes::from(copy)))
    }
}

/// Optional bound (`None` is unbounded) as owned bytes.
pub(crate) fn bound(b: Option<Bytes>) -> Option<Vec<u8>> {
    b.map(|b| b.as_ref().to_vec())
}
