//! Running a compaction: merge the input files, drop what no reader can see,
//! write output tables of about `target_file_size` into the next level.
//!
//! Outputs never split one user key across two files, so the next level
//! stays non-overlapping by user key. A large compaction is cut into up to
//! `max_subcompactions` user-key spans at its input tables' index separators
//! (no data IO), which run in parallel, each writing its own outputs. Tombstones are dropped only where no
//! deeper level can hold the key. On failure every output written so far is
//! removed and the version is untouched. Runs on one background thread;
//! reads input tables through the shared table cache.

use std::path::Path;
use std::sync::Arc;

use super::blob_gc::{BlobFlow, RelocateConfig, Relocator};
use super::filter::{self, VersionFilter};
use super::output::{OutputConfig, TableOutputs};
use super::picker::CompactionPlan;
use super::user_filter::{CompactionFilter, FilterDecision};
use crate::blob::cache::BlobReaders;
use crate::blob::file_writer::BlobFileMeta;
use crate::blob::format::BlobPointer;
use crate::error::{Error, Result};
use crate::filenames::{blob_file_path, table_path};
use crate::internal_iter::InternalIterator;
use crate::io::FileSystem;
use crate::iter::merging::MergingIterator;
use crate::keys::{self, SequenceNumber, ValueKind, compare_internal_keys};
use crate::sst::{COMPACTION_READAHEAD, TableBuilderOptions};
use crate::version::{BlobFileEdit, FileMetaData, NUM_LEVELS, Version, VersionEdit};
use crate::version::{ScanOptions, TableCache};

/// What a compaction needs besides its plan.
pub(crate) struct JobContext<'a> {
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
    /// Blob values to relocate (garbage collection); `None`: none.
    pub relocate: Option<RelocateConfig<'a>>,
    /// `Options::ttl`: entries below this sequence number are expired.
    pub expired: SequenceNumber,
    /// The user's compaction filter, with the blob files it may need to
    /// read values from.
    pub user_filter: Option<(Arc<dyn CompactionFilter>, &'a BlobReaders)>,
}

/// What a compaction did.
#[derive(Debug, Clone, Default)]
pub(crate) struct CompactionResult {
    /// Bytes read from input tables.
    pub bytes_read: u64,
    /// Bytes written to output tables.
    pub bytes_written: u64,
    /// Entries dropped.
    pub entries_dropped: u64,
    /// Output files.
    pub outputs: Vec<FileMetaData>,
    /// Parts the compaction ran in.
    pub subcompactions: usize,
    /// Blob pointers read and kept (the garbage it found).
    pub blob_flow: BlobFlow,
    /// New blob files of relocated values.
    pub blob_outputs: Vec<BlobFileMeta>,
    /// Value bytes relocated.
    pub relocated_bytes: u64,
}

impl CompactionResult {
    fn remove_outputs(&self, ctx: &JobContext<'_>) {
        for out in &self.outputs {
            let _ = ctx.fs.remove_file(&table_path(ctx.dir, out.number));
        }
        for b in &self.blob_outputs {
            let _ = ctx.fs.remove_file(&blob_file_path(ctx.dir, b.number));
        }
    }
}

/// A user-key range `[start, end)` of a sub-compaction (`None`: unbounded).
pub(crate) type KeySpan = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Cuts `plan` into at most `parts` user-key spans of about equal size, at
/// the index separators of its input tables (no data IO). Returns one
/// unbounded span when the plan is small or `parts <= 1`.
pub(crate) fn split_plan(
    plan: &CompactionPlan,
    ctx: &JobContext<'_>,
    parts: usize,
) -> Result<Vec<KeySpan>> {
    let whole = vec![(None, None)];
    if parts <= 1 || plan.input_bytes() < 2 * ctx.target_file_size.min(32 << 20) {
        return Ok(whole);
    }
    let mut samples: Vec<Vec<u8>> = Vec::new();
    for f in plan.inputs.iter().flatten() {
        let table = ctx.table_cache.get(f)?;
        samples.extend(
            table
                .index_samples()
                .into_iter()
                .map(|(k, _)| keys::user_key(&k).to_vec()),
        );
    }
    samples.sort_unstable();
    samples.dedup();
    if samples.len() < parts * 2 {
        return Ok(whole);
    }
    let mut cuts: Vec<Vec<u8>> = (1..parts)
        .map(|i| samples[i * samples.len() / parts].clone())
        .collect();
    cuts.dedup();
    let mut spans = Vec::with_capacity(cuts.len() + 1);
    let mut start = None;
    for cut in cuts {
        spans.push((start, Some(cut.clone())));
        start = Some(cut);
    }
    spans.push((start, None));
    Ok(spans)
}

/// Runs `plan`, split into up to `parts` sub-compactions that run in
/// parallel on their own threads; `new_file_number` hands out output file
/// numbers. Returns the edit that installs the result (not yet applied).
/// On failure every output of every part is removed.
pub(crate) fn run(
    plan: &CompactionPlan,
    ctx: &JobContext<'_>,
    parts: usize,
    new_file_number: &(dyn Fn() -> u64 + Sync),
) -> Result<(VersionEdit, CompactionResult)> {
    let spans = split_plan(plan, ctx, parts)?;
    let results: Vec<Result<CompactionResult>> = if spans.len() == 1 {
        vec![run_span(plan, ctx, &spans[0], new_file_number)]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = spans
                .iter()
                .map(|span| s.spawn(move || run_span(plan, ctx, span, new_file_number)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::InvalidArgument("sub-compaction panicked".into()))
                    })
                })
                .collect()
        })
    };
    let mut result = CompactionResult {
        bytes_read: plan.input_bytes(),
        subcompactions: spans.len(),
        ..CompactionResult::default()
    };
    let mut first_error = None;
    for r in results {
        match r {
            Ok(part) => {
                result.bytes_written += part.bytes_written;
                result.entries_dropped += part.entries_dropped;
                result.outputs.extend(part.outputs);
                result.blob_flow.merge(&part.blob_flow);
                result.blob_outputs.extend(part.blob_outputs);
                result.relocated_bytes += part.relocated_bytes;
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        result.remove_outputs(ctx);
        return Err(e);
    }
    // The manifest edit that will name the outputs must not outlive them.
    ctx.fs.sync_dir(ctx.dir)?;
    let mut edit = VersionEdit::default();
    for (i, files) in plan.inputs.iter().enumerate() {
        for f in files {
            edit.delete_file(plan.level + i, f.number);
        }
    }
    result
        .outputs
        .sort_by(|a, b| compare_internal_keys(&a.smallest, &b.smallest));
    // The outputs hold nothing a tombstone up to `cleared` hides (see
    // `filter::range_cleared`; the version holds every tombstone older
    // than the inputs' newest entry, since memtables flush in order).
    let newest_input = plan.inputs.iter().flatten().map(|f| f.largest_seq).max();
    if let Some(cleared) = filter::range_cleared(
        &ctx.snapshots,
        ctx.version.range_tombstones(),
        newest_input.unwrap_or(0),
    ) {
        for out in &mut result.outputs {
            out.range_cleared_seq = cleared;
        }
    }
    for out in &result.outputs {
        edit.add_file(plan.output_level(), out.clone());
    }
    // New blob files enter sealed, in the same edit as the tables that
    // point into them and the garbage the job found.
    edit.blob_files
        .extend(result.blob_outputs.iter().map(BlobFileEdit::sealed));
    edit.blob_garbage = result.blob_flow.garbage();
    Ok((edit, result))
}

/// Runs the user's filter on the entry `(key, value)` (`pointer`: its
/// value is in a blob file). `None`: keep it as it is; otherwise the
/// internal key and value to write instead (a tombstone, or the new
/// value), with the same sequence number.
fn apply_user_filter(
    user_filter: &dyn CompactionFilter,
    blobs: &BlobReaders,
    key: &[u8],
    value: &[u8],
    pointer: Option<&BlobPointer>,
) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let Some(p) = keys::parse_internal_key(key) else {
        return Ok(None);
    };
    let blob_value;
    let value = match pointer {
        Some(ptr) => {
            blob_value = blobs.value_of(ptr)?;
            blob_value.as_slice()
        }
        None => value,
    };
    Ok(match user_filter.filter(p.user_key, value) {
        FilterDecision::Keep => None,
        FilterDecision::Remove => Some((
            keys::make_internal_key(p.user_key, p.seq, ValueKind::Deletion),
            Vec::new(),
        )),
        FilterDecision::ChangeValue(v) => Some((
            keys::make_internal_key(p.user_key, p.seq, ValueKind::Value),
            v,
        )),
    })
}

/// One sub-compaction: the plan's entries whose user keys lie in `span`.
fn run_span(
    plan: &CompactionPlan,
    ctx: &JobContext<'_>,
    span: &KeySpan,
    new_file_number: &(dyn Fn() -> u64 + Sync),
) -> Result<CompactionResult> {
    // Inputs are read whole and in order: read ahead, stop at the span's
    // end, and keep them out of the block cache (as RocksDB does).
    let scan = ScanOptions {
        readahead_size: COMPACTION_READAHEAD,
        fill_cache: false,
        prefetch: None,
        upper_bound: span.1.clone(),
    };
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    if plan.level == 0 {
        for f in &plan.inputs[0] {
            children.push(
                ctx.table_cache
                    .files_iterator(std::slice::from_ref(f), &scan),
            );
        }
    } else {
        children.push(ctx.table_cache.files_iterator(&plan.inputs[0], &scan));
    }
    if !plan.inputs[1].is_empty() {
        children.push(ctx.table_cache.files_iterator(&plan.inputs[1], &scan));
    }
    let mut input = MergingIterator::new(children);
    let mut result = CompactionResult::default();
    let outcome = write_outputs(
        &mut input,
        ctx,
        plan.output_level(),
        span,
        new_file_number,
        &mut result,
    );
    if let Err(e) = outcome {
        result.remove_outputs(ctx);
        return Err(e);
    }
    Ok(result)
}

fn bottommost(version: &Version, output_level: usize, user_key: &[u8]) -> bool {
    (output_level + 1..NUM_LEVELS).all(|l| {
        version
            .overlapping_files(l, Some(user_key), Some(user_key))
            .is_empty()
    })
}

/// A kept entry waiting for the relocation reads before it (entries are
/// written in input order).
enum Pending {
    /// The entry's value as it was.
    Keep(Vec<u8>),
    /// The value moves: its old pointer.
    Move(BlobPointer),
}

/// Kept entries from the first one whose value moves, so that the reads
/// of up to [`MOVES_PER_BATCH`] moving values are issued together.
#[derive(Default)]
struct PendingMoves {
    entries: Vec<(Vec<u8>, Pending)>,
    moves: usize,
    bytes: usize,
}

/// Moving values read together.
const MOVES_PER_BATCH: usize = 128;
/// Bytes of kept entries held at most while a batch gathers.
const PENDING_BYTES: usize = 4 << 20;

impl PendingMoves {
    fn push(&mut self, key: &[u8], e: Pending) {
        self.bytes += key.len()
            + match &e {
                Pending::Keep(v) => v.len(),
                Pending::Move(_) => 32,
            };
        self.moves += usize::from(matches!(e, Pending::Move(_)));
        self.entries.push((key.to_vec(), e));
    }

    /// Writes the entry at once if nothing waits, else queues it behind.
    fn add_or_write(&mut self, out: &mut TableOutputs<'_>, key: &[u8], value: &[u8]) -> Result<()> {
        if self.entries.is_empty() {
            out.add(key, value)
        } else {
            self.push(key, Pending::Keep(value.to_vec()));
            Ok(())
        }
    }

    fn full(&self) -> bool {
        self.moves >= MOVES_PER_BATCH || self.bytes >= PENDING_BYTES
    }

    /// Reads the moving values together, then writes every queued entry
    /// in order (moved values with their new pointers).
    fn write(&mut self, out: &mut TableOutputs<'_>, r: &mut Relocator<'_>) -> Result<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let ps: Vec<BlobPointer> = self
            .entries
            .iter()
            .filter_map(|(_, e)| match e {
                Pending::Move(p) => Some(*p),
                Pending::Keep(_) => None,
            })
            .collect();
        let mut values = r.read_values(&ps)?.into_iter();
        for (key, e) in self.entries.drain(..) {
            match e {
                Pending::Keep(v) => out.add(&key, &v)?,
                Pending::Move(p) => {
                    let value = values
                        .next()
                        .ok_or_else(|| Error::Poisoned("a relocation batch lost a value".into()))?;
                    let moved = r.place(keys::user_key(&key), &value, &p)?;
                    out.add(&key, &moved.encode())?;
                }
            }
        }
        self.moves = 0;
        self.bytes = 0;
        Ok(())
    }
}

fn write_outputs(
    input: &mut MergingIterator,
    ctx: &JobContext<'_>,
    output_level: usize,
    span: &KeySpan,
    new_file_number: &(dyn Fn() -> u64 + Sync),
    result: &mut CompactionResult,
) -> Result<()> {
    let mut filter = VersionFilter::new(ctx.snapshots.clone())
        .with_range_tombstones(Some(Arc::clone(ctx.version.range_tombstones())))
        .with_expiry_floor(ctx.expired);
    let mut out = TableOutputs::new(
        OutputConfig {
            dir: ctx.dir,
            fs: ctx.fs,
            table_options: ctx.table_options.clone(),
            target_file_size: ctx.target_file_size,
            direct_writes: ctx.direct_writes,
        },
        new_file_number,
    );
    let mut relocator = ctx
        .relocate
        .filter(|r| !r.relocate.is_empty())
        .map(|r| Relocator::new(r, new_file_number));
    let mut flow = BlobFlow::default();
    let mut pending = PendingMoves::default();
    match &span.0 {
        Some(start) => input.seek(&keys::lookup_key(start, keys::MAX_SEQUENCE)),
        None => input.seek_to_first(),
    }
    while input.valid() {
        let key = input.key();
        if let Some(end) = &span.1
            && keys::user_key(key) >= end.as_slice()
        {
            break;
        }
        let pointer = flow.read(key, input.value(), ctx.dir, "a compaction input")?;
        if filter.keep(key, |uk| bottommost(ctx.version, output_level, uk)) {
            if filter.filterable()
                && let Some((user_filter, blobs)) = &ctx.user_filter
                && let Some(changed) =
                    apply_user_filter(&**user_filter, blobs, key, input.value(), pointer.as_ref())?
            {
                // Removed or changed: written inline with the entry's
                // sequence number; a blob value it had becomes garbage.
                pending.add_or_write(&mut out, &changed.0, &changed.1)?;
                input.next();
                continue;
            }
            match (&pointer, relocator.as_ref()) {
                (Some(p), Some(r)) if r.moves(p) => pending.push(key, Pending::Move(*p)),
                (Some(p), _) => {
                    flow.output(p);
                    pending.add_or_write(&mut out, key, input.value())?;
                }
                (None, _) => pending.add_or_write(&mut out, key, input.value())?,
            }
            if pending.full()
                && let Some(r) = relocator.as_mut()
            {
                pending.write(&mut out, r)?;
            }
        }
        input.next();
    }
    if let Some(r) = relocator.as_mut() {
        pending.write(&mut out, r)?;
    }
    debug_assert!(pending.entries.is_empty(), "every kept entry was written");
    input.status()?;
    // Blob files first: the tables name them, and a failure after this
    // point leaves the relocator's files to `result` for cleanup.
    if let Some(r) = relocator {
        result.relocated_bytes += r.bytes;
        result.blob_outputs.extend(r.finish()?);
    }
    let (outputs, bytes) = out.finish()?;
    result.bytes_written += bytes;
    result.outputs.extend(outputs);
    result.entries_dropped = filter.dropped();
    result.blob_flow = flow;
    Ok(())
}
