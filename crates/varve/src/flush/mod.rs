//! Flush: writing a sorted stream of entries (an immutable memtable) into a
//! new table file.
//!
//! [`build_table`] drops versions no reader can see (see [`VersionFilter`];
//! tombstones are kept since deeper levels may hold the key), writes the
//! table, syncs it and its directory entry, and returns its metadata for the
//! version edit. A failed build removes its partial file. Thread-safe (no
//! shared state).

use std::path::Path;

use crate::Result;
use crate::compaction::filter::VersionFilter;
use crate::filenames::table_path;
use crate::io::FileSystem;
use crate::iter::InternalIterator;
use crate::keys::SequenceNumber;
use crate::sst::{TableBuilder, TableBuilderOptions, TableProperties};
use crate::version::FileMetaData;

/// Writes every visible entry of `iter` into table `number` of `dir`.
/// Returns `None` (and leaves no file) when nothing is left to write.
pub fn build_table(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    iter: &mut dyn InternalIterator,
    snapshots: Vec<SequenceNumber>,
    opts: TableBuilderOptions,
    direct_writes: bool,
) -> Result<Option<FileMetaData>> {
    let path = table_path(dir, number);
    let result = (|| {
        let mut builder = TableBuilder::new(create_table_file(fs, &path, direct_writes)?, opts);
        let mut filter = VersionFilter::new(snapshots);
        iter.seek_to_first();
        while iter.valid() {
            if filter.keep(iter.key(), |_| false) {
                builder.add(iter.key(), iter.value())?;
            }
            iter.next();
        }
        iter.status()?;
        if builder.num_entries() == 0 {
            return Ok(None);
        }
        let props = builder.finish()?;
        // The manifest edit that will name this table must not outlive it.
        fs.sync_dir(dir)?;
        Ok(Some(file_meta(number, &props)))
    })();
    match result {
        Ok(Some(meta)) => Ok(Some(meta)),
        other => {
            let _ = fs.remove_file(&path);
            other
        }
    }
}

/// Creates a table file, with O_DIRECT when `direct` (see
/// `use_direct_io_for_flush_and_compaction`).
pub fn create_table_file(
    fs: &dyn FileSystem,
    path: &Path,
    direct: bool,
) -> Result<Box<dyn crate::io::WritableFile>> {
    if direct {
        fs.create_writable_direct(path)
    } else {
        fs.create_writable(path)
    }
}

/// The version's record of table `number`, from what its builder reported.
pub fn file_meta(number: u64, props: &TableProperties) -> FileMetaData {
    FileMetaData {
        number,
        file_size: props.file_size,
        smallest: props.smallest_key.clone(),
        largest: props.largest_key.clone(),
        smallest_seq: props.smallest_seq,
        largest_seq: props.largest_seq,
        num_entries: props.num_entries,
    }
}
