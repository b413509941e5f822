//! `Db::open_read_only`: sees everything a normal open would (tables and
//! WAL data), refuses every write, and leaves the directory byte for byte
//! as it found it, even with a torn WAL tail that a normal open would cut.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use varve::{Db, Error, Options};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
}

/// Every file of the directory with its contents.
fn snapshot_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry"))
        .filter(|e| e.file_type().expect("type").is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).expect("read"),
            )
        })
        .collect()
}

fn build(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(dir, options()).expect("open");
    let mut model = BTreeMap::new();
    for i in 0..3000u32 {
        let k = format!("k{:05}", i % 2000).into_bytes();
        let v = common::value_for(&i.to_le_bytes());
        db.put(&k, &v).expect("put");
        model.insert(k, v);
    }
    db.flush().expect("flush");
    // More writes that stay in the WAL only.
    for i in 0..200u32 {
        let k = format!("w{i:04}").into_bytes();
        db.put(&k, b"wal").expect("put");
        model.insert(k, b"wal".to_vec());
    }
    db.delete(b"k00001").expect("delete");
    model.remove(&b"k00001"[..]);
    db.close().expect("close");
    model
}

#[test]
fn read_only_sees_everything_and_changes_nothing() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    let model = build(&dir);
    let before = snapshot_dir(&dir);
    {
        let db = Db::open_read_only(&dir, options()).expect("read-only open");
        let all: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.expect("iter")).collect();
        assert!(all == model, "read-only view differs from the data");
        assert_eq!(db.get(b"w0007").expect("get"), Some(b"wal".to_vec()));
        assert_eq!(db.get(b"k00001").expect("get"), None);
        for e in [
            db.put(b"x", b"y").expect_err("put"),
            db.delete(b"x").expect_err("delete"),
            db.flush().expect_err("flush"),
            db.compact_range(None, None).expect_err("compact"),
        ] {
            assert!(matches!(e, Error::ReadOnly(ref d) if d == db.path()), "{e}");
        }
        let _ = db.stats().to_string();
        db.close().expect("close");
    }
    assert_eq!(
        before,
        snapshot_dir(&dir),
        "a read-only open changed the directory"
    );
}

#[test]
fn read_only_keeps_a_torn_wal_tail_that_a_normal_open_cuts() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    let model = build(&dir);
    let wal = common::wal_files(&dir).into_iter().last().expect("a wal");
    let mut bytes = std::fs::read(&wal).expect("read");
    bytes.extend_from_slice(&[0x55; 7]); // a torn record header
    std::fs::write(&wal, &bytes).expect("write");
    let before = snapshot_dir(&dir);
    let db = Db::open_read_only(&dir, options()).expect("read-only open");
    assert_eq!(
        db.debug().recovery_report().truncated.len(),
        1,
        "the torn tail is reported"
    );
    let all: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.expect("iter")).collect();
    assert!(all == model);
    drop(db);
    assert_eq!(
        before,
        snapshot_dir(&dir),
        "the torn tail was left in place"
    );
    let db = Db::open(&dir, options()).expect("normal open");
    let all: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.expect("iter")).collect();
    assert!(all == model);
}

#[test]
fn read_only_open_of_a_locked_or_missing_database() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    build(&dir);
    let writer = Db::open(&dir, options()).expect("open");
    assert!(matches!(
        Db::open_read_only(&dir, options()),
        Err(Error::Locked { .. })
    ));
    drop(writer);
    Db::open_read_only(&dir, options()).expect("open once the writer is gone");
    let missing = root.path().join("nothing-here");
    assert!(matches!(
        Db::open_read_only(&missing, options()),
        Err(Error::NotFound(_))
    ));
    assert!(!missing.exists(), "a read-only open creates nothing");
}
