//! Read faults for [`FaultInjectingFs`](super::FaultInjectingFs): reads of
//! chosen files (by file name) fail with EIO or panic, so tests can check
//! that one key's failed lookup stays that key's error in `multi_get`, and
//! that a panic with other reads in flight drains them.
//!
//! The switch table is shared by every file the wrapper opened; its lock is
//! held only to look a name up, never across a read. Thread-safe.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::fs::RandomAccessFile;
use crate::error::{Error, Result};

/// What a read of a file chosen with
/// [`FaultInjectingFs::fault_reads_of`](super::FaultInjectingFs::fault_reads_of) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFault {
    /// The read fails with an EIO error naming the file.
    Error,
    /// The read panics (as a bug in the read path would).
    Panic,
}

/// The read-fault switches.
#[derive(Debug, Default)]
pub(crate) struct ReadFaults {
    any: AtomicBool,
    by_name: Mutex<HashMap<String, ReadFault>>,
    /// `io::in_flight_reads()` when a fault last fired (on that thread).
    in_flight_at_fault: AtomicUsize,
}

impl ReadFaults {
    pub(crate) fn set(&self, file_name: &str, fault: Option<ReadFault>) {
        let mut m = self.by_name.lock();
        match fault {
            Some(f) => m.insert(file_name.to_string(), f),
            None => m.remove(file_name),
        };
        self.any.store(!m.is_empty(), Ordering::SeqCst);
    }

    pub(crate) fn in_flight_at_fault(&self) -> usize {
        self.in_flight_at_fault.load(Ordering::SeqCst)
    }

    fn check(&self, path: &Path) -> Result<()> {
        if !self.any.load(Ordering::Relaxed) {
            return Ok(());
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let fault = name.and_then(|n| self.by_name.lock().get(&n).copied());
        let Some(fault) = fault else {
            return Ok(());
        };
        self.in_flight_at_fault
            .store(super::fiber::in_flight_reads(), Ordering::SeqCst);
        match fault {
            ReadFault::Error => Err(Error::io(
                path,
                std::io::Error::other("injected fault: read"),
            )),
            ReadFault::Panic => panic!("injected panic reading {}", path.display()),
        }
    }
}

/// A random-access file whose reads consult the switches first.
#[derive(Debug)]
pub(crate) struct FaultyRandomAccess {
    pub(crate) inner: Arc<dyn RandomAccessFile>,
    pub(crate) faults: Arc<ReadFaults>,
}

impl RandomAccessFile for FaultyRandomAccess {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        self.faults.check(self.inner.path())?;
        self.inner.read_at(buf, offset)
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn direct_alignment(&self) -> Option<usize> {
        self.inner.direct_alignment()
    }
}
