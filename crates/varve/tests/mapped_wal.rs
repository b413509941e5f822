//! The memory-mapped WAL (`Options::wal_mmap`, the default on a real file
//! system): writes are visible in the file the moment they are acknowledged
//! (what `kill -9` keeps), the preallocated zero tail a dead process leaves
//! behind is recovered as the end of the log — also in a log that newer logs
//! follow — while real damage there is still `Corruption` (when a newer log
//! holds records: one made ahead of a switch holds none).

mod common;

use std::path::Path;

use varve::fs::PosixFs;
use varve::{Db, Error, Options};

fn keys(n: u32) -> impl Iterator<Item = Vec<u8>> {
    (0..n).map(|i| format!("mapped-{i:05}").into_bytes())
}

/// Writes `n` keys into a database at `dir` and, while it is still open,
/// copies its files to `copy` (the state a `kill -9` would leave).
fn snapshot_of_open_db(dir: &Path, copy: &Path, n: u32) {
    let db = Db::open(dir, Options::default()).expect("open");
    for k in keys(n) {
        db.put(&k, common::value_for(&k)).expect("put");
    }
    common::copy_dir(dir, copy);
    drop(db);
}

fn assert_all_present(dir: &Path, n: u32) {
    let db = Db::open(dir, Options::default()).expect("reopen");
    for k in keys(n) {
        assert_eq!(
            db.get(&k).expect("get"),
            Some(common::value_for(&k)),
            "{}",
            String::from_utf8_lossy(&k)
        );
    }
}

/// Adds a newer WAL, as if the dead process had switched memtables: with
/// one record (a put of `newer` at a sequence number past every earlier
/// one), or none (a log made ahead of a switch that never came).
fn add_newer_log(dir: &Path, with_record: bool) {
    let newest = common::wal_files(dir).pop().expect("a WAL");
    let stem = newest.file_stem().and_then(|s| s.to_str()).expect("stem");
    let number: u64 = stem.parse().expect("log number");
    let path = dir.join(format!("{:06}.log", number + 1));
    let mut batch = varve::WriteBatch::new();
    batch.put("newer", "record");
    let record = varve::testing::wal_record(&batch, 1 << 40);
    let records: &[&[u8]] = if with_record { &[&record] } else { &[] };
    varve::testing::write_wal(&PosixFs, &path, number + 1, records).expect("a newer log");
}

#[test]
fn an_open_logs_acknowledged_writes_are_in_the_file() {
    let root = common::fast_tempdir();
    let (dir, copy) = (root.path().join("db"), root.path().join("copy"));
    snapshot_of_open_db(&dir, &copy, 500);
    let wal = common::wal_files(&copy).pop().expect("a WAL");
    let bytes = std::fs::read(&wal).expect("read");
    assert!(
        bytes.len() >= 1 << 20 && bytes.ends_with(&[0u8; 4096]),
        "the live log is preallocated ({} bytes)",
        bytes.len()
    );
    assert_all_present(&copy, 500);
    // Recovery cut the zero tail off.
    let after = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert!(after < bytes.len() as u64, "{after}");
}

#[test]
fn zero_tail_in_an_older_log_is_not_corruption() {
    for with_record in [true, false] {
        let root = common::fast_tempdir();
        let (dir, copy) = (root.path().join("db"), root.path().join("copy"));
        snapshot_of_open_db(&dir, &copy, 300);
        add_newer_log(&copy, with_record);
        assert_all_present(&copy, 300);
        let db = Db::open(&copy, Options::default()).expect("reopen");
        let newer = db.get("newer").expect("get");
        assert_eq!(newer.is_some(), with_record, "the newer log's record");
    }
}

/// Damage after the good data of a log that a log with records follows is
/// corruption: that log was synced whole before the next got a record.
/// Followed only by a log without records (made ahead of a switch that a
/// power loss cut short), it is that log's torn tail, cut as in the newest
/// log, with everything before it kept.
#[test]
fn garbage_after_the_good_data_of_an_older_log_is_corruption() {
    for with_record in [true, false] {
        let root = common::fast_tempdir();
        let (dir, copy) = (root.path().join("db"), root.path().join("copy"));
        snapshot_of_open_db(&dir, &copy, 300);
        let wal = common::wal_files(&copy).pop().expect("a WAL");
        let mut bytes = std::fs::read(&wal).expect("read");
        let last = bytes.len() - 1000;
        bytes[last] = 0x5a;
        std::fs::write(&wal, &bytes).expect("write");
        add_newer_log(&copy, with_record);
        if with_record {
            let err = Db::open(&copy, Options::default()).expect_err("damaged older log");
            assert!(matches!(err, Error::Corruption { .. }), "{err}");
            assert!(err.to_string().contains(".log"), "{err}");
        } else {
            assert_all_present(&copy, 300);
        }
    }
}

#[test]
fn a_closed_log_is_cut_to_its_records_and_plain_appends_still_work() {
    for writer in [varve::WalWriter::Mapped, varve::WalWriter::Plain] {
        let mmap = writer == varve::WalWriter::Mapped;
        let root = common::fast_tempdir();
        let dir = root.path().join("db");
        let opts = || Options {
            wal_writer: writer,
            ..Options::default()
        };
        let db = Db::open(&dir, opts()).expect("open");
        for k in keys(200) {
            db.put(&k, common::value_for(&k)).expect("put");
        }
        db.close().expect("close");
        for wal in common::wal_files(&dir) {
            let len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
            assert!(
                len < 1 << 20,
                "mmap={mmap}: {} is {len} bytes",
                wal.display()
            );
        }
        let db = Db::open(&dir, opts()).expect("reopen");
        assert_eq!(db.iter().count(), 200, "mmap={mmap}");
    }
}
