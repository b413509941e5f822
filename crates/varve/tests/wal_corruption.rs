//! WAL corruption through the whole database: flip a byte at, and truncate
//! at, every offset of a small WAL, then open the database. Each open either
//! succeeds with exactly a prefix of the acknowledged writes (in write order)
//! or fails with `Corruption` (or `UnsupportedVersion` for a damaged header
//! version); never a panic, never a value that was not written. A database
//! opened after a torn tail is writable and reopens cleanly.

mod common;

use std::path::Path;

use varve::{Db, Error, Options, WriteBatch};

/// The writes, in order; a batch is one step (all its keys or none).
fn steps() -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut steps = Vec::new();
    for i in 0..24u32 {
        let n = if i % 5 == 4 { 3 } else { 1 };
        let step: Vec<_> = (0..n)
            .map(|j| {
                let k = format!("key-{i:02}-{j}").into_bytes();
                let v = common::value_for(&k);
                (k, v)
            })
            .collect();
        steps.push(step);
    }
    steps
}

fn build(dir: &Path) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let steps = steps();
    let db = Db::open(dir, Options::default()).expect("open");
    for step in &steps {
        let mut b = WriteBatch::new();
        for (k, v) in step {
            b.put(k, v);
        }
        db.write(b).expect("write");
    }
    // What a crash right after the last write leaves: damage to the log
    // then models a torn tail (after a clean close it is corruption).
    common::close_as_if_crashed(db);
    steps
}

/// Asserts the database holds exactly steps `[0, n)` for some n; returns n.
fn prefix_len(db: &Db, steps: &[Vec<(Vec<u8>, Vec<u8>)>], what: &str) -> usize {
    let present: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(|r| r.expect("iter")).collect();
    let mut expected = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        if expected.len() == present.len() {
            let mut sorted = expected.clone();
            sorted.sort();
            assert_eq!(sorted, present, "{what}: not a prefix of the writes");
            return n;
        }
        expected.extend(step.iter().cloned());
    }
    let mut sorted = expected;
    sorted.sort();
    assert_eq!(sorted, present, "{what}: contents differ from every prefix");
    steps.len()
}

fn the_wal(dir: &Path) -> std::path::PathBuf {
    let wals: Vec<_> = common::wal_files(dir)
        .into_iter()
        .filter(|p| std::fs::metadata(p).map(|m| m.len() > 64).unwrap_or(false))
        .collect();
    assert_eq!(wals.len(), 1, "expected one non-empty WAL, found {wals:?}");
    wals[0].clone()
}

#[test]
fn flipped_byte_at_every_offset_yields_a_prefix_or_corruption() {
    let root = common::fast_tempdir();
    let pristine = root.path().join("pristine");
    let steps = build(&pristine);
    let wal_name = the_wal(&pristine).file_name().expect("name").to_owned();
    let len = std::fs::metadata(pristine.join(&wal_name))
        .expect("meta")
        .len() as usize;
    let original = std::fs::read(pristine.join(&wal_name)).expect("read");
    let (mut ok, mut corrupt) = (0, 0);
    for offset in 0..len {
        for mask in [0x01u8, 0xff] {
            let dir = root.path().join(format!("flip-{offset}-{mask}"));
            common::copy_dir(&pristine, &dir);
            let mut bytes = original.clone();
            bytes[offset] ^= mask;
            std::fs::write(dir.join(&wal_name), &bytes).expect("write");
            match Db::open(&dir, Options::default()) {
                Ok(db) => {
                    let n = prefix_len(&db, &steps, &format!("flip at {offset} mask {mask:#x}"));
                    // Only the tail may be lost to a flip (the last record).
                    assert!(
                        n + 1 >= steps.len(),
                        "flip at {offset} lost {} steps without an error",
                        steps.len() - n
                    );
                    ok += 1;
                }
                Err(e @ (Error::Corruption { .. } | Error::UnsupportedVersion { .. })) => {
                    assert!(
                        e.to_string().contains(&*wal_name.to_string_lossy()),
                        "error must name the file: {e}"
                    );
                    corrupt += 1;
                }
                Err(e) => panic!("flip at {offset}: unexpected error {e}"),
            }
            std::fs::remove_dir_all(&dir).expect("cleanup");
        }
    }
    assert!(corrupt > 0 && ok > 0, "ok={ok} corrupt={corrupt}");
}

#[test]
fn truncation_at_every_offset_yields_the_complete_records() {
    let root = common::fast_tempdir();
    let pristine = root.path().join("pristine");
    let steps = build(&pristine);
    let wal_name = the_wal(&pristine).file_name().expect("name").to_owned();
    let original = std::fs::read(pristine.join(&wal_name)).expect("read");
    let mut last = 0;
    for cut in 0..=original.len() {
        let dir = root.path().join(format!("cut-{cut}"));
        common::copy_dir(&pristine, &dir);
        std::fs::write(dir.join(&wal_name), &original[..cut]).expect("write");
        let db = Db::open(&dir, Options::default())
            .unwrap_or_else(|e| panic!("truncation at {cut} must open (torn tail), got {e}"));
        let n = prefix_len(&db, &steps, &format!("cut at {cut}"));
        assert!(n >= last, "a longer file gave fewer records");
        last = n;
        if cut < original.len() && cut % 97 == 0 {
            // After a torn tail the database is writable and reopens cleanly.
            db.put(b"zz-after", b"x").expect("write after recovery");
            db.close().expect("close");
            let db = Db::open(&dir, Options::default()).expect("second reopen");
            assert!(
                db.debug().recovery_report().truncated.is_empty(),
                "tail was cut the first time"
            );
            assert_eq!(db.get(b"zz-after").expect("get"), Some(b"x".to_vec()));
            assert_eq!(prefix_len_without(&db, &steps, b"zz-after"), n);
        }
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
    assert_eq!(last, steps.len(), "the whole file holds every write");
}

fn prefix_len_without(db: &Db, steps: &[Vec<(Vec<u8>, Vec<u8>)>], extra: &[u8]) -> usize {
    let mut n = 0;
    for step in steps {
        if step
            .iter()
            .all(|(k, v)| db.get(k).expect("get").as_ref() == Some(v))
        {
            n += 1;
        } else {
            break;
        }
    }
    assert!(db.get(extra).expect("get").is_some());
    n
}

#[test]
fn zero_filled_tail_is_truncated_and_reported() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    let steps = build(&dir);
    let wal = the_wal(&dir);
    let mut bytes = std::fs::read(&wal).expect("read");
    let good = bytes.len() as u64;
    bytes.extend(std::iter::repeat_n(0u8, 70_000));
    std::fs::write(&wal, &bytes).expect("write");
    let db = Db::open(&dir, Options::default()).expect("open");
    assert_eq!(prefix_len(&db, &steps, "zero tail"), steps.len());
    let report = db.debug().recovery_report();
    assert_eq!(report.truncated.len(), 1, "{report:?}");
    assert_eq!(report.truncated[0].offset, good);
    // Recovery cut the tail, wrote the records to an L0 table and then
    // retired the log (had it stopped half way, the log would be left cut).
    assert!(
        std::fs::metadata(&wal)
            .map(|m| m.len() == good)
            .unwrap_or(true),
        "tail cut off the file"
    );
    let log = std::fs::read_to_string(dir.join("LOG")).expect("LOG");
    assert!(
        log.contains("truncated"),
        "the LOG reports the truncation:\n{log}"
    );
}

#[test]
fn garbage_in_the_middle_is_corruption_naming_file_and_offset() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    build(&dir);
    let wal = the_wal(&dir);
    let mut bytes = std::fs::read(&wal).expect("read");
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(&wal, &bytes).expect("write");
    match Db::open(&dir, Options::default()) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, wal);
            assert!(
                offset as usize <= mid + 8,
                "offset {offset} points at or before the damage"
            );
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// A page of the newest WAL lost before valid records (what a power cut
/// can leave of pages no fdatasync covered): after a `kill -9` (the same
/// boot in `BOOT_ID`) it is damage and the open refuses it; after a
/// restart (another boot id) the log ends there and the database is the
/// prefix of the writes before it, reported as a cut tail.
#[test]
fn a_wal_hole_is_damage_without_a_restart_and_the_end_after_one() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let value = |i: u32| vec![(i % 251) as u8; 700];
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), value(i)).expect("put");
    }
    common::close_as_if_crashed(db);
    let wal = common::wal_files(dir.path()).pop().expect("a WAL");
    let mut bytes = std::fs::read(&wal).expect("read");
    bytes[16384..20480].fill(0);
    std::fs::write(&wal, &bytes).expect("write");
    let saved = common::fast_tempdir();
    common::copy_dir(dir.path(), saved.path());

    let e = Db::open(dir.path(), Options::default()).expect_err("the same boot: damage");
    assert!(matches!(e, Error::Corruption { .. }), "{e}");

    common::copy_dir(saved.path(), dir.path());
    std::fs::write(dir.path().join("BOOT_ID"), [b'0'; 36]).expect("another boot");
    let db = Db::open(dir.path(), Options::default()).expect("after a restart: the end");
    let cut = &db.debug().recovery_report().truncated;
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert!(cut[0].reason.contains("power cut"), "{cut:?}");
    let present: Vec<bool> = (0..100u32)
        .map(|i| db.get(format!("k{i:03}")).expect("get").is_some())
        .collect();
    let kept = present.iter().take_while(|&&p| p).count();
    assert!(kept > 0 && kept < 100, "{kept} writes before the hole");
    assert!(
        present[kept..].iter().all(|&p| !p),
        "a prefix of the writes"
    );
    for i in 0..kept as u32 {
        assert_eq!(db.get(format!("k{i:03}")).expect("get"), Some(value(i)));
    }
    db.close().expect("close");
}
