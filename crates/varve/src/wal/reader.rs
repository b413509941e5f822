//! Recovery: `replay` streams one WAL file block by block, reassembles
//! fragmented records, verifies every checksum, and decides whether a bad
//! record is a torn tail (truncate) or mid-log corruption (error).
//!
//! Thread-safety: a replay owns its file handle and one block-sized buffer;
//! nothing is shared. Invariants: a record is delivered only when all of its
//! fragments are present, checksum-valid, carry this log's number and form a
//! well-ordered FIRST/MIDDLE*/LAST group (or one FULL); `valid_len` is the end
//! of the last delivered record (or of the file header), never including
//! block-trailer padding. Never panics on any file content.

use std::path::Path;

use super::format::{
    self, FileHeaderError, HEADER_SIZE, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, RecordType,
};
use crate::error::{Error, Result};
use crate::io::{FileSystem, SequentialFile};
use crate::util::checksum::unmask;

/// How a replayed log ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailStatus {
    /// Every byte belonged to a good record (`valid_len` == file length).
    Clean,
    /// From `offset` on the file holds a torn or zero-filled tail (no valid
    /// record follows it); the caller truncates the file to `offset`.
    Truncated {
        /// Where the good data ends (== `valid_len`).
        offset: u64,
        /// Why the tail was rejected.
        reason: String,
    },
}

/// What `replay` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReplayOutcome {
    /// Good records delivered.
    pub records: u64,
    /// End offset of the last good record (or of the file header; 0 if even
    /// that is missing). Block-trailer padding after it is not included.
    pub valid_len: u64,
    /// How the file ended.
    pub tail: TailStatus,
}

/// Replays a version-1 (block-framed) log; [`super::replay`] dispatches here
/// by the file header (tests also pass non-standard block sizes).
pub(crate) fn replay_with_block_size(
    fs: &dyn FileSystem,
    path: &Path,
    log_number: u64,
    block_size: usize,
    f: impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<ReplayOutcome> {
    if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&block_size) {
        return Err(Error::InvalidArgument(format!(
            "WAL block size {block_size} outside {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}"
        )));
    }
    let file = fs.open_sequential(path)?;
    let mut r = Reader {
        file,
        path,
        block_size,
        log_number,
        log_low: format::log_low(log_number),
        buf: Vec::with_capacity(block_size),
        block_start: 0,
        eof: false,
    };
    r.run(f)
}

/// Why reading stopped before the end of the file.
struct Bad {
    /// Absolute offset of the bad physical record (or of the end of file).
    offset: u64,
    reason: String,
}

struct Reader<'a> {
    file: Box<dyn SequentialFile>,
    path: &'a Path,
    block_size: usize,
    log_number: u64,
    log_low: u32,
    /// The current block (shorter than `block_size` only at end of file).
    buf: Vec<u8>,
    /// Absolute offset of `buf[0]`.
    block_start: u64,
    /// The file has no bytes after `buf`.
    eof: bool,
}

impl Reader<'_> {
    /// Replaces `buf` with the next block.
    fn next_block(&mut self) -> Result<()> {
        self.block_start += self.buf.len() as u64;
        self.buf.resize(self.block_size, 0);
        let mut n = 0;
        while n < self.block_size {
            let got = self.file.read(&mut self.buf[n..])?;
            if got == 0 {
                self.eof = true;
                break;
            }
            n += got;
        }
        self.buf.truncate(n);
        Ok(())
    }

    fn run(&mut self, mut f: impl FnMut(&[u8], u64) -> Result<()>) -> Result<ReplayOutcome> {
        let mut records = 0u64;
        let mut valid_len = 0u64;
        // Start offset and bytes of an unfinished FIRST..LAST group.
        let mut pending: Option<u64> = None;
        let mut scratch: Vec<u8> = Vec::new();
        let mut i = 0usize; // position in `buf`
        self.next_block()?;
        let bad = loop {
            if i == self.buf.len() {
                if self.eof {
                    match pending {
                        Some(start) => {
                            break Bad {
                                offset: self.block_start + i as u64,
                                reason: format!(
                                    "file ends inside the fragmented record starting at {start}"
                                ),
                            };
                        }
                        None => {
                            let file_len = self.block_start + i as u64;
                            let tail = if file_len == valid_len {
                                TailStatus::Clean
                            } else {
                                TailStatus::Truncated {
                                    offset: valid_len,
                                    reason: "block-trailer padding after the last record".into(),
                                }
                            };
                            return Ok(ReplayOutcome {
                                records,
                                valid_len,
                                tail,
                            });
                        }
                    }
                }
                self.next_block()?;
                i = 0;
                continue;
            }
            let pos = self.block_start + i as u64;
            let rest = &self.buf[i..];
            if self.block_size - i < HEADER_SIZE {
                // Block trailer: the writer zero-fills it.
                if rest.iter().any(|&b| b != 0) {
                    break Bad {
                        offset: pos,
                        reason: "non-zero bytes in block trailer".into(),
                    };
                }
                i = self.buf.len();
                continue;
            }
            let Some(h) = format::decode_header(rest) else {
                break Bad {
                    offset: pos,
                    reason: "file ends inside a record header".into(),
                };
            };
            let end = i + HEADER_SIZE + usize::from(h.len);
            let kind = match RecordType::from_u8(h.kind) {
                None => {
                    break Bad {
                        offset: pos,
                        reason: format!("unknown record type {}", h.kind),
                    };
                }
                Some(RecordType::Zero) => {
                    break Bad {
                        offset: pos,
                        reason: "zero-type header (unused or preallocated space)".into(),
                    };
                }
                Some(k) => k,
            };
            if end > self.block_size {
                break Bad {
                    offset: pos,
                    reason: format!("record length {} extends beyond its block", h.len),
                };
            }
            if end > self.buf.len() {
                break Bad {
                    offset: pos,
                    reason: format!("file ends inside a record of length {}", h.len),
                };
            }
            let payload = &self.buf[i + HEADER_SIZE..end];
            if unmask(h.masked_crc) != format::record_crc(h.kind, h.log_low, payload) {
                break Bad {
                    offset: pos,
                    reason: "record checksum mismatch".into(),
                };
            }
            let end_pos = self.block_start + end as u64;
            if pos == 0 {
                if kind != RecordType::FileHeader {
                    break Bad {
                        offset: 0,
                        reason: "missing file header".into(),
                    };
                }
                self.check_file_header(payload, h.log_low)?;
                valid_len = end_pos;
                i = end;
                continue;
            }
            if h.log_low != self.log_low {
                break Bad {
                    offset: pos,
                    reason: format!(
                        "record carries log number low bits {:#x}, expected {:#x} (stale data from a reused file?)",
                        h.log_low, self.log_low
                    ),
                };
            }
            let broken = |what: &str| Bad {
                offset: pos,
                reason: what.to_string(),
            };
            match (kind, pending) {
                (RecordType::FileHeader, _) => break broken("file header record after offset 0"),
                (RecordType::Full | RecordType::First, Some(start)) => {
                    break broken(&format!(
                        "{kind:?} record while the fragmented record starting at {start} is unfinished"
                    ));
                }
                (RecordType::Middle | RecordType::Last, None) => {
                    break broken(&format!("{kind:?} fragment without a FIRST"));
                }
                (RecordType::Full, None) => {
                    f(payload, pos)?;
                    records += 1;
                    valid_len = end_pos;
                }
                (RecordType::First, None) => {
                    scratch.clear();
                    scratch.extend_from_slice(payload);
                    pending = Some(pos);
                }
                (RecordType::Middle, Some(_)) => scratch.extend_from_slice(payload),
                (RecordType::Last, Some(start)) => {
                    scratch.extend_from_slice(payload);
                    f(&scratch, start)?;
                    records += 1;
                    valid_len = end_pos;
                    pending = None;
                }
                (RecordType::Zero, _) => break broken("zero-type header"),
            }
            i = end;
        };
        let in_block =
            usize::try_from(bad.offset.saturating_sub(self.block_start)).unwrap_or(usize::MAX);
        if self.valid_record_follows(in_block)? {
            return Err(Error::corruption(
                self.path,
                bad.offset,
                format!(
                    "{}; a valid record follows, so this is not a torn tail",
                    bad.reason
                ),
            ));
        }
        Ok(ReplayOutcome {
            records,
            valid_len,
            tail: TailStatus::Truncated {
                offset: valid_len,
                reason: format!("at offset {}: {}", bad.offset, bad.reason),
            },
        })
    }

    /// Checks the checksum-valid FILE_HEADER payload at offset 0.
    fn check_file_header(&self, payload: &[u8], header_low: u32) -> Result<()> {
        match format::parse_file_header(payload) {
            Ok(n) if n == self.log_number && header_low == self.log_low => Ok(()),
            Ok(n) => Err(Error::corruption(
                self.path,
                0,
                format!("file header names log {n}, expected {}", self.log_number),
            )),
            Err(FileHeaderError::Version(found)) => Err(Error::UnsupportedVersion {
                file: self.path.to_path_buf(),
                found,
                supported: super::record::WAL_FORMAT_V2,
            }),
            Err(FileHeaderError::BadMagic) => Err(Error::corruption(
                self.path,
                0,
                "file header has a wrong magic (not a varve WAL)",
            )),
            Err(FileHeaderError::BadLength(n)) => Err(Error::corruption(
                self.path,
                0,
                format!(
                    "file header payload of {n} bytes, expected {}",
                    format::FILE_HEADER_PAYLOAD_LEN
                ),
            )),
        }
    }

    /// Scans from `buf[from..]` to the end of the file, byte by byte, for a
    /// valid data record of this log: type 1-4, length within its block (and
    /// the file), matching log number, matching checksum.
    fn valid_record_follows(&mut self, mut from: usize) -> Result<bool> {
        loop {
            if self.block_has_record(from) {
                return Ok(true);
            }
            if self.eof {
                return Ok(false);
            }
            self.next_block()?;
            from = 0;
        }
    }

    fn block_has_record(&self, from: usize) -> bool {
        let buf = &self.buf[..];
        let Some(last) = buf.len().checked_sub(HEADER_SIZE) else {
            return false;
        };
        let want = self.log_low.to_le_bytes();
        let mut q = from;
        while q <= last {
            // Cheap filters first: type byte, then the log number bytes.
            let t = buf[q + 6];
            if (1..=4).contains(&t)
                && buf[q + 7..q + 11] == want
                && let Some(h) = format::decode_header(&buf[q..])
                && let Some(payload) =
                    buf.get(q + HEADER_SIZE..q + HEADER_SIZE + usize::from(h.len))
                && unmask(h.masked_crc) == format::record_crc(t, h.log_low, payload)
            {
                return true;
            }
            q += 1;
        }
        false
    }
}
