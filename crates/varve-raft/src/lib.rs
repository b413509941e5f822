//! varve as the storage of an [openraft](https://docs.rs/openraft/0.9)
//! node (`docs/raft.md`): a [`LogStore`] (openraft's `RaftLogStorage` and
//! `RaftLogReader`) and a [`StateMachine`] (`RaftStateMachine` and
//! `RaftSnapshotBuilder`) that share one varve database, each part in a
//! keyspace of its own:
//!
//! | keyspace | holds |
//! |---|---|
//! | `raft_log` | the log: big-endian u64 index → entry |
//! | `raft_meta` | the vote, the committed log id, the last purged log id |
//! | `sm_data` | the state machine's key-value data |
//! | `sm_meta` | the last applied log id and the membership, written in the same batch as the data they describe |
//! | `sm_snapshot` | the current snapshot (its metadata and data) |
//!
//! Thread-safety: both handles are `Clone + Send + Sync`; openraft drives
//! each from one task. Invariants: an append is reported flushed only once
//! `Db::sync_wal` covered it (appends are written with `sync = false` and
//! synced by one thread in groups); the log has no holes (truncate and
//! purge are range deletes of a suffix and a prefix); the state machine's
//! data, last applied id and membership change in one write batch.

mod codec;
mod error;
mod log_store;
mod state_machine;
mod store;
mod types;

pub use error::OpenError;
pub use log_store::LogStore;
pub use state_machine::{SnapshotBuilder, StateMachine};
pub use store::{KEYSPACES, open, open_with};
pub use types::{NodeId, Request, Response, TypeConfig};
