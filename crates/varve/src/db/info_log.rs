//! The human-readable event log (`LOG` in the database directory).
//!
//! Recovery decisions (a truncated WAL tail, replayed logs), memtable
//! switches and write failures are written here, one timestamped line each,
//! so an operator can see what the engine did. Failing to write the event
//! log never fails a database operation. Thread-safe (a mutex per line).

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::filenames::{INFO_LOG, INFO_LOG_OLD};
use crate::io::{FileSystem, WritableFile};

/// Appends lines to `LOG`.
#[derive(Debug)]
pub(crate) struct InfoLog {
    file: Mutex<Option<Box<dyn WritableFile>>>,
}

impl InfoLog {
    /// Opens `dir/LOG`, keeping the previous one as `LOG.old`. If the file
    /// cannot be created the log is silently disabled.
    pub(crate) fn open(fs: &dyn FileSystem, dir: &Path) -> InfoLog {
        let path = dir.join(INFO_LOG);
        if fs.exists(&path).unwrap_or(false) {
            let _ = fs.rename(&path, &dir.join(INFO_LOG_OLD));
        }
        InfoLog {
            file: Mutex::new(fs.create_writable(&path).ok()),
        }
    }

    /// An event log that drops every line (read-only databases write nothing).
    pub(crate) fn disabled() -> InfoLog {
        InfoLog {
            file: Mutex::new(None),
        }
    }

    /// Writes one line.
    pub(crate) fn log(&self, msg: impl AsRef<str>) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mut f = self.file.lock();
        if let Some(file) = f.as_mut() {
            let line = format!(
                "{}.{:06} {}\n",
                now.as_secs(),
                now.subsec_micros(),
                msg.as_ref()
            );
            let _ = file.append(line.as_bytes());
        }
    }
}
