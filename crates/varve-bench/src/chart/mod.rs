//! `varve-bench chart`: SVG charts from `--json` record files.
//!
//! Owns the subcommand's flags ([`ChartArgs`]) and which charts are made
//! from which records ([`run`]):
//! - `throughput.svg`: ops/s as grouped bars, one group per workload (every
//!   record except the per-operation-type records of YCSB workloads), one
//!   bar per series (engine, or input file with `--series=file`);
//! - `latency-<workload>.svg`: for each workload with latencies, one panel
//!   per operation type (`ycsb_a.read`, `ycsb_a.update`; a non-YCSB
//!   workload is its own one panel), one line per series through
//!   p50/p95/p99/p99.9/max on a log scale.
//!
//! Files are written into `--out` (created); [`run`] returns their paths.
//! Single-threaded, no state beyond one call.

pub mod draw;
pub mod records;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use clap::Parser;

use records::{Entry, SeriesBy, distinct};

/// The chart subcommand's flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "varve-bench chart",
    rename_all = "snake_case",
    about = "SVG charts (throughput bars, latency percentile lines) from varve-bench --json files"
)]
pub struct ChartArgs {
    /// JSON record files (newline-delimited, as written by --json).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,

    /// Directory the SVG files are written to (created if missing).
    #[arg(long, default_value = "charts")]
    pub out: PathBuf,

    /// One series per `engine` (the record's engine) or per input `file`
    /// (its name without extension: to compare runs of one engine).
    #[arg(long, default_value = "engine", value_parser = ["engine", "file"])]
    pub series: String,
}

/// Parses `args` (program name first) and makes the charts, printing the
/// files written.
pub fn main<I, S>(args: I) -> Result<()>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let args: Vec<String> = args.into_iter().map(Into::into).collect();
    let a = match ChartArgs::try_parse_from(&args) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    for p in run(&a)? {
        println!("wrote {}", p.display());
    }
    Ok(())
}

/// A file name part made of `name`'s safe characters.
fn file_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write(path: &Path, svg: &str) -> Result<()> {
    std::fs::write(path, svg).with_context(|| format!("writing chart {}", path.display()))
}

/// Makes every chart; returns the files written.
pub fn run(a: &ChartArgs) -> Result<Vec<PathBuf>> {
    let by = if a.series == "file" {
        SeriesBy::File
    } else {
        SeriesBy::Engine
    };
    let entries = records::load(&a.files, by)?;
    ensure!(!entries.is_empty(), "no records in {:?}", a.files);
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("creating chart directory {}", a.out.display()))?;
    let series = distinct(&entries, |e| &e.series);
    let index = |s: &str| series.iter().position(|x| x == s);
    let mut written = Vec::new();

    let totals: Vec<&Entry> = entries
        .iter()
        .filter(|e| !e.is_op_type() && e.ops_per_sec.is_some())
        .collect();
    if !totals.is_empty() {
        let cats = distinct(totals.iter().copied(), |e| &e.name);
        let value = |c: usize, s: usize| {
            totals
                .iter()
                .find(|e| e.name == cats[c] && e.series == series[s])
                .and_then(|e| e.ops_per_sec)
        };
        let svg = draw::throughput("Throughput per workload", &cats, &series, &value)?;
        let p = a.out.join("throughput.svg");
        write(&p, &svg)?;
        written.push(p);
    }

    let timed: Vec<&Entry> = entries.iter().filter(|e| e.has_latency()).collect();
    for group in distinct(timed.iter().copied(), Entry::group) {
        let in_group: Vec<&Entry> = timed
            .iter()
            .copied()
            .filter(|e| e.group() == group)
            .collect();
        // A YCSB workload's panels are its operation types, not its total.
        let has_ops = in_group.iter().any(|e| e.is_op_type());
        let shown: Vec<&Entry> = in_group
            .into_iter()
            .filter(|e| !has_ops || e.is_op_type())
            .collect();
        let panels: Vec<draw::Panel> = distinct(shown.iter().copied(), |e| &e.name)
            .into_iter()
            .map(|name| draw::Panel {
                lines: shown
                    .iter()
                    .filter(|e| e.name == name)
                    .filter_map(|e| Some((index(&e.series)?, e.latency_us)))
                    .collect(),
                title: name,
            })
            .collect();
        let svg = draw::latency(&format!("{group}: latency percentiles"), &series, &panels)?;
        let p = a.out.join(format!("latency-{}.svg", file_part(&group)));
        write(&p, &svg)?;
        written.push(p);
    }
    Ok(written)
}
