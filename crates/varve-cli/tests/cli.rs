//! Runs the `varve` binary: put/get/scan/delete round trips (hex and
//! escaped keys, every scan flag, `--json`), `check` on a clean database
//! and on a byte flipped in a table and in a WAL, `repair` after the
//! manifest was deleted, `stats`, the `dump-*` commands, `checkpoint`,
//! and the errors for a missing and a locked database.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use varve::{Db, Options};

fn varve(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_varve"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("run varve")
}

fn ok(db: &Path, args: &[&str]) -> String {
    let o = varve(db, args);
    assert!(
        o.status.success(),
        "varve {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8 output")
}

fn json(db: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&ok(db, &a)).expect("valid JSON")
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

fn flip(path: &Path, offset: usize) {
    let mut b = std::fs::read(path).expect("read");
    b[offset] ^= 0x40;
    std::fs::write(path, b).expect("write");
}

#[test]
fn put_get_scan_delete_round_trip() {
    let tmp = tempfile::tempdir().expect("tmp");
    let db = &tmp.path().join("db");
    for (k, v) in [
        ("a", "1"),
        ("b", "2"),
        ("c", "3"),
        ("d", "4"),
        ("0x00ff", "0xdeadbeef"),
        ("tab\\there", "line\\nbreak"),
    ] {
        ok(db, &["put", k, v]);
    }
    assert_eq!(ok(db, &["get", "a"]), "1\n");
    assert_eq!(ok(db, &["get", "0x00ff"]), "\\xde\\xad\\xbe\\xef\n");
    assert_eq!(ok(db, &["get", "0x00ff", "--hex"]), "0xdeadbeef\n");
    assert_eq!(ok(db, &["get", "tab\\x09here"]), "line\\nbreak\n");
    let g = json(db, &["get", "b"]);
    assert_eq!(g["value"], "2");
    assert_eq!(g["found"], true);
    let missing = varve(db, &["get", "nope"]);
    assert_eq!(missing.status.code(), Some(3));

    assert_eq!(
        ok(db, &["scan", "--keys-only"]),
        "\\x00\\xff\na\nb\nc\nd\ntab\\there\n"
    );
    assert_eq!(
        ok(db, &["scan", "--from", "b", "--to", "d"]),
        "b => 2\nc => 3\n"
    );
    assert_eq!(
        ok(db, &["scan", "--reverse", "--limit", "2", "--keys-only"]),
        "tab\\there\nd\n"
    );
    assert_eq!(ok(db, &["scan", "--count"]), "6\n");
    assert_eq!(
        ok(db, &["scan", "--count", "--from", "a", "--to", "c"]),
        "2\n"
    );
    let rows = json(db, &["scan", "--from", "a", "--limit", "2"]);
    assert_eq!(
        rows,
        serde_json::json!([{"key": "a", "value": "1"}, {"key": "b", "value": "2"}])
    );
    let rows = json(db, &["scan", "--hex", "--keys-only", "--limit", "1"]);
    assert_eq!(rows, serde_json::json!([{"key": "0x00ff"}]));

    ok(db, &["delete", "b"]);
    ok(db, &["delete", "0x00ff"]);
    assert_eq!(varve(db, &["get", "b"]).status.code(), Some(3));
    assert_eq!(ok(db, &["scan", "--keys-only"]), "a\nc\nd\ntab\\there\n");
    // delete-range: [c, tab) goes, `tab\there` (after "tab") stays.
    ok(db, &["delete-range", "c", "tab"]);
    assert_eq!(ok(db, &["scan", "--keys-only"]), "a\ntab\\there\n");
    let reversed = varve(db, &["delete-range", "z", "a"]);
    assert_ne!(reversed.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&reversed.stderr).contains("delete_range"));

    // Bad key syntax is a usage error naming the problem.
    let bad = varve(db, &["get", "0xabc"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("hex"));
}

#[test]
fn check_clean_then_flipped_table_and_wal() {
    let tmp = tempfile::tempdir().expect("tmp");
    let db = &tmp.path().join("db");
    {
        let d = Db::open(db, Options::default()).expect("open");
        for i in 0..200 {
            d.put(format!("key{i:04}"), format!("value{i}"))
                .expect("put");
        }
        d.flush().expect("flush");
        for i in 0..20 {
            d.put(format!("wal{i:04}"), format!("value{i}"))
                .expect("put");
        }
        d.close().expect("close");
    }
    let clean = varve(db, &["check"]);
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );
    let report = json(db, &["check"]);
    assert_eq!(report["damaged"], 0);

    // A byte flipped in the table's first data block.
    let table = files(db, "sst").into_iter().next().expect("a table");
    flip(&table, 10);
    let o = varve(db, &["check"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    let name = table
        .file_name()
        .expect("name")
        .to_string_lossy()
        .to_string();
    let line = out
        .lines()
        .find(|l| l.starts_with("CORRUPT") && l.contains(&name))
        .unwrap_or_else(|| panic!("no CORRUPT line for {name}: {out}"));
    assert!(line.contains("offset 0"), "{line}");
    flip(&table, 10);

    // A byte flipped in the first record of the WAL (good records follow).
    let wal = files(db, "log").into_iter().last().expect("a WAL");
    let dump = json(db, &["dump-wal", wal.to_str().expect("utf-8")]);
    let first = dump["records"][0]["offset"].as_u64().expect("offset");
    assert_eq!(dump["records"].as_array().expect("records").len(), 20);
    flip(&wal, first as usize + 12);
    let o = varve(db, &["check", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    let bad: Vec<&Value> = v["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter(|f| f["ok"] == false)
        .collect();
    assert_eq!(bad.len(), 1, "{v}");
    assert!(bad[0]["path"].as_str().expect("path").ends_with(".log"));
    assert_eq!(bad[0]["offset"].as_u64(), Some(first));
}

#[test]
fn repair_after_manifest_deleted() {
    let tmp = tempfile::tempdir().expect("tmp");
    let db = &tmp.path().join("db");
    {
        let d = Db::open(db, Options::default()).expect("open");
        for i in 0..500 {
            d.put(format!("t{i:04}"), format!("table{i}")).expect("put");
        }
        d.flush().expect("flush");
        d.delete("t0007").expect("delete");
        for i in 0..50 {
            d.put(format!("w{i:04}"), format!("wal{i}")).expect("put");
        }
        d.close().expect("close");
    }
    for p in std::fs::read_dir(db).expect("dir") {
        let p = p.expect("entry").path();
        let name = p.file_name().expect("name").to_string_lossy().to_string();
        if name == "CURRENT" || name.starts_with("MANIFEST-") {
            std::fs::remove_file(p).expect("rm");
        }
    }
    // Without a manifest the database does not open, and says why.
    let o = varve(db, &["get", "t0001"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("repair"));

    let r = json(db, &["repair"]);
    assert!(!r["tables"].as_array().expect("tables").is_empty(), "{r}");
    let d = Db::open(db, Options::default()).expect("open after repair");
    for i in 0..500 {
        let want = (i != 7).then(|| format!("table{i}").into_bytes());
        assert_eq!(d.get(format!("t{i:04}")).expect("get"), want, "t{i:04}");
    }
    for i in 0..50 {
        assert_eq!(
            d.get(format!("w{i:04}")).expect("get"),
            Some(format!("wal{i}").into_bytes())
        );
    }
    d.close().expect("close");
    assert_eq!(ok(db, &["scan", "--count"]), "549\n");
    assert_eq!(varve(db, &["check"]).status.code(), Some(0));
}

#[test]
fn stats_dumps_and_checkpoint() {
    let tmp = tempfile::tempdir().expect("tmp");
    let db = &tmp.path().join("db");
    for i in 0..5 {
        ok(db, &["put", &format!("k{i}"), "v"]);
    }
    ok(db, &["compact"]);
    let s = ok(db, &["stats"]);
    assert!(
        s.contains("Level") && s.contains("L0") && s.contains("L6"),
        "{s}"
    );
    let s = json(db, &["stats"]);
    assert_eq!(s["levels"].as_array().expect("levels").len(), 7);

    let m = json(db, &["dump-manifest"]);
    assert!(!m["records"].as_array().expect("records").is_empty());
    assert!(ok(db, &["dump-manifest"]).contains("snapshot edit"));
    let mut entries = 0;
    let mut text = String::new();
    for sst in files(db, "sst") {
        let t = json(db, &["dump-sst", sst.to_str().expect("utf-8")]);
        entries += t["properties"]["num_entries"]
            .as_u64()
            .expect("num_entries");
        assert_eq!(
            t["entries"].as_array().expect("entries").len() as u64,
            t["entries_verified"].as_u64().expect("verified")
        );
        text += &ok(db, &["dump-sst", sst.to_str().expect("utf-8")]);
    }
    assert_eq!(entries, 5);
    assert!(
        text.contains("k0 @1 PUT => v") && text.contains("k4"),
        "{text}"
    );
    let wal = files(db, "log").into_iter().last().expect("a WAL");
    let w = json(db, &["dump-wal", wal.to_str().expect("utf-8")]);
    assert_eq!(w["tail"]["clean"], true);

    let cp = tmp.path().join("cp");
    ok(db, &["checkpoint", cp.to_str().expect("utf-8")]);
    assert_eq!(ok(&cp, &["scan", "--count"]), "5\n");
    let again = varve(db, &["checkpoint", cp.to_str().expect("utf-8")]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));
}

#[test]
fn missing_and_locked_database_errors() {
    let tmp = tempfile::tempdir().expect("tmp");
    let missing = tmp.path().join("nothing-here");
    let o = varve(&missing, &["get", "a"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("nothing-here") && err.contains("no database"),
        "{err}"
    );

    let db = tmp.path().join("db");
    let d = Db::open(&db, Options::default()).expect("open");
    d.put("a", "1").expect("put");
    let o = varve(&db, &["scan"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("another process") && err.contains("checkpoint"),
        "{err}"
    );
    // check reads the files without the lock.
    assert_eq!(varve(&db, &["check"]).status.code(), Some(0));
    drop(d);
}

#[test]
fn every_command_has_help_with_an_example_and_exit_codes() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_varve"))
            .args(args)
            .output()
            .expect("run varve");
        assert!(o.status.success(), "{args:?}");
        String::from_utf8(o.stdout).expect("utf-8")
    };
    let top = run(&["--help"]);
    assert!(
        top.contains("Exit codes") && top.contains("checkpoint"),
        "{top}"
    );
    for cmd in [
        "get",
        "put",
        "delete",
        "scan",
        "stats",
        "anchors",
        "check",
        "dump-wal",
        "dump-sst",
        "dump-manifest",
        "compact",
        "checkpoint",
        "repair",
    ] {
        let h = run(&[cmd, "--help"]);
        assert!(
            h.contains("Example:") && h.contains("Exit codes"),
            "{cmd}: {h}"
        );
    }
}

#[test]
fn anchors_split_the_key_space() {
    let tmp = tempfile::tempdir().expect("tmp");
    let db = &tmp.path().join("db");
    {
        let d = Db::open(
            db,
            Options {
                block_size: 512,
                ..Options::default()
            },
        )
        .expect("open");
        for i in 0..5000 {
            d.put(format!("key{i:05}"), [b'v'; 64]).expect("put");
        }
        d.flush().expect("flush");
        d.close().expect("close");
    }
    let a = json(db, &["anchors", "--parts", "4"]);
    let parts = a["parts"].as_array().expect("parts");
    assert!((2..=4).contains(&parts.len()), "{a}");
    assert!(parts[0]["start"].is_null() && parts[parts.len() - 1]["end"].is_null());
    for w in parts.windows(2) {
        assert_eq!(w[0]["end"], w[1]["start"], "{a}");
    }
    assert_eq!(
        a["anchors"].as_array().expect("anchors").len(),
        parts.len() - 1
    );
    let text = ok(db, &["anchors", "--parts", "2"]);
    assert!(
        text.starts_with("[-inf .. ") && text.trim_end().ends_with(" .. +inf)"),
        "{text}"
    );
}

#[test]
fn read_commands_leave_the_directory_unchanged() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = tmp.path().join("db");
    for i in 0..50 {
        ok(&db, &["put", &format!("key{i:03}"), "value"]);
    }
    let snapshot = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry"))
            .filter(|e| e.file_type().expect("type").is_file())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).expect("read"),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = snapshot(&db);
    assert_eq!(ok(&db, &["get", "key007"]).trim(), "value");
    assert!(ok(&db, &["scan", "--count"]).contains("50"));
    ok(&db, &["stats"]);
    ok(&db, &["anchors", "--parts", "2"]);
    assert_eq!(
        before,
        snapshot(&db),
        "a read command changed the database directory"
    );
}

/// `scan` over a damaged table of tombstones prints only live keys, in
/// order, and exits with the corruption code: never a deleted key, and
/// nothing after the error.
#[test]
fn scan_stops_at_a_damaged_table() {
    let tmp = tempfile::tempdir().expect("tmp");
    let db = &tmp.path().join("db");
    {
        let d = Db::open(db, Options::default()).expect("open");
        for i in 0..5000 {
            d.put(format!("k{i:05}"), format!("v{i}")).expect("put");
        }
        d.compact_range(None, None).expect("compact");
        let before = files(db, "sst");
        for i in (0..5000).step_by(2) {
            d.delete(format!("k{i:05}")).expect("delete");
        }
        d.flush().expect("flush");
        d.close().expect("close");
        let l0: Vec<PathBuf> = files(db, "sst")
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        assert_eq!(l0.len(), 1);
        let len = std::fs::metadata(&l0[0]).expect("meta").len() as usize;
        flip(&l0[0], len / 3);
    }
    for reverse in [false, true] {
        let mut args = vec!["scan", "--keys-only"];
        if reverse {
            args.push("--reverse");
        }
        let o = varve(db, &args);
        assert_eq!(
            o.status.code(),
            Some(1),
            "reverse {reverse}: exits with the corruption code"
        );
        assert!(String::from_utf8_lossy(&o.stderr).contains(".sst"));
        let out = String::from_utf8(o.stdout).expect("utf-8");
        let mut want: Vec<String> = (1..5000).step_by(2).map(|i| format!("k{i:05}")).collect();
        if reverse {
            want.reverse();
        }
        let got: Vec<&str> = out.lines().collect();
        assert!(
            got.len() < want.len(),
            "reverse {reverse}: the error was not reached"
        );
        for (i, k) in got.iter().enumerate() {
            assert_eq!(*k, want[i], "reverse {reverse}: line {i}");
        }
    }
}

/// `dump-blob` lists every value of a blob file (key, offset, length) and
/// verifies each; a flipped value byte exits with the corruption code and
/// names the file; a file that is not a blob file is refused.
#[test]
fn dump_blob_lists_values_and_refuses_damage() {
    let tmp = tempfile::tempdir().expect("tmp");
    let db = &tmp.path().join("db");
    Db::open(db, Options::default())
        .and_then(|d| d.close())
        .expect("create a database");
    let path = db.join("000031.blob");
    let values: Vec<(Vec<u8>, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("key{i:03}").into_bytes(),
                vec![i as u8; 100 * i + 1],
            )
        })
        .collect();
    let borrowed: Vec<(&[u8], &[u8])> = values
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let offsets = varve::testing::write_blob_file(&varve::fs::PosixFs, &path, 31, 8192, &borrowed)
        .expect("write blob file");
    let p = path.to_str().expect("utf-8 path");

    let d = json(db, &["dump-blob", p]);
    assert_eq!(d["file_number"], 31);
    assert_eq!(d["sealed"], true);
    assert_eq!(d["values_verified"], 40);
    assert_eq!(d["footer"]["values"], 40);
    let listed = d["values"].as_array().expect("values");
    assert_eq!(listed.len(), 40);
    for (i, v) in listed.iter().enumerate() {
        assert_eq!(v["key"], format!("key{i:03}"));
        assert_eq!(v["offset"], offsets[i]);
        assert_eq!(v["len"], 100 * i as u64 + 1);
    }
    let text = ok(db, &["dump-blob", p, "--limit", "3"]);
    assert!(
        text.contains("40 values, every checksum verified"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.contains(" @")).count(),
        3,
        "{text}"
    );

    let report = json(db, &["check"]);
    assert_eq!(report["damaged"], 0, "{report}");

    flip(&path, offsets[20] as usize + 5);
    // The file is not the database's (its manifest does not list it, so an
    // open deletes it): check says so, and it is not damage of the database.
    let checked = varve(db, &["check", "--json"]);
    assert_eq!(
        checked.status.code(),
        Some(0),
        "a file the database does not use"
    );
    let report: Value = serde_json::from_slice(&checked.stdout).expect("JSON");
    assert_eq!(report["damaged"], 0, "{report}");
    let row = report["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| {
            f["path"]
                .as_str()
                .is_some_and(|x| x.ends_with("000031.blob"))
        })
        .cloned()
        .expect("the blob file is listed");
    assert!(
        row["note"]
            .as_str()
            .is_some_and(|n| n.contains("not in the live manifest")),
        "{row}"
    );
    let bad = varve(db, &["dump-blob", p]);
    assert_eq!(
        bad.status.code(),
        Some(1),
        "damage exits with the corruption code"
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("000031.blob"), "{err}");

    let not_blob = db.join("000032.blob");
    std::fs::write(&not_blob, vec![7u8; 8192]).expect("write");
    let refused = varve(db, &["dump-blob", not_blob.to_str().expect("utf-8")]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not a blob file"));
}

#[test]
fn keyspaces_from_the_command_line() {
    let tmp = tempfile::tempdir().expect("tmp");
    let db = &tmp.path().join("db");
    ok(db, &["put", "k", "default value"]);
    // `put` creates a keyspace; the other commands refuse a missing one.
    ok(db, &["--keyspace", "users", "put", "k", "user value"]);
    ok(db, &["-k", "users", "put", "k2", "v2"]);
    assert_eq!(ok(db, &["keyspaces"]), "default\nusers\n");
    assert_eq!(
        json(db, &["keyspaces"]),
        serde_json::json!({"keyspaces": ["default", "users"]})
    );
    assert_eq!(ok(db, &["get", "k"]), "default value\n");
    assert_eq!(ok(db, &["-k", "users", "get", "k"]), "user value\n");
    assert_eq!(ok(db, &["-k", "users", "scan", "--count"]), "2\n");
    assert_eq!(ok(db, &["scan", "--count"]), "1\n");
    let missing = varve(db, &["-k", "nope", "get", "k"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no keyspace \"nope\""));
    ok(db, &["-k", "users", "delete-range", "a", "k2"]);
    assert_eq!(ok(db, &["-k", "users", "scan", "--keys-only"]), "k2\n");
    ok(db, &["-k", "users", "compact"]);
    // Table dumps name their keyspace.
    let tables: String = files(db, "sst")
        .iter()
        .map(|t| ok(db, &["dump-sst", t.to_str().expect("utf-8 path")]))
        .collect();
    assert!(tables.contains("keyspace 1"), "{tables}");
    // The WAL dump names the keyspace of each operation (a clean close
    // leaves the last WAL's records in place).
    {
        let d = Db::open(db, Options::default()).expect("open");
        let users = d
            .keyspace("users", varve::KeyspaceOptions::default())
            .expect("users");
        users.put(b"in-wal", b"1").expect("put");
        d.close().expect("close");
    }
    let dumped: String = files(db, "log")
        .iter()
        .map(|w| ok(db, &["dump-wal", w.to_str().expect("utf-8 path")]))
        .collect();
    assert!(dumped.contains("[keyspace 1] PUT in-wal"), "{dumped}");
    let manifest = ok(db, &["dump-manifest"]);
    assert!(
        manifest.contains("create keyspace 1 \"users\""),
        "{manifest}"
    );
    assert!(ok(db, &["check"]).contains(": 0 damaged"));
    ok(db, &["drop-keyspace", "users"]);
    assert_eq!(ok(db, &["keyspaces"]), "default\n");
    assert_eq!(
        varve(db, &["drop-keyspace", "users"]).status.code(),
        Some(2)
    );
}
