//! The flags a single-writer B-tree engine (redb, LMDB) cannot honour.
//!
//! Owns one decision shared by `redb.rs` and `lmdb.rs`: which LSM-tree
//! flags are refused with an error (they would change what is measured:
//! keyspaces, blob files, an L0 trigger, varve's own settings) and which are
//! listed as ignored (they tune parts a B-tree does not have: memtable,
//! bloom filters, block compression, a WAL, direct IO, async IO). Nothing is
//! dropped silently: every flag given is either mapped by the engine, refused
//! here, or returned as one `ignored` line. Pure function of the flags.

use anyhow::Result;

use crate::flags::Flags;

/// Fails on flags `engine` cannot honour at all; returns one line per flag
/// it ignores. The engine's own module adds the lines only it knows
/// (its cache, its direct-IO story).
pub fn check(flags: &Flags, engine: &str) -> Result<Vec<String>> {
    super::reject_varve_only_flags(flags, engine)?;
    // A B-tree has none of RocksDB's LSM knobs: each given one is refused.
    flags.lsm.refuse_unmapped(engine, &[])?;
    anyhow::ensure!(
        flags.keyspaces == 1,
        "--keyspaces={}: not supported by {engine} (its tables are not wired into varve-bench)",
        flags.keyspaces
    );
    anyhow::ensure!(
        !flags.enable_blob_files,
        "--enable_blob_files: {engine} has no key-value separation \
         (a value too large for a page goes to overflow pages of the B-tree)"
    );
    anyhow::ensure!(
        flags.level0_file_num_compaction_trigger.is_none(),
        "--level0_file_num_compaction_trigger: {engine} is a B-tree, it has no L0"
    );
    let mut ignored = vec![format!(
        "write_buffer_size: {engine} has no memtable (each write transaction writes its own pages)"
    )];
    if flags.bloom_bits >= 0 {
        ignored.push(format!(
            "bloom_bits={}: {engine} is a B-tree, it has no bloom filters",
            flags.bloom_bits
        ));
    }
    if flags.compression_type != "none" {
        ignored.push(format!(
            "compression_type={}: {engine} does not compress pages",
            flags.compression_type
        ));
    }
    if flags.disable_wal {
        ignored.push(format!(
            "disable_wal: {engine} has no WAL (a commit writes the B-tree pages); \
             without --sync its commits are not fsynced already"
        ));
    }
    if flags.use_direct_io_for_flush_and_compaction {
        ignored.push(format!(
            "use_direct_io_for_flush_and_compaction: {engine} has no direct IO (nor flushes or compactions)"
        ));
    }
    if flags.subcompactions != 2 {
        ignored.push(format!("subcompactions: {engine} has no compactions"));
    }
    if flags.async_io {
        ignored.push(format!(
            "async_io/async_queue_depth: {engine} has no async IO"
        ));
    }
    if let Some(n) = flags.readahead_size {
        ignored.push(format!(
            "readahead_size={n}: {engine} has no iterator read-ahead setting (the OS's read-ahead applies)"
        ));
    }
    if flags.multiread_batched {
        ignored.push(format!("multiread_batched: {engine} has no MultiGet"));
    }
    if flags.wal_writer != "mapped" {
        ignored.push(format!(
            "wal_writer={}: varve's own setting",
            flags.wal_writer
        ));
    }
    ignored.push(format!(
        "multireadrandom: {engine} has no MultiGet; each batch is one read transaction with a get per key"
    ));
    Ok(ignored)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Flags {
        let mut v = vec!["varve-bench"];
        v.extend_from_slice(args);
        Flags::parse_from_args(v).expect("flags parse")
    }

    #[test]
    fn refuses_what_would_change_the_measurement() {
        for bad in [
            "--keyspaces=2",
            "--enable_blob_files=true",
            "--level0_file_num_compaction_trigger=8",
            "--memory_budget=1000000",
        ] {
            assert!(check(&parse(&[bad]), "redb").is_err(), "{bad}");
        }
    }

    #[test]
    fn lists_what_it_ignores() {
        let quiet = check(&parse(&[]), "lmdb").expect("defaults are accepted");
        assert!(quiet.iter().any(|l| l.starts_with("write_buffer_size")));
        assert!(!quiet.iter().any(|l| l.starts_with("bloom_bits")));
        let loud = check(
            &parse(&[
                "--bloom_bits=10",
                "--compression_type=lz4",
                "--disable_wal=true",
                "--async_io=true",
                "--readahead_size=4096",
            ]),
            "lmdb",
        )
        .expect("ignored, not refused");
        for name in [
            "bloom_bits",
            "compression_type",
            "disable_wal",
            "async_io",
            "readahead_size",
        ] {
            assert!(loud.iter().any(|l| l.starts_with(name)), "{name}: {loud:?}");
        }
    }
}
