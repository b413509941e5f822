//! Fuzzing entry points: one function per decoder target, each taking
//! arbitrary bytes and driving the real decoder the way the engine does
//! (see `docs/fuzzing.md`). Compiled only for tests and with the `fuzzing`
//! feature; not part of the public API of a normal build.
//!
//! Contract of every target function: it never panics, hangs or allocates
//! without bound on any input; a decoder error is the expected outcome for
//! junk and is swallowed. A panic is a bug — either in a decoder (it
//! panicked on bad input) or an `assert!` here that checks an invariant the
//! decoder's module documents (for example: a replayed WAL delivers records
//! at increasing offsets below `valid_len`).
//!
//! Inputs of the file-level targets (`wal_v1`, `wal_v2`, `sst_table`,
//! `manifest`) start with one flags byte, the rest being the file:
//! [`FLAG_FIX_CHECKSUMS`] rewrites the checksums of every record or block
//! the file's framing reaches before reading it, so that mutations get past
//! the CRC checks and reach the decoding behind them (as a checksum
//! collision or a malicious file would). The WAL targets prefix a valid
//! file header of their version unless the file already starts with one or
//! [`FLAG_RAW`] is set. Thread-safety: the functions are independent and
//! use only their own in-memory files.
//!
//! [`seeds`] builds the starting corpus from the real writers; the unit
//! tests at the bottom replay the committed corpora (`fuzz/corpus`,
//! `fuzz/regressions`) on stable.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::internal_iter::InternalIterator;
use crate::io::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use crate::keys::{MAX_SEQUENCE, ValueKind, make_internal_key, user_key};
use crate::memtable::MemTable;
use crate::sst::BlockCache;
use crate::sst::{
    Block, BlockBuilder, BlockHandle, BloomFilter, Compression, FOOTER_LEN, FilterBuilder,
    Readahead, Table, TableBuilder, TableBuilderOptions, TableIterOptions, TableReadOptions,
};
use crate::util::checksum::{crc32c, crc32c_extend, mask};
use crate::version::{FileMetaData, NUM_LEVELS, Version, VersionEdit, VersionSet};
use crate::wal::{self, LogWriter, TailStatus, format, record};

/// Flags-byte bit: recompute the checksums the framing reaches.
pub const FLAG_FIX_CHECKSUMS: u8 = 1;
/// Flags-byte bit (WAL and manifest targets): do not prefix a file header.
pub const FLAG_RAW: u8 = 2;
/// Flags-byte bit (`sst_table`): do not verify data-block checksums.
pub const FLAG_NO_VERIFY: u8 = 4;
/// Flags-byte bit (`sst_table`): read data blocks through a block cache.
pub const FLAG_CACHE: u8 = 8;
/// Flags-byte bit (`sst_table`): iterate with read-ahead.
pub const FLAG_READAHEAD: u8 = 16;

/// Log number of the fuzzed WALs and manifests.
pub const LOG_NUMBER: u64 = 7;

/// Most iterator steps any target takes in one direction (bounds the cost
/// of a backward walk, which is quadratic in a block without restarts).
const MAX_STEPS: usize = 2048;

/// Keys each SST target keeps for seeks and lookups.
const SAMPLE_KEYS: usize = 24;

/// The fuzz targets, by the name of their corpus directory.
pub const TARGETS: &[&str] = &[
    "wal_v1",
    "wal_v2",
    "write_batch",
    "sst_table",
    "sst_block",
    "bloom_filter",
    "manifest_edit",
    "manifest",
];

/// Runs `data` through the target `name`; false for an unknown name.
pub fn run_target(name: &str, data: &[u8]) -> bool {
    match name {
        "wal_v1" => wal_v1(data),
        "wal_v2" => wal_v2(data),
        "write_batch" => write_batch(data),
        "sst_table" => sst_table(data),
        "sst_block" => sst_block(data),
        "bloom_filter" => bloom_filter(data),
        "manifest_edit" => manifest_edit(data),
        "manifest" => manifest(data),
        _ => return false,
    }
    true
}

fn split_flags(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((&f, rest)) => (f, rest),
        None => (0, &[]),
    }
}

// ---------------------------------------------------------------- WAL

/// A WAL file as `wal::replay` reads it in recovery (version-1 block
/// framing); every payload is decoded as a write batch.
pub fn wal_v1(data: &[u8]) {
    let (flags, body) = split_flags(data);
    let mut file = with_header(flags, body, format::FORMAT_VERSION);
    if flags & FLAG_FIX_CHECKSUMS != 0 {
        fix_v1_checksums(&mut file);
    }
    replay_checked(file);
}

/// A WAL file of format version 2 (position-independent records), read
/// through `wal::replay`; every payload is decoded as a write batch.
pub fn wal_v2(data: &[u8]) {
    let (flags, body) = split_flags(data);
    let mut file = with_header(flags, body, record::WAL_FORMAT_V2);
    if flags & FLAG_FIX_CHECKSUMS != 0 {
        fix_v2_checksums(&mut file);
    }
    replay_checked(file);
}

/// `body` behind a valid FILE_HEADER record of `version` (unless it
/// already starts with one, or `FLAG_RAW`).
fn with_header(flags: u8, body: &[u8], version: u32) -> Vec<u8> {
    let header = format::file_header_record(version, LOG_NUMBER);
    if flags & FLAG_RAW != 0 || body.starts_with(&header) {
        return body.to_vec();
    }
    let mut out = header;
    out.extend_from_slice(body);
    out
}

/// Replays `file` as WAL `LOG_NUMBER` and checks the outcome against the
/// reader's documented invariants.
fn replay_checked(file: Vec<u8>) {
    let len = file.len() as u64;
    let fs = MemFs::default();
    let path = fs.put("/fuzz/000007.log", file);
    let mut offsets: Vec<u64> = Vec::new();
    let result = wal::replay(&fs, &path, LOG_NUMBER, |payload, offset| {
        if let Ok(batch) = WriteBatch::from_encoded(payload) {
            let ops = batch.iter().count();
            assert_eq!(ops, batch.len(), "a decoded batch iterates its count");
        }
        offsets.push(offset);
        Ok(())
    });
    assert!(
        offsets.windows(2).all(|w| w[0] < w[1]),
        "records delivered at increasing offsets"
    );
    if let Ok(outcome) = result {
        assert_eq!(outcome.records, offsets.len() as u64);
        assert!(outcome.valid_len <= len, "valid_len inside the file");
        assert!(
            offsets.iter().all(|&o| o < outcome.valid_len),
            "every delivered record lies before valid_len"
        );
        match outcome.tail {
            TailStatus::Clean => assert_eq!(outcome.valid_len, len, "a clean log ends at EOF"),
            TailStatus::Truncated { offset, .. } => assert_eq!(offset, outcome.valid_len),
        }
    }
}

/// Rewrites the CRC of every physical record the version-1 block framing
/// reaches (from offset 0, record after record, skipping block trailers).
fn fix_v1_checksums(buf: &mut [u8]) {
    let block = format::BLOCK_SIZE;
    let mut pos = 0;
    while pos < buf.len() {
        let in_block = pos % block;
        if block - in_block < format::HEADER_SIZE {
            pos += block - in_block;
            continue;
        }
        let Some(h) = format::decode_header(&buf[pos..]) else {
            return;
        };
        let len = usize::from(h.len);
        let end = pos + format::HEADER_SIZE + len;
        if in_block + format::HEADER_SIZE + len > block || end > buf.len() {
            return;
        }
        let crc = mask(format::record_crc(
            h.kind,
            h.log_low,
            &buf[pos + format::HEADER_SIZE..end],
        ));
        buf[pos..pos + 4].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

/// Rewrites the CRC of the file header and of every version-2 record that
/// follows it, record after record.
fn fix_v2_checksums(buf: &mut [u8]) {
    let header_len = format::FILE_HEADER_RECORD_LEN;
    if buf.len() < header_len {
        return;
    }
    fix_v1_checksums(&mut buf[..header_len]);
    let mut pos = header_len;
    while let Some(h) = buf.get(pos..pos + record::RECORD_HEADER_SIZE) {
        let len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
        let start = pos + record::RECORD_HEADER_SIZE;
        let Some(end) = start.checked_add(len).filter(|&e| e <= buf.len()) else {
            return;
        };
        let crc = mask(crc32c_extend(
            crc32c(&buf[pos + 4..start]),
            &buf[start..end],
        ));
        buf[pos..pos + 4].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

// ---------------------------------------------------------- write batch

/// A WAL payload decoded as recovery decodes it (`WriteBatch::from_encoded`),
/// every entry iterated and inserted into a memtable sized by its charge.
pub fn write_batch(data: &[u8]) {
    let Ok(batch) = WriteBatch::from_encoded(data) else {
        return;
    };
    let ops: Vec<_> = batch.iter().collect();
    assert_eq!(ops.len(), batch.len(), "a decoded batch iterates its count");
    let charge: usize = ops
        .iter()
        .map(|op| match op {
            crate::batch::BatchOp::Put { key, value } => {
                MemTable::entry_charge(key.len(), value.len())
            }
            crate::batch::BatchOp::Delete { key } => MemTable::entry_charge(key.len(), 0),
        })
        .sum();
    let mem = MemTable::new(charge);
    for (seq, op) in (batch.sequence()..).zip(&ops) {
        let added = match *op {
            crate::batch::BatchOp::Put { key, value } => mem.add(seq, ValueKind::Value, key, value),
            crate::batch::BatchOp::Delete { key } => mem.add(seq, ValueKind::Deletion, key, &[]),
        };
        assert!(
            added.is_ok(),
            "a memtable sized by the batch charge holds it"
        );
    }
    for op in &ops {
        assert!(
            mem.get(op.key(), MAX_SEQUENCE).is_some(),
            "every inserted key is found"
        );
    }
}

// ------------------------------------------------------------------ SST

/// A table file opened as the engine opens it (`Table::open`: footer,
/// properties, index, filter), then iterated forward and backward, sought
/// to its own keys and to keys near them, and queried with `get`.
pub fn sst_table(data: &[u8]) {
    let (flags, body) = split_flags(data);
    let mut bytes = body.to_vec();
    if flags & FLAG_FIX_CHECKSUMS != 0 {
        fix_sst_checksums(&mut bytes);
    }
    let len = bytes.len() as u64;
    let file: Arc<dyn RandomAccessFile> = Arc::new(MemFile {
        data: bytes,
        path: PathBuf::from("/fuzz/000009.sst"),
    });
    let opts = TableReadOptions {
        cache: (flags & FLAG_CACHE != 0).then(|| BlockCache::new(256 << 10)),
        cache_id: 9,
        verify_checksums: flags & FLAG_NO_VERIFY == 0,
    };
    let Ok(table) = Table::open(file, len, opts) else {
        return;
    };
    let iter_opts = || TableIterOptions {
        readahead: (flags & FLAG_READAHEAD != 0)
            .then(|| Arc::new(Mutex::new(Readahead::new(64 << 10)))),
        upper_bound: None,
        fill_cache: true,
    };
    let mut it = table.iter_with(iter_opts());
    let keys = walk(&mut it);
    let _ = it.status();
    for key in probes(&keys) {
        let mut it = table.iter_with(TableIterOptions {
            upper_bound: Some(user_key(&key).to_vec()),
            ..iter_opts()
        });
        seek_around(&mut it, &key);
        let _ = it.status();
        let uk = user_key(&key);
        let _ = table.get(uk, MAX_SEQUENCE);
        let _ = table.get(uk, 1);
        let _ = table.may_contain(uk);
        let _ = table.point_plan(uk);
        let _ = table.approximate_offset_of(&key);
        let _ = table.read_limit_for(&key);
    }
    let _ = table.index_samples();
    let _ = table.pinned_memory();
}

/// Rewrites the footer checksum and the trailers of the meta blocks the
/// footer's handles name (data blocks are left alone: `FLAG_NO_VERIFY`
/// reaches their decoding).
fn fix_sst_checksums(buf: &mut [u8]) {
    let Some(footer) = buf.len().checked_sub(FOOTER_LEN) else {
        return;
    };
    let mut pos = footer;
    for _ in 0..3 {
        let Some((h, n)) = BlockHandle::decode(&buf[pos..footer + 64]) else {
            break;
        };
        pos += n;
        // Size 0 is the "no filter" handle: no block to fix.
        if let Some(end) = h.end().filter(|&e| h.size > 0 && e <= footer as u64) {
            // In bounds: `end` fits the buffer, so these casts are exact.
            let size_end = (end - 5) as usize;
            let start = h.offset as usize;
            let crc = mask(crc32c_extend(
                crc32c(&buf[start..size_end]),
                &buf[size_end..size_end + 1],
            ));
            buf[size_end + 1..size_end + 5].copy_from_slice(&crc.to_le_bytes());
        }
    }
    let crc = mask(crc32c_extend(
        crc32c(&buf[footer..footer + 64]),
        &buf[footer + 68..footer + 72],
    ));
    buf[footer + 64..footer + 68].copy_from_slice(&crc.to_le_bytes());
}

/// Walks `it` forward from the first entry and backward from the last
/// (each at most `MAX_STEPS`); returns some of the keys met (the first and
/// the last ones).
fn walk(it: &mut dyn InternalIterator) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    it.seek_to_first();
    let mut steps = 0;
    while it.valid() && steps < MAX_STEPS {
        if keys.len() < SAMPLE_KEYS / 2 {
            keys.push(it.key().to_vec());
        }
        let _ = it.value();
        it.next();
        steps += 1;
    }
    it.seek_to_last();
    steps = 0;
    while it.valid() && steps < MAX_STEPS {
        if steps < SAMPLE_KEYS / 2 {
            keys.push(it.key().to_vec());
        }
        let _ = it.value();
        it.prev();
        steps += 1;
    }
    keys
}

/// Seek targets from `keys`: each key, and keys just before and after it.
fn probes(keys: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for k in keys {
        out.push(k.clone());
        let uk = user_key(k);
        let mut longer = uk.to_vec();
        longer.push(0);
        out.push(make_internal_key(&longer, MAX_SEQUENCE, ValueKind::Value));
        out.push(make_internal_key(
            &uk[..uk.len().saturating_sub(1)],
            0,
            ValueKind::Deletion,
        ));
    }
    out
}

/// Seeks `it` to `target` and steps around it both ways.
fn seek_around(it: &mut dyn InternalIterator, target: &[u8]) {
    it.seek(target);
    if it.valid() {
        it.next();
        if it.valid() {
            it.prev();
        }
    }
    it.seek_for_prev(target);
    if it.valid() {
        it.prev();
        if it.valid() {
            it.next();
        }
    }
}

/// A block's contents parsed as `Table::open` parses index and data blocks
/// (`Block::parse`), iterated both ways, sought to its keys; then read as
/// an index block: every value decoded as a block handle and the index
/// search array built and queried.
pub fn sst_block(data: &[u8]) {
    let Ok(block) = Block::parse(data.to_vec(), "/fuzz/block", 0) else {
        return;
    };
    let block = Arc::new(block);
    let mut it = block.iter();
    let keys = walk(&mut it);
    assert!(it.status().is_ok(), "a parsed block iterates without error");
    for key in probes(&keys) {
        seek_around(&mut it, &key);
    }
    it.seek_to_first();
    let mut steps = 0;
    while it.valid() && steps < MAX_STEPS {
        let _ = BlockHandle::decode_exact(it.value());
        it.next();
        steps += 1;
    }
    if let Some(search) = crate::sst::IndexSearch::build(&block) {
        for key in &keys {
            let uk = user_key(key);
            let (lo, hi) = search.find(uk);
            assert!(lo <= hi, "find returns an ordered range");
            let _ = search.handle(lo);
            let _ = search.handle(hi);
        }
        let _ = search.find(b"");
        let _ = search.memory();
    }
}

/// A filter block decoded as `Table::open` decodes it and queried; and a
/// filter built from the same keys, which must decode and contain them all.
///
/// Input: `bits_per_key u8 | filter_len u16 LE | filter | keys`, each key
/// `len u8 | bytes`.
pub fn bloom_filter(data: &[u8]) {
    let (&bits, rest) = match data.split_first() {
        Some(x) => x,
        None => return,
    };
    let (filter, mut rest) = match rest {
        [a, b, rest @ ..] => {
            let n = usize::from(u16::from_le_bytes([*a, *b])).min(rest.len());
            rest.split_at(n)
        }
        _ => (rest, &[][..]),
    };
    let mut keys = Vec::new();
    while let Some((&n, tail)) = rest.split_first() {
        let n = usize::from(n).min(tail.len());
        keys.push(&tail[..n]);
        rest = &tail[n..];
    }
    if let Ok(f) = BloomFilter::decode(filter.to_vec()) {
        for k in &keys {
            let _ = f.may_contain(k);
        }
        let _ = f.memory();
    }
    let mut b = FilterBuilder::new(u32::from(bits));
    for k in &keys {
        b.add(k);
    }
    let built = BloomFilter::decode(b.finish()).expect("a built filter decodes");
    for k in &keys {
        assert!(built.may_contain(k), "no false negatives");
    }
}

// ------------------------------------------------------------- manifest

/// A version edit decoded as manifest replay decodes it; it must
/// round-trip, and is applied (as recovery applies edits) to a version
/// builder holding a few files, whose result is then queried.
pub fn manifest_edit(data: &[u8]) {
    let Ok(edit) = VersionEdit::decode(data) else {
        return;
    };
    assert_eq!(
        VersionEdit::decode(&edit.encode()).as_ref(),
        Ok(&edit),
        "a decoded edit round-trips"
    );
    let mut builder = crate::version::Builder::new(&base_version());
    if builder.apply(&edit).is_err() {
        return;
    }
    let v = builder.finish();
    let _ = v.check_invariants();
    let mut keys: Vec<&[u8]> = Vec::new();
    for (_, f) in &edit.new_files {
        keys.push(f.smallest_user_key());
        keys.push(f.largest_user_key());
    }
    for (_, k) in &edit.compact_pointers {
        keys.push(user_key(k));
    }
    for k in keys.iter().take(SAMPLE_KEYS) {
        let _ = v.files_for_get(k).count();
        for level in 0..NUM_LEVELS {
            let _ = v.overlapping_files(level, Some(k), None);
            let _ = v.overlapping_files(level, None, Some(k));
        }
    }
    let _ = v.live_file_numbers().count();
}

/// The version the edits of `manifest_edit` apply to: files 1-2 in L0,
/// 3-4 in L1, 5 in L2 (the seeds delete and move them).
fn base_version() -> Version {
    let mut edit = VersionEdit::default();
    for (level, number, a, b) in [
        (0, 1, "a", "m"),
        (0, 2, "c", "z"),
        (1, 3, "a", "f"),
        (1, 4, "g", "p"),
        (2, 5, "b", "y"),
    ] {
        edit.add_file(level, file_meta(number, a, b, number));
    }
    let mut builder = crate::version::Builder::new(&Version::new());
    builder
        .apply(&edit)
        .expect("the base edit is valid by construction");
    builder.finish()
}

fn file_meta(number: u64, a: &str, b: &str, seq: u64) -> FileMetaData {
    FileMetaData {
        number,
        file_size: 1000 + number,
        smallest: make_internal_key(a.as_bytes(), seq, ValueKind::Value),
        largest: make_internal_key(b.as_bytes(), seq, ValueKind::Deletion),
        smallest_seq: seq,
        largest_seq: seq,
        num_entries: 10,
    }
}

/// A whole manifest file (`MANIFEST-000007`, named by `CURRENT`) recovered
/// as `Db::open` recovers it (`VersionSet::recover_read_only`: header
/// record, edits applied in order, counters checked).
pub fn manifest(data: &[u8]) {
    let (flags, body) = split_flags(data);
    let mut file = with_header(flags, body, format::FORMAT_VERSION);
    if flags & FLAG_FIX_CHECKSUMS != 0 {
        fix_v1_checksums(&mut file);
    }
    let fs = MemFs::default();
    fs.put("/fuzz/db/CURRENT", b"MANIFEST-000007\n".to_vec());
    fs.put("/fuzz/db/MANIFEST-000007", file);
    let fs: Arc<dyn FileSystem> = Arc::new(fs);
    if let Ok(vs) = VersionSet::recover_read_only(fs, Path::new("/fuzz/db")) {
        let v = vs.current();
        assert!(v.check_invariants().is_ok(), "a recovered version is valid");
        let _ = vs.next_file_number();
        let _ = vs.last_sequence();
        let _ = vs.live_files();
    }
}

// ------------------------------------------------------ in-memory files

/// A read-only in-memory file for `Table::open`.
#[derive(Debug)]
struct MemFile {
    data: Vec<u8>,
    path: PathBuf,
}

impl RandomAccessFile for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        Ok(read_from(&self.data, buf, offset))
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

/// `pread` over `data`: the bytes at `offset` (fewer only at the end).
fn read_from(data: &[u8], buf: &mut [u8], offset: u64) -> usize {
    let start = usize::try_from(offset).map_or(data.len(), |o| o.min(data.len()));
    let n = buf.len().min(data.len() - start);
    buf[..n].copy_from_slice(&data[start..start + n]);
    n
}

/// A minimal in-memory file system: enough to read WALs and manifests and
/// to write the seeds. Directories are implicit; locks always succeed.
#[derive(Debug, Default)]
pub struct MemFs {
    files: Mutex<HashMap<PathBuf, Arc<Mutex<Vec<u8>>>>>,
}

impl MemFs {
    /// Stores `data` as the file `path` and returns the path.
    pub fn put(&self, path: &str, data: Vec<u8>) -> PathBuf {
        let path = PathBuf::from(path);
        self.files
            .lock()
            .insert(path.clone(), Arc::new(Mutex::new(data)));
        path
    }

    /// The contents of `path`, if it exists.
    pub fn get(&self, path: &Path) -> Option<Vec<u8>> {
        self.files.lock().get(path).map(|f| f.lock().clone())
    }

    fn file(&self, path: &Path) -> Result<Arc<Mutex<Vec<u8>>>> {
        self.files
            .lock()
            .get(path)
            .cloned()
            .ok_or_else(|| Error::NotFound(path.to_path_buf()))
    }
}

#[derive(Debug)]
struct MemSequential {
    data: Arc<Mutex<Vec<u8>>>,
    pos: u64,
    path: PathBuf,
}

impl SequentialFile for MemSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = read_from(&self.data.lock(), buf, self.pos);
        self.pos += n as u64;
        Ok(n)
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug)]
struct MemRandom {
    data: Arc<Mutex<Vec<u8>>>,
    path: PathBuf,
}

impl RandomAccessFile for MemRandom {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        Ok(read_from(&self.data.lock(), buf, offset))
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug)]
struct MemWritable {
    data: Arc<Mutex<Vec<u8>>>,
    path: PathBuf,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.data.lock().extend_from_slice(data);
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.lock().len() as u64
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug)]
struct MemLock;

impl FileLock for MemLock {}

impl FileSystem for MemFs {
    fn create_dir_all(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        Ok(self
            .files
            .lock()
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(self.files.lock().contains_key(path))
    }
    fn is_dir(&self, path: &Path) -> Result<bool> {
        Ok(self.files.lock().keys().any(|p| p.parent() == Some(path)))
    }
    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let data = Arc::new(Mutex::new(Vec::new()));
        self.files
            .lock()
            .insert(path.to_path_buf(), Arc::clone(&data));
        Ok(Box::new(MemWritable {
            data,
            path: path.to_path_buf(),
        }))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        Ok(Box::new(MemSequential {
            data: self.file(path)?,
            pos: 0,
            path: path.to_path_buf(),
        }))
    }
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(MemRandom {
            data: self.file(path)?,
            path: path.to_path_buf(),
        }))
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(self.file(path)?.lock().len() as u64)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.files
            .lock()
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| Error::NotFound(path.to_path_buf()))
    }
    fn remove_dir(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut files = self.files.lock();
        let f = files
            .remove(from)
            .ok_or_else(|| Error::NotFound(from.to_path_buf()))?;
        files.insert(to.to_path_buf(), f);
        Ok(())
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let f = self.file(path)?;
        let mut data = f.lock();
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(data.len());
        data.truncate(len);
        Ok(())
    }
    fn sync_dir(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn try_lock(&self, _path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        Ok(Some(Box::new(MemLock)))
    }
}

// ---------------------------------------------------------------- seeds

/// The starting corpus, made with the real writers: `(target, name, bytes)`.
/// Every seed is a valid input its decoder accepts (checked by the tests).
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    let batches = sample_batches();
    let payloads: Vec<&[u8]> = batches.iter().map(|b| b.encoded()).collect();

    for (i, b) in batches.iter().enumerate() {
        out.push(("write_batch", format!("batch-{i}"), b.encoded().to_vec()));
    }

    // Version-1 WALs: small records, and one record fragmented across the
    // first block boundary (FIRST / LAST).
    let mut big = WriteBatch::new();
    big.put(b"big", vec![b'x'; format::BLOCK_SIZE]);
    big.set_sequence(50);
    for (name, records) in [
        ("small", payloads.clone()),
        ("fragmented", vec![payloads[0], big.encoded(), payloads[1]]),
    ] {
        let fs = MemFs::default();
        let path = PathBuf::from("/seed/000007.log");
        let file = fs.create_writable(&path).expect("create");
        let mut w = LogWriter::new(file, LOG_NUMBER).expect("log writer");
        for r in &records {
            w.add_record(r).expect("add record");
        }
        let bytes = fs.get(&path).expect("written");
        out.push(("wal_v1", name.to_string(), flagged(0, &bytes)));
        if name == "small" {
            let fixed = flagged(FLAG_FIX_CHECKSUMS, &bytes);
            out.push(("wal_v1", format!("{name}-fix"), fixed));
        }
    }

    // Version-2 WALs.
    for (name, records) in [("small", payloads.clone()), ("empty", Vec::new())] {
        let fs = MemFs::default();
        let path = PathBuf::from("/seed/000007.log");
        let mut file = fs.create_writable(&path).expect("create");
        wal::write_log(file.as_mut(), LOG_NUMBER, &records).expect("write log");
        let bytes = fs.get(&path).expect("written");
        out.push(("wal_v2", name.to_string(), flagged(0, &bytes)));
        out.push((
            "wal_v2",
            format!("{name}-fix"),
            flagged(FLAG_FIX_CHECKSUMS, &bytes),
        ));
    }

    // Tables: with and without filter, LZ4, small blocks so that there are
    // several data blocks and restart points.
    let entries = sample_entries();
    for (name, opts, flags) in [
        (
            "small-blocks",
            TableBuilderOptions {
                block_size: 256,
                block_restart_interval: 4,
                bloom_bits_per_key: 10,
                compression: Compression::None,
            },
            0,
        ),
        (
            "lz4-nofilter",
            TableBuilderOptions {
                block_size: 512,
                block_restart_interval: 16,
                bloom_bits_per_key: 0,
                compression: Compression::Lz4,
            },
            FLAG_CACHE | FLAG_READAHEAD,
        ),
        (
            "one-block-fix",
            TableBuilderOptions::default(),
            FLAG_FIX_CHECKSUMS | FLAG_NO_VERIFY,
        ),
    ] {
        let fs = MemFs::default();
        let path = PathBuf::from("/seed/000009.sst");
        let file = fs.create_writable(&path).expect("create");
        let mut b = TableBuilder::new(file, opts);
        for (k, v) in &entries {
            b.add(k, v).expect("add");
        }
        b.finish().expect("finish");
        let bytes = fs.get(&path).expect("written");
        out.push(("sst_table", name.to_string(), flagged(flags, &bytes)));
    }

    // Blocks: a data block with restarts, an index-like block of handles.
    let mut data_block = BlockBuilder::new(4);
    for (k, v) in entries.iter().take(40) {
        data_block.add(k, v);
    }
    out.push(("sst_block", "data".into(), data_block.finish().to_vec()));
    let mut index_block = BlockBuilder::new(1);
    for (i, (k, _)) in entries.iter().step_by(10).enumerate() {
        let mut h = Vec::new();
        BlockHandle {
            offset: i as u64 * 300,
            size: 295,
        }
        .encode_to(&mut h);
        index_block.add(k, &h);
    }
    out.push(("sst_block", "index".into(), index_block.finish().to_vec()));

    // Bloom filters: `bits | len | filter | keys`.
    for (name, bits, n) in [("ten-bits", 10u8, 20usize), ("one-bit", 1, 3)] {
        let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("key{i:03}").into_bytes()).collect();
        let mut fb = FilterBuilder::new(u32::from(bits));
        for k in &keys {
            fb.add(k);
        }
        let filter = fb.finish();
        let mut input = vec![bits];
        input.extend_from_slice(&(filter.len() as u16).to_le_bytes());
        input.extend_from_slice(&filter);
        for k in keys.iter().chain([&b"absent".to_vec()]) {
            input.push(k.len() as u8);
            input.extend_from_slice(k);
        }
        out.push(("bloom_filter", name.to_string(), input));
    }

    // Version edits, and a manifest holding them.
    let edits = sample_edits();
    for (i, e) in edits.iter().enumerate() {
        out.push(("manifest_edit", format!("edit-{i}"), e.encode()));
    }
    let fs = MemFs::default();
    let dir = Path::new("/seed/db");
    let mut w = crate::version::manifest::ManifestWriter::create(&fs, dir, LOG_NUMBER, &edits[0])
        .expect("manifest");
    for e in &edits[1..4] {
        w.append(e).expect("append");
    }
    let bytes = fs
        .get(&crate::version::manifest::manifest_path(dir, LOG_NUMBER))
        .expect("written");
    out.push(("manifest", "edits".into(), flagged(0, &bytes)));
    out.push((
        "manifest",
        "edits-fix".into(),
        flagged(FLAG_FIX_CHECKSUMS, &bytes),
    ));
    out
}

fn flagged(flags: u8, bytes: &[u8]) -> Vec<u8> {
    let mut v = vec![flags];
    v.extend_from_slice(bytes);
    v
}

fn sample_batches() -> Vec<WriteBatch> {
    let mut a = WriteBatch::new();
    a.put(b"apple", b"red");
    a.put(b"banana", b"");
    a.delete(b"cherry");
    a.set_sequence(1);
    let mut b = WriteBatch::new();
    b.put(vec![0u8; 200], vec![7u8; 300]); // two-byte varint lengths
    b.set_sequence(4);
    let mut c = WriteBatch::new();
    c.set_sequence(5); // empty batch
    let mut d = WriteBatch::new();
    d.delete(b"");
    d.set_sequence(MAX_SEQUENCE);
    vec![a, b, c, d]
}

/// Sorted internal keys: 60 user keys, some with two versions, some
/// tombstones; values of varied length.
fn sample_entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut seq = 1000;
    for i in 0..60u32 {
        let uk = format!("user{:04}", i * 3).into_bytes();
        let versions = 1 + i % 2;
        for v in 0..versions {
            let kind = if (i + v) % 7 == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let value = if kind == ValueKind::Deletion {
                Vec::new()
            } else {
                vec![b'a' + (i % 26) as u8; (i as usize * 7) % 50]
            };
            out.push((make_internal_key(&uk, seq - u64::from(v), kind), value));
        }
        seq -= 2;
    }
    out
}

fn sample_edits() -> Vec<VersionEdit> {
    let mut snapshot = VersionEdit {
        log_number: Some(3),
        next_file_number: Some(20),
        last_sequence: Some(100),
        ..VersionEdit::default()
    };
    snapshot.add_file(0, file_meta(10, "a", "k", 90));
    snapshot.add_file(3, file_meta(11, "b", "c", 80));
    let mut flush = VersionEdit {
        log_number: Some(4),
        last_sequence: Some(120),
        ..VersionEdit::default()
    };
    flush.add_file(0, file_meta(12, "d", "q", 120));
    let mut compaction = VersionEdit::default();
    compaction.delete_file(0, 10);
    compaction.delete_file(0, 12);
    compaction.add_file(1, file_meta(13, "a", "h", 120));
    compaction.add_file(1, file_meta(14, "i", "q", 120));
    compaction
        .compact_pointers
        .push((0, make_internal_key(b"q", 120, ValueKind::Value)));
    let mut moved = VersionEdit {
        next_file_number: Some(30),
        ..VersionEdit::default()
    };
    moved.delete_file(1, 14);
    moved.add_file(2, file_meta(14, "i", "q", 120));
    // Two edits that apply to `base_version` (the `manifest_edit` base).
    let mut base_compaction = VersionEdit::default();
    for (level, number) in [(0, 1), (0, 2), (1, 3), (1, 4)] {
        base_compaction.delete_file(level, number);
    }
    base_compaction.add_file(1, file_meta(15, "a", "h", 2));
    base_compaction.add_file(1, file_meta(16, "i", "z", 2));
    let mut base_move = VersionEdit {
        last_sequence: Some(9),
        ..VersionEdit::default()
    };
    base_move.delete_file(2, 5);
    base_move.add_file(3, file_meta(5, "b", "y", 5));
    base_move.add_file(0, file_meta(17, "0", "9", 8));
    vec![
        snapshot,
        flush,
        compaction,
        moved,
        base_compaction,
        base_move,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Root of the cargo-fuzz crate (`fuzz/` at the repository root).
    fn fuzz_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
    }

    /// Every file of `dir`, sorted; panics if `dir` is missing.
    fn files_in(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        files
    }

    #[test]
    fn every_target_has_a_fuzz_binary_and_a_corpus() {
        for t in TARGETS {
            let bin = fuzz_dir().join("fuzz_targets").join(format!("{t}.rs"));
            assert!(bin.is_file(), "missing {}", bin.display());
        }
    }

    /// Replays every committed corpus file: a non-empty corpus per target
    /// is required (no silent skip); regression inputs are optional per
    /// target but their directory must exist.
    #[test]
    fn corpus_and_regressions_replay() {
        let mut total = 0;
        for t in TARGETS {
            let corpus = files_in(&fuzz_dir().join("corpus").join(t));
            assert!(!corpus.is_empty(), "fuzz/corpus/{t} is empty");
            for f in &corpus {
                let data = std::fs::read(f).expect("read corpus file");
                assert!(run_target(t, &data));
                total += 1;
            }
        }
        let regressions = fuzz_dir().join("regressions");
        for entry in std::fs::read_dir(&regressions).expect("fuzz/regressions exists") {
            let dir = entry.expect("dir entry").path();
            let Some(t) = dir.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !dir.is_dir() {
                continue;
            }
            assert!(TARGETS.contains(&t), "regressions for unknown target {t}");
            for f in files_in(&dir) {
                let data = std::fs::read(&f).expect("read regression input");
                assert!(run_target(t, &data));
                total += 1;
            }
        }
        assert!(total > TARGETS.len());
    }

    /// The seeds are what their decoders accept: a replayed seed WAL
    /// delivers all its records, a seed table opens and iterates, etc.
    #[test]
    fn seeds_are_valid_inputs() {
        let seeds = seeds();
        for t in TARGETS {
            assert!(seeds.iter().any(|(s, _, _)| s == t), "no seed for {t}");
        }
        for (t, name, data) in &seeds {
            let what = format!("{t}/{name}");
            match *t {
                "wal_v1" | "wal_v2" => {
                    let fs = MemFs::default();
                    let path = fs.put("/x/000007.log", data[1..].to_vec());
                    let mut n = 0;
                    let o = wal::replay(&fs, &path, LOG_NUMBER, |p, _| {
                        WriteBatch::from_encoded(p).expect("seed batch decodes");
                        n += 1;
                        Ok(())
                    })
                    .expect(&what);
                    assert_eq!(o.tail, TailStatus::Clean, "{what}");
                    assert_eq!(o.records, n);
                    // The checksum fix-up leaves a valid file unchanged.
                    let mut fixed = data[1..].to_vec();
                    if *t == "wal_v1" {
                        fix_v1_checksums(&mut fixed);
                    } else {
                        fix_v2_checksums(&mut fixed);
                    }
                    assert!(fixed == data[1..], "fix-up changed {what}");
                }
                "write_batch" => {
                    WriteBatch::from_encoded(data).expect(&what);
                }
                "sst_table" => {
                    let mut fixed = data[1..].to_vec();
                    fix_sst_checksums(&mut fixed);
                    assert!(fixed == data[1..], "fix-up changed {what}");
                    let len = fixed.len() as u64;
                    let file = Arc::new(MemFile {
                        data: fixed,
                        path: "/x.sst".into(),
                    });
                    let t = Table::open(file, len, TableReadOptions::default()).expect(&what);
                    let mut it = t.iter();
                    it.seek_to_first();
                    let mut n = 0;
                    while it.valid() {
                        n += 1;
                        it.next();
                    }
                    it.status().expect(&what);
                    assert_eq!(n, sample_entries().len(), "{what}");
                }
                "sst_block" => {
                    Block::parse(data.clone(), "/x", 0).expect(&what);
                }
                "bloom_filter" => {
                    let n = usize::from(u16::from_le_bytes([data[1], data[2]]));
                    BloomFilter::decode(data[3..3 + n].to_vec()).expect(&what);
                }
                "manifest_edit" => {
                    let edit = VersionEdit::decode(data).expect(&what);
                    if name == "edit-4" || name == "edit-5" {
                        let mut b = crate::version::Builder::new(&base_version());
                        b.apply(&edit).expect(&what);
                    }
                }
                "manifest" => {
                    let fs = MemFs::default();
                    fs.put("/d/CURRENT", b"MANIFEST-000007\n".to_vec());
                    fs.put("/d/MANIFEST-000007", data[1..].to_vec());
                    let vs =
                        VersionSet::recover_read_only(Arc::new(fs), Path::new("/d")).expect(&what);
                    assert_eq!(vs.current().total_files(), 3, "{what}");
                }
                other => panic!("seed for unknown target {other}"),
            }
            assert!(run_target(t, data));
        }
    }

    #[test]
    fn junk_is_rejected_quietly() {
        let junk: Vec<Vec<u8>> = vec![
            Vec::new(),
            vec![0],
            vec![0xff; 100],
            (0..=255u8).collect(),
            vec![FLAG_FIX_CHECKSUMS; 200],
            vec![FLAG_RAW | FLAG_FIX_CHECKSUMS; 40],
        ];
        for t in TARGETS {
            for j in &junk {
                assert!(run_target(t, j));
            }
        }
        assert!(!run_target("nope", b""));
    }
}
