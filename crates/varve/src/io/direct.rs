//! O_DIRECT files: reads and writes that bypass the page cache, for
//! `use_direct_reads` and `use_direct_io_for_flush_and_compaction`.
//!
//! O_DIRECT needs the file offset, the length and the memory address of
//! every transfer aligned to the device's logical block; [`ALIGN`] (4 KiB)
//! covers every common device. Aligned memory comes from an over-allocated
//! `Vec` cut at `align_offset`, so no `unsafe` is needed.
//!
//! [`DirectRandomAccess`] widens each read to aligned bounds and copies the
//! requested bytes out; the aligned buffer goes to `fiber_aio_read`
//! unchanged, so inside a `multi_get` fiber io_uring gets it aligned too. [`DirectWritable`] collects appends and writes whole
//! aligned chunks; `sync_data` writes the partial tail padded to a block,
//! cuts the file back to its logical length and fdatasyncs. Unlike the
//! buffered writer, appended bytes reach the OS only at a chunk boundary or
//! `sync_data`: it is meant for table files, which count only once finished
//! and synced. Thread-safety: readers are `Sync` (pread); writers `Send`.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::fs::{RandomAccessFile, WritableFile};
use crate::error::{Error, Result};
use crate::io::fiber::fiber_aio_read;

/// Alignment of offsets, lengths and buffers for O_DIRECT.
pub(crate) const ALIGN: usize = 4096;

/// Bytes collected before a direct writer writes them out.
const WRITE_CHUNK: usize = 1 << 20;

/// A zeroed buffer of `len` bytes whose start is `ALIGN`-aligned.
#[derive(Debug)]
pub(crate) struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    pub(crate) fn new(len: usize) -> AlignedBuf {
        let raw = vec![0u8; len + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        AlignedBuf { raw, start, len }
    }

    /// Makes the buffer `len` bytes long, reallocating (zeroed) only when
    /// the current allocation is too small. Contents are unspecified.
    pub(crate) fn resize(&mut self, len: usize) {
        if self.start + len > self.raw.len() {
            *self = AlignedBuf::new(len);
        } else {
            self.len = len;
        }
    }

    /// Largest length [`resize`](Self::resize) reaches without reallocating.
    pub(crate) fn capacity(&self) -> usize {
        self.raw.len() - self.start
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

thread_local! {
    /// Bounce buffers of this thread's unaligned direct reads, reused so a
    /// point read costs no allocation and no zeroing. A buffer is taken out
    /// for the whole read, so a fiber that switches away mid-read keeps its
    /// own and fibers of one thread never share one; the `RefCell` is only
    /// borrowed to pop or push, never across a read.
    static BOUNCE: std::cell::RefCell<Vec<AlignedBuf>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Most bounce buffers a thread keeps (one per fiber in flight is enough).
const BOUNCE_KEEP: usize = 256;
/// Larger bounce buffers are freed after use rather than kept.
const BOUNCE_MAX: usize = 256 << 10;

/// A bounce buffer of `len` bytes (contents unspecified).
fn take_bounce(len: usize) -> AlignedBuf {
    let mut buf = BOUNCE
        .with(|pool| pool.borrow_mut().pop())
        .unwrap_or_else(|| AlignedBuf::new(len));
    buf.resize(len);
    buf
}

/// Returns a bounce buffer to this thread's pool.
fn give_bounce(buf: AlignedBuf) {
    if buf.len <= BOUNCE_MAX {
        BOUNCE.with(|pool| {
            let mut pool = pool.borrow_mut();
            if pool.len() < BOUNCE_KEEP {
                pool.push(buf);
            }
        });
    }
}

fn round_down(x: u64) -> u64 {
    x & !(ALIGN as u64 - 1)
}

fn round_up(x: u64) -> u64 {
    round_down(x + ALIGN as u64 - 1)
}

/// Opens `path` with O_DIRECT for reading.
pub(crate) fn open_read(path: &Path) -> Result<DirectRandomAccess> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    Ok(DirectRandomAccess {
        file,
        path: path.to_path_buf(),
    })
}

/// Creates (truncating) `path` with O_DIRECT for writing.
pub(crate) fn create_write(path: &Path) -> Result<DirectWritable> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    Ok(DirectWritable {
        file,
        path: path.to_path_buf(),
        len: 0,
        written: 0,
        pending: Vec::with_capacity(WRITE_CHUNK),
    })
}

/// A file read with O_DIRECT.
#[derive(Debug)]
pub(super) struct DirectRandomAccess {
    file: File,
    path: PathBuf,
}

fn pread_full(file: &File, path: &Path, buf: &mut [u8], offset: u64) -> Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match fiber_aio_read(file, &mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => {
                done += n;
                // O_DIRECT reads end early only at end of file.
                if n % ALIGN != 0 {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(done)
}

impl RandomAccessFile for DirectRandomAccess {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let aligned_request = offset.is_multiple_of(ALIGN as u64)
            && buf.len().is_multiple_of(ALIGN)
            && buf.as_ptr().align_offset(ALIGN) == 0;
        if aligned_request {
            // The caller's buffer is already fit for O_DIRECT: no bounce copy.
            return pread_full(&self.file, &self.path, buf, offset);
        }
        let start = round_down(offset);
        let end = round_up(offset + buf.len() as u64);
        let mut aligned = take_bounce((end - start) as usize);
        let got = pread_full(&self.file, &self.path, aligned.as_mut_slice(), start);
        let result = got.map(|got| {
            let skip = (offset - start) as usize;
            let n = got.saturating_sub(skip).min(buf.len());
            buf[..n].copy_from_slice(&aligned.as_slice()[skip..skip + n]);
            n
        });
        give_bounce(aligned);
        result
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn direct_alignment(&self) -> Option<usize> {
        Some(ALIGN)
    }
}

/// A file written with O_DIRECT (see the module docs).
#[derive(Debug)]
pub(super) struct DirectWritable {
    file: File,
    path: PathBuf,
    /// Logical length (bytes appended).
    len: u64,
    /// Bytes at the start of the file that are final on disk (aligned).
    written: u64,
    /// Bytes from `written` on, not yet final.
    pending: Vec<u8>,
}

impl DirectWritable {
    /// Writes `pending[..n]` (n aligned, or the padded tail) at `written`.
    fn write_out(&mut self, n: usize) -> Result<()> {
        let padded = round_up(n as u64) as usize;
        let mut buf = AlignedBuf::new(padded);
        buf.as_mut_slice()[..n].copy_from_slice(&self.pending[..n]);
        let mut done = 0;
        while done < padded {
            match self
                .file
                .write_at(&buf.as_slice()[done..], self.written + done as u64)
            {
                Ok(0) => {
                    return Err(Error::io(
                        &self.path,
                        std::io::Error::new(
                            std::io::ErrorKind::WriteZero,
                            "O_DIRECT write wrote nothing",
                        ),
                    ));
                }
                Ok(k) => done += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.path, e)),
            }
        }
        Ok(())
    }
}

impl WritableFile for DirectWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.pending.extend_from_slice(data);
        self.len += data.len() as u64;
        if self.pending.len() >= WRITE_CHUNK {
            let n = round_down(self.pending.len() as u64) as usize;
            self.write_out(n)?;
            self.pending.drain(..n);
            self.written += n as u64;
        }
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            // The padded tail block is rewritten by later appends; only the
            // whole blocks before it become final.
            self.write_out(self.pending.len())?;
            let whole = round_down(self.pending.len() as u64) as usize;
            self.pending.drain(..whole);
            self.written += whole as u64;
        }
        self.file
            .set_len(self.len)
            .map_err(|e| Error::io(&self.path, e))?;
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_are_aligned() {
        for len in [1, 4096, 10_000] {
            let b = AlignedBuf::new(len);
            assert_eq!(b.as_slice().as_ptr().align_offset(ALIGN), 0);
            assert_eq!(b.as_slice().len(), len);
        }
    }

    #[test]
    fn direct_write_then_read_any_range() {
        let dir = tempfile::tempdir_in(".").expect("tempdir on the build disk");
        let p = dir.path().join("d");
        let mut w = match create_write(&p) {
            Ok(w) => w,
            Err(e) => {
                crate::io::uring::skip_or_fail(
                    "the O_DIRECT write-then-read test",
                    &format!("O_DIRECT is not supported here: {e}"),
                );
                return;
            }
        };
        let data: Vec<u8> = (0..3_000_000u32)
            .map(|i| (i * 7 + i / 4096) as u8)
            .collect();
        // Odd-sized appends with syncs in between (the padded tail is
        // rewritten by the next append).
        let mut off = 0;
        for (i, size) in [1usize, 4095, 5000, 1 << 20, 12_345, 2_000_000]
            .into_iter()
            .enumerate()
        {
            let end = (off + size).min(data.len());
            w.append(&data[off..end]).expect("append");
            off = end;
            if i % 2 == 1 {
                w.sync_data().expect("sync");
            }
        }
        w.append(&data[off..]).expect("append rest");
        w.sync_data().expect("sync");
        assert_eq!(
            std::fs::metadata(&p).expect("meta").len(),
            data.len() as u64
        );
        assert_eq!(std::fs::read(&p).expect("read"), data);
        let r = open_read(&p).expect("open");
        for (offset, len) in [
            (0u64, 1usize),
            (1, 4096),
            (4095, 2),
            (100_000, 70_000),
            (2_999_990, 100),
        ] {
            let mut buf = vec![0u8; len];
            let n = r.read_at(&mut buf, offset).expect("read");
            let want = &data[offset as usize..(offset as usize + len).min(data.len())];
            assert_eq!(&buf[..n], want, "read {len} at {offset}");
        }
    }
}
