//! Tests of the WAL writer and reader: round trips, exhaustive byte flips and
//! truncations, torn/zero tails, mid-log corruption, version and log-number
//! checks, and writer poisoning. Logs are written with [`PosixFs`]; the
//! exhaustive loops replay from an in-memory copy ([`MemFs`]) so that they
//! measure the reader, not the file system.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::format::{self, BLOCK_SIZE, HEADER_SIZE, RecordType};
use super::reader::{ReplayOutcome, replay_with_block_size};
use super::*;
use crate::error::{Error, Result};
use crate::io::{FileLock, FileSystem, PosixFs, RandomAccessFile, SequentialFile, WritableFile};

const FH_END: u64 = (HEADER_SIZE + format::FILE_HEADER_PAYLOAD_LEN) as u64;

/// Deterministic payload for record `i` of length `len`.
fn payload(i: usize, len: usize) -> Vec<u8> {
    let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// What the writer produced: payloads, their offsets and end offsets.
struct Written {
    payloads: Vec<Vec<u8>>,
    offsets: Vec<u64>,
    ends: Vec<u64>,
    bytes: Vec<u8>,
}

/// Writes `sizes` as records of log `log` with block size `bs` to `path`.
fn write_log(path: &Path, log: u64, bs: usize, sizes: &[usize]) -> Written {
    let fs = PosixFs;
    let mut w = LogWriter::with_block_size(fs.create_writable(path).expect("create"), log, bs)
        .expect("writer");
    assert_eq!(w.file_size(), FH_END);
    assert_eq!(w.log_number(), log);
    let mut out = Written {
        payloads: Vec::new(),
        offsets: Vec::new(),
        ends: Vec::new(),
        bytes: Vec::new(),
    };
    for (i, &len) in sizes.iter().enumerate() {
        let p = payload(i, len);
        let pos = w.file_size();
        let rem = bs as u64 - pos % bs as u64;
        out.offsets.push(if rem < HEADER_SIZE as u64 {
            pos + rem
        } else {
            pos
        });
        w.add_record(&p).expect("append");
        out.ends.push(w.file_size());
        out.payloads.push(p);
    }
    w.sync().expect("sync");
    drop(w);
    out.bytes = read_all(path);
    assert_eq!(out.bytes.len() as u64, *out.ends.last().unwrap_or(&FH_END));
    out
}

fn read_all(path: &Path) -> Vec<u8> {
    let mut f = PosixFs.open_sequential(path).expect("open");
    let mut v = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = f.read(&mut buf).expect("read");
        if n == 0 {
            return v;
        }
        v.extend_from_slice(&buf[..n]);
    }
}

fn write_all(path: &Path, bytes: &[u8]) {
    let mut f = PosixFs.create_writable(path).expect("create");
    f.append(bytes).expect("append");
}

/// Replays `path`, collecting `(payload, offset)` pairs.
fn collect(
    fs: &dyn FileSystem,
    path: &Path,
    log: u64,
    bs: usize,
) -> (Vec<(Vec<u8>, u64)>, Result<ReplayOutcome>) {
    let mut got = Vec::new();
    let r = replay_with_block_size(fs, path, log, bs, |p, off| {
        got.push((p.to_vec(), off));
        Ok(())
    });
    (got, r)
}

/// Asserts `got` is exactly the first `got.len()` written records.
fn assert_prefix(w: &Written, got: &[(Vec<u8>, u64)], ctx: &str) {
    assert!(got.len() <= w.payloads.len(), "{ctx}: too many records");
    for (k, (p, off)) in got.iter().enumerate() {
        assert!(p == &w.payloads[k], "{ctx}: record {k} payload differs");
        assert_eq!(*off, w.offsets[k], "{ctx}: record {k} offset");
    }
}

/// End of the k-th record (k = number of records delivered).
fn end_after(w: &Written, k: usize) -> u64 {
    if k == 0 { FH_END } else { w.ends[k - 1] }
}

#[test]
fn round_trip_sizes_and_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("000007.log");
    let b = BLOCK_SIZE;
    let h = HEADER_SIZE;
    let sizes = [
        0,
        1,
        b - 52, // leaves exactly 10 bytes in block 0: trailer
        5,
        b - 22 - 16, // ends exactly 11 bytes before a block end: empty FIRST
        77,
        b - h,
        b - h - 1,
        b - h + 1,
        b - 2 * h,
        b,
        100 * 1024,
        0,
        3 * b + 17,
        2,
    ];
    let w = write_log(&path, 7, b, &sizes);
    let (got, r) = collect(&PosixFs, &path, 7, b);
    let out = r.expect("replay");
    assert_prefix(&w, &got, "round trip");
    assert_eq!(got.len(), sizes.len());
    assert_eq!(out.records, sizes.len() as u64);
    assert_eq!(out.valid_len, w.bytes.len() as u64);
    assert_eq!(out.tail, TailStatus::Clean);
    // The public entry point agrees.
    let mut n = 0;
    replay(&PosixFs, &path, 7, |_, _| {
        n += 1;
        Ok(())
    })
    .expect("replay");
    assert_eq!(n, sizes.len());
}

#[test]
fn round_trip_every_small_size_small_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log");
    let sizes: Vec<usize> = (0..400).map(|i| (i * 7) % 211).collect();
    for bs in [64, 100, 128] {
        let w = write_log(&path, 3, bs, &sizes);
        let (got, r) = collect(&PosixFs, &path, 3, bs);
        assert_eq!(r.expect("replay").tail, TailStatus::Clean);
        assert_prefix(&w, &got, "small blocks");
        assert_eq!(got.len(), sizes.len());
    }
}

#[test]
fn empty_zero_and_garbage_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log");
    write_all(&path, b"");
    let (got, r) = collect(&PosixFs, &path, 1, BLOCK_SIZE);
    let out = r.expect("empty");
    assert!(got.is_empty());
    assert_eq!(
        (out.records, out.valid_len, out.tail),
        (0, 0, TailStatus::Clean)
    );
    for content in [vec![0u8; 70_000], payload(9, 5000), vec![0u8; 3]] {
        write_all(&path, &content);
        let (got, r) = collect(&PosixFs, &path, 1, BLOCK_SIZE);
        let out = r.expect("garbage-only file is a torn tail");
        assert!(got.is_empty());
        assert_eq!(out.valid_len, 0);
        assert!(
            matches!(out.tail, TailStatus::Truncated { offset: 0, .. }),
            "{out:?}"
        );
    }
    // Only the file header: clean, no records.
    let w = write_log(&path, 1, BLOCK_SIZE, &[]);
    let out = collect(&PosixFs, &path, 1, BLOCK_SIZE)
        .1
        .expect("header only");
    assert_eq!(
        (out.records, out.valid_len, out.tail),
        (0, FH_END, TailStatus::Clean)
    );
    assert_eq!(w.bytes.len() as u64, FH_END);
}

#[test]
fn zero_filled_tail_is_truncated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log");
    let w = write_log(&path, 42, BLOCK_SIZE, &[10, 40_000, 0, 7]);
    let mut bytes = w.bytes.clone();
    bytes.resize(bytes.len() + 100 * 1024, 0);
    write_all(&path, &bytes);
    let (got, r) = collect(&PosixFs, &path, 42, BLOCK_SIZE);
    let out = r.expect("replay");
    assert_prefix(&w, &got, "zero tail");
    assert_eq!(got.len(), 4);
    assert_eq!(out.valid_len, w.bytes.len() as u64);
    assert!(
        matches!(out.tail, TailStatus::Truncated { offset, .. } if offset == w.bytes.len() as u64),
        "{out:?}"
    );
}

#[test]
fn stale_records_of_a_reused_file_end_the_log() {
    // Log 8 overwrites the start of an old log 7 (file recycling).
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write_log(&dir.path().join("old"), 7, BLOCK_SIZE, &[900; 120]);
    let new = write_log(&dir.path().join("new"), 8, BLOCK_SIZE, &[500, 40_000, 3]);
    let mut bytes = old.bytes.clone();
    bytes[..new.bytes.len()].copy_from_slice(&new.bytes);
    let path = dir.path().join("reused");
    write_all(&path, &bytes);
    let (got, r) = collect(&PosixFs, &path, 8, BLOCK_SIZE);
    let out = r.expect("replay");
    assert_prefix(&new, &got, "reused");
    assert_eq!(got.len(), 3);
    assert_eq!(out.valid_len, new.bytes.len() as u64);
    assert!(matches!(out.tail, TailStatus::Truncated { .. }), "{out:?}");
}

#[test]
fn garbage_mid_log_is_corruption_at_its_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log");
    let w = write_log(&path, 5, BLOCK_SIZE, &[100, 200, 300, 400]);
    let mut bytes = w.bytes.clone();
    let at = w.offsets[1] as usize;
    for (k, b) in payload(99, 150).into_iter().enumerate() {
        bytes[at + k] = b;
    }
    write_all(&path, &bytes);
    let (got, r) = collect(&PosixFs, &path, 5, BLOCK_SIZE);
    assert_prefix(&w, &got, "garbage");
    assert_eq!(got.len(), 1, "records before the bad point are delivered");
    match r {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, path);
            assert_eq!(offset, w.offsets[1]);
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    // A record missing from the middle (LAST fragment dropped) is corruption too.
    let w = write_log(&path, 5, 128, &[300, 10, 10]);
    let (got, r) = {
        let mut bytes = w.bytes.clone();
        let last_block = (w.ends[0] as usize - 1) / 128 * 128;
        bytes.drain(last_block..w.ends[0] as usize);
        write_all(&path, &bytes);
        collect(&PosixFs, &path, 5, 128)
    };
    assert!(got.is_empty());
    assert!(matches!(r, Err(Error::Corruption { .. })), "{r:?}");
}

/// Builds a log whose FILE_HEADER payload is `fh` (with a valid checksum).
fn log_with_file_header(log: u64, fh: &[u8], body: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    let len = u16::try_from(fh.len()).expect("short");
    format::put_header(
        &mut v,
        RecordType::FileHeader,
        format::log_low(log),
        fh,
        len,
    );
    v.extend_from_slice(fh);
    v.extend_from_slice(body);
    v
}

#[test]
fn version_magic_and_log_number_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log");
    let w = write_log(&path, 9, BLOCK_SIZE, &[10, 20]);
    let body = &w.bytes[FH_END as usize..];

    write_all(
        &path,
        &log_with_file_header(9, &format::file_header_payload(7, 9), body),
    );
    match collect(&PosixFs, &path, 9, BLOCK_SIZE).1 {
        Err(Error::UnsupportedVersion {
            file,
            found: 7,
            supported: 2,
        }) => assert_eq!(file, path),
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
    // A future version may use a longer header payload.
    let mut long = format::file_header_payload(3, 9).to_vec();
    long.extend_from_slice(&[1; 30]);
    write_all(&path, &log_with_file_header(9, &long, body));
    let r = collect(&PosixFs, &path, 9, BLOCK_SIZE).1;
    assert!(
        matches!(r, Err(Error::UnsupportedVersion { found: 3, .. })),
        "{r:?}"
    );

    let mut bad_magic = format::file_header_payload(1, 9);
    bad_magic[0] = b'X';
    write_all(&path, &log_with_file_header(9, &bad_magic, body));
    let r = collect(&PosixFs, &path, 9, BLOCK_SIZE).1;
    assert!(
        matches!(r, Err(Error::Corruption { offset: 0, .. })),
        "{r:?}"
    );

    write_all(
        &path,
        &log_with_file_header(9, &format::file_header_payload(1, 9)[..16], body),
    );
    let r = collect(&PosixFs, &path, 9, BLOCK_SIZE).1;
    assert!(
        matches!(r, Err(Error::Corruption { offset: 0, .. })),
        "{r:?}"
    );

    // Wrong log number: in the header field, or only in the high 32 bits.
    write_all(&path, &w.bytes);
    for wrong in [10, 9 + (1 << 32)] {
        let (got, r) = collect(&PosixFs, &path, wrong, BLOCK_SIZE);
        assert!(got.is_empty());
        assert!(
            matches!(r, Err(Error::Corruption { offset: 0, .. })),
            "{r:?}"
        );
    }
}

#[test]
fn callback_error_aborts_replay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log");
    write_log(&path, 1, BLOCK_SIZE, &[1, 2, 3]);
    let mut seen = 0;
    let r = replay(&PosixFs, &path, 1, |_, _| {
        seen += 1;
        if seen == 2 {
            Err(Error::InvalidArgument("stop".into()))
        } else {
            Ok(())
        }
    });
    assert!(
        matches!(r, Err(Error::InvalidArgument(ref s)) if s == "stop"),
        "{r:?}"
    );
    assert_eq!(seen, 2);
}

/// A file that fails its `fail_at`-th append (0-based).
#[derive(Debug)]
struct FailingFile {
    appends: usize,
    fail_at: usize,
    len: u64,
    path: PathBuf,
}

impl WritableFile for FailingFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.appends += 1;
        if self.appends > self.fail_at {
            return Err(Error::io(&self.path, std::io::Error::other("disk full")));
        }
        self.len += data.len() as u64;
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

fn failing(fail_at: usize) -> Box<FailingFile> {
    Box::new(FailingFile {
        appends: 0,
        fail_at,
        len: 0,
        path: PathBuf::from("fake.log"),
    })
}

#[test]
fn writer_refuses_appends_after_failure() {
    assert!(matches!(
        LogWriter::new(failing(0), 1),
        Err(Error::Io { .. })
    ));
    let mut w = LogWriter::new(failing(2), 1).expect("header append succeeds");
    w.add_record(b"one").expect("first record");
    let e = w.add_record(b"two").expect_err("second record fails");
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    for _ in 0..2 {
        let e = w.add_record(b"three").expect_err("poisoned");
        assert!(matches!(e, Error::Poisoned(_)), "{e:?}");
    }
    assert!(matches!(w.sync(), Err(Error::Poisoned(_))));
    // A non-empty file is refused.
    let mut f = failing(9);
    f.len = 5;
    assert!(matches!(
        LogWriter::new(f, 1),
        Err(Error::InvalidArgument(_))
    ));
}

// ---- exhaustive flips and truncations over an in-memory copy ----

/// A read-only file system holding one file, optionally cut at `limit`.
#[derive(Debug)]
struct MemFs {
    data: Arc<Mutex<Vec<u8>>>,
    limit: usize,
}

#[derive(Debug)]
struct MemSeq {
    data: Arc<Mutex<Vec<u8>>>,
    pos: usize,
    limit: usize,
    path: PathBuf,
}

impl SequentialFile for MemSeq {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let data = self.data.lock().map_err(|_| Error::Closed)?;
        let end = self.limit.min(data.len());
        let n = buf.len().min(end.saturating_sub(self.pos));
        buf[..n].copy_from_slice(&data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

fn unsupported<T>() -> Result<T> {
    Err(Error::InvalidArgument(
        "MemFs supports open_sequential only".into(),
    ))
}

impl FileSystem for MemFs {
    fn create_dir_all(&self, _: &Path) -> Result<()> {
        unsupported()
    }
    fn list_dir(&self, _: &Path) -> Result<Vec<String>> {
        unsupported()
    }
    fn exists(&self, _: &Path) -> Result<bool> {
        unsupported()
    }
    fn is_dir(&self, _: &Path) -> Result<bool> {
        unsupported()
    }
    fn create_writable(&self, _: &Path) -> Result<Box<dyn WritableFile>> {
        unsupported()
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        Ok(Box::new(MemSeq {
            data: Arc::clone(&self.data),
            pos: 0,
            limit: self.limit,
            path: path.to_path_buf(),
        }))
    }
    fn open_random_access(&self, _: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        unsupported()
    }
    fn file_size(&self, _: &Path) -> Result<u64> {
        unsupported()
    }
    fn remove_file(&self, _: &Path) -> Result<()> {
        unsupported()
    }
    fn remove_dir(&self, _: &Path) -> Result<()> {
        unsupported()
    }
    fn rename(&self, _: &Path, _: &Path) -> Result<()> {
        unsupported()
    }
    fn truncate(&self, _: &Path, _: u64) -> Result<()> {
        unsupported()
    }
    fn sync_dir(&self, _: &Path) -> Result<()> {
        unsupported()
    }
    fn try_lock(&self, _: &Path) -> Result<Option<Box<dyn FileLock>>> {
        unsupported()
    }
}

/// Which framing cases a log exercises: (block trailer, empty FIRST, MIDDLE).
fn framing_cases(w: &Written, bs: usize) -> (bool, bool, bool) {
    let bs = bs as u64;
    let mut cases = (false, false, false);
    for k in 0..w.offsets.len() {
        let prev_end = end_after(w, k);
        cases.0 |= w.offsets[k] != prev_end;
        cases.1 |= w.offsets[k] % bs == bs - HEADER_SIZE as u64 && !w.payloads[k].is_empty();
        cases.2 |= w.ends[k] / bs > w.offsets[k] / bs + 1;
    }
    cases
}

/// Flips a byte and cuts the file at every offset `pick` selects (and
/// checks both outcomes exactly); returns the framing cases covered.
fn exhaustive(bs: usize, sizes: &[usize], pick: impl Fn(u64) -> bool) -> (bool, bool, bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("000011.log");
    let w = write_log(&path, 11, bs, sizes);
    let len = w.bytes.len();
    let data = Arc::new(Mutex::new(w.bytes.clone()));
    let last = sizes.len();
    // Where the last physical record starts: a flip there looks like a torn tail.
    let last_phys = w.offsets[last - 1].max((len as u64 - 1) / bs as u64 * bs as u64);

    let t = Instant::now();
    let picked: Vec<usize> = (0..=len).filter(|&x| pick(x as u64)).collect();
    for &x in &picked {
        let fs = MemFs {
            data: Arc::clone(&data),
            limit: x,
        };
        let ctx = format!("bs {bs} cut at {x}");
        let (got, r) = collect(&fs, &path, 11, bs);
        let out = r.unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert_prefix(&w, &got, &ctx);
        let k = w.ends.iter().filter(|&&e| e <= x as u64).count();
        assert_eq!(got.len(), k, "{ctx}");
        assert_eq!(out.records, k as u64, "{ctx}");
        let valid = if (x as u64) < FH_END {
            0
        } else {
            end_after(&w, k)
        };
        assert_eq!(out.valid_len, valid, "{ctx}");
        if valid == x as u64 {
            assert_eq!(out.tail, TailStatus::Clean, "{ctx}");
        } else {
            assert!(
                matches!(out.tail, TailStatus::Truncated { offset, .. } if offset == valid),
                "{ctx}: {out:?}"
            );
        }
    }
    let cut_time = t.elapsed();

    let t = Instant::now();
    let fs = MemFs {
        data: Arc::clone(&data),
        limit: usize::MAX,
    };
    for &x in picked.iter().filter(|&&x| x < len) {
        data.lock().expect("lock")[x] ^= 0x55;
        let ctx = format!("bs {bs} flip at {x}");
        let (got, r) = collect(&fs, &path, 11, bs);
        data.lock().expect("lock")[x] ^= 0x55;
        assert_prefix(&w, &got, &ctx);
        match r {
            Ok(out) => {
                assert!(
                    x as u64 >= last_phys,
                    "{ctx}: expected corruption, got {out:?}"
                );
                assert_eq!(got.len(), last - 1, "{ctx}");
                assert_eq!(out.valid_len, end_after(&w, last - 1), "{ctx}");
                assert!(matches!(out.tail, TailStatus::Truncated { .. }), "{ctx}");
            }
            Err(Error::Corruption { offset, .. }) => {
                assert!((x as u64) < last_phys, "{ctx}: corruption at {offset}");
                assert!(offset <= x as u64, "{ctx}: corruption offset {offset}");
            }
            Err(e) => panic!("{ctx}: unexpected error {e}"),
        }
    }
    eprintln!(
        "exhaustive bs={bs} len={len}: {} offsets, cuts in {cut_time:?}, flips in {:?}",
        picked.len(),
        t.elapsed()
    );
    framing_cases(&w, bs)
}

#[test]
fn flip_and_truncate_every_offset_small_blocks() {
    // Small blocks make every framing case cheap to test at every offset:
    // FULL, FIRST/MIDDLE+/LAST, block trailers, an empty FIRST fragment.
    let all = |_| true;
    let a = exhaustive(128, &[5, 0, 300, 40, 60, 1, 106, 250, 9], all);
    let b = exhaustive(64, &[0, 100, 2, 42, 13, 200, 0], all);
    let c = exhaustive(100, &[20, 27, 11, 300, 58, 0], all);
    assert!(a.0 || b.0 || c.0, "no block trailer exercised");
    assert!(a.1 || b.1 || c.1, "no empty FIRST exercised");
    assert!(a.2 && b.2 && c.2, "no MIDDLE exercised");
}

/// ~67 KiB: records 1 and 4 each cross a block boundary (FIRST/LAST).
const REAL_SIZES: [usize; 6] = [100, 34_000, 7, 0, 32_000, 1_000];

#[test]
fn flip_and_truncate_sampled_offsets_real_blocks() {
    // The real 32 KiB block (MIDDLE is covered by the small-block test): every offset within 24 bytes of a
    // block boundary, a record start or end, and every 97th offset elsewhere.
    // (Debug replay checksums at ~60 MB/s, so all 71 K offsets take ~100 s;
    // see the ignored test below.)
    let bs = BLOCK_SIZE as u64;
    let mut marks: Vec<u64> = (0..4).map(|b| b * bs).collect();
    let mut p = FH_END;
    for &len in &REAL_SIZES {
        let rem = bs - p % bs;
        let start = if rem < HEADER_SIZE as u64 { p + rem } else { p };
        marks.push(start);
        let mut end = start;
        let mut left = len as u64;
        loop {
            let avail = bs - end % bs - HEADER_SIZE as u64;
            let n = left.min(avail);
            end += HEADER_SIZE as u64 + n;
            left -= n;
            if left == 0 {
                break;
            }
            if bs - end % bs < HEADER_SIZE as u64 {
                end += bs - end % bs;
            }
        }
        marks.push(end);
        p = end;
    }
    let near = move |x: u64| x.is_multiple_of(97) || marks.iter().any(|&m| x.abs_diff(m) <= 24);
    exhaustive(BLOCK_SIZE, &REAL_SIZES, near);
}

#[test]
#[ignore = "~100 s in debug; run with --release -- --ignored"]
fn flip_and_truncate_every_offset_real_blocks() {
    exhaustive(BLOCK_SIZE, &REAL_SIZES, |_| true);
}

// ---- random damage (several bytes, zeroed ranges, cuts, inserted garbage) ----

#[derive(Debug, Clone)]
enum Damage {
    Flip(usize, u8),
    Zero(usize, usize),
    Cut(usize),
    Insert(usize, Vec<u8>),
}

fn apply(bytes: &mut Vec<u8>, d: &Damage) -> usize {
    let len = bytes.len();
    match d {
        Damage::Flip(at, mask) => {
            let at = at % len;
            bytes[at] ^= mask | 1;
            at
        }
        Damage::Zero(at, n) => {
            let at = at % len;
            let end = (at + n).min(len);
            bytes[at..end].fill(0);
            at
        }
        Damage::Cut(at) => {
            let at = at % (len + 1);
            bytes.truncate(at);
            at
        }
        Damage::Insert(at, junk) => {
            let at = at % (len + 1);
            bytes.splice(at..at, junk.iter().copied());
            at
        }
    }
}

fn damage() -> impl proptest::strategy::Strategy<Value = Damage> {
    use proptest::prelude::*;
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(a, m)| Damage::Flip(a, m)),
        (any::<usize>(), 1usize..300).prop_map(|(a, n)| Damage::Zero(a, n)),
        any::<usize>().prop_map(Damage::Cut),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..40)
        )
            .prop_map(|(a, j)| Damage::Insert(a, j)),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config { cases: 200, ..Default::default() })]

    /// Whatever the damage, replay yields a prefix of the written records that
    /// includes every record ending before the first damaged byte, or a
    /// corruption error; never a panic or an invented record.
    #[test]
    fn random_damage_yields_prefix_or_corruption(
        bs in 64usize..200,
        sizes in proptest::collection::vec(0usize..500, 1..12),
        damages in proptest::collection::vec(damage(), 1..4),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log");
        let w = write_log(&path, 77, bs, &sizes);
        let mut bytes = w.bytes.clone();
        let mut first = usize::MAX;
        for d in &damages {
            if !bytes.is_empty() {
                first = first.min(apply(&mut bytes, d));
            }
        }
        let data = Arc::new(Mutex::new(bytes));
        let fs = MemFs { data, limit: usize::MAX };
        let (got, r) = collect(&fs, &path, 77, bs);
        assert_prefix(&w, &got, "random damage");
        let intact = w.ends.iter().filter(|&&e| e <= first as u64).count();
        proptest::prop_assert!(got.len() >= intact, "dropped an undamaged record");
        match r {
            Ok(out) => {
                proptest::prop_assert_eq!(out.records, got.len() as u64);
                let k = got.len();
                proptest::prop_assert!(
                    out.valid_len == end_after(&w, k) || (k == 0 && out.valid_len == 0)
                );
            }
            Err(Error::Corruption { .. }) => {}
            Err(e) => proptest::prop_assert!(false, "unexpected error {}", e),
        }
    }
}
