//! File access behind a trait, so that tests can inject faults and later
//! issues can swap in O_DIRECT and io_uring without touching the engine.
//!
//! [`FileSystem`] is what the engine calls; [`PosixFs`] is the real one;
//! [`FaultInjectingFs`] wraps either to fail on command in tests.
//! Every method returns errors that name the path. [`uring`] is the
//! per-thread io_uring reactor that `crate::io::fiber::fiber_aio_read` uses
//! inside `multi_get` fibers.

mod direct;
#[cfg(any(test, feature = "testing"))]
mod fault;
#[cfg(any(test, feature = "testing"))]
mod fault_files;
#[cfg(any(test, feature = "testing"))]
mod fault_read;
pub(crate) mod fiber;
mod fs;
mod posix;
pub(crate) mod uring;

pub(crate) use direct::ALIGN as DIRECT_IO_ALIGN;
pub(crate) use direct::AlignedBuf;
#[cfg(any(test, feature = "testing"))]
pub use fault::{FaultInjectingFs, ReadRecord};
#[cfg(any(test, feature = "testing"))]
pub use fault_read::ReadFault;
pub use fs::{FileLock, FileSystem, LogFile, RandomAccessFile, SequentialFile, WritableFile};
pub use posix::PosixFs;

/// Whether reads may use io_uring
/// (`Options::io_engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoEngine {
    /// io_uring where the kernel offers it (probed once per process; the
    /// environment variable `VARVE_IO=sync` turns it off), with `pread`
    /// as the fallback. The default.
    #[default]
    IoUring,
    /// `pread` only: batched reads run one after another, with identical
    /// results.
    Sync,
}
pub(crate) use posix::create_truncated;
pub use uring::io_uring_available;
