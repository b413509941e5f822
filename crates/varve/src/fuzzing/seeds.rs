//! Seed inputs for every target, made with the real encoders.

#[allow(clippy::wildcard_imports)]
use super::*;

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
                keyspace: 0,
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
                keyspace: 5,
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
    let mut w = crate::version::manifest::ManifestWriter::create(
        &fs,
        dir,
        LOG_NUMBER,
        std::slice::from_ref(&edits[0]),
    )
    .expect("manifest");
    for e in &edits[1..4] {
        w.append(e).expect("append");
    }
    // A group record: a keyspace created by its first part and filled by
    // its second (manifest format 5).
    w.append_group(&edits[6..8]).expect("append group");
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

pub(super) fn flagged(flags: u8, bytes: &[u8]) -> Vec<u8> {
    let mut v = vec![flags];
    v.extend_from_slice(bytes);
    v
}

pub(super) fn sample_batches() -> Vec<WriteBatch> {
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
    let mut e = WriteBatch::new();
    e.put(b"k1", b"v");
    e.delete_range(b"k0".as_slice()..b"k5".as_slice());
    e.delete_range(b"".as_slice()..b"".as_slice()); // empty: deletes nothing
    e.set_sequence(9);
    // Records of several keyspaces (batch format 3: keyspace markers).
    let mut f = WriteBatch::new();
    f.put(b"k", b"default");
    f.put_to(3, b"k", b"keyspace 3");
    f.delete_range_to(3, b"a", b"c");
    f.delete_to(1, b"x");
    f.put(b"z", b"default again");
    f.set_sequence(20);
    vec![a, b, c, d, e, f]
}

/// Sorted internal keys: 60 user keys, some with two versions, some
/// tombstones; values of varied length.
pub(super) fn sample_entries() -> Vec<(Vec<u8>, Vec<u8>)> {
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

pub(super) fn sample_edits() -> Vec<VersionEdit> {
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
    // A flushed range tombstone and a time sample (manifest format 4).
    flush
        .range_tombstones
        .push(crate::range_del::RangeTombstone {
            start: b"e".to_vec(),
            end: b"g".to_vec(),
            seq: 115,
        });
    flush.time_samples.push((120, 1_800_000_000));
    let mut compaction = VersionEdit::default();
    compaction.delete_file(0, 10);
    compaction.delete_file(0, 12);
    compaction.add_file(1, file_meta(13, "a", "h", 120));
    let mut cleared = file_meta(14, "i", "q", 120);
    cleared.range_cleared_seq = 120; // written with the tombstones applied
    compaction.add_file(1, cleared);
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
    // Keyspaces (manifest format 5): one created, a part of its own.
    let created = VersionEdit {
        created_keyspaces: vec![(1, "users".to_string())],
        next_keyspace_id: Some(2),
        ..VersionEdit::default()
    };
    let mut keyspace_part = VersionEdit {
        keyspace: 1,
        ..VersionEdit::default()
    };
    keyspace_part.add_file(0, file_meta(18, "a", "z", 130));
    let dropped = VersionEdit {
        dropped_keyspaces: vec![1],
        ..VersionEdit::default()
    };
    vec![
        snapshot,
        flush,
        compaction,
        moved,
        base_compaction,
        base_move,
        created,
        keyspace_part,
        dropped,
    ]
}
