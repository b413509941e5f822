//! [`TableOutputs`]: writes a sorted stream of internal entries into new
//! tables of about a target size, for compaction and repair.
//!
//! Tables are cut only between user keys, so a level the outputs go to
//! stays non-overlapping by user key. Each finished table is synced by its
//! builder; the caller syncs the directory before an edit names them.
//! Cleanup is by ownership: outputs that were not handed out by
//! [`TableOutputs::finish`] (an error, an early return, a panic) are removed
//! when the writer is dropped, including the table being written, so a
//! failed job leaves no partial file behind. Single-threaded (one writer
//! per sub-compaction).

use std::path::Path;

use crate::blob::format::BlobPointer;
use crate::error::Result;
use crate::filenames::table_path;
use crate::io::FileSystem;
use crate::keys::{self, ValueKind};
use crate::sst::{TableBuilder, TableBuilderOptions, TableProperties};
use crate::version::FileMetaData;

/// Where outputs go and how they are built.
pub(crate) struct OutputConfig<'a> {
    /// The database directory.
    pub dir: &'a Path,
    /// The file system.
    pub fs: &'a dyn FileSystem,
    /// Options of the output tables.
    pub table_options: TableBuilderOptions,
    /// Tables are cut at about this size.
    pub target_file_size: u64,
    /// Write with O_DIRECT.
    pub direct_writes: bool,
}

struct Open {
    number: u64,
    builder: TableBuilder,
    /// The smallest blob file its entries point into (0: none yet).
    oldest_blob_file: u64,
}

/// Writes entries, in internal-key order, into tables of about
/// `target_file_size`.
pub(crate) struct TableOutputs<'a> {
    cfg: OutputConfig<'a>,
    new_file_number: &'a (dyn Fn() -> u64 + Sync),
    open: Option<Open>,
    last_user_key: Vec<u8>,
    done: Vec<FileMetaData>,
    bytes_written: u64,
    /// Set by `finish`: the outputs belong to the caller now.
    handed_out: bool,
}

impl<'a> TableOutputs<'a> {
    /// A writer taking its file numbers from `new_file_number`.
    pub(crate) fn new(
        cfg: OutputConfig<'a>,
        new_file_number: &'a (dyn Fn() -> u64 + Sync),
    ) -> Self {
        TableOutputs {
            cfg,
            new_file_number,
            open: None,
            last_user_key: Vec::new(),
            done: Vec::new(),
            bytes_written: 0,
            handed_out: false,
        }
    }

    /// Appends one entry; keys must come in increasing internal-key order.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let user_key = keys::user_key(key);
        // Cut only between user keys, once the file is big enough.
        let cut = self.open.as_ref().is_some_and(|o| {
            o.builder.estimated_file_size() >= self.cfg.target_file_size
                && user_key != self.last_user_key.as_slice()
        });
        if cut {
            self.close_current()?;
        }
        let open = match self.open.as_mut() {
            Some(o) => o,
            None => {
                let number = (self.new_file_number)();
                let file = create_table_file(
                    self.cfg.fs,
                    &table_path(self.cfg.dir, number),
                    self.cfg.direct_writes,
                )?;
                self.open.insert(Open {
                    number,
                    builder: TableBuilder::new(file, self.cfg.table_options.clone()),
                    oldest_blob_file: 0,
                })
            }
        };
        debug_assert!(
            open.builder.num_entries() == 0 || user_key >= self.last_user_key.as_slice(),
            "entries out of order"
        );
        open.builder.add(key, value)?;
        if keys::parse_internal_key(key).is_some_and(|p| p.kind == ValueKind::BlobIndex)
            && let Some(p) = BlobPointer::decode(value)
            && (open.oldest_blob_file == 0 || p.file_number < open.oldest_blob_file)
        {
            open.oldest_blob_file = p.file_number;
        }
        self.last_user_key.clear();
        self.last_user_key.extend_from_slice(user_key);
        Ok(())
    }

    fn close_current(&mut self) -> Result<()> {
        let Some(o) = self.open.take() else {
            return Ok(());
        };
        let number = o.number;
        if o.builder.num_entries() == 0 {
            drop(o);
            let _ = self.cfg.fs.remove_file(&table_path(self.cfg.dir, number));
            return Ok(());
        }
        match o.builder.finish() {
            Ok(props) => {
                self.bytes_written += props.file_size;
                let mut meta = file_meta(number, &props);
                meta.oldest_blob_file = o.oldest_blob_file;
                self.done.push(meta);
                Ok(())
            }
            Err(e) => {
                let _ = self.cfg.fs.remove_file(&table_path(self.cfg.dir, number));
                Err(e)
            }
        }
    }

    /// Finishes the last table and hands every output (in order) and the
    /// bytes written to the caller, who now owns the files.
    pub(crate) fn finish(mut self) -> Result<(Vec<FileMetaData>, u64)> {
        self.close_current()?;
        self.handed_out = true;
        Ok((std::mem::take(&mut self.done), self.bytes_written))
    }
}

impl Drop for TableOutputs<'_> {
    fn drop(&mut self) {
        if self.handed_out {
            return;
        }
        let mut numbers: Vec<u64> = self.done.iter().map(|f| f.number).collect();
        if let Some(o) = self.open.take() {
            numbers.push(o.number);
        }
        for n in numbers {
            let _ = self.cfg.fs.remove_file(&table_path(self.cfg.dir, n));
        }
    }
}

/// Creates a table file, with O_DIRECT when `direct` (see
/// `use_direct_io_for_flush_and_compaction`).
fn create_table_file(
    fs: &dyn FileSystem,
    path: &Path,
    direct: bool,
) -> Result<Box<dyn crate::io::WritableFile>> {
    if direct {
        fs.create_writable_direct(path)
    } else {
        fs.create_writable(path)
    }
}

/// The version's record of table `number`, from what its builder reported.
fn file_meta(number: u64, props: &TableProperties) -> FileMetaData {
    FileMetaData {
        number,
        file_size: props.file_size,
        smallest: props.smallest_key.clone(),
        largest: props.largest_key.clone(),
        smallest_seq: props.smallest_seq,
        largest_seq: props.largest_seq,
        num_entries: props.num_entries,
        oldest_blob_file: 0,
        range_cleared_seq: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PosixFs;
    use crate::keys::{ValueKind, make_internal_key};

    fn cfg(dir: &Path, target: u64) -> OutputConfig<'_> {
        OutputConfig {
            dir,
            fs: &PosixFs,
            table_options: TableBuilderOptions::default(),
            target_file_size: target,
            direct_writes: false,
        }
    }

    fn tables(dir: &Path) -> usize {
        std::fs::read_dir(dir).expect("dir").count()
    }

    #[test]
    fn cuts_between_user_keys_and_cleans_up_when_dropped() {
        let tmp = tempfile::tempdir().expect("tmp");
        let next = std::sync::atomic::AtomicU64::new(10);
        let numbers = || next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut out = TableOutputs::new(cfg(tmp.path(), 2048), &numbers);
        for i in 0..200u32 {
            let k = format!("k{i:04}");
            // Two versions of every key: a cut must never split them.
            for seq in [2, 1] {
                let ik = make_internal_key(k.as_bytes(), u64::from(i) * 4 + seq, ValueKind::Value);
                out.add(&ik, &[7u8; 40]).expect("add");
            }
        }
        let (files, bytes) = out.finish().expect("finish");
        assert!(files.len() > 3, "{} tables", files.len());
        assert_eq!(tables(tmp.path()), files.len());
        assert_eq!(bytes, files.iter().map(|f| f.file_size).sum::<u64>());
        for w in files.windows(2) {
            assert!(keys::user_key(&w[0].largest) < keys::user_key(&w[1].smallest));
        }
        // Dropped without finish: every file it wrote is removed.
        let tmp2 = tempfile::tempdir().expect("tmp");
        let mut out = TableOutputs::new(cfg(tmp2.path(), 1024), &numbers);
        for i in 0..100u32 {
            let ik = make_internal_key(format!("k{i:04}").as_bytes(), 1, ValueKind::Value);
            out.add(&ik, &[1u8; 64]).expect("add");
        }
        assert!(tables(tmp2.path()) > 1);
        drop(out);
        assert_eq!(tables(tmp2.path()), 0, "a dropped writer leaves no file");
    }
}
