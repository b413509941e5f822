//! The real file system: `std::fs`, pread via `fiber_aio_read` (io_uring
//! inside a `multi_get` fiber, `FileExt::read_at` elsewhere),
//! fdatasync via `File::sync_data`, flock via `File::try_lock`; O_DIRECT
//! files come from `direct`.
//!
//! flock locks belong to an open file description, so a second `Db::open` of
//! the same directory fails even inside one process. Thread-safe.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::fs::{FileLock, FileSystem, LogFile, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};
use crate::io::fiber::fiber_aio_read;

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct PosixFs;

#[derive(Debug)]
struct PosixWritable {
    file: File,
    path: PathBuf,
    len: u64,
}

impl WritableFile for PosixWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all(data)
            .map_err(|e| Error::io(&self.path, e))?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// A WAL file written with `pwrite` (`FileExt::write_all_at`).
#[derive(Debug)]
struct PosixLogFile {
    file: File,
    path: PathBuf,
}

impl LogFile for PosixLogFile {
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.file
            .write_all_at(data, offset)
            .map_err(|e| Error::io(&self.path, e))
    }

    fn sync_data(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug)]
struct PosixSequential {
    file: File,
    path: PathBuf,
}

impl SequentialFile for PosixSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            match self.file.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.path, e)),
            }
        }
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug)]
struct PosixRandomAccess {
    file: File,
    path: PathBuf,
}

impl RandomAccessFile for PosixRandomAccess {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match fiber_aio_read(&self.file, &mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.path, e)),
            }
        }
        Ok(done)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug)]
struct PosixLock {
    _file: File,
}

impl FileLock for PosixLock {}

/// Creates (or truncates) `path` for writing.
pub(crate) fn create_truncated(path: &Path) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

impl FileSystem for PosixFs {
    fn uses_os_files(&self) -> bool {
        true
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| Error::io(path, e))
    }

    fn is_dir(&self, path: &Path) -> Result<bool> {
        match std::fs::metadata(path) {
            Ok(m) => Ok(m.is_dir()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = create_truncated(path)?;
        Ok(Box::new(PosixWritable {
            file,
            path: path.to_path_buf(),
            len: 0,
        }))
    }

    fn create_log_file(&self, path: &Path) -> Result<Arc<dyn LogFile>> {
        let file = create_truncated(path)?;
        Ok(Arc::new(PosixLogFile {
            file,
            path: path.to_path_buf(),
        }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        Ok(Box::new(PosixSequential {
            file,
            path: path.to_path_buf(),
        }))
    }

    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        Ok(Arc::new(PosixRandomAccess {
            file,
            path: path.to_path_buf(),
        }))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        std::fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io(path, e))
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| Error::io(path, e))
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        std::fs::remove_dir(dir).map_err(|e| Error::io(dir, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(|e| Error::io(from, e))
    }

    fn hard_link(&self, src: &Path, dst: &Path) -> Result<()> {
        std::fs::hard_link(src, dst).map_err(|e| Error::io(dst, e))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        file.set_len(len).map_err(|e| Error::io(path, e))?;
        file.sync_all().map_err(|e| Error::io(path, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let d = File::open(dir).map_err(|e| Error::io(dir, e))?;
        d.sync_all().map_err(|e| Error::io(dir, e))
    }

    fn open_random_access_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(super::direct::open_read(path)?))
    }

    fn create_writable_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(super::direct::create_write(path)?))
    }

    fn open_in_place(
        &self,
        path: &Path,
        create: bool,
        direct: bool,
    ) -> Result<Arc<dyn super::fs::InPlaceFile>> {
        Ok(Arc::new(super::in_place::PosixInPlace::open(
            path, create, direct,
        )?))
    }

    fn try_lock(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Box::new(PosixLock { _file: file }))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io(path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_is_exclusive_within_a_process() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("LOCK");
        let fs = PosixFs;
        let first = fs.try_lock(&p).expect("lock").expect("acquired");
        assert!(fs.try_lock(&p).expect("lock call").is_none());
        drop(first);
        assert!(fs.try_lock(&p).expect("lock call").is_some());
    }

    #[test]
    fn write_read_truncate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let fs = PosixFs;
        let mut w = fs.create_writable(&p).expect("create");
        w.append(b"hello world").expect("append");
        w.sync_data().expect("sync");
        assert_eq!(w.len(), 11);
        let r = fs.open_random_access(&p).expect("open");
        let mut buf = [0u8; 32];
        assert_eq!(r.read_at(&mut buf, 6).expect("read"), 5);
        assert_eq!(&buf[..5], b"world");
        fs.truncate(&p, 5).expect("truncate");
        assert_eq!(fs.file_size(&p).expect("size"), 5);
        let err = fs
            .file_size(&dir.path().join("missing"))
            .expect_err("missing");
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
