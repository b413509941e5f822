//! Blob files per keyspace (`KeyspaceOptions::min_blob_size`,
//! `docs/keyspaces.md`, "Blob files"): each keyspace that asks for them
//! writes its large values to blob files of its own, counts and collects
//! their garbage in its own compactions, and lets them go when it is
//! dropped; a keyspace without a threshold keeps every value inline.
//! Checked through the public API with gets, scans both ways, stats, the
//! files on disk and `tools::check_db`.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use varve::{Db, Error, KeyspaceOptions, Options, ReadOptions, WriteBatch};

const N: u32 = 1500;

fn options() -> Options {
    Options {
        write_buffer_size: 256 << 10,
        blob_file_size: 1 << 20,
        ..common::tiny_lsm_options()
    }
}

fn blobs_at(min: Option<usize>) -> KeyspaceOptions {
    KeyspaceOptions {
        min_blob_size: min,
        ..KeyspaceOptions::from(&options())
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A 600-byte value that names its keyspace, key and generation.
fn value(ks: &str, i: u32, generation: u32) -> Vec<u8> {
    let head = format!("{ks}-{i}-{generation}-");
    let mut v = head.into_bytes();
    v.resize(600, b'a' + (i % 26) as u8);
    v
}

fn blob_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| {
            let name = e.expect("entry").file_name().into_string().ok()?;
            name.ends_with(".blob").then_some(name)
        })
        .collect()
}

fn keyspace_stats(db: &Db, name: &str) -> varve::KeyspaceStats {
    db.stats()
        .keyspaces
        .into_iter()
        .find(|k| k.name == name)
        .expect("keyspace in stats")
}

/// Every key of `ks` with generation `generation`'s value, by get, by a
/// forward scan and by a reverse scan.
fn check_all(ks: &varve::Keyspace, name: &str, generation: u32, opts: &ReadOptions) {
    for i in (0..N).step_by(7) {
        assert_eq!(
            ks.get_opt(key(i), opts).expect("get"),
            Some(value(name, i, generation)),
            "{name} key {i}"
        );
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = (0..N)
        .map(|i| (key(i), value(name, i, generation)))
        .collect();
    let fwd: Vec<_> = ks
        .iter_opt(opts)
        .collect::<varve::Result<_>>()
        .expect("scan");
    assert!(fwd == want, "{name}: forward scan differs");
    let mut rev: Vec<_> = ks
        .iter_opt(opts)
        .rev()
        .collect::<varve::Result<_>>()
        .expect("reverse scan");
    rev.reverse();
    assert!(rev == want, "{name}: reverse scan differs");
}

fn fill(ks: &varve::Keyspace, name: &str, generation: u32) {
    for i in 0..N {
        ks.put(key(i), value(name, i, generation)).expect("put");
    }
}

fn assert_clean(dir: &Path) {
    let checked = varve::tools::check_db(std::sync::Arc::new(varve::fs::PosixFs), dir, |_| {})
        .expect("check");
    let problems: Vec<_> = checked.iter().filter(|c| c.problem.is_some()).collect();
    assert!(problems.is_empty(), "check found {problems:?}");
}

#[test]
fn each_keyspace_keeps_its_own_blob_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), options()).expect("open");
        let big = db.keyspace("big", blobs_at(Some(100))).expect("big");
        let inline = db.keyspace("inline", blobs_at(None)).expect("inline");
        let default = db.default_keyspace();
        fill(&big, "big", 0);
        fill(&inline, "inline", 0);
        // The database's threshold (4096) keeps these inline.
        fill(&default, "default", 0);
        db.flush().expect("flush");
        let s = db.stats();
        let b = keyspace_stats(&db, "big");
        assert!(b.blob_files >= 1, "{b:?}");
        assert_eq!(keyspace_stats(&db, "inline").blob_files, 0);
        assert_eq!(
            s.blob_files, b.blob_files,
            "no blob file is the default keyspace's"
        );
        assert!(s.blob_bytes_written >= u64::from(N) * 600);
        let ro = ReadOptions::default();
        check_all(&big, "big", 0, &ro);
        check_all(&inline, "inline", 0, &ro);
        check_all(&default, "default", 0, &ro);
        // One batch across keyspaces: the large value goes to `big`'s
        // lanes, the same value in `inline` stays inline.
        let mut batch = WriteBatch::new();
        batch.put_in(&big, b"zz-batch", value("x", 0, 0));
        batch.put_in(&inline, b"zz-batch", value("x", 0, 0));
        db.write(batch).expect("write");
        big.delete(b"zz-batch").expect("delete");
        inline.delete(b"zz-batch").expect("delete");
        db.close().expect("close");
    }
    assert_clean(dir.path());
    let db = Db::open(dir.path(), options()).expect("reopen");
    let big = db.keyspace("big", blobs_at(Some(100))).expect("big");
    let inline = db.keyspace("inline", blobs_at(None)).expect("inline");
    let ro = ReadOptions::default();
    check_all(&big, "big", 0, &ro);
    check_all(&inline, "inline", 0, &ro);
    check_all(&db.default_keyspace(), "default", 0, &ro);
    assert!(keyspace_stats(&db, "big").blob_files >= 1);
    assert_eq!(keyspace_stats(&db, "inline").blob_files, 0);
}

#[test]
fn a_keyspace_collects_its_own_garbage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    let big = db.keyspace("big", blobs_at(Some(100))).expect("big");
    fill(&big, "big", 0);
    big.compact_range(None, None).expect("compact");
    // A snapshot of generation 0 is held across the collection.
    let snap = db.snapshot();
    let old = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    for generation in 1..=3 {
        fill(&big, "big", generation);
        db.flush().expect("flush");
    }
    check_all(&big, "big", 0, &old);
    drop(old);
    drop(snap);
    // Three of every four value bytes are now garbage; a full compaction
    // of the keyspace relocates the live ones and drops the rest.
    big.compact_range(None, None).expect("compact");
    let s = keyspace_stats(&db, "big");
    let live = u64::from(N) * 600;
    assert!(
        s.blob_file_bytes <= live * 2,
        "blob files hold {} bytes for {live} live value bytes: {s:?}",
        s.blob_file_bytes
    );
    assert!(
        db.stats().blob_gc_bytes_relocated > 0,
        "nothing was relocated"
    );
    check_all(&big, "big", 3, &ReadOptions::default());
    db.close().expect("close");
    assert_clean(dir.path());
    let db = Db::open(dir.path(), options()).expect("reopen");
    let big = db.keyspace("big", blobs_at(Some(100))).expect("big");
    check_all(&big, "big", 3, &ReadOptions::default());
}

#[test]
fn dropping_a_keyspace_frees_its_blob_files_once_unread() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        dir.path(),
        Options {
            min_blob_size: Some(100),
            ..options()
        },
    )
    .expect("open");
    let default = db.default_keyspace();
    fill(&default, "default", 0);
    db.flush().expect("flush");
    let before = blob_files(dir.path());
    let doomed = db.keyspace("doomed", blobs_at(Some(100))).expect("doomed");
    fill(&doomed, "doomed", 0);
    db.flush().expect("flush");
    // Still in the memtable, its value still in the lane's staging area.
    doomed.put(b"staged", value("doomed", 9, 9)).expect("put");
    let theirs: BTreeSet<String> = blob_files(dir.path())
        .difference(&before)
        .cloned()
        .collect();
    assert!(!theirs.is_empty(), "the keyspace wrote no blob file");
    // An iterator opened before the drop keeps reading every value.
    let it = doomed.iter();
    db.drop_keyspace("doomed").expect("drop");
    let got: Vec<_> = it.collect::<varve::Result<_>>().expect("scan after drop");
    assert_eq!(got.len(), N as usize + 1);
    assert_eq!(
        got.iter()
            .find(|(k, _)| k == b"staged")
            .map(|(_, v)| v.clone()),
        Some(value("doomed", 9, 9))
    );
    assert!(matches!(
        doomed.get(key(1)),
        Err(Error::KeyspaceNotFound(_))
    ));
    // Unread now: the next background pass deletes its files.
    db.flush().expect("flush");
    default.compact_range(None, None).expect("compact");
    let left: Vec<_> = blob_files(dir.path())
        .intersection(&theirs)
        .cloned()
        .collect();
    assert!(
        left.is_empty(),
        "the dropped keyspace's blob files remain: {left:?}"
    );
    check_all(&default, "default", 0, &ReadOptions::default());
    db.close().expect("close");
    assert_clean(dir.path());
    let db = Db::open(dir.path(), options()).expect("reopen");
    check_all(
        &db.default_keyspace(),
        "default",
        0,
        &ReadOptions::default(),
    );
    assert_eq!(db.keyspaces(), vec!["default".to_string()]);
}

#[test]
fn a_new_threshold_applies_to_the_next_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    let ks = db.keyspace("ks", blobs_at(None)).expect("ks");
    fill(&ks, "ks", 0);
    db.flush().expect("flush");
    assert_eq!(keyspace_stats(&db, "ks").blob_files, 0);
    // The same keyspace asked for again with a threshold.
    let ks = db.keyspace("ks", blobs_at(Some(100))).expect("ks");
    for i in 0..N / 2 {
        ks.put(key(i), value("ks", i, 1)).expect("put");
    }
    db.flush().expect("flush");
    assert!(keyspace_stats(&db, "ks").blob_files >= 1);
    // And without one again: new values stay inline.
    let ks = db.keyspace("ks", blobs_at(None)).expect("ks");
    let written = db.stats().blob_bytes_written;
    for i in N / 2..N {
        ks.put(key(i), value("ks", i, 1)).expect("put");
    }
    assert_eq!(db.stats().blob_bytes_written, written);
    check_all(&ks, "ks", 1, &ReadOptions::default());
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    let ks = db.keyspace("ks", blobs_at(None)).expect("ks");
    check_all(&ks, "ks", 1, &ReadOptions::default());
}

/// Writers of large values race drops of their keyspace: each write
/// succeeds or fails with `KeyspaceNotFound`, and the database stays
/// healthy (never poisoned by a lane that lost its keyspace).
#[test]
fn writers_racing_a_drop_fail_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(Db::open(dir.path(), options()).expect("open"));
    for round in 0..20u32 {
        let ks = db.keyspace("racy", blobs_at(Some(100))).expect("racy");
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3u32)
            .map(|t| {
                let (ks, stop) = (ks.clone(), Arc::clone(&stop));
                std::thread::spawn(move || {
                    let mut ok = 0u32;
                    for i in 0.. {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        match ks.put(key(t * 100_000 + i), value("racy", i, round)) {
                            Ok(()) => ok += 1,
                            Err(Error::KeyspaceNotFound(_)) => break,
                            Err(e) => panic!("write failed with {e}"),
                        }
                    }
                    ok
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(5));
        db.drop_keyspace("racy").expect("drop");
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().expect("writer");
        }
        db.put(format!("round{round}"), value("default", round, 0))
            .expect("the database still takes writes");
    }
    db.flush().expect("flush");
    let db = Arc::into_inner(db).expect("one handle");
    db.close().expect("close");
    assert_clean(dir.path());
    let db = Db::open(dir.path(), options()).expect("reopen");
    assert_eq!(db.keyspaces(), vec!["default".to_string()]);
    assert_eq!(db.iter().count(), 20);
}

#[test]
fn repair_gives_each_blob_file_back_to_its_keyspace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        min_blob_size: Some(100),
        ..options()
    };
    {
        let db = Db::open(dir.path(), opts.clone()).expect("open");
        let a = db.keyspace("a", blobs_at(Some(100))).expect("a");
        fill(&db.default_keyspace(), "default", 0);
        fill(&a, "a", 0);
        db.flush().expect("flush");
        db.close().expect("close");
    }
    for e in std::fs::read_dir(dir.path()).expect("list") {
        let p = e.expect("entry").path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "CURRENT" || name.starts_with("MANIFEST-") {
            std::fs::remove_file(&p).expect("rm");
        }
    }
    let report = Db::repair(dir.path(), &opts).expect("repair");
    assert!(report.blob_keys_lost.is_empty(), "{report:?}");
    assert!(report.blob_files.len() >= 2, "{report:?}");
    assert_clean(dir.path());
    let db = Db::open(dir.path(), opts).expect("reopen");
    let names = db.keyspaces();
    assert_eq!(names.len(), 2, "{names:?}");
    let a = db.keyspace(&names[1], blobs_at(Some(100))).expect("a");
    check_all(
        &db.default_keyspace(),
        "default",
        0,
        &ReadOptions::default(),
    );
    check_all(&a, "a", 0, &ReadOptions::default());
    assert!(keyspace_stats(&db, &names[1]).blob_files >= 1);
    // Each keyspace's compactions collect its own files after the repair.
    fill(&a, "a", 1);
    a.compact_range(None, None).expect("compact");
    check_all(&a, "a", 1, &ReadOptions::default());
    check_all(
        &db.default_keyspace(),
        "default",
        0,
        &ReadOptions::default(),
    );
}
