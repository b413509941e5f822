//! Recovery of a version-2 WAL (position-independent records, see
//! `record.rs`) and the dispatch by file-header version that [`replay`]
//! does before it: version 1 files go to the block reader (`reader.rs`).
//!
//! Thread-safety: a replay owns its buffer; nothing is shared. Invariants:
//! records are delivered in file order, each checksum-valid and carrying this
//! log's number; at the first bad point the rest of the file is scanned for
//! any valid record of this log — none means a torn or zero-filled tail
//! (`Truncated` at the end of the last good record), one means mid-log
//! corruption (`Error::Corruption` naming file and offset). Never panics on
//! any file content. The whole file is read into memory (a WAL is about one
//! memtable's worth of bytes).

use std::path::Path;

use super::format::{self, FILE_HEADER_RECORD_LEN, HEADER_SIZE, RecordType};
use super::reader::{ReplayOutcome, TailStatus, replay_with_block_size};
use super::record::{self, WAL_FORMAT_V2};
use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::util::checksum::unmask;

/// Reads every record of log `log_number` at `path` in order, calling
/// `f(payload, offset)`; version 1 and version 2 files are both read.
///
/// The FILE_HEADER is checked (magic, version, log number) but not delivered.
/// At the first bad record the rest of the file is scanned: if a valid record
/// of this log follows, the result is `Error::Corruption` naming the bad
/// record's offset; otherwise `Ok` with [`TailStatus::Truncated`]. Records
/// before the bad point have already been delivered to `f` when Corruption is
/// returned, so a caller that must not apply a partial log buffers them.
/// An error from `f` aborts the replay and is returned unchanged.
pub(crate) fn replay(
    fs: &dyn FileSystem,
    path: &Path,
    log_number: u64,
    f: impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<ReplayOutcome> {
    replay_with(fs, path, log_number, Holes::Refuse, f)
}

/// What a damaged record followed by valid ones means to [`replay_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holes {
    /// Damage: `Error::Corruption`.
    Refuse,
    /// The end of the log: a hole a power cut left in pages no fdatasync
    /// covered (the newest log, after the machine restarted). The records
    /// after it are not delivered, and the tail is reported as truncated.
    EndLog,
}

/// [`replay`], with `holes` deciding what a damaged version-2 record that
/// valid records follow means (a damaged file header is always damage: the
/// header is synced when the log is made).
pub(crate) fn replay_with(
    fs: &dyn FileSystem,
    path: &Path,
    log_number: u64,
    holes: Holes,
    mut f: impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<ReplayOutcome> {
    let data = crate::io::read_file(fs, path)?;
    let low = format::log_low(log_number);
    match v2_header(&data) {
        Some((version, n, header_low)) if version == WAL_FORMAT_V2 => {
            if n != log_number || header_low != low {
                return Err(Error::corruption(
                    path,
                    0,
                    format!("file header names log {n}, expected {log_number}"),
                ));
            }
            replay_v2(&data, path, low, holes, &mut f)
        }
        Some(_) => replay_with_block_size(fs, path, log_number, format::BLOCK_SIZE, f),
        None => {
            // No valid header. A damaged header in front of version-2
            // records is corruption; everything else (a torn header, a
            // version-1 file) the block reader classifies.
            if record::valid_record_follows(&data, 0, low) {
                return Err(Error::corruption(
                    path,
                    0,
                    "damaged file header; a valid record follows, so this is not a torn tail",
                ));
            }
            replay_with_block_size(fs, path, log_number, format::BLOCK_SIZE, f)
        }
    }
}

/// The checksum-valid FILE_HEADER at offset 0 with a version this build
/// reads: `(version, log number, header log-number low bits)`.
fn v2_header(data: &[u8]) -> Option<(u32, u64, u32)> {
    let h = format::decode_header(data)?;
    let payload = data.get(HEADER_SIZE..FILE_HEADER_RECORD_LEN)?;
    let valid = h.kind == RecordType::FileHeader as u8
        && usize::from(h.len) == payload.len()
        && unmask(h.masked_crc) == format::record_crc(h.kind, h.log_low, payload);
    if !valid {
        return None;
    }
    let (version, n) = format::parse_file_header_any(payload).ok()?;
    Some((version, n, h.log_low))
}

fn replay_v2(
    data: &[u8],
    path: &Path,
    low: u32,
    holes: Holes,
    f: &mut impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<ReplayOutcome> {
    let mut pos = FILE_HEADER_RECORD_LEN;
    let mut records = 0u64;
    loop {
        if pos == data.len() {
            return Ok(ReplayOutcome {
                records,
                valid_len: pos as u64,
                tail: TailStatus::Clean,
            });
        }
        match record::decode(&data[pos..], low) {
            Ok((payload, len)) => {
                f(payload, pos as u64)?;
                records += 1;
                pos += len;
            }
            Err(why) => {
                let follows = record::valid_record_follows(data, pos, low);
                if follows && holes == Holes::Refuse {
                    return Err(Error::corruption(
                        path,
                        pos as u64,
                        format!("{why}; a valid record follows, so this is not a torn tail"),
                    ));
                }
                let reason = if follows {
                    format!(
                        "at offset {pos}: {why}; valid records follow, but the machine \
                         restarted since this log was written, so this is a hole a power \
                         cut left in pages no fdatasync covered: the log ends here"
                    )
                } else {
                    format!("at offset {pos}: {why}")
                };
                return Ok(ReplayOutcome {
                    records,
                    valid_len: pos as u64,
                    tail: TailStatus::Truncated {
                        offset: pos as u64,
                        reason,
                    },
                });
            }
        }
    }
}

/// Writes a complete version-2 log holding `records` to `file` (the file
/// header, then every record) in one append. Used by repair and tests; the
/// engine's write path writes through the log slots instead.
pub(crate) fn write_log(
    file: &mut dyn crate::io::WritableFile,
    log_number: u64,
    records: &[&[u8]],
) -> Result<()> {
    let mut buf = format::file_header_record(WAL_FORMAT_V2, log_number);
    for r in records {
        record::encode(&mut buf, format::log_low(log_number), r);
    }
    file.append(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PosixFs;

    fn build(dir: &Path, n: u64, recs: &[&[u8]]) -> std::path::PathBuf {
        let path = dir.join(format!("{n:06}.log"));
        let mut f = PosixFs.create_writable(&path).expect("create");
        write_log(f.as_mut(), n, recs).expect("write");
        path
    }

    fn collect(path: &Path, n: u64) -> Result<(Vec<Vec<u8>>, ReplayOutcome)> {
        let mut out = Vec::new();
        let o = replay(&PosixFs, path, n, |p, _| {
            out.push(p.to_vec());
            Ok(())
        })?;
        Ok((out, o))
    }

    /// A page of the log lost to a power cut (zeros) before valid
    /// records: damage under `Holes::Refuse`, the end of the log under
    /// `Holes::EndLog`, with every record before it delivered.
    #[test]
    fn a_hole_before_valid_records_is_damage_or_the_end_as_asked() {
        let dir = tempfile::tempdir().expect("dir");
        let big = vec![5u8; 3000];
        let recs: Vec<&[u8]> = (0..12).map(|_| big.as_slice()).collect();
        let path = build(dir.path(), 4, &recs);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[8192..12288].fill(0);
        std::fs::write(&path, &bytes).expect("write");
        let e = collect(&path, 4).expect_err("refused");
        assert!(e.to_string().contains("a valid record follows"), "{e}");
        let mut got = 0;
        let o = replay_with(&PosixFs, &path, 4, Holes::EndLog, |_, _| {
            got += 1;
            Ok(())
        })
        .expect("ends the log");
        assert_eq!(o.records, got);
        assert!((2..12).contains(&got), "{got} records before the hole");
        match o.tail {
            TailStatus::Truncated { offset, reason } => {
                assert!(offset <= 8192, "{offset}");
                assert!(reason.contains("power cut"), "{reason}");
            }
            TailStatus::Clean => panic!("the hole is a cut tail"),
        }
    }

    #[test]
    fn v2_roundtrip_tail_and_corruption() {
        let dir = tempfile::tempdir().expect("dir");
        let recs: Vec<&[u8]> = vec![b"one", b"", b"three", &[7u8; 5000]];
        let path = build(dir.path(), 9, &recs);
        let (got, o) = collect(&path, 9).expect("replay");
        assert_eq!(got, recs.iter().map(|r| r.to_vec()).collect::<Vec<_>>());
        assert_eq!(o.tail, TailStatus::Clean);
        let full = std::fs::read(&path).expect("read");
        // Every truncation is a torn tail with a prefix of the records.
        for cut in 0..full.len() {
            std::fs::write(&path, &full[..cut]).expect("write");
            let (got, o) = collect(&path, 9).expect("torn tail opens");
            assert!(got.len() <= recs.len());
            assert!(o.valid_len <= cut as u64);
        }
        // Zero-filled tail.
        let mut z = full.clone();
        z.extend(std::iter::repeat_n(0u8, 4096));
        std::fs::write(&path, &z).expect("write");
        let (got, o) = collect(&path, 9).expect("zero tail");
        assert_eq!(got.len(), recs.len());
        assert_eq!(o.valid_len, full.len() as u64);
        // Damage in the first record with good records after: corruption.
        let mut c = full.clone();
        c[FILE_HEADER_RECORD_LEN + 14] ^= 1;
        std::fs::write(&path, &c).expect("write");
        assert!(
            matches!(collect(&path, 9), Err(Error::Corruption { offset, .. }) if offset == FILE_HEADER_RECORD_LEN as u64)
        );
        // A damaged header in front of good records: corruption at 0.
        let mut c = full.clone();
        c[3] ^= 1;
        std::fs::write(&path, &c).expect("write");
        assert!(matches!(
            collect(&path, 9),
            Err(Error::Corruption { offset: 0, .. })
        ));
        // Wrong log number in the header.
        std::fs::write(&path, &full).expect("write");
        assert!(matches!(
            collect(&path, 8),
            Err(Error::Corruption { offset: 0, .. })
        ));
    }

    #[test]
    fn stale_records_of_another_log_are_a_tail() {
        let dir = tempfile::tempdir().expect("dir");
        let old = build(dir.path(), 4, &[b"old-a", b"old-b", b"old-c"]);
        let old_bytes = std::fs::read(&old).expect("read");
        let path = build(dir.path(), 5, &[b"new-a"]);
        let mut bytes = std::fs::read(&path).expect("read");
        let good = bytes.len();
        bytes.extend_from_slice(&old_bytes[good..]);
        std::fs::write(&path, &bytes).expect("write");
        let (got, o) = collect(&path, 5).expect("recycled file");
        assert_eq!(got, vec![b"new-a".to_vec()]);
        assert_eq!(o.valid_len, good as u64);
    }
}
