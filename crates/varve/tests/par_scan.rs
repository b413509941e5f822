//! Parallel scans, anchors and range splitting, against a plain iterator on
//! the same snapshot.
//!
//! Tables, memtables and level targets are tiny so a few thousand keys
//! spread over the memtables, L0 and several levels. Ranges are random
//! (bounded and unbounded ends, empty, outside the data) and so are thread
//! counts (1..8); writers run concurrently with the scans.
//!
//! Byte estimates are checked against two references: on a fully compacted
//! database (no memtable data) the whole key space must come to the sum of
//! the table file sizes; a sub-range must come to the bytes of its keys and
//! values (counted with an iterator) scaled by the database's ratio of file
//! bytes to key+value bytes. Keys and value lengths are spread uniformly,
//! so that ratio holds for every large enough range; ranges are at least a
//! tenth of the data so the boundary error (about one block per file at
//! each end, see `db/anchors.rs`) stays small against 25%.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{Rng, fast_tempdir};
use parking_lot::Mutex;
use varve::{Db, Error, KeyRange, Options, ReadOptions, WriteBatch};

fn options() -> Options {
    common::tiny_lsm_options()
}

const KEYS: u64 = 4000;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn value(rng: &mut Rng) -> Vec<u8> {
    let len = 20 + rng.below(60) as usize;
    (0..len).map(|_| rng.next() as u8).collect()
}

/// Writes every key once in a random order, then deletes and rewrites some,
/// so versions and tombstones exist on several levels.
fn fill(db: &Db, rng: &mut Rng) {
    let mut order: Vec<u64> = (0..KEYS).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for chunk in order.chunks(50) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(key(i), value(rng));
        }
        db.write(b).expect("write");
    }
    for _ in 0..KEYS / 4 {
        let i = rng.below(KEYS);
        if rng.below(2) == 0 {
            db.delete(key(i)).expect("delete");
        } else {
            db.put(key(i), value(rng)).expect("put");
        }
    }
}

/// A random bound: absent, inside the data, before or after it.
fn bound(rng: &mut Rng) -> Option<Vec<u8>> {
    match rng.below(8) {
        0 => None,
        1 => Some(b"a".to_vec()), // before every key
        2 => Some(b"z".to_vec()), // after every key
        _ => Some(key(rng.below(KEYS + 10))),
    }
}

fn random_range(rng: &mut Rng) -> KeyRange {
    KeyRange::from_bounds(bound(rng), bound(rng))
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// What a plain iterator sees with `opts` (snapshot and bounds).
fn expected(db: &Db, opts: &ReadOptions) -> Entries {
    db.iter_opt(opts)
        .collect::<varve::Result<_>>()
        .expect("iterate")
}

fn read_opts(snap: &varve::Snapshot, range: &KeyRange) -> ReadOptions {
    ReadOptions {
        snapshot: Some(snap.clone()),
        iterate_lower_bound: range.start.clone(),
        iterate_upper_bound: range.end.clone(),
        ..ReadOptions::default()
    }
}

#[test]
fn par_scan_matches_iterator_while_writing() {
    let dir = fast_tempdir();
    let db = Arc::new(Db::open(dir.path(), options()).expect("open"));
    // PAR_SCAN_SEED=n replays another random run.
    let seed = std::env::var("PAR_SCAN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15u64);
    let mut rng = Rng(seed.max(1));
    fill(&db, &mut rng);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 + w);
                while !stop.load(Ordering::Relaxed) {
                    let mut b = WriteBatch::new();
                    for _ in 0..10 {
                        let i = rng.below(KEYS + 10);
                        if rng.below(3) == 0 {
                            b.delete(key(i));
                        } else {
                            b.put(key(i), value(&mut rng));
                        }
                    }
                    db.write(b).expect("concurrent write");
                    std::thread::yield_now();
                }
            })
        })
        .collect();

    for round in 0..40 {
        let range = random_range(&mut rng);
        let threads = 1 + rng.below(8) as usize;
        let snap = db.snapshot();
        // Sometimes the read options narrow the range further.
        let mut opts = ReadOptions::at(&snap);
        if rng.below(4) == 0 {
            opts.iterate_lower_bound = bound(&mut rng);
            opts.iterate_upper_bound = bound(&mut rng);
        }
        let effective = range.intersect(&KeyRange::from_bounds(
            opts.iterate_lower_bound.clone(),
            opts.iterate_upper_bound.clone(),
        ));
        let want = expected(&db, &read_opts(&snap, &effective));
        let ctx = format!("seed {seed} round {round}: {range:?} opts {opts:?} threads {threads}");

        // Unordered: each chunk's keys in order, inside the chunk.
        let per_chunk: Mutex<BTreeMap<usize, (KeyRange, Entries)>> = Mutex::new(BTreeMap::new());
        db.par_scan(&opts, &range, threads, |c, k, v| {
            let mut m = per_chunk.lock();
            let e = m
                .entry(c.index)
                .or_insert_with(|| (c.range.clone(), Vec::new()));
            assert_eq!(e.0, c.range);
            e.1.push((k.to_vec(), v.to_vec()));
            Ok::<(), Error>(())
        })
        .expect("par_scan");
        let mut got = Vec::new();
        for (_, (r, entries)) in per_chunk.into_inner() {
            for w in entries.windows(2) {
                assert!(w[0].0 < w[1].0, "{ctx}: chunk out of order");
            }
            assert!(
                entries.iter().all(|(k, _)| r.contains(k)),
                "{ctx}: key outside chunk {r:?}"
            );
            got.extend(entries);
        }
        assert_eq!(got.len(), want.len(), "{ctx}");
        assert!(got == want, "{ctx}: par_scan differs from the iterator");

        // Ordered: the same entries, in order, chunk indexes ascending.
        let mut ordered = Vec::new();
        let mut last_chunk = 0;
        db.par_scan_ordered(&opts, &range, threads, |c, k, v| {
            assert!(c.index >= last_chunk, "{ctx}: chunks out of order");
            last_chunk = c.index;
            ordered.push((k.to_vec(), v.to_vec()));
            Ok::<(), Error>(())
        })
        .expect("par_scan_ordered");
        assert!(
            ordered == want,
            "{ctx}: ordered scan differs from the iterator"
        );

        let count = db.par_count(&opts, &range, threads).expect("par_count");
        assert_eq!(count, want.len() as u64, "{ctx}: par_count");
        if round % 10 == 9 {
            db.flush().expect("flush");
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
}

#[test]
fn fresh_snapshot_and_default_threads() {
    let dir = fast_tempdir();
    let db = Db::open(dir.path(), options()).expect("open");
    let mut rng = Rng(77);
    fill(&db, &mut rng);
    let want = expected(&db, &ReadOptions::default());
    let n = db
        .par_count(&ReadOptions::default(), &KeyRange::all(), 0)
        .expect("par_count");
    assert_eq!(n, want.len() as u64);
    let seen = AtomicUsize::new(0);
    db.par_scan(&ReadOptions::default(), &KeyRange::all(), 3, |_, _, _| {
        seen.fetch_add(1, Ordering::Relaxed);
        Ok::<(), Error>(())
    })
    .expect("par_scan");
    assert_eq!(seen.into_inner(), want.len());
    // Ranges without keys.
    for r in [
        KeyRange::new("k00100", "k00100"),
        KeyRange::new("k00200", "k00100"),
        KeyRange::new("a", "b"),
        KeyRange::from_bounds(Some(b"z".to_vec()), None),
        KeyRange::from_bounds(None, Some(Vec::new())),
    ] {
        assert_eq!(
            db.par_count(&ReadOptions::default(), &r, 4).expect("count"),
            0,
            "{r:?}"
        );
        let a = db.approximate_key_anchors(&r, 100).expect("anchors");
        assert!(a.anchors.is_empty(), "{r:?}: {a:?}");
        let parts = db.split_range(&r, 5).expect("split");
        assert_eq!(parts, vec![r.clone()]);
    }
}

#[derive(Debug)]
enum ScanError {
    Stop(usize),
    Db(#[allow(dead_code)] Error),
}

impl From<Error> for ScanError {
    fn from(e: Error) -> Self {
        ScanError::Db(e)
    }
}

#[test]
fn callback_error_stops_the_scan() {
    let dir = fast_tempdir();
    let db = Db::open(dir.path(), options()).expect("open");
    let mut rng = Rng(5);
    fill(&db, &mut rng);
    let total = db
        .par_count(&ReadOptions::default(), &KeyRange::all(), 2)
        .expect("count") as usize;
    for threads in [1, 2, 4, 8] {
        let calls = AtomicUsize::new(0);
        let r = db.par_scan(
            &ReadOptions::default(),
            &KeyRange::all(),
            threads,
            |_, _, _| {
                let n = calls.fetch_add(1, Ordering::Relaxed);
                if n >= 100 {
                    Err(ScanError::Stop(n))
                } else {
                    Ok(())
                }
            },
        );
        assert!(matches!(r, Err(ScanError::Stop(n)) if n >= 100), "{r:?}");
        let calls = calls.into_inner();
        assert!(
            calls <= 100 + threads,
            "{threads} threads: {calls} calls after the error"
        );
        assert!(calls < total);

        let mut seen = 0;
        let r = db.par_scan_ordered(
            &ReadOptions::default(),
            &KeyRange::all(),
            threads,
            |_, _, _| {
                seen += 1;
                if seen == 50 {
                    Err(ScanError::Stop(seen))
                } else {
                    Ok(())
                }
            },
        );
        assert!(matches!(r, Err(ScanError::Stop(50))), "{r:?}");
        assert_eq!(seen, 50);
    }
}

#[test]
fn panicking_callback_does_not_hang() {
    let dir = fast_tempdir();
    let db = Db::open(dir.path(), options()).expect("open");
    let mut rng = Rng(8);
    fill(&db, &mut rng);
    let opts = ReadOptions::default();
    let boom = |_: &varve::ChunkInfo, _: &[u8], _: &[u8]| -> Result<(), Error> { panic!("boom") };
    for threads in [1, 4] {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            db.par_scan(&opts, &KeyRange::all(), threads, boom)
        }));
        assert!(r.is_err(), "the panic propagates");
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            db.par_scan_ordered(&opts, &KeyRange::all(), threads, boom)
        }));
        assert!(r.is_err(), "the panic propagates");
    }
    // The database is still usable.
    assert!(db.par_count(&opts, &KeyRange::all(), 2).expect("count") > 0);
}

/// Checks the invariants of anchors for `range` with at most `max`.
fn check_anchors(db: &Db, range: &KeyRange, max: usize) -> u64 {
    let a = db.approximate_key_anchors(range, max).expect("anchors");
    assert!(
        a.anchors.len() <= max,
        "{range:?}: {} > {max}",
        a.anchors.len()
    );
    for w in a.anchors.windows(2) {
        assert!(w[0].key < w[1].key, "{range:?}: not sorted or duplicated");
    }
    for x in &a.anchors {
        assert!(
            range.contains(&x.key),
            "{range:?}: anchor {:?} outside",
            x.key
        );
        assert!(
            range.start.as_ref().is_none_or(|s| &x.key > s),
            "{range:?}: anchor at start"
        );
    }
    a.total_bytes()
}

#[test]
fn anchors_are_sorted_inside_and_limited() {
    let dir = fast_tempdir();
    let db = Db::open(dir.path(), options()).expect("open");
    let mut rng = Rng(31);
    fill(&db, &mut rng); // leaves data in memtables, L0 and deeper levels
    db.wait_for_compactions().expect("settle");
    assert!(db.debug().memtable_usage() > 0);
    for _ in 0..100 {
        let range = random_range(&mut rng);
        let totals: Vec<u64> = [0, 1, 2, 7, 50, 100_000]
            .iter()
            .map(|&max| check_anchors(&db, &range, max))
            .collect();
        // Thinning moves bytes between anchors but never loses any.
        assert!(
            totals.windows(2).all(|w| w[0] == w[1]),
            "{range:?}: {totals:?}"
        );
    }
}

fn file_bytes(db: &Db) -> u64 {
    db.stats().levels.iter().map(|l| l.bytes).sum()
}

/// Key+value bytes of `range`, per a plain iterator.
fn kv_bytes(db: &Db, range: &KeyRange) -> u64 {
    let opts = ReadOptions {
        iterate_lower_bound: range.start.clone(),
        iterate_upper_bound: range.end.clone(),
        ..ReadOptions::default()
    };
    db.iter_opt(&opts)
        .map(|kv| kv.map(|(k, v)| (k.len() + v.len()) as u64))
        .sum::<varve::Result<u64>>()
        .expect("iterate")
}

fn assert_within_25(est: u64, real: f64, what: &str) {
    let err = (est as f64 - real).abs() / real;
    assert!(
        err <= 0.25,
        "{what}: estimate {est}, real {real:.0} ({:.0}% off)",
        err * 100.0
    );
}

#[test]
fn anchor_bytes_within_25_percent() {
    anchor_bytes_within_25_percent_with(options());
}

/// Files of about a thousand 256-byte blocks: more blocks than a file gives
/// samples, so blocks are grouped.
#[test]
fn anchor_bytes_within_25_percent_large_files() {
    anchor_bytes_within_25_percent_with(Options {
        block_size: 256,
        write_buffer_size: 1 << 20,
        target_file_size: 1 << 20,
        max_bytes_for_level_base: 4 << 20,
        ..options()
    });
}

fn anchor_bytes_within_25_percent_with(options: Options) {
    let dir = fast_tempdir();
    let db = Db::open(dir.path(), options).expect("open");
    let mut rng = Rng(99);
    fill(&db, &mut rng);
    db.compact_range(None, None).expect("compact");
    db.wait_for_compactions().expect("settle");

    // Whole key space: the table files.
    let files = file_bytes(&db);
    let n_files: usize = db.stats().levels.iter().map(|l| l.files).sum();
    let a = db
        .approximate_key_anchors(&KeyRange::all(), usize::MAX)
        .expect("anchors");
    assert!(
        a.anchors.len() <= 256 * n_files,
        "{} samples from {n_files} files",
        a.anchors.len()
    );
    let est = check_anchors(&db, &KeyRange::all(), 64);
    assert_within_25(est, files as f64, "whole range");

    // Sub-ranges: key+value bytes scaled by the file/key+value ratio.
    let ratio = files as f64 / kv_bytes(&db, &KeyRange::all()) as f64;
    let mut checked = 0;
    while checked < 30 {
        let (a, b) = (rng.below(KEYS), rng.below(KEYS));
        let (a, b) = (a.min(b), a.max(b));
        if b - a < KEYS / 10 {
            continue;
        }
        let range = match rng.below(4) {
            0 => KeyRange::from_bounds(None, Some(key(b))),
            1 => KeyRange::from_bounds(Some(key(a)), None),
            _ => KeyRange::new(key(a), key(b)),
        };
        let real = kv_bytes(&db, &range) as f64 * ratio;
        let est = check_anchors(&db, &range, 1 + rng.below(200) as usize);
        assert_within_25(est, real, &format!("{range:?}"));
        checked += 1;
    }
}

#[test]
fn anchor_bytes_count_memtables() {
    let dir = fast_tempdir();
    let db = Db::open(
        dir.path(),
        Options {
            write_buffer_size: 4 << 20,
            ..options()
        },
    )
    .expect("open");
    let mut rng = Rng(3);
    for i in 0..KEYS {
        db.put(key(i), value(&mut rng)).expect("put");
    }
    assert_eq!(file_bytes(&db), 0, "everything is in the memtable");
    let mem = db.debug().memtable_usage();
    let est = check_anchors(&db, &KeyRange::all(), 1000);
    assert_within_25(est, mem as f64, "memtable");
    let half = KeyRange::from_bounds(None, Some(key(KEYS / 2)));
    let real = mem as f64 * kv_bytes(&db, &half) as f64 / kv_bytes(&db, &KeyRange::all()) as f64;
    assert_within_25(check_anchors(&db, &half, 10), real, "half of the memtable");

    // Memtable and tables together.
    db.flush().expect("flush");
    for i in 0..KEYS / 2 {
        db.put(key(i), value(&mut rng)).expect("put");
    }
    db.wait_for_compactions().expect("settle");
    let real = (file_bytes(&db) + db.debug().memtable_usage() as u64) as f64;
    assert_within_25(
        check_anchors(&db, &KeyRange::all(), 10),
        real,
        "memtable + tables",
    );
}

#[test]
fn split_range_covers_without_gaps_or_overlaps() {
    let dir = fast_tempdir();
    let db = Db::open(dir.path(), options()).expect("open");
    let mut rng = Rng(2024);
    fill(&db, &mut rng);
    db.wait_for_compactions().expect("settle");
    let all_keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.expect("iterate").0).collect();
    for _ in 0..60 {
        let range = random_range(&mut rng);
        let n = rng.below(40) as usize; // 0 counts as 1
        let parts = db.split_range(&range, n).expect("split");
        assert!(
            !parts.is_empty() && parts.len() <= n.max(1),
            "{range:?} {n}: {}",
            parts.len()
        );
        assert_eq!(parts[0].start, range.start);
        assert_eq!(parts.last().map(|p| &p.end), Some(&range.end));
        for w in parts.windows(2) {
            assert_eq!(w[0].end, w[1].start, "{range:?}: gap or overlap");
        }
        if !range.is_empty() {
            assert!(
                parts.iter().all(|p| !p.is_empty()),
                "{range:?}: empty part {parts:?}"
            );
        }
        // Every key of the range is in exactly one part.
        for k in &all_keys {
            let inside = parts.iter().filter(|p| p.contains(k)).count();
            assert_eq!(
                inside,
                usize::from(range.contains(k)),
                "{range:?}: key {k:?}"
            );
        }
    }
    // A large range splits into the parts asked for, of comparable size.
    let parts = db.split_range(&KeyRange::all(), 4).expect("split");
    assert_eq!(parts.len(), 4);
    let total = kv_bytes(&db, &KeyRange::all()) as f64;
    for p in &parts {
        let share = kv_bytes(&db, p) as f64 / total;
        assert!(
            (0.10..=0.40).contains(&share),
            "{p:?}: {share:.2} of the data"
        );
    }
}
