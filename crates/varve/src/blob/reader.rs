//! [`BlobReader`]: reads values of one blob file by pointer (one aligned
//! read each), and walks its chunks for `check`, `dump-blob` and repair;
//! [`PointerCheck`] follows many pointers of a directory once each (check
//! and repair).
//!
//! `BlobReader` is thread-safe (`&self`, positional reads). Invariants: a value is returned
//! only if it matches its pointer's CRC; every failure names the file and
//! offset.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::format::{
    BlobFooter, BlobHeader, BlobPointer, ChunkEntry, PAGE, TRAILER_LEN, check_values, parse_chunk,
    value_from_span,
};
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, FileSystem, RandomAccessFile};
use crate::util::coding::decode_fixed32;

/// An open blob file.
#[derive(Debug)]
pub(crate) struct BlobReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    header: BlobHeader,
    size: u64,
}

/// One chunk found by [`BlobReader::chunks`].
#[derive(Debug)]
pub(crate) struct ChunkInfo {
    /// File offset of the chunk.
    pub offset: u64,
    /// Its length (whole pages).
    pub len: u64,
    /// Its values' entries.
    pub entries: Vec<ChunkEntry>,
}

/// What [`BlobReader::chunks`] found.
#[derive(Debug)]
pub(crate) struct ChunkWalk {
    /// The whole chunks, in file order.
    pub chunks: Vec<ChunkInfo>,
    /// The footer, when the file was sealed.
    pub footer: Option<BlobFooter>,
    /// Bytes after the last whole chunk that are neither a chunk nor the
    /// footer (a file cut while being written).
    pub tail: u64,
}

impl BlobReader {
    /// Opens blob file `path` (`size` bytes) through `file` and checks its
    /// header.
    pub(crate) fn new(file: Arc<dyn RandomAccessFile>, path: &Path, size: u64) -> Result<Self> {
        let page = read_exact(file.as_ref(), path, 0, PAGE)?;
        let header = BlobHeader::decode(page.as_slice(), path)?;
        Ok(BlobReader {
            file,
            path: path.to_path_buf(),
            header,
            size,
        })
    }

    /// Opens `path` on `fs` (with O_DIRECT when `direct`).
    pub(crate) fn open(fs: &dyn FileSystem, path: &Path, direct: bool) -> Result<Self> {
        let size = fs.file_size(path)?;
        let file = if direct {
            fs.open_random_access_direct(path)?
        } else {
            fs.open_random_access(path)?
        };
        BlobReader::new(file, path, size)
    }

    /// The open file (for read-ahead on the reader pool).
    pub(crate) fn file(&self) -> Arc<dyn RandomAccessFile> {
        Arc::clone(&self.file)
    }

    /// The file's size when it was opened (sealed files never change).
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Reads up to `buf.len()` bytes at `start` (aligned, for direct IO);
    /// returns how many were read (fewer at the end of the file).
    pub(crate) fn read_into(&self, buf: &mut [u8], start: u64) -> Result<usize> {
        debug_assert_eq!(start % PAGE as u64, 0);
        self.file.read_at(buf, start)
    }

    /// The file's header.
    pub(crate) fn header(&self) -> &BlobHeader {
        &self.header
    }

    /// The value `p` points to, read with one aligned read and checked.
    pub(crate) fn get(&self, p: &BlobPointer) -> Result<Vec<u8>> {
        self.check_pointer(p)?;
        if p.length == 0 {
            return Ok(Vec::new());
        }
        let (start, len) = p.aligned_span();
        let mut span = AlignedBuf::new(len);
        let got = self.file.read_at(span.as_mut_slice(), start)?;
        self.value_in(p, &span.as_slice()[..got], start)
    }

    /// The values `ps` (pointers into this file) read with one aligned
    /// read of the `len` bytes at `start` (a page boundary), which must
    /// hold every value's aligned span; each value checked as by
    /// [`get`](Self::get), and each its own result (a failed read is every
    /// value's error). For values that lie next to each other in the file
    /// (a scan's look-ahead over values in key order): one read instead of
    /// one per value, and not one byte more.
    pub(crate) fn get_span(
        &self,
        ps: &[BlobPointer],
        start: u64,
        len: usize,
    ) -> Vec<Result<Vec<u8>>> {
        debug_assert_eq!(start % PAGE as u64, 0);
        debug_assert_eq!(len % PAGE, 0);
        let mut span = AlignedBuf::new(len);
        let got = match self.file.read_at(span.as_mut_slice(), start) {
            Ok(got) => got,
            Err(e) => return ps.iter().map(|_| Err(e.duplicate())).collect(),
        };
        let span = &span.as_slice()[..got];
        ps.iter()
            .map(|p| {
                self.check_pointer(p)?;
                if p.length == 0 {
                    return Ok(Vec::new());
                }
                let (s, l) = p.aligned_span();
                debug_assert!(
                    s >= start && s + l as u64 <= start + len as u64,
                    "inside the span"
                );
                self.value_in(p, span, start)
            })
            .collect()
    }

    /// The value `p` from `span` (the bytes read at `start`, a page
    /// boundary at or before the value), checked against the pointer.
    fn value_in(&self, p: &BlobPointer, span: &[u8], start: u64) -> Result<Vec<u8>> {
        // A file being written may end inside the span's last page (plain
        // appends do not pad): only the value's own bytes must be there.
        // (`check_pointer` ruled out an overflow; a value before `start`
        // is reported by `value_from_span`.)
        let need = (p.offset + u64::from(p.length)).saturating_sub(start) as usize;
        if span.len() < need {
            return Err(Error::corruption(
                &self.path,
                p.offset,
                format!(
                    "blob file ends early: {} of the {need} bytes the value needs",
                    span.len()
                ),
            ));
        }
        Ok(value_from_span(p, span, start, &self.path)?.to_vec())
    }

    /// A pointer this file can serve: its number, and a range that starts
    /// after the header and does not overflow.
    fn check_pointer(&self, p: &BlobPointer) -> Result<()> {
        if p.file_number != self.header.file_number {
            return Err(Error::corruption(
                &self.path,
                p.offset,
                format!("pointer names blob file {} instead", p.file_number),
            ));
        }
        // A lane's open file grows after it was opened here: the read
        // itself, not the size seen at open, finds a value past the end.
        if p.offset < PAGE as u64 || p.offset.checked_add(u64::from(p.length)).is_none() {
            return Err(Error::corruption(
                &self.path,
                p.offset,
                format!("blob value of {} bytes lies outside the file", p.length),
            ));
        }
        Ok(())
    }

    /// Walks the file's chunks front to back, checking each trailer and,
    /// with `values`, each value's CRC. Stops at the footer or at the first
    /// bytes that are not a whole chunk (`tail`).
    pub(crate) fn chunks(&self, values: bool) -> Result<ChunkWalk> {
        let mut chunks = Vec::new();
        let mut start = PAGE as u64;
        let mut footer = None;
        'outer: while start + PAGE as u64 <= self.size {
            let first = read_exact(self.file.as_ref(), &self.path, start, PAGE)?;
            if let Some(f) = BlobFooter::decode(first.as_slice(), &self.path, start)? {
                footer = Some(f);
                start += PAGE as u64;
                break;
            }
            // A chunk ends at the first page end whose trailer's lengths
            // fill exactly the pages from `start` to it.
            let mut end = start + PAGE as u64;
            while end <= self.size {
                let last = read_exact(self.file.as_ref(), &self.path, end - PAGE as u64, PAGE)?;
                let t = &last.as_slice()[PAGE - TRAILER_LEN..];
                let field = |i: usize| u64::from(decode_fixed32(&t[4 * i..]).unwrap_or(0));
                let need = field(0) + field(2) + TRAILER_LEN as u64;
                if need.div_ceil(PAGE as u64) * PAGE as u64 == end - start {
                    let len = (end - start) as usize;
                    let bytes = read_exact(self.file.as_ref(), &self.path, start, len)?;
                    if let Ok(entries) = parse_chunk(bytes.as_slice(), &self.path, start) {
                        if values {
                            check_values(bytes.as_slice(), &entries, &self.path, start)?;
                        }
                        chunks.push(ChunkInfo {
                            offset: start,
                            len: end - start,
                            entries,
                        });
                        start = end;
                        continue 'outer;
                    }
                }
                end += PAGE as u64;
            }
            break;
        }
        let tail = self.size.saturating_sub(start);
        if let Some(f) = &footer
            && (tail != 0 || f.chunk_count != chunks.len() as u64)
        {
            return Err(Error::corruption(
                &self.path,
                start,
                format!(
                    "blob footer counts {} chunks, the file holds {} and {tail} bytes after",
                    f.chunk_count,
                    chunks.len()
                ),
            ));
        }
        Ok(ChunkWalk {
            chunks,
            footer,
            tail,
        })
    }
}

/// Reads exactly `len` bytes at `offset` (aligned buffer, so direct files
/// work); a short read is corruption (the file is shorter than it says).
fn read_exact(
    file: &dyn RandomAccessFile,
    path: &Path,
    offset: u64,
    len: usize,
) -> Result<AlignedBuf> {
    let mut buf = AlignedBuf::new(len);
    let got = file.read_at(buf.as_mut_slice(), offset)?;
    if got < len {
        return Err(Error::corruption(
            path,
            offset,
            format!("blob file ends early: {got} of {len} bytes"),
        ));
    }
    Ok(buf)
}

/// The blob files of one directory, opened on first use, for a pass that
/// follows many pointers once each (`varve check`, repair): a file that
/// cannot be opened is remembered, not tried again for every pointer. The
/// engine's own cache is [`BlobReaders`](super::cache::BlobReaders).
/// Single-threaded.
pub(crate) struct PointerCheck<'a> {
    fs: &'a dyn FileSystem,
    dir: PathBuf,
    readers: std::collections::HashMap<u64, std::result::Result<BlobReader, String>>,
}

impl<'a> PointerCheck<'a> {
    /// Follows pointers into the blob files of `dir`.
    pub(crate) fn new(fs: &'a dyn FileSystem, dir: &Path) -> PointerCheck<'a> {
        PointerCheck {
            fs,
            dir: dir.to_path_buf(),
            readers: std::collections::HashMap::new(),
        }
    }

    /// Reads the value the encoded pointer `raw` names and checks it
    /// against the pointer's CRC. The error says why, naming the blob file
    /// and offset ("points to blob file N at offset O: ...").
    pub(crate) fn check(&mut self, raw: &[u8]) -> std::result::Result<BlobPointer, String> {
        let p = BlobPointer::decode(raw).ok_or("has a malformed blob pointer")?;
        let (fs, dir) = (self.fs, &self.dir);
        let reader = self.readers.entry(p.file_number).or_insert_with(|| {
            let path = crate::filenames::blob_file_path(dir, p.file_number);
            BlobReader::open(fs, &path, false).map_err(|e| e.to_string())
        });
        let got = match reader {
            Ok(r) => r.get(&p).map(|_| ()).map_err(|e| e.to_string()),
            Err(e) => Err(e.clone()),
        };
        got.map(|()| p).map_err(|why| {
            format!(
                "points to blob file {} at offset {}: {why}",
                p.file_number, p.offset
            )
        })
    }

    /// The reader of blob file `n`, if a pointer into it was followed and
    /// the file opened.
    pub(crate) fn reader(&self, n: u64) -> Option<&BlobReader> {
        self.readers.get(&n)?.as_ref().ok()
    }
}

#[cfg(test)]
mod tests;
