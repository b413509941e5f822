//! Write failures poison the database: a failed WAL append or fdatasync
//! (or a full disk) fails that write, every later write returns
//! `Error::Poisoned`, reads and iterators keep working, and a reopen brings
//! back every write acknowledged before the failure.

mod common;

use std::sync::Arc;

use varve::fs::PosixFs;
use varve::testing::FaultInjectingFs;
use varve::{Db, Error, Options, WriteOptions};

/// The fault-injecting file system, with the plain WAL: each WAL append
/// meets the injected faults (a mapped log spends disk space only when it
/// grows, and stores into it cannot fail; `tests/enospc.rs` fills real file
/// systems under it). Blob values take the default, staged path.
fn faulty() -> (FaultInjectingFs, Options) {
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    let opts = Options {
        fs: Arc::new(fs.clone()),
        wal_writer: varve::WalWriter::Plain,
        ..Options::default()
    };
    (fs, opts)
}

fn check_poisoned_then_reopen(
    dir: &std::path::Path,
    db: Db,
    fs: &FaultInjectingFs,
    first_error: Error,
) {
    check_poisoned_then_reopen_naming(dir, db, fs, first_error, ".log");
}

/// As above, the first error naming a file whose name ends in `suffix`.
fn check_poisoned_then_reopen_naming(
    dir: &std::path::Path,
    db: Db,
    fs: &FaultInjectingFs,
    first_error: Error,
    suffix: &str,
) {
    assert!(
        matches!(first_error, Error::Io { .. }),
        "the failing write reports the IO error: {first_error}"
    );
    assert!(
        first_error.to_string().contains(suffix),
        "the error names the {suffix} file: {first_error}"
    );
    fs.heal();
    let later = db.put(b"later", b"x").expect_err("poisoned");
    assert!(matches!(later, Error::Poisoned(_)), "{later}");
    assert!(later.to_string().contains("reopen"), "{later}");
    assert!(matches!(db.delete(b"before-0"), Err(Error::Poisoned(_))));
    // Reads keep working.
    assert_eq!(db.get(b"before-0").expect("get"), Some(b"v".to_vec()));
    assert!(db.iter().filter(|r| r.is_ok()).count() >= 10);
    drop(db);
    let db = Db::open(dir, Options::default()).expect("reopen");
    for i in 0..10 {
        assert_eq!(
            db.get(format!("before-{i}")).expect("get"),
            Some(b"v".to_vec())
        );
    }
    assert_eq!(db.get(b"later").expect("get"), None);
    db.put(b"after-reopen", b"y")
        .expect("writable after reopen");
}

#[test]
fn failed_wal_append_poisons() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty();
    let db = Db::open(dir.path(), opts).expect("open");
    for i in 0..10 {
        db.put(format!("before-{i}"), b"v").expect("put");
    }
    fs.fail_appends_after(0);
    let e = db.put(b"failing", b"v").expect_err("append fails");
    check_poisoned_then_reopen(dir.path(), db, &fs, e);
}

#[test]
fn failed_fdatasync_poisons() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty();
    let db = Db::open(dir.path(), opts).expect("open");
    for i in 0..10 {
        db.put_opt(format!("before-{i}"), b"v", &WriteOptions::sync())
            .expect("put");
    }
    fs.fail_syncs(true);
    let e = db
        .put_opt(b"failing", b"v", &WriteOptions::sync())
        .expect_err("sync fails");
    check_poisoned_then_reopen(dir.path(), db, &fs, e);
}

/// Ten small puts, then a 4 KiB put on a disk with 100 bytes free: the put
/// fails with ENOSPC as an IO error naming a file ending in `suffix`, and
/// the database is poisoned as after any write failure.
fn disk_full_under_a_large_put(min_blob_size: Option<usize>, suffix: &str) {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty();
    let opts = Options {
        min_blob_size,
        ..opts
    };
    let db = Db::open(dir.path(), opts).expect("open");
    for i in 0..10 {
        db.put(format!("before-{i}"), b"v").expect("put");
    }
    fs.set_free_space(100);
    let e = db.put(b"big", vec![7u8; 4096]).expect_err("no space");
    match &e {
        Error::Io { source, .. } => assert_eq!(source.kind(), std::io::ErrorKind::StorageFull),
        other => panic!("expected an IO error, got {other}"),
    }
    check_poisoned_then_reopen_naming(dir.path(), db, &fs, e, suffix);
}

/// Values inline: the WAL is what meets the full disk.
#[test]
fn disk_full_is_an_error_not_a_crash() {
    disk_full_under_a_large_put(None, ".log");
}

/// With blob files (the default), a large value meets the full disk in its
/// blob file: the same error, naming that file, and the same poisoning.
#[test]
fn disk_full_under_a_blob_value_is_an_error_naming_the_blob_file() {
    disk_full_under_a_large_put(Options::default().min_blob_size, ".blob");
}

#[test]
fn group_members_of_a_failed_group_all_fail() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty();
    let db = Arc::new(Db::open(dir.path(), opts).expect("open"));
    fs.fail_appends_after(50);
    let results: Vec<Vec<bool>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let db = Arc::clone(&db);
                s.spawn(move || {
                    (0..40)
                        .map(|i| db.put(format!("t{t}-{i}"), b"v").is_ok())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    // Every acknowledged write is readable now and after reopen; none after
    // the first failure in a thread succeeded.
    for (t, r) in results.iter().enumerate() {
        let first_fail = r.iter().position(|ok| !ok).unwrap_or(r.len());
        assert!(
            r[first_fail..].iter().all(|ok| !ok),
            "thread {t} wrote after poisoning"
        );
    }
    drop(Arc::into_inner(db).expect("sole owner"));
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    for (t, r) in results.iter().enumerate() {
        for (i, ok) in r.iter().enumerate() {
            if *ok {
                assert_eq!(
                    db.get(format!("t{t}-{i}")).expect("get"),
                    Some(b"v".to_vec()),
                    "t{t}-{i} lost"
                );
            }
        }
    }
}
