//! Atomic groups of writes and their binary encoding (see `docs/write-batch.md`).

mod write_batch;

pub(crate) use write_batch::BatchOp;
pub(crate) use write_batch::HEADER_LEN;
pub use write_batch::WriteBatch;
