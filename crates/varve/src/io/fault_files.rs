//! The files [`FaultInjectingFs`](super::FaultInjectingFs) hands out: a
//! random-access file that counts and logs its reads, and writable and log
//! files whose writes pass the shared switches first (crash, EIO after N
//! writes, ENOSPC against the quota, short writes) and whose syncs are
//! recorded for the power-loss simulation. Thread-safe (the switches are
//! atomics and locks shared with the file system).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::fault_switches::{ReadRecord, Refused, Switches};
use super::fs::{LogFile, RandomAccessFile, WritableFile};
use crate::error::Result;

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
