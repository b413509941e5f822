//! Making a [`VersionSet`]: creating the version state of a new (or
//! repaired) database, and recovering it from `CURRENT` and the manifest
//! it names, with the checks that keep a manifest that lost edits from
//! rolling the database back (see "Damaged manifest tails" in
//! `docs/manifest-format.md`). Single-threaded, during open.

use std::path::Path;
use std::sync::Arc;

use super::NUM_LEVELS;
use super::VersionEdit;
use super::builder::Builder;
use super::manifest;
use super::version::Version;
use super::version_set::{
    Counters, DEFAULT_KEYSPACE, DEFAULT_MAX_MANIFEST_SIZE, KeyspaceTree, ManifestTail, VersionSet,
    apply_keyspace_changes, snapshot, start_manifest,
};
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind};
use crate::io::FileSystem;
use crate::keys::MAX_SEQUENCE;
use crate::wal::TailStatus;
use std::collections::BTreeMap;

impl VersionSet {
    /// Creates the version state of a new database in `dir`: an empty
    /// version in a new manifest (numbered one past any numbered file
    /// already in `dir`), and `CURRENT` naming it. Fails with
    /// `AlreadyExists` if `dir` already has a `CURRENT`.
    pub(crate) fn create(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<VersionSet> {
        Self::create_with(fs, dir, vec![VersionEdit::default()], None, 0)
    }

    /// Like [`VersionSet::create`], for a repaired database: the new
    /// manifest's snapshot already holds `initial` (the default keyspace's
    /// tables, blob files and their garbage, and the keyspaces it creates;
    /// then each other keyspace's tables), the log
    /// number `log_number` (a WAL the caller created; `None`: the next file
    /// number, which the caller's first WAL takes) and `last_sequence`, so
    /// `CURRENT` never names a manifest without them.
    pub(crate) fn create_with(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        initial: Vec<VersionEdit>,
        log_number: Option<u64>,
        last_sequence: u64,
    ) -> Result<VersionSet> {
        fs.create_dir_all(dir)?;
        if fs.exists(&manifest::current_path(dir))? {
            return Err(Error::AlreadyExists(dir.to_path_buf()));
        }
        let mut max = 0;
        for name in fs.list_dir(dir)? {
            if let Some(
                FileKind::Wal(n) | FileKind::Table(n) | FileKind::Blob(n) | FileKind::Manifest(n),
            ) = filenames::parse(&name)
            {
                max = max.max(n);
            }
        }
        let number = max + 1;
        // A new database's first WAL takes the number after the manifest's
        // (reserved here; see `log_number`), and the snapshot already names
        // it: a log number of 0 ("replay every WAL") would let a manifest
        // cut back to this snapshot silently drop every table flushed since
        // (see `check_log_present`).
        let counters = match log_number {
            Some(log_number) => Counters {
                log_number,
                next_file_number: number + 1,
                last_sequence,
            },
            None => Counters {
                log_number: number + 1,
                next_file_number: number + 2,
                last_sequence,
            },
        };
        let rejected =
            |why: String| Error::InvalidArgument(format!("initial files rejected: {why}"));
        let mut keyspaces = BTreeMap::new();
        let mut next_keyspace_id = 1;
        let mut current = Version::new();
        for edit in &initial {
            apply_keyspace_changes(edit, &mut keyspaces, &mut next_keyspace_id)
                .map_err(rejected)?;
            let base = match edit.keyspace {
                DEFAULT_KEYSPACE => &current,
                id => {
                    &keyspaces
                        .get(&id)
                        .ok_or_else(|| rejected(format!("no keyspace {id}")))?
                        .current
                }
            };
            let mut builder = Builder::new(base);
            builder.apply(edit).map_err(rejected)?;
            let v = builder.finish();
            v.check_invariants().map_err(rejected)?;
            match edit.keyspace {
                DEFAULT_KEYSPACE => current = v,
                id => {
                    if let Some(t) = keyspaces.get_mut(&id) {
                        t.current = Arc::new(v);
                    }
                }
            }
        }
        let cps = vec![None; NUM_LEVELS];
        let manifest = start_manifest(
            &*fs,
            dir,
            number,
            &snapshot(&current, counters, &cps, &keyspaces, next_keyspace_id),
        )?;
        let set = VersionSet {
            fs,
            dir: dir.to_path_buf(),
            current: Arc::new(current),
            manifest: Some(manifest),
            loaded_manifest: number,
            counters,
            compact_pointers: cps,
            max_manifest_size: DEFAULT_MAX_MANIFEST_SIZE,
            failed: None,
            recovered_tail: None,
            clean_close: None,
            keyspaces,
            next_keyspace_id,
        };
        set.debug_check_counters();
        Ok(set)
    }

    /// Recovers the version state of `dir`: `CURRENT` → manifest → every
    /// edit applied in order; then writes a new manifest holding one snapshot
    /// edit and points `CURRENT` at it. Deletes nothing. A torn manifest tail
    /// is ignored (see [`VersionSet::recovered_tail`]); anything else wrong is
    /// `Error::Corruption` naming the file and offset.
    ///
    /// This checks the manifest alone; a database open uses
    /// `VersionSet::recover_checked`, which also checks the directory.
    #[cfg(test)]
    pub(crate) fn recover(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<VersionSet> {
        Self::load(fs, dir, false, false)
    }

    /// `VersionSet::recover` (or, with `read_only`,
    /// `VersionSet::recover_read_only`) for opening a database: before
    /// anything is written it also checks that the directory holds what
    /// the recovered version needs (every table at its recorded size, and
    /// the WAL its log number names), so that a manifest that lost edits
    /// is `Corruption` rather than a silent roll-back. See "Damaged
    /// manifest tails" in `docs/manifest-format.md`.
    pub(crate) fn recover_checked(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        read_only: bool,
    ) -> Result<VersionSet> {
        Self::load(fs, dir, read_only, true)
    }

    /// Like `VersionSet::recover` but writes nothing: no new manifest, no
    /// `CURRENT` switch. Every [`VersionSet::log_and_apply`] fails.
    /// (`varve check` uses it to go on checking files when the open's
    /// own checks refused the directory.)
    pub(crate) fn recover_read_only(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<VersionSet> {
        Self::load(fs, dir, true, false)
    }

    fn load(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        read_only: bool,
        check_files: bool,
    ) -> Result<VersionSet> {
        let old = manifest::read_current(&*fs, dir)?;
        let mut builder = Builder::new(&Version::new());
        let (mut log, mut next, mut last) = (None, None, None);
        let mut clean_close = None;
        let mut cps: Vec<Option<Vec<u8>>> = vec![None; NUM_LEVELS];
        // The other keyspaces: their trees (versions filled in at the end)
        // and builders.
        let mut trees: BTreeMap<u32, KeyspaceTree> = BTreeMap::new();
        let mut builders: BTreeMap<u32, Builder> = BTreeMap::new();
        let mut next_keyspace_id = 1;
        let outcome = manifest::read_manifest(&*fs, dir, old, |edit, _offset| {
            apply_keyspace_changes(&edit, &mut trees, &mut next_keyspace_id)?;
            builders.retain(|id, _| trees.contains_key(id));
            for id in trees.keys() {
                builders
                    .entry(*id)
                    .or_insert_with(|| Builder::new(&Version::new()));
            }
            let (b, cps) = if edit.keyspace == DEFAULT_KEYSPACE {
                (&mut builder, &mut cps)
            } else {
                match (
                    builders.get_mut(&edit.keyspace),
                    trees.get_mut(&edit.keyspace),
                ) {
                    (Some(b), Some(t)) => (b, &mut t.compact_pointers),
                    _ => {
                        return Err(format!(
                            "an edit for keyspace {}, which does not exist",
                            edit.keyspace
                        ));
                    }
                }
            };
            b.apply(&edit)?;
            // Only a close that is the last edit counts.
            clean_close = edit.clean_close;
            log = edit.log_number.or(log);
            next = edit.next_file_number.or(next);
            last = edit.last_sequence.or(last);
            for (level, key) in edit.compact_pointers {
                cps[level] = Some(key);
            }
            Ok(())
        })?;
        let path = manifest::manifest_path(dir, old);
        let missing =
            |what: &str| Error::corruption(&path, 0, format!("manifest never records {what}"));
        let log_number = log.ok_or_else(|| missing("the log number"))?;
        let recorded_next = next.ok_or_else(|| missing("the next file number"))?;
        let last_sequence = last.ok_or_else(|| missing("the last sequence"))?;
        if last_sequence > MAX_SEQUENCE {
            return Err(Error::corruption(
                &path,
                0,
                format!("last sequence {last_sequence} passes the largest {MAX_SEQUENCE}"),
            ));
        }
        let current = builder.finish();
        current
            .check_invariants()
            .map_err(|why| Error::corruption(&path, 0, why))?;
        for (id, b) in builders {
            let v = b.finish();
            v.check_invariants()
                .map_err(|why| Error::corruption(&path, 0, format!("keyspace {id}: {why}")))?;
            if let Some(t) = trees.get_mut(&id) {
                t.current = Arc::new(v);
            }
        }
        let all = || std::iter::once(&current).chain(trees.values().map(|t| &*t.current));
        if check_files {
            for v in all() {
                check_live_tables(&*fs, dir, &path, v)?;
            }
            check_log_present(&*fs, dir, &path, log_number)?;
        }
        let max_live = all()
            .flat_map(|v| v.live_file_numbers().collect::<Vec<_>>())
            .max()
            .unwrap_or(0);
        // The new manifest takes a number past every number in use, and the
        // next file the one after it; numbers that leave no room are damage.
        let exhausted = || {
            Error::corruption(
                &path,
                0,
                "a file number in the manifest leaves no room for new files",
            )
        };
        let mut number = recorded_next;
        for used in [max_live, log_number, old] {
            number = number.max(used.checked_add(1).ok_or_else(exhausted)?);
        }
        let counters = Counters {
            log_number,
            next_file_number: number.checked_add(1).ok_or_else(exhausted)?,
            last_sequence,
        };
        let manifest = if read_only {
            None
        } else {
            Some(start_manifest(
                &*fs,
                dir,
                number,
                &snapshot(&current, counters, &cps, &trees, next_keyspace_id),
            )?)
        };
        let recovered_tail = match outcome.tail {
            TailStatus::Clean => None,
            TailStatus::Truncated { offset, reason } => Some(ManifestTail {
                file: path,
                offset,
                reason,
            }),
        };
        let set = VersionSet {
            fs,
            dir: dir.to_path_buf(),
            current: Arc::new(current),
            manifest,
            loaded_manifest: old,
            counters,
            compact_pointers: cps,
            max_manifest_size: DEFAULT_MAX_MANIFEST_SIZE,
            failed: None,
            recovered_tail,
            clean_close,
            keyspaces: trees,
            next_keyspace_id,
        };
        set.debug_check_counters();
        Ok(set)
    }
}

/// Checks that every table of the recovered version `v` exists in `dir`
/// with the size its manifest `manifest` recorded. A missing or resized
/// table means the manifest does not describe the directory: it lost edits
/// after which varve deleted or replaced that table (see "Damaged manifest
/// tails" in `docs/manifest-format.md`), or the file was damaged; either way
/// opening would read wrong data, so it is `Error::Corruption` naming the
/// table.
fn check_live_tables(fs: &dyn FileSystem, dir: &Path, manifest: &Path, v: &Version) -> Result<()> {
    for level in 0..NUM_LEVELS {
        for f in v.files(level) {
            let table = filenames::table_path(dir, f.number);
            let size = match fs.file_size(&table) {
                Ok(size) => size,
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::corruption(
                        &table,
                        0,
                        format!(
                            "table {} of level {level} in {} is missing: the manifest has lost \
                             edits or the file was removed (run `varve repair`)",
                            f.number,
                            manifest.display()
                        ),
                    ));
                }
                Err(e) => return Err(e),
            };
            if size != f.file_size {
                return Err(Error::corruption(
                    &table,
                    size.min(f.file_size),
                    format!(
                        "table {} of level {level} is {size} bytes, {} records {} bytes",
                        f.number,
                        manifest.display(),
                        f.file_size
                    ),
                ));
            }
        }
    }
    check_live_blob_files(fs, dir, manifest, v)
}

/// Every blob file of the recovered version exists; a sealed one has its
/// recorded size. (An open one is a lane's file from before the crash: its
/// length is whatever the lane had appended. It may even be missing: a lane
/// logs a file before it creates it, and nothing points into it before the
/// file and its directory entry exist; the open then drops it.)
fn check_live_blob_files(
    fs: &dyn FileSystem,
    dir: &Path,
    manifest: &Path,
    v: &Version,
) -> Result<()> {
    for (&number, b) in v.blob_files() {
        let path = filenames::blob_file_path(dir, number);
        let size = match fs.file_size(&path) {
            Ok(size) => size,
            Err(Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && !b.sealed =>
            {
                continue;
            }
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::corruption(
                    &path,
                    0,
                    format!(
                        "blob file {number} in {} is missing: the manifest has lost edits or \
                         the file was removed (run `varve repair`)",
                        manifest.display()
                    ),
                ));
            }
            Err(e) => return Err(e),
        };
        if b.sealed && size != b.size {
            return Err(Error::corruption(
                &path,
                size.min(b.size),
                format!(
                    "blob file {number} is {size} bytes, {} records {} bytes",
                    manifest.display(),
                    b.size
                ),
            ));
        }
    }
    Ok(())
}

/// The WAL that the recovered log number names must exist (unless no file
/// numbered at or above it exists at all, see below): a flush edit
/// names the WAL that is current when it is made (created, and its
/// directory entry synced, before), and varve deletes a WAL only after a
/// durable edit moved the log number past it, oldest first. So a missing
/// WAL `log_number` means the manifest lost an edit after which its data
/// left the WALs (a rolled-back manifest), and opening would silently lose
/// that data. Log number 0 (a new or repaired database) needs no WAL.
fn check_log_present(
    fs: &dyn FileSystem,
    dir: &Path,
    manifest: &Path,
    log_number: u64,
) -> Result<()> {
    let wal = filenames::wal_path(dir, log_number);
    if log_number == 0 || fs.exists(&wal)? {
        return Ok(());
    }
    // A crash between writing the first manifest of a database (or of a
    // repair) and creating the WAL it names leaves no file numbered at or
    // above the log number: nothing was written after the version, so
    // nothing can be missing.
    let later = fs.list_dir(dir)?.iter().any(|name| {
        matches!(
            filenames::parse(name),
            Some(FileKind::Wal(n) | FileKind::Table(n) | FileKind::Blob(n)) if n >= log_number
        )
    });
    if !later {
        return Ok(());
    }
    Err(Error::corruption(
        &wal,
        0,
        format!(
            "WAL {log_number}, the oldest log that {} still needs, is missing: the manifest \
             has lost edits (opening would roll the database back) or the log was removed \
             (run `varve repair`)",
            manifest.display()
        ),
    ))
}
