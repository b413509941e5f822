//! Flush: writing a sorted stream of entries (an immutable memtable, or a
//! memtable replayed from a WAL) into one new table.
//!
//! [`build_table`] drops versions no reader can see (the caller's
//! [`VersionFilter`], with the live snapshots and the memtable's own range
//! tombstones; tombstones are kept since deeper levels may hold the key), counts the
//! blob pointers it drops as garbage (into a [`BlobFlow`]) and writes the
//! rest through the same [`TableOutputs`] writer compaction uses (one table:
//! no size cut), syncs the table and its directory entry, and returns its
//! metadata for the version edit. A failed build leaves no file. Thread-safe
//! (no shared state).

use std::path::Path;

use super::blob_gc::BlobFlow;
use super::filter::VersionFilter;
use super::output::{OutputConfig, TableOutputs};
use crate::error::Result;
use crate::internal_iter::InternalIterator;
use crate::io::FileSystem;
use crate::sst::TableBuilderOptions;
use crate::version::FileMetaData;

/// Writes every visible entry of `iter` into table `number` of `dir`.
/// Returns `None` (and leaves no file) when nothing is left to write.
/// `flow` receives every blob pointer read and kept.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_table(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    iter: &mut dyn InternalIterator,
    mut filter: VersionFilter,
    opts: TableBuilderOptions,
    direct_writes: bool,
    flow: &mut BlobFlow,
) -> Result<Option<FileMetaData>> {
    let once = std::sync::atomic::AtomicBool::new(false);
    let number_once = || {
        let again = once.swap(true, std::sync::atomic::Ordering::Relaxed);
        debug_assert!(!again, "a flush writes one table");
        number
    };
    let mut out = TableOutputs::new(
        OutputConfig {
            dir,
            fs,
            table_options: opts,
            target_file_size: u64::MAX,
            direct_writes,
        },
        &number_once,
    );
    iter.seek_to_first();
    while iter.valid() {
        let pointer = flow.read(iter.key(), iter.value(), dir, "a memtable")?;
        if filter.keep(iter.key(), |_| false) {
            if let Some(p) = &pointer {
                flow.output(p);
            }
            out.add(iter.key(), iter.value())?;
        }
        iter.next();
    }
    iter.status()?;
    let (mut tables, _bytes) = out.finish()?;
    debug_assert!(tables.len() <= 1);
    let Some(mut meta) = tables.pop() else {
        return Ok(None);
    };
    // The memtable's own range tombstones were applied: as in a
    // compaction, every one up to the oldest snapshot and the newest entry.
    if let Some(cleared) = filter.range_cleared(meta.largest_seq) {
        meta.range_cleared_seq = cleared;
    }
    // The manifest edit that will name this table must not outlive it.
    if let Err(e) = fs.sync_dir(dir) {
        let _ = fs.remove_file(&crate::filenames::table_path(dir, number));
        return Err(e);
    }
    Ok(Some(meta))
}
