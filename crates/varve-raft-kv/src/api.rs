//! The HTTP API between clients and servers (JSON bodies, `docs/raft.md`,
//! "The service"): what a client sends, and what a server answers. Plain
//! data, shared by both sides.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A node id.
pub type NodeId = u64;

/// `POST /kv/write`: set `key` to `value`, or delete it (`value: None`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WriteReq {
    pub key: String,
    pub value: Option<String>,
}

/// `POST /kv/read`: the value of `key`; `linearizable` asks the leader to
/// confirm its leadership first (openraft's read index), else the node
/// answers from its own state machine (possibly stale).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadReq {
    pub key: String,
    pub linearizable: bool,
}

/// `POST /kv/scan`: up to `limit` pairs in `[start, end)`; linearizable
/// as a read, or this node's own state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScanReq {
    pub start: String,
    pub end: Option<String>,
    pub limit: usize,
    pub linearizable: bool,
}

/// `POST /cluster/init`: the first members, id to address.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InitReq {
    pub nodes: BTreeMap<NodeId, String>,
}

/// `POST /cluster/add-learner`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AddLearnerReq {
    pub id: NodeId,
    pub addr: String,
}

/// `POST /cluster/change-membership`: the voters from now on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChangeMembershipReq {
    pub members: BTreeSet<NodeId>,
}

/// Every answer of the KV and cluster endpoints.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// Done; the result (a value, pairs, a log index, metrics: per call).
    Ok(serde_json::Value),
    /// This node is not the leader: ask `addr` (if known).
    NotLeader {
        leader: Option<NodeId>,
        addr: Option<String>,
    },
    /// Failed; why. The write may or may not have taken effect.
    Error(String),
}
