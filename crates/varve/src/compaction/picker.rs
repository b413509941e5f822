//! Choosing the next compaction (leveled, as in LevelDB/RocksDB).
//!
//! Each level gets a score: L0 by file count against
//! `l0_compaction_trigger`, deeper levels by bytes against their target size
//! (`max_bytes_for_level_base * multiplier^(level-1)`). The level with the
//! highest score `>= 1` is compacted into the next one. L0 takes all its
//! files (they overlap); a deeper level takes one file, round-robin after the
//! level's compact pointer. Files already being compacted are never picked
//! twice. Pure functions over a `Version`; thread-safe. Invariants (checked
//! by `debug_check_plan` in debug builds): a plan reads one level and the
//! next, takes every next-level file overlapping its range, and no busy
//! file.

use std::collections::HashSet;
use std::sync::Arc;

use super::blob_gc::GcPolicy;
use crate::keys::SequenceNumber;
use crate::version::{FileMetaData, NUM_LEVELS, Version};

/// Shape parameters of the tree.
#[derive(Debug, Clone)]
pub(crate) struct LevelTargets {
    /// L0 file count that triggers a compaction.
    pub l0_compaction_trigger: usize,
    /// Target bytes of L1.
    pub max_bytes_for_level_base: u64,
    /// Each level's target is this many times the previous one's.
    pub max_bytes_for_level_multiplier: u64,
}

impl LevelTargets {
    /// Target bytes of `level` (>= 1).
    pub(crate) fn target_bytes(&self, level: usize) -> u64 {
        let mut t = self.max_bytes_for_level_base;
        for _ in 1..level {
            t = t.saturating_mul(self.max_bytes_for_level_multiplier);
        }
        t
    }
}

/// A chosen compaction: `inputs[0]` from `level`, `inputs[1]` from `level + 1`.
#[derive(Debug, Clone)]
pub(crate) struct CompactionPlan {
    /// The level compacted from.
    pub level: usize,
    /// Files of `level` and of `level + 1`.
    pub inputs: [Vec<Arc<FileMetaData>>; 2],
    /// Why it was picked (for the event log and stats).
    pub reason: String,
    /// Rewrite `inputs[0]` into its own level (`inputs[1]` is empty): a
    /// compaction for blob garbage collection ([`pick_blob_gc`]).
    pub in_place: bool,
    /// Relocate every blob value it keeps from a sealed file, whatever the
    /// file's garbage (the last step of a full `compact_range`: the values
    /// come out in key order). Never a trivial move.
    pub relocate_all: bool,
    /// The blob file a garbage-collection compaction was picked for (its
    /// values are relocated first).
    pub gc_blob_file: Option<u64>,
}

impl CompactionPlan {
    /// The level written to.
    pub(crate) fn output_level(&self) -> usize {
        if self.in_place {
            self.level
        } else {
            self.level + 1
        }
    }

    /// A single file with nothing below it to merge with can simply move
    /// down a level (no rewrite).
    pub(crate) fn is_trivial_move(&self) -> bool {
        !self.in_place
            && !self.relocate_all
            && self.inputs[0].len() == 1
            && self.inputs[1].is_empty()
    }

    /// Every input file number.
    pub(crate) fn input_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.inputs.iter().flatten().map(|f| f.number)
    }

    /// Total input bytes.
    pub(crate) fn input_bytes(&self) -> u64 {
        self.inputs.iter().flatten().map(|f| f.file_size).sum()
    }
}

/// The compaction score of every level (the last level never compacts).
pub(crate) fn level_scores(v: &Version, t: &LevelTargets) -> Vec<f64> {
    (0..NUM_LEVELS)
        .map(|level| match level {
            0 => v.num_files(0) as f64 / t.l0_compaction_trigger.max(1) as f64,
            l if l + 1 == NUM_LEVELS => 0.0,
            l => v.level_bytes(l) as f64 / t.target_bytes(l).max(1) as f64,
        })
        .collect()
}

fn user_range(files: &[Arc<FileMetaData>]) -> Option<(Vec<u8>, Vec<u8>)> {
    let smallest = files.iter().map(|f| f.smallest_user_key()).min()?.to_vec();
    let largest = files.iter().map(|f| f.largest_user_key()).max()?.to_vec();
    Some((smallest, largest))
}

fn busy(files: &[Arc<FileMetaData>], being_compacted: &HashSet<u64>) -> bool {
    files.iter().any(|f| being_compacted.contains(&f.number))
}

/// Completes a plan for `level` given its chosen input files: adds the
/// overlapping files of the next level. `None` if any is busy.
fn with_next_level(
    v: &Version,
    level: usize,
    first: Vec<Arc<FileMetaData>>,
    being_compacted: &HashSet<u64>,
    reason: String,
) -> Option<CompactionPlan> {
    let (lo, hi) = user_range(&first)?;
    let second = v.overlapping_files(level + 1, Some(&lo), Some(&hi));
    if busy(&first, being_compacted) || busy(&second, being_compacted) {
        return None;
    }
    let plan = CompactionPlan {
        level,
        inputs: [first, second],
        reason,
        in_place: false,
        relocate_all: false,
        gc_blob_file: None,
    };
    debug_check_plan(v, &plan, being_compacted);
    Some(plan)
}

/// The invariants of a picked plan (debug builds): it moves data down one
/// level (or rewrites one level in place), every input is in the level it is listed for, no input is busy,
/// and the next level's inputs are exactly the files overlapping the first
/// level's range (so the output level stays non-overlapping); an L0 plan
/// takes every L0 file overlapping its range.
fn debug_check_plan(v: &Version, plan: &CompactionPlan, being_compacted: &HashSet<u64>) {
    if !cfg!(debug_assertions) {
        return;
    }
    debug_assert!(
        plan.in_place || plan.level + 1 < NUM_LEVELS,
        "the last level never compacts into another"
    );
    debug_assert!(!plan.inputs[0].is_empty(), "a plan without input");
    debug_assert!(
        !plan.in_place || (plan.level > 0 && plan.inputs[1].is_empty()),
        "an in-place plan rewrites files of one level below L0"
    );
    for (i, files) in plan.inputs.iter().enumerate() {
        for f in files {
            debug_assert!(
                v.files(plan.level + i).iter().any(|g| g.number == f.number),
                "input {} is not in L{}",
                f.number,
                plan.level + i
            );
            debug_assert!(
                !being_compacted.contains(&f.number),
                "input {} is busy",
                f.number
            );
        }
    }
    if plan.in_place {
        return;
    }
    if let Some((lo, hi)) = user_range(&plan.inputs[0]) {
        let below = v.overlapping_files(plan.level + 1, Some(&lo), Some(&hi));
        debug_assert!(
            below.len() == plan.inputs[1].len()
                && below
                    .iter()
                    .zip(&plan.inputs[1])
                    .all(|(a, b)| a.number == b.number),
            "the next level's inputs are not the files overlapping the range"
        );
        if plan.level == 0 {
            let l0 = v.overlapping_files(0, Some(&lo), Some(&hi));
            debug_assert!(
                l0.iter()
                    .all(|f| plan.inputs[0].iter().any(|g| g.number == f.number)),
                "an L0 plan left out an overlapping L0 file"
            );
        }
    }
}

/// The most needed compaction, if any level scores `>= 1`.
pub(crate) fn pick(
    v: &Version,
    t: &LevelTargets,
    being_compacted: &HashSet<u64>,
    compact_pointer: impl Fn(usize) -> Option<Vec<u8>>,
) -> Option<CompactionPlan> {
    let scores = level_scores(v, t);
    let mut order: Vec<usize> = (0..NUM_LEVELS - 1).filter(|&l| scores[l] >= 1.0).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    for level in order {
        let reason = format!("L{level} score {:.2}", scores[level]);
        let first: Vec<Arc<FileMetaData>> = if level == 0 {
            let files = v.files(0).to_vec();
            let (lo, hi) = user_range(&files)?;
            v.overlapping_files(0, Some(&lo), Some(&hi))
        } else {
            let files = v.files(level);
            let start = compact_pointer(level)
                .map(|p| files.partition_point(|f| f.largest.as_slice() <= p.as_slice()))
                .unwrap_or(0);
            // Round-robin from the pointer, skipping busy files.
            let pick = files[start..]
                .iter()
                .chain(files[..start].iter())
                .find(|f| !being_compacted.contains(&f.number));
            match pick {
                Some(f) => vec![Arc::clone(f)],
                None => continue,
            }
        };
        if let Some(plan) = with_next_level(v, level, first, being_compacted, reason) {
            return Some(plan);
        }
    }
    None
}

/// How blob garbage collection takes part in picking (see [`pick_next`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlobGcPick {
    /// The thresholds: `ratio` also marks garbage pressure (that share of
    /// all sealed value bytes dead).
    pub policy: GcPolicy,
    /// The last compaction was not one for blob garbage.
    pub gc_turn: bool,
}

/// The next compaction: the most needed level's ([`pick`]), and blob
/// garbage collection ([`pick_blob_gc`]) when `gc` is given. Under garbage
/// pressure (a `ratio` share of all sealed value bytes dead) the two take
/// turns, garbage first on its turn, and when no level is due garbage
/// collection goes on, for files at `ratio`, until the pressure is gone
/// (so an idle database settles within about 1 / (1 - ratio) of its live
/// values); without pressure it runs only when no level is due, for files
/// at `force_threshold`. A sustained overwrite always leaves the levels work
/// to do: without turns its garbage grew the directory to 5x the live data.
pub(crate) fn pick_next(
    v: &Version,
    t: &LevelTargets,
    being_compacted: &HashSet<u64>,
    gc: Option<BlobGcPick>,
    compact_pointer: impl Fn(usize) -> Option<Vec<u8>>,
) -> Option<CompactionPlan> {
    let levels = || pick(v, t, being_compacted, &compact_pointer);
    let Some(gc) = gc else {
        return levels();
    };
    let ratio = gc.policy.ratio;
    let due = if gc.gc_turn && super::blob_gc::garbage_share(v) >= ratio {
        pick_blob_gc(v, ratio, being_compacted).or_else(levels)
    } else {
        levels()
    };
    // Whatever the turn, idle work comes last: `wait_for_compactions`
    // waits for it, so it must be pickable on either turn (a garbage turn
    // that found no file once left it waiting for an L0 compaction that
    // was never picked).
    due.or_else(|| pick_idle_blob_work(v, &gc.policy, being_compacted))
}

/// Blob garbage work when no level is due: under garbage pressure, first
/// an L0 compaction if L0 tables point into blob files (below the trigger
/// they would hide the garbage their newer values made, up to
/// `max_memtable_blob_bytes` each, for as long as the database stays idle),
/// then files at [`idle_gc_threshold`]. `Db::wait_for_compactions` waits
/// for the same.
pub(crate) fn pick_idle_blob_work(
    v: &Version,
    policy: &GcPolicy,
    being_compacted: &HashSet<u64>,
) -> Option<CompactionPlan> {
    let pressure = super::blob_gc::garbage_share(v) >= policy.ratio;
    let l0 = v.files(0);
    if pressure && l0.iter().any(|f| f.oldest_blob_file != 0) {
        let first = l0.to_vec();
        if let Some(plan) = with_next_level(
            v,
            0,
            first,
            being_compacted,
            "L0 hides blob garbage (garbage pressure)".into(),
        ) {
            return Some(plan);
        }
    }
    pick_blob_gc(v, idle_gc_threshold(v, policy), being_compacted)
}

/// The garbage share at which a blob file is collected when no level is
/// due: `ratio` under garbage pressure (that share of all sealed value
/// bytes dead), else `force_threshold` (see [`pick_next`];
/// `Db::wait_for_compactions` waits for the same).
pub(crate) fn idle_gc_threshold(v: &Version, policy: &GcPolicy) -> f64 {
    if super::blob_gc::garbage_share(v) >= policy.ratio {
        policy.ratio
    } else {
        policy.force_threshold
    }
}

/// A compaction for blob garbage collection: of the blob files that are
/// due (garbage share at `threshold`; a file closed after a crash too,
/// its value bytes an upper bound: see `docs/blob-files.md`), the most
/// garbage-heavy one whose live values sit in a table that names it as its
/// oldest blob file; the first such table outside L0 that is not busy is
/// rewritten in place, which relocates those values (see
/// `compaction::blob_gc`). `None` if nothing is due.
pub(crate) fn pick_blob_gc(
    v: &Version,
    threshold: f64,
    being_compacted: &HashSet<u64>,
) -> Option<CompactionPlan> {
    let mut due: Vec<_> = v
        .blob_files()
        .iter()
        .filter(|(_, b)| b.sealed && b.garbage_ratio() >= threshold)
        .collect();
    // By garbage share, most first.
    due.sort_by(|a, b| b.1.garbage_ratio().total_cmp(&a.1.garbage_ratio()));
    for (&blob, b) in due {
        for level in 1..NUM_LEVELS {
            let table = v
                .files(level)
                .iter()
                .find(|f| f.oldest_blob_file == blob && !being_compacted.contains(&f.number));
            if let Some(t) = table {
                let plan = CompactionPlan {
                    level,
                    inputs: [vec![Arc::clone(t)], Vec::new()],
                    reason: format!(
                        "blob file {blob} at {:.0}% garbage{}",
                        b.garbage_ratio() * 100.0,
                        if b.crash_closed {
                            " (closed after a crash)"
                        } else {
                            ""
                        }
                    ),
                    in_place: true,
                    relocate_all: false,
                    gc_blob_file: Some(blob),
                };
                debug_check_plan(v, &plan, being_compacted);
                return Some(plan);
            }
        }
    }
    None
}

/// An in-place rewrite of `files` (the files of `level` overlapping a
/// range) that relocates every blob value they point to (the last step of
/// a full `compact_range`: afterwards the range's values lie in key
/// order). `None` if there is no file, none of them points into a blob
/// file, or one is busy.
pub(crate) fn pick_range_relocation(
    v: &Version,
    level: usize,
    files: Vec<Arc<FileMetaData>>,
    being_compacted: &HashSet<u64>,
) -> Option<CompactionPlan> {
    // Tables with no blob pointer (`oldest_blob_file` 0) have nothing to
    // move: only a range that points into blob files is rewritten.
    if !files.iter().any(|f| f.oldest_blob_file != 0) {
        return None;
    }
    let reason = format!("manual compaction: blob values of L{level} into key order");
    in_place_plan(v, level, files, (reason, true), being_compacted)
}

/// Whether table `f` may hold an entry a range tombstone of `v` hides.
pub(crate) fn may_hold_range_deleted(v: &Version, f: &FileMetaData) -> bool {
    may_hold_range_deleted_by(v, f, SequenceNumber::MAX)
}

/// [`may_hold_range_deleted`], counting only tombstones up to `upto`.
fn may_hold_range_deleted_by(v: &Version, f: &FileMetaData, upto: SequenceNumber) -> bool {
    v.range_tombstones()
        .tombstones()
        .iter()
        .any(|t| t.seq <= upto && f.may_hold_hidden_by(t))
}

/// A rewrite of `files` (adjacent tables of `level`, L1 or deeper) into
/// their own level; `None` if one is busy. The in-place plans of
/// `compact_range` and of range tombstones share it.
fn in_place_plan(
    v: &Version,
    level: usize,
    files: Vec<Arc<FileMetaData>>,
    (reason, relocate_all): (String, bool),
    being_compacted: &HashSet<u64>,
) -> Option<CompactionPlan> {
    if level == 0 || files.iter().any(|f| being_compacted.contains(&f.number)) {
        return None;
    }
    let plan = CompactionPlan {
        level,
        inputs: [files, Vec::new()],
        reason,
        in_place: true,
        relocate_all,
        gc_blob_file: None,
    };
    debug_check_plan(v, &plan, being_compacted);
    Some(plan)
}

/// Most tables one background range-tombstone rewrite takes.
const RANGE_REWRITE_MAX_FILES: usize = 8;

/// A background in-place rewrite of tables (L1 and deeper) that may hold
/// entries a range tombstone hides, when no other compaction is due: the
/// first run of such tables, adjacent in their level, at most
/// [`RANGE_REWRITE_MAX_FILES`], deepest level first. Only tombstones no
/// live snapshot predates count (`oldest_snapshot`; `None`: no snapshot):
/// the rewrite then drops every entry they hide and records it
/// (`range_cleared_seq`), so the same tables are never picked again for
/// them. `None` when no table is due or one is busy.
pub(crate) fn pick_range_deleted_rewrite(
    v: &Version,
    being_compacted: &HashSet<u64>,
    oldest_snapshot: Option<SequenceNumber>,
) -> Option<CompactionPlan> {
    if v.range_tombstones().is_empty() {
        return None;
    }
    let upto = oldest_snapshot.unwrap_or(SequenceNumber::MAX);
    for level in (1..NUM_LEVELS).rev() {
        let files = v.files(level);
        let due = |f: &FileMetaData| may_hold_range_deleted_by(v, f, upto);
        let Some(first) = files.iter().position(|f| due(f)) else {
            continue;
        };
        let run: Vec<Arc<FileMetaData>> = files[first..]
            .iter()
            .take_while(|f| due(f))
            .take(RANGE_REWRITE_MAX_FILES)
            .cloned()
            .collect();
        let reason = format!("range tombstones: drop what they hide in L{level}");
        return in_place_plan(v, level, run, (reason, false), being_compacted);
    }
    None
}

/// An in-place rewrite of the files among `files` (the files of `level`
/// overlapping a range, in key order) for which `due` holds, and of the
/// files between them (so the outputs stay disjoint from the level's other
/// files): the last step of a `compact_range` whose range already lies in
/// its deepest level, for tables that may hold entries a range tombstone
/// hides or that have expired, or for a compaction filter to see. `None`
/// if no file is due, or one is busy.
pub(crate) fn pick_bottom_rewrite(
    v: &Version,
    level: usize,
    files: Vec<Arc<FileMetaData>>,
    being_compacted: &HashSet<u64>,
    due: impl Fn(&FileMetaData) -> bool,
) -> Option<CompactionPlan> {
    let first = files.iter().position(|f| due(f))?;
    let last = files.iter().rposition(|f| due(f))?;
    let files = files[first..=last].to_vec();
    let reason = format!("manual compaction: rewrite of L{level} in place");
    in_place_plan(v, level, files, (reason, false), being_compacted)
}

/// A compaction of the files of `level` overlapping `[begin, end]` (user
/// keys, `None` = unbounded), for `compact_range`. `None` if the level has
/// no such file or one is busy.
pub(crate) fn pick_range(
    v: &Version,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
    being_compacted: &HashSet<u64>,
) -> Option<CompactionPlan> {
    if level + 1 >= NUM_LEVELS {
        return None;
    }
    let first = v.overlapping_files(level, begin, end);
    if first.is_empty() {
        return None;
    }
    with_next_level(
        v,
        level,
        first,
        being_compacted,
        format!("manual compaction of L{level}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{ValueKind, make_internal_key};
    use crate::version::{BlobFileEdit, Builder, VersionEdit};

    fn table(number: u64, a: &str, b: &str, oldest_blob_file: u64) -> FileMetaData {
        FileMetaData {
            number,
            file_size: 10,
            smallest: make_internal_key(a.as_bytes(), 1, ValueKind::BlobIndex),
            largest: make_internal_key(b.as_bytes(), 1, ValueKind::BlobIndex),
            smallest_seq: 1,
            largest_seq: 1,
            num_entries: 1,
            oldest_blob_file,
            range_cleared_seq: 0,
        }
    }

    /// Under garbage pressure, with an L0 table pointing into blob files
    /// below the trigger and no file whose tables can be rewritten for it,
    /// the idle L0 compaction that `wait_for_compactions` waits for is
    /// picked on the garbage turn too (it once was not: the wait hung).
    #[test]
    fn idle_work_is_picked_on_either_turn() {
        let mut edit = VersionEdit {
            blob_files: vec![BlobFileEdit {
                number: 5,
                sealed: true,
                size: 8192,
                value_count: 10,
                value_bytes: 4000,
                crash_closed: false,
            }],
            // 40% garbage: over the ratio (pressure), under the force
            // threshold.
            blob_garbage: vec![(5, 4, 1600)],
            ..VersionEdit::default()
        };
        // The only table pointing into file 5 is in L0: no in-place
        // rewrite (levels 1+) can be picked for it.
        edit.add_file(0, table(10, "a", "m", 5));
        let mut b = Builder::new(&Version::new());
        b.apply(&edit).expect("apply");
        let v = b.finish();
        let targets = LevelTargets {
            l0_compaction_trigger: 4,
            max_bytes_for_level_base: 1 << 20,
            max_bytes_for_level_multiplier: 10,
        };
        let policy = GcPolicy {
            ratio: 0.25,
            force_threshold: 0.5,
        };
        let busy = HashSet::new();
        assert!(
            pick(&v, &targets, &busy, |_| None).is_none(),
            "no level is due"
        );
        let idle = pick_idle_blob_work(&v, &policy, &busy).expect("idle work is due");
        assert_eq!(idle.level, 0, "the L0 table is compacted");
        for gc_turn in [true, false] {
            let plan = pick_next(
                &v,
                &targets,
                &busy,
                Some(BlobGcPick { policy, gc_turn }),
                |_| None,
            )
            .unwrap_or_else(|| panic!("nothing picked on gc_turn {gc_turn}"));
            assert_eq!(plan.level, 0);
            assert_eq!(plan.input_numbers().collect::<Vec<_>>(), vec![10]);
        }
    }

    /// A file a crash left open is relocated for its garbage like any
    /// sealed file, not for having been left open: after a `kill -9` of a
    /// writer with 64 lanes, relocating every such file rewrote the whole
    /// database under the next phase's reads.
    #[test]
    fn a_crash_closed_file_is_relocated_for_its_garbage_only() {
        let version = |garbage: Option<(u64, u64, u64)>| {
            let mut edit = VersionEdit {
                blob_files: vec![BlobFileEdit::crash_closed(5, 1 << 20)],
                blob_garbage: garbage.into_iter().collect(),
                ..VersionEdit::default()
            };
            edit.add_file(1, table(10, "a", "m", 5));
            let mut b = Builder::new(&Version::new());
            b.apply(&edit).expect("apply");
            b.finish()
        };
        let busy = HashSet::new();
        let policy = GcPolicy {
            ratio: 0.25,
            force_threshold: 0.5,
        };
        let clean = version(None);
        assert!(clean.blob_files()[&5].crash_closed);
        assert!(pick_blob_gc(&clean, 0.25, &busy).is_none());
        assert!(super::super::blob_gc::relocation_set(&clean, &policy, 1 << 30, None).is_empty());
        // 60% of its upper-bound value bytes are garbage.
        let dirty = version(Some((5, 100, 600 << 10)));
        let plan = pick_blob_gc(&dirty, 0.25, &busy).expect("due for its garbage");
        assert_eq!(plan.gc_blob_file, Some(5));
        assert_eq!(plan.input_numbers().collect::<Vec<_>>(), vec![10]);
        let set = super::super::blob_gc::relocation_set(&dirty, &policy, 1 << 30, Some(5));
        assert!(set.contains(&5));
    }
}
