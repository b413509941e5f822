//! `--benchmarks=contest` end to end through the binary: four phase
//! processes, the write phase killed with SIGKILL after its last
//! acknowledged write, then reopen and count, read with every value
//! checked, and two full scans per thread.

use std::process::Command;

fn contest(engine: &str, db: &std::path::Path, json: &std::path::Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_varve-bench"))
        .args([
            &format!("--engine={engine}"),
            "--benchmarks=contest",
            "--num=3000",
            "--threads=8",
            "--enable_blob_files=true",
            "--min_blob_size=1024",
            "--seed=3",
            &format!("--db={}", db.display()),
            &format!("--json={}", json.display()),
        ])
        .output()
        .expect("run varve-bench");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_contest_runs_phase_by_phase_with_a_kill_after_the_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let json = dir.path().join("out.jsonl");
    let (ok, out, err) = contest("varve", &db, &json);
    assert!(ok, "contest failed:\n{out}\n{err}");
    for want in [
        "contest: write done in",
        "contest: verify done in",
        "contest: read done in",
        "contest: range done in",
        "(SIGKILL after 3000 acknowledged writes)",
        "3000 of 3000 keys there",
        "(3000 of 3000 found, every value checked)",
        "8 threads x 2 scans",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} line in:\n{out}"))
            .to_string()
    };
    // The range phase scanned every key twice on every thread.
    assert!(
        line("contest.range").contains(" 48000 operations;"),
        "{out}"
    );
    assert!(line("contest.write").contains(" 3000 operations;"), "{out}");
    // One JSON record per phase, with the phase process's numbers.
    let recs: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .expect("json")
        .lines()
        .map(|l| serde_json::from_str(l).expect("valid json"))
        .collect();
    let names: Vec<&str> = recs.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "contest.write",
            "contest.open",
            "contest.read",
            "contest.range"
        ]
    );
    for r in &recs {
        assert!(r["peak_rss_bytes"].as_u64().unwrap_or(0) > 0, "{r}");
    }
    // The killed writer left its staging and WAL files; the database still
    // opens in another process and holds every key (the read phase did).
    assert!(db.exists());
}

#[test]
fn contest_must_run_alone_and_not_on_the_memory_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ok, _, err) = contest("memory", &dir.path().join("db"), &dir.path().join("j"));
    assert!(!ok);
    assert!(err.contains("contest_inprocess"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_varve-bench"))
        .args(["--benchmarks=fillseq,contest", "--num=10"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("contest runs alone"));
}
