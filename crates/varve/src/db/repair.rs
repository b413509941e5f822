//! Repair: rebuild a database's manifest from the tables and WALs present
//! in its directory, keeping only what checksums prove good.
//!
//! Steps (under `LOCK`, so never on an open database):
//! 1. every `nnnnnn.sst` is opened and read end to end (every block
//!    checksum); a good one is described from its properties, a bad or
//!    empty one is moved to `lost/`;
//! 2. every `nnnnnn.log` is replayed; one damaged in the middle is moved to
//!    `lost/` and rewritten under its own number with the records before the
//!    damage (a torn tail is left for the next open to truncate);
//! 3. the old `MANIFEST-*`, `CURRENT` and `CURRENT.*.tmp` are moved to
//!    `lost/`, a new manifest is created and one edit adds every good table
//!    to L0 with `log_number` 0, so the next open replays every WAL.
//!
//! L0 may hold overlapping tables and is searched newest first (by
//! `largest_seq`), so putting everything there is always correct; the
//! compactions after the next open restore the level shape. Nothing is
//! deleted: whatever repair rejects stays in `lost/`. Single-threaded.

use std::path::Path;
use std::sync::Arc;

use crate::filenames::{self, FileKind, LOCK, wal_path};
use crate::io::FileSystem;
use crate::iter::InternalIterator;
use crate::sst::{Table, TableReadOptions};
use crate::version::{FileMetaData, VersionEdit, VersionSet};
use crate::wal;
use crate::{Error, Result, WriteBatch};

/// Name of the subdirectory that receives files repair rejects.
pub const LOST_DIR: &str = "lost";

/// What [`repair`](crate::Db::repair) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Tables that verified and are now in L0 (file numbers).
    pub tables: Vec<u64>,
    /// WALs kept for replay at the next open (file numbers).
    pub wals: Vec<u64>,
    /// WALs damaged in the middle whose good prefix was rewritten:
    /// (number, records kept).
    pub wals_salvaged: Vec<(u64, u64)>,
    /// Files moved to `lost/`, each with the reason.
    pub lost: Vec<(String, String)>,
    /// Number of the new manifest.
    pub manifest_number: u64,
    /// Largest sequence number found in the tables.
    pub last_sequence: u64,
}

/// Repairs the database in `dir` (see the module docs).
pub(crate) fn repair(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<RepairReport> {
    if !fs.is_dir(dir)? {
        return Err(Error::NotFound(dir.to_path_buf()));
    }
    let lock_path = dir.join(LOCK);
    let _lock = super::open::take_lock(fs.as_ref(), dir, &lock_path)?;
    let mut report = RepairReport::default();
    let mut names = fs.list_dir(dir)?;
    names.sort();
    let lost = dir.join(LOST_DIR);
    let move_to_lost = |name: &str, why: String, report: &mut RepairReport| -> Result<()> {
        fs.create_dir_all(&lost)?;
        fs.rename(&dir.join(name), &lost.join(name))?;
        report.lost.push((name.to_string(), why));
        Ok(())
    };

    let mut edit = VersionEdit::default();
    let mut tables: Vec<FileMetaData> = Vec::new();
    let mut max_number = 0u64;
    for name in &names {
        match filenames::parse(name) {
            Some(FileKind::Table(n)) => {
                max_number = max_number.max(n);
                match verify_table(fs.as_ref(), &dir.join(name), n) {
                    Ok(meta) if meta.num_entries > 0 => tables.push(meta),
                    Ok(_) => move_to_lost(name, "empty table".into(), &mut report)?,
                    Err(e) => move_to_lost(name, e.to_string(), &mut report)?,
                }
            }
            Some(FileKind::Wal(n)) => {
                max_number = max_number.max(n);
                match salvage_wal(fs.as_ref(), dir, n)? {
                    WalState::Good => report.wals.push(n),
                    WalState::Damaged { records, error } => {
                        move_to_lost(name, error, &mut report)?;
                        rewrite_wal(fs.as_ref(), dir, n, &records)?;
                        report.wals.push(n);
                        report.wals_salvaged.push((n, records.len() as u64));
                    }
                }
            }
            Some(FileKind::Manifest(n)) => {
                max_number = max_number.max(n);
                move_to_lost(name, "replaced by repair".into(), &mut report)?;
            }
            Some(FileKind::Current | FileKind::Temp) => {
                move_to_lost(name, "replaced by repair".into(), &mut report)?;
            }
            Some(FileKind::Blob(n)) => max_number = max_number.max(n),
            _ => {}
        }
    }
    fs.sync_dir(dir)?;

    let mut versions = VersionSet::create(Arc::clone(&fs), dir)?;
    versions.mark_file_number_used(max_number);
    tables.sort_by_key(|t| (t.largest_seq, t.number));
    for t in tables {
        report.tables.push(t.number);
        report.last_sequence = report.last_sequence.max(t.largest_seq);
        edit.add_file(0, t);
    }
    edit.last_sequence = Some(report.last_sequence);
    versions.log_and_apply(edit)?;
    report.manifest_number = versions.manifest_number();
    Ok(report)
}

/// Opens table `number` at `path` and reads every entry; its metadata from
/// the properties if every checksum holds.
pub(crate) fn verify_table(fs: &dyn FileSystem, path: &Path, number: u64) -> Result<FileMetaData> {
    let size = fs.file_size(path)?;
    let file = fs.open_random_access(path)?;
    let table = Table::open(file, size, TableReadOptions::default())?;
    let mut it = table.iter();
    it.seek_to_first();
    let mut n = 0u64;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status()?;
    let p = table.properties();
    if n != p.num_entries {
        return Err(Error::corruption(
            path,
            0,
            format!(
                "table holds {n} entries, its properties say {}",
                p.num_entries
            ),
        ));
    }
    Ok(FileMetaData {
        number,
        file_size: size,
        smallest: p.smallest_key.clone(),
        largest: p.largest_key.clone(),
        smallest_seq: p.smallest_seq,
        largest_seq: p.largest_seq,
        num_entries: p.num_entries,
    })
}

enum WalState {
    Good,
    Damaged {
        records: Vec<Vec<u8>>,
        error: String,
    },
}

/// Replays WAL `n`, checking every batch; on mid-log damage returns the
/// records before it.
fn salvage_wal(fs: &dyn FileSystem, dir: &Path, n: u64) -> Result<WalState> {
    let path = wal_path(dir, n);
    let mut records = Vec::new();
    let r = wal::replay(fs, &path, n, |payload, offset| {
        WriteBatch::from_encoded(payload).map_err(|reason| {
            Error::corruption(&path, offset, format!("bad write batch: {reason}"))
        })?;
        records.push(payload.to_vec());
        Ok(())
    });
    match r {
        Ok(_) => Ok(WalState::Good),
        Err(e @ (Error::Corruption { .. } | Error::UnsupportedVersion { .. })) => {
            Ok(WalState::Damaged {
                records,
                error: e.to_string(),
            })
        }
        Err(e) => Err(e),
    }
}

/// Writes a new WAL `n` holding `records` and syncs it.
fn rewrite_wal(fs: &dyn FileSystem, dir: &Path, n: u64, records: &[Vec<u8>]) -> Result<()> {
    let mut file = fs.create_writable(&wal_path(dir, n))?;
    let records: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    wal::write_log(file.as_mut(), n, &records)?;
    file.sync_data()?;
    fs.sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Db, Options};

    fn flip(path: &Path, offset: usize) {
        let mut b = std::fs::read(path).expect("read");
        b[offset] ^= 0x20;
        std::fs::write(path, b).expect("write");
    }

    fn ext_files(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn bad_table_goes_to_lost_and_damaged_wal_keeps_its_good_prefix() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path();
        {
            let db = Db::open(dir, Options::default()).expect("open");
            db.put(b"t1", b"table one").expect("put");
            db.flush().expect("flush");
            db.put(b"t2", b"table two").expect("put");
            db.flush().expect("flush");
            for i in 0..10 {
                db.put(format!("w{i}"), b"wal").expect("put");
            }
            db.close().expect("close");
        }
        let tables = ext_files(dir, "sst");
        assert_eq!(tables.len(), 2);
        flip(&tables[0], 3);
        // Damage the 6th WAL record: five good records before, four after.
        let wal = ext_files(dir, "log").pop().expect("wal");
        let dump = crate::tools::dump_wal(&crate::io::PosixFs, &wal).expect("dump");
        flip(&wal, dump.records[5].offset as usize + 10);

        let r = Db::repair(dir).expect("repair");
        assert_eq!(r.tables.len(), 1);
        assert_eq!(r.wals_salvaged.len(), 1);
        assert_eq!(r.wals_salvaged[0].1, 5);
        let lost: Vec<&str> = r.lost.iter().map(|(f, _)| f.as_str()).collect();
        assert!(lost.iter().any(|f| f.ends_with(".sst")), "{lost:?}");
        assert!(lost.iter().any(|f| f.ends_with(".log")), "{lost:?}");
        assert!(dir.join(LOST_DIR).join("CURRENT").exists());

        let db = Db::open(dir, Options::default()).expect("open after repair");
        assert_eq!(db.get(b"t1").expect("get"), None, "its table was damaged");
        assert_eq!(db.get(b"t2").expect("get"), Some(b"table two".to_vec()));
        for i in 0..10 {
            let want = (i < 5).then(|| b"wal".to_vec());
            assert_eq!(db.get(format!("w{i}")).expect("get"), want, "w{i}");
        }
        // New writes do not reuse sequence numbers of the kept data.
        db.put(b"t2", b"newer").expect("put");
        assert_eq!(db.get(b"t2").expect("get"), Some(b"newer".to_vec()));
    }

    #[test]
    fn repair_refuses_an_open_database() {
        let tmp = tempfile::tempdir().expect("tmp");
        let db = Db::open(tmp.path(), Options::default()).expect("open");
        let e = Db::repair(tmp.path()).expect_err("locked");
        assert!(matches!(e, Error::Locked { .. }), "{e}");
        drop(db);
    }
}
