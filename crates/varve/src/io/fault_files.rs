//! The files [`FaultInjectingFs`](super::FaultInjectingFs) hands out: a
//! random-access file that counts and logs its reads, and writable and log
//! files whose writes pass the shared switches first (crash, EIO after N
//! writes, ENOSPC against the quota, short writes) and whose syncs are
//! recorded for the power-loss simulation. Thread-safe (the switches are
//! atomics and locks shared with the file system).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::fault::{ReadRecord, Switches};
use super::fs::{LogFile, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// A random-access file that counts (and maybe logs) its reads.
#[derive(Debug)]
pub(super) struct CountingRandomAccess {
    pub(super) inner: Arc<dyn RandomAccessFile>,
    pub(super) switches: Arc<Switches>,
}

impl RandomAccessFile for CountingRandomAccess {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        let n = self.inner.read_at(buf, offset)?;
        let s = &self.switches;
        s.reads.fetch_add(1, Ordering::SeqCst);
        s.read_bytes.fetch_add(n as u64, Ordering::SeqCst);
        if let Some(log) = s.read_log.lock().as_mut() {
            log.push(ReadRecord {
                path: self.inner.path().to_path_buf(),
                offset,
                len: buf.len(),
            });
        }
        Ok(n)
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn direct_alignment(&self) -> Option<usize> {
        self.inner.direct_alignment()
    }
}

#[derive(Debug)]
pub(super) struct FaultyWritable {
    pub(super) inner: Box<dyn WritableFile>,
    pub(super) switches: Arc<Switches>,
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
    fn wrote(&self, path: &Path, end: u64) {
        self.appends.fetch_add(1, Ordering::SeqCst);
        if let Some(d) = self.tracked.lock().get_mut(path) {
            d.len = d.len.max(end);
        }
    }

    /// Records a successful fdatasync.
    fn synced(&self, path: &Path) {
        self.syncs.fetch_add(1, Ordering::SeqCst);
        if let Some(d) = self.tracked.lock().get_mut(path) {
            d.synced_len = d.len;
        }
    }
}

/// A WAL file of the wrapper: positional writes and syncs obey the switches
/// and are tracked for power loss like appends.
#[derive(Debug)]
pub(super) struct FaultyLog {
    pub(super) inner: Arc<dyn LogFile>,
    pub(super) switches: Arc<Switches>,
}

impl LogFile for FaultyLog {
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let s = &self.switches;
        if let Err(Refused { fit, error }) = s.admit(self.inner.path(), data.len() as u64) {
            if fit > 0 {
                let part = &data[..fit as usize];
                self.inner.write_at(offset, part)?;
                s.wrote(self.inner.path(), offset + fit);
            }
            return Err(error);
        }
        self.inner.write_at(offset, data)?;
        s.wrote(self.inner.path(), offset + data.len() as u64);
        Ok(())
    }

    fn sync_data(&self) -> Result<()> {
        // Whatever was written when the sync starts is durable after it.
        let s = &self.switches;
        s.admit_sync(self.inner.path())?;
        let len_before = s.tracked.lock().get(self.inner.path()).map(|d| d.len);
        self.inner.sync_data()?;
        s.syncs.fetch_add(1, Ordering::SeqCst);
        if let (Some(len), Some(d)) = (len_before, s.tracked.lock().get_mut(self.inner.path())) {
            d.synced_len = d.synced_len.max(len);
        }
        Ok(())
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }
}

impl WritableFile for FaultyWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let s = &self.switches;
        let len = data.len() as u64;
        if let Err(Refused { fit, error }) = s.admit(self.inner.path(), len) {
            if fit > 0 {
                let end = self.inner.len() + fit;
                self.inner.append(&data[..fit as usize])?;
                s.wrote(self.inner.path(), end);
            }
            return Err(error);
        }
        let end = self.inner.len() + len;
        self.inner.append(data)?;
        s.wrote(self.inner.path(), end);
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        let s = &self.switches;
        s.admit_sync(self.inner.path())?;
        self.inner.sync_data()?;
        s.synced(self.inner.path());
        Ok(())
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }
}
