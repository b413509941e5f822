//! Fuzz targets for the WAL readers (v1 blocks, v2 records) and the write-batch decoder.

#[allow(clippy::wildcard_imports)]
use super::*;

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
pub(super) fn with_header(flags: u8, body: &[u8], version: u32) -> Vec<u8> {
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
pub(super) fn replay_checked(file: Vec<u8>) {
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
pub(super) fn fix_v1_checksums(buf: &mut [u8]) {
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
pub(super) fn fix_v2_checksums(buf: &mut [u8]) {
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
            crate::batch::BatchOp::PutBlob { key, pointer } => {
                MemTable::entry_charge(key.len(), pointer.len())
            }
            crate::batch::BatchOp::DeleteRange { .. } => 0,
        })
        .sum();
    let mem = MemTable::new(charge);
    for (seq, op) in (batch.sequence()..).zip(&ops) {
        let added = match *op {
            crate::batch::BatchOp::Put { key, value } => mem.add(seq, ValueKind::Value, key, value),
            crate::batch::BatchOp::Delete { key } => mem.add(seq, ValueKind::Deletion, key, &[]),
            crate::batch::BatchOp::PutBlob { key, pointer } => {
                mem.add(seq, ValueKind::BlobIndex, key, pointer)
            }
            crate::batch::BatchOp::DeleteRange { start, end } => {
                mem.add_range_deletion(seq, start, end);
                Ok(())
            }
        };
        assert!(
            added.is_ok(),
            "a memtable sized by the batch charge holds it"
        );
    }
    for op in ops
        .iter()
        .filter(|op| !matches!(op, crate::batch::BatchOp::DeleteRange { .. }))
    {
        assert!(
            mem.get(op.key(), MAX_SEQUENCE).is_some(),
            "every inserted key is found"
        );
    }
}
