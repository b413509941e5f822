//! db_bench's LSM tuning flags and the `--tuned` profile of each engine.
//!
//! Owns [`LsmFlags`]: every RocksDB option db_bench has a flag for that an
//! expert tunes (background jobs, memtables, syncing, write pipeline, L0
//! triggers, level sizes, read-ahead, caches, rate limiter), each an
//! `Option` so that "not given" is distinguishable from "given with the
//! default value". Not given means db_bench's default for RocksDB (listed on
//! each field) and the engine's own default elsewhere. An engine maps the
//! flags it has an equivalent for and refuses the rest with an error
//! ([`LsmFlags::refuse_unmapped`]): a flag is never dropped.
//!
//! `--tuned` fills the flags not given with the values the engine's own
//! documentation recommends ([`rocksdb_tuned`], [`varve_tuned`],
//! [`fjall_tuned`]); a flag given on the command line always wins. Plain
//! data, no state, no threads.

use clap::Args;
use serde::Serialize;

use crate::parse::parse_bool;

/// db_bench's tuning flags. `None`: not given (see the module contract).
#[derive(Debug, Clone, Default, Args, Serialize)]
#[command(rename_all = "snake_case")]
pub struct LsmFlags {
    /// Give each engine the configuration its own documentation recommends
    /// for this workload (RocksDB: the tuning guide and BlobDB page; varve:
    /// its defaults; fjall: its README). Flags given still win; the report
    /// prints every option each engine ran with.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub tuned: bool,

    /// Concurrent flushes and compactions (db_bench default: RocksDB's, 2).
    /// rocksdb: `max_background_jobs`; varve and fjall: an error.
    #[arg(long)]
    pub max_background_jobs: Option<i32>,

    /// Memtables, the active one included (db_bench default: 2). rocksdb:
    /// `max_write_buffer_number`; varve: `max_immutable_memtables` = N - 1;
    /// fjall: an error.
    #[arg(long)]
    pub max_write_buffer_number: Option<i32>,

    /// Immutable memtables merged into one flush (db_bench default: 1).
    /// rocksdb only.
    #[arg(long)]
    pub min_write_buffer_number_to_merge: Option<i32>,

    /// Start writeback of table files every this many bytes (db_bench
    /// default: 0, off). rocksdb only: varve writes tables with direct IO or
    /// syncs them whole.
    #[arg(long)]
    pub bytes_per_sync: Option<u64>,

    /// Start writeback of WAL files every this many bytes (db_bench default:
    /// 0, off). rocksdb only.
    #[arg(long)]
    pub wal_bytes_per_sync: Option<u64>,

    /// Pipeline WAL and memtable writes (db_bench default: true; RocksDB's
    /// own default is false). rocksdb only.
    #[arg(long, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub enable_pipelined_write: Option<bool>,

    /// Writers insert into the memtable in parallel (db_bench default:
    /// true). rocksdb only (varve's memtable always takes concurrent inserts).
    #[arg(long, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub allow_concurrent_memtable_write: Option<bool>,

    /// Unordered writes (db_bench default: false). rocksdb only.
    #[arg(long, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub unordered_write: Option<bool>,

    /// L0 tables at which writes slow down (db_bench default: 20). rocksdb:
    /// `level0_slowdown_writes_trigger`; varve: `l0_slowdown_writes_trigger`.
    #[arg(long)]
    pub level0_slowdown_writes_trigger: Option<i32>,

    /// L0 tables at which writes stop (db_bench default: 36). rocksdb:
    /// `level0_stop_writes_trigger`; varve: `l0_stop_writes_trigger`.
    #[arg(long)]
    pub level0_stop_writes_trigger: Option<i32>,

    /// Bytes of level 1 (db_bench default: 256 MiB). rocksdb and varve:
    /// `max_bytes_for_level_base`.
    #[arg(long)]
    pub max_bytes_for_level_base: Option<u64>,

    /// Growth between levels (db_bench default: 10). rocksdb and varve
    /// (whole numbers only): `max_bytes_for_level_multiplier`.
    #[arg(long)]
    pub max_bytes_for_level_multiplier: Option<f64>,

    /// Size levels from the last one up (db_bench default: false; RocksDB's
    /// own default is true). rocksdb only.
    #[arg(long, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub level_compaction_dynamic_level_bytes: Option<bool>,

    /// Target size of a table file (db_bench default: 64 MiB). rocksdb:
    /// `target_file_size_base`; varve: `target_file_size`.
    #[arg(long)]
    pub target_file_size_base: Option<u64>,

    /// Read-ahead of compaction inputs (db_bench default: RocksDB's, 2 MiB).
    /// rocksdb only: varve's compaction reads whole chunks.
    #[arg(long)]
    pub compaction_readahead_size: Option<u64>,

    /// Table block size in bytes (db_bench default: 4096). rocksdb and varve:
    /// `block_size`.
    #[arg(long)]
    pub block_size: Option<usize>,

    /// Keep index and filter blocks in the block cache (db_bench default:
    /// false). rocksdb only.
    #[arg(long, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub cache_index_and_filter_blocks: Option<bool>,

    /// Pin L0 tables' index and filter blocks in the cache (db_bench
    /// default: false). rocksdb only.
    #[arg(long, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub pin_l0_filter_and_index_blocks_in_cache: Option<bool>,

    /// Use a blob cache (db_bench default: false). rocksdb only.
    #[arg(long, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub use_blob_cache: Option<bool>,

    /// Bytes of the blob cache, with --use_blob_cache (db_bench default:
    /// 8 MiB). rocksdb only.
    #[arg(long)]
    pub blob_cache_size: Option<u64>,

    /// Limit background write bytes per second (db_bench default: 0, no
    /// limiter). rocksdb only.
    #[arg(long)]
    pub rate_limiter_bytes_per_sec: Option<u64>,

    /// Skip filters of the last level (db_bench default: false). rocksdb only.
    #[arg(long, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub optimize_filters_for_hits: Option<bool>,
}

/// A flag of [`LsmFlags`] that was given: its name and value as text.
pub type Given = (String, String);

impl LsmFlags {
    /// Every flag given (or set by a profile), by db_bench name, in name
    /// order: the serialised fields that are not `None` (`tuned` is not a
    /// RocksDB option and is left out).
    pub fn given(&self) -> Vec<Given> {
        let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(self) else {
            unreachable!("LsmFlags serialises to an object of plain values");
        };
        fields
            .into_iter()
            .filter(|(name, v)| name != "tuned" && !v.is_null())
            .map(|(name, v)| (name, v.to_string()))
            .collect()
    }

    /// Fails naming the first given flag that `engine` does not map (those
    /// in `mapped` are mapped).
    pub fn refuse_unmapped(&self, engine: &str, mapped: &[&str]) -> anyhow::Result<()> {
        for (name, value) in self.given() {
            anyhow::ensure!(
                mapped.contains(&name.as_str()),
                "--{name}={value}: a RocksDB option {engine} has no equivalent for \
                 (give it in the RocksDB-only flags, e.g. ROCKSDB_FLAGS in the scripts)"
            );
        }
        Ok(())
    }
}

/// RocksDB's recommended configuration, for the flags not given. Sources:
/// the wiki's "Setup Options and Basic Tuning" (max_background_jobs,
/// bytes_per_sync 1 MiB, level_compaction_dynamic_level_bytes, 16 KiB
/// blocks, index and filter blocks cached with L0's pinned, a 10-bit bloom
/// filter), "Write Stalls" / "Tuning Guide" (more memtables for bursts:
/// max_write_buffer_number 6, so RocksDB holds as many as varve's 1 + 5),
/// and the BlobDB page (a blob cache beside the block cache; blob garbage
/// collection stays as asked, off unless --enable_blob_garbage_collection).
/// Direct IO for flush and compaction and async IO for reads are set in
/// `engine/rocksdb.rs` with the other booleans of `Flags`.
pub fn rocksdb_tuned(f: &LsmFlags) -> LsmFlags {
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get() as i32);
    LsmFlags {
        tuned: true,
        max_background_jobs: f.max_background_jobs.or(Some(jobs.max(4))),
        max_write_buffer_number: f.max_write_buffer_number.or(Some(6)),
        bytes_per_sync: f.bytes_per_sync.or(Some(1 << 20)),
        wal_bytes_per_sync: f.wal_bytes_per_sync.or(Some(1 << 20)),
        level_compaction_dynamic_level_bytes: f.level_compaction_dynamic_level_bytes.or(Some(true)),
        block_size: f.block_size.or(Some(16 << 10)),
        cache_index_and_filter_blocks: f.cache_index_and_filter_blocks.or(Some(true)),
        pin_l0_filter_and_index_blocks_in_cache: f
            .pin_l0_filter_and_index_blocks_in_cache
            .or(Some(true)),
        ..f.clone()
    }
}

/// varve's recommended configuration: its defaults (docs/memory.md: one
/// `--memory_budget` bounds everything; the scripts give it). Nothing of
/// [`LsmFlags`] beyond what is given; `engine/varve.rs` adds, as for
/// RocksDB, its default 10-bit bloom filter when none is given, direct IO
/// for flush and compaction, and `multi_get` on io_uring (`async_io`).
pub fn varve_tuned(f: &LsmFlags) -> LsmFlags {
    LsmFlags {
        tuned: true,
        ..f.clone()
    }
}

/// fjall's recommended configuration (its README: size the cache, keep the
/// defaults otherwise). Nothing of [`LsmFlags`] beyond what is given.
pub fn fjall_tuned(f: &LsmFlags) -> LsmFlags {
    LsmFlags {
        tuned: true,
        ..f.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_lists_only_what_was_set() {
        let f = LsmFlags::default();
        assert!(f.given().is_empty());
        let f = LsmFlags {
            max_background_jobs: Some(4),
            enable_pipelined_write: Some(false),
            ..LsmFlags::default()
        };
        assert_eq!(
            f.given(),
            vec![
                ("enable_pipelined_write".to_string(), "false".to_string()),
                ("max_background_jobs".to_string(), "4".to_string())
            ]
        );
        assert!(
            f.refuse_unmapped("varve", &["max_background_jobs"])
                .is_err()
        );
        assert!(
            f.refuse_unmapped("x", &["max_background_jobs", "enable_pipelined_write"])
                .is_ok()
        );
    }

    #[test]
    fn tuned_profile_never_overrides_a_given_flag() {
        let f = LsmFlags {
            max_write_buffer_number: Some(3),
            ..LsmFlags::default()
        };
        let t = rocksdb_tuned(&f);
        assert_eq!(t.max_write_buffer_number, Some(3));
        assert_eq!(t.bytes_per_sync, Some(1 << 20));
        assert!(t.max_background_jobs.is_some_and(|n| n >= 4));
        assert_eq!(t.cache_index_and_filter_blocks, Some(true));
        assert!(t.tuned);
    }
}
