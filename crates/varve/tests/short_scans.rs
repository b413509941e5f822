//! Short scans over blob values (`docs/blob-files.md`, "Short scans";
//! issue #51, item 4): a bounded range of N keys, or a seek and N nexts,
//! over 4 KiB values whose order in the blob files is unrelated to key
//! order, reads at most 1.5x the bytes of the values it returns plus one
//! read-ahead unit (64 KiB), for N from 1 to 300 and past the old
//! 64-value threshold, with and without shared scan chunks, forward and
//! backward; what they return equals a `BTreeMap` model; the batches
//! really have several reads in flight; long scans still read ahead.
//!
//! Bytes are counted by the fault-injecting file system's read log (the
//! reads of `.blob` files only), so the assertions are deterministic.

use std::collections::BTreeMap;
use std::sync::Arc;

use varve::fs::PosixFs;
use varve::testing::FaultInjectingFs;
use varve::{Db, Options, ReadOptions};

/// One read-ahead unit of slack, as in `db/read/scan_ahead.rs`.
const UNIT: u64 = 64 << 10;
const KEYS: u64 = 4000;
const VALUE: usize = 4096;

/// Key `i`: a hash of `i`, so that the order values were written in (the
/// order they lie in the blob files) is unrelated to key order.
fn key(i: u64) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    format!("{x:016x}").into_bytes()
}

/// A 4 KiB value that names its key and version.
fn value(i: u64, version: u8) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8 ^ version; VALUE];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v[8] = version;
    v
}

fn options(fs: &FaultInjectingFs, shared: usize) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        min_blob_size: Some(1024),
        write_buffer_size: 1 << 20,
        blob_file_size: 4 << 20,
        shared_scan_bytes: shared,
        ..Options::default()
    }
}

/// A database of `KEYS` 4 KiB values in sealed blob files (written in
/// `i` order, so scattered in key order), reopened with a shared pool of
/// `shared` bytes; and its model.
fn database(
    dir: &std::path::Path,
    shared: usize,
) -> (Db, FaultInjectingFs, BTreeMap<Vec<u8>, Vec<u8>>) {
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    let mut model = BTreeMap::new();
    {
        let db = Db::open(dir, options(&fs, 0)).expect("open");
        for i in 0..KEYS {
            db.put(key(i), value(i, 0)).expect("put");
            model.insert(key(i), value(i, 0));
        }
        db.flush().expect("flush");
        db.close().expect("close");
    }
    let db = Db::open(dir, options(&fs, shared)).expect("reopen");
    db.wait_for_compactions().expect("compactions");
    (db, fs, model)
}

/// Bytes of blob-file reads logged since the last call.
fn blob_bytes(fs: &FaultInjectingFs) -> u64 {
    fs.take_read_log()
        .iter()
        .filter(|r| r.path.extension().is_some_and(|x| x == "blob"))
        .map(|r| r.len as u64)
        .sum()
}

/// The Ns to try: every small one, and around the old threshold (64
/// values) and the batch sizes (doubling from 2 to 128).
fn sweep() -> Vec<usize> {
    let mut ns: Vec<usize> = (1..=20).collect();
    for t in [31, 32, 33, 63, 64, 65, 66, 70, 72, 80, 100, 127, 128, 129] {
        ns.push(t);
    }
    ns.extend([150, 200, 255, 256, 257, 300]);
    ns
}

/// How a scan of N entries walks.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// `range(start..end)` holding exactly N keys.
    Bounded,
    /// `seek(start)` and N-1 `move_next`s, no bound.
    SeekNexts,
    /// `range(..).rev()` of N keys (the backward cursor).
    Reverse,
    /// `seek_for_prev(last)` and N-1 `move_prev`s, no bound.
    SeekPrevs,
}

/// Runs a scan of `n` entries of `shape` starting at the `at`-th key of
/// the model; returns what it saw.
fn run(
    db: &Db,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    keys: &[Vec<u8>],
    (shape, at, n): (Shape, usize, usize),
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let want: Vec<_> = keys[at..at + n]
        .iter()
        .map(|k| (k.clone(), model[k].clone()))
        .collect();
    let got: Vec<(Vec<u8>, Vec<u8>)> = match shape {
        Shape::Bounded => db
            .range(keys[at].as_slice()..keys[at + n].as_slice())
            .map(|r| r.expect("entry"))
            .collect(),
        Shape::Reverse => {
            let mut v: Vec<_> = db
                .range(keys[at].as_slice()..keys[at + n].as_slice())
                .rev()
                .map(|r| r.expect("entry"))
                .collect();
            v.reverse();
            v
        }
        Shape::SeekNexts => {
            let mut it = db.iter_opt(&ReadOptions::default());
            it.seek(&keys[at]);
            let mut v = Vec::new();
            while v.len() < n && it.valid() {
                v.push((it.key().to_vec(), it.value().to_vec()));
                it.move_next();
            }
            it.status().expect("status");
            v
        }
        Shape::SeekPrevs => {
            let mut it = db.iter_opt(&ReadOptions::default());
            it.seek_for_prev(&keys[at + n - 1]);
            let mut v = Vec::new();
            while v.len() < n && it.valid() {
                v.push((it.key().to_vec(), it.value().to_vec()));
                it.move_prev();
            }
            it.status().expect("status");
            v.reverse();
            v
        }
    };
    assert_eq!(got.len(), want.len(), "{shape:?} of {n} at {at}: count");
    for (g, w) in got.iter().zip(&want) {
        assert!(
            g == w,
            "{shape:?} of {n} at {at}: key {:?}",
            String::from_utf8_lossy(&w.0)
        );
    }
    got
}

/// Every shape and N of the sweep, on a database with `shared` bytes of
/// shared scan chunks: the values equal the model and the bytes read from
/// blob files stay within 1.5x what was returned plus one unit.
fn sweep_bytes(shared: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, fs, model) = database(dir.path(), shared);
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    fs.record_reads(true);
    let mut worst = 0.0f64;
    for shape in [
        Shape::Bounded,
        Shape::SeekNexts,
        Shape::Reverse,
        Shape::SeekPrevs,
    ] {
        for (j, n) in sweep().into_iter().enumerate() {
            let at = (j * 997 + n * 31) % (keys.len() - n - 1);
            blob_bytes(&fs);
            let got = run(&db, &model, &keys, (shape, at, n));
            let read = blob_bytes(&fs);
            let returned: u64 = got.iter().map(|(_, v)| v.len() as u64).sum();
            assert!(
                read <= returned + returned / 2 + UNIT,
                "{shape:?} of {n}: read {read} bytes for {returned} returned"
            );
            worst = worst.max(read as f64 / returned as f64);
        }
    }
    eprintln!("shared {shared}: worst read/returned {worst:.2}");
    let s = db.stats();
    assert!(s.scan_batches > 0, "the scans read in batches");
    if varve::io_uring_available() {
        assert!(
            s.scan_batch_most_in_flight >= 4,
            "a batch had several reads at the disk at once: {}",
            s.scan_batch_most_in_flight
        );
    }
}

#[test]
fn short_scans_read_what_they_return_without_shared_chunks() {
    sweep_bytes(0);
}

#[test]
fn short_scans_read_what_they_return_with_shared_chunks() {
    sweep_bytes(64 << 20);
}

/// The same iterator reused for many seek-and-scan runs (a `seekrandom`
/// thread's): each run is bounded on its own; the total stays within the
/// bound of the total.
#[test]
fn a_reused_iterator_bounds_every_run() {
    reused_iterator(0);
    reused_iterator(64 << 20);
}

fn reused_iterator(shared: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, fs, model) = database(dir.path(), shared);
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    let mut it = db.iter_opt(&ReadOptions::default());
    fs.record_reads(true);
    let mut returned = 0u64;
    for r in 0..200usize {
        let at = (r * 7919) % (keys.len() - 120);
        let n = [10, 64, 70, 100][r % 4];
        it.seek(&keys[at]);
        for k in &keys[at..at + n] {
            assert!(it.valid());
            assert_eq!(it.key(), k.as_slice());
            assert_eq!(it.value(), model[k].as_slice());
            returned += VALUE as u64;
            it.move_next();
        }
        let read = blob_bytes(&fs);
        assert!(
            read <= VALUE as u64 * n as u64 * 3 / 2 + UNIT,
            "run {r} of {n}: read {read}"
        );
    }
    assert!(returned > 8 << 20, "more than a long scan in all");
}

/// Key-only walks read no blob bytes; a walk that asks for every other
/// value reads within the bound of what it asked for.
#[test]
fn values_not_asked_for_are_not_read_beyond_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, fs, model) = database(dir.path(), 0);
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    fs.record_reads(true);
    let n = db.range(keys[100].as_slice()..keys[400].as_slice()).count();
    assert_eq!(n, 300);
    // (`count` on the Rust iterator copies values: use the cursor.)
    let mut it = db.range(keys[100].as_slice()..keys[400].as_slice());
    blob_bytes(&fs);
    it.seek_to_first();
    let mut walked = 0;
    while it.valid() {
        walked += 1;
        it.move_next();
    }
    assert_eq!(walked, 300);
    assert_eq!(blob_bytes(&fs), 0, "a key-only walk reads no value");
    let mut it = db.range(keys[100].as_slice()..keys[400].as_slice());
    it.seek_to_first();
    let mut asked = 0u64;
    let mut i = 0;
    while it.valid() {
        if i % 2 == 0 {
            assert_eq!(it.value(), model[it.key()].as_slice());
            asked += VALUE as u64;
        }
        i += 1;
        it.move_next();
    }
    let read = blob_bytes(&fs);
    assert!(read <= asked * 3 / 2 + UNIT, "read {read} for {asked}");
}

/// A model test over a mixed state: sealed blob files, values still
/// staged in an open lane (overwrites after the reopen), deletes, inline
/// values and a range delete, through seeks, nexts, prevs and bounded
/// ranges of many lengths: every answer equals the model.
#[test]
fn scans_over_a_mixed_state_match_the_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _fs, mut model) = database(dir.path(), 16 << 20);
    let mut x = 99u64;
    let mut rand = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for _ in 0..600 {
        let i = rand(KEYS);
        match rand(4) {
            0 => {
                db.delete(key(i)).expect("delete");
                model.remove(&key(i));
            }
            1 => {
                let small = vec![i as u8; 40];
                db.put(key(i), &small).expect("put");
                model.insert(key(i), small);
            }
            _ => {
                db.put(key(i), value(i, 1)).expect("put");
                model.insert(key(i), value(i, 1));
            }
        }
    }
    let all: Vec<Vec<u8>> = model.keys().cloned().collect();
    let (a, b) = (all[1000].clone(), all[1040].clone());
    db.delete_range(a.clone()..b.clone()).expect("delete range");
    model.retain(|k, _| !(k >= &a && k < &b));
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for round in 0..60u64 {
        let n = [1, 2, 3, 7, 40, 64, 65, 100, 150, 300][(round % 10) as usize];
        let at = rand((keys.len() - n - 1) as u64) as usize;
        let shape = [
            Shape::Bounded,
            Shape::SeekNexts,
            Shape::Reverse,
            Shape::SeekPrevs,
        ][(round % 4) as usize];
        run(&db, &model, &keys, (shape, at, n));
    }
    // A cursor that turns around in the middle of a batch.
    let mut it = db.iter_opt(&ReadOptions::default());
    it.seek(&keys[500]);
    for k in &keys[500..560] {
        assert_eq!(it.value(), model[k].as_slice());
        it.move_next();
    }
    for k in keys[530..560].iter().rev() {
        it.move_prev();
        assert_eq!(it.key(), k.as_slice());
        assert_eq!(it.value(), model[k].as_slice());
    }
    for k in &keys[531..700] {
        it.move_next();
        assert_eq!(it.key(), k.as_slice());
        assert_eq!(it.value(), model[k].as_slice());
    }
}

/// A long scan (past 8 MiB returned) still reads ahead: over values in
/// key order (after `compact_range` relocated them) it needs far fewer
/// reads than values, and with shared chunks it loads chunks.
#[test]
fn long_scans_still_read_ahead() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, fs, model) = database(dir.path(), 0);
    db.compact_range(None, None).expect("compact");
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    fs.record_reads(true);
    let got: Vec<_> = db
        .range(keys[0].as_slice()..keys[3999].as_slice())
        .map(|r| r.expect("entry"))
        .collect();
    assert_eq!(got.len(), 3999);
    for (k, v) in &got {
        assert!(v == &model[k]);
    }
    let reads: Vec<_> = fs
        .take_read_log()
        .into_iter()
        .filter(|r| r.path.extension().is_some_and(|x| x == "blob"))
        .collect();
    assert!(
        reads.len() * 8 < got.len(),
        "{} reads for {} values in key order",
        reads.len(),
        got.len()
    );
    drop(db);
    let dir2 = tempfile::tempdir().expect("tempdir");
    let (db, _fs, model) = database(dir2.path(), 64 << 20);
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    let mut n = 0;
    for r in db.range(keys[0].as_slice()..keys[3999].as_slice()) {
        let (k, v) = r.expect("entry");
        assert!(v == model[&k]);
        n += 1;
    }
    assert_eq!(n, 3999);
    assert!(
        db.stats().shared_scan_loads > 0,
        "past 8 MiB the scan loads shared chunks"
    );
}
