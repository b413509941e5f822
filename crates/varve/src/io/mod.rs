//! File access behind a trait, so that tests can inject faults and later
//! issues can swap in O_DIRECT and io_uring without touching the engine.
//!
//! [`FileSystem`] is what the engine calls; [`PosixFs`] is the real one;
//! [`FaultInjectingFs`] wraps either to fail on command in tests.
//! Every method returns errors that name the path.

mod direct;
mod fault;
mod fs;
mod posix;

pub use direct::ALIGN as DIRECT_IO_ALIGN;
pub use fault::FaultInjectingFs;
pub use fs::{
    AppendLogFile, FileLock, FileSystem, LogFile, RandomAccessFile, SequentialFile, WritableFile,
};
pub use posix::PosixFs;
