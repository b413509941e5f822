//! `Db::multi_get`: equal to `get` key by key on random batches (present,
//! absent, deleted keys; memtable, immutables and several levels; buffered
//! and O_DIRECT reads, including cold table opens whose footer reads end at
//! end of file), with and without `async_io`, at queue depths below and
//! above the io_uring ring size; identical with io_uring forced off
//! (`VARVE_IO=sync`, in a child process since the probe is per process);
//! per-key errors from a faulty file; a panicking lookup with reads in
//! flight leaves none in flight; several threads at once (one ring each);
//! one batch mixing keys the in-memory pass answers from cached blocks with
//! keys that need the per-key lookup, with duplicates and a snapshot.

mod common;

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use common::{Rng, fast_tempdir, tiny_lsm_options, value_for};
use varve::fs::PosixFs;
use varve::io_uring_available;
use varve::testing::{FaultInjectingFs, ReadFault, in_flight_reads};
use varve::{Db, Error, Options, ReadOptions};

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Fills `db` so that entries live in several levels, in L0, in immutable
/// memtables and in the active memtable, with overwrites and deletes.
/// Returns the model of the final state.
fn fill(db: &Db, rng: &mut Rng, n: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for round in 0..4u64 {
        for _ in 0..n {
            let k = key(rng.below(n));
            if rng.below(5) == 0 {
                db.delete(&k).expect("delete");
                model.remove(&k);
            } else {
                let v = [value_for(&k), round.to_le_bytes().to_vec()].concat();
                db.put(&k, &v).expect("put");
                model.insert(k, v);
            }
        }
        if round < 2 {
            db.flush().expect("flush");
            db.wait_for_compactions().expect("compactions");
        }
    }
    model
}

/// Random batches (present, absent, deleted keys, duplicates) through
/// `multi_get` in every mode, each compared with `get` key by key and with
/// the model.
fn check_batches(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, rng: &mut Rng, n: u64) {
    let modes = [
        (false, 32),
        (true, 1),
        (true, 4),
        (true, 32),
        (true, 300), // deeper than the 64-entry ring and its 128 CQEs
    ];
    for batch_len in [1usize, 2, 17, 128, 700] {
        let keys: Vec<Vec<u8>> = (0..batch_len)
            .map(|_| match rng.below(10) {
                0 => format!("absent{}", rng.below(1000)).into_bytes(),
                _ => key(rng.below(n + n / 10)),
            })
            .collect();
        let expected: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(db.get(k).expect("get"), expected[i], "get {k:?}");
        }
        for (async_io, depth) in modes {
            let opts = ReadOptions {
                async_io,
                async_queue_depth: depth,
                ..ReadOptions::default()
            };
            let got = db.multi_get(&opts, &keys);
            assert_eq!(got.len(), keys.len());
            for (i, r) in got.into_iter().enumerate() {
                let v = r.unwrap_or_else(|e| panic!("key {:?}: {e}", keys[i]));
                assert_eq!(
                    v, expected[i],
                    "key {:?} async_io={async_io} depth={depth}",
                    keys[i]
                );
            }
            assert_eq!(in_flight_reads(), 0);
        }
    }
}

fn multi_get_equals_get_on(dir: &Path, options: Options, seed: u64) {
    let n = 3000;
    let mut rng = Rng(seed);
    let db = match Db::open(dir, options.clone()) {
        Ok(db) => db,
        Err(e) if options.use_direct_reads => {
            varve::testing::skip_or_fail("the O_DIRECT multi_get run", &e.to_string());
            return;
        }
        Err(e) => panic!("open: {e}"),
    };
    let model = fill(&db, &mut rng, n);
    let levels: Vec<usize> = db.stats().levels.iter().map(|l| l.files).collect();
    assert!(
        levels.iter().skip(1).filter(|&&f| f > 0).count() >= 2,
        "data spans several levels: {levels:?}"
    );
    check_batches(&db, &model, &mut rng, n);

    // One sequence number for the whole batch: a snapshot's view.
    let snap = db.snapshot();
    let before: Vec<Vec<u8>> = (0..200).map(|i| key(i * 7)).collect();
    let old: Vec<Option<Vec<u8>>> = before.iter().map(|k| model.get(k).cloned()).collect();
    for k in &before {
        db.put(k, b"newer").expect("put");
    }
    let at = ReadOptions {
        async_io: true,
        ..ReadOptions::at(&snap)
    };
    let got: Vec<Option<Vec<u8>>> = db
        .multi_get(&at, &before)
        .into_iter()
        .map(|r| r.expect("multi_get"))
        .collect();
    assert_eq!(got, old);
    drop(snap);
    db.close().expect("close");

    // Cold: every table opens inside a fiber (footer reads at end of file).
    let db = Db::open(dir, options).expect("reopen");
    let mut model = model;
    for k in &before {
        model.insert(k.clone(), b"newer".to_vec());
    }
    check_batches(&db, &model, &mut rng, n);
    db.close().expect("close");
}

fn small_cache() -> Options {
    Options {
        cache_size: 0,
        ..tiny_lsm_options()
    }
}

#[test]
fn multi_get_equals_get() {
    if let Some(expect) = std::env::var_os("VARVE_EXPECT_IO_URING") {
        assert_eq!(io_uring_available(), expect == "1");
    }
    let dir = fast_tempdir();
    multi_get_equals_get_on(dir.path(), small_cache(), 0x5eed);
    let dir = fast_tempdir();
    multi_get_equals_get_on(dir.path(), tiny_lsm_options(), 0xcafe);
}

#[test]
fn multi_get_equals_get_with_direct_reads() {
    let dir = tempfile::Builder::new()
        .prefix("varve-mget-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("tempdir");
    let options = Options {
        use_direct_reads: true,
        ..small_cache()
    };
    multi_get_equals_get_on(dir.path(), options, 0xd1ec7);
}

#[test]
fn results_are_identical_with_io_uring_forced_off() {
    // The probe runs once per process: run the equality test in a child
    // process with `VARVE_IO=sync`, and check the child saw io_uring off.
    common::run_test_in_child(
        "multi_get_equals_get",
        &[("VARVE_IO", "sync"), ("VARVE_EXPECT_IO_URING", "0")],
    );
}

/// A database of two tables: `a…` keys in one, `b…` keys in the other (no
/// block cache, so every lookup reads its file). Returns the `b` table's name.
fn two_tables(dir: &Path, fs: &FaultInjectingFs) -> (Db, String) {
    let options = Options {
        fs: Arc::new(fs.clone()),
        cache_size: 0,
        block_size: 512,
        ..Options::default()
    };
    let db = Db::open(dir, options).expect("open");
    let mut tables = Vec::new();
    for prefix in ["a", "b"] {
        for i in 0..500 {
            let k = format!("{prefix}{i:04}");
            db.put(&k, value_for(k.as_bytes())).expect("put");
        }
        db.flush().expect("flush");
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sst") && !tables.contains(n))
            .collect();
        names.sort();
        tables.push(names.pop().expect("a new table"));
    }
    (db, tables.pop().expect("b table"))
}

fn mixed_keys() -> Vec<String> {
    (0..200)
        .map(|i| match i % 4 {
            0 => format!("b{:04}", i * 2),
            3 => format!("c{i}"), // in no table's range
            _ => format!("a{:04}", i * 2),
        })
        .collect()
}

#[test]
fn a_faulty_file_fails_only_its_own_keys() {
    let dir = fast_tempdir();
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    let (db, b_table) = two_tables(dir.path(), &fs);
    fs.fault_reads_of(&b_table, Some(ReadFault::Error));
    let keys = mixed_keys();
    for async_io in [false, true] {
        let opts = ReadOptions {
            async_io,
            async_queue_depth: 16,
            ..ReadOptions::default()
        };
        let got = db.multi_get(&opts, &keys);
        for (k, r) in keys.iter().zip(got) {
            match (k.as_bytes()[0], r) {
                (b'a', Ok(v)) => assert_eq!(v, Some(value_for(k.as_bytes()))),
                (b'c', Ok(v)) => assert_eq!(v, None),
                (b'b', Err(Error::Io { path, .. })) => {
                    assert!(path.ends_with(&b_table), "{}", path.display());
                }
                (_, r) => panic!("{k}: unexpected {r:?} (async_io={async_io})"),
            }
        }
        assert_eq!(in_flight_reads(), 0);
    }
    fs.fault_reads_of(&b_table, None);
    let got = db.multi_get(
        &ReadOptions {
            async_io: true,
            ..ReadOptions::default()
        },
        &keys,
    );
    for (k, r) in keys.iter().zip(got) {
        assert_eq!(r.expect("healed"), db.get(k).expect("get"));
    }
}

#[test]
fn a_panicking_lookup_with_reads_in_flight_leaves_none_in_flight() {
    let dir = fast_tempdir();
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    let (db, b_table) = two_tables(dir.path(), &fs);
    fs.fault_reads_of(&b_table, Some(ReadFault::Panic));
    // `a` lookups first, so their reads are in flight when `b0100` panics.
    let mut keys: Vec<String> = (0..40).map(|i| format!("a{:04}", i * 12)).collect();
    keys.push("b0100".into());
    keys.extend((0..40).map(|i| format!("a{:04}", i * 12 + 5)));
    let opts = ReadOptions {
        async_io: true,
        async_queue_depth: 64,
        ..ReadOptions::default()
    };
    let result = panic::catch_unwind(AssertUnwindSafe(|| db.multi_get(&opts, &keys)));
    let payload = result.expect_err("the panic reaches the caller");
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(msg.contains("injected panic"), "{msg}");
    assert_eq!(in_flight_reads(), 0, "no read left in flight");
    if varve::testing::require_uring("reads in flight when a lookup panics") {
        assert!(
            fs.in_flight_at_last_read_fault() > 0,
            "other lookups had reads in flight when the panic fired"
        );
    }
    // Everything still works afterwards.
    fs.fault_reads_of(&b_table, None);
    for (k, r) in keys.iter().zip(db.multi_get(&opts, &keys)) {
        assert_eq!(r.expect("after the panic"), Some(value_for(k.as_bytes())));
    }
}

#[test]
fn threads_each_use_their_own_ring_at_once() {
    let dir = fast_tempdir();
    let db = Db::open(dir.path(), small_cache()).expect("open");
    let mut rng = Rng(77);
    let model = fill(&db, &mut rng, 2000);
    let db = Arc::new(db);
    let model = Arc::new(model);
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let (db, model) = (Arc::clone(&db), Arc::clone(&model));
            std::thread::spawn(move || {
                let mut rng = Rng(1000 + t);
                let opts = ReadOptions {
                    async_io: true,
                    async_queue_depth: 16,
                    ..ReadOptions::default()
                };
                for _ in 0..20 {
                    let keys: Vec<Vec<u8>> = (0..64).map(|_| key(rng.below(2200))).collect();
                    for (k, r) in keys.iter().zip(db.multi_get(&opts, &keys)) {
                        assert_eq!(r.expect("multi_get"), model.get(k).cloned(), "{k:?}");
                    }
                }
                assert_eq!(in_flight_reads(), 0);
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
}

#[test]
fn cached_and_uncached_keys_of_one_batch_agree_with_get() {
    // A cache large enough to hold everything: keys warmed by `get` are
    // answered by the in-memory pass (several levels without bloom
    // filters, so many keys move on from a table holding another key's
    // entry), the others by the per-key lookup; duplicates and absent keys
    // in the same batch; a snapshot older than part of the data.
    let dir = fast_tempdir();
    let options = Options {
        cache_size: 64 << 20,
        bloom_bits_per_key: 0,
        ..tiny_lsm_options()
    };
    let db = Db::open(dir.path(), options).expect("open");
    let mut rng = Rng(0xb10c);
    let n = 3000;
    let model = fill(&db, &mut rng, n);
    db.flush().expect("flush");
    let snap = db.snapshot();
    let old = model.clone();
    for i in 0..n / 10 {
        db.delete(key(i * 10)).expect("delete");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("compactions");
    let mut model = model;
    for i in 0..n / 10 {
        model.remove(&key(i * 10));
    }
    let mut keys: Vec<Vec<u8>> = (0..400).map(|_| key(rng.below(n + n / 10))).collect();
    keys.extend_from_within(..50);
    keys.push(b"absent".to_vec());
    // Round 0 is cold (an async batch's probe finds its first keys
    // uncached and lets the fibers plan every key), round 3 fully warm (the
    // in-memory pass answers the whole batch), rounds 1 and 2 half warm.
    for (round, warm_step) in [(0, 0), (1, 2), (2, 2), (3, 1)] {
        let warm = warm_step > 0;
        if warm {
            for k in keys.iter().step_by(warm_step) {
                assert_eq!(db.get(k).expect("get"), model.get(k).cloned());
            }
        }
        let hits_before = db.stats().block_cache_hits;
        for async_io in [false, true] {
            let opts = ReadOptions {
                async_io,
                ..ReadOptions::default()
            };
            for (k, r) in keys.iter().zip(db.multi_get(&opts, &keys)) {
                assert_eq!(
                    r.expect("multi_get"),
                    model.get(k).cloned(),
                    "{k:?} round {round}"
                );
            }
            let at = ReadOptions {
                async_io,
                ..ReadOptions::at(&snap)
            };
            for (k, r) in keys.iter().zip(db.multi_get(&at, &keys)) {
                assert_eq!(
                    r.expect("multi_get"),
                    old.get(k).cloned(),
                    "{k:?} at snapshot"
                );
            }
        }
        if warm {
            assert!(db.stats().block_cache_hits > hits_before);
        }
    }
    drop(snap);
    db.close().expect("close");
}
