//! The YCSB workloads end to end on small databases, through the library
//! path the binary uses: operation counts add up, every read and scan finds
//! its record, inserts extend the record space of the next workload, and
//! the JSON records say what ran. No timed assertions.

use serde_json::Value;
use varve_bench::flags::Flags;
use varve_bench::runner::{RunResult, run};

const ALL: &str = "ycsb_load,ycsb_a,ycsb_b,ycsb_c,ycsb_d,ycsb_e,ycsb_f,count";

fn run_with(engine: &str, extra: &[&str]) -> Vec<RunResult> {
    let mut args = vec![
        "varve-bench".to_string(),
        format!("--engine={engine}"),
        "--seed=42".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let flags = Flags::parse_from_args(args).expect("flags parse");
    let mut out = Vec::new();
    let results = run(&flags, &mut out).expect("run succeeds");
    let text = String::from_utf8(out).expect("utf8");
    for r in &results {
        assert!(text.contains(&r.line), "printed: {}", r.line);
    }
    results
}

fn get<'a>(r: &'a [RunResult], name: &str) -> &'a RunResult {
    r.iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("{name} ran"))
}

fn ops(r: &[RunResult], name: &str) -> u64 {
    r.iter()
        .find(|x| x.name == name)
        .map_or(0, |x| x.summary.ops)
}

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("json written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("valid json"))
        .collect()
}

fn every_ycsb_workload(engine: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("out.jsonl");
    let r = run_with(
        engine,
        &[
            &format!("--benchmarks={ALL}"),
            "--num=500",
            "--ycsb_operations=1000",
            "--threads=2",
            &format!("--db={}", dir.path().join("db").display()),
            &format!("--json={}", json.display()),
        ],
    );
    assert_eq!(ops(&r, "ycsb_load"), 500);
    assert_eq!(ops(&r, "ycsb_load.insert"), 500);
    let kinds: &[(&str, &[&str])] = &[
        ("ycsb_a", &["read", "update"]),
        ("ycsb_b", &["read", "update"]),
        ("ycsb_c", &["read"]),
        ("ycsb_d", &["read", "insert"]),
        ("ycsb_e", &["scan", "insert"]),
        ("ycsb_f", &["read", "rmw"]),
    ];
    for (w, kinds) in kinds {
        assert_eq!(ops(&r, w), 1000, "{w}: --ycsb_operations in total");
        let per: u64 = kinds.iter().map(|k| ops(&r, &format!("{w}.{k}"))).sum();
        assert_eq!(per, 1000, "{w}: its operation types add up");
        for k in *kinds {
            let s = &get(&r, &format!("{w}.{k}")).summary;
            if let (Some(found), Some(reads)) = (s.found, s.reads) {
                assert_eq!(found, reads, "{w}.{k} finds every record it looks up");
                assert_eq!(reads, s.ops);
            }
            assert!(s.p50_us.is_some() && s.p95_us.is_some() && s.max_us.is_some());
        }
        let total = &get(&r, w).summary;
        assert_eq!(total.found, total.reads, "{w}: all found");
    }
    assert_eq!(ops(&r, "ycsb_c.read"), 1000);
    // Proportions, loosely (1000 draws): 50/50, 95/5.
    let a_reads = ops(&r, "ycsb_a.read");
    assert!((350..=650).contains(&a_reads), "ycsb_a reads {a_reads}");
    let e_inserts = ops(&r, "ycsb_e.insert");
    assert!(
        (10..=120).contains(&e_inserts),
        "ycsb_e inserts {e_inserts}"
    );
    // Inserts extend the record space: the database holds the load plus
    // every insert of D and E.
    let d_inserts = ops(&r, "ycsb_d.insert");
    let keys = 500 + d_inserts + e_inserts;
    assert!(
        get(&r, "count").message.contains(&format!("({keys} keys)")),
        "{} (want {keys} keys)",
        get(&r, "count").message
    );

    let recs = records(&json);
    let by_name = |n: &str| {
        recs.iter()
            .find(|v| v["name"] == n)
            .unwrap_or_else(|| panic!("record {n}"))
    };
    let a = by_name("ycsb_a.read");
    assert_eq!(a["engine"], engine);
    assert_eq!(a["ycsb"]["workload"], "a");
    assert_eq!(a["ycsb"]["op"], "read");
    assert_eq!(a["ycsb"]["mix"]["read"], 0.5);
    assert_eq!(a["ycsb"]["mix"]["update"], 0.5);
    assert_eq!(a["ycsb"]["request_distribution"], "zipfian");
    assert_eq!(a["ycsb"]["zipfian_constant"], 0.99);
    assert_eq!(a["ycsb"]["record_count"], 500);
    assert_eq!(a["ycsb"]["operation_count"], 1000);
    assert_eq!(a["ycsb"]["value_size"], 1000);
    assert_eq!(a["ycsb"]["threads"], 2);
    for k in [
        "ops_per_sec",
        "p50_us",
        "p95_us",
        "p99_us",
        "p999_us",
        "max_us",
    ] {
        assert!(a[k].as_f64().is_some_and(|x| x > 0.0), "{k} in {a}");
    }
    assert_eq!(by_name("ycsb_a")["ycsb"]["op"], "all");
    assert_eq!(by_name("ycsb_d")["ycsb"]["request_distribution"], "latest");
    let e = by_name("ycsb_e");
    assert_eq!(e["ycsb"]["record_count"], 500 + d_inserts);
    assert_eq!(e["ycsb"]["max_scan_length"], 100);
    assert_eq!(e["ycsb"]["scan_length_distribution"], "uniform");
    assert_eq!(
        by_name("ycsb_load")["ycsb"]["request_distribution"],
        "sequential"
    );
    assert!(
        by_name("count").get("ycsb").is_none(),
        "only YCSB records have one"
    );
}

#[test]
fn every_ycsb_workload_on_memory() {
    every_ycsb_workload("memory");
}

#[test]
fn every_ycsb_workload_on_varve() {
    every_ycsb_workload("varve");
}

#[test]
fn value_size_is_honoured_and_a_loaded_database_is_reused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("--db={}", dir.path().join("db").display());
    let r = run_with(
        "varve",
        &[
            "--benchmarks=ycsb_load",
            "--num=300",
            "--value_size=4096",
            &db,
        ],
    );
    let load = &get(&r, "ycsb_load").summary;
    assert_eq!(load.ops, 300);
    let per = load.bytes / load.ops;
    assert!((4096 + 5..=4096 + 23).contains(&per), "key + 4096 B: {per}");
    // A second process-like run on the kept database: no load, all found.
    let r = run_with(
        "varve",
        &[
            "--benchmarks=ycsb_load,ycsb_c,ycsb_f",
            "--num=300",
            "--ycsb_operations=400",
            "--value_size=4096",
            "--use_existing_db=true",
            &db,
        ],
    );
    assert!(
        r.iter().all(|x| x.name != "ycsb_load"),
        "skipped on an existing db"
    );
    let c = &get(&r, "ycsb_c.read").summary;
    assert_eq!((c.found, c.reads), (Some(400), Some(400)));
    let f = &get(&r, "ycsb_f.rmw").summary;
    assert_eq!(f.found, f.reads);
}

#[test]
fn duration_bounds_a_run_instead_of_the_count() {
    let r = run_with(
        "memory",
        &[
            "--benchmarks=ycsb_load,ycsb_b",
            "--num=200",
            "--ycsb_operations=1",
            "--duration=1",
        ],
    );
    assert_eq!(ops(&r, "ycsb_load"), 200, "the load ignores --duration");
    let b = &get(&r, "ycsb_b").summary;
    assert!(b.ops >= 1);
    assert_eq!(b.found, b.reads);
}

#[test]
fn a_workload_needs_records() {
    let flags = Flags::parse_from_args(["x", "--engine=memory", "--benchmarks=ycsb_a", "--num=0"])
        .expect("flags parse");
    let err = run(&flags, &mut Vec::new()).expect_err("no records");
    assert!(
        format!("{err:#}").contains("at least one record"),
        "{err:#}"
    );
}
