//! Block builder and block cursor: round trips, seeks, malformed blocks.

use std::sync::Arc;

use super::{Entry, Rng, check_seeks, collect_backward, collect_forward, random_entries};
use crate::internal_iter::InternalIterator;
use crate::keys::{ValueKind, make_internal_key};
use crate::sst::{Block, BlockBuilder};

fn build(entries: &[Entry], restart_interval: usize) -> Vec<u8> {
    let mut b = BlockBuilder::new(restart_interval);
    for (k, v) in entries {
        b.add(k, v);
    }
    assert_eq!(b.len(), entries.len());
    let est = b.current_size_estimate();
    let data = b.finish().to_vec();
    assert_eq!(data.len(), est);
    data
}

fn parse(data: Vec<u8>) -> Arc<Block> {
    Arc::new(Block::parse(data, "test", 0).expect("valid block"))
}

#[test]
fn round_trip_and_seeks() {
    let mut rng = Rng::new(1);
    for interval in [1, 2, 16, 1000] {
        let entries = random_entries(&mut rng, 200, 40);
        let block = parse(build(&entries, interval));
        assert_eq!(block.len(), entries.len());
        let mut it = block.iter();
        assert!(!it.valid());
        assert_eq!(collect_forward(&mut it), entries);
        let mut rev = entries.clone();
        rev.reverse();
        assert_eq!(collect_backward(&mut it), rev);
        // Seek to every key exactly, and between keys.
        for (i, (k, v)) in entries.iter().enumerate() {
            it.seek(k);
            assert!(it.valid());
            assert_eq!(
                (it.key(), it.value()),
                (&k[..], &v[..]),
                "interval {interval} entry {i}"
            );
            it.seek_for_prev(k);
            assert_eq!(it.key(), &k[..]);
        }
        check_seeks(&mut it, &entries, &mut rng, 500);
        assert!(it.status().is_ok());
    }
}

#[test]
fn empty_and_single_entry_blocks() {
    let block = parse(build(&[], 16));
    assert!(block.is_empty());
    let mut it = block.iter();
    for f in [
        |it: &mut dyn InternalIterator| it.seek_to_first(),
        |it: &mut dyn InternalIterator| it.seek_to_last(),
        |it: &mut dyn InternalIterator| it.seek(b"anything"),
        |it: &mut dyn InternalIterator| it.seek_for_prev(b"anything"),
    ] {
        f(&mut it);
        assert!(!it.valid());
    }
    // Empty keys and values are fine.
    let e = vec![(make_internal_key(b"", 5, ValueKind::Value), Vec::new())];
    let block = parse(build(&e, 16));
    let mut it = block.iter();
    assert_eq!(collect_forward(&mut it), e);
    assert_eq!(collect_backward(&mut it), e);
    // A block with no restart array at all is empty too.
    assert!(
        Block::parse(vec![0, 0, 0, 0], "t", 0)
            .expect("ok")
            .is_empty()
    );
}

#[test]
fn large_value_block() {
    let big: Vec<u8> = (0..3 << 20).map(|i| i as u8).collect();
    let e = vec![
        (make_internal_key(b"a", 2, ValueKind::Value), big.clone()),
        (make_internal_key(b"b", 1, ValueKind::Value), b"x".to_vec()),
    ];
    let block = parse(build(&e, 16));
    let mut it = block.iter();
    assert_eq!(collect_forward(&mut it), e);
}

#[test]
fn malformed_blocks_are_rejected_or_harmless() {
    let mut rng = Rng::new(7);
    let entries = random_entries(&mut rng, 20, 10);
    let good = build(&entries, 4);
    // Truncations and bit flips: parse fails, or iteration does not panic.
    for cut in 0..good.len() {
        if let Ok(b) = Block::parse(good[..cut].to_vec(), "t", 0) {
            let b = Arc::new(b);
            collect_forward(&mut b.iter());
            collect_backward(&mut b.iter());
        }
    }
    let mut rejected = 0;
    for pos in 0..good.len() {
        for mask in [0x01, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[pos] ^= mask;
            match Block::parse(bad, "t", 9) {
                Ok(b) => {
                    let b = Arc::new(b);
                    let mut it = b.iter();
                    collect_forward(&mut it);
                    collect_backward(&mut it);
                    check_no_panic_seeks(&mut it, &entries);
                }
                Err(e) => {
                    assert!(
                        matches!(e, crate::error::Error::Corruption { offset: 9, .. }),
                        "{e}"
                    );
                    rejected += 1;
                }
            }
        }
    }
    assert!(rejected > 0);
    // Pure garbage.
    for len in 0..200 {
        if let Ok(b) = Block::parse(rng.bytes(len), "t", 0) {
            let b = Arc::new(b);
            collect_forward(&mut b.iter());
            collect_backward(&mut b.iter());
        }
    }
}

fn check_no_panic_seeks(it: &mut dyn InternalIterator, entries: &[Entry]) {
    for (k, _) in entries {
        it.seek(k);
        it.seek_for_prev(k);
        if it.valid() {
            it.prev();
        }
    }
}
