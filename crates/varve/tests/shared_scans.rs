//! Shared scan chunks (`Options::shared_scan_bytes`,
//! `docs/blob-files.md`, "Shared scan chunks"): N concurrent iterators (1
//! to 128) over the same range and over different ranges each see exactly
//! what a lone iterator sees, the pool never holds more than its budget,
//! and iterators that scan together read each chunk once.

use std::collections::BTreeMap;
use std::sync::Barrier;

mod common;

use varve::{Db, Options, ReadOptions};

/// Key `i`: 8-byte big-endian.
fn key(i: u64) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

/// A 4 KiB value that names its key.
fn value(i: u64) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; 4096];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v
}

const KEYS: u64 = 3000;

fn options(shared: usize) -> Options {
    Options {
        min_blob_size: Some(1024),
        write_buffer_size: 1 << 20,
        shared_scan_bytes: shared,
        ..Options::default()
    }
}

/// A database of `KEYS` 4 KiB values in blob files, written in a shuffled
/// order, then compacted (values in key order) and reopened with a shared
/// pool of `shared` bytes.
fn database(dir: &std::path::Path, shared: usize) -> Db {
    let db = Db::open(dir, options(0)).expect("open");
    let mut order: Vec<u64> = (0..KEYS).collect();
    let mut x = 12345u64;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    for i in order {
        db.put(key(i), value(i)).expect("put");
    }
    db.compact_range(None, None).expect("compact");
    db.close().expect("close");
    Db::open(dir, options(shared)).expect("reopen")
}

/// What `opts` makes an iterator see, front to back.
fn scan(db: &Db, opts: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter_opt(opts).map(|r| r.expect("entry")).collect()
}

fn model(range: std::ops::Range<u64>) -> Vec<(Vec<u8>, Vec<u8>)> {
    range.map(|i| (key(i), value(i))).collect()
}

/// `n` iterators on `n` threads started together; iterator `t` reads
/// `ranges(t)`. Each must see the model.
fn scan_together(db: &Db, n: usize, ranges: impl Fn(usize) -> std::ops::Range<u64> + Sync) {
    let start = Barrier::new(n);
    std::thread::scope(|s| {
        for t in 0..n {
            let (start, ranges) = (&start, &ranges);
            s.spawn(move || {
                let r = ranges(t);
                let opts = ReadOptions {
                    iterate_lower_bound: Some(key(r.start)),
                    iterate_upper_bound: Some(key(r.end)),
                    ..ReadOptions::default()
                };
                start.wait();
                let got = scan(db, &opts);
                assert!(
                    got == model(r.clone()),
                    "iterator {t} over {r:?} saw something else"
                );
            });
        }
    });
}

#[test]
fn concurrent_scans_of_the_same_range_read_each_chunk_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The whole database fits: nothing is evicted, so every chunk is read
    // once however many iterators scan.
    let budget = 32 << 20;
    let db = database(dir.path(), budget);
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        model(0..KEYS),
        "a lone scan"
    );
    let lone = db.stats();
    assert!(lone.shared_scan_loads > 0, "a long scan loads chunks");
    let data_chunks = (KEYS * 4096).div_ceil(1 << 20) + 2;
    assert!(lone.shared_scan_loads <= data_chunks, "{lone:?}");
    for n in [1, 8, 64, 128] {
        scan_together(&db, n, |_| 0..KEYS);
        let s = db.stats();
        assert!(s.shared_scan_bytes <= budget as u64);
        assert_eq!(
            s.shared_scan_loads, lone.shared_scan_loads,
            "{n} iterators: every chunk was already resident"
        );
    }
    assert!(db.stats().report().contains("Shared scan chunks:"));
}

#[test]
fn many_iterators_over_different_ranges_stay_in_a_small_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Two chunks for up to 128 iterators: most values are read alone, none
    // is wrong, and the pool never grows.
    let budget = 2 << 20;
    let db = database(dir.path(), budget);
    for n in [1, 8, 64, 128] {
        let per = KEYS / n as u64;
        scan_together(&db, n, |t| {
            let lo = t as u64 * per;
            lo..(lo + per).max(lo + 1).min(KEYS)
        });
        scan_together(&db, n, |_| 0..KEYS);
        let s = db.stats();
        assert!(
            s.shared_scan_bytes <= budget as u64,
            "{n} iterators: {} bytes in a {budget}-byte pool",
            s.shared_scan_bytes
        );
    }
    let s = db.stats();
    assert!(s.shared_scan_loads > 0 && s.shared_scan_hits > 0, "{s:?}");
}

#[test]
fn short_scans_do_not_load_chunks_and_reverse_scans_still_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), 8 << 20);
    // A seek and a few steps: below the threshold, values are read alone.
    let mut it = db.iter();
    it.seek(key(1000));
    for i in 1000..1010 {
        assert!(it.valid());
        assert_eq!(it.key(), key(i).as_slice());
        assert_eq!(it.value(), value(i).as_slice());
        it.move_next();
    }
    drop(it);
    assert_eq!(
        db.stats().shared_scan_loads,
        0,
        "a short scan loads nothing"
    );
    // Backwards (values from resident chunks where there are any).
    let mut it = db.iter();
    it.seek_to_last();
    let mut back = BTreeMap::new();
    while it.valid() {
        back.insert(it.key().to_vec(), it.value().to_vec());
        it.move_prev();
    }
    it.status().expect("no error");
    assert_eq!(back.len() as u64, KEYS);
    assert!(back.iter().all(|(k, v)| {
        let i = u64::from_be_bytes(k.as_slice().try_into().expect("8 bytes"));
        *v == value(i)
    }));
}

/// A flipped byte in a blob file: a scan through the shared chunks stops
/// with a corruption error at that value (whichever scan reaches it first,
/// and every other scan too), never yields a wrong value, and the values
/// before it are exact.
#[test]
fn a_damaged_value_in_a_shared_chunk_is_an_error_for_every_scan() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(database(dir.path(), 0));
    common::flip_byte_in_largest_blob(dir.path());
    let db = Db::open(dir.path(), options(16 << 20)).expect("open");
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                let mut it = db.iter();
                it.seek_to_first();
                let mut n = 0u64;
                while it.valid() {
                    assert_eq!(it.key(), key(n).as_slice());
                    let v = it.value().to_vec();
                    if !it.valid() {
                        break; // reading the value failed: see status
                    }
                    assert!(v == value(n), "a wrong value for key {n}");
                    n += 1;
                    it.move_next();
                }
                let err = it.status().expect_err("the damaged value is an error");
                assert!(matches!(err, varve::Error::Corruption { .. }), "{err:?}");
                assert!(n < KEYS, "the scan stopped at the damage");
            });
        }
    });
}
