//! [`TableIterator`]: a two-level cursor over a table, the pinned index
//! block on top and one data block at a time below it.
//!
//! Single-threaded (`Send`); it owns an `Arc<Table>`, so the table lives as
//! long as the cursor. Invariants: when valid, the data cursor is positioned
//! and the index cursor points at that data block. Errors are sticky: the
//! first failed block read or malformed entry makes the cursor invalid for
//! good and is reported by `status()`.
//!
//! Scans may read ahead: with [`TableIterOptions::readahead`] set, data
//! blocks go through that shared [`Readahead`] (one per level iterator, so
//! the chunk size survives moving to the next file), and chunks stop at the
//! block holding [`TableIterOptions::upper_bound`]. Point reads
//! ([`Table::get`]) never read ahead.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::internal_iter::InternalIterator;
use crate::keys::{MAX_SEQUENCE, lookup_key};

use super::block::BlockIter;
use super::readahead::Readahead;
use super::table::Table;

/// Read-ahead state shared by the table iterators of one scan source (a
/// level). Never contended: one iterator uses it at a time.
pub(crate) type SharedReadahead = Arc<Mutex<Readahead>>;

/// How a [`TableIterator`] reads its data blocks.
#[derive(Clone)]
pub(crate) struct TableIterOptions {
    /// Read ahead through this state; `None`: one `read_at` per block.
    pub readahead: Option<SharedReadahead>,
    /// Exclusive upper bound (a user key) of the scan: read-ahead never
    /// reads past the data block holding it. Entries are not filtered.
    pub upper_bound: Option<Vec<u8>>,
    /// Insert blocks read from the file into the block cache. Default true.
    pub fill_cache: bool,
}

impl Default for TableIterOptions {
    fn default() -> Self {
        TableIterOptions {
            readahead: None,
            upper_bound: None,
            fill_cache: true,
        }
    }
}

impl fmt::Debug for TableIterOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableIterOptions")
            .field("readahead", &self.readahead.is_some())
            .field("upper_bound", &self.upper_bound)
            .field("fill_cache", &self.fill_cache)
            .finish()
    }
}

/// Cursor over all entries of a [`Table`]; implements [`InternalIterator`].
pub(crate) struct TableIterator {
    table: Arc<Table>,
    index: BlockIter,
    data: Option<BlockIter>,
    /// Offset of the block `data` iterates.
    data_offset: u64,
    err: Option<Error>,
    readahead: Option<SharedReadahead>,
    /// Read-ahead chunks end at or before this offset.
    readahead_limit: u64,
    fill_cache: bool,
}

impl fmt::Debug for TableIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableIterator")
            .field("table", &self.table)
            .field("data_offset", &self.data_offset)
            .field("valid", &self.valid())
            .finish()
    }
}

/// The cursors of a table (here, above `table.rs`, so that the table
/// reader does not import its iterator).
impl Table {
    /// A cursor over all entries (two-level: index, then data blocks).
    pub(crate) fn iter(self: &Arc<Self>) -> TableIterator {
        TableIterator::new(Arc::clone(self), TableIterOptions::default())
    }

    /// A cursor that reads ahead, stops its read-ahead at an upper bound and
    /// may skip filling the block cache (see [`TableIterOptions`]).
    pub(crate) fn iter_with(self: &Arc<Self>, opts: TableIterOptions) -> TableIterator {
        TableIterator::new(Arc::clone(self), opts)
    }
}

impl TableIterator {
    pub(crate) fn new(table: Arc<Table>, opts: TableIterOptions) -> Self {
        let readahead_limit = match (&opts.readahead, &opts.upper_bound) {
            (Some(_), Some(ub)) => table.read_limit_for(&lookup_key(ub, MAX_SEQUENCE)),
            _ => table.data_end(),
        };
        TableIterator {
            index: table.index_block().iter(),
            table,
            data: None,
            data_offset: 0,
            err: None,
            readahead: opts.readahead,
            readahead_limit,
            fill_cache: opts.fill_cache,
        }
    }

    fn fail(&mut self, e: Error) {
        self.data = None;
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// Points `data` at the block the index cursor names; false when the
    /// index cursor is invalid or the block cannot be read.
    fn init_data_block(&mut self) -> bool {
        if !self.index.valid() {
            if self.index.status().is_err() {
                self.fail(self.table.bad_index());
            }
            self.data = None;
            return false;
        }
        let handle = match self.table.decode_handle(self.index.value()) {
            Ok(h) => h,
            Err(e) => {
                self.fail(e);
                return false;
            }
        };
        if self.data.is_some() && self.data_offset == handle.offset {
            return true;
        }
        let read = match &self.readahead {
            Some(ra) => {
                let mut ra = ra.lock();
                self.table.read_data_block_with(
                    handle,
                    Some((&mut ra, self.readahead_limit)),
                    self.fill_cache,
                )
            }
            None => self
                .table
                .read_data_block_with(handle, None, self.fill_cache),
        };
        match read {
            Ok(block) => {
                self.data = Some(block.iter());
                self.data_offset = handle.offset;
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// If the data cursor failed, records the error; returns true if so.
    fn data_failed(&mut self) -> bool {
        if self.data.as_ref().is_some_and(|d| d.status().is_err()) {
            let e = self.table.bad_block(self.data_offset);
            self.fail(e);
            return true;
        }
        false
    }

    fn skip_empty_forward(&mut self) {
        while self.data.as_ref().is_some_and(|d| !d.valid()) {
            if self.data_failed() {
                return;
            }
            self.index.next();
            if !self.init_data_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    fn skip_empty_backward(&mut self) {
        while self.data.as_ref().is_some_and(|d| !d.valid()) {
            if self.data_failed() {
                return;
            }
            self.index.prev();
            if !self.init_data_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for TableIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.index.seek_to_first();
        if self.init_data_block()
            && let Some(d) = &mut self.data
        {
            d.seek_to_first();
        }
        self.skip_empty_forward();
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.index.seek_to_last();
        if self.init_data_block()
            && let Some(d) = &mut self.data
        {
            d.seek_to_last();
        }
        self.skip_empty_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        self.index.seek(target);
        if self.init_data_block()
            && let Some(d) = &mut self.data
        {
            d.seek(target);
        }
        self.skip_empty_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        // The first block whose separator is >= target holds the answer or
        // everything in it is > target (then an earlier block does).
        self.index.seek(target);
        if !self.index.valid() {
            if self.index.status().is_err() {
                return self.fail(self.table.bad_index());
            }
            self.index.seek_to_last();
        }
        if self.init_data_block()
            && let Some(d) = &mut self.data
        {
            d.seek_for_prev(target);
        }
        self.skip_empty_backward();
    }

    fn next(&mut self) {
        if !self.valid() {
            return;
        }
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_empty_forward();
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_empty_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
