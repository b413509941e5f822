//! The storage engines under test, behind one small trait.
//!
//! Every workload talks to an [`Engine`] and its per-thread [`Cursor`]s, so
//! the same driver, key generator, value generator and timing serve varve,
//! RocksDB, fjall, redb and LMDB alike. An engine is opened once per database lifetime
//! and shared by all workload threads (`Send + Sync`); a cursor belongs to one
//! thread. [`open`] maps the flags onto each engine's options and returns the
//! list of flags the engine cannot honor, which the caller prints and records.

use std::path::Path;

use anyhow::Result;

use crate::flags::Flags;

#[cfg(any(feature = "redb", feature = "lmdb"))]
pub mod btree_flags;
#[cfg(all(test, any(feature = "redb", feature = "lmdb")))]
mod conformance;
#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "lmdb")]
pub mod lmdb;
pub mod memory;
#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
pub mod varve;

/// Per-write options.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOpts {
    /// Make the write durable before returning.
    pub sync: bool,
    /// Skip the write-ahead log.
    pub disable_wal: bool,
}

/// A positioned iterator over one engine, owned by one thread.
pub trait Cursor {
    /// Positions at the first key.
    fn seek_to_first(&mut self) -> Result<()>;
    /// Positions at the last key.
    fn seek_to_last(&mut self) -> Result<()>;
    /// Positions at the first key `>= key`.
    fn seek(&mut self, key: &[u8]) -> Result<()>;
    /// Whether the cursor is at an entry.
    fn valid(&self) -> bool;
    /// The current key (only when valid).
    fn key(&self) -> &[u8];
    /// The current value (only when valid).
    fn value(&self) -> &[u8];
    /// Moves to the next key.
    fn next(&mut self) -> Result<()>;
    /// Moves to the previous key.
    fn prev(&mut self) -> Result<()>;
}

/// A storage engine under test.
pub trait Engine: Send + Sync {
    /// Writes the pairs atomically (one WriteBatch; a single put when one pair).
    fn write(&self, batch: &[(&[u8], &[u8])], opts: WriteOpts) -> Result<()>;
    /// Reads `key`; returns the value's length when found.
    fn get(&self, key: &[u8]) -> Result<Option<usize>>;
    /// Reads `key` and hands its value to `f` (no copy where the engine
    /// pins it); false when not found.
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool>;
    /// Reads many keys; returns each value's length when found.
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        keys.iter().map(|k| self.get(k)).collect()
    }
    /// Whether `multi_get` is the engine's own batched API (not a loop of gets).
    fn native_multi_get(&self) -> bool {
        false
    }
    /// Counts every key on `threads` threads through the engine's own
    /// parallel-scan API; `None` when the engine has none.
    fn par_count(&self, threads: usize) -> Result<Option<u64>> {
        let _ = threads;
        Ok(None)
    }
    /// Deletes every key in `[start, end)` with the engine's range delete;
    /// an error when it has none.
    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let _ = (start, end);
        anyhow::bail!("this engine has no range delete")
    }
    /// A new cursor over the current state.
    fn cursor(&self) -> Result<Box<dyn Cursor + '_>>;
    /// Flushes memtables to disk; returns a note when it does something else.
    fn flush(&self) -> Result<Option<String>>;
    /// Compacts the whole key range; returns a note when it does something else.
    fn compact(&self) -> Result<Option<String>>;
    /// Waits for background compaction; returns a note when it cannot.
    fn wait_for_compaction(&self) -> Result<Option<String>>;
    /// The engine's statistics as text.
    fn stats(&self) -> String;
    /// Closes the database, making everything written durable.
    fn close(self: Box<Self>) -> Result<()>;
    /// The engine's name and version, for the header.
    fn version(&self) -> String;
}

/// An opened engine plus the flags it could not honor.
pub struct Opened {
    /// The engine.
    pub engine: Box<dyn Engine>,
    /// One line per ignored flag, e.g. `cache_size: varve has no block cache yet`.
    pub ignored: Vec<String>,
    /// Every option the engine runs with, one `name=value` line each (or a
    /// line naming the file that lists them), printed beside the figures and
    /// kept in the JSON records.
    pub options: Vec<String>,
}

/// Prefix of an [`Opened::options`] line read back from the engine's own
/// options file (RocksDB's `OPTIONS-*`): kept in the JSON records, counted
/// in the header.
pub const FROM_FILE: &str = "file: ";

/// The engines this binary was built with.
pub fn available() -> Vec<&'static str> {
    let mut v = vec!["varve", "memory"];
    if cfg!(feature = "rocksdb") {
        v.push("rocksdb");
    }
    if cfg!(feature = "fjall") {
        v.push("fjall");
    }
    if cfg!(feature = "redb") {
        v.push("redb");
    }
    if cfg!(feature = "lmdb") {
        v.push("lmdb");
    }
    v
}

/// Opens (creating if needed) the engine named by `--engine` at `path`.
pub fn open(flags: &Flags, path: &Path) -> Result<Opened> {
    match flags.engine.as_str() {
        "varve" => varve::open(flags, path),
        "memory" => memory::open(flags, path),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => rocksdb::open(flags, path),
        #[cfg(feature = "fjall")]
        "fjall" => fjall::open(flags, path),
        #[cfg(feature = "redb")]
        "redb" => redb::open(flags, path),
        #[cfg(feature = "lmdb")]
        "lmdb" => lmdb::open(flags, path),
        other => anyhow::bail!(
            "engine `{other}` is not built into this binary (available: {}; \
             rocksdb, fjall, redb and lmdb need `cargo build --features \
             rocksdb,fjall,redb,lmdb`)",
            available().join(", ")
        ),
    }
}

/// Fails when a setting only varve has was given for another engine:
/// `--pinned_blob_tables_size`, `--blob_write_lanes`,
/// `--blob_lanes_by_key`, `--shared_scan_bytes`, `--memory_budget`.
pub fn reject_varve_only_flags(flags: &Flags, engine: &str) -> Result<()> {
    let given = [
        (
            "pinned_blob_tables_size",
            flags.pinned_blob_tables_size.is_some(),
            "reads the blocks of blob pointer tables through its cache (--cache_size)",
        ),
        (
            "blob_write_lanes",
            flags.blob_write_lanes.is_some(),
            "has no write lanes (it writes blob files per flush or compaction)",
        ),
        (
            "blob_lanes_by_key",
            flags.blob_lanes_by_key.is_some(),
            "has no write lanes",
        ),
        (
            "shared_scan_bytes",
            flags.shared_scan_bytes.is_some(),
            "has no shared scan chunks",
        ),
        (
            "memory_budget",
            flags.memory_budget.is_some(),
            "has no single memory budget (size its parts with --cache_size and --write_buffer_size)",
        ),
    ];
    for (name, set, why) in given {
        anyhow::ensure!(!set, "--{name}: varve's own setting; {engine} {why}");
    }
    Ok(())
}

/// Removes the database at `path` (for fresh-DB workloads).
pub fn destroy(flags: &Flags, path: &Path) -> Result<()> {
    let _ = flags;
    if path.exists() {
        std::fs::remove_dir_all(path)?;
    }
    Ok(())
}

/// The keyspace (0..n) key `key` goes to with `--keyspaces=n`: FNV-1a of
/// its bytes, so every engine spreads the same keys the same way.
pub fn keyspace_of(key: &[u8], n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % n as u64) as usize
}

/// A cursor over several keyspaces, one after another (`--keyspaces`): the
/// whole of keyspace 0 in key order, then keyspace 1, and so on. A seek
/// goes to the key's keyspace ([`keyspace_of`]) and runs on into the next
/// ones from there.
pub struct ChainCursor<'a> {
    parts: Vec<Box<dyn Cursor + 'a>>,
    at: usize,
}

impl<'a> ChainCursor<'a> {
    /// A cursor over `parts`, keyspace 0 first.
    pub fn new(parts: Vec<Box<dyn Cursor + 'a>>) -> Self {
        ChainCursor { parts, at: 0 }
    }

    /// From keyspace `at` on, the first one with an entry.
    fn forward_from(&mut self, mut at: usize) -> Result<()> {
        while at < self.parts.len() {
            self.parts[at].seek_to_first()?;
            if self.parts[at].valid() {
                break;
            }
            at += 1;
        }
        self.at = at.min(self.parts.len() - 1);
        Ok(())
    }

    /// From keyspace `at` down, the last one with an entry.
    fn backward_from(&mut self, at: usize) -> Result<()> {
        let mut i = at;
        loop {
            self.parts[i].seek_to_last()?;
            if self.parts[i].valid() || i == 0 {
                break;
            }
            i -= 1;
        }
        self.at = i;
        Ok(())
    }
}

impl Cursor for ChainCursor<'_> {
    fn seek_to_first(&mut self) -> Result<()> {
        self.forward_from(0)
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.backward_from(self.parts.len() - 1)
    }
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        let at = keyspace_of(key, self.parts.len());
        self.at = at;
        self.parts[at].seek(key)?;
        if !self.parts[at].valid() {
            self.forward_from(at + 1)?;
        }
        Ok(())
    }
    fn valid(&self) -> bool {
        self.parts[self.at].valid()
    }
    fn key(&self) -> &[u8] {
        self.parts[self.at].key()
    }
    fn value(&self) -> &[u8] {
        self.parts[self.at].value()
    }
    fn next(&mut self) -> Result<()> {
        self.parts[self.at].next()?;
        if !self.parts[self.at].valid() && self.at + 1 < self.parts.len() {
            self.forward_from(self.at + 1)?;
        }
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        self.parts[self.at].prev()?;
        if !self.parts[self.at].valid() && self.at > 0 {
            self.backward_from(self.at - 1)?;
        }
        Ok(())
    }
}
