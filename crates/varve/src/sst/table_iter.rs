//! [`TableIterator`]: a two-level cursor over a table, the pinned index
//! block on top and one data block at a time below it.
//!
//! Single-threaded (`Send`); it owns an `Arc<Table>`, so the table lives as
//! long as the cursor. Invariants: when valid, the data cursor is positioned
//! and the index cursor points at that data block. Errors are sticky: the
//! first failed block read or malformed entry makes the cursor invalid for
//! good and is reported by `status()`.

use std::fmt;
use std::sync::Arc;

use crate::iter::InternalIterator;
use crate::{Error, Result};

use super::block::BlockIter;
use super::table::Table;

/// Cursor over all entries of a [`Table`]; implements [`InternalIterator`].
pub struct TableIterator {
    table: Arc<Table>,
    index: BlockIter,
    data: Option<BlockIter>,
    /// Offset of the block `data` iterates.
    data_offset: u64,
    err: Option<Error>,
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

impl TableIterator {
    pub(crate) fn new(table: Arc<Table>) -> Self {
        TableIterator {
            index: table.index_block().iter(),
            table,
            data: None,
            data_offset: 0,
            err: None,
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
        match self.table.read_data_block(handle) {
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
