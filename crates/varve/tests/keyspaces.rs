//! Keyspaces: handles, atomic batches across keyspaces, one snapshot for
//! all, flush and compaction per keyspace, reopen, drop and re-create, and
//! WAL retirement with an idle keyspace (`docs/keyspaces.md`).

use std::collections::BTreeMap;
use std::time::Duration;

use varve::{Db, Error, KeyRange, KeyspaceOptions, Options, ReadOptions, WriteBatch, WriteOptions};

fn small() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        ..Options::default()
    }
}

fn all(it: varve::DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.collect::<varve::Result<Vec<_>>>().expect("scan")
}

#[test]
fn keyspaces_are_separate_and_batches_span_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small()).expect("open");
    let a = db.keyspace("a", KeyspaceOptions::default()).expect("a");
    let b = db.keyspace("b", KeyspaceOptions::default()).expect("b");
    assert_eq!(db.keyspaces(), vec!["default", "a", "b"]);
    db.put(b"k", b"default").expect("put");
    a.put(b"k", b"in a").expect("put");
    let mut batch = WriteBatch::new();
    batch.put_in(&b, b"k", b"in b");
    batch.put_in(&a, b"k2", b"a2");
    batch.put(b"k3", b"d3");
    batch.delete_in(&a, b"k");
    db.write(batch).expect("write");
    assert_eq!(db.get(b"k").expect("get"), Some(b"default".to_vec()));
    assert_eq!(a.get(b"k").expect("get"), None);
    assert_eq!(a.get(b"k2").expect("get"), Some(b"a2".to_vec()));
    assert_eq!(b.get(b"k").expect("get"), Some(b"in b".to_vec()));
    assert_eq!(b.get(b"k2").expect("get"), None);
    assert_eq!(all(a.iter()), vec![(b"k2".to_vec(), b"a2".to_vec())]);
    assert_eq!(
        all(db.iter()).len(),
        2,
        "the default keyspace sees only its own"
    );
    // One snapshot covers all keyspaces.
    let snap = db.snapshot();
    a.put(b"k2", b"later").expect("put");
    db.put(b"k", b"later").expect("put");
    let at = ReadOptions {
        snapshot: Some(snap),
        ..ReadOptions::default()
    };
    assert_eq!(a.get_opt(b"k2", &at).expect("get"), Some(b"a2".to_vec()));
    assert_eq!(
        db.get_opt(b"k", &at).expect("get"),
        Some(b"default".to_vec())
    );
    // Same name: the same keyspace.
    let a2 = db
        .keyspace("a", KeyspaceOptions::default())
        .expect("a again");
    assert_eq!(a2.id(), a.id());
    assert!(matches!(
        db.keyspace("default", KeyspaceOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        db.keyspace("", KeyspaceOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    db.close().expect("close");
}

#[test]
fn keyspaces_survive_flush_compaction_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model: BTreeMap<(u8, Vec<u8>), Vec<u8>> = BTreeMap::new();
    {
        let db = Db::open(dir.path(), small()).expect("open");
        let ks = [
            db.default_keyspace(),
            db.keyspace("one", KeyspaceOptions::default()).expect("one"),
            db.keyspace(
                "two",
                KeyspaceOptions {
                    bloom_bits_per_key: 0,
                    compression: varve::Compression::None,
                    ..KeyspaceOptions::default()
                },
            )
            .expect("two"),
        ];
        for i in 0..20_000u32 {
            let k = (i % 3) as usize;
            let key = format!("key{:06}", (i * 7919) % 5000).into_bytes();
            let value = format!("v{i}-{}", "x".repeat((i % 50) as usize)).into_bytes();
            let mut batch = WriteBatch::new();
            batch.put_in(&ks[k], &key, &value);
            model.insert((k as u8, key.clone()), value.clone());
            if i % 10 == 0 {
                // The same key in the next keyspace, atomically.
                let j = (k + 1) % 3;
                batch.put_in(&ks[j], &key, &value);
                model.insert((j as u8, key), value);
            }
            db.write(batch).expect("write");
        }
        db.wait_for_compactions().expect("compactions");
        let stats = db.stats();
        assert!(stats.flushes > 3, "memtables were flushed: {stats:?}");
        for (k, ks) in ks.iter().enumerate() {
            let got = all(ks.iter());
            let want: Vec<_> = model
                .iter()
                .filter(|((m, _), _)| *m as usize == k)
                .map(|((_, key), v)| (key.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "keyspace {k}");
        }
        // Unflushed writes stay in the WAL across the reopen.
        ks[1].put(b"tail", b"in the wal").expect("put");
        model.insert((1, b"tail".to_vec()), b"in the wal".to_vec());
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), small()).expect("reopen");
    assert_eq!(db.keyspaces(), vec!["default", "one", "two"]);
    let ks = [
        db.default_keyspace(),
        db.keyspace("one", KeyspaceOptions::default()).expect("one"),
        db.keyspace("two", KeyspaceOptions::default()).expect("two"),
    ];
    for (k, ks) in ks.iter().enumerate() {
        let want: Vec<_> = model
            .iter()
            .filter(|((m, _), _)| *m as usize == k)
            .map(|((_, key), v)| (key.clone(), v.clone()))
            .collect();
        assert_eq!(all(ks.iter()), want, "keyspace {k} after reopen");
        let back: Vec<_> = ks
            .iter()
            .rev()
            .collect::<varve::Result<Vec<_>>>()
            .expect("rev");
        assert_eq!(back.len(), want.len());
        assert_eq!(
            ks.par_count(&ReadOptions::default(), &KeyRange::all(), 2)
                .expect("count"),
            want.len() as u64
        );
        let keys: Vec<&[u8]> = want.iter().take(50).map(|(k, _)| k.as_slice()).collect();
        let got = ks.multi_get(&ReadOptions::default(), &keys);
        for ((_, v), g) in want.iter().zip(got) {
            assert_eq!(g.expect("multi_get"), Some(v.clone()));
        }
    }
    db.close().expect("close");
}

#[test]
fn drop_and_recreate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small()).expect("open");
    let a = db.keyspace("a", KeyspaceOptions::default()).expect("a");
    for i in 0..5000u32 {
        a.put(format!("k{i:05}"), [7u8; 100]).expect("put");
    }
    db.flush().expect("flush");
    let old_it = a.iter();
    db.drop_keyspace("a").expect("drop");
    assert!(matches!(a.get(b"k00001"), Err(Error::KeyspaceNotFound(_))));
    assert!(matches!(a.put(b"x", b"y"), Err(Error::KeyspaceNotFound(_))));
    assert!(a.iter().next().expect("an item").is_err());
    // An iterator opened before the drop keeps reading.
    assert_eq!(old_it.count(), 5000);
    assert!(matches!(
        db.drop_keyspace("a"),
        Err(Error::KeyspaceNotFound(_))
    ));
    let a2 = db.keyspace("a", KeyspaceOptions::default()).expect("again");
    assert_ne!(a2.id(), a.id(), "ids are never reused");
    assert_eq!(a2.get(b"k00001").expect("get"), None);
    a2.put(b"new", b"1").expect("put");
    db.close().expect("close");
    let db = Db::open(dir.path(), small()).expect("reopen");
    assert_eq!(db.keyspaces(), vec!["default", "a"]);
    let a = db.keyspace("a", KeyspaceOptions::default()).expect("a");
    assert_eq!(all(a.iter()), vec![(b"new".to_vec(), b"1".to_vec())]);
    // The dropped keyspace's tables are gone from the directory.
    db.flush().expect("flush");
    let tables = std::fs::read_dir(dir.path())
        .expect("list")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        })
        .count();
    assert!(tables <= 2, "{tables} tables left");
    db.close().expect("close");
}

/// A keyspace written once and then left idle does not keep WALs alive:
/// flushes are atomic across keyspaces, so its memtable goes with the
/// others'.
#[test]
fn an_idle_keyspace_does_not_pin_wals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small()).expect("open");
    let idle = db
        .keyspace("idle", KeyspaceOptions::default())
        .expect("idle");
    idle.put(b"once", b"only").expect("put");
    let busy = db
        .keyspace("busy", KeyspaceOptions::default())
        .expect("busy");
    for i in 0..50_000u32 {
        busy.put(format!("k{i:06}"), [1u8; 64]).expect("put");
    }
    db.wait_for_compactions().expect("wait");
    // Let the flush thread retire what it can.
    std::thread::sleep(Duration::from_millis(200));
    let wals = std::fs::read_dir(dir.path())
        .expect("list")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".log"))
        })
        .count();
    assert!(wals <= 3, "{wals} WALs kept alive");
    assert_eq!(idle.get(b"once").expect("get"), Some(b"only".to_vec()));
    db.close().expect("close");
    let db = Db::open(dir.path(), small()).expect("reopen");
    let idle = db
        .keyspace("idle", KeyspaceOptions::default())
        .expect("idle");
    assert_eq!(idle.get(b"once").expect("get"), Some(b"only".to_vec()));
    db.close().expect("close");
}

#[test]
fn range_deletes_per_keyspace_survive_compaction_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small()).expect("open");
    let a = db.keyspace("a", KeyspaceOptions::default()).expect("a");
    for i in 0..1000u32 {
        let k = format!("k{i:04}");
        a.put(&k, b"a").expect("put");
        db.put(&k, b"d").expect("put");
    }
    a.delete_range(b"k0100".as_slice()..b"k0200".as_slice())
        .expect("delete_range");
    assert_eq!(a.get(b"k0150").expect("get"), None);
    assert_eq!(db.get(b"k0150").expect("get"), Some(b"d".to_vec()));
    assert_eq!(all(a.iter()).len(), 900);
    a.compact_range(None, None).expect("compact");
    assert_eq!(all(a.iter()).len(), 900);
    assert_eq!(all(db.iter()).len(), 1000);
    let sync = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    a.put_opt(b"synced", b"1", &sync).expect("sync put");
    db.close().expect("close");
    let db = Db::open(dir.path(), small()).expect("reopen");
    let a = db.keyspace("a", KeyspaceOptions::default()).expect("a");
    assert_eq!(all(a.iter()).len(), 901);
    assert_eq!(a.get(b"k0150").expect("get"), None);
    db.close().expect("close");
}

#[test]
fn checkpoint_and_read_only_keep_keyspaces() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = tempfile::tempdir().expect("tempdir");
    let target = copy.path().join("cp");
    {
        let db = Db::open(dir.path(), small()).expect("open");
        let a = db.keyspace("a", KeyspaceOptions::default()).expect("a");
        for i in 0..3000u32 {
            a.put(format!("k{i:05}"), b"flushed").expect("put");
        }
        db.flush().expect("flush");
        a.put(b"unflushed", b"in the wal").expect("put");
        db.put(b"d", b"default").expect("put");
        db.checkpoint(&target).expect("checkpoint");
        db.close().expect("close");
    }
    for path in [dir.path(), target.as_path()] {
        let db = Db::open_read_only(path, small()).expect("read-only");
        assert_eq!(db.keyspaces(), vec!["default", "a"]);
        let a = db.keyspace("a", KeyspaceOptions::default()).expect("a");
        assert_eq!(all(a.iter()).len(), 3001, "{}", path.display());
        assert_eq!(
            a.get(b"unflushed").expect("get"),
            Some(b"in the wal".to_vec())
        );
        assert_eq!(db.get(b"d").expect("get"), Some(b"default".to_vec()));
        assert!(matches!(
            db.keyspace("new", KeyspaceOptions::default()),
            Err(Error::ReadOnly(_))
        ));
        db.close().expect("close");
    }
}

fn files_with(dir: &std::path::Path, pred: impl Fn(&str) -> bool) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| pred(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect()
}

/// Repair puts every table and WAL record back into its keyspace, under
/// the name the readable manifest gives (or `recovered-<id>` without
/// one), and leaves a dropped keyspace's tables out.
#[test]
fn repair_puts_data_back_in_its_keyspaces() {
    for keep_manifest in [true, false] {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let db = Db::open(dir.path(), small()).expect("open");
            let a = db.keyspace("a", KeyspaceOptions::default()).expect("a");
            let gone = db
                .keyspace("gone", KeyspaceOptions::default())
                .expect("gone");
            for i in 0..2000u32 {
                let k = format!("k{i:05}");
                db.put(&k, b"default").expect("put");
                a.put(&k, b"a").expect("put");
                gone.put(&k, b"gone").expect("put");
            }
            db.flush().expect("flush");
            db.drop_keyspace("gone").expect("drop");
            // Some writes only in the WAL, one batch across keyspaces.
            let mut batch = WriteBatch::new();
            batch.put_in(&a, b"wal-only", b"a");
            batch.put(b"wal-only", b"default");
            db.write(batch).expect("write");
            a.delete(b"k00007").expect("delete");
            db.close().expect("close");
        }
        for p in files_with(dir.path(), |n| n == "CURRENT") {
            std::fs::remove_file(p).expect("rm CURRENT");
        }
        if !keep_manifest {
            for p in files_with(dir.path(), |n| n.starts_with("MANIFEST-")) {
                std::fs::remove_file(p).expect("rm manifest");
            }
        }
        let report = Db::repair(dir.path(), &small()).expect("repair");
        let db = Db::open(dir.path(), small()).expect("reopen");
        let names = db.keyspaces();
        let a_name = if keep_manifest {
            "a"
        } else {
            names[1].as_str()
        };
        assert_eq!(report.keyspaces, vec![a_name.to_string()], "{report:?}");
        if keep_manifest {
            assert_eq!(names, vec!["default", "a"]);
        } else {
            assert!(a_name.starts_with("recovered-"), "{names:?}");
        }
        let a = db.keyspace(a_name, KeyspaceOptions::default()).expect("a");
        let got = all(a.iter());
        assert_eq!(got.len(), 2000, "1999 flushed keys and the WAL's");
        assert!(got.iter().all(|(_, v)| v == b"a"));
        assert_eq!(a.get(b"k00007").expect("get"), None);
        assert_eq!(a.get(b"wal-only").expect("get"), Some(b"a".to_vec()));
        let d = all(db.iter());
        assert_eq!(d.len(), 2001);
        assert!(d.iter().all(|(_, v)| v == b"default"));
        if keep_manifest {
            // The dropped keyspace's tables were left out.
            assert!(
                db.keyspace("gone", KeyspaceOptions::default())
                    .expect("a new one")
                    .iter()
                    .next()
                    .is_none()
            );
        }
        db.close().expect("close");
    }
}

/// A keyspace's own write buffer switches (and so flushes) the memtables
/// when that keyspace alone fills it, long before the database's.
#[test]
fn a_keyspace_write_buffer_switches_memtables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        dir.path(),
        Options {
            write_buffer_size: 64 << 20,
            ..Options::default()
        },
    )
    .expect("open");
    let log = db
        .keyspace(
            "log",
            KeyspaceOptions {
                write_buffer_size: Some(64 << 10),
                ..KeyspaceOptions::default()
            },
        )
        .expect("log");
    let bulk = db
        .keyspace("bulk", KeyspaceOptions::default())
        .expect("bulk");
    for i in 0..200u32 {
        bulk.put(format!("b{i:05}"), [2u8; 100]).expect("put");
    }
    let before = db.stats().flushes;
    for i in 0..4000u32 {
        log.put(format!("l{i:05}"), [1u8; 100]).expect("put");
    }
    db.flush().expect("flush");
    let flushes = db.stats().flushes - before;
    // ~450 KiB of entries in 64 KiB memtables: several switches.
    assert!(flushes >= 4, "{flushes} flushes");
    assert!(
        matches!(
            db.keyspace(
                "bad",
                KeyspaceOptions {
                    write_buffer_size: Some(10),
                    ..KeyspaceOptions::default()
                }
            ),
            Err(Error::InvalidArgument(_))
        ),
        "a tiny write buffer is refused"
    );
    assert_eq!(all(log.iter()).len(), 4000);
    assert_eq!(all(bulk.iter()).len(), 200);
    db.close().expect("close");
}

/// Closing the database while other threads write through `Keyspace`
/// handles: every writer stops (with `Closed`), none hangs, and every
/// write that returned Ok is there after a reopen.
#[test]
fn close_while_keyspace_writers_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small()).expect("open");
    let ks = db.keyspace("w", KeyspaceOptions::default()).expect("w");
    let (tx, rx) = std::sync::mpsc::channel();
    let mut threads = Vec::new();
    for t in 0..4u32 {
        let ks = ks.clone();
        let tx = tx.clone();
        threads.push(std::thread::spawn(move || {
            let opts = WriteOptions {
                sync: t % 2 == 0,
                ..WriteOptions::default()
            };
            let mut acked = Vec::new();
            for i in 0u32.. {
                let key = format!("t{t}-{i:08}");
                match ks.put_opt(&key, b"v", &opts) {
                    Ok(()) => acked.push(key),
                    Err(Error::Closed) => break,
                    Err(e) => panic!("writer {t}: {e}"),
                }
            }
            tx.send(acked).expect("send");
        }));
    }
    drop(tx);
    std::thread::sleep(Duration::from_millis(150));
    db.close().expect("close");
    let mut acked = Vec::new();
    for _ in 0..4 {
        acked.extend(
            rx.recv_timeout(Duration::from_secs(20))
                .expect("every writer stops after close"),
        );
    }
    for t in threads {
        t.join().expect("writer thread");
    }
    assert!(!acked.is_empty());
    let db = Db::open(dir.path(), small()).expect("reopen");
    let ks = db.keyspace("w", KeyspaceOptions::default()).expect("w");
    for key in &acked {
        assert_eq!(ks.get(key).expect("get"), Some(b"v".to_vec()), "{key}");
    }
    db.close().expect("close");
}

struct DropMarked;

impl varve::CompactionFilter for DropMarked {
    fn name(&self) -> &str {
        "drop-marked"
    }
    fn filter(&self, _key: &[u8], value: &[u8]) -> varve::FilterDecision {
        if value == b"drop-me" {
            varve::FilterDecision::Remove
        } else {
            varve::FilterDecision::Keep
        }
    }
}

/// `KeyspaceOptions::ttl` and `compaction_filter` apply to their keyspace
/// only.
#[test]
fn ttl_and_filter_are_per_keyspace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small()).expect("open");
    let short = db
        .keyspace(
            "short",
            KeyspaceOptions {
                ttl: Some(Duration::from_secs(1)),
                ..KeyspaceOptions::default()
            },
        )
        .expect("short");
    let filtered = db
        .keyspace(
            "filtered",
            KeyspaceOptions {
                compaction_filter: Some(std::sync::Arc::new(DropMarked)),
                ..KeyspaceOptions::default()
            },
        )
        .expect("filtered");
    for i in 0..100u32 {
        let k = format!("k{i:03}");
        let v: &[u8] = if i % 2 == 0 { b"drop-me" } else { b"keep" };
        db.put(&k, v).expect("put");
        short.put(&k, v).expect("put");
        filtered.put(&k, v).expect("put");
    }
    // The filter runs in its keyspace's compactions only.
    filtered.compact_range(None, None).expect("compact");
    db.compact_range(None, None).expect("compact");
    assert_eq!(all(filtered.iter()).len(), 50);
    assert_eq!(all(db.iter()).len(), 100);
    // Expiry is never early: a TTL of 1 s hides the entries a few seconds
    // later (samples are taken once a second), in that keyspace only.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while short.get(b"k001").expect("get").is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "entries of a 1 s TTL still visible after 20 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(all(short.iter()).len(), 0);
    assert_eq!(all(db.iter()).len(), 100, "the default keyspace has no TTL");
    assert_eq!(all(filtered.iter()).len(), 50);
    db.close().expect("close");
}

/// A database written before keyspaces existed (manifest format 4, write
/// batches of format 2, by the build of `c13bbe1`: 2000 `fillseq` keys,
/// a range delete of the middle tenth, a flush, then 50 overwrites and the
/// same range delete in the WAL) opens as one default keyspace, and takes
/// keyspaces afterwards.
#[test]
fn a_database_from_before_keyspaces_opens_as_the_default_keyspace() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifest-v4-db");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).expect("mkdir");
    for e in std::fs::read_dir(&fixture).expect("fixture") {
        let p = e.expect("entry").path();
        std::fs::copy(&p, dir.join(p.file_name().expect("name"))).expect("copy");
    }
    // The keys of varve-bench: the number (8 bytes, big-endian) padded.
    let key = |n: u64| {
        let mut k = n.to_be_bytes().to_vec();
        k.extend_from_slice(b"00000000");
        k
    };
    let check = |db: &Db| {
        assert_eq!(db.keyspaces(), vec!["default"]);
        assert_eq!(all(db.iter()).len(), 1800);
        assert_eq!(db.get(key(1000)).expect("get"), None, "range-deleted");
        assert_eq!(db.get(key(5)).expect("get").map(|v| v.len()), Some(20));
    };
    let db = Db::open_read_only(&dir, Options::default()).expect("read-only open");
    check(&db);
    db.close().expect("close");
    let db = Db::open(&dir, Options::default()).expect("open");
    check(&db);
    let ks = db.keyspace("new", KeyspaceOptions::default()).expect("new");
    ks.put(b"k", b"v").expect("put");
    db.close().expect("close");
    let db = Db::open(&dir, Options::default()).expect("reopen");
    assert_eq!(db.keyspaces(), vec!["default", "new"]);
    assert_eq!(all(db.iter()).len(), 1800);
    let ks = db.keyspace("new", KeyspaceOptions::default()).expect("new");
    assert_eq!(ks.get(b"k").expect("get"), Some(b"v".to_vec()));
    db.close().expect("close");
}

/// After a reopen, a keyspace that has not been named yet runs without the
/// default keyspace's TTL (or filter): it must not expire on someone
/// else's setting while it waits for `Db::keyspace`.
#[test]
fn an_unnamed_keyspace_does_not_take_the_default_ttl() {
    let dir = tempfile::tempdir().expect("tempdir");
    let with_ttl = Options {
        ttl: Some(Duration::from_secs(1)),
        ..small()
    };
    {
        let db = Db::open(dir.path(), with_ttl.clone()).expect("open");
        let k = db
            .keyspace(
                "k",
                KeyspaceOptions {
                    ttl: None,
                    ..KeyspaceOptions::default()
                },
            )
            .expect("k");
        for i in 0..100u32 {
            k.put(format!("k{i:03}"), b"v").expect("put");
            db.put(format!("d{i:03}"), b"v").expect("put");
        }
        db.flush().expect("flush");
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), with_ttl).expect("reopen");
    // The default keyspace's entries expire; the other keyspace's stay.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while db.get(b"d001").expect("get").is_some() {
        assert!(std::time::Instant::now() < deadline, "the TTL never hid");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(1500));
    db.wait_for_compactions().expect("wait");
    let k = db
        .keyspace(
            "k",
            KeyspaceOptions {
                ttl: None,
                ..KeyspaceOptions::default()
            },
        )
        .expect("k");
    assert_eq!(all(k.iter()).len(), 100);
    db.close().expect("close");
}
