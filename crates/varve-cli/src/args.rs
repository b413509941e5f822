//! The command line: global options and one subcommand per operation, each
//! with an example in its `--help`. Pure data (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Exit codes, shown at the end of `varve --help`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  corruption: `check` found a damaged file, or a command met one
  2  usage error, or the operation failed (missing or locked database, IO error, ...)
  3  `get`: the key is not in the database

Keys and values: `0x` + hex digits is raw bytes (0x00ff); anything else is
UTF-8 text with escapes \\n \\t \\r \\0 \\\\ \\xNN. Output prints printable ASCII
as is and escapes the rest the same way (or hex with --hex).

Commands that open the database (get, put, delete, scan, stats, anchors,
compact, checkpoint) take its LOCK and, like any open, replay its WALs into
tables. A database another process has open cannot be opened: stop that
process, or have it call Db::checkpoint and point varve at the copy.
check, dump-wal, dump-sst and dump-manifest read files without opening.";

/// The exit-code line every subcommand's help ends with.
macro_rules! exits {
    () => {
        "\n\nExit codes: 0 success, 1 corruption found, 2 error (bad arguments, missing or locked database, IO), 3 key not found (get)."
    };
}

/// Inspect and administer a varve database.
#[derive(Debug, Parser)]
#[command(
    name = "varve",
    version,
    after_help = concat!(
        "Example:\n  varve --db /data/db put user:1 alice\n  varve --db /data/db scan --from user: --limit 10\n\n",
        "Exit codes: 0 success, 1 corruption, 2 error, 3 key not found (see docs/cli.md)."
    ),
    after_long_help = EXIT_CODES
)]
pub struct Cli {
    /// The database directory.
    #[arg(long, short = 'd', global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Print keys and values as 0x-prefixed hex.
    #[arg(long, global = true)]
    pub hex: bool,
    /// The keyspace get, put, delete, delete-range, scan, anchors and
    /// compact work on (default: the default keyspace). `put` creates it
    /// if it does not exist; the others fail.
    #[arg(long, short = 'k', global = true, value_name = "NAME")]
    pub keyspace: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the value of a key (exit code 3 if it is absent).
    #[command(
        after_help = concat!("Example:\n  varve --db /data/db get user:1\n  varve --db /data/db get 0x00ff --hex", exits!())
    )]
    Get {
        /// The key.
        key: String,
    },
    /// Set a key to a value.
    #[command(
        after_help = concat!("Example:\n  varve --db /data/db put user:1 alice\n  varve --db /data/db put 'line\\n' 0xdeadbeef", exits!())
    )]
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Wait for the write to reach the disk (fdatasync).
        #[arg(long)]
        sync: bool,
    },
    /// Delete a key (not an error if it is absent).
    #[command(after_help = concat!("Example:\n  varve --db /data/db delete user:1", exits!()))]
    Delete {
        /// The key.
        key: String,
    },
    /// Delete every key in [FROM, TO) with one range tombstone.
    #[command(
        name = "delete-range",
        after_help = concat!("Example:\n  varve --db /data/db delete-range user: user;", exits!())
    )]
    DeleteRange {
        /// The first key deleted.
        from: String,
        /// The first key kept after the range (exclusive).
        to: String,
    },
    /// List keys (and values) in order.
    #[command(
        after_help = concat!("Example:\n  varve --db /data/db scan --from user: --to user; --limit 10\n  varve --db /data/db scan --reverse --keys-only\n  varve --db /data/db scan --count", exits!())
    )]
    Scan(ScanArgs),
    /// Print the levels table, sizes, amplification, cache and stall counters.
    #[command(
        after_help = concat!("Example:\n  varve --db /data/db stats\n  varve --db /data/db stats --json", exits!())
    )]
    Stats,
    /// Print the parts that N-1 anchor keys cut the key space (or a range)
    /// into, of about equal bytes (Db::split_range): one `[start .. end)`
    /// per line. Fewer parts when the range holds too little data.
    #[command(after_help = concat!("Example:\n  varve --db /data/db anchors --parts 8\n  varve --db /data/db anchors --parts 4 --from user: --to user; --json", exits!()))]
    Anchors {
        /// Number of parts.
        #[arg(long, default_value_t = 4)]
        parts: usize,
        /// Start of the range (inclusive).
        #[arg(long)]
        from: Option<String>,
        /// End of the range (exclusive).
        #[arg(long)]
        to: Option<String>,
    },
    /// List the keyspaces, "default" first.
    #[command(after_help = concat!("Example:\n  varve --db /data/db keyspaces\n  varve --db /data/db keyspaces --json", exits!()))]
    Keyspaces,
    /// Drop a keyspace and all its data.
    #[command(
        name = "drop-keyspace",
        after_help = concat!("Example:\n  varve --db /data/db drop-keyspace sessions", exits!())
    )]
    DropKeyspace {
        /// The keyspace's name.
        name: String,
    },
    /// Verify every checksum of every file (CURRENT, manifest, tables,
    /// WALs) without opening the database; exit code 1 if anything is damaged.
    #[command(
        after_help = concat!("Example:\n  varve --db /data/db check\n  varve --db /data/db check --json", exits!())
    )]
    Check,
    /// Decode a WAL file (nnnnnn.log) into its write batches.
    #[command(
        name = "dump-wal",
        after_help = concat!("Example:\n  varve dump-wal /data/db/000012.log\n  varve dump-wal /data/db/000012.log --json", exits!())
    )]
    DumpWal {
        /// The WAL file.
        file: PathBuf,
    },
    /// Decode a table file (nnnnnn.sst): footer, properties, entries.
    #[command(
        name = "dump-sst",
        after_help = concat!("Example:\n  varve dump-sst /data/db/000007.sst --limit 20", exits!())
    )]
    DumpSst {
        /// The table file.
        file: PathBuf,
        /// Print at most this many entries (all are still verified).
        #[arg(long)]
        limit: Option<usize>,
        /// Print only the footer and properties.
        #[arg(long)]
        no_entries: bool,
    },
    /// Decode and verify a blob file (nnnnnn.blob): header, chunks, the
    /// key, offset, length and checksum of every value, footer. Values are
    /// checked, not printed.
    #[command(
        name = "dump-blob",
        after_help = concat!("Example:\n  varve dump-blob /data/db/000031.blob --limit 20", exits!())
    )]
    DumpBlob {
        /// The blob file.
        file: PathBuf,
        /// Print at most this many values (all are still verified).
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Decode a manifest: every version edit. Without FILE, the live
    /// manifest of --db (named by CURRENT).
    #[command(
        name = "dump-manifest",
        after_help = concat!("Example:\n  varve --db /data/db dump-manifest\n  varve dump-manifest /data/db/MANIFEST-000005 --json", exits!())
    )]
    DumpManifest {
        /// The manifest file.
        file: Option<PathBuf>,
    },
    /// Compact a key range (default: everything) down the levels.
    #[command(
        after_help = concat!("Example:\n  varve --db /data/db compact\n  varve --db /data/db compact --from a --to m", exits!())
    )]
    Compact {
        /// First key of the range (inclusive).
        #[arg(long)]
        from: Option<String>,
        /// Last key of the range (inclusive).
        #[arg(long)]
        to: Option<String>,
    },
    /// Write a consistent, openable copy of the database into DIR (hard
    /// links for tables). DIR must not exist or be empty.
    #[command(after_help = concat!("Example:\n  varve --db /data/db checkpoint /backup/db-2026-01-01", exits!()))]
    Checkpoint {
        /// The new directory.
        dir: PathBuf,
    },
    /// Rebuild the manifest from the tables and WALs present; damaged files
    /// go to lost/. Run on a closed database.
    #[command(
        after_help = concat!("Example:\n  varve --db /data/db repair\n  varve --db /data/db get some-key", exits!())
    )]
    Repair,
}

/// Options of `scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Start at this key (inclusive).
    #[arg(long)]
    pub from: Option<String>,
    /// Stop before this key (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    /// Print at most this many entries.
    #[arg(long)]
    pub limit: Option<u64>,
    /// Go from the last key to the first.
    #[arg(long)]
    pub reverse: bool,
    /// Print keys only.
    #[arg(long)]
    pub keys_only: bool,
    /// Print only the number of entries.
    #[arg(long)]
    pub count: bool,
}
