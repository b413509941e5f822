//! Fuzzing entry points: one function per decoder target, each taking
//! arbitrary bytes and driving the real decoder the way the engine does
//! (see `docs/fuzzing.md`). Compiled only for tests and with the `fuzzing`
//! feature; not part of the public API of a normal build.
//!
//! Contract of every target function: it never panics, hangs or allocates
//! without bound on any input; a decoder error is the expected outcome for
//! junk and is swallowed. A panic is a bug — either in a decoder (it
//! panicked on bad input) or an `assert!` here that checks an invariant the
//! decoder's module documents (for example: a replayed WAL delivers records
//! at increasing offsets below `valid_len`).
//!
//! Inputs of the file-level targets (`wal_v1`, `wal_v2`, `sst_table`,
//! `manifest`) start with one flags byte, the rest being the file:
//! [`FLAG_FIX_CHECKSUMS`] rewrites the checksums of every record or block
//! the file's framing reaches before reading it, so that mutations get past
//! the CRC checks and reach the decoding behind them (as a checksum
//! collision or a malicious file would). The WAL targets prefix a valid
//! file header of their version unless the file already starts with one or
//! [`FLAG_RAW`] is set. Thread-safety: the functions are independent and
//! use only their own in-memory files.
//!
//! [`seeds`] builds the starting corpus from the real writers; the unit
//! tests at the bottom replay the committed corpora (`fuzz/corpus`,
//! `fuzz/regressions`) on stable.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::internal_iter::InternalIterator;
use crate::io::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use crate::keys::{MAX_SEQUENCE, ValueKind, make_internal_key, user_key};
use crate::memtable::MemTable;
use crate::sst::BlockCache;
use crate::sst::{
    Block, BlockBuilder, BlockHandle, BloomFilter, Compression, FOOTER_LEN, FilterBuilder,
    PinBudget, Readahead, Table, TableBuilder, TableBuilderOptions, TableIterOptions,
    TableReadOptions,
};
use crate::util::checksum::{crc32c, crc32c_extend, mask};
use crate::version::{FileMetaData, NUM_LEVELS, Version, VersionEdit, VersionSet};
use crate::wal::{self, LogWriter, TailStatus, format, record};

/// Flags-byte bit: recompute the checksums the framing reaches.
pub const FLAG_FIX_CHECKSUMS: u8 = 1;
/// Flags-byte bit (WAL and manifest targets): do not prefix a file header.
pub const FLAG_RAW: u8 = 2;
/// Flags-byte bit (`sst_table`): do not verify data-block checksums.
pub const FLAG_NO_VERIFY: u8 = 4;
/// Flags-byte bit (`sst_table`): read data blocks through a block cache.
pub const FLAG_CACHE: u8 = 8;
/// Flags-byte bit (`sst_table`): iterate with read-ahead.
pub const FLAG_READAHEAD: u8 = 16;
/// Flags-byte bit (`sst_table`): pin every data block at open.
pub const FLAG_PIN: u8 = 32;

/// Log number of the fuzzed WALs and manifests.
pub const LOG_NUMBER: u64 = 7;

/// Most iterator steps any target takes in one direction (bounds the cost
/// of a backward walk, which is quadratic in a block without restarts).
const MAX_STEPS: usize = 2048;

/// Keys each SST target keeps for seeks and lookups.
const SAMPLE_KEYS: usize = 24;

/// The fuzz targets, by the name of their corpus directory.
pub const TARGETS: &[&str] = &[
    "wal_v1",
    "wal_v2",
    "write_batch",
    "sst_table",
    "sst_block",
    "bloom_filter",
    "manifest_edit",
    "manifest",
];

/// Runs `data` through the target `name`; false for an unknown name.
pub fn run_target(name: &str, data: &[u8]) -> bool {
    match name {
        "wal_v1" => wal_v1(data),
        "wal_v2" => wal_v2(data),
        "write_batch" => write_batch(data),
        "sst_table" => sst_table(data),
        "sst_block" => sst_block(data),
        "bloom_filter" => bloom_filter(data),
        "manifest_edit" => manifest_edit(data),
        "manifest" => manifest(data),
        _ => return false,
    }
    true
}

fn split_flags(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((&f, rest)) => (f, rest),
        None => (0, &[]),
    }
}

mod manifest;
mod memfs;
mod seeds;
mod sst;
#[cfg(test)]
mod tests;
mod wal_targets;

pub use manifest::{manifest, manifest_edit};
pub use memfs::MemFs;
pub use seeds::seeds;
pub use sst::{bloom_filter, sst_block, sst_table};
pub use wal_targets::{wal_v1, wal_v2, write_batch};
#[allow(unused_imports, clippy::wildcard_imports)]
use {manifest::*, memfs::*, seeds::*, sst::*, wal_targets::*};
