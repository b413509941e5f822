//! [`MemoryPlan`]: how `Options::memory_budget` is cut into the parts of
//! the engine that hold memory (`docs/memory.md`).
//!
//! The fixed parts come first: the blob lanes' staging slots (page cache
//! mapped by the process) and a reserve for threads, fiber stacks and
//! small structures. The rest is split by fixed shares between the
//! memtables (with the WAL's slot buffers), the block cache, pinned blob
//! pointer tables, the index and filter blocks of open tables, table
//! read-ahead buffers and shared scan chunks. A database opened without
//! blob files (`Options::min_blob_size` is `None`) has no use for the two
//! blob parts (pinned blob pointer tables, shared scan chunks): their
//! shares go to the block cache, which then holds what inline values
//! need. [`MemoryPlan::apply`] sets
//! the options those parts are sized by; the others are bounded where they
//! live (the table cache by bytes, read-ahead through a gauge).
//!
//! Plain data, computed once at open. Invariant: the parts add up to at
//! most the budget (`debug_assert` in `plan`).

use crate::error::{Error, Result};

use super::Options;

/// Smallest budget accepted.
pub(crate) const MIN_BUDGET: usize = 16 << 20;

/// Reserve for what the parts below do not count: thread stacks, fiber
/// stacks (512 KiB each, of which a lookup touches a few KiB), io_uring
/// rings, version and manifest state.
pub(crate) const RESERVE: usize = 8 << 20;

/// Shares of what is left after the fixed parts, in 1/32.
const MEMTABLES: usize = 8;
const BLOCK_CACHE: usize = 6;
const PINNED_TABLES: usize = 5;
const TABLE_METADATA: usize = 2;
const READAHEAD: usize = 3;
const SHARED_SCAN: usize = 8;
const _: () = assert!(
    MEMTABLES + BLOCK_CACHE + PINNED_TABLES + TABLE_METADATA + READAHEAD + SHARED_SCAN == 32
);

/// The bytes each part may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoryPlan {
    pub budget: usize,
    /// Memtables (`write_buffer_size` each, the mutable one and up to
    /// `max_immutable_memtables` waiting) and the WAL's slot buffers.
    pub memtables: usize,
    pub block_cache: usize,
    pub pinned_blob_tables: usize,
    /// Index, filter and properties blocks of open tables.
    pub table_metadata: usize,
    /// Chunk buffers of table read-ahead (scans and compactions).
    pub readahead: usize,
    pub shared_scan: usize,
    /// Staging slots of the blob write lanes.
    pub blob_staging: usize,
    pub reserve: usize,
}

impl MemoryPlan {
    /// The plan for `options` (whose `memory_budget` is set).
    pub(crate) fn plan(options: &Options, budget: usize) -> Result<MemoryPlan> {
        if budget < MIN_BUDGET {
            return Err(Error::InvalidArgument(format!(
                "memory_budget {budget} is below the smallest accepted, {MIN_BUDGET} bytes"
            )));
        }
        let blob_staging = if options.min_blob_size.is_some() {
            options.blob_write_lanes * crate::blob::lane::LaneOptions::default().staging_bytes()
        } else {
            0
        };
        let fixed = blob_staging + RESERVE;
        if fixed > budget / 2 {
            return Err(Error::InvalidArgument(format!(
                "memory_budget {budget}: the fixed parts take {fixed} bytes, more than half of it \
                 ({blob_staging} for the staging slots of {} blob write lanes, {RESERVE} reserved); \
                 lower blob_write_lanes or raise the budget",
                options.blob_write_lanes
            )));
        }
        let rest = budget - fixed;
        let share = |n: usize| rest / 32 * n;
        let blobs = options.min_blob_size.is_some();
        let (block_cache, pinned, shared) = if blobs {
            (BLOCK_CACHE, PINNED_TABLES, SHARED_SCAN)
        } else {
            (BLOCK_CACHE + PINNED_TABLES + SHARED_SCAN, 0, 0)
        };
        let plan = MemoryPlan {
            budget,
            memtables: share(MEMTABLES),
            block_cache: share(block_cache),
            pinned_blob_tables: share(pinned),
            table_metadata: share(TABLE_METADATA),
            readahead: share(READAHEAD),
            shared_scan: share(shared),
            blob_staging,
            reserve: RESERVE,
        };
        debug_assert!(plan.total() <= budget, "the parts fit the budget");
        debug_assert!(
            blobs || plan.pinned_blob_tables + plan.shared_scan + plan.blob_staging == 0,
            "no blob part without blob files"
        );
        Ok(plan)
    }

    /// Each part with its name, in the order the info log lists them.
    pub(crate) fn parts(&self) -> [(&'static str, usize); 8] {
        [
            ("memtables", self.memtables),
            ("block cache", self.block_cache),
            ("pinned blob tables", self.pinned_blob_tables),
            ("table metadata", self.table_metadata),
            ("read-ahead", self.readahead),
            ("shared scans", self.shared_scan),
            ("blob staging", self.blob_staging),
            ("reserve", self.reserve),
        ]
    }

    /// The parts added up.
    pub(crate) fn total(&self) -> usize {
        self.parts().iter().map(|&(_, bytes)| bytes).sum()
    }

    /// The memtable size that keeps `max_immutable_memtables + 1`
    /// memtables and the WAL's slot buffers (at most one memtable's
    /// worth) within the memtables' part.
    pub(crate) fn write_buffer_size(&self, max_immutable_memtables: usize) -> usize {
        self.memtables / (max_immutable_memtables + 2)
    }

    /// Sets the options sized by the plan: `write_buffer_size`,
    /// `cache_size`, `pinned_blob_tables_size` and `shared_scan_bytes`
    /// (the options' own values are replaced). A block cache passed in
    /// (`block_cache`, perhaps shared with other databases) must fit the
    /// cache's part.
    pub(crate) fn apply(&self, options: &mut Options) -> Result<()> {
        let wbs = self.write_buffer_size(options.max_immutable_memtables);
        if wbs < 64 << 10 {
            return Err(Error::InvalidArgument(format!(
                "memory_budget {}: its memtable part ({} bytes) leaves less than 64 KiB per \
                 memtable with max_immutable_memtables {}",
                self.budget, self.memtables, options.max_immutable_memtables
            )));
        }
        options.write_buffer_size = wbs.min(2 << 30);
        if let Some(cache) = &options.block_cache
            && cache.capacity() > self.block_cache
        {
            return Err(Error::InvalidArgument(format!(
                "memory_budget {}: the block cache passed in holds {} bytes, more than its part \
                 of the budget ({} bytes)",
                self.budget,
                cache.capacity(),
                self.block_cache
            )));
        }
        options.cache_size = self.block_cache;
        options.pinned_blob_tables_size = self.pinned_blob_tables;
        options.shared_scan_bytes = self.shared_scan;
        Ok(())
    }
}

impl std::fmt::Display for MemoryPlan {
    /// One line for the info log: each part in MiB.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: usize| b as f64 / 1048576.0;
        write!(f, "memory budget {:.1} MiB:", mib(self.budget))?;
        for (i, (name, bytes)) in self.parts().into_iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep} {name} {:.1}", mib(bytes))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_fit_the_budget_and_set_the_options() {
        let no_blobs = Options {
            min_blob_size: None,
            ..Options::default()
        };
        for (budget, base) in [
            (MIN_BUDGET, &no_blobs),
            (64 << 20, &Options::default()),
            (1536 << 20, &Options::default()),
            (8 << 30, &Options::default()),
        ] {
            let mut o = base.clone();
            let plan = MemoryPlan::plan(&o, budget).expect("plan");
            assert!(plan.total() <= budget);
            assert!(plan.total() + 32 * 6 >= budget - 32, "little is left over");
            plan.apply(&mut o).expect("apply");
            assert_eq!(o.cache_size, plan.block_cache);
            assert_eq!(o.shared_scan_bytes, plan.shared_scan);
            assert!(o.write_buffer_size * (o.max_immutable_memtables + 2) <= plan.memtables);
            o.validate().expect("the options the plan sets are valid");
        }
    }

    /// Without blob files, the blob parts' shares are the block cache's:
    /// 19/32 of what is left after the reserve, against 6/32 with them.
    #[test]
    fn without_blob_files_the_blob_parts_go_to_the_block_cache() {
        let budget = 1536 << 20;
        let inline = MemoryPlan::plan(
            &Options {
                min_blob_size: None,
                ..Options::default()
            },
            budget,
        )
        .expect("plan");
        let rest = budget - RESERVE;
        assert_eq!(inline.block_cache, rest / 32 * 19);
        assert_eq!(
            (
                inline.pinned_blob_tables,
                inline.shared_scan,
                inline.blob_staging
            ),
            (0, 0, 0)
        );
        let blobs = MemoryPlan::plan(&Options::default(), budget).expect("plan");
        assert!(blobs.pinned_blob_tables > 0 && blobs.shared_scan > 0);
        assert_eq!(
            blobs.block_cache,
            (budget - RESERVE - blobs.blob_staging) / 32 * 6
        );
        assert_eq!(
            inline.memtables,
            rest / 32 * MEMTABLES,
            "the other parts stay"
        );
    }

    #[test]
    fn a_budget_too_small_for_its_fixed_parts_is_refused() {
        let o = Options {
            blob_write_lanes: 64,
            ..Options::default()
        };
        let e = MemoryPlan::plan(&o, 256 << 20).expect_err("64 lanes stage 256 MiB");
        assert!(e.to_string().contains("blob_write_lanes"), "{e}");
        assert!(MemoryPlan::plan(&Options::default(), 1 << 20).is_err());
        let no_blobs = Options {
            min_blob_size: None,
            blob_write_lanes: 64,
            ..Options::default()
        };
        assert_eq!(
            MemoryPlan::plan(&no_blobs, 256 << 20)
                .expect("no lanes")
                .blob_staging,
            0
        );
    }
}
