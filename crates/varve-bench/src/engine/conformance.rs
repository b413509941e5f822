//! Test helper (test builds only): one engine against a `BTreeMap`.
//!
//! [`check`] opens the named engine in a temporary directory, writes
//! batches and single puts (overwrites included, synced and not), and
//! compares `get`, `get_with`, `multi_get` and a cursor (seek, seek past the
//! end, next, prev, direction changes, seek_to_first, seek_to_last) with a
//! `BTreeMap` holding the same pairs; then closes, reopens and compares
//! again (what `close` promises is durable). [`check_locked_version`] keeps
//! an engine's printed crate version equal to Cargo.lock's. Panics on any
//! difference: these are test assertions.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use super::{Engine, WriteOpts};
use crate::flags::Flags;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u32) -> Vec<u8> {
    format!("key{:06}", i * 7).into_bytes()
}

fn open(name: &str, path: &Path) -> Box<dyn Engine> {
    let flags =
        Flags::parse_from_args(["varve-bench", &format!("--engine={name}")]).expect("flags parse");
    let opened = super::open(&flags, path).expect("engine opens");
    opened.engine
}

fn compare(e: &dyn Engine, model: &Model) {
    for i in 0..130 {
        let k = key(i);
        let want = model.get(&k);
        assert_eq!(e.get(&k).expect("get"), want.map(Vec::len), "get {i}");
        let mut seen = None;
        let found = e
            .get_with(&k, &mut |v| seen = Some(v.to_vec()))
            .expect("get_with");
        assert_eq!(found, want.is_some(), "get_with found {i}");
        assert_eq!(seen.as_ref(), want, "get_with value {i}");
    }
    let keys: Vec<Vec<u8>> = (0..40).map(|i| key(i * 3)).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let want: Vec<Option<usize>> = keys.iter().map(|k| model.get(k).map(Vec::len)).collect();
    assert_eq!(e.multi_get(&refs).expect("multi_get"), want);

    let mut c = e.cursor().expect("cursor");
    // Forward over everything.
    c.seek_to_first().expect("seek_to_first");
    let mut all = Vec::new();
    while c.valid() {
        all.push((c.key().to_vec(), c.value().to_vec()));
        c.next().expect("next");
    }
    let want_all: Vec<(Vec<u8>, Vec<u8>)> =
        model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want_all, "forward scan");
    // Backward over everything.
    c.seek_to_last().expect("seek_to_last");
    let mut back = Vec::new();
    while c.valid() {
        back.push(c.key().to_vec());
        c.prev().expect("prev");
    }
    let want_back: Vec<Vec<u8>> = model.keys().rev().cloned().collect();
    assert_eq!(back, want_back, "backward scan");
    // Seeks between, on and past keys, then both directions from there.
    for probe in [
        &b"key"[..],
        b"key000100",
        b"key000105",
        b"key000500",
        b"zzz",
    ] {
        c.seek(probe).expect("seek");
        let at = model
            .range::<[u8], _>((Bound::Included(probe), Bound::Unbounded))
            .next();
        assert_eq!(c.valid(), at.is_some(), "seek {probe:?} valid");
        let Some((k, v)) = at else { continue };
        assert_eq!((c.key(), c.value()), (&k[..], &v[..]), "seek {probe:?}");
        c.next().expect("next");
        let after = model
            .range::<[u8], _>((Bound::Excluded(&k[..]), Bound::Unbounded))
            .next();
        assert_eq!(c.valid(), after.is_some(), "next after {probe:?}");
        if let Some((k2, _)) = after {
            assert_eq!(c.key(), &k2[..]);
            c.prev().expect("prev");
            assert_eq!(c.key(), &k[..], "prev back to the seek target");
        } else {
            c.seek(probe).expect("seek");
        }
        c.prev().expect("prev");
        let before = model
            .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(&k[..])))
            .next_back();
        assert_eq!(c.valid(), before.is_some(), "prev before {probe:?}");
        if let Some((k0, _)) = before {
            assert_eq!(c.key(), &k0[..]);
            c.next().expect("next");
            assert_eq!(c.key(), &k[..], "next back to the seek target");
        }
    }
}

/// Writes, reads and scans engine `name` against a `BTreeMap`, closes it,
/// reopens it and compares again.
pub fn check(name: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let mut model = Model::new();
    let e = open(name, &path);
    compare(e.as_ref(), &model);
    // Batches of 10, unsynced; then single puts, some synced, overwriting.
    for b in 0..10u32 {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..10)
            .map(|j| {
                let i = b * 10 + j;
                (
                    key(i),
                    format!("value-{i}-{}", "x".repeat(i as usize)).into_bytes(),
                )
            })
            .collect();
        let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        e.write(&refs, WriteOpts::default()).expect("write batch");
        model.extend(pairs);
    }
    for i in (0..120).step_by(11) {
        let (k, v) = (key(i), format!("new-{i}").into_bytes());
        let opts = WriteOpts {
            sync: i % 2 == 0,
            disable_wal: false,
        };
        e.write(&[(&k, &v)], opts).expect("write one");
        model.insert(k, v);
    }
    compare(e.as_ref(), &model);
    assert!(!e.stats().is_empty());
    assert!(!e.version().is_empty());
    e.flush().expect("flush");
    e.wait_for_compaction().expect("wait_for_compaction");
    compare(e.as_ref(), &model);
    e.close().expect("close");
    let e = open(name, &path);
    compare(e.as_ref(), &model);
    e.compact().expect("compact");
    compare(e.as_ref(), &model);
    e.close().expect("close");
}

/// Fails unless Cargo.lock pins crate `name` at `version`.
pub fn check_locked_version(name: &str, version: &str) {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    let text = std::fs::read_to_string(&lock).expect("Cargo.lock is readable");
    let needle = format!("name = \"{name}\"\nversion = \"{version}\"\n");
    assert!(
        text.contains(&needle),
        "{} does not pin {name} {version}: update the engine's version constant",
        lock.display()
    );
}
