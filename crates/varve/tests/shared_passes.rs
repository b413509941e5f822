//! Shared passes (`ReadOptions::shared_passes`, `docs/shared-passes.md`):
//! iterators that walk the same state from its first key at the same time
//! share one merge (a lone one walks alone).
//! Each must see exactly what an iterator with its own merge sees on the
//! same snapshot, however many walk together (1 to 128), whatever else
//! they do (step back, seek, stop for a while and fall out of the window,
//! stop early), while writes, deletes and range deletes go on; a damaged
//! value is an error for every iterator of the pass that asks for it (and
//! for none that does not), never a wrong value.

use std::sync::Barrier;

mod common;

use varve::{Db, Options, ReadOptions, Snapshot};

fn key(i: u64) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

/// A value that names its key and version; blob-sized when `big`.
fn value(i: u64, version: u64, big: bool) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; if big { 4096 } else { 40 }];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v[8..16].copy_from_slice(&version.to_le_bytes());
    v
}

const KEYS: u64 = 6000;

fn options() -> Options {
    Options {
        min_blob_size: Some(1024),
        write_buffer_size: 1 << 20,
        shared_scan_bytes: 16 << 20,
        ..Options::default()
    }
}

/// Keys `0..KEYS`, every third one a blob value, over several tables and
/// the memtable, with some keys overwritten, some deleted and one range
/// deleted.
fn database(dir: &std::path::Path) -> Db {
    let db = Db::open(dir, options()).expect("open");
    for i in 0..KEYS {
        db.put(key(i), value(i, 0, i % 3 == 0)).expect("put");
    }
    db.flush().expect("flush");
    for i in (0..KEYS).step_by(7) {
        db.put(key(i), value(i, 1, i % 2 == 0)).expect("overwrite");
    }
    for i in (0..KEYS).step_by(11) {
        db.delete(key(i)).expect("delete");
    }
    db.delete_range(key(2000)..key(2100)).expect("delete range");
    db
}

/// Keys `0..KEYS`, each a 4 KiB blob value, compacted into one level
/// (values in key order), closed.
fn blob_database(dir: &std::path::Path) {
    let db = Db::open(dir, options()).expect("open");
    for i in 0..KEYS {
        db.put(key(i), value(i, 0, true)).expect("put");
    }
    db.compact_range(None, None).expect("compact");
    db.close().expect("close");
}

fn own(snapshot: &Snapshot) -> ReadOptions {
    ReadOptions {
        shared_passes: false,
        ..ReadOptions::at(snapshot)
    }
}

/// Everything an iterator with its own merge sees at `snapshot`.
fn alone(db: &Db, snapshot: &Snapshot) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter_opt(&own(snapshot))
        .map(|r| r.expect("entry"))
        .collect()
}

/// What a shared-pass cursor sees, front to back; `pause` is called after
/// each entry.
fn walk(db: &Db, snapshot: &Snapshot, mut pause: impl FnMut(usize)) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter_opt(&ReadOptions::at(snapshot));
    it.seek_to_first();
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        pause(got.len());
        it.move_next();
    }
    it.status().expect("no error");
    got
}

#[test]
fn many_iterators_walking_together_see_what_a_lone_iterator_sees() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path());
    let snapshot = db.snapshot();
    let want = alone(&db, &snapshot);
    assert!(want.len() > 4000, "{} entries", want.len());
    for n in [1usize, 2, 8, 64, 128] {
        let before = db.stats();
        let start = Barrier::new(n + 1);
        std::thread::scope(|s| {
            let (db, snapshot, want, start) = (&db, &snapshot, &want, &start);
            for t in 0..n {
                s.spawn(move || {
                    start.wait();
                    let got = walk(db, snapshot, |_| {});
                    assert!(
                        got == *want,
                        "{n} iterators: iterator {t} saw something else"
                    );
                });
            }
            // Writes go on meanwhile: no iterator sees them.
            s.spawn(move || {
                start.wait();
                for i in 0..500 {
                    db.put(key(i * 3), value(i, 9, false)).expect("put");
                }
                db.delete_range(key(100)..key(900)).expect("delete range");
            });
        });
        let after = db.stats();
        let passes = after.shared_passes - before.shared_passes;
        let segments = after.shared_pass_segments - before.shared_pass_segments;
        if n == 1 {
            // A lone iterator walks alone: no pass, no segment copies.
            assert_eq!(passes, 0, "a lone iterator started a pass");
            continue;
        }
        assert!(passes >= 1, "{n} iterators started {passes} passes");
        // Sharing: fewer merges than iterators when many walk together.
        if n >= 64 {
            assert!(
                (passes as usize) < n,
                "{n} iterators, {passes} passes: nothing was shared"
            );
        }
        assert!(segments >= passes * (want.len() as u64 / 256));
    }
    assert_eq!(
        db.stats().shared_pass_bytes,
        0,
        "passes end with their iterators"
    );
    assert!(db.stats().report().contains("Shared passes:"));
}

#[test]
fn iterators_at_different_sequence_numbers_do_not_share() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path());
    let mut a = db.iter();
    a.seek_to_first();
    db.put(key(KEYS + 1), value(KEYS + 1, 0, true))
        .expect("put");
    db.delete(key(1)).expect("delete");
    let mut b = db.iter();
    b.seek_to_first();
    let (mut ka, mut kb) = (Vec::new(), Vec::new());
    while a.valid() {
        ka.push(a.key().to_vec());
        a.move_next();
    }
    while b.valid() {
        kb.push(b.key().to_vec());
        b.move_next();
    }
    assert!(ka.contains(&key(1)) && !ka.contains(&key(KEYS + 1)));
    assert!(!kb.contains(&key(1)) && kb.contains(&key(KEYS + 1)));
}

/// Iterators of one pass that step back, seek, run the Rust iterator from
/// both ends, stop early, or stop long enough for the pass to drop their
/// next segment: each sees what an iterator of its own sees.
#[test]
fn iterators_that_leave_the_pass_go_on_alone_with_the_same_results() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path());
    let snapshot = db.snapshot();
    let want = alone(&db, &snapshot);
    let behind_before = db.stats().shared_pass_behind;
    // Another iterator walking the state (alone): every thread below makes
    // or joins a pass, whichever starts first.
    let mut other = db.iter_opt(&ReadOptions::at(&snapshot));
    other.seek_to_first();
    let start = Barrier::new(6);
    let leaders_done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let (db, snapshot, want, start) = (&db, &snapshot, &want, &start);
        let leaders_done = &leaders_done;
        // Leaders.
        for _ in 0..3 {
            s.spawn(move || {
                start.wait();
                assert!(walk(db, snapshot, |_| {}) == *want);
                leaders_done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        // A sleeper: stops after 300 entries until the leaders finished
        // (the pass dropped its window), then goes on.
        s.spawn(move || {
            start.wait();
            let got = walk(db, snapshot, |n| {
                if n == 300 {
                    let t = std::time::Instant::now();
                    while leaders_done.load(std::sync::atomic::Ordering::SeqCst) < 3 {
                        assert!(t.elapsed().as_secs() < 120, "the leaders never finished");
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
            });
            assert!(got == *want, "the sleeper saw something else");
        });
        // Steps back and forth, seeks.
        s.spawn(move || {
            start.wait();
            let mut it = db.iter_opt(&ReadOptions::at(snapshot));
            it.seek_to_first();
            for _ in 0..700 {
                it.move_next();
            }
            assert_eq!(it.key(), want[700].0.as_slice());
            it.move_prev();
            assert_eq!(it.key(), want[699].0.as_slice());
            assert_eq!(it.value(), want[699].1.as_slice());
            it.move_next();
            it.move_next();
            assert_eq!(it.key(), want[701].0.as_slice());
            it.seek(&want[3000].0);
            assert_eq!(it.value(), want[3000].1.as_slice());
            it.seek_to_first();
            assert_eq!(it.key(), want[0].0.as_slice());
            let mut n = 0;
            while it.valid() {
                assert_eq!(it.key(), want[n].0.as_slice());
                n += 1;
                it.move_next();
            }
            assert_eq!(n, want.len());
        });
        // Both ends of the Rust iterator.
        s.spawn(move || {
            start.wait();
            let mut it = db.iter_opt(&ReadOptions::at(snapshot));
            let (mut front, mut back) = (Vec::new(), Vec::new());
            while let Some(e) = it.next() {
                front.push(e.expect("front"));
                if front.len() % 3 == 0 {
                    match it.next_back() {
                        Some(e) => back.push(e.expect("back")),
                        None => break,
                    }
                }
            }
            back.reverse();
            front.extend(back);
            assert!(front == *want, "the two ends saw something else");
        });
    });
    drop(other);
    assert!(
        db.stats().shared_pass_behind > behind_before,
        "the sleeper fell out of the window"
    );
}

/// A database of 4 KiB blob values with a byte flipped in one of them,
/// walked by 16 threads that start together (so they share passes): each
/// runs `walker` with its index.
fn on_a_damaged_blob(walker: impl Fn(usize, &Db) + Sync) {
    let dir = tempfile::tempdir().expect("tempdir");
    blob_database(dir.path());
    common::flip_byte_in_largest_blob(dir.path());
    let db = Db::open(dir.path(), options()).expect("open");
    let start = Barrier::new(16);
    std::thread::scope(|s| {
        for t in 0..16 {
            let (db, start, walker) = (&db, &start, &walker);
            s.spawn(move || {
                start.wait();
                walker(t, db);
            });
        }
    });
}

/// Walks a new iterator of `db` from the first key until it turns
/// invalid, checking every key and, when `reads_values`, every value;
/// returns it and the number of entries it passed.
fn walk_checked(db: &Db, reads_values: bool) -> (varve::DbIterator, u64) {
    let mut it = db.iter();
    it.seek_to_first();
    let mut n = 0u64;
    while it.valid() {
        assert_eq!(it.key(), key(n).as_slice());
        if reads_values {
            let v = it.value().to_vec();
            if !it.valid() {
                break;
            }
            assert!(v == value(n, 0, true), "a wrong value for key {n}");
        }
        n += 1;
        it.move_next();
    }
    (it, n)
}

/// A flipped byte in a blob value: every iterator of the pass stops with
/// a corruption error at that value (whichever read it), and the values
/// before it are exact.
#[test]
fn a_damaged_blob_value_is_an_error_for_every_iterator_of_the_pass() {
    on_a_damaged_blob(|_, db| {
        let (mut it, n) = walk_checked(db, true);
        let err = it.status().expect_err("the damaged value is an error");
        assert!(matches!(err, varve::Error::Corruption { .. }), "{err:?}");
        assert!(n < KEYS, "the iterator stopped at the damage");
        // It stays stopped, whatever it is asked next.
        it.move_next();
        assert!(!it.valid() && it.status().is_err());
        it.seek_to_first();
        assert!(
            !it.valid() && it.status().is_err(),
            "no seek brings it back"
        );
    });
}

/// A flipped byte in a blob value, and a pass of iterators of which half
/// read values and half read keys only: each value reader stops with a
/// corruption error at the damage, and each key-only walker sees every key
/// with no error, as it would alone (a damaged value is an error only for
/// an iterator that asks for it, whoever else in the pass asked first).
#[test]
fn a_damaged_blob_value_is_no_error_for_a_key_only_iterator_of_the_pass() {
    on_a_damaged_blob(|t, db| {
        let reads_values = t % 2 == 0;
        let (it, n) = walk_checked(db, reads_values);
        if reads_values {
            let err = it.status().expect_err("the damaged value is an error");
            assert!(matches!(err, varve::Error::Corruption { .. }), "{err:?}");
            assert!(n < KEYS, "the value reader stopped at the damage");
        } else {
            it.status().expect("a key-only walk reads no value");
            assert_eq!(n, KEYS, "the key-only walker saw every key");
        }
    });
}

/// Iterators of a pass that read keys only read no blob value: neither
/// they nor the pass's scout load a chunk. Once one asks for values, the
/// chunks are loaded (some ahead of it), and every value is exact.
#[test]
fn a_key_only_pass_reads_no_values_and_a_value_pass_reads_them_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    blob_database(dir.path());
    // A pool that holds the whole database: each chunk is loaded once.
    let db = Db::open(
        dir.path(),
        Options {
            shared_scan_bytes: 32 << 20,
            ..options()
        },
    )
    .expect("open");
    let start = Barrier::new(8);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                start.wait();
                let mut it = db.iter();
                it.seek_to_first();
                let mut n = 0;
                while it.valid() {
                    n += 1;
                    it.move_next();
                }
                assert_eq!(n, KEYS);
            });
        }
    });
    let s = db.stats();
    assert_eq!(s.shared_scan_loads, 0, "a key-only walk loaded chunks");
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                start.wait();
                let mut it = db.iter();
                it.seek_to_first();
                let mut n = 0;
                while it.valid() {
                    assert_eq!(it.value(), value(n, 0, true).as_slice());
                    n += 1;
                    it.move_next();
                }
                it.status().expect("no error");
                assert_eq!(n, KEYS);
            });
        }
    });
    let s = db.stats();
    let chunks = (KEYS * 4096).div_ceil(1 << 20) + 2;
    assert!(s.shared_scan_loads > 0, "{s:?}");
    assert!(s.shared_scan_loads <= chunks, "each chunk once: {s:?}");
}
