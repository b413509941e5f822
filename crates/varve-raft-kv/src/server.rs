//! The server: one Raft node and its HTTP endpoints (`docs/raft.md`, "The
//! service"), on 127.0.0.1 only.
//!
//! - Raft RPCs from other nodes: `POST /raft/append`, `/raft/vote`,
//!   `/raft/snapshot`.
//! - Cluster: `POST /cluster/init`, `/cluster/add-learner`,
//!   `/cluster/change-membership`; `GET /cluster/metrics`,
//!   `GET /storage/stats` (the storage's writes and fdatasyncs).
//! - Data: `POST /kv/write` (through the log), `/kv/read` (linearizable
//!   through openraft's read index, or local), `/kv/scan` (either too).
//!
//! Thread-safety: handlers share the node through an `Arc`; openraft
//! serializes what reaches the log and the state machine.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use openraft::error::{
    CheckIsLeaderError, ClientWriteError, ForwardToLeader, InstallSnapshotError, RaftError,
};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Config, Raft, SnapshotPolicy};
use serde_json::json;

use crate::api::{AddLearnerReq, ChangeMembershipReq, InitReq, ReadReq, Reply, ScanReq, WriteReq};
use crate::backend::{self, C, Store};
use crate::network::Network;

type NodeId = u64;

/// How a node runs.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub id: NodeId,
    /// Where it listens: a loopback address.
    pub addr: SocketAddr,
    pub heartbeat_ms: u64,
    pub election_min_ms: u64,
    pub election_max_ms: u64,
    /// Build a snapshot (and purge the log) every this many entries.
    pub snapshot_every: u64,
    /// Entries a snapshot already holds that stay in the log (for
    /// followers slightly behind); the rest are purged.
    pub keep_logs: u64,
}

/// One node of a replicated key-value store: openraft over HTTP, its log
/// and state machine in varve (or in RocksDB, in the peer build).
#[derive(clap::Parser, Debug)]
#[command(version, about)]
pub struct Args {
    /// This node's id (unique in the cluster, > 0).
    #[arg(long)]
    id: u64,
    /// Address to listen on and that other nodes reach it at; loopback
    /// only (e.g. 127.0.0.1:21001).
    #[arg(long)]
    addr: SocketAddr,
    /// Directory of the node's database (created if missing).
    #[arg(long)]
    dir: std::path::PathBuf,
    /// Leader heartbeat interval, ms.
    #[arg(long, default_value_t = 100)]
    heartbeat_ms: u64,
    /// Election timeout range, ms (a follower that hears no leader for a
    /// random time in this range starts an election).
    #[arg(long, default_value_t = 500)]
    election_min_ms: u64,
    #[arg(long, default_value_t = 1000)]
    election_max_ms: u64,
    /// Snapshot (and purge the log) every this many entries.
    #[arg(long, default_value_t = 20_000)]
    snapshot_every: u64,
    /// Entries a snapshot already holds that stay in the log.
    #[arg(long, default_value_t = 1000)]
    keep_logs: u64,
}

/// The server binary: parses the command line and serves.
pub async fn main_from_args() -> anyhow::Result<()> {
    let a = <Args as clap::Parser>::parse();
    // openraft's own log, to stderr: warnings and errors unless RUST_LOG
    // says otherwise.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    serve(
        NodeConfig {
            id: a.id,
            addr: a.addr,
            heartbeat_ms: a.heartbeat_ms,
            election_min_ms: a.election_min_ms,
            election_max_ms: a.election_max_ms,
            snapshot_every: a.snapshot_every,
            keep_logs: a.keep_logs,
        },
        &a.dir,
    )
    .await
}

/// A running node.
pub struct App {
    pub raft: Raft<C>,
    store: Store,
}

fn not_leader(f: ForwardToLeader<NodeId, BasicNode>) -> Reply {
    Reply::NotLeader {
        leader: f.leader_id,
        addr: f.leader_node.map(|n| n.addr),
    }
}

/// Starts node `cfg.id` on the store in `dir`; returns once it stops
/// serving (it never does unless the listener fails).
pub async fn serve(cfg: NodeConfig, dir: &Path) -> anyhow::Result<()> {
    if !cfg.addr.ip().is_loopback() {
        anyhow::bail!(
            "{} is not a loopback address: nodes listen on 127.0.0.1 only",
            cfg.addr
        );
    }
    let config = Config {
        cluster_name: "varve-raft-kv".into(),
        heartbeat_interval: cfg.heartbeat_ms,
        election_timeout_min: cfg.election_min_ms,
        election_timeout_max: cfg.election_max_ms,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(cfg.snapshot_every),
        max_in_snapshot_log_to_keep: cfg.keep_logs,
        // A follower further behind than this gets a snapshot; openraft
        // wants it above the snapshot interval.
        replication_lag_threshold: cfg.snapshot_every.saturating_mul(2),
        // Snapshot chunks travel as JSON (a byte is up to four characters):
        // 1 MiB chunks, and time for each to arrive and the last to be
        // installed (openraft's 200 ms default is for small snapshots).
        snapshot_max_chunk_size: 1 << 20,
        // An AppendEntries must arrive within a heartbeat interval (its
        // timeout); 300 entries of 10 KB values, as JSON, did not.
        max_payload_entries: 64,
        install_snapshot_timeout: 10_000,
        ..Config::default()
    }
    .validate()?;
    std::fs::create_dir_all(dir)?;
    let (raft, store) = backend::start(cfg.id, Arc::new(config), Network::default(), dir).await?;
    let app = Arc::new(App { raft, store });
    let listener = tokio::net::TcpListener::bind(cfg.addr).await?;
    eprintln!(
        "varve-raft-server: node {} ({} storage) on http://{}, data in {}",
        cfg.id,
        backend::NAME,
        cfg.addr,
        dir.display()
    );
    axum::serve(listener, router(app)).await?;
    Ok(())
}

/// The node's endpoints.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/raft/append", post(append))
        .route("/raft/vote", post(vote))
        .route("/raft/snapshot", post(snapshot))
        .route("/cluster/init", post(init))
        .route("/cluster/add-learner", post(add_learner))
        .route("/cluster/change-membership", post(change_membership))
        .route("/cluster/metrics", get(metrics))
        .route("/storage/stats", get(storage_stats))
        .route("/kv/write", post(write))
        .route("/kv/read", post(read))
        .route("/kv/scan", post(scan))
        // Snapshot chunks (1 MiB of bytes, up to 4 MiB of JSON) and large
        // append batches exceed axum's 2 MiB default.
        .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
        .with_state(app)
}

async fn append(
    State(app): State<Arc<App>>,
    Json(req): Json<AppendEntriesRequest<C>>,
) -> Json<Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>> {
    Json(app.raft.append_entries(req).await)
}

async fn vote(
    State(app): State<Arc<App>>,
    Json(req): Json<VoteRequest<NodeId>>,
) -> Json<Result<VoteResponse<NodeId>, RaftError<NodeId>>> {
    Json(app.raft.vote(req).await)
}

async fn snapshot(
    State(app): State<Arc<App>>,
    Json(req): Json<InstallSnapshotRequest<C>>,
) -> Json<Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>> {
    Json(app.raft.install_snapshot(req).await)
}

async fn init(State(app): State<Arc<App>>, Json(req): Json<InitReq>) -> Json<Reply> {
    let nodes: BTreeMap<NodeId, BasicNode> = req
        .nodes
        .into_iter()
        .map(|(id, addr)| (id, BasicNode::new(addr)))
        .collect();
    Json(match app.raft.initialize(nodes).await {
        Ok(()) => Reply::Ok(json!(null)),
        Err(e) => Reply::Error(e.to_string()),
    })
}

async fn add_learner(State(app): State<Arc<App>>, Json(req): Json<AddLearnerReq>) -> Json<Reply> {
    Json(
        match app
            .raft
            // Not blocking: it returns once the learner is in the
            // membership, and catches up in the background (a large
            // snapshot can take longer than a client waits).
            .add_learner(req.id, BasicNode::new(req.addr), false)
            .await
        {
            Ok(r) => Reply::Ok(json!({ "index": r.log_id.index })),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => not_leader(f),
            Err(e) => Reply::Error(e.to_string()),
        },
    )
}

async fn change_membership(
    State(app): State<Arc<App>>,
    Json(req): Json<ChangeMembershipReq>,
) -> Json<Reply> {
    Json(match app.raft.change_membership(req.members, false).await {
        Ok(r) => Reply::Ok(json!({ "index": r.log_id.index })),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => not_leader(f),
        Err(e) => Reply::Error(e.to_string()),
    })
}

async fn metrics(State(app): State<Arc<App>>) -> Json<Reply> {
    let m = app.raft.metrics().borrow().clone();
    Json(match serde_json::to_value(&m) {
        Ok(v) => Reply::Ok(v),
        Err(e) => Reply::Error(e.to_string()),
    })
}

async fn storage_stats(State(app): State<Arc<App>>) -> Json<Reply> {
    Json(Reply::Ok(app.store.stats()))
}

async fn write(State(app): State<Arc<App>>, Json(req): Json<WriteReq>) -> Json<Reply> {
    let data = match req.value {
        Some(v) => backend::set(req.key, v),
        None => match backend::delete(req.key) {
            Some(d) => d,
            None => {
                return Json(Reply::Error(format!(
                    "deletes are not supported by the {} storage",
                    backend::NAME
                )));
            }
        },
    };
    Json(match app.raft.client_write(data).await {
        Ok(r) => Reply::Ok(json!({ "index": r.log_id.index })),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => not_leader(f),
        Err(e) => Reply::Error(e.to_string()),
    })
}

/// `Some(reply)` if a linearizable read cannot be served here.
async fn read_index(app: &App) -> Option<Reply> {
    match app.raft.ensure_linearizable().await {
        Ok(_) => None,
        Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => Some(not_leader(f)),
        Err(e) => Some(Reply::Error(e.to_string())),
    }
}

async fn read(State(app): State<Arc<App>>, Json(req): Json<ReadReq>) -> Json<Reply> {
    if req.linearizable
        && let Some(r) = read_index(&app).await
    {
        return Json(r);
    }
    Json(match app.store.get(&req.key) {
        Ok(v) => Reply::Ok(json!(v)),
        Err(e) => Reply::Error(e),
    })
}

async fn scan(State(app): State<Arc<App>>, Json(req): Json<ScanReq>) -> Json<Reply> {
    if req.linearizable
        && let Some(r) = read_index(&app).await
    {
        return Json(r);
    }
    Json(
        match app.store.scan(&req.start, req.end.as_deref(), req.limit) {
            Ok(pairs) => Reply::Ok(json!(pairs)),
            Err(e) => Reply::Error(e),
        },
    )
}
