//! What gets printed and recorded: the header, result lines, JSON records,
//! and the process measurements that go with them.
//!
//! Result lines follow db_bench byte for byte ([`crate::stats::format_line`]);
//! JSON records are one object per workload, appended to `--json` as one line
//! each. Process numbers come from `/proc/self`: peak RSS is `VmHWM` (reset
//! before each workload through `/proc/self/clear_refs` when the kernel
//! allows, else the process-lifetime peak, and the record says which), and
//! bytes written is the delta of `write_bytes` in `/proc/self/io` (bytes this
//! process caused to be sent to the storage layer, all threads).

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::flags::Flags;
use crate::stats::Summary;

/// One JSON record: a workload's result with everything needed to compare it.
#[derive(Debug, Serialize)]
pub struct Record<'a> {
    /// Workload name.
    pub name: &'a str,
    /// Engine name (`--engine`).
    pub engine: &'a str,
    /// Engine name and version.
    pub engine_version: &'a str,
    /// varve-bench version.
    pub bench_version: &'static str,
    /// Every flag of the run.
    pub flags: &'a Flags,
    /// The seed base actually used.
    pub seed: u64,
    /// Threads that ran this workload.
    pub threads: usize,
    /// The measured numbers (ops_per_sec, mb_per_sec, micros_per_op, latency
    /// percentiles in microseconds, found counts).
    #[serde(flatten)]
    pub summary: &'a Summary,
    /// The message of the result line, e.g. `(10 ops)`.
    pub message: &'a str,
    /// The exact result line printed on stdout.
    pub line: &'a str,
    /// Flags the engine ignored, and what it did instead of what was asked.
    pub notes: &'a [String],
    /// Every option the engine ran with (`engine::Opened::options`).
    pub engine_options: &'a [String],
    /// Peak resident set size in bytes (`VmHWM`).
    pub peak_rss_bytes: Option<u64>,
    /// `workload` when VmHWM was reset before this workload, else `process`.
    pub peak_rss_scope: &'static str,
    /// Delta of `/proc/self/io` `write_bytes` over this workload.
    pub proc_io_write_bytes: Option<u64>,
    /// Delta of `/proc/self/io` `read_bytes` over this workload.
    pub proc_io_read_bytes: Option<u64>,
    /// Total size of the files in the database directory after the workload.
    pub db_dir_bytes: Option<u64>,
    /// Seconds since the Unix epoch when the record was written.
    pub unix_time: u64,
    /// For YCSB workloads: which workload and operation type, its mix,
    /// request distribution, record count, value size and threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ycsb: Option<&'a crate::workloads::ycsb::Info>,
}

/// Appends `rec` as one line to the JSON file at `path`.
pub fn append_json(path: &str, rec: &Record<'_>) -> Result<()> {
    let mut line = serde_json::to_string(rec)?;
    line.push('\n');
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .with_context(|| format!("appending to JSON file {path}"))
}

/// `(X of Y found)` for reading workloads, else the message.
pub fn message(s: &Summary, msg: &str) -> String {
    match (s.found, s.reads) {
        (Some(found), Some(reads)) => {
            let f = format!("({found} of {reads} found)");
            if msg.is_empty() {
                f
            } else {
                format!("{msg} {f}")
            }
        }
        _ => msg.to_string(),
    }
}

/// The `Options:` lines printed under the header: each option set
/// explicitly, and how many more the engine's own options file lists (those
/// are in the JSON records).
pub fn options_block(options: &[String]) -> String {
    let from_file = options
        .iter()
        .filter(|o| o.starts_with(crate::engine::FROM_FILE))
        .count();
    let mut s = String::from("Options:");
    let mut width = 8;
    for o in options
        .iter()
        .filter(|o| !o.starts_with(crate::engine::FROM_FILE))
    {
        if width + o.len() + 1 > 100 {
            s.push_str("\n        ");
            width = 8;
        }
        s.push(' ');
        s.push_str(o);
        width += o.len() + 1;
    }
    if from_file > 0 {
        s.push_str(&format!(
            "\n         (+ {from_file} options as the engine wrote them in its options file: see the JSON record)"
        ));
    }
    s.push_str("\n------------------------------------------------");
    s
}

/// The db_bench-like header.
pub fn header(flags: &Flags, engine_version: &str, db: &Path, seed: u64) -> String {
    let num = flags.num() as f64;
    let raw = (flags.key_size + flags.value_size) as f64 * num / 1_048_576.0;
    let file = (flags.key_size as f64 + flags.value_size as f64 * flags.compression_ratio) * num
        / 1_048_576.0;
    let (cpus, model) = cpu_info();
    // Only with blob files on, so the default header stays db_bench's.
    let blobs = if flags.enable_blob_files {
        format!(
            "Blob files: values >= {} bytes, files of {} bytes\n",
            flags.min_blob_size, flags.blob_file_size
        )
    } else {
        String::new()
    };
    // Only for YCSB runs: their keys and values are not the ones above.
    let ycsb = if flags
        .benchmark_list()
        .iter()
        .any(|b| b.starts_with("ycsb_"))
    {
        format!(
            "YCSB:       keys `user` + FNV-64 hash (~23 bytes), values {} bytes\n",
            crate::workloads::ycsb::value_size(flags)
        )
    } else {
        String::new()
    };
    format!(
        "varve-bench: version {}\n\
         Engine:     {engine_version}\n\
         Date:       {}\n\
         CPU:        {cpus} * {model}\n\
         DB path:    [{}]\n\
         Keys:       {} bytes each\n\
         Values:     {} bytes each ({} bytes after compression)\n\
         Entries:    {}\n\
         RawSize:    {raw:.1} MB (estimated)\n\
         FileSize:   {file:.1} MB (estimated)\n\
         Compression: {}\n\
         {blobs}{ycsb}Seed:       {seed}\n\
         ------------------------------------------------",
        env!("CARGO_PKG_VERSION"),
        utc_now(),
        db.display(),
        flags.key_size,
        flags.value_size,
        (flags.value_size as f64 * flags.compression_ratio) as u64,
        flags.num,
        flags.compression_type,
    )
}

fn cpu_info() -> (usize, String) {
    let text = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = text
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n, model)
}

/// Seconds since the epoch.
pub fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The current UTC time as `YYYY-MM-DD hh:mm:ss UTC`.
pub fn utc_now() -> String {
    let t = unix_time();
    let (days, secs) = ((t / 86_400) as i64, t % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// `VmHWM` of this process in bytes.
pub fn peak_rss() -> Option<u64> {
    let s = fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CPU seconds (user + system) the process used so far, all its threads
/// (io_uring's kernel workers included), from `/proc/self/stat` in
/// `USER_HZ` ticks (100 on Linux: fixed by the kernel's ABI).
pub fn cpu_secs() -> Option<f64> {
    let s = fs::read_to_string("/proc/self/stat").ok()?;
    // The name (field 2) may hold spaces: fields after it follow its `)`.
    let rest = &s[s.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// Resets `VmHWM` to the current RSS; false when the kernel refuses.
pub fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `write_bytes` from `/proc/self/io`.
pub fn io_write_bytes() -> Option<u64> {
    proc_io_field("write_bytes:")
}

/// `read_bytes` from `/proc/self/io`: bytes this process made the file
/// system read from the device.
pub fn io_read_bytes() -> Option<u64> {
    proc_io_field("read_bytes:")
}

fn proc_io_field(name: &str) -> Option<u64> {
    let s = fs::read_to_string("/proc/self/io").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().parse().ok())
}

/// Total size of regular files under `dir`.
pub fn dir_bytes(dir: &Path) -> Option<u64> {
    let mut total = 0;
    for e in fs::read_dir(dir).ok()? {
        let e = e.ok()?;
        let md = e.metadata().ok()?;
        if md.is_dir() {
            total += dir_bytes(&e.path()).unwrap_or(0);
        } else {
            total += md.len();
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU time is read and grows while this process spins (however
    /// loaded the machine: the loop waits for it, up to 20 s).
    #[test]
    fn cpu_secs_grows_with_work() {
        let a = cpu_secs().expect("/proc/self/stat is readable");
        let t = std::time::Instant::now();
        let mut x = 1u64;
        let mut b = a;
        while b < a + 0.05 && t.elapsed() < std::time::Duration::from_secs(20) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            b = cpu_secs().expect("/proc/self/stat is readable");
        }
        assert!(
            b >= a + 0.05,
            "20 s of spinning shows as CPU time ({a} -> {b})"
        );
    }

    #[test]
    fn json_record_has_every_field() {
        let flags = Flags::parse_from_args(["x", "-num=5", "--engine=varve"]).unwrap();
        let summary = Summary {
            micros_per_op: 2.5,
            ops_per_sec: 400_000.0,
            seconds: 0.5,
            ops: 200_000,
            mb_per_sec: Some(44.1),
            bytes: 23_200_000,
            found: Some(9),
            reads: Some(10),
            p50_us: Some(1.5),
            p95_us: Some(5.0),
            p99_us: Some(9.0),
            p999_us: Some(30.0),
            max_us: Some(70.0),
        };
        let notes = vec!["cache_size: ignored".to_string()];
        let rec = Record {
            name: "readrandom",
            engine: "varve",
            engine_version: "varve 0.1.0",
            bench_version: "0.1.0",
            flags: &flags,
            seed: 7,
            threads: 1,
            summary: &summary,
            message: "(9 of 10 found)",
            line: "readrandom : ...",
            notes: &notes,
            engine_options: &[],
            peak_rss_bytes: Some(1 << 20),
            peak_rss_scope: "workload",
            proc_io_write_bytes: Some(4096),
            proc_io_read_bytes: Some(8192),
            db_dir_bytes: Some(8192),
            unix_time: 1,
            ycsb: None,
        };
        let v: serde_json::Value = serde_json::to_value(&rec).unwrap();
        for k in [
            "name",
            "engine",
            "engine_version",
            "bench_version",
            "flags",
            "seed",
            "threads",
            "micros_per_op",
            "ops_per_sec",
            "seconds",
            "ops",
            "mb_per_sec",
            "bytes",
            "found",
            "reads",
            "p50_us",
            "p95_us",
            "p99_us",
            "p999_us",
            "max_us",
            "message",
            "line",
            "notes",
            "peak_rss_bytes",
            "peak_rss_scope",
            "proc_io_write_bytes",
            "proc_io_read_bytes",
            "db_dir_bytes",
            "unix_time",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert_eq!(v["flags"]["num"], 5);
        assert_eq!(v["found"], 9);
        assert_eq!(v["p999_us"], 30.0);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let p = path.to_str().unwrap();
        append_json(p, &rec).unwrap();
        append_json(p, &rec).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "newline-delimited, appended");
        assert_eq!(message(&summary, "(2 ops)"), "(2 ops) (9 of 10 found)");
    }

    #[test]
    fn proc_numbers_are_readable() {
        assert!(peak_rss().unwrap_or(0) > 0);
        assert!(io_write_bytes().is_some());
        assert!(utc_now().ends_with(" UTC"));
        assert_eq!(utc_now().len(), 23);
    }
}
