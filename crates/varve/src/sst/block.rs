//! A parsed block ([`Block`]) and its cursor ([`BlockIter`]).
//!
//! [`Block::parse`] validates the whole block once, when it is loaded: the
//! restart array, every entry header, every prefix length, and that each
//! restart point starts an entry with `shared == 0`. Malformed contents are
//! an `Error::Corruption` at that moment, so a parsed block can be iterated
//! without further checks (the cursor still decodes defensively and never
//! panics). A `Block` is immutable and shared (`Arc`) between the block
//! cache and any number of cursors; a `BlockIter` is single-threaded.
//! Keys compare as internal keys ([`compare_internal_keys`]).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::block_bytes::BlockBytes;
use crate::error::{Error, Result};
use crate::internal_iter::InternalIterator;
use crate::keys::compare_internal_keys;
use crate::util::coding::{decode_fixed32, decode_varint32};

/// Bytes charged to a cache for a block beyond its contents.
const BLOCK_OVERHEAD: usize = std::mem::size_of::<Block>() + 32;

/// The uncompressed, validated contents of one block.
#[derive(Debug)]
pub struct Block {
    data: BlockBytes,
    /// Where the restart array starts (= end of the entries).
    restarts_offset: usize,
    num_restarts: usize,
    num_entries: usize,
}

/// One decoded entry header: `(shared, non_shared, value_len, header_len)`.
#[inline]
fn decode_entry_header(src: &[u8]) -> Option<(usize, usize, usize, usize)> {
    // Fast path: all three lengths below 128 (one byte each), the common
    // case for small keys and values.
    if let [s, n, v, ..] = *src
        && (s | n | v) < 0x80
    {
        return Some((s as usize, n as usize, v as usize, 3));
    }
    let (shared, a) = decode_varint32(src)?;
    let (non_shared, b) = decode_varint32(src.get(a..)?)?;
    let (value_len, c) = decode_varint32(src.get(a + b..)?)?;
    Some((
        shared as usize,
        non_shared as usize,
        value_len as usize,
        a + b + c,
    ))
}

impl Block {
    /// Validates `data` (uncompressed contents) as a block. `file` and
    /// `offset` name the block in a `Corruption` error.
    pub fn parse(
        data: impl Into<BlockBytes>,
        file: impl AsRef<Path>,
        offset: u64,
    ) -> Result<Block> {
        let data = data.into();
        match Block::validate(data.as_slice()) {
            Ok((restarts_offset, num_restarts, num_entries)) => Ok(Block {
                data,
                restarts_offset,
                num_restarts,
                num_entries,
            }),
            Err(reason) => Err(Error::corruption(file.as_ref(), offset, reason)),
        }
    }

    fn validate(data: &[u8]) -> std::result::Result<(usize, usize, usize), String> {
        let len = data.len();
        let num_restarts = len
            .checked_sub(4)
            .and_then(|p| decode_fixed32(&data[p..]))
            .ok_or("block shorter than its restart count")? as usize;
        let max_restarts = (len - 4) / 4;
        if num_restarts > max_restarts {
            return Err(format!(
                "restart count {num_restarts} exceeds block size {len}"
            ));
        }
        let restarts_offset = len - 4 - 4 * num_restarts;
        let restart = |i: usize| decode_fixed32(&data[restarts_offset + 4 * i..]).unwrap_or(0);
        if restarts_offset == 0 {
            // Empty block: no restart, or the single restart 0.
            if num_restarts > 1 || (num_restarts == 1 && restart(0) != 0) {
                return Err("bad restart array in an empty block".into());
            }
            return Ok((0, num_restarts, 0));
        }
        if num_restarts == 0 {
            return Err("non-empty block without restart points".into());
        }
        let mut next_restart = 0;
        let mut pos = 0;
        let mut key_len = 0;
        let mut entries = 0;
        while pos < restarts_offset {
            let (shared, non_shared, value_len, header) =
                decode_entry_header(&data[pos..restarts_offset])
                    .ok_or_else(|| format!("bad entry header at block offset {pos}"))?;
            if shared > key_len {
                return Err(format!(
                    "entry at block offset {pos} shares {shared} bytes of a {key_len}-byte key"
                ));
            }
            if next_restart < num_restarts && restart(next_restart) as usize == pos {
                if shared != 0 {
                    return Err(format!(
                        "restart entry at block offset {pos} has shared {shared}"
                    ));
                }
                next_restart += 1;
            } else if entries == 0 {
                return Err("first entry is not a restart point".into());
            }
            let end = (pos + header)
                .checked_add(non_shared)
                .and_then(|e| e.checked_add(value_len))
                .filter(|&e| e <= restarts_offset)
                .ok_or_else(|| format!("entry at block offset {pos} runs past the entries"))?;
            key_len = shared + non_shared;
            entries += 1;
            pos = end;
        }
        if next_restart != num_restarts {
            return Err(format!(
                "restart point {next_restart} ({}) is not an entry start",
                restart(next_restart)
            ));
        }
        Ok((restarts_offset, num_restarts, entries))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.num_entries
    }

    /// True when the block has no entries.
    pub fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// Size of the uncompressed contents.
    pub fn size(&self) -> usize {
        self.data.as_slice().len()
    }

    /// True when the contents are a range of a shared read-ahead chunk
    /// (see [`BlockBytes`]); such a block is not put in the block cache.
    pub fn is_shared(&self) -> bool {
        self.data.is_shared()
    }

    /// The same block with owned contents (a copy when shared), for the
    /// block cache.
    pub fn to_owned_block(&self) -> Block {
        Block {
            data: self.data.to_owned(),
            restarts_offset: self.restarts_offset,
            num_restarts: self.num_restarts,
            num_entries: self.num_entries,
        }
    }

    /// Reads the first and last byte of the contents (where a seek starts:
    /// the first entry and the restart array) and returns their sum plus the
    /// size; used to bring a batch's blocks into the CPU cache together.
    pub(crate) fn touch(&self) -> usize {
        let data = self.data.as_slice();
        let first = data.first().copied().unwrap_or(0);
        let last = data.last().copied().unwrap_or(0);
        data.len() + usize::from(first) + usize::from(last)
    }

    /// Bytes to charge a cache for holding this block.
    pub fn charge(&self) -> usize {
        self.data.heap_size() + BLOCK_OVERHEAD
    }

    /// A cursor over the block (initially invalid).
    pub fn iter(self: &Arc<Self>) -> BlockIter {
        BlockIter {
            current: self.restarts_offset,
            next_off: 0,
            restart_index: self.num_restarts,
            key: Vec::new(),
            value: (0, 0),
            corrupt: false,
            block: Arc::clone(self),
        }
    }

    fn restart_point(&self, i: usize) -> usize {
        decode_fixed32(&self.data.as_slice()[self.restarts_offset + 4 * i..]).unwrap_or(0) as usize
    }
}

/// A cursor over one [`Block`]; implements [`InternalIterator`].
#[derive(Debug)]
pub struct BlockIter {
    block: Arc<Block>,
    /// Offset of the current entry; `restarts_offset` when invalid.
    current: usize,
    /// Offset of the entry after the current one.
    next_off: usize,
    /// Index of the restart block holding `current`.
    restart_index: usize,
    key: Vec<u8>,
    /// Value position `(start, len)` in `block.data`.
    value: (usize, usize),
    /// Set if decoding failed (cannot happen for a validated block).
    corrupt: bool,
}

impl BlockIter {
    fn invalidate(&mut self) {
        self.current = self.block.restarts_offset;
        self.restart_index = self.block.num_restarts;
    }

    fn seek_to_restart(&mut self, index: usize) {
        self.key.clear();
        self.restart_index = index;
        self.next_off = self.block.restart_point(index);
    }

    /// Decodes the entry at `next_off`; false at the end or on bad data.
    fn parse_next(&mut self) -> bool {
        let end = self.block.restarts_offset;
        self.current = self.next_off;
        if self.current >= end {
            self.invalidate();
            return false;
        }
        let data = &self.block.data.as_slice()[..end];
        let decoded = decode_entry_header(&data[self.current..]).and_then(|(s, n, v, h)| {
            let k = self.current + h;
            let kend = k.checked_add(n)?;
            let vend = kend.checked_add(v)?;
            (s <= self.key.len() && vend <= end).then_some((s, k, kend, v))
        });
        let Some((shared, k, kend, vlen)) = decoded else {
            self.corrupt = true;
            self.invalidate();
            return false;
        };
        self.key.truncate(shared);
        self.key.extend_from_slice(&data[k..kend]);
        self.value = (kend, vlen);
        self.next_off = kend + vlen;
        while self.restart_index + 1 < self.block.num_restarts
            && self.block.restart_point(self.restart_index + 1) <= self.current
        {
            self.restart_index += 1;
        }
        true
    }

    /// The full key stored at restart point `i` (`shared` is 0 there).
    fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let off = self.block.restart_point(i);
        let data = &self.block.data.as_slice()[..self.block.restarts_offset];
        let (_, n, _, h) = decode_entry_header(data.get(off..)?)?;
        data.get(off + h..off.checked_add(h)?.checked_add(n)?)
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.current < self.block.restarts_offset && !self.corrupt
    }

    fn seek_to_first(&mut self) {
        if self.block.num_restarts == 0 {
            return self.invalidate();
        }
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        if self.block.num_restarts == 0 {
            return self.invalidate();
        }
        self.seek_to_restart(self.block.num_restarts - 1);
        while self.parse_next() && self.next_off < self.block.restarts_offset {}
    }

    fn seek(&mut self, target: &[u8]) {
        if self.block.num_restarts == 0 {
            return self.invalidate();
        }
        // Last restart point whose key is < target (or 0).
        let (mut lo, mut hi) = (0, self.block.num_restarts - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            match self.restart_key(mid) {
                Some(k) if compare_internal_keys(k, target) == Ordering::Less => lo = mid,
                Some(_) => hi = mid - 1,
                None => {
                    self.corrupt = true;
                    return self.invalidate();
                }
            }
        }
        self.seek_to_restart(lo);
        while self.parse_next() {
            if compare_internal_keys(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if !self.valid() {
            if !self.corrupt {
                self.seek_to_last();
            }
        } else if compare_internal_keys(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        if self.valid() {
            self.parse_next();
        }
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                return self.invalidate();
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        while self.parse_next() && self.next_off < original {}
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        let (start, len) = self.value;
        self.block
            .data
            .as_slice()
            .get(start..start + len)
            .unwrap_or(&[])
    }

    fn status(&self) -> Result<()> {
        if self.corrupt {
            return Err(Error::corruption(
                PathBuf::from("<block>"),
                self.current as u64,
                "malformed block entry",
            ));
        }
        Ok(())
    }
}
