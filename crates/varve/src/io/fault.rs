//! [`FaultInjectingFs`]: a file system wrapper that fails on command, for
//! tests of the error paths (a failing WAL append or fdatasync, a full disk).
//!
//! Faults are switched on and off at run time through the shared handle, so
//! a test can open a database normally, then make the next append fail.
//! Everything not failed is passed to the wrapped file system unchanged.
//! Thread-safe: the switches are atomics shared by every file it opened.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::fs::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use crate::{Error, Result};

#[derive(Debug)]
struct Switches {
    /// Appends still allowed before every append fails with EIO (u64::MAX: never).
    appends_left: AtomicU64,
    fail_syncs: AtomicBool,
    /// Bytes that may still be appended before ENOSPC (u64::MAX: unlimited).
    space_left: AtomicU64,
    appends: AtomicU64,
    syncs: AtomicU64,
}

/// Wraps a [`FileSystem`] and injects failures into writable files.
#[derive(Debug, Clone)]
pub struct FaultInjectingFs {
    inner: Arc<dyn FileSystem>,
    switches: Arc<Switches>,
}

impl FaultInjectingFs {
    /// Wraps `inner` with every fault off.
    pub fn new(inner: Arc<dyn FileSystem>) -> Self {
        FaultInjectingFs {
            inner,
            switches: Arc::new(Switches {
                appends_left: AtomicU64::new(u64::MAX),
                fail_syncs: AtomicBool::new(false),
                space_left: AtomicU64::new(u64::MAX),
                appends: AtomicU64::new(0),
                syncs: AtomicU64::new(0),
            }),
        }
    }

    /// After `n` more successful appends, every append fails with EIO.
    pub fn fail_appends_after(&self, n: u64) {
        self.switches.appends_left.store(n, Ordering::SeqCst);
    }

    /// Makes every `sync_data` fail with EIO (or succeed again).
    pub fn fail_syncs(&self, on: bool) {
        self.switches.fail_syncs.store(on, Ordering::SeqCst);
    }

    /// Leaves `bytes` of free space: an append that does not fit fails with
    /// ENOSPC and writes nothing.
    pub fn set_free_space(&self, bytes: u64) {
        self.switches.space_left.store(bytes, Ordering::SeqCst);
    }

    /// Turns every fault off.
    pub fn heal(&self) {
        self.fail_appends_after(u64::MAX);
        self.fail_syncs(false);
        self.set_free_space(u64::MAX);
    }

    /// Successful appends so far (all files).
    pub fn appends(&self) -> u64 {
        self.switches.appends.load(Ordering::SeqCst)
    }

    /// Successful syncs so far (all files).
    pub fn syncs(&self) -> u64 {
        self.switches.syncs.load(Ordering::SeqCst)
    }
}

#[derive(Debug)]
struct FaultyWritable {
    inner: Box<dyn WritableFile>,
    switches: Arc<Switches>,
}

fn injected(path: &Path, kind: std::io::ErrorKind, what: &str) -> Error {
    Error::io(
        path,
        std::io::Error::new(kind, format!("injected fault: {what}")),
    )
}

impl WritableFile for FaultyWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let s = &self.switches;
        let allowed = s
            .appends_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
                u64::MAX => Some(n),
                0 => None,
                n => Some(n - 1),
            })
            .is_ok();
        if !allowed {
            return Err(injected(
                self.inner.path(),
                std::io::ErrorKind::Other,
                "append failed (EIO)",
            ));
        }
        let len = data.len() as u64;
        let fits = s
            .space_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| match left {
                u64::MAX => Some(left),
                left => left.checked_sub(len),
            })
            .is_ok();
        if !fits {
            return Err(injected(
                self.inner.path(),
                std::io::ErrorKind::StorageFull,
                "no space left on device (ENOSPC)",
            ));
        }
        self.inner.append(data)?;
        s.appends.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        if self.switches.fail_syncs.load(Ordering::SeqCst) {
            return Err(injected(
                self.inner.path(),
                std::io::ErrorKind::Other,
                "fdatasync failed (EIO)",
            ));
        }
        self.inner.sync_data()?;
        self.switches.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }
}

impl FileSystem for FaultInjectingFs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list_dir(dir)
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }
    fn is_dir(&self, path: &Path) -> Result<bool> {
        self.inner.is_dir(path)
    }
    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(FaultyWritable {
            inner: self.inner.create_writable(path)?,
            switches: Arc::clone(&self.switches),
        }))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.inner.open_sequential(path)
    }
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_random_access(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.inner.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.inner.truncate(path, len)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }
    fn try_lock(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        self.inner.try_lock(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PosixFs;

    #[test]
    fn switches_work() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let mut f = fs.create_writable(&dir.path().join("f")).expect("create");
        fs.fail_appends_after(1);
        f.append(b"ok").expect("first append passes");
        let e = f.append(b"no").expect_err("second fails");
        assert!(e.to_string().contains("injected"), "{e}");
        fs.heal();
        fs.set_free_space(3);
        assert!(f.append(b"1234").is_err());
        f.append(b"123").expect("fits");
        fs.fail_syncs(true);
        assert!(f.sync_data().is_err());
        fs.heal();
        f.sync_data().expect("sync");
        assert_eq!(f.len(), 5);
        assert_eq!(fs.appends(), 2);
    }
}
