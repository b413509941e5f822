//! An open table: reads and checks the footer, properties, index and filter
//! once at [`Table::open`] and keeps them in memory (pinned) for the
//! table's life; data blocks come from the block cache or the file.
//!
//! `Table` is immutable after open, `Send + Sync`, shared via `Arc`; reads
//! are positional (`read_at`), so any number of threads may call
//! [`Table::get`] and iterate at once. Invariants established at open: the
//! blocks tile the file exactly (data blocks contiguous from 0, then filter,
//! index, properties, footer), every index entry decodes to the handle of the
//! next data block, and the properties agree with that layout. Point reads
//! find their data block through an `IndexSearch` built at open (a dense
//! array of key windows) instead of walking the index block. Every failed
//! check is `Error::Corruption` naming the file and the block's offset.
//! A table opened with a [`PinBudget`] that has room also reads every data
//! block at open and keeps them ([`PinnedBlocks`]): its reads do no IO.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::internal_iter::InternalIterator;
use crate::io::RandomAccessFile;
use crate::keys::{
    MAX_SEQUENCE, SequenceNumber, ValueKind, compare_bytes, lookup_key, parse_internal_key,
};
use crate::sst::BlockCache;

use super::block::Block;
use super::filter::BloomFilter;
use super::format::{
    BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, FORMAT_VERSION, Footer, check_handle, decode_block,
    read_block,
};
use super::index_search::IndexSearch;
use super::pinned::{PinBudget, PinnedBlocks};
use super::properties::TableProperties;
use super::readahead::Readahead;

/// A table is pinned (given a budget) only if its entries average at most
/// this many bytes of key and value.
const PIN_MAX_ENTRY_BYTES: u64 = 256;

/// An entry a point lookup found: its kind, value and sequence number.
pub(crate) type Found = (ValueKind, Vec<u8>, SequenceNumber);

/// How a table is read.
#[derive(Clone)]
pub(crate) struct TableReadOptions {
    /// Shared cache for data blocks (`None`: no caching).
    pub cache: Option<Arc<BlockCache>>,
    /// This table's key in the cache, unique per table (the file number).
    pub cache_id: u64,
    /// Verify data block checksums on read (default true). Blocks read at
    /// open are always verified.
    pub verify_checksums: bool,
    /// Read every data block at open and keep them, if they fit this
    /// budget (`None`: never).
    pub pin: Option<Arc<PinBudget>>,
}

impl Default for TableReadOptions {
    fn default() -> Self {
        TableReadOptions {
            cache: None,
            cache_id: 0,
            verify_checksums: true,
            pin: None,
        }
    }
}

impl fmt::Debug for TableReadOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableReadOptions")
            .field("cache", &self.cache.is_some())
            .field("cache_id", &self.cache_id)
            .field("verify_checksums", &self.verify_checksums)
            .field("pin", &self.pin.is_some())
            .finish()
    }
}

/// Where a point read would look in a table ([`Table::point_plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PointPlan {
    /// The bloom filter rules the key out, or it is past the last block:
    /// `get` returns `None` for this table.
    Absent,
    /// The first data block `get` searches.
    Block(BlockHandle),
    /// The table has no index search array: only `get` can tell.
    Unknown,
}

/// An open, read-only table file.
pub(crate) struct Table {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    /// End of the last data block (= offset of the first meta block).
    data_end: u64,
    index_offset: u64,
    cache: Option<Arc<BlockCache>>,
    cache_id: u64,
    verify_checksums: bool,
    index: Arc<Block>,
    /// Point reads' fast path through `index` (`None`: the block search).
    index_search: Option<IndexSearch>,
    filter: Option<BloomFilter>,
    props: TableProperties,
    /// Every data block, when pinned at open.
    pinned: Option<PinnedBlocks>,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_size", &self.props.file_size)
            .field("num_entries", &self.props.num_entries)
            .field("cache_id", &self.cache_id)
            .finish()
    }
}

impl Table {
    /// The table's file.
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Opens the table in `file` of `file_size` bytes: reads and verifies
    /// the footer, properties, index and filter, and pins them in memory.
    pub(crate) fn open(
        file: Arc<dyn RandomAccessFile>,
        file_size: u64,
        opts: TableReadOptions,
    ) -> Result<Arc<Table>> {
        let path = file.path().to_path_buf();
        let corrupt = |offset: u64, reason: &str| Error::corruption(&path, offset, reason);
        let footer_start = file_size
            .checked_sub(FOOTER_LEN as u64)
            .ok_or_else(|| corrupt(0, "file too short to be a table"))?;
        let mut buf = vec![0u8; FOOTER_LEN];
        let got = file.read_at(&mut buf, footer_start)?;
        buf.truncate(got);
        let footer = Footer::decode(&buf, &path, footer_start)?;

        // The blocks must tile the file: data | filter | index | properties | footer.
        let end_of = |h: BlockHandle| h.end().unwrap_or(u64::MAX);
        if end_of(footer.properties) != footer_start
            || end_of(footer.index) != footer.properties.offset
        {
            return Err(corrupt(
                footer_start,
                "footer handles do not match the file layout",
            ));
        }
        let data_end = if footer.filter.size == 0 {
            if footer.filter.offset != 0 {
                return Err(corrupt(footer_start, "bad empty filter handle"));
            }
            footer.index.offset
        } else {
            if end_of(footer.filter) != footer.index.offset {
                return Err(corrupt(
                    footer_start,
                    "filter handle does not match the file layout",
                ));
            }
            footer.filter.offset
        };

        // One read for all meta blocks; each is then checked on its own.
        let mut meta = vec![0u8; (footer_start - data_end) as usize];
        let got = file.read_at(&mut meta, data_end)?;
        if got != meta.len() {
            return Err(corrupt(data_end, "short read of the meta blocks"));
        }
        let read = |h: BlockHandle| -> Result<Vec<u8>> {
            check_handle(h, data_end, footer_start, &path)?;
            let start = (h.offset - data_end) as usize;
            let buf = meta[start..start + h.size as usize + BLOCK_TRAILER_LEN].to_vec();
            decode_block(buf, h.offset, &path, true)
        };
        let mut props = TableProperties::decode(&read(footer.properties)?)
            .map_err(|r| corrupt(footer.properties.offset, &r))?;
        props.format_version = FORMAT_VERSION;
        props.file_size = file_size;
        let index = Arc::new(Block::parse(
            read(footer.index)?,
            &path,
            footer.index.offset,
        )?);
        let filter = if footer.filter.size == 0 {
            None
        } else {
            let f = BloomFilter::decode(read(footer.filter)?)
                .map_err(|r| corrupt(footer.filter.offset, &r))?;
            Some(f)
        };

        check_index(&index, data_end, &props).map_err(|r| corrupt(footer.index.offset, &r))?;
        let index_search = IndexSearch::build(&index);
        let trailer = BLOCK_TRAILER_LEN as u64;
        let filter_bytes = if filter.is_some() {
            footer.filter.size + trailer
        } else {
            0
        };
        if props.data_bytes != data_end
            || props.index_bytes != footer.index.size + trailer
            || props.filter_bytes != filter_bytes
        {
            return Err(corrupt(
                footer.properties.offset,
                "properties disagree with the file layout",
            ));
        }
        // Pinned only if the entries are small (keys and blob pointers),
        // so the budget goes to tables whose values live elsewhere.
        let small_entries =
            props.raw_key_bytes + props.raw_value_bytes <= PIN_MAX_ENTRY_BYTES * props.num_entries;
        let pinned = match &opts.pin {
            Some(budget) if small_entries => {
                let handles = data_handles(&index).map_err(|r| corrupt(footer.index.offset, &r))?;
                PinnedBlocks::load(file.as_ref(), &path, &handles, data_end, budget)?
            }
            _ => None,
        };
        Ok(Arc::new(Table {
            pinned,
            file,
            path,
            data_end,
            index_offset: footer.index.offset,
            cache: opts.cache,
            cache_id: opts.cache_id,
            verify_checksums: opts.verify_checksums,
            index,
            index_search,
            filter,
            props,
        }))
    }

    /// The newest entry of `user_key` with sequence `<= seq`, if the table
    /// has one (a tombstone comes back as `ValueKind::Deletion`).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(ValueKind, Vec<u8>)>> {
        Ok(self
            .get_entry(user_key, seq)?
            .map(|(kind, value, _)| (kind, value)))
    }

    /// [`Table::get`] with the entry's sequence number.
    pub(crate) fn get_entry(&self, user_key: &[u8], seq: SequenceNumber) -> Result<Option<Found>> {
        if !self.may_contain(user_key) {
            return Ok(None);
        }
        let target = lookup_key(user_key, seq.min(MAX_SEQUENCE));
        if let Some(search) = &self.index_search {
            // Blocks `lo..=hi` may hold the first entry >= target; a block
            // that holds none (its separator is < target) sends us on.
            let (lo, hi) = search.find(user_key);
            for i in lo..=hi {
                let Some(handle) = search.handle(i) else {
                    break;
                };
                if let Some(found) = self.get_in_block(handle, &target, user_key)? {
                    return Ok(found);
                }
            }
            return Ok(None);
        }
        let mut idx = self.index.iter();
        idx.seek(&target);
        if !idx.valid() {
            return idx.status().map_err(|_| self.bad_index()).map(|()| None);
        }
        let handle = self.decode_handle(idx.value())?;
        Ok(self
            .get_in_block(handle, &target, user_key)?
            .unwrap_or_default())
    }

    /// Where a point read of `user_key` would look, without any IO: see
    /// [`PointPlan`].
    pub(crate) fn point_plan(&self, user_key: &[u8]) -> PointPlan {
        if !self.may_contain(user_key) {
            return PointPlan::Absent;
        }
        let Some(search) = &self.index_search else {
            return PointPlan::Unknown;
        };
        let (lo, _) = search.find(user_key);
        match search.handle(lo) {
            Some(h) => PointPlan::Block(h),
            None => PointPlan::Absent,
        }
    }

    /// The block cache and this table's id in it.
    pub(crate) fn cache(&self) -> Option<(&Arc<BlockCache>, u64)> {
        self.cache.as_ref().map(|c| (c, self.cache_id))
    }

    /// The first entry `>= target` in the data block at `handle`, if it is
    /// `user_key`'s (`Some(None)`: it is another key's; `None`: the block has
    /// no entry `>= target`).
    pub(crate) fn get_in_block(
        &self,
        handle: BlockHandle,
        target: &[u8],
        user_key: &[u8],
    ) -> Result<Option<Option<Found>>> {
        let block = self.read_data_block(handle)?;
        self.lookup_in_block(&block, handle, target, user_key)
    }

    /// [`Table::get_in_block`] on a block already at hand (`block` is the
    /// data block at `handle`).
    pub(crate) fn lookup_in_block(
        &self,
        block: &Arc<Block>,
        handle: BlockHandle,
        target: &[u8],
        user_key: &[u8],
    ) -> Result<Option<Option<Found>>> {
        let mut it = block.iter();
        it.seek(target);
        if !it.valid() {
            return it
                .status()
                .map_err(|_| self.bad_block(handle.offset))
                .map(|()| None);
        }
        let parsed = parse_internal_key(it.key()).ok_or_else(|| {
            Error::corruption(&self.path, handle.offset, "bad internal key in block")
        })?;
        if compare_bytes(parsed.user_key, user_key).is_ne() {
            return Ok(Some(None));
        }
        Ok(Some(Some((parsed.kind, it.value().to_vec(), parsed.seq))))
    }

    /// False only if the bloom filter says `user_key` is absent.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// The table's properties.
    pub(crate) fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// Bytes held in memory for the table's life (index, filter, properties).
    pub(crate) fn pinned_memory(&self) -> usize {
        self.index.charge()
            + self.index_search.as_ref().map_or(0, IndexSearch::memory)
            + self.filter.as_ref().map_or(0, BloomFilter::memory)
            + self.props.memory()
    }

    /// Bytes of data blocks pinned at open (0 when not pinned).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn pinned_data_memory(&self) -> usize {
        self.pinned.as_ref().map_or(0, PinnedBlocks::memory)
    }

    /// Approximate file offset where entries `>= internal_key` start (from
    /// the index; no data IO). Past the last key: the end of the data blocks.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn approximate_offset_of(&self, internal_key: &[u8]) -> u64 {
        let mut idx = self.index.iter();
        idx.seek(internal_key);
        if idx.valid()
            && let Some(h) = BlockHandle::decode_exact(idx.value())
        {
            return h.offset;
        }
        self.data_end
    }

    /// Each data block's index separator (an internal key `>=` every key of
    /// the block and `<` every key of the next) and the offset where the block
    /// ends. No data IO.
    pub(crate) fn index_samples(&self) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::with_capacity(self.props.num_data_blocks as usize);
        let mut idx = self.index.iter();
        idx.seek_to_first();
        while idx.valid() {
            if let Some(end) = BlockHandle::decode_exact(idx.value()).and_then(|h| h.end()) {
                out.push((idx.key().to_vec(), end));
            }
            idx.next();
        }
        out
    }

    pub(crate) fn index_block(&self) -> &Arc<Block> {
        &self.index
    }

    pub(crate) fn decode_handle(&self, value: &[u8]) -> Result<BlockHandle> {
        BlockHandle::decode_exact(value).ok_or_else(|| self.bad_index())
    }

    pub(crate) fn bad_index(&self) -> Error {
        Error::corruption(&self.path, self.index_offset, "malformed index entry")
    }

    pub(crate) fn bad_block(&self, offset: u64) -> Error {
        Error::corruption(&self.path, offset, "malformed block entry")
    }

    /// The data block at `handle`, from the cache or the file (then cached).
    /// The point-read path: never reads ahead.
    pub(crate) fn read_data_block(&self, handle: BlockHandle) -> Result<Arc<Block>> {
        self.read_data_block_with(handle, None, true)
    }

    /// End of the data blocks (offset of the first meta block).
    pub(crate) fn data_end(&self) -> u64 {
        self.data_end
    }

    /// End of the data block that holds the first entry `>= internal_key`
    /// (the data end when there is none): a scan that stops before
    /// `internal_key` reads nothing past it. From the index; no data IO.
    pub(crate) fn read_limit_for(&self, internal_key: &[u8]) -> u64 {
        let mut idx = self.index.iter();
        idx.seek(internal_key);
        if idx.valid()
            && let Some(end) = BlockHandle::decode_exact(idx.value()).and_then(|h| h.end())
        {
            return end.min(self.data_end);
        }
        self.data_end
    }

    /// The data block at `handle`, from the cache, the read-ahead buffer
    /// `ra` (read-ahead chunks stop at `ra`'s limit) or the file. A block
    /// read from the file or the buffer is inserted into the cache only when
    /// `fill_cache`.
    pub(crate) fn read_data_block_with(
        &self,
        handle: BlockHandle,
        ra: Option<(&mut Readahead, u64)>,
        fill_cache: bool,
    ) -> Result<Arc<Block>> {
        if let Some(b) = self.pinned.as_ref().and_then(|p| p.get(handle.offset)) {
            return Ok(Arc::clone(b));
        }
        if let Some(cache) = &self.cache
            && let Some(b) = cache.get(self.cache_id, handle.offset)
        {
            if let Some((ra, _)) = ra {
                ra.note_access(&self.file, self.data_end, handle);
            }
            return Ok(b);
        }
        let data = match ra {
            Some((ra, limit)) => ra.read_block(
                &self.file,
                self.data_end,
                handle,
                limit,
                self.verify_checksums,
                self.index_search.as_ref().map(IndexSearch::bounds),
            )?,
            None => read_block(
                self.file.as_ref(),
                handle,
                self.data_end,
                self.verify_checksums,
            )?
            .into(),
        };
        let block = Arc::new(Block::parse(data, &self.path, handle.offset)?);
        if fill_cache && let Some(cache) = &self.cache {
            if block.is_shared() {
                // Served from a read-ahead chunk without a copy: cached
                // (as a copy, which never pins the chunk) only into free
                // room, so a scan does not evict what others cached nor
                // pay a copy and an eviction per block once the cache is
                // full (docs/readahead.md, "Block cache").
                let charge = block.charge();
                cache.insert_if_room(self.cache_id, handle.offset, charge, || {
                    Arc::new(block.to_owned_block())
                });
            } else {
                cache.insert(self.cache_id, handle.offset, Arc::clone(&block));
            }
        }
        Ok(block)
    }
}

/// The handles of the data blocks, in file order (the index was checked).
fn data_handles(index: &Arc<Block>) -> std::result::Result<Vec<BlockHandle>, String> {
    let mut out = Vec::new();
    let mut it = index.iter();
    it.seek_to_first();
    while it.valid() {
        out.push(BlockHandle::decode_exact(it.value()).ok_or("malformed index entry")?);
        it.next();
    }
    it.status()
        .map_err(|_| "malformed index block".to_string())?;
    Ok(out)
}

/// Checks that the index entries are parsable internal keys mapping to
/// contiguous data blocks `[0, data_end)`, one per counted data block.
fn check_index(
    index: &Arc<Block>,
    data_end: u64,
    props: &TableProperties,
) -> std::result::Result<(), String> {
    let mut it = index.iter();
    it.seek_to_first();
    let (mut expected, mut count) = (0u64, 0u64);
    while it.valid() {
        if parse_internal_key(it.key()).is_none() {
            return Err(format!("index entry {count} has a bad internal key"));
        }
        let h = BlockHandle::decode_exact(it.value())
            .ok_or_else(|| format!("index entry {count} has a bad handle"))?;
        if h.offset != expected {
            return Err(format!(
                "index entry {count} points to {} instead of {expected}",
                h.offset
            ));
        }
        expected = h.end().ok_or("index handle overflows")?;
        count += 1;
        it.next();
    }
    if expected != data_end || count != props.num_data_blocks {
        return Err(format!(
            "index covers {expected} bytes in {count} blocks; expected {data_end} bytes in {} blocks",
            props.num_data_blocks
        ));
    }
    Ok(())
}
