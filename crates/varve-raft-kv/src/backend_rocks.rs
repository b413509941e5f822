//! The storage under the server in the peer build (`--no-default-features
//! --features rocksstore`): openraft's RocksDB store, openraft-rocksstore
//! 0.9, through openraft's storage-v1 adaptor. Writes only: the store
//! keeps its state machine private, so reads answer an error.

use std::path::Path;
use std::sync::Arc;

use openraft::storage::Adaptor;
use openraft::{Config, Raft};
use openraft_rocksstore::{RocksRequest, RocksStore};

use crate::network::Network;

/// The Raft type configuration of this build.
pub type C = openraft_rocksstore::TypeConfig;

/// The store (kept open for the node's life).
pub struct Store {
    _store: Arc<RocksStore>,
}

/// The storage's name, for logs and reports.
pub const NAME: &str = "rocksstore";

/// Opens the store in `dir` and starts node `id` on it.
pub async fn start(
    id: u64,
    config: Arc<Config>,
    network: Network,
    dir: &Path,
) -> anyhow::Result<(Raft<C>, Store)> {
    let store = RocksStore::new(dir).await;
    let (log, sm) = Adaptor::new(Arc::clone(&store));
    let raft = Raft::new(id, config, network, log, sm).await?;
    Ok((raft, Store { _store: store }))
}

/// The request that sets `key` to `value`.
pub fn set(key: String, value: String) -> RocksRequest {
    RocksRequest::Set { key, value }
}

/// The request that deletes `key`: the RocksDB store has none.
pub fn delete(_key: String) -> Option<RocksRequest> {
    None
}

impl Store {
    pub fn stats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    pub fn get(&self, _key: &str) -> Result<Option<String>, String> {
        Err("reads are not served by the rocksstore build (writes only)".into())
    }

    pub fn scan(
        &self,
        _start: &str,
        _end: Option<&str>,
        _limit: usize,
    ) -> Result<Vec<(String, String)>, String> {
        Err("reads are not served by the rocksstore build (writes only)".into())
    }
}
