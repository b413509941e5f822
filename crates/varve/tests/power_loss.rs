//! Simulated power loss during a multi-threaded load: writers put with
//! `sync = true` (and some with `sync = false`) while the file system
//! "loses power" at a random moment — everything not fdatasync'ed may be
//! lost, partly or wholly. Every write acknowledged with `sync = true` must
//! survive and recovery must open cleanly. Some writes put a group of keys
//! and then range-delete it in the batch that puts their key: once that
//! batch is acknowledged, no key of the group may come back. A third test
//! writes with `sync = false` and calls `Db::sync_wal`: what it covered
//! survives.
//!
//! `VARVE_POWER_LOSS_ROUNDS=N` sets the number of power losses (default 30).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Rng, value_for};
use parking_lot::Mutex;
use varve::fs::PosixFs;
use varve::testing::FaultInjectingFs;
use varve::{Db, Options, WriteBatch, WriteOptions};

const THREADS: usize = 6;

/// Power losses per database directory (see the loop).
const ROUNDS_PER_DB: u64 = 50;

/// Options on the file system after its simulated power cut (the machine
/// restarted: a new boot id), everything else the defaults.
fn rebooted(fs: &FaultInjectingFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// The load of one power-loss loop.
#[derive(Clone, Copy)]
struct Load {
    /// Values of 4 KiB and more (blob files, with the default threshold)
    /// instead of values under 300 bytes.
    blob_values: bool,
    /// Two in three writes `sync = true`; else none.
    sync: bool,
}

/// The value of `key` under `load`.
fn load_value(load: Load, key: &str) -> Vec<u8> {
    let small = value_for(key.as_bytes());
    if !load.blob_values {
        return small;
    }
    // 4 KiB to 12 KiB, distinct per key.
    let len = 4096 + small.len() * 27;
    let mut v: Vec<u8> = (0..len).map(|i| (i as u8) ^ small.len() as u8).collect();
    v[..small.len().min(len)].copy_from_slice(&small[..small.len().min(len)]);
    v
}

/// Power cuts at random moments under `THREADS` writers on the default
/// options (mapped WAL; with `blob_values`, staged blob values written by
/// direct chunk writes), `rounds` of them (`VARVE_POWER_LOSS_ROUNDS`
/// overrides). After each: recovery opens; every write acknowledged with
/// `sync = true` is there (and no key a synced range delete removed came
/// back); each thread's writes that survived are a prefix of the writes it
/// made, each batch whole. Prints one `power-loop` line.
fn power_loop(name: &str, load: Load, default_rounds: u64) {
    let rounds: u64 = std::env::var("VARVE_POWER_LOSS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_rounds);
    let root = common::fast_tempdir();
    let mut rng = Rng(0x5eed ^ u64::from(load.blob_values) ^ (u64::from(load.sync) << 1));
    let mut synced_acked: Vec<String> = Vec::new();
    let (mut dropped_total, mut lost, mut checked, mut not_prefix) = (0, 0usize, 0usize, 0usize);
    let (mut made, mut survived) = (0usize, 0usize);
    let mut first_failure: Option<String> = None;
    for round in 0..rounds {
        // A fresh database every ROUNDS_PER_DB rounds bounds the checks
        // after each power loss in long loops.
        let dir = root.path().join(format!("db-{}", round / ROUNDS_PER_DB));
        if round % ROUNDS_PER_DB == 0 {
            if round > 0 {
                let old = root
                    .path()
                    .join(format!("db-{}", round / ROUNDS_PER_DB - 1));
                std::fs::remove_dir_all(old).expect("remove the previous database");
            }
            synced_acked.clear();
        }
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let opts = Options {
            fs: Arc::new(fs.clone()),
            write_buffer_size: 64 << 10, // WAL switches happen under load
            ..Options::default()
        };
        let db =
            Arc::new(Db::open(&dir, opts).unwrap_or_else(|e| panic!("open in round {round}: {e}")));
        let acked = Arc::new(Mutex::new(Vec::new()));
        // Per thread, the keys of each acknowledged write, in order.
        let written: Arc<Mutex<Vec<Vec<Vec<String>>>>> =
            Arc::new(Mutex::new(vec![Vec::new(); THREADS]));
        let delay = Duration::from_micros(rng.below(40_000));
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let db = Arc::clone(&db);
                let acked = Arc::clone(&acked);
                let written = Arc::clone(&written);
                s.spawn(move || {
                    for i in 0u64.. {
                        let key = format!("r{round:03}-t{t}-{i:06}");
                        let sync = load.sync && !(t + i as usize).is_multiple_of(3);
                        let opts = WriteOptions {
                            sync,
                            disable_wal: false,
                        };
                        let mut keys = vec![key.clone()];
                        let result = if i % 7 == 3 {
                            let mut g = WriteBatch::new();
                            for j in 0..4 {
                                g.put(format!("{key}-g{j}"), b"doomed");
                            }
                            let mut b = WriteBatch::new();
                            b.delete_range(format!("{key}-g0")..format!("{key}-g9"));
                            b.put(&key, load_value(load, &key));
                            db.write_opt(g, &opts).and_then(|()| db.write_opt(b, &opts))
                        } else if i % 5 == 0 {
                            let mut b = WriteBatch::new();
                            let second = format!("{key}-b");
                            b.put(&key, load_value(load, &key));
                            b.put(&second, load_value(load, &second));
                            keys.push(second);
                            db.write_opt(b, &opts)
                        } else {
                            db.put_opt(&key, load_value(load, &key), &opts)
                        };
                        if result.is_err() {
                            return; // the machine is down
                        }
                        if sync {
                            acked.lock().extend(keys.iter().cloned());
                        }
                        written.lock()[t].push(keys);
                    }
                });
            }
            std::thread::sleep(delay);
            fs.crash();
        });
        drop(Arc::into_inner(db).expect("sole owner"));
        dropped_total += fs.apply_power_loss(rng.next()).expect("apply power loss");
        synced_acked.extend(acked.lock().drain(..));

        // Recovery runs on the machine after its restart: the same file
        // system, with a new boot id (staging files of before are ignored).
        let db = Db::open(&dir, rebooted(&fs))
            .unwrap_or_else(|e| panic!("recovery after power loss {round} failed: {e}"));
        let holds = |k: &str| {
            let got = db
                .get(k.as_bytes())
                .unwrap_or_else(|e| panic!("after power loss {round}: get {k}: {e}"));
            match got {
                None => false,
                Some(v) if v == load_value(load, k) => true,
                Some(_) => panic!("after power loss {round}: {k} holds a wrong value"),
            }
        };
        let missing: Vec<&String> = synced_acked.iter().filter(|k| !holds(k)).collect();
        // A synced range delete stays: its group never comes back.
        let resurrected: Vec<String> = synced_acked
            .iter()
            .flat_map(|k| (0..4).map(move |j| format!("{k}-g{j}")))
            .filter(|g| db.get(g.as_bytes()).expect("get").is_some())
            .collect();
        if !resurrected.is_empty() && first_failure.is_none() {
            first_failure = Some(format!(
                "after power loss {round}: {} range-deleted keys came back, e.g. {:?}",
                resurrected.len(),
                &resurrected[..resurrected.len().min(5)]
            ));
        }
        lost += resurrected.len();
        if !missing.is_empty() && first_failure.is_none() {
            first_failure = Some(format!(
                "after power loss {round}: {} of {} synced writes lost, e.g. {:?}; recovery {:?}",
                missing.len(),
                synced_acked.len(),
                &missing[..missing.len().min(5)],
                db.debug().recovery_report()
            ));
        }
        lost += missing.len();
        checked += synced_acked.len();
        // Each thread's surviving writes: a prefix of its writes, each
        // batch whole.
        for (t, writes) in written.lock().iter().enumerate() {
            let mut gone_at = None;
            for (i, keys) in writes.iter().enumerate() {
                let present: Vec<bool> = keys.iter().map(|k| holds(k)).collect();
                let whole = present.iter().all(|&p| p) || present.iter().all(|&p| !p);
                let here = present.iter().all(|&p| p);
                let fine = whole && (here == gone_at.is_none() || !here);
                if !fine {
                    not_prefix += 1;
                    if first_failure.is_none() {
                        first_failure = Some(format!(
                            "after power loss {round}: thread {t}'s write {i} {keys:?} is {} \
                             (first missing write: {gone_at:?}): not a prefix",
                            if whole { "there" } else { "torn" }
                        ));
                    }
                }
                if !here && gone_at.is_none() {
                    gone_at = Some(i);
                }
                made += 1;
                survived += usize::from(here);
            }
        }
        db.close().expect("close");
    }
    // One line a script can read (scripts/power-loop.sh).
    println!(
        "power-loop {name}: power losses {rounds}, synced writes checked {checked}, lost {lost}, \
         not a prefix {not_prefix}, writes {made} of which survived {survived}, bytes of \
         unsynced pages lost {dropped_total}"
    );
    if let Some(f) = first_failure {
        panic!("{f}");
    }
    if load.sync {
        assert!(checked > 0, "no write was ever acknowledged");
    }
}

/// Values under 300 bytes, two in three writes synced.
#[test]
fn power_loss_keeps_every_synced_write() {
    power_loop(
        "small values",
        Load {
            blob_values: false,
            sync: true,
        },
        30,
    );
}

/// Values of 4-12 KiB on the default options: staged in mapped slots,
/// written by direct chunk writes, two in three writes synced.
#[test]
fn power_loss_keeps_every_synced_blob_write_on_the_default_paths() {
    power_loop(
        "blob values",
        Load {
            blob_values: true,
            sync: true,
        },
        20,
    );
}

/// No write synced, values of 4-12 KiB: whatever survives is a prefix of
/// each thread's writes.
#[test]
fn power_loss_without_sync_leaves_a_prefix() {
    power_loop(
        "blob values, no sync",
        Load {
            blob_values: true,
            sync: false,
        },
        20,
    );
}

/// 16 threads, every write `sync = true` (batched fdatasync from the slot
/// WAL's syncing thread), power lost at a random moment: every acknowledged
/// write survives, recovery opens cleanly, and each thread's surviving
/// writes are a prefix of its own order (the log is only ever a prefix).
#[test]
fn power_loss_under_many_sync_writers() {
    const WRITERS: usize = 16;
    let rounds: u64 = std::env::var("VARVE_POWER_LOSS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let root = common::fast_tempdir();
    let dir = root.path().join("db");
    let mut rng = Rng(0xfeed);
    let mut acked_all: Vec<String> = Vec::new();
    for round in 0..rounds {
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let opts = Options {
            fs: Arc::new(fs.clone()),
            write_buffer_size: 64 << 10,
            ..Options::default()
        };
        let db =
            Arc::new(Db::open(&dir, opts).unwrap_or_else(|e| panic!("open in round {round}: {e}")));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let delay = Duration::from_micros(rng.below(30_000));
        let written: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..WRITERS)
                .map(|t| {
                    let db = Arc::clone(&db);
                    let acked = Arc::clone(&acked);
                    s.spawn(move || {
                        for i in 0u64.. {
                            let key = format!("m{round:03}-t{t:02}-{i:06}");
                            let v = value_for(key.as_bytes());
                            if db.put_opt(&key, &v, &WriteOptions::sync()).is_err() {
                                return i;
                            }
                            acked.lock().push(key);
                        }
                        unreachable!()
                    })
                })
                .collect();
            std::thread::sleep(delay);
            fs.crash();
            handles
                .into_iter()
                .map(|h| h.join().expect("writer"))
                .collect()
        });
        drop(Arc::into_inner(db).expect("sole owner"));
        fs.apply_power_loss(rng.next()).expect("apply power loss");
        acked_all.extend(acked.lock().drain(..));
        // Recovery runs on the machine after its restart: the same file
        // system, with a new boot id (staging files of before are ignored).
        let db = Db::open(&dir, rebooted(&fs))
            .unwrap_or_else(|e| panic!("recovery after power loss {round} failed: {e}"));
        for k in &acked_all {
            assert_eq!(
                db.get(k.as_bytes()).expect("get").as_deref(),
                Some(&value_for(k.as_bytes())[..]),
                "round {round}: acknowledged sync write {k} lost"
            );
        }
        // Per thread, what survived of this round is a prefix of its order.
        for (t, &n) in written.iter().enumerate() {
            let mut gap = false;
            for i in 0..=n {
                let key = format!("m{round:03}-t{t:02}-{i:06}");
                let present = db.get(key.as_bytes()).expect("get").is_some();
                assert!(
                    !(gap && present),
                    "round {round}: {key} survived after a lost write"
                );
                gap |= !present;
            }
        }
        db.close().expect("close");
    }
    assert!(!acked_all.is_empty(), "no write was ever acknowledged");
    eprintln!(
        "power loss (16 sync writers): {rounds} rounds, {} writes verified",
        acked_all.len()
    );
}

/// `Db::sync_wal` after writes made with `sync = false` (some of whose
/// values go to blob files): every write that returned before a
/// `sync_wal` call started, and that call returned `Ok`, survives the
/// power loss.
#[test]
fn sync_wal_makes_earlier_unsynced_writes_durable() {
    let root = common::fast_tempdir();
    let mut rng = Rng(0x5717);
    let (mut checked, mut syncs) = (0usize, 0usize);
    for round in 0..8u64 {
        let dir = root.path().join(format!("db-{round}"));
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let opts = Options {
            fs: Arc::new(fs.clone()),
            write_buffer_size: 64 << 10,
            min_blob_size: Some(150),
            ..Options::default()
        };
        let db = Arc::new(Db::open(&dir, opts).expect("open"));
        // Keys in the order their writes returned, and how many of them a
        // finished sync_wal covers.
        let acked = Arc::new(Mutex::new(Vec::<String>::new()));
        let durable = Arc::new(Mutex::new(0usize));
        let delay = Duration::from_micros(20_000 + rng.below(30_000));
        std::thread::scope(|s| {
            for t in 0..3 {
                let (db, acked) = (Arc::clone(&db), Arc::clone(&acked));
                s.spawn(move || {
                    for i in 0u64.. {
                        let key = format!("r{round}-t{t}-{i:06}");
                        if db.put(&key, value_for(key.as_bytes())).is_err() {
                            return;
                        }
                        acked.lock().push(key);
                    }
                });
            }
            let (db, acked, durable) = (Arc::clone(&db), Arc::clone(&acked), Arc::clone(&durable));
            s.spawn(move || {
                loop {
                    let covered = acked.lock().len();
                    if db.sync_wal().is_err() {
                        return;
                    }
                    *durable.lock() = covered;
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            std::thread::sleep(delay);
            fs.crash();
        });
        drop(Arc::into_inner(db).expect("sole owner"));
        fs.apply_power_loss(rng.next()).expect("apply power loss");
        let db = Db::open(&dir, rebooted(&fs)).expect("recover");
        // Under load a power loss can come before the first sync_wal
        // covered anything: such a round checks nothing, and the test
        // asks only that the rounds together check writes.
        let n = *durable.lock();
        syncs += 1;
        let acked = acked.lock();
        for k in &acked[..n] {
            assert_eq!(
                db.get(k.as_bytes()).expect("get").as_deref(),
                Some(&value_for(k.as_bytes())[..]),
                "round {round}: {k} was covered by a sync_wal and is gone"
            );
        }
        checked += n;
    }
    assert!(
        checked > 0,
        "no round had a sync_wal finish before its power loss"
    );
    eprintln!("sync_wal power loss: {syncs} rounds, {checked} covered writes checked, 0 lost");
}
