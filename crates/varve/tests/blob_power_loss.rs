//! Simulated power loss with values in blob files: a writer puts with
//! `sync = true` (values on both sides of `min_blob_size`) until the
//! fault-injecting file system "loses power"; everything not fdatasync'ed
//! may be lost, wholly or in part. After recovery every synced,
//! acknowledged write must read back exactly (its blob value included).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use varve::fs::PosixFs;
use varve::testing::FaultInjectingFs;
use varve::{Db, Options, WriteOptions};

fn value(n: u64) -> Vec<u8> {
    let len = [4096usize, 100, 2000, 1023, 1024, 0][(n % 6) as usize];
    (0..len).map(|j| (n as usize * 7 + j) as u8).collect()
}

#[test]
fn power_loss_keeps_every_synced_blob_value() {
    let root = tempfile::tempdir().expect("tempdir");
    let mut rng = common::Rng(0x2545_f491_4f6c_dd1du64);
    let mut next = move || rng.next();
    let mut checked = 0usize;
    for round in 0..30u64 {
        let dir = root.path().join(format!("db-{round}"));
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let opts = Options {
            fs: Arc::new(fs.clone()),
            min_blob_size: Some(1024),
            write_buffer_size: 64 << 10,
            blob_file_size: 1 << 20,
            ..Options::default()
        };
        let db = Db::open(&dir, opts).expect("open");
        // Up to 100 ms of writes: every sync write also syncs the lanes,
        // and on a busy machine 30 ms left too few writes to mean much.
        let delay = Duration::from_micros(next() % 100_000);
        let acked = put_until_power_loss(db, &fs, delay, next(), |_| true);
        let db = Db::open(
            &dir,
            Options {
                fs: Arc::new(fs.clone()),
                ..Options::default()
            },
        )
        .unwrap_or_else(|e| panic!("recovery after power loss {round}: {e}"));
        for &n in &acked {
            let got = db
                .get(format!("key{n:06}"))
                .unwrap_or_else(|e| panic!("round {round}, key {n}: {e}"));
            assert_eq!(
                got,
                Some(value(n)),
                "round {round}: synced write {n} lost; recovery: {:?}; LOG:\n{}",
                db.debug().recovery_report().truncated,
                std::fs::read_to_string(dir.join("LOG")).unwrap_or_default()
            );
        }
        checked += acked.len();
        db.close().expect("close");
    }
    eprintln!("blob power loss: 30 power cuts, {checked} synced writes checked, 0 lost");
    assert!(checked > 100, "the writer got only {checked} writes in");
}

/// Power cuts while compactions relocate blob values and delete blob
/// files: a writer overwrites 150 keys with `sync = true` on a tiny tree,
/// so garbage collection runs all the time. After recovery every key holds
/// its newest synced value (or the one write in flight when power went).
#[test]
fn power_loss_during_blob_gc_keeps_every_synced_value() {
    let root = tempfile::tempdir().expect("tempdir");
    let mut rng = common::Rng(0x9d2c_5680_1b87_3a4fu64);
    let mut next = move || rng.next();
    let mut checked = 0usize;
    let mut relocated = 0u64;
    for round in 0..20u64 {
        let dir = root.path().join(format!("gc-{round}"));
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let opts = |fs: Arc<dyn varve::fs::FileSystem>| Options {
            fs,
            min_blob_size: Some(1024),
            write_buffer_size: 64 << 10,
            blob_file_size: 1 << 20,
            target_file_size: 8 << 10,
            max_bytes_for_level_base: 32 << 10,
            max_bytes_for_level_multiplier: 4,
            l0_compaction_trigger: 2,
            blob_garbage_collection_ratio: 0.2,
            blob_garbage_collection_force_threshold: 0.3,
            ..Options::default()
        };
        let db = Arc::new(Db::open(&dir, opts(Arc::new(fs.clone()))).expect("open"));
        // n of the newest acknowledged write, and the one in flight.
        let acked = Arc::new(Mutex::new(Vec::new()));
        let delay = Duration::from_millis(300 + next() % 400);
        std::thread::scope(|s| {
            let (writer_db, acked) = (Arc::clone(&db), Arc::clone(&acked));
            s.spawn(move || {
                let db = writer_db;
                let sync = WriteOptions {
                    sync: true,
                    ..WriteOptions::default()
                };
                for n in 0u64.. {
                    if db
                        .put_opt(format!("key{:03}", n % 150), value(n), &sync)
                        .is_err()
                    {
                        break; // the power is gone
                    }
                    acked.lock().expect("lock").push(n);
                }
            });
            std::thread::sleep(delay);
            // Until some garbage collection has run, cut only once one has
            // (or after 10 s): on a busy machine the first rounds' delays
            // may all end before compaction gets to collect, and the test
            // is about cuts during GC.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while relocated == 0
                && db.stats().blob_gc_bytes_relocated == 0
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            fs.crash();
        });
        relocated += db.stats().blob_gc_bytes_relocated;
        drop(Arc::into_inner(db).expect("sole owner"));
        fs.apply_power_loss(next()).expect("apply power loss");
        let db = Db::open(&dir, opts(Arc::new(fs.clone())))
            .unwrap_or_else(|e| panic!("recovery after power loss {round}: {e}"));
        let acked = acked.lock().expect("lock");
        let in_flight = acked.last().map_or(0, |n| n + 1);
        let mut newest = std::collections::BTreeMap::new();
        for &n in acked.iter() {
            newest.insert(n % 150, n);
        }
        for (&k, &n) in &newest {
            let got = db
                .get(format!("key{k:03}"))
                .unwrap_or_else(|e| panic!("round {round}, key {k}: {e}"))
                .unwrap_or_else(|| panic!("round {round}: key {k} lost"));
            assert!(
                got == value(n) || (in_flight % 150 == k && got == value(in_flight)),
                "round {round}: key {k} lost its synced write {n}"
            );
        }
        checked += acked.len();
        db.close().expect("close");
    }
    eprintln!(
        "blob power loss during GC: 20 power cuts, {checked} synced writes, \
         {relocated} bytes relocated before the cuts, 0 lost"
    );
    assert!(checked > 100, "the writer got only {checked} writes in");
    assert!(relocated > 0, "no garbage collection ran before a cut");
}

/// A flush makes every write it holds durable, `sync` or not: a writer puts
/// blob values without `sync`, flushes, and the power goes after more
/// unsynced writes. Every write before the flush reads back (it failed
/// before lanes were synced by the flush: the table survived, its values
/// did not).
#[test]
fn a_flush_makes_unsynced_blob_values_durable() {
    let root = tempfile::tempdir().expect("tempdir");
    for round in 0..10u64 {
        let dir = root.path().join(format!("flush-{round}"));
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let db = Db::open(
            &dir,
            Options {
                fs: Arc::new(fs.clone()),
                min_blob_size: Some(1024),
                write_buffer_size: 1 << 20,
                ..Options::default()
            },
        )
        .expect("open");
        let flushed = 200 + round * 37;
        for n in 0..flushed {
            db.put(format!("key{n:06}"), value(n)).expect("put");
        }
        db.flush().expect("flush");
        for n in flushed..flushed + 100 {
            db.put(format!("key{n:06}"), value(n)).expect("put");
        }
        fs.crash();
        drop(db);
        fs.apply_power_loss(round).expect("apply power loss");
        let db = Db::open(
            &dir,
            Options {
                fs: Arc::new(fs.clone()),
                ..Options::default()
            },
        )
        .expect("recover");
        for n in 0..flushed {
            assert_eq!(
                db.get(format!("key{n:06}")).expect("get"),
                Some(value(n)),
                "round {round}: flushed write {n} lost"
            );
        }
    }
}

/// Writes without `sync` (every 16th with it) until the power goes: a WAL
/// record may survive while the blob value it points to did not. Recovery
/// ends the replay at the first such record, so the database holds a
/// prefix of the writes: keys `0..m` with their values and nothing after,
/// every synced write inside the prefix, and no read or scan errs.
#[test]
fn power_loss_under_unsynced_blob_writes_recovers_a_prefix() {
    let root = tempfile::tempdir().expect("tempdir");
    let mut rng = common::Rng(0x9e37_79b9_7f4a_7c15u64);
    let mut next = move || rng.next();
    let mut cut = 0;
    for round in 0..30u64 {
        let dir = root.path().join(format!("prefix-{round}"));
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let opts = Options {
            fs: Arc::new(fs.clone()),
            min_blob_size: Some(1024),
            write_buffer_size: 4 << 20,
            ..Options::default()
        };
        let db = Db::open(&dir, opts).expect("open");
        let delay = Duration::from_micros(next() % 20_000);
        let synced = put_until_power_loss(db, &fs, delay, next(), |n| n % 16 == 15);
        let db = Db::open(
            &dir,
            Options {
                fs: Arc::new(fs.clone()),
                ..Options::default()
            },
        )
        .unwrap_or_else(|e| panic!("recovery after power loss {round}: {e}"));
        if db
            .debug()
            .recovery_report()
            .truncated
            .iter()
            .any(|t| t.reason.contains("blob value"))
        {
            cut += 1;
        }
        // Forward and backward scans: no error, keys 0..m in order.
        let forward = scan(&db, true);
        let m = forward.len() as u64;
        for (i, (k, v)) in forward.iter().enumerate() {
            let n = i as u64;
            assert_eq!(
                k,
                format!("key{n:06}").as_bytes(),
                "round {round}: not a prefix"
            );
            assert_eq!(v, &value(n), "round {round}: value of {n}");
        }
        let mut backward = scan(&db, false);
        backward.reverse();
        assert_eq!(backward, forward, "round {round}: backward scan differs");
        for n in 0..m + 5 {
            let got = db
                .get(format!("key{n:06}"))
                .unwrap_or_else(|e| panic!("round {round}, key {n}: {e}"));
            let want = (n < m).then(|| value(n));
            assert_eq!(got, want, "round {round}: key {n} (prefix of {m})");
        }
        for &n in &synced {
            assert!(
                n < m,
                "round {round}: synced write {n} lost (prefix of {m})"
            );
        }
        db.close().expect("close");
    }
    eprintln!("unsynced blob writes: 30 power cuts, {cut} replays ended at a lost blob value");
}

/// Every (key, value) of a full scan, forward or backward (in the order
/// visited); the scan's error fails the test.
fn scan(db: &Db, forward: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter();
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if forward {
            it.move_next();
        } else {
            it.move_prev();
        }
    }
    it.status().expect("scan");
    out
}

/// Puts `key{n}` = `value(n)` for n = 0, 1, ... (with `sync` where `sync(n)`
/// says so) on a thread until the power goes, `delay` after the start;
/// then closes `db` and applies the power loss (`seed`). Returns the `n`
/// of the acknowledged `sync` puts.
fn put_until_power_loss(
    db: Db,
    fs: &FaultInjectingFs,
    delay: Duration,
    seed: u64,
    sync: impl Fn(u64) -> bool + Send + Sync,
) -> Vec<u64> {
    let db = Arc::new(db);
    let synced = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        let (db, synced, sync) = (Arc::clone(&db), &synced, &sync);
        s.spawn(move || {
            for n in 0u64.. {
                let opts = WriteOptions {
                    sync: sync(n),
                    ..WriteOptions::default()
                };
                if db.put_opt(format!("key{n:06}"), value(n), &opts).is_err() {
                    break; // the power is gone
                }
                if opts.sync {
                    synced.lock().expect("lock").push(n);
                }
            }
        });
        std::thread::sleep(delay);
        fs.crash();
    });
    drop(Arc::into_inner(db).expect("sole owner"));
    fs.apply_power_loss(seed).expect("apply power loss");
    synced.into_inner().expect("lock")
}
