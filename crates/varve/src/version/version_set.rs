//! [`VersionSet`]: the current [`Version`], the file-number and sequence
//! counters, and the manifest that makes changes to them durable.
//!
//! Thread-safety: `Send`, not internally locked — the DB holds a mutex
//! around it and hands out `Arc<Version>` clones to readers. Invariants: a
//! new version is installed only after the edit that produces it has been
//! appended to the live manifest and fdatasynced; `CURRENT` always names a
//! complete, synced manifest; file numbers handed out are never reused while
//! this process runs; after an IO error on the manifest the set refuses
//! further edits ([`Error::Poisoned`]) because the manifest's durable state
//! is unknown, until [`VersionSet::restart_manifest`] (for a full disk
//! only) has written the in-memory state — which never includes the failed
//! edit — as a snapshot into a new manifest and pointed `CURRENT` at it.
//! Nothing here deletes files: [`VersionSet::obsolete_files`] names what
//! the DB may delete once the retiring edit is durable.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::NUM_LEVELS;
use super::builder::Builder;
use super::edit::VersionEdit;
use super::manifest::{self, ManifestWriter};
use super::version::Version;
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind};
use crate::io::FileSystem;

/// Default size at which the manifest is rolled over to a new one.
pub(crate) const DEFAULT_MAX_MANIFEST_SIZE: u64 = 64 << 20;

/// A torn manifest tail ignored during recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestTail {
    /// The manifest that was read.
    pub file: PathBuf,
    /// Where its good data ends.
    pub offset: u64,
    /// Why the bytes after `offset` were rejected.
    pub reason: String,
}

/// A failed manifest write.
#[derive(Debug, Clone)]
pub(super) struct ManifestFailure {
    why: String,
    /// The disk was full (ENOSPC/EDQUOT): a new manifest may be started.
    retryable: bool,
}

/// Counters that every snapshot edit records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counters {
    pub(super) log_number: u64,
    pub(super) next_file_number: u64,
    pub(super) last_sequence: u64,
}

/// The current version, the counters and the live manifest.
#[derive(Debug)]
pub(crate) struct VersionSet {
    pub(super) fs: Arc<dyn FileSystem>,
    pub(super) dir: PathBuf,
    pub(super) current: Arc<Version>,
    /// The manifest edits are appended to; `None` for a read-only set.
    pub(super) manifest: Option<ManifestWriter>,
    /// Number of the manifest `CURRENT` named when this set was loaded.
    pub(super) loaded_manifest: u64,
    pub(super) counters: Counters,
    pub(super) compact_pointers: Vec<Option<Vec<u8>>>,
    pub(super) max_manifest_size: u64,
    /// Set after a failed manifest write: why edits are refused.
    pub(super) failed: Option<ManifestFailure>,
    pub(super) recovered_tail: Option<ManifestTail>,
    /// The clean close the recovered manifest ended with, if any.
    pub(super) clean_close: Option<(u64, u64)>,
    /// The keyspaces other than the default one (whose tree is `current`
    /// and `compact_pointers`), by id.
    pub(super) keyspaces: BTreeMap<u32, KeyspaceTree>,
    /// The id the next created keyspace takes; above every id ever used.
    pub(super) next_keyspace_id: u32,
}

/// The default keyspace's id; the tree of a database without keyspaces.
pub(crate) const DEFAULT_KEYSPACE: u32 = 0;

/// The default keyspace's name.
pub(crate) const DEFAULT_KEYSPACE_NAME: &str = "default";

/// One keyspace's tree in the version set.
#[derive(Debug, Clone)]
pub(crate) struct KeyspaceTree {
    /// Its name (unique among live keyspaces).
    pub(crate) name: String,
    /// Its current version.
    pub(super) current: Arc<Version>,
    /// Its round-robin compaction pointers, by level.
    pub(super) compact_pointers: Vec<Option<Vec<u8>>>,
}

impl KeyspaceTree {
    pub(super) fn new(name: String) -> KeyspaceTree {
        KeyspaceTree {
            name,
            current: Arc::new(Version::new()),
            compact_pointers: vec![None; NUM_LEVELS],
        }
    }
}

/// A full-state edit of one tree: compact pointers and every file.
fn tree_snapshot(keyspace: u32, v: &Version, compact_pointers: &[Option<Vec<u8>>]) -> VersionEdit {
    let mut e = VersionEdit {
        keyspace,
        ..VersionEdit::default()
    };
    for (level, p) in compact_pointers.iter().enumerate() {
        if let Some(p) = p {
            e.compact_pointers.push((level, p.clone()));
        }
    }
    v.add_state_to(&mut e);
    e
}

/// The full state as one record: counters, the default tree, then every
/// other keyspace (created in the first edit, filled by its own).
pub(super) fn snapshot(
    v: &Version,
    c: Counters,
    compact_pointers: &[Option<Vec<u8>>],
    keyspaces: &BTreeMap<u32, KeyspaceTree>,
    next_keyspace_id: u32,
) -> Vec<VersionEdit> {
    let mut first = tree_snapshot(DEFAULT_KEYSPACE, v, compact_pointers);
    first.log_number = Some(c.log_number);
    first.next_file_number = Some(c.next_file_number);
    first.last_sequence = Some(c.last_sequence);
    if next_keyspace_id > 1 {
        first.next_keyspace_id = Some(next_keyspace_id);
    }
    first.created_keyspaces = keyspaces
        .iter()
        .map(|(&id, t)| (id, t.name.clone()))
        .collect();
    let mut out = vec![first];
    out.extend(
        keyspaces
            .iter()
            .map(|(&id, t)| tree_snapshot(id, &t.current, &t.compact_pointers)),
    );
    out
}

/// Starts manifest `number` holding `snapshot` and points `CURRENT` at it.
pub(super) fn start_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    snapshot: &[VersionEdit],
) -> Result<ManifestWriter> {
    let w = ManifestWriter::create(fs, dir, number, snapshot)?;
    manifest::write_current(fs, dir, number)?;
    Ok(w)
}

impl VersionSet {
    /// The current version.
    pub(crate) fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current)
    }

    /// Makes `edit` durable and installs the version it produces.
    ///
    /// Fills in `next_file_number` and `last_sequence` (and `log_number` if
    /// unset), checks the edit against the current version (an edit that
    /// breaks a level invariant is `InvalidArgument` and changes nothing),
    /// appends it to the manifest and fdatasyncs it, then installs the new
    /// version. If the manifest has reached the size limit, the new state is
    /// written as a snapshot into a new manifest and `CURRENT` is switched
    /// instead. On an IO error the current version is unchanged, the error
    /// is returned and later calls fail with `Poisoned`; the edit may or may
    /// not be durable, so the caller must keep (not delete) both its new
    /// files and the files it deletes.
    pub(crate) fn log_and_apply(&mut self, edit: VersionEdit) -> Result<()> {
        self.log_and_apply_group(vec![edit])
    }

    /// [`log_and_apply`](Self::log_and_apply) for edits of several
    /// keyspaces at once, made durable as one manifest record: all of them
    /// or none (a flush of every keyspace's memtable). At most one edit
    /// per keyspace; only the first may be the default keyspace's. The
    /// database-wide fields (counters, keyspaces created and dropped, blob
    /// files, time samples) may be in any edit; keyspaces created by an
    /// edit exist for the edits after it.
    pub(crate) fn log_and_apply_group(&mut self, mut edits: Vec<VersionEdit>) -> Result<()> {
        // Refused before any work, and before the counters move.
        let Some(manifest_size) = self.manifest.as_ref().map(|w| w.file_size()) else {
            return Err(Error::ReadOnly(self.dir.clone()));
        };
        if let Some(f) = &self.failed {
            return Err(Error::Poisoned(format!(
                "manifest writes refused after an earlier failure: {}",
                f.why
            )));
        }
        if edits.is_empty() {
            return Ok(());
        }
        // Only the first edit may be the default keyspace's (the group
        // encoding), and each keyspace appears once.
        let mut seen = HashSet::new();
        for (i, e) in edits.iter().enumerate() {
            if (i > 0 && e.keyspace == DEFAULT_KEYSPACE) || !seen.insert(e.keyspace) {
                return Err(Error::InvalidArgument(format!(
                    "version edit group names keyspace {} twice or out of place",
                    e.keyspace
                )));
            }
        }
        let log_number = edits
            .iter()
            .filter_map(|e| e.log_number)
            .max()
            .unwrap_or(self.counters.log_number);
        if log_number < self.counters.log_number || log_number >= self.counters.next_file_number {
            return Err(Error::InvalidArgument(format!(
                "version edit log number {log_number} outside {}..{}",
                self.counters.log_number, self.counters.next_file_number
            )));
        }
        let last_sequence = edits
            .iter()
            .filter_map(|e| e.last_sequence)
            .max()
            .unwrap_or(0)
            .max(self.counters.last_sequence);
        for e in edits.iter_mut() {
            e.log_number = None;
            e.last_sequence = None;
            e.next_file_number = None;
        }
        edits[0].log_number = Some(log_number);
        edits[0].last_sequence = Some(last_sequence);

        let mut default_tree = KeyspaceTree {
            name: DEFAULT_KEYSPACE_NAME.to_string(),
            current: Arc::clone(&self.current),
            compact_pointers: self.compact_pointers.clone(),
        };
        let mut keyspaces = self.keyspaces.clone();
        let mut next_keyspace_id = self.next_keyspace_id;
        for edit in edits.iter_mut() {
            apply_keyspace_changes(edit, &mut keyspaces, &mut next_keyspace_id)
                .map_err(|why| Error::InvalidArgument(format!("version edit rejected: {why}")))?;
            let tree = if edit.keyspace == DEFAULT_KEYSPACE {
                &mut default_tree
            } else {
                keyspaces.get_mut(&edit.keyspace).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "version edit for keyspace {}, which does not exist",
                        edit.keyspace
                    ))
                })?
            };
            apply_to_tree(tree, edit)?;
        }
        for e in &edits {
            for (_, f) in &e.new_files {
                self.mark_file_number_used(f.number);
            }
        }

        let roll = manifest_size >= self.max_manifest_size;
        let number = if roll { self.new_file_number() } else { 0 };
        let counters = Counters {
            log_number,
            next_file_number: self.counters.next_file_number,
            last_sequence,
        };
        edits[0].next_file_number = Some(counters.next_file_number);
        let r = if roll {
            let snap = snapshot(
                &default_tree.current,
                counters,
                &default_tree.compact_pointers,
                &keyspaces,
                next_keyspace_id,
            );
            start_manifest(&*self.fs, &self.dir, number, &snap).map(|w| self.manifest = Some(w))
        } else {
            match self.manifest.as_mut() {
                Some(w) => w.append_group(&edits),
                None => Err(Error::ReadOnly(self.dir.clone())),
            }
        };
        if let Err(e) = r {
            self.failed = Some(ManifestFailure {
                why: e.to_string(),
                retryable: e.is_no_space(),
            });
            return Err(e);
        }
        debug_assert!(
            counters.log_number >= self.counters.log_number
                && counters.last_sequence >= self.counters.last_sequence
                && counters.next_file_number >= self.counters.next_file_number,
            "the log number, last sequence and next file number never go back"
        );
        self.current = default_tree.current;
        self.compact_pointers = default_tree.compact_pointers;
        self.keyspaces = keyspaces;
        self.next_keyspace_id = next_keyspace_id;
        self.counters = counters;
        self.debug_check_counters();
        Ok(())
    }

    /// The counter invariants (debug builds): no live table, log or
    /// manifest number is at or past the next file number, so a number
    /// handed out never names an existing file.
    pub(super) fn debug_check_counters(&self) {
        debug_assert!(
            self.live_files()
                .iter()
                .all(|&n| n < self.counters.next_file_number),
            "a live table number is not below the next file number"
        );
        debug_assert!(
            self.counters.log_number < self.counters.next_file_number,
            "the log number {} is not below the next file number {}",
            self.counters.log_number,
            self.counters.next_file_number
        );
        debug_assert!(
            self.manifest_number() < self.counters.next_file_number,
            "the manifest number is not below the next file number"
        );
    }

    /// After a failed manifest write that was a full disk: starts a new
    /// manifest holding a snapshot of the current state and points
    /// `CURRENT` at it, after which edits are accepted again. A no-op when
    /// no manifest write failed.
    ///
    /// The failed edit was never installed, so the snapshot does not hold
    /// it: the tables it added become orphans that the next obsolete-file
    /// pass deletes, and the tables it retired stay live. Until `CURRENT`
    /// names the new manifest the old one (which may hold the edit, whole
    /// or torn) stays authoritative, and nothing it names has been deleted.
    ///
    /// Errors: `Poisoned` (saying to reopen) when the failure was not a full
    /// disk; the IO error if the new manifest cannot be written either (the
    /// set stays refused; call again later).
    pub(crate) fn restart_manifest(&mut self) -> Result<()> {
        let Some(failure) = &self.failed else {
            return Ok(());
        };
        if !failure.retryable {
            return Err(Error::Poisoned(format!(
                "manifest writes refused after an earlier failure: {}; only a reopen recovers \
                 from it",
                failure.why
            )));
        }
        if self.manifest.is_none() {
            return Err(Error::ReadOnly(self.dir.clone()));
        }
        let number = self.new_file_number();
        let snap = snapshot(
            &self.current,
            self.counters,
            &self.compact_pointers,
            &self.keyspaces,
            self.next_keyspace_id,
        );
        match start_manifest(&*self.fs, &self.dir, number, &snap) {
            Ok(w) => {
                self.manifest = Some(w);
                self.failed = None;
                Ok(())
            }
            Err(e) => {
                // Never named by CURRENT unless `start_manifest` got that far;
                // then it is complete and the next attempt replaces it.
                if !manifest::read_current(&*self.fs, &self.dir).is_ok_and(|n| n == number) {
                    let _ = self
                        .fs
                        .remove_file(&manifest::manifest_path(&self.dir, number));
                }
                Err(e)
            }
        }
    }

    /// Whether a manifest write failed (edits are refused).
    #[cfg(test)]
    pub(crate) fn has_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Allocates a new file number.
    pub(crate) fn new_file_number(&mut self) -> u64 {
        let n = self.counters.next_file_number;
        debug_assert!(n < u64::MAX, "file numbers exhausted");
        self.counters.next_file_number += 1;
        n
    }

    /// The next file number [`VersionSet::new_file_number`] will return.
    pub(crate) fn next_file_number(&self) -> u64 {
        self.counters.next_file_number
    }

    /// Makes sure `n` is never handed out (e.g. a WAL number found on disk).
    pub(crate) fn mark_file_number_used(&mut self, n: u64) {
        if self.counters.next_file_number <= n {
            self.counters.next_file_number = n + 1;
        }
    }

    /// WALs numbered below this are obsolete.
    pub(crate) fn log_number(&self) -> u64 {
        self.counters.log_number
    }

    /// The largest sequence number in use.
    pub(crate) fn last_sequence(&self) -> u64 {
        self.counters.last_sequence
    }

    /// Sets the largest sequence number in use (made durable by the next
    /// edit; the WALs hold it until then). Never moves backwards.
    pub(crate) fn set_last_sequence(&mut self, s: u64) {
        debug_assert!(
            s <= crate::keys::MAX_SEQUENCE,
            "sequence {s} past the largest"
        );
        self.counters.last_sequence = self.counters.last_sequence.max(s);
    }

    /// Number of the live manifest.
    pub(crate) fn manifest_number(&self) -> u64 {
        self.manifest
            .as_ref()
            .map_or(self.loaded_manifest, |m| m.number())
    }

    /// Size in bytes of the live manifest.
    #[cfg(test)]
    pub(crate) fn manifest_size(&self) -> u64 {
        self.manifest.as_ref().map_or(0, |m| m.file_size())
    }

    /// Sets the size at which the manifest rolls over (tests use tiny ones).
    #[cfg(test)]
    pub(crate) fn set_max_manifest_size(&mut self, bytes: u64) {
        self.max_manifest_size = bytes;
    }

    /// The round-robin compaction pointer of `level` (an internal key).
    pub(crate) fn compact_pointer(&self, level: usize) -> Option<&[u8]> {
        self.compact_pointers.get(level)?.as_deref()
    }

    /// `(WAL number, bytes)` if the recovered manifest's last edit is a
    /// clean close (see [`VersionEdit::clean_close`]).
    pub(crate) fn clean_close(&self) -> Option<(u64, u64)> {
        self.clean_close
    }

    /// The torn manifest tail that recovery ignored, if any (for the DB's
    /// event log).
    pub(crate) fn recovered_tail(&self) -> Option<&ManifestTail> {
        self.recovered_tail.as_ref()
    }

    /// Numbers of the tables in the current version.
    pub(crate) fn live_files(&self) -> HashSet<u64> {
        self.trees()
            .flat_map(|(_, v)| v.live_file_numbers().collect::<Vec<_>>())
            .collect()
    }

    /// Every keyspace's current version, the default keyspace first.
    pub(crate) fn trees(&self) -> impl Iterator<Item = (u32, &Arc<Version>)> {
        std::iter::once((DEFAULT_KEYSPACE, &self.current))
            .chain(self.keyspaces.iter().map(|(&id, t)| (id, &t.current)))
    }

    /// The current version of keyspace `id` (`None`: it does not exist).
    pub(crate) fn current_of(&self, id: u32) -> Option<Arc<Version>> {
        if id == DEFAULT_KEYSPACE {
            return Some(self.current());
        }
        self.keyspaces.get(&id).map(|t| Arc::clone(&t.current))
    }

    /// The keyspaces other than the default one: `(id, name)`.
    pub(crate) fn keyspaces(&self) -> Vec<(u32, String)> {
        self.keyspaces
            .iter()
            .map(|(&id, t)| (id, t.name.clone()))
            .collect()
    }

    /// The whole current state as one manifest snapshot: the default
    /// keyspace's edit (with the counters and blob files) first, then
    /// every other keyspace's.
    pub(crate) fn full_snapshot(&self) -> Vec<VersionEdit> {
        snapshot(
            &self.current,
            self.counters,
            &self.compact_pointers,
            &self.keyspaces,
            self.next_keyspace_id,
        )
    }

    /// The id the next created keyspace takes.
    pub(crate) fn next_keyspace_id(&self) -> u32 {
        self.next_keyspace_id
    }

    /// The round-robin compaction pointer of `level` in keyspace `id`.
    pub(crate) fn compact_pointer_of(&self, id: u32, level: usize) -> Option<&[u8]> {
        if id == DEFAULT_KEYSPACE {
            return self.compact_pointer(level);
        }
        self.keyspaces
            .get(&id)?
            .compact_pointers
            .get(level)?
            .as_deref()
    }

    /// Names in `dir_listing` that the DB may delete once the edit retiring
    /// them is durable (i.e. after a successful `log_and_apply`): WALs below
    /// [`VersionSet::log_number`], tables and blob files neither in the
    /// current version nor in `pinned` (the DB passes the files of versions
    /// readers still hold and files being written), manifests other than
    /// the live one, and leftover `*.tmp` files (except a `CURRENT` temp for
    /// a newer manifest). `CURRENT`, `LOCK`, `LOG*` and foreign files are
    /// never listed. Sorted by file number (oldest first).
    pub(crate) fn obsolete_files(
        &self,
        dir_listing: &[String],
        pinned: &HashSet<u64>,
    ) -> Vec<String> {
        let live = self.live_files();
        let manifest = self.manifest_number();
        let mut out: Vec<String> = dir_listing
            .iter()
            .filter(|name| match filenames::parse(name) {
                Some(FileKind::Wal(n)) => n < self.counters.log_number,
                Some(FileKind::Table(n) | FileKind::Blob(n)) => {
                    !live.contains(&n) && !pinned.contains(&n)
                }
                Some(FileKind::Manifest(n)) => n != manifest,
                Some(FileKind::Temp) => !current_temp_newer_than(name, manifest),
                _ => false,
            })
            .cloned()
            .collect();
        // By number, not by name (`1000000.log` sorts before `999999.log`):
        // WALs must go oldest first, so that the WALs left after a failed
        // or interrupted deletion are always the newest ones and recovery
        // can trust that the log number's WAL being present means every
        // later one is (see `db/recovery.rs`).
        out.sort_by_key(|name| (filenames::parse(name).and_then(file_number), name.clone()));
        out
    }
}

/// Applies the keyspaces `edit` creates and drops to `keyspaces`; the
/// error says which rule it broke. Ids only grow, names are unique, and
/// the default keyspace is neither created nor dropped.
pub(super) fn apply_keyspace_changes(
    edit: &VersionEdit,
    keyspaces: &mut BTreeMap<u32, KeyspaceTree>,
    next_keyspace_id: &mut u32,
) -> std::result::Result<(), String> {
    if let Some(n) = edit.next_keyspace_id {
        *next_keyspace_id = (*next_keyspace_id).max(n);
    }
    for (id, name) in &edit.created_keyspaces {
        if *id == DEFAULT_KEYSPACE || keyspaces.contains_key(id) {
            return Err(format!("keyspace {id} created twice"));
        }
        if name == DEFAULT_KEYSPACE_NAME || keyspaces.values().any(|t| &t.name == name) {
            return Err(format!("keyspace name {name:?} is taken"));
        }
        keyspaces.insert(*id, KeyspaceTree::new(name.clone()));
        *next_keyspace_id = (*next_keyspace_id).max(id.saturating_add(1));
    }
    for id in &edit.dropped_keyspaces {
        if keyspaces.remove(id).is_none() {
            return Err(format!("dropped keyspace {id} does not exist"));
        }
    }
    Ok(())
}

/// Applies the tree fields of `edit` to `tree`: its files, compact
/// pointers and range tombstones (and, for the default tree, the blob
/// files and time samples). Removes the range tombstones the result leaves
/// nothing to hide from, recording that in `edit`. Changes nothing on
/// error (an edit that breaks a level invariant is `InvalidArgument`).
fn apply_to_tree(tree: &mut KeyspaceTree, edit: &mut VersionEdit) -> Result<()> {
    if let Some((level, _)) = edit.compact_pointers.iter().find(|(l, _)| *l >= NUM_LEVELS) {
        return Err(Error::InvalidArgument(format!(
            "compact pointer for level {level}, levels are 0..{NUM_LEVELS}"
        )));
    }
    let mut builder = Builder::new(&tree.current);
    builder
        .apply(edit)
        .map_err(|why| Error::InvalidArgument(format!("version edit rejected: {why}")))?;
    // Tombstones this edit leaves nothing to hide from leave with it.
    // (One the edit itself adds is left out of it instead.)
    let spent = builder.spent_range_tombstones();
    builder.remove_range_tombstones(&spent);
    for seq in spent {
        match edit.range_tombstones.iter().position(|t| t.seq == seq) {
            Some(i) => {
                edit.range_tombstones.remove(i);
            }
            None => edit.deleted_range_tombstones.push(seq),
        }
    }
    let version = builder.finish();
    version
        .check_invariants()
        .map_err(|why| Error::InvalidArgument(format!("version edit rejected: {why}")))?;
    tree.current = Arc::new(version);
    for (level, key) in &edit.compact_pointers {
        tree.compact_pointers[*level] = Some(key.clone());
    }
    Ok(())
}

pub(super) fn file_number(kind: FileKind) -> Option<u64> {
    match kind {
        FileKind::Wal(n) | FileKind::Table(n) | FileKind::Blob(n) | FileKind::Manifest(n) => {
            Some(n)
        }
        _ => None,
    }
}

/// True for `CURRENT.nnnnnn.tmp` with `nnnnnn > manifest` (a switch that may
/// be in progress).
fn current_temp_newer_than(name: &str, manifest: u64) -> bool {
    name.strip_prefix("CURRENT.")
        .and_then(|s| s.strip_suffix(".tmp"))
        .and_then(|d| d.parse::<u64>().ok())
        .is_some_and(|n| n > manifest)
}
