//! Whole tables against a model: iteration, seeks, gets, properties, the
//! bloom filter, the block cache, large values, versions and bad footers.

use std::sync::Arc;

use super::{
    Entry, MemFile, Rng, check_seeks, collect_backward, collect_forward, model_get, open_table,
    random_entries, write_table,
};
use crate::error::Error;
use crate::internal_iter::InternalIterator;
use crate::io::RandomAccessFile;
use crate::keys::{
    MAX_SEQUENCE, ValueKind, compare_internal_keys, make_internal_key, parse_internal_key,
};
use crate::sst::BlockCache;
use crate::sst::{Compression, FOOTER_LEN, Table, TableBuilderOptions, TableReadOptions};

fn small_blocks(compression: Compression, bloom_bits_per_key: u32) -> TableBuilderOptions {
    TableBuilderOptions {
        block_size: 256,
        block_restart_interval: 4,
        bloom_bits_per_key,
        compression,
        keyspace: 0,
    }
}

fn check_table(table: &Arc<Table>, entries: &[Entry], rng: &mut Rng) {
    let mut it = table.iter();
    assert_eq!(collect_forward(&mut it), entries);
    let mut rev = entries.to_vec();
    rev.reverse();
    assert_eq!(collect_backward(&mut it), rev);
    check_seeks(&mut it, entries, rng, 300);
    assert!(it.status().is_ok());
    let max_seq = entries
        .iter()
        .filter_map(|(k, _)| parse_internal_key(k).map(|p| p.seq))
        .max()
        .unwrap_or(0);
    for _ in 0..1500 {
        let u = rng.below(entries.len() as u64 + 10);
        let ukey = format!("user{u:06}").into_bytes();
        let seq = match rng.below(3) {
            0 => MAX_SEQUENCE,
            _ => rng.below(max_seq + 2),
        };
        assert_eq!(
            table.get(&ukey, seq).expect("get"),
            model_get(entries, &ukey, seq),
            "get({u}, {seq})"
        );
    }
    // Every user key at its newest version and at every version's seq.
    for (k, v) in entries {
        let p = parse_internal_key(k).expect("key");
        assert_eq!(
            table.get(p.user_key, p.seq).expect("get"),
            Some((p.kind, v.clone()))
        );
    }
}

#[test]
fn round_trip_all_variants() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(42);
    let entries = random_entries(&mut rng, 1500, 60);
    for (i, (compression, bits)) in [
        (Compression::None, 10),
        (Compression::Lz4, 10),
        (Compression::None, 0),
        (Compression::Lz4, 3),
    ]
    .into_iter()
    .enumerate()
    {
        let (path, props) = write_table(
            dir.path(),
            &format!("{i}.sst"),
            &entries,
            small_blocks(compression, bits),
        );
        assert!(props.num_data_blocks > 100, "{}", props.num_data_blocks);
        for cache in [None, Some(BlockCache::new(64 << 10))] {
            let opts = TableReadOptions {
                cache: cache.clone(),
                cache_id: i as u64,
                verify_checksums: true,
                pin: None,
            };
            let table = open_table(&path, opts).expect("open");
            assert_eq!(table.properties(), &props);
            check_table(&table, &entries, &mut rng);
            if let Some(c) = cache {
                assert!(c.hits() > 0 && c.misses() > 0);
                assert!(c.usage() <= c.capacity());
            }
        }
        if compression == Compression::Lz4 {
            let plain = std::fs::metadata(dir.path().join("0.sst"))
                .expect("meta")
                .len();
            assert!(
                props.file_size < plain,
                "LZ4 should shrink compressible data"
            );
        }
    }
}

#[test]
fn properties_are_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(3);
    let entries = random_entries(&mut rng, 300, 30);
    let (path, props) = write_table(
        dir.path(),
        "p.sst",
        &entries,
        small_blocks(Compression::None, 10),
    );
    let seqs: Vec<u64> = entries
        .iter()
        .map(|(k, _)| parse_internal_key(k).expect("k").seq)
        .collect();
    assert_eq!(props.format_version, 1);
    assert_eq!(props.num_entries, entries.len() as u64);
    let dels = entries
        .iter()
        .filter(|(k, _)| parse_internal_key(k).expect("k").kind == ValueKind::Deletion)
        .count();
    assert_eq!(props.num_deletions, dels as u64);
    assert_eq!(
        props.raw_key_bytes,
        entries.iter().map(|e| e.0.len() as u64).sum::<u64>()
    );
    assert_eq!(
        props.raw_value_bytes,
        entries.iter().map(|e| e.1.len() as u64).sum::<u64>()
    );
    assert_eq!(props.smallest_key, entries[0].0);
    assert_eq!(props.largest_key, entries[entries.len() - 1].0);
    assert_eq!(props.smallest_seq, *seqs.iter().min().expect("min"));
    assert_eq!(props.largest_seq, *seqs.iter().max().expect("max"));
    assert_eq!(
        props.file_size,
        std::fs::metadata(&path).expect("meta").len()
    );
    assert!(props.filter_bytes > 0 && props.index_bytes > 0);
    let props_block = props.file_size - props.data_bytes - props.filter_bytes - props.index_bytes;
    assert!(
        props_block > FOOTER_LEN as u64 + 5,
        "properties block and footer follow the index"
    );
    let table = open_table(&path, TableReadOptions::default()).expect("open");
    assert_eq!(table.properties(), &props);
    assert!(table.pinned_memory() as u64 >= props.index_bytes - 5 + props.filter_bytes - 5);

    // Index samples: one per block, increasing keys and ends, last = data end.
    let samples = table.index_samples();
    assert_eq!(samples.len() as u64, props.num_data_blocks);
    for w in samples.windows(2) {
        assert!(compare_internal_keys(&w[0].0, &w[1].0).is_lt());
        assert!(w[0].1 < w[1].1);
    }
    assert_eq!(samples.last().expect("samples").1, props.data_bytes);
    // Every entry is <= the separator of the block that holds it.
    let mut prev_off = 0;
    for (k, _) in &entries {
        let off = table.approximate_offset_of(k);
        assert!(off >= prev_off && off < props.data_bytes);
        prev_off = off;
    }
    let past = make_internal_key(b"zzz", 1, ValueKind::Value);
    assert_eq!(table.approximate_offset_of(&past), props.data_bytes);
    assert_eq!(table.approximate_offset_of(b""), 0);
}

#[test]
fn bloom_filter_rates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(9);
    let entries = random_entries(&mut rng, 10_000, 4);
    let (path, _) = write_table(
        dir.path(),
        "b.sst",
        &entries,
        TableBuilderOptions::default(),
    );
    let table = open_table(&path, TableReadOptions::default()).expect("open");
    for (k, _) in &entries {
        assert!(table.may_contain(parse_internal_key(k).expect("k").user_key));
    }
    // Absent keys: even numbers are never written.
    let n = 20_000;
    let fp = (0..n)
        .filter(|i| table.may_contain(format!("user{:06}", i * 2).as_bytes()))
        .count();
    let rate = fp as f64 / n as f64;
    eprintln!(
        "bloom false-positive rate at 10 bits/key: {:.3}%",
        rate * 100.0
    );
    assert!(rate < 0.03, "false-positive rate {rate}");
    // A negative filter answer skips IO entirely: nothing reaches the cache.
    let cache = BlockCache::new(1 << 20);
    let opts = TableReadOptions {
        cache: Some(cache.clone()),
        ..Default::default()
    };
    let table = open_table(&path, opts).expect("open");
    let absent = (0..n)
        .map(|i| format!("user{:06}", i * 2))
        .find(|k| !table.may_contain(k.as_bytes()))
        .expect("some key is filtered");
    assert_eq!(
        table.get(absent.as_bytes(), MAX_SEQUENCE).expect("get"),
        None
    );
    assert_eq!(cache.hits() + cache.misses(), 0);
}

#[test]
fn empty_table_and_large_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, props) = write_table(dir.path(), "e.sst", &[], TableBuilderOptions::default());
    assert_eq!(
        (props.num_entries, props.num_data_blocks, props.data_bytes),
        (0, 0, 0)
    );
    let table = open_table(&path, TableReadOptions::default()).expect("open");
    let mut it = table.iter();
    assert!(collect_forward(&mut it).is_empty() && collect_backward(&mut it).is_empty());
    it.seek(b"x");
    assert!(!it.valid());
    assert_eq!(table.get(b"x", MAX_SEQUENCE).expect("get"), None);
    assert!(table.index_samples().is_empty());

    let big: Vec<u8> = (0..5 << 20).map(|i: u32| (i % 251) as u8).collect();
    let entries = vec![
        (make_internal_key(b"a", 3, ValueKind::Value), Vec::new()),
        (make_internal_key(b"b", 2, ValueKind::Value), big.clone()),
        (
            make_internal_key(b"c", 1, ValueKind::Value),
            b"small".to_vec(),
        ),
    ];
    for (i, c) in [Compression::None, Compression::Lz4]
        .into_iter()
        .enumerate()
    {
        let opts = TableBuilderOptions {
            compression: c,
            ..Default::default()
        };
        let (path, _) = write_table(dir.path(), &format!("big{i}.sst"), &entries, opts);
        let table = open_table(&path, TableReadOptions::default()).expect("open");
        assert_eq!(
            table.get(b"b", 5).expect("get"),
            Some((ValueKind::Value, big.clone()))
        );
        assert_eq!(
            table.get(b"a", 5).expect("get"),
            Some((ValueKind::Value, Vec::new()))
        );
        assert_eq!(table.get(b"a", 2).expect("get"), None);
        assert_eq!(collect_forward(&mut table.iter()), entries);
    }
}

#[test]
fn bad_footers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(5);
    let entries = random_entries(&mut rng, 20, 10);
    let (path, _) = write_table(
        dir.path(),
        "f.sst",
        &entries,
        TableBuilderOptions::default(),
    );
    let bytes = std::fs::read(&path).expect("read");
    let open = |data: Vec<u8>| {
        let len = data.len() as u64;
        let file = Arc::new(MemFile {
            data,
            path: "mem.sst".into(),
        });
        Table::open(file, len, TableReadOptions::default())
    };
    assert!(open(bytes.clone()).is_ok());
    // Short files, including an empty one.
    for len in [0, 1, FOOTER_LEN - 1] {
        let e = open(bytes[..len].to_vec()).unwrap_err();
        assert!(e.is_corruption(), "{e}");
    }
    // A truncated file (the footer is not at the end).
    assert!(
        open(bytes[..bytes.len() - 1].to_vec())
            .unwrap_err()
            .is_corruption()
    );
    // A damaged version byte fails the footer checksum.
    let mut flipped = bytes.clone();
    let at = flipped.len() - 12;
    flipped[at] = 2;
    assert!(open(flipped).unwrap_err().is_corruption());
    // A newer version with an intact footer.
    let mut v2 = bytes.clone();
    let footer = v2.len() - FOOTER_LEN;
    v2[footer + 68] = 2;
    let crc = super::super::format::footer_checksum(
        &v2[footer..footer + 64],
        &v2[footer + 68..footer + 72],
    );
    v2[footer + 64..footer + 68].copy_from_slice(&crc.to_le_bytes());
    match open(v2) {
        Err(Error::UnsupportedVersion {
            found: 2,
            supported: 1,
            ..
        }) => {}
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
    // Bad magic names the file and the footer offset.
    let mut bad = bytes.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    match open(bad) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, std::path::Path::new("mem.sst"));
            assert_eq!(offset, (bytes.len() - FOOTER_LEN) as u64);
        }
        other => panic!("expected Corruption, got {other:?}"),
    }
}

#[test]
fn concurrent_readers_share_a_table_and_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(77);
    let entries = random_entries(&mut rng, 500, 30);
    let (path, _) = write_table(
        dir.path(),
        "m.sst",
        &entries,
        small_blocks(Compression::Lz4, 10),
    );
    // A cache too small for the table, so blocks are evicted and re-read.
    let cache = BlockCache::new(8 << 10);
    let opts = TableReadOptions {
        cache: Some(cache.clone()),
        cache_id: 7,
        verify_checksums: true,
        pin: None,
    };
    let table = open_table(&path, opts).expect("open");
    std::thread::scope(|s| {
        for t in 0..4 {
            let (table, entries) = (&table, &entries);
            s.spawn(move || {
                let mut rng = Rng::new(t);
                for _ in 0..5 {
                    assert_eq!(&collect_forward(&mut table.iter()), entries);
                }
                for _ in 0..2000 {
                    let (k, v) = &entries[rng.below(entries.len() as u64) as usize];
                    let p = parse_internal_key(k).expect("key");
                    assert_eq!(
                        table.get(p.user_key, p.seq).expect("get"),
                        Some((p.kind, v.clone()))
                    );
                }
            });
        }
    });
    assert!(cache.hits() > 0 && cache.usage() <= cache.capacity());
}

#[test]
fn write_errors_are_returned_and_sticky() {
    use crate::io::{FaultInjectingFs, FileSystem, PosixFs};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(21);
    let entries = random_entries(&mut rng, 200, 40);
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    // Fail after a few block appends: add or finish reports EIO, and so does
    // every later call.
    for after in [0, 3] {
        fs.heal();
        let file = fs
            .create_writable(&dir.path().join(format!("w{after}.sst")))
            .expect("create");
        let mut b = crate::sst::TableBuilder::new(file, small_blocks(Compression::None, 10));
        fs.fail_appends_after(after);
        let mut first_err = None;
        for (k, v) in &entries {
            if let Err(e) = b.add(k, v) {
                first_err = Some(e);
                break;
            }
        }
        let e = first_err.expect("an append failed");
        assert!(matches!(e, Error::Io { .. }), "{e}");
        assert!(matches!(b.add(b"zzzzzzzzzz", b""), Err(Error::Io { .. })));
        assert!(matches!(b.finish(), Err(Error::Io { .. })));
    }
    // A failed sync fails finish.
    fs.heal();
    fs.fail_syncs(true);
    let file = fs
        .create_writable(&dir.path().join("s.sst"))
        .expect("create");
    let mut b = crate::sst::TableBuilder::new(file, TableBuilderOptions::default());
    b.add(&entries[0].0, &entries[0].1).expect("add");
    assert!(b.estimated_file_size() > 0);
    assert!(matches!(b.finish(), Err(Error::Io { .. })));
}

/// A table opened with a budget that has room reads every data block at
/// open: afterwards gets and scans read nothing from the file, and the
/// budget is charged until the table is dropped. One that does not fit
/// reads as before.
#[test]
fn pinned_tables_read_no_blocks_and_release_their_budget() {
    use crate::sst::PinBudget;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(91);
    let entries = random_entries(&mut rng, 2000, 12);
    for (name, compression) in [("p.sst", Compression::None), ("z.sst", Compression::Lz4)] {
        let (path, props) = write_table(dir.path(), name, &entries, small_blocks(compression, 10));
        assert!(props.num_data_blocks > 20);
        let budget = PinBudget::new(64 << 20);
        let file = Arc::new(CountingFile::open(&path));
        let table = Table::open(
            Arc::clone(&file) as Arc<dyn RandomAccessFile>,
            props.file_size,
            TableReadOptions {
                pin: Some(Arc::clone(&budget)),
                ..TableReadOptions::default()
            },
        )
        .expect("open");
        assert!(table.pinned_data_memory() > 0);
        assert_eq!(budget.used(), table.pinned_data_memory());
        let reads_after_open = file.reads();
        check_table(&table, &entries, &mut rng);
        assert_eq!(
            file.reads(),
            reads_after_open,
            "a pinned table reads no block"
        );
        drop(table);
        assert_eq!(budget.used(), 0, "the budget comes back");
        // Too small a budget: not pinned, the blocks are read on demand.
        let small = PinBudget::new(100);
        let table = Table::open(
            Arc::clone(&file) as Arc<dyn RandomAccessFile>,
            props.file_size,
            TableReadOptions {
                pin: Some(Arc::clone(&small)),
                ..TableReadOptions::default()
            },
        )
        .expect("open");
        assert_eq!(table.pinned_data_memory(), 0);
        assert_eq!(small.used(), 0);
        let before = file.reads();
        check_table(&table, &entries, &mut rng);
        assert!(file.reads() > before);
    }
}

/// A damaged data block fails the open of a pinned table with the
/// corruption (naming the block), and gives the budget back.
#[test]
fn a_damaged_block_fails_a_pinned_open() {
    use crate::sst::PinBudget;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(92);
    let entries = random_entries(&mut rng, 500, 12);
    let (path, props) = write_table(
        dir.path(),
        "d.sst",
        &entries,
        small_blocks(Compression::None, 10),
    );
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[100] ^= 0x40;
    std::fs::write(&path, &bytes).expect("write");
    let budget = PinBudget::new(64 << 20);
    let err = open_table(
        &path,
        TableReadOptions {
            pin: Some(Arc::clone(&budget)),
            ..TableReadOptions::default()
        },
    )
    .expect_err("damaged");
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert_eq!(budget.used(), 0);
    let _ = props;
}

/// A file that counts its reads.
#[derive(Debug)]
struct CountingFile {
    inner: Arc<dyn RandomAccessFile>,
    reads: std::sync::atomic::AtomicU64,
}

impl CountingFile {
    fn open(path: &std::path::Path) -> CountingFile {
        use crate::io::{FileSystem, PosixFs};
        CountingFile {
            inner: PosixFs.open_random_access(path).expect("open"),
            reads: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn reads(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl RandomAccessFile for CountingFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> crate::error::Result<usize> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.read_at(buf, offset)
    }
    fn path(&self) -> &std::path::Path {
        self.inner.path()
    }
}
