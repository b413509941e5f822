//! The run: open the database, run each workload in order, report each.
//!
//! [`run`] owns the database directory (a temp dir removed at the end unless
//! `--db` is given), the open engine, and the seed. Fresh-DB workloads
//! (fillseq, fillrandom, ...) close, destroy and reopen it first, or are
//! skipped under `--use_existing_db`, as in db_bench. Result lines go to the
//! given writer (stdout in the binary), notes to stderr, JSON to `--json`.
//! Returns every result so tests can check counts.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;

use anyhow::{Context, Result};

use crate::contest_run;
use crate::engine::{self, Engine};
use crate::flags::Flags;
use crate::progress;
use crate::report::{self, Record};
use crate::stats::{Summary, format_histogram, format_line};
use crate::workloads::{self, Ctx};

/// One printed result.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Workload name as printed.
    pub name: String,
    /// Its numbers.
    pub summary: Summary,
    /// Its message, including `(X of Y found)`.
    pub message: String,
    /// The result line as printed.
    pub line: String,
}

/// The run's database directory: `--db`, or a new temporary directory
/// (returned to be kept alive, removed when dropped).
fn db_dir(flags: &Flags) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    Ok(match &flags.db {
        Some(p) => (PathBuf::from(p), None),
        None => {
            let t = tempfile::Builder::new()
                .prefix("varve-bench-")
                .tempdir()
                .context("creating a temporary database directory under $TMPDIR")?;
            (t.path().join("db"), Some(t))
        }
    })
}

/// Runs every workload of `--benchmarks`, printing to `out`.
pub fn run(flags: &Flags, out: &mut dyn Write) -> Result<Vec<RunResult>> {
    if let Some(phase) = &flags.contest_phase {
        contest_run::run_phase(flags, phase, out)?;
        return Ok(Vec::new());
    }
    let names = flags.benchmark_list();
    for n in &names {
        anyhow::ensure!(
            workloads::ALL.contains(&n.as_str()),
            "unknown benchmark `{n}` (known: {})",
            workloads::ALL.join(", ")
        );
    }
    if names.iter().any(|n| n == "contest") {
        anyhow::ensure!(
            names.len() == 1,
            "contest runs alone (each of its phases is a process of its own): \
             --benchmarks=contest"
        );
        let (path, _tmp) = db_dir(flags)?;
        return contest_run::run(flags, &path, out);
    }
    let (path, _tmp) = db_dir(flags)?;
    let seed = if flags.seed == 0 {
        let s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_micros() as u64);
        eprintln!("Set seed to {s} because --seed was 0");
        s
    } else {
        flags.seed
    };
    let mut opened = engine::open(flags, &path)?;
    for i in &opened.ignored {
        eprintln!("varve-bench: {}: ignored: {i}", flags.engine);
    }
    let version = opened.engine.version();
    writeln!(out, "{}", report::header(flags, &version, &path, seed))?;
    writeln!(out, "{}", report::options_block(&opened.options))?;
    let mut results = Vec::new();
    let threads_started = AtomicU64::new(0);
    let ycsb = workloads::ycsb::YcsbState::default();
    for name in &names {
        let fresh = workloads::is_fresh(name);
        if fresh && flags.use_existing_db {
            writeln!(out, "{name:<12} : skipped (--use_existing_db is true)")?;
            continue;
        }
        if fresh {
            opened.engine.close()?;
            engine::destroy(flags, &path)
                .with_context(|| format!("removing database {}", path.display()))?;
            opened = engine::open(flags, &path)?;
        }
        let scope = if report::reset_peak_rss() {
            "workload"
        } else {
            "process"
        };
        let io_before = report::io_write_bytes();
        let read_before = report::io_read_bytes();
        let engine: &dyn Engine = opened.engine.as_ref();
        let ctx = Ctx {
            flags,
            engine,
            seed,
            threads_started: &threads_started,
            latency: flags.histogram || flags.json.is_some(),
            progress: progress::bar(name, workloads::expected_ops(name, flags)),
            ycsb: &ycsb,
        };
        let outcomes = workloads::run(name, &ctx)
            .with_context(|| format!("{name} on {} at {}", flags.engine, path.display()))?;
        if let Some(p) = &ctx.progress {
            p.finish_and_clear();
        }
        let io = match (io_before, report::io_write_bytes()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        let io_read = match (read_before, report::io_read_bytes()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        for o in outcomes {
            let summary = o.stats.summary();
            let message = report::message(&summary, &o.stats.message);
            let line = format_line(&o.name, &summary, &message);
            if o.text.is_none() {
                writeln!(out, "{line}")?;
            }
            if flags.histogram
                && o.text.is_none()
                && let Some(h) = &o.stats.hist
            {
                writeln!(out, "{}", format_histogram(o.op, h))?;
            }
            if let Some(t) = &o.text {
                write!(out, "{t}")?;
            }
            out.flush()?;
            for n in &o.notes {
                eprintln!("varve-bench: {}: {n}", flags.engine);
            }
            let mut notes = opened.ignored.clone();
            notes.extend(o.notes.iter().cloned());
            if let Some(j) = &flags.json {
                let rec = Record {
                    name: &o.name,
                    engine: &flags.engine,
                    engine_version: &version,
                    bench_version: env!("CARGO_PKG_VERSION"),
                    flags,
                    seed,
                    threads: o.threads,
                    summary: &summary,
                    message: &message,
                    line: &line,
                    notes: &notes,
                    engine_options: &opened.options,
                    peak_rss_bytes: report::peak_rss(),
                    peak_rss_scope: scope,
                    proc_io_write_bytes: io,
                    proc_io_read_bytes: io_read,
                    db_dir_bytes: report::dir_bytes(&path),
                    unix_time: report::unix_time(),
                    ycsb: o.ycsb.as_ref(),
                };
                report::append_json(j, &rec)?;
            }
            results.push(RunResult {
                name: o.name,
                summary,
                message,
                line,
            });
        }
    }
    opened
        .engine
        .close()
        .with_context(|| format!("closing {}", path.display()))?;
    Ok(results)
}
