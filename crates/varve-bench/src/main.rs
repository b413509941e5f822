//! `varve-bench`: db_bench's flags and result lines, for varve, RocksDB, fjall, redb and LMDB.
//!
//! Parses argv (db_bench's `-flag=value` spelling included), runs the
//! workloads, prints results on stdout and notes on stderr; exits non-zero
//! with the error chain (naming the database path) on failure.
//! `varve-bench chart FILE...` instead makes SVG charts of JSON records
//! ([`varve_bench::chart`]).

use std::process::ExitCode;

use varve_bench::flags::Flags;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("chart") {
        let args = std::iter::once("varve-bench chart".to_string()).chain(std::env::args().skip(2));
        return match varve_bench::chart::main(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("varve-bench chart: error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let flags = match Flags::parse_from_args(std::env::args()) {
        Ok(f) => f,
        Err(e) => e.exit(),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match varve_bench::runner::run(&flags, &mut out) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("varve-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
