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

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::NUM_LEVELS;
use super::builder::Builder;
use super::edit::VersionEdit;
use super::file_meta::FileMetaData;
use super::manifest::{self, ManifestWriter};
use super::version::Version;
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind};
use crate::io::FileSystem;
use crate::keys::MAX_SEQUENCE;
use crate::wal::TailStatus;

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
struct ManifestFailure {
    why: String,
    /// The disk was full (ENOSPC/EDQUOT): a new manifest may be started.
    retryable: bool,
}

/// Counters that every snapshot edit records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counters {
    log_number: u64,
    next_file_number: u64,
    last_sequence: u64,
}

/// The current version, the counters and the live manifest.
#[derive(Debug)]
pub(crate) struct VersionSet {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    current: Arc<Version>,
    /// The manifest edits are appended to; `None` for a read-only set.
    manifest: Option<ManifestWriter>,
    /// Number of the manifest `CURRENT` named when this set was loaded.
    loaded_manifest: u64,
    counters: Counters,
    compact_pointers: Vec<Option<Vec<u8>>>,
    max_manifest_size: u64,
    /// Set after a failed manifest write: why edits are refused.
    failed: Option<ManifestFailure>,
    recovered_tail: Option<ManifestTail>,
    /// The clean close the recovered manifest ended with, if any.
    clean_close: Option<(u64, u64)>,
}

/// A full-state edit: counters, compact pointers and every file.
fn snapshot(v: &Version, c: Counters, compact_pointers: &[Option<Vec<u8>>]) -> VersionEdit {
    let mut e = VersionEdit {
        log_number: Some(c.log_number),
        next_file_number: Some(c.next_file_number),
        last_sequence: Some(c.last_sequence),
        ..VersionEdit::default()
    };
    for (level, p) in compact_pointers.iter().enumerate() {
        if let Some(p) = p {
            e.compact_pointers.push((level, p.clone()));
        }
    }
    for level in 0..NUM_LEVELS {
        for f in v.files(level) {
            e.add_file(level, (**f).clone());
        }
    }
    e
}

/// Starts manifest `number` holding `snapshot` and points `CURRENT` at it.
fn start_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    snapshot: &VersionEdit,
) -> Result<ManifestWriter> {
    let w = ManifestWriter::create(fs, dir, number, snapshot)?;
    manifest::write_current(fs, dir, number)?;
    Ok(w)
}

impl VersionSet {
    /// Creates the version state of a new database in `dir`: an empty
    /// version in a new manifest (numbered one past any numbered file
    /// already in `dir`), and `CURRENT` naming it. Fails with
    /// `AlreadyExists` if `dir` already has a `CURRENT`.
    pub(crate) fn create(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<VersionSet> {
        Self::create_with(fs, dir, Vec::new(), None, 0)
    }

    /// Like [`VersionSet::create`], for a repaired database: the new
    /// manifest's snapshot already holds `files` (level, table), the log
    /// number `log_number` (a WAL the caller created; `None`: the next file
    /// number, which the caller's first WAL takes) and `last_sequence`, so
    /// `CURRENT` never names a manifest without them.
    pub(crate) fn create_with(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        files: Vec<(usize, FileMetaData)>,
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
        let mut edit = VersionEdit::default();
        for (level, f) in files {
            edit.add_file(level, f);
        }
        let mut builder = Builder::new(&Version::new());
        builder
            .apply(&edit)
            .map_err(|why| Error::InvalidArgument(format!("initial files rejected: {why}")))?;
        let current = builder.finish();
        current
            .check_invariants()
            .map_err(|why| Error::InvalidArgument(format!("initial files rejected: {why}")))?;
        let cps = vec![None; NUM_LEVELS];
        let manifest = start_manifest(&*fs, dir, number, &snapshot(&current, counters, &cps))?;
        Ok(VersionSet {
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
        })
    }

    /// Recovers the version state of `dir`: `CURRENT` → manifest → every
    /// edit applied in order; then writes a new manifest holding one snapshot
    /// edit and points `CURRENT` at it. Deletes nothing. A torn manifest tail
    /// is ignored (see [`VersionSet::recovered_tail`]); anything else wrong is
    /// `Error::Corruption` naming the file and offset.
    ///
    /// This checks the manifest alone; a database open uses
    /// [`VersionSet::recover_checked`], which also checks the directory.
    #[cfg(test)]
    pub(crate) fn recover(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<VersionSet> {
        Self::load(fs, dir, false, false)
    }

    /// [`VersionSet::recover`] (or, with `read_only`,
    /// [`VersionSet::recover_read_only`]) for opening a database: before
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

    /// Like [`VersionSet::recover`] but writes nothing: no new manifest, no
    /// `CURRENT` switch. Every [`VersionSet::log_and_apply`] fails.
    #[cfg(any(test, feature = "fuzzing"))]
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
        let outcome = manifest::read_manifest(&*fs, dir, old, |edit, _offset| {
            builder.apply(&edit)?;
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
        if check_files {
            check_live_tables(&*fs, dir, &path, &current)?;
            check_log_present(&*fs, dir, &path, log_number)?;
        }
        let max_live = current.live_file_numbers().max().unwrap_or(0);
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
                &snapshot(&current, counters, &cps),
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
        Ok(VersionSet {
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
        })
    }

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
    pub(crate) fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<()> {
        if let Some(f) = &self.failed {
            return Err(Error::Poisoned(format!(
                "manifest writes refused after an earlier failure: {}",
                f.why
            )));
        }
        let log_number = edit.log_number.unwrap_or(self.counters.log_number);
        if log_number < self.counters.log_number || log_number >= self.counters.next_file_number {
            return Err(Error::InvalidArgument(format!(
                "version edit log number {log_number} outside {}..{}",
                self.counters.log_number, self.counters.next_file_number
            )));
        }
        edit.log_number = Some(log_number);
        let last_sequence = edit
            .last_sequence
            .unwrap_or(0)
            .max(self.counters.last_sequence);
        edit.last_sequence = Some(last_sequence);
        if let Some((level, _)) = edit.compact_pointers.iter().find(|(l, _)| *l >= NUM_LEVELS) {
            return Err(Error::InvalidArgument(format!(
                "compact pointer for level {level}, levels are 0..{NUM_LEVELS}"
            )));
        }
        let mut builder = Builder::new(&self.current);
        builder
            .apply(&edit)
            .map_err(|why| Error::InvalidArgument(format!("version edit rejected: {why}")))?;
        let version = builder.finish();
        version
            .check_invariants()
            .map_err(|why| Error::InvalidArgument(format!("version edit rejected: {why}")))?;
        for (_, f) in &edit.new_files {
            self.mark_file_number_used(f.number);
        }
        let mut cps = self.compact_pointers.clone();
        for (level, key) in &edit.compact_pointers {
            cps[*level] = Some(key.clone());
        }

        let Some(writer) = self.manifest.as_ref() else {
            return Err(Error::InvalidArgument(
                "the database is open read-only".into(),
            ));
        };
        let roll = writer.file_size() >= self.max_manifest_size;
        let number = if roll { self.new_file_number() } else { 0 };
        let counters = Counters {
            log_number,
            next_file_number: self.counters.next_file_number,
            last_sequence,
        };
        edit.next_file_number = Some(counters.next_file_number);
        let r = if roll {
            let snap = snapshot(&version, counters, &cps);
            start_manifest(&*self.fs, &self.dir, number, &snap).map(|w| self.manifest = Some(w))
        } else {
            match self.manifest.as_mut() {
                Some(w) => w.append(&edit),
                None => Err(Error::InvalidArgument(
                    "the database is open read-only".into(),
                )),
            }
        };
        if let Err(e) = r {
            self.failed = Some(ManifestFailure {
                why: e.to_string(),
                retryable: e.is_no_space(),
            });
            return Err(e);
        }
        self.current = Arc::new(version);
        self.counters = counters;
        self.compact_pointers = cps;
        Ok(())
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
            return Err(Error::InvalidArgument(
                "the database is open read-only".into(),
            ));
        }
        let number = self.new_file_number();
        let snap = snapshot(&self.current, self.counters, &self.compact_pointers);
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
        self.current.live_file_numbers().collect()
    }

    /// Names in `dir_listing` that the DB may delete once the edit retiring
    /// them is durable (i.e. after a successful `log_and_apply`): WALs below
    /// [`VersionSet::log_number`], tables neither in the current version nor
    /// in `pinned` (the DB passes tables of versions readers still hold and
    /// tables being written), manifests other than the live one, and
    /// leftover `*.tmp` files (except a `CURRENT` temp for a newer manifest).
    /// `CURRENT`, `LOCK`, `LOG*`, blob files and foreign files are never
    /// listed. Sorted by file number (oldest first).
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
                Some(FileKind::Table(n)) => !live.contains(&n) && !pinned.contains(&n),
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
    Ok(())
}

fn file_number(kind: FileKind) -> Option<u64> {
    match kind {
        FileKind::Wal(n) | FileKind::Table(n) | FileKind::Blob(n) | FileKind::Manifest(n) => {
            Some(n)
        }
        _ => None,
    }
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

/// True for `CURRENT.nnnnnn.tmp` with `nnnnnn > manifest` (a switch that may
/// be in progress).
fn current_temp_newer_than(name: &str, manifest: u64) -> bool {
    name.strip_prefix("CURRENT.")
        .and_then(|s| s.strip_suffix(".tmp"))
        .and_then(|d| d.parse::<u64>().ok())
        .is_some_and(|n| n > manifest)
}
