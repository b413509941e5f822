//! The next WAL is made ahead of a memtable switch (`db/write/room.rs`,
//! `prepare_switch`): the writer that fills the log past 7/8 syncs it and
//! creates the next log while the others go on, and the switch takes it.
//! The extra log is empty until then: a crash leaves it behind harmlessly,
//! a close removes it, and nothing written is lost either way.

mod common;

use std::path::{Path, PathBuf};

use varve::{Db, Options};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        // Flushes are not what this test is about: keep L0 out of it.
        l0_compaction_trigger: 1000,
        l0_slowdown_writes_trigger: 1000,
        l0_stop_writes_trigger: 1000,
        ..Options::default()
    }
}

fn key(i: u32) -> String {
    format!("key-{i:06}")
}

fn value(i: u32) -> Vec<u8> {
    common::value_for(key(i).as_bytes())
        .into_iter()
        .cycle()
        .take(100)
        .collect()
}

fn log_numbers(dir: &Path) -> Vec<PathBuf> {
    common::wal_files(dir)
}

fn check(db: &Db, n: u32) {
    for i in 0..n {
        assert_eq!(
            db.get(key(i)).expect("get").as_deref(),
            Some(value(i).as_slice()),
            "{}",
            key(i)
        );
    }
}

#[test]
fn the_next_log_is_made_ahead_used_by_the_switch_and_removed_at_close() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path(), options()).expect("open");
    let first = log_numbers(dir.path());
    assert_eq!(first.len(), 1, "a fresh database has one log: {first:?}");

    // Fill the memtable past its high-water mark, not to the switch: a
    // second, newer log appears while no memtable became immutable.
    let mut n = 0;
    let ahead = loop {
        db.put(key(n), value(n)).expect("put");
        n += 1;
        let logs = log_numbers(dir.path());
        let s = db.stats();
        if logs.len() == 2 {
            assert_eq!(s.immutable_memtables, 0, "made ahead, before the switch");
            assert_eq!(s.flushes, 0, "made ahead, before the switch");
            assert_eq!(logs[0], first[0]);
            break logs[1].clone();
        }
        assert!(
            s.immutable_memtables == 0 && s.flushes == 0,
            "the memtable switched after {n} writes with no log made ahead"
        );
    };
    assert!(std::fs::metadata(&ahead).expect("the log made ahead").len() > 0);

    // A crash now (the files as they are) loses nothing and opens with
    // the extra, empty log in place.
    let crashed = common::fast_tempdir();
    common::copy_dir(dir.path(), crashed.path());
    {
        let copy = Db::open(crashed.path(), options()).expect("open after the crash");
        check(&copy, n);
        copy.close().expect("close the copy");
    }

    // The switch takes the log made ahead: it becomes the current log,
    // and no other log is made.
    let switched_at = n;
    loop {
        db.put(key(n), value(n)).expect("put");
        n += 1;
        let s = db.stats();
        if s.immutable_memtables > 0 || s.flushes > 0 {
            break;
        }
        assert!(n < switched_at + 10_000, "no switch");
    }
    let logs = log_numbers(dir.path());
    assert_eq!(
        logs.last(),
        Some(&ahead),
        "the switch went on in the log made ahead"
    );
    // Its memtable's flush retires the first log.
    for _ in 0..1000 {
        if db.stats().flushes > 0 && log_numbers(dir.path()) == std::slice::from_ref(&ahead) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(
        log_numbers(dir.path()),
        std::slice::from_ref(&ahead),
        "flushed"
    );
    check(&db, n);

    // Fill past the next high-water mark, then close: the log made ahead
    // for the next switch does not stay behind.
    // (Only this thread writes, so no switch happens between the puts.)
    let before = log_numbers(dir.path());
    let flushes = db.stats().flushes;
    let mut made = None;
    for _ in 0..10_000 {
        db.put(key(n), value(n)).expect("put");
        n += 1;
        let s = db.stats();
        if s.immutable_memtables > 0 || s.flushes > flushes {
            panic!("the memtable switched with no log made ahead");
        }
        let logs = log_numbers(dir.path());
        if logs.len() > before.len() {
            made = logs.last().cloned();
            break;
        }
    }
    let made = made.expect("a next log was made ahead again");
    db.close().expect("close");
    assert!(
        !made.exists(),
        "close removed the unused log {made:?}: {:?}",
        log_numbers(dir.path())
    );
    let db = Db::open(dir.path(), options()).expect("reopen");
    check(&db, n);
    db.close().expect("close");
}
