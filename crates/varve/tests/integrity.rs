//! The two integrity recipes of the damage audit, as tests.
//!
//! 1. A scan must stop at the first error of any source. Tombstones for
//!    every even key sit in one L0 table over a compacted bottom level; a
//!    flipped bit in that table must end every kind of scan (forward,
//!    backward, after seeks, with and without read-ahead and background
//!    prefetch, `par_scan`, `par_scan_ordered`, `par_count`) with an error
//!    before any deleted key comes back: what a scan yields before its
//!    error is exactly a prefix of the right answer.
//! 2. A damaged MANIFEST tail must never roll the database back silently.
//!    Cutting the tail of the MANIFEST after two flushes whose WALs are
//!    retired must fail the open with `Corruption` (the WAL the older
//!    version needs is gone), delete nothing, and leave a database that
//!    `repair` brings back whole.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use varve::{Db, Error, KeyRange, Options, ReadOptions, ScanPrefetch};

fn key(i: u32) -> Vec<u8> {
    format!("key-{i:06}").into_bytes()
}

fn sst_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    v.sort();
    v
}

fn manifest(dir: &Path) -> PathBuf {
    let current = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    dir.join(current.trim_end())
}

/// Recipe 1's database: 20,000 keys compacted to the bottom, then every
/// even key deleted in one L0 table. Returns the live model (odd keys) and
/// the L0 table holding the tombstones.
fn tombstone_db(dir: &Path) -> (BTreeMap<Vec<u8>, Vec<u8>>, PathBuf) {
    let opts = Options {
        cache_size: 0,
        ..Options::default()
    };
    let db = Db::open(dir, opts).expect("open");
    let mut model = BTreeMap::new();
    for i in 0..20_000u32 {
        let v = common::value_for(&key(i));
        db.put(key(i), &v).expect("put");
        model.insert(key(i), v);
    }
    db.compact_range(None, None).expect("compact");
    let before: Vec<PathBuf> = sst_files(dir);
    for i in (0..20_000u32).step_by(2) {
        db.delete(key(i)).expect("delete");
        model.remove(&key(i));
    }
    db.flush().expect("flush");
    let tables = db.debug().live_tables();
    assert_eq!(tables[0].len(), 1, "one L0 table of tombstones: {tables:?}");
    db.close().expect("close");
    let after = sst_files(dir);
    let l0: Vec<PathBuf> = after.into_iter().filter(|p| !before.contains(p)).collect();
    assert_eq!(l0.len(), 1, "the flush added one table");
    (model, l0[0].clone())
}

fn flip_bit_at_third(path: &Path) {
    let mut bytes = std::fs::read(path).expect("read");
    let at = bytes.len() / 3;
    bytes[at] ^= 0x10;
    std::fs::write(path, &bytes).expect("write");
}

/// Checks that `items` (what a scan yielded, in its order) is a prefix of
/// `want` followed by one error, or exactly `want`; returns true if an
/// error ended it.
fn check_prefix_then_error(
    what: &str,
    items: impl Iterator<Item = varve::Result<(Vec<u8>, Vec<u8>)>>,
    want: &[(Vec<u8>, Vec<u8>)],
) -> bool {
    let mut n = 0;
    let mut items = items;
    while let Some(item) = items.next() {
        match item {
            Ok((k, v)) => {
                let Some((wk, wv)) = want.get(n) else {
                    panic!("{what}: entry {n} ({k:?}) past the end of the right answer");
                };
                assert!(
                    (&k, &v) == (wk, wv),
                    "{what}: entry {n} is {} where {} belongs (a resurrected, stale or skipped key)",
                    String::from_utf8_lossy(&k),
                    String::from_utf8_lossy(wk)
                );
                n += 1;
            }
            Err(e) => {
                assert!(
                    matches!(e, Error::Corruption { .. }),
                    "{what}: expected Corruption, got {e}"
                );
                assert!(items.next().is_none(), "{what}: items after the error");
                return true;
            }
        }
    }
    assert_eq!(n, want.len(), "{what}: ended early without an error");
    false
}

fn read_variants() -> Vec<(&'static str, ReadOptions)> {
    vec![
        (
            "plain",
            ReadOptions {
                readahead_size: 0,
                scan_prefetch: ScanPrefetch::Off,
                ..ReadOptions::default()
            },
        ),
        ("default", ReadOptions::default()),
        (
            "prefetch",
            ReadOptions {
                scan_prefetch: ScanPrefetch::Always,
                ..ReadOptions::default()
            },
        ),
        (
            "concurrent-seeks",
            ReadOptions {
                concurrent_seeks: true,
                ..ReadOptions::default()
            },
        ),
    ]
}

#[test]
fn recipe_1_scans_stop_at_a_damaged_tombstone_table() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    let (model, l0) = tombstone_db(&dir);
    flip_bit_at_third(&l0);
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    let rev: Vec<(Vec<u8>, Vec<u8>)> = want.iter().rev().cloned().collect();
    for read_only in [true, false] {
        let db = if read_only {
            Db::open_read_only(&dir, Options::default())
        } else {
            Db::open(&dir, Options::default())
        }
        .expect("open: the damage is in a data block");
        for (name, ro) in read_variants() {
            let what = format!("{name}, read-only {read_only}");
            let fwd = check_prefix_then_error(&format!("forward, {what}"), db.iter_opt(&ro), &want);
            assert!(fwd, "forward, {what}: the damaged block was never reported");
            let it = db.iter_opt(&ro).rev();
            let back = check_prefix_then_error(&format!("backward, {what}"), it, &rev);
            assert!(
                back,
                "backward, {what}: the damaged block was never reported"
            );
            // Seeks into the middle, both ways.
            let mid = want.len() / 2;
            let mut it = db.iter_opt(&ro);
            it.seek(&want[mid].0);
            check_prefix_then_error(&format!("seek, {what}"), it, &want[mid..]);
            let it = db.range_opt(..=want[mid].0.as_slice(), &ro).rev();
            let back_mid: Vec<_> = want[..=mid].iter().rev().cloned().collect();
            check_prefix_then_error(&format!("seek_for_prev, {what}"), it, &back_mid);
            // The cursor API: an errored iterator stays invalid.
            let mut it = db.iter_opt(&ro);
            it.seek_to_first();
            while it.valid() {
                it.move_next();
            }
            assert!(it.status().is_err(), "cursor, {what}: no error");
            it.seek_to_first();
            assert!(
                !it.valid(),
                "cursor, {what}: a seek revived an errored iterator"
            );
            assert!(it.status().is_err());
        }
        // Parallel scans return the error.
        let all = KeyRange::all();
        for threads in [1, 2, 4] {
            let r = db.par_count(&ReadOptions::default(), &all, threads);
            assert!(r.is_err(), "par_count {threads} threads: {r:?}");
            let seen = parking_lot::Mutex::new(Vec::new());
            let r = db.par_scan(&ReadOptions::default(), &all, threads, |_, k, v| {
                seen.lock().push((k.to_vec(), v.to_vec()));
                Ok::<(), Error>(())
            });
            assert!(r.is_err(), "par_scan {threads} threads");
            let wanted: BTreeMap<_, _> = want.iter().cloned().collect();
            for (k, v) in seen.into_inner() {
                assert_eq!(
                    wanted.get(&k),
                    Some(&v),
                    "par_scan yielded a wrong entry {k:?}"
                );
            }
            let mut ordered = Vec::new();
            let r = db.par_scan_ordered(&ReadOptions::default(), &all, threads, |_, k, v| {
                ordered.push(Ok((k.to_vec(), v.to_vec())));
                Ok::<(), Error>(())
            });
            let e = r.expect_err("par_scan_ordered returns the error");
            ordered.push(Err(e));
            check_prefix_then_error(
                &format!("par_scan_ordered {threads} threads"),
                ordered.into_iter(),
                &want,
            );
        }
        // Point reads of deleted keys fail rather than resurrect them.
        for i in (0..20_000u32).step_by(2) {
            match db.get(key(i)) {
                Ok(None) | Err(Error::Corruption { .. }) => {}
                other => panic!("get of deleted key {i}: {other:?}"),
            }
        }
        db.close().expect("close");
    }
}

/// Recipe 2's database: two flushes of 1,000 keys each, WALs retired.
fn two_flushes(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(dir, Options::default()).expect("open");
    let mut model = BTreeMap::new();
    for round in 0..2u32 {
        for i in 0..1000u32 {
            let k = key(round * 1000 + i);
            let v = common::value_for(&k);
            db.put(&k, &v).expect("put");
            model.insert(k, v);
        }
        db.flush().expect("flush");
    }
    db.close().expect("close");
    model
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst") || n.ends_with(".log"))
        .collect();
    v.sort();
    v
}

fn assert_exact(what: &str, db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model {
        let got = db.get(k).unwrap_or_else(|e| panic!("{what}: get: {e}"));
        assert!(
            got.as_ref() == Some(v),
            "{what}: get {} is {}",
            String::from_utf8_lossy(k),
            if got.is_none() { "missing" } else { "wrong" }
        );
    }
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{what}: scan: {e}")))
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
    if got != want {
        let first = got
            .iter()
            .zip(&want)
            .position(|(g, w)| g != w)
            .unwrap_or(got.len().min(want.len()));
        let show = |e: Option<&(Vec<u8>, Vec<u8>)>| {
            e.map_or("<end>".to_string(), |(k, _)| {
                String::from_utf8_lossy(k).into_owned()
            })
        };
        panic!(
            "{what}: the scan differs at entry {first}: {} where {} belongs ({} vs {} entries)",
            show(got.get(first)),
            show(want.get(first)),
            got.len(),
            want.len()
        );
    }
}

#[test]
fn recipe_2_a_cut_manifest_never_rolls_back_or_deletes_tables() {
    let root = common::fast_tempdir();
    let pristine = root.path().join("pristine");
    let model = two_flushes(&pristine);
    let man_len = std::fs::metadata(manifest(&pristine))
        .expect("manifest")
        .len();
    // Cut the last 10 bytes (the recipe), and a range of other cuts.
    let mut cuts: Vec<u64> = vec![10];
    cuts.extend((1..man_len.min(400)).step_by(7));
    for cut in cuts {
        let dir = root.path().join(format!("cut-{cut}"));
        common::copy_dir(&pristine, &dir);
        let before = listing(&dir);
        let m = manifest(&dir);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&m)
            .expect("open manifest");
        f.set_len(man_len - cut).expect("cut");
        drop(f);
        for read_only in [true, false] {
            let r = if read_only {
                Db::open_read_only(&dir, Options::default())
            } else {
                Db::open(&dir, Options::default())
            };
            let opened = match r {
                Ok(db) => {
                    // Only an open that lost nothing may succeed (it may then
                    // retire the WALs it replayed into a table).
                    assert_exact(&format!("cut {cut}, read-only {read_only}"), &db, &model);
                    db.close().expect("close");
                    true
                }
                Err(Error::Corruption { file, .. }) => {
                    let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
                    assert!(
                        name.as_deref()
                            .is_some_and(|n| n.starts_with("MANIFEST") || n.ends_with(".log")),
                        "cut {cut}: the error names {file:?}"
                    );
                    false
                }
                Err(e) => panic!("cut {cut}: expected Corruption, got {e}"),
            };
            if opened {
                continue;
            }
            // A refused open deleted and moved nothing.
            assert_eq!(
                listing(&dir),
                before,
                "cut {cut}: a refused open changed the files"
            );
        }
        // Repair brings every key back.
        Db::repair(&dir, &Options::default()).expect("repair");
        let db = Db::open(&dir, Options::default()).expect("open after repair");
        assert_exact(&format!("cut {cut}, after repair"), &db, &model);
        db.close().expect("close");
    }
}

/// The recipe's other cuts: flushes and then a compaction in one manifest,
/// cut at every length. A manifest cut back past the compaction names
/// tables the compaction removed; past a flush, a WAL that was retired.
/// Every open must fail with `Corruption` naming the missing file, or show
/// exactly the right data; `repair` always brings everything back.
#[test]
fn every_cut_across_flushes_and_a_compaction_is_corruption_or_exact() {
    let root = common::fast_tempdir();
    let pristine = root.path().join("pristine");
    let db = Db::open(&pristine, Options::default()).expect("open");
    let mut model = BTreeMap::new();
    for round in 0..3u32 {
        for i in 0..500u32 {
            let k = key(i * 3 + round);
            let v = common::value_for(&k);
            db.put(&k, &v).expect("put");
            model.insert(k, v);
        }
        db.flush().expect("flush");
    }
    for i in (0..1500u32).step_by(5) {
        db.delete(key(i)).expect("delete");
        model.remove(&key(i));
    }
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    db.close().expect("close");
    let man_len = std::fs::metadata(manifest(&pristine))
        .expect("manifest")
        .len();
    let (mut refused, mut opened) = (0, 0);
    for cut in (1..man_len).step_by(3) {
        let dir = root.path().join(format!("cut-{cut}"));
        common::copy_dir(&pristine, &dir);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(manifest(&dir))
            .expect("open manifest");
        f.set_len(man_len - cut).expect("cut");
        drop(f);
        match Db::open(&dir, Options::default()) {
            Ok(db) => {
                assert_exact(&format!("cut {cut}"), &db, &model);
                opened += 1;
            }
            Err(Error::Corruption { .. }) => refused += 1,
            Err(e) => panic!("cut {cut}: expected Corruption, got {e}"),
        }
        Db::repair(&dir, &Options::default()).expect("repair");
        let db = Db::open(&dir, Options::default()).expect("open after repair");
        assert_exact(&format!("cut {cut}, after repair"), &db, &model);
        db.close().expect("close");
        std::fs::remove_dir_all(&dir).expect("rm");
    }
    assert!(refused > 0, "no cut was refused ({opened} opened)");
}

/// A read-only and a read-write open agree on a directory that holds
/// database files but no `CURRENT`: both are `Corruption` naming it.
#[test]
fn missing_current_is_corruption_in_both_open_modes() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    let model = two_flushes(&dir);
    std::fs::remove_file(dir.join("CURRENT")).expect("rm CURRENT");
    for read_only in [true, false] {
        let r = if read_only {
            Db::open_read_only(&dir, Options::default())
        } else {
            Db::open(&dir, Options::default())
        };
        match r {
            Err(Error::Corruption { file, .. }) => {
                assert!(file.ends_with("CURRENT"), "read-only {read_only}: {file:?}");
            }
            Err(e) => panic!("read-only {read_only}: expected Corruption, got {e}"),
            Ok(_) => panic!("read-only {read_only}: opened without CURRENT"),
        }
    }
    Db::repair(&dir, &Options::default()).expect("repair");
    let db = Db::open(&dir, Options::default()).expect("open after repair");
    assert_exact("after repair", &db, &model);
}

/// A compaction's inputs that were not deleted yet (a reader pinned them,
/// then the process died) hold keys whose tombstones the compaction
/// dropped. Repair must not merge them back in: it reads the retiring edit
/// from the readable part of the damaged manifest and sets them aside.
#[test]
fn repair_sets_aside_tables_a_readable_edit_retired() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    let aside = root.path().join("aside");
    std::fs::create_dir_all(&aside).expect("mkdir");
    let db = Db::open(&dir, Options::default()).expect("open");
    let mut model = BTreeMap::new();
    for i in 0..2000u32 {
        let v = common::value_for(&key(i));
        db.put(key(i), &v).expect("put");
        model.insert(key(i), v);
    }
    db.flush().expect("flush");
    for i in (0..2000u32).step_by(3) {
        db.delete(key(i)).expect("delete");
        model.remove(&key(i));
    }
    db.flush().expect("flush");
    let inputs = sst_files(&dir);
    for t in &inputs {
        std::fs::copy(t, aside.join(t.file_name().expect("name"))).expect("copy");
    }
    db.compact_range(None, None).expect("compact");
    db.close().expect("close");
    // The inputs come back, as if their deletion never happened, and
    // `CURRENT` is lost (repair then reads the newest manifest).
    for t in &inputs {
        std::fs::copy(aside.join(t.file_name().expect("name")), t).expect("copy back");
    }
    std::fs::remove_file(dir.join("CURRENT")).expect("rm CURRENT");
    let r = Db::repair(&dir, &Options::default()).expect("repair");
    let set_aside = r
        .lost
        .iter()
        .filter(|(f, why)| f.ends_with(".sst") && why.contains("retired"))
        .count();
    assert_eq!(set_aside, inputs.len(), "{:?}", r.lost);
    let db = Db::open(&dir, Options::default()).expect("open after repair");
    assert_exact("after repair", &db, &model);
}

/// After a clean close the manifest records the live WAL's synced length:
/// a log cut at a record boundary (which reads as a clean, shorter log) is
/// `Corruption`, not a silent loss of its last writes. Without the clean
/// close (a crash) the same cut is indistinguishable from writes that never
/// happened, and the database opens with the prefix.
#[test]
fn a_wal_cut_at_a_record_boundary_after_a_clean_close_is_corruption() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    let db = Db::open(&dir, Options::default()).expect("open");
    for i in 0..100u32 {
        db.put(key(i), common::value_for(&key(i))).expect("put");
    }
    db.close().expect("close");
    let wal = common::wal_files(&dir).pop().expect("a WAL");
    let dump = varve::tools::dump_wal(&varve::fs::PosixFs, &wal).expect("dump");
    assert!(dump.records.len() >= 100, "{} records", dump.records.len());
    let cut = dump.records[60].offset;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .expect("open");
    f.set_len(cut).expect("cut");
    drop(f);
    for read_only in [true, false] {
        let r = if read_only {
            Db::open_read_only(&dir, Options::default())
        } else {
            Db::open(&dir, Options::default())
        };
        match r {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, wal, "read-only {read_only}");
                assert_eq!(offset, cut, "read-only {read_only}");
            }
            Err(e) => panic!("read-only {read_only}: expected Corruption, got {e}"),
            Ok(_) => panic!("read-only {read_only}: a cut log opened after a clean close"),
        }
    }
}

/// A crash while creating a database leaves its first manifest without
/// `CURRENT` (and no WAL yet): that holds no data, and the directory opens
/// as a new database.
#[test]
fn a_manifest_without_current_and_no_data_is_a_new_database() {
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("MANIFEST-000001"), b"partly written").expect("write");
    match Db::open_read_only(&dir, Options::default()) {
        Err(Error::NotFound(_)) => {}
        other => panic!("read-only open of an unfinished creation: {other:?}"),
    }
    let db = Db::open(&dir, Options::default()).expect("opens as a new database");
    db.put(b"k", b"v").expect("put");
    db.close().expect("close");
    let db = Db::open(&dir, Options::default()).expect("reopen");
    assert_eq!(db.get(b"k").expect("get"), Some(b"v".to_vec()));
}
