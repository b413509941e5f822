//! Tests of the memtable against a `BTreeMap` model, of memory accounting,
//! and of concurrent inserts with concurrent readers (real threads; the
//! loom model checks live in `loom_tests`).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::skiplist::{self, MAX_HEIGHT, SkipList, Target};
use super::table::MemTableIterator;
use super::{MemTable, MemTableFull};
use crate::internal_iter::InternalIterator;
use crate::keys::{self, MAX_SEQUENCE, ValueKind};

/// An internal key ordered like the memtable.
#[derive(Clone, PartialEq, Eq, Debug)]
struct IKey(Vec<u8>);
impl Ord for IKey {
    fn cmp(&self, o: &Self) -> Ordering {
        keys::compare_internal_keys(&self.0, &o.0)
    }
}
impl PartialOrd for IKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

type Model = BTreeMap<IKey, Vec<u8>>;

fn entry(it: &MemTableIterator) -> Option<(Vec<u8>, Vec<u8>)> {
    it.valid().then(|| (it.key().to_vec(), it.value().to_vec()))
}

fn model_entry((k, v): (&IKey, &Vec<u8>)) -> (Vec<u8>, Vec<u8>) {
    (k.0.clone(), v.clone())
}

fn collect_forward(mem: &Arc<MemTable>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = mem.iter();
    let mut out = Vec::new();
    it.seek_to_first();
    while let Some(e) = entry(&it) {
        out.push(e);
        it.next();
    }
    out
}

fn assert_sorted(entries: &[(Vec<u8>, Vec<u8>)]) {
    for w in entries.windows(2) {
        assert_eq!(
            keys::compare_internal_keys(&w[0].0, &w[1].0),
            Ordering::Less,
            "sorted"
        );
    }
}

#[test]
fn send_sync() {
    fn is_send_sync<T: Send + Sync>() {}
    fn is_send<T: Send>() {}
    is_send_sync::<MemTable>();
    is_send::<MemTableIterator>();
}

#[test]
fn empty_table() {
    let mem = Arc::new(MemTable::new(1 << 10));
    assert!(mem.is_empty());
    assert_eq!(mem.len(), 0);
    assert_eq!(mem.capacity(), 1 << 10);
    assert_eq!(mem.memory_usage(), MAX_HEIGHT * 4, "the head node counts");
    assert_eq!(mem.remaining(), mem.capacity() - mem.memory_usage());
    assert_eq!(mem.get(b"a", MAX_SEQUENCE), None);
    let mut it = mem.iter();
    assert!(!it.valid());
    assert_eq!((it.key(), it.value()), (&[][..], &[][..]));
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    it.seek(&keys::lookup_key(b"a", 5));
    assert!(!it.valid());
    it.seek_for_prev(&keys::lookup_key(b"a", 5));
    assert!(!it.valid());
    assert_eq!(mem.check_invariants(), 0);
    assert!(format!("{mem:?}").contains("MemTable"));
    assert!(format!("{it:?}").contains("valid: false"));
}

#[test]
fn tiny_capacity_is_clamped() {
    let tiny = MemTable::new(0);
    assert_eq!(tiny.capacity(), MAX_HEIGHT * 4);
    assert_eq!(tiny.remaining(), 0);
    assert_eq!(tiny.add(1, ValueKind::Value, b"", b""), Err(MemTableFull));
    assert!(tiny.is_empty());
}

#[test]
fn get_sees_only_entries_at_or_below_seq() {
    let mem = MemTable::new(1 << 12);
    mem.add(1, ValueKind::Value, b"k", b"v1").expect("fits");
    mem.add(3, ValueKind::Deletion, b"k", b"").expect("fits");
    mem.add(5, ValueKind::Value, b"k", b"v5").expect("fits");
    mem.add(2, ValueKind::Value, b"ka", b"x").expect("fits");
    mem.add(4, ValueKind::Value, b"j", b"y").expect("fits");
    assert_eq!(mem.len(), 5);
    assert_eq!(mem.get(b"k", 0), None);
    assert_eq!(mem.get(b"k", 1), Some((ValueKind::Value, &b"v1"[..])));
    assert_eq!(mem.get(b"k", 2), Some((ValueKind::Value, &b"v1"[..])));
    assert_eq!(mem.get(b"k", 3), Some((ValueKind::Deletion, &b""[..])));
    assert_eq!(mem.get(b"k", 4), Some((ValueKind::Deletion, &b""[..])));
    assert_eq!(mem.get(b"k", 5), Some((ValueKind::Value, &b"v5"[..])));
    assert_eq!(
        mem.get(b"k", MAX_SEQUENCE),
        Some((ValueKind::Value, &b"v5"[..]))
    );
    assert_eq!(
        mem.get(b"k", u64::MAX),
        Some((ValueKind::Value, &b"v5"[..])),
        "seq is clamped"
    );
    assert_eq!(mem.get(b"ka", 1), None);
    assert_eq!(mem.get(b"ka", 2), Some((ValueKind::Value, &b"x"[..])));
    assert_eq!(mem.get(b"", 9), None);
    assert_eq!(mem.get(b"k\0", 9), None);
    assert_eq!(mem.get(b"i", 9), None);
    assert_eq!(mem.get(b"z", 9), None);
    assert_eq!(mem.check_invariants(), 5);
}

#[test]
fn empty_keys_and_values() {
    let mem = Arc::new(MemTable::new(1 << 12));
    mem.add(7, ValueKind::Value, b"", b"").expect("fits");
    mem.add(8, ValueKind::Value, b"", b"v").expect("fits");
    mem.add(9, ValueKind::Value, b"a", b"").expect("fits");
    assert_eq!(mem.get(b"", 7), Some((ValueKind::Value, &b""[..])));
    assert_eq!(mem.get(b"", 100), Some((ValueKind::Value, &b"v"[..])));
    assert_eq!(mem.get(b"a", 100), Some((ValueKind::Value, &b""[..])));
    let all = collect_forward(&mem);
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].0, keys::make_internal_key(b"", 8, ValueKind::Value));
    assert_eq!(all[1].0, keys::make_internal_key(b"", 7, ValueKind::Value));
    assert_eq!(
        all[2],
        (
            keys::make_internal_key(b"a", 9, ValueKind::Value),
            Vec::new()
        )
    );
}

#[test]
fn large_values() {
    let big: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 + i / 251) as u8).collect();
    let cap = 3 * MemTable::entry_charge(3, big.len()) + 4096;
    let mem = Arc::new(MemTable::new(cap));
    for seq in 1..=3 {
        mem.add(seq, ValueKind::Value, b"big", &big).expect("fits");
    }
    let before = mem.memory_usage();
    assert_eq!(
        mem.add(4, ValueKind::Value, b"big", &big),
        Err(MemTableFull)
    );
    assert_eq!(mem.memory_usage(), before);
    assert_eq!(mem.get(b"big", 2), Some((ValueKind::Value, &big[..])));
    let mut it = mem.iter();
    it.seek_to_last();
    assert_eq!(it.value(), &big[..]);
    assert_eq!(keys::parse_internal_key(it.key()).map(|p| p.seq), Some(1));
}

#[test]
fn full_table_is_left_unchanged() {
    let mem = Arc::new(MemTable::new(2000));
    let mut seq = 0;
    let mut failures = 0;
    let mut rng = 0x1234_5678_9abc_def1u64;
    while failures < 50 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let key = format!("key{:04}", rng % 1000).into_bytes();
        let value = vec![b'v'; (rng >> 20) as usize % 100];
        seq += 1;
        let (len, used, before) = (mem.len(), mem.memory_usage(), collect_forward(&mem));
        match mem.add(seq, ValueKind::Value, &key, &value) {
            Ok(()) => assert_eq!(mem.len(), len + 1),
            Err(MemTableFull) => {
                failures += 1;
                assert_eq!(mem.len(), len);
                assert_eq!(mem.memory_usage(), used);
                assert_eq!(collect_forward(&mem), before);
                assert!(mem.remaining() < MemTable::entry_charge(key.len(), value.len()));
            }
        }
        assert!(mem.memory_usage() <= mem.capacity());
    }
    assert_eq!(mem.check_invariants(), mem.len());
    assert!(mem.len() > 5);
}

#[test]
fn entry_charge_is_an_upper_bound() {
    let mem = MemTable::new(64 << 20);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for seq in 1..20_000u64 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let key = vec![b'k'; (rng % 300) as usize];
        let value = vec![b'v'; ((rng >> 16) % 3000) as usize];
        let before = mem.memory_usage();
        mem.add(seq, ValueKind::Value, &key, &value).expect("fits");
        let used = mem.memory_usage() - before;
        assert!(used <= MemTable::entry_charge(key.len(), value.len()));
    }
}

#[test]
fn entry_charge_covers_the_tallest_misaligned_node() {
    let list = SkipList::new(1 << 12);
    // Misalign the bump pointer, then insert a node of the maximum height.
    list.insert(
        Target {
            user_key: b"a",
            trailer: 1,
        },
        b"xyz",
        1,
    )
    .expect("fits");
    for (klen, vlen) in [(0, 0), (1, 2), (5, 0), (3, 3)] {
        let key = vec![b'b'; klen];
        let before = list.memory_usage();
        list.insert(
            Target {
                user_key: &key,
                trailer: 1,
            },
            &vec![0; vlen],
            MAX_HEIGHT,
        )
        .expect("fits");
        assert!(list.memory_usage() - before <= MemTable::entry_charge(klen, vlen));
    }
    assert_eq!(list.check_invariants(), 5);
}

#[test]
fn a_table_sized_by_charges_fits_those_entries() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    for round in 0..2_000u64 {
        let n = 1 + round as usize % 5;
        let mut entries = Vec::new();
        for _ in 0..n {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            entries.push((
                vec![b'k'; (rng % 40) as usize],
                vec![b'v'; ((rng >> 8) % 200) as usize],
            ));
        }
        let need: usize = entries
            .iter()
            .map(|(k, v)| MemTable::entry_charge(k.len(), v.len()))
            .sum();
        let mem = MemTable::new(need);
        for (seq, (k, v)) in entries.iter().enumerate() {
            mem.add(seq as u64, ValueKind::Value, k, v)
                .expect("the charges cover the entries and the head");
        }
        assert!(mem.memory_usage() <= mem.capacity());
    }
}

#[test]
fn random_heights_are_geometric() {
    let mut counts = [0usize; MAX_HEIGHT + 1];
    for _ in 0..100_000 {
        counts[skiplist::random_height(b"")] += 1;
    }
    assert_eq!(counts[0], 0);
    assert!((70_000..80_000).contains(&counts[1]), "{counts:?}");
    assert!((15_000..22_000).contains(&counts[2]), "{counts:?}");
}

#[test]
fn duplicate_internal_keys_are_kept() {
    let mem = Arc::new(MemTable::new(1 << 12));
    mem.add(3, ValueKind::Value, b"k", b"one").expect("fits");
    mem.add(3, ValueKind::Value, b"k", b"two").expect("fits");
    assert_eq!(mem.len(), 2);
    assert_eq!(
        mem.get(b"k", 3),
        Some((ValueKind::Value, &b"two"[..])),
        "the later one lands first"
    );
    assert_eq!(collect_forward(&mem).len(), 2);
}

/// Checks every cursor operation of the memtable against the model.
fn check_against_model(mem: &Arc<MemTable>, model: &Model, targets: &[Vec<u8>]) {
    let expected: Vec<_> = model.iter().map(model_entry).collect();
    assert_eq!(collect_forward(mem), expected);

    let mut it = mem.iter();
    let mut backward = Vec::new();
    it.seek_to_last();
    while let Some(e) = entry(&it) {
        backward.push(e);
        it.prev();
    }
    backward.reverse();
    assert_eq!(backward, expected);

    for t in targets {
        let target = IKey(t.clone());
        let ge = model.range(target.clone()..).next().map(model_entry);
        it.seek(t);
        assert_eq!(entry(&it), ge);
        if it.valid() {
            it.prev();
            assert_eq!(
                entry(&it),
                model.range(..target.clone()).next_back().map(model_entry)
            );
        }
        let le = model.range(..=target.clone()).next_back().map(model_entry);
        it.seek_for_prev(t);
        assert_eq!(entry(&it), le);
        if it.valid() {
            it.next();
            let after = model
                .range((
                    std::ops::Bound::Excluded(target.clone()),
                    std::ops::Bound::Unbounded,
                ))
                .next()
                .map(model_entry);
            assert_eq!(entry(&it), after);
        }
    }

    for (k, _) in model.iter() {
        let p = keys::parse_internal_key(&k.0).expect("model keys parse");
        for seq in [p.seq, p.seq + 1, p.seq.saturating_sub(1)] {
            let want = model
                .range(IKey(keys::lookup_key(p.user_key, seq))..)
                .next()
                .and_then(|(k, v)| {
                    let q = keys::parse_internal_key(&k.0)?;
                    (q.user_key == p.user_key).then(|| (q.kind, v.clone()))
                });
            let got = mem.get(p.user_key, seq).map(|(kind, v)| (kind, v.to_vec()));
            assert_eq!(got, want);
        }
    }
}

fn user_key_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn matches_btreemap_model(
        entries in prop::collection::vec(
            (user_key_strategy(), any::<bool>(), prop::collection::vec(any::<u8>(), 0..20)),
            0..200,
        ),
        targets in prop::collection::vec(
            (user_key_strategy(), 0u64..250, any::<bool>()),
            0..40,
        ),
        raw_targets in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 0..10),
    ) {
        let mem = Arc::new(MemTable::new(1 << 20));
        let mut model = Model::new();
        for (i, (key, is_value, value)) in entries.iter().enumerate() {
            let seq = i as u64 * 7 % 211 + 1 + i as u64 / 211 * 211;
            let kind = if *is_value { ValueKind::Value } else { ValueKind::Deletion };
            mem.add(seq, kind, key, value).expect("fits");
            model.insert(IKey(keys::make_internal_key(key, seq, kind)), value.clone());
        }
        prop_assert_eq!(mem.len(), model.len());
        prop_assert_eq!(mem.check_invariants(), model.len());
        let mut all_targets: Vec<Vec<u8>> = targets
            .iter()
            .map(|(k, seq, v)| {
                let kind = if *v { ValueKind::Value } else { ValueKind::Deletion };
                keys::make_internal_key(k, *seq, kind)
            })
            .collect();
        all_targets.extend(raw_targets);
        check_against_model(&mem, &model, &all_targets);
    }
}

#[test]
fn concurrent_writers_and_readers() {
    const WRITERS: u64 = 4;
    const PER_WRITER: u64 = 5_000;
    let mem = Arc::new(MemTable::new(16 << 20));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let value_of = |key: &[u8]| -> Vec<u8> { key.iter().rev().copied().collect() };

    let readers: Vec<_> = (0..2)
        .map(|r| {
            let mem = Arc::clone(&mem);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut passes = 0;
                while !done.load(std::sync::atomic::Ordering::Acquire) || passes < 2 {
                    let mut it = mem.iter();
                    let mut prev: Option<Vec<u8>> = None;
                    let mut n = 0;
                    if r == 0 {
                        it.seek_to_first()
                    } else {
                        it.seek(&keys::lookup_key(b"k1", MAX_SEQUENCE))
                    }
                    while it.valid() {
                        let p = keys::parse_internal_key(it.key()).expect("fully written key");
                        assert_eq!(it.value(), &value_of(p.user_key)[..], "fully written value");
                        if let Some(prev) = &prev {
                            assert_eq!(keys::compare_internal_keys(prev, it.key()), Ordering::Less);
                        }
                        prev = Some(it.key().to_vec());
                        n += 1;
                        it.next();
                    }
                    assert!(n <= WRITERS * PER_WRITER);
                    passes += 1;
                }
            })
        })
        .collect();

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let mem = Arc::clone(&mem);
            std::thread::spawn(move || {
                for i in 0..PER_WRITER {
                    let key = format!("k{w}-{:08}", i.wrapping_mul(2_654_435_761) % 1_000_003)
                        .into_bytes();
                    let seq = w * PER_WRITER + i + 1;
                    mem.add(seq, ValueKind::Value, &key, &value_of(&key))
                        .expect("fits");
                    if i % 64 == 0 {
                        let got = mem.get(&key, seq).map(|(k, v)| (k, v.to_vec()));
                        assert_eq!(got, Some((ValueKind::Value, value_of(&key))));
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    for r in readers {
        r.join().expect("reader");
    }

    assert_eq!(mem.len() as u64, WRITERS * PER_WRITER);
    assert_eq!(mem.check_invariants() as u64, WRITERS * PER_WRITER);
    let all = collect_forward(&mem);
    assert_eq!(all.len() as u64, WRITERS * PER_WRITER);
    assert_sorted(&all);
    for w in 0..WRITERS {
        for i in 0..PER_WRITER {
            let key = format!("k{w}-{:08}", i.wrapping_mul(2_654_435_761) % 1_000_003).into_bytes();
            let got = mem.get(&key, MAX_SEQUENCE).map(|(k, v)| (k, v.to_vec()));
            assert_eq!(got, Some((ValueKind::Value, value_of(&key))));
        }
    }
}

/// Hidden sequence ranges: `get` falls through to the next older entry of
/// the key, iterators made after `hide` skip the entries both ways (seeks
/// included), an iterator made before keeps its view, `iter_all` shows
/// everything, against a model of the entries that stay visible.
#[test]
fn hidden_writes_are_skipped_by_get_and_iterators() {
    let mem = Arc::new(MemTable::new(1 << 20));
    let mut model = Model::new();
    let mut all = Model::new();
    // Keys k00..k19, each written at seqs 10*i+1..=10*i+3; hide seq 2 of
    // every key, and all three writes of k07 and of the last key (k19).
    let hidden = |seq: u64| seq % 10 == 2 || (71..=73).contains(&seq) || seq >= 191;
    for i in 0..20u64 {
        let key = format!("k{i:02}");
        for s in 1..=3 {
            let seq = 10 * i + s;
            let value = format!("v{seq}");
            mem.add(seq, ValueKind::Value, key.as_bytes(), value.as_bytes())
                .expect("room");
            let ik = IKey(keys::make_internal_key(
                key.as_bytes(),
                seq,
                ValueKind::Value,
            ));
            all.insert(ik.clone(), value.clone().into_bytes());
            if !hidden(seq) {
                model.insert(ik, value.into_bytes());
            }
        }
    }
    let before = mem.iter();
    for i in 0..20u64 {
        mem.hide(10 * i + 2, 10 * i + 2);
    }
    mem.hide(71, 73);
    mem.hide(191, 193);
    assert_eq!(mem.get(b"k03", 32), Some((ValueKind::Value, &b"v31"[..])));
    assert_eq!(mem.get(b"k03", 33), Some((ValueKind::Value, &b"v33"[..])));
    assert_eq!(
        mem.get(b"k07", MAX_SEQUENCE),
        None,
        "every write of k07 is hidden"
    );
    assert_eq!(mem.get(b"k19", MAX_SEQUENCE), None);
    assert_eq!(
        collect_forward(&mem),
        model.iter().map(model_entry).collect::<Vec<_>>()
    );
    // Backward.
    let mut it = mem.iter();
    it.seek_to_last();
    let mut back = Vec::new();
    while let Some(e) = entry(&it) {
        back.push(e);
        it.prev();
    }
    back.reverse();
    assert_eq!(back, model.iter().map(model_entry).collect::<Vec<_>>());
    // Seeks onto a hidden entry land on the next visible one each way.
    let target = keys::make_internal_key(b"k07", 73, ValueKind::Value);
    let mut it = mem.iter();
    it.seek(&target);
    let want = model.range(IKey(target.clone())..).next().map(model_entry);
    assert_eq!(entry(&it), want);
    it.seek_for_prev(&target);
    let want = model.range(..=IKey(target)).next_back().map(model_entry);
    assert_eq!(entry(&it), want);
    // Made before the hide, and `iter_all`: every entry.
    let entries = |mut it: MemTableIterator| {
        it.seek_to_first();
        std::iter::from_fn(move || {
            let e = entry(&it);
            it.next();
            e
        })
        .count()
    };
    assert_eq!(entries(before), all.len());
    assert_eq!(entries(mem.iter_all()), all.len());
}

#[test]
fn hidden_range_deletions_stop_deleting() {
    let mem = Arc::new(MemTable::new(1 << 20));
    for (seq, key) in [(1, "a"), (2, "c"), (3, "e")] {
        mem.add(seq, ValueKind::Value, key.as_bytes(), b"v")
            .expect("room");
    }
    // Seq 4 deletes [a, d) and stays; seq 5 deletes [c, z) and is hidden;
    // seq 6 is an empty range (counted, never consulted).
    mem.add_range_deletion(4, b"a", b"d");
    mem.add_range_deletion(5, b"c", b"z");
    mem.add_range_deletion(6, b"q", b"q");
    let before = mem.range_tombstones().expect("tombstones");
    assert_eq!(mem.range_floor(b"e", MAX_SEQUENCE), 5);
    mem.hide(5, 5);
    assert_eq!(mem.range_floor(b"e", MAX_SEQUENCE), 0, "e is back");
    assert_eq!(
        mem.range_floor(b"c", MAX_SEQUENCE),
        4,
        "seq 4 still deletes c"
    );
    assert_eq!(mem.range_floor(b"a", 3), 0, "a snapshot before seq 4");
    let after = mem.range_tombstones().expect("tombstones");
    let seqs: Vec<u64> = after.tombstones().iter().map(|t| t.seq).collect();
    assert_eq!(seqs, vec![4], "the copy made after the hide");
    assert_eq!(
        before.tombstones().len(),
        2,
        "a copy made before keeps its view"
    );
    assert_eq!(mem.range_deletion_seqs(), vec![4, 5, 6]);
    assert!(!mem.is_empty());
    // Hiding a range without range deletions leaves them be.
    mem.hide(1, 1);
    assert_eq!(mem.range_floor(b"b", MAX_SEQUENCE), 4);
}
