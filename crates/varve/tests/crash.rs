//! Crash tests: a child process writes from several threads, recording each
//! key in a side file only after `put` returned; the parent `SIGKILL`s it at
//! random moments, reopens the database and checks that every recorded key
//! is there with its value. Run once with `sync = true` and once with
//! `sync = false` (a write that reached the OS must survive `kill -9`).
//!
//! `VARVE_CRASH_KILLS=N` sets the number of kills per mode (default 25).

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{Rng, value_for};
use varve::{Db, Options, WriteBatch, WriteOptions};

const CHILD_ENV: &str = "VARVE_CRASH_CHILD_DIR";
const THREADS: usize = 4;

fn options() -> Options {
    Options {
        // Small memtables so kills also land during memtable/WAL switches.
        write_buffer_size: 256 << 10,
        ..Options::default()
    }
}

/// The child: never returns on its own; it writes until it is killed.
fn child_main(dir: &Path, sync: bool, run: u64) {
    let db = Arc::new(Db::open(dir.join("db"), options()).expect("child open"));
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
                    if rng.below(4) == 0 {
                        // A batch: the key plus two companions, all or nothing.
                        let mut b = WriteBatch::new();
                        b.put(&key, value_for(key.as_bytes()));
                        b.put(format!("{key}-a"), value_for(format!("{key}-a").as_bytes()));
                        b.put(format!("{key}-b"), value_for(format!("{key}-b").as_bytes()));
                        db.write_opt(b, &opts).expect("write");
                        writeln!(side, "{key}\n{key}-a\n{key}-b").expect("side write");
                    } else {
                        db.put_opt(&key, value_for(key.as_bytes()), &opts)
                            .expect("put");
                        writeln!(side, "{key}").expect("side write");
                    }
                }
            });
        }
    });
}

/// Child entry point: the parent runs this test binary filtered to this test.
#[test]
fn crash_child_entry() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let sync = std::env::var("VARVE_CRASH_SYNC").as_deref() == Ok("1");
    let run: u64 = std::env::var("VARVE_CRASH_RUN")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    child_main(Path::new(&dir), sync, run);
}

fn spawn_child(dir: &Path, sync: bool, run: u64) -> Child {
    Command::new(std::env::current_exe().expect("current exe"))
        .args([
            "--exact",
            "crash_child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .env("VARVE_CRASH_SYNC", if sync { "1" } else { "0" })
        .env("VARVE_CRASH_RUN", run.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child")
}

/// Every complete line of every side file (a line cut by the kill is not
/// an acknowledgement: the put returned but the record of it did not finish).
fn acknowledged(dir: &Path) -> Vec<String> {
    let mut keys = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if !p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("acked-"))
        {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("side file");
        let complete = match text.rfind('\n') {
            Some(i) => &text[..i],
            None => "",
        };
        keys.extend(complete.lines().filter(|l| !l.is_empty()).map(String::from));
    }
    keys
}

fn run_crash_loop(sync: bool) {
    let kills: u64 = std::env::var("VARVE_CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng(if sync { 7 } else { 11 });
    let mut checked = 0usize;
    for run in 0..kills {
        let mut child = spawn_child(dir.path(), sync, run);
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

        let db = Db::open(dir.path().join("db"), options())
            .unwrap_or_else(|e| panic!("open after kill {run} failed: {e}"));
        let acked = acknowledged(dir.path());
        let mut missing = BTreeMap::new();
        for key in &acked {
            match db.get(key.as_bytes()).expect("get") {
                Some(v) if v == value_for(key.as_bytes()) => {}
                other => {
                    missing.insert(key.clone(), other.map(|v| v.len()));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "after kill {run} (sync={sync}) {} of {} acknowledged keys are missing or wrong, e.g. {:?}; recovery: {:?}",
            missing.len(),
            acked.len(),
            missing.iter().take(5).collect::<Vec<_>>(),
            db.recovery_report()
        );
        checked = acked.len();
        db.close().expect("close");
    }
    assert!(checked > 0, "the children never acknowledged a write");
    eprintln!("crash test sync={sync}: {kills} kills, {checked} acknowledged keys verified");
}

#[test]
fn kill9_with_sync_writes_loses_nothing_acknowledged() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    run_crash_loop(true);
}

#[test]
fn kill9_with_async_writes_loses_nothing_acknowledged() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    run_crash_loop(false);
}
