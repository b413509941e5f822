//! `varve`: the command-line tool of the varve storage engine (like
//! RocksDB's `ldb` and `sst_dump`). Parses the command line, runs one
//! command, maps the outcome to an exit code (see `args::EXIT_CODES` and
//! `docs/cli.md`). Single-threaded.

// `varve stats --json` builds one flat `json!` object of over sixty fields,
// past serde_json's default macro recursion depth.
#![recursion_limit = "256"]

mod args;
mod bytes;
mod commands;
mod open;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

/// Outcome of a command that did not fail.
pub enum Outcome {
    /// Exit code 0.
    Ok,
    /// Exit code 1: damage found.
    Corrupt,
    /// Exit code 3: `get` found no value.
    NotFound,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Corrupt) => ExitCode::from(1),
        Ok(Outcome::NotFound) => ExitCode::from(3),
        Err(e) => {
            eprintln!("varve: error: {e:#}");
            let corrupt = e.chain().any(|c| {
                c.downcast_ref::<varve::Error>().is_some_and(|v| {
                    matches!(
                        v,
                        varve::Error::Corruption { .. } | varve::Error::UnsupportedVersion { .. }
                    )
                })
            });
            ExitCode::from(if corrupt { 1 } else { 2 })
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<Outcome> {
    use commands::{admin, check, dump, kv, stats};
    match &cli.command {
        Command::Get { key } => kv::get(cli, key),
        Command::Put { key, value, sync } => kv::put(cli, key, value, *sync),
        Command::Delete { key } => kv::delete(cli, key),
        Command::DeleteRange { from, to } => kv::delete_range(cli, from, to),
        Command::Scan(a) => kv::scan(cli, a),
        Command::Keyspaces => admin::keyspaces(cli),
        Command::DropKeyspace { name } => admin::drop_keyspace(cli, name),
        Command::Stats => stats::stats(cli),
        Command::Anchors { parts, from, to } => {
            stats::anchors(cli, *parts, from.as_deref(), to.as_deref())
        }
        Command::Check => check::check(cli),
        Command::DumpWal { file } => dump::wal(cli, file),
        Command::DumpSst {
            file,
            limit,
            no_entries,
        } => dump::sst(cli, file, if *no_entries { Some(0) } else { *limit }),
        Command::DumpBlob { file, limit } => dump::blob(cli, file, *limit),
        Command::DumpManifest { file } => dump::manifest(cli, file.as_deref()),
        Command::Compact { from, to } => admin::compact(cli, from.as_deref(), to.as_deref()),
        Command::Checkpoint { dir } => admin::checkpoint(cli, dir),
        Command::Repair => admin::repair(cli),
    }
}
