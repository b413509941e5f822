//! Running a compaction: merge the input files, drop what no reader can see,
//! write output tables of about `target_file_size` into the next level.
//!
//! Outputs never split one user key across two files, so the next level
//! stays non-overlapping by user key. Tombstones are dropped only where no
//! deeper level can hold the key. On failure every output written so far is
//! removed and the version is untouched. Runs on one background thread;
//! reads input tables through the shared table cache.

use std::path::Path;
use std::sync::Arc;

use super::filter::VersionFilter;
use super::picker::CompactionPlan;
use crate::cache::TableCache;
use crate::cache::table_cache::table_path;
use crate::flush::{create_table_file, file_meta};
use crate::io::FileSystem;
use crate::iter::InternalIterator;
use crate::iter::merging::MergingIterator;
use crate::keys::{self, SequenceNumber};
use crate::sst::{TableBuilder, TableBuilderOptions};
use crate::version::{FileMetaData, NUM_LEVELS, Version, VersionEdit};
use crate::{Error, Result};

/// What a compaction needs besides its plan.
pub struct JobContext<'a> {
    /// The database directory.
    pub dir: &'a Path,
    /// The file system.
    pub fs: &'a dyn FileSystem,
    /// Open tables.
    pub table_cache: &'a Arc<TableCache>,
    /// The version the plan was made on.
    pub version: &'a Version,
    /// Live snapshots.
    pub snapshots: Vec<SequenceNumber>,
    /// Options of the output tables.
    pub table_options: TableBuilderOptions,
    /// Output tables are cut at about this size.
    pub target_file_size: u64,
    /// Write outputs with O_DIRECT.
    pub direct_writes: bool,
}

/// What a compaction did.
#[derive(Debug, Clone, Default)]
pub struct CompactionResult {
    /// Bytes read from input tables.
    pub bytes_read: u64,
    /// Bytes written to output tables.
    pub bytes_written: u64,
    /// Entries dropped.
    pub entries_dropped: u64,
    /// Output files.
    pub outputs: Vec<FileMetaData>,
}

/// Runs `plan`; `new_file_number` hands out output file numbers.
/// Returns the edit that installs the result (not yet applied).
pub fn run(
    plan: &CompactionPlan,
    ctx: &JobContext<'_>,
    mut new_file_number: impl FnMut() -> u64,
) -> Result<(VersionEdit, CompactionResult)> {
    let mut edit = VersionEdit::default();
    for (i, files) in plan.inputs.iter().enumerate() {
        for f in files {
            edit.delete_file(plan.level + i, f.number);
        }
    }
    let output_level = plan.output_level();
    let mut result = CompactionResult {
        bytes_read: plan.input_bytes(),
        ..CompactionResult::default()
    };

    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    if plan.level == 0 {
        for f in &plan.inputs[0] {
            children.push(ctx.table_cache.files_iterator(std::slice::from_ref(f)));
        }
    } else {
        children.push(ctx.table_cache.files_iterator(&plan.inputs[0]));
    }
    if !plan.inputs[1].is_empty() {
        children.push(ctx.table_cache.files_iterator(&plan.inputs[1]));
    }
    let mut input = MergingIterator::new(children);

    let outcome = write_outputs(
        &mut input,
        ctx,
        output_level,
        &mut new_file_number,
        &mut result,
    );
    if let Err(e) = outcome {
        for out in &result.outputs {
            let _ = ctx.fs.remove_file(&table_path(ctx.dir, out.number));
        }
        return Err(e);
    }
    for out in &result.outputs {
        edit.add_file(output_level, out.clone());
    }
    Ok((edit, result))
}

fn bottommost(version: &Version, output_level: usize, user_key: &[u8]) -> bool {
    (output_level + 1..NUM_LEVELS).all(|l| {
        version
            .overlapping_files(l, Some(user_key), Some(user_key))
            .is_empty()
    })
}

struct Output {
    number: u64,
    builder: TableBuilder,
}

fn write_outputs(
    input: &mut MergingIterator,
    ctx: &JobContext<'_>,
    output_level: usize,
    new_file_number: &mut impl FnMut() -> u64,
    result: &mut CompactionResult,
) -> Result<()> {
    let mut filter = VersionFilter::new(ctx.snapshots.clone());
    let mut out: Option<Output> = None;
    let mut last_user_key: Vec<u8> = Vec::new();
    input.seek_to_first();
    while input.valid() {
        let key = input.key();
        let keep = filter.keep(key, |uk| bottommost(ctx.version, output_level, uk));
        if keep {
            let user_key = keys::user_key(key);
            // Cut only between user keys, once the file is big enough.
            let cut = out.as_ref().is_some_and(|o| {
                o.builder.estimated_file_size() >= ctx.target_file_size
                    && user_key != last_user_key.as_slice()
            });
            if cut && let Some(o) = out.take() {
                finish(o, result)?;
            }
            if out.is_none() {
                let number = new_file_number();
                let file =
                    create_table_file(ctx.fs, &table_path(ctx.dir, number), ctx.direct_writes)?;
                out = Some(Output {
                    number,
                    builder: TableBuilder::new(file, ctx.table_options.clone()),
                });
            }
            if let Some(o) = out.as_mut() {
                o.builder.add(key, input.value())?;
            }
            last_user_key.clear();
            last_user_key.extend_from_slice(user_key);
        }
        input.next();
    }
    input.status()?;
    if let Some(o) = out.take() {
        finish(o, result)?;
    }
    // The manifest edit that will name the outputs must not outlive them.
    ctx.fs.sync_dir(ctx.dir)?;
    result.entries_dropped = filter.dropped();
    Ok(())
}

fn finish(o: Output, result: &mut CompactionResult) -> Result<()> {
    if o.builder.num_entries() == 0 {
        return Err(Error::InvalidArgument("empty compaction output".into()));
    }
    let props = o.builder.finish()?;
    result.bytes_written += props.file_size;
    result.outputs.push(file_meta(o.number, &props));
    Ok(())
}
