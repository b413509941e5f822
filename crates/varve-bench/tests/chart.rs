//! `varve-bench chart` on small hand-made JSON records: the SVG files are
//! written, non-empty, and name every engine and workload; `--help` names
//! the subcommand and the YCSB workloads.

use std::process::Command;

use varve_bench::chart::{ChartArgs, run};

fn rec(engine: &str, name: &str, op: Option<&str>, ops: f64, p50: f64) -> String {
    let ycsb = op.map_or(String::new(), |o| {
        format!(",\"ycsb\":{{\"workload\":\"a\",\"op\":\"{o}\"}}")
    });
    format!(
        "{{\"name\":\"{name}\",\"engine\":\"{engine}\",\"ops_per_sec\":{ops},\
         \"p50_us\":{p50},\"p95_us\":{},\"p99_us\":{},\"p999_us\":{},\"max_us\":{}{ycsb}}}\n",
        p50 * 2.0,
        p50 * 4.0,
        p50 * 10.0,
        p50 * 100.0
    )
}

fn inputs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut paths = Vec::new();
    for (engine, speed) in [("varve", 2.0), ("rocksdb", 1.0)] {
        let mut text = String::new();
        text += &rec(engine, "ycsb_a", Some("all"), 1000.0 * speed, 5.0);
        text += &rec(engine, "ycsb_a.read", Some("read"), 500.0 * speed, 3.0);
        text += &rec(engine, "ycsb_a.update", Some("update"), 500.0 * speed, 8.0);
        text += &rec(engine, "readrandom", None, 3000.0 * speed, 1.5);
        let p = dir.join(format!("{engine}.jsonl"));
        std::fs::write(&p, text).expect("write input");
        paths.push(p);
    }
    paths
}

#[test]
fn chart_writes_svgs_naming_each_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = inputs(dir.path());
    let out = dir.path().join("charts");
    let written = run(&ChartArgs {
        files,
        out: out.clone(),
        series: "engine".into(),
    })
    .expect("charts");
    let names: Vec<String> = written
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    assert_eq!(
        names,
        [
            "throughput.svg",
            "latency-ycsb_a.svg",
            "latency-readrandom.svg"
        ]
    );
    for p in &written {
        let svg = std::fs::read_to_string(p).expect("svg written");
        assert!(
            svg.starts_with("<svg") && svg.len() > 1000,
            "{}",
            p.display()
        );
        for engine in ["varve", "rocksdb"] {
            assert!(svg.contains(engine), "{} names {engine}", p.display());
        }
    }
    let bars = std::fs::read_to_string(out.join("throughput.svg")).expect("svg");
    for w in ["ycsb_a", "readrandom"] {
        assert!(bars.contains(w), "throughput names {w}");
    }
    assert!(!bars.contains("ycsb_a.read"), "no per-operation bars");
    let lat = std::fs::read_to_string(out.join("latency-ycsb_a.svg")).expect("svg");
    for t in ["ycsb_a.read", "ycsb_a.update", "p50", "p99.9", "max"] {
        assert!(lat.contains(t), "latency chart names {t}");
    }
}

#[test]
fn the_binary_has_a_chart_subcommand_and_says_so() {
    let bin = env!("CARGO_BIN_EXE_varve-bench");
    let help = Command::new(bin).arg("--help").output().expect("run");
    let help = String::from_utf8_lossy(&help.stdout);
    for w in [
        "varve-bench chart",
        "ycsb_load",
        "ycsb_e",
        "--ycsb_operations",
    ] {
        assert!(help.contains(w), "--help mentions {w}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let files = inputs(dir.path());
    let out = dir.path().join("by-file");
    let o = Command::new(bin)
        .arg("chart")
        .arg(format!("--out={}", out.display()))
        .arg("--series=file")
        .args(&files)
        .output()
        .expect("run chart");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(out.join("throughput.svg")).expect("svg");
    assert!(
        svg.contains("varve") && svg.contains("rocksdb"),
        "series by file stem"
    );
    let bad = Command::new(bin)
        .args(["chart", "--out"])
        .arg(dir.path().join("x"))
        .arg(dir.path().join("missing.jsonl"))
        .output()
        .expect("run chart");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("missing.jsonl"));
}
