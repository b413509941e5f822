//! Verifying a database directory without opening it ([`check_db`]):
//! `CURRENT` and the live manifest (every record checksum and edit), every
//! table (footer, meta blocks, then every data block through a full
//! iteration, and its size against the manifest), every pointer of a live
//! table into a blob file (the value it names is read and checked against
//! the pointer's CRC), every WAL (every record checksum and write batch),
//! every blob file (every whole chunk and every value). Read-only;
//! thread-safe.
//!
//! A damaged tail of a WAL or manifest is reported too: after a clean
//! shutdown there is none, after a crash the next open would cut it off.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::blob::reader::PointerCheck;
use crate::error::{Error, Result};
use crate::io::FileSystem;
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
    }
}

/// A table the live manifest lists: every block (as [`check_file`]), in
/// the same pass every blob pointer (the value it names is read and checked
/// against the pointer's CRC; a failure names the key, the blob file and
/// the offset), then its size against the manifest's `want`.
fn check_live_table(
    fs: &dyn FileSystem,
    path: &Path,
    (want, keyspace): (u64, u32),
    blobs: &mut PointerCheck<'_>,
    blob_owner: &HashMap<u64, u32>,
) -> Result<Option<Problem>> {
    let verified = super::file_number(path, super::table, "nnnnnn.sst").and_then(|_| {
        verify_table_with(
            fs,
            path,
            |key, value| match crate::keys::parse_internal_key(key) {
                Some(p) if p.kind == crate::keys::ValueKind::BlobIndex => {
                    let key = || String::from_utf8_lossy(p.user_key).into_owned();
                    let bp = blobs.check(value).map_err(|why| {
                        Error::corruption(path, 0, format!("key {:?} {why}", key()))
                    })?;
                    // A keyspace's tables point only into its own blob
                    // files (the ones its compactions collect).
                    match blob_owner.get(&bp.file_number) {
                        Some(&k) if k == keyspace => Ok(()),
                        owner => Err(Error::corruption(
                            path,
                            0,
                            format!(
                                "key {:?} of keyspace {keyspace} points into blob file {}, \
                                 which {}",
                                key(),
                                bp.file_number,
                                match owner {
                                    Some(k) => format!("belongs to keyspace {k}"),
                                    None => "the live manifest does not list".to_string(),
                                }
                            ),
                        )),
                    }
                }
                _ => Ok(()),
            },
        )
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

/// Checks every file of the database in `dir`, calling `progress` before
/// each. Errors only if the directory cannot be listed; damage is reported
/// per file.
pub fn check_db(
    fs: &dyn FileSystem,
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
    let cur = check_file(fs, &current, FileCheckKind::Current);
    let live_manifest = if cur.problem.is_none() {
        read_current(fs, dir).ok()
    } else {
        None
    };
    out.push(cur);

    // Live tables (number -> size, keyspace) and blob files (number ->
    // keyspace) according to the manifest.
    let mut live: HashMap<u64, (u64, u32)> = HashMap::new();
    let mut blob_owner: HashMap<u64, u32> = HashMap::new();
    if let Some(m) = live_manifest {
        let path = manifest_path(dir, m);
        progress(&path);
        let r = read_manifest(fs, dir, m, |edit, _| {
            for (_, n) in &edit.deleted_files {
                live.remove(n);
            }
            for (_, f) in &edit.new_files {
                live.insert(f.number, (f.file_size, edit.keyspace));
            }
            for n in &edit.deleted_blob_files {
                blob_owner.remove(n);
            }
            for b in &edit.blob_files {
                blob_owner.insert(b.number, edit.keyspace);
            }
            // A dropped keyspace's files leave with it.
            for k in &edit.dropped_keyspaces {
                live.retain(|_, (_, ks)| ks != k);
                blob_owner.retain(|_, ks| ks != k);
            }
            Ok(())
        });
        out.push(CheckedFile {
            path,
            kind: FileCheckKind::Manifest,
            problem: match r {
                Ok(o) => tail_problem(o.tail),
                Err(e) => Some(problem(e)),
            },
        });
    }
    let mut blobs = PointerCheck::new(fs, dir);
    for name in &names {
        let path = dir.join(name);
        let kind = match crate::filenames::parse(name) {
            Some(crate::filenames::FileKind::Table(_)) => FileCheckKind::Table,
            Some(crate::filenames::FileKind::Wal(_)) => FileCheckKind::Wal,
            Some(crate::filenames::FileKind::Blob(_)) => FileCheckKind::Blob,
            _ => continue,
        };
        progress(&path);
        let live_size = match crate::filenames::parse(name) {
            Some(crate::filenames::FileKind::Table(n)) => live.get(&n).copied(),
            _ => None,
        };
        let c = match live_size {
            Some(want) => CheckedFile {
                problem: check_live_table(fs, &path, want, &mut blobs, &blob_owner)?,
                path,
                kind,
            },
            None => check_file(fs, &path, kind),
        };
        out.push(c);
    }
    let mut missing: Vec<u64> = live
        .keys()
        .copied()
        .filter(|n| !names.contains(&format!("{n:06}.sst")))
        .collect();
    missing.sort_unstable();
    for n in missing {
        out.push(CheckedFile {
            path: dir.join(format!("{n:06}.sst")),
            kind: FileCheckKind::Table,
            problem: Some(Problem {
                offset: 0,
                reason: "missing: the live manifest lists this table".into(),
            }),
        });
    }
    Ok(out)
}
