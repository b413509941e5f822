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
            return self.from_buffer(file, h, end, verify);
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
            Some(a) if a > 0 && DIRECT_IO_ALIGN % a == 0 => {
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
                format!(
                    "short read: {got} bytes at {start}, block ends at {end}"
                ),
            ));
        }
        self.from_buffer(file, h, end, verify)
    }

    fn buffered(&self, offset: u64, end: u64) -> bool {
        offset >= self.buf_start && end <= self.buf_start + self.buf_valid as u64
    }

    fn from_buffer(
        &self,
        file: &Arc<dyn RandomAccessFile>,
        h: BlockHandle,
        end: u64,
        verify: bool,
    ) -> Result<Vec<u8>> {
        let s = (h.offset - self.buf_start) as usize;
        let e = (end - self.buf_start) as usize;
        decode_block(self.buf.as_slice()[s..e].to_vec(), h.offset, file.path(), verify)
    }
}
