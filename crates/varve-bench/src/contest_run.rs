//! `contest`: the PolarDB 2018 engine contest as it ran, one process per phase.
//!
//! The parent ([`run`]) never opens the database. It starts this same
//! binary once per phase with the run's own flags plus
//! `--contest_phase=<phase> --db=<dir>`:
//!
//! 1. **write** on a fresh database. Once every thread's last write was
//!    acknowledged the child reports and waits; the parent kills it with
//!    SIGKILL right away (no close, no flush: the contest's `kill -9`).
//! 2. **verify**: a new process opens the database (the reopen time is
//!    timed) and counts the keys; all `num` acknowledged keys must be there.
//! 3. **read**: a new process reads every key and checks each value.
//! 4. **range**: a new process has every thread scan everything twice.
//!
//! A child ([`run_phase`]) prints one `contest-phase:` line of
//! `name=value` fields (phase seconds, operations, bytes, open seconds, its
//! peak RSS, the file-system bytes it read and wrote, from `/proc/self`),
//! which the parent turns into db_bench-style result lines plus a summary.
//! A child's failure (a missing key, a wrong value, a crash) fails the run
//! with the child's error text.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};

use crate::engine;
use crate::flags::Flags;
use crate::report;
use crate::runner::RunResult;
use crate::stats::{Summary, format_line};
use crate::workloads::{Ctx, contest};

/// The phases, in order.
pub const PHASES: [&str; 4] = ["write", "verify", "read", "range"];

/// What one phase process reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseReport {
    /// `write`, `verify`, `read` or `range`.
    pub phase: String,
    /// Seconds the phase's work took (after the open).
    pub secs: f64,
    /// Operations (writes, keys counted, reads, scanned entries).
    pub ops: u64,
    /// Key and value bytes moved.
    pub bytes: u64,
    /// Seconds `open` took in this process.
    pub open_secs: f64,
    /// The process's peak RSS (`VmHWM`), bytes.
    pub peak_rss: u64,
    /// File-system bytes the process read (`/proc/self/io` `read_bytes`).
    pub read_bytes: u64,
    /// File-system bytes the process wrote (`write_bytes`).
    pub write_bytes: u64,
    /// CPU seconds (user + system, all threads) the phase's work took.
    pub cpu_secs: f64,
    /// Every option the engine ran with in this phase (the
    /// `contest-options:` line before the report line).
    pub options: Vec<String>,
}

/// The prefix of the line a phase prints its engine's options on, as JSON.
const OPTIONS_LINE: &str = "contest-options: ";

impl PhaseReport {
    /// The `contest-phase:` line.
    pub fn line(&self) -> String {
        format!(
            "contest-phase: phase={} secs={:.6} ops={} bytes={} open_secs={:.6} peak_rss={} \
             read_bytes={} write_bytes={} cpu_secs={:.3}",
            self.phase,
            self.secs,
            self.ops,
            self.bytes,
            self.open_secs,
            self.peak_rss,
            self.read_bytes,
            self.write_bytes,
            self.cpu_secs
        )
    }

    /// Parses a `contest-phase:` line.
    pub fn parse(line: &str) -> Option<PhaseReport> {
        let rest = line.strip_prefix("contest-phase: ")?;
        let mut r = PhaseReport::default();
        for field in rest.split_whitespace() {
            let (k, v) = field.split_once('=')?;
            match k {
                "phase" => r.phase = v.to_string(),
                "secs" => r.secs = v.parse().ok()?,
                "ops" => r.ops = v.parse().ok()?,
                "bytes" => r.bytes = v.parse().ok()?,
                "open_secs" => r.open_secs = v.parse().ok()?,
                "peak_rss" => r.peak_rss = v.parse().ok()?,
                "read_bytes" => r.read_bytes = v.parse().ok()?,
                "write_bytes" => r.write_bytes = v.parse().ok()?,
                "cpu_secs" => r.cpu_secs = v.parse().ok()?,
                _ => {}
            }
        }
        (!r.phase.is_empty()).then_some(r)
    }
}

/// `read_bytes` and `write_bytes` of `/proc/self/io` (zeros where absent).
fn proc_io() -> (u64, u64) {
    (
        report::io_read_bytes().unwrap_or(0),
        report::io_write_bytes().unwrap_or(0),
    )
}

/// Runs phase `phase` in this process on the database at `--db` and
/// prints its `contest-phase:` line on `out`. The write phase then waits
/// to be killed and never returns.
pub fn run_phase(flags: &Flags, phase: &str, out: &mut dyn Write) -> Result<()> {
    ensure!(
        PHASES.contains(&phase),
        "--contest_phase={phase}: one of {}",
        PHASES.join(", ")
    );
    let db = flags
        .db
        .as_deref()
        .context("--contest_phase needs --db (the contest run passes it)")?;
    let path = Path::new(db);
    let io0 = proc_io();
    let t0 = Instant::now();
    let opened = engine::open(flags, path)?;
    let open_secs = t0.elapsed().as_secs_f64();
    writeln!(
        out,
        "{OPTIONS_LINE}{}",
        serde_json::to_string(&opened.options)?
    )?;
    let threads_started = AtomicU64::new(0);
    let ycsb = crate::workloads::ycsb::YcsbState::default();
    let ctx = Ctx {
        flags,
        engine: opened.engine.as_ref(),
        seed: flags.seed.max(1),
        threads_started: &threads_started,
        latency: false,
        progress: None,
        ycsb: &ycsb,
    };
    let cpu0 = report::cpu_secs();
    let t1 = Instant::now();
    let (ops, bytes) = match phase {
        "write" => {
            let st = contest::write(&ctx)?;
            (st.done, st.bytes)
        }
        "verify" => {
            let n = contest::verify(&ctx)?;
            (n, 0)
        }
        "read" => {
            let st = contest::read(&ctx)?;
            (st.done, st.bytes)
        }
        _ => {
            let st = contest::range(&ctx)?;
            (st.done, st.bytes)
        }
    };
    let secs = t1.elapsed().as_secs_f64();
    let cpu_secs = match (cpu0, report::cpu_secs()) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    };
    let io1 = proc_io();
    let rep = PhaseReport {
        phase: phase.to_string(),
        secs,
        ops,
        bytes,
        open_secs,
        peak_rss: report::peak_rss().unwrap_or(0),
        read_bytes: io1.0.saturating_sub(io0.0),
        write_bytes: io1.1.saturating_sub(io0.1),
        cpu_secs,
        options: Vec::new(),
    };
    if flags.contest_stats {
        // Before the report line: the run kills the write phase on it.
        eprintln!("{}", opened.engine.stats());
    }
    writeln!(out, "{}", rep.line())?;
    out.flush()?;
    if phase == "write" {
        // Every write is acknowledged: wait for the SIGKILL, holding the
        // database open as the contest's process did.
        loop {
            std::thread::park();
        }
    }
    opened.engine.close()?;
    Ok(())
}

/// Starts phase `phase` as a child of this binary; returns its report. The
/// write phase's child is killed with SIGKILL as soon as it reported.
fn spawn_phase(flags: &Flags, db: &Path, phase: &str) -> Result<PhaseReport> {
    let exe = std::env::current_exe().context("finding this binary to start a phase")?;
    let mut cmd = Command::new(&exe);
    cmd.args(&flags.argv)
        .arg(format!("--db={}", db.display()))
        .arg("--benchmarks=contest")
        .arg(format!("--contest_phase={phase}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {} for the {phase} phase", exe.display()))?;
    let stdout = child.stdout.take().context("the phase's stdout")?;
    let mut report = None;
    let mut options = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading the phase's output")?;
        if let Some(json) = line.strip_prefix(OPTIONS_LINE) {
            options = serde_json::from_str(json).context("the phase's options line")?;
        }
        if let Some(mut r) = PhaseReport::parse(&line) {
            r.options = std::mem::take(&mut options);
            report = Some(r);
            if phase == "write" {
                // The contest's kill -9, right after the last
                // acknowledged write.
                child.kill().context("killing the write phase (SIGKILL)")?;
            }
            break;
        }
    }
    let status = child.wait().context("waiting for the phase process")?;
    match report {
        Some(r) => {
            ensure!(
                phase == "write" || status.success(),
                "the {phase} phase reported but then exited with {status}"
            );
            Ok(r)
        }
        None => bail!("the {phase} phase failed ({status}); its error is above"),
    }
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

fn summary(r: &PhaseReport, ops: u64) -> Summary {
    let secs = r.secs.max(1e-9);
    Summary {
        micros_per_op: if ops > 0 {
            secs * 1e6 / ops as f64
        } else {
            0.0
        },
        ops_per_sec: ops as f64 / secs,
        seconds: r.secs,
        ops,
        mb_per_sec: (r.bytes > 0).then(|| r.bytes as f64 / 1048576.0 / secs),
        bytes: r.bytes,
        found: None,
        reads: None,
        p50_us: None,
        p95_us: None,
        p99_us: None,
        p999_us: None,
        max_us: None,
    }
}

/// Runs the four phases on `db` (removed first) and prints their result
/// lines on `out`; returns them.
pub fn run(flags: &Flags, db: &Path, out: &mut dyn Write) -> Result<Vec<RunResult>> {
    ensure!(
        flags.engine != "memory",
        "contest runs each phase in a new process: the memory engine keeps nothing between them \
         (use contest_inprocess)"
    );
    let wanted: Vec<&str> = flags
        .contest_phases
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    for p in &wanted {
        ensure!(
            PHASES.contains(p),
            "--contest_phases: unknown phase `{p}` (phases: {})",
            PHASES.join(", ")
        );
    }
    let phases: Vec<&str> = PHASES.into_iter().filter(|p| wanted.contains(p)).collect();
    ensure!(!phases.is_empty(), "--contest_phases names no phase");
    if phases.contains(&"write") {
        engine::destroy(flags, db).with_context(|| format!("removing {}", db.display()))?;
    } else {
        ensure!(
            db.exists(),
            "--contest_phases without write needs an existing contest database at --db"
        );
    }
    writeln!(
        out,
        "contest: {} keys of {} bytes with {}-byte values, {} threads, engine {}, database {}",
        flags.num(),
        contest::KEY,
        contest::VALUE,
        flags.threads.max(1),
        flags.engine,
        db.display()
    )?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut reports = Vec::new();
    for (i, phase) in phases.into_iter().enumerate() {
        let r = spawn_phase(flags, db, phase)?;
        if i == 0 {
            writeln!(out, "{}", report::options_block(&r.options))?;
        }
        writeln!(
            out,
            "contest: {phase} done in {:.3} s (open {:.3} s, peak RSS {:.2} GiB, CPU {:.1} s: {:.0}% of {cores} cores)",
            r.secs,
            r.open_secs,
            gib(r.peak_rss),
            r.cpu_secs,
            100.0 * r.cpu_secs / (r.secs.max(1e-9) * cores as f64)
        )?;
        out.flush()?;
        reports.push(r);
    }
    let db_bytes = report::dir_bytes(db).unwrap_or(0);
    let mut results = Vec::new();
    for r in &reports {
        let (name, message) = match r.phase.as_str() {
            "write" => (
                "contest.write",
                format!("(SIGKILL after {} acknowledged writes)", r.ops),
            ),
            "verify" => (
                "contest.open",
                format!(
                    "(reopen after SIGKILL: open {:.3} s; {} of {} keys there)",
                    r.open_secs,
                    r.ops,
                    flags.num()
                ),
            ),
            "read" => (
                "contest.read",
                format!("({} of {} found, every value checked)", r.ops, flags.num()),
            ),
            _ => (
                "contest.range",
                format!(
                    "({} threads x {} scans; file-system reads {:.2} GiB = {:.2}x the database \
                     per pass)",
                    flags.threads.max(1),
                    contest::PASSES,
                    gib(r.read_bytes),
                    r.read_bytes as f64 / contest::PASSES as f64 / db_bytes.max(1) as f64
                ),
            ),
        };
        let s = summary(r, r.ops);
        let line = format_line(name, &s, &message);
        writeln!(out, "{line}")?;
        if let Some(j) = &flags.json {
            let rec = report::Record {
                name,
                engine: &flags.engine,
                engine_version: &flags.engine,
                bench_version: env!("CARGO_PKG_VERSION"),
                flags,
                seed: flags.seed,
                threads: flags.threads.max(1),
                summary: &s,
                message: &message,
                line: &line,
                notes: &[],
                engine_options: &r.options,
                peak_rss_bytes: Some(r.peak_rss),
                peak_rss_scope: "process",
                proc_io_write_bytes: Some(r.write_bytes),
                proc_io_read_bytes: Some(r.read_bytes),
                db_dir_bytes: Some(db_bytes),
                unix_time: report::unix_time(),
                ycsb: None,
            };
            report::append_json(j, &rec)?;
        }
        results.push(RunResult {
            name: name.to_string(),
            summary: s,
            message,
            line,
        });
    }
    let rss: Vec<String> = reports
        .iter()
        .map(|r| format!("{} {:.2}", r.phase, gib(r.peak_rss)))
        .collect();
    writeln!(
        out,
        "contest: database {:.2} GiB; peak RSS per phase process (GiB): {}",
        gib(db_bytes),
        rss.join(", ")
    )?;
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_line_round_trips() {
        let r = PhaseReport {
            phase: "range".into(),
            secs: 1.5,
            ops: 10,
            bytes: 41040,
            open_secs: 0.25,
            peak_rss: 1 << 30,
            read_bytes: 7,
            write_bytes: 9,
            cpu_secs: 2.75,
            options: Vec::new(),
        };
        assert_eq!(PhaseReport::parse(&r.line()), Some(r));
        assert_eq!(PhaseReport::parse("fillseq : 1 ops"), None);
        assert_eq!(PhaseReport::parse("contest-phase: secs=x"), None);
    }
}
