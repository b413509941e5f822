//! File access: the [`FileSystem`] trait the engine calls, [`PosixFs`]
//! (plain files and O_DIRECT ones, `direct.rs`; files written in place,
//! through a shared mapping or by direct writes, and the mapping itself,
//! `in_place.rs`), and for tests the
//! fault-injecting file system (`fault.rs`, feature `testing`). Every method
//! returns errors that name the path. Below the file layer: [`uring`], the
//! per-thread io_uring reactor, and [`fiber`], the fibers whose reads
//! (`fiber_aio_read`) go through it, with `pread` as the fallback.
//! [`IoEngine`] says whether a database may use io_uring for reads.
//! Thread-safety: file handles are `Send + Sync` where the trait says so;
//! the reactor and fibers are per thread.

mod direct;
#[cfg(any(test, feature = "testing"))]
mod fault;
#[cfg(any(test, feature = "testing"))]
mod fault_files;
#[cfg(any(test, feature = "testing"))]
mod fault_in_place;
#[cfg(any(test, feature = "testing"))]
mod fault_read;
#[cfg(any(test, feature = "testing"))]
mod fault_switches;
pub(crate) mod fiber;
mod fs;
mod in_place;
mod posix;
pub(crate) mod uring;

pub(crate) use direct::ALIGN as DIRECT_IO_ALIGN;
pub(crate) use direct::AlignedBuf;
#[cfg(any(test, feature = "testing"))]
pub use fault::FaultInjectingFs;
#[cfg(any(test, feature = "testing"))]
pub use fault_read::ReadFault;
#[cfg(any(test, feature = "testing"))]
pub use fault_switches::ReadRecord;
pub(crate) use fs::read_file;
pub use fs::{
    FileLock, FileSystem, InPlaceFile, LogFile, Preallocate, RandomAccessFile, SequentialFile,
    WritableFile,
};
#[cfg(test)]
pub(crate) use in_place::PosixInPlace;
pub(crate) use in_place::SharedMap;
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
