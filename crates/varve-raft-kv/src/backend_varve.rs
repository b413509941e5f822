//! The storage under the server: varve-raft (the default build).

use std::path::Path;
use std::sync::Arc;

use openraft::{Config, Raft};

use crate::network::Network;

/// The Raft type configuration of this build.
pub type C = varve_raft::TypeConfig;

/// What the server reads the state machine through.
pub struct Store {
    sm: varve_raft::StateMachine,
}

/// The storage's name, for logs and reports.
pub const NAME: &str = "varve";

/// Opens the store in `dir` and starts node `id` on it.
pub async fn start(
    id: u64,
    config: Arc<Config>,
    network: Network,
    dir: &Path,
) -> anyhow::Result<(Raft<C>, Store)> {
    let (log, sm) = varve_raft::open(dir)?;
    let reader = sm.clone();
    let raft = Raft::new(id, config, network, log, sm).await?;
    Ok((raft, Store { sm: reader }))
}

/// The request that sets `key` to `value`.
pub fn set(key: String, value: String) -> varve_raft::Request {
    varve_raft::Request::Set { key, value }
}

/// The request that deletes `key` (`None`: this storage has none).
pub fn delete(key: String) -> Option<varve_raft::Request> {
    Some(varve_raft::Request::Delete { key })
}

impl Store {
    /// The storage's counters: batches written and WAL fdatasyncs.
    pub fn stats(&self) -> serde_json::Value {
        let s = self.sm.db_stats();
        serde_json::json!({
            "user_writes": s.user_writes,
            "wal_syncs": s.wal_syncs,
            "wal_bytes": s.wal_bytes,
        })
    }

    /// The value of `key` in this node's state machine.
    pub fn get(&self, key: &str) -> Result<Option<String>, String> {
        self.sm.get(key).map_err(|e| e.to_string())
    }

    /// Up to `limit` pairs of this node's state machine in `[start, end)`.
    pub fn scan(
        &self,
        start: &str,
        end: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String)>, String> {
        self.sm.scan(start, end, limit).map_err(|e| e.to_string())
    }
}
