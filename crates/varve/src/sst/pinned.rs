//! [`PinnedBlocks`]: every data block of one table, read once and kept in
//! memory for the table reader's life, outside the block cache; and
//! [`PinBudget`], the bound on the bytes all pinned tables hold together.
//!
//! Used for tables whose entries point into blob files
//! (`docs/blob-files.md`, "Reads"): their blocks hold keys and ~12-byte
//! pointers, so a whole tree of them is small next to the values, and with
//! it in memory a point read of a separated value reads the disk once, for
//! the value. A table that does not fit the budget's remaining room is not
//! pinned and reads its blocks through the cache as before.
//!
//! Thread-safety: `PinnedBlocks` is immutable after [`PinnedBlocks::load`]
//! and `Send + Sync`; `PinBudget` is a `MemoryGauge` (atomic). Invariants:
//! the budget's use is the sum of the charges of the live `PinnedBlocks`
//! loaded against it (each a reservation, given back on drop) and never
//! exceeds its limit; the
//! blocks are sorted by offset and each was checked (checksum, type,
//! parse) when loaded.

use std::path::Path;
use std::sync::Arc;

use super::block::Block;
use super::format::{BLOCK_TRAILER_LEN, BlockHandle, decode_block};
use crate::error::{Error, Result};
use crate::io::RandomAccessFile;
use crate::util::memory::{MemoryGauge, Reservation};

/// Blocks are read in runs of about this many bytes.
const READ_RUN: u64 = 1 << 20;

/// The bytes the pinned tables of one database may hold: a memory gauge
/// (one part of the memory budget, `docs/memory.md`) that each table's
/// blocks reserve from.
pub(crate) type PinBudget = MemoryGauge;

/// The data blocks of one table, by offset.
pub(crate) struct PinnedBlocks {
    blocks: Vec<(u64, Arc<Block>)>,
    /// Bytes reserved in the budget (what the blocks hold), given back
    /// on drop.
    charge: Reservation,
}

impl std::fmt::Debug for PinnedBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBlocks")
            .field("blocks", &self.blocks.len())
            .field("charge", &self.charge.bytes())
            .finish()
    }
}

impl PinnedBlocks {
    /// Reads and checks the data blocks `handles` (in file order, tiling
    /// `0..data_end`) of the table in `file`, if `data_end` bytes fit the
    /// budget; `Ok(None)` when they do not.
    pub(crate) fn load(
        file: &dyn RandomAccessFile,
        path: &Path,
        handles: &[BlockHandle],
        data_end: u64,
        budget: &Arc<PinBudget>,
    ) -> Result<Option<PinnedBlocks>> {
        // The file's data bytes first: at least what the blocks hold,
        // uncompressed blocks being their stored size.
        let Some(charge) = usize::try_from(data_end)
            .ok()
            .and_then(|bytes| budget.try_reserve(bytes))
        else {
            return Ok(None);
        };
        // From here on the charge is given back on drop, also on error.
        let mut pinned = PinnedBlocks {
            blocks: Vec::with_capacity(handles.len()),
            charge,
        };
        let trailer = BLOCK_TRAILER_LEN as u64;
        let mut i = 0;
        while i < handles.len() {
            // A run of consecutive blocks of about READ_RUN bytes.
            let start = handles[i].offset;
            let mut j = i;
            let mut end = start;
            while j < handles.len() && (j == i || end - start < READ_RUN) {
                let h = handles[j];
                if h.offset != end {
                    return Err(Error::corruption(
                        path,
                        h.offset,
                        "data blocks do not tile the file",
                    ));
                }
                end = h.offset + h.size + trailer;
                j += 1;
            }
            if end > data_end {
                return Err(Error::corruption(
                    path,
                    start,
                    "data block past the data end",
                ));
            }
            let mut buf = vec![0u8; (end - start) as usize];
            let got = file.read_at(&mut buf, start)?;
            if got != buf.len() {
                return Err(Error::corruption(path, start, "short read of data blocks"));
            }
            for h in &handles[i..j] {
                let at = (h.offset - start) as usize;
                let stored = buf[at..at + (h.size + trailer) as usize].to_vec();
                let data = decode_block(stored, h.offset, path, true)?;
                let block =
                    Block::parse(super::block_bytes::BlockBytes::from(data), path, h.offset)?;
                pinned.blocks.push((h.offset, Arc::new(block)));
            }
            i = j;
        }
        debug_assert!(pinned.blocks.is_sorted_by_key(|b| b.0));
        // Charge what the blocks hold (more than the stored bytes when they
        // were compressed).
        let held: usize = pinned.blocks.iter().map(|b| b.1.charge()).sum();
        if !pinned.charge.resize(held) {
            return Ok(None);
        }
        Ok(Some(pinned))
    }

    /// The block at file offset `offset`.
    pub(crate) fn get(&self, offset: u64) -> Option<&Arc<Block>> {
        self.blocks
            .binary_search_by_key(&offset, |b| b.0)
            .ok()
            .map(|i| &self.blocks[i].1)
    }

    /// Bytes charged to the budget.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn memory(&self) -> usize {
        self.charge.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_admits_what_fits_and_gets_it_back() {
        let b = PinBudget::new(100);
        let sixty = b.try_reserve(60).expect("fits");
        assert!(b.try_reserve(41).is_none(), "over the limit");
        let _forty = b.try_reserve(40).expect("fits");
        assert_eq!(b.used(), 100);
        drop(sixty);
        assert_eq!(b.used(), 40);
        assert!(b.try_reserve(usize::MAX).is_none(), "no overflow");
        assert_eq!(b.limit(), 100);
    }
}
