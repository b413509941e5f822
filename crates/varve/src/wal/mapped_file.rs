//! A WAL file appended through a shared memory mapping instead of one
//! `write(2)` per record (a trick of the engines of the PolarDB 2018 engine
//! contest).
//!
//! The file is preallocated with `fallocate` (or, when asked, by writing
//! zeros: see [`Preallocate`]) and mapped `MAP_SHARED`; an
//! append is a `memcpy` into the mapping. The bytes land in the kernel's page
//! cache the moment they are copied, so an appended record survives `kill -9`
//! of the process exactly like a `write(2)` would; `sync_data` is
//! `fdatasync`, which writes back pages dirtied through the mapping too. A
//! record never straddles unallocated space: the file is allocated before it
//! is mapped and grown (allocate, then `mremap`) before an append that would
//! not fit, so a full disk surfaces as an error from `fallocate`, never as a
//! `SIGBUS`. Space past the logical end reads as zeros, which the WAL reader
//! already treats as the end of the log; on drop the file is cut back to its
//! logical length.
//!
//! [`MappedLog`] puts one behind the slot WAL's [`LogFile`] boundary: the
//! slot sink hands it byte ranges strictly in log order, each copied under a
//! short lock, while `fdatasync` runs on a second handle of the file outside
//! that lock, so writers keep copying while the log syncs.
//!
//! Thread-safety: the owner appends through `&mut self`; the mapping is
//! private to this value (never handed out), so no other reference to it
//! exists while it is written, grown or unmapped. Invariants: `ptr` maps
//! exactly `cap` bytes of the file, `released <= len <= cap`, and the file
//! is at least `cap` bytes long. Bytes below `released` were dropped from
//! the mapping once written (see `RELEASE_STEP`) and are never touched
//! through it again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
pub(crate) use crate::io::Preallocate;
use crate::io::{FileSystem, InPlaceFile, LogFile, SharedMap, WritableFile};

/// Granularity of the mapping and of growth.
const GROW_STEP: usize = 1 << 20;
/// Growth doubles the mapping up to this step, then adds it each time.
const MAX_GROWTH: usize = 16 << 20;

/// Whole steps of appended bytes are dropped from the mapping
/// (`MADV_DONTNEED`) behind the tail. An `fdatasync` of a page that is still
/// mapped must write-protect it first (`page_mkclean`), and with the
/// process running on another CPU each such page costs a TLB-shootdown
/// interrupt there: `perf` of a single-threaded 100-byte put loop showed
/// the syncing thread in `smp_call_function_many_cond` for 28% of all
/// samples. Dropped pages are no longer mapped, so writeback cleans them
/// without one; dropping a step costs a single flush of its range. The
/// pages keep their data and dirty state (a shared file mapping's contents
/// are the page cache's), so `kill -9` and `sync_data` see every byte.
const RELEASE_STEP: usize = 256 << 10;

/// A log file written through a `MAP_SHARED` mapping of preallocated space.
pub(crate) struct MappedLogFile {
    file: Arc<dyn InPlaceFile>,
    how: Preallocate,
    path: PathBuf,
    map: SharedMap,
    len: usize,
    /// Bytes at the front whose pages were dropped from the mapping
    /// ([`RELEASE_STEP`]s, all before `len`): written once, never touched
    /// again, their dirty pages stay in the page cache.
    released: usize,
}

impl std::fmt::Debug for MappedLogFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedLogFile")
            .field("path", &self.path)
            .field("len", &self.len)
            .field("cap", &self.map.len())
            .finish()
    }
}

fn round_up(n: usize) -> usize {
    n.div_ceil(GROW_STEP).max(1) * GROW_STEP
}

/// Copies `src` to `dst` with stores that run strictly front to back, so a
/// process killed in the middle of the copy leaves a prefix of `src` in the
/// page cache, i.e. a torn tail. `memcpy` gives no such order: glibc's
/// vector copy for a few hundred bytes to a few KiB stores the first vector
/// *last*, so a `kill -9` between the two would leave zeros where a record
/// header belongs with valid records after them — a hole, which recovery
/// must refuse as corruption. Volatile stores are neither merged nor
/// reordered by the compiler, and stores that executed before the kill
/// reach the page cache in program order on x86 and elsewhere alike.
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` bytes and must not overlap
/// `src`.
unsafe fn copy_front_to_back(dst: *mut u8, src: &[u8]) {
    let n = src.len();
    let mut i = 0;
    while i < n && !(dst as usize + i).is_multiple_of(8) {
        // SAFETY: `i < n`, and `dst` is valid for `n` bytes (contract).
        unsafe { std::ptr::write_volatile(dst.add(i), src[i]) };
        i += 1;
    }
    while i + 8 <= n {
        let mut word = [0u8; 8];
        word.copy_from_slice(&src[i..i + 8]);
        // SAFETY: `dst + i` is 8-aligned (the loop above) and `i + 8 <= n`
        // bytes are writable (contract).
        unsafe { std::ptr::write_volatile(dst.add(i).cast::<u64>(), u64::from_ne_bytes(word)) };
        i += 8;
    }
    while i < n {
        // SAFETY: as in the first loop.
        unsafe { std::ptr::write_volatile(dst.add(i), src[i]) };
        i += 1;
    }
}

impl MappedLogFile {
    /// Creates (or truncates) `path`, allocates `capacity` bytes (rounded up
    /// to 1 MiB) and maps them. The mapping grows as appends need: doubling
    /// up to 16 MiB steps, then by 16 MiB. Fails where the file system has no
    /// `fallocate` or `mmap`; the caller then falls back to plain appends.
    #[cfg(test)]
    pub(crate) fn create(path: &Path, capacity: usize) -> Result<Self> {
        Self::create_with(&crate::io::PosixFs, path, capacity, Preallocate::Fallocate)
    }

    /// `create` on `fs`, preallocating the way `how` says.
    pub(crate) fn create_with(
        fs: &dyn FileSystem,
        path: &Path,
        capacity: usize,
        how: Preallocate,
    ) -> Result<Self> {
        let file = fs.open_in_place(path, true, false)?;
        let cap = round_up(capacity);
        file.allocate(0, cap as u64, how)?;
        let map = SharedMap::new(file.as_ref(), cap)?;
        Ok(MappedLogFile {
            file,
            how,
            path: path.to_path_buf(),
            map,
            len: 0,
            released: 0,
        })
    }

    /// Bytes allocated and mapped.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.map.len()
    }

    /// Makes room for `need` bytes in total: allocates more file space, then
    /// moves the mapping over it.
    fn grow(&mut self, need: usize) -> Result<()> {
        let cap = self.map.len();
        let new_cap = round_up(need.max(cap.saturating_add(cap.min(MAX_GROWTH))));
        self.file.allocate(cap as u64, new_cap as u64, self.how)?;
        // No pointer into the mapping outlives an append, so none is used
        // after the move.
        self.map.remap(new_cap)
    }

    /// Drops the pages of the whole [`RELEASE_STEP`]s before the one the
    /// tail is in from the mapping (see `RELEASE_STEP`). Advice only: if
    /// the kernel refuses, the pages just stay mapped.
    fn release_written(&mut self) {
        let upto = self.len / RELEASE_STEP * RELEASE_STEP;
        if upto <= self.released {
            return;
        }
        debug_assert!(upto <= self.len && self.released.is_multiple_of(RELEASE_STEP));
        // SAFETY: `[released, upto)` holds only bytes already appended,
        // which nothing reads or writes through the mapping again (appends
        // go to `len` and beyond, and `upto` is at most the start of the
        // tail's step); it is whole pages inside the mapping.
        if unsafe { self.map.release(self.released, upto) } {
            self.released = upto;
        }
    }
}

impl WritableFile for MappedLogFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let end = self
            .len
            .checked_add(data.len())
            .ok_or_else(|| Error::InvalidArgument("WAL length overflow".into()))?;
        if end > self.map.len() {
            self.grow(end)?;
        }
        // SAFETY: `[len, end)` lies inside the mapping (`end <= cap`, checked
        // or grown above), which is writable and backed by allocated file
        // space; `data` is a separate Rust slice, so the ranges cannot
        // overlap, and `&mut self` excludes any other access to the mapping.
        unsafe {
            copy_front_to_back(self.map.ptr().as_ptr().add(self.len), data);
        }
        self.len = end;
        self.release_written();
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        // fdatasync writes back every dirty page of the file, including the
        // ones dirtied through the mapping (on Linux msync(MS_SYNC) is the
        // same operation).
        self.file.sync_data()
    }

    fn len(&self) -> u64 {
        self.len as u64
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// A [`MappedLogFile`] as the slot WAL's [`LogFile`]: positional writes
/// must arrive in log order (`offset` == bytes written so far), which the
/// WAL's ordered sink guarantees; `sync_data` does not wait for writers.
pub(crate) struct MappedLog {
    file: Mutex<MappedLogFile>,
    /// The same file, synced outside the lock.
    sync_handle: Arc<dyn InPlaceFile>,
    path: PathBuf,
}

impl std::fmt::Debug for MappedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedLog")
            .field("path", &self.path)
            .finish()
    }
}

impl MappedLog {
    pub(crate) fn new(file: MappedLogFile) -> Result<MappedLog> {
        Ok(MappedLog {
            path: file.path.clone(),
            sync_handle: Arc::clone(&file.file),
            file: Mutex::new(file),
        })
    }
}

impl LogFile for MappedLog {
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let mut f = self.file.lock();
        if f.len() != offset {
            return Err(Error::InvalidArgument(format!(
                "{}: mapped log written at {offset} but it holds {} bytes (writes must come in log order)",
                self.path.display(),
                f.len()
            )));
        }
        f.append(data)
    }

    fn sync_data(&self) -> Result<()> {
        // Same inode, so this covers every page dirtied through the mapping.
        self.sync_handle.sync_data()
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for MappedLogFile {
    fn drop(&mut self) {
        // The mapping goes with `map`; the preallocated tail is cut off
        // (zeros the reader would stop at anyway, so an error is harmless).
        let _ = self.file.set_len(self.len as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().expect("tempdir")
    }

    #[test]
    fn appends_land_in_the_file_and_drop_cuts_the_tail() {
        let dir = tmp();
        let path = dir.path().join("000001.log");
        let mut f = MappedLogFile::create(&path, 10).expect("create");
        assert_eq!(f.capacity(), GROW_STEP);
        f.append(b"hello ").expect("append");
        f.append(b"world").expect("append");
        assert_eq!(f.len(), 11);
        // Visible through the page cache before any sync (what kill -9 keeps).
        let seen = std::fs::read(&path).expect("read");
        assert_eq!(seen.len(), GROW_STEP);
        assert_eq!(&seen[..11], b"hello world");
        assert!(seen[11..].iter().all(|&b| b == 0));
        f.sync_data().expect("sync");
        drop(f);
        assert_eq!(std::fs::read(&path).expect("read"), b"hello world");
    }

    #[test]
    fn bytes_dropped_from_the_mapping_stay_in_the_file() {
        let dir = tmp();
        let path = dir.path().join("released.log");
        let mut f = MappedLogFile::create(&path, 1 << 20).unwrap();
        let mut want = Vec::new();
        let mut i = 0u32;
        // Records of odd sizes across several release steps and a growth.
        while want.len() < 5 * RELEASE_STEP / 2 + 3 * (1 << 20) {
            let rec: Vec<u8> = (0..(i % 97 + 1) * 37).map(|j| (i ^ j) as u8).collect();
            f.append(&rec).unwrap();
            want.extend_from_slice(&rec);
            i += 1;
        }
        assert!(
            f.released >= 2 * RELEASE_STEP,
            "steps behind the tail were dropped"
        );
        assert!(f.released <= want.len());
        // Read through the file, not the mapping: the dropped pages are
        // still in the page cache, before and after a sync.
        let read_back = |f: &MappedLogFile| {
            let mut got = vec![0u8; want.len()];
            std::os::unix::fs::FileExt::read_exact_at(f.file.os_file(), &mut got, 0).unwrap();
            got
        };
        assert!(read_back(&f) == want);
        f.sync_data().unwrap();
        assert!(read_back(&f) == want);
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    #[test]
    fn growing_keeps_every_byte_and_moves_the_mapping_safely() {
        for how in [Preallocate::Fallocate, Preallocate::ZeroFill] {
            grows_keeping_every_byte(how);
        }
    }

    #[test]
    fn front_to_back_copy_is_exact_at_every_alignment_and_length() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        for offset in 0..16 {
            for len in 0..src.len() - 16 {
                let mut dst = vec![0xeeu8; 320];
                // SAFETY: `dst[offset..offset + len]` is inside `dst`, a
                // buffer separate from `src`.
                unsafe { copy_front_to_back(dst.as_mut_ptr().add(offset), &src[..len]) };
                assert_eq!(
                    &dst[offset..offset + len],
                    &src[..len],
                    "offset {offset} len {len}"
                );
                assert!(
                    dst[..offset].iter().all(|&b| b == 0xee),
                    "wrote before the range"
                );
                assert!(
                    dst[offset + len..].iter().all(|&b| b == 0xee),
                    "wrote past the range"
                );
            }
        }
    }

    #[test]
    fn zero_filled_space_is_written_zeros_past_the_end() {
        let dir = tmp();
        let path = dir.path().join("000003.log");
        let mut f =
            MappedLogFile::create_with(&crate::io::PosixFs, &path, 1, Preallocate::ZeroFill)
                .expect("create");
        f.append(b"abc").expect("append");
        f.append(&vec![7u8; GROW_STEP])
            .expect("append past the first step");
        let cap = f.capacity();
        // While open, the file spans the whole capacity: data, then zeros.
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len(), cap);
        assert_eq!(&bytes[..3], b"abc");
        assert!(bytes[3 + GROW_STEP..].iter().all(|&b| b == 0));
        drop(f);
        assert_eq!(
            std::fs::metadata(&path).expect("stat").len(),
            3 + GROW_STEP as u64
        );
    }

    fn grows_keeping_every_byte(how: Preallocate) {
        let dir = tmp();
        let path = dir.path().join("000002.log");
        let mut f = MappedLogFile::create_with(&crate::io::PosixFs, &path, 1, how).expect("create");
        let mut expect = Vec::new();
        // Mixed sizes, including one append larger than twice the capacity.
        for i in 0..200u32 {
            let chunk = vec![(i % 251) as u8; 1 + (i as usize * 977) % 40_000];
            f.append(&chunk).expect("append");
            expect.extend_from_slice(&chunk);
        }
        let big = vec![0xabu8; 5 * GROW_STEP + 3];
        f.append(&big).expect("append big");
        expect.extend_from_slice(&big);
        assert!(f.capacity() >= expect.len());
        assert_eq!(f.len(), expect.len() as u64);
        drop(f);
        assert_eq!(std::fs::read(&path).expect("read"), expect);
    }

    #[test]
    fn moves_between_threads() {
        let dir = tmp();
        let path = dir.path().join("000003.log");
        let mut f = MappedLogFile::create(&path, 4096).expect("create");
        f.append(b"a").expect("append");
        let f = std::thread::spawn(move || {
            f.append(b"b").expect("append");
            f
        })
        .join()
        .expect("thread");
        drop(f);
        assert_eq!(std::fs::read(&path).expect("read"), b"ab");
    }

    #[test]
    fn mapped_log_takes_writes_in_log_order_and_syncs_beside_them() {
        let dir = tmp();
        let path = dir.path().join("000005.log");
        let log = std::sync::Arc::new(
            MappedLog::new(MappedLogFile::create(&path, 4096).expect("create")).expect("log"),
        );
        log.write_at(0, b"abc").expect("write");
        let err = log.write_at(10, b"x").expect_err("out of order");
        assert!(err.to_string().contains("log order"), "{err}");
        let syncer = {
            let log = std::sync::Arc::clone(&log);
            std::thread::spawn(move || {
                for _ in 0..20 {
                    log.sync_data().expect("sync");
                }
            })
        };
        let mut off = 3u64;
        for i in 0..2000u32 {
            let rec = i.to_le_bytes();
            log.write_at(off, &rec).expect("write");
            off += rec.len() as u64;
        }
        syncer.join().expect("syncer");
        drop(log);
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len() as u64, off);
        assert_eq!(&bytes[..3], b"abc");
        assert_eq!(&bytes[3..7], &0u32.to_le_bytes());
    }

    #[test]
    fn missing_directory_is_a_clear_error() {
        let dir = tmp();
        let path = dir.path().join("no-such-dir").join("000004.log");
        let err = MappedLogFile::create(&path, 4096).expect_err("no dir");
        assert!(err.to_string().contains("000004.log"), "{err}");
    }
}
