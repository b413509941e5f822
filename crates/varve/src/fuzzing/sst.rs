//! Fuzz targets for tables: the footer, index and data blocks, read through `Table` and its iterators, and the bloom filter.

#[allow(clippy::wildcard_imports)]
use super::*;

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
        pin: (flags & FLAG_PIN != 0).then(|| PinBudget::new(1 << 20)),
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
    let _ = table.pinned_data_memory();
}

/// Rewrites the footer checksum and the trailers of the meta blocks the
/// footer's handles name (data blocks are left alone: `FLAG_NO_VERIFY`
/// reaches their decoding).
pub(super) fn fix_sst_checksums(buf: &mut [u8]) {
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
pub(super) fn walk(it: &mut dyn InternalIterator) -> Vec<Vec<u8>> {
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
pub(super) fn probes(keys: &[Vec<u8>]) -> Vec<Vec<u8>> {
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
pub(super) fn seek_around(it: &mut dyn InternalIterator, target: &[u8]) {
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
