//! Decoding one table file: its footer, properties and entries
//! ([`dump_sst`]). Read-only; thread-safe. Every block read is checked
//! against its checksum; damage is `Error::Corruption` naming the file and
//! the block's offset.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::internal_iter::InternalIterator;
use crate::io::FileSystem;
use crate::keys::{ValueKind, parse_internal_key};
use crate::sst::{FOOTER_LEN, Footer, Table, TableProperties, TableReadOptions};

/// One entry of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstEntry {
    /// The user key.
    pub key: Vec<u8>,
    /// Its sequence number.
    pub seq: u64,
    /// True for a value, false for a tombstone.
    pub put: bool,
    /// The value lives in a blob file and `value` is the pointer to it.
    pub in_blob_file: bool,
    /// The value (empty for a tombstone).
    pub value: Vec<u8>,
}

/// What [`dump_sst`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstDump {
    /// The file.
    pub file: PathBuf,
    /// The footer's block handles.
    pub footer: Footer,
    /// The properties block.
    pub properties: TableProperties,
    /// Entries in order, at most the `limit` asked for.
    pub entries: Vec<SstEntry>,
    /// Entries read in total (all of them, even past the limit).
    pub entries_read: u64,
}

/// Decodes the table at `path`, keeping at most `limit` entries (every
/// entry is still read and checked).
pub fn dump_sst(fs: &dyn FileSystem, path: &Path, limit: Option<usize>) -> Result<SstDump> {
    let size = fs.file_size(path)?;
    let file = fs.open_random_access(path)?;
    let footer_start = size
        .checked_sub(FOOTER_LEN as u64)
        .ok_or_else(|| Error::corruption(path, 0, "file too short to be a table"))?;
    let mut buf = vec![0u8; FOOTER_LEN];
    let got = file.read_at(&mut buf, footer_start)?;
    buf.truncate(got);
    let footer = Footer::decode(&buf, path, footer_start)?;
    let table = Table::open(file, size, TableReadOptions::default())?;
    let mut it = table.iter();
    it.seek_to_first();
    let mut entries = Vec::new();
    let mut entries_read = 0u64;
    while it.valid() {
        entries_read += 1;
        if limit.is_none_or(|l| entries.len() < l) {
            let k = parse_internal_key(it.key())
                .ok_or_else(|| Error::corruption(path, 0, "malformed internal key"))?;
            entries.push(SstEntry {
                key: k.user_key.to_vec(),
                seq: k.seq,
                put: k.kind.has_value(),
                in_blob_file: k.kind == ValueKind::BlobIndex,
                value: it.value().to_vec(),
            });
        }
        it.next();
    }
    it.status()?;
    Ok(SstDump {
        file: path.to_path_buf(),
        footer,
        properties: table.properties().clone(),
        entries,
        entries_read,
    })
}
