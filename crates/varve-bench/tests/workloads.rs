//! Every workload runs on a tiny database, for every engine built in, through
//! the same library path the binary uses; found counts must make sense.

use varve_bench::flags::Flags;
use varve_bench::runner::{RunResult, run};

fn run_with(engine: &str, extra: &[&str]) -> (Vec<RunResult>, String) {
    let mut args = vec![
        "varve-bench".to_string(),
        format!("--engine={engine}"),
        "-num=200".into(),
        "-seed=42".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let flags = Flags::parse_from_args(args).expect("flags parse");
    let mut out = Vec::new();
    let results = run(&flags, &mut out).expect("run succeeds");
    (results, String::from_utf8(out).expect("utf8"))
}

fn get<'a>(r: &'a [RunResult], name: &str) -> &'a RunResult {
    r.iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("{name} ran"))
}

fn every_workload(engine: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("out.jsonl");
    let db = dir.path().join("db");
    let list = "fillseq,readrandom,multireadrandom,readseq,readreverse,seekrandom,count,\
                flush,compact,waitforcompaction,stats,fillrandom,overwrite,filluniquerandom,\
                readrandom,fillsync,contest_inprocess";
    let (r, out) = run_with(
        engine,
        &[
            &format!("--benchmarks={list}"),
            "-batch_size=8",
            "-seek_nexts=3",
            "-histogram=1",
            "-threads=2",
            &format!("--db={}", db.display()),
            &format!("--json={}", json.display()),
        ],
    );
    // fillseq writes every key 0..200 (each of 2 threads writes all of them).
    assert_eq!(get(&r, "fillseq").summary.ops, 400);
    let rr = &r.iter().find(|x| x.name == "readrandom").unwrap().summary;
    assert_eq!(
        (rr.found, rr.reads),
        (Some(400), Some(400)),
        "all keys found after fillseq"
    );
    let mr = &get(&r, "multireadrandom").summary;
    assert_eq!((mr.found, mr.reads), (Some(400), Some(400)));
    assert_eq!(
        get(&r, "readseq").summary.ops,
        400,
        "each thread reads all 200"
    );
    assert_eq!(get(&r, "readreverse").summary.ops, 400);
    let sr = &get(&r, "seekrandom").summary;
    assert_eq!(sr.found, Some(400));
    assert!(sr.bytes > 0, "seek_nexts read entries");
    assert_eq!(get(&r, "count").message, "(200 keys)");
    // After filluniquerandom every key exists again.
    let last_rr = &r
        .iter()
        .rev()
        .find(|x| x.name == "readrandom")
        .unwrap()
        .summary;
    assert_eq!(last_rr.found, Some(400));
    let fs = get(&r, "fillsync");
    assert_eq!(
        fs.summary.ops, 400,
        "fillsync does --writes ops, as db_bench 7.8.3"
    );
    assert_eq!(fs.message, "(0 ops)", "over a key space of num/1000");
    let cr = &get(&r, "contest.read").summary;
    assert_eq!((cr.found, cr.reads), (Some(200), Some(200)));
    assert_eq!(
        get(&r, "contest.range").summary.ops,
        800,
        "2 threads scan all 200 keys twice"
    );
    // Output: a header, then db_bench lines.
    assert!(out.contains("Entries:    200"));
    assert!(out.contains("fillseq      : "));
    assert!(out.contains("(400 of 400 found)"));
    assert!(out.contains("Microseconds per read:"));
    // JSON: one record per result line, with the measured fields.
    let text = std::fs::read_to_string(&json).expect("json written");
    let recs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("valid json"))
        .collect();
    assert_eq!(recs.len(), r.len());
    for (rec, res) in recs.iter().zip(&r) {
        assert_eq!(rec["name"], res.name.as_str());
        assert_eq!(rec["engine"], engine);
        for field in [
            "ops_per_sec",
            "micros_per_op",
            "seconds",
            "ops",
            "p50_us",
            "p99_us",
            "p999_us",
            "peak_rss_bytes",
            "flags",
            "line",
            "seed",
        ] {
            assert!(!rec[field].is_null(), "{field} in {}", res.name);
        }
        assert_eq!(rec["flags"]["num"], 200);
        assert_eq!(rec["seed"], 42);
    }
    assert!(recs[0]["mb_per_sec"].as_f64().unwrap() > 0.0);
    let count = recs
        .iter()
        .find(|r| r["name"] == "count")
        .expect("count record");
    let via_par_count = count["notes"].to_string().contains("par_count");
    assert_eq!(
        via_par_count,
        engine == "varve",
        "count uses varve's parallel scan"
    );
    assert_eq!(recs[1]["found"], 400);
    if engine == "memory" {
        return; // keeps nothing on disk
    }
    // Reopen the kept database: use_existing_db skips fills and reads it
    // (the contest wrote 200 8-byte keys spread over the key space).
    let (r2, out2) = run_with(
        engine,
        &[
            "--benchmarks=fillseq,count",
            "--key_size=8",
            "--use_existing_db",
            &format!("--db={}", db.display()),
        ],
    );
    assert!(out2.contains("fillseq      : skipped (--use_existing_db is true)"));
    assert_eq!(
        get(&r2, "count").message,
        "(200 keys)",
        "contest keys survive reopen"
    );
}

#[test]
fn every_workload_varve() {
    every_workload("varve");
}

#[test]
fn every_workload_memory() {
    every_workload("memory");
}

#[cfg(feature = "rocksdb")]
#[test]
fn every_workload_rocksdb() {
    every_workload("rocksdb");
}

#[cfg(feature = "fjall")]
#[test]
fn every_workload_fjall() {
    every_workload("fjall");
}

#[cfg(feature = "redb")]
#[test]
fn every_workload_redb() {
    every_workload("redb");
}

#[cfg(feature = "lmdb")]
#[test]
fn every_workload_lmdb() {
    every_workload("lmdb");
}

#[test]
fn duration_caps_a_run() {
    let (r, _) = run_with(
        "varve",
        &["--benchmarks=fillrandom", "--duration=1", "-num=1000000000"],
    );
    let s = &get(&r, "fillrandom").summary;
    assert!(s.seconds >= 1.0 && s.seconds < 5.0, "{}", s.seconds);
}

#[test]
fn unknown_benchmark_is_an_error() {
    let flags = Flags::parse_from_args(["x", "--benchmarks=nope"]).unwrap();
    let err = run(&flags, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("unknown benchmark `nope`"));
}

#[test]
fn binary_accepts_db_bench_command_line() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_varve-bench"))
        .args([
            "-benchmarks=fillseq,readrandom",
            "-num=100",
            "-histogram=0",
            "-max_write_buffer_number=4",
        ])
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("readrandom"))
        .expect("result line");
    assert!(
        line.contains(" micros/op ") && line.ends_with("(100 of 100 found)"),
        "{line}"
    );
    assert!(
        stdout.contains("max_immutable_memtables: 3"),
        "mapped: {stdout}"
    );
    for (flag, why) in [
        ("-statistics", "-statistics: not a varve-bench flag"),
        (
            "-max_background_jobs=4",
            "--max_background_jobs=4: a RocksDB option varve has no equivalent for",
        ),
    ] {
        let refused = std::process::Command::new(env!("CARGO_BIN_EXE_varve-bench"))
            .args(["-benchmarks=fillseq", "-num=10", flag])
            .output()
            .expect("binary runs");
        assert!(
            !refused.status.success(),
            "{flag} is refused, never dropped"
        );
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(err.contains(why), "{flag}: {err}");
    }
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_varve-bench"))
        .arg("--help")
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--use_direct_reads") && help.contains("COLD READS"));
}

/// The flags reach RocksDB's column family, not just the DB options
/// (a bare `open_cf` once left the family on LZ4 and default tables).
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_gets_the_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    run_with(
        "rocksdb",
        &[
            "--benchmarks=fillseq,flush",
            "--use_direct_reads=true",
            "--write_buffer_size=4000000",
            &format!("--db={}", db.display()),
        ],
    );
    let opts = std::fs::read_dir(&db)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("OPTIONS-"))
        .expect("OPTIONS file");
    let text = std::fs::read_to_string(opts.path()).unwrap();
    for want in [
        "use_direct_reads=true",
        "compression=kNoCompression",
        "write_buffer_size=4000000",
    ] {
        assert!(text.contains(want), "{want} missing from RocksDB OPTIONS");
    }
    assert!(!text.contains("compression=kLZ4Compression"));
}

/// The newest OPTIONS file RocksDB wrote in `db`, as text.
#[cfg(feature = "rocksdb")]
fn rocksdb_options_text(db: &std::path::Path) -> String {
    let file = varve_bench::engine::rocksdb::latest_options_file(db).expect("OPTIONS file");
    std::fs::read_to_string(file).expect("reads OPTIONS")
}

/// Every tuning flag db_bench has reaches RocksDB: read back from the
/// OPTIONS file RocksDB wrote itself (the rate limiter and the blob cache
/// are objects it does not write there: the option lines of the report
/// show them).
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_gets_every_tuning_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let json = dir.path().join("r.jsonl");
    let (_, out) = run_with(
        "rocksdb",
        &[
            "--benchmarks=fillseq,flush",
            "-max_background_jobs=5",
            "-max_write_buffer_number=7",
            "-min_write_buffer_number_to_merge=2",
            "-bytes_per_sync=2097152",
            "-wal_bytes_per_sync=3145728",
            "-enable_pipelined_write=false",
            "-allow_concurrent_memtable_write=false",
            "-level0_slowdown_writes_trigger=31",
            "-level0_stop_writes_trigger=41",
            "-max_bytes_for_level_base=536870912",
            "-max_bytes_for_level_multiplier=8",
            "-level_compaction_dynamic_level_bytes=true",
            "-target_file_size_base=134217728",
            "-compaction_readahead_size=4194304",
            "-block_size=16384",
            "-cache_index_and_filter_blocks=true",
            "-pin_l0_filter_and_index_blocks_in_cache=true",
            "-optimize_filters_for_hits=true",
            "-enable_blob_files",
            "-min_blob_size=1024",
            "-use_blob_cache",
            "-blob_cache_size=16777216",
            "-rate_limiter_bytes_per_sec=1073741824",
            "-use_direct_io_for_flush_and_compaction=true",
            &format!("--json={}", json.display()),
            &format!("--db={}", db.display()),
        ],
    );
    let text = rocksdb_options_text(&db);
    for want in [
        "max_background_jobs=5",
        "max_write_buffer_number=7",
        "min_write_buffer_number_to_merge=2",
        "bytes_per_sync=2097152",
        "wal_bytes_per_sync=3145728",
        "enable_pipelined_write=false",
        "allow_concurrent_memtable_write=false",
        "level0_slowdown_writes_trigger=31",
        "level0_stop_writes_trigger=41",
        "max_bytes_for_level_base=536870912",
        "max_bytes_for_level_multiplier=8",
        "level_compaction_dynamic_level_bytes=true",
        "target_file_size_base=134217728",
        "compaction_readahead_size=4194304",
        "block_size=16384",
        "cache_index_and_filter_blocks=true",
        "pin_l0_filter_and_index_blocks_in_cache=true",
        "optimize_filters_for_hits=true",
        "enable_blob_files=true",
        "enable_blob_garbage_collection=false",
        "use_direct_io_for_flush_and_compaction=true",
    ] {
        assert!(
            text.contains(want),
            "{want} missing from RocksDB's OPTIONS file"
        );
    }
    for want in [
        "rate_limiter_bytes_per_sec=1073741824",
        "blob_cache_size=16777216",
    ] {
        assert!(out.contains(want), "{want} missing from the report: {out}");
    }
    // The JSON record holds every option of the OPTIONS file.
    let rec: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&json)
            .expect("json")
            .lines()
            .next()
            .expect("a record"),
    )
    .expect("a JSON record");
    let opts = rec["engine_options"].as_array().expect("engine_options");
    assert!(opts.len() > 100, "{} options", opts.len());
}

/// Without tuning flags RocksDB runs with db_bench's defaults (pipelined
/// writes on, static level sizes, blob GC off); `--tuned` gives it the
/// tuning guide's configuration.
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_defaults_are_db_bench_and_tuned_is_the_guide() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let base = ["--benchmarks=fillseq", "--num=100", "--enable_blob_files"];
    let mut args: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    args.push(format!("--db={}", db.display()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run_with("rocksdb", &a);
    let text = rocksdb_options_text(&db);
    for want in [
        "enable_pipelined_write=true",
        "level_compaction_dynamic_level_bytes=false",
        "enable_blob_garbage_collection=false",
        "max_background_jobs=2",
        "max_write_buffer_number=2",
    ] {
        assert!(text.contains(want), "default: {want} missing");
    }
    args.push("--tuned".into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_, out) = run_with("rocksdb", &a);
    let text = rocksdb_options_text(&db);
    for want in [
        "max_write_buffer_number=6",
        "bytes_per_sync=1048576",
        "level_compaction_dynamic_level_bytes=true",
        "cache_index_and_filter_blocks=true",
        "use_direct_io_for_flush_and_compaction=true",
        "block_size=16384",
    ] {
        assert!(text.contains(want), "tuned: {want} missing");
    }
    assert!(out.contains("read.async_io=true"), "{out}");
}

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `--enable_blob_files` reaches the engine: values at or over the
/// threshold land in the engine's blob files, and read back. Returns the
/// database's files (and the directory that holds them).
fn blob_files(engine: &str, extra: &[&str]) -> (tempfile::TempDir, Vec<std::path::PathBuf>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let mut args = vec![
        "--benchmarks=fillseq,flush,readrandom".to_string(),
        "--value_size=2048".into(),
        "--enable_blob_files".into(),
        "--min_blob_size=1024".into(),
        format!("--db={}", db.display()),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (r, out) = run_with(engine, &args);
    assert!(
        out.contains("Blob files: values >= 1024 bytes, files of 268435456 bytes"),
        "{out}"
    );
    let rr = &get(&r, "readrandom").summary;
    assert_eq!((rr.found, rr.reads), (Some(200), Some(200)));
    let files = files_under(&db);
    let blobs: Vec<_> = files
        .iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            // varve and RocksDB: NNNNNN.blob; fjall: keyspaces/N/blobs/M.
            s.ends_with(".blob") || s.contains("/blobs/")
        })
        .collect();
    assert!(!blobs.is_empty(), "{engine}: no blob file in {files:?}");
    let blob_bytes: u64 = blobs
        .iter()
        .map(|p| std::fs::metadata(p).expect("stat").len())
        .sum();
    assert!(
        blob_bytes >= 200 * 2048,
        "{engine}: blob files hold {blob_bytes} bytes (uncompressed values)"
    );
    (dir, files)
}

/// Runs `fillseq` on `engine` with blob files and `extra`; returns the
/// error's text.
fn blob_flag_error(engine: &str, extra: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = Flags::parse_from_args([
        "varve-bench".to_string(),
        format!("--engine={engine}"),
        "--benchmarks=fillseq".into(),
        "--num=10".into(),
        "--enable_blob_files".into(),
        extra.into(),
        format!("--db={}", dir.path().join("db").display()),
    ])
    .expect("flags parse");
    let err = run(&flags, &mut Vec::new()).expect_err(extra);
    format!("{err:#}")
}

#[test]
fn blob_files_varve() {
    blob_files("varve", &[]);
    blob_files(
        "varve",
        &[
            "--enable_blob_garbage_collection=false",
            "--blob_garbage_collection_ratio=0.5",
            "--blob_garbage_collection_force_threshold=0.75",
        ],
    );
    // varve picks blob files by garbage share: an age cutoff is an error,
    // not ignored.
    let err = blob_flag_error("varve", "--blob_garbage_collection_age_cutoff=0.5");
    assert!(err.contains("not by age"), "{err}");
}

#[cfg(feature = "rocksdb")]
#[test]
fn blob_files_rocksdb() {
    let (_dir, files) = blob_files("rocksdb", &["--blob_garbage_collection_age_cutoff=0.5"]);
    let err = blob_flag_error("rocksdb", "--blob_garbage_collection_ratio=0.5");
    assert!(err.contains("not by garbage share"), "{err}");
    let opts = files
        .iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("OPTIONS-"))
        })
        .expect("OPTIONS file");
    let text = std::fs::read_to_string(opts).unwrap();
    for want in [
        "enable_blob_files=true",
        "min_blob_size=1024",
        "blob_file_size=268435456",
        // Off unless asked, as in db_bench.
        "enable_blob_garbage_collection=false",
        "blob_garbage_collection_age_cutoff=0.500000",
        "blob_garbage_collection_force_threshold=1.000000",
        "blob_compression_type=kNoCompression",
    ] {
        assert!(text.contains(want), "{want} missing from RocksDB OPTIONS");
    }
}

#[cfg(feature = "fjall")]
#[test]
fn blob_files_fjall() {
    blob_files("fjall", &[]);
    // fjall has no forced blob GC, and a keyspace keeps its separation.
    let err = blob_flag_error("fjall", "--blob_garbage_collection_force_threshold=0.5");
    assert!(
        err.contains("fjall has no forced blob garbage collection"),
        "{err}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("--db={}", dir.path().join("db").display());
    run_with(
        "fjall",
        &[
            "--benchmarks=fillseq",
            "--enable_blob_files",
            "--blob_garbage_collection_ratio=0.5",
            &db,
        ],
    );
    for other in [
        vec![],
        vec!["--enable_blob_files"],
        vec!["--enable_blob_files", "--blob_garbage_collection_ratio=0.4"],
    ] {
        let mut args = vec![
            "varve-bench",
            "--engine=fjall",
            "--benchmarks=readrandom",
            "--use_existing_db",
            &db,
        ];
        args.extend(other.iter().copied());
        let flags = Flags::parse_from_args(args).expect("flags parse");
        let err = run(&flags, &mut Vec::new()).expect_err("separation changed");
        assert!(
            format!("{err:#}").contains("cannot change it on an existing keyspace"),
            "{other:?}: {err:#}"
        );
    }
    // The same flags reopen it.
    let (r, _) = run_with(
        "fjall",
        &[
            "--benchmarks=readrandom",
            "--use_existing_db",
            "--enable_blob_files",
            "--blob_garbage_collection_ratio=0.5",
            &db,
        ],
    );
    assert_eq!(get(&r, "readrandom").summary.found, Some(200));
}
