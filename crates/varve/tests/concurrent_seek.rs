//! Concurrent seek positioning (`ReadOptions::concurrent_seeks`): an
//! iterator whose sources are positioned on fibers (reads through io_uring)
//! sees exactly what one positioned one source after another sees — every
//! kind of seek, followed by steps both ways, bounded and not, with and
//! without a block cache, buffered and O_DIRECT — and so does the fallback
//! without io_uring (`VARVE_IO=sync`, checked in a child process).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{Rng, fast_tempdir};
use varve::{Db, DbIterator, Options, ReadOptions};

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A tiny-LSM database over several levels and L0 files, with overwrites
/// and deletes, and its model.
fn multi_level_db(dir: &Path, opts: Options) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>) {
    common::multi_level_db(dir, opts, 0xc0c0_5eed, false)
}

fn steps(it: &mut DbIterator, forward: bool, max: usize) -> Entries {
    let mut out = Vec::new();
    while it.valid() && out.len() < max {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if forward {
            it.move_next();
        } else {
            it.move_prev();
        }
    }
    it.status().expect("iterator status");
    out
}

/// Seeks of every kind, each followed by steps forward or backward.
fn workload(db: &Db, base: &ReadOptions) -> Vec<Entries> {
    let mut out = Vec::new();
    let mut it = db.iter_opt(base);
    it.seek_to_first();
    out.push(steps(&mut it, true, usize::MAX));
    it.seek_to_last();
    out.push(steps(&mut it, false, usize::MAX));
    let mut rng = Rng(31);
    for _ in 0..60 {
        let k = key(rng.below(6100));
        let n = 1 + rng.below(200) as usize;
        if rng.below(2) == 0 {
            it.seek(&k);
            out.push(steps(&mut it, rng.below(3) != 0, n));
        } else {
            it.seek_for_prev(&k);
            out.push(steps(&mut it, rng.below(3) == 0, n));
        }
    }
    for _ in 0..10 {
        let a = rng.below(5000);
        let b = a + 1 + rng.below(1500);
        let opts = ReadOptions {
            iterate_lower_bound: Some(key(a)),
            iterate_upper_bound: Some(key(b)),
            ..base.clone()
        };
        let mut it = db.iter_opt(&opts);
        it.seek_to_first();
        out.push(steps(&mut it, true, usize::MAX));
        it.seek_to_last();
        out.push(steps(&mut it, false, usize::MAX));
    }
    out
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for readahead_size in [0, 2 << 20] {
        let plain = ReadOptions {
            concurrent_seeks: false,
            readahead_size,
            ..ReadOptions::default()
        };
        let concurrent = ReadOptions {
            concurrent_seeks: true,
            ..plain.clone()
        };
        let want = workload(db, &plain);
        let all: Entries = model.clone().into_iter().collect();
        assert_eq!(want[0], all, "plain scan matches the model");
        assert!(
            workload(db, &concurrent) == want,
            "concurrent seeks differ (readahead {readahead_size})"
        );
    }
    assert_eq!(varve::testing::in_flight_reads(), 0);
}

#[test]
fn concurrent_seeks_match_plain_positioning() {
    let expect_uring = std::env::var("VARVE_EXPECT_IO_URING").ok();
    if let Some(v) = &expect_uring {
        assert_eq!(varve::io_uring_available(), v == "1");
    }
    for cache_size in [0, 256 << 10] {
        let dir = fast_tempdir();
        let opts = Options {
            cache_size,
            ..common::tiny_lsm_options()
        };
        let (db, model) = multi_level_db(dir.path(), opts);
        check(&db, &model);
    }
}

#[test]
fn concurrent_seeks_match_plain_positioning_direct() {
    // O_DIRECT needs a real file system: the temp dir, not /dev/shm.
    let dir = tempfile::tempdir().expect("tempdir");
    let probe = dir.path().join("probe");
    std::fs::write(&probe, [0u8; 4096]).expect("probe");
    let direct_ok = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&probe)
            .is_ok()
    };
    if !direct_ok {
        varve::testing::skip_or_fail(
            "the O_DIRECT seek test",
            "O_DIRECT is refused under the temp dir",
        );
        return;
    }
    let opts = Options {
        cache_size: 0,
        use_direct_reads: true,
        ..common::tiny_lsm_options()
    };
    let (db, model) = multi_level_db(dir.path(), opts);
    check(&db, &model);
}

#[test]
fn concurrent_seeks_match_with_io_uring_forced_off() {
    // The probe runs once per process: run the equality test in a child
    // process with `VARVE_IO=sync`, and check the child saw io_uring off.
    common::run_test_in_child(
        "concurrent_seeks_match_plain_positioning",
        &[("VARVE_IO", "sync"), ("VARVE_EXPECT_IO_URING", "0")],
    );
}
