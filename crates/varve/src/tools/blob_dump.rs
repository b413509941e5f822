//! Decoding one blob file: its header, chunks and their entries, and its
//! footer ([`dump_blob`]). Read-only; thread-safe. Every chunk trailer and
//! every value is checked against its CRC; damage is `Error::Corruption`
//! naming the file and offset.

use std::path::{Path, PathBuf};

use crate::blob::format::Creator;
use crate::blob::reader::BlobReader;
use crate::error::Result;
use crate::io::FileSystem;

/// One value of a blob file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobEntry {
    /// The user key the value was written for.
    pub key: Vec<u8>,
    /// File offset of the value.
    pub offset: u64,
    /// Its length.
    pub len: u32,
    /// Its masked CRC32C.
    pub crc: u32,
}

/// One chunk of a blob file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobChunk {
    /// File offset of the chunk.
    pub offset: u64,
    /// Its length in bytes (whole 4 KiB pages).
    pub len: u64,
    /// Its values, in file order.
    pub entries: Vec<BlobEntry>,
}

/// What [`dump_blob`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobDump {
    /// The file.
    pub file: PathBuf,
    /// The number in its header.
    pub file_number: u64,
    /// Who wrote it: `"write lane"` (values in arrival order) or
    /// `"compaction"` (values in key order).
    pub creator: &'static str,
    /// The chunk size its writer aimed at.
    pub chunk_size: u32,
    /// Its whole chunks, in file order.
    pub chunks: Vec<BlobChunk>,
    /// Values and value bytes the footer records; `None` for a file that
    /// was not sealed (still being written, or cut by a crash).
    pub footer: Option<(u64, u64)>,
    /// Bytes after the last whole chunk of an unsealed file.
    pub tail_bytes: u64,
}

/// Decodes and verifies the blob file at `path`.
pub fn dump_blob(fs: &dyn FileSystem, path: &Path) -> Result<BlobDump> {
    let r = BlobReader::open(fs, path, false)?;
    let walk = r.chunks(true)?;
    let h = r.header();
    Ok(BlobDump {
        file: path.to_path_buf(),
        file_number: h.file_number,
        creator: match h.creator {
            Creator::WriteLane => "write lane",
            Creator::Compaction => "compaction",
        },
        chunk_size: h.chunk_size,
        chunks: walk
            .chunks
            .into_iter()
            .map(|c| BlobChunk {
                offset: c.offset,
                len: c.len,
                entries: c
                    .entries
                    .into_iter()
                    .map(|e| BlobEntry {
                        key: e.key,
                        offset: c.offset + u64::from(e.value_offset),
                        len: e.value_len,
                        crc: e.crc,
                    })
                    .collect(),
            })
            .collect(),
        footer: walk.footer.map(|f| (f.value_count, f.value_bytes)),
        tail_bytes: walk.tail,
    })
}
