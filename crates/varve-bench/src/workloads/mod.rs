//! The workloads, by db_bench name, and the thread driver they share.
//!
//! [`run`] maps a workload name to its function. A workload gets a [`Ctx`]
//! (flags, engine, seed, measurement switches) and returns one or more
//! [`Outcome`]s: merged [`Stats`] plus the label its latency is reported
//! under. [`run_threads`] starts N threads on a barrier, gives each its own
//! `Stats`, and merges them; a thread's error stops the workload with that
//! error. Workloads never print; the runner does.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, bail};
use indicatif::ProgressBar;

use crate::engine::{Engine, WriteOpts};
use crate::flags::Flags;
use crate::keygen::{Rng, WriteMode};
use crate::stats::Stats;

pub mod contest;
pub mod meta;
pub mod read;
pub mod scan;
pub mod write;
pub mod ycsb;

/// What a workload needs to run.
pub struct Ctx<'a> {
    /// The run's flags.
    pub flags: &'a Flags,
    /// The engine under test.
    pub engine: &'a dyn Engine,
    /// Seed base; the n-th thread of the run seeds its generator with
    /// `seed + n` (n counts from 1 across workloads, as db_bench's
    /// `total_thread_count_`, so readrandom does not replay fillrandom's keys).
    pub seed: u64,
    /// Threads started so far in this run.
    pub threads_started: &'a AtomicU64,
    /// Record per-operation latency.
    pub latency: bool,
    /// Progress bar to advance, when stderr is a terminal.
    pub progress: Option<ProgressBar>,
    /// The record count the run's YCSB workloads hand on to each other.
    pub ycsb: &'a ycsb::YcsbState,
}

impl Ctx<'_> {
    /// A generator for a newly started thread, seeded as db_bench seeds it.
    pub fn thread_rng(&self) -> Rng {
        let n = self.threads_started.fetch_add(1, Ordering::Relaxed) + 1;
        Rng::new(self.seed.wrapping_add(n))
    }
}

/// The result of one (sub-)workload.
pub struct Outcome {
    /// Name printed on the result line.
    pub name: String,
    /// Merged stats of all threads.
    pub stats: Stats,
    /// Latency label: write, read, seek, op.
    pub op: &'static str,
    /// Threads that ran it.
    pub threads: usize,
    /// Notes for stderr and the JSON record (what the engine did instead).
    pub notes: Vec<String>,
    /// Text to print after the result line (the `stats` workload).
    pub text: Option<String>,
    /// What a YCSB result is (workload, mix, distribution, ...), for JSON.
    pub ycsb: Option<ycsb::Info>,
}

impl Outcome {
    /// An outcome with no notes or text.
    pub fn new(name: &str, stats: Stats, op: &'static str, threads: usize) -> Outcome {
        Outcome {
            name: name.to_string(),
            stats,
            op,
            threads,
            notes: Vec::new(),
            text: None,
            ycsb: None,
        }
    }
}

/// Whether `name` starts from an empty database (db_bench's `fresh_db`).
pub fn is_fresh(name: &str) -> bool {
    matches!(
        name,
        "fillseq"
            | "fillrandom"
            | "filluniquerandom"
            | "fillsync"
            | "contest_inprocess"
            | "ycsb_load"
    )
}

/// Every workload name this tool knows.
pub const ALL: &[&str] = &[
    "fillseq",
    "fillrandom",
    "filluniquerandom",
    "overwrite",
    "fillsync",
    "readrandom",
    "multireadrandom",
    "readseq",
    "readreverse",
    "seekrandom",
    "deleterange",
    "flush",
    "compact",
    "waitforcompaction",
    "stats",
    "count",
    "contest",
    "contest_inprocess",
    "ycsb_load",
    "ycsb_a",
    "ycsb_b",
    "ycsb_c",
    "ycsb_d",
    "ycsb_e",
    "ycsb_f",
];

/// Expected operation count (for the progress bar), if known.
pub fn expected_ops(name: &str, f: &Flags) -> Option<u64> {
    let t = f.threads as u64;
    match name {
        "fillseq" | "fillrandom" | "overwrite" | "fillsync" => Some(f.writes() * t),
        "filluniquerandom" => Some(f.writes()),
        "readrandom" | "multireadrandom" | "readseq" | "readreverse" | "seekrandom" => {
            Some(f.reads() * t)
        }
        "count" | "ycsb_load" => Some(f.num()),
        n if n.starts_with("ycsb_") => Some(ycsb::operations(f)),
        _ => None,
    }
}

/// Runs workload `name`.
pub fn run(name: &str, ctx: &Ctx<'_>) -> Result<Vec<Outcome>> {
    let f = ctx.flags;
    let wo = WriteOpts {
        sync: f.sync,
        disable_wal: f.disable_wal,
    };
    let out = match name {
        "fillseq" => write::fill(ctx, name, WriteMode::Sequential, f.num(), wo, f.threads)?,
        "fillrandom" | "overwrite" => {
            write::fill(ctx, name, WriteMode::Random, f.num(), wo, f.threads)?
        }
        "filluniquerandom" => {
            if f.threads > 1 {
                eprintln!("filluniquerandom multithreaded not supported, use 1 thread");
            }
            write::fill(ctx, name, WriteMode::UniqueRandom, f.num(), wo, 1)?
        }
        "fillsync" => {
            let wo = WriteOpts { sync: true, ..wo };
            write::fill(ctx, name, WriteMode::Random, f.num() / 1000, wo, f.threads)?
        }
        "readrandom" => read::read_random(ctx)?,
        "multireadrandom" => read::multi_read_random(ctx)?,
        "readseq" => scan::read_seq(ctx, false)?,
        "readreverse" => scan::read_seq(ctx, true)?,
        "seekrandom" => scan::seek_random(ctx)?,
        "count" => scan::count(ctx)?,
        "flush" | "compact" | "waitforcompaction" | "stats" | "deleterange" => {
            meta::run(ctx, name)?
        }
        "contest_inprocess" => return contest::run_inprocess(ctx),
        n if n.starts_with("ycsb_") => return ycsb::run(n, ctx),
        "contest" => bail!("contest runs its phases as processes of their own, not in a list"),
        other => bail!("unknown benchmark `{other}` (known: {})", ALL.join(", ")),
    };
    Ok(vec![out])
}

/// Runs `body(thread_index, stats)` on `n` threads started together, and
/// merges their stats.
pub fn run_threads<F>(ctx: &Ctx<'_>, n: usize, body: F) -> Result<Stats>
where
    F: Fn(usize, &mut Stats) -> Result<()> + Sync,
{
    let n = n.max(1);
    let barrier = Barrier::new(n);
    let results: Vec<Result<Stats>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let body = &body;
                let barrier = &barrier;
                let progress = ctx.progress.clone();
                let latency = ctx.latency;
                s.spawn(move || {
                    let mut st = Stats::new(latency, progress);
                    barrier.wait();
                    st.start();
                    let r = body(i, &mut st);
                    st.stop();
                    r.map(|()| st)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a workload thread panicked")))
            })
            .collect()
    });
    let mut merged: Option<Stats> = None;
    for r in results {
        let st = r?;
        match &mut merged {
            None => merged = Some(st),
            Some(m) => m.merge(&st),
        }
    }
    Ok(merged.expect("at least one thread"))
}
