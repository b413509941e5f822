//! [`StagedOverlayFs`]: a read-only view of a directory in which the blob
//! files a crash left open already hold their staged chunks, as they will
//! once a read-write open has run [`apply_stage`](super::stage::apply_stage)
//! — without writing a byte. Read-only opens and `varve check` read through
//! it, so they see exactly what a read-write open would.
//!
//! Owns, per blob file with staged chunks, the chunks (read once, when the
//! view is made) and answers `file_size` and positional reads of that file
//! as the file with the chunks copied in: the disk's bytes, then each chunk
//! over them in the order `apply_stage` copies them, and zeros in a gap
//! between the file's end and a chunk (the hole `pwrite` past the end
//! leaves). Every other operation goes to the wrapped file system
//! unchanged.
//!
//! Thread-safe (immutable after construction). Invariants: a read returns
//! at most the bytes of the patched file below its patched length; the
//! patched length is `max(disk length, end of every chunk)`; bytes that no
//! chunk covers are the disk's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::stage::{StageOutcome, UnappliedChunk, unapplied_chunks};
use crate::error::{Error, Result};
use crate::filenames::blob_file_path;
use crate::io::{FileLock, FileSystem, LogFile, RandomAccessFile, SequentialFile, WritableFile};

/// The staged chunks of one blob file, in copy order.
#[derive(Debug)]
struct Patches {
    chunks: Vec<UnappliedChunk>,
    /// The end of the furthest chunk.
    end: u64,
}

impl Patches {
    fn new(chunks: Vec<UnappliedChunk>) -> Patches {
        let end = chunks
            .iter()
            .map(|c| c.base + c.data.len() as u64)
            .max()
            .unwrap_or(0);
        Patches { chunks, end }
    }

    /// Completes a read of `buf` at `offset` that returned `got` bytes from
    /// the disk: the gap up to a chunk is zeros, each chunk overwrites what
    /// it covers. Returns the patched count.
    fn patch(&self, buf: &mut [u8], offset: u64, got: usize) -> usize {
        debug_assert!(got <= buf.len());
        // The patched file is `max(disk, end)` long; what no chunk covers
        // past the disk's end is the hole `pwrite` past the end leaves.
        let till_end = usize::try_from(self.end.saturating_sub(offset)).unwrap_or(usize::MAX);
        let len = got.max(till_end.min(buf.len()));
        buf[got..len].fill(0);
        let want_end = offset.saturating_add(buf.len() as u64);
        for c in &self.chunks {
            let c_end = c.base + c.data.len() as u64;
            let (from, to) = (c.base.max(offset), c_end.min(want_end));
            if from >= to {
                continue;
            }
            let (at, till) = ((from - offset) as usize, (to - offset) as usize);
            let src = (from - c.base) as usize;
            buf[at..till].copy_from_slice(&c.data[src..src + (till - at)]);
        }
        debug_assert!(len <= buf.len());
        len
    }
}

/// A file system whose blob files with staged chunks read as if the chunks
/// were copied in (see the module docs).
#[derive(Debug)]
pub(crate) struct StagedOverlayFs {
    inner: Arc<dyn FileSystem>,
    patched: HashMap<PathBuf, Arc<Patches>>,
}

/// What [`StagedOverlayFs::over`] found, per blob file: what `apply_stage`
/// would report.
pub(crate) type StageReport = Vec<(u64, Vec<StageOutcome>)>;

impl StagedOverlayFs {
    /// A view of `dir` on `inner` in which each blob file of `open` (the
    /// files a crash may have left open: the manifest lists them unsealed)
    /// holds its staged chunks. Returns `None` for the file systems when
    /// none has any (then `inner` is the view), and the outcomes per file.
    pub(crate) fn over(
        inner: &Arc<dyn FileSystem>,
        dir: &Path,
        open: &[u64],
    ) -> Result<(Option<Arc<dyn FileSystem>>, StageReport)> {
        let mut patched = HashMap::new();
        let mut report = Vec::new();
        for &number in open {
            let path = blob_file_path(dir, number);
            let (chunks, outcomes) = unapplied_chunks(inner.as_ref(), &path, number)?;
            if !outcomes.is_empty() {
                report.push((number, outcomes));
            }
            if !chunks.is_empty() {
                patched.insert(path, Arc::new(Patches::new(chunks)));
            }
        }
        if patched.is_empty() {
            return Ok((None, report));
        }
        let fs: Arc<dyn FileSystem> = Arc::new(StagedOverlayFs {
            inner: Arc::clone(inner),
            patched,
        });
        Ok((Some(fs), report))
    }

    fn wrap(
        &self,
        path: &Path,
        file: Result<Arc<dyn RandomAccessFile>>,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        match self.patched.get(path) {
            Some(p) => Ok(Arc::new(PatchedFile {
                inner: file?,
                patches: Arc::clone(p),
            })),
            None => file,
        }
    }
}

/// A blob file read with its staged chunks in place.
#[derive(Debug)]
struct PatchedFile {
    inner: Arc<dyn RandomAccessFile>,
    patches: Arc<Patches>,
}

impl RandomAccessFile for PatchedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        // The disk's bytes first (a short read at its end), then the
        // chunks over them.
        let mut got = 0;
        while got < buf.len() {
            let n = self.inner.read_at(&mut buf[got..], offset + got as u64)?;
            if n == 0 {
                break;
            }
            got += n;
        }
        Ok(self.patches.patch(buf, offset, got))
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn direct_alignment(&self) -> Option<usize> {
        self.inner.direct_alignment()
    }
}

impl FileSystem for StagedOverlayFs {
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
        self.refuse_patched(path)?;
        self.inner.create_writable(path)
    }
    fn create_log_file(&self, path: &Path) -> Result<Arc<dyn LogFile>> {
        self.inner.create_log_file(path)
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.refuse_patched(path)?;
        self.inner.open_sequential(path)
    }
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.wrap(path, self.inner.open_random_access(path))
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        let disk = self.inner.file_size(path);
        match self.patched.get(path) {
            Some(p) => Ok(disk?.max(p.end)),
            None => disk,
        }
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.refuse_patched(path)?;
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.inner.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.refuse_patched(from)?;
        self.inner.rename(from, to)
    }
    fn hard_link(&self, src: &Path, dst: &Path) -> Result<()> {
        self.refuse_patched(src)?;
        self.inner.hard_link(src, dst)
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.refuse_patched(path)?;
        self.inner.truncate(path, len)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }
    fn open_random_access_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.wrap(path, self.inner.open_random_access_direct(path))
    }
    fn create_writable_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.refuse_patched(path)?;
        self.inner.create_writable_direct(path)
    }
    fn uses_os_files(&self) -> bool {
        self.inner.uses_os_files()
    }
    fn try_lock(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        self.inner.try_lock(path)
    }
}

impl StagedOverlayFs {
    /// The view is for reading: an operation that would read a patched file
    /// front to back without its chunks, or change it, is refused.
    fn refuse_patched(&self, path: &Path) -> Result<()> {
        if self.patched.contains_key(path) {
            return Err(Error::InvalidArgument(format!(
                "{} is read through its staged chunks here; it cannot be changed or read \
                 sequentially",
                path.display()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patches(chunks: &[(u64, &[u8])]) -> Patches {
        Patches::new(
            chunks
                .iter()
                .map(|&(base, d)| UnappliedChunk {
                    base,
                    data: d.to_vec(),
                })
                .collect(),
        )
    }

    /// The patched bytes are what writing each chunk with `pwrite` over a
    /// file of the disk's bytes gives, for every read window.
    #[test]
    fn reads_equal_the_file_with_the_chunks_written_in() {
        let disk: Vec<u8> = (0..10u8).collect();
        let chunks: [(u64, &[u8]); 3] = [(8, b"abcd"), (16, b"xyz"), (9, b"Q")];
        let p = patches(&chunks);
        let mut model = disk.clone();
        for (base, d) in chunks {
            let end = base as usize + d.len();
            if model.len() < end {
                model.resize(end, 0);
            }
            model[base as usize..end].copy_from_slice(d);
        }
        assert_eq!(p.end, model.len() as u64);
        for offset in 0..model.len() + 2 {
            for len in 0..model.len() + 4 {
                let mut buf = vec![0xee; len];
                let got = disk.len().saturating_sub(offset).min(len);
                if got > 0 {
                    buf[..got].copy_from_slice(&disk[offset..offset + got]);
                }
                let n = p.patch(&mut buf, offset as u64, got);
                let want = &model[offset.min(model.len())..(offset + len).min(model.len())];
                assert_eq!(&buf[..n], want, "offset {offset} len {len}");
            }
        }
    }
}
