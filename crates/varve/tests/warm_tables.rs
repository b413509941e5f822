//! `Options::warm_table_cache`: after a reopen, the background thread opens
//! every live table (up to `max_open_files`) without any read from the
//! user; with the option off, tables open only when a read needs them; a
//! database closed while it warms closes at once and reopens intact; a
//! table that fails to open while warming is reported by the read that
//! needs it, not swallowed.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{fast_tempdir, tiny_lsm_options};
use varve::{Db, Options, ReadOptions};

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A database of several levels and many tables, closed.
fn build(dir: &Path) -> usize {
    let db = Db::open(dir, tiny_lsm_options()).expect("open");
    for i in 0..4000 {
        db.put(key(i), vec![(i % 251) as u8; 100]).expect("put");
    }
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    let tables = db.debug().live_tables().concat().len();
    db.close().expect("close");
    tables
}

fn open_tables(db: &Db) -> u64 {
    db.stats().open_tables
}

/// Waits up to 10 s for `done`.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done()
}

#[test]
fn reopened_database_opens_its_tables_in_the_background() {
    let dir = fast_tempdir();
    let tables = build(dir.path());
    assert!(tables >= 8, "several tables: {tables}");
    let db = Db::open(dir.path(), tiny_lsm_options()).expect("reopen");
    assert!(
        eventually(|| open_tables(&db) == tables as u64),
        "{} of {tables} tables open",
        open_tables(&db)
    );
    assert!(db.stats().pinned_table_memory > 0);
    for i in (0..4000).step_by(97) {
        assert_eq!(
            db.get(key(i)).expect("get"),
            Some(vec![(i % 251) as u8; 100])
        );
    }
}

#[test]
fn without_warming_tables_open_on_demand() {
    let dir = fast_tempdir();
    let tables = build(dir.path());
    let opts = Options {
        warm_table_cache: false,
        ..tiny_lsm_options()
    };
    let db = Db::open(dir.path(), opts).expect("reopen");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(open_tables(&db), 0, "no read yet");
    assert_eq!(db.get(key(0)).expect("get"), Some(vec![0u8; 100]));
    let after_one = open_tables(&db);
    assert!(after_one >= 1 && after_one < tables as u64, "{after_one}");
}

#[test]
fn warming_stops_within_max_open_files() {
    let dir = fast_tempdir();
    let tables = build(dir.path());
    let cap = 16usize;
    assert!(tables > cap, "more tables than the cache holds: {tables}");
    let opts = Options {
        max_open_files: cap,
        ..tiny_lsm_options()
    };
    let db = Db::open(dir.path(), opts).expect("reopen");
    assert!(eventually(|| open_tables(&db) == cap as u64));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(open_tables(&db), cap as u64);
}

#[test]
fn close_while_warming_is_prompt_and_clean() {
    let dir = fast_tempdir();
    build(dir.path());
    for _ in 0..20 {
        let start = Instant::now();
        let db = Db::open(dir.path(), tiny_lsm_options()).expect("reopen");
        db.close().expect("close");
        assert!(start.elapsed() < Duration::from_secs(5));
    }
    let db = Db::open(dir.path(), tiny_lsm_options()).expect("reopen");
    assert_eq!(common::count_keys(&db, &ReadOptions::default()), 4000);
}

#[test]
fn a_table_that_fails_to_open_is_reported_by_the_read() {
    let dir = fast_tempdir();
    build(dir.path());
    // Zero one table's last bytes (its footer), keeping its size (the
    // open checks sizes): it cannot be opened.
    let mut ssts: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    ssts.sort();
    let victim = ssts.first().expect("a table").clone();
    let mut bytes = std::fs::read(&victim).expect("read");
    let n = bytes.len();
    bytes[n - 64..].fill(0);
    std::fs::write(&victim, &bytes).expect("write");
    let db = Db::open(dir.path(), tiny_lsm_options()).expect("reopen");
    let mut errors = 0;
    for i in 0..4000 {
        if let Err(e) = db.get(key(i)) {
            assert!(e.to_string().contains(".sst"), "names the table: {e}");
            errors += 1;
        }
    }
    assert!(errors > 0, "the cut table's keys fail");
}
