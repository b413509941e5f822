//! `Options::ttl` and `Options::compaction_filter`: expired entries are
//! hidden from every read path and dropped by compaction (whole tables
//! without a rewrite), across reopens; a compaction filter removes or
//! changes values only where no snapshot can tell, never bringing back an
//! older version, and sees values kept in blob files. On a manual clock,
//! against a model that knows each put's own start and end time: expiry
//! is never early (sub-second TTLs and a keyspace TTL included), never
//! undone (close, reopen, a crash with power loss, a flush of one
//! keyspace, `compact_range`), and within the bound of
//! `docs/ttl-and-filters.md`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use varve::testing::{FaultInjectingFs, ManualClock};
use varve::{
    CompactionFilter, Db, FilterDecision, KeyRange, Keyspace, KeyspaceOptions, Options,
    ReadOptions, WriteOptions,
};

fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// Every read path finds exactly `want` among `keys` (and nothing else).
fn check_only(db: &Db, ro: &ReadOptions, keys: &[Vec<u8>], want: &[Vec<u8>], what: &str) {
    for k in keys {
        assert_eq!(
            db.get_opt(k, ro).expect("get").is_some(),
            want.contains(k),
            "{what}: get {}",
            String::from_utf8_lossy(k)
        );
    }
    for async_io in [false, true] {
        let mut ro = ro.clone();
        ro.async_io = async_io;
        for (k, r) in keys.iter().zip(db.multi_get(&ro, keys)) {
            assert_eq!(
                r.expect("multi_get").is_some(),
                want.contains(k),
                "{what}: multi_get"
            );
        }
    }
    let fwd: Vec<Vec<u8>> = db.iter_opt(ro).map(|r| r.expect("iter").0).collect();
    assert_eq!(fwd, want, "{what}: forward scan");
    let mut back: Vec<Vec<u8>> = db.iter_opt(ro).rev().map(|r| r.expect("iter").0).collect();
    back.reverse();
    assert_eq!(back, want, "{what}: backward scan");
    let n = db.par_count(ro, &KeyRange::all(), 2).expect("par_count");
    assert_eq!(n, want.len() as u64, "{what}: par_count");
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not after {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn expired_entries_vanish_from_every_read_and_from_the_tables() {
    let dir = common::fast_tempdir();
    let opts = Options {
        ttl: Some(Duration::from_secs(2)),
        ..common::tiny_lsm_options()
    };
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let old: Vec<Vec<u8>> = (0..300).map(key).collect();
    for k in &old {
        db.put(k, b"old").expect("put");
    }
    db.flush().expect("flush");
    let snap = db.snapshot();
    // Right after the write nothing is expired (expiry is never early).
    check_only(&db, &ReadOptions::default(), &old, &old, "fresh");
    wait_until("the old keys expire", Duration::from_secs(20), || {
        db.get(&old[0]).expect("get").is_none()
    });
    let new: Vec<Vec<u8>> = (300..320).map(key).collect();
    for k in &new {
        db.put(k, b"new").expect("put");
    }
    let all: Vec<Vec<u8>> = old.iter().chain(&new).cloned().collect();
    check_only(&db, &ReadOptions::default(), &all, &new, "expired");
    // A snapshot does not bring expired entries back.
    check_only(
        &db,
        &ReadOptions::at(&snap),
        &all,
        &[],
        "expired, at an older snapshot",
    );
    drop(snap);

    // The background thread deletes the old keys' tables whole, without
    // a compaction.
    wait_until(
        "the expired tables are deleted",
        Duration::from_secs(20),
        || db.debug().table_entries() == 0,
    );
    assert!(db.stats().ttl_tables_dropped > 0, "{}", db.stats());
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    check_only(&db, &ReadOptions::default(), &all, &new, "after compaction");
    db.close().expect("close");

    // The samples are in the manifest: after a reopen the old keys stay
    // expired at once.
    let db = Db::open(dir.path(), opts).expect("reopen");
    check_only(&db, &ReadOptions::default(), &all, &new, "reopened");
}

#[test]
fn a_ttl_under_a_millisecond_is_refused() {
    let dir = common::fast_tempdir();
    let err = Db::open(
        dir.path(),
        Options {
            ttl: Some(Duration::from_micros(500)),
            ..Options::default()
        },
    )
    .expect_err("sub-millisecond ttl");
    assert!(matches!(err, varve::Error::InvalidArgument(_)), "{err:?}");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let err = db
        .keyspace(
            "k",
            varve::KeyspaceOptions {
                ttl: Some(Duration::ZERO),
                ..varve::KeyspaceOptions::default()
            },
        )
        .expect_err("zero keyspace ttl");
    assert!(matches!(err, varve::Error::InvalidArgument(_)), "{err:?}");
}

/// Removes `tmp:` values, upper-cases `up:` values, counts its calls.
struct Filter {
    calls: std::sync::atomic::AtomicU64,
}

impl CompactionFilter for Filter {
    fn name(&self) -> &str {
        "test-filter"
    }
    fn filter(&self, _key: &[u8], value: &[u8]) -> FilterDecision {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if value.starts_with(b"tmp:") {
            FilterDecision::Remove
        } else if let Some(rest) = value.strip_prefix(b"up:") {
            FilterDecision::ChangeValue(rest.to_ascii_uppercase())
        } else {
            FilterDecision::Keep
        }
    }
}

#[test]
fn a_compaction_filter_is_snapshot_safe_and_never_resurrects_an_older_value() {
    let dir = common::fast_tempdir();
    let filter = Arc::new(Filter {
        calls: Default::default(),
    });
    let opts = Options {
        compaction_filter: Some(filter.clone()),
        min_blob_size: Some(1024),
        ..common::tiny_lsm_options()
    };
    let db = Db::open(dir.path(), opts).expect("open");
    let big_tmp = [b"tmp:".as_slice(), &[b'x'; 3000]].concat();
    // `shadowed` has an old value below a removable one: removing the new
    // one must not bring the old one back.
    db.put(b"shadowed", b"old value").expect("put");
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    // `guarded` is written before a snapshot: the snapshot sees it, so the
    // filter must leave it alone while the snapshot lives.
    db.put(b"guarded", b"tmp:guarded").expect("put");
    let snap = db.snapshot();
    db.put(b"shadowed", b"tmp:gone").expect("put");
    db.put(b"upper", b"up:abc").expect("put");
    db.put(b"plain", b"stays").expect("put");
    db.put(b"blob", &big_tmp).expect("put"); // in a blob file
    db.compact_range(None, None).expect("compact");
    assert!(filter.calls.load(std::sync::atomic::Ordering::Relaxed) > 0);
    let latest = ReadOptions::default();
    assert_eq!(
        db.get(b"shadowed").expect("get"),
        None,
        "no older value comes back"
    );
    assert_eq!(db.get(b"upper").expect("get"), Some(b"ABC".to_vec()));
    assert_eq!(db.get(b"plain").expect("get"), Some(b"stays".to_vec()));
    assert_eq!(
        db.get(b"blob").expect("get"),
        None,
        "the filter saw the blob value"
    );
    assert_eq!(
        db.get_opt(b"guarded", &ReadOptions::at(&snap))
            .expect("get"),
        Some(b"tmp:guarded".to_vec()),
        "the snapshot's view is unchanged"
    );
    assert_eq!(
        db.get_opt(b"shadowed", &ReadOptions::at(&snap))
            .expect("get"),
        Some(b"old value".to_vec()),
        "the snapshot still sees the version it saw"
    );
    assert_eq!(
        db.get(b"guarded").expect("get"),
        Some(b"tmp:guarded".to_vec()),
        "not filtered while a snapshot sees it"
    );
    let keys: Vec<Vec<u8>> = db.iter_opt(&latest).map(|r| r.expect("iter").0).collect();
    assert_eq!(
        keys,
        [b"guarded".to_vec(), b"plain".to_vec(), b"upper".to_vec()]
    );
    drop(snap);
    db.compact_range(None, None).expect("compact");
    assert_eq!(
        db.get(b"guarded").expect("get"),
        None,
        "filtered once no snapshot sees it"
    );
    db.close().expect("close");
}

/// The grid the manual clock moves on: the sync thread's TTL step sees
/// every point of it (the test waits for it), so its delay `d` past a
/// moment it has work is under one step.
const STEP: Duration = Duration::from_millis(10);

/// `docs/ttl-and-filters.md`'s late bound, `I + 2·d + 3 ms`, with the
/// sample interval `I` of the shortest TTL here (300 ms / 64, raised to
/// 50 ms) and `d` one grid step.
const LATE_BOUND: Duration = Duration::from_millis(50 + 2 * 10 + 3);

/// The default keyspace's TTL and the two others' (name, TTL).
const DEFAULT_TTL: Duration = Duration::from_millis(1500);
const KEYSPACES: [(&str, Duration); 2] = [
    ("short", Duration::from_millis(300)),
    ("mid", Duration::from_millis(1250)),
];

/// One key the model follows, by the test's clock only.
struct Expiring {
    /// Index into the handles: 0 the default keyspace, then `KEYSPACES`.
    ks: usize,
    key: Vec<u8>,
    ttl: Duration,
    /// The clock just before the put started and just after it returned.
    put_start: Duration,
    put_end: Duration,
    /// After a crash: the reopen's time (its samples were perhaps lost;
    /// the documented bound then counts from the reopen).
    late_from: Duration,
    hidden_at: Option<Duration>,
}

struct TtlModel {
    clock: Arc<ManualClock>,
    entries: Vec<Expiring>,
    polls: u64,
    /// The longest a key was seen past put end + TTL (keys written
    /// before a crash left out).
    max_late: Duration,
}

impl TtlModel {
    /// Checks every key through `handles` at the clock's time now: visible
    /// before put start + TTL, hidden for good once hidden, and (with
    /// `late`) hidden by the documented bound.
    fn poll(&mut self, handles: &[Keyspace], late: bool, what: &str) {
        let now = self.clock.now_for_test();
        self.polls += 1;
        for e in &mut self.entries {
            let visible = handles[e.ks].get(&e.key).expect("get").is_some();
            let name = String::from_utf8_lossy(&e.key);
            assert!(
                visible || now >= e.put_start + e.ttl,
                "{what}: {name} hidden early, {:?} after its put started (ttl {:?})",
                now - e.put_start,
                e.ttl
            );
            if let Some(at) = e.hidden_at {
                assert!(
                    !visible,
                    "{what}: {name} visible again at {now:?}, hidden since {at:?}"
                );
            } else if !visible {
                e.hidden_at = Some(now);
            } else if late && e.late_from <= e.put_end {
                // Seen this long past its put's end + TTL (no crash since).
                let late_by = now.saturating_sub(e.put_end + e.ttl);
                self.max_late = self.max_late.max(late_by);
            }
            let deadline = e.put_end.max(e.late_from) + e.ttl + LATE_BOUND;
            assert!(
                !(late && visible && now >= deadline),
                "{what}: {name} still visible {:?} after put end + ttl",
                now - (e.put_end + e.ttl)
            );
        }
    }
}

/// The clock's reading (the `Clock` trait's `now`).
trait NowForTest {
    fn now_for_test(&self) -> Duration;
}

impl NowForTest for ManualClock {
    fn now_for_test(&self) -> Duration {
        varve::testing::Clock::now(self)
    }
}

/// Moves the clock one step and waits until the sync thread's TTL step
/// has run at the new time.
fn tick(db: &Db, clock: &ManualClock) {
    clock.advance(STEP);
    let want = clock.now_for_test().as_millis() as u64;
    let start = Instant::now();
    while db.debug().ttl_stepped_through() < want {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the sync thread never reached {want} ms"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn ttl_options(clock: &Arc<ManualClock>, fs: &FaultInjectingFs) -> Options {
    Options {
        ttl: Some(DEFAULT_TTL),
        clock: Some(clock.clone()),
        fs: Arc::new(fs.clone()),
        // The sync thread's tick, in real time: it sees each clock step
        // quickly.
        wal_idle_flush_interval: Duration::from_millis(2),
        ..common::tiny_lsm_options()
    }
}

/// The handles: the default keyspace, then `KEYSPACES` with their TTLs
/// (`with_ttl`) or with none (named after a reopen without a TTL yet).
fn handles(db: &Db, with_ttl: bool) -> Vec<Keyspace> {
    let mut out = vec![db.default_keyspace()];
    for (name, ttl) in KEYSPACES {
        let ks = db
            .keyspace(
                name,
                KeyspaceOptions {
                    ttl: with_ttl.then_some(ttl),
                    write_buffer_size: Some(64 << 10),
                    ..KeyspaceOptions::default()
                },
            )
            .expect("keyspace");
        out.push(ks);
    }
    out
}

/// TTL against a model on a manual clock that starts 730.4 ms into a second
/// and moves in 10 ms steps across second boundaries: 1.5 s (default
/// keyspace), 300 ms and 1.25 s (keyspaces) TTLs; keys written at spread
/// sub-second offsets; a reader checking every key at every step; a flush
/// of only one keyspace (its memtable fills), `compact_range`, a clean
/// close with 700 ms passing while closed (the keyspaces first named
/// without their TTL), a crash with power loss, and a clean close and
/// reopen with no time passing.
#[test]
fn ttl_on_a_manual_clock_is_never_early_never_undone_and_bounded() {
    let dir = common::fast_tempdir();
    let clock = Arc::new(ManualClock::new(Duration::from_nanos(
        1_700_000_000_730_400_123,
    )));
    let mut fs = FaultInjectingFs::new(Arc::new(varve::fs::PosixFs));
    let mut db = Db::open(dir.path(), ttl_options(&clock, &fs)).expect("open");
    let mut ks = handles(&db, true);
    let ttls = [DEFAULT_TTL, KEYSPACES[0].1, KEYSPACES[1].1];
    let mut model = TtlModel {
        clock: clock.clone(),
        entries: Vec::new(),
        polls: 0,
        max_late: Duration::ZERO,
    };
    let sync = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    let put = |model: &mut TtlModel, ks: &[Keyspace], i: usize, key: String, value: &[u8]| {
        let put_start = clock.now_for_test();
        ks[i].put_opt(&key, value, &sync).expect("put");
        model.entries.push(Expiring {
            ks: i,
            key: key.into_bytes(),
            ttl: ttls[i],
            put_start,
            put_end: clock.now_for_test(),
            late_from: Duration::ZERO,
            hidden_at: None,
        });
    };
    let mut n = 0;
    for step in 0..800 {
        if step < 500 && step % 3 == 0 {
            for i in 0..3 {
                put(&mut model, &ks, i, format!("k{n:05}"), b"v");
                n += 1;
            }
        }
        match step {
            120 => {
                // Fills keyspace `mid`'s memtable: it alone is flushed.
                let flushes = db.stats().flushes;
                for b in 0..40 {
                    put(&mut model, &ks, 2, format!("bulk{b:03}"), &[b'x'; 2048]);
                }
                let start = Instant::now();
                while db.stats().flushes == flushes {
                    assert!(start.elapsed() < Duration::from_secs(10), "no flush");
                    std::thread::sleep(Duration::from_millis(1));
                }
                model.poll(&ks, true, "after a flush of one keyspace");
            }
            200 => {
                db.compact_range(None, None).expect("compact");
                for k in &ks[1..] {
                    k.compact_range(None, None).expect("compact keyspace");
                }
                model.poll(&ks, true, "after compact_range");
            }
            300 => {
                drop(ks);
                db.close().expect("close");
                clock.advance(Duration::from_millis(700));
                fs = FaultInjectingFs::new(Arc::new(varve::fs::PosixFs));
                db = Db::open(dir.path(), ttl_options(&clock, &fs)).expect("reopen");
                // Before the keyspaces' TTLs are known: nothing comes back
                // (and nothing new expires in them).
                ks = handles(&db, false);
                model.poll(&ks, false, "reopened, keyspaces without their ttl");
                ks = handles(&db, true);
                model.poll(&ks, true, "reopened after 700 ms");
            }
            380 => {
                fs.crash();
                drop(ks);
                drop(db);
                fs.apply_power_loss(7).expect("power loss");
                clock.advance(Duration::from_millis(300));
                let reopened = clock.now_for_test();
                for e in model.entries.iter_mut().filter(|e| e.hidden_at.is_none()) {
                    e.late_from = reopened;
                }
                fs = FaultInjectingFs::new(Arc::new(varve::fs::PosixFs));
                db = Db::open(dir.path(), ttl_options(&clock, &fs)).expect("reopen after a crash");
                ks = handles(&db, true);
                model.poll(&ks, true, "reopened after a crash");
            }
            600 => {
                drop(ks);
                db.close().expect("close");
                fs = FaultInjectingFs::new(Arc::new(varve::fs::PosixFs));
                db = Db::open(dir.path(), ttl_options(&clock, &fs)).expect("reopen");
                ks = handles(&db, true);
                model.poll(&ks, true, "reopened at once");
            }
            _ => {}
        }
        tick(&db, &clock);
        model.poll(&ks, true, &format!("step {step}"));
    }
    assert!(
        model.entries.iter().all(|e| e.hidden_at.is_some()),
        "every key expired"
    );
    assert!(
        model.max_late <= LATE_BOUND,
        "seen {:?} past put end + ttl",
        model.max_late
    );
    eprintln!(
        "{} keys, {} polls, latest expiry {:?} past put end + ttl (bound {LATE_BOUND:?})",
        model.entries.len(),
        model.polls,
        model.max_late
    );
    drop(ks);
    db.close().expect("close");
}

/// Never early at any clock precision: a put at a clock 0.9 ms into a
/// millisecond, a TTL of 300.5 ms, and the reader looking 1 ns before put
/// start + TTL, after the sync thread ran at that time (with a flush's and
/// a reopen's samples taken at the put's very instant). Then hidden within
/// the bound.
#[test]
fn ttl_is_never_early_at_sub_millisecond_precision() {
    let dir = common::fast_tempdir();
    let t0 = Duration::from_nanos(1_700_000_000_999_900_000);
    let clock = Arc::new(ManualClock::new(t0));
    let ttl = Duration::from_micros(300_500);
    let fs = FaultInjectingFs::new(Arc::new(varve::fs::PosixFs));
    let opts = Options {
        ttl: Some(ttl),
        ..ttl_options(&clock, &fs)
    };
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    db.put(b"a", b"v").expect("put");
    db.flush().expect("flush");
    db.close().expect("close");
    let db = Db::open(dir.path(), opts).expect("reopen");
    let wait = |db: &Db| {
        let want = clock.now_for_test().as_millis() as u64;
        let start = Instant::now();
        while db.debug().ttl_stepped_through() < want {
            assert!(start.elapsed() < Duration::from_secs(10), "no step");
            std::thread::sleep(Duration::from_micros(200));
        }
    };
    clock.set(t0 + ttl - Duration::from_nanos(1));
    wait(&db);
    assert!(db.get(b"a").expect("get").is_some(), "hidden 1 ns early");
    clock.set(t0 + ttl + LATE_BOUND);
    wait(&db);
    assert!(
        db.get(b"a").expect("get").is_none(),
        "not hidden in the bound"
    );
    db.close().expect("close");
}
