//! Checks after a crash, shared by the crash tests: `varve check` finds
//! no damage where a read-write open would accept the directory, and a
//! read-only open sees exactly what a read-write open (of a copy) sees,
//! writing nothing.

use std::collections::BTreeMap;
use std::path::Path;

use varve::{Db, KeyspaceOptions, Options};

/// `varve check` finds no damage in `dir` (notes, such as a torn WAL tail
/// an open cuts, are fine).
pub fn assert_check_clean(dir: &Path, what: &str) {
    // A kill before the child made the directory: the open creates it.
    if !dir.exists() {
        return;
    }
    let checked = varve::tools::check_db(std::sync::Arc::new(varve::fs::PosixFs), dir, |_| {})
        .expect("check");
    let problems: Vec<String> = checked
        .iter()
        .filter_map(|c| {
            c.problem
                .as_ref()
                .map(|p| format!("{} at {}: {}", c.path.display(), p.offset, p.reason))
        })
        .collect();
    assert!(problems.is_empty(), "{what}: check flagged {problems:?}");
}

/// Every file of `dir` but the blob files with its bytes, and the blob
/// files by name. (A direct write a killed writer had in flight may still
/// land in a blob file after the kill; it writes the staged bytes, which
/// both opens read anyway.)
pub fn directory_state(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            let bytes = (p.extension().is_none_or(|x| x != "blob"))
                .then(|| std::fs::read(&p).expect("read"));
            (name, bytes)
        })
        .collect()
}

/// Per keyspace of `db` (by name, the default one as ""), every entry by
/// full scans both ways (which must agree) and by a get of each key.
pub fn everything(db: &Db) -> BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut out = BTreeMap::new();
    let names: Vec<String> = db
        .keyspaces()
        .into_iter()
        .filter(|n| n != "default")
        .collect();
    for name in std::iter::once("").chain(names.iter().map(String::as_str)) {
        let ks = if name.is_empty() {
            db.default_keyspace()
        } else {
            db.keyspace(name, KeyspaceOptions::default())
                .unwrap_or_else(|e| panic!("keyspace {name}: {e}"))
        };
        let fwd: BTreeMap<Vec<u8>, Vec<u8>> = ks.iter().map(|e| e.expect("forward scan")).collect();
        let mut back: Vec<(Vec<u8>, Vec<u8>)> =
            ks.iter().rev().map(|e| e.expect("backward scan")).collect();
        back.reverse();
        assert!(
            back.iter().map(|(k, _)| k).eq(fwd.keys()),
            "keyspace {name:?}: the scans disagree"
        );
        for (k, v) in &fwd {
            assert_eq!(
                ks.get(k).expect("get").as_ref(),
                Some(v),
                "get and scan disagree"
            );
        }
        out.insert(name.to_string(), fwd);
    }
    out
}

/// After a kill: a read-only open of `dir` shows exactly what a read-write
/// open of a copy shows (every keyspace, gets and scans both ways), and
/// leaves the directory as it was.
pub fn read_only_sees_what_read_write_sees(dir: &Path, opts: &Options, what: &str) {
    if !dir.join("CURRENT").exists() {
        return; // killed before the database existed: nothing to open
    }
    let copy = tempfile::tempdir().expect("tempdir");
    super::copy_dir(dir, copy.path());
    let before = directory_state(dir);
    let ro = Db::open_read_only(dir, opts.clone())
        .unwrap_or_else(|e| panic!("{what}: read-only open: {e}"));
    let seen = everything(&ro);
    drop(ro);
    assert_eq!(
        directory_state(dir),
        before,
        "{what}: the read-only open changed the directory"
    );
    let rw = Db::open(copy.path(), opts.clone())
        .unwrap_or_else(|e| panic!("{what}: read-write open of the copy: {e}"));
    let want = everything(&rw);
    rw.close().expect("close");
    assert_eq!(
        seen.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{what}: the keyspaces differ"
    );
    for (ks, want) in &want {
        let got = &seen[ks];
        assert_eq!(
            got.len(),
            want.len(),
            "{what}: keyspace {ks:?}: the read-only open sees {} keys, read-write {}",
            got.len(),
            want.len()
        );
        for (k, v) in want {
            assert!(
                got.get(k) == Some(v),
                "{what}: keyspace {ks:?}: key {:?} differs between the read-only and \
                 read-write opens",
                String::from_utf8_lossy(k)
            );
        }
    }
}

/// Read-only verifies after every `VARVE_RO_VERIFY_EVERY`-th kill
/// (default `default`; `scripts/crash-loop.sh` sets 4).
pub fn read_only_every(default: u64) -> u64 {
    std::env::var("VARVE_RO_VERIFY_EVERY")
        .ok()
        .and_then(|k| k.parse().ok())
        .filter(|&k| k > 0)
        .unwrap_or(default)
}
