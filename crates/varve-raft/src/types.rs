//! The type configuration of a varve-backed Raft group: the requests its
//! state machine applies and what it answers. Plain data.

use std::io::Cursor;

use serde::{Deserialize, Serialize};

/// A node's id in the cluster.
pub type NodeId = u64;

/// A write to the replicated key-value state machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Sets `key` to `value`.
    Set {
        /// The key.
        key: String,
        /// Its new value.
        value: String,
    },
    /// Removes `key`.
    Delete {
        /// The key.
        key: String,
    },
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Request::Set { key, value } => write!(f, "set {key:?} ({} bytes)", value.len()),
            Request::Delete { key } => write!(f, "delete {key:?}"),
        }
    }
}

/// What applying a [`Request`] answers: the value it set (`None` for a
/// delete and for entries that are not requests). Applying reads nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The value set.
    pub value: Option<String>,
}

openraft::declare_raft_types!(
    /// The openraft type configuration of varve-raft.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);
