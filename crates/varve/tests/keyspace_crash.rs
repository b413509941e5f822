//! Crash tests for keyspaces: a child process writes batches that span
//! three keyspaces (the default one, `a` and `b`) from several threads,
//! recording each key in a side file only after the write returned, while
//! another thread creates a keyspace, fills it with one batch and drops it
//! again, over and over. The parent `SIGKILL`s the child at random moments
//! and reopens the database (tiny memtables and tables, so kills land in
//! flushes and compactions too), then checks:
//! - every acknowledged key is in all three keyspaces with its value;
//! - every key is in all three keyspaces or in none (a batch is atomic
//!   across keyspaces), and a range delete across them left no half;
//! - the scratch keyspace, if it survived, holds its batch whole or not at
//!   all.
//!
//! Keyspace `a` and the scratch keyspace keep their values in blob files
//! of their own (`ks_options`), so kills also land in their lanes' writes,
//! seals and drops.
//!
//! A second test does the same on the fault-injecting file system with
//! simulated power losses: every write acknowledged with `sync = true`
//! survives in all three keyspaces, and every batch is whole or gone.
//!
//! `VARVE_CRASH_KILLS=N` sets the number of kills (default 20),
//! `VARVE_POWER_LOSS_ROUNDS=N` the power losses (default 20).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{Rng, acknowledged, value_for};
use varve::{Db, KeyspaceOptions, Options, WriteBatch, WriteOptions};

const CHILD_ENV: &str = "VARVE_KS_CRASH_CHILD_DIR";
const THREADS: usize = 3;
const SCRATCH: &str = "scratch";
const SCRATCH_KEYS: usize = 10;

/// Kills (or power losses) per database: a fresh directory every this many
/// keeps the check after each one bounded in long loops
/// (`scripts/crash-loop.sh`, `scripts/power-loop.sh`).
const RUNS_PER_DB: u64 = 50;

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_size: 1024,
        target_file_size: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        max_bytes_for_level_multiplier: 4,
        l0_compaction_trigger: 2,
        l0_slowdown_writes_trigger: 6,
        l0_stop_writes_trigger: 10,
        ..Options::default()
    }
}

/// Keyspace `a` keeps most of its values (`value_for`: 0 to 299 bytes) in
/// blob files of its own, and so does the scratch keyspace (all of them),
/// whose drops then race its lanes; `b` and the default keyspace keep
/// values inline.
fn ks_options(name: &str) -> KeyspaceOptions {
    KeyspaceOptions {
        min_blob_size: match name {
            "a" => Some(100),
            SCRATCH => Some(4),
            _ => None,
        },
        ..KeyspaceOptions::default()
    }
}

fn child_main(dir: &Path, run: u64) {
    let db = Arc::new(Db::open(dir.join("db"), options()).expect("child open"));
    let ks = [
        db.default_keyspace(),
        db.keyspace("a", ks_options("a")).expect("a"),
        db.keyspace("b", ks_options("b")).expect("b"),
    ];
    // A scratch keyspace left by an earlier run goes first.
    if db.keyspaces().iter().any(|n| n == SCRATCH) {
        db.drop_keyspace(SCRATCH).expect("drop old scratch");
    }
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let ks = ks.clone();
            let db = Arc::clone(&db);
            s.spawn(move || {
                let mut side = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join(format!("acked-{run}-{t}")))
                    .expect("side file");
                let opts = WriteOptions {
                    sync: t == 0,
                    disable_wal: false,
                };
                let mut rng = Rng(run * 1000 + t as u64 + 1);
                for i in 0u64.. {
                    let key = format!("r{run:03}-t{t}-{i:08}");
                    let mut b = WriteBatch::new();
                    for k in &ks {
                        b.put_in(k, &key, value_for(key.as_bytes()));
                    }
                    if rng.below(6) == 0 {
                        // A group in every keyspace, then one batch that
                        // range-deletes it everywhere.
                        let mut g = WriteBatch::new();
                        for k in &ks {
                            for j in 0..3 {
                                g.put_in(k, format!("{key}-g{j}"), b"doomed");
                            }
                        }
                        db.write_opt(g, &opts).expect("write group");
                        for k in &ks {
                            b.delete_range_in(k, format!("{key}-g0")..format!("{key}-g9"));
                        }
                    }
                    db.write_opt(b, &opts).expect("write");
                    writeln!(side, "{key}").expect("side write");
                }
            });
        }
        // Create, fill with one batch, drop: again and again.
        let db = Arc::clone(&db);
        s.spawn(move || {
            for i in 0u64.. {
                let scratch = db
                    .keyspace(SCRATCH, ks_options(SCRATCH))
                    .expect("create scratch");
                let mut b = WriteBatch::new();
                for j in 0..SCRATCH_KEYS {
                    b.put_in(&scratch, format!("s{i}-{j}"), b"scratch");
                }
                db.write(b).expect("fill scratch");
                std::thread::sleep(Duration::from_millis(3));
                db.drop_keyspace(SCRATCH).expect("drop scratch");
            }
        });
    });
}

#[test]
#[ignore = "child-process entry point: the keyspace crash test runs it in the processes it kills"]
fn keyspace_crash_child_entry() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let run: u64 = std::env::var("VARVE_KS_CRASH_RUN")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    child_main(Path::new(&dir), run);
}

fn keys_of(it: varve::DbIterator) -> BTreeSet<String> {
    it.map(|e| String::from_utf8_lossy(&e.expect("scan after recovery").0).into_owned())
        .collect()
}

#[test]
fn kill9_with_batches_across_keyspaces_is_all_or_nothing() {
    let kills: u64 = std::env::var("VARVE_CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let root = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng(5);
    let (mut lost, mut torn, mut acked_total) = (0usize, 0usize, 0usize);
    let mut first_failure: Option<String> = None;
    for run in 0..kills {
        let dir_buf = root.path().join(format!("d{}", run / RUNS_PER_DB));
        if run % RUNS_PER_DB == 0 {
            if run > 0 {
                let old = root.path().join(format!("d{}", run / RUNS_PER_DB - 1));
                std::fs::remove_dir_all(old).expect("remove the previous database");
            }
            std::fs::create_dir_all(&dir_buf).expect("mkdir");
        }
        let dir = dir_buf.as_path();
        let mut child = Command::new(std::env::current_exe().expect("current exe"))
            .args([
                "--exact",
                "--ignored",
                "keyspace_crash_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir)
            .env("VARVE_KS_CRASH_RUN", run.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        std::thread::sleep(Duration::from_millis(if rng.below(5) == 0 {
            rng.below(40)
        } else {
            40 + rng.below(300)
        }));
        if let Ok(Some(status)) = child.try_wait() {
            panic!("child exited on its own with {status}");
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");

        common::after_crash::assert_check_clean(&dir.join("db"), &format!("after kill {run}"));
        if run % common::after_crash::read_only_every(4) == 0 {
            common::after_crash::read_only_sees_what_read_write_sees(
                &dir.join("db"),
                &options(),
                &format!("after kill {run}"),
            );
        }
        let db = Db::open(dir.join("db"), options())
            .unwrap_or_else(|e| panic!("open after kill {run} failed: {e}"));
        let names = db.keyspaces();
        let mut failures = Vec::new();
        if names.len() >= 3 {
            assert_eq!(&names[..3], &["default", "a", "b"], "{names:?}");
        }
        let ks: Vec<_> = ["a", "b"]
            .iter()
            .filter(|n| names.iter().any(|m| m == *n))
            .map(|n| db.keyspace(n, ks_options(n)).expect("keyspace"))
            .collect();
        let acked = acknowledged(dir);
        if !acked.is_empty() && ks.len() != 2 {
            failures.push(format!("keyspaces lost: {names:?}"));
        }
        let mut missing = BTreeMap::new();
        for key in &acked {
            let want = value_for(key.as_bytes());
            let found = [
                db.get(key.as_bytes()).expect("get"),
                ks.first().and_then(|k| k.get(key.as_bytes()).expect("get")),
                ks.get(1).and_then(|k| k.get(key.as_bytes()).expect("get")),
            ];
            if found.iter().any(|v| v.as_deref() != Some(want.as_slice())) {
                missing.insert(key.clone(), found.map(|v| v.is_some()));
            }
        }
        // All or nothing across the keyspaces, and range-deleted groups
        // gone wherever their key is.
        let sets: Vec<BTreeSet<String>> = std::iter::once(keys_of(db.iter()))
            .chain(ks.iter().map(|k| keys_of(k.iter())))
            .collect();
        for (i, set) in sets.iter().enumerate().skip(1) {
            for k in set.symmetric_difference(&sets[0]) {
                failures.push(format!("{k} in keyspace {i} or the default, not both"));
            }
        }
        for k in &sets[0] {
            if let Some(base) = k.strip_suffix("-g0") {
                let group = (0..3)
                    .filter(|j| sets[0].contains(&format!("{base}-g{j}")))
                    .count();
                if group != 3 || sets[0].contains(base) {
                    failures.push(format!("{base}: group {group} of 3 left"));
                }
            }
        }
        if names.iter().any(|n| n == SCRATCH) {
            let s = db.keyspace(SCRATCH, ks_options(SCRATCH)).expect("s");
            let n = s.iter().count();
            if n != 0 && n != SCRATCH_KEYS {
                failures.push(format!("scratch keyspace holds {n} of its batch's keys"));
            }
        }
        if (!missing.is_empty() || !failures.is_empty()) && first_failure.is_none() {
            first_failure = Some(format!(
                "after kill {run}: {} of {} acknowledged keys missing, e.g. {:?}; {:?}",
                missing.len(),
                acked.len(),
                missing.iter().take(5).collect::<Vec<_>>(),
                &failures[..failures.len().min(5)]
            ));
        }
        lost += missing.len();
        torn += failures.len();
        acked_total += acked.len();
        db.close().expect("close");
        common::after_crash::assert_check_clean(&dir.join("db"), &format!("after reopen {run}"));
    }
    println!(
        "keyspace crash loop: kills {kills}, acknowledged keys checked {acked_total}, lost \
         {lost}, torn {torn}"
    );
    if let Some(f) = first_failure {
        panic!("{f}");
    }
    assert!(acked_total > 0, "the children never acknowledged a write");
}

#[test]
fn power_loss_with_batches_across_keyspaces() {
    use varve::fs::PosixFs;
    use varve::testing::FaultInjectingFs;

    let rounds: u64 = std::env::var("VARVE_POWER_LOSS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let root = common::fast_tempdir();
    let mut rng = Rng(0x6b73);
    let (mut lost, mut torn, mut checked) = (0usize, 0usize, 0usize);
    let mut synced: Vec<String> = Vec::new();
    let mut first_failure: Option<String> = None;
    for round in 0..rounds {
        let dir = root.path().join(format!("db-{}", round / RUNS_PER_DB));
        if round % RUNS_PER_DB == 0 {
            if round > 0 {
                let old = root.path().join(format!("db-{}", round / RUNS_PER_DB - 1));
                std::fs::remove_dir_all(old).expect("remove the previous database");
            }
            synced.clear();
        }
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let opts = Options {
            fs: Arc::new(fs.clone()),
            ..options()
        };
        let db = Arc::new(Db::open(&dir, opts).unwrap_or_else(|e| panic!("open {round}: {e}")));
        let ks = [
            db.default_keyspace(),
            db.keyspace("a", ks_options("a")).expect("a"),
            db.keyspace("b", ks_options("b")).expect("b"),
        ];
        let acked = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let delay = Duration::from_micros(rng.below(40_000));
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (ks, acked) = (ks.clone(), Arc::clone(&acked));
                let db = Arc::clone(&db);
                s.spawn(move || {
                    for i in 0u64.. {
                        let key = format!("p{round:03}-t{t}-{i:06}");
                        let sync = !(t + i as usize).is_multiple_of(3);
                        let mut b = WriteBatch::new();
                        for k in &ks {
                            b.put_in(k, &key, value_for(key.as_bytes()));
                        }
                        let opts = WriteOptions {
                            sync,
                            disable_wal: false,
                        };
                        if db.write_opt(b, &opts).is_err() {
                            return; // the machine is down
                        }
                        if sync {
                            acked.lock().push(key);
                        }
                    }
                });
            }
            // Create, fill, drop, while the power may go.
            let db = Arc::clone(&db);
            s.spawn(move || {
                for i in 0u64.. {
                    let Ok(scratch) = db.keyspace(SCRATCH, ks_options(SCRATCH)) else {
                        return;
                    };
                    let mut b = WriteBatch::new();
                    for j in 0..SCRATCH_KEYS {
                        b.put_in(&scratch, format!("s{i}-{j}"), b"scratch");
                    }
                    if db.write(b).is_err() || db.drop_keyspace(SCRATCH).is_err() {
                        return;
                    }
                }
            });
            std::thread::sleep(delay);
            fs.crash();
        });
        drop(ks);
        drop(Arc::into_inner(db).expect("sole owner"));
        fs.apply_power_loss(rng.next()).expect("apply power loss");
        synced.extend(acked.lock().drain(..));

        // On the restarted machine (the same file system, a new boot id).
        let db = Db::open(
            &dir,
            Options {
                fs: Arc::new(fs.clone()),
                ..options()
            },
        )
        .unwrap_or_else(|e| panic!("recovery after power loss {round} failed: {e}"));
        let names = db.keyspaces();
        assert!(
            names.iter().any(|n| n == "a") && names.iter().any(|n| n == "b"),
            "after power loss {round}: keyspaces {names:?}"
        );
        let ks = [
            db.default_keyspace(),
            db.keyspace("a", ks_options("a")).expect("a"),
            db.keyspace("b", ks_options("b")).expect("b"),
        ];
        let mut failures = Vec::new();
        for key in &synced {
            let want = value_for(key.as_bytes());
            for (i, k) in ks.iter().enumerate() {
                if k.get(key.as_bytes()).expect("get").as_deref() != Some(want.as_slice()) {
                    failures.push(format!("synced {key} missing in keyspace {i}"));
                    lost += 1;
                }
            }
        }
        let sets: Vec<BTreeSet<String>> = ks.iter().map(|k| keys_of(k.iter())).collect();
        for (i, set) in sets.iter().enumerate().skip(1) {
            for k in set.symmetric_difference(&sets[0]) {
                failures.push(format!("{k} in keyspace {i} or the default, not both"));
                torn += 1;
            }
        }
        if names.iter().any(|n| n == SCRATCH) {
            let n = db
                .keyspace(SCRATCH, ks_options(SCRATCH))
                .expect("scratch")
                .iter()
                .count();
            if n != 0 && n != SCRATCH_KEYS {
                failures.push(format!("scratch keyspace holds {n} keys"));
                torn += 1;
            }
            db.drop_keyspace(SCRATCH).expect("drop scratch");
        }
        if !failures.is_empty() && first_failure.is_none() {
            // What recovery said about the logs (where a replay ended, and
            // why) is what a lost write needs explained.
            let log = std::fs::read_to_string(dir.join("LOG")).unwrap_or_default();
            let recovery: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("recovery:"))
                .rev()
                .take(8)
                .collect();
            first_failure = Some(format!(
                "after power loss {round}: {:?}; recovery said (newest first): {recovery:#?}",
                &failures[..failures.len().min(5)]
            ));
        }
        checked += synced.len();
        db.close().expect("close");
    }
    println!(
        "keyspace power loop: power losses {rounds}, synced writes checked {checked}, lost \
         {lost}, torn {torn}"
    );
    if let Some(f) = first_failure {
        panic!("{f}");
    }
    assert!(checked > 0, "no synced write was ever acknowledged");
}
