//! Bad input gets a clear error, never a panic: empty and oversized keys and
//! values, a path that is a file, a database locked by this process or by
//! another one, `create_if_missing` / `error_if_exists`, bad options.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use varve::{Db, Error, Options, WriteBatch};

fn small_limits() -> Options {
    Options {
        max_key_size: 16,
        max_value_size: 64,
        ..Options::default()
    }
}

#[test]
fn empty_and_oversized_keys_and_values() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path(), small_limits()).expect("open");
    let e = db.put(b"", b"v").expect_err("empty key");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("empty"), "{e}");
    let e = db.put([b'k'; 17], b"v").expect_err("oversized key");
    assert!(
        matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("max_key_size"),
        "{e}"
    );
    let e = db.put(b"k", [0u8; 65]).expect_err("oversized value");
    assert!(
        matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("max_value_size"),
        "{e}"
    );
    let e = db.delete(b"").expect_err("empty key delete");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // A batch with one bad operation is rejected whole.
    let mut b = WriteBatch::new();
    b.put(b"good", b"v");
    b.put([b'k'; 17], b"v");
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get(b"good").expect("get"), None);
    // Limits are inclusive and the database keeps working.
    db.put([b'k'; 16], [1u8; 64])
        .expect("max sizes are accepted");
    assert_eq!(db.get([b'k'; 16]).expect("get"), Some(vec![1u8; 64]));
}

#[test]
fn path_that_is_a_file() {
    let dir = common::fast_tempdir();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"hello").expect("write");
    let e = Db::open(&file, Options::default()).expect_err("file path");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(
        e.to_string().contains("not-a-dir") && e.to_string().contains("not a directory"),
        "{e}"
    );
}

#[test]
fn second_open_in_the_same_process_is_locked() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let e = Db::open(dir.path(), Options::default()).expect_err("locked");
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    assert!(e.to_string().contains("LOCK"), "{e}");
    assert!(
        matches!(
            Db::destroy(dir.path(), &Options::default()),
            Err(Error::Locked { .. })
        ),
        "destroy of an open db"
    );
    drop(db);
    Db::open(dir.path(), Options::default()).expect("open after the first closed");
}

const HOLDER_ENV: &str = "VARVE_LOCK_HOLDER_DIR";

/// Child entry point: opens the database and holds it until killed.
#[test]
#[ignore = "child-process entry point: the lock test runs it in the process that holds the lock"]
fn lock_holder_entry() {
    let Ok(dir) = std::env::var(HOLDER_ENV) else {
        return;
    };
    let _db = Db::open(&dir, Options::default()).expect("holder open");
    std::fs::write(format!("{dir}.ready"), b"").expect("ready flag");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn open_locked_by_another_process() {
    if std::env::var(HOLDER_ENV).is_ok() {
        return;
    }
    let dir = common::fast_tempdir();
    let db_dir = dir.path().join("db");
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", "--ignored", "lock_holder_entry", "--nocapture"])
        .env(HOLDER_ENV, &db_dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    let ready = dir.path().join("db.ready");
    for _ in 0..500 {
        if ready.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(ready.exists(), "lock holder did not start");
    let e = Db::open(&db_dir, Options::default()).expect_err("locked by the child");
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    child.kill().expect("kill");
    child.wait().expect("wait");
    Db::open(&db_dir, Options::default()).expect("open once the holder died");
}

#[test]
fn create_if_missing_and_error_if_exists() {
    let dir = common::fast_tempdir();
    let path = dir.path().join("db");
    let no_create = Options {
        create_if_missing: false,
        ..Options::default()
    };
    assert!(matches!(
        Db::open(&path, no_create.clone()),
        Err(Error::NotFound(_))
    ));
    Db::open(&path, Options::default())
        .expect("create")
        .close()
        .expect("close");
    Db::open(&path, no_create).expect("existing db opens without create_if_missing");
    let exclusive = Options {
        error_if_exists: true,
        ..Options::default()
    };
    let got = Db::open(&path, exclusive);
    assert!(matches!(got, Err(Error::AlreadyExists(_))), "{got:?}");
}

#[test]
fn bad_options() {
    let dir = common::fast_tempdir();
    for o in [
        Options {
            write_buffer_size: 1,
            ..Options::default()
        },
        Options {
            max_key_size: 0,
            ..Options::default()
        },
        Options {
            max_value_size: 2 << 30,
            ..Options::default()
        },
    ] {
        assert!(matches!(
            Db::open(dir.path(), o),
            Err(Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn destroy_removes_the_database() {
    let dir = common::fast_tempdir();
    let path = dir.path().join("db");
    let db = Db::open(&path, Options::default()).expect("open");
    db.put(b"k", b"v").expect("put");
    db.close().expect("close");
    Db::destroy(&path, &Options::default()).expect("destroy");
    assert!(!path.exists());
    Db::destroy(&path, &Options::default()).expect("destroying nothing is fine");
}
