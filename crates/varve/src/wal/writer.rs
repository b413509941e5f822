//! [`LogWriter`]: frames payloads into 32 KiB blocks and appends them to one
//! WAL file (format in `docs/wal-format.md`).
//!
//! Not thread-safe by itself (`&mut self`); the DB's write path serialises
//! callers. Invariants: the file starts with one FILE_HEADER record, written
//! by [`LogWriter::new`]; each [`LogWriter::add_record`] hands the whole framed
//! record (all fragments plus any block-trailer padding before them) to the OS
//! in ONE `append`, so on return it survives `kill -9`; `block_offset` is the
//! position inside the current block. After any failed append or sync the
//! file position and durability are unknown, so every later call fails with
//! [`Error::Poisoned`].

use super::format::{
    self, FORMAT_VERSION, HEADER_SIZE, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, RecordType,
};
use crate::error::{Error, Result};
use crate::io::WritableFile;

/// Scratch buffers larger than this are released after use.
const KEEP_BUF_CAPACITY: usize = 1 << 20;

/// Appends records to one WAL file.
pub(crate) struct LogWriter {
    file: Box<dyn WritableFile>,
    log_number: u64,
    block_size: usize,
    /// Bytes already used in the current block.
    block_offset: usize,
    /// Set after a failed append/sync: why the writer refuses further work.
    failed: Option<String>,
    /// Scratch buffer for framing one record.
    buf: Vec<u8>,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("path", &self.file.path())
            .field("log_number", &self.log_number)
            .field("file_size", &self.file.len())
            .field("block_offset", &self.block_offset)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl LogWriter {
    /// Starts a new log on an empty file: writes the FILE_HEADER record.
    /// Fails with `InvalidArgument` if the file is not empty.
    pub(crate) fn new(file: Box<dyn WritableFile>, log_number: u64) -> Result<Self> {
        Self::with_block_size(file, log_number, format::BLOCK_SIZE)
    }

    /// As [`LogWriter::new`] with a non-standard block size (tests only: the
    /// format fixes [`format::BLOCK_SIZE`]).
    pub(crate) fn with_block_size(
        file: Box<dyn WritableFile>,
        log_number: u64,
        block_size: usize,
    ) -> Result<Self> {
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&block_size) {
            return Err(Error::InvalidArgument(format!(
                "WAL block size {block_size} outside {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}"
            )));
        }
        if !file.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "WAL {} is not empty ({} bytes); a new log needs an empty file",
                file.path().display(),
                file.len()
            )));
        }
        let mut w = LogWriter {
            file,
            log_number,
            block_size,
            block_offset: 0,
            failed: None,
            buf: Vec::new(),
        };
        let payload = format::file_header_payload(FORMAT_VERSION, log_number);
        w.buf.clear();
        w.emit(RecordType::FileHeader, &payload)?;
        w.flush_buf()?;
        Ok(w)
    }

    /// Appends one record (any length, empty included); on return the OS has it.
    pub(crate) fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        self.check_ok()?;
        let saved_offset = self.block_offset;
        self.buf.clear();
        let mut left = payload;
        let mut begin = true;
        loop {
            let leftover = self.block_size - self.block_offset;
            if leftover < HEADER_SIZE {
                // Too small for a header: zero-fill the block trailer.
                self.buf.resize(self.buf.len() + leftover, 0);
                self.block_offset = 0;
            }
            let avail = self.block_size - self.block_offset - HEADER_SIZE;
            let n = left.len().min(avail);
            let end = n == left.len();
            let kind = match (begin, end) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, true) => RecordType::Last,
                (false, false) => RecordType::Middle,
            };
            if let Err(e) = self.emit(kind, &left[..n]) {
                self.block_offset = saved_offset;
                return Err(e);
            }
            left = &left[n..];
            begin = false;
            if end {
                break;
            }
        }
        if let Err(e) = self.flush_buf() {
            self.block_offset = saved_offset;
            return Err(e);
        }
        Ok(())
    }

    /// Makes every appended record durable (fdatasync).
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.check_ok()?;
        let r = self.file.sync_data();
        if let Err(e) = &r {
            // After a failed fdatasync the kernel may have dropped the dirty
            // pages; a retry could falsely report success.
            self.failed = Some(format!("sync failed: {e}"));
        }
        r
    }

    /// Bytes written to the file so far.
    pub(crate) fn file_size(&self) -> u64 {
        self.file.len()
    }

    /// This log's number.
    #[cfg(test)]
    pub(crate) fn log_number(&self) -> u64 {
        self.log_number
    }

    fn check_ok(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(why) => Err(Error::Poisoned(format!(
                "WAL {} refuses writes after an earlier failure: {why}",
                self.file.path().display()
            ))),
        }
    }

    /// Frames one physical record into `buf` and advances `block_offset`.
    fn emit(&mut self, kind: RecordType, data: &[u8]) -> Result<()> {
        let len = u16::try_from(data.len())
            .map_err(|_| Error::InvalidArgument(format!("WAL fragment of {} bytes", data.len())))?;
        format::put_header(
            &mut self.buf,
            kind,
            format::log_low(self.log_number),
            data,
            len,
        );
        self.buf.extend_from_slice(data);
        self.block_offset += HEADER_SIZE + data.len();
        Ok(())
    }

    /// Hands `buf` to the OS in one append; poisons the writer on failure.
    fn flush_buf(&mut self) -> Result<()> {
        let r = self.file.append(&self.buf);
        if let Err(e) = &r {
            self.failed = Some(format!("append failed: {e}"));
        }
        if self.buf.capacity() > KEEP_BUF_CAPACITY {
            self.buf = Vec::new();
        }
        r
    }
}
