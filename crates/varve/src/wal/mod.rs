//! The write-ahead log. PLACEHOLDER: the real framing/reader replaces this.

use std::path::Path;

use crate::Result;
use crate::io::{FileSystem, WritableFile};

/// Appends records to one WAL file.
#[derive(Debug)]
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    log_number: u64,
}

impl LogWriter {
    /// Starts a new log on an empty file.
    pub fn new(file: Box<dyn WritableFile>, log_number: u64) -> Result<Self> {
        Ok(LogWriter { file, log_number })
    }
    /// Appends one record; on return the OS has it.
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        let mut v = (payload.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(payload);
        self.file.append(&v)
    }
    /// fdatasync.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync_data()
    }
    /// Bytes written.
    pub fn file_size(&self) -> u64 {
        self.file.len()
    }
    /// This log's number.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }
}

/// How a replayed log ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailStatus {
    /// Every byte belonged to a good record.
    Clean,
    /// From `offset` on the file holds a torn or zero-filled tail.
    Truncated {
        /// Where the good data ends.
        offset: u64,
        /// Why the tail was rejected.
        reason: String,
    },
}

/// What [`replay`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOutcome {
    /// Good records delivered.
    pub records: u64,
    /// End offset of the last good record.
    pub valid_len: u64,
    /// How the file ended.
    pub tail: TailStatus,
}

/// Reads every record of a log in order.
pub fn replay(
    fs: &dyn FileSystem,
    path: &Path,
    _log_number: u64,
    mut f: impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<ReplayOutcome> {
    let mut file = fs.open_sequential(path)?;
    let mut data = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buf[..n]);
    }
    let mut off = 0usize;
    let mut records = 0;
    while off + 4 <= data.len() {
        let len =
            u32::from_le_bytes([data[off], data[off + 1], data[off + 2], data[off + 3]]) as usize;
        if off + 4 + len > data.len() {
            break;
        }
        f(&data[off + 4..off + 4 + len], off as u64)?;
        records += 1;
        off += 4 + len;
    }
    let tail = if off == data.len() {
        TailStatus::Clean
    } else {
        TailStatus::Truncated {
            offset: off as u64,
            reason: "short record".into(),
        }
    };
    Ok(ReplayOutcome {
        records,
        valid_len: off as u64,
        tail,
    })
}
