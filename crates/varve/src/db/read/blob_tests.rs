//! Reads of values kept in blob files: `get`, `multi_get` (with and without
//! fibers), iterators both ways, `par_scan`, from the memtable and after a
//! flush and a compaction; a damaged blob value is an error naming the
//! blob file and never a wrong or skipped value; key-only paths read no
//! blob bytes. (The write path does not put values into blob files yet:
//! the batches here carry pointers written by hand.)

use std::collections::BTreeMap;

use crate::blob::file_writer::BlobFileWriter;
use crate::blob::format::Creator;
use crate::db::{Db, KeyRange};
use crate::error::Error;
use crate::filenames::blob_file_path;
use crate::io::PosixFs;
use crate::version::{BlobFileEdit, VersionEdit};
use crate::{Options, ReadOptions, WriteBatch};

/// Key -> value.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The smallest blob file number the current version lists.
fn first_blob_file(db: &Db) -> u64 {
    *db.inner
        .versions
        .lock()
        .current()
        .blob_files()
        .keys()
        .next()
        .expect("a blob file")
}

/// These tests write the blob file and its pointers themselves: the write
/// path keeps every value inline.
fn inline_options() -> Options {
    Options {
        min_blob_size: None,
        ..Options::default()
    }
}

/// As [`inline_options`], without garbage collection: a test that damages
/// or removes the blob file it found must find it still in place (after a
/// flush, GC may relocate a file's live values at any moment: here, 20 of
/// 100 values are garbage).
fn no_gc_options() -> Options {
    Options {
        enable_blob_garbage_collection: false,
        ..inline_options()
    }
}

fn value(i: usize) -> Vec<u8> {
    let len = [4096usize, 1, 0, 10_000, 300][i % 5];
    (0..len).map(|j| (i * 13 + j) as u8).collect()
}

/// A database whose even keys have values in a blob file, odd keys inline,
/// and every tenth key deleted; returns it with the expected contents and
/// the blob offsets of each key.
fn setup(dir: &std::path::Path) -> (Db, Model, BTreeMap<Vec<u8>, u64>) {
    setup_with(dir, inline_options())
}

/// [`setup`] with `options`.
fn setup_with(dir: &std::path::Path, options: Options) -> (Db, Model, BTreeMap<Vec<u8>, u64>) {
    let db = Db::open(dir, options).expect("open");
    let blob = db.inner.versions.lock().new_file_number();
    let mut w = BlobFileWriter::create(
        &PosixFs,
        &blob_file_path(dir, blob),
        blob,
        16 << 10,
        Creator::WriteLane,
        false,
    )
    .expect("blob file");
    let mut model = BTreeMap::new();
    let mut offsets = BTreeMap::new();
    let mut batch = WriteBatch::new();
    for i in 0..200usize {
        let key = format!("key{i:04}").into_bytes();
        let v = value(i);
        if i % 2 == 0 {
            let p = w.add(&key, &v).expect("add");
            offsets.insert(key.clone(), p.offset);
            batch.put_blob_index(&key, &p.encode());
        } else {
            batch.put(&key, &v);
        }
        model.insert(key, v);
    }
    let meta = w.finish().expect("seal");
    // Registered as a sealed file, as a lane would before any pointer into
    // it is written (so no obsolete-file pass takes it).
    db.inner
        .versions
        .lock()
        .log_and_apply(VersionEdit {
            blob_files: vec![BlobFileEdit::sealed(&meta)],
            ..VersionEdit::default()
        })
        .expect("register the blob file");
    db.write(batch).expect("write");
    let mut deletes = WriteBatch::new();
    for i in (0..200usize).step_by(10) {
        let key = format!("key{i:04}").into_bytes();
        deletes.delete(&key);
        model.remove(&key);
    }
    db.write(deletes).expect("delete");
    (db, model, offsets)
}

fn check_all(db: &Db, model: &Model) {
    for i in 0..200usize {
        let key = format!("key{i:04}").into_bytes();
        assert_eq!(
            db.get(&key).expect("get"),
            model.get(&key).cloned(),
            "get {i}"
        );
    }
    let keys: Vec<Vec<u8>> = (0..200usize)
        .map(|i| format!("key{i:04}").into_bytes())
        .collect();
    for async_io in [false, true] {
        let opts = ReadOptions {
            async_io,
            ..Default::default()
        };
        for (k, got) in keys.iter().zip(db.multi_get(&opts, &keys)) {
            assert_eq!(
                got.expect("multi_get"),
                model.get(k).cloned(),
                "async {async_io}"
            );
        }
    }
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(|r| r.expect("iter")).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(fwd, want);
    let mut back: Vec<(Vec<u8>, Vec<u8>)> = db.iter().rev().map(|r| r.expect("rev")).collect();
    back.reverse();
    assert_eq!(back, want);
    let seen = std::sync::Mutex::new(BTreeMap::new());
    db.par_scan(&ReadOptions::default(), &KeyRange::all(), 2, |_, k, v| {
        seen.lock().expect("lock").insert(k.to_vec(), v.to_vec());
        Ok::<(), Error>(())
    })
    .expect("par_scan");
    assert_eq!(&seen.into_inner().expect("lock"), model);
}

#[test]
fn blob_values_read_back_everywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, model, _) = setup(dir.path());
    check_all(&db, &model); // from the memtable
    db.flush().expect("flush");
    check_all(&db, &model); // from an L0 table
    let blob = first_blob_file(&db);
    let oldest = |db: &Db| -> Vec<u64> {
        let v = db.inner.versions.lock().current();
        (0..crate::version::NUM_LEVELS)
            .flat_map(|l| {
                v.files(l)
                    .iter()
                    .map(|f| f.oldest_blob_file)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    assert_eq!(
        oldest(&db),
        vec![blob],
        "the table records the blob file it points into"
    );
    db.compact_range(None, None).expect("compact");
    check_all(&db, &model); // from the bottom level
    // A full compaction copies the values out in key order (a new blob
    // file); the old file, all garbage now, leaves the version.
    assert!(oldest(&db).iter().all(|&n| n > blob), "{:?}", oldest(&db));
    assert!(
        !db.inner
            .versions
            .lock()
            .current()
            .blob_files()
            .contains_key(&blob)
    );
    db.close().expect("close");
    // The manifest lists the blob file, so a reopen keeps it and reads it.
    let db = Db::open(dir.path(), inline_options()).expect("reopen");
    assert_eq!(db.inner.versions.lock().current().blob_files().len(), 1);
    check_all(&db, &model);
}

#[test]
fn a_checkpoint_carries_its_blob_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, model, _) = setup(dir.path());
    db.flush().expect("flush");
    let target = dir.path().join("checkpoint");
    db.checkpoint(&target).expect("checkpoint");
    db.close().expect("close");
    let cp = Db::open(&target, inline_options()).expect("open the checkpoint");
    assert_eq!(cp.inner.versions.lock().current().blob_files().len(), 1);
    check_all(&cp, &model);
}

#[test]
fn a_missing_blob_file_fails_the_open_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, _) = setup_with(dir.path(), no_gc_options());
    db.flush().expect("flush");
    let blob = first_blob_file(&db);
    db.close().expect("close");
    let path = blob_file_path(dir.path(), blob);
    std::fs::remove_file(&path).expect("remove");
    match Db::open(dir.path(), no_gc_options()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, path),
        Err(e) => panic!("expected Corruption, got {e:?}"),
        Ok(_) => panic!("expected Corruption, the open succeeded"),
    }
}

#[test]
fn a_damaged_blob_value_is_an_error_never_a_wrong_or_skipped_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, model, offsets) = setup_with(dir.path(), no_gc_options());
    db.flush().expect("flush");
    let bad_key = b"key0018".to_vec(); // a 10,000-byte value
    let blob = first_blob_file(&db);
    let path = blob_file_path(dir.path(), blob);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[offsets[&bad_key] as usize] ^= 0x20;
    std::fs::write(&path, &bytes).expect("write");

    match db.get(&bad_key) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, path),
        other => panic!("expected Corruption, got {other:?}"),
    }
    assert_eq!(
        db.get(b"key0014").expect("get"),
        model.get(&b"key0014"[..]).cloned()
    );

    // Forward: every entry before the damaged one, then the error, then
    // nothing; backward the same from the other end.
    let items: Vec<_> = db.iter().collect();
    let (last, good) = items.split_last().expect("items");
    assert!(matches!(last, Err(Error::Corruption { .. })), "{last:?}");
    let want_before: Vec<_> = model.range(..bad_key.clone()).collect();
    assert_eq!(good.len(), want_before.len());
    for (g, (k, v)) in good.iter().zip(want_before) {
        assert_eq!(g.as_ref().expect("ok"), &(k.clone(), v.clone()));
    }
    let items: Vec<_> = db.iter().rev().collect();
    let (last, good) = items.split_last().expect("items");
    assert!(matches!(last, Err(Error::Corruption { .. })), "{last:?}");
    assert_eq!(good.len(), model.range(bad_key.clone()..).count() - 1);

    let r = db.par_scan(&ReadOptions::default(), &KeyRange::all(), 2, |_, k, v| {
        assert!(
            k != bad_key.as_slice() || v == model[&bad_key].as_slice(),
            "no wrong value"
        );
        Ok::<(), Error>(())
    });
    assert!(matches!(r, Err(Error::Corruption { .. })), "{r:?}");

    // Key-only paths read no blob bytes, so they do not see the damage.
    assert_eq!(
        db.par_count(&ReadOptions::default(), &KeyRange::all(), 2)
            .expect("count"),
        model.len() as u64
    );
    let mut it = db.iter();
    it.seek_to_first();
    let mut keys = 0;
    while it.valid() {
        keys += 1;
        it.move_next();
    }
    it.status().expect("a key-only walk reads no blob");
    assert_eq!(keys, model.len());
}
