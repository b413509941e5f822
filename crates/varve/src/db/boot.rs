//! `BOOT_ID`: which boot of the machine last opened the database for
//! writing, so that recovery can tell a `kill -9` from a power cut.
//!
//! Written (to a temporary file, then renamed over, then the directory
//! synced with the new WAL) by every read-write open before the first
//! record of this process reaches a WAL: every WAL written since was
//! written in that boot. At the next open, a different boot id means the
//! machine restarted since, so the pages of the newest WAL that no
//! fdatasync covered may have reached the disk in any order, leaving a hole
//! before valid records; a hole there then ends the log (the records after
//! it were never synced) instead of being refused as damage. The same boot
//! id (or no file: a database of an older build) keeps the strict rule,
//! since a process that died cannot leave holes in the page cache. Format:
//! the 36 bytes of the boot id, nothing else (`docs/db-directory.md`).
//!
//! Thread-safety: called by open alone. Invariant: the file names the boot
//! of the last read-write open that replayed the logs.

use std::path::Path;

use crate::error::Result;
use crate::io::FileSystem;

/// The file's name.
pub(crate) const BOOT_ID: &str = "BOOT_ID";

/// Whether the machine restarted since the last read-write open of `dir`:
/// its `BOOT_ID` names another boot (or is torn: only a power cut leaves
/// it so). `false` when there is none.
pub(crate) fn restarted_since_last_open(fs: &dyn FileSystem, dir: &Path) -> Result<bool> {
    let path = dir.join(BOOT_ID);
    if !fs.exists(&path)? {
        return Ok(false);
    }
    let id = crate::io::read_file(fs, &path)?;
    Ok(id[..] != fs.boot_id()[..])
}

/// Records this boot in `dir` (the caller syncs the directory).
pub(crate) fn record(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let tmp = dir.join(format!("{BOOT_ID}.tmp"));
    let mut f = fs.create_writable(&tmp)?;
    f.append(&fs.boot_id())?;
    f.sync_data()?;
    drop(f);
    fs.rename(&tmp, &dir.join(BOOT_ID))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PosixFs;

    #[test]
    fn the_same_boot_is_no_restart_and_another_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(!restarted_since_last_open(&PosixFs, dir.path()).expect("none"));
        record(&PosixFs, dir.path()).expect("record");
        assert!(!restarted_since_last_open(&PosixFs, dir.path()).expect("same boot"));
        std::fs::write(dir.path().join(BOOT_ID), [b'x'; 36]).expect("write");
        assert!(restarted_since_last_open(&PosixFs, dir.path()).expect("another"));
        std::fs::write(dir.path().join(BOOT_ID), b"torn").expect("write");
        assert!(restarted_since_last_open(&PosixFs, dir.path()).expect("torn"));
    }
}
