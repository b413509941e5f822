//! Key-value separation through the public API (`Options::min_blob_size`,
//! `docs/blob-files.md`): which values go to blob files (the threshold, one
//! byte below it, the empty value), and a model test of puts, overwrites
//! and deletes with values on both sides of the threshold across flushes,
//! compactions and reopens, checked against a `BTreeMap` with gets and
//! full scans both ways.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use varve::fs::PosixFs;
use varve::tools::dump_blob;
use varve::{Db, Options, WriteOptions};

const MIN: usize = 1024;

fn options() -> Options {
    Options {
        min_blob_size: Some(MIN),
        write_buffer_size: 256 << 10,
        ..Options::default()
    }
}

/// The keys whose values the blob files of `dir` hold.
fn keys_in_blob_files(dir: &Path) -> BTreeSet<Vec<u8>> {
    let mut keys = BTreeSet::new();
    for e in std::fs::read_dir(dir).expect("list") {
        let path = e.expect("entry").path();
        if path.extension().is_some_and(|x| x == "blob") {
            let d = dump_blob(&PosixFs, &path).expect("a valid blob file");
            for c in d.chunks {
                keys.extend(c.entries.into_iter().map(|e| e.key));
            }
        }
    }
    keys
}

#[test]
fn the_threshold_decides_where_a_value_goes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.put(b"at", vec![1u8; MIN]).expect("put");
    db.put(b"below", vec![2u8; MIN - 1]).expect("put");
    db.put(b"empty", b"").expect("put");
    db.put(b"large", vec![3u8; 100_000]).expect("put");
    db.close().expect("close");
    let want: BTreeSet<Vec<u8>> = [b"at".to_vec(), b"large".to_vec()].into_iter().collect();
    assert_eq!(keys_in_blob_files(dir.path()), want);
    let db = Db::open(dir.path(), options()).expect("reopen");
    assert_eq!(db.get(b"at").expect("get"), Some(vec![1u8; MIN]));
    assert_eq!(db.get(b"below").expect("get"), Some(vec![2u8; MIN - 1]));
    assert_eq!(db.get(b"empty").expect("get"), Some(Vec::new()));
    assert_eq!(db.get(b"large").expect("get"), Some(vec![3u8; 100_000]));

    // With blob files off, every value stays inline (and the old ones read).
    drop(db);
    let db = Db::open(
        dir.path(),
        Options {
            min_blob_size: None,
            ..Options::default()
        },
    )
    .expect("reopen inline");
    db.put(b"inline", vec![4u8; 100_000]).expect("put");
    assert_eq!(db.get(b"large").expect("get"), Some(vec![3u8; 100_000]));
    db.close().expect("close");
    assert!(!keys_in_blob_files(dir.path()).contains(&b"inline"[..]));
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model {
        assert_eq!(db.get(k).expect("get").as_ref(), Some(v));
    }
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(|r| r.expect("scan")).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(fwd, want);
    let mut back: Vec<(Vec<u8>, Vec<u8>)> = db.iter().rev().map(|r| r.expect("scan")).collect();
    back.reverse();
    assert_eq!(back, want);
}

#[test]
fn model_with_blob_values_across_flushes_compactions_and_reopens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model = BTreeMap::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for round in 0..4 {
        let db = Db::open(dir.path(), options()).expect("open");
        check(&db, &model);
        for i in 0..1500u64 {
            let key = format!("key{:05}", next() % 800).into_bytes();
            match next() % 10 {
                0 | 1 => {
                    db.delete(&key).expect("delete");
                    model.remove(&key);
                }
                r => {
                    let len = [0, 10, MIN - 1, MIN, MIN + 1, 4096, 20_000][(r as usize) % 7];
                    let value: Vec<u8> = (0..len).map(|j| (i as usize + j + round) as u8).collect();
                    let sync = WriteOptions {
                        sync: i % 100 == 0,
                        ..WriteOptions::default()
                    };
                    db.put_opt(&key, &value, &sync).expect("put");
                    model.insert(key, value);
                }
            }
            if i % 500 == 499 {
                db.flush().expect("flush");
            }
        }
        check(&db, &model);
        if round % 2 == 1 {
            db.compact_range(None, None).expect("compact");
            check(&db, &model);
        }
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), options()).expect("open");
    check(&db, &model);
    // Every blob file verifies.
    let _ = keys_in_blob_files(dir.path());
}

#[test]
fn repair_keeps_blob_values_and_drops_only_keys_whose_value_is_damaged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let value = |i: u32| vec![(i % 251) as u8; 1000 + i as usize * 10];
    {
        let db = Db::open(dir.path(), options()).expect("open");
        for i in 0..200u32 {
            db.put(format!("k{i:03}"), value(i)).expect("put");
            db.put(format!("small{i:03}"), b"inline").expect("put");
        }
        db.flush().expect("flush");
        // Overwritten: the first values become garbage.
        for i in 0..50u32 {
            db.put(format!("k{i:03}"), value(i + 1000)).expect("put");
        }
        db.close().expect("close");
    }
    // The manifest is lost, and one value of a live key is damaged: find
    // it through dump-blob (the last entry of the first file that holds
    // an entry of a key not overwritten later).
    let mut blobs: Vec<std::path::PathBuf> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "blob"))
        .collect();
    blobs.sort();
    let (victim, damaged_key) = blobs
        .iter()
        .find_map(|path| {
            let d = dump_blob(&PosixFs, path).expect("dump");
            d.chunks
                .iter()
                .flat_map(|c| c.entries.iter())
                .find(|e| e.key.as_slice() >= b"k050".as_slice())
                .map(|e| ((path.clone(), e.offset), e.key.clone()))
        })
        .expect("a live value");
    let mut bytes = std::fs::read(&victim.0).expect("read");
    bytes[victim.1 as usize + 3] ^= 0x40;
    std::fs::write(&victim.0, bytes).expect("write");
    for e in std::fs::read_dir(dir.path()).expect("list") {
        let p = e.expect("entry").path();
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        if name.starts_with("MANIFEST") || name == "CURRENT" {
            std::fs::remove_file(&p).expect("remove");
        }
    }
    let report = Db::repair(dir.path(), &options()).expect("repair");
    assert_eq!(
        report
            .blob_keys_lost
            .iter()
            .map(|(k, _)| k.clone())
            .collect::<Vec<_>>(),
        vec![damaged_key.clone()],
        "{report:?}"
    );
    assert!(!report.blob_files.is_empty());
    let db = Db::open(dir.path(), options()).expect("open repaired");
    for i in 0..200u32 {
        let k = format!("k{i:03}");
        let want = if k.as_bytes() == damaged_key.as_slice() {
            None
        } else if i < 50 {
            Some(value(i + 1000))
        } else {
            Some(value(i))
        };
        assert_eq!(db.get(&k).expect("get"), want, "{k}");
        assert_eq!(
            db.get(format!("small{i:03}")).expect("get"),
            Some(b"inline".to_vec())
        );
    }
    assert_eq!(db.iter().count(), 399);
    assert_eq!(db.iter().rev().count(), 399);
    // The repaired manifest's garbage accounting holds: overwriting the
    // rest and compacting reclaims the old files.
    for i in 0..200u32 {
        db.put(format!("k{i:03}"), vec![9u8; 2000]).expect("put");
    }
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    db.wait_for_compactions().expect("wait");
    let s = db.stats();
    assert!(s.blob_garbage_bytes <= s.blob_value_bytes);
    for b in &blobs {
        assert!(!b.exists(), "{} was not reclaimed", b.display());
    }
}

/// After garbage collection has moved the values into key order, a forward
/// scan reads the blob files in windows, not one read per value; a key-only
/// walk reads no blob bytes at all; a backward scan reads each value.
#[test]
fn a_forward_scan_reads_relocated_values_in_windows() {
    use std::sync::Arc;
    use varve::testing::FaultInjectingFs;
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    let opts = Options {
        fs: Arc::new(fs.clone()),
        blob_file_size: 1 << 20,
        ..options()
    };
    let db = Db::open(dir.path(), opts).expect("open");
    let value = |i: u32, round: u32| vec![(i + round) as u8; 4000];
    // Each key's first value is overwritten right after the next key's
    // first write: every blob file holds live and dead values alike.
    for i in 0..2000u32 {
        db.put(format!("k{i:05}"), value(i, 0)).expect("put");
        if i > 0 {
            db.put(format!("k{:05}", i - 1), value(i - 1, 1))
                .expect("put");
        }
    }
    db.put("k01999", value(1999, 1)).expect("put");
    // Reopened, every lane file is sealed; half of every file is garbage,
    // so the compaction relocates the live values into new blob files, in
    // key order.
    db.close().expect("close");
    let db = Db::open(
        dir.path(),
        Options {
            fs: Arc::new(fs.clone()),
            blob_file_size: 1 << 20,
            ..options()
        },
    )
    .expect("reopen");
    db.compact_range(None, None).expect("compact");
    assert!(db.stats().blob_gc_bytes_relocated > 0);
    let blob_reads = |fs: &FaultInjectingFs| {
        let log: Vec<_> = fs
            .take_read_log()
            .into_iter()
            .filter(|r| r.path.extension().is_some_and(|x| x == "blob"))
            .collect();
        if std::env::var_os("SHOW_READS").is_some() {
            for r in &log {
                eprintln!("{:?} {} {}", r.path.file_name(), r.offset, r.len);
            }
        }
        log.len()
    };
    fs.record_reads(true);
    let _ = fs.take_read_log();
    let mut n = 0u32;
    for item in db.iter() {
        let (k, v) = item.expect("scan");
        assert_eq!(k, format!("k{n:05}").into_bytes());
        assert_eq!(v, value(n, 1));
        n += 1;
    }
    assert_eq!(n, 2000);
    // The scan's iterator is gone: the pool skips its prefetches not yet
    // started, and the one it may be reading finishes within moments.
    let mut last = fs.reads();
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let now = fs.reads();
        if now == last {
            break;
        }
        last = now;
    }
    let forward = blob_reads(&fs);
    // Windows: at most one read per 20 values (a single read each for the
    // first values of a file, before the order is known).
    assert!(
        forward <= 100,
        "{forward} blob reads for a scan of 2000 values"
    );
    let mut it = db.iter();
    it.seek_to_first();
    let mut keys = 0;
    while it.valid() {
        keys += 1;
        it.move_next();
    }
    assert_eq!(keys, 2000);
    assert_eq!(blob_reads(&fs), 0, "a key-only walk reads no blob bytes");
    let back: Vec<_> = db.iter().rev().map(|r| r.expect("scan")).collect();
    assert_eq!(back.len(), 2000);
    assert_eq!(back[0].1, value(1999, 1));
    assert!(blob_reads(&fs) >= 2000, "backward: one read per value");
}

/// A full `compact_range` leaves every blob value in key order even when
/// the whole tree already sits in one level (nothing to merge down): the
/// last step rewrites that level in place and relocates every value. (It
/// once relocated only while merging a level into the next, so a database
/// whose background compactions had already moved everything to L1 kept
/// its values in write order, and a cold scan read them one by one.)
#[test]
fn compact_range_puts_values_in_key_order_when_the_tree_is_one_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = || Options {
        blob_file_size: 1 << 20,
        l0_compaction_trigger: 1,
        ..options()
    };
    let db = Db::open(dir.path(), opts()).expect("open");
    let value = |i: u64| vec![(i % 251) as u8; 3000];
    // Keys written in a scrambled order: the lanes' files hold them so.
    let n = 1500u64;
    let key = |i: u64| format!("k{:05}", (i * 7919) % n).into_bytes();
    for i in 0..n {
        db.put(key(i), value((i * 7919) % n)).expect("put");
    }
    // Reopened, the lanes' files are sealed and the log is in an L0 table,
    // which the background moves down: the tree is one level, L0 empty.
    db.close().expect("close");
    let db = Db::open(dir.path(), opts()).expect("reopen");
    db.wait_for_compactions().expect("wait");
    let levels = db.stats().levels;
    assert_eq!(
        levels[0].files, 0,
        "L0 is empty before compact_range: {levels:?}"
    );
    db.compact_range(None, None).expect("compact");
    assert!(
        db.stats().blob_gc_bytes_relocated >= n * 3000,
        "every value relocated"
    );
    // Every blob file left lists its keys in ascending order, and the
    // files do not interleave.
    let mut files: Vec<Vec<Vec<u8>>> = Vec::new();
    for e in std::fs::read_dir(dir.path()).expect("list") {
        let path = e.expect("entry").path();
        if path.extension().is_some_and(|x| x == "blob") {
            let d = dump_blob(&PosixFs, &path).expect("a valid blob file");
            let keys: Vec<Vec<u8>> = d
                .chunks
                .into_iter()
                .flat_map(|c| c.entries.into_iter().map(|e| e.key))
                .collect();
            if !keys.is_empty() {
                files.push(keys);
            }
        }
    }
    files.sort();
    let all: Vec<Vec<u8>> = files.concat();
    assert_eq!(all.len(), n as usize, "only the live values are left");
    assert!(all.windows(2).all(|w| w[0] < w[1]), "values in key order");
    for i in 0..n {
        assert_eq!(db.get(key(i)).expect("get"), Some(value((i * 7919) % n)));
    }
}

/// `check_db` follows every pointer of a live table into its blob file: a
/// clean database has no problem; with a blob file gone, the tables that
/// point into it are reported, naming the key, the file and the offset.
#[test]
fn check_follows_every_pointer_into_the_blob_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    for i in 0..300u32 {
        db.put(format!("k{i:04}"), vec![(i % 200) as u8; 1500])
            .expect("put");
    }
    db.flush().expect("flush");
    db.close().expect("close");
    let problems = |dir: &Path| -> Vec<String> {
        varve::tools::check_db(std::sync::Arc::new(PosixFs), dir, |_| {})
            .expect("check")
            .into_iter()
            .filter_map(|c| {
                c.problem
                    .map(|p| format!("{}: {}", c.path.display(), p.reason))
            })
            .collect()
    };
    assert_eq!(problems(dir.path()), Vec::<String>::new());
    let blob = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "blob"))
        .expect("a blob file");
    std::fs::remove_file(&blob).expect("remove");
    let found = problems(dir.path());
    assert!(
        found.iter().any(|p| p.contains(".sst")
            && p.contains("points to blob file")
            && p.contains("at offset")),
        "{found:?}"
    );
}

/// A sealed blob file of a cleanly closed database cut by 18 bytes (its
/// footer's end): `check_db` names it, with the size the manifest records,
/// because reads through the database fail on it. Before, check walked the
/// file alone and said it was clean.
#[test]
fn check_flags_a_sealed_blob_file_shorter_than_the_manifest_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        dir.path(),
        Options {
            blob_file_size: 1 << 20,
            ..options()
        },
    )
    .expect("open");
    for i in 0..1500u32 {
        db.put(format!("k{i:04}"), vec![(i % 200) as u8; 1500])
            .expect("put");
    }
    db.flush().expect("flush");
    db.close().expect("close");
    let problems = |dir: &Path| -> Vec<(String, String)> {
        varve::tools::check_db(std::sync::Arc::new(PosixFs), dir, |_| {})
            .expect("check")
            .into_iter()
            .filter_map(|c| c.problem.map(|p| (c.path.display().to_string(), p.reason)))
            .collect()
    };
    assert_eq!(problems(dir.path()), Vec::new());
    let blob = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "blob"))
        .min()
        .expect("a blob file");
    let len = std::fs::metadata(&blob).expect("stat").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&blob)
        .expect("open")
        .set_len(len - 18)
        .expect("cut");
    let found = problems(dir.path());
    assert!(
        found
            .iter()
            .any(|(p, why)| *p == blob.display().to_string() && why.contains(&len.to_string())),
        "{found:?}"
    );
    // And the database itself refuses to read it, one way or another.
    let reads_fail = match Db::open(dir.path(), options()) {
        Err(_) => true,
        Ok(db) => (0..1500u32).any(|i| db.get(format!("k{i:04}")).is_err()),
    };
    assert!(reads_fail, "the cut file reads fine, yet check flags it");
}

/// With the tables that point into blob files pinned
/// (`Options::pinned_blob_tables_size`), a cold point read of a separated
/// value reads the disk once, for the value, whatever the block cache; with
/// pinning off, the table block holding the pointer is a read of its own.
#[test]
fn a_point_read_of_a_blob_value_is_one_read_with_pinned_tables() {
    use std::sync::Arc;
    use varve::testing::FaultInjectingFs;
    let dir = tempfile::tempdir().expect("tempdir");
    let value = |i: u32| vec![(i % 251) as u8; 4096];
    {
        let db = Db::open(dir.path(), options()).expect("open");
        for i in 0..3000u32 {
            db.put(
                format!("k{:05}", (i * 7919) % 3000),
                value((i * 7919) % 3000),
            )
            .expect("put");
        }
        db.compact_range(None, None).expect("compact");
        db.close().expect("close");
    }
    for (pin, max_reads_per_get) in [(64usize << 20, 1.0f64), (0, 2.0)] {
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let db = Db::open(
            dir.path(),
            Options {
                fs: Arc::new(fs.clone()),
                cache_size: 0,
                pinned_blob_tables_size: pin,
                ..options()
            },
        )
        .expect("reopen");
        let keys = 500u32;
        let key_at = |i: u32| (i * 13) % 3000;
        // The first get of each table opens it (and pins it), whether the
        // background warm-up got there first or not (on a loaded machine
        // it may still be running): one untimed pass, then count.
        for i in 0..keys {
            assert_eq!(
                db.get(format!("k{:05}", key_at(i))).expect("get"),
                Some(value(key_at(i)))
            );
        }
        let pinned = db.stats().pinned_blob_table_bytes;
        if pin > 0 {
            assert!(pinned > 0, "the pointer tables are pinned");
        } else {
            assert_eq!(pinned, 0);
        }
        fs.record_reads(true);
        let _ = fs.take_read_log();
        for i in 0..keys {
            let k = key_at(i);
            assert_eq!(db.get(format!("k{k:05}")).expect("get"), Some(value(k)));
        }
        let log = fs.take_read_log();
        let blob = log
            .iter()
            .filter(|r| r.path.extension().is_some_and(|x| x == "blob"))
            .count();
        let per_get = log.len() as f64 / f64::from(keys);
        assert_eq!(blob, keys as usize, "one read of each value");
        if pin > 0 {
            let others: Vec<_> = log
                .iter()
                .filter(|r| r.path.extension().is_none_or(|x| x != "blob"))
                .collect();
            assert!(
                others.is_empty(),
                "pinned: no table reads at all, got {others:?}"
            );
        } else {
            assert!(
                per_get > 1.5,
                "without pinning a table read each: {per_get}"
            );
        }
        assert!(per_get <= max_reads_per_get, "{per_get} reads per get");
        db.close().expect("close");
    }
}
