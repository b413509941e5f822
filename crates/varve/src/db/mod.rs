//! The database: open, recovery, writes, reads, snapshots, iteration.
//! (Skeleton; filled in by the engine-core work.)

mod snapshot;

pub use snapshot::Snapshot;

/// An open database.
#[derive(Debug)]
pub struct Db {}

/// Iterator over a database.
#[derive(Debug)]
pub struct DbIterator {}
