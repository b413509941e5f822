//! Scan read-ahead (`ReadOptions::readahead_size`): identical results with
//! read-ahead on (several sizes) and off, on a multi-level database, forward
//! and backward, bounded, with seeks; the IO pattern (through the fault
//! file system's read log): the read size grows, carries over to the next
//! table file, resets on a seek, and stops at the upper bound; O_DIRECT
//! (on a real disk under the temp dir, not tmpfs) gives the same results
//! through aligned reads; a damaged block read through read-ahead is
//! `Corruption`, never a wrong value; compaction inputs are read ahead.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use common::{Rng, fast_tempdir};
use varve::fs::PosixFs;
use varve::testing::{FaultInjectingFs, ReadRecord};
use varve::{Db, DbIterator, Options, ReadOptions, ScanPrefetch};

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A tiny-LSM database spread over several levels, with overwrites and
/// deletes, and its model.
fn multi_level_db(dir: &Path, opts: Options) -> (Db, Model) {
    common::multi_level_db(dir, opts, 0x5eed_1234, true)
}

/// Read-ahead without background prefetch (exact read patterns).
fn ro(readahead: usize) -> ReadOptions {
    ReadOptions {
        readahead_size: readahead,
        scan_prefetch: ScanPrefetch::Off,
        ..ReadOptions::default()
    }
}

/// Read-ahead with the default adaptive prefetch.
fn ro_default(readahead: usize) -> ReadOptions {
    ReadOptions {
        readahead_size: readahead,
        ..ReadOptions::default()
    }
}

/// Read-ahead with background prefetch (`ScanPrefetch::Always`).
fn ro_async(readahead: usize) -> ReadOptions {
    ReadOptions {
        scan_prefetch: ScanPrefetch::Always,
        ..ro(readahead)
    }
}

fn collect(it: &mut DbIterator, forward: bool, max: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while it.valid() && out.len() < max {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if forward {
            it.move_next();
        } else {
            it.move_prev();
        }
    }
    it.status().expect("scan status");
    out
}

/// Everything a scan workload sees: full forward and backward scans,
/// bounded scans, seeks followed by nexts.
fn workload(db: &Db, base: &ReadOptions) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut it = db.iter_opt(base);
    it.seek_to_first();
    out.push(collect(&mut it, true, usize::MAX));
    it.seek_to_last();
    out.push(collect(&mut it, false, usize::MAX));
    let mut rng = Rng(77);
    for _ in 0..40 {
        it.seek(key(rng.below(6500)));
        out.push(collect(&mut it, true, 1 + rng.below(300) as usize));
    }
    for _ in 0..20 {
        let a = rng.below(6000);
        let b = a + rng.below(2000);
        let opts = ReadOptions {
            iterate_lower_bound: Some(key(a)),
            iterate_upper_bound: Some(key(b)),
            ..base.clone()
        };
        let mut it = db.iter_opt(&opts);
        it.seek_to_first();
        out.push(collect(&mut it, true, usize::MAX));
        it.seek_to_last();
        out.push(collect(&mut it, false, usize::MAX));
    }
    out
}

#[test]
fn same_results_with_and_without_readahead() {
    let dir = fast_tempdir();
    let opts = Options {
        cache_size: 0,
        ..common::tiny_lsm_options()
    };
    let (db, model) = multi_level_db(dir.path(), opts);
    let off = workload(&db, &ro(0));
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    assert_eq!(off[0], want, "plain scan matches the model");
    for size in [1, 4096, 16 << 10, 100_000, 2 << 20] {
        assert!(
            workload(&db, &ro(size)) == off,
            "readahead_size {size} differs"
        );
    }
    for size in [256 << 10, 1 << 20] {
        assert!(
            workload(&db, &ro_async(size)) == off,
            "async {size} differs"
        );
        assert!(
            workload(&db, &ro_default(size)) == off,
            "adaptive prefetch {size} differs"
        );
    }
    // With the block cache on, and without filling it.
    drop(db);
    let db = Db::open(dir.path(), common::tiny_lsm_options()).expect("reopen");
    for fill_cache in [true, false] {
        let opts = ReadOptions {
            fill_cache,
            ..ro(64 << 10)
        };
        let mut it = db.iter_opt(&opts);
        it.seek_to_first();
        assert_eq!(collect(&mut it, true, usize::MAX), off[0]);
    }
}

/// Larger blocks and files, no block cache, reads logged: a database of
/// `n` keys with 1000-byte values, fully compacted into one level.
fn logged_db(dir: &Path, n: u64, direct: bool) -> (Db, FaultInjectingFs) {
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    let opts = Options {
        fs: Arc::new(fs.clone()),
        cache_size: 0,
        block_size: 4096,
        target_file_size: 1 << 20,
        write_buffer_size: 4 << 20,
        use_direct_reads: direct,
        ..Options::default()
    };
    let db = Db::open(dir, opts).expect("open");
    for i in 0..n {
        db.put(key(i), vec![(i % 251) as u8; 1000]).expect("put");
    }
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    (db, fs)
}

/// The logged reads of table files, in order.
fn sst_reads(fs: &FaultInjectingFs) -> Vec<ReadRecord> {
    fs.take_read_log()
        .into_iter()
        .filter(|r| r.path.extension().is_some_and(|e| e == "sst"))
        .collect()
}

#[test]
fn read_size_grows_carries_over_files_and_resets_on_seek() {
    let dir = fast_tempdir();
    let (db, fs) = logged_db(dir.path(), 8000, false);
    let files: Vec<_> = db.debug().live_tables().concat();
    assert!(files.len() >= 5, "several tables: {files:?}");
    let max = 256 << 10;
    common::count_keys(&db, &ro(0)); // opens every table (footer and meta reads)
    fs.record_reads(true);
    assert_eq!(common::count_keys(&db, &ro(0)), 8000);
    let plain = sst_reads(&fs);
    assert_eq!(common::count_keys(&db, &ro(max)), 8000);
    let ra = sst_reads(&fs);
    assert!(plain.iter().all(|r| r.len < 8 << 10), "one block per read");
    assert!(
        ra.len() * 20 < plain.len(),
        "{} read-ahead reads vs {} block reads",
        ra.len(),
        plain.len()
    );
    // Growth in the first file: a lone block, then 16 KiB doubling to max.
    let first = &ra[0].path;
    let in_first: Vec<usize> = ra
        .iter()
        .take_while(|r| &r.path == first)
        .map(|r| r.len)
        .collect();
    assert!(in_first[0] < 8 << 10, "{in_first:?}");
    assert_eq!(
        &in_first[1..6],
        &[16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10],
        "{in_first:?}"
    );
    // Every later file starts at the size reached (unless the file's data
    // ends sooner), not at the minimum.
    let mut prev = first.clone();
    let mut boundaries = 0;
    for r in &ra {
        if r.path != prev {
            boundaries += 1;
            assert_eq!(r.offset, 0);
            assert!(r.len > 200 << 10, "next file starts at {} bytes", r.len);
            prev = r.path.clone();
        }
    }
    assert!(boundaries >= 4);
    // A seek elsewhere starts over: one block, then 16 KiB.
    let mut it = db.iter_opt(&ro(max));
    it.seek_to_first();
    for _ in 0..2000 {
        it.move_next();
    }
    sst_reads(&fs);
    it.seek(key(5555));
    for _ in 0..50 {
        it.move_next();
    }
    assert_eq!(it.key(), key(5605).as_slice());
    let after_seek = sst_reads(&fs);
    assert!(after_seek[0].len < 8 << 10, "{after_seek:?}");
    assert_eq!(after_seek[1].len, 16 << 10, "{after_seek:?}");
}

/// The default adaptive prefetch changes nothing for an iterator's first
/// seeks followed by short scans (the same reads, in the same order, from
/// the caller's thread: no run history yet); once its runs have shown how
/// far it scans after a seek, a seek reads about that far at once (partly
/// in the background): the same keys, and about as many bytes as the
/// plain read-ahead. A long scan still sees every key.
#[test]
fn adaptive_prefetch_leaves_first_short_scans_alone_and_learns_repeated_ones() {
    let dir = fast_tempdir();
    let (db, fs) = logged_db(dir.path(), 8000, false);
    common::count_keys(&db, &ro(0));
    fs.record_reads(true);
    let max = 256 << 10;
    let short_scans = |opts: &ReadOptions, seeks: usize| {
        let mut it = db.iter_opt(opts);
        let mut rng = Rng(5);
        for _ in 0..seeks {
            let k = rng.below(7800);
            it.seek(key(k));
            for _ in 0..100 {
                it.move_next();
            }
            assert_eq!(it.key(), key(k + 100).as_slice());
        }
        it.status().expect("scan");
    };
    // Eight runs (the history's length) must finish before any prediction.
    short_scans(&ro(max), 8);
    let plain = sst_reads(&fs);
    short_scans(&ro_default(max), 8);
    let adaptive = sst_reads(&fs);
    assert!(!plain.is_empty());
    assert!(adaptive == plain, "{adaptive:?} vs {plain:?}");
    short_scans(&ro(max), 40);
    let plain_reads = sst_reads(&fs);
    let plain: usize = plain_reads.iter().map(|r| r.len).sum();
    short_scans(&ro_default(max), 40);
    let learned = sst_reads(&fs);
    let bytes: usize = learned.iter().map(|r| r.len).sum();
    assert!(
        learned.len() < plain_reads.len(),
        "the learned runs need fewer reads: {} vs {}",
        learned.len(),
        plain_reads.len()
    );
    assert!(
        bytes <= plain + 40 * (64 << 10),
        "learned runs read {bytes} bytes, plain {plain}"
    );
    assert_eq!(common::count_keys(&db, &ro_default(max)), 8000);
    assert_eq!(common::count_keys(&db, &ReadOptions::default()), 8000);
}

#[test]
fn bounded_scan_reads_stop_at_the_bound() {
    let dir = fast_tempdir();
    let (db, fs) = logged_db(dir.path(), 8000, false);
    common::count_keys(&db, &ro(0));
    fs.record_reads(true);
    let mut rng = Rng(99);
    for _ in 0..20 {
        let a = rng.below(7000);
        let b = (a + 1 + rng.below(3000)).min(8000);
        let bounded = |readahead| ReadOptions {
            iterate_lower_bound: Some(key(a)),
            iterate_upper_bound: Some(key(b)),
            ..ro(readahead)
        };
        assert_eq!(common::count_keys(&db, &bounded(0)), b - a);
        let plain = sst_reads(&fs);
        // Half the time with background prefetch, which starts at 256 KiB.
        let mut big = bounded(2 << 20);
        if rng.below(2) == 0 {
            big = bounded(256 << 10);
            big.scan_prefetch = ScanPrefetch::Always;
        }
        assert_eq!(common::count_keys(&db, &big), b - a);
        let ra = sst_reads(&fs);
        // The same blocks are read, in fewer reads: every byte read ahead is
        // inside the blocks the plain scan needed (a chunk may re-read the
        // part of a block its predecessor cut off).
        let end_of = |rs: &[ReadRecord]| {
            let mut m = BTreeMap::new();
            for r in rs {
                let e = m.entry(r.path.clone()).or_insert(0u64);
                *e = (*e).max(r.offset + r.len as u64);
            }
            m
        };
        assert_eq!(end_of(&ra), end_of(&plain), "range {a}..{b}");
        let bytes = |rs: &[ReadRecord]| rs.iter().map(|r| r.len as u64).sum::<u64>();
        assert!(
            bytes(&ra) <= bytes(&plain) + ra.len() as u64 * 4200,
            "range {a}..{b}: {} vs {} bytes",
            bytes(&ra),
            bytes(&plain)
        );
    }
}

#[test]
fn direct_reads_same_results_through_aligned_reads() {
    // O_DIRECT needs a real file system: the temp dir, not /dev/shm.
    let dir = tempfile::tempdir().expect("tempdir");
    let probe = dir.path().join("probe");
    std::fs::write(&probe, [0u8; 4096]).expect("probe");
    let direct_ok = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&probe)
            .is_ok()
    };
    if !direct_ok {
        varve::testing::skip_or_fail(
            "the O_DIRECT read-ahead test",
            "O_DIRECT is refused under the temp dir",
        );
        return;
    }
    let (db, fs) = logged_db(dir.path(), 3000, true);
    let mut it = db.iter_opt(&ro(0));
    it.seek_to_first();
    let want = collect(&mut it, true, usize::MAX);
    assert_eq!(want.len(), 3000);
    fs.record_reads(true);
    for (size, asynchronous, adaptive) in [
        (4096, false, false),
        (100_000, false, false),
        (1 << 20, false, false),
        (256 << 10, true, false),
        (256 << 10, false, true),
    ] {
        let base = ReadOptions {
            scan_prefetch: match (asynchronous, adaptive) {
                (true, _) => ScanPrefetch::Always,
                (false, true) => ScanPrefetch::Adaptive,
                (false, false) => ScanPrefetch::Off,
            },
            ..ro(size)
        };
        let mut it = db.iter_opt(&base);
        it.seek_to_first();
        assert!(collect(&mut it, true, usize::MAX) == want, "size {size}");
        let opts = ReadOptions {
            iterate_lower_bound: Some(key(1234)),
            iterate_upper_bound: Some(key(2345)),
            ..base.clone()
        };
        let mut it = db.iter_opt(&opts);
        it.seek_to_first();
        assert!(
            collect(&mut it, true, usize::MAX) == want[1234..2345],
            "bounded {size}"
        );
    }
    let reads = sst_reads(&fs);
    let chunks: Vec<_> = reads.iter().filter(|r| r.len > 8 << 10).collect();
    assert!(!chunks.is_empty());
    for r in chunks {
        assert_eq!(r.offset % 4096, 0, "{r:?}");
        assert_eq!(r.len % 4096, 0, "{r:?}");
    }
}

#[test]
fn corrupt_block_read_ahead_is_corruption() {
    let dir = fast_tempdir();
    {
        let (db, _fs) = logged_db(dir.path(), 4000, false);
        db.close().expect("close");
    }
    // Damage one byte in the middle of the data of the largest table.
    let mut tables: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    tables.sort_by_key(|p| std::fs::metadata(p).expect("meta").len());
    let victim = tables.last().expect("a table").clone();
    let mut bytes = std::fs::read(&victim).expect("read");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::write(&victim, &bytes).expect("write");

    let opts = Options {
        cache_size: 0,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).expect("reopen");
    for size in [0, 16 << 10, 2 << 20] {
        let mut it = db.iter_opt(&ro(size));
        it.seek_to_first();
        let mut i = 0;
        while it.valid() {
            assert_eq!(it.key(), key(i).as_slice(), "readahead {size}");
            assert_eq!(it.value(), vec![(i % 251) as u8; 1000].as_slice());
            i += 1;
            it.move_next();
        }
        let e = it.status().expect_err("the damaged block stops the scan");
        assert!(e.is_corruption(), "{e}");
        assert!(i < 4000);
    }
}

#[test]
fn compaction_reads_its_inputs_ahead() {
    let dir = fast_tempdir();
    let (db, fs) = logged_db(dir.path(), 4000, false);
    let blocks_before: u64 = db
        .debug()
        .live_tables()
        .concat()
        .iter()
        .map(|t| t.1)
        .sum::<u64>()
        / 4096;
    // Rewrite every key so the next full compaction reads every table.
    for i in 0..4000 {
        db.put(key(i), vec![1u8; 1000]).expect("put");
    }
    db.flush().expect("flush");
    fs.record_reads(true);
    db.compact_range(None, None).expect("compact");
    let reads = sst_reads(&fs);
    let bytes: u64 = reads.iter().map(|r| r.len as u64).sum();
    assert!(
        bytes > blocks_before * 4096,
        "the inputs were read: {bytes}"
    );
    assert!(
        (reads.len() as u64) * 10 < blocks_before * 2,
        "{} reads for about {} blocks of input",
        reads.len(),
        blocks_before * 2
    );
}
