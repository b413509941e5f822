//! The switches every file of [`FaultInjectingFs`](super::FaultInjectingFs)
//! shares ([`Switches`]: crash, EIO after N writes, the space quota, short
//! writes, the durability of each file, the images of in-place files), the
//! checks a write and a sync pass, and the record of one read. The leaf of
//! the wrapper's files: `fault_files.rs`, `fault_in_place.rs` and
//! `fault.rs` all build on it; it imports none of them.
//!
//! Thread-safety: atomics and locks, shared through an `Arc` by the file
//! system and every file it opened.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, Result};

#[derive(Debug)]
pub(super) struct Switches {
    /// Appends still allowed before every append fails with EIO (u64::MAX: never).
    pub(super) appends_left: AtomicU64,
    pub(super) fail_syncs: AtomicBool,
    /// Bytes that may still be appended before ENOSPC (u64::MAX: unlimited).
    pub(super) space_left: AtomicU64,
    /// When set, only files whose name contains this count against
    /// `space_left` (and only they can run out of space).
    pub(super) space_scope: Mutex<Option<String>>,
    /// A write that does not fit writes the part that fits, then fails.
    pub(super) short_writes: AtomicBool,
    pub(super) appends: AtomicU64,
    pub(super) syncs: AtomicU64,
    pub(super) crashed: AtomicBool,
    pub(super) refuse_direct: AtomicBool,
    /// `open_in_place` is refused as unsupported: the engine takes its
    /// fallbacks for file systems without OS files (plain appends).
    pub(super) plain_files_only: AtomicBool,
    /// Microseconds every append to a table file (`.sst`) sleeps first.
    pub(super) sst_append_delay_micros: AtomicU64,
    pub(super) reads: AtomicU64,
    pub(super) read_bytes: AtomicU64,
    /// Every positional read, while recording is on.
    pub(super) read_log: Mutex<Option<Vec<ReadRecord>>>,
    /// Durability of every file created through the wrapper.
    pub(super) tracked: Mutex<HashMap<PathBuf, Durability>>,
    /// The bytes of each file written in place as its last fdatasync left
    /// them (`fault_in_place.rs`).
    pub(super) images: Mutex<HashMap<PathBuf, Vec<u8>>>,
    /// Power cuts so far: each is a reboot, with a boot id of its own.
    pub(super) boots: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Durability {
    pub(super) len: u64,
    pub(super) synced_len: u64,
    pub(super) entry_durable: bool,
}

/// One positional read seen by [`FaultInjectingFs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// The file read.
    pub path: PathBuf,
    /// Where the read started.
    pub offset: u64,
    /// Bytes asked for.
    pub len: usize,
}

pub(super) fn injected(path: &Path, kind: std::io::ErrorKind, what: &str) -> Error {
    Error::io(
        path,
        std::io::Error::new(kind, format!("injected fault: {what}")),
    )
}

/// What a write may do when it does not fit the free space.
#[derive(Debug)]
pub(super) struct Refused {
    /// Bytes of the write to pass on before failing (short writes).
    pub(super) fit: u64,
    pub(super) error: Error,
}

impl From<Error> for Refused {
    fn from(error: Error) -> Self {
        Refused { fit: 0, error }
    }
}

impl Switches {
    /// The checks every write (append or positional) passes: crash, EIO
    /// after the set number of writes, ENOSPC. On refusal, the caller
    /// writes the first `fit` bytes and returns the error.
    pub(super) fn admit(&self, path: &Path, len: u64) -> std::result::Result<(), Refused> {
        if self.crashed.load(Ordering::SeqCst) {
            return Err(injected(path, std::io::ErrorKind::Other, "simulated crash").into());
        }
        let delay = self.sst_append_delay_micros.load(Ordering::SeqCst);
        if delay > 0 && path.extension().is_some_and(|e| e == "sst") {
            std::thread::sleep(std::time::Duration::from_micros(delay));
        }
        let allowed = self
            .appends_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
                u64::MAX => Some(n),
                0 => None,
                n => Some(n - 1),
            })
            .is_ok();
        if !allowed {
            return Err(injected(path, std::io::ErrorKind::Other, "append failed (EIO)").into());
        }
        let scoped = match self.space_scope.lock().as_deref() {
            None => true,
            Some(pattern) => path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(pattern)),
        };
        if !scoped {
            return Ok(());
        }
        let short = self.short_writes.load(Ordering::SeqCst);
        let mut fit = 0;
        let fits = self
            .space_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| match left {
                u64::MAX => Some(left),
                left => match left.checked_sub(len) {
                    Some(rest) => Some(rest),
                    None if short && left > 0 => {
                        fit = left;
                        Some(0)
                    }
                    None => None,
                },
            })
            .is_ok();
        if !fits || fit > 0 {
            return Err(Refused {
                fit,
                error: injected(
                    path,
                    std::io::ErrorKind::StorageFull,
                    "no space left on device (ENOSPC)",
                ),
            });
        }
        Ok(())
    }

    /// The checks of an fdatasync.
    pub(super) fn admit_sync(&self, path: &Path) -> Result<()> {
        if self.crashed.load(Ordering::SeqCst) {
            return Err(injected(path, std::io::ErrorKind::Other, "simulated crash"));
        }
        if self.fail_syncs.load(Ordering::SeqCst) {
            return Err(injected(
                path,
                std::io::ErrorKind::Other,
                "fdatasync failed (EIO)",
            ));
        }
        Ok(())
    }

    /// Records a successful write that ends at `end`.
    pub(super) fn wrote(&self, path: &Path, end: u64) {
        self.appends.fetch_add(1, Ordering::SeqCst);
        if let Some(d) = self.tracked.lock().get_mut(path) {
            d.len = d.len.max(end);
        }
    }

    /// Records a successful fdatasync.
    pub(super) fn synced(&self, path: &Path) {
        self.syncs.fetch_add(1, Ordering::SeqCst);
        if let Some(d) = self.tracked.lock().get_mut(path) {
            d.synced_len = d.len;
        }
    }
}
