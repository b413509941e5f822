//! `check`: verify every file of the database without opening it. The
//! verdict is the open's (`varve::tools::check_db`): what a read-write open
//! accepts (a torn tail it cuts after a crash, files it deletes) is `ok`
//! with a note; damage a read or the open would meet is `CORRUPT`.

use std::io::IsTerminal;

use anyhow::Result;
use serde_json::json;
use varve::fs::PosixFs;
use varve::tools::{FileCheckKind, check_db};

use super::print_json;
use crate::Outcome;
use crate::args::Cli;
use crate::open::{db_path, with_path};

fn kind_name(k: FileCheckKind) -> &'static str {
    match k {
        FileCheckKind::Current => "current",
        FileCheckKind::Manifest => "manifest",
        FileCheckKind::Table => "table",
        FileCheckKind::Wal => "wal",
        FileCheckKind::Blob => "blob",
    }
}

/// `check`: exit 1 if any file is damaged.
pub fn check(cli: &Cli) -> Result<Outcome> {
    let dir = db_path(cli)?;
    if !dir.is_dir() {
        anyhow::bail!("no database at {}: not a directory", dir.display());
    }
    // A spinner naming the file being checked, only on a terminal.
    let bar = std::io::stderr()
        .is_terminal()
        .then(indicatif::ProgressBar::new_spinner);
    let files = with_path(
        check_db(std::sync::Arc::new(PosixFs), dir, |p| {
            if let Some(b) = &bar {
                b.set_message(format!("checking {}", p.display()));
                b.tick();
            }
        }),
        "checking",
        dir,
    );
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let files = files?;
    let damaged = files.iter().filter(|f| f.problem.is_some()).count();
    if cli.json {
        let rows: Vec<_> = files
            .iter()
            .map(|f| {
                json!({
                    "path": f.path.display().to_string(),
                    "kind": kind_name(f.kind),
                    "ok": f.problem.is_none(),
                    "offset": f.problem.as_ref().map(|p| p.offset),
                    "reason": f.problem.as_ref().map(|p| p.reason.clone()),
                    "note": f.note.clone(),
                })
            })
            .collect();
        print_json(&json!({"files": rows, "checked": files.len(), "damaged": damaged}));
    } else {
        for f in &files {
            match &f.problem {
                None => match &f.note {
                    None => println!("ok       {:<8} {}", kind_name(f.kind), f.path.display()),
                    Some(n) => println!(
                        "ok       {:<8} {} (note: {n})",
                        kind_name(f.kind),
                        f.path.display()
                    ),
                },
                Some(p) => println!(
                    "CORRUPT  {:<8} {} offset {}: {}",
                    kind_name(f.kind),
                    f.path.display(),
                    p.offset,
                    p.reason
                ),
            }
        }
        println!("checked {} files: {damaged} damaged", files.len());
    }
    Ok(if damaged > 0 {
        Outcome::Corrupt
    } else {
        Outcome::Ok
    })
}
