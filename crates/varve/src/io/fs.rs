//! The file-system traits the engine is written against.
//!
//! Contract: every error carries the path it happened on. `WritableFile::append`
//! hands the bytes to the OS before it returns (no user-space buffering), so an
//! appended record survives `kill -9` of the process; `sync_data` makes it
//! survive power loss. Implementations are `Send`; `FileSystem` and
//! `RandomAccessFile` are also `Sync` and used from many threads.

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use crate::error::Result;

/// A file opened for appending.
pub trait WritableFile: Send + Debug {
    /// Appends `data`; on return the OS has it (it survives `kill -9`).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Makes everything appended so far durable (fdatasync).
    fn sync_data(&mut self) -> Result<()>;
    /// Bytes appended so far (the file's logical length).
    fn len(&self) -> u64;
    /// True when nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The file's path.
    fn path(&self) -> &Path;
}

/// A log file written at explicit offsets, shared by many threads (the WAL
/// slots finish in any order and hand their bytes over from any thread).
pub trait LogFile: Send + Sync + Debug {
    /// Writes all of `data` at `offset`; on return the OS has it (it
    /// survives `kill -9`). A short write is an error.
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()>;
    /// Makes every byte written so far durable (fdatasync).
    fn sync_data(&self) -> Result<()>;
    /// The file's path.
    fn path(&self) -> &Path;
}

/// [`LogFile`] over a [`WritableFile`]: positional writes must arrive in
/// file order (`offset` == bytes written so far), which the WAL's ordered
/// sink guarantees. The default for file systems without positional writes.
#[derive(Debug)]
pub(crate) struct AppendLogFile {
    file: parking_lot::Mutex<Box<dyn WritableFile>>,
    path: std::path::PathBuf,
}

impl AppendLogFile {
    /// Wraps `file` (writes continue at its current length).
    pub(crate) fn new(file: Box<dyn WritableFile>) -> AppendLogFile {
        AppendLogFile {
            path: file.path().to_path_buf(),
            file: parking_lot::Mutex::new(file),
        }
    }
}

impl LogFile for AppendLogFile {
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let mut f = self.file.lock();
        if f.len() != offset {
            return Err(crate::error::Error::InvalidArgument(format!(
                "{}: positional write at {offset} but the file has {} bytes (this file system \
                 only appends)",
                self.path.display(),
                f.len()
            )));
        }
        f.append(data)
    }
    fn sync_data(&self) -> Result<()> {
        self.file.lock().sync_data()
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

/// A file read front to back.
pub trait SequentialFile: Send + Debug {
    /// Reads up to `buf.len()` bytes; 0 means end of file.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
    /// The file's path.
    fn path(&self) -> &Path;
}

/// A file read at arbitrary offsets from many threads (pread).
pub trait RandomAccessFile: Send + Sync + Debug {
    /// Reads up to `buf.len()` bytes at `offset`; fewer only at end of file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize>;
    /// The file's path.
    fn path(&self) -> &Path;
    /// For a file opened with O_DIRECT, the alignment its transfers need
    /// (offset, length and buffer address); `None` for buffered files. A
    /// read that is already aligned this way costs no bounce copy, so large
    /// readers (scan read-ahead) align their own buffers.
    fn direct_alignment(&self) -> Option<usize> {
        None
    }
}

/// An advisory lock on a file, released on drop.
pub trait FileLock: Send + Sync + Debug {}

/// The operations the engine needs from a file system.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Names of the entries in `dir`.
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>>;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> Result<bool>;
    /// Whether `path` is a directory (false if missing).
    fn is_dir(&self, path: &Path) -> Result<bool>;
    /// Creates (or truncates) `path` for appending.
    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) `path` as a [`LogFile`]. The default appends
    /// through [`create_writable`](Self::create_writable) and so needs
    /// writes in file order.
    fn create_log_file(&self, path: &Path) -> Result<Arc<dyn LogFile>> {
        Ok(Arc::new(AppendLogFile::new(self.create_writable(path)?)))
    }
    /// Opens `path` to read front to back.
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    /// Opens `path` for positional reads.
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Size of `path` in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, dir: &Path) -> Result<()>;
    /// Atomically renames `from` to `to` (replacing `to`).
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Makes `dst` a second name of the file `src` (a hard link). File
    /// systems without links return an error; callers fall back to copying.
    fn hard_link(&self, src: &Path, dst: &Path) -> Result<()> {
        Err(crate::error::Error::InvalidArgument(format!(
            "hard links are not supported by this file system ({} -> {})",
            src.display(),
            dst.display()
        )))
    }
    /// Cuts `path` to `len` bytes and makes the new length durable.
    fn truncate(&self, path: &Path, len: u64) -> Result<()>;
    /// Makes the directory's entries (creates, renames, removes) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Opens `path` for positional reads that bypass the page cache
    /// (O_DIRECT). File systems without direct IO return an error.
    fn open_random_access_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Err(crate::error::Error::InvalidArgument(format!(
            "direct IO is not supported by this file system ({})",
            path.display()
        )))
    }
    /// Creates (or truncates) `path` for appending with O_DIRECT. Appended
    /// bytes may stay in user space until `sync_data`.
    fn create_writable_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(crate::error::Error::InvalidArgument(format!(
            "direct IO is not supported by this file system ({})",
            path.display()
        )))
    }
    /// Whether this file system's paths are plain operating-system files, so
    /// the WAL may write them behind the trait's back: through a shared
    /// memory mapping (`wal::MappedLog`) or an io_uring (`wal::UringLog`).
    /// Wrappers that track or fake writes (the fault-injecting file system)
    /// must say no, and then get every WAL write through
    /// [`create_log_file`](Self::create_log_file). Default `false`.
    fn uses_os_files(&self) -> bool {
        false
    }
    /// Takes an exclusive, non-blocking lock on `path` (created if missing).
    /// Returns `Ok(None)` if someone else holds it.
    fn try_lock(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>>;
}
