//! Every byte of a small table, flipped in turn: opening fails with
//! `Corruption`/`UnsupportedVersion`, or every get and full iteration gives
//! exactly the right data or a `Corruption` error. Never a wrong value,
//! never a panic.

use std::sync::Arc;
use std::time::Instant;

use super::{Entry, MemFile, Rng, model_get, random_entries, write_table};
use crate::error::Error;
use crate::internal_iter::InternalIterator;
use crate::keys::{MAX_SEQUENCE, parse_internal_key};
use crate::sst::BlockCache;
use crate::sst::{Compression, Table, TableBuilderOptions, TableReadOptions};

/// What a flip test case is, and which block offset its errors must name.
struct Case {
    what: String,
    block_offset: Option<u64>,
}

fn assert_corruption(e: &Error, case: &Case) {
    let what = &case.what;
    match e {
        Error::Corruption { file, offset, .. } => {
            assert_eq!(file, std::path::Path::new("c.sst"), "{what}: {e}");
            if let Some(want) = case.block_offset {
                assert_eq!(*offset, want, "{what}: error names the damaged block: {e}");
            }
        }
        _ => panic!("{what}: expected Corruption, got {e}"),
    }
}

/// A prefix of `expected` (forward or backward) followed by an error, or
/// all of it. Returns true if there was an error.
fn check_iteration(table: &Arc<Table>, expected: &[Entry], forward: bool, case: &Case) -> bool {
    let what = &case.what;
    let mut it = table.iter();
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    let mut n = 0;
    while it.valid() {
        assert!(n < expected.len(), "{what}: too many entries");
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
            assert_corruption(&e, case);
            true
        }
    }
}

fn check_gets(table: &Table, entries: &[Entry], probes: &[(Vec<u8>, u64)], case: &Case) {
    for (ukey, seq) in probes {
        match table.get(ukey, *seq) {
            Ok(got) => assert_eq!(got, model_get(entries, ukey, *seq), "{}: get", case.what),
            Err(e) => assert_corruption(&e, case),
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
        // A keyspace's table: its properties carry the optional field.
        keyspace: 9,
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

    // Data block boundaries, to know which block each flip damages.
    let good_table = Table::open(
        Arc::new(MemFile {
            data: good.clone(),
            path: "c.sst".into(),
        }),
        good.len() as u64,
        TableReadOptions::default(),
    )
    .expect("open intact table");
    let mut block_starts = vec![0];
    block_starts.extend(good_table.index_samples().iter().map(|s| s.1));
    let data_end = props.data_bytes as usize;

    let start = Instant::now();
    let (mut open_failed, mut read_failed) = (0, 0);
    for pos in 0..good.len() {
        for mask in [0xff, 1 << (pos % 8)] {
            let mut data = good.clone();
            data[pos] ^= mask;
            let in_data = pos < data_end;
            let case = Case {
                what: format!("{compression:?} byte {pos} ^ {mask:#x}"),
                block_offset: in_data
                    .then(|| block_starts[block_starts.partition_point(|&b| b <= pos as u64) - 1]),
            };
            let what = &case.what;
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
                    assert!(!in_data, "{what}: open reads no data block");
                    open_failed += 1;
                    continue;
                }
            };
            assert!(in_data, "{what}: damaged meta data went unnoticed at open");
            check_gets(&table, &entries, &probes, &case);
            let failed_fwd = check_iteration(&table, &entries, true, &case);
            let failed_bwd = check_iteration(&table, &entries, false, &case);
            assert_eq!(
                failed_fwd, failed_bwd,
                "{what}: both directions read every block"
            );
            assert!(failed_fwd, "{what}: a damaged data block went unnoticed");
            read_failed += 1;
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
