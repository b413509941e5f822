//! [`BlobFileWriter`]: writes one blob file front to back (header, chunks,
//! footer) through a [`WritableFile`], handing back a [`BlobPointer`] per
//! value. Compaction writes its garbage-collection outputs with it; the
//! write lanes use it for the file under their staging buffers.
//!
//! Single-threaded (`&mut self`). Invariants: the file always holds the
//! header followed by whole, checked chunks (plus the footer once finished);
//! a pointer is handed out only for a value whose chunk is the current one
//! or already written, at the offset the value has in the file.

use std::path::{Path, PathBuf};

use super::format::{BlobFooter, BlobHeader, BlobPointer, ChunkBuilder, Creator, PAGE, value_crc};
use crate::error::Result;
use crate::io::{FileSystem, WritableFile};

/// What a finished blob file holds (the manifest's record of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlobFileMeta {
    /// The file's number.
    pub number: u64,
    /// The file's size in bytes.
    pub size: u64,
    /// Values in the file.
    pub value_count: u64,
    /// Bytes of values in the file.
    pub value_bytes: u64,
}

/// Writes one blob file.
#[derive(Debug)]
pub(crate) struct BlobFileWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    number: u64,
    chunk_size: usize,
    chunk: ChunkBuilder,
    /// File offset of the current chunk's first byte.
    chunk_start: u64,
    chunks: u64,
    values: u64,
    value_bytes: u64,
}

impl BlobFileWriter {
    /// Creates `path` (blob file `number`) and writes its header. Chunks are
    /// cut once adding a value would make them larger than `chunk_size`
    /// (rounded up to whole pages; a value larger than that gets a chunk of
    /// its own). `direct`: write with O_DIRECT.
    pub(crate) fn create(
        fs: &dyn FileSystem,
        path: &Path,
        number: u64,
        chunk_size: usize,
        creator: Creator,
        direct: bool,
    ) -> Result<BlobFileWriter> {
        let chunk_size = chunk_size.max(PAGE).div_ceil(PAGE) * PAGE;
        let mut file = if direct {
            fs.create_writable_direct(path)?
        } else {
            fs.create_writable(path)?
        };
        let header = BlobHeader {
            file_number: number,
            chunk_size: chunk_size as u32,
            creator,
        };
        file.append(&header.encode())?;
        Ok(BlobFileWriter {
            file,
            path: path.to_path_buf(),
            number,
            chunk_size,
            chunk: ChunkBuilder::new(),
            chunk_start: PAGE as u64,
            chunks: 0,
            values: 0,
            value_bytes: 0,
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The file's number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Bytes the file will have with the current chunk written (the footer
    /// excluded).
    pub(crate) fn size_estimate(&self) -> u64 {
        self.chunk_start + self.chunk.size() as u64
    }

    /// Adds `value` (written for `key`); returns where it will be.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<BlobPointer> {
        if !self.chunk.is_empty() && self.chunk.size_with(key.len(), value.len()) > self.chunk_size
        {
            self.write_chunk()?;
        }
        let (offset, crc) = self.chunk.add(key, value);
        debug_assert_eq!(crc, value_crc(value));
        self.values += 1;
        self.value_bytes += value.len() as u64;
        Ok(BlobPointer {
            file_number: self.number,
            offset: self.chunk_start + u64::from(offset),
            length: value.len() as u32,
            crc,
        })
    }

    /// Writes the current chunk (if any) to the file.
    fn write_chunk(&mut self) -> Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let bytes = self.chunk.finish();
        self.file.append(&bytes)?;
        self.chunk_start += bytes.len() as u64;
        self.chunks += 1;
        debug_assert_eq!(self.file.len(), self.chunk_start);
        Ok(())
    }

    /// Writes the last chunk and the footer and makes the file durable.
    pub(crate) fn finish(mut self) -> Result<BlobFileMeta> {
        self.write_chunk()?;
        let footer = BlobFooter {
            chunk_count: self.chunks,
            value_count: self.values,
            value_bytes: self.value_bytes,
        };
        self.file.append(&footer.encode())?;
        self.file.sync_data()?;
        Ok(BlobFileMeta {
            number: self.number,
            size: self.file.len(),
            value_count: self.values,
            value_bytes: self.value_bytes,
        })
    }
}
