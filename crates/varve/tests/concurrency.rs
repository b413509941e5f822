//! Concurrency: 8 writer threads and 8 reader/iterator threads at once.
//!
//! Each writer owns a group of keys and always rewrites the whole group in
//! one batch with the same value, so any view in which the group's values
//! differ has seen part of a batch. Readers check snapshots (point reads),
//! iterators (scans) and latest-state reads; at the end every group holds
//! its writer's last value, also after a reopen.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use varve::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

const WRITERS: usize = 8;
const READERS: usize = 8;
const GROUP: usize = 8;
const ROUNDS: usize = 400;

fn k(w: usize, j: usize) -> Vec<u8> {
    format!("w{w}-k{j}").into_bytes()
}

fn options() -> Options {
    Options {
        write_buffer_size: 128 << 10, // many memtable switches under load
        ..Options::default()
    }
}

#[test]
fn snapshots_and_iterators_never_see_part_of_a_batch() {
    let dir = common::fast_tempdir();
    let db = Arc::new(Db::open(dir.path(), options()).expect("open"));
    let stop = Arc::new(AtomicBool::new(false));
    let mut checks = 0u64;
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let db = Arc::clone(&db);
            s.spawn(move || {
                for round in 0..ROUNDS {
                    let mut b = WriteBatch::new();
                    let v = format!("{round:06}-{}", "x".repeat(round % 200));
                    for j in 0..GROUP {
                        b.put(k(w, j), &v);
                    }
                    let opts = WriteOptions {
                        sync: round % 50 == 0,
                        disable_wal: false,
                    };
                    db.write_opt(b, &opts).expect("write");
                }
            });
        }
        let mut readers = Vec::new();
        for r in 0..READERS {
            let db = Arc::clone(&db);
            let stop = Arc::clone(&stop);
            readers.push(s.spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let w = (n as usize + r) % WRITERS;
                    if r % 2 == 0 {
                        // Point reads on a snapshot: the whole group agrees.
                        let snap = db.snapshot();
                        let ro = ReadOptions::at(&snap);
                        let vals: Vec<_> = (0..GROUP)
                            .map(|j| db.get_opt(k(w, j), &ro).expect("get"))
                            .collect();
                        assert!(
                            vals.windows(2).all(|p| p[0] == p[1]),
                            "snapshot saw part of a batch: {vals:?}"
                        );
                    } else {
                        // A bounded scan over the group (forward or reverse).
                        let ro = ReadOptions {
                            iterate_lower_bound: Some(format!("w{w}-").into_bytes()),
                            iterate_upper_bound: Some(format!("w{w}.").into_bytes()),
                            ..ReadOptions::default()
                        };
                        let it = db.iter_opt(&ro);
                        let vals: Vec<Vec<u8>> = if n.is_multiple_of(2) {
                            it.rev().map(|e| e.expect("iter").1).collect()
                        } else {
                            it.map(|e| e.expect("iter").1).collect()
                        };
                        assert!(
                            vals.is_empty() || vals.len() == GROUP,
                            "scan saw {} of {GROUP} keys",
                            vals.len()
                        );
                        assert!(
                            vals.windows(2).all(|p| p[0] == p[1]),
                            "iterator saw part of a batch"
                        );
                    }
                    n += 1;
                }
                n
            }));
        }
        // Writers finish first (scoped threads above); then stop readers.
        // Scoped spawns cannot be joined selectively, so poll for writer
        // completion through the sequence number instead.
        let total = (WRITERS * ROUNDS * GROUP) as u64;
        while db.debug().latest_sequence() < total {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            checks += r.join().expect("reader panicked");
        }
    });
    assert!(checks > 0);
    assert_eq!(
        db.debug().latest_sequence(),
        (WRITERS * ROUNDS * GROUP) as u64
    );
    let last = format!("{:06}-{}", ROUNDS - 1, "x".repeat((ROUNDS - 1) % 200)).into_bytes();
    let verify = |db: &Db| {
        for w in 0..WRITERS {
            for j in 0..GROUP {
                assert_eq!(db.get(k(w, j)).expect("get"), Some(last.clone()));
            }
        }
        assert_eq!(db.iter().count(), WRITERS * GROUP);
    };
    verify(&db);
    let db = Arc::into_inner(db).expect("sole owner");
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    verify(&db);
    assert_eq!(
        db.debug().latest_sequence(),
        (WRITERS * ROUNDS * GROUP) as u64,
        "sequence numbers continue after reopen"
    );
}
