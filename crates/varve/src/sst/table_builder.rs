//! Writes one table file: data blocks as entries arrive, then at
//! [`TableBuilder::finish`] the filter, index and properties blocks and the
//! footer, then `sync_data` (layout in `docs/sst-format.md`).
//!
//! Single-threaded (`Send`). Invariants: internal keys are added in strictly
//! increasing order (`debug_assert`); data blocks are contiguous from offset
//! 0; each block goes to the file in one append (contents + trailer); the
//! index entry for a block is written once the next block's first key is
//! known, so its separator can be shortened. After an IO error the builder
//! refuses further work with a copy of that error.

use crate::error::{Error, Result};
use crate::io::WritableFile;
use crate::keys::{MAX_SEQUENCE, ValueKind, pack_trailer, parse_internal_key, user_key};

use super::block_builder::BlockBuilder;
use super::filter::FilterBuilder;
use super::format::{
    BLOCK_TRAILER_LEN, BlockHandle, Compression, Footer, lz4_compress, put_block_trailer,
};
use super::properties::TableProperties;

/// Largest `key.len() + value.len()` of one entry (block offsets are `u32`).
pub(super) const MAX_ENTRY_BYTES: usize = 1 << 30;

/// Options for writing a table.
#[derive(Debug, Clone)]
pub(crate) struct TableBuilderOptions {
    /// Target uncompressed size of a data block (default 4096). A block may
    /// exceed it by one entry.
    pub block_size: usize,
    /// Entries between restart points in data blocks (default 16).
    pub block_restart_interval: usize,
    /// Bloom filter bits per user key (default 10; 0 = no filter).
    pub bloom_bits_per_key: u32,
    /// Per-data-block compression (default none).
    pub compression: Compression,
    /// The keyspace the table belongs to, recorded in its properties.
    pub keyspace: u32,
}

impl Default for TableBuilderOptions {
    fn default() -> Self {
        TableBuilderOptions {
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            keyspace: 0,
        }
    }
}

/// Writes a table through a [`WritableFile`].
#[derive(Debug)]
pub(crate) struct TableBuilder {
    file: Box<dyn WritableFile>,
    opts: TableBuilderOptions,
    offset: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    filter: Option<FilterBuilder>,
    /// Handle of the last flushed data block, awaiting its index entry
    /// (written when the next key, or `finish`, gives its separator).
    pending_index: Option<BlockHandle>,
    last_key: Vec<u8>,
    props: TableProperties,
    scratch: Vec<u8>,
    compressed: Vec<u8>,
    failed: Option<Error>,
}

impl TableBuilder {
    /// A builder writing to `file` (which should be empty).
    pub(crate) fn new(file: Box<dyn WritableFile>, opts: TableBuilderOptions) -> Self {
        debug_assert!(file.is_empty(), "a table is written to an empty file");
        let filter =
            (opts.bloom_bits_per_key > 0).then(|| FilterBuilder::new(opts.bloom_bits_per_key));
        TableBuilder {
            offset: file.len(),
            file,
            data_block: BlockBuilder::new(opts.block_restart_interval),
            index_block: BlockBuilder::new(1),
            filter,
            pending_index: None,
            last_key: Vec::new(),
            props: TableProperties {
                keyspace: opts.keyspace,
                ..TableProperties::default()
            },
            scratch: Vec::new(),
            compressed: Vec::new(),
            failed: None,
            opts,
        }
    }

    /// Adds an entry; keys must be strictly increasing internal keys.
    pub(crate) fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.duplicate());
        }
        debug_assert!(
            self.props.num_entries == 0
                || crate::keys::compare_internal_keys(&self.last_key, internal_key).is_lt(),
            "table keys must be strictly increasing"
        );
        if internal_key.len() + value.len() > MAX_ENTRY_BYTES {
            return Err(Error::InvalidArgument(format!(
                "entry of {} bytes exceeds the table limit of {MAX_ENTRY_BYTES}",
                internal_key.len() + value.len()
            )));
        }
        if let Some(handle) = self.pending_index.take() {
            let sep = shortest_separator(&self.last_key, internal_key);
            self.add_index_entry(&sep, handle);
        }
        let ukey = user_key(internal_key);
        if let Some(f) = &mut self.filter
            && (self.props.num_entries == 0 || user_key(&self.last_key) != ukey)
        {
            f.add(ukey);
        }
        let p = &mut self.props;
        if p.num_entries == 0 {
            p.smallest_key = internal_key.to_vec();
            p.smallest_seq = u64::MAX;
        }
        p.num_entries += 1;
        p.raw_key_bytes += internal_key.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        if let Some(parsed) = parse_internal_key(internal_key) {
            if parsed.kind == ValueKind::Deletion {
                p.num_deletions += 1;
            }
            p.smallest_seq = p.smallest_seq.min(parsed.seq);
            p.largest_seq = p.largest_seq.max(parsed.seq);
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(internal_key);
        self.data_block.add(internal_key, value);
        if self.data_block.current_size_estimate() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Entries added so far.
    pub(crate) fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the pending data block.
    pub(crate) fn estimated_file_size(&self) -> u64 {
        self.offset + self.data_block.current_size_estimate() as u64
    }

    /// Writes the remaining blocks and the footer, syncs, and returns the
    /// table's properties (with `file_size`).
    pub(crate) fn finish(mut self) -> Result<TableProperties> {
        if let Some(e) = &self.failed {
            return Err(e.duplicate());
        }
        self.flush_data_block()?;
        if let Some(handle) = self.pending_index.take() {
            let last = std::mem::take(&mut self.last_key);
            self.add_index_entry(&last, handle);
            self.last_key = last;
        }
        let mut footer = Footer::default();
        if let Some(f) = self.filter.take() {
            footer.filter = self.write_block(&f.finish(), Compression::None)?;
            self.props.filter_bytes = footer.filter.size + BLOCK_TRAILER_LEN as u64;
        }
        let mut index = std::mem::replace(&mut self.index_block, BlockBuilder::new(1));
        footer.index = self.write_block(index.finish(), Compression::None)?;
        self.props.index_bytes = footer.index.size + BLOCK_TRAILER_LEN as u64;
        if self.props.num_entries > 0 {
            self.props.largest_key = self.last_key.clone();
        }
        if self.props.smallest_seq > self.props.largest_seq {
            self.props.smallest_seq = 0; // no parsable key
        }
        footer.properties = self.write_block(&self.props.encode(), Compression::None)?;
        self.append(&footer.encode())?;
        self.file.sync_data()?;
        let mut props = std::mem::take(&mut self.props);
        props.format_version = super::format::FORMAT_VERSION;
        props.file_size = self.offset;
        Ok(props)
    }

    fn add_index_entry(&mut self, key: &[u8], handle: BlockHandle) {
        let mut enc = Vec::with_capacity(super::format::MAX_HANDLE_LEN);
        handle.encode_to(&mut enc);
        self.index_block.add(key, &enc);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let mut block = std::mem::replace(&mut self.data_block, BlockBuilder::new(1));
        let res = self.write_data_block(&mut block);
        block.reset();
        self.data_block = block;
        let handle = res?;
        self.pending_index = Some(handle);
        self.props.num_data_blocks += 1;
        self.props.data_bytes += handle.size + BLOCK_TRAILER_LEN as u64;
        Ok(())
    }

    fn write_data_block(&mut self, block: &mut BlockBuilder) -> Result<BlockHandle> {
        let raw = block.finish();
        if self.opts.compression == Compression::Lz4 {
            lz4_compress(raw, &mut self.compressed);
            if self.compressed.len() < raw.len() - raw.len() / 8 {
                let c = std::mem::take(&mut self.compressed);
                let res = self.write_block(&c, Compression::Lz4);
                self.compressed = c;
                return res;
            }
        }
        self.write_block(raw, Compression::None)
    }

    /// Writes `contents` (already compressed as `compression` says) and its
    /// trailer in one append.
    fn write_block(&mut self, contents: &[u8], compression: Compression) -> Result<BlockHandle> {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        buf.extend_from_slice(contents);
        put_block_trailer(&mut buf, contents, compression.type_byte());
        let handle = BlockHandle {
            offset: self.offset,
            size: contents.len() as u64,
        };
        let res = self.append(&buf);
        self.scratch = buf;
        res.map(|()| handle)
    }

    fn append(&mut self, data: &[u8]) -> Result<()> {
        match self.file.append(data) {
            Ok(()) => {
                self.offset += data.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.failed = Some(e.duplicate());
                Err(e)
            }
        }
    }
}

fn append_trailer(dst: &mut Vec<u8>, seq: u64, kind: ValueKind) {
    dst.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// A short internal key `s` with `start <= s < limit` (`start < limit`):
/// when the user keys differ and a one-byte increment of `start`'s user key
/// at the first differing position stays below `limit`'s, that shortened
/// user key with the largest trailer; otherwise `start` itself.
pub(super) fn shortest_separator(start: &[u8], limit: &[u8]) -> Vec<u8> {
    let (a, b) = (user_key(start), user_key(limit));
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if common < a.len() && common < b.len() {
        let byte = a[common];
        if byte < 0xff && byte + 1 < b[common] && common + 1 < a.len() {
            let mut sep = Vec::with_capacity(common + 1 + crate::keys::TRAILER_LEN);
            sep.extend_from_slice(&a[..common]);
            sep.push(byte + 1);
            append_trailer(&mut sep, MAX_SEQUENCE, ValueKind::FOR_SEEK);
            return sep;
        }
    }
    start.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{compare_internal_keys, make_internal_key};

    #[test]
    fn separator_properties() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"abcdef", b"abzzzz"),
            (b"abc", b"abd"),
            (b"abc", b"abcd"),
            (b"a\xff\xff", b"b"),
            (b"foo", b"foo"),
            (b"", b"a"),
            (b"hello1234", b"helloz"),
        ];
        for &(a, b) in cases {
            let start = make_internal_key(a, 7, ValueKind::Value);
            let limit = if a == b {
                make_internal_key(b, 3, ValueKind::Value)
            } else {
                make_internal_key(b, 100, ValueKind::Value)
            };
            let sep = shortest_separator(&start, &limit);
            assert!(compare_internal_keys(&start, &sep).is_le(), "{a:?} {b:?}");
            assert!(compare_internal_keys(&sep, &limit).is_lt(), "{a:?} {b:?}");
            assert!(sep.len() <= start.len());
        }
        let sep = shortest_separator(
            &make_internal_key(b"abcdef", 1, ValueKind::Value),
            &make_internal_key(b"abzz", 1, ValueKind::Value),
        );
        assert_eq!(user_key(&sep), b"abd");
    }
}
