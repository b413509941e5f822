//! Verifying a database directory without opening it ([`check_db`]). The
//! verdict is the open's: the directory is recovered exactly as a
//! read-write open recovers it, writing nothing and taking no lock
//! (`db::recover_read_only_state`: the manifest replayed and checked
//! against the directory, the staged chunks of blob files a crash left
//! open read in place, the WALs replayed with the same pointer check), and
//! anything that recovery refuses is damage in the file it names. Then
//! every live table (footer, meta blocks, every data block through a full
//! iteration, its size against the manifest), every blob pointer of a live
//! table or a replayed WAL record (the value it names is read, from the
//! blob file or its staging, and checked against the pointer's CRC), and
//! every live blob file (its header, every whole chunk's trailer and
//! entries, a sealed file's footer and its size against the manifest).
//!
//! What a read-write open accepts is not damage: a torn WAL or manifest
//! tail that the open cuts off (normal after a crash), a blob file a crash
//! left being created (no header yet), files the live manifest does not
//! list (the open deletes them), value bytes no live pointer names
//! (garbage). Those get a note, not a problem. Read-only; thread-safe.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::blob::format::PAGE;
use crate::blob::reader::{BlobReader, PointerCheck};
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind};
use crate::internal_iter::InternalIterator;
use crate::io::FileSystem;
use crate::keys::{ValueKind, parse_internal_key};
use crate::sst::{verify_table, verify_table_with};
use crate::version::manifest::{manifest_path, read_current, read_manifest};
use crate::wal::TailStatus;

/// What kind of file was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileCheckKind {
    /// `CURRENT`.
    Current,
    /// `MANIFEST-nnnnnn`.
    Manifest,
    /// `nnnnnn.sst`.
    Table,
    /// `nnnnnn.log`.
    Wal,
    /// `nnnnnn.blob`.
    Blob,
}

/// Where a file is damaged and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Byte offset of the damage (0 when it concerns the whole file).
    pub offset: u64,
    /// What is wrong.
    pub reason: String,
}

/// The verdict on one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedFile {
    /// The file.
    pub path: PathBuf,
    /// Its kind.
    pub kind: FileCheckKind,
    /// `None` when every checksum held.
    pub problem: Option<Problem>,
    /// Something an open accepts and deals with, worth knowing (a torn
    /// tail it cuts off after a crash, a file it deletes); never damage.
    pub note: Option<String>,
}

fn problem(e: Error) -> Problem {
    match e {
        Error::Corruption { offset, reason, .. } => Problem { offset, reason },
        other => Problem {
            offset: 0,
            reason: other.to_string(),
        },
    }
}

fn tail_problem(tail: TailStatus) -> Option<Problem> {
    match tail {
        TailStatus::Clean => None,
        TailStatus::Truncated { offset, reason } => Some(Problem {
            offset,
            reason: format!("damaged tail (an open would cut the file here): {reason}"),
        }),
    }
}

/// Checks one file of kind `kind` (see the module docs).
pub fn check_file(fs: &dyn FileSystem, path: &Path, kind: FileCheckKind) -> CheckedFile {
    let problem = match kind {
        FileCheckKind::Table => super::file_number(path, super::table, "nnnnnn.sst")
            .and_then(|_| verify_table(fs, path).map(|_| ()))
            .err()
            .map(problem),
        FileCheckKind::Wal => match super::dump_wal(fs, path) {
            // A live (or killed) memory-mapped log ends in preallocated
            // zeros: that is its normal state, not damage.
            Ok(d) => match d.tail {
                TailStatus::Truncated { offset, .. }
                    if crate::wal::zero_from(fs, path, offset).unwrap_or(false) =>
                {
                    None
                }
                tail => tail_problem(tail),
            },
            Err(e) => Some(problem(e)),
        },
        FileCheckKind::Manifest => match super::dump_manifest(fs, path) {
            Ok(d) => tail_problem(d.tail),
            Err(e) => Some(problem(e)),
        },
        // Every whole chunk and every value in it. A file that is not
        // sealed (a lane's open file, or one a crash cut) ends in the values
        // of a chunk not yet closed and preallocated zeros: normal, and the
        // values there are checked through the pointers that name them.
        FileCheckKind::Blob => super::file_number(path, super::blob, "nnnnnn.blob")
            .and_then(|_| super::dump_blob(fs, path).map(|_| ()))
            .err()
            .map(problem),
        FileCheckKind::Current => path
            .parent()
            .map(|dir| read_current(fs, dir))
            .and_then(|r| r.err())
            .map(problem),
    };
    CheckedFile {
        path: path.to_path_buf(),
        kind,
        problem,
        note: None,
    }
}

/// What the live manifest says the directory holds, as recovered.
struct Live {
    /// Table number -> (size, keyspace).
    tables: HashMap<u64, (u64, u32)>,
    /// Blob file number -> (keyspace, its state in the manifest).
    blobs: HashMap<u64, (u32, BlobState)>,
    /// WALs below this number are not replayed (the open deletes them).
    log_number: u64,
}

impl Live {
    fn of(versions: &crate::version::VersionSet) -> Live {
        let mut tables = HashMap::new();
        let mut blobs = HashMap::new();
        for (id, v) in versions.trees() {
            for level in 0..crate::version::NUM_LEVELS {
                for f in v.files(level) {
                    tables.insert(f.number, (f.file_size, id));
                }
            }
            for (&n, b) in v.blob_files() {
                let state = match (b.sealed, b.crash_closed) {
                    (false, _) => BlobState::Open,
                    (true, false) => BlobState::Sealed(b.size),
                    (true, true) => BlobState::CrashClosed(b.size),
                };
                blobs.insert(n, (id, state));
            }
        }
        Live {
            tables,
            blobs,
            log_number: versions.log_number(),
        }
    }

    fn blob_owner(&self) -> HashMap<u64, u32> {
        self.blobs.iter().map(|(&n, &(k, _))| (n, k)).collect()
    }
}

/// A blob file's state in the live manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlobState {
    /// Being written (or left open by a crash): any length, no footer.
    Open,
    /// Sealed with its footer, of this size.
    Sealed(u64),
    /// Closed by an open after a crash, at this size, without a footer
    /// (its last chunk may lack its entries).
    CrashClosed(u64),
}

/// A blob pointer that did not check out: whether a read reaches it is
/// asked of the database at the end (an older version of a key that a
/// newer one hides is read by nothing, and compaction drops it).
struct Unresolved {
    /// Where the pointer is (a table, or `None` for a replayed WAL record).
    source: Option<PathBuf>,
    keyspace: u32,
    key: Vec<u8>,
    /// The blob file it names.
    blob: Option<u64>,
    why: String,
}

/// A table the live manifest lists: every block (as [`check_file`]), in
/// the same pass every blob pointer (the value it names is read and checked
/// against the pointer's CRC; a failure, naming the key, the blob file and
/// the offset, goes to `unresolved`), then its size against the manifest's
/// `want`.
fn check_live_table(
    fs: &dyn FileSystem,
    path: &Path,
    (want, keyspace): (u64, u32),
    blobs: &mut PointerCheck<'_>,
    blob_owner: &HashMap<u64, u32>,
    unresolved: &mut Vec<Unresolved>,
) -> Result<Option<Problem>> {
    let source = path.display().to_string();
    let verified = super::file_number(path, super::table, "nnnnnn.sst").and_then(|_| {
        verify_table_with(fs, path, |key, value| {
            if let Some(p) = parse_internal_key(key)
                && p.kind == ValueKind::BlobIndex
                && let Err(why) =
                    check_pointer(&source, p.user_key, value, keyspace, blobs, blob_owner)
            {
                unresolved.push(Unresolved {
                    source: Some(path.to_path_buf()),
                    keyspace,
                    key: p.user_key.to_vec(),
                    blob: crate::blob::format::BlobPointer::decode(value).map(|b| b.file_number),
                    why,
                });
            }
            Ok(())
        })
    });
    if let Err(e) = verified {
        return Ok(Some(problem(e)));
    }
    let size = fs.file_size(path)?;
    Ok((size != want).then(|| Problem {
        offset: size.min(want),
        reason: format!("file is {size} bytes, the manifest says {want}"),
    }))
}

/// Asks a read-only view of the database whether a read of each
/// unresolved pointer's key fails: if it does, the pointer's value is
/// damage a reader meets (a problem of the table, or of the blob file for
/// a WAL record); if not, the pointer is an older version nothing reads
/// (a note).
fn resolve(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    keyspaces: &HashMap<u32, String>,
    unresolved: Vec<Unresolved>,
    out: &mut Vec<CheckedFile>,
) {
    if unresolved.is_empty() {
        return;
    }
    let options = crate::options::Options {
        fs: Arc::clone(fs),
        ..crate::options::Options::default()
    };
    let db = crate::db::Db::open_unlocked_for_check(dir, options);
    for u in unresolved {
        let read = match &db {
            Err(e) => Err(e.to_string()),
            Ok(db) => {
                let got = match keyspaces.get(&u.keyspace) {
                    None => db.get(&u.key),
                    Some(name) => db
                        .keyspace(name, crate::options::KeyspaceOptions::default())
                        .and_then(|k| k.get(&u.key)),
                };
                got.map(|_| ()).map_err(|e| e.to_string())
            }
        };
        // A WAL record's pointer is blamed on the blob file it names.
        let target = match (&u.source, u.blob) {
            (Some(table), _) => table.clone(),
            (None, Some(n)) => filenames::blob_file_path(dir, n),
            (None, None) => dir.join("CURRENT"),
        };
        let whence = match &u.source {
            Some(_) => "",
            None => "a replayed WAL record's ",
        };
        match read {
            Err(_) => blame(
                out,
                &target,
                kind_of_path(&target),
                Problem {
                    offset: 0,
                    reason: format!("{whence}{}", u.why),
                },
            ),
            Ok(()) => {
                let note = format!(
                    "{whence}{} (an older version that no read reaches: compaction drops it)",
                    u.why
                );
                match out.iter_mut().find(|c| c.path == target) {
                    Some(c) => {
                        c.note.get_or_insert(note);
                    }
                    None => out.push(CheckedFile {
                        path: target.clone(),
                        kind: kind_of_path(&target),
                        problem: None,
                        note: Some(note),
                    }),
                }
            }
        }
    }
}

/// Follows the blob pointer `raw` of `key` (keyspace `keyspace`, found in
/// `source`): the value must read and match the pointer's CRC, and the
/// file must be one of the keyspace's own.
fn check_pointer(
    source: &str,
    key: &[u8],
    raw: &[u8],
    keyspace: u32,
    blobs: &mut PointerCheck<'_>,
    blob_owner: &HashMap<u64, u32>,
) -> std::result::Result<(), String> {
    let key = || String::from_utf8_lossy(key).into_owned();
    let bp = blobs
        .check(raw)
        .map_err(|why| format!("key {:?} {why}", key()))?;
    match blob_owner.get(&bp.file_number) {
        Some(&k) if k == keyspace => Ok(()),
        owner => Err(format!(
            "key {:?} of keyspace {keyspace} in {source} points into blob file {}, which {}",
            key(),
            bp.file_number,
            match owner {
                Some(k) => format!("belongs to keyspace {k}"),
                None => "the live manifest does not list".to_string(),
            }
        )),
    }
}

/// A live blob file, read through `view` (staged chunks in place): its
/// header and every whole chunk's trailer and entries; a sealed file's
/// size against the manifest and its footer. Values are checked through
/// the pointers that name them.
fn check_live_blob(
    view: &dyn FileSystem,
    path: &Path,
    state: BlobState,
) -> std::result::Result<Option<String>, Problem> {
    let size = view.file_size(path).map_err(problem)?;
    let recorded = match state {
        BlobState::Open => None,
        BlobState::Sealed(n) | BlobState::CrashClosed(n) => Some(n),
    };
    if let Some(want) = recorded
        && size != want
    {
        return Err(Problem {
            offset: size.min(want),
            reason: format!("file is {size} bytes, the manifest records {want}"),
        });
    }
    // No header: a crash came while a lane created it, so no value is in
    // it (an open drops such a file; older builds closed it as it was).
    if size < PAGE as u64 && state != BlobState::Sealed(size) {
        return Ok(Some(format!(
            "a crash left it being created ({size} bytes, no header): it holds no value"
        )));
    }
    // A read of a value opens the file through its header: a damaged one
    // fails every pointer into the file, and those are checked (and
    // blamed) one by one; with no live pointer into it no read needs it.
    let reader = match BlobReader::open(view, path, false) {
        Ok(r) => r,
        Err(e) => {
            let p = problem(e);
            return Ok(Some(format!(
                "header damaged at offset {}: {} (no read needs it unless a pointer names \
                 this file, and each pointer is checked)",
                p.offset, p.reason
            )));
        }
    };
    // Chunk trailers, entries and the footer are read by no read of the
    // data (a value is read by its pointer, and checked against it): what
    // is wrong there is a note. Repair is what needs them.
    match reader.chunks(false) {
        Err(e) => {
            let p = problem(e);
            Ok(Some(format!(
                "chunk metadata damaged at offset {}: {} (no read needs it; values are checked \
                 through their pointers, but `varve repair` cannot use these chunks)",
                p.offset, p.reason
            )))
        }
        Ok(walk) if matches!(state, BlobState::Sealed(_)) && walk.footer.is_none() => {
            Ok(Some(format!(
                "no footer after offset {} (no read needs it; `varve repair` cannot use the \
                 chunks after it)",
                size.saturating_sub(walk.tail)
            )))
        }
        Ok(_) => Ok(None),
    }
}

/// Puts `p` on the checked file `path` (kind `kind`) of `out`, adding one
/// if the file is not there yet; a problem already found stays.
fn blame(out: &mut Vec<CheckedFile>, path: &Path, kind: FileCheckKind, p: Problem) {
    match out.iter_mut().find(|c| c.path == path) {
        Some(c) => {
            if c.problem.is_none() {
                c.problem = Some(p);
            }
        }
        None => out.push(CheckedFile {
            path: path.to_path_buf(),
            kind,
            problem: Some(p),
            note: None,
        }),
    }
}

/// The kind of check a file of `dir` named by an error gets.
fn kind_of_path(path: &Path) -> FileCheckKind {
    match path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(filenames::parse)
    {
        Some(FileKind::Table(_)) => FileCheckKind::Table,
        Some(FileKind::Wal(_)) => FileCheckKind::Wal,
        Some(FileKind::Blob(_)) => FileCheckKind::Blob,
        Some(FileKind::Current) => FileCheckKind::Current,
        _ => FileCheckKind::Manifest,
    }
}

/// Whether `name` is a file that holds data (a WAL, a table, a blob file).
fn holds_data(name: &str) -> bool {
    matches!(
        filenames::parse(name),
        Some(FileKind::Wal(_) | FileKind::Table(_) | FileKind::Blob(_))
    )
}

/// Checks each table, WAL and blob file of `names` (in `dir`) not in `out`
/// yet on its own ([`check_file`]): what is left when no manifest says
/// which files are live.
fn check_each_on_its_own(
    fs: &dyn FileSystem,
    dir: &Path,
    names: &[String],
    out: &mut Vec<CheckedFile>,
    progress: &mut impl FnMut(&Path),
) {
    for name in names {
        let path = dir.join(name);
        let kind = match filenames::parse(name) {
            Some(FileKind::Table(_)) => FileCheckKind::Table,
            Some(FileKind::Wal(_)) => FileCheckKind::Wal,
            Some(FileKind::Blob(_)) => FileCheckKind::Blob,
            _ => continue,
        };
        if out.iter().any(|c| c.path == path) {
            continue;
        }
        progress(&path);
        out.push(check_file(fs, &path, kind));
    }
}

/// Checks every file of the database in `dir`, calling `progress` before
/// each (see the module docs). Errors only if the directory cannot be
/// listed; damage is reported per file.
pub fn check_db(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    mut progress: impl FnMut(&Path),
) -> Result<Vec<CheckedFile>> {
    if !fs.is_dir(dir)? {
        return Err(Error::NotFound(dir.to_path_buf()));
    }
    let mut names = fs.list_dir(dir)?;
    names.sort();
    let mut out = Vec::new();
    let current = dir.join(crate::version::manifest::CURRENT);
    progress(&current);
    if !fs.exists(&current)? && !names.iter().any(|n| holds_data(n)) {
        // What a crash while the database was being created leaves (its
        // first manifest is written before `CURRENT` names it): an open
        // creates the database anew, so nothing is damaged.
        out.push(CheckedFile {
            path: current,
            kind: FileCheckKind::Current,
            problem: None,
            note: Some(
                "missing, and no WAL, table or blob file either: a database a crash left \
                 while it was being created (an open creates it anew)"
                    .into(),
            ),
        });
        return Ok(out);
    }
    let cur = check_file(fs.as_ref(), &current, FileCheckKind::Current);
    let live_manifest = if cur.problem.is_none() {
        read_current(fs.as_ref(), dir).ok()
    } else {
        None
    };
    out.push(cur);
    let Some(m) = live_manifest else {
        // Without a manifest to go by, every file is checked on its own.
        check_each_on_its_own(fs.as_ref(), dir, &names, &mut out, &mut progress);
        return Ok(out);
    };

    // The manifest's records one by one (a damaged record names its
    // offset), then the open's own recovery, whose verdict decides.
    let mpath = manifest_path(dir, m);
    progress(&mpath);
    let records = read_manifest(fs.as_ref(), dir, m, |_, _| Ok(()));
    let (mut mproblem, mut mnote) = (None, None);
    match records {
        Ok(o) => {
            if let TailStatus::Truncated { offset, reason } = o.tail {
                mnote = Some(format!(
                    "torn tail at offset {offset} ({reason}): an open cuts it off"
                ));
            }
        }
        Err(e) => mproblem = Some(problem(e)),
    }
    out.push(CheckedFile {
        path: mpath.clone(),
        kind: FileCheckKind::Manifest,
        problem: mproblem,
        note: None,
    });
    let options = crate::options::Options::default();
    let (versions, view, recovered) = match crate::db::recover_read_only_state(
        &fs,
        dir,
        &options,
        &crate::db::InfoLog::disabled(),
    ) {
        Ok(state) => (state.versions, state.view, Some(state.recovered)),
        Err(e) => {
            // The open refuses the directory: the file the error names is
            // damaged (the manifest when it names none of the files).
            let at = match &e {
                Error::Corruption { file, .. } if file.starts_with(dir) && file != dir => {
                    file.clone()
                }
                _ => mpath.clone(),
            };
            blame(&mut out, &at, kind_of_path(&at), problem(e));
            // The manifest alone, to go on checking each file against it.
            let unchecked = crate::version::VersionSet::recover_read_only(Arc::clone(&fs), dir)
                .and_then(|vs| {
                    let (view, _) = crate::db::staged_view(&fs, dir, &vs)?;
                    Ok((vs, view))
                });
            match unchecked {
                Ok((vs, view)) => (vs, view, None),
                Err(_) => {
                    check_each_on_its_own(fs.as_ref(), dir, &names, &mut out, &mut progress);
                    return Ok(out);
                }
            }
        }
    };
    if recovered.is_some()
        && let Some(c) = out.iter_mut().find(|c| c.path == mpath)
    {
        c.note = mnote;
    }
    let live = Live::of(&versions);
    let blob_owner = live.blob_owner();
    let mut blobs = PointerCheck::new(view.as_ref(), dir);
    let mut unresolved: Vec<Unresolved> = Vec::new();
    let keyspace_names: HashMap<u32, String> = versions.keyspaces().into_iter().collect();
    let cut: HashMap<PathBuf, String> = recovered
        .iter()
        .flat_map(|r| r.report.truncated.iter())
        .map(|t| {
            (
                t.file.clone(),
                format!(
                    "{} bytes after offset {} are not replayed ({}): an open cuts them off",
                    t.bytes_removed, t.offset, t.reason
                ),
            )
        })
        .collect();
    for name in &names {
        let path = dir.join(name);
        let (kind, number) = match filenames::parse(name) {
            Some(FileKind::Table(n)) => (FileCheckKind::Table, n),
            Some(FileKind::Wal(n)) => (FileCheckKind::Wal, n),
            Some(FileKind::Blob(n)) => (FileCheckKind::Blob, n),
            _ => continue,
        };
        progress(&path);
        let mut c = CheckedFile {
            path: path.clone(),
            kind,
            problem: None,
            note: None,
        };
        match kind {
            FileCheckKind::Table => match live.tables.get(&number) {
                Some(&want) => {
                    c.problem = check_live_table(
                        view.as_ref(),
                        &path,
                        want,
                        &mut blobs,
                        &blob_owner,
                        &mut unresolved,
                    )?;
                }
                None => {
                    c.note = Some("not in the live manifest: an open deletes it".into());
                }
            },
            // Replayed by the recovery above: its records checked out, and
            // a cut tail is what an open cuts too.
            FileCheckKind::Wal if number >= live.log_number => match &recovered {
                Some(_) => c.note = cut.get(&path).cloned(),
                // Recovery stopped before the logs: each is read on its own.
                None => c.problem = check_file(fs.as_ref(), &path, kind).problem,
            },
            FileCheckKind::Wal => {
                c.note = Some("older than the manifest's log number: an open deletes it".into());
            }
            FileCheckKind::Blob => match live.blobs.get(&number) {
                Some(&(_, state)) => match check_live_blob(view.as_ref(), &path, state) {
                    Ok(note) => c.note = note,
                    Err(p) => c.problem = Some(p),
                },
                None => c.note = Some("not in the live manifest: an open deletes it".into()),
            },
            _ => {}
        }
        match out.iter_mut().find(|o| o.path == c.path) {
            // Already blamed by recovery: that problem stays first.
            Some(o) => {
                o.problem = o.problem.take().or(c.problem);
                o.note = o.note.take().or(c.note);
            }
            None => out.push(c),
        }
    }
    // The values the replayed WAL records point to.
    let replayed = recovered.iter().flat_map(|r| r.memtables.iter());
    for (keyspace, mems) in replayed {
        for mem in mems {
            let mut it = mem.iter();
            it.seek_to_first();
            while it.valid() {
                if let Some(p) = parse_internal_key(it.key())
                    && p.kind == ValueKind::BlobIndex
                    && let Err(why) = check_pointer(
                        "a replayed WAL record",
                        p.user_key,
                        it.value(),
                        *keyspace,
                        &mut blobs,
                        &blob_owner,
                    )
                {
                    unresolved.push(Unresolved {
                        source: None,
                        keyspace: *keyspace,
                        key: p.user_key.to_vec(),
                        blob: crate::blob::format::BlobPointer::decode(it.value())
                            .map(|b| b.file_number),
                        why,
                    });
                }
                it.next();
            }
        }
    }
    drop(blobs);
    resolve(&fs, dir, &keyspace_names, unresolved, &mut out);
    // What the live manifest lists and the directory lacks.
    let mut missing: Vec<(PathBuf, &str)> = live
        .tables
        .keys()
        .filter(|n| !names.contains(&format!("{n:06}.sst")))
        .map(|&n| (filenames::table_path(dir, n), "table"))
        .chain(
            live.blobs
                .iter()
                .filter(|(n, (_, state))| {
                    *state != BlobState::Open && !names.contains(&format!("{n:06}.blob"))
                })
                .map(|(&n, _)| (filenames::blob_file_path(dir, n), "blob file")),
        )
        .collect();
    missing.sort();
    for (path, what) in missing {
        let kind = kind_of_path(&path);
        blame(
            &mut out,
            &path,
            kind,
            Problem {
                offset: 0,
                reason: format!("missing: the live manifest lists this {what}"),
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PosixFs;

    fn problems(dir: &Path) -> Vec<String> {
        check_db(Arc::new(PosixFs), dir, |_| {})
            .expect("check")
            .into_iter()
            .filter_map(|c| {
                c.problem
                    .map(|p| format!("{}: {}", c.path.display(), p.reason))
            })
            .collect()
    }

    /// A crash while a database was being created leaves a manifest and no
    /// `CURRENT`: an open creates the database anew, so check calls it
    /// clean; with a data file there, `CURRENT` was lost, which the open
    /// refuses and check flags.
    #[test]
    fn a_database_cut_while_being_created_is_not_damage() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("MANIFEST-000001"), b"half").expect("write");
        assert_eq!(problems(dir.path()), Vec::<String>::new());
        std::fs::write(dir.path().join("000002.log"), b"records").expect("write");
        let found = problems(dir.path());
        assert!(found.iter().any(|p| p.contains("CURRENT")), "{found:?}");
    }
}
