//! Sequence visibility under the slot write path: 8 writer threads put
//! batches of fresh keys (1 to 4 keys each, so every operation has its own
//! sequence number and every key is written once) while readers take
//! snapshots. In a snapshot at sequence `S` exactly `S - S0` keys must be
//! visible: a missing key would mean the reader saw sequence N+1 without N,
//! an extra one a write above the snapshot. Every batch is seen whole or
//! not at all, each writer's batches are seen as a prefix of its own order,
//! and every writer reads its own write as soon as `put` returns. A second
//! test hands each acknowledged key to another thread, which must see it at
//! once: writers do not wait for their own publication, reads do.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use varve::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

const WRITERS: usize = 8;
const BATCHES: usize = 4000;

fn key(w: usize, i: usize, j: usize) -> String {
    format!("w{w}-{i:05}-{j}")
}

fn batch_len(w: usize, i: usize) -> usize {
    1 + (w + i) % 4
}

#[test]
fn snapshots_never_see_a_gap_or_half_a_batch() {
    let dir = common::fast_tempdir();
    let opts = Options {
        write_buffer_size: 256 << 10, // memtable switches under load
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), opts).expect("open"));
    let s0 = db.debug().latest_sequence();
    let stop = Arc::new(AtomicBool::new(false));
    let mut checks = 0u64;
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let db = Arc::clone(&db);
                s.spawn(move || {
                    for i in 0..BATCHES {
                        let mut b = WriteBatch::new();
                        for j in 0..batch_len(w, i) {
                            b.put(key(w, i, j), b"v");
                        }
                        let wo = WriteOptions {
                            sync: i % 50 == 0,
                            disable_wal: false,
                        };
                        db.write_opt(b, &wo).expect("write");
                        // Read-your-writes, at once.
                        assert_eq!(
                            db.get(key(w, i, 0)).expect("get").as_deref(),
                            Some(&b"v"[..]),
                            "writer {w} does not see its own batch {i}"
                        );
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let db = Arc::clone(&db);
                let stop = Arc::clone(&stop);
                s.spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let snap = db.snapshot();
                        let seq = snap.sequence();
                        let ro = ReadOptions::at(&snap);
                        let keys: Vec<Vec<u8>> =
                            db.iter_opt(&ro).map(|kv| kv.expect("iter").0).collect();
                        assert_eq!(
                            keys.len() as u64,
                            seq - s0,
                            "snapshot at {seq} sees {} keys, not every sequence up to it",
                            keys.len()
                        );
                        // Per writer: whole batches, a prefix of its order.
                        let mut seen = vec![Vec::<(usize, usize)>::new(); WRITERS];
                        for k in &keys {
                            let s = std::str::from_utf8(k).expect("utf8");
                            let mut parts = s[1..].split('-');
                            let w: usize = parts.next().expect("w").parse().expect("w");
                            let i: usize = parts.next().expect("i").parse().expect("i");
                            let j: usize = parts.next().expect("j").parse().expect("j");
                            seen[w].push((i, j));
                        }
                        for (w, s) in seen.iter().enumerate() {
                            let batches = s.iter().map(|&(i, _)| i).max().map_or(0, |m| m + 1);
                            let expect: usize = (0..batches).map(|i| batch_len(w, i)).sum();
                            assert_eq!(
                                s.len(),
                                expect,
                                "writer {w}: snapshot {seq} sees half a batch or a gap in its order"
                            );
                        }
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        for h in writers {
            h.join().expect("writer");
        }
        stop.store(true, Ordering::Relaxed);
        for h in readers {
            checks += h.join().expect("reader");
        }
    });
    let total: usize = (0..WRITERS)
        .map(|w| (0..BATCHES).map(|i| batch_len(w, i)).sum::<usize>())
        .sum();
    assert_eq!(db.debug().latest_sequence() - s0, total as u64);
    assert!(checks > 0);
    eprintln!("visibility: {checks} snapshots checked");
}

/// 16 writers on (at most) 2 cores are preempted inside their memtable
/// inserts all the time, so an acknowledged write is often not published yet
/// when `put` returns. Each acknowledged key goes to a reader thread that
/// must find it with `get`, in a new snapshot and through an iterator seek.
#[test]
fn another_thread_sees_every_acknowledged_write_at_once() {
    const THREADS: usize = 16;
    const PUTS: usize = 3000;
    let dir = common::fast_tempdir();
    let db = Arc::new(Db::open(dir.path(), Options::default()).expect("open"));
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::scope(|s| {
        for w in 0..THREADS {
            let (db, tx) = (Arc::clone(&db), tx.clone());
            s.spawn(move || {
                for i in 0..PUTS {
                    let k = format!("t{w:02}-{i:05}");
                    db.put(&k, b"v").expect("put");
                    tx.send(k).expect("send");
                }
            });
        }
        drop(tx);
        let mut seen = 0;
        for k in rx {
            assert_eq!(
                db.get(&k).expect("get").as_deref(),
                Some(&b"v"[..]),
                "{k} acknowledged but not visible"
            );
            if seen % 64 == 0 {
                let snap = db.snapshot();
                let ro = ReadOptions {
                    snapshot: Some(snap),
                    ..ReadOptions::default()
                };
                assert!(db.get_opt(&k, &ro).expect("snapshot get").is_some());
                let mut it = db.iter();
                it.seek(k.as_bytes());
                assert!(it.valid(), "iterator ends before {k}");
                assert_eq!(it.key(), k.as_bytes(), "iterator misses {k}");
            }
            seen += 1;
        }
        assert_eq!(seen, THREADS * PUTS);
    });
}
