use std::sync::Arc;

use super::*;
use crate::blob::file_writer::BlobFileWriter;
use crate::blob::format::Creator;
use crate::blob::lane_set::BlobLaneSet;
use crate::io::{FaultInjectingFs, FileSystem, PosixFs};

/// A blob file `000007.blob` of `n` values (value `i`: 4 KiB, every
/// fifth one 100 bytes, bytes from `i`), its pointers, and readers over
/// a counting file system.
fn setup(
    dir: &tempfile::TempDir,
    n: usize,
) -> (FaultInjectingFs, BlobReaders, Vec<(Vec<u8>, BlobPointer)>) {
    let path = dir.path().join("000007.blob");
    let mut w = BlobFileWriter::create(&PosixFs, &path, 7, 1 << 20, Creator::WriteLane, false)
        .expect("create");
    let mut out = Vec::new();
    for i in 0..n {
        let len = if i % 5 == 4 { 100 } else { 4096 };
        let v: Vec<u8> = (0..len).map(|j| (i * 7 + j) as u8).collect();
        let p = w.add(format!("k{i:05}").as_bytes(), &v).expect("add");
        out.push((v, p));
    }
    w.finish().expect("finish");
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    let readers = BlobReaders::new(
        Arc::new(fs.clone()) as Arc<dyn FileSystem>,
        dir.path(),
        false,
        Arc::new(BlobLaneSet::new(None)),
    );
    (fs, readers, out)
}

/// The bytes of the reads of blob files logged since the last call.
fn blob_bytes(fs: &FaultInjectingFs) -> u64 {
    fs.take_read_log()
        .iter()
        .filter(|r| r.path.extension().is_some_and(|x| x == "blob"))
        .map(|r| r.len as u64)
        .sum()
}

#[test]
fn scattered_values_come_back_in_order_each_read_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (fs, readers, written) = setup(&dir, 300);
    readers.reader(7).expect("open");
    fs.record_reads(true);
    // Every 7th value, in a shuffled order: no two are neighbours.
    let picks: Vec<usize> = (0..40).map(|i| (i * 7 * 13) % 280).collect();
    let ps: Vec<BlobPointer> = picks.iter().map(|&i| written[i].1).collect();
    let (got, done) = read_values(&readers, IoEngine::IoUring, 32, &ps);
    for (&i, v) in picks.iter().zip(&got) {
        assert_eq!(v.as_ref().expect("value"), &written[i].0, "value {i}");
    }
    let pages: u64 = ps.iter().map(|p| p.aligned_span().1 as u64).sum();
    assert_eq!(done.reads, ps.len());
    assert_eq!(done.bytes, pages);
    assert_eq!(blob_bytes(&fs), pages, "each value's pages, nothing more");
    if crate::io::uring::require_uring("batched blob value reads") {
        assert!(
            done.in_flight >= 4,
            "the reads were at the disk together: {done:?}"
        );
        let [batches, values, reads, _, most] = readers.batches.snapshot();
        assert_eq!((batches, values, reads), (1, 40, 40));
        assert_eq!(most, done.in_flight as u64);
    }
}

#[test]
fn neighbours_share_one_read_of_their_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (fs, readers, written) = setup(&dir, 300);
    readers.reader(7).expect("open");
    fs.record_reads(true);
    // Values 10..60 (in reverse: the plan sorts them), and 200.
    let mut picks: Vec<usize> = (10..60).rev().collect();
    picks.push(200);
    let ps: Vec<BlobPointer> = picks.iter().map(|&i| written[i].1).collect();
    for engine in [IoEngine::IoUring, IoEngine::Sync] {
        let (got, done) = read_values(&readers, engine, 32, &ps);
        for (&i, v) in picks.iter().zip(&got) {
            assert_eq!(v.as_ref().expect("value"), &written[i].0, "value {i}");
        }
        // The neighbours lie in one chunk of 1 MiB, so one read (plus the
        // lone value): their pages, counted once.
        assert!(done.reads <= 3, "{done:?}");
        let first = written[10].1.aligned_span().0;
        let (s, l) = written[59].1.aligned_span();
        let (_, l2) = written[200].1.aligned_span();
        let want = s + l as u64 - first + l2 as u64;
        if done.reads == 2 {
            assert_eq!(done.bytes, want);
        }
        assert!(done.bytes <= want + l2 as u64 + 4096, "{done:?}");
        assert_eq!(blob_bytes(&fs), done.bytes);
    }
}

#[test]
fn a_damaged_pointer_fails_its_value_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_fs, readers, written) = setup(&dir, 50);
    let mut ps: Vec<BlobPointer> = (0..20).map(|i| written[i].1).collect();
    ps[5].crc ^= 1;
    ps[12].file_number = 99; // no such file
    ps[15].offset = u64::MAX - 10; // outside any file
    let (got, _) = read_values(&readers, IoEngine::IoUring, 8, &ps);
    for (i, v) in got.iter().enumerate() {
        match i {
            5 | 12 | 15 => assert!(v.is_err(), "value {i} fails"),
            _ => assert_eq!(v.as_ref().expect("value"), &written[i].0, "value {i}"),
        }
    }
}

#[test]
fn an_empty_batch_reads_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (fs, readers, _) = setup(&dir, 5);
    fs.record_reads(true);
    let (got, done) = read_values(&readers, IoEngine::IoUring, 8, &[]);
    assert!(got.is_empty());
    assert_eq!(done.reads, 0);
    assert_eq!(blob_bytes(&fs), 0);
}
