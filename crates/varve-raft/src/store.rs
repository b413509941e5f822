//! Opening a varve-raft store: one varve database with the keyspaces the
//! log store and the state machine use (see the crate docs).
//!
//! Invariant: both handles of one `open` share the database; it closes
//! when the last handle (and the log store's sync thread) lets go.

use std::path::Path;
use std::sync::Arc;

use varve::{Db, KeyspaceOptions, Options};

use crate::error::OpenError;
use crate::log_store::LogStore;
use crate::state_machine::StateMachine;

/// The keyspaces of a varve-raft database.
pub const KEYSPACES: [&str; 5] = ["raft_log", "raft_meta", "sm_data", "sm_meta", "sm_snapshot"];

/// Opens (or creates) the store in `path` with varve's default options.
pub fn open(path: impl AsRef<Path>) -> Result<(LogStore, StateMachine), OpenError> {
    open_with(path, Options::default())
}

/// Opens (or creates) the store in `path` with `options`.
pub fn open_with(
    path: impl AsRef<Path>,
    options: Options,
) -> Result<(LogStore, StateMachine), OpenError> {
    let ks_options = KeyspaceOptions::from(&options);
    let db = Arc::new(Db::open(path, options)?);
    let ks = |name: &str| db.keyspace(name, ks_options.clone());
    let (log, meta) = (ks(KEYSPACES[0])?, ks(KEYSPACES[1])?);
    let (data, sm_meta, snapshots) = (ks(KEYSPACES[2])?, ks(KEYSPACES[3])?, ks(KEYSPACES[4])?);
    let log = LogStore::new(Arc::clone(&db), log, meta);
    let sm = StateMachine::new(db, data, sm_meta, snapshots)?;
    Ok((log, sm))
}
