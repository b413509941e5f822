//! Decoding one WAL file record by record into write batches
//! ([`dump_wal`]). Read-only; thread-safe. A damaged tail is reported in
//! [`WalDump::tail`]; damage followed by good records is an error naming
//! the file and offset, exactly as recovery would see it.

use std::path::{Path, PathBuf};

use crate::batch::BatchOp;
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::wal::{self, TailStatus};

/// One operation of a write batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalOp {
    /// True for a put, false for a delete.
    pub put: bool,
    /// The key.
    pub key: Vec<u8>,
    /// The value (empty for a delete; the encoded pointer when
    /// `in_blob_file`).
    pub value: Vec<u8>,
    /// The value lives in a blob file and `value` points to it.
    pub in_blob_file: bool,
    /// For a range deletion (`put` false), the end of the range: every key
    /// in `[key, range_end)` is deleted.
    pub range_end: Option<Vec<u8>>,
    /// The keyspace id the operation writes (0: the default keyspace).
    pub keyspace: u32,
}

/// One WAL record: a write batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRecord {
    /// Offset of the record's first fragment in the file.
    pub offset: u64,
    /// Sequence number of the first operation.
    pub sequence: u64,
    /// The operations, in order (operation `i` has `sequence + i`).
    pub ops: Vec<WalOp>,
}

/// What [`dump_wal`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalDump {
    /// The file.
    pub file: PathBuf,
    /// Its log number (from the name, checked against every header).
    pub log_number: u64,
    /// Every good record, in order.
    pub records: Vec<WalRecord>,
    /// How the file ended.
    pub tail: TailStatus,
}

/// Decodes the WAL at `path` (named `nnnnnn.log`).
pub fn dump_wal(fs: &dyn FileSystem, path: &Path) -> Result<WalDump> {
    let log_number = super::file_number(path, super::wal, "nnnnnn.log")?;
    let mut records = Vec::new();
    let outcome = wal::replay(fs, path, log_number, |payload, offset| {
        let batch = WriteBatch::from_encoded(payload).map_err(|reason| {
            Error::corruption(path, offset, format!("bad write batch: {reason}"))
        })?;
        let ops = batch
            .iter_in()
            .map(|(keyspace, op)| match op {
                BatchOp::Put { key, value } => WalOp {
                    put: true,
                    key: key.to_vec(),
                    value: value.to_vec(),
                    in_blob_file: false,
                    range_end: None,
                    keyspace,
                },
                BatchOp::PutBlob { key, pointer } => WalOp {
                    put: true,
                    key: key.to_vec(),
                    value: pointer.to_vec(),
                    in_blob_file: true,
                    range_end: None,
                    keyspace,
                },
                BatchOp::Delete { key } => WalOp {
                    put: false,
                    key: key.to_vec(),
                    value: Vec::new(),
                    in_blob_file: false,
                    range_end: None,
                    keyspace,
                },
                BatchOp::DeleteRange { start, end } => WalOp {
                    put: false,
                    key: start.to_vec(),
                    value: Vec::new(),
                    in_blob_file: false,
                    range_end: Some(end.to_vec()),
                    keyspace,
                },
            })
            .collect();
        records.push(WalRecord {
            offset,
            sequence: batch.sequence(),
            ops,
        });
        Ok(())
    })?;
    Ok(WalDump {
        file: path.to_path_buf(),
        log_number,
        records,
        tail: outcome.tail,
    })
}
