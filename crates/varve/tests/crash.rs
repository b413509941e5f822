//! Crash tests: a child process writes from several threads, recording each
//! key in a side file only after `put` returned; the parent `SIGKILL`s it at
//! random moments, reopens the database and checks that every recorded key
//! is there with its value. Run once with `sync = true` and once with
//! `sync = false` (a write that reached the OS must survive `kill -9`).
//!
//! A third mode uses tiny memtables, tables and level targets so that the
//! child is almost always flushing or compacting when it dies: the manifest
//! must always open and every acknowledged write must be there.
//!
//! A fourth mode writes values of 64 B to 256 KiB (each size class equally
//! often), so log copies of every length — slot writes of a few hundred
//! bytes to KiBs, direct records of hundreds of KiB — are cut by kills: a
//! kill in the middle of a copy must leave a torn tail, never a hole that
//! makes the log unreadable.
//!
//! In every mode one write in eight puts a group of four keys and then, in
//! one batch, range-deletes the group and puts its key: the group must be
//! whole or gone, and gone wherever the key is visible.
//!
//! `VARVE_CRASH_KILLS=N` sets the number of kills per mode (default 25).

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{Rng, acknowledged, value_for};
use varve::{Db, Options, WriteBatch, WriteOptions};

const CHILD_ENV: &str = "VARVE_CRASH_CHILD_DIR";
const THREADS: usize = 4;

fn options(lsm_stress: bool) -> Options {
    let uring = std::env::var("VARVE_CRASH_URING").as_deref() == Ok("1");
    let o = options_for(lsm_stress);
    Options {
        wal_writer: if uring {
            varve::WalWriter::IoUring
        } else {
            o.wal_writer
        },
        ..o
    }
}

fn options_for(lsm_stress: bool) -> Options {
    if lsm_stress {
        // Flushes every 64 KiB and compactions all the time.
        return Options {
            write_buffer_size: 64 << 10,
            block_size: 1024,
            target_file_size: 32 << 10,
            max_bytes_for_level_base: 128 << 10,
            max_bytes_for_level_multiplier: 4,
            l0_compaction_trigger: 2,
            l0_slowdown_writes_trigger: 6,
            l0_stop_writes_trigger: 10,
            ..Options::default()
        };
    }
    Options {
        // Small memtables so kills also land during memtable/WAL switches.
        write_buffer_size: 256 << 10,
        ..Options::default()
    }
}

fn large_values() -> bool {
    std::env::var("VARVE_CRASH_LARGE").as_deref() == Ok("1")
}

/// The value written for `key`: `value_for`, or in the mixed-size mode that
/// value repeated to 64 B << (0..=12), plus some (sizes depend on the key).
fn value(key: &[u8]) -> Vec<u8> {
    let v = value_for(key);
    if !large_values() {
        return v;
    }
    let h = key
        .iter()
        .fold(17usize, |h, &b| h.wrapping_mul(31).wrapping_add(b as usize));
    let want = (64usize << (h % 13)) + (h / 13) % 64;
    v.iter().copied().cycle().take(want).collect()
}

/// The child: never returns on its own; it writes until it is killed.
fn child_main(dir: &Path, sync: bool, run: u64, lsm_stress: bool) {
    let db = Arc::new(Db::open(dir.join("db"), options(lsm_stress)).expect("child open"));
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let db = Arc::clone(&db);
            s.spawn(move || {
                let side = dir.join(format!("acked-{run}-{t}"));
                let mut side = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(side)
                    .expect("side file");
                let opts = WriteOptions {
                    sync,
                    disable_wal: false,
                };
                let mut rng = Rng(run * 1000 + t as u64 + 1);
                for i in 0u64.. {
                    let key = format!("r{run:03}-t{t}-{i:08}");
                    if rng.below(8) == 0 {
                        // A group of four keys, then one batch that
                        // range-deletes the group and puts the key: after
                        // recovery the key is never seen with any of the
                        // group, and the group is whole or gone.
                        let mut g = WriteBatch::new();
                        for j in 0..4 {
                            g.put(format!("{key}-g{j}"), b"doomed");
                        }
                        db.write_opt(g, &opts).expect("write group");
                        let mut b = WriteBatch::new();
                        b.delete_range(format!("{key}-g0")..format!("{key}-g9"));
                        b.put(&key, value(key.as_bytes()));
                        db.write_opt(b, &opts).expect("write range delete");
                        writeln!(side, "{key}").expect("side write");
                    } else if rng.below(4) == 0 {
                        // A batch: the key plus two companions, all or nothing.
                        let mut b = WriteBatch::new();
                        b.put(&key, value(key.as_bytes()));
                        b.put(format!("{key}-a"), value(format!("{key}-a").as_bytes()));
                        b.put(format!("{key}-b"), value(format!("{key}-b").as_bytes()));
                        db.write_opt(b, &opts).expect("write");
                        writeln!(side, "{key}\n{key}-a\n{key}-b").expect("side write");
                    } else {
                        db.put_opt(&key, value(key.as_bytes()), &opts).expect("put");
                        writeln!(side, "{key}").expect("side write");
                    }
                }
            });
        }
    });
}

/// Child entry point: the parent runs this test binary filtered to this test.
#[test]
#[ignore = "child-process entry point: the crash tests run it in the processes they kill"]
fn crash_child_entry() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let sync = std::env::var("VARVE_CRASH_SYNC").as_deref() == Ok("1");
    let run: u64 = std::env::var("VARVE_CRASH_RUN")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let lsm_stress = std::env::var("VARVE_CRASH_LSM").as_deref() == Ok("1");
    child_main(Path::new(&dir), sync, run, lsm_stress);
}

fn spawn_child(dir: &Path, sync: bool, run: u64, lsm_stress: bool) -> Child {
    let uring = std::env::var("VARVE_CRASH_URING").as_deref() == Ok("1");
    Command::new(std::env::current_exe().expect("current exe"))
        .args([
            "--exact",
            "--ignored",
            "crash_child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .env("VARVE_CRASH_SYNC", if sync { "1" } else { "0" })
        .env("VARVE_CRASH_RUN", run.to_string())
        .env("VARVE_CRASH_LSM", if lsm_stress { "1" } else { "0" })
        .env("VARVE_CRASH_URING", if uring { "1" } else { "0" })
        .env("VARVE_CRASH_LARGE", if large_values() { "1" } else { "0" })
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child")
}

/// Kills per database: a fresh directory every this many kills keeps the
/// verification after each kill (every acknowledged key of the directory)
/// bounded in long loops.
const KILLS_PER_DB: u64 = 50;

/// Batches the child writes are `key`, `key-a`, `key-b`: if any companion
/// is visible, all three must be (atomicity). A range-deleted group
/// `key-g0..key-g3` must be whole or gone, and gone once `key` (written in
/// the range delete's batch) is visible. Returns the torn ones.
fn torn_batches(db: &Db) -> Vec<String> {
    let mut keys = std::collections::BTreeSet::new();
    for entry in db.iter() {
        let (k, _) = entry.expect("scan after recovery");
        keys.insert(String::from_utf8_lossy(&k).into_owned());
    }
    let mut torn = Vec::new();
    for k in &keys {
        if let Some(base) = k.strip_suffix("-g0") {
            let group = (0..4)
                .filter(|j| keys.contains(&format!("{base}-g{j}")))
                .count();
            if group != 4 || keys.contains(base) {
                torn.push(format!("{base} (range-deleted group: {group} of 4 left)"));
            }
        } else if let Some(base) = ["-g1", "-g2", "-g3"].iter().find_map(|s| k.strip_suffix(s))
            && !keys.contains(&format!("{base}-g0"))
        {
            torn.push(format!(
                "{base} (range-deleted group without its first key)"
            ));
        }
    }
    for k in &keys {
        let base = k.strip_suffix("-a").or_else(|| k.strip_suffix("-b"));
        if let Some(base) = base {
            let whole = [base.to_string(), format!("{base}-a"), format!("{base}-b")]
                .iter()
                .all(|p| keys.contains(p));
            if !whole {
                torn.push(base.to_string());
            }
        }
    }
    torn.dedup();
    torn
}

fn run_crash_loop(sync: bool, lsm_stress: bool) {
    let kills: u64 = std::env::var("VARVE_CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    let root = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng(if sync { 7 } else { 11 });
    let (mut checked, mut lost, mut torn, mut acked_total) = (0usize, 0usize, 0usize, 0usize);
    let mut first_failure: Option<String> = None;
    for run in 0..kills {
        let dir = root.path().join(format!("db-{}", run / KILLS_PER_DB));
        if run % KILLS_PER_DB == 0 {
            let previous = root
                .path()
                .join(format!("db-{}", (run / KILLS_PER_DB).wrapping_sub(1)));
            let _ = std::fs::remove_dir_all(previous);
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        let mut child = spawn_child(&dir, sync, run, lsm_stress);
        // Random moment: sometimes during open/recovery, mostly mid-write.
        let wait_ms = if rng.below(5) == 0 {
            rng.below(30)
        } else {
            30 + rng.below(250)
        };
        std::thread::sleep(Duration::from_millis(wait_ms));
        if let Ok(Some(status)) = child.try_wait() {
            panic!("child exited on its own with {status} (it should write until killed)");
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");

        // What the kill left: check accepts it, and (every few kills) a
        // read-only open sees what a read-write one does.
        common::after_crash::assert_check_clean(&dir.join("db"), &format!("after kill {run}"));
        if run % common::after_crash::read_only_every(4) == 0 {
            common::after_crash::read_only_sees_what_read_write_sees(
                &dir.join("db"),
                &options(lsm_stress),
                &format!("after kill {run}"),
            );
        }
        let db = Db::open(dir.join("db"), options(lsm_stress))
            .unwrap_or_else(|e| panic!("open after kill {run} failed: {e}"));
        // The open reports how long it took and its parts (stats and
        // the info log).
        let t = db.debug().recovery_report().open_times;
        assert!(t.total > Duration::ZERO, "open time measured");
        assert!(
            t.total >= t.manifest + t.blob_staging + t.wal_replay + t.recovery_tables,
            "the parts fit in the whole: {t:?}"
        );
        let stats = db.stats();
        assert_eq!(stats.open_times, t);
        assert_eq!(
            stats.open_records_replayed,
            db.debug().recovery_report().records
        );
        assert!(stats.report().contains("Open: "), "{}", stats.report());
        let info = std::fs::read_to_string(dir.join("db").join("LOG")).unwrap_or_default();
        assert!(
            info.contains("opened in "),
            "the info log names the open time"
        );
        let acked = acknowledged(&dir);
        let mut missing = BTreeMap::new();
        for key in &acked {
            match db.get(key.as_bytes()).expect("get") {
                Some(v) if v == value(key.as_bytes()) => {}
                other => {
                    missing.insert(key.clone(), other.map(|v| v.len()));
                }
            }
        }
        let torn_now = torn_batches(&db);
        if (!missing.is_empty() || !torn_now.is_empty()) && first_failure.is_none() {
            first_failure = Some(format!(
                "after kill {run} (sync={sync}) {} of {} acknowledged keys are missing or wrong, \
                 e.g. {:?}; torn batches {:?}; recovery: {:?}",
                missing.len(),
                acked.len(),
                missing.iter().take(5).collect::<Vec<_>>(),
                &torn_now[..torn_now.len().min(5)],
                db.debug().recovery_report()
            ));
        }
        lost += missing.len();
        torn += torn_now.len();
        checked = checked.max(acked.len());
        acked_total += acked.len();
        db.close().expect("close");
        common::after_crash::assert_check_clean(&dir.join("db"), &format!("after reopen {run}"));
    }
    // One line a script can read (scripts/crash-loop.sh).
    println!(
        "crash-loop sync={sync} lsm_stress={lsm_stress}: kills {kills}, acknowledged keys checked \
         {acked_total}, lost {lost}, torn batches {torn}"
    );
    if let Some(f) = first_failure {
        panic!("{f}");
    }
    assert!(checked > 0, "the children never acknowledged a write");
}

#[test]
fn kill9_with_sync_writes_loses_nothing_acknowledged() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    run_crash_loop(true, false);
}

#[test]
fn kill9_with_async_writes_loses_nothing_acknowledged() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    run_crash_loop(false, false);
}

#[test]
fn kill9_during_flush_and_compaction_loses_nothing_acknowledged() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    run_crash_loop(false, true);
}

/// Values of every size: kills cut log copies of every length. Runs in a
/// child process of its own (the mode is an environment variable).
#[test]
fn kill9_during_log_copies_of_every_size_leaves_a_readable_log() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    if large_values() {
        run_crash_loop(false, false);
        return;
    }
    common::run_test_in_child(
        "kill9_during_log_copies_of_every_size_leaves_a_readable_log",
        &[("VARVE_CRASH_LARGE", "1")],
    );
}

/// The io_uring WAL (`WalWriter::IoUring`): a write is acknowledged only
/// after its completion was reaped. Runs in a child process of its own so
/// the mode switch (an environment variable the options read) cannot leak
/// into the other tests of this binary.
#[test]
fn kill9_with_io_uring_wal_loses_nothing_acknowledged() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    if std::env::var("VARVE_CRASH_URING").as_deref() == Ok("1") {
        run_crash_loop(false, false);
        return;
    }
    common::run_test_in_child(
        "kill9_with_io_uring_wal_loses_nothing_acknowledged",
        &[("VARVE_CRASH_URING", "1")],
    );
}
