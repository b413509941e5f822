//! [`Readahead`]: scan read-ahead for data blocks. An iterator whose block
//! reads are sequential reads one large chunk per `read_at` instead of one
//! block, and serves the following blocks from it.
//!
//! Policy (see `docs/readahead.md`): a block read is *sequential* when it
//! starts where the previous block of the same file ended, or at offset 0 of
//! a new file right after the previous file was read to the end of its data
//! blocks. A sequential miss reads `next_size` bytes (starting at
//! [`MIN_READAHEAD`], doubling after every chunk up to the iterator's
//! maximum); any other miss reads just the block and resets `next_size` to
//! the minimum. The size therefore survives moving on to the next table
//! file of a level (the state is shared by all table iterators of one level
//! iterator). A chunk never extends past `limit`, which the caller sets to
//! the end of the block holding the iterator's upper bound (or the end of
//! the table's data blocks); with O_DIRECT files the chunk is widened to the
//! file's alignment and read into an aligned buffer, so the file needs no
//! bounce copy. Every block served from the buffer is checksummed like a
//! block read on its own, so damage is still `Error::Corruption`.
//!
//! Thread-safety: a `Readahead` belongs to one iterator (`Send`, not shared
//! between scans); table iterators of one level share it through an
//! `Arc<Mutex<_>>` that is never contended. Invariant: `buf_valid` bytes of
//! `buf` hold the file `file` from `buf_start` on.

use std::sync::Arc;

use crate::io::{AlignedBuf, DIRECT_IO_ALIGN, RandomAccessFile};
use crate::{Error, Result};

use super::format::{BlockHandle, check_handle, decode_block, read_block};

/// First read-ahead chunk after a non-sequential read.
pub const MIN_READAHEAD: usize = 16 << 10;

/// Default largest read-ahead chunk of a user iterator
/// ([`ReadOptions::readahead_size`](crate::ReadOptions::readahead_size)).
pub const DEFAULT_READAHEAD: usize = 2 << 20;

/// Read-ahead chunk of compaction inputs, which are read whole and in order.
pub const COMPACTION_READAHEAD: usize = 2 << 20;

/// Read-ahead state of one iterator (see the module docs).
#[derive(Debug)]
pub struct Readahead {
    max: usize,
    next_size: usize,
    /// The file of the last block access, kept alive so its identity holds.
    file: Option<Arc<dyn RandomAccessFile>>,
    /// End of `file`'s data blocks.
    file_data_end: u64,
    /// End (trailer included) of the last block accessed in `file`.
    last_end: u64,
    buf: AlignedBuf,
    buf_start: u64,
    buf_valid: usize,
    chunk_reads: u64,
    chunk_bytes: u64,
}

fn same_file(a: &Arc<dyn RandomAccessFile>, b: &Arc<dyn RandomAccessFile>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

impl Readahead {
    /// State for chunks of at most `max` bytes (at least one block is always
    /// read; `max` below [`MIN_READAHEAD`] caps the first chunk too).
    pub fn new(max: usize) -> Readahead {
        Readahead {
            max,
            next_size: MIN_READAHEAD.min(max),
            file: None,
            file_data_end: 0,
            last_end: 0,
            buf: AlignedBuf::new(0),
            buf_start: 0,
            buf_valid: 0,
            chunk_reads: 0,
            chunk_bytes: 0,
        }
    }

    /// Size of the next sequential chunk.
    pub fn next_size(&self) -> usize {
        self.next_size
    }

    /// Read-ahead chunks read so far and their bytes.
    pub fn chunk_stats(&self) -> (u64, u64) {
        (self.chunk_reads, self.chunk_bytes)
    }

    fn is_sequential(&self, file: &Arc<dyn RandomAccessFile>, offset: u64) -> bool {
        match &self.file {
            Some(f) if same_file(f, file) => offset == self.last_end,
            Some(_) => offset == 0 && self.last_end == self.file_data_end,
            None => false,
        }
    }

    /// Records an access to the block at `handle` that needed no file read
    /// (a block cache hit): it continues or breaks the sequence like a read.
    pub fn note_access(&mut self, file: &Arc<dyn RandomAccessFile>, data_end: u64, h: BlockHandle) {
        if !self.is_sequential(file, h.offset) {
            self.next_size = MIN_READAHEAD.min(self.max);
        }
        self.set_last(file, data_end, h);
    }

    fn set_last(&mut self, file: &Arc<dyn RandomAccessFile>, data_end: u64, h: BlockHandle) {
        if !self.file.as_ref().is_some_and(|f| same_file(f, file)) {
            self.file = Some(Arc::clone(file));
            self.buf_valid = 0;
        }
        self.file_data_end = data_end;
        self.last_end = h.end().unwrap_or(u64::MAX);
    }

    /// The uncompressed contents of the block at `h` in `file` (whose data
    /// blocks end at `data_end`), from the buffer or the file. Chunks never
    /// extend past `limit` (clamped to `[block end, data_end]`) beyond the
    /// file's alignment.
    pub fn read_block(
        &mut self,
        file: &Arc<dyn RandomAccessFile>,
        data_end: u64,
        h: BlockHandle,
        limit: u64,
        verify: bool,
    ) -> Result<Vec<u8>> {
        let path = file.path();
        check_handle(h, 0, data_end, path)?;
        let end = h.end().unwrap_or(u64::MAX);
        let same = self.file.as_ref().is_some_and(|f| same_file(f, file));
        if same && self.buffered(h.offset, end) {
            self.set_last(file, data_end, h);
            return self.decode_buffered(file, h, end, verify);
        }
        let sequential = self.is_sequential(file, h.offset);
        self.set_last(file, data_end, h);
        let want_end = h
            .offset
            .saturating_add(self.next_size as u64)
            .min(limit.min(data_end))
            .max(end);
        if !sequential || want_end == end {
            if !sequential {
                self.next_size = MIN_READAHEAD.min(self.max);
            }
            return read_block(file.as_ref(), h, data_end, verify);
        }
        let (start, stop) = match file.direct_alignment() {
            Some(a) if a > 0 && DIRECT_IO_ALIGN.is_multiple_of(a) => {
                let a = a as u64;
                (h.offset / a * a, want_end.div_ceil(a) * a)
            }
            _ => (h.offset, want_end),
        };
        let len = usize::try_from(stop - start)
            .map_err(|_| Error::corruption(path, h.offset, "read-ahead chunk too large"))?;
        self.buf.resize(len);
        self.buf_valid = 0;
        let got = file.read_at(self.buf.as_mut_slice(), start)?;
        self.buf_start = start;
        self.buf_valid = got;
        self.chunk_reads += 1;
        self.chunk_bytes += got as u64;
        self.next_size = self.next_size.saturating_mul(2).min(self.max);
        if !self.buffered(h.offset, end) {
            return Err(Error::corruption(
                path,
                h.offset,
                format!("short read: {got} bytes at {start}, block ends at {end}"),
            ));
        }
        self.decode_buffered(file, h, end, verify)
    }

    fn buffered(&self, offset: u64, end: u64) -> bool {
        offset >= self.buf_start && end <= self.buf_start + self.buf_valid as u64
    }

    fn decode_buffered(
        &self,
        file: &Arc<dyn RandomAccessFile>,
        h: BlockHandle,
        end: u64,
        verify: bool,
    ) -> Result<Vec<u8>> {
        let s = (h.offset - self.buf_start) as usize;
        let e = (end - self.buf_start) as usize;
        decode_block(
            self.buf.as_slice()[s..e].to_vec(),
            h.offset,
            file.path(),
            verify,
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use parking_lot::Mutex;

    use super::*;
    use crate::sst::format::put_block_trailer;

    /// An in-memory file that logs its reads.
    #[derive(Debug)]
    struct MemFile {
        data: Vec<u8>,
        align: Option<usize>,
        log: Mutex<Vec<(u64, usize)>>,
        path: PathBuf,
    }

    impl RandomAccessFile for MemFile {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
            if let Some(a) = self.align {
                assert_eq!(offset % a as u64, 0, "unaligned offset");
                assert_eq!(buf.len() % a, 0, "unaligned length");
            }
            self.log.lock().push((offset, buf.len()));
            let start = (offset as usize).min(self.data.len());
            let n = buf.len().min(self.data.len() - start);
            buf[..n].copy_from_slice(&self.data[start..start + n]);
            Ok(n)
        }
        fn path(&self) -> &Path {
            &self.path
        }
        fn direct_alignment(&self) -> Option<usize> {
            self.align
        }
    }

    /// `n` blocks of `size` content bytes each (content = block number).
    fn file(n: usize, size: usize, align: Option<usize>) -> (Arc<MemFile>, Vec<BlockHandle>) {
        let mut data = Vec::new();
        let mut handles = Vec::new();
        for i in 0..n {
            let contents = vec![i as u8; size];
            handles.push(BlockHandle {
                offset: data.len() as u64,
                size: size as u64,
            });
            data.extend_from_slice(&contents);
            put_block_trailer(&mut data, &contents, 0);
        }
        let f = MemFile {
            data,
            align,
            log: Mutex::new(Vec::new()),
            path: PathBuf::from("mem.sst"),
        };
        (Arc::new(f), handles)
    }

    fn read_all(
        ra: &mut Readahead,
        f: &Arc<MemFile>,
        hs: &[BlockHandle],
        limit: u64,
    ) -> Result<()> {
        let dynf: Arc<dyn RandomAccessFile> = Arc::clone(f) as Arc<dyn RandomAccessFile>;
        let end = f.data.len() as u64;
        for (i, h) in hs.iter().enumerate() {
            let got = ra.read_block(&dynf, end, *h, limit, true)?;
            assert_eq!(got, vec![i as u8; h.size as usize], "block {i}");
        }
        Ok(())
    }

    #[test]
    fn grows_geometrically_up_to_max() {
        let (f, hs) = file(2000, 4000, None);
        let mut ra = Readahead::new(256 << 10);
        read_all(&mut ra, &f, &hs, u64::MAX).expect("read");
        let sizes: Vec<usize> = f.log.lock().iter().map(|&(_, n)| n).collect();
        assert_eq!(sizes[0], 4005, "the first read is a lone block");
        assert_eq!(
            &sizes[1..6],
            &[16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10]
        );
        assert!(sizes[6..sizes.len() - 1].iter().all(|&n| n == 256 << 10));
        // Reads cover the file without gaps; a chunk re-reads at most the
        // part of a block the previous chunk cut off.
        let mut pos = 0;
        for &(off, n) in f.log.lock().iter() {
            assert!(
                off <= pos && pos - off < 4005,
                "read at {off}, covered {pos}"
            );
            pos = off + n as u64;
        }
        assert_eq!(pos, f.data.len() as u64);
        assert_eq!(ra.next_size(), 256 << 10);
    }

    #[test]
    fn random_read_resets_and_limit_holds() {
        let (f, hs) = file(200, 4000, None);
        let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
        let end = f.data.len() as u64;
        let mut ra = Readahead::new(1 << 20);
        read_all(&mut ra, &f, &hs[..40], u64::MAX).expect("read");
        assert!(ra.next_size() > MIN_READAHEAD);
        // A jump backwards (outside the buffer) reads one block and resets.
        f.log.lock().clear();
        ra.read_block(&dynf, end, hs[2], u64::MAX, true)
            .expect("read");
        assert_eq!(ra.next_size(), MIN_READAHEAD);
        assert_eq!(*f.log.lock(), vec![(hs[2].offset, 4005)]);
        // Sequential again, but limited to the end of block 10.
        let limit = hs[10].end().expect("end");
        f.log.lock().clear();
        for h in &hs[3..=10] {
            ra.read_block(&dynf, end, *h, limit, true).expect("read");
        }
        let log = f.log.lock().clone();
        assert!(
            log.iter().all(|&(off, n)| off + n as u64 <= limit),
            "{log:?}"
        );
        assert_eq!(
            log.len(),
            2,
            "16 KiB then the rest up to the limit: {log:?}"
        );
    }

    #[test]
    fn size_carries_over_to_the_next_file() {
        let (a, ha) = file(100, 4000, None);
        let (b, hb) = file(100, 4000, None);
        let mut ra = Readahead::new(64 << 10);
        read_all(&mut ra, &a, &ha, u64::MAX).expect("a");
        assert_eq!(ra.next_size(), 64 << 10);
        read_all(&mut ra, &b, &hb, u64::MAX).expect("b");
        let first_b = b.log.lock()[0];
        assert_eq!(first_b, (0, 64 << 10), "file b starts at the grown size");
    }

    #[test]
    fn direct_files_get_aligned_chunks() {
        let (f, hs) = file(300, 3000, Some(4096));
        let mut ra = Readahead::new(1 << 20);
        // The lone first block goes through read_block (its own alignment
        // is the file's business), so start from the second block.
        let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
        let end = f.data.len() as u64;
        let mut first = true;
        for (i, h) in hs.iter().enumerate() {
            if first {
                // Mark block 0 as seen without reading it (a cache hit).
                ra.note_access(&dynf, end, *h);
                first = false;
                continue;
            }
            let got = ra.read_block(&dynf, end, *h, u64::MAX, true).expect("read");
            assert_eq!(got, vec![i as u8; 3000]);
        }
        let limit = hs[50].end().expect("end");
        let mut ra = Readahead::new(1 << 20);
        ra.note_access(&dynf, end, hs[0]);
        f.log.lock().clear();
        for h in &hs[1..=50] {
            ra.read_block(&dynf, end, *h, limit, true).expect("read");
        }
        let max_end = f.log.lock().iter().map(|&(o, n)| o + n as u64).max();
        assert!(max_end <= Some(limit.div_ceil(4096) * 4096));
    }

    #[test]
    fn corrupt_block_in_a_chunk_is_corruption() {
        let (f, hs) = file(50, 4000, None);
        let mut data = f.data.clone();
        data[hs[7].offset as usize + 10] ^= 1;
        let bad = Arc::new(MemFile {
            data,
            align: None,
            log: Mutex::new(Vec::new()),
            path: PathBuf::from("bad.sst"),
        });
        let mut ra = Readahead::new(1 << 20);
        let e = read_all(&mut ra, &bad, &hs, u64::MAX).expect_err("block 7 is bad");
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains(&hs[7].offset.to_string()), "{e}");
        assert!(bad.log.lock().len() < 7, "block 7 came from a chunk");
    }

    #[test]
    fn truncated_file_is_a_short_read_corruption() {
        let (f, hs) = file(20, 4000, None);
        let mut data = f.data.clone();
        data.truncate(hs[5].offset as usize + 100);
        let short = Arc::new(MemFile {
            data,
            align: None,
            log: Mutex::new(Vec::new()),
            path: PathBuf::from("short.sst"),
        });
        let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&short) as Arc<dyn RandomAccessFile>;
        let end = f.data.len() as u64;
        let mut ra = Readahead::new(1 << 20);
        let mut res = Ok(Vec::new());
        for h in &hs {
            res = ra.read_block(&dynf, end, *h, u64::MAX, true);
            if res.is_err() {
                break;
            }
        }
        assert!(res.expect_err("short").is_corruption());
    }
}
