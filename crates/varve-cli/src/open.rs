//! Opening the database for a command (read-only for the commands that
//! only read), with errors an operator can act on:
//! a missing database, a database locked by another process (pointing to
//! `checkpoint` and to the commands that need no open), a path that is not
//! a directory. Single-threaded.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use varve::{Db, Error, Keyspace, KeyspaceOptions, Options};

use crate::args::Cli;

/// The `--db` path, or a usage error.
pub fn db_path(cli: &Cli) -> Result<&Path> {
    cli.db
        .as_deref()
        .ok_or_else(|| anyhow!("this command needs the database directory: --db PATH"))
}

/// Opens the existing database of `--db` (never creates one).
pub fn open_existing(cli: &Cli) -> Result<Db> {
    let path = db_path(cli)?;
    open_at(path, false)
}

/// Opens the existing database of `--db` read-only: nothing in the
/// directory changes (WAL data is replayed into memory only).
pub fn open_read_only(cli: &Cli) -> Result<Db> {
    let path = db_path(cli)?;
    check_openable(path)?;
    Db::open_read_only(path, Options::default()).map_err(|e| explain(path.to_path_buf(), e))
}

/// A clear error for a missing database or one that lost its manifest.
fn check_openable(path: &Path) -> Result<()> {
    if !path.exists() {
        bail!(
            "no database at {}: the directory does not exist",
            path.display()
        );
    }
    if !path.join("CURRENT").exists() && has_db_files(path) {
        let e = Error::corruption(
            path.join("CURRENT"),
            0,
            "CURRENT is missing but the directory holds database files",
        );
        return Err(explain(path.to_path_buf(), e));
    }
    Ok(())
}

/// Opens `--db`, creating it if `create` is set.
pub fn open_at(path: &Path, create: bool) -> Result<Db> {
    if !create {
        check_openable(path)?;
    }
    let options = Options {
        create_if_missing: create,
        ..Options::default()
    };
    Db::open(path, options).map_err(|e| explain(path.to_path_buf(), e))
}

/// True if `dir` holds tables, WALs or manifests.
fn has_db_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.filter_map(|e| e.ok()).any(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.ends_with(".sst") || n.ends_with(".log") || n.starts_with("MANIFEST-")
        })
    })
}

fn explain(path: PathBuf, e: Error) -> anyhow::Error {
    let hint = match &e {
        Error::Locked { .. } => Some(format!(
            "the database {} is open in another process, and this command must open it \
             (even read-only: the writer may delete files under it). Stop that process, or \
             have it write a copy with Db::checkpoint and run varve on the copy; `varve check` \
             and `varve dump-*` read the files without opening",
            path.display()
        )),
        Error::NotFound(_) => Some(format!(
            "no database at {} (no CURRENT file); `varve put` creates one",
            path.display()
        )),
        Error::Corruption { .. } => Some(format!(
            "the database {} is damaged; `varve check` lists every damaged file, \
             `varve repair` rebuilds the manifest from what is intact",
            path.display()
        )),
        _ => None,
    };
    let e = anyhow::Error::new(e);
    match hint {
        Some(h) => e.context(h),
        None => e.context(format!("opening {}", path.display())),
    }
}

/// `Err` with context naming `what` on `path`.
pub fn with_path<T>(r: varve::Result<T>, what: &str, path: &Path) -> Result<T> {
    r.with_context(|| format!("{what} {}", path.display()))
}

/// The keyspace `--keyspace` names in `db` (the default keyspace without
/// it); created when `create` is set, else an error naming the database.
pub fn keyspace(cli: &Cli, db: &Db, create: bool) -> Result<Keyspace> {
    let name = match cli.keyspace.as_deref() {
        None | Some("default") => return Ok(db.default_keyspace()),
        Some(name) => name,
    };
    if !create && !db.keyspaces().iter().any(|k| k == name) {
        bail!(
            "no keyspace {name:?} in {} (`varve keyspaces` lists them)",
            db.path().display()
        );
    }
    Ok(db.keyspace(name, KeyspaceOptions::default())?)
}
