//! [`StagedFile`]: a write lane's blob file written in whole, page-aligned
//! chunks with `O_DIRECT`, its open chunk staged in a small memory-mapped
//! file beside it (`nnnnnn.blob.stage`, `docs/blob-files.md`, "Staging and
//! direct IO").
//!
//! A value is copied into the staging mapping (page cache: it survives
//! `kill -9`) and the staging header records how many bytes are staged and
//! their CRC. When the lane ends a chunk, the staged chunk goes to the blob
//! file with one direct write, and the staging area is reused for the next
//! chunk: blob bytes reach the disk once, in large aligned writes, and the
//! page cache holds only the staging area. [`StagedFile::flush_partial`]
//! writes the staged bytes so far (rounded up to whole pages; the next
//! write of the chunk overwrites the padding) so that a reader or a sync
//! finds them in the blob file. After a crash, [`apply_stage`] copies the
//! staged bytes into the blob file if the staging file was written since
//! the machine booted (the header records the kernel's boot id): then its
//! pages were in the page cache the whole time and are exactly what the
//! lane staged. After a restart (a power loss) the staging file may hold
//! any mix of old and new pages, so it is ignored; no `sync` write relied
//! on it (a sync writes the staged bytes to the blob file and fdatasyncs
//! that), and each value is still checked against its pointer's CRC when
//! read.
//!
//! Single-threaded (`&mut self`; the lane's mutex). Invariants: the blob
//! file holds every byte below `base + flushed`; staged bytes are never
//! changed once staged, until their chunk is written; the staging header's
//! count covers exactly the staged bytes (raised after they are copied).

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use super::format::PAGE;
use crate::error::{Error, Result};
use crate::util::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64};
use crate::wal::{Preallocate, allocate, map_shared};

const STAGE_MAGIC: &[u8; 8] = b"varveSTG";
const STAGE_VERSION: u32 = 1;
/// Bytes of the staging header that its CRC covers.
const HEADER_LEN: usize = 72;

/// The kernel's id of this boot (`/proc/sys/kernel/random/boot_id`, 36
/// bytes; zeros where there is none).
fn boot_id() -> [u8; 36] {
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

/// What a staging file's name adds to its blob file's.
const STAGE_SUFFIX: &str = ".stage";

/// The staging file of blob file `path`.
pub(crate) fn stage_path(blob: &Path) -> PathBuf {
    let mut s = blob.as_os_str().to_owned();
    s.push(STAGE_SUFFIX);
    PathBuf::from(s)
}

/// True for the name of a staging file (`nnnnnn.blob.stage`).
pub(crate) fn is_stage_file_name(name: &str) -> bool {
    name.strip_suffix(STAGE_SUFFIX).is_some_and(|blob| {
        matches!(
            crate::filenames::parse(blob),
            Some(crate::filenames::FileKind::Blob(_))
        )
    })
}

/// A shared, writable mapping of a whole file of fixed length.
struct StageMap {
    ptr: NonNull<u8>,
    len: usize,
    file: File,
    path: PathBuf,
}

// SAFETY: the mapping is owned by this value alone (no aliasing handles
// are given out); moving it to another thread moves that ownership.
unsafe impl Send for StageMap {}

impl std::fmt::Debug for StageMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageMap")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish()
    }
}

impl StageMap {
    /// Creates (or truncates) `path` at `len` bytes (whole pages,
    /// allocated: a store into the mapping never meets a full disk) and
    /// maps it; the pages are touched once so that appends do not fault.
    fn create(path: &Path, len: usize) -> Result<StageMap> {
        debug_assert!(len > 0 && len.is_multiple_of(PAGE));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        allocate(&file, path, Preallocate::Fallocate, 0, len)?;
        let ptr = map_shared(&file, path, len)?;
        let mut m = StageMap {
            ptr,
            len,
            file,
            path: path.to_path_buf(),
        };
        m.bytes_mut().fill(0);
        Ok(m)
    }

    /// The whole mapping.
    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` bytes of `file`, which is never shorter
        // (allocated before every map, nothing else truncates it) and lives
        // as long as `self`; `&self` forbids writes through `bytes_mut`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Grows the file and the mapping to `len` bytes, keeping the content.
    fn grow(&mut self, len: usize) -> Result<()> {
        debug_assert!(len > self.len && len.is_multiple_of(PAGE));
        allocate(
            &self.file,
            &self.path,
            Preallocate::Fallocate,
            self.len,
            len,
        )?;
        let ptr = map_shared(&self.file, &self.path, len)?;
        self.unmap();
        self.ptr = ptr;
        self.len = len;
        Ok(())
    }

    fn unmap(&mut self) {
        // SAFETY: `ptr`/`len` are a mapping made by `map`; after this the
        // caller replaces or drops them, and no slice into it outlives the
        // `&mut self` borrow.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

impl Drop for StageMap {
    fn drop(&mut self) {
        self.unmap();
    }
}

/// A blob file written through a staging mapping and direct writes.
#[derive(Debug)]
pub(crate) struct StagedFile {
    path: PathBuf,
    number: u64,
    /// Shared with the lane's syncs, which fdatasync outside its mutex.
    file: Arc<File>,
    stage: StageMap,
    /// File offset of the staged chunk (whole pages).
    base: u64,
    /// Bytes staged at `base`.
    staged: usize,
    /// Of those, bytes already in the blob file.
    flushed: usize,
}

impl StagedFile {
    /// Creates blob file `path` (number `number`) and its staging file,
    /// with room for `capacity` staged bytes (grown when a value needs
    /// more).
    pub(crate) fn create(path: &Path, number: u64, capacity: usize) -> Result<StagedFile> {
        // Direct writes where the file system has them (not tmpfs before
        // Linux 6.6); the same aligned writes go through the page cache
        // elsewhere.
        let open = |flags: i32| {
            File::options()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(flags)
                .open(path)
        };
        let file = match open(libc::O_DIRECT) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => open(0),
            other => other,
        }
        .map_err(|e| Error::io(path, e))?;
        let capacity = capacity.max(PAGE).div_ceil(PAGE) * PAGE;
        let stage = StageMap::create(&stage_path(path), PAGE + capacity)?;
        let mut f = StagedFile {
            path: path.to_path_buf(),
            number,
            file: Arc::new(file),
            stage,
            base: 0,
            staged: 0,
            flushed: 0,
        };
        f.write_header();
        Ok(f)
    }

    /// The blob file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes appended so far (the file's logical length).
    pub(crate) fn len(&self) -> u64 {
        self.base + self.staged as u64
    }

    /// Bytes a reader finds in the blob file itself.
    pub(crate) fn readable_len(&self) -> u64 {
        self.base + self.flushed as u64
    }

    fn write_header(&mut self) {
        let mut h = Vec::with_capacity(HEADER_LEN + 4);
        h.extend_from_slice(STAGE_MAGIC);
        put_fixed32(&mut h, STAGE_VERSION);
        put_fixed64(&mut h, self.number);
        put_fixed64(&mut h, self.base);
        put_fixed64(&mut h, self.staged as u64);
        h.extend_from_slice(&boot_id());
        debug_assert_eq!(h.len(), HEADER_LEN);
        let c = crc32c::crc32c(&h);
        put_fixed32(&mut h, c);
        self.stage.bytes_mut()[..h.len()].copy_from_slice(&h);
    }

    /// Stages `data` after the bytes appended so far.
    pub(crate) fn append(&mut self, data: &[u8]) -> Result<()> {
        let end = PAGE + self.staged + data.len();
        if end > self.stage.len {
            self.stage.grow(end.div_ceil(PAGE) * PAGE)?;
        }
        let at = PAGE + self.staged;
        self.stage.bytes_mut()[at..at + data.len()].copy_from_slice(data);
        self.staged += data.len();
        // The count is raised after the bytes are in place: a process
        // killed in between leaves the old count, which covers whole values.
        self.write_header();
        Ok(())
    }

    /// Writes the staged bytes from `from` (rounded down to a page) to the
    /// end of the staged region (rounded up, the padding zeroed).
    fn write_staged(&mut self, from: usize) -> Result<()> {
        let start = from / PAGE * PAGE;
        let end = self.staged.div_ceil(PAGE) * PAGE;
        if end <= start {
            return Ok(());
        }
        let stage_end = PAGE + end;
        if stage_end > self.stage.len {
            self.stage.grow(stage_end)?;
        }
        let staged = self.staged;
        self.stage.bytes_mut()[PAGE + staged..stage_end].fill(0);
        let buf = &self.stage.bytes()[PAGE + start..stage_end];
        debug_assert_eq!(
            buf.as_ptr() as usize % PAGE,
            0,
            "direct IO needs an aligned buffer"
        );
        let offset = self.base + start as u64;
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| Error::io(&self.path, e))?;
        self.flushed = self.staged;
        Ok(())
    }

    /// Ends a chunk: the staged bytes (ending on a page boundary) go to the
    /// blob file, and the staging area starts over after them.
    pub(crate) fn end_chunk(&mut self) -> Result<()> {
        debug_assert_eq!(self.staged % PAGE, 0, "a chunk ends on a page boundary");
        let from = self.flushed;
        self.write_staged(from)?;
        self.base += self.staged as u64;
        self.staged = 0;
        self.flushed = 0;
        self.write_header();
        Ok(())
    }

    /// Writes the staged bytes not yet in the blob file (for a reader, a
    /// sync or a checkpoint).
    pub(crate) fn flush_partial(&mut self) -> Result<()> {
        if self.flushed < self.staged {
            let from = self.flushed;
            self.write_staged(from)?;
        }
        Ok(())
    }

    /// The blob file, to fdatasync it outside the lane's mutex after
    /// [`flush_partial`](Self::flush_partial).
    pub(crate) fn sync_handle(&self) -> Arc<File> {
        Arc::clone(&self.file)
    }

    /// After the last chunk (which must end on a page boundary): the blob
    /// file is durable at exactly its length, returned. The staging file
    /// stays until [`remove_stage`](Self::remove_stage) (a failure here
    /// leaves every staged byte where it was).
    pub(crate) fn finish(&mut self) -> Result<u64> {
        debug_assert_eq!(self.staged % PAGE, 0);
        self.end_chunk()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(self.base)
    }

    /// Writes every staged byte (the last page padded) and makes the blob
    /// file durable; returns its length. For a file given up after a
    /// failure: afterwards it holds every value ever staged.
    pub(crate) fn make_durable(&mut self) -> Result<u64> {
        self.flush_partial()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(self.base + (self.staged.div_ceil(PAGE) * PAGE) as u64)
    }

    /// The `len` bytes at file offset `offset` if all of them are still in
    /// the staging area (the current chunk), whether or not they were also
    /// written to the blob file.
    pub(crate) fn staged_range(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset.checked_sub(self.base)?).ok()?;
        let end = start.checked_add(len)?;
        (end <= self.staged).then(|| &self.stage.bytes()[PAGE + start..PAGE + end])
    }

    /// Closes the file and removes its staging file (once the blob file
    /// holds every staged byte durably).
    pub(crate) fn remove_stage(self) -> Result<()> {
        let stage = self.stage.path.clone();
        drop(self);
        std::fs::remove_file(&stage).map_err(|e| Error::io(&stage, e))
    }
}

/// What [`apply_stage`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StageOutcome {
    /// No staging file.
    None,
    /// `bytes` staged bytes were copied into the blob file at `offset`.
    Applied { offset: u64, bytes: u64 },
    /// The staging file did not check out (a power loss, or another
    /// file's); it was removed and the blob file left as it was.
    Ignored(String),
}

/// After a crash: copies the bytes staged for blob file `number` at `blob`
/// into it (buffered, then fdatasync) when the staging header checks out
/// and was written in this boot, and removes the staging file.
pub(crate) fn apply_stage(blob: &Path, number: u64) -> Result<StageOutcome> {
    let stage = stage_path(blob);
    let bytes = match std::fs::read(&stage) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StageOutcome::None),
        Err(e) => return Err(Error::io(&stage, e)),
    };
    let outcome = match parse_stage(&bytes, number) {
        Ok((base, data)) => {
            let f = File::options()
                .write(true)
                .open(blob)
                .map_err(|e| Error::io(blob, e))?;
            f.write_all_at(data, base).map_err(|e| Error::io(blob, e))?;
            f.sync_data().map_err(|e| Error::io(blob, e))?;
            StageOutcome::Applied {
                offset: base,
                bytes: data.len() as u64,
            }
        }
        Err(why) => StageOutcome::Ignored(why),
    };
    std::fs::remove_file(&stage).map_err(|e| Error::io(&stage, e))?;
    Ok(outcome)
}

/// The staged chunk's file offset and bytes, if the staging file is whole
/// and belongs to blob file `number`.
fn parse_stage(bytes: &[u8], number: u64) -> std::result::Result<(u64, &[u8]), String> {
    let h = bytes
        .get(..HEADER_LEN + 4)
        .ok_or("shorter than its header")?;
    if &h[..8] != STAGE_MAGIC {
        return Err("not a staging file".into());
    }
    let stored = decode_fixed32(&h[HEADER_LEN..]).ok_or("header")?;
    if crc32c::crc32c(&h[..HEADER_LEN]) != stored {
        return Err("staging header checksum mismatch".into());
    }
    let version = decode_fixed32(&h[8..]).ok_or("header")?;
    if version != STAGE_VERSION {
        return Err(format!("staging format version {version}"));
    }
    let owner = decode_fixed64(&h[12..]).ok_or("header")?;
    if owner != number {
        return Err(format!("stages blob file {owner}"));
    }
    let base = decode_fixed64(&h[20..]).ok_or("header")?;
    let staged = decode_fixed64(&h[28..]).ok_or("header")? as usize;
    if h[36..72] != boot_id() {
        return Err(
            "written before the machine restarted: its pages may not all \
                    have reached the disk"
                .into(),
        );
    }
    let data = bytes
        .get(PAGE..PAGE.checked_add(staged).ok_or("length")?)
        .ok_or("staged bytes past the end of the staging file")?;
    Ok((base, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> Vec<u8> {
        std::fs::read(path).expect("read")
    }

    #[test]
    fn staging_file_names() {
        let p = stage_path(Path::new("/db/000012.blob"));
        assert_eq!(p, Path::new("/db/000012.blob.stage"));
        assert!(is_stage_file_name("000012.blob.stage"));
        assert!(!is_stage_file_name("000012.blob"));
        assert!(!is_stage_file_name("000012.sst.stage"));
        assert!(!is_stage_file_name("notes.stage"));
    }

    #[test]
    fn chunks_go_to_the_file_and_partial_flushes_are_overwritten() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("000007.blob");
        let mut f = StagedFile::create(&path, 7, 2 * PAGE).expect("create");
        f.append(&[1u8; PAGE]).expect("header page");
        f.end_chunk().expect("end");
        assert_eq!(read(&path), vec![1u8; PAGE]);
        f.append(&[2u8; 100]).expect("value");
        assert_eq!(f.len(), PAGE as u64 + 100);
        assert_eq!(f.readable_len(), PAGE as u64);
        f.flush_partial().expect("flush");
        assert_eq!(f.readable_len(), PAGE as u64 + 100);
        let on_disk = read(&path);
        assert_eq!(on_disk.len(), 2 * PAGE, "padded to a page");
        assert_eq!(&on_disk[PAGE..PAGE + 100], &[2u8; 100]);
        // More than the capacity: the staging area grows.
        f.append(&[3u8; 3 * PAGE - 100]).expect("large value");
        f.end_chunk().expect("end");
        let on_disk = read(&path);
        assert_eq!(on_disk.len(), 4 * PAGE);
        assert_eq!(&on_disk[PAGE..PAGE + 100], &[2u8; 100]);
        assert!(on_disk[PAGE + 100..].iter().all(|&b| b == 3));
        f.append(&[9u8; PAGE]).expect("footer");
        assert_eq!(f.finish().expect("finish"), 5 * PAGE as u64);
        assert!(stage_path(&path).exists(), "kept until remove_stage");
        f.remove_stage().expect("remove stage");
        assert!(!stage_path(&path).exists(), "the staging file is removed");
        assert_eq!(read(&path).len(), 5 * PAGE);
    }

    #[test]
    fn staged_bytes_are_readable_and_make_durable_writes_them_all() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("000011.blob");
        let mut f = StagedFile::create(&path, 11, PAGE).expect("create");
        f.append(&[1u8; PAGE]).expect("header");
        f.end_chunk().expect("end");
        assert_eq!(f.staged_range(0, 10), None, "written chunks are not staged");
        f.append(&[4u8; 300]).expect("v1");
        f.append(&[5u8; 200]).expect("v2");
        let base = PAGE as u64;
        assert_eq!(f.staged_range(base, 300), Some(&[4u8; 300][..]));
        assert_eq!(f.staged_range(base + 300, 200), Some(&[5u8; 200][..]));
        assert_eq!(f.staged_range(base + 300, 201), None, "past the staged end");
        assert_eq!(f.staged_range(u64::MAX, 2), None);
        assert_eq!(read(&path).len(), PAGE, "nothing of the chunk written yet");
        assert_eq!(f.make_durable().expect("durable"), 2 * PAGE as u64);
        let on_disk = read(&path);
        assert_eq!(on_disk.len(), 2 * PAGE);
        assert_eq!(&on_disk[PAGE..PAGE + 300], &[4u8; 300]);
        assert_eq!(&on_disk[PAGE + 300..PAGE + 500], &[5u8; 200]);
        // Still staged (and readable) after the flush.
        assert_eq!(f.staged_range(base, 300), Some(&[4u8; 300][..]));
        f.remove_stage().expect("remove");
        assert!(!stage_path(&path).exists());
    }

    #[test]
    fn a_crash_leaves_staged_bytes_that_apply_stage_restores() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("000009.blob");
        let mut f = StagedFile::create(&path, 9, PAGE).expect("create");
        f.append(&[1u8; PAGE]).expect("header");
        f.end_chunk().expect("end");
        f.append(&[5u8; 300]).expect("v1");
        f.append(&[6u8; 200]).expect("v2");
        // A kill -9 now: the staging mapping is in the page cache, the blob
        // file has only the first page.
        std::mem::forget(f);
        assert_eq!(read(&path).len(), PAGE);
        let out = apply_stage(&path, 9).expect("apply");
        assert_eq!(
            out,
            StageOutcome::Applied {
                offset: PAGE as u64,
                bytes: 500
            }
        );
        let b = read(&path);
        assert_eq!(&b[PAGE..PAGE + 300], &[5u8; 300]);
        assert_eq!(&b[PAGE + 300..PAGE + 500], &[6u8; 200]);
        assert_eq!(apply_stage(&path, 9).expect("again"), StageOutcome::None);
    }

    #[test]
    fn a_damaged_or_foreign_staging_file_is_ignored() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("000011.blob");
        let mut f = StagedFile::create(&path, 11, PAGE).expect("create");
        f.append(&[1u8; PAGE]).expect("header");
        f.end_chunk().expect("end");
        f.append(&[4u8; 64]).expect("v");
        std::mem::forget(f);
        let stage = stage_path(&path);
        let good = read(&stage);
        // Written in another boot (a power loss restarted the machine): its
        // pages may be any mix of old and new.
        let mut other_boot = good.clone();
        other_boot[40] ^= 1;
        let c = crc32c::crc32c(&other_boot[..HEADER_LEN]);
        other_boot[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&c.to_le_bytes());
        std::fs::write(&stage, &other_boot).expect("write");
        assert!(matches!(
            apply_stage(&path, 11).expect("apply"),
            StageOutcome::Ignored(ref why) if why.contains("restarted")
        ));
        assert_eq!(read(&path).len(), PAGE, "the blob file is untouched");
        // A damaged header.
        let mut damaged = good.clone();
        damaged[25] ^= 1;
        std::fs::write(&stage, &damaged).expect("write");
        assert!(matches!(
            apply_stage(&path, 11).expect("apply"),
            StageOutcome::Ignored(ref why) if why.contains("checksum")
        ));
        // A staging file of another blob file.
        std::fs::write(&stage, &good).expect("write");
        assert!(matches!(
            apply_stage(&path, 12).expect("apply"),
            StageOutcome::Ignored(ref why) if why.contains("stages blob file 11")
        ));
        assert_eq!(read(&path).len(), PAGE, "the blob file is untouched");
    }
}
