//! Taking a database directory's `LOCK` (open, read-only open, repair,
//! destroy all hold it for as long as they work on the directory).
//! Stateless; thread-safe.

use std::path::Path;

use crate::error::{Error, Result};
use crate::io::{FileLock, FileSystem};

/// Takes `LOCK`, retrying for a moment before reporting `Error::Locked`:
/// `flock` locks belong to an open file description, and a `fork` anywhere
/// in the process (a thread spawning a command) shares our description with
/// the child until its `exec` closes it, so a lock just released can look
/// held for a few milliseconds. A database really open elsewhere stays
/// locked and gets the error after about 200 ms.
pub(crate) fn take_lock(
    fs: &dyn FileSystem,
    dir: &Path,
    lock_path: &Path,
) -> Result<Box<dyn FileLock>> {
    for attempt in 0..10u32 {
        if let Some(lock) = fs.try_lock(lock_path)? {
            return Ok(lock);
        }
        std::thread::sleep(std::time::Duration::from_millis(2 << attempt.min(5)));
    }
    Err(Error::Locked {
        dir: dir.to_path_buf(),
        lock_file: lock_path.to_path_buf(),
    })
}
