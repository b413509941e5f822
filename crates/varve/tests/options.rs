//! Options as types: the WAL writer and compression enums, the IO engine,
//! a block cache and a reader pool shared by databases (whose threads stop
//! when the last database using them is gone), `sync` with `disable_wal`
//! refused, `Error::ReadOnly`, and `repair` / `destroy` going through
//! `Options::fs`.

mod common;

use std::sync::Arc;

use varve::fs::PosixFs;
use varve::testing::FaultInjectingFs;
use varve::{
    BlockCache, Compression, Db, Error, IoEngine, Options, ReadOptions, ReaderPool, ScanPrefetch,
    WalWriter, WriteOptions,
};

fn fill(db: &Db, n: u32) {
    for i in 0..n {
        let k = format!("k{i:06}");
        db.put(&k, common::value_for(k.as_bytes())).expect("put");
    }
}

#[test]
fn sync_with_disable_wal_is_refused() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let e = db
        .put_opt(
            b"k",
            b"v",
            &WriteOptions {
                sync: true,
                disable_wal: true,
            },
        )
        .expect_err("nothing to sync");
    assert!(
        matches!(e, Error::InvalidArgument(ref m) if m.contains("disable_wal")),
        "{e}"
    );
    assert_eq!(
        db.get(b"k").expect("get"),
        None,
        "a refused write is not applied"
    );
}

#[test]
fn every_compression_and_wal_writer_round_trips() {
    for compression in [Compression::None, Compression::Lz4] {
        for wal_writer in [
            WalWriter::Mapped,
            WalWriter::MappedZeroFilled,
            WalWriter::IoUring,
            WalWriter::Plain,
        ] {
            let dir = common::fast_tempdir();
            let opts = || Options {
                compression,
                wal_writer,
                write_buffer_size: 128 << 10,
                ..Options::default()
            };
            let db = Db::open(dir.path(), opts()).expect("open");
            fill(&db, 2000);
            db.flush().expect("flush");
            fill(&db, 100);
            db.close().expect("close");
            let db = Db::open(dir.path(), opts()).expect("reopen");
            assert_eq!(db.iter().count(), 2000, "{compression:?} {wal_writer:?}");
        }
    }
}

/// `IoEngine::Sync` gives the same answers with no io_uring; it cannot be
/// combined with the io_uring WAL writer.
#[test]
fn the_sync_io_engine_reads_the_same_and_excludes_the_uring_wal() {
    let dir = common::fast_tempdir();
    let e = Db::open(
        dir.path(),
        Options {
            io_engine: IoEngine::Sync,
            wal_writer: WalWriter::IoUring,
            ..Options::default()
        },
    )
    .expect_err("conflicting options");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let opts = Options {
        io_engine: IoEngine::Sync,
        cache_size: 0,
        ..common::tiny_lsm_options()
    };
    let db = Db::open(dir.path(), opts).expect("open");
    fill(&db, 3000);
    db.flush().expect("flush");
    let keys: Vec<String> = (0..3000).step_by(7).map(|i| format!("k{i:06}")).collect();
    let ro = ReadOptions {
        async_io: true,
        ..ReadOptions::default()
    };
    for (k, got) in keys.iter().zip(db.multi_get(&ro, &keys)) {
        assert_eq!(
            got.expect("multi_get"),
            Some(common::value_for(k.as_bytes()))
        );
    }
    assert_eq!(db.iter().count(), 3000);
}

/// Two databases share one block cache: what each reads is charged to it,
/// and neither is ever answered with the other's blocks.
#[test]
fn a_block_cache_is_shared_by_databases() {
    let cache = BlockCache::new(8 << 20);
    let dirs = [common::fast_tempdir(), common::fast_tempdir()];
    let dbs: Vec<Db> = dirs
        .iter()
        .map(|d| {
            Db::open(
                d.path(),
                Options {
                    block_cache: Some(Arc::clone(&cache)),
                    ..Options::default()
                },
            )
            .expect("open")
        })
        .collect();
    // The same keys in both, with different values; their table files get
    // the same numbers.
    for (d, db) in dbs.iter().enumerate() {
        for i in 0..2000u32 {
            db.put(format!("k{i:06}"), format!("db{d}-{i}"))
                .expect("put");
        }
        db.flush().expect("flush");
    }
    assert_eq!(cache.usage(), 0);
    assert_eq!(
        dbs[0].get(b"k000010").expect("get"),
        Some(b"db0-10".to_vec())
    );
    let after_first = cache.usage();
    assert!(
        after_first > 0,
        "the first database's block is in the shared cache"
    );
    // The second database's table has the same number: it must not be
    // answered from the first's block.
    assert_eq!(
        dbs[1].get(b"k000010").expect("get"),
        Some(b"db1-10".to_vec())
    );
    assert!(cache.usage() > after_first, "so is the second's");
    for i in (0..2000u32).step_by(97) {
        for (d, db) in dbs.iter().enumerate() {
            let want = format!("db{d}-{i}").into_bytes();
            assert_eq!(db.get(format!("k{i:06}")).expect("get"), Some(want));
        }
    }
}

/// Polls `reader_threads()` for up to 10 s until `want` holds; a spawned
/// thread names itself only once it runs, which a loaded machine delays.
fn reader_threads_become(want: impl Fn(usize) -> bool) -> usize {
    let start = std::time::Instant::now();
    loop {
        let n = reader_threads();
        if want(n) || start.elapsed() > std::time::Duration::from_secs(10) {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn reader_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("tasks")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim() == "varve-readahead")
        .count()
}

/// A long scan that prefetches (the pool's threads start on it).
fn long_scan(db: &Db) {
    let ro = ReadOptions {
        readahead_size: 256 << 10,
        scan_prefetch: ScanPrefetch::Always,
        fill_cache: false,
        ..ReadOptions::default()
    };
    assert_eq!(common::count_keys(db, &ro), 20_000);
}

/// Runs in a child process (thread counts are per process): a database's
/// own reader pool starts on its first prefetching scan and its threads
/// stop when the database is closed; a pool shared by two databases stops
/// only when both are closed and the caller's handle is dropped.
#[test]
fn reader_pool_threads_stop_when_the_last_database_closes() {
    if std::env::var("VARVE_POOL_CHILD").is_err() {
        common::run_test_in_child(
            "reader_pool_threads_stop_when_the_last_database_closes",
            &[("VARVE_POOL_CHILD", "1")],
        );
        return;
    }
    let dir = common::fast_tempdir();
    let big = Options {
        cache_size: 0,
        ..Options::default()
    };
    let db = Db::open(dir.path(), big.clone()).expect("open");
    for i in 0..20_000u32 {
        db.put(format!("k{i:06}"), [7u8; 200]).expect("put");
    }
    db.compact_range(None, None).expect("compact");
    assert_eq!(reader_threads(), 0, "no thread before a scan");
    long_scan(&db);
    assert!(
        reader_threads_become(|n| n > 0) > 0,
        "the scan started the pool"
    );
    db.close().expect("close");
    assert_eq!(reader_threads(), 0, "the database's own pool stopped");

    let pool = ReaderPool::new(3);
    let shared = || Options {
        reader_pool: Some(Arc::clone(&pool)),
        ..big.clone()
    };
    let a = Db::open(dir.path(), shared()).expect("open a");
    let dir_b = common::fast_tempdir();
    let b = Db::open(dir_b.path(), shared()).expect("open b");
    long_scan(&a);
    assert_eq!(
        reader_threads_become(|n| n == 3),
        3,
        "the shared pool is sized by its creator"
    );
    drop(b);
    a.close().expect("close a");
    assert_eq!(reader_threads(), 3, "the caller still holds the pool");
    drop(pool);
    assert_eq!(reader_threads(), 0, "the last holder stopped it");
}

#[test]
fn repair_and_destroy_go_through_options_fs() {
    let dir = common::fast_tempdir();
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    let opts = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    fill(&db, 500);
    db.close().expect("close");
    // A file system that refuses everything makes both fail: they use it.
    fs.crash();
    let e = Db::repair(dir.path(), &opts).expect_err("the crashed fs refuses");
    assert!(!matches!(e, Error::NotFound(_)), "{e}");
    assert!(Db::destroy(dir.path(), &opts).is_err());
    assert!(dir.path().join("CURRENT").exists(), "nothing was destroyed");
    // Through a working file system both succeed.
    let opts = Options::default();
    let report = Db::repair(dir.path(), &opts).expect("repair");
    assert_eq!(report.entries, 500);
    Db::destroy(dir.path(), &opts).expect("destroy");
    assert!(!dir.path().join("CURRENT").exists());
}
