//! Command-line flags: db_bench's names, meanings and defaults, plus ours.
//!
//! Parsing is clap (derive), preceded by [`normalize_args`], which rewrites
//! db_bench's gflags spellings (`-num=10`, `-histogram`) into clap's
//! (`--num=10`, `--histogram`), so a db_bench command line runs unchanged.
//! Boolean flags take `=true|false|1|0|yes|no`, or no value for `true`.
//! Flags db_bench knows but this tool does not are refused with an error:
//! a dropped flag would change what is measured. db_bench's LSM tuning flags
//! live in [`crate::tuning`]. [`Flags`] is plain data, serialised whole into
//! every JSON record.

use clap::{CommandFactory, Parser};
use serde::Serialize;

pub use crate::parse::{parse_bool, parse_fraction};
use crate::tuning::LsmFlags;

const ABOUT: &str =
    "db_bench-compatible benchmark for varve, with RocksDB, fjall, redb and LMDB side by side";

const LONG_ABOUT: &str = "\
db_bench-compatible benchmark for varve, with RocksDB, fjall, redb and LMDB
side by side.

Takes RocksDB db_bench's flags (both `--num=10` and db_bench's `-num=10`) and
prints db_bench's result lines, so the same command line measures varve,
RocksDB (--engine=rocksdb, cargo feature `rocksdb`), fjall (--engine=fjall,
cargo feature `fjall`), redb (--engine=redb, cargo feature `redb`) and LMDB
(--engine=lmdb, cargo feature `lmdb`, through the heed crate). Every engine
runs through the same key generator, value generator, timing and output code.

redb and LMDB are single-writer B-trees: each write call (one key, or a
--batch_size batch) is one write transaction, committed durably with --sync
(redb Durability::Immediate; LMDB's default synchronous commit) and without
an fsync otherwise (redb Durability::None; LMDB MDB_NOSYNC). Neither has
direct IO, a memtable, bloom filters or compression: those flags are listed
as ignored. --cache_size is redb's page cache; LMDB has none (it reads the
OS page cache through its memory map). scripts/compare.sh runs every engine
in one memory cgroup so the page cache counts for all of them alike.

COLD READS: a fair cold-read measurement needs --use_direct_reads=true and a
small --cache_size (e.g. 8388608), so that neither the OS page cache nor a
large block cache hides the IO. Without direct reads, a second run reads from
RAM, whatever the engine.";

const AFTER_HELP: &str = "\
Workloads (comma list in --benchmarks, run in order):
  fillseq           write --num keys in ascending order (fresh DB)
  fillrandom        write --num random keys, with repeats (fresh DB)
  filluniquerandom  write a random permutation of --num keys (fresh DB, 1 thread)
  overwrite         write --num random keys into the existing DB
  fillsync          like fillrandom with sync=true; as in db_bench 7.8.3 it does
                    --writes (default --num) writes over a key space of num/1000
  readrandom        --reads random point reads, reports (found of reads)
  multireadrandom   --reads random point reads in batches of --batch_size
  readseq           iterate forward over up to --reads entries
  readreverse       iterate backward over up to --reads entries
  seekrandom        --reads random seeks, each followed by --seek_nexts nexts
  deleterange       ours: delete the middle tenth of the key space (key
                    numbers num*45/100 .. num*55/100) with one range delete
  flush             flush memtables
  compact           compact the whole key range
  waitforcompaction wait until background compaction is done
  stats             print the engine's statistics
  count             ours: count every key; on varve through par_count with
                    --scan_threads threads, elsewhere with one iterator
  contest           ours: the PolarDB 2018 engine contest as it ran (8 B
                    keys, 4 KiB values), one process per phase: --threads writers each
                    write num/threads unique keys; the process is killed
                    (SIGKILL) right after the last acknowledged write; a new
                    process reopens and counts every key; one reads every key
                    at random and checks each value's content; one has every
                    thread scan the whole database in key order twice,
                    checking order, count and value lengths. Reports each
                    phase's MB/s, the reopen time, each process's peak RSS and
                    file-system bytes read. Must be the only workload; the
                    database is --db (kept) or a temporary one
  contest_inprocess the same phases in this one process, without the kill

Default --benchmarks is fillseq,fillrandom,overwrite,readrandom,multireadrandom,
readseq,readreverse,seekrandom (db_bench's default list also contains fillsync,
which does --num synchronous writes, and many workloads this tool lacks).

Blob files (--enable_blob_files; without it the other blob flags do nothing):
  varve    Options::min_blob_size = --min_blob_size; blob_file_size,
           enable_blob_garbage_collection, blob_garbage_collection_ratio and
           blob_garbage_collection_force_threshold from the same-named flags
           (not given: GC off as in db_bench; varve's 0.25 and 0.5). varve picks blob
           files for GC by garbage share, not by age, so
           --blob_garbage_collection_age_cutoff is an error.
  rocksdb  the integrated BlobDB: enable_blob_files, min_blob_size,
           blob_file_size, enable_blob_garbage_collection (false unless given),
           blob_garbage_collection_age_cutoff (0.25) and
           blob_garbage_collection_force_threshold (1.0), db_bench's names.
           RocksDB picks by age: --blob_garbage_collection_ratio is an error.
  fjall    key-value separation (KvSeparationOptions): separation_threshold =
           --min_blob_size, file_target_size = --blob_file_size, age_cutoff =
           --blob_garbage_collection_age_cutoff (0 when GC is off: fjall
           always collects, and 0 relocates nothing), staleness_threshold =
           --blob_garbage_collection_ratio; no force threshold (an error). A
           keyspace keeps the separation it was created with: --use_existing_db
           with other blob flags is an error.
  redb, lmdb  no key-value separation (large values go to overflow pages):
           --enable_blob_files is an error.
  Every engine stores blob values uncompressed (--compression_type is for
  table blocks).

Differences from db_bench: --compression_type defaults to none (db_bench:
snappy); blob values are never compressed (db_bench: --blob_compression_type,
snappy); the (X of Y found) message sums all threads (db_bench shows thread
0's); flush and waitforcompaction also print a result line.

Examples:
  varve-bench --benchmarks=fillseq,readrandom --num=1000000
  varve-bench -benchmarks=fillrandom,readrandom -num=200000 -engine=rocksdb
  # cold reads: build once, then read through direct IO and a small cache
  varve-bench --benchmarks=fillrandom --db=/data/b --num=10000000
  varve-bench --benchmarks=readrandom --db=/data/b --use_existing_db=true \\
      --use_direct_reads=true --cache_size=8388608 --num=10000000 --reads=100000
  varve-bench --benchmarks=fillseq,readrandom --json=results.jsonl --histogram";

/// Every flag of one run. Field names are the flag names.
#[derive(Debug, Clone, Parser, Serialize)]
#[command(
    name = "varve-bench",
    rename_all = "snake_case",
    args_override_self = true,
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = crate::help::after_help(AFTER_HELP)
)]
pub struct Flags {
    /// Comma-separated list of workloads to run, in order (see below).
    #[arg(
        long,
        default_value = "fillseq,fillrandom,overwrite,readrandom,multireadrandom,readseq,readreverse,seekrandom"
    )]
    pub benchmarks: String,

    /// Database directory, kept at exit. Default: a fresh directory under
    /// $TMPDIR, removed at exit.
    #[arg(long)]
    pub db: Option<String>,

    /// Number of key/values to place in the database (the key space).
    #[arg(long, default_value_t = 1_000_000)]
    pub num: i64,

    /// Number of read operations per thread. Negative: --num.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub reads: i64,

    /// Number of write operations per thread. Negative: --num.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub writes: i64,

    /// Size of each key in bytes (8-byte big-endian number, padded with '0').
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,

    /// Size of each value in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,

    /// Values shrink to this fraction of their size when compressed.
    #[arg(long, default_value_t = 0.5)]
    pub compression_ratio: f64,

    /// Number of concurrent threads; each does the full operation count.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,

    /// Writes per WriteBatch; keys per multireadrandom batch.
    #[arg(long, default_value_t = 1)]
    pub batch_size: usize,

    /// Use the existing database instead of creating a new one; fill
    /// workloads are then skipped, as in db_bench.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub use_existing_db: bool,

    /// Bypass the OS page cache for reads (O_DIRECT). Needed for fair cold reads.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub use_direct_reads: bool,

    /// Bypass the OS page cache for flush and compaction IO.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub use_direct_io_for_flush_and_compaction: bool,

    /// Spread the workload over this many keyspaces (varve) or column
    /// families (rocksdb): each key goes to the one its hash picks, a batch
    /// of several keys is one atomic write across them, and scans walk them
    /// one after another. 1: the default keyspace only, as without it.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub keyspaces: u32,

    /// Key-value separation: values of at least --min_blob_size bytes are
    /// written to blob files and the tree keeps a pointer to each. varve:
    /// `Options::min_blob_size`; rocksdb: the integrated BlobDB
    /// (`enable_blob_files`); fjall: key-value separation
    /// (`KvSeparationOptions`). Without it the other blob flags do nothing.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub enable_blob_files: bool,

    /// Values of at least this many bytes go to blob files (with
    /// --enable_blob_files). varve: `Options::min_blob_size`; rocksdb:
    /// `min_blob_size`; fjall: `separation_threshold` (at most 4294967295).
    #[arg(long, default_value_t = 0)]
    pub min_blob_size: usize,

    /// A blob file is cut at about this many bytes (db_bench's default and
    /// varve's: 256 MiB). varve: `Options::blob_file_size` (1 MiB..=1 TiB);
    /// rocksdb: `blob_file_size`; fjall: `file_target_size`.
    #[arg(long, default_value_t = 256 << 20)]
    pub blob_file_size: u64,

    /// Ours, varve only: bytes of data blocks that tables pointing into
    /// blob files keep in memory, outside the block cache
    /// (`Options::pinned_blob_tables_size`; 0: none). Not given: varve's
    /// default, 256 MiB. The other engines have no such setting (RocksDB
    /// and fjall read those blocks through their caches).
    #[arg(long)]
    pub pinned_blob_tables_size: Option<usize>,

    /// Ours, varve only: blob write lanes, each an open blob file written
    /// by whichever writer holds it (`Options::blob_write_lanes`, 1..=256).
    /// Not given: varve's default, 4. RocksDB writes one blob file per
    /// flush or compaction job; fjall one per memtable.
    #[arg(long)]
    pub blob_write_lanes: Option<usize>,

    /// Ours, varve only: bytes of blob-file chunks that concurrent long
    /// scans share (`Options::shared_scan_bytes`; 0: off, each iterator
    /// reads ahead alone). Not given: varve's default, 0.
    #[arg(long)]
    pub shared_scan_bytes: Option<usize>,

    /// Ours, varve only: one limit for the memory the engine holds
    /// (`Options::memory_budget`, bytes): it sizes the memtables, the block
    /// cache, pinned tables and shared scan chunks (replacing
    /// --write_buffer_size, --cache_size, --pinned_blob_tables_size and
    /// --shared_scan_bytes) and bounds read-ahead buffers and open tables'
    /// index and filter blocks. Not given: no budget.
    #[arg(long)]
    pub memory_budget: Option<usize>,

    /// Ours, varve only: blob write lanes split the key space (lane i takes
    /// the i-th slice of the first 8 key bytes) instead of serving threads
    /// (`Options::blob_lanes_by_key`). Not given: varve's default, false.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub blob_lanes_by_key: Option<bool>,

    /// Relocate the live values of blob files that are mostly garbage during
    /// compaction. Not given: false, db_bench's default, on every engine.
    /// varve and rocksdb: `enable_blob_garbage_collection`; fjall always
    /// collects, so false sets its age cutoff to 0 (nothing is relocated).
    #[arg(long, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub enable_blob_garbage_collection: Option<bool>,

    /// Fraction (0..=1) of the oldest blob files whose live values blob GC
    /// relocates. Not given: 0.25 (RocksDB's and db_bench's default).
    /// rocksdb: `blob_garbage_collection_age_cutoff`; fjall: `age_cutoff` (of
    /// the files a compaction reads that are stale, see
    /// --blob_garbage_collection_ratio); varve picks by garbage share, not
    /// age: an error.
    #[arg(long, value_parser = parse_fraction)]
    pub blob_garbage_collection_age_cutoff: Option<f64>,

    /// Ours, not db_bench's: the garbage share (0..=1) at which a blob file's
    /// live values are relocated. Not given: the engine's default (varve and
    /// fjall: 0.25). varve: `Options::blob_garbage_collection_ratio`; fjall:
    /// `staleness_threshold`; rocksdb picks blob files by age, not garbage
    /// (--blob_garbage_collection_age_cutoff): an error.
    #[arg(long, value_parser = parse_fraction)]
    pub blob_garbage_collection_ratio: Option<f64>,

    /// The garbage share (0..=1) that forces a compaction for blob files no
    /// compaction reaches. Not given: the engine's default. rocksdb:
    /// `blob_garbage_collection_force_threshold`, over the oldest files (the
    /// age cutoff), 1.0 (as db_bench); varve: per file,
    /// `Options::blob_garbage_collection_force_threshold`, 0.5; fjall has no
    /// such knob: an error.
    #[arg(long, value_parser = parse_fraction)]
    pub blob_garbage_collection_force_threshold: Option<f64>,

    /// varve: how WAL bytes reach the file (`Options::wal_writer`):
    /// mapped (a memory mapping of fallocated space, varve's default),
    /// mapped_zero_filled (mapped over space zero-filled once), io_uring
    /// (one ring thread; write and fdatasync linked with IO_LINK) or plain
    /// (one write(2) per write group). Other engines ignore it.
    #[arg(long, default_value = "mapped", value_parser = ["mapped", "mapped_zero_filled", "io_uring", "plain"])]
    pub wal_writer: String,

    /// Most parallel parts of one compaction (RocksDB max_subcompactions;
    /// varve's default is 2).
    #[arg(long, default_value_t = 2)]
    pub subcompactions: usize,

    /// L0 tables that start an L0 compaction (db_bench's name; not given:
    /// each engine's default, 4 for varve and RocksDB). varve:
    /// `Options::l0_compaction_trigger`; rocksdb:
    /// `level0_file_num_compaction_trigger`; fjall has no such setting (an
    /// error).
    #[arg(long)]
    pub level0_file_num_compaction_trigger: Option<usize>,

    /// Block cache size in bytes (db_bench default: 8 MiB).
    #[arg(long, default_value_t = 8 << 20)]
    pub cache_size: u64,

    /// Bytes to buffer in a memtable before it is flushed.
    #[arg(long, default_value_t = 64 << 20)]
    pub write_buffer_size: usize,

    /// Bloom filter bits per key; negative means no filter (db_bench's default).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub bloom_bits: i32,

    /// Block compression: none or lz4.
    #[arg(long, default_value = "none", value_parser = ["none", "lz4"])]
    pub compression_type: String,

    /// Sync every write (fdatasync of the log before the write returns).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub sync: bool,

    /// Write without the write-ahead log.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub disable_wal: bool,

    /// How many times to call Next() after each Seek() in seekrandom.
    #[arg(long, default_value_t = 0)]
    pub seek_nexts: usize,

    /// Seconds the random workloads run for; 0: --num/--reads/--writes decide.
    #[arg(long, default_value_t = 0)]
    pub duration: u64,

    /// Seed base for the per-thread random generators; 0: from the clock.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Internal: run one phase of `contest` in this process (write, verify,
    /// read or range) on the database at --db; the `contest` run starts one
    /// process per phase with it.
    #[arg(long, hide = true)]
    pub contest_phase: Option<String>,

    /// The phases `contest` runs, a comma list in contest order out of
    /// write, verify, read and range (a run without write needs an existing
    /// contest database at --db with the same --num).
    #[arg(long, default_value = "write,verify,read,range")]
    pub contest_phases: String,

    /// `contest`: each phase's process prints the engine's statistics
    /// (stalls, flushes, memory, open time) to stderr when its work is
    /// done (the write phase's before its SIGKILL).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub contest_stats: bool,

    /// The command line as parsed (normalized, without the program name),
    /// for the `contest` run to start its phase processes with.
    #[arg(skip)]
    #[serde(skip)]
    pub argv: Vec<String>,

    /// Print latency percentiles of every workload.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub histogram: bool,

    /// Asynchronous IO for scans and MultiGet (RocksDB ReadOptions::async_io).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub async_io: bool,

    /// Queue depth for asynchronous IO (varve: reads in flight per multi_get).
    #[arg(long, default_value_t = 64)]
    pub async_queue_depth: usize,

    /// Use the batched MultiGet API in multireadrandom.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub multiread_batched: bool,

    /// Engine to measure: varve, rocksdb (feature `rocksdb`), fjall (feature
    /// `fjall`), redb (feature `redb`), lmdb (feature `lmdb`, through heed),
    /// or memory (a locked BTreeMap: the harness's own cost).
    #[arg(long, default_value = "varve")]
    pub engine: String,

    /// Threads for `count` through the engine's parallel-scan API (varve's
    /// par_count); engines without one count with a single iterator.
    #[arg(long, default_value_t = 1)]
    pub scan_threads: usize,

    /// Largest read-ahead of an iterator in bytes (db_bench's flag); 0 turns
    /// read-ahead off. Not given: the engine's default (varve: 2 MiB growing
    /// from 16 KiB; RocksDB: its automatic read-ahead).
    #[arg(long)]
    pub readahead_size: Option<usize>,

    /// varve: background prefetch of iterators that have proven sequential
    /// (`ReadOptions::scan_prefetch` Adaptive, default true); false = Off,
    /// read-ahead chunks are read by the iterator's thread, unless
    /// `--async_io`, which prefetches in `par_count`'s chunk iterators too
    /// (Always). Other engines ignore it.
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub adaptive_prefetch: bool,

    /// varve: position an iterator's sources for a seek concurrently on
    /// fibers with io_uring (`ReadOptions::concurrent_seeks`, default true).
    /// Other engines ignore it.
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_bool)]
    pub concurrent_seeks: bool,

    /// Append one JSON object per workload to this file (newline-delimited).
    #[arg(long)]
    pub json: Option<String>,

    /// lmdb: the memory map's size in bytes (`mdb_env_set_mapsize`), which
    /// is also the largest the database can grow. Not given: 4 x --num x
    /// (--key_size + --value_size), at least 4 GiB (address space only; the
    /// file grows as pages are used).
    #[arg(long)]
    pub lmdb_map_size: Option<u64>,

    /// db_bench's LSM tuning flags and `--tuned` (see `tuning.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub lsm: LsmFlags,

    /// YCSB workloads (ycsb_a..ycsb_f): operations in total over all
    /// threads (YCSB's operationcount). Negative: --num.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub ycsb_operations: i64,
}

impl Flags {
    /// Parses a full argv (program name first), accepting db_bench spellings.
    pub fn parse_from_args<I, S>(args: I) -> Result<Flags, clap::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let args: Vec<String> = args.into_iter().map(Into::into).collect();
        let (args, unknown) = normalize_args(&args);
        if !unknown.is_empty() {
            // A flag that would change what is measured is never dropped.
            return Err(clap::Error::raw(
                clap::error::ErrorKind::UnknownArgument,
                format!(
                    "{}: not a varve-bench flag (db_bench flags it does not map are \
                     refused, never dropped; see --help)\n",
                    unknown.join(" ")
                ),
            ));
        }
        let mut flags = Flags::try_parse_from(&args)?;
        flags.argv = args.into_iter().skip(1).collect();
        Ok(flags)
    }

    /// Reads per thread (`--reads`, or `--num` when negative).
    pub fn reads(&self) -> u64 {
        if self.reads < 0 {
            self.num.max(0) as u64
        } else {
            self.reads as u64
        }
    }

    /// Writes per thread (`--writes`, or `--num` when negative).
    pub fn writes(&self) -> u64 {
        if self.writes < 0 {
            self.num.max(0) as u64
        } else {
            self.writes as u64
        }
    }

    /// The key space, `--num`.
    pub fn num(&self) -> u64 {
        self.num.max(0) as u64
    }

    /// Whether blob garbage collection is on (`--enable_blob_garbage_collection`,
    /// false when not given, as in db_bench).
    pub fn blob_gc(&self) -> bool {
        self.enable_blob_garbage_collection.unwrap_or(false)
    }

    /// `--blob_garbage_collection_age_cutoff`, 0.25 when not given.
    pub fn blob_gc_age_cutoff(&self) -> f64 {
        self.blob_garbage_collection_age_cutoff
            .unwrap_or(DEFAULT_BLOB_GC_AGE_CUTOFF)
    }

    /// `--blob_garbage_collection_force_threshold`, RocksDB's 1.0 when not
    /// given (varve and fjall use theirs).
    pub fn blob_gc_force_threshold(&self) -> f64 {
        self.blob_garbage_collection_force_threshold
            .unwrap_or(DEFAULT_BLOB_GC_FORCE_THRESHOLD)
    }

    /// The workload names in order.
    pub fn benchmark_list(&self) -> Vec<String> {
        self.benchmarks
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// RocksDB's (and db_bench's) `blob_garbage_collection_age_cutoff`.
pub const DEFAULT_BLOB_GC_AGE_CUTOFF: f64 = 0.25;

/// RocksDB's (and db_bench's) `blob_garbage_collection_force_threshold`.
pub const DEFAULT_BLOB_GC_FORCE_THRESHOLD: f64 = 1.0;

/// Rewrites gflags spellings to clap's and drops unknown long flags.
///
/// `-name=value` and `-name` become `--name=value` and `--name`; single-letter
/// short flags (`-h`, `-V`) are left alone. `--noname` (gflags' negation of a
/// boolean) becomes `--name=false`. Returns the rewritten argv and the flags it
/// dropped because this tool does not know them.
pub fn normalize_args(args: &[String]) -> (Vec<String>, Vec<String>) {
    let cmd = Flags::command();
    let known: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .chain(["help".to_string(), "version".to_string()])
        .collect();
    let mut out = Vec::with_capacity(args.len());
    let mut dropped = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        if i == 0 {
            out.push(arg.clone());
            continue;
        }
        let body = if let Some(rest) = arg.strip_prefix("--") {
            rest
        } else if let Some(rest) = arg.strip_prefix('-') {
            if rest.len() <= 1 || rest.starts_with(|c: char| c.is_ascii_digit()) {
                // `-h`, `-V`, or a negative number value.
                out.push(arg.clone());
                continue;
            }
            rest
        } else {
            out.push(arg.clone());
            continue;
        };
        if body.is_empty() {
            out.push(arg.clone());
            continue;
        }
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        if known.iter().any(|k| k == name) {
            out.push(match value {
                Some(v) => format!("--{name}={v}"),
                None => format!("--{name}"),
            });
        } else if let (Some(base), None) = (name.strip_prefix("no"), value)
            && known.iter().any(|k| k == base)
        {
            out.push(format!("--{base}=false"));
        } else {
            dropped.push(arg.clone());
        }
    }
    (out, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Flags {
        let mut v = vec!["varve-bench"];
        v.extend_from_slice(args);
        Flags::parse_from_args(v).expect("parses")
    }

    #[test]
    fn defaults_match_db_bench() {
        let f = parse(&[]);
        assert_eq!(f.num, 1_000_000);
        assert_eq!(f.key_size, 16);
        assert_eq!(f.value_size, 100);
        assert_eq!(f.threads, 1);
        assert_eq!(f.batch_size, 1);
        assert_eq!(f.cache_size, 8 << 20);
        assert_eq!(f.bloom_bits, -1);
        assert_eq!(f.reads(), 1_000_000);
        assert_eq!(f.writes(), 1_000_000);
        assert_eq!(f.engine, "varve");
        assert!(!f.sync && !f.histogram && !f.use_direct_reads);
        assert_eq!(f.readahead_size, None);
    }

    #[test]
    fn adaptive_prefetch_flag() {
        assert!(parse(&[]).adaptive_prefetch);
        assert!(!parse(&["--adaptive_prefetch=false"]).adaptive_prefetch);
        assert!(parse(&[]).concurrent_seeks);
        assert!(!parse(&["--concurrent_seeks=false"]).concurrent_seeks);
    }

    #[test]
    fn blob_flags() {
        let f = parse(&[]);
        assert!(!f.enable_blob_files);
        assert_eq!((f.min_blob_size, f.blob_file_size), (0, 256 << 20));
        assert!(!f.blob_gc(), "off unless asked, as in db_bench");
        assert_eq!(f.blob_gc_age_cutoff(), 0.25);
        assert_eq!(f.blob_gc_force_threshold(), 1.0);
        let f = parse(&[
            "-enable_blob_files",
            "-min_blob_size=4096",
            "-blob_file_size=1048576",
            "-noenable_blob_garbage_collection",
            "-blob_garbage_collection_age_cutoff=0.5",
            "-blob_garbage_collection_force_threshold=0.75",
            "-blob_garbage_collection_ratio=0.3",
        ]);
        assert!(f.enable_blob_files);
        assert_eq!((f.min_blob_size, f.blob_file_size), (4096, 1 << 20));
        assert_eq!(f.enable_blob_garbage_collection, Some(false));
        assert!(!f.blob_gc());
        assert_eq!(f.blob_gc_age_cutoff(), 0.5);
        assert_eq!(f.blob_gc_force_threshold(), 0.75);
        assert_eq!(f.blob_garbage_collection_ratio, Some(0.3));
        for bad in [
            "--blob_garbage_collection_age_cutoff=1.5",
            "--blob_garbage_collection_force_threshold=-0.1",
            "--blob_garbage_collection_age_cutoff=x",
        ] {
            assert!(
                Flags::parse_from_args(["varve-bench", bad]).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn readahead_size_flag() {
        assert_eq!(parse(&["--readahead_size=0"]).readahead_size, Some(0));
        assert_eq!(
            parse(&["-readahead_size=2097152"]).readahead_size,
            Some(2 << 20)
        );
    }

    #[test]
    fn both_spellings() {
        let a = parse(&["-num=10", "-benchmarks=fillseq,readrandom", "-reads=5"]);
        let b = parse(&["--num=10", "--benchmarks=fillseq,readrandom", "--reads=5"]);
        assert_eq!(a.num, 10);
        assert_eq!(b.num, 10);
        assert_eq!(a.reads(), 5);
        assert_eq!(a.benchmark_list(), vec!["fillseq", "readrandom"]);
        assert_eq!(a.benchmark_list(), b.benchmark_list());
        let c = parse(&["--num", "12", "--engine", "varve"]);
        assert_eq!(c.num, 12);
        assert_eq!(
            parse(&["-num=1", "--num=3"]).num,
            3,
            "last wins, as in gflags"
        );
    }

    #[test]
    fn bool_forms() {
        for (arg, want) in [
            ("-histogram", true),
            ("--histogram", true),
            ("-histogram=1", true),
            ("--histogram=0", false),
            ("-histogram=true", true),
            ("--histogram=false", false),
            ("-nohistogram", false),
        ] {
            assert_eq!(parse(&[arg]).histogram, want, "{arg}");
        }
        let f = parse(&["-sync=1", "-disable_wal=true", "-use_direct_reads=1"]);
        assert!(f.sync && f.disable_wal && f.use_direct_reads);
        assert_eq!(f.level0_file_num_compaction_trigger, None, "engine default");
        let f = parse(&["-level0_file_num_compaction_trigger=10"]);
        assert_eq!(f.level0_file_num_compaction_trigger, Some(10));
        let mut v = vec!["varve-bench".to_string(), "--sync=maybe".to_string()];
        assert!(Flags::parse_from_args(v.clone()).is_err());
        v[1] = "--compression_type=zstd".into();
        assert!(Flags::parse_from_args(v).is_err());
    }

    #[test]
    fn negative_numbers_and_unknown_flags() {
        let f = parse(&["-reads=-1", "-num=7", "-max_background_jobs=4"]);
        assert_eq!(f.reads(), 7);
        assert_eq!(f.lsm.max_background_jobs, Some(4), "mapped, not dropped");
        let (_, dropped) = normalize_args(&["x".into(), "-statistics".into(), "-num=3".into()]);
        assert_eq!(dropped, vec!["-statistics".to_string()]);
        let err = Flags::parse_from_args(["varve-bench", "--statistics", "--num=3"])
            .expect_err("an unknown flag is refused");
        assert!(err.to_string().contains("--statistics"), "{err}");
    }

    #[test]
    fn every_tuning_flag_parses_with_db_bench_names() {
        let f = parse(&[
            "-max_background_jobs=4",
            "-max_write_buffer_number=6",
            "-min_write_buffer_number_to_merge=2",
            "-bytes_per_sync=1048576",
            "-wal_bytes_per_sync=1048576",
            "-enable_pipelined_write=false",
            "-allow_concurrent_memtable_write=true",
            "-unordered_write=false",
            "-level0_slowdown_writes_trigger=30",
            "-level0_stop_writes_trigger=40",
            "-max_bytes_for_level_base=536870912",
            "-max_bytes_for_level_multiplier=8",
            "-level_compaction_dynamic_level_bytes=true",
            "-target_file_size_base=134217728",
            "-compaction_readahead_size=4194304",
            "-block_size=16384",
            "-cache_index_and_filter_blocks=true",
            "-pin_l0_filter_and_index_blocks_in_cache=true",
            "-use_blob_cache=true",
            "-blob_cache_size=67108864",
            "-rate_limiter_bytes_per_sec=104857600",
            "-optimize_filters_for_hits=true",
            "-tuned",
        ]);
        assert_eq!(f.lsm.given().len(), 22, "{:?}", f.lsm.given());
        assert!(f.lsm.tuned);
        assert_eq!(f.lsm.max_bytes_for_level_base, Some(512 << 20));
        assert_eq!(f.lsm.enable_pipelined_write, Some(false));
        let json = serde_json::to_value(&f).expect("serialises");
        assert_eq!(
            json["max_write_buffer_number"], 6,
            "flattened into the record"
        );
    }

    #[test]
    fn engine_flags_after_shared_ones_win() {
        // The scripts put engine-specific flags after the shared ones.
        let f = parse(&[
            "--cache_size=1000",
            "--max_background_jobs=2",
            "--cache_size=2000",
            "-max_background_jobs=8",
        ]);
        assert_eq!(f.cache_size, 2000);
        assert_eq!(f.lsm.max_background_jobs, Some(8));
    }
}
