//! Unit tests of the read-ahead state: chunk growth, limits, O_DIRECT
//! alignment, background prefetch, learned runs, borrowed chunks and the
//! buffer pool.
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use super::buffers::{CHUNK_POOL, POOL_BYTES, POOL_KEEP, SPARE_KEEP};
use super::prefetch::{POLL_BEFORE_BLOCKING, recv_polling};
use super::*;
use crate::sst::format::put_block_trailer;
use crate::sst::tests::read_from;

/// An in-memory file that logs its reads.
#[derive(Debug)]
struct MemFile {
    data: Vec<u8>,
    align: Option<usize>,
    log: Mutex<Vec<(u64, usize)>>,
    /// The reads made by the background worker.
    bg: Mutex<Vec<(u64, usize)>>,
    path: PathBuf,
}

impl RandomAccessFile for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        self.log.lock().push((offset, buf.len()));
        if std::thread::current().name() == Some("varve-readahead") {
            self.bg.lock().push((offset, buf.len()));
        }
        Ok(read_from(&self.data, buf, offset))
    }
    fn path(&self) -> &Path {
        &self.path
    }
    fn direct_alignment(&self) -> Option<usize> {
        self.align
    }
}

impl MemFile {
    /// A file of `data` with no reads logged yet.
    fn new(data: Vec<u8>, align: Option<usize>, path: &str) -> MemFile {
        MemFile {
            data,
            align,
            log: Mutex::new(Vec::new()),
            bg: Mutex::new(Vec::new()),
            path: PathBuf::from(path),
        }
    }
}

/// `n` blocks of `size` content bytes each (content = block number).
fn file(n: usize, size: usize, align: Option<usize>) -> (Arc<MemFile>, Vec<BlockHandle>) {
    let mut data = Vec::new();
    let mut handles = Vec::new();
    for i in 0..n {
        let contents = vec![i as u8; size];
        handles.push(BlockHandle {
            offset: data.len() as u64,
            size: size as u64,
        });
        data.extend_from_slice(&contents);
        put_block_trailer(&mut data, &contents, 0);
    }
    let f = MemFile::new(data, align, "mem.sst");
    (Arc::new(f), handles)
}

/// Reads block `i` of `hs` (blocks of a [`file`], whose contents are `i`
/// repeated) through `ra`, verifying, and checks its contents.
fn read_checked(
    ra: &mut Readahead,
    f: &Arc<dyn RandomAccessFile>,
    hs: &[BlockHandle],
    i: usize,
    limit: u64,
    bounds: Option<&Arc<[u64]>>,
) -> Result<BlockBytes> {
    let end = hs.last().and_then(|h| h.end()).unwrap_or(0);
    let got = ra.read_block(f, end, hs[i], limit, true, bounds)?;
    assert_eq!(
        got.as_slice(),
        vec![i as u8; hs[i].size as usize],
        "block {i}"
    );
    Ok(got)
}

fn read_all(ra: &mut Readahead, f: &Arc<MemFile>, hs: &[BlockHandle], limit: u64) -> Result<()> {
    let dynf: Arc<dyn RandomAccessFile> = Arc::clone(f) as Arc<dyn RandomAccessFile>;
    for i in 0..hs.len() {
        read_checked(ra, &dynf, hs, i, limit, None)?;
    }
    Ok(())
}

#[test]
fn grows_geometrically_up_to_max() {
    let (f, hs) = file(2000, 4000, None);
    let mut ra = Readahead::with_prefetch(256 << 10, Some(ReaderPool::new(4)));
    read_all(&mut ra, &f, &hs, u64::MAX).expect("read");
    // Background chunks are read by two threads, so they may be logged
    // out of order; look at the reads in file order.
    let mut log = f.log.lock().clone();
    log.sort_unstable();
    let sizes: Vec<usize> = log.iter().map(|&(_, n)| n).collect();
    assert_eq!(sizes[0], 4005, "the first read is a lone block");
    assert_eq!(
        &sizes[1..6],
        &[16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10]
    );
    assert!(sizes[6..sizes.len() - 1].iter().all(|&n| n == 256 << 10));
    // Reads cover the file without gaps; a chunk re-reads at most the
    // part of a block the previous chunk cut off.
    let mut pos = 0;
    for &(off, n) in &log {
        assert!(
            off <= pos && pos - off < 4005,
            "read at {off}, covered {pos}"
        );
        pos = off + n as u64;
    }
    assert_eq!(pos, f.data.len() as u64);
    assert_eq!(ra.next_size(), 256 << 10);
}

#[test]
fn random_read_resets_and_limit_holds() {
    let (f, hs) = file(200, 4000, None);
    let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
    let end = f.data.len() as u64;
    let mut ra = Readahead::new(1 << 20);
    read_all(&mut ra, &f, &hs[..40], u64::MAX).expect("read");
    assert!(ra.next_size() > MIN_READAHEAD);
    // A jump backwards (outside the buffer) reads one block and resets.
    f.log.lock().clear();
    ra.read_block(&dynf, end, hs[2], u64::MAX, true, None)
        .expect("read");
    assert_eq!(ra.next_size(), MIN_READAHEAD);
    assert_eq!(*f.log.lock(), vec![(hs[2].offset, 4005)]);
    // Sequential again, but limited to the end of block 10.
    let limit = hs[10].end().expect("end");
    f.log.lock().clear();
    for h in &hs[3..=10] {
        ra.read_block(&dynf, end, *h, limit, true, None)
            .expect("read");
    }
    let log = f.log.lock().clone();
    assert!(
        log.iter().all(|&(off, n)| off + n as u64 <= limit),
        "{log:?}"
    );
    assert_eq!(
        log.len(),
        2,
        "16 KiB then the rest up to the limit: {log:?}"
    );
}

#[test]
fn size_carries_over_to_the_next_file() {
    let (a, ha) = file(100, 4000, None);
    let (b, hb) = file(100, 4000, None);
    let mut ra = Readahead::new(64 << 10);
    read_all(&mut ra, &a, &ha, u64::MAX).expect("a");
    assert_eq!(ra.next_size(), 64 << 10);
    read_all(&mut ra, &b, &hb, u64::MAX).expect("b");
    let first_b = b.log.lock()[0];
    assert_eq!(first_b, (0, 64 << 10), "file b starts at the grown size");
}

#[test]
fn direct_files_get_aligned_chunks() {
    let (f, hs) = file(300, 3000, Some(4096));
    let mut ra = Readahead::new(1 << 20);
    // The lone first block goes through read_block (its own alignment
    // is the file's business), so start from the second block.
    let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
    let end = f.data.len() as u64;
    let mut first = true;
    for (i, h) in hs.iter().enumerate() {
        if first {
            // Mark block 0 as seen without reading it (a cache hit).
            ra.note_access(&dynf, end, *h);
            first = false;
            continue;
        }
        let got = ra
            .read_block(&dynf, end, *h, u64::MAX, true, None)
            .expect("read");
        assert_eq!(got.as_slice(), vec![i as u8; 3000]);
    }
    for &(o, n) in f.log.lock().iter() {
        assert!(o % 4096 == 0 && n % 4096 == 0, "chunk {n} at {o}");
    }
    let limit = hs[50].end().expect("end");
    let mut ra = Readahead::new(1 << 20);
    ra.note_access(&dynf, end, hs[0]);
    f.log.lock().clear();
    for h in &hs[1..=50] {
        ra.read_block(&dynf, end, *h, limit, true, None)
            .expect("read");
    }
    let max_end = f.log.lock().iter().map(|&(o, n)| o + n as u64).max();
    assert!(max_end <= Some(limit.div_ceil(4096) * 4096));
    // Chunks (anything longer than a block) are aligned; lone blocks
    // are the file's business (O_DIRECT files bounce them).
    for &(o, n) in f.log.lock().iter().filter(|r| r.1 > 3005) {
        assert!(o % 4096 == 0 && n % 4096 == 0, "chunk {n} at {o}");
    }
}

#[test]
fn corrupt_block_in_a_chunk_is_corruption() {
    let (f, hs) = file(50, 4000, None);
    let mut data = f.data.clone();
    data[hs[7].offset as usize + 10] ^= 1;
    let bad = Arc::new(MemFile::new(data, None, "bad.sst"));
    let mut ra = Readahead::new(1 << 20);
    let e = read_all(&mut ra, &bad, &hs, u64::MAX).expect_err("block 7 is bad");
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains(&hs[7].offset.to_string()), "{e}");
    assert!(bad.log.lock().len() < 7, "block 7 came from a chunk");
}

/// Blocks of mixed sizes (some larger than a chunk), read in sequential
/// runs broken by random jumps, with background prefetch on: always the
/// right contents, for buffered and aligned files.
#[test]
fn random_runs_with_prefetch_read_the_right_blocks() {
    for align in [None, Some(4096)] {
        let mut data = Vec::new();
        let mut hs = Vec::new();
        let mut x = 12345u64;
        for i in 0..400usize {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let size = if i % 97 == 5 {
                600_000
            } else {
                100 + (x % 9000) as usize
            };
            let contents: Vec<u8> = (0..size).map(|j| (i * 31 + j) as u8).collect();
            hs.push(BlockHandle {
                offset: data.len() as u64,
                size: size as u64,
            });
            data.extend_from_slice(&contents);
            put_block_trailer(&mut data, &contents, 0);
        }
        let end = data.len() as u64;
        let f: Arc<dyn RandomAccessFile> = Arc::new(MemFile::new(data.clone(), align, "mixed.sst"));
        let mut ra = Readahead::with_prefetch(1 << 20, Some(ReaderPool::new(4)));
        let mut i = 0usize;
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(150) || i >= hs.len() {
                i = (x >> 8) as usize % hs.len();
            }
            let limit = if x.is_multiple_of(7) {
                end / 2
            } else {
                u64::MAX
            };
            let h = hs[i];
            let got = ra.read_block(&f, end, h, limit, true, None).expect("read");
            let want: Vec<u8> = (0..h.size as usize).map(|j| (i * 31 + j) as u8).collect();
            assert!(got.as_slice() == want, "block {i} align {align:?}");
            i += 1;
        }
        assert!(ra.chunk_stats().0 > 0);
    }
}

/// A dropped state leaves its chunk buffers to this thread's pool, and
/// the next state takes them instead of allocating (and zeroing) anew.
#[test]
fn dropped_states_leave_their_buffers_to_the_next() {
    let pooled = || CHUNK_POOL.with(|p| p.borrow().len());
    let (f, hs) = file(400, 4000, None);
    let mut ra = Readahead::new(256 << 10);
    read_all(&mut ra, &f, &hs, u64::MAX).expect("read");
    let before = pooled();
    drop(ra);
    let after = pooled();
    assert!(after > before, "nothing pooled: {before} -> {after}");
    let bytes: usize = CHUNK_POOL.with(|p| p.borrow().iter().map(AlignedBuf::capacity).sum());
    assert!(after <= POOL_KEEP && bytes <= POOL_BYTES);
    let mut next = Readahead::new(256 << 10);
    let buf = next.take_spare(200 << 10);
    assert!(buf.capacity() >= 200 << 10);
    assert_eq!(pooled(), after - 1, "the new state took a pooled buffer");
    // Reading through the next state gives the same blocks.
    read_all(&mut next, &f, &hs, u64::MAX).expect("read again");
}

/// Prefetch starts only once a full-size chunk was read in sequence: a
/// short scan never makes a background read; a long one does, and
/// never past the limit, with aligned chunks for O_DIRECT files.
#[test]
fn prefetch_starts_after_a_full_chunk_and_stops_at_the_limit() {
    for align in [None, Some(4096)] {
        let (f, hs) = file(2000, 4000, align);
        let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
        let max = 256 << 10;
        // Short: 60 blocks (240 KiB, read as one block, then 16 KiB
        // doubling to 128 KiB).
        let mut ra = Readahead::with_prefetch(max, Some(ReaderPool::new(4)));
        read_all(&mut ra, &f, &hs[..60], u64::MAX).expect("short");
        assert!(
            ra.worker.is_none(),
            "no reader-pool handle for a short scan"
        );
        assert!(f.bg.lock().is_empty());
        // Long and bounded: blocks 0..=1500 of 2000.
        let limit = hs[1500].end().expect("end");
        let mut ra = Readahead::with_prefetch(max, Some(ReaderPool::new(4)));
        f.log.lock().clear();
        for i in 0..=1500 {
            read_checked(&mut ra, &dynf, &hs, i, limit, None).expect("read");
        }
        drop(ra); // the worker exits once its queue is empty
        let bg = f.bg.lock().clone();
        assert!(bg.len() > 5, "the long scan prefetched: {bg:?}");
        let log = f.log.lock().clone();
        // Synchronous chunks before the first background read reached
        // the full size.
        let first_bg = log.iter().position(|r| bg.contains(r)).expect("bg");
        assert!(log[first_bg - 1].1 >= max, "{log:?}");
        assert!(log[..first_bg - 1].iter().all(|r| r.1 < max), "{log:?}");
        let cap = match align {
            Some(a) => limit.div_ceil(a as u64) * a as u64,
            None => limit,
        };
        for &(o, n) in &bg {
            assert!(o + n as u64 <= cap, "read {n} at {o} past {cap}");
            if align.is_some() {
                assert!(o % 4096 == 0 && n % 4096 == 0, "chunk {n} at {o}");
            }
        }
    }
}

/// Jumps back and forth while chunks are in flight: abandoned chunks
/// never serve a block, and the worker skips those not yet started.
#[test]
fn abandoned_prefetches_never_serve_blocks() {
    let (f, hs) = file(3000, 4000, Some(4096));
    let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
    let mut ra = Readahead::with_prefetch(256 << 10, Some(ReaderPool::new(4)));
    for start in [0usize, 1200, 300, 2000, 10, 2500] {
        for i in start..start + 400 {
            read_checked(&mut ra, &dynf, &hs, i, u64::MAX, None).expect("read");
        }
    }
    assert!(ra.worker.is_some());
}

/// Seek-and-scan runs of one length: once enough runs have finished,
/// a seek reads its block with the first half of the run after it, and
/// the rest of the run comes from background pieces, never more than
/// the prediction past the run; the blocks are always right, for
/// buffered and aligned files.
#[test]
fn learned_runs_are_read_in_the_background() {
    for align in [None, Some(4096)] {
        let (f, hs) = file(3000, 4000, align);
        let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
        let mut ra = Readahead::with_prefetch(2 << 20, Some(ReaderPool::new(4)));
        let run_len = 60;
        let mut x = 7u64;
        for run in 0..20 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let first = (x >> 33) as usize % (hs.len() - run_len);
            f.log.lock().clear();
            f.bg.lock().clear();
            for i in first..first + run_len {
                read_checked(&mut ra, &dynf, &hs, i, u64::MAX, None).expect("read");
            }
            if run <= super::run_history::RUNS {
                continue;
            }
            // Let the worker finish, then look at what was read.
            let bg = f.bg.lock().clone();
            let log = f.log.lock().clone();
            let sync: Vec<_> = log.iter().filter(|r| !bg.contains(r)).collect();
            assert_eq!(sync.len(), 1, "one synchronous read per run: {log:?}");
            // The seek's read holds the first half of the run (the
            // prediction is this run's length: every run is as long).
            let first_end = hs[first].end().expect("end");
            let predicted = hs[first + run_len - 1].end().expect("end") - first_end;
            let want = learned_first(predicted);
            assert!(want > LEARNED_FIRST_MIN as u64, "runs of {predicted} bytes");
            assert!(sync[0].0 + sync[0].1 as u64 >= first_end + want, "{sync:?}");
            assert!(sync[0].1 as u64 <= 4005 + want + 8192, "{sync:?}");
            assert!(!bg.is_empty(), "the rest came in the background");
            let run_start = hs[first].offset;
            let run_end = hs[first + run_len - 1].end().expect("end");
            let max_end = log.iter().map(|&(o, n)| o + n as u64).max().expect("reads");
            assert!(max_end >= run_end, "run {run}: {log:?}");
            assert!(max_end <= run_end + 8192, "over-read in run {run}: {log:?}");
            assert!(log.iter().all(|&(o, _)| o + 4096 >= run_start));
        }
    }
}

/// A cursor that only does point seeks (or short ones) never starts the
/// reader pool and reads one block per seek.
#[test]
fn point_seeks_never_prefetch() {
    let (f, hs) = file(500, 4000, Some(4096));
    let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
    let end = f.data.len() as u64;
    let mut ra = Readahead::with_prefetch(2 << 20, Some(ReaderPool::new(4)));
    for i in 0..200usize {
        let b = (i * 37) % hs.len();
        let got = ra
            .read_block(&dynf, end, hs[b], u64::MAX, true, None)
            .expect("read");
        assert_eq!(got.as_slice(), vec![b as u8; 4000]);
    }
    assert!(ra.worker.is_none());
    assert_eq!(f.log.lock().len(), 200);
    assert!(f.log.lock().iter().all(|&(_, n)| n == 4005));
}

/// Blocks served from a chunk share it; the chunk buffer is never
/// rewritten while a block refers to it, so blocks kept across many
/// later chunk reads (and jumps) keep their contents.
#[test]
fn blocks_from_a_chunk_outlive_it() {
    for align in [None, Some(4096)] {
        for prefetch in [false, true] {
            let (f, hs) = file(400, 4000, align);
            let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
            let end = f.data.len() as u64;
            let mut ra = Readahead::with_prefetch(256 << 10, prefetch.then(|| ReaderPool::new(4)));
            let mut kept = Vec::new();
            for round in 0..3 {
                for (i, h) in hs.iter().enumerate().skip(round * 10) {
                    let b = ra
                        .read_block(&dynf, end, *h, u64::MAX, true, None)
                        .expect("read");
                    if i % 7 == round {
                        kept.push((i, b));
                    }
                }
            }
            assert!(kept.iter().any(|(_, b)| b.is_shared()));
            for (i, b) in &kept {
                assert_eq!(b.as_slice(), vec![*i as u8; 4000], "kept block {i}");
            }
        }
    }
}

/// Chunk buffers replaced while a block still referred to them are
/// reused once the block is gone: a long scan that drops each block
/// before the next keeps a bounded set of buffers.
#[test]
fn replaced_chunk_buffers_are_reused() {
    let (f, hs) = file(3000, 4000, Some(4096));
    let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
    let mut ra = Readahead::with_prefetch(256 << 10, Some(ReaderPool::new(4)));
    let mut prev = None;
    for i in 0..hs.len() {
        let b = read_checked(&mut ra, &dynf, &hs, i, u64::MAX, None).expect("read");
        prev = Some(b); // the iterator holds its current block
        assert!(ra.retired.len() <= SPARE_KEEP && ra.spare.len() <= SPARE_KEEP);
        let spare_bytes: usize = ra.spare.iter().map(|b| b.capacity()).sum();
        assert!(
            spare_bytes <= 2 * ((256 << 10) + (16 << 10)),
            "{spare_bytes}"
        );
    }
    drop(prev);
    assert!(ra.chunk_stats().0 > 10);
    // Retired buffers no block refers to any more become spares, and a
    // full-size chunk is served from one instead of a new allocation.
    ra.reclaim_retired();
    let n = ra.spare.len();
    assert!(
        ra.spare.iter().any(|b| b.capacity() >= 256 << 10),
        "{n} spares"
    );
    let _ = ra.take_spare(256 << 10);
    assert_eq!(ra.spare.len(), n - 1, "reused, not allocated");
}

#[test]
fn truncated_file_is_a_short_read_corruption() {
    let (f, hs) = file(20, 4000, None);
    let mut data = f.data.clone();
    data.truncate(hs[5].offset as usize + 100);
    let short = Arc::new(MemFile::new(data, None, "short.sst"));
    let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&short) as Arc<dyn RandomAccessFile>;
    let end = f.data.len() as u64;
    let mut ra = Readahead::new(1 << 20);
    let mut res = Ok(BlockBytes::from(Vec::new()));
    for h in &hs {
        res = ra.read_block(&dynf, end, *h, u64::MAX, true, None);
        if res.is_err() {
            break;
        }
    }
    assert!(res.expect_err("short").is_corruption());
}

/// Where the contiguous blocks `hs` start, then where the last one ends
/// (a table's `IndexSearch::bounds`).
fn bounds_of(hs: &[BlockHandle]) -> Arc<[u64]> {
    let mut b: Vec<u64> = hs.iter().map(|h| h.offset).collect();
    b.push(hs.last().and_then(|h| h.end()).unwrap_or(0));
    b.into()
}

/// With the table's block bounds, the background readers verify the
/// blocks of their chunks, which are then served without a second check;
/// a block damaged on disk is still `Corruption` when it is reached.
#[test]
fn background_readers_verify_their_chunks() {
    let (f, hs) = file(2000, 4000, None);
    let bounds = bounds_of(&hs);
    let end = f.data.len() as u64;
    let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&f) as Arc<dyn RandomAccessFile>;
    let mut ra = Readahead::with_prefetch(256 << 10, Some(ReaderPool::new(4)));
    for i in 0..hs.len() {
        read_checked(&mut ra, &dynf, &hs, i, u64::MAX, Some(&bounds)).expect("read");
    }
    assert!(
        ra.vouched_blocks() > 1500,
        "{} of 2000 blocks vouched for",
        ra.vouched_blocks()
    );
    // Without bounds, or without verification, nothing is vouched for.
    for (verify, bounds) in [(true, None), (false, Some(&bounds))] {
        let mut ra = Readahead::with_prefetch(256 << 10, Some(ReaderPool::new(4)));
        for h in &hs {
            ra.read_block(&dynf, end, *h, u64::MAX, verify, bounds)
                .expect("read");
        }
        assert_eq!(ra.vouched_blocks(), 0);
    }
    // Damage deep in the background chunks (contents, then the stored
    // checksum) is found when the block is reached.
    for at in [hs[1700].offset + 100, hs[1700].end().expect("end") - 2] {
        let mut data = f.data.clone();
        data[at as usize] ^= 1;
        let bad: Arc<dyn RandomAccessFile> = Arc::new(MemFile::new(data, None, "bad.sst"));
        let mut ra = Readahead::with_prefetch(256 << 10, Some(ReaderPool::new(4)));
        for (i, h) in hs.iter().enumerate() {
            let got = ra.read_block(&bad, end, *h, u64::MAX, true, Some(&bounds));
            if i == 1700 {
                let e = got.expect_err("block 1700 is damaged");
                assert!(e.is_corruption(), "{e}");
                break;
            }
            got.expect("intact block");
        }
        assert!(ra.vouched_blocks() > 1000);
    }
}

/// A file whose background reads (thread `varve-readahead`) see `good`
/// and whose other reads see `bad`.
#[derive(Debug)]
struct SplitView {
    good: Vec<u8>,
    bad: Mutex<Vec<u8>>,
    path: PathBuf,
}

impl RandomAccessFile for SplitView {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        if std::thread::current().name() == Some("varve-readahead") {
            Ok(read_from(&self.good, buf, offset))
        } else {
            Ok(read_from(&self.bad.lock(), buf, offset))
        }
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

/// What a background reader vouched for belongs to the buffer it read:
/// when the same buffer is read into again here, the blocks it now holds
/// are verified like any others. The file gives the background readers
/// intact bytes and this thread a damaged block `x` that the current
/// background chunk holds (verified); jumping back and reading forward
/// re-reads `x` here, and that read must report the damage.
#[test]
fn vouching_never_outlives_its_buffer() {
    let (f, hs) = file(2000, 4000, None);
    let bounds = bounds_of(&hs);
    let end = f.data.len() as u64;
    let split = Arc::new(SplitView {
        good: f.data.clone(),
        bad: Mutex::new(f.data.clone()),
        path: PathBuf::from("split.sst"),
    });
    let dynf: Arc<dyn RandomAccessFile> = Arc::clone(&split) as Arc<dyn RandomAccessFile>;
    let mut ra = Readahead::with_prefetch(256 << 10, Some(ReaderPool::new(4)));
    for h in &hs[..1000] {
        ra.read_block(&dynf, end, *h, u64::MAX, true, Some(&bounds))
            .expect("read");
    }
    // `x`: the first block the current chunk holds whole, which its
    // reader verifies (waited for: it checks while we serve).
    let x = hs
        .iter()
        .position(|h| h.offset >= ra.buf_start)
        .expect("a block in the chunk");
    assert!(
        ra.buf_verified
            .wait_for(hs[x].offset, hs[x].end().expect("end")),
        "the current chunk came from a reader that verified it"
    );
    split.bad.lock()[hs[x].offset as usize + 7] ^= 0x10;
    // Back to `x - 2` (before the chunk), then forward: the chunk read
    // here covers `x`.
    let mut result = Ok(());
    for h in &hs[x - 2..=x] {
        if let Err(e) = ra.read_block(&dynf, end, *h, u64::MAX, true, Some(&bounds)) {
            result = Err(e);
            break;
        }
    }
    let e = result.expect_err("the damaged block was served unverified");
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains(&hs[x].offset.to_string()), "{e}");
}

/// `recv_polling` returns what is sent while it polls, what is sent after
/// it has gone to sleep, and an error once the sender is gone.
#[test]
fn polling_receive_gets_early_and_late_replies() {
    for delay in [
        std::time::Duration::ZERO,
        std::time::Duration::from_micros(200),
        POLL_BEFORE_BLOCKING * 3,
    ] {
        let (tx, rx) = mpsc::channel::<u32>();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(delay);
            tx.send(7).expect("send");
        });
        assert_eq!(recv_polling(&rx).ok(), Some(7), "delay {delay:?}");
        sender.join().expect("sender");
        assert!(recv_polling(&rx).is_err(), "sender gone");
    }
}

/// With a memory budget a state reserves for the chunks it reads, growing
/// the reservation as they grow: one state alone reaches `max`; thirty
/// states over a part that holds thirty 128 KiB bounds (a compaction's
/// inputs) all read in chunks, none block by block, within the part.
#[test]
fn budgeted_states_grow_their_reservation_and_share_the_part() {
    use crate::util::memory::MemoryGauge;
    let max = 2 << 20;
    let alone = MemoryGauge::new(memory_bound(max) * 2);
    let (f, hs) = file(2000, 4000, None);
    let mut ra = Readahead::with_budget(max, None, Some(Arc::clone(&alone)));
    read_all(&mut ra, &f, &hs, u64::MAX).expect("read");
    let sizes: Vec<usize> = f.log.lock().iter().map(|&(_, n)| n).collect();
    assert_eq!(
        &sizes[1..9],
        &[
            16 << 10,
            32 << 10,
            64 << 10,
            128 << 10,
            256 << 10,
            512 << 10,
            1 << 20,
            2 << 20
        ],
        "chunks double up to max"
    );
    assert_eq!(
        alone.used(),
        memory_bound(max),
        "reserved for max once it reads max"
    );
    drop(ra);
    assert_eq!(alone.used(), 0);

    let states = 30;
    let part = MemoryGauge::new(states * memory_bound(128 << 10));
    let files: Vec<(Arc<MemFile>, Vec<BlockHandle>)> =
        (0..states).map(|_| file(300, 4000, None)).collect();
    let mut ras: Vec<Readahead> = (0..states)
        .map(|_| Readahead::with_budget(max, None, Some(Arc::clone(&part))))
        .collect();
    for i in 0..300 {
        for (ra, (f, hs)) in ras.iter_mut().zip(&files) {
            let dynf: Arc<dyn RandomAccessFile> = Arc::clone(f) as Arc<dyn RandomAccessFile>;
            read_checked(ra, &dynf, hs, i, u64::MAX, None).expect("read");
            assert!(part.used() <= part.limit(), "within the part");
        }
    }
    for (s, (f, _)) in files.iter().enumerate() {
        let log = f.log.lock();
        let largest = log.iter().map(|&(_, n)| n).max().unwrap_or(0);
        assert!(
            largest >= 64 << 10 && log.len() < 40,
            "state {s} read {} times, the largest {largest} bytes: block by block",
            log.len()
        );
    }
    drop(ras);
    assert_eq!(part.used(), 0, "every reservation given back");
}
