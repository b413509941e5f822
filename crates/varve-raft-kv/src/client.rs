//! A client of the service that finds the leader: it sends a request to
//! the node it believes leads, follows `NotLeader` answers, and tries the
//! other nodes when one does not answer, until a deadline.
//!
//! Thread-safety: `Clone + Send + Sync`; clones share the connection pool
//! and the leader guess. Invariant: a call returns `Ok` only for a `Reply::Ok`
//! from some node; any other end is an error saying whether the request
//! may have taken effect (`Outcome::Unknown`) or certainly did not.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::api::{NodeId, Reply};

/// Why a call failed.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// It may have taken effect (a node failed or timed out after the
    /// request reached it, or answered an error).
    Unknown(String),
}

impl std::error::Error for Outcome {}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Unknown(why) => write!(f, "outcome unknown: {why}"),
        }
    }
}

/// A client of one cluster.
#[derive(Clone)]
pub struct Client {
    nodes: Arc<BTreeMap<NodeId, String>>,
    http: reqwest::Client,
    leader: Arc<Mutex<Option<String>>>,
    /// Per attempt.
    timeout: Duration,
    /// For a whole call, across attempts.
    deadline: Duration,
}

impl Client {
    /// A client of the nodes `nodes` (id to address).
    pub fn new(nodes: BTreeMap<NodeId, String>, timeout: Duration, deadline: Duration) -> Client {
        Client {
            nodes: Arc::new(nodes),
            http: reqwest::Client::new(),
            leader: Arc::new(Mutex::new(None)),
            timeout,
            deadline,
        }
    }

    /// The nodes' addresses.
    pub fn nodes(&self) -> &BTreeMap<NodeId, String> {
        &self.nodes
    }

    fn leader_guess(&self) -> Option<String> {
        self.leader.lock().map(|g| g.clone()).unwrap_or(None)
    }

    fn set_leader(&self, addr: Option<String>) {
        if let Ok(mut g) = self.leader.lock() {
            *g = addr;
        }
    }

    /// Sends `body` to `path` of node `addr` once.
    pub async fn call_node<B: Serialize>(
        &self,
        addr: &str,
        path: &str,
        body: &B,
    ) -> Result<Reply, String> {
        let req = self.http.post(format!("http://{addr}/{path}")).json(body);
        self.send(addr, req).await
    }

    /// `GET` of `path` on node `addr`.
    pub async fn get_node(&self, addr: &str, path: &str) -> Result<Reply, String> {
        let req = self.http.get(format!("http://{addr}/{path}"));
        self.send(addr, req).await
    }

    /// Sends `req` to node `addr` with the per-attempt timeout; its reply.
    async fn send(&self, addr: &str, req: reqwest::RequestBuilder) -> Result<Reply, String> {
        let resp = req
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        resp.json::<Reply>()
            .await
            .map_err(|e| format!("{addr}: bad answer: {e}"))
    }

    /// Sends `body` to `path` of the leader, wherever it is.
    pub async fn call<B: Serialize>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<serde_json::Value, Outcome> {
        let start = Instant::now();
        let addrs: Vec<String> = self.nodes.values().cloned().collect();
        let mut next = 0usize;
        let mut last_err = String::from("no node answered");
        while start.elapsed() < self.deadline {
            let addr = match self.leader_guess() {
                Some(a) => a,
                None => {
                    next += 1;
                    addrs[next % addrs.len().max(1)].clone()
                }
            };
            match self.call_node(&addr, path, body).await {
                Ok(Reply::Ok(v)) => return Ok(v),
                Ok(Reply::NotLeader { addr: Some(a), .. }) if a != addr => {
                    self.set_leader(Some(a));
                }
                Ok(Reply::NotLeader { .. }) => {
                    // No leader known yet (an election is on): wait a bit.
                    self.set_leader(None);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok(Reply::Error(e)) => {
                    last_err = format!("{addr}: {e}");
                    self.set_leader(None);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => {
                    last_err = e;
                    self.set_leader(None);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        Err(Outcome::Unknown(last_err))
    }
}
