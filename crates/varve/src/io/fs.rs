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

/// The whole of file `path`, read front to back through `fs` (the WAL
/// reader, the staging files of a crash, `BOOT_ID`).
pub(crate) fn read_file(fs: &dyn FileSystem, path: &Path) -> Result<Vec<u8>> {
    let mut file = fs.open_sequential(path)?;
    let mut data = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut chunk)?;
        if n == 0 {
            return Ok(data);
        }
        data.extend_from_slice(&chunk[..n]);
    }
}

/// The kernel's id of this boot, read once.
pub(crate) fn machine_boot_id() -> [u8; 36] {
    static ID: std::sync::OnceLock<[u8; 36]> = std::sync::OnceLock::new();
    *ID.get_or_init(|| {
        let mut id = [0u8; 36];
        if let Ok(s) = std::fs::read("/proc/sys/kernel/random/boot_id")
            && let Some(b) = s.get(..36)
        {
            id.copy_from_slice(b);
        }
        id
    })
}

/// How [`InPlaceFile::allocate`] reserves file space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preallocate {
    /// `fallocate`: instant, but on ext4 and XFS the space is *unwritten*
    /// extents, and the first fdatasync after bytes land in one must also
    /// commit its conversion to written (a journal commit).
    Fallocate,
    /// `pwrite` of zeros: costs the write once, but later fdatasyncs of
    /// bytes stored over them only write data (the extents are already
    /// written), like a recycled log file.
    ZeroFill,
}

/// A file the engine writes in place rather than by appends: through a
/// shared memory mapping of it (the mapped WAL, the blob staging slots),
/// with positional writes (a crash's staged bytes copied back), or with
/// `O_DIRECT` writes of whole chunks that an io_uring issues on its file
/// descriptor (blob files). Every such write is in the page cache or on
/// the device when it returns, so it survives `kill -9`; only
/// [`sync_data`](Self::sync_data) makes it survive a power loss.
///
/// The engine reaches the OS file through [`os_file`](Self::os_file) for
/// `mmap` and io_uring; a wrapper that models durability (the
/// fault-injecting file system) keeps the same OS file underneath, so the
/// engine's code path is the production one, and sees what those writes
/// did at each `sync_data` and at a simulated power loss.
pub trait InPlaceFile: Send + Sync + Debug {
    /// The file's path.
    fn path(&self) -> &Path;
    /// The open OS file (for `mmap` and io_uring writes on its descriptor).
    fn os_file(&self) -> &std::fs::File;
    /// Whether it was opened with `O_DIRECT`.
    fn is_direct(&self) -> bool;
    /// Called before a write of `len` bytes that goes to the OS file behind
    /// this trait's back (an io_uring direct write on its descriptor): a
    /// wrapper that injects faults may refuse it here. Default: allowed.
    fn check_write(&self, len: u64) -> Result<()> {
        let _ = len;
        Ok(())
    }
    /// Writes all of `data` at `offset` (aligned for a direct file).
    fn write_at(&self, data: &[u8], offset: u64) -> Result<()>;
    /// Reserves `[from, len)` (so that later stores into a mapping of it
    /// cannot hit ENOSPC as a `SIGBUS`); `[0, from)` is reserved already.
    fn allocate(&self, from: u64, len: u64, how: Preallocate) -> Result<()>;
    /// Sets the file's length (not durable until `sync_data`).
    fn set_len(&self, len: u64) -> Result<()>;
    /// Makes every byte written so far, by any of the ways above, durable
    /// (fdatasync).
    fn sync_data(&self) -> Result<()>;
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
    /// Opens `path` to be written in place ([`InPlaceFile`]): created (or
    /// truncated) when `create`, else it must exist; with `O_DIRECT` when
    /// `direct` (an error where the file system refuses it: callers fall
    /// back to a buffered file). File systems without OS files return an
    /// `ErrorKind::Unsupported` error ([`Error::is_unsupported`](crate::Error::is_unsupported)),
    /// and callers fall back to appends.
    fn open_in_place(
        &self,
        path: &Path,
        create: bool,
        direct: bool,
    ) -> Result<Arc<dyn InPlaceFile>> {
        let _ = (create, direct);
        Err(crate::error::Error::unsupported(
            path,
            "in-place writes are not supported by this file system",
        ))
    }
    /// Whether this file system's paths are plain operating-system files, so
    /// the io_uring WAL (`WalWriter::IoUring`, not the default) may write
    /// them behind the trait's back. Every write path of the defaults goes
    /// through [`open_in_place`](Self::open_in_place) instead, which the
    /// fault-injecting file system tracks; it says no here, and then gets
    /// that WAL's writes through [`create_log_file`](Self::create_log_file).
    /// Default `false`.
    fn uses_os_files(&self) -> bool {
        false
    }
    /// The id of this boot of the machine (`/proc/sys/kernel/random/boot_id`,
    /// 36 bytes; zeros where there is none). Blob staging files are stamped
    /// with it: after a restart their pages may be any mix of old and new,
    /// so an open ignores staging files of another boot. A file system that
    /// simulates power cuts gives each its own.
    fn boot_id(&self) -> [u8; 36] {
        machine_boot_id()
    }
    /// Takes an exclusive, non-blocking lock on `path` (created if missing).
    /// Returns `Ok(None)` if someone else holds it.
    fn try_lock(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>>;
}
