//! Iterators that fit Rust: `db.iter()`, `db.range(..)` and `db.prefix(..)`
//! are double-ended, so `.rev()` works and `next` / `next_back` may be
//! interleaved; the two ends meet without repeating or skipping a key.
//! Checked against a `BTreeMap` on a database with data in memtables, L0
//! and deeper levels, tombstones and overwrites, under a snapshot.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::Rng;
use varve::{Db, ReadOptions};

/// A start and an end bound over byte-string keys.
type KeyBounds<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// A database with every source populated, and its model.
fn build(dir: &std::path::Path) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = Db::open(dir, common::tiny_lsm_options()).expect("open");
    let mut model = BTreeMap::new();
    let mut rng = Rng(0x17e7);
    for round in 0..4u64 {
        for _ in 0..1500 {
            let k = key(rng.below(4000));
            if rng.below(6) == 0 {
                db.delete(&k).expect("delete");
                model.remove(&k);
            } else {
                let v = format!("v{round}-{}", rng.below(1000)).into_bytes();
                db.put(&k, &v).expect("put");
                model.insert(k, v);
            }
        }
        if round < 3 {
            db.flush().expect("flush");
        }
    }
    (db, model)
}

/// Interleaves `next` and `next_back` at random and checks that together
/// they yield `want` exactly: the front part in order, the back part in
/// reverse, meeting in the middle.
fn check_interleaved(
    what: &str,
    mut it: impl DoubleEndedIterator<Item = varve::Result<(Vec<u8>, Vec<u8>)>>,
    want: &[(Vec<u8>, Vec<u8>)],
    rng: &mut Rng,
) {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        let item = if rng.below(2) == 0 {
            it.next().map(|r| (true, r))
        } else {
            it.next_back().map(|r| (false, r))
        };
        match item {
            None => break,
            Some((true, r)) => front.push(r.expect("front")),
            Some((false, r)) => back.push(r.expect("back")),
        }
    }
    assert!(
        it.next().is_none() && it.next_back().is_none(),
        "{what}: items after the end"
    );
    back.reverse();
    front.extend(back);
    assert!(
        front == want,
        "{what}: got {} entries, want {}",
        front.len(),
        want.len()
    );
}

#[test]
fn range_prefix_and_rev_match_the_model() {
    let dir = common::fast_tempdir();
    let (db, model) = build(dir.path());
    let all: Vec<_> = model.clone().into_iter().collect();
    // Whole database: forward, backward, interleaved.
    let fwd: Vec<_> = db.iter().map(|r| r.expect("iter")).collect();
    assert!(fwd == all, "forward");
    let back: Vec<_> = db.iter().rev().map(|r| r.expect("iter")).collect();
    let mut rev_all = all.clone();
    rev_all.reverse();
    assert!(back == rev_all, "rev");
    let mut rng = Rng(5);
    for round in 0..40 {
        check_interleaved(&format!("iter {round}"), db.iter(), &all, &mut rng);
    }
    // Ranges of every kind of bound.
    for round in 0..60 {
        let a = rng.below(4200);
        let b = a + rng.below(1500);
        let (lo, hi) = (key(a), key(b));
        let bounds: [KeyBounds<'_>; 4] = [
            (Bound::Included(&lo), Bound::Excluded(&hi)),
            (Bound::Excluded(&lo), Bound::Included(&hi)),
            (Bound::Unbounded, Bound::Excluded(&hi)),
            (Bound::Included(&lo), Bound::Unbounded),
        ];
        let r = bounds[rng.below(4) as usize];
        let want: Vec<_> = model
            .range::<[u8], _>(r)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        check_interleaved(
            &format!("range {round} {r:?}"),
            db.range::<[u8], _>(r),
            &want,
            &mut rng,
        );
        let rev: Vec<_> = db
            .range::<[u8], _>(r)
            .rev()
            .map(|x| x.expect("rev"))
            .collect();
        assert!(rev.iter().rev().eq(want.iter()), "range {round}: rev");
    }
    // Prefixes, including ones that end in 0xff bytes.
    for p in [&b"k0"[..], b"k01", b"k0399", b"k", b"", b"k\xff", b"z"] {
        let want: Vec<_> = model
            .iter()
            .filter(|(k, _)| k.starts_with(p))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        check_interleaved(&format!("prefix {p:?}"), db.prefix(p), &want, &mut rng);
    }
    // Under a snapshot, later writes are invisible to both ends.
    let snap = db.snapshot();
    for i in 0..300 {
        db.put(key(i * 13), b"later").expect("put");
    }
    let ro = ReadOptions::at(&snap);
    let got: Vec<_> = db
        .range_opt(..key(2000).as_slice(), &ro)
        .rev()
        .map(|r| r.expect("snap"))
        .collect();
    let want: Vec<_> = model
        .range(..key(2000))
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(got == want, "snapshot rev");
    // A range intersected with the options' bounds.
    let ro = ReadOptions {
        iterate_lower_bound: Some(key(1000)),
        iterate_upper_bound: Some(key(3000)),
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    let got: Vec<_> = db
        .range_opt(key(500).as_slice()..key(2000).as_slice(), &ro)
        .map(|r| r.expect("x"))
        .collect();
    let want: Vec<_> = model
        .range(key(1000)..key(2000))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(got == want, "intersected bounds");
}

/// A seek positions where `next` goes on from; `next_back` still starts at
/// the end and stops where the front is.
#[test]
fn a_seek_then_both_ends() {
    let dir = common::fast_tempdir();
    let (db, model) = build(dir.path());
    let mut it = db.iter();
    it.seek(key(2000));
    let first = it.next().expect("an item").expect("ok");
    let want_first = model.range(key(2000)..).next().expect("model");
    assert_eq!((&first.0, &first.1), want_first);
    let rest: Vec<_> = it.rev().map(|r| r.expect("rev")).collect();
    let mut want: Vec<_> = model
        .range(key(2000)..)
        .skip(1)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    want.reverse();
    assert!(rest == want, "{} vs {}", rest.len(), want.len());
}
