//! Reading `--json` record files for charts, and grouping their results.
//!
//! Each non-blank line of a file is one JSON record (see
//! [`crate::report::Record`]); a line that is not a JSON object with a
//! string `name` and `engine` is an error naming the file and line. A
//! [`Entry`] keeps what the charts draw: the series it belongs to (its
//! engine, or its file), its result name, throughput and latencies. When a
//! series has the same result twice, the last one counts. Orders are those
//! of first appearance. Plain data, no shared state.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Latency percentile labels, in chart order, with their JSON fields.
pub const PERCENTILES: [(&str, &str); 5] = [
    ("p50", "p50_us"),
    ("p95", "p95_us"),
    ("p99", "p99_us"),
    ("p99.9", "p999_us"),
    ("max", "max_us"),
];

/// One result of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Series label: the engine, or the file stem.
    pub series: String,
    /// Result name (`ycsb_a`, `ycsb_a.read`, `readrandom`, ...).
    pub name: String,
    /// For YCSB records, the operation type (`all` for a workload's total).
    pub ycsb_op: Option<String>,
    /// Operations per second.
    pub ops_per_sec: Option<f64>,
    /// Latencies in microseconds, in [`PERCENTILES`] order.
    pub latency_us: [Option<f64>; 5],
}

impl Entry {
    /// Whether this is one operation type of a YCSB workload.
    pub fn is_op_type(&self) -> bool {
        self.ycsb_op.as_deref().is_some_and(|op| op != "all")
    }

    /// The chart group: the part of the name before the first `.`.
    pub fn group(&self) -> &str {
        self.name.split('.').next().unwrap_or(&self.name)
    }

    /// Whether any latency is known.
    pub fn has_latency(&self) -> bool {
        self.latency_us.iter().any(Option::is_some)
    }
}

/// How entries are put into series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesBy {
    /// One series per `engine`.
    Engine,
    /// One series per input file (its stem).
    File,
}

/// Parses one record line.
pub fn parse_line(line: &str, series_by: SeriesBy, file_label: &str) -> Result<Entry> {
    let v: Value = serde_json::from_str(line).context("not JSON")?;
    let Some(obj) = v.as_object() else {
        bail!("not a JSON object");
    };
    let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
    let num = |k: &str| obj.get(k).and_then(Value::as_f64);
    let name = text("name").context("no string `name`")?;
    let engine = text("engine").context("no string `engine`")?;
    let series = match series_by {
        SeriesBy::Engine => engine,
        SeriesBy::File => file_label.to_string(),
    };
    let ycsb_op = obj
        .get("ycsb")
        .and_then(|y| y.get("op"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(Entry {
        series,
        name,
        ycsb_op,
        ops_per_sec: num("ops_per_sec"),
        latency_us: PERCENTILES.map(|(_, k)| num(k).filter(|x| *x > 0.0)),
    })
}

/// Reads every record of every file, later duplicates replacing earlier
/// ones (same series and name) in place.
pub fn load(files: &[impl AsRef<Path>], series_by: SeriesBy) -> Result<Vec<Entry>> {
    let mut out: Vec<Entry> = Vec::new();
    for f in files {
        let path = f.as_ref();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading JSON records from {}", path.display()))?;
        let label = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if is_failed_run(line) {
                // scripts/compare.sh's marker of a run that ended before any
                // workload finished: nothing to draw, said on stderr.
                eprintln!(
                    "varve-bench chart: {}:{}: a failed run (no workload finished), left out",
                    path.display(),
                    i + 1
                );
                continue;
            }
            let e = parse_line(line, series_by, &label)
                .with_context(|| format!("{}:{}", path.display(), i + 1))?;
            match out
                .iter_mut()
                .find(|x| x.series == e.series && x.name == e.name)
            {
                Some(x) => *x = e,
                None => out.push(e),
            }
        }
    }
    Ok(out)
}

/// Whether `line` is the record `scripts/compare.sh` writes for a run that
/// failed before any workload finished (`"name": null` and a non-zero
/// `exit_status`).
pub fn is_failed_run(line: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok_and(|v| {
        v.get("name").is_some_and(Value::is_null)
            && v.get("exit_status")
                .and_then(Value::as_i64)
                .is_some_and(|s| s != 0)
    })
}

/// Distinct values of `key` over `entries`, in order of first appearance.
pub fn distinct<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
    key: fn(&Entry) -> &str,
) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for e in entries {
        let k = key(e);
        if !v.iter().any(|x| x == k) {
            v.push(k.to_string());
        }
    }
    v
}

#[cfg(test)]
mod failed_run_tests {
    use super::*;

    #[test]
    fn a_failed_run_marker_is_left_out_and_nothing_else_is() {
        assert!(is_failed_run(
            r#"{"name": null, "engine": "redb", "exit_status": 143}"#
        ));
        assert!(!is_failed_run(
            r#"{"name": "ycsb_a", "engine": "redb", "exit_status": 0}"#
        ));
        assert!(!is_failed_run(
            r#"{"name": null, "engine": "redb", "exit_status": 0}"#
        ));
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("r.jsonl");
        std::fs::write(
            &f,
            "{\"name\": null, \"engine\": \"redb\", \"exit_status\": 143}\n\
             {\"name\": \"readrandom\", \"engine\": \"varve\", \"ops_per_sec\": 5.0}\n",
        )
        .expect("writes");
        let got = load(&[&f], SeriesBy::Engine).expect("loads");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].series, "varve");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_duplicates_replace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("a.jsonl");
        std::fs::write(
            &p,
            "{\"name\":\"ycsb_a.read\",\"engine\":\"varve\",\"ops_per_sec\":10.0,\
             \"p50_us\":1.0,\"max_us\":9.0,\"ycsb\":{\"op\":\"read\"}}\n\n\
             {\"name\":\"ycsb_a.read\",\"engine\":\"varve\",\"ops_per_sec\":20.0}\n",
        )
        .expect("write");
        let e = load(&[&p], SeriesBy::Engine).expect("loads");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].ops_per_sec, Some(20.0), "the last record wins");
        assert!(!e[0].has_latency());
        let e = load(&[&p], SeriesBy::File).expect("loads");
        assert_eq!(e[0].series, "a");
        std::fs::write(&p, "{\"name\":1}\n").expect("write");
        let err = format!("{:#}", load(&[&p], SeriesBy::Engine).unwrap_err());
        assert!(err.contains("a.jsonl:1"), "{err}");
    }
}
