//! [`BlobReaders`]: the open blob files of a database, by number, and the
//! lookup of a value by its encoded pointer.
//!
//! Thread-safe: a mutex around the map, held only to find or insert a
//! reader (files are opened outside it). Invariants: a reader is for the
//! file its number names; a value is returned only after its CRC matched
//! the pointer's. Blob files are few (hundreds of MiB each), so every file
//! read stays open until [`BlobReaders::forget`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::batch_counters::BatchCounters;
use super::format::{BlobPointer, value_from_span};
use super::lane_set::BlobLaneSet;
use super::reader::BlobReader;
use super::shared_chunks::SharedChunks;
use crate::error::{Error, Result};
use crate::filenames::blob_file_path;
use crate::io::FileSystem;
use crate::sst::ReaderPool;

/// The blob files of one database directory, opened on first use.
#[derive(Debug)]
pub(crate) struct BlobReaders {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    direct: bool,
    open: Mutex<HashMap<u64, Arc<BlobReader>>>,
    /// Every keyspace's write lanes: a value still staged in one is read
    /// from its staging area.
    lanes: Arc<BlobLaneSet>,
    /// Chunks that long scans share (`Options::shared_scan_bytes`).
    shared: Option<Arc<SharedChunks>>,
    /// Where the shared chunks are read ahead.
    pool: Option<Arc<ReaderPool>>,
    /// What the batched value reads of short scans did
    /// (`value_batch.rs`).
    pub(crate) batches: BatchCounters,
}

impl BlobReaders {
    /// Readers of the blob files in `dir` (with O_DIRECT when `direct`),
    /// whose open files `lanes` write.
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        direct: bool,
        lanes: Arc<BlobLaneSet>,
    ) -> BlobReaders {
        BlobReaders {
            fs,
            dir: dir.to_path_buf(),
            direct,
            open: Mutex::new(HashMap::new()),
            lanes,
            shared: None,
            pool: None,
            batches: BatchCounters::default(),
        }
    }

    /// Long scans share a pool of at most `bytes` of resident chunks (0:
    /// none; each iterator reads ahead on its own), read ahead on `pool`
    /// when given.
    pub(crate) fn with_shared_chunks(
        mut self,
        bytes: usize,
        pool: Option<Arc<ReaderPool>>,
    ) -> BlobReaders {
        self.shared = (bytes > 0).then(|| Arc::new(SharedChunks::new(bytes)));
        self.pool = pool;
        self
    }

    /// The pool of shared scan chunks, if the database has one.
    pub(crate) fn shared(&self) -> Option<&SharedChunks> {
        self.shared.as_deref()
    }

    /// Reads chunk `index` of blob file `number` into the shared pool in
    /// the background ([`SharedChunks::prefetch`]), if there is a pool and
    /// a reader pool.
    /// False when the read ahead was turned away (no room in the pool, or
    /// enough reads in flight).
    pub(crate) fn prefetch_shared(&self, number: u64, index: u64, pace: bool) -> bool {
        match (&self.shared, &self.pool) {
            (Some(shared), Some(pool)) => match self.reader(number) {
                Ok(reader) => shared.prefetch(pool, number, index, pace, reader),
                // (The value's own read reports the error.)
                Err(_) => true,
            },
            _ => true,
        }
    }

    /// Reads the shared chunk of the value `p` points to ahead, unless it
    /// is one of `recent` (the chunks this caller asked for last, updated
    /// here) or its file is still being written. False when the read was
    /// turned away (see [`Self::prefetch_shared`]).
    pub(crate) fn read_ahead(
        &self,
        p: &super::format::BlobPointer,
        recent: &mut [(u64, u64)],
    ) -> bool {
        let chunk = (p.file_number, p.offset / super::shared_chunks::CHUNK as u64);
        if recent.contains(&chunk) || self.shared.is_none() || self.is_being_written(chunk.0) {
            return true;
        }
        if !self.prefetch_shared(chunk.0, chunk.1, false) {
            return false;
        }
        recent.rotate_right(1);
        recent[0] = chunk;
        true
    }

    /// The budget of the shared scan chunks (0: none).
    pub(crate) fn shared_budget(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.budget())
    }

    /// The reader of blob file `number`.
    pub(crate) fn reader(&self, number: u64) -> Result<Arc<BlobReader>> {
        if let Some(r) = self.open.lock().get(&number) {
            return Ok(Arc::clone(r));
        }
        let path = blob_file_path(&self.dir, number);
        let r = Arc::new(BlobReader::open(self.fs.as_ref(), &path, self.direct)?);
        Ok(Arc::clone(self.open.lock().entry(number).or_insert(r)))
    }

    /// The value `pointer` (an encoded [`BlobPointer`] read from `source`,
    /// a memtable or table) names.
    pub(crate) fn value(&self, pointer: &[u8], source: &Path) -> Result<Vec<u8>> {
        let p = BlobPointer::decode(pointer)
            .ok_or_else(|| Error::corruption(source, 0, "malformed blob pointer"))?;
        self.value_of(&p)
    }

    /// The value `p` names (one aligned read, checked), or its bytes from
    /// the staging area of the lane that still holds them.
    pub(crate) fn value_of(&self, p: &BlobPointer) -> Result<Vec<u8>> {
        if let Some(v) = self.lanes.staged_value(p) {
            // The same check as a read of the file (the bytes are the
            // value's own: the span starts at its offset).
            value_from_span(p, &v, p.offset, &self.path_of(p.file_number))?;
            return Ok(v);
        }
        self.reader(p.file_number)?.get(p)
    }

    /// True if a write lane still appends to blob file `number`, or gave it
    /// up after a failure (either way its bytes may not all be in the file:
    /// [`value_of`](Self::value_of) reads them from the staging area).
    pub(crate) fn is_being_written(&self, number: u64) -> bool {
        self.lanes.is_open(number)
    }

    /// The path of blob file `number`.
    pub(crate) fn path_of(&self, number: u64) -> PathBuf {
        blob_file_path(&self.dir, number)
    }

    /// The database directory (the source named when a pointer read from
    /// an unknown place is malformed).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Drops the reader of a deleted file (and its shared chunks).
    pub(crate) fn forget(&self, number: u64) {
        self.open.lock().remove(&number);
        if let Some(s) = &self.shared {
            s.forget(number);
        }
    }
}
