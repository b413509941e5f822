//! Model test: random puts, deletes, range deletes, batches (of all
//! three), snapshots, point reads, `multi_get`,
//! iterations in both directions with bounds, cursor walks, flushes,
//! compactions (`compact_range`, background) and reopens, checked against a
//! `BTreeMap` (snapshots against copies of it). Tables and levels are tiny so
//! that a few hundred operations build a tree of several levels. proptest
//! shrinks a failing sequence to a minimal one.
//!
//! `PROPTEST_CASES=N` runs more cases (default 48).

mod common;

use common::remove_range;

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use varve::{Db, Options, ReadOptions, Snapshot, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u16),
    Delete(u8),
    /// `delete_range(key(a)..end_key(b))`.
    DeleteRange(u8, u8),
    /// `(kind, key, value)`: kind 0-2 put, 3 delete, 4 a range delete of
    /// `key..key + value % 6`.
    Batch(Vec<(u8, u8, u16)>),
    Get(u8, Option<usize>),
    MultiGet(Vec<u8>, Option<usize>),
    TakeSnapshot,
    DropSnapshot(usize),
    Scan {
        snap: Option<usize>,
        reverse: bool,
        lower: Option<u8>,
        upper: Option<u8>,
    },
    Walk {
        snap: Option<usize>,
        start: Start,
        moves: Vec<bool>,
        lower: Option<u8>,
        upper: Option<u8>,
    },
    Flush,
    CompactRange(Option<u8>, Option<u8>),
    WaitForCompactions,
    Reopen,
}

#[derive(Debug, Clone, Copy)]
enum Start {
    First,
    Last,
    Seek(u8),
    SeekForPrev(u8),
}

const KEYS: u8 = 48;

fn key(k: u8) -> Vec<u8> {
    format!("key{:02}", k % KEYS).into_bytes()
}

/// The end of a range delete: past every key for `k >= KEYS`.
fn end_key(k: u8) -> Vec<u8> {
    if k >= KEYS { b"key~".to_vec() } else { key(k) }
}

/// Values are mostly small; one seed in 16 makes a ~20 KiB value so the
/// 64 KiB memtables switch often.
fn value(seed: u16) -> Vec<u8> {
    let len = if seed.is_multiple_of(16) {
        20_000 + seed as usize
    } else {
        (seed % 97) as usize
    };
    (0..len).map(|i| (seed as usize + i * 31) as u8).collect()
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0..KEYS + 4; // a few keys that are never written (absent)
    let snap = proptest::option::of(0usize..4);
    let bound = proptest::option::of(0..KEYS + 2);
    let start = prop_oneof![
        Just(Start::First),
        Just(Start::Last),
        (0..KEYS + 2).prop_map(Start::Seek),
        (0..KEYS + 2).prop_map(Start::SeekForPrev),
    ];
    prop_oneof![
        10 => (k.clone(), any::<u16>()).prop_map(|(k, v)| Op::Put(k, v)),
        4 => k.clone().prop_map(Op::Delete),
        2 => (0..KEYS, 0u8..10).prop_map(|(a, n)| Op::DeleteRange(a, a + n)),
        4 => proptest::collection::vec((0u8..5, k.clone(), any::<u16>()), 0..8).prop_map(Op::Batch),
        6 => (k.clone(), snap.clone()).prop_map(|(k, s)| Op::Get(k, s)),
        2 => (proptest::collection::vec(k, 0..12), snap.clone()).prop_map(|(k, s)| Op::MultiGet(k, s)),
        2 => Just(Op::TakeSnapshot),
        1 => (0usize..4).prop_map(Op::DropSnapshot),
        3 => (snap.clone(), any::<bool>(), bound.clone(), bound.clone())
            .prop_map(|(snap, reverse, lower, upper)| Op::Scan { snap, reverse, lower, upper }),
        3 => (snap, start, proptest::collection::vec(any::<bool>(), 0..12), bound.clone(), bound)
            .prop_map(|(snap, start, moves, lower, upper)| Op::Walk { snap, start, moves, lower, upper }),
        2 => Just(Op::Flush),
        1 => (proptest::option::of(0..KEYS), proptest::option::of(0..KEYS)).prop_map(|(a, b)| Op::CompactRange(a, b)),
        1 => Just(Op::WaitForCompactions),
        1 => Just(Op::Reopen),
    ]
}

struct Harness {
    dir: tempfile::TempDir,
    db: Option<Db>,
    model: Model,
    snaps: Vec<(Snapshot, Model)>,
}

fn options() -> Options {
    common::tiny_lsm_options()
}

fn in_bounds(k: &[u8], lower: &Option<Vec<u8>>, upper: &Option<Vec<u8>>) -> bool {
    lower.as_ref().is_none_or(|l| k >= l.as_slice())
        && upper.as_ref().is_none_or(|u| k < u.as_slice())
}

impl Harness {
    fn db(&self) -> &Db {
        self.db.as_ref().expect("db open")
    }

    fn view(&self, snap: Option<usize>) -> (ReadOptions, &Model) {
        match snap.and_then(|i| self.snaps.get(i % self.snaps.len().max(1))) {
            Some((s, m)) => (ReadOptions::at(s), m),
            None => (ReadOptions::default(), &self.model),
        }
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Put(k, v) => {
                self.db().put(key(*k), value(*v)).expect("put");
                self.model.insert(key(*k), value(*v));
            }
            Op::Delete(k) => {
                self.db().delete(key(*k)).expect("delete");
                self.model.remove(&key(*k));
            }
            Op::DeleteRange(a, b) => {
                let (start, end) = (key(*a), end_key(*b));
                self.db()
                    .delete_range(start.as_slice()..end.as_slice())
                    .expect("delete_range");
                remove_range(&mut self.model, &start, &end);
            }
            Op::Batch(ops) => {
                let mut b = WriteBatch::new();
                let range_end = |k: u8, v: u16| end_key((k % KEYS) + (v % 6) as u8);
                for &(kind, k, v) in ops {
                    match kind {
                        0..=2 => b.put(key(k), value(v)),
                        3 => b.delete(key(k)),
                        _ => b.delete_range(key(k)..range_end(k, v)),
                    }
                }
                self.db().write(b).expect("write");
                for &(kind, k, v) in ops {
                    match kind {
                        0..=2 => {
                            self.model.insert(key(k), value(v));
                        }
                        3 => {
                            self.model.remove(&key(k));
                        }
                        _ => remove_range(&mut self.model, &key(k), &range_end(k, v)),
                    }
                }
            }
            Op::MultiGet(ks, snap) => {
                let (mut ro, model) = self.view(*snap);
                // Both paths: fibers (io_uring when there is one) and plain.
                ro.async_io = ks.len() % 2 == 0;
                let keys: Vec<Vec<u8>> = ks.iter().map(|&k| key(k)).collect();
                let got = self.db().multi_get(&ro, &keys);
                assert_eq!(got.len(), keys.len());
                for (k, r) in keys.iter().zip(got) {
                    assert_eq!(
                        r.expect("multi_get").as_ref(),
                        model.get(k),
                        "multi_get {:?}",
                        String::from_utf8_lossy(k)
                    );
                }
            }
            Op::Get(k, snap) => {
                let (ro, model) = self.view(*snap);
                let got = self.db().get_opt(key(*k), &ro).expect("get");
                assert_eq!(
                    got.as_ref(),
                    model.get(&key(*k)),
                    "get {:?}",
                    String::from_utf8_lossy(&key(*k))
                );
            }
            Op::TakeSnapshot => {
                if self.snaps.len() < 4 {
                    self.snaps.push((self.db().snapshot(), self.model.clone()));
                }
            }
            Op::DropSnapshot(i) => {
                if !self.snaps.is_empty() {
                    let i = i % self.snaps.len();
                    self.snaps.remove(i);
                }
            }
            Op::Scan {
                snap,
                reverse,
                lower,
                upper,
            } => {
                let (mut ro, model) = self.view(*snap);
                ro.iterate_lower_bound = lower.map(key);
                ro.iterate_upper_bound = upper.map(key);
                let expected: Vec<(Vec<u8>, Vec<u8>)> = model
                    .iter()
                    .filter(|(k, _)| in_bounds(k, &ro.iterate_lower_bound, &ro.iterate_upper_bound))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let it = self.db().iter_opt(&ro);
                let got: Vec<(Vec<u8>, Vec<u8>)> = if *reverse {
                    it.rev().map(|r| r.expect("iter")).collect()
                } else {
                    it.map(|r| r.expect("iter")).collect()
                };
                let mut expected = expected;
                if *reverse {
                    expected.reverse();
                }
                assert_eq!(got.len(), expected.len(), "scan length (reverse={reverse})");
                assert!(got == expected, "scan contents differ (reverse={reverse})");
            }
            Op::Walk {
                snap,
                start,
                moves,
                lower,
                upper,
            } => {
                let (mut ro, model) = self.view(*snap);
                ro.iterate_lower_bound = lower.map(key);
                ro.iterate_upper_bound = upper.map(key);
                let (lo, hi) = (
                    ro.iterate_lower_bound.clone(),
                    ro.iterate_upper_bound.clone(),
                );
                let visible = |k: &Vec<u8>| in_bounds(k, &lo, &hi);
                let mut it = self.db().iter_opt(&ro);
                let mut cur: Option<Vec<u8>> = match start {
                    Start::First => {
                        it.seek_to_first();
                        model.keys().find(|k| visible(k)).cloned()
                    }
                    Start::Last => {
                        it.seek_to_last();
                        model.keys().rev().find(|k| visible(k)).cloned()
                    }
                    Start::Seek(t) => {
                        it.seek(key(*t));
                        model
                            .range(key(*t)..)
                            .map(|(k, _)| k)
                            .find(|k| visible(k))
                            .cloned()
                    }
                    Start::SeekForPrev(t) => {
                        it.seek_for_prev(key(*t));
                        model
                            .range(..=key(*t))
                            .rev()
                            .map(|(k, _)| k)
                            .find(|k| visible(k))
                            .cloned()
                    }
                };
                let check = |it: &varve::DbIterator, cur: &Option<Vec<u8>>, step: usize| match cur {
                    Some(k) => {
                        assert!(
                            it.valid(),
                            "walk step {step}: iterator invalid, expected {:?}",
                            String::from_utf8_lossy(k)
                        );
                        assert_eq!(it.key(), k.as_slice(), "walk step {step}: key");
                        assert_eq!(it.value(), model[k].as_slice(), "walk step {step}: value");
                    }
                    None => assert!(
                        !it.valid(),
                        "walk step {step}: expected end, got {:?}",
                        String::from_utf8_lossy(it.key())
                    ),
                };
                check(&it, &cur, 0);
                for (step, forward) in moves.iter().enumerate() {
                    let Some(c) = cur.clone() else { break };
                    if *forward {
                        it.move_next();
                        cur = model
                            .range((Bound::Excluded(c), Bound::Unbounded))
                            .map(|(k, _)| k)
                            .find(|k| visible(k))
                            .cloned();
                    } else {
                        it.move_prev();
                        cur = model
                            .range(..c)
                            .rev()
                            .map(|(k, _)| k)
                            .find(|k| visible(k))
                            .cloned();
                    }
                    check(&it, &cur, step + 1);
                }
                it.status().expect("iterator status");
            }
            Op::Flush => self.db().flush().expect("flush"),
            Op::CompactRange(a, b) => {
                let (a, b) = (a.map(key), b.map(key));
                self.db()
                    .compact_range(a.as_deref(), b.as_deref())
                    .expect("compact_range");
            }
            Op::WaitForCompactions => self.db().wait_for_compactions().expect("wait"),
            Op::Reopen => {
                // Snapshots do not survive a reopen.
                self.snaps.clear();
                self.db.take().expect("db").close().expect("close");
                self.db = Some(Db::open(self.dir.path(), options()).expect("reopen"));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(48),
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn model_matches_btreemap(ops in proptest::collection::vec(op(), 1..400)) {
        let dir = common::fast_tempdir();
        let db = Db::open(dir.path(), options()).expect("open");
        let mut h = Harness { dir, db: Some(db), model: Model::new(), snaps: Vec::new() };
        for op in &ops {
            h.apply(op);
        }
        // A final reopen must bring back exactly the model.
        h.apply(&Op::Reopen);
        let all: Model = h.db().iter().map(|r| r.expect("iter")).collect();
        prop_assert!(all == h.model, "final state differs from the model");
    }
}

/// A deterministic run over a larger key space that must end with data in
/// several levels, checked against the model after every phase.
#[test]
fn several_levels_match_the_model() {
    let dir = common::fast_tempdir();
    let opts = options();
    let mut db = Db::open(dir.path(), opts.clone()).expect("open");
    let mut model = Model::new();
    let mut rng = common::Rng(99);
    let check = |db: &Db, model: &Model, what: &str| {
        let all: Model = db.iter().map(|r| r.expect("iter")).collect();
        assert!(
            all == *model,
            "{what}: iteration differs from the model ({} vs {} keys)",
            all.len(),
            model.len()
        );
        for k in model.keys().step_by(7) {
            assert_eq!(
                db.get(k).expect("get").as_ref(),
                model.get(k),
                "{what}: get"
            );
        }
    };
    for phase in 0..6 {
        for _ in 0..3000 {
            let k = format!("k{:05}", rng.below(4000)).into_bytes();
            if rng.below(5) == 0 {
                db.delete(&k).expect("delete");
                model.remove(&k);
            } else {
                let v = value(rng.next() as u16 | 1);
                db.put(&k, &v).expect("put");
                model.insert(k, v);
            }
        }
        db.flush().expect("flush");
        db.wait_for_compactions().expect("compactions");
        check(&db, &model, &format!("phase {phase}"));
        db.close().expect("close");
        db = Db::open(dir.path(), opts.clone()).expect("reopen");
        check(&db, &model, &format!("phase {phase} after reopen"));
    }
    let stats = db.stats();
    let deep_levels = stats.levels.iter().skip(1).filter(|l| l.files > 0).count();
    assert!(
        deep_levels >= 2,
        "expected data in at least two levels below L0:\n{}",
        stats.report()
    );
    db.compact_range(None, None).expect("full compaction");
    check(&db, &model, "after a full compaction");
    let stats = db.stats();
    assert_eq!(
        stats.levels[0].files,
        0,
        "a full compaction empties L0:\n{}",
        stats.report()
    );
    assert!(stats.compactions > 0, "{}", stats.report());
    assert!(
        stats.subcompactions > stats.compactions,
        "sub-compactions ran:\n{}",
        stats.report()
    );
}
