//! Model test for keyspaces: random puts, deletes, range deletes and
//! batches across three keyspaces (the default one and two named ones),
//! point reads, `multi_get`, scans both ways, snapshots, flushes,
//! compactions, drops and re-creations of the named keyspaces and reopens,
//! checked against one `BTreeMap` per keyspace (snapshots against copies).
//! Tables and levels are tiny (and values up to 50 bytes), so the
//! explicit flushes and compactions build trees of several levels.
//! Keyspace `ks1` keeps values of 16 bytes and more in blob files of its
//! own (most of its values), so its reads resolve pointers, its
//! compactions count and collect garbage in its blob files, and its drop
//! lets them go; `ks2` and the default keyspace keep every value inline.
//! proptest shrinks a failing sequence.
//!
//! `PROPTEST_CASES=N` runs more cases (default 32).

mod common;

use common::remove_range;

use std::collections::BTreeMap;

use proptest::prelude::*;
use varve::{Db, Error, Keyspace, KeyspaceOptions, Options, ReadOptions, Snapshot, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Keyspace slots: 0 is the default keyspace, 1 and 2 named ones.
const SLOTS: usize = 3;
const KEYS: u8 = 24;

#[derive(Debug, Clone)]
enum Op {
    Put(usize, u8, u16),
    Delete(usize, u8),
    DeleteRange(usize, u8, u8),
    /// `(slot, kind, key, value)`: kind 0-1 put, 2 delete, 3 a range
    /// delete of `key..key + value % 5`.
    Batch(Vec<(usize, u8, u8, u16)>),
    Get(usize, u8, Option<usize>),
    MultiGet(usize, Vec<u8>, Option<usize>),
    Scan(usize, bool, Option<usize>),
    TakeSnapshot,
    DropSnapshot(usize),
    Flush,
    CompactRange(usize),
    Drop(usize),
    Create(usize),
    Reopen,
}

fn key(k: u8) -> Vec<u8> {
    format!("k{:02}", k % KEYS).into_bytes()
}

fn end_key(k: u8) -> Vec<u8> {
    if k >= KEYS { b"k~".to_vec() } else { key(k) }
}

fn value(slot: usize, v: u16) -> Vec<u8> {
    format!("s{slot}-v{v}-{}", "x".repeat(usize::from(v % 40))).into_bytes()
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    let named = 1..SLOTS;
    prop_oneof![
        10 => (slot.clone(), 0..KEYS, any::<u16>()).prop_map(|(s, k, v)| Op::Put(s, k, v)),
        3 => (slot.clone(), 0..KEYS).prop_map(|(s, k)| Op::Delete(s, k)),
        2 => (slot.clone(), 0..KEYS, 0..KEYS + 2).prop_map(|(s, a, b)| Op::DeleteRange(s, a, b)),
        5 => proptest::collection::vec((slot.clone(), 0..4u8, 0..KEYS, any::<u16>()), 1..6)
            .prop_map(Op::Batch),
        6 => (slot.clone(), 0..KEYS, proptest::option::of(0..4usize))
            .prop_map(|(s, k, snap)| Op::Get(s, k, snap)),
        2 => (
            slot.clone(),
            proptest::collection::vec(0..KEYS, 1..8),
            proptest::option::of(0..4usize)
        )
            .prop_map(|(s, ks, snap)| Op::MultiGet(s, ks, snap)),
        4 => (slot.clone(), any::<bool>(), proptest::option::of(0..4usize))
            .prop_map(|(s, r, snap)| Op::Scan(s, r, snap)),
        2 => Just(Op::TakeSnapshot),
        1 => (0..4usize).prop_map(Op::DropSnapshot),
        2 => Just(Op::Flush),
        1 => slot.prop_map(Op::CompactRange),
        1 => named.clone().prop_map(Op::Drop),
        2 => named.prop_map(Op::Create),
        1 => Just(Op::Reopen),
    ]
}

fn options() -> Options {
    common::tiny_lsm_options()
}

/// The options of named slot `slot`: blob files in `ks1` only.
fn ks_options(slot: usize) -> KeyspaceOptions {
    KeyspaceOptions {
        min_blob_size: (slot == 1).then_some(16),
        ..KeyspaceOptions::from(&options())
    }
}

/// One keyspace slot as the model sees it: its data, or `None` while it
/// does not exist, and a generation that changes with every re-creation.
#[derive(Clone, Debug, Default)]
struct Slot {
    data: Option<Model>,
    generation: u32,
}

struct SnapshotCopy {
    snapshot: Snapshot,
    slots: Vec<Slot>,
}

struct Harness {
    dir: tempfile::TempDir,
    db: Option<Db>,
    handles: Vec<Option<Keyspace>>,
    slots: Vec<Slot>,
    snapshots: Vec<SnapshotCopy>,
}

impl Harness {
    fn new() -> Harness {
        let dir = common::fast_tempdir();
        let db = Db::open(dir.path(), options()).expect("open");
        let mut slots = vec![Slot::default(); SLOTS];
        slots[0].data = Some(Model::new());
        let handles = vec![Some(db.default_keyspace()), None, None];
        Harness {
            dir,
            db: Some(db),
            handles,
            slots,
            snapshots: Vec::new(),
        }
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("open")
    }

    /// The slot's handle if the keyspace exists.
    fn handle(&self, slot: usize) -> Option<&Keyspace> {
        self.slots[slot].data.as_ref()?;
        self.handles[slot].as_ref()
    }

    fn snap(&self, i: Option<usize>) -> Option<&SnapshotCopy> {
        let i = i?;
        (!self.snapshots.is_empty()).then(|| &self.snapshots[i % self.snapshots.len()])
    }

    /// What a read of `slot` at snapshot `s` must see: `None` when it must
    /// fail (the keyspace does not exist now).
    fn expected(&self, slot: usize, s: Option<&SnapshotCopy>) -> Option<Model> {
        let now = self.slots[slot].data.as_ref()?;
        Some(match s {
            None => now.clone(),
            Some(c) if c.slots[slot].generation == self.slots[slot].generation => {
                c.slots[slot].data.clone().unwrap_or_default()
            }
            // Created after the snapshot: nothing of it is that old.
            Some(_) => Model::new(),
        })
    }

    fn read_opts(s: Option<&SnapshotCopy>) -> ReadOptions {
        ReadOptions {
            snapshot: s.map(|c| c.snapshot.clone()),
            ..ReadOptions::default()
        }
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Put(s, k, v) => {
                if let Some(h) = self.handle(*s) {
                    h.put(key(*k), value(*s, *v)).expect("put");
                    self.slots[*s]
                        .data
                        .as_mut()
                        .expect("live")
                        .insert(key(*k), value(*s, *v));
                }
            }
            Op::Delete(s, k) => {
                if let Some(h) = self.handle(*s) {
                    h.delete(key(*k)).expect("delete");
                    self.slots[*s].data.as_mut().expect("live").remove(&key(*k));
                }
            }
            Op::DeleteRange(s, a, b) => {
                let (start, end) = (key(*a), end_key(*b));
                if let Some(h) = self.handle(*s)
                    && start <= end
                {
                    h.delete_range(start.clone()..end.clone())
                        .expect("delete_range");
                    remove_range(self.slots[*s].data.as_mut().expect("live"), &start, &end);
                }
            }
            Op::Batch(ops) => {
                let mut batch = WriteBatch::new();
                let mut next = self.slots.clone();
                for &(s, kind, k, v) in ops {
                    let Some(h) = self.handle(s) else { continue };
                    let m = next[s].data.as_mut().expect("live");
                    match kind {
                        0 | 1 => {
                            batch.put_in(h, key(k), value(s, v));
                            m.insert(key(k), value(s, v));
                        }
                        2 => {
                            batch.delete_in(h, key(k));
                            m.remove(&key(k));
                        }
                        _ => {
                            let end = end_key(k.saturating_add((v % 5) as u8));
                            batch.delete_range_in(h, key(k)..end.clone());
                            remove_range(m, &key(k), &end);
                        }
                    }
                }
                self.db().write(batch).expect("write");
                self.slots = next;
            }
            Op::Get(s, k, snap) => {
                let c = self.snap(*snap);
                let got = self.handles[*s]
                    .as_ref()
                    .map(|h| h.get_opt(key(*k), &Self::read_opts(c)));
                match (self.expected(*s, c), got) {
                    (Some(m), Some(got)) => {
                        prop_assert_eq!(got.expect("get"), m.get(&key(*k)).cloned(), "{:?}", op)
                    }
                    (None, Some(got)) => prop_assert!(
                        matches!(got, Err(Error::KeyspaceNotFound(_))),
                        "a dropped keyspace: {:?}",
                        got
                    ),
                    (_, None) => {}
                }
            }
            Op::MultiGet(s, ks, snap) => {
                let c = self.snap(*snap);
                if let (Some(m), Some(h)) = (self.expected(*s, c), self.handles[*s].as_ref()) {
                    let keys: Vec<Vec<u8>> = ks.iter().map(|&k| key(k)).collect();
                    let got = h.multi_get(&Self::read_opts(c), &keys);
                    for (k, g) in keys.iter().zip(got) {
                        prop_assert_eq!(g.expect("multi_get"), m.get(k).cloned());
                    }
                }
            }
            Op::Scan(s, reverse, snap) => {
                let c = self.snap(*snap);
                if let Some(h) = self.handles[*s].as_ref() {
                    let it = h.iter_opt(&Self::read_opts(c));
                    let got: varve::Result<Vec<(Vec<u8>, Vec<u8>)>> = if *reverse {
                        it.rev().collect()
                    } else {
                        it.collect()
                    };
                    match self.expected(*s, c) {
                        Some(m) => {
                            let mut want: Vec<_> = m.into_iter().collect();
                            if *reverse {
                                want.reverse();
                            }
                            prop_assert_eq!(got.expect("scan"), want, "{:?}", op);
                        }
                        None => prop_assert!(got.is_err(), "a dropped keyspace scans"),
                    }
                }
            }
            Op::TakeSnapshot => {
                if self.snapshots.len() < 4 {
                    self.snapshots.push(SnapshotCopy {
                        snapshot: self.db().snapshot(),
                        slots: self.slots.clone(),
                    });
                }
            }
            Op::DropSnapshot(i) => {
                if !self.snapshots.is_empty() {
                    let n = self.snapshots.len();
                    self.snapshots.remove(i % n);
                }
            }
            Op::Flush => self.db().flush().expect("flush"),
            Op::CompactRange(s) => {
                if let Some(h) = self.handle(*s) {
                    h.compact_range(None, None).expect("compact");
                }
            }
            Op::Drop(s) => {
                if self.slots[*s].data.is_some() {
                    self.db().drop_keyspace(&format!("ks{s}")).expect("drop");
                    self.slots[*s].data = None;
                }
            }
            Op::Create(s) => {
                if self.slots[*s].data.is_none() {
                    let h = self
                        .db()
                        .keyspace(&format!("ks{s}"), ks_options(*s))
                        .expect("create");
                    self.handles[*s] = Some(h);
                    self.slots[*s] = Slot {
                        data: Some(Model::new()),
                        generation: self.slots[*s].generation + 1,
                    };
                }
            }
            Op::Reopen => {
                self.snapshots.clear();
                self.handles = vec![None; SLOTS];
                self.db.take().expect("open").close().expect("close");
                let db = Db::open(self.dir.path(), options()).expect("reopen");
                let mut names = vec!["default".to_string()];
                for s in 1..SLOTS {
                    if self.slots[s].data.is_some() {
                        names.push(format!("ks{s}"));
                    }
                }
                // Listed "default" first, then in creation order.
                let mut listed = db.keyspaces();
                prop_assert_eq!(listed.first().map(String::as_str), Some("default"));
                listed.sort();
                names.sort();
                prop_assert_eq!(listed, names);
                self.handles[0] = Some(db.default_keyspace());
                for s in 1..SLOTS {
                    if self.slots[s].data.is_some() {
                        let h = db
                            .keyspace(&format!("ks{s}"), ks_options(s))
                            .expect("open keyspace");
                        self.handles[s] = Some(h);
                    }
                }
                self.db = Some(db);
            }
        }
        Ok(())
    }

    /// Every live keyspace holds exactly its model.
    fn check_all(&self) -> Result<(), TestCaseError> {
        for s in 0..SLOTS {
            if let (Some(m), Some(h)) = (&self.slots[s].data, self.handle(s)) {
                let got: Vec<_> = h.iter().collect::<varve::Result<_>>().expect("scan");
                let want: Vec<_> = m.clone().into_iter().collect();
                prop_assert_eq!(got, want, "keyspace slot {}", s);
            }
        }
        Ok(())
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn keyspaces_match_the_model(ops in proptest::collection::vec(op(), 1..250)) {
        let mut h = Harness::new();
        for op in &ops {
            h.apply(op)?;
        }
        h.check_all()?;
        h.apply(&Op::Reopen)?;
        h.check_all()?;
        h.snapshots.clear();
        h.db.take().expect("open").close().expect("close");
    }
}
