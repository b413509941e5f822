//! Every byte of a small table, flipped in turn: opening fails with
//! `Corruption`/`UnsupportedVersion`, or every get and full iteration gives
//! exactly the right data or a `Corruption` error. Never a wrong value,
//! never a panic.

use std::sync::Arc;
use std::time::Instant;

use super::{Entry, MemFile, Rng, model_get, random_entries, write_table};
use crate::Error;
use crate::cache::BlockCache;
use crate::iter::InternalIterator;
use crate::keys::{MAX_SEQUENCE, parse_internal_key};
use crate::sst::{Compression, Table, TableBuilderOptions, TableReadOptions};

fn assert_corruption(e: &Error, what: &str) {
    assert!(e.is_corruption(), "{what}: expected Corruption, got {e}");
}

/// A prefix of `expected` (forward or backward) followed by an error, or
/// all of it. Returns true if there was an error.
fn check_iteration(table: &Arc<Table>, expected: &[Entry], forward: bool, what: &str) -> bool {
    let mut it = table.iter();
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    let mut n = 0;
    while it.valid() {
        let want = if forward {
            &expected[n]
        } else {
            &expected[expected.len() - 1 - n]
        };
        assert_eq!(
            (it.key(), it.value()),
            (&want.0[..], &want.1[..]),
            "{what}: entry {n}"
        );
        n += 1;
        assert!(n <= expected.len(), "{what}: too many entries");
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    match it.status() {
        Ok(()) => {
            assert_eq!(
                n,
                expected.len(),
                "{what}: iteration ended early without an error"
            );
            false
        }
        Err(e) => {
            assert_corruption(&e, what);
            true
        }
    }
}

fn check_gets(table: &Table, entries: &[Entry], probes: &[(Vec<u8>, u64)], what: &str) {
    for (ukey, seq) in probes {
        match table.get(ukey, *seq) {
            Ok(got) => assert_eq!(got, model_get(entries, ukey, *seq), "{what}: get"),
            Err(e) => assert_corruption(&e, what),
        }
    }
}

fn flip_every_byte(compression: Compression) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(11);
    let entries = random_entries(&mut rng, 40, 24);
    let opts = TableBuilderOptions {
        block_size: 256,
        block_restart_interval: 4,
        bloom_bits_per_key: 10,
        compression,
    };
    let (path, props) = write_table(dir.path(), "c.sst", &entries, opts);
    assert!(props.num_data_blocks >= 4, "{}", props.num_data_blocks);
    let good = std::fs::read(&path).expect("read");
    // Present keys at their newest and oldest versions, plus absent keys.
    let mut probes: Vec<(Vec<u8>, u64)> = Vec::new();
    for (k, _) in &entries {
        let p = parse_internal_key(k).expect("key");
        match probes.last_mut() {
            Some(last) if last.0 == p.user_key => last.1 = p.seq,
            _ => probes.push((p.user_key.to_vec(), p.seq)),
        }
    }
    let newest: Vec<_> = probes
        .iter()
        .map(|(k, _)| (k.clone(), MAX_SEQUENCE))
        .collect();
    probes.extend(newest);
    for u in 0..5 {
        probes.push((format!("user{:06}", u * 2).into_bytes(), MAX_SEQUENCE));
    }

    let start = Instant::now();
    let (mut open_failed, mut read_failed) = (0, 0);
    for pos in 0..good.len() {
        for mask in [0xff, 1 << (pos % 8)] {
            let mut data = good.clone();
            data[pos] ^= mask;
            let what = format!("{compression:?} byte {pos} ^ {mask:#x}");
            let len = data.len() as u64;
            let file = Arc::new(MemFile {
                data,
                path: "c.sst".into(),
            });
            // A fresh cache per copy: each block is read (and checked) once.
            let opts = TableReadOptions {
                cache: Some(BlockCache::new(1 << 20)),
                ..Default::default()
            };
            let table = match Table::open(file, len, opts) {
                Ok(t) => t,
                Err(e) => {
                    assert!(
                        e.is_corruption() || matches!(e, Error::UnsupportedVersion { .. }),
                        "{what}: open gave {e}"
                    );
                    open_failed += 1;
                    continue;
                }
            };
            check_gets(&table, &entries, &probes, &what);
            let failed_fwd = check_iteration(&table, &entries, true, &what);
            let failed_bwd = check_iteration(&table, &entries, false, &what);
            assert_eq!(
                failed_fwd, failed_bwd,
                "{what}: both directions read every block"
            );
            if failed_fwd {
                read_failed += 1;
            }
        }
    }
    eprintln!(
        "{compression:?}: {} bytes x 2 flips in {:?}; open failed {open_failed}, reads failed {read_failed}",
        good.len(),
        start.elapsed()
    );
    // Every flip is caught somewhere: the whole file is checksummed.
    assert_eq!(open_failed + read_failed, 2 * good.len());
}

#[test]
fn flip_every_byte_uncompressed() {
    flip_every_byte(Compression::None);
}

#[test]
fn flip_every_byte_lz4() {
    flip_every_byte(Compression::Lz4);
}

/// With checksums off, damaged data blocks may give wrong answers, but the
/// parsers must still never panic (or loop).
#[test]
fn flip_every_byte_unverified_never_panics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(12);
    let entries = random_entries(&mut rng, 30, 24);
    for (i, compression) in [Compression::None, Compression::Lz4]
        .into_iter()
        .enumerate()
    {
        let opts = TableBuilderOptions {
            block_size: 256,
            compression,
            ..Default::default()
        };
        let (path, props) = write_table(dir.path(), &format!("u{i}.sst"), &entries, opts);
        let good = std::fs::read(&path).expect("read");
        for pos in 0..props.data_bytes as usize {
            let mut data = good.clone();
            data[pos] ^= 0x5a;
            let len = data.len() as u64;
            let file = Arc::new(MemFile {
                data,
                path: "u.sst".into(),
            });
            let opts = TableReadOptions {
                verify_checksums: false,
                ..Default::default()
            };
            let table = Table::open(file, len, opts).expect("meta blocks are intact");
            for (k, _) in &entries {
                let p = parse_internal_key(k).expect("key");
                let _ = table.get(p.user_key, p.seq);
            }
            let mut it = table.iter();
            it.seek_to_first();
            while it.valid() {
                it.next();
            }
            it.seek_to_last();
            while it.valid() {
                it.prev();
            }
        }
    }
}
