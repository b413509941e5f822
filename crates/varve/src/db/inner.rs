//! [`DbInner`]: the state one open database shares among its handle, its
//! background threads and its iterators: the directory and lock, the
//! current super-version (memtables + version), the version set, the
//! caches and reader pool, the write path, snapshots, counters and the
//! poison state.
//!
//! Thread-safety: `Send + Sync`; each part has its own lock or atomic (see
//! the fields), and the super-version is swapped under the version set's
//! lock (`install`) so readers always see a version whose files exist.
//! Invariant: once poisoned, every write is refused until `resume` (for a
//! retryable failure) or a reopen.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};

use super::bg::Background;
use super::info_log::InfoLog;
use super::memtables::SuperVersion;
use super::recovery::RecoveryReport;
use super::stats::Counters;
use super::write::{WalLog, WritePath};
use crate::blob::cache::BlobReaders;
use crate::blob::lane_set::BlobLaneSet;
use crate::compaction::picker::LevelTargets;
use crate::error::{Error, Result};
use crate::io::{FileLock, FileSystem};
use crate::options::Options;
use crate::snapshot::SnapshotList;
use crate::sst::{BlockCache, ReaderPool, TableBuilderOptions};
use crate::version::{TableCache, Version, VersionSet};

/// Table-building options derived from the database options.
pub(crate) fn table_options(o: &Options) -> TableBuilderOptions {
    TableBuilderOptions {
        block_size: o.block_size,
        bloom_bits_per_key: o.bloom_bits_per_key,
        compression: o.compression,
        ..TableBuilderOptions::default()
    }
}

/// What a write's slowdown check needs of a super-version, in one word:
/// the most L0 tables of any keyspace (high half) and the most immutable
/// memtables of any keyspace (low half). Unpack with
/// [`unpack_write_pressure`].
pub(crate) fn write_pressure(sv: &SuperVersion) -> u64 {
    pack_write_pressure(sv.max_l0_files(), sv.max_imms())
}

/// The [`write_pressure`] word of `l0` tables and `imms` immutable
/// memtables (each held at `u32::MAX`).
fn pack_write_pressure(l0: usize, imms: usize) -> u64 {
    let l0 = u32::try_from(l0).unwrap_or(u32::MAX);
    let imms = u32::try_from(imms).unwrap_or(u32::MAX);
    (u64::from(l0) << 32) | u64::from(imms)
}

/// `(most L0 tables, most immutable memtables)` from a
/// [`write_pressure`] word.
pub(crate) fn unpack_write_pressure(word: u64) -> (usize, usize) {
    ((word >> 32) as usize, (word & u64::from(u32::MAX)) as usize)
}

/// State shared by the database handle, its background threads and its
/// iterators.
pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    /// How `Options::memory_budget` was cut into parts (`None`: no budget).
    pub(crate) memory_plan: Option<crate::options::memory::MemoryPlan>,
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) lock: Mutex<Option<Box<dyn FileLock>>>,
    /// What readers consult (memtables + table files); replaced whole.
    pub(crate) state: RwLock<Arc<SuperVersion>>,
    /// [`write_pressure`] of the current `state`, stored with every
    /// install: each write checks it for a slowdown with one load instead
    /// of taking the super-version's lock and reference count, which all
    /// writers share.
    pub(crate) write_pressure: AtomicU64,
    /// The manifest and current version; lock before `state`.
    pub(crate) versions: Mutex<VersionSet>,
    /// Versions installed and maybe still held by readers (pins files).
    pub(crate) live_versions: Mutex<Vec<Weak<Version>>>,
    /// Table numbers being written by flushes and compactions.
    pub(crate) pending_outputs: Mutex<HashSet<u64>>,
    pub(crate) table_cache: Arc<TableCache>,
    /// The blob files values are read from (`docs/blob-files.md`).
    pub(crate) blobs: Arc<BlobReaders>,
    /// The write lanes large values are written through, per keyspace
    /// (none for a keyspace whose `min_blob_size` is `None`, or in a
    /// read-only database).
    pub(crate) blob_lanes: Arc<BlobLaneSet>,
    pub(crate) block_cache: Option<Arc<BlockCache>>,
    /// Reads scans' read-ahead chunks in the background (the database's
    /// own, or the one `Options::reader_pool` shares).
    pub(crate) reader_pool: Arc<ReaderPool>,
    pub(crate) bg: Background,
    pub(crate) counters: Counters,
    /// Highest sequence number visible to readers.
    pub(crate) last_sequence: AtomicU64,
    pub(crate) snapshots: Arc<SnapshotList>,
    pub(crate) writes: WritePath,
    pub(crate) poisoned: Mutex<Option<Poison>>,
    pub(crate) is_poisoned: AtomicBool,
    pub(crate) closed: AtomicBool,
    /// Opened with [`Db::open_read_only`](crate::Db::open_read_only): every write is refused.
    pub(crate) read_only: bool,
    pub(crate) info_log: InfoLog,
    pub(crate) recovery: RecoveryReport,
    /// Checkpoints in progress; while non-zero no obsolete file is deleted.
    pub(crate) deletions_paused: AtomicUsize,
    /// The last obsolete-file pass kept files only because a reader's
    /// version still named them: the idle compaction thread passes again
    /// (`obsolete::retry_if_kept`), so their space comes back once the
    /// readers are gone even if no flush or compaction follows.
    pub(crate) obsolete_kept: std::sync::atomic::AtomicBool,
    /// `Options::ttl`: entries with a sequence number below this are
    /// expired (0: none); only grows (`db/ttl.rs`).
    pub(crate) ttl_floor: AtomicU64,
    /// Merges shared by iterators that walk the same state from its start
    /// (`db/read/shared_pass.rs`).
    pub(crate) shared_passes: Arc<super::read::shared_pass::SharedPasses>,
    /// `Options::ttl`'s samples, those not yet in a version edit and the
    /// sync thread's timing (`db/ttl.rs`; a leaf lock).
    pub(crate) time_samples: Mutex<super::ttl::TtlState>,
    /// Every live keyspace's name, options and TTL floor, the default
    /// keyspace's (id 0) included (`db/keyspace_state.rs`).
    pub(crate) keyspaces: RwLock<super::keyspace_state::KeyspaceStates>,
}

/// Why writes are refused (the first failure; later ones are only logged).
#[derive(Debug, Clone)]
pub(crate) struct Poison {
    /// What failed, with the error (which names the file).
    pub(crate) why: String,
    /// The failure was a full disk ([`Error::is_no_space`]): [`Db::resume`](crate::Db::resume)
    /// may bring writes back once space is freed.
    pub(crate) resumable: bool,
}

impl Poison {
    /// The error writes get while the database is poisoned by this.
    pub(crate) fn error(&self) -> Error {
        let hint = if self.resumable {
            "no space left on device (ENOSPC/EDQUOT): free space, then call Db::resume() \
             (or reopen the database)"
        } else {
            "reopen the database"
        };
        Error::Poisoned(format!("{}; {hint}", self.why))
    }
}

impl DbInner {
    /// Marks the database unwritable until reopen (a failure
    /// [`Db::resume`](crate::Db::resume) does not recover from: a bug, a broken invariant).
    pub(crate) fn poison(&self, why: String) {
        self.poison_with(why, false, || true);
    }

    /// Marks the database unwritable because of `e` (`what` says what
    /// failed). Resumable if `e` is a full disk.
    pub(crate) fn poison_err(&self, what: &str, e: &Error) {
        self.poison_with(format!("{what}: {e}"), e.is_no_space(), || true);
    }

    /// [`poison_err`](Self::poison_err) for a failure of WAL `log`: ignored
    /// once [`Db::resume`](crate::Db::resume) replaced that log (a writer of the old log may
    /// report its failure late). The check and resume's clearing happen
    /// under the same lock.
    pub(crate) fn poison_wal(&self, log: &WalLog, what: &str, e: &Error) {
        self.poison_with(format!("{what}: {e}"), e.is_no_space(), || {
            !log.is_retired()
        });
    }

    fn poison_with(&self, why: String, resumable: bool, applies: impl FnOnce() -> bool) {
        let mut p = self.poisoned.lock();
        if !applies() {
            return;
        }
        self.info_log.log(format!("poisoned: {why}"));
        if p.is_none() {
            *p = Some(Poison { why, resumable });
        }
        self.is_poisoned.store(true, Ordering::Release);
    }

    /// Why the database is poisoned, if it is.
    pub(crate) fn poison_state(&self) -> Option<Poison> {
        self.poisoned.lock().clone()
    }

    /// Accepts writes again ([`Db::resume`](crate::Db::resume), with the write gate held
    /// exclusively and `old`, the log that failed, already replaced).
    pub(crate) fn clear_poison(&self, old: &WalLog) {
        let mut p = self.poisoned.lock();
        old.retire();
        *p = None;
        self.is_poisoned.store(false, Ordering::Release);
    }

    /// `Err` if writes are no longer allowed.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.read_only {
            return Err(Error::ReadOnly(self.dir.clone()));
        }
        if self.is_poisoned.load(Ordering::Acquire)
            && let Some(p) = self.poison_state()
        {
            return Err(p.error());
        }
        Ok(())
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.is_poisoned.load(Ordering::Acquire)
    }

    /// The current read state.
    pub(crate) fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.state.read())
    }

    /// Replaces the read state with `f(current)`. Holding the version set's
    /// lock (`_vs`) orders installs with manifest edits.
    pub(crate) fn install(&self, _vs: &VersionSet, f: impl FnOnce(&SuperVersion) -> SuperVersion) {
        self.install_unordered(f);
    }

    /// Publishes keyspace `id`'s current version in `vs` (after an edit to
    /// it; nothing if the keyspace is gone), keeping its memtables.
    pub(crate) fn install_tree_version(&self, vs: &VersionSet, id: u32) {
        let Some(version) = vs.current_of(id) else {
            return;
        };
        self.install(vs, |sv| {
            sv.map_tree(id, |t| SuperVersion {
                version,
                ..t.clone()
            })
        });
    }

    /// [`install`](Self::install) for changes that touch only memtables.
    pub(crate) fn install_unordered(&self, f: impl FnOnce(&SuperVersion) -> SuperVersion) {
        let mut st = self.state.write();
        let next = Arc::new(f(&st));
        // Under the state's write lock: stored in install order.
        self.write_pressure
            .store(write_pressure(&next), Ordering::Release);
        // Every keyspace's new version is tracked, so its files stay while
        // a reader holds it.
        let mut live = self.live_versions.lock();
        for (id, tree) in next.trees() {
            let before = if id == 0 {
                Some(&st.version)
            } else {
                st.keyspace(id).map(|t| &t.version)
            };
            if !before.is_some_and(|v| Arc::ptr_eq(v, &tree.version)) {
                live.push(Arc::downgrade(&tree.version));
            }
        }
        drop(live);
        *st = next;
    }

    /// The read state of keyspace `id` (the default keyspace's for 0).
    pub(crate) fn tree_state(&self, id: u32) -> Result<Arc<SuperVersion>> {
        let sv = self.super_version();
        if id == 0 {
            return Ok(sv);
        }
        sv.keyspace(id)
            .cloned()
            .ok_or_else(|| Error::KeyspaceNotFound(format!("keyspace {id} (dropped)")))
    }

    /// The state of live keyspace `id`.
    pub(crate) fn keyspace_state(
        &self,
        id: u32,
    ) -> Option<Arc<super::keyspace_state::KeyspaceState>> {
        self.keyspaces.read().get(&id).cloned()
    }

    /// Table-building options of keyspace `id` (the database's if it is
    /// gone).
    pub(crate) fn table_options_of(&self, id: u32) -> TableBuilderOptions {
        match self.keyspace_state(id) {
            Some(k) if id != 0 => k.table_options(),
            _ => self.table_options(),
        }
    }

    pub(crate) fn table_options(&self) -> TableBuilderOptions {
        table_options(&self.options)
    }

    pub(crate) fn level_targets(&self) -> LevelTargets {
        LevelTargets {
            l0_compaction_trigger: self.options.l0_compaction_trigger,
            max_bytes_for_level_base: self.options.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: self.options.max_bytes_for_level_multiplier,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_pressure_packs_both_counts() {
        for (l0, imms) in [(0, 0), (1, 0), (0, 1), (36, 3), (u32::MAX as usize, 7)] {
            let word = pack_write_pressure(l0, imms);
            assert_eq!(unpack_write_pressure(word), (l0, imms));
        }
        // Counts past a half's range are held at its top, never spill.
        assert_eq!(
            unpack_write_pressure(pack_write_pressure(usize::MAX, usize::MAX)),
            (u32::MAX as usize, u32::MAX as usize)
        );
    }
}
