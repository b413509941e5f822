//! `Options::ttl` and `Options::compaction_filter`: expired entries are
//! hidden from every read path and dropped by compaction (whole tables
//! without a rewrite), across reopens; a compaction filter removes or
//! changes values only where no snapshot can tell, never bringing back an
//! older version, and sees values kept in blob files.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use varve::{CompactionFilter, Db, FilterDecision, KeyRange, Options, ReadOptions};

fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// Every read path finds exactly `want` among `keys` (and nothing else).
fn check_only(db: &Db, ro: &ReadOptions, keys: &[Vec<u8>], want: &[Vec<u8>], what: &str) {
    for k in keys {
        assert_eq!(
            db.get_opt(k, ro).expect("get").is_some(),
            want.contains(k),
            "{what}: get {}",
            String::from_utf8_lossy(k)
        );
    }
    for async_io in [false, true] {
        let mut ro = ro.clone();
        ro.async_io = async_io;
        for (k, r) in keys.iter().zip(db.multi_get(&ro, keys)) {
            assert_eq!(
                r.expect("multi_get").is_some(),
                want.contains(k),
                "{what}: multi_get"
            );
        }
    }
    let fwd: Vec<Vec<u8>> = db.iter_opt(ro).map(|r| r.expect("iter").0).collect();
    assert_eq!(fwd, want, "{what}: forward scan");
    let mut back: Vec<Vec<u8>> = db.iter_opt(ro).rev().map(|r| r.expect("iter").0).collect();
    back.reverse();
    assert_eq!(back, want, "{what}: backward scan");
    let n = db.par_count(ro, &KeyRange::all(), 2).expect("par_count");
    assert_eq!(n, want.len() as u64, "{what}: par_count");
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not after {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn expired_entries_vanish_from_every_read_and_from_the_tables() {
    let dir = common::fast_tempdir();
    let opts = Options {
        ttl: Some(Duration::from_secs(2)),
        ..common::tiny_lsm_options()
    };
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let old: Vec<Vec<u8>> = (0..300).map(key).collect();
    for k in &old {
        db.put(k, b"old").expect("put");
    }
    db.flush().expect("flush");
    let snap = db.snapshot();
    // Right after the write nothing is expired (expiry is never early).
    check_only(&db, &ReadOptions::default(), &old, &old, "fresh");
    wait_until("the old keys expire", Duration::from_secs(20), || {
        db.get(&old[0]).expect("get").is_none()
    });
    let new: Vec<Vec<u8>> = (300..320).map(key).collect();
    for k in &new {
        db.put(k, b"new").expect("put");
    }
    let all: Vec<Vec<u8>> = old.iter().chain(&new).cloned().collect();
    check_only(&db, &ReadOptions::default(), &all, &new, "expired");
    // A snapshot does not bring expired entries back.
    check_only(
        &db,
        &ReadOptions::at(&snap),
        &all,
        &[],
        "expired, at an older snapshot",
    );
    drop(snap);

    // The background thread deletes the old keys' tables whole, without
    // a compaction.
    wait_until(
        "the expired tables are deleted",
        Duration::from_secs(20),
        || db.debug().table_entries() == 0,
    );
    assert!(db.stats().ttl_tables_dropped > 0, "{}", db.stats());
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    check_only(&db, &ReadOptions::default(), &all, &new, "after compaction");
    db.close().expect("close");

    // The samples are in the manifest: after a reopen the old keys stay
    // expired at once.
    let db = Db::open(dir.path(), opts).expect("reopen");
    check_only(&db, &ReadOptions::default(), &all, &new, "reopened");
}

#[test]
fn a_ttl_under_a_millisecond_is_refused() {
    let dir = common::fast_tempdir();
    let err = Db::open(
        dir.path(),
        Options {
            ttl: Some(Duration::from_micros(500)),
            ..Options::default()
        },
    )
    .expect_err("sub-millisecond ttl");
    assert!(matches!(err, varve::Error::InvalidArgument(_)), "{err:?}");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let err = db
        .keyspace(
            "k",
            varve::KeyspaceOptions {
                ttl: Some(Duration::ZERO),
                ..varve::KeyspaceOptions::default()
            },
        )
        .expect_err("zero keyspace ttl");
    assert!(matches!(err, varve::Error::InvalidArgument(_)), "{err:?}");
}

/// Removes `tmp:` values, upper-cases `up:` values, counts its calls.
struct Filter {
    calls: std::sync::atomic::AtomicU64,
}

impl CompactionFilter for Filter {
    fn name(&self) -> &str {
        "test-filter"
    }
    fn filter(&self, _key: &[u8], value: &[u8]) -> FilterDecision {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if value.starts_with(b"tmp:") {
            FilterDecision::Remove
        } else if let Some(rest) = value.strip_prefix(b"up:") {
            FilterDecision::ChangeValue(rest.to_ascii_uppercase())
        } else {
            FilterDecision::Keep
        }
    }
}

#[test]
fn a_compaction_filter_is_snapshot_safe_and_never_resurrects_an_older_value() {
    let dir = common::fast_tempdir();
    let filter = Arc::new(Filter {
        calls: Default::default(),
    });
    let opts = Options {
        compaction_filter: Some(filter.clone()),
        min_blob_size: Some(1024),
        ..common::tiny_lsm_options()
    };
    let db = Db::open(dir.path(), opts).expect("open");
    let big_tmp = [b"tmp:".as_slice(), &[b'x'; 3000]].concat();
    // `shadowed` has an old value below a removable one: removing the new
    // one must not bring the old one back.
    db.put(b"shadowed", b"old value").expect("put");
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    // `guarded` is written before a snapshot: the snapshot sees it, so the
    // filter must leave it alone while the snapshot lives.
    db.put(b"guarded", b"tmp:guarded").expect("put");
    let snap = db.snapshot();
    db.put(b"shadowed", b"tmp:gone").expect("put");
    db.put(b"upper", b"up:abc").expect("put");
    db.put(b"plain", b"stays").expect("put");
    db.put(b"blob", &big_tmp).expect("put"); // in a blob file
    db.compact_range(None, None).expect("compact");
    assert!(filter.calls.load(std::sync::atomic::Ordering::Relaxed) > 0);
    let latest = ReadOptions::default();
    assert_eq!(
        db.get(b"shadowed").expect("get"),
        None,
        "no older value comes back"
    );
    assert_eq!(db.get(b"upper").expect("get"), Some(b"ABC".to_vec()));
    assert_eq!(db.get(b"plain").expect("get"), Some(b"stays".to_vec()));
    assert_eq!(
        db.get(b"blob").expect("get"),
        None,
        "the filter saw the blob value"
    );
    assert_eq!(
        db.get_opt(b"guarded", &ReadOptions::at(&snap))
            .expect("get"),
        Some(b"tmp:guarded".to_vec()),
        "the snapshot's view is unchanged"
    );
    assert_eq!(
        db.get_opt(b"shadowed", &ReadOptions::at(&snap))
            .expect("get"),
        Some(b"old value".to_vec()),
        "the snapshot still sees the version it saw"
    );
    assert_eq!(
        db.get(b"guarded").expect("get"),
        Some(b"tmp:guarded".to_vec()),
        "not filtered while a snapshot sees it"
    );
    let keys: Vec<Vec<u8>> = db.iter_opt(&latest).map(|r| r.expect("iter").0).collect();
    assert_eq!(
        keys,
        [b"guarded".to_vec(), b"plain".to_vec(), b"upper".to_vec()]
    );
    drop(snap);
    db.compact_range(None, None).expect("compact");
    assert_eq!(
        db.get(b"guarded").expect("get"),
        None,
        "filtered once no snapshot sees it"
    );
    db.close().expect("close");
}
