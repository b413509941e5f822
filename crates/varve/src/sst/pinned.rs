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
//! and `Send + Sync`; `PinBudget` is atomic. Invariants: `used` is the sum
//! of the charges of the live `PinnedBlocks` loaded against the budget
//! (each releases its charge on drop) and never exceeds `limit`; the
//! blocks are sorted by offset and each was checked (checksum, type,
//! parse) when loaded.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::block::Block;
use super::format::{BLOCK_TRAILER_LEN, BlockHandle, decode_block};
use crate::error::{Error, Result};
use crate::io::RandomAccessFile;

/// Blocks are read in runs of about this many bytes.
const READ_RUN: u64 = 1 << 20;

/// The bytes the pinned tables of one database may hold.
#[derive(Debug)]
pub(crate) struct PinBudget {
    limit: usize,
    used: AtomicUsize,
}

impl PinBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: usize) -> Arc<PinBudget> {
        Arc::new(PinBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// Takes `bytes` of the budget if they fit.
    fn try_reserve(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&n| n <= self.limit)
            })
            .is_ok()
    }

    fn release(&self, bytes: usize) {
        let before = self.used.fetch_sub(bytes, Ordering::AcqRel);
        debug_assert!(before >= bytes, "released more than was reserved");
    }

    /// Bytes held by pinned tables now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The limit.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }
}

/// The data blocks of one table, by offset.
pub(crate) struct PinnedBlocks {
    blocks: Vec<(u64, Arc<Block>)>,
    /// Bytes reserved in `budget` (the file's data bytes: at least what
    /// the blocks hold, uncompressed blocks being their stored size).
    charge: usize,
    budget: Arc<PinBudget>,
}

impl std::fmt::Debug for PinnedBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBlocks")
            .field("blocks", &self.blocks.len())
            .field("charge", &self.charge)
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
        let Ok(charge) = usize::try_from(data_end) else {
            return Ok(None);
        };
        if !budget.try_reserve(charge) {
            return Ok(None);
        }
        // From here on the charge is released by `Drop`, also on error.
        let mut pinned = PinnedBlocks {
            blocks: Vec::with_capacity(handles.len()),
            charge,
            budget: Arc::clone(budget),
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
        if held > pinned.charge {
            if !budget.try_reserve(held - pinned.charge) {
                return Ok(None);
            }
        } else {
            budget.release(pinned.charge - held);
        }
        pinned.charge = held;
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
        self.charge
    }
}

impl Drop for PinnedBlocks {
    fn drop(&mut self) {
        self.budget.release(self.charge);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_admits_what_fits_and_gets_it_back() {
        let b = PinBudget::new(100);
        assert!(b.try_reserve(60));
        assert!(!b.try_reserve(41), "over the limit");
        assert!(b.try_reserve(40));
        assert_eq!(b.used(), 100);
        b.release(60);
        assert_eq!(b.used(), 40);
        assert!(!b.try_reserve(usize::MAX), "no overflow");
        assert_eq!(b.limit(), 100);
    }
}
