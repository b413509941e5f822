//! The OS side of in-place writes: [`PosixInPlace`] (an open file, written
//! at offsets, allocated with `fallocate` or zeros, synced with
//! `fdatasync`) and [`SharedMap`], a `MAP_SHARED` mapping of such a file
//! (the mapped WAL and the blob staging slots store into it).
//!
//! Thread-safety: `PosixInPlace` is `Sync` (positional syscalls only).
//! `SharedMap` owns its mapping: the pointer is handed out only as a raw
//! pointer whose use each caller proves safe, and the mapping is unmapped
//! exactly once, on drop. Invariants: a `SharedMap` maps exactly `len`
//! bytes, and the file was at least that long when it was mapped or grown
//! (so a store into it cannot fault past the end of the file).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use super::fs::{InPlaceFile, Preallocate};
use crate::error::{Error, Result};

/// Bytes of zeros written at a time by [`Preallocate::ZeroFill`].
const ZERO_STEP: usize = 1 << 20;

/// An OS error of `what` on `path`, from `errno`.
pub(crate) fn last_os_error(path: &Path, what: &str) -> Error {
    let e = std::io::Error::last_os_error();
    Error::io(path, std::io::Error::new(e.kind(), format!("{what}: {e}")))
}

/// A plain OS file written in place.
#[derive(Debug)]
pub(crate) struct PosixInPlace {
    file: File,
    path: PathBuf,
    direct: bool,
}

impl PosixInPlace {
    /// Opens (`create`: creates or truncates) `path` for reads and writes,
    /// with `O_DIRECT` when `direct`.
    pub(crate) fn open(path: &Path, create: bool, direct: bool) -> Result<PosixInPlace> {
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        if create {
            o.create(true).truncate(true);
        }
        if direct {
            o.custom_flags(libc::O_DIRECT);
        }
        let file = o.open(path).map_err(|e| Error::io(path, e))?;
        Ok(PosixInPlace {
            file,
            path: path.to_path_buf(),
            direct,
        })
    }
}

impl InPlaceFile for PosixInPlace {
    fn path(&self) -> &Path {
        &self.path
    }

    fn os_file(&self) -> &File {
        &self.file
    }

    fn is_direct(&self) -> bool {
        self.direct
    }

    fn write_at(&self, data: &[u8], offset: u64) -> Result<()> {
        self.file
            .write_all_at(data, offset)
            .map_err(|e| Error::io(&self.path, e))
    }

    fn allocate(&self, from: u64, len: u64, how: Preallocate) -> Result<()> {
        allocate(&self.file, &self.path, how, from, len)
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.file.set_len(len).map_err(|e| Error::io(&self.path, e))
    }

    fn sync_data(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }
}

/// Reserves `[from, len)` of `file` the way `how` says (no holes: later
/// stores cannot hit ENOSPC); `[0, from)` is reserved already.
pub(crate) fn allocate(
    file: &File,
    path: &Path,
    how: Preallocate,
    from: u64,
    len: u64,
) -> Result<()> {
    if how == Preallocate::ZeroFill {
        let zeros = vec![0u8; ZERO_STEP];
        let mut at = from;
        while at < len {
            let n = (len - at).min(ZERO_STEP as u64) as usize;
            file.write_all_at(&zeros[..n], at)
                .map_err(|e| Error::io(path, e))?;
            at += n as u64;
        }
        return Ok(());
    }
    let len = libc::off_t::try_from(len)
        .map_err(|_| Error::InvalidArgument(format!("a file of {len} bytes is too large")))?;
    loop {
        // SAFETY: plain syscall on a file descriptor this function borrows for
        // its duration; no memory is passed.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
        if rc == 0 {
            return Ok(());
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(last_os_error(path, "fallocate"));
        }
    }
}

/// A `MAP_SHARED`, writable mapping of the first `len` bytes of a file.
pub(crate) struct SharedMap {
    ptr: NonNull<u8>,
    len: usize,
    path: PathBuf,
}

// SAFETY: the mapping is owned by this value alone; the pointer is handed
// out only raw, to callers whose own exclusion (a lane's mutex, a log's
// lock) orders every access, so moving or sharing the value moves or shares
// no unsynchronised access by itself.
unsafe impl Send for SharedMap {}
// SAFETY: as for `Send`: `&SharedMap` gives only the raw pointer and the
// length, never a reference into the mapping.
unsafe impl Sync for SharedMap {}

impl std::fmt::Debug for SharedMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMap")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish()
    }
}

impl SharedMap {
    /// Maps the first `len` bytes of `file`, which must be at least that
    /// long (allocated by [`InPlaceFile::allocate`]).
    pub(crate) fn new(file: &dyn InPlaceFile, len: usize) -> Result<SharedMap> {
        assert!(len > 0, "a mapping of 0 bytes");
        let path = file.path();
        // SAFETY: a fresh shared mapping of `len` bytes of a file that is at
        // least `len` bytes long; the kernel picks the address, so no
        // existing memory is replaced.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.os_file().as_raw_fd(),
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(last_os_error(path, "mmap"));
        }
        let ptr = NonNull::new(raw.cast::<u8>()).ok_or_else(|| last_os_error(path, "mmap"))?;
        Ok(SharedMap {
            ptr,
            len,
            path: path.to_path_buf(),
        })
    }

    /// The start of the mapping (valid for `len()` bytes until the next
    /// [`remap`](Self::remap) or the drop).
    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// Bytes mapped.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Moves the mapping over the first `new_len` bytes of the file (which
    /// must be that long now). The start may move: pointers from before
    /// are dead.
    pub(crate) fn remap(&mut self, new_len: usize) -> Result<()> {
        // SAFETY: `ptr`/`len` describe our live mapping (struct invariant);
        // `&mut self` means no caller holds a pointer it will use again
        // (the contract of `ptr`), and MREMAP_MAYMOVE's result replaces
        // `ptr` before any further use.
        let raw = unsafe {
            libc::mremap(
                self.ptr.as_ptr().cast(),
                self.len,
                new_len,
                libc::MREMAP_MAYMOVE,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(last_os_error(&self.path, "mremap"));
        }
        self.ptr =
            NonNull::new(raw.cast::<u8>()).ok_or_else(|| last_os_error(&self.path, "mremap"))?;
        self.len = new_len;
        Ok(())
    }

    /// Drops `[from, to)` (whole pages) from the mapping (`MADV_DONTNEED`):
    /// the pages keep their contents and dirty state in the page cache.
    /// Advice only: returns whether the kernel took it.
    ///
    /// # Safety
    /// Nothing may read or write `[from, to)` through the mapping again.
    pub(crate) unsafe fn release(&self, from: usize, to: usize) -> bool {
        debug_assert!(from <= to && to <= self.len);
        // SAFETY: `[from, to)` lies inside our mapping (checked above, the
        // caller's range) and nothing uses it again (the contract);
        // MADV_DONTNEED on a shared file mapping only unmaps the pages.
        let rc = unsafe {
            libc::madvise(
                self.ptr.as_ptr().add(from).cast(),
                to - from,
                libc::MADV_DONTNEED,
            )
        };
        rc == 0
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: our own live mapping (struct invariant), unmapped once;
        // no pointer into it is used after the owner is dropped.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores through the mapping are the file's bytes (and a grown
    /// mapping keeps them); `allocate` both ways leaves zeros.
    #[test]
    fn stores_through_a_mapping_land_in_the_file() {
        for how in [Preallocate::Fallocate, Preallocate::ZeroFill] {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("m");
            let f = PosixInPlace::open(&path, true, false).expect("open");
            f.allocate(0, 8192, how).expect("allocate");
            let mut m = SharedMap::new(&f, 8192).expect("map");
            // SAFETY: 8192 bytes mapped, this test is the only user.
            unsafe { std::ptr::copy_nonoverlapping(b"abc".as_ptr(), m.ptr().as_ptr(), 3) };
            f.allocate(8192, 16384, how).expect("allocate more");
            m.remap(16384).expect("remap");
            // SAFETY: 16384 bytes mapped now.
            unsafe { *m.ptr().as_ptr().add(16383) = b'z' };
            f.sync_data().expect("sync");
            let got = std::fs::read(&path).expect("read");
            assert_eq!(got.len(), 16384);
            assert_eq!(&got[..3], b"abc");
            assert_eq!(got[16383], b'z');
            assert!(got[3..16383].iter().all(|&b| b == 0));
        }
    }
}
