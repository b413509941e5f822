//! `compact`, `checkpoint`, `repair`: administration.

use std::path::Path;

use anyhow::Result;
use serde_json::json;
use varve::{Db, Options};

use super::print_json;
use crate::Outcome;
use crate::args::Cli;
use crate::bytes::parse;
use crate::open::{db_path, keyspace, open_existing, open_read_only, with_path};

/// `compact [--from K] [--to K]`.
pub fn compact(cli: &Cli, from: Option<&str>, to: Option<&str>) -> Result<Outcome> {
    let from = from.map(parse).transpose()?;
    let to = to.map(parse).transpose()?;
    let db = open_existing(cli)?;
    keyspace(cli, &db, false)?.compact_range(from.as_deref(), to.as_deref())?;
    let levels: Vec<usize> = db.stats().levels.iter().map(|l| l.files).collect();
    db.close()?;
    if cli.json {
        print_json(&json!({"ok": true, "files_per_level": levels}));
    } else {
        println!("compacted; files per level: {levels:?}");
    }
    Ok(Outcome::Ok)
}

/// `keyspaces`.
pub fn keyspaces(cli: &Cli) -> Result<Outcome> {
    let db = open_read_only(cli)?;
    let names = db.keyspaces();
    db.close()?;
    if cli.json {
        print_json(&json!({ "keyspaces": names }));
    } else {
        for n in names {
            println!("{n}");
        }
    }
    Ok(Outcome::Ok)
}

/// `drop-keyspace NAME`.
pub fn drop_keyspace(cli: &Cli, name: &str) -> Result<Outcome> {
    let db = open_existing(cli)?;
    db.drop_keyspace(name)?;
    db.close()?;
    if cli.json {
        print_json(&json!({"ok": true, "dropped": name}));
    } else {
        println!("dropped keyspace {name}");
    }
    Ok(Outcome::Ok)
}

/// `checkpoint DIR`.
pub fn checkpoint(cli: &Cli, dir: &Path) -> Result<Outcome> {
    let db = open_existing(cli)?;
    with_path(db.checkpoint(dir), "writing checkpoint", dir)?;
    db.close()?;
    if cli.json {
        print_json(&json!({"ok": true, "checkpoint": dir.display().to_string()}));
    } else {
        println!("checkpoint written to {}", dir.display());
    }
    Ok(Outcome::Ok)
}

/// `repair`.
pub fn repair(cli: &Cli) -> Result<Outcome> {
    let dir = db_path(cli)?;
    let r = with_path(Db::repair(dir, &Options::default()), "repairing", dir)?;
    if cli.json {
        print_json(&json!({
            "tables": r.tables,
            "wals": r.wals,
            "wals_salvaged": r.wals_salvaged.iter().map(|(n, k)| json!({"number": n, "records_kept": k})).collect::<Vec<_>>(),
            "lost": r.lost.iter().map(|(f, why)| json!({"file": f, "reason": why})).collect::<Vec<_>>(),
            "outputs": r.outputs,
            "entries": r.entries,
            "manifest_number": r.manifest_number,
            "last_sequence": r.last_sequence,
            "blob_files": r.blob_files,
            "keyspaces": r.keyspaces,
            "blob_keys_lost": r.blob_keys_lost.iter().map(|(k, why)| json!({"key": String::from_utf8_lossy(k), "reason": why})).collect::<Vec<_>>(),
        }));
    } else {
        println!(
            "repaired {}: merged {} tables and {} WALs into {} tables ({} entries), new manifest MANIFEST-{:06}",
            dir.display(),
            r.tables.len(),
            r.wals.len(),
            r.outputs.len(),
            r.entries,
            r.manifest_number
        );
        for (n, k) in &r.wals_salvaged {
            println!("  WAL {n:06}.log damaged: merged its first {k} good records");
        }
        for (f, why) in &r.lost {
            println!("  moved {f} to lost/: {why}");
        }
        if !r.blob_files.is_empty() {
            println!("  kept {} blob files", r.blob_files.len());
        }
        for (k, why) in &r.blob_keys_lost {
            println!(
                "  dropped key {:?}: its blob value is lost: {why}",
                String::from_utf8_lossy(k)
            );
        }
    }
    Ok(Outcome::Ok)
}
