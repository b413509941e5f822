//! Corruption of table (SST) and MANIFEST files through the database.
//!
//! A flipped byte in a table gives `Corruption` naming the file on the read
//! that touches the damaged block (or at the first read of a damaged
//! footer/index), never a wrong value and never a panic; reads that do not
//! touch it keep working. A flipped byte in the MANIFEST gives `Corruption`
//! naming it at open, or an open whose contents are exactly right (a flip in
//! a torn-off tail or in padding).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use varve::{Db, Error, Options};

fn options() -> Options {
    Options {
        block_size: 256,
        cache_size: 0, // every read goes to the file
        ..Options::default()
    }
}

fn build(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(dir, options()).expect("open");
    let mut model = BTreeMap::new();
    for i in 0..120u32 {
        let k = format!("key-{i:04}").into_bytes();
        let v = common::value_for(&k);
        db.put(&k, &v).expect("put");
        model.insert(k, v);
    }
    db.compact_range(None, None).expect("compact");
    db.close().expect("close");
    model
}

fn files_with_ext(dir: &Path, prefix: &str, ext: Option<&str>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.starts_with(prefix) && ext.is_none_or(|x| p.extension().is_some_and(|e| e == x))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn flipped_byte_in_a_table_is_corruption_never_a_wrong_value() {
    let root = common::fast_tempdir();
    let pristine = root.path().join("pristine");
    let model = build(&pristine);
    let tables = files_with_ext(&pristine, "", Some("sst"));
    assert_eq!(tables.len(), 1, "one compacted table: {tables:?}");
    let name = tables[0].file_name().expect("name").to_owned();
    let original = std::fs::read(&tables[0]).expect("read");
    let (mut caught, mut clean) = (0, 0);
    // Every offset of the table, stepping through it.
    for offset in (0..original.len()).step_by(5) {
        let dir = root.path().join(format!("flip-{offset}"));
        common::copy_dir(&pristine, &dir);
        let mut bytes = original.clone();
        bytes[offset] ^= 0x40;
        std::fs::write(dir.join(&name), &bytes).expect("write");
        let db = match Db::open(&dir, options()) {
            Ok(db) => db,
            Err(e) => panic!("flip at {offset}: open must not read table data: {e}"),
        };
        let mut saw_error = false;
        for (k, v) in &model {
            match db.get(k) {
                Ok(Some(got)) => assert_eq!(&got, v, "flip at {offset}: wrong value for {k:?}"),
                Ok(None) => panic!("flip at {offset}: key {k:?} silently missing"),
                Err(e) => {
                    assert!(e.is_corruption(), "flip at {offset}: {e}");
                    assert!(
                        e.to_string().contains(&*name.to_string_lossy()),
                        "error names the table: {e}"
                    );
                    saw_error = true;
                }
            }
        }
        let mut it = db.iter();
        let mut seen = Vec::new();
        for entry in &mut it {
            match entry {
                Ok((k, v)) => {
                    assert_eq!(
                        model.get(&k),
                        Some(&v),
                        "flip at {offset}: iterator returned a wrong entry"
                    );
                    seen.push(k);
                }
                Err(e) => {
                    assert!(e.is_corruption(), "flip at {offset}: {e}");
                    saw_error = true;
                    break;
                }
            }
        }
        if !saw_error {
            assert_eq!(
                seen.len(),
                model.len(),
                "flip at {offset}: iteration lost entries without an error"
            );
            clean += 1;
        } else {
            caught += 1;
        }
        drop(db);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
    assert!(
        caught > 0,
        "no flip was detected (caught={caught}, clean={clean})"
    );
}

#[test]
fn flipped_byte_in_the_manifest_fails_open_or_opens_intact() {
    let root = common::fast_tempdir();
    let pristine = root.path().join("pristine");
    let model = build(&pristine);
    let manifests = files_with_ext(&pristine, "MANIFEST-", None);
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    let name = manifests[0].file_name().expect("name").to_owned();
    let original = std::fs::read(&manifests[0]).expect("read");
    let mut corrupt = 0;
    for offset in 0..original.len() {
        let dir = root.path().join(format!("m-{offset}"));
        common::copy_dir(&pristine, &dir);
        let mut bytes = original.clone();
        bytes[offset] ^= 0x01;
        std::fs::write(dir.join(&name), &bytes).expect("write");
        match Db::open(&dir, options()) {
            Ok(db) => {
                // Only a flip in something recovery may ignore (a torn tail):
                // the contents must be exactly right then.
                let all: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.expect("iter")).collect();
                assert!(
                    all == model,
                    "manifest flip at {offset} opened with wrong contents"
                );
            }
            Err(e @ (Error::Corruption { .. } | Error::UnsupportedVersion { .. })) => {
                assert!(
                    e.to_string().contains(&*name.to_string_lossy()),
                    "error names the manifest: {e}"
                );
                corrupt += 1;
            }
            Err(e) => panic!("manifest flip at {offset}: unexpected error {e}"),
        }
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
    assert!(corrupt > 0);
}

#[test]
fn missing_table_is_a_clear_error() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    build(&dir);
    let table = files_with_ext(&dir, "", Some("sst")).remove(0);
    let original = std::fs::read(&table).expect("read");
    std::fs::remove_file(&table).expect("remove");
    // The open checks that every table of the version is there (it reads
    // no table data): a missing one is `Corruption` naming it, in both
    // open modes.
    let name = table
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    for e in [
        Db::open(&dir, options()).expect_err("table is gone"),
        Db::open_read_only(&dir, options()).expect_err("table is gone"),
    ] {
        assert!(matches!(e, Error::Corruption { .. }), "{e}");
        assert!(e.to_string().contains(&name), "{e}");
    }
    // A table cut short is caught the same way.
    std::fs::write(&table, &original[..original.len() - 1]).expect("write");
    let e = Db::open(&dir, options()).expect_err("the table has the wrong size");
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    assert!(e.to_string().contains(&name), "{e}");
}
