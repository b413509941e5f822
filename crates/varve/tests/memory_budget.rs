//! `Options::memory_budget` (`docs/memory.md`): with many iterators open,
//! `multi_get` batches and writes running at once, every part of the
//! engine stays within its share of the budget, scans that find no room
//! for read-ahead still see exactly the data, and the budget's parts are
//! reported by `stats`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use varve::{Db, MemoryStats, Options, ReadOptions};

const BUDGET: usize = 64 << 20;
const KEYS: u32 = 20_000;
const BLOB_KEYS: u32 = 1_000;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

/// 400 bytes: entries too large for the pinned blob-pointer tables, so
/// scans read their tables through read-ahead.
fn value(i: u32) -> Vec<u8> {
    let mut v = format!("v{i:08}").into_bytes();
    v.resize(400, (i % 251) as u8);
    v
}

fn blob_key(i: u32) -> Vec<u8> {
    format!("m{i:06}").into_bytes()
}

fn blob_value(i: u32) -> Vec<u8> {
    vec![(i % 253) as u8; 8192]
}

/// Every part within its limit, and the parts within the budget.
fn check(m: &MemoryStats, at: &str) {
    assert_eq!(m.budget, BUDGET as u64, "{at}");
    let parts = [
        ("memtables", m.memtables, m.memtables_limit),
        ("block cache", m.block_cache, m.block_cache_limit),
        (
            "pinned blob tables",
            m.pinned_blob_tables,
            m.pinned_blob_tables_limit,
        ),
        ("table metadata", m.table_metadata, m.table_metadata_limit),
        ("read-ahead", m.readahead, m.readahead_limit),
        ("shared scans", m.shared_scan, m.shared_scan_limit),
        ("blob staging", m.blob_staging, m.blob_staging_limit),
    ];
    let mut limits = m.reserve;
    for (name, used, limit) in parts {
        assert!(limit > 0, "{at}: {name} has no limit: {m:?}");
        assert!(used <= limit, "{at}: {name} holds {used} of {limit}: {m:?}");
        limits += limit;
    }
    assert!(m.readahead_peak <= m.readahead_limit, "{at}: {m:?}");
    assert!(
        limits <= m.budget,
        "{at}: the limits add up to {limits}: {m:?}"
    );
    assert!(m.used() + m.reserve <= m.budget, "{at}: {m:?}");
}

#[test]
fn the_budget_holds_under_iterators_multi_get_and_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        memory_budget: Some(BUDGET),
        // Ignored: the budget sets them.
        write_buffer_size: 512 << 20,
        cache_size: 1 << 30,
        target_file_size: 1 << 20,
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), opts).expect("open"));
    let planned = db.stats().memory;
    check(&planned, "after open");
    assert!(planned.memtables_limit < 64 << 20);
    assert!(planned.block_cache_limit < 64 << 20);
    for i in 0..KEYS {
        db.put(key(i), value(i)).expect("put");
    }
    for i in 0..BLOB_KEYS {
        db.put(blob_key(i), blob_value(i)).expect("put blob");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("compactions");
    check(&db.stats().memory, "after the fill");

    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        // 8 threads x 16 iterators open at once, stepped in turns, each
        // scanning all the `k` keys, twice.
        let mut scanners = Vec::new();
        for t in 0..8u32 {
            let db = Arc::clone(&db);
            scanners.push(s.spawn(move || {
                let ro = ReadOptions {
                    iterate_upper_bound: Some(b"l".to_vec()),
                    ..ReadOptions::default()
                };
                for _pass in 0..2 {
                    let mut its: Vec<_> = (0..16).map(|_| db.iter_opt(&ro)).collect();
                    let mut next = vec![0u32; its.len()];
                    for it in &mut its {
                        it.seek(b"k");
                    }
                    let mut live = its.len();
                    while live > 0 {
                        live = 0;
                        for (j, it) in its.iter_mut().enumerate() {
                            // A few steps each, so all stay open together.
                            for _ in 0..(7 + t as usize + j) {
                                if !it.valid() {
                                    break;
                                }
                                let i = next[j];
                                assert_eq!(it.key(), &key(i)[..], "thread {t} iterator {j}");
                                assert_eq!(it.value(), &value(i)[..], "thread {t} iterator {j}");
                                next[j] += 1;
                                it.move_next();
                            }
                            if it.valid() {
                                live += 1;
                            }
                        }
                    }
                    for (j, it) in its.iter().enumerate() {
                        it.status().expect("scan");
                        assert_eq!(next[j], KEYS, "thread {t} iterator {j} saw every key");
                    }
                }
            }));
        }
        // multi_get batches on the fibers, blob values and table values.
        for t in 0..2u32 {
            let db = Arc::clone(&db);
            let stop = &stop;
            s.spawn(move || {
                let ro = ReadOptions {
                    async_io: true,
                    ..ReadOptions::default()
                };
                let mut round = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let ids: Vec<u32> = (0..64)
                        .map(|n| (round * 97 + n * 31 + t) % BLOB_KEYS)
                        .collect();
                    let keys: Vec<Vec<u8>> = ids.iter().map(|&i| blob_key(i)).collect();
                    for (r, &i) in db.multi_get(&ro, &keys).into_iter().zip(&ids) {
                        assert_eq!(r.expect("multi_get"), Some(blob_value(i)));
                    }
                    let keys: Vec<Vec<u8>> = ids.iter().map(|&i| key(i * 7)).collect();
                    for (r, &i) in db.multi_get(&ro, &keys).into_iter().zip(&ids) {
                        assert_eq!(r.expect("multi_get"), Some(value(i * 7)));
                    }
                    round += 1;
                }
            });
        }
        // A writer, into keys the scans do not cover.
        {
            let db = Arc::clone(&db);
            let stop = &stop;
            s.spawn(move || {
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let v = if i.is_multiple_of(2) {
                        vec![1u8; 8192]
                    } else {
                        vec![2u8; 1000]
                    };
                    db.put(format!("w{i:08}"), v).expect("write");
                    i += 1;
                }
            });
        }
        // The parts, sampled while all of it runs.
        {
            let db = Arc::clone(&db);
            let stop = &stop;
            s.spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    check(&db.stats().memory, &format!("sample {n}"));
                    n += 1;
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                assert!(n > 0);
            });
        }
        for h in scanners {
            h.join().expect("scanner");
        }
        stop.store(true, Ordering::Relaxed);
    });
    let m = db.stats().memory;
    check(&m, "at the end");
    // The read-ahead part was too small for 128 scans: some read ahead
    // less or block by block, and still saw every key.
    assert!(m.readahead_refused > 0, "{m:?}");
    assert!(m.readahead_peak > 0, "{m:?}");
    let log = std::fs::read_to_string(dir.path().join("LOG")).expect("info log");
    assert!(log.contains("memory budget 64.0 MiB: memtables"), "{log}");
    let report = db.stats().to_string();
    eprintln!("{report}");
    assert!(report.contains("of a 64.0 MiB budget"), "{report}");
}

#[test]
fn without_a_budget_the_parts_are_reported_with_their_own_limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    for i in 0..1000 {
        db.put(key(i), value(i)).expect("put");
    }
    db.flush().expect("flush");
    assert_eq!(db.iter().count(), 1000);
    let m = db.stats().memory;
    let o = Options::default();
    assert_eq!(m.budget, 0);
    assert_eq!(
        m.memtables_limit,
        (o.write_buffer_size * (o.max_immutable_memtables + 1)) as u64
    );
    assert_eq!(m.block_cache_limit, o.cache_size as u64);
    assert_eq!((m.readahead, m.readahead_limit), (0, 0), "not tracked");
    assert!(m.table_metadata > 0, "the flushed table is open");
}

#[test]
fn a_budget_too_small_is_refused_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        memory_budget: Some(256 << 20),
        blob_write_lanes: 64,
        ..Options::default()
    };
    let e = Db::open(dir.path(), opts).expect_err("64 lanes need 258 MiB of staging");
    assert!(matches!(e, varve::Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("blob_write_lanes"), "{e}");
}

/// The blob-staging part is shared by the lanes of every keyspace: with
/// one lane's worth of room, the default keyspace's open file takes it, a
/// second keyspace's large values stay inline (counted as refused), every
/// value reads back, and the staging never passes its part; once the
/// default keyspace's file is sealed (at close), the other keyspace gets
/// blob files.
#[test]
fn keyspaces_share_the_blob_staging_part() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = || Options {
        memory_budget: Some(BUDGET),
        blob_write_lanes: 1,
        min_blob_size: Some(4096),
        ..Options::default()
    };
    let big = |i: u32| vec![(i % 251) as u8; 5000];
    let open = || {
        let db = Db::open(dir.path(), opts()).expect("open");
        let ks = db
            .keyspace("other", varve::KeyspaceOptions::default())
            .expect("keyspace");
        (db, ks)
    };
    let (db, ks) = open();
    db.put(b"d0", big(0)).expect("put default");
    let m = db.stats().memory;
    let part = m.blob_staging_limit;
    assert!(part > 0 && m.blob_staging == part, "one lane open: {m:?}");
    for i in 0..20u32 {
        ks.put(format!("o{i:03}").as_bytes(), big(i))
            .expect("put other");
    }
    let m = db.stats().memory;
    assert!(m.blob_staging <= part, "{m:?}");
    assert!(
        m.blob_staging_refused >= 1,
        "the other keyspace found no room: {m:?}"
    );
    assert_eq!(
        db.stats().blob_values_written,
        1,
        "only the default keyspace's value"
    );
    for i in 0..20u32 {
        let got = ks.get(format!("o{i:03}").as_bytes()).expect("get");
        assert_eq!(got, Some(big(i)), "inline value {i}");
    }
    drop(ks);
    db.close().expect("close");
    // Reopened: no lane has a file yet, so the other keyspace's first
    // large value takes the room.
    let (db, ks) = open();
    ks.put(b"o-late", big(7)).expect("put");
    let m = db.stats().memory;
    assert_eq!(m.blob_staging, part, "{m:?}");
    assert_eq!(db.stats().blob_values_written, 1, "now in a blob file");
    assert_eq!(db.get(b"d0").expect("get"), Some(big(0)));
    for i in 0..20u32 {
        assert_eq!(
            ks.get(format!("o{i:03}").as_bytes()).expect("get"),
            Some(big(i))
        );
    }
    assert_eq!(ks.get(b"o-late").expect("get"), Some(big(7)));
}

/// Shared passes reserve their segments from the read-ahead part: with
/// the smallest budget (a read-ahead part of 768 KiB, fewer than ten
/// segments of 1,000-byte values), 16 threads scanning the whole database
/// twice share passes until the part is full, then the iterators that
/// find no room go on alone; the part is never passed and every scan sees
/// every key, once, in order.
#[test]
fn shared_passes_stay_within_the_read_ahead_part() {
    const N: u32 = 20_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        memory_budget: Some(16 << 20),
        min_blob_size: None,
        target_file_size: 1 << 20,
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), opts).expect("open"));
    let big = |i: u32| {
        let mut v = value(i);
        v.resize(1000, (i % 249) as u8);
        v
    };
    for i in 0..N {
        db.put(key(i), big(i)).expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("compactions");
    let limit = db.stats().memory.readahead_limit;
    assert!(limit > 0 && limit < 1 << 20, "{limit}");
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let scanners: Vec<_> = (0..16)
            .map(|t| {
                let db = Arc::clone(&db);
                s.spawn(move || {
                    for pass in 0..2 {
                        let mut i = 0u32;
                        for kv in db.iter() {
                            let (k, v) = kv.expect("scan");
                            assert_eq!(k, key(i), "thread {t} pass {pass}");
                            assert_eq!(v, big(i), "thread {t} pass {pass}");
                            i += 1;
                        }
                        assert_eq!(i, N, "thread {t} pass {pass} saw every key");
                    }
                })
            })
            .collect();
        let db = Arc::clone(&db);
        let stop = &stop;
        let sampler = s.spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let st = db.stats();
                let m = &st.memory;
                assert!(m.readahead <= limit && m.readahead_peak <= limit, "{m:?}");
                assert!(st.shared_pass_bytes <= limit, "{st}");
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            n
        });
        for h in scanners {
            h.join().expect("scanner");
        }
        stop.store(true, Ordering::Relaxed);
        assert!(sampler.join().expect("sampler") > 0);
    });
    let st = db.stats();
    eprintln!("{st}");
    assert!(st.shared_passes > 0, "passes were shared: {st}");
    assert!(
        st.shared_pass_refused > 0,
        "the part was too small for the window: {st}"
    );
    assert!(st.memory.readahead_peak <= limit);
    assert_eq!(st.shared_pass_bytes, 0, "no pass left");
}
