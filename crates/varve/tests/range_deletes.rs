//! Range deletes (`Db::delete_range`, `WriteBatch::delete_range`): what
//! every read path sees, with snapshots, across flushes, compactions and
//! reopens; that compaction drops the covered keys and then the tombstone
//! once no snapshot needs them; that repair applies them. The model test
//! (`tests/model.rs`) mixes them with everything else at random.

mod common;

use std::collections::BTreeMap;

use varve::{Db, Error, KeyRange, Options, ReadOptions, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn options() -> Options {
    common::tiny_lsm_options()
}

/// Every read path agrees with `model` (at `ro`): gets, `multi_get` both
/// ways, full scans both ways, a bounded range, `par_count`.
fn check(db: &Db, ro: &ReadOptions, model: &Model, keys: u64, what: &str) {
    for i in 0..keys {
        let k = key(i);
        assert_eq!(
            db.get_opt(&k, ro).expect("get").as_ref(),
            model.get(&k),
            "{what}: get {}",
            String::from_utf8_lossy(&k)
        );
    }
    let all: Vec<Vec<u8>> = (0..keys).map(key).collect();
    for async_io in [false, true] {
        let mut ro = ro.clone();
        ro.async_io = async_io;
        for (k, r) in all.iter().zip(db.multi_get(&ro, &all)) {
            assert_eq!(
                r.expect("multi_get").as_ref(),
                model.get(k),
                "{what}: multi_get (async {async_io})"
            );
        }
    }
    let fwd: Model = db.iter_opt(ro).map(|r| r.expect("iter")).collect();
    assert!(fwd == *model, "{what}: forward scan differs");
    let mut back: Vec<(Vec<u8>, Vec<u8>)> =
        db.iter_opt(ro).rev().map(|r| r.expect("iter")).collect();
    back.reverse();
    assert!(
        back.into_iter().collect::<Model>() == *model,
        "{what}: backward scan differs"
    );
    let (lo, hi) = (key(keys / 4), key(keys * 3 / 4));
    let ranged: Vec<Vec<u8>> = db
        .range_opt(lo.as_slice()..hi.as_slice(), ro)
        .map(|r| r.expect("range").0)
        .collect();
    let want: Vec<Vec<u8>> = model.range(lo..hi).map(|(k, _)| k.clone()).collect();
    assert_eq!(ranged, want, "{what}: range scan");
    let n = db.par_count(ro, &KeyRange::all(), 3).expect("par_count");
    assert_eq!(n, model.len() as u64, "{what}: par_count");
}

fn delete_range_in_model(model: &mut Model, start: &[u8], end: &[u8]) {
    let doomed: Vec<Vec<u8>> = model
        .range(start.to_vec()..end.to_vec())
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        model.remove(&k);
    }
}

#[test]
fn every_read_path_honours_a_range_delete_in_memtables_tables_and_after_reopen() {
    let dir = common::fast_tempdir();
    let mut db = Db::open(dir.path(), options()).expect("open");
    let mut model = Model::new();
    for i in 0..2000 {
        db.put(key(i), format!("v{i}")).expect("put");
        model.insert(key(i), format!("v{i}").into_bytes());
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("compactions");
    // Over tables (several levels) and the memtable, with rewrites after it.
    db.delete_range(key(300).as_slice()..key(900).as_slice())
        .expect("delete_range");
    delete_range_in_model(&mut model, &key(300), &key(900));
    for i in [300, 450, 899] {
        db.put(key(i), b"again").expect("put");
        model.insert(key(i), b"again".to_vec());
    }
    let ro = ReadOptions::default();
    check(&db, &ro, &model, 2000, "in the memtable");
    db.close().expect("close");
    db = Db::open(dir.path(), options()).expect("reopen (WAL replay)");
    check(&db, &ro, &model, 2000, "after a reopen");
    db.flush().expect("flush");
    check(&db, &ro, &model, 2000, "flushed");
    db.wait_for_compactions().expect("compactions");
    db.close().expect("close");
    db = Db::open(dir.path(), options()).expect("reopen (manifest)");
    check(&db, &ro, &model, 2000, "after a reopen from the manifest");

    // The end key is not deleted; an empty range deletes nothing; a
    // reversed one is refused and changes nothing.
    db.delete_range(key(1000).as_slice()..key(1000).as_slice())
        .expect("empty range");
    let err = db
        .delete_range(key(1500).as_slice()..key(1400).as_slice())
        .expect_err("reversed range");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    db.delete_range(key(1000).as_slice()..key(1001).as_slice())
        .expect("one key");
    delete_range_in_model(&mut model, &key(1000), &key(1001));
    // An empty start is the first key (no entry is stored under a bound).
    db.delete_range(b"".as_slice()..key(10).as_slice())
        .expect("from the first key");
    delete_range_in_model(&mut model, b"", &key(10));
    check(
        &db,
        &ro,
        &model,
        2000,
        "single-key, empty and open-start ranges",
    );
    db.close().expect("close");
}

#[test]
fn a_batch_mixes_range_deletes_with_puts_in_order() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path(), options()).expect("open");
    for i in 0..100 {
        db.put(key(i), b"old").expect("put");
    }
    let mut b = WriteBatch::new();
    b.put(key(10), b"before"); // deleted by the range that follows
    b.delete_range(key(5).as_slice()..key(20).as_slice());
    b.put(key(15), b"after"); // written after the range: survives
    db.write(b).expect("write");
    assert_eq!(db.get(key(10)).expect("get"), None);
    assert_eq!(db.get(key(15)).expect("get"), Some(b"after".to_vec()));
    assert_eq!(db.get(key(4)).expect("get"), Some(b"old".to_vec()));
    assert_eq!(db.get(key(20)).expect("get"), Some(b"old".to_vec()));
    let n = db.iter().count();
    assert_eq!(n, 100 - 15 + 1);
}

#[test]
fn snapshots_keep_their_view_and_compaction_then_drops_keys_and_tombstone() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path(), options()).expect("open");
    let mut model = Model::new();
    for i in 0..3000 {
        let v = common::value_for(&key(i));
        db.put(key(i), &v).expect("put");
        model.insert(key(i), v);
    }
    db.compact_range(None, None).expect("compact");
    let before = model.clone();
    let snap = db.snapshot();
    db.delete_range(key(1000).as_slice()..key(2000).as_slice())
        .expect("delete_range");
    delete_range_in_model(&mut model, &key(1000), &key(2000));
    db.flush().expect("flush");
    db.compact_range(None, None)
        .expect("compact with a snapshot");
    let at_snap = ReadOptions::at(&snap);
    check(
        &db,
        &at_snap,
        &before,
        3000,
        "the snapshot, after compaction",
    );
    check(&db, &ReadOptions::default(), &model, 3000, "latest");
    assert!(
        db.stats().range_tombstones > 0,
        "the snapshot still sees what the tombstone hides: it must stay"
    );
    drop((snap, at_snap)); // the read options hold the snapshot too
    db.compact_range(None, None)
        .expect("compact without snapshots");
    check(
        &db,
        &ReadOptions::default(),
        &model,
        3000,
        "after the last compaction",
    );
    let stats = db.stats();
    assert_eq!(
        stats.range_tombstones, 0,
        "every covered key is gone, so is the tombstone:\n{stats}"
    );
    let entries = db.debug().table_entries();
    assert_eq!(
        entries,
        model.len() as u64,
        "the tables hold exactly the live keys (covered ones were dropped)"
    );
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    check(&db, &ReadOptions::default(), &model, 3000, "reopened");
}

#[test]
fn repair_applies_range_tombstones_from_the_manifest_and_the_wal() {
    let dir = common::fast_tempdir();
    let mut model = Model::new();
    {
        let db = Db::open(dir.path(), options()).expect("open");
        for i in 0..1500 {
            db.put(key(i), b"v").expect("put");
            model.insert(key(i), b"v".to_vec());
        }
        db.flush().expect("flush");
        // One tombstone in the manifest (flushed, covered keys still in
        // tables), one only in the WAL.
        db.delete_range(key(100).as_slice()..key(400).as_slice())
            .expect("delete_range");
        delete_range_in_model(&mut model, &key(100), &key(400));
        db.flush().expect("flush");
        db.delete_range(key(1000).as_slice()..key(1100).as_slice())
            .expect("delete_range");
        delete_range_in_model(&mut model, &key(1000), &key(1100));
        db.close().expect("close");
    }
    let report = Db::repair(dir.path(), &options()).expect("repair");
    assert_eq!(report.range_tombstones, 2, "{report:?}");
    let db = Db::open(dir.path(), options()).expect("open repaired");
    check(&db, &ReadOptions::default(), &model, 1500, "repaired");
}

#[test]
fn checkpoints_and_read_only_opens_keep_range_tombstones() {
    let dir = common::fast_tempdir();
    let mut model = Model::new();
    let db = Db::open(dir.path().join("db"), options()).expect("open");
    for i in 0..1200 {
        db.put(key(i), b"v").expect("put");
        model.insert(key(i), b"v".to_vec());
    }
    db.flush().expect("flush");
    // One tombstone in the version (flushed), one in the memtable (WAL).
    db.delete_range(key(100).as_slice()..key(300).as_slice())
        .expect("delete_range");
    delete_range_in_model(&mut model, &key(100), &key(300));
    db.flush().expect("flush");
    db.delete_range(key(700).as_slice()..key(750).as_slice())
        .expect("delete_range");
    delete_range_in_model(&mut model, &key(700), &key(750));
    let copy = dir.path().join("copy");
    db.checkpoint(&copy).expect("checkpoint");
    db.close().expect("close");
    let ro = ReadOptions::default();
    let c = Db::open(&copy, options()).expect("open the checkpoint");
    check(&c, &ro, &model, 1200, "checkpoint");
    c.close().expect("close");
    let r = Db::open_read_only(dir.path().join("db"), options()).expect("read-only");
    check(&r, &ro, &model, 1200, "read-only open");
}

#[test]
fn background_compaction_drops_what_a_range_tombstone_hides() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path(), options()).expect("open");
    let mut model = Model::new();
    for i in 0..3000 {
        db.put(key(i), b"v").expect("put");
        model.insert(key(i), b"v".to_vec());
    }
    db.compact_range(None, None).expect("compact");
    // A snapshot older than the tombstone: rewriting cannot drop what it
    // sees, so the background must leave the tables alone (no churn).
    let snap = db.snapshot();
    db.delete_range(key(500).as_slice()..key(2500).as_slice())
        .expect("delete_range");
    delete_range_in_model(&mut model, &key(500), &key(2500));
    db.flush().expect("flush");
    db.wait_for_compactions().expect("wait");
    let before = db.stats().compactions;
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(
        db.stats().compactions,
        before,
        "no rewrite while a snapshot needs the hidden entries"
    );
    drop(snap);
    // Without compact_range: the background rewrites the tables.
    let start = std::time::Instant::now();
    while db.stats().range_tombstones > 0 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the tombstone was never dropped:\n{}",
            db.stats()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    db.wait_for_compactions().expect("wait");
    assert_eq!(db.debug().table_entries(), model.len() as u64);
    check(
        &db,
        &ReadOptions::default(),
        &model,
        3000,
        "after the background rewrite",
    );
}
