//! The human-readable event log (`LOG` in the database directory).
//!
//! Recovery decisions (a truncated WAL tail, replayed logs), memtable
//! switches and write failures are written here, one timestamped line each,
//! so an operator can see what the engine did. Failing to write the event
//! log never fails a database operation. Thread-safe (a mutex per line).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::filenames::{INFO_LOG, INFO_LOG_OLD};

/// Appends lines to `LOG`.
#[derive(Debug)]
pub struct InfoLog {
    file: Mutex<Option<File>>,
}

impl InfoLog {
    /// Opens `dir/LOG`, keeping the previous one as `LOG.old`. If the file
    /// cannot be created the log is silently disabled.
    pub fn open(dir: &Path) -> InfoLog {
        let path = dir.join(INFO_LOG);
        if path.exists() {
            let _ = std::fs::rename(&path, dir.join(INFO_LOG_OLD));
        }
        InfoLog {
            file: Mutex::new(File::create(path).ok()),
        }
    }

    /// An event log that drops every line (read-only databases write nothing).
    pub fn disabled() -> InfoLog {
        InfoLog {
            file: Mutex::new(None),
        }
    }

    /// Writes one line.
    pub fn log(&self, msg: impl AsRef<str>) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mut f = self.file.lock();
        if let Some(file) = f.as_mut() {
            let _ = writeln!(
                file,
                "{}.{:06} {}",
                now.as_secs(),
                now.subsec_micros(),
                msg.as_ref()
            );
        }
    }
}
