//! Loom model checks of concurrent inserts with a concurrent reader (see the
//! `memtable` module docs for what they cover). Under loom, a node's height
//! is `1 + (sum of user-key bytes) % 3`, so key `[1]` has height 2, `[2]`
//! height 3 and `[3]` height 1.

use std::sync::Arc;

use loom::thread;

use super::MemTable;
use crate::internal_iter::InternalIterator;
use crate::keys::{self, MAX_SEQUENCE, ValueKind};

/// Arena bytes: the head node and a handful of tiny nodes.
const CAPACITY: usize = 256;

fn value_of(k: u8) -> [u8; 2] {
    [k, !k]
}

/// Checks that an entry a reader saw is fully written and returns its key byte.
fn check_entry(key: &[u8], value: &[u8]) -> u8 {
    assert_eq!(key.len(), 1 + keys::TRAILER_LEN, "key fully written");
    let p = keys::parse_internal_key(key).expect("trailer fully written");
    assert_eq!(p.kind, ValueKind::Value);
    assert_eq!(value, value_of(key[0]), "value fully written");
    key[0]
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

/// One pre-existing entry (key 3) and two inserter threads (keys 1 and 2)
/// whose nodes contend for the same head links at levels 0 and 1.
fn setup() -> (Arc<MemTable>, [thread::JoinHandle<()>; 2]) {
    let mem = Arc::new(MemTable::new(CAPACITY));
    mem.add(1, ValueKind::Value, &[3], &value_of(3))
        .expect("fits");
    let spawn = |k: u8, seq: u64| {
        let mem = Arc::clone(&mem);
        thread::spawn(move || {
            mem.add(seq, ValueKind::Value, &[k], &value_of(k))
                .expect("fits");
        })
    };
    let handles = [spawn(1, 2), spawn(2, 3)];
    (mem, handles)
}

fn finish(mem: &Arc<MemTable>, handles: [thread::JoinHandle<()>; 2]) {
    for h in handles {
        h.join().expect("inserter");
    }
    assert_eq!(mem.len(), 3);
    assert_eq!(mem.check_invariants(), 3);
    for k in 1..=3u8 {
        assert_eq!(
            mem.get(&[k], MAX_SEQUENCE),
            Some((ValueKind::Value, &value_of(k)[..]))
        );
    }
    let mut it = mem.iter();
    let mut seen = Vec::new();
    it.seek_to_last();
    while it.valid() {
        seen.push(check_entry(it.key(), it.value()));
        it.prev();
    }
    assert_eq!(seen, [3, 2, 1]);
    assert!(mem.memory_usage() <= mem.capacity());
}

/// Runs `read` on its own thread while the inserters run, then checks the
/// final state. (The reader is a spawned thread rather than the model's main
/// thread: with the reader on the main thread, loom's preemption-bounded
/// search never let the inserters publish before the reader finished.)
fn with_reader(read: fn(&Arc<MemTable>)) {
    model(move || {
        let (mem, writers) = setup();
        let reader = {
            let mem = Arc::clone(&mem);
            thread::spawn(move || read(&mem))
        };
        reader.join().expect("reader");
        finish(&mem, writers);
    });
}

#[test]
fn loom_concurrent_inserts_with_iterating_reader() {
    with_reader(|mem| {
        let mut it = mem.iter();
        let mut seen = Vec::new();
        it.seek_to_first();
        while it.valid() {
            seen.push(check_entry(it.key(), it.value()));
            it.next();
        }
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "sorted: {seen:?}");
        assert!(seen.contains(&3), "the pre-existing entry is always seen");
    });
}

#[test]
fn loom_concurrent_inserts_with_point_reader() {
    with_reader(|mem| {
        // The search for key 1 (first in order) compares against every
        // node the inserters have linked at the levels it walks.
        if let Some((kind, v)) = mem.get(&[1], MAX_SEQUENCE) {
            assert_eq!((kind, v), (ValueKind::Value, &value_of(1)[..]));
        }
    });
}
